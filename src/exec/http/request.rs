//! How a request and its URL are shown in logs: header names (values at -vv,
//! secrets never) and URLs without passwords.

use reqwest::Url;
use reqwest::header::{
    AUTHORIZATION, COOKIE, HeaderMap, HeaderName, PROXY_AUTHORIZATION, SET_COOKIE,
};

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
    fn user_information_is_shown_as_three_stars() {
        let url = Url::parse("http://me:secret@h/").unwrap();
        assert_eq!(display_url(&url), "http://***@h/");
    }
}
