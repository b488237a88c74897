//! systemd's calendar expressions, the OnCalendar= of its timers (systemd.time(7)):
//! `Mon..Fri 09:00`, `*-*-01 03:00:00`, `hourly`, `*:0/15`, `2026-12-24 18:00
//! Europe/Berlin`. No maintained crate reads them, so this is our own reading, which
//! follows systemd in everything: the grammar ([`parse`], with its zones and shorthands
//! in [`words`] and each field's values in [`chain`]) and when an expression next
//! elapses, daylight-saving changes included ([`next`], reading local times as glibc
//! does in [`mktime`]). The module `reference` holds it to `systemd-analyze calendar`.

use jiff::Timestamp;

mod chain;
mod mktime;
mod next;
mod parse;
#[cfg(test)]
mod reference;
mod words;

use super::Zone;
use parse::Spec;
use words::ZoneWord;

/// A calendar expression and the zone it names, if any.
#[derive(Clone, Debug)]
pub struct Calendar {
    spec: Spec,
    zone: ZoneWord,
}

impl Calendar {
    /// Reads `text` (trimmed) as systemd reads OnCalendar=; the error says what is wrong.
    pub fn parse(text: &str) -> Result<Calendar, String> {
        let (spec, zone) = parse::parse(text)?;
        Ok(Calendar { spec, zone })
    }

    /// The zone the expression names (`UTC` included), which wins over the schedule's.
    pub fn zone(&self) -> Option<Zone> {
        match &self.zone {
            ZoneWord::Local => None,
            ZoneWord::Utc => Some(Zone::utc()),
            ZoneWord::Named(zone) => Some(zone.clone()),
        }
    }

    /// Whether every time it names falls on a whole second.
    pub fn whole_seconds(&self) -> bool {
        let micros = chain::MICROS;
        self.spec.second.iter().all(|c| {
            c.start % micros == 0
                && c.repeat % micros == 0
                && c.stop.is_none_or(|s| s % micros == 0)
        })
    }

