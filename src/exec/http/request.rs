//! The request every attempt sends, built once from the command line: method,
//! URL, headers (defaults, `-H` lines and files, the idempotency key) and the
//! body, read once so that every attempt sends the same bytes.

use std::path::Path;

use anyhow::{Context, bail};
use bytes::Bytes;
use reqwest::header::{
    ACCEPT, AUTHORIZATION, CONTENT_TYPE, COOKIE, HeaderMap, HeaderName, HeaderValue,
    PROXY_AUTHORIZATION, SET_COOKIE, USER_AGENT,
};
use reqwest::{Method, Url};

use crate::cli::Cli;
use crate::exec::RunInfo;
use crate::exec::http_headers::{self, HeaderAction, HeaderLine};

use super::{body, curl};

/// Headers whose values are never shown, not even at -vv.
pub const SECRET_HEADERS: [HeaderName; 4] =
    [AUTHORIZATION, COOKIE, PROXY_AUTHORIZATION, SET_COOKIE];

pub struct RequestSpec {
    pub method: Method,
    /// A malformed URL is the attempt's outcome (exit 3), not a usage error.
    pub url: Result<Url, String>,
    pub headers: HeaderMap,
    pub body: Option<Bytes>,
    /// The idempotency header sent with every attempt, if any.
    pub key_header: Option<HeaderName>,
}

impl RequestSpec {
    pub fn new(cli: &Cli, url: &str, info: &RunInfo) -> anyhow::Result<Self> {
        let body = body::build(cli)?;
        let method = match &cli.method {
            Some(m) => Method::from_bytes(m.as_bytes())
                .with_context(|| format!("-X/--request: '{m}' is not an HTTP method"))?,
            None if body.bytes.is_some() => Method::POST,
            None => Method::GET,
        };
        let mut headers = default_headers(body.content_type.clone(), cli.json.is_some());
        curl::headers(cli, &mut headers)?;
        apply_lines(&mut headers, &user_lines(&cli.headers)?)?;
        let key_name = HeaderName::from_bytes(cli.idempotency_header.as_bytes())
            .context("--idempotency-header: not a header name")?;
        if info.key_requested {
            if headers.contains_key(&key_name) {
                bail!(
                    "both --idempotency-key and -H '{}: ...' set the idempotency key; give it once",
                    cli.idempotency_header
                );
            }
            let value = HeaderValue::from_str(&info.idempotency_key)
                .context("--idempotency-key: not a valid header value")?;
            headers.insert(key_name.clone(), value);
        }
        let key_header = headers.contains_key(&key_name).then_some(key_name);
        Ok(RequestSpec {
            method,
            url: parse_url(url).map(|u| with_query(u, body.query.as_deref())),
            headers,
            body: body.bytes,
            key_header,
        })
    }

    pub fn key_in_use(&self) -> bool {
        self.key_header.is_some()
    }
}

fn parse_url(url: &str) -> Result<Url, String> {
    let parsed = Url::parse(url).map_err(|e| format!("malformed URL '{url}': {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!(
            "malformed URL '{url}': expected http(s)://HOST/..."
        ));
    }
    Ok(parsed)
}

/// `-G`: the data joins the URL's query string with `&`, as curl adds it.
fn with_query(mut url: Url, data: Option<&str>) -> Url {
    if let Some(data) = data {
        let query = match url.query() {
            Some(q) if !q.is_empty() => format!("{q}&{data}"),
            _ => data.to_string(),
        };
        url.set_query(Some(&query));
    }
    url
}

fn default_headers(content_type: Option<HeaderValue>, json: bool) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        USER_AGENT,
        HeaderValue::from_static(concat!("retry/", env!("CARGO_PKG_VERSION"))),
    );
    if let Some(content_type) = content_type {
        headers.insert(CONTENT_TYPE, content_type);
    }
    if json {
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
    }
    headers
}

/// Every `-H` argument, files (`@FILE`) expanded in place.
fn user_lines(args: &[String]) -> anyhow::Result<Vec<HeaderLine>> {
    let mut lines = Vec::new();
    for arg in args {
        match arg.strip_prefix('@') {
            Some(path) => lines.extend(read_header_file(Path::new(path))?),
            None => lines.push(
                http_headers::header_line(arg).map_err(|e| anyhow::anyhow!("-H/--header: {e}"))?,
            ),
        }
    }
    Ok(lines)
}

fn read_header_file(path: &Path) -> anyhow::Result<Vec<HeaderLine>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("-H @{}: cannot read the header file", path.display()))?;
    http_headers::header_file(&text).map_err(|e| anyhow::anyhow!("-H @{}: {e}", path.display()))
}

/// The user's headers replace the defaults of the same name; repeated names
/// are all sent, in order.
fn apply_lines(headers: &mut HeaderMap, lines: &[HeaderLine]) -> anyhow::Result<()> {
    let mut seen: Vec<HeaderName> = Vec::new();
    for line in lines {
        let name = HeaderName::from_bytes(line.name.as_bytes())
            .with_context(|| format!("-H: '{}' is not a header name", line.name))?;
        if !seen.contains(&name) {
            headers.remove(&name);
            seen.push(name.clone());
        }
        let value = match &line.value {
            HeaderAction::Set(v) => HeaderValue::from_str(v)
                .with_context(|| format!("-H: the value of {} is not valid", line.name))?,
            HeaderAction::Empty => HeaderValue::from_static(""),
            HeaderAction::Remove => continue,
        };
        headers.append(name, value);
    }
    Ok(())
}

/// Header names for -v; at -vv values too, secrets masked.
pub fn describe_headers(headers: &HeaderMap, values: bool) -> String {
    let parts: Vec<String> = headers
        .iter()
        .map(|(name, value)| {
            if !values {
                name.to_string()
            } else if SECRET_HEADERS.contains(name) {
                format!("{name}: ***")
            } else {
                format!("{name}: {}", String::from_utf8_lossy(value.as_bytes()))
            }
        })
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

/// The URL with any password hidden, for messages.
pub fn display_url(url: &Url) -> String {
    crate::report::redact_url(url.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_data_joins_the_query_string() {
        let url = |s: &str| Url::parse(s).unwrap();
        let joined = with_query(url("http://h/p?z=0"), Some("a=1&b=x+y"));
        assert_eq!(joined.as_str(), "http://h/p?z=0&a=1&b=x+y");
        assert_eq!(
            with_query(url("http://h/p"), Some("a=1")).as_str(),
            "http://h/p?a=1"
        );
        assert_eq!(with_query(url("http://h/p?"), None).as_str(), "http://h/p?");
    }

    #[test]
    fn user_information_is_shown_as_three_stars() {
        let url = Url::parse("http://me:secret@h/").unwrap();
        assert_eq!(display_url(&url), "http://***@h/");
    }
}
