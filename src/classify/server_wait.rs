//! What a response's headers say beyond its status: whether a rate limit is
//! spent (which makes a 403 a rate limit, see the status table in `http`) and
//! how long the server asks to wait. Both are tables of headers with their
//! source, read in order. Parsing a header's text is `headers`';
//! capping and spreading the wait is the engine's.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

use super::http::StatusFacts;
use crate::domain::WaitHint;
use crate::headers;

/// Headers whose 0 says no requests are left in the window. Sources: GitHub's
/// REST API ("Rate limits": X-RateLimit-Remaining) and
/// draft-ietf-httpapi-ratelimit-headers-06 §3.2 (RateLimit-Remaining).
pub static SPENT_HEADERS: &[&str] = &["X-RateLimit-Remaining", "RateLimit-Remaining"];

/// Which responses a wait header is believed on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Believed {
    /// Any response; a valid value, even a wait of zero, is the server's answer.
    Always,
    /// A 429, or a 403 whose rate limit is spent; a zero wait is passed over.
    WhenRateLimited,
}

pub struct WaitHeader {
    pub name: &'static str,
    pub believed: Believed,
    pub parse: fn(&str, SystemTime) -> Option<Duration>,
    pub source: &'static str,
}

fn rate_limit_field(value: &str, _now: SystemTime) -> Option<Duration> {
    headers::rate_limit_field(value)
}

/// The headers that ask for a wait, first believed one wins.
pub static WAIT_HEADERS: &[WaitHeader] = &[
    WaitHeader {
        name: "Retry-After",
        believed: Believed::Always,
        parse: headers::retry_after,
        source: "RFC 9110 §10.2.3",
    },
    WaitHeader {
        name: "RateLimit-Reset",
        believed: Believed::WhenRateLimited,
        parse: headers::rate_limit_reset,
        source: "draft-ietf-httpapi-ratelimit-headers-06 §3.3",
    },
    WaitHeader {
        name: "X-RateLimit-Reset",
        believed: Believed::WhenRateLimited,
        parse: headers::rate_limit_reset,
        source: "GitHub REST API, \"Rate limits\"",
    },
    WaitHeader {
        name: "RateLimit",
        believed: Believed::WhenRateLimited,
        parse: rate_limit_field,
        source: "draft-ietf-httpapi-ratelimit-headers-08 (t= of an item with r=0)",
    },
];

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

/// Whether a 403 is a rate limit: a spent-limit header says 0.
fn limit_spent(headers: &HeaderMap) -> bool {
    SPENT_HEADERS.iter().any(|name| {
        headers
            .get(*name)
            .and_then(|v| v.to_str().ok())
            .and_then(headers::rate_limit_remaining)
            == Some(0)
    })
}

/// The wait the server asked for, as the engine will quote it.
fn hint(name: &str, value: &str, wait: Duration) -> WaitHint {
    let value: String = value.trim().chars().take(100).collect();
    WaitHint {
        wait,
        source: format!("{name}: {value}"),
        asked_by: "the server",
    }
}

/// Reads the rate-limit facts and the requested wait from a response's headers;
/// `note` hears of a wait header that asks for nothing or cannot be read.
pub fn from_headers(
    headers: &HeaderMap,
    status: u16,
    now: SystemTime,
    note: &mut dyn FnMut(String),
) -> (StatusFacts, Option<WaitHint>) {
    let rate_limited = status == 403 && limit_spent(headers);
    let mut facts = StatusFacts {
        status,
        retry_after: false,
        rate_limited,
    };
    let limited = status == 429 || rate_limited;
    for row in WAIT_HEADERS {
        if row.believed == Believed::WhenRateLimited && !limited {
            continue;
        }
        let Some(text) = header(headers, row.name) else {
            continue;
        };
        let wait = (row.parse)(&text, now);
        if row.believed == Believed::WhenRateLimited {
            match wait {
                Some(wait) if !wait.is_zero() => return (facts, Some(hint(row.name, &text, wait))),
                _ => continue,
            }
        }
        match wait {
            Some(wait) => {
                facts.retry_after = true;
                if wait.is_zero() {
                    note(format!("{}: {text} asks for no wait", row.name));
                    return (facts, None);
                }
                return (facts, Some(hint(row.name, &text, wait)));
            }
            None => note(format!("ignored a malformed {}: {}", row.name, text.trim())),
        }
    }
    (facts, None)
}

/// The wait headers for `--dry-run`.
pub fn describe() -> Vec<String> {
    WAIT_HEADERS
        .iter()
        .map(|row| {
            let when = match row.believed {
                Believed::Always => "on any response",
                Believed::WhenRateLimited => "on 429, or on 403 with a rate limit spent",
            };
            format!("wait header {} {when} ({})", row.name, row.source)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(*k, HeaderValue::from_static(v));
        }
        map
    }

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)
    }

    #[test]
    fn retry_after_wins_over_rate_limit_headers() {
        let h = headers(&[("retry-after", "7"), ("x-ratelimit-reset", "60")]);
        let (facts, hint) = from_headers(&h, 429, now(), &mut |_| {});
        assert!(facts.retry_after);
        let hint = hint.unwrap();
        assert_eq!(hint.wait, Duration::from_secs(7));
        assert_eq!(hint.source, "Retry-After: 7");
    }

    #[test]
    fn rate_limit_reset_counts_on_429_and_limited_403_only() {
        let h = headers(&[
            ("x-ratelimit-reset", "1700000030"),
            ("x-ratelimit-remaining", "0"),
        ]);
        assert_eq!(
            from_headers(&h, 429, now(), &mut |_| {}).1.unwrap().wait,
            Duration::from_secs(30)
        );
        let (facts, hint) = from_headers(&h, 403, now(), &mut |_| {});
        assert!(facts.rate_limited);
        assert_eq!(hint.unwrap().source, "X-RateLimit-Reset: 1700000030");
        assert!(from_headers(&h, 503, now(), &mut |_| {}).1.is_none());
        let field = headers(&[("ratelimit", "\"default\";r=0;t=12")]);
        assert_eq!(
            from_headers(&field, 429, now(), &mut |_| {})
                .1
                .unwrap()
                .wait,
            Duration::from_secs(12)
        );
    }

    #[test]
    fn a_zero_reset_is_passed_over_for_the_next_header() {
        let h = headers(&[
            ("ratelimit-reset", "0"),
            ("x-ratelimit-reset", "5"),
            ("ratelimit", "\"default\";r=0;t=9"),
        ]);
        assert_eq!(
            from_headers(&h, 429, now(), &mut |_| {}).1.unwrap().source,
            "X-RateLimit-Reset: 5"
        );
    }

    #[test]
    fn malformed_or_past_retry_after_gives_no_hint() {
        let bad = headers(&[("retry-after", "tomorrow")]);
        let (facts, hint) = from_headers(&bad, 503, now(), &mut |_| {});
        assert!(!facts.retry_after && hint.is_none());
        let past = headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")]);
        let (facts, hint) = from_headers(&past, 503, now(), &mut |_| {});
        assert!(facts.retry_after && hint.is_none());
    }
}
