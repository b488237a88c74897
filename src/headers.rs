//! Parsers for HTTP input that comes from outside: the waits a server asks for
//! (Retry-After, RateLimit-Reset, X-RateLimit-Reset, the `RateLimit` field),
//! X-RateLimit-Remaining, and the `-H` header lines a user writes or keeps in a
//! file. Every function takes plain text (and the current time where a date is
//! involved), so each can be tested on any input; none panics. Deciding what a
//! parsed value means for the run is the classifier's and the engine's work.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The longest wait any header can ask for; larger values are clamped so that
/// arithmetic on them never overflows (the engine refuses such waits anyway).
pub const MAX_WAIT: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// A reset value at least this large is a Unix time, not a number of seconds
/// (2001-09-09; no server asks for a 31-year wait).
pub const EPOCH_THRESHOLD: u64 = 1_000_000_000;

/// `Retry-After` (RFC 9110 §10.2.3): delta-seconds or an HTTP-date in any of the
/// three forms. A date in the past is `Some(ZERO)`; a malformed value is `None`.
pub fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Some(seconds) = delta_seconds(value) {
        return Some(seconds);
    }
    http_date(value).map(|date| until(date, now))
}

/// The three forms of an HTTP-date (RFC 9110 §5.6.7): IMF-fixdate, the obsolete RFC
/// 850 form and asctime, always in GMT.
const HTTP_DATE_FORMS: [&str; 3] = [
    "%a, %d %b %Y %H:%M:%S GMT",
    "%A, %d-%b-%y %H:%M:%S GMT",
    "%a %b %e %H:%M:%S %Y",
];

/// Zone names that mean GMT to mail and HTTP libraries (RFC 5322 §3.3 writes `+0000`),
/// read where an HTTP-date says GMT.
const GMT_SPELLINGS: [&str; 2] = [" UTC", " +0000"];

/// An HTTP-date (RFC 9110 §5.6.7): IMF-fixdate, the obsolete RFC 850 form or
/// asctime, with a weekday that fits the date and a year from 1970. Read as leniently
/// as mail and HTTP libraries read it where the meaning stays plain: a day of one
/// digit, and `UTC` or `+0000` for `GMT`. `None` for anything else.
pub fn http_date(value: &str) -> Option<SystemTime> {
    let value = value.trim();
    let as_gmt = GMT_SPELLINGS
        .iter()
        .find_map(|zone| value.strip_suffix(zone))
        .map(|rest| format!("{rest} GMT"));
    let value = as_gmt.as_deref().unwrap_or(value);
    let civil = HTTP_DATE_FORMS.iter().find_map(|form| {
        let civil = jiff::fmt::strtime::parse(form, value)
            .and_then(|parsed| parsed.to_datetime())
            .ok()?;
        // As the form writes it (names in their case, numbers padded), or with the day
        // in one digit.
        let unpadded = form.replace("%d", "%-d").replace("%e", "%-d");
        let exact = [*form, unpadded.as_str()]
            .iter()
            .any(|form| civil.strftime(form).to_string() == value);
        (exact && civil.year() >= 1970).then_some(civil)
    })?;
    // From the epoch on the civil calendar: jiff's timestamps end a day before year
    // 9999 does, and a date up to 9999-12-31 23:59:59 is still a date (a wait too long).
    let epoch = jiff::civil::DateTime::constant(1970, 1, 1, 0, 0, 0, 0);
    let since = Duration::try_from(civil.duration_since(epoch)).ok()?;
    UNIX_EPOCH.checked_add(since)
}

/// Digits only (RFC 9110's `1*DIGIT`), clamped to [`MAX_WAIT`]; `None` otherwise.
pub fn delta_seconds(value: &str) -> Option<Duration> {
    let value = value.trim();
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(clamp_seconds(whole_number(value)))
}

