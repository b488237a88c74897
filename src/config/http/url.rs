//! The target URL as curl reads it: parsed once (a malformed one, one with
//! whitespace or a control character included, is left to the attempt, exit 3),
//! refused when it holds curl's glob characters without `-g` (curl would expand
//! `[1-3]` and `{a,b}` into several transfers, which retry does not do), given `-G`'s
//! query and, for `-T FILE`, the file's name as curl 7.88 appends it.

use std::path::Path;

use reqwest::Url;

use crate::cli::curl::url_blemish;
use crate::domain::redact_url;

/// curl's URL globbing: ranges and lists (curl(1), "URL").
const GLOB_CHARS: [char; 4] = ['[', ']', '{', '}'];

pub fn parse(url: &str) -> Result<Url, String> {
    if let Some((at, c)) = url_blemish(url) {
        // curl 7.88's words for it (exit 3): the URL is never cleaned up and sent.
        return Err(format!(
            "URL rejected: malformed input: '{}' holds {c:?} at byte {at}",
            redact_url(url)
        ));
    }
    let parsed = Url::parse(url).map_err(|e| format!("malformed URL '{url}': {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!(
            "malformed URL '{url}': expected http(s)://HOST/..."
        ));
    }
    Ok(parsed)
}

/// Without `-g`, a URL whose path or query holds `[`, `]`, `{` or `}` is refused:
/// curl would glob it (or fail on it), and sending it as it is would do something
/// else quietly. Brackets around an IPv6 literal host are an address, not a glob.
pub fn refuse_globs(url: &str) -> anyhow::Result<()> {
    let Some(found) = glob_in_path_or_query(url) else {
        return Ok(());
    };
    anyhow::bail!(
        "the URL holds '{found}' in its path or query, which curl expands as a glob \
         ([1-3], {{a,b}}) into several transfers; retry sends one request per run: use a shell \
         loop (for n in 1 2 3; do retry ... \"https://host/page/$n\"; done), or -g/--globoff to \
         send the characters as they are"
    )
}

/// The first glob character after the URL's authority (host and port), up to any fragment.
fn glob_in_path_or_query(url: &str) -> Option<char> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    // The authority ends at the first '/', '?' or '#'; an IPv6 literal's brackets are in it.
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let after = &rest[authority_end..];
    let path_and_query = after.split('#').next().unwrap_or_default();
    path_and_query.chars().find(|c| GLOB_CHARS.contains(c))
}

/// `-T FILE`: a FILE with glob characters would be globbed by curl as well.
pub fn refuse_file_globs(file: &str) -> anyhow::Result<()> {
    if let Some(found) = file.chars().find(|c| GLOB_CHARS.contains(c)) {
        anyhow::bail!(
            "-T/--upload-file: '{file}' holds '{found}', which curl expands as a glob into \
             several uploads; retry uploads one file per run: use a shell loop, or -g/--globoff \
             to take the name as it is"
        );
    }
    Ok(())
}

/// `-G`: the data joins the URL's query string with `&`, as curl adds it.
pub fn with_query(mut url: Url, data: Option<&str>) -> Url {
    if let Some(data) = data {
        let query = match url.query() {
            Some(q) if !q.is_empty() => format!("{q}&{data}"),
            _ => data.to_string(),
        };
        url.set_query(Some(&query));
    }
    url
}

/// `-T FILE` to a URL whose path is empty or ends with `/`: FILE's base name is
/// appended to the path (the query stays after it), percent-encoded as curl 7.88
/// encodes it (everything but letters, digits and `-._~`, in lower-case hex).
pub fn with_upload_name(mut url: Url, file: &Path) -> Url {
    if !url.path().ends_with('/') {
        return url;
    }
    let text = file.to_string_lossy();
    // curl takes what follows the last '/' and then the last '\\'.
    let base = text.rsplit('/').next().unwrap_or_default();
    let base = base.rsplit('\\').next().unwrap_or_default();
    if base.is_empty() {
        return url;
    }
    let path = format!("{}{}", url.path(), escape(base));
    url.set_path(&path);
    url
}

/// curl_easy_escape(3): unreserved characters stay, every other byte is `%xx`.
fn escape(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn get_data_joins_the_query_string() {
        let joined = with_query(url("http://h/p?z=0"), Some("a=1&b=x+y"));
        assert_eq!(joined.as_str(), "http://h/p?z=0&a=1&b=x+y");
        assert_eq!(
            with_query(url("http://h/p"), Some("a=1")).as_str(),
            "http://h/p?a=1"
        );
        assert_eq!(with_query(url("http://h/p?"), None).as_str(), "http://h/p?");
    }

    #[test]
    fn globs_are_found_in_the_path_and_query_only() {
        assert_eq!(glob_in_path_or_query("http://h/page/[1-3]"), Some('['));
        assert_eq!(glob_in_path_or_query("http://h/{a,b}"), Some('{'));
        assert_eq!(glob_in_path_or_query("http://h/p?x=]"), Some(']'));
        assert_eq!(glob_in_path_or_query("http://h?x={"), Some('{'));
        assert_eq!(glob_in_path_or_query("http://[::1]:8080/"), None);
        assert_eq!(glob_in_path_or_query("http://[fe80::1%25lo]/a"), None);
        assert_eq!(glob_in_path_or_query("http://h/a%5B1%5D"), None);
        assert_eq!(glob_in_path_or_query("http://h/a#[frag]"), None);
        assert_eq!(glob_in_path_or_query("http://[::1]"), None);
    }

    #[test]
    fn upload_names_are_appended_as_curl_appends_them() {
        let name = Path::new("dir/my file+ä.txt");
        let cases = [
            ("http://h", "http://h/my%20file%2b%c3%a4.txt"),
            ("http://h/d/", "http://h/d/my%20file%2b%c3%a4.txt"),
            ("http://h/d", "http://h/d"),
            ("http://h/d/?q=1", "http://h/d/my%20file%2b%c3%a4.txt?q=1"),
        ];
        for (given, sent) in cases {
            assert_eq!(with_upload_name(url(given), name).as_str(), sent, "{given}");
        }
        let windows = with_upload_name(url("http://h/"), Path::new("a\\b.txt"));
        assert_eq!(windows.as_str(), "http://h/b.txt");
    }
}
