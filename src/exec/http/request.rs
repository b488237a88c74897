//! How a request's headers go out (`Host` first) and how a request and its URL
//! are shown in logs: header names (values at -vv, secrets never) and URLs without
//! passwords.

use reqwest::Url;
use reqwest::header::{
    AUTHORIZATION, COOKIE, HOST, HeaderMap, HeaderName, HeaderValue, PROXY_AUTHORIZATION,
    SET_COOKIE,
};

/// `headers` with `Host` first, as curl sends it (RFC 9110 §7.2): the user's own
/// `-H 'Host: …'`, else the URL's host and any port that is not the scheme's default,
/// which is what the HTTP stack would otherwise add last.
pub fn with_host_first(url: &Url, headers: &HeaderMap) -> HeaderMap {
    let host = headers.get(HOST).cloned().or_else(|| {
        let name = url.host_str()?;
        let text = match url.port() {
            Some(port) => format!("{name}:{port}"),
            None => name.to_string(),
        };
        HeaderValue::from_str(&text).ok()
    });
    let mut out = HeaderMap::with_capacity(headers.len() + 1);
    if let Some(host) = host {
        out.insert(HOST, host);
    }
    for (name, value) in headers.iter().filter(|(name, _)| **name != HOST) {
        out.append(name.clone(), value.clone());
    }
    out
}

/// Headers whose values are never shown, not even at -vv.
pub const SECRET_HEADERS: [HeaderName; 4] =
    [AUTHORIZATION, COOKIE, PROXY_AUTHORIZATION, SET_COOKIE];

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
    crate::domain::redact_url(url.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_goes_first_with_a_port_only_when_it_is_not_the_default() {
        let mut headers = HeaderMap::new();
        headers.insert("user-agent", HeaderValue::from_static("r"));
        headers.append("x-a", HeaderValue::from_static("1"));
        headers.append("x-a", HeaderValue::from_static("2"));
        let url = Url::parse("http://h.test:8080/p").unwrap();
        let out = with_host_first(&url, &headers);
        let names: Vec<&str> = out.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["host", "user-agent", "x-a", "x-a"]);
        assert_eq!(out[HOST], "h.test:8080");
        let url = Url::parse("https://[::1]:443/").unwrap();
        assert_eq!(with_host_first(&url, &headers)[HOST], "[::1]");
        headers.insert(HOST, HeaderValue::from_static("given"));
        let out = with_host_first(&url, &headers);
        assert_eq!(
            out.iter()
                .next()
                .map(|(n, v)| (n.as_str(), v.to_str().unwrap())),
            Some(("host", "given"))
        );
        assert_eq!(out.get_all(HOST).iter().count(), 1);
    }

    #[test]
    fn user_information_is_shown_as_three_stars() {
        let url = Url::parse("http://me:secret@h/").unwrap();
        assert_eq!(display_url(&url), "http://***@h/");
    }
}