/// `RateLimit-Reset` / `X-RateLimit-Reset`: seconds to wait, or a Unix time when
/// the value is at least [`EPOCH_THRESHOLD`]. A time in the past is `Some(ZERO)`.
/// Fractional seconds (some APIs send them) are accepted.
pub fn rate_limit_reset(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    let seconds = decimal_seconds(value)?;
    if seconds.as_secs() >= EPOCH_THRESHOLD {
        let at = UNIX_EPOCH.checked_add(seconds)?;
        return Some(until(at, now));
    }
    Some(seconds)
}

/// The `RateLimit` field (draft-ietf-httpapi-ratelimit-headers): a list of
/// items like `"default";r=0;t=30`. The wait is the largest `t` among the items
/// whose quota is used up (`r=0`); `None` when no item is exhausted.
pub fn rate_limit_field(value: &str) -> Option<Duration> {
    value
        .split(',')
        .filter_map(|item| {
            let mut remaining = None;
            let mut reset = None;
            for param in item.split(';').skip(1) {
                let Some((key, val)) = param.split_once('=') else {
                    continue;
                };
                let val = val.trim().trim_matches('"');
                match key.trim().to_ascii_lowercase().as_str() {
                    "r" => remaining = val.parse::<u64>().ok(),
                    "t" => reset = delta_seconds(val),
                    _ => {}
                }
            }
            (remaining == Some(0)).then_some(reset).flatten()
        })
        .max()
}

/// `X-RateLimit-Remaining` (and `RateLimit-Remaining`): the requests left in the
/// window, `None` when not a whole number.
pub fn rate_limit_remaining(value: &str) -> Option<u64> {
    let value = value.trim();
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(value.parse().unwrap_or(u64::MAX))
}

/// One `-H` line, as curl takes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderLine {
    pub name: String,
    pub value: HeaderAction,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderAction {
    /// `Name: value`: send the header (repeated names are all sent).
    Set(String),
    /// `Name:` with nothing after the colon: do not send this header at all,
    /// not even retry's default (e.g. `Accept:` or `User-Agent:`).
    Remove,
    /// `Name;`: send the header with an empty value.
    Empty,
}

/// Parses `Name: value`, `Name:` (remove) or `Name;` (empty value).
pub fn header_line(line: &str) -> Result<HeaderLine, String> {
    let line = line.trim_end_matches(['\r', '\n']);
    let (name, value) = match (line.find(':'), line.find(';')) {
        (Some(colon), semi) if semi.is_none_or(|s| colon < s) => {
            let value = line[colon + 1..].trim_matches([' ', '\t']);
            let action = if value.is_empty() {
                HeaderAction::Remove
            } else {
                HeaderAction::Set(value.to_string())
            };
            (&line[..colon], action)
        }
        (_, Some(semi)) if line[semi + 1..].trim().is_empty() => {
            (&line[..semi], HeaderAction::Empty)
        }
        _ => {
            return Err(format!(
                "'{}' is not a header; expected 'Name: value'",
                printable(line)
            ));
        }
    };
    check_name(name)?;
    if let HeaderAction::Set(v) = &value {
        check_value(name, v)?;
    }
    Ok(HeaderLine {
        name: name.to_string(),
        value,
    })
}

/// The lines of a `-H @FILE` file: one header per line; blank lines and lines
/// starting with `#` are skipped. Errors name the line.
pub fn header_file(text: &str) -> Result<Vec<HeaderLine>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            let t = line.trim();
            !t.is_empty() && !t.starts_with('#')
        })
        .map(|(i, line)| header_line(line).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect()
}

/// RFC 9110 §5.1: a header name is a non-empty token.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty() && name.bytes().all(is_tchar);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "'{}' is not a header name; expected a token such as Accept or X-Api-Key",
            printable(name)
        ))
    }
}

