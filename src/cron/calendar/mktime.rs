//! A broken-down local time read as glibc's `mktime` reads it, which is where systemd's
//! calendar takes its daylight-saving rules from: fields out of range are carried
//! (minute 60 is the next hour, day 0 the month's last), and the instant is found from
//! the offset of the last reading, each reading's error correcting the next. So a time
//! in a gap, where the readings go back and forth, is read with the offset they stop at
//! (one jump later, unless summer time is asked for), a repeated time is read in the
//! pass of the last reading, and a time asked for with a daylight saving it does not
//! have takes the offset of the nearest time that has it.

use jiff::civil::{Date, DateTime};
use jiff::{SignedDuration, Timestamp};

use crate::cron::Zone;

/// glibc's probe for an offset with the daylight saving asked for: a step of about a
/// week, out to half the longest summer time on record, either way.
const PROBE_STEP: i64 = 601_200;
const PROBE_BOUND: i64 = 536_454_000 / 2 + PROBE_STEP;

/// A broken-down local time whose fields may be out of range until it is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tm {
    pub year: i32,
    pub month: i32,
    pub day: i32,
    pub hour: i32,
    pub minute: i32,
    pub second: i32,
    /// The daylight saving it is to be read with (`tm_isdst`); `None`: whichever.
    pub dst: Option<bool>,
}

impl Tm {
    pub fn fields(&self) -> [i32; 6] {
        [
            self.year,
            self.month,
            self.day,
            self.hour,
            self.minute,
            self.second,
        ]
    }

    pub fn from_fields(f: [i32; 6], dst: Option<bool>) -> Tm {
        Tm {
            year: f[0],
            month: f[1],
            day: f[2],
            hour: f[3],
            minute: f[4],
            second: f[5],
            dst,
        }
    }

    pub fn of(civil: DateTime, dst: Option<bool>) -> Tm {
        Tm {
            year: i32::from(civil.year()),
            month: i32::from(civil.month()),
            day: i32::from(civil.day()),
            hour: i32::from(civil.hour()),
            minute: i32::from(civil.minute()),
            second: i32::from(civil.second()),
            dst,
        }
    }

    /// The local time it names, out-of-range fields carried as `mktime` carries them.
    pub fn civil(&self) -> Option<DateTime> {
        let months = i64::from(self.year) * 12 + i64::from(self.month) - 1;
        let year = i16::try_from(months.div_euclid(12)).ok()?;
        let month = i8::try_from(months.rem_euclid(12) + 1).ok()?;
        let seconds = (i64::from(self.day) - 1) * 86_400
            + i64::from(self.hour) * 3600
            + i64::from(self.minute) * 60
            + i64::from(self.second);
        let first = Date::new(year, month, 1)
            .ok()?
            .to_datetime(jiff::civil::Time::midnight());
        first.checked_add(SignedDuration::from_secs(seconds)).ok()
    }

    /// Midnight of the day: what a field's change resets below it.
    pub fn start_of_day(&mut self) {
        (self.hour, self.minute, self.second) = (0, 0, 0);
    }
}

/// The zone's reader, remembering the offset it last read a local time with, as
/// `mktime` guesses the offset of the next one from it.
pub struct Reader<'a> {
    zone: &'a Zone,
    /// Seconds east of UTC.
    guess: i64,
}

impl<'a> Reader<'a> {
    /// A reader of `zone`, and the local time at `start`, read with its own daylight
    /// saving (as `localtime` gives it).
    pub fn starting_at(zone: &'a Zone, start: Timestamp) -> (Reader<'a>, Tm) {
        let tz = zone.time_zone();
        let info = tz.to_offset_info(start);
        let reader = Reader {
            zone,
            guess: i64::from(info.offset().seconds()),
        };
        let local = Tm::of(tz.to_datetime(start), Some(info.dst().is_dst()));
        (reader, local)
    }

    /// The instant `tm` names and its normalized local time.
    pub fn read(&mut self, tm: &Tm) -> Option<(Timestamp, Tm)> {
        let (t, offset, dst) = self.mktime(tm.civil()?, tm.dst)?;
        let at = Timestamp::from_second(t).ok()?;
        let local = jiff::tz::Offset::from_seconds(i32::try_from(offset).ok()?).ok()?;
        Some((at, Tm::of(local.to_datetime(at), Some(dst))))
    }

    /// The instant (in seconds) of the local time `civil`, and the offset and daylight
    /// saving there, found as glibc's `mktime` finds it: from the offset guessed, each
    /// reading's error corrects the next; a match with the wrong daylight saving (when
    /// `dst` asks for one) takes the offset of the nearest time that has it; a time in
    /// a gap, where the readings go back and forth, is read with the offset of the one
    /// it stops at (the one in summer time when `dst` asks for none, else the one
    /// without what it asks for).
    fn mktime(&mut self, civil: DateTime, dst: Option<bool>) -> Option<(i64, i64, bool)> {
        let local = jiff::tz::Offset::UTC.to_timestamp(civil).ok()?.as_second();
        let mut t = local - self.guess;
        let (mut t1, mut t2, mut dst2) = (t, t, false);
        let mut probes = 6;
        let (offset, is_dst) = loop {
            let (offset, is_dst) = self.offset_at(t)?;
            let error = local - (t + offset);
            if error == 0 {
                break (offset, is_dst);
            }
            let oscillating = t == t1 && t != t2;
            let stops = match dst {
                None => !dst2 || is_dst,
                Some(want) => want != is_dst,
            };
            if oscillating && stops {
                return Some(self.found(local, t, (offset, is_dst)));
            }
            probes -= 1;
            if probes == 0 {
                return None;
            }
            (t1, t2, t, dst2) = (t2, t, t + error, is_dst);
        };
        match dst {
            Some(want) if is_dst != want => {
                let t = local - self.nearest(t, want)?;
                let there = self.offset_at(t)?;
                Some(self.found(local, t, there))
            }
            _ => Some(self.found(local, t, (offset, is_dst))),
        }
    }

