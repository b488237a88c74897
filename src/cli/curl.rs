//! Values of curl's request options (docs/internals.md, "curl's vocabulary"), checked
//! when the command line is parsed so that a bad one is refused before anything is sent.

use std::net::{IpAddr, SocketAddr};

use clap::ArgMatches;

/// How a `-d`-style argument turns into body bytes, as curl's man page says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataKind {
    /// `-d`: DATA, or `@FILE` / `@-` with carriage returns and newlines removed.
    Data,
    /// `--data-binary`: DATA, or `@FILE` / `@-` byte for byte.
    Binary,
    /// `--data-raw`: DATA as given, `@` included.
    Raw,
    /// `--data-urlencode`: content, =content, name=content, @file, name@file.
    UrlEncode,
}

impl DataKind {
    pub fn flag(self) -> &'static str {
        match self {
            DataKind::Data => "-d/--data",
            DataKind::Binary => "--data-binary",
            DataKind::Raw => "--data-raw",
            DataKind::UrlEncode => "--data-urlencode",
        }
    }
}

/// One `-d`-style argument, kept in command-line order: curl joins them with `&`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataArg {
    pub kind: DataKind,
    pub value: String,
}

/// Every `-d`-style argument in the order given, across the four options.
pub fn data_args(matches: &ArgMatches) -> Vec<DataArg> {
    let kinds = [
        ("data", DataKind::Data),
        ("data_binary", DataKind::Binary),
        ("data_raw", DataKind::Raw),
        ("data_urlencode", DataKind::UrlEncode),
    ];
    let mut all: Vec<(usize, DataArg)> = Vec::new();
    for (id, kind) in kinds {
        let (Some(indices), Some(values)) =
            (matches.indices_of(id), matches.get_many::<String>(id))
        else {
            continue;
        };
        for (index, value) in indices.zip(values) {
            all.push((
                index,
                DataArg {
                    kind,
                    value: value.clone(),
                },
            ));
        }
    }
    all.sort_by_key(|(index, _)| *index);
    all.into_iter().map(|(_, arg)| arg).collect()
}

/// `-e URL`; curl's `;auto` (a Referer set on each redirect) is not supported.
pub fn referer_value(text: &str) -> Result<String, String> {
    if text.ends_with(";auto") {
        return Err(
            "';auto' (a Referer on each redirect) is not supported; give the URL alone".into(),
        );
    }
    header_text(text, "a URL")
}

/// `-A NAME`: any text a header value may hold; empty removes the header.
pub fn user_agent_value(text: &str) -> Result<String, String> {
    header_text(text, "a User-Agent string")
}

/// `-b 'n=v; n2=v2'`; curl reads a cookie file when there is no `=`, which is
/// not supported here.
pub fn cookie_value(text: &str) -> Result<String, String> {
    if !text.contains('=') {
        return Err(format!(
            "'{text}' looks like a cookie file, which is not supported; \
             give the cookies as 'NAME=VALUE; NAME2=VALUE2'"
        ));
    }
    header_text(text, "'NAME=VALUE; NAME2=VALUE2'")
}

fn header_text(text: &str, what: &str) -> Result<String, String> {
    if text.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        Err(format!("expected {what} without control characters"))
    } else {
        Ok(text.to_string())
    }
}

/// `-F name=value`, `name=@FILE`, `name=<FILE`, with `;type=` and `;filename=`.
pub fn form_value(text: &str) -> Result<FormField, String> {
    FormField::parse(text)
}

/// One `-F` field, as curl reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormField {
    /// The argument as given, for messages.
    pub text: String,
    pub name: String,
    pub content: FormContent,
    pub mime: Option<String>,
    pub filename: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FormContent {
    Text(String),
    /// `@FILE`: the file as an upload, with its name.
    File(String),
    /// `<FILE`: the file's contents as the value, without a file name.
    FileText(String),
}

impl FormField {
    pub fn parse(text: &str) -> Result<FormField, String> {
        const ACCEPTS: &str = "expected NAME=VALUE, NAME=@FILE or NAME=<FILE, optionally \
                               followed by ;type=MIME or ;filename=NAME";
        let (name, rest) = text
            .split_once('=')
            .ok_or_else(|| format!("'{text}': {ACCEPTS}"))?;
        if name.is_empty() {
            return Err(format!("'{text}': the field has no name; {ACCEPTS}"));
        }
        let mut params = rest.split(';');
        let value = params.next().unwrap_or_default();
        let mut field = FormField {
            text: text.to_string(),
            name: name.to_string(),
            content: match (value.strip_prefix('@'), value.strip_prefix('<')) {
                (Some(path), _) => FormContent::File(path.to_string()),
                (_, Some(path)) => FormContent::FileText(path.to_string()),
                _ => FormContent::Text(value.to_string()),
            },
            mime: None,
            filename: None,
        };
        for param in params {
            match param.trim_start().split_once('=') {
                Some(("type", mime)) if !mime.is_empty() => field.mime = Some(mime.to_string()),
                Some(("filename", name)) => field.filename = Some(name.to_string()),
                _ => {
                    return Err(format!(
                        "'{text}': ';{param}' is not supported; {ACCEPTS} \
                         (a value holding ';' cannot be sent with -F)"
                    ));
                }
            }
        }
        if matches!(&field.content, FormContent::File(p) | FormContent::FileText(p) if p.is_empty())
        {
            return Err(format!("'{text}': no file after @ or <; {ACCEPTS}"));
        }
        Ok(field)
    }
}

/// The proxy schemes `-x` takes: curl's, less those for other protocols.
pub const PROXY_SCHEMES: [&str; 6] = ["http", "https", "socks4", "socks4a", "socks5", "socks5h"];