    /// When it next elapses strictly after `t`, read in `zone` (its own zone if it names
    /// one); `None` when it never does again (or not within systemd's search).
    pub fn next_after(&self, zone: &Zone, t: Timestamp) -> Option<Timestamp> {
        match self.zone() {
            Some(own) => next::next_after(&self.spec, &own, t),
            None => next::next_after(&self.spec, zone, t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    /// The next `n` elapses of `expr` after `from`, in `zone`, as RFC 3339 UTC.
    fn elapses(expr: &str, zone: &str, from: &str, n: usize) -> Vec<String> {
        let calendar = Calendar::parse(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
        let zone = Zone::named(zone).unwrap();
        let mut t = utc(from);
        let mut out = Vec::new();
        for _ in 0..n {
            let Some(next) = calendar.next_after(&zone, t) else {
                break;
            };
            out.push(next.strftime("%Y-%m-%dT%H:%M:%S%.fZ").to_string());
            t = next;
        }
        out
    }

    #[test]
    fn weekdays_dates_and_repetitions() {
        // 2026-03-28 is a Saturday.
        assert_eq!(
            elapses("Mon..Fri 09:00", "UTC", "2026-03-28T12:00:00Z", 3),
            [
                "2026-03-30T09:00:00Z",
                "2026-03-31T09:00:00Z",
                "2026-04-01T09:00:00Z"
            ]
        );
        assert_eq!(
            elapses("*-*-01 03:00:00", "UTC", "2026-03-28T12:00:00Z", 2),
            ["2026-04-01T03:00:00Z", "2026-05-01T03:00:00Z"]
        );
        assert_eq!(
            elapses("8..18/4:00", "UTC", "2026-03-28T12:00:00Z", 3),
            [
                "2026-03-28T16:00:00Z",
                "2026-03-29T08:00:00Z",
                "2026-03-29T12:00:00Z"
            ]
        );
        assert_eq!(
            elapses("*-02~01", "UTC", "2026-01-01T00:00:00Z", 2),
            ["2026-02-28T00:00:00Z", "2027-02-28T00:00:00Z"]
        );
        assert_eq!(
            elapses("Mon *-05~07/1 10:00", "UTC", "2026-01-01T00:00:00Z", 1),
            ["2026-05-25T10:00:00Z"],
            "the last Monday of May"
        );
        assert!(elapses("*-02-30", "UTC", "2026-01-01T00:00:00Z", 1).is_empty());
        assert!(elapses("2020-01-01", "UTC", "2026-01-01T00:00:00Z", 1).is_empty());
    }

    #[test]
    fn fractions_of_a_second_are_kept_to_the_microsecond() {
        assert_eq!(
            elapses("*:*:0/0.25", "UTC", "2026-01-01T00:00:00.1Z", 2),
            ["2026-01-01T00:00:00.25Z", "2026-01-01T00:00:00.5Z"]
        );
        assert!(!Calendar::parse("*:*:0.5").unwrap().whole_seconds());
        assert!(Calendar::parse("*:*:*").unwrap().whole_seconds());
    }

    #[test]
    fn its_own_zone_wins() {
        let calendar = Calendar::parse("daily Europe/Berlin").unwrap();
        assert_eq!(calendar.zone().unwrap().name(), "Europe/Berlin");
        let next = calendar.next_after(&Zone::utc(), utc("2026-07-01T12:00:00Z"));
        assert_eq!(next, Some(utc("2026-07-01T22:00:00Z")));
        assert_eq!(
            Calendar::parse("daily UTC").unwrap().zone().unwrap().name(),
            "UTC"
        );
        assert!(Calendar::parse("daily").unwrap().zone().is_none());
    }

    #[test]
    fn spring_forward_a_local_time_that_does_not_exist_does_not_run_that_day() {
        // Berlin 2026-03-29: 02:00 CET becomes 03:00 CEST at 01:00Z.
        assert_eq!(
            elapses("*-*-* 02:30", "Europe/Berlin", "2026-03-28T12:00:00Z", 2),
            ["2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z"]
        );
        assert_eq!(
            elapses("*:0/30", "Europe/Berlin", "2026-03-29T00:00:00Z", 3),
            [
                "2026-03-29T00:30:00Z",
                "2026-03-29T01:00:00Z",
                "2026-03-29T01:30:00Z"
            ],
            "01:30 CET, then 03:00 and 03:30 CEST"
        );
        // New York 2026-03-08: 02:00 EST becomes 03:00 EDT at 07:00Z.
        assert_eq!(
            elapses("*-*-* 02:15", "America/New_York", "2026-03-07T12:00:00Z", 2),
            ["2026-03-09T06:15:00Z", "2026-03-10T06:15:00Z"]
        );
    }

    #[test]
    fn fall_back_a_repeated_local_time_runs_once_in_the_first_pass() {
        // Berlin 2026-10-25: 03:00 CEST becomes 02:00 CET at 01:00Z.
        assert_eq!(
            elapses("*-*-* 02:30", "Europe/Berlin", "2026-10-24T12:00:00Z", 2),
            ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]
        );
        assert_eq!(
            elapses("*:0/30", "Europe/Berlin", "2026-10-24T23:40:00Z", 3),
            [
                "2026-10-25T00:00:00Z",
                "2026-10-25T00:30:00Z",
                "2026-10-25T02:00:00Z"
            ],
            "02:00 and 02:30 CEST, then 03:00 CET: the second pass is not run"
        );
        // Begun inside the second pass, the search stays in it, as systemd's does.
        assert_eq!(
            elapses("*:0/30", "Europe/Berlin", "2026-10-25T01:10:00Z", 2),
            ["2026-10-25T01:30:00Z", "2026-10-25T02:00:00Z"]
        );
        // New York 2026-11-01: 02:00 EDT becomes 01:00 EST at 06:00Z.
        assert_eq!(
            elapses("*-*-* 01:30", "America/New_York", "2026-10-31T12:00:00Z", 2),
            ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]
        );
    }
}