/// RFC 9110 §5.5: visible characters, spaces and tabs (and obs-text); no CR,
/// LF or other control characters, which could smuggle another header.
fn check_value(name: &str, value: &str) -> Result<(), String> {
    let ok = value
        .bytes()
        .all(|b| b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "the value of header {name} contains a control character"
        ))
    }
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The text with control characters escaped, for error messages.
fn printable(text: &str) -> String {
    text.chars()
        .flat_map(char::escape_debug)
        .take(200)
        .collect()
}

fn until(at: SystemTime, now: SystemTime) -> Duration {
    at.duration_since(now)
        .unwrap_or(Duration::ZERO)
        .min(MAX_WAIT)
}

/// A string of ASCII digits as a number, saturating instead of overflowing.
fn whole_number(digits: &str) -> u64 {
    digits.bytes().fold(0u64, |n, b| {
        n.saturating_mul(10).saturating_add(u64::from(b - b'0'))
    })
}

fn clamp_seconds(seconds: u64) -> Duration {
    Duration::from_secs(seconds.min(MAX_WAIT.as_secs()))
}

/// `12` or `12.5`: non-negative seconds with an optional fraction.
fn decimal_seconds(value: &str) -> Option<Duration> {
    let (whole, fraction) = value.split_once('.').unwrap_or((value, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) {
        return None;
    }
    let whole = whole_number(whole);
    let nanos = fraction
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(9)
        .fold(0u32, |n, b| n * 10 + u32::from(b - b'0'));
    let d = clamp_seconds(whole);
    Some((d + Duration::from_nanos(u64::from(nanos))).min(MAX_WAIT))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    /// 1994-11-06 08:49:37 UTC, the date RFC 9110 uses in its examples.
    const RFC_EXAMPLE: u64 = 784111777;

    #[test]
    fn retry_after_delta_seconds() {
        let now = at(RFC_EXAMPLE);
        assert_eq!(retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(retry_after(" 0 ", now), Some(Duration::ZERO));
        assert_eq!(retry_after("99999999999999999999999", now), Some(MAX_WAIT));
    }

    #[test]
    fn retry_after_all_three_date_forms() {
        let now = at(RFC_EXAMPLE - 30);
        let thirty = Some(Duration::from_secs(30));
        assert_eq!(retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now), thirty);
        assert_eq!(retry_after("Sunday, 06-Nov-94 08:49:37 GMT", now), thirty);
        assert_eq!(retry_after("Sun Nov  6 08:49:37 1994", now), thirty);
    }

    #[test]
    fn http_dates_are_read_only_in_their_forms() {
        for bad in [
            "Mon, 06 Nov 1994 08:49:37 GMT",
            "sun, 06 nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 8:49:37 GMT",
            "Sun, 006 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 CET",
            "Sun, 06 Nov 1994 08:49:37 +0100",
            "Sun, 06 Nov 1994 08:49:37 utc",
            "Sun, 06 Nov 1994 08:49:37",
            "Sun Nov  6 08:49:37 1994 UTC",
            "Fri, 01 Jan 1960 00:00:00 GMT",
        ] {
            assert_eq!(http_date(bad), None, "{bad}");
        }
        assert_eq!(
            http_date(" Sun, 06 Nov 1994 08:49:37 GMT "),
            Some(at(RFC_EXAMPLE))
        );
    }

    #[test]
    fn http_dates_take_a_one_digit_day_and_utc_where_unambiguous() {
        for lenient in [
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 6 Nov 1994 08:49:37 +0000",
            "Sunday, 6-Nov-94 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 UTC",
            "Sun Nov 6 08:49:37 1994",
        ] {
            assert_eq!(http_date(lenient), Some(at(RFC_EXAMPLE)), "{lenient}");
        }
        // The weekday must still fit the date.
        assert_eq!(http_date("Mon, 6 Nov 1994 08:49:37 UTC"), None);
    }

    #[test]
    fn dates_up_to_the_last_second_of_year_9999_are_read() {
        let last = UNIX_EPOCH + Duration::from_secs(253_402_300_799);
        assert_eq!(http_date("Fri, 31 Dec 9999 23:59:59 GMT"), Some(last));
        assert_eq!(http_date("Fri Dec 31 23:59:59 9999"), Some(last));
        assert_eq!(
            retry_after("Fri, 31 Dec 9999 23:59:59 GMT", at(RFC_EXAMPLE)),
            Some(MAX_WAIT)
        );
    }

    #[test]
    fn retry_after_in_the_past_is_no_wait() {
        let now = at(RFC_EXAMPLE + 3600);
        assert_eq!(
            retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn retry_after_garbage_is_ignored() {
        let now = at(RFC_EXAMPLE);
        for bad in [
            "",
            "soon",
            "-5",
            "1.5",
            "12s",
            "+3",
            "Sun, 06 Nov 1994 25:49:37 GMT",
            "Sun, 31 Feb 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 PST",
            "Sun, 06 Nov 1994 08:49:37 UT",
            "2024-01-01T00:00:00Z",
            "٣",
        ] {
            assert_eq!(retry_after(bad, now), None, "{bad:?}");
        }
    }

    #[test]
    fn rate_limit_reset_delta_or_epoch() {
        let now = at(1_700_000_000);
        assert_eq!(rate_limit_reset("30", now), Some(Duration::from_secs(30)));
        assert_eq!(
            rate_limit_reset("1.5", now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            rate_limit_reset("1700000060", now),
            Some(Duration::from_secs(60))
        );
        assert_eq!(rate_limit_reset("1600000000", now), Some(Duration::ZERO));
        for bad in ["", "x", "-1", "1e3", ".5", "1.2.3"] {
            assert_eq!(rate_limit_reset(bad, now), None, "{bad:?}");
        }
    }

    #[test]
    fn rate_limit_field_takes_exhausted_items() {
        assert_eq!(
            rate_limit_field(r#""default";r=0;t=30"#),
            Some(Duration::from_secs(30))
        );
        assert_eq!(rate_limit_field(r#""default";r=5;t=30"#), None);
        assert_eq!(
            rate_limit_field(r#""a";r=0;t=10, "b";r=0;t=40, "c";r=3;t=90"#),
            Some(Duration::from_secs(40))
        );
        assert_eq!(rate_limit_field("garbage"), None);
        assert_eq!(rate_limit_field(";;;=,=;r"), None);
    }

    #[test]
    fn remaining_counts() {
        assert_eq!(rate_limit_remaining(" 0"), Some(0));
        assert_eq!(rate_limit_remaining("17"), Some(17));
        assert_eq!(rate_limit_remaining("none"), None);
        assert_eq!(rate_limit_remaining(""), None);
    }

    #[test]
    fn header_lines_like_curl() {
        assert_eq!(
            header_line("Accept: text/plain"),
            Ok(HeaderLine {
                name: "Accept".into(),
                value: HeaderAction::Set("text/plain".into())
            })
        );
        assert_eq!(
            header_line("X-Empty;").map(|h| h.value),
            Ok(HeaderAction::Empty)
        );
        assert_eq!(
            header_line("Accept:").map(|h| h.value),
            Ok(HeaderAction::Remove)
        );
        assert_eq!(
            header_line("X-List: a;b").map(|h| h.value),
            Ok(HeaderAction::Set("a;b".into()))
        );
        assert!(header_line("no colon").is_err());
        assert!(header_line(": value").is_err());
        assert!(header_line("Bad Name: x").is_err());
        assert!(header_line("X: a\rInjected: b").is_err());
    }

    #[test]
    fn header_files_skip_blanks_and_comments() {
        let text = "# secrets\nAuthorization: Bearer abc\r\n\nX-Trace: 1\n";
        let lines = header_file(text).unwrap();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].name, "Authorization");
        let err = header_file("A: 1\nbroken\n").unwrap_err();
        assert!(err.starts_with("line 2:"), "{err}");
    }
}
