//! How values are shown to people, the same everywhere: a duration briefly (`human`),
//! a URL without its user information (`redact_url`), a command line with the words
//! that need it quoted (`command_line`), any text on one line with its control
//! characters escaped (`one_line`), and times as RFC 3339 text, written and read
//! through jiff (`rfc3339_millis`, `rfc3339_seconds`, `parse_rfc3339`).

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use jiff::Timestamp;

/// Formats a duration briefly for humans: `850ms`, `1.7s`, `2m5s`.
pub fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    if ms < 60_000 {
        let tenths = (ms + 50) / 100;
        return if tenths % 10 == 0 {
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

/// `text` with every control character escaped as Rust writes it (a newline is `\n`,
/// ESC is `\u{1b}`): what reaches a terminal or a log is one line and never a raw
/// escape sequence, whatever value a message echoes.
pub fn one_line(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            shown.extend(c.escape_debug());
        } else {
            shown.push(c);
        }
    }
    Cow::Owned(shown)
}

/// Renders argv for a human on one line: words with spaces or quotes are
/// single-quoted, and control characters in them escaped (`one_line`).
pub fn command_line(argv: &[String]) -> String {
    let quote = |a: &String| {
        let plain = !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c));
        if plain {
            a.clone()
        } else {
            format!("'{}'", one_line(&a.replace('\'', r"'\''")))
        }
    };
    argv.iter().map(quote).collect::<Vec<_>>().join(" ")
}

/// `t` in RFC 3339, UTC, to the millisecond: `2024-05-01T03:00:00.000Z` (logs, records).
pub fn rfc3339_millis(t: SystemTime) -> String {
    const FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.3fZ";
    if let Ok(t) = Timestamp::try_from(t) {
        return t.strftime(FORMAT).to_string();
    }
    // jiff's timestamps end 26 hours before year 9999 does (every offset must reach a
    // civil time); the calendar goes on to 9999-12-31T23:59:59.999, and a time past it
    // (only a clock gone wrong, or a record refused as unreadable) is shown at that edge.
    let epoch = jiff::civil::DateTime::constant(1970, 1, 1, 0, 0, 0, 0);
    let civil = match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(since) => epoch
            .checked_add(since)
            .unwrap_or(jiff::civil::DateTime::MAX),
        Err(_) => jiff::civil::DateTime::MIN,
    };
    civil.strftime(FORMAT).to_string()
}

/// `t` in RFC 3339, UTC, to the second: `2024-05-01T03:00:00Z` (slot keys).
pub fn rfc3339_seconds(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// An RFC 3339 time with its offset (`Z` or `±HH:MM`, a space for the `T` allowed),
/// as records and slot keys hold them; `None` for anything else.
pub fn parse_rfc3339(text: &str) -> Option<Timestamp> {
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_to_the_last_millisecond_of_year_9999_are_shown_as_they_are() {
        let at =
            |ms: u64| rfc3339_millis(SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(ms));
        assert_eq!(at(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
        assert_eq!(at(253_402_214_400_000), "9999-12-31T00:00:00.000Z");
        assert_eq!(
            at(253_402_300_800_000),
            "9999-12-31T23:59:59.999Z",
            "at the edge"
        );
    }

    #[test]
    fn control_characters_are_escaped_onto_one_line() {
        assert_eq!(one_line("plain text, ünïcode"), "plain text, ünïcode");
        assert_eq!(one_line("a\nb\r\t\0"), r"a\nb\r\t\0");
        assert_eq!(
            one_line("\x1b[31mred\x7f\u{85}"),
            r"\u{1b}[31mred\u{7f}\u{85}"
        );
    }

    #[test]
    fn command_lines_quote_what_needs_it() {
        let argv = ["sh", "-c", "echo it's done", ""].map(String::from);
        assert_eq!(command_line(&argv), r"sh -c 'echo it'\''s done' ''");
        let argv = ["printf", "\x1b[2J\n"].map(String::from);
        assert_eq!(command_line(&argv), r"printf '\u{1b}[2J\n'");
    }

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
        let cases = [
            (
                "http://user:SECRET@127.0.0.1:8080/x?a=b@c",
                "http://***@127.0.0.1:8080/x?a=b@c",
            ),
            ("https://tok@h/p", "https://***@h/p"),
            ("https://a:b@c@h", "https://***@h"),
            ("https://h/p@q", "https://h/p@q"),
            ("not a url", "not a url"),
        ];
        for (given, shown) in cases {
            assert_eq!(redact_url(given), shown, "{given}");
        }
    }

    #[test]
    fn rfc3339_times_round_trip() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_714_532_400_123);
        assert_eq!(rfc3339_millis(t), "2024-05-01T03:00:00.123Z");
        let parsed = parse_rfc3339("2024-05-01T03:00:00.123Z").unwrap();
        assert_eq!(SystemTime::from(parsed), t);
        assert_eq!(rfc3339_seconds(parsed), "2024-05-01T03:00:00Z");
        assert_eq!(
            parse_rfc3339("2024-05-01 05:00:00+02:00"),
            parse_rfc3339("2024-05-01T03:00:00Z")
        );
        for bad in [
            "",
            "2024-05-01",
            "2024-05-01T03:00:00",
            "10000-05-01T03:00:00Z",
            "soon",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }
}
