//! When a calendar expression next elapses, found as systemd finds it: the local time
//! just after the given instant is moved forward field by field (year, month, day,
//! weekday, hour, minute, second), and every candidate is read as the C library's
//! `mktime` reads a broken-down time ([`mktime`](super::mktime)), which is where
//! systemd's daylight-saving rules come from: a local time the clocks jump over is read
//! one jump later, which moves the search past it (it does not run that day); one that
//! happens twice is read in the pass of the instant read before it, the first unless
//! the search began inside the second. A candidate moved by a reading keeps the
//! daylight saving it was read with into the next reading, as `tm_isdst` does; a match
//! not after the start (a gap read backward) moves an hour on, as systemd 252.38 does.
//! Like systemd, the search gives up after 1,000 steps (which that carried daylight
//! saving can cause: `*-6/5-27` in a zone with summer time, after November) and past
//! the year 2199.

use jiff::{SignedDuration, Timestamp};

use super::chain::{self, MICROS};
use super::mktime::{Reader, Tm};
use super::parse::Spec;
use crate::cron::Zone;

/// systemd's safety valve against a search that never ends.
const MAX_STEPS: usize = 1000;

/// How a candidate compares with the time it is read as.
#[derive(PartialEq, Eq)]
enum Bounds {
    /// It is a local time as written.
    Exact,
    /// It was carried or moved forward (a gap): the search goes on from there.
    Moved,
    /// Read backward, or past systemd's last year.
    Out,
}

impl Reader<'_> {
    /// Reads `tm`; when it moved, `tm` becomes where it moved to, with the field below
    /// the first one that changed reset.
    fn bounds(&mut self, tm: &mut Tm) -> Bounds {
        if tm.year > chain::YEAR.high {
            return Bounds::Out;
        }
        let Some((_, read)) = self.read(tm) else {
            return Bounds::Out;
        };
        let (mut got, wanted) = (read.fields(), tm.fields());
        let Some(i) = (0..6).find(|&i| got[i] != wanted[i]) else {
            return Bounds::Exact;
        };
        if got[i] < wanted[i] {
            return Bounds::Out;
        }
        // Months and days start at 1, the time of day at 0.
        if let Some(below) = got.get_mut(i + 1) {
            *below = i32::from(i < 2);
        }
        *tm = Tm::from_fields(got, read.dst);
        Bounds::Moved
    }

    /// The day of `tm`'s month that is the `n`th last, or -1 (for `n` -1: none).
    fn nth_last_day(&mut self, tm: &Tm, n: i32) -> i32 {
        let probe = Tm {
            month: tm.month + 1,
            day: 1 - n,
            ..*tm
        };
        match self.read(&probe) {
            Some((_, read)) if read.month == tm.month => read.day,
            _ => -1,
        }
    }

    fn weekday_matches(&mut self, weekdays: Option<u8>, tm: &Tm) -> bool {
        let Some(bits) = weekdays else {
            return true;
        };
        self.read(tm).is_some_and(|(_, read)| {
            let civil = read.civil().map(|c| c.weekday().to_monday_zero_offset());
            civil.is_some_and(|day| bits & (1 << day) != 0)
        })
    }
}

/// The first instant strictly after `t` that `spec` names, read in `zone`.
pub fn next_after(spec: &Spec, zone: &Zone, t: Timestamp) -> Option<Timestamp> {
    let micros = t.as_microsecond().checked_add(1)?;
    let start = Timestamp::from_second(micros.div_euclid(i64::from(MICROS))).ok()?;
    let (mut reader, local) = Reader::starting_at(zone, start);
    let usec = i32::try_from(micros.rem_euclid(i64::from(MICROS))).ok()?;
    let (found, usec) = search(spec, &mut reader, local, usec)?;
    let (at, _) = reader.read(&found)?;
    at.checked_add(SignedDuration::from_micros(i64::from(usec)))
        .ok()
}

/// systemd's walk: each field moved to its first match, the fields below reset when it
/// moved, the field above carried when there is none; any move starts the walk again.
fn search(spec: &Spec, r: &mut Reader<'_>, start: Tm, start_usec: i32) -> Option<(Tm, i32)> {
    let same = |d: i32| d;
    let (mut c, mut usec) = (start, start_usec);
    // Once a match came out at or before the start, each reading keeps the daylight
    // saving of the one before it, as systemd 252.38 does to get unstuck.
    let mut keep_dst = false;
    for _ in 0..MAX_STEPS {
        // systemd ignores a reading that fails here.
        if let Some((_, read)) = r.read(&c) {
            c = read;
        }
        if !keep_dst {
            c.dst = None;
        }
        let (year, moved) = chain::first_from(&spec.year, c.year, same, false)?;
        c.year = year;
        if moved {
            (c.month, c.day, usec) = (1, 1, 0);
            c.start_of_day();
        }
        if r.bounds(&mut c) != Bounds::Exact {
            return None;
        }
        let found = chain::first_from(&spec.month, c.month, same, false);
        if !r.step(&mut c, &mut usec, found, Field::Month) {
            continue;
        }
        let month = c;
        let found = chain::first_from(
            &spec.day,
            c.day,
            |n| r.nth_last_day(&month, n),
            spec.from_end,
        );
        if !r.step(&mut c, &mut usec, found, Field::Day) {
            continue;
        }
        if !r.weekday_matches(spec.weekdays, &c) {
            // The next day: what the hour field carries into.
            Field::Hour.carry(&mut c, &mut usec);
            continue;
        }
        let found = chain::first_from(&spec.hour, c.hour, same, false);
        if !r.step(&mut c, &mut usec, found, Field::Hour) {
            continue;
        }
        let found = chain::first_from(&spec.minute, c.minute, same, false);
        if !r.step(&mut c, &mut usec, found, Field::Minute) {
            continue;
        }
        let found = chain::first_from(&spec.second, c.second * MICROS + usec, same, false);
        if !r.step(&mut c, &mut usec, found, Field::Second) {
            continue;
        }
        // A match not after the start (a gap read backward): an hour on, and again.
        let stuck = match start.fields().cmp(&c.fields()) {
            std::cmp::Ordering::Equal => start_usec > usec,
            order => order == std::cmp::Ordering::Greater,
        };
        if stuck {
            keep_dst = true;
            c.hour += 1;
            continue;
        }
        return Some((c, usec));
    }
    None
}