    /// The instant `t` found for the local time `local` (both in seconds) with what the
    /// zone says there, the offset it was read with kept as the next guess.
    fn found(&mut self, local: i64, t: i64, (offset, dst): (i64, bool)) -> (i64, i64, bool) {
        self.guess = local - t;
        (t, offset, dst)
    }

    /// The offset (seconds east of UTC) at `t`, and whether it is summer time.
    fn offset_at(&self, t: i64) -> Option<(i64, bool)> {
        let info = self
            .zone
            .time_zone()
            .to_offset_info(Timestamp::from_second(t).ok()?);
        Some((i64::from(info.offset().seconds()), info.dst().is_dst()))
    }

    /// The offset of the time nearest `t` (earlier first) whose daylight saving is
    /// `dst`, probing as glibc's `mktime` does; `None` when there is none.
    fn nearest(&self, t: i64, dst: bool) -> Option<i64> {
        let steps = (1..)
            .map(|k| k * PROBE_STEP)
            .take_while(|d| *d < PROBE_BOUND);
        steps.flat_map(|d| [t - d, t + d]).find_map(|probe| {
            let (off, is_dst) = self.offset_at(probe)?;
            (is_dst == dst).then_some(off)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    /// `tm` in `zone`, read after a reading of `after` (which sets the guess).
    fn read_after(zone: &str, after: &str, tm: Tm) -> Timestamp {
        let zone = Zone::named(zone).unwrap();
        let (mut reader, _) = Reader::starting_at(&zone, utc(after));
        reader.read(&tm).unwrap().0
    }

    fn tm(civil: &str, dst: Option<bool>) -> Tm {
        Tm::of(civil.parse().unwrap(), dst)
    }

    #[test]
    fn fields_out_of_range_are_carried() {
        let carried = Tm {
            month: 13,
            day: 0,
            minute: 60,
            ..tm("2026-12-31 01:00", None)
        };
        assert_eq!(carried.civil(), Some("2026-12-31 02:00".parse().unwrap()));
    }

    #[test]
    fn a_skipped_time_reads_one_jump_later_unless_summer_time_is_asked_for() {
        // Berlin 2026-03-29: 02:00 CET becomes 03:00 CEST at 01:00Z.
        let before = "2026-03-29T00:30:00Z";
        let skipped = tm("2026-03-29 02:30", None);
        assert_eq!(
            read_after("Europe/Berlin", before, skipped),
            utc("2026-03-29T01:30:00Z")
        );
        // Lord Howe 2026-10-04: 02:00 +10:30 becomes 02:30 +11 at 15:30Z on the 3rd; 02:00
        // asked for in summer time reads back to 01:30, as glibc reads it.
        let before = "2026-10-03T15:20:00Z";
        let asked = tm("2026-10-04 02:00", Some(true));
        assert_eq!(
            read_after("Australia/Lord_Howe", before, asked),
            utc("2026-10-03T15:00:00Z")
        );
        let unasked = tm("2026-10-04 02:00", None);
        assert_eq!(
            read_after("Australia/Lord_Howe", before, unasked),
            utc("2026-10-03T15:30:00Z")
        );
    }

    #[test]
    fn a_repeated_time_reads_in_the_pass_of_the_last_reading() {
        // Berlin 2026-10-25: 03:00 CEST becomes 02:00 CET at 01:00Z.
        let repeated = tm("2026-10-25 02:30", None);
        let first = read_after("Europe/Berlin", "2026-10-25T00:10:00Z", repeated);
        assert_eq!(first, utc("2026-10-25T00:30:00Z"));
        let second = read_after("Europe/Berlin", "2026-10-25T01:10:00Z", repeated);
        assert_eq!(second, utc("2026-10-25T01:30:00Z"));
        let asked = tm("2026-10-25 02:30", Some(false));
        let winter = read_after("Europe/Berlin", "2026-10-25T00:10:00Z", asked);
        assert_eq!(winter, utc("2026-10-25T01:30:00Z"));
    }

    #[test]
    fn a_time_asked_for_in_the_other_daylight_saving_takes_the_nearest_offset() {
        // New Year in summer time: the nearest summer offset (+2, last October).
        let asked = tm("2027-01-01 00:00", Some(true));
        let read = read_after("Europe/Berlin", "2026-12-01T00:00:00Z", asked);
        assert_eq!(read, utc("2026-12-31T22:00:00Z"));
        // UTC has no summer time to take an offset from.
        let zone = Zone::utc();
        let (mut reader, _) = Reader::starting_at(&zone, utc("2026-12-01T00:00:00Z"));
        assert!(reader.read(&asked).is_none());
    }
}
