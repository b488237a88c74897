//! The words of a calendar expression that systemd reads before anything else: a time
//! zone at the end (` UTC` in any case, or the exact name of a zone in the database)
//! and the shorthands that stand for a whole expression (`daily`, `weekly`,
//! `quarterly`, …).

use crate::cron::Zone;

/// The zone an expression names, if any.
#[derive(Clone, Debug)]
pub enum ZoneWord {
    /// None: the schedule's zone (`--tz`, `CRON_TZ`, `TZ`, the host's).
    Local,
    Utc,
    Named(Zone),
}

/// A shorthand and the fields it sets; every one sets the second to 0, and each
/// field it does not name is any value.
pub struct Shorthand {
    names: &'static [&'static str],
    pub monday: bool,
    pub months: &'static [i32],
    pub day: bool,
    /// How many of hour and minute are 0: `hourly` 1 (the minute), `daily` 2.
    pub zeros: usize,
}

const fn short(
    names: &'static [&'static str],
    monday: bool,
    months: &'static [i32],
    day: bool,
    zeros: usize,
) -> Shorthand {
    Shorthand {
        names,
        monday,
        months,
        day,
        zeros,
    }
}

/// systemd.time(7)'s shorthands ("anually" and the hyphenated ones are systemd's too).
const SHORTHANDS: [Shorthand; 8] = [
    short(&["minutely"], false, &[], false, 0),
    short(&["hourly"], false, &[], false, 1),
    short(&["daily"], false, &[], false, 2),
    short(&["monthly"], false, &[], true, 2),
    short(&["annually", "yearly", "anually"], false, &[1], true, 2),
    short(&["weekly"], true, &[], false, 2),
    short(&["quarterly"], false, &[1, 4, 7, 10], true, 2),
    short(
        &["semiannually", "semi-annually", "biannually", "bi-annually"],
        false,
        &[1, 7],
        true,
        2,
    ),
];

/// The zone at the end, as systemd finds it: ` UTC` in any case, else a last word
/// that names a zone of the database exactly.
pub fn split_zone(text: &str) -> (&str, ZoneWord) {
    let n = text.len();
    if n >= 4 && text.is_char_boundary(n - 4) && text[n - 4..].eq_ignore_ascii_case(" UTC") {
        return (&text[..n - 4], ZoneWord::Utc);
    }
    let Some(space) = text.rfind(' ') else {
        return (text, ZoneWord::Local);
    };
    let word = &text[space + 1..];
    match zone_word(word) {
        Some(zone) => (&text[..space], zone),
        None => (text, ZoneWord::Local),
    }
}

/// A zone name as systemd takes one: letters, digits, `-_+`, single slashes inside,
/// and a file of that exact name in the database.
fn zone_word(word: &str) -> Option<ZoneWord> {
    if word == "UTC" {
        return Some(ZoneWord::Utc);
    }
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_+/".contains(c))
        && !word.starts_with('/')
        && !word.ends_with('/')
        && !word.contains("//");
    plain
        .then(|| Zone::named_exactly(word).ok())
        .flatten()
        .map(ZoneWord::Named)
}

/// The shorthand `text` is, if it is one.
pub fn shorthand(text: &str) -> Option<&'static Shorthand> {
    SHORTHANDS
        .iter()
        .find(|s| s.names.iter().any(|n| n.eq_ignore_ascii_case(text)))
}

#[cfg(test)]
mod tests {
    use super::super::parse::{Spec, parse};
    use super::*;

    fn spec(text: &str) -> Spec {
        parse(text).unwrap_or_else(|e| panic!("{text}: {e}")).0
    }

    #[test]
    fn shorthands_are_systemd_s() {
        assert_eq!(spec("daily"), spec("*-*-* 00:00:00"));
        assert_eq!(spec("Weekly"), spec("Mon *-*-* 00:00:00"));
        assert_eq!(spec("quarterly"), spec("*-1,4,7,10-1 00:00:00"));
        assert_eq!(spec("bi-annually"), spec("*-1,7-1 00:00:00"));
        assert_eq!(spec("minutely"), spec("*-*-* *:*:00"));
        assert_eq!(spec("anually"), spec("yearly"));
    }

    #[test]
    fn a_zone_is_the_last_word() {
        assert!(matches!(parse("daily UTC").unwrap().1, ZoneWord::Utc));
        assert!(matches!(parse("daily utc").unwrap().1, ZoneWord::Utc));
        match parse("Mon 09:00 Europe/Berlin").unwrap().1 {
            ZoneWord::Named(zone) => assert_eq!(zone.name(), "Europe/Berlin"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(parse("Mon 09:00").unwrap().1, ZoneWord::Local));
        for bad in [
            "Mon 09:00 europe/berlin",
            "Mon 09:00 Mars/Olympus",
            "UTC",
            "09:00  UTC x",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
