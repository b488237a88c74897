//! The time zone a schedule is read in, loaded at run time from the system's time zone
//! database (`TZDIR`, else /usr/share/zoneinfo) through jiff, as is the host's local
//! zone. A compiled-in database would be current only as of the build, and its tables
//! cost every start of retry tens of thousands of relocations, schedule or not.

use std::path::{Path, PathBuf};

use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::{AmbiguousOffset, TimeZone};

/// What `--tz` accepts, for error messages.
pub const TZ_ACCEPTS: &str = "expected an IANA time zone name such as Europe/Berlin or UTC, \
     looked up in TZDIR or /usr/share/zoneinfo (Debian's tzdata package)";

/// Where jiff looks for the database when `TZDIR` is not a directory, in this order.
const ZONEINFO_DIRS: [&str; 3] = [
    "/usr/share/zoneinfo",
    "/usr/share/lib/zoneinfo",
    "/etc/zoneinfo",
];

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
    Single(Timestamp),
    /// It happens twice as the clocks go back: the first pass, then the second.
    Twice(Timestamp, Timestamp),
    /// It does not happen: the clocks jump over it, at `jump`.
    Gap { jump: Timestamp },
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
            .then(|| from_file(name).or_else(|| TimeZone::get(name).ok()))
            .flatten()
            .ok_or_else(|| format!("unknown time zone {name:?}; {TZ_ACCEPTS}"))?;
        Ok(Zone {
            tz,
            name: name.to_string(),
        })
    }

    /// The zone whose file in the database has exactly this name, as systemd looks a
    /// calendar expression's zone up (no other case, no link jiff would follow).
    pub fn named_exactly(name: &str) -> Result<Zone, String> {
        if name == "UTC" {
            return Ok(Zone::utc());
        }
        let tz =
            from_file(name).ok_or_else(|| format!("unknown time zone {name:?}; {TZ_ACCEPTS}"))?;
        Ok(Zone {
            tz,
            name: name.to_string(),
        })
    }

    /// The host's zone, as jiff finds it (/etc/localtime), named by its IANA name, or
    /// by the file when it has none; `None` when there is none.
    pub fn local() -> Option<Zone> {
        // jiff names the zone by /etc/localtime's link into the database, read here directly.
        if std::env::var_os("TZ").is_none() {
            if let Some(zone) = linked_localtime() {
                return Some(zone);
            }
        }
        let tz = TimeZone::try_system().ok()?;
        let name = tz.iana_name().unwrap_or("/etc/localtime").to_string();
        Some(Zone { tz, name })
    }

    /// jiff's zone, for the calendar's own reading of local times.
    pub(in crate::cron) fn time_zone(&self) -> &TimeZone {
        &self.tz
    }

    /// The name it was given by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The local wall-clock time at `t`.
    pub fn local_time(&self, t: Timestamp) -> DateTime {
        self.tz.to_datetime(t)
    }

    /// The abbreviation in use at `t` (CET, CEST, or a numeric one such as +03).
    pub fn abbreviation(&self, t: Timestamp) -> String {
        self.tz.to_offset_info(t).abbreviation().to_string()
    }

    /// When the local time `local` happens.
    pub fn resolve(&self, local: DateTime) -> Resolved {
        let at = |offset: jiff::tz::Offset| offset.to_timestamp(local).unwrap_or(Timestamp::MAX);
        match self.tz.to_ambiguous_timestamp(local).offset() {
            AmbiguousOffset::Unambiguous { offset } => Resolved::Single(at(offset)),
            AmbiguousOffset::Fold { before, after } => Resolved::Twice(at(before), at(after)),
            // Read in the new offset, a time in the gap is an instant before the jump.
            AmbiguousOffset::Gap { after, .. } => Resolved::Gap {
                jump: self.next_change(at(after)).unwrap_or(Timestamp::MAX),
            },
        }
    }

    /// The first instant after `t` at which the zone's offset changes.
    pub fn next_change(&self, t: Timestamp) -> Option<Timestamp> {
        self.tz.following(t).next().map(|change| change.timestamp())
    }
}