/// A `-x` proxy: the URL, and how it is shown (as given, with `http://` added when
/// it was `HOST[:PORT]`; the parsed URL would gain a `/`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProxyUrl {
    pub url: reqwest::Url,
    pub shown: String,
}

/// `-x URL`: http://, https://, socks4://, socks4a://, socks5:// or socks5h://, or
/// `HOST[:PORT]` (http:// is assumed, as curl does).
pub fn proxy_value(text: &str) -> Result<ProxyUrl, String> {
    if let Some((at, c)) = url_blemish(text) {
        return Err(format!(
            "'{text}' holds {c:?} at byte {at}; expected a proxy URL without whitespace or \
             control characters, as curl takes it"
        ));
    }
    let full = if text.contains("://") {
        text.to_string()
    } else {
        format!("http://{text}")
    };
    let accepts = "expected a proxy URL such as http://HOST:PORT, https://HOST:PORT or \
                   socks5h://HOST:PORT (socks4, socks4a, socks5 and socks5h are SOCKS)";
    let url = reqwest::Url::parse(&full).map_err(|e| format!("'{text}': {e}; {accepts}"))?;
    if !PROXY_SCHEMES.contains(&url.scheme()) {
        return Err(format!(
            "'{text}': the {} scheme is not supported; {accepts}",
            url.scheme()
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("'{text}': no host; {accepts}"));
    }
    Ok(ProxyUrl { url, shown: full })
}

/// The first byte curl's URL parser refuses (whitespace, a control character: any
/// byte up to space, and DEL), with its offset: such a URL is refused, never cleaned
/// up and sent, as the URL parser of reqwest would.
pub fn url_blemish(text: &str) -> Option<(usize, char)> {
    text.bytes()
        .position(|b| b <= b' ' || b == 0x7f)
        .map(|at| (at, char::from(text.as_bytes()[at])))
}

/// `--noproxy LIST`: comma-separated host names, domains, addresses or `*`.
pub fn noproxy_value(text: &str) -> Result<String, String> {
    let bad = text
        .split(',')
        .map(str::trim)
        .find(|entry| entry.chars().any(|c| c.is_whitespace() || c.is_control()));
    match bad {
        Some(entry) => Err(format!(
            "'{entry}' is not a host; expected a comma-separated list of hosts, domains, \
             addresses (CIDR allowed) or *"
        )),
        None => Ok(text.to_string()),
    }
}

/// One `--resolve HOST:PORT:ADDR[,ADDR]...` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolveEntry {
    pub host: String,
    pub port: u16,
    pub addrs: Vec<SocketAddr>,
}

pub fn resolve_value(text: &str) -> Result<ResolveEntry, String> {
    let accepts = "expected HOST:PORT:ADDR[,ADDR...] such as example.com:443:127.0.0.1 \
                   (an IPv6 ADDR in brackets)";
    let mut parts = text.splitn(3, ':');
    let (Some(host), Some(port), Some(addrs)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(format!("'{text}': {accepts}"));
    };
    if host.is_empty() || host.starts_with(['+', '-']) || host == "*" {
        return Err(format!(
            "'{text}': a plain host name is needed (curl's +, - and * forms are not supported); {accepts}"
        ));
    }
    let port: u16 = port
        .parse()
        .map_err(|_| format!("'{text}': '{port}' is not a port; {accepts}"))?;
    let addrs = addrs
        .split(',')
        .map(|a| {
            let bare = a.trim().trim_start_matches('[').trim_end_matches(']');
            bare.parse::<IpAddr>()
                .map(|ip| SocketAddr::new(ip, port))
                .map_err(|_| format!("'{text}': '{a}' is not an IP address; {accepts}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ResolveEntry {
        host: host.to_ascii_lowercase(),
        port,
        addrs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_fields_read_as_curl_reads_them() {
        let f = FormField::parse("a=@x.txt;type=text/x;filename=y").unwrap();
        assert_eq!(f.content, FormContent::File("x.txt".into()));
        assert_eq!(f.mime.as_deref(), Some("text/x"));
        assert_eq!(f.filename.as_deref(), Some("y"));
        assert_eq!(
            FormField::parse("b=<in").unwrap().content,
            FormContent::FileText("in".into())
        );
        assert!(FormField::parse("novalue").is_err());
        assert!(FormField::parse("c=x;what=1").is_err());
        assert!(FormField::parse("=x").is_err());
    }

    #[test]
    fn resolve_entries_take_one_or_more_addresses() {
        let e = resolve_value("Example.com:443:127.0.0.1,[::1]").unwrap();
        assert_eq!(e.host, "example.com");
        assert_eq!(e.addrs.len(), 2);
        assert_eq!(e.addrs[1], "[::1]:443".parse().unwrap());
        for bad in [
            "x:80",
            "x:port:127.0.0.1",
            "x:80:nowhere",
            "+x:80:127.0.0.1",
            ":80:1.2.3.4",
        ] {
            assert!(resolve_value(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn proxies_are_http_https_or_socks() {
        let proxy = proxy_value("127.0.0.1:3128").unwrap();
        assert_eq!(proxy.shown, "http://127.0.0.1:3128");
        assert_eq!(proxy.url.as_str(), "http://127.0.0.1:3128/");
        assert!(proxy_value("https://p:1").is_ok());
        for scheme in ["socks4", "socks4a", "socks5", "socks5h"] {
            assert!(proxy_value(&format!("{scheme}://p:1")).is_ok(), "{scheme}");
        }
        assert!(proxy_value("ftp://p:1").is_err());
        assert!(proxy_value("http://").is_err());
    }

    #[test]
    fn cookies_need_an_equals_sign() {
        assert!(cookie_value("cookies.txt").is_err());
        assert!(cookie_value("a=1; b=2").is_ok());
    }
}
