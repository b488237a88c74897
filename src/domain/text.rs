//! How values are shown to people, the same everywhere: a duration briefly (`human`),
//! a URL without its user information (`redact_url`), a command line with the words
//! that need it quoted (`command_line`).

use std::time::Duration;

/// Formats a duration briefly for humans: `850ms`, `1.7s`, `2m5s`.
pub fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    if ms < 60_000 {
        let tenths = (ms + 50) / 100;
        return if tenths.is_multiple_of(10) {
            format!("{}s", tenths / 10)
        } else {
            format!("{}.{}s", tenths / 10, tenths % 10)
        };
    }
    let secs = (ms + 500) / 1000;
    let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    match (h, m, s) {
        (0, m, 0) => format!("{m}m"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, 0, 0) => format!("{h}h"),
        (h, m, 0) => format!("{h}h{m}m"),
        (h, m, s) => format!("{h}h{m}m{s}s"),
    }
}

/// A URL as it may be shown anywhere (logs, JSON, the report, annotations, the
/// dry run): any user information is `***`, since a user name can be a token
/// as well as a password. Works on text that does not parse as a URL, too.
pub fn redact_url(text: &str) -> String {
    let Some(scheme_end) = text.find("://").map(|i| i + 3) else {
        return text.to_string();
    };
    let rest = &text[scheme_end..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{}***{}", &text[..scheme_end], &rest[at..]),
        None => text.to_string(),
    }
}

/// Renders argv for a human: words with spaces or quotes are single-quoted.
pub fn command_line(argv: &[String]) -> String {
    let quote = |a: &String| {
        let plain = !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c));
        if plain {
            a.clone()
        } else {
            format!("'{}'", a.replace('\'', r"'\''"))
        }
    };
    argv.iter().map(quote).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations() {
        assert_eq!(human(Duration::from_millis(850)), "850ms");
        assert_eq!(human(Duration::from_millis(1700)), "1.7s");
        assert_eq!(human(Duration::from_secs(2)), "2s");
        assert_eq!(human(Duration::from_secs(125)), "2m5s");
        assert_eq!(human(Duration::from_secs(3600)), "1h");
    }

    #[test]
    fn user_information_in_urls_is_redacted() {
        assert_eq!(
            redact_url("http://user:SECRET@127.0.0.1:8080/x?a=b@c"),
            "http://***@127.0.0.1:8080/x?a=b@c"
        );
        assert_eq!(redact_url("https://tok@h/p"), "https://***@h/p");
        assert_eq!(redact_url("https://a:b@c@h"), "https://***@h");
        assert_eq!(redact_url("https://h/p@q"), "https://h/p@q");
        assert_eq!(redact_url("not a url"), "not a url");
    }

    #[test]
    fn command_lines_quote_what_needs_it() {
        let argv = ["sh", "-c", "echo it's done", ""].map(String::from);
        assert_eq!(command_line(&argv), r"sh -c 'echo it'\''s done' ''");
    }
}