/// The zone `name` read from its own file in the database, as jiff's lookup finds it
/// under its exact name, without jiff's walk of the whole database (most of the CPU a
/// `--run-slot` start costs). `None` sends the name to jiff (another case, no file).
fn from_file(name: &str) -> Option<TimeZone> {
    let plain = name
        .split('/')
        .all(|part| !part.is_empty() && part != "." && part != "..");
    // jiff's database leaves these two trees out.
    let left_out = name.starts_with("posix/") || name.starts_with("right/");
    if !plain || left_out {
        return None;
    }
    let data = std::fs::read(database_dir()?.join(name)).ok()?;
    TimeZone::tzif(name, &data).ok()
}

/// The database jiff reads: `TZDIR` when it is a directory, else the first of [`ZONEINFO_DIRS`].
fn database_dir() -> Option<PathBuf> {
    let tzdir = std::env::var_os("TZDIR").map(PathBuf::from);
    tzdir
        .into_iter()
        .chain(ZONEINFO_DIRS.iter().map(PathBuf::from))
        .find(|dir| dir.is_dir())
}

/// The host's zone when /etc/localtime links into a database, named as jiff names it.
fn linked_localtime() -> Option<Zone> {
    let target = std::fs::read_link(Path::new("/etc/localtime")).ok()?;
    let target = target.to_str()?;
    let needle = "zoneinfo/";
    let name = &target[target.rfind(needle)? + needle.len()..];
    Some(Zone {
        tz: from_file(name)?,
        name: name.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn civil(text: &str) -> DateTime {
        text.parse().unwrap()
    }

    #[test]
    fn berlin_in_winter_summer_and_at_both_changes() {
        let berlin = Zone::named("Europe/Berlin").unwrap();
        assert_eq!(berlin.name(), "Europe/Berlin");
        assert_eq!(berlin.abbreviation(utc("2026-01-15T12:00:00Z")), "CET");
        assert_eq!(berlin.abbreviation(utc("2026-07-15T12:00:00Z")), "CEST");
        assert_eq!(
            berlin.local_time(utc("2026-01-15T12:00:00Z")),
            civil("2026-01-15 13:00:00")
        );
        assert_eq!(
            berlin.local_time(utc("2026-07-15T12:00:00Z")),
            civil("2026-07-15 14:00:00")
        );
        assert_eq!(
            berlin.resolve(civil("2026-03-29 02:30:00")),
            Resolved::Gap {
                jump: utc("2026-03-29T01:00:00Z")
            },
            "spring forward skips 02:00-03:00, at 01:00Z"
        );
        assert_eq!(
            berlin.resolve(civil("2026-10-25 02:30:00")),
            Resolved::Twice(utc("2026-10-25T00:30:00Z"), utc("2026-10-25T01:30:00Z")),
            "fall back repeats 02:00-03:00"
        );
        assert_eq!(
            berlin.resolve(civil("2026-10-25 04:00:00")),
            Resolved::Single(utc("2026-10-25T03:00:00Z"))
        );
        assert_eq!(
            berlin.next_change(utc("2026-10-25T00:30:00Z")),
            Some(utc("2026-10-25T01:00:00Z"))
        );
    }

    #[test]
    fn a_zone_read_from_its_file_is_the_zone_jiffs_database_finds() {
        for name in ["Europe/Berlin", "America/New_York", "Etc/UTC", "UTC"] {
            let direct = from_file(name).expect(name);
            let looked_up = TimeZone::get(name).unwrap();
            assert_eq!(direct.iana_name(), looked_up.iana_name(), "{name}");
            for t in [
                "2026-03-29T00:59:59Z",
                "2026-07-15T12:00:00Z",
                "1990-01-01T00:00:00Z",
            ] {
                let t = utc(t);
                assert_eq!(direct.to_offset(t), looked_up.to_offset(t), "{name} at {t}");
            }
        }
        for odd in [
            "europe/berlin",
            "posix/UTC",
            "Europe//Berlin",
            "./UTC",
            "Europe",
        ] {
            assert!(from_file(odd).is_none(), "{odd} is jiff's to look up");
        }
        let lower = Zone::named("europe/berlin").expect("jiff finds a name in another case");
        assert_eq!(lower.abbreviation(utc("2026-01-15T12:00:00Z")), "CET");
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