/// The fields below the year, each with what its move resets and what its failure carries.
#[derive(Clone, Copy)]
enum Field {
    Month,
    Day,
    Hour,
    Minute,
    /// With the microseconds.
    Second,
}

impl Field {
    fn set(self, c: &mut Tm, usec: &mut i32, value: i32) {
        match self {
            Field::Month => c.month = value,
            Field::Day => c.day = value,
            Field::Hour => c.hour = value,
            Field::Minute => c.minute = value,
            Field::Second => (c.second, *usec) = (value / MICROS, value % MICROS),
        }
    }

    /// The fields below, back to their first value.
    fn reset_below(self, c: &mut Tm, usec: &mut i32) {
        match self {
            Field::Month => {
                c.day = 1;
                c.start_of_day();
            }
            Field::Day => c.start_of_day(),
            Field::Hour => (c.minute, c.second) = (0, 0),
            Field::Minute => c.second = 0,
            Field::Second => return,
        }
        *usec = 0;
    }

    /// No match in this field: the field above moves on by one, and everything below
    /// it starts over.
    fn carry(self, c: &mut Tm, usec: &mut i32) {
        match self {
            Field::Month => {
                (c.year, c.month, c.day) = (c.year + 1, 1, 1);
                c.start_of_day();
            }
            Field::Day => {
                (c.month, c.day) = (c.month + 1, 1);
                c.start_of_day();
            }
            Field::Hour => {
                c.day += 1;
                c.start_of_day();
            }
            Field::Minute => (c.hour, c.minute, c.second) = (c.hour + 1, 0, 0),
            Field::Second => (c.minute, c.second) = (c.minute + 1, 0),
        }
        *usec = 0;
    }
}

impl Reader<'_> {
    /// One field's step: whether the walk goes on to the next field (`false`: again
    /// from the top).
    fn step(&mut self, c: &mut Tm, usec: &mut i32, found: Option<(i32, bool)>, f: Field) -> bool {
        let Some((value, moved)) = found else {
            f.carry(c, usec);
            return false;
        };
        f.set(c, usec, value);
        if moved {
            f.reset_below(c, usec);
        }
        match self.bounds(c) {
            Bounds::Exact => true,
            Bounds::Moved => false,
            Bounds::Out => {
                f.carry(c, usec);
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn next(expr: &str, zone: &str, after: &str) -> Option<Timestamp> {
        let (spec, _) = super::super::parse::parse(expr).unwrap();
        next_after(&spec, &Zone::named(zone).unwrap(), utc(after))
    }

    #[test]
    fn a_match_read_back_before_the_start_moves_an_hour_on() {
        // Lord Howe 2026-10-04: 02:00-02:30 is skipped; after 01:50 comes 02:30.
        let got = next("*:0/10", "Australia/Lord_Howe", "2026-10-03T15:20:00Z");
        assert_eq!(got, Some(utc("2026-10-03T15:30:00Z")));
    }

    #[test]
    fn the_search_gives_up_where_systemd_s_does() {
        // Carried summer time sends the search round from November on.
        let june = next("*-6/5-27", "Europe/Berlin", "2026-03-08T06:40:00Z");
        assert_eq!(june, Some(utc("2026-06-26T22:00:00Z")));
        assert_eq!(
            next("*-6/5-27", "Europe/Berlin", "2026-11-26T23:00:00Z"),
            None
        );
        assert_eq!(
            next("*-6/5-27", "UTC", "2026-11-27T00:00:00Z"),
            Some(utc("2027-06-27T00:00:00Z"))
        );
        // Nothing past 2199, and no February 30th.
        assert_eq!(
            next("*-12-31 23:59:59", "UTC", "2199-06-01T00:00:00Z"),
            Some(utc("2199-12-31T23:59:59Z"))
        );
        assert_eq!(
            next("*-12-31 23:59:59", "UTC", "2199-12-31T23:59:59Z"),
            None
        );
        assert_eq!(next("*-02-30", "UTC", "2026-01-01T00:00:00Z"), None);
    }

    #[test]
    fn strictly_after_to_the_microsecond() {
        let got = next("*:*:0/0.5", "UTC", "2026-01-01T00:00:00.5Z");
        assert_eq!(got, Some(utc("2026-01-01T00:00:01Z")));
        let got = next("*:*:0/0.5", "UTC", "2026-01-01T00:00:00.4999995Z");
        assert_eq!(got, Some(utc("2026-01-01T00:00:00.5Z")));
    }
}
