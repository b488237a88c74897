//! The time zone a schedule is read in, loaded at run time from the system's time zone
//! database (`TZDIR`, else /usr/share/zoneinfo) through jiff. A compiled-in database
//! would be current only as of the build, and its tables cost every start of retry
//! tens of thousands of relocations, schedule or not.
//!
//! The rest of the schedule works in chrono's types (croner matches chrono's local
//! times); this type is the one place the two meet.

use chrono::{DateTime, NaiveDateTime, TimeDelta, Timelike, Utc};
use jiff::tz::{AmbiguousOffset, TimeZone};

/// What `--tz` accepts, for error messages.
pub const TZ_ACCEPTS: &str = "expected an IANA time zone name such as Europe/Berlin or UTC, \
     looked up in TZDIR or /usr/share/zoneinfo (Debian's tzdata package)";

/// A time zone and the name it was given by.
#[derive(Clone, Debug)]
pub struct Zone {
    tz: TimeZone,
    name: String,
}

/// What a local time is in a zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// It happens once, at this instant.
    Single(DateTime<Utc>),
    /// It happens twice as the clocks go back: the first pass, then the second.
    Twice(DateTime<Utc>, DateTime<Utc>),
    /// It does not happen: the clocks jump over it.
    Gap,
}

impl Zone {
    pub fn utc() -> Zone {
        Zone {
            tz: TimeZone::UTC,
            name: "UTC".into(),
        }
    }

    /// The zone the database knows as `name` (IANA, such as Europe/Berlin).
    pub fn named(name: &str) -> Result<Zone, String> {
        // An absolute or relative path would make jiff read any file as a zone.
        let plausible = !name.is_empty() && !name.starts_with('/') && !name.contains("..");
        let tz = plausible
            .then(|| TimeZone::get(name).ok())
            .flatten()
            .ok_or_else(|| format!("unknown time zone {name:?}; {TZ_ACCEPTS}"))?;
        Ok(Zone {
            tz,
            name: name.to_string(),
        })
    }

    /// The name it was given by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// UTC offset in seconds at `t`.
    pub fn offset_at(&self, t: DateTime<Utc>) -> i32 {
        self.tz.to_offset(timestamp(t)).seconds()
    }

    /// The local wall-clock time at `t`.
    pub fn local(&self, t: DateTime<Utc>) -> NaiveDateTime {
        t.naive_utc() + TimeDelta::seconds(self.offset_at(t).into())
    }

    /// The abbreviation in use at `t` (CET, CEST, or a numeric one such as +03).
    pub fn abbreviation(&self, t: DateTime<Utc>) -> String {
        self.tz
            .to_offset_info(timestamp(t))
            .abbreviation()
            .to_string()
    }

    /// When the local time `local` happens.
    pub fn resolve(&self, local: NaiveDateTime) -> Resolved {
        let at = |offset: jiff::tz::Offset| {
            local.and_utc() - TimeDelta::seconds(offset.seconds().into())
        };
        match self.tz.to_ambiguous_timestamp(civil(local)).offset() {
            AmbiguousOffset::Unambiguous { offset } => Resolved::Single(at(offset)),
            AmbiguousOffset::Fold { before, after } => Resolved::Twice(at(before), at(after)),
            AmbiguousOffset::Gap { .. } => Resolved::Gap,
        }
    }
}

/// The whole second `t` falls in (offsets change on whole seconds).
fn timestamp(t: DateTime<Utc>) -> jiff::Timestamp {
    jiff::Timestamp::from_second(t.timestamp()).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

fn civil(local: NaiveDateTime) -> jiff::civil::DateTime {
    use chrono::Datelike;
    // chrono's and jiff's ranges overlap for every year a schedule reaches (jiff: ±9999).
    jiff::civil::DateTime::new(
        local.year().clamp(-9999, 9999) as i16,
        local.month() as i8,
        local.day() as i8,
        local.hour() as i8,
        local.minute() as i8,
        local.second().min(59) as i8,
        local.nanosecond().min(999_999_999) as i32,
    )
    .unwrap_or(jiff::civil::DateTime::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    fn naive(text: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S").unwrap()
    }

    #[test]
    fn berlin_in_winter_summer_and_at_both_changes() {
        let berlin = Zone::named("Europe/Berlin").unwrap();
        assert_eq!(berlin.name(), "Europe/Berlin");
        assert_eq!(berlin.offset_at(utc("2026-01-15T12:00:00Z")), 3600);
        assert_eq!(berlin.offset_at(utc("2026-07-15T12:00:00Z")), 7200);
        assert_eq!(berlin.abbreviation(utc("2026-01-15T12:00:00Z")), "CET");
        assert_eq!(berlin.abbreviation(utc("2026-07-15T12:00:00Z")), "CEST");
        assert_eq!(
            berlin.local(utc("2026-07-15T12:00:00Z")),
            naive("2026-07-15 14:00:00")
        );
        assert_eq!(
            berlin.resolve(naive("2026-03-29 02:30:00")),
            Resolved::Gap,
            "spring forward skips 02:00-03:00"
        );
        assert_eq!(
            berlin.resolve(naive("2026-10-25 02:30:00")),
            Resolved::Twice(utc("2026-10-25T00:30:00Z"), utc("2026-10-25T01:30:00Z")),
            "fall back repeats 02:00-03:00"
        );
        assert_eq!(
            berlin.resolve(naive("2026-10-25 04:00:00")),
            Resolved::Single(utc("2026-10-25T03:00:00Z"))
        );
    }

    #[test]
    fn utc_needs_no_database_and_unknown_names_are_refused() {
        let utc_zone = Zone::utc();
        assert_eq!(utc_zone.abbreviation(utc("2026-01-15T12:00:00Z")), "UTC");
        for bad in ["Mars/Olympus", "", "/etc/passwd", "../../etc/passwd"] {
            let err = Zone::named(bad).unwrap_err();
            assert!(err.contains("unknown time zone"), "{bad}: {err}");
            assert!(err.contains("/usr/share/zoneinfo"), "{err}");
        }
    }
}
