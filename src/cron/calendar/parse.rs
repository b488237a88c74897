//! The text of a calendar expression read as systemd reads OnCalendar= (systemd.time(7),
//! "Calendar Events"): an optional time zone last (`UTC`, or a name of the time zone
//! database), then a shorthand (`daily`, `weekly`, `quarterly`, …) or up to three parts,
//! each optional: weekdays (`Mon..Fri`, `Sat,Sun`), a date (`2026-12-24`, `*-*-01`,
//! `*-02~03`, or `@SECONDS` since the epoch) and a time (`09:00`, `*:0/15`,
//! `8..18/2:00:00.5`). What it accepts and refuses is systemd's, word for word; the
//! values are checked in [`chain`].

use super::chain::{self, Chain, MICROS};
use super::words::{self, Shorthand, ZoneWord};

/// A calendar expression's fields, in systemd's normal form.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Spec {
    /// Bit 0 Monday … bit 6 Sunday; `None` for every day.
    pub weekdays: Option<u8>,
    pub year: Chain,
    pub month: Chain,
    pub day: Chain,
    /// `day` counts back from the month's end (`*-02~03`: the third last day).
    pub from_end: bool,
    pub hour: Chain,
    pub minute: Chain,
    /// Microseconds, as systemd keeps seconds.
    pub second: Chain,
}

/// systemd's weekday names, longest first, as it tries them.
const WEEKDAYS: [(&str, u8); 14] = [
    ("Monday", 0),
    ("Mon", 0),
    ("Tuesday", 1),
    ("Tue", 1),
    ("Wednesday", 2),
    ("Wed", 2),
    ("Thursday", 3),
    ("Thu", 3),
    ("Friday", 4),
    ("Fri", 4),
    ("Saturday", 5),
    ("Sat", 5),
    ("Sunday", 6),
    ("Sun", 6),
];

/// Reads `text` (already trimmed) into its fields and zone.
pub fn parse(text: &str) -> Result<(Spec, ZoneWord), String> {
    let (rest, mut zone) = words::split_zone(text);
    if rest.is_empty() {
        return Err("nothing before the time zone".into());
    }
    let mut spec = match words::shorthand(rest) {
        Some(shorthand) => expand(shorthand),
        None => {
            let (spec, since_epoch) = parts(rest)?;
            if since_epoch {
                zone = ZoneWord::Utc;
            }
            spec
        }
    };
    normalize(&mut spec);
    check(&spec)?;
    Ok((spec, zone))
}

/// The expression a shorthand stands for: the second 0, and each field it does not
/// name any value.
fn expand(shorthand: &Shorthand) -> Spec {
    let zero = |needed: usize| {
        if shorthand.zeros >= needed {
            chain::single(0)
        } else {
            Chain::new()
        }
    };
    Spec {
        weekdays: shorthand.monday.then_some(1),
        month: shorthand
            .months
            .iter()
            .flat_map(|m| chain::single(*m))
            .collect(),
        day: if shorthand.day {
            chain::single(1)
        } else {
            Chain::new()
        },
        hour: zero(2),
        minute: zero(1),
        second: chain::single(0),
        ..Spec::default()
    }
}

/// Weekdays, a date and a time, each optional; whether the date was `@SECONDS`.
fn parts(text: &str) -> Result<(Spec, bool), String> {
    let mut spec = Spec::default();
    let mut p = text;
    spec.weekdays = weekdays(&mut p)?;
    let since_epoch = date(&mut p, &mut spec)?;
    if !since_epoch {
        time(&mut p, &mut spec)?;
    }
    if !p.is_empty() {
        return Err(format!("'{p}' is left over; {}", SHAPE));
    }
    Ok((spec, since_epoch))
}

/// What the parts look like, for messages.
const SHAPE: &str = "expected [WEEKDAYS] [[YEAR-]MONTH-DAY] [HOUR:MINUTE[:SECOND]] [ZONE]";

const WEEKDAY_WORDS: &str =
    "a weekday is Mon..Sun or Monday..Sunday, in lists (Sat,Sun) and ranges (Mon..Fri)";

/// Leading weekday names, lists and ranges, as bits; `None` when none is given.
fn weekdays(p: &mut &str) -> Result<Option<u8>, String> {
    let mut bits = 0u8;
    let mut open: Option<u8> = None;
    let mut first = true;
    loop {
        let Some((name, day)) = WEEKDAYS.iter().find(|(name, _)| starts_no_case(p, name)) else {
            return if first {
                Ok(None)
            } else {
                Err(format!("'{p}': {WEEKDAY_WORDS}"))
            };
        };
        let after = &p[name.len()..];
        if !after.is_empty() && !after.starts_with(['-', '.', ',', ' ']) {
            return Err(format!("'{p}': {WEEKDAY_WORDS}"));
        }
        bits |= 1 << day;
        if let Some(from) = open {
            if from > *day {
                return Err(format!(
                    "'{p}': a range of weekdays runs forward ({WEEKDAY_WORDS})"
                ));
            }
            (from + 1..*day).for_each(|d| bits |= 1 << d);
        }
        *p = after;
        if p.is_empty() {
            return Ok(Some(bits));
        }
        if p.starts_with(' ') {
            *p = p.trim_start_matches(' ');
            return Ok(Some(bits));
        }
        let (width, range) = match p.as_bytes()[0] {
            b'.' if p.starts_with("..") => (2, true),
            b'-' => (1, true),
            b',' => (1, false),
            _ => return Err(format!("'{p}': {WEEKDAY_WORDS}")),
        };
        if range && open.is_some() {
            return Err(format!("'{p}': {WEEKDAY_WORDS}"));
        }
        open = range.then_some(*day);
        *p = &p[width..];
        if p.is_empty() || p.starts_with(' ') {
            *p = p.trim_start_matches(' ');
            return match open {
                None => Ok(Some(bits)),
                Some(_) => Err(format!("a range of weekdays with no end; {WEEKDAY_WORDS}")),
            };
        }
        first = false;
    }
}

fn starts_no_case(text: &str, prefix: &str) -> bool {
    text.len() >= prefix.len()
        && text.is_char_boundary(prefix.len())
        && text[..prefix.len()].eq_ignore_ascii_case(prefix)
}

const DATE_WORDS: &str =
    "a date is [YEAR-]MONTH-DAY (2026-12-24, *-*-01, *-02~03 for the third last day of February)";

/// A date, if the next part is one; `true` for `@SECONDS`, which is the whole time too.
fn date(p: &mut &str, spec: &mut Spec) -> Result<bool, String> {
    if p.is_empty() {
        return Ok(false);
    }
    if let Some(seconds) = p.strip_prefix('@') {
        *spec = since_epoch(seconds)?;
        *p = "";
        return Ok(true);
    }
    let mut t = *p;
    let first = chain::read(&mut t, false)?;
    if t.is_empty() || t.starts_with(':') {
        return Ok(false);
    }
    let mut from_end = separator(&mut t)?;
    let second = chain::read(&mut t, false)?;
    if t.is_empty() || t.starts_with(' ') {
        (spec.month, spec.day, spec.from_end) = (first, second, from_end);
        *p = t.trim_start_matches(' ');
        return Ok(false);
    }
    if from_end {
        return Err(format!("'{t}': {DATE_WORDS}"));
    }
    from_end = separator(&mut t)?;
    let third = chain::read(&mut t, false)?;
    if !(t.is_empty() || t.starts_with(' ')) {
        return Err(format!("'{t}': {DATE_WORDS}"));
    }
    (spec.year, spec.month, spec.day, spec.from_end) = (first, second, third, from_end);
    *p = t.trim_start_matches(' ');
    Ok(false)
}

/// `-`, or `~` (the day counts from the month's end): whether it was `~`.
fn separator(t: &mut &str) -> Result<bool, String> {
    let from_end = t.starts_with('~');
    if !from_end && !t.starts_with('-') {
        return Err(format!("'{t}': {DATE_WORDS}"));
    }
    *t = &t[1..];
    Ok(from_end)
}

/// `@SECONDS`: that second, in UTC, as systemd reads it (`strtoul`: leading blanks and
/// a sign taken; a negative time is before 1970 and refused by the range check).
fn since_epoch(text: &str) -> Result<Spec, String> {
    let unsigned = text.trim_start_matches(|c: char| c.is_ascii_whitespace());
    let (negative, digits) = match unsigned.as_bytes().first() {
        Some(b'-') => (true, &unsigned[1..]),
        Some(b'+') => (false, &unsigned[1..]),
        _ => (false, unsigned),
    };
    let bad = || format!("'@{text}': @ takes whole seconds since 1970-01-01 UTC");
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let value: i64 = match digits.parse::<u64>() {
        Ok(0) => 0,
        Ok(_) if negative => -1,
        Ok(v) => i64::try_from(v).map_err(|_| bad())?,
        Err(_) => return Err(bad()),
    };
    let at = jiff::Timestamp::from_second(value).map_err(|_| bad())?;
    let civil = at.to_zoned(jiff::tz::TimeZone::UTC).datetime();
    let at = |v: i8| chain::single(i32::from(v));
    Ok(Spec {
        weekdays: None,
        year: chain::single(i32::from(civil.year())),
        month: at(civil.month()),
        day: at(civil.day()),
        from_end: false,
        hour: at(civil.hour()),
        minute: at(civil.minute()),
        second: chain::single(i32::from(civil.second()) * MICROS),
    })
}

const TIME_WORDS: &str = "a time is HOUR:MINUTE[:SECOND] (09:00, *:0/15, 8..18/2:00, 12:00:30.5)";

/// `HOUR:MINUTE[:SECOND]`; midnight when the text ends first.
fn time(p: &mut &str, spec: &mut Spec) -> Result<(), String> {
    let zero = || chain::single(0);
    if p.is_empty() {
        (spec.hour, spec.minute, spec.second) = (zero(), zero(), zero());
        return Ok(());
    }
    let mut t = *p;
    let hour = chain::read(&mut t, false)?;
    t = t
        .strip_prefix(':')
        .ok_or_else(|| format!("'{t}': {TIME_WORDS}"))?;
    let minute = chain::read(&mut t, false)?;
    let second = if t.is_empty() {
        zero()
    } else {
        t = t
            .strip_prefix(':')
            .ok_or_else(|| format!("'{t}': {TIME_WORDS}"))?;
        chain::read(&mut t, true)?
    };
    if !t.is_empty() {
        return Err(format!("'{t}': {TIME_WORDS}"));
    }
    (spec.hour, spec.minute, spec.second) = (hour, minute, second);
    *p = t;
    Ok(())
}

/// systemd's normal form: all seven weekdays are every day, `~` without a day is
/// dropped, two-digit years widened, each field's components normalized.
fn normalize(spec: &mut Spec) {
    if spec.weekdays.is_some_and(|bits| bits == 0 || bits >= 127) {
        spec.weekdays = None;
    }
    if spec.day.is_empty() {
        spec.from_end = false;
    }
    chain::widen_years(&mut spec.year);
    for field in [
        &mut spec.year,
        &mut spec.month,
        &mut spec.day,
        &mut spec.hour,
        &mut spec.minute,
        &mut spec.second,
    ] {
        chain::normalize(field);
    }
}

fn check(spec: &Spec) -> Result<(), String> {
    chain::check(&spec.year, chain::YEAR, false)?;
    chain::check(&spec.month, chain::MONTH, false)?;
    chain::check(&spec.day, chain::DAY, spec.from_end)?;
    chain::check(&spec.hour, chain::HOUR, false)?;
    chain::check(&spec.minute, chain::MINUTE, false)?;
    chain::check(&spec.second, chain::SECOND, false)
}

#[cfg(test)]
mod tests {
    use super::super::chain::Component;
    use super::*;

    fn at(start: i32) -> Component {
        Component {
            start,
            stop: None,
            repeat: 0,
        }
    }

    fn spec(text: &str) -> Spec {
        parse(text).unwrap_or_else(|e| panic!("{text}: {e}")).0
    }

    #[test]
    fn weekdays_in_lists_and_ranges_any_case_and_either_length() {
        assert_eq!(spec("Mon..Fri").weekdays, Some(0b001_1111));
        assert_eq!(spec("sat,SUNDAY 10:00").weekdays, Some(0b110_0000));
        assert_eq!(spec("Mon-Wed,Fri").weekdays, Some(0b001_0111));
        assert_eq!(spec("Mon..Sun").weekdays, None, "every day");
        assert_eq!(spec("Mon, 09:00").weekdays, Some(1), "a trailing comma");
        for bad in [
            "Fri..Mon",
            "Mond",
            "Mon..",
            "Mon..Wed..Fri",
            "Mon,09:00",
            "Mon.Fri",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn dates_take_two_or_three_parts_and_count_from_the_month_s_end() {
        let s = spec("2026-12-24 18:00");
        assert_eq!(
            (s.year, s.month, s.day),
            (vec![at(2026)], vec![at(12)], vec![at(24)])
        );
        assert_eq!(
            (s.hour, s.minute, s.second),
            (vec![at(18)], vec![at(0)], vec![at(0)])
        );
        let s = spec("*-02~03");
        assert!(s.year.is_empty() && s.from_end);
        assert_eq!(s.day, [at(3)]);
        assert_eq!(spec("12-24").month, [at(12)]);
        assert_eq!(spec("26-1-1").year, [at(2026)], "two-digit years");
        for bad in [
            "2026~02-03",
            "*-*-*-*",
            "2026-12",
            "*/5 * * * *",
            "2026-13-01",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn times_repeat_and_take_seconds_with_six_decimals() {
        let s = spec("*:0/15");
        assert_eq!(
            s.minute,
            [Component {
                start: 0,
                stop: None,
                repeat: 15
            }]
        );
        assert_eq!(s.second, [at(0)]);
        let s = spec("8..18/2:00");
        assert_eq!(
            s.hour,
            [Component {
                start: 8,
                stop: Some(18),
                repeat: 2
            }]
        );
        assert_eq!(spec("*:*:10.5").second, [at(10_500_000)]);
        assert_eq!(
            spec("*:*:1.0000005").second,
            [at(1_000_001)],
            "a seventh decimal rounds"
        );
        assert_eq!(
            spec("*:*:*").second,
            [Component {
                start: 0,
                stop: None,
                repeat: MICROS
            }]
        );
        for bad in [
            "09",
            "9:",
            "*:*:*.3",
            "*:0/0",
            "*:*:1..1.5",
            "*:60",
            "24:00",
            "1:2:3:4",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn seconds_since_the_epoch_are_one_instant_in_utc() {
        assert!(matches!(parse("@0").unwrap().1, ZoneWord::Utc));
        let s = spec("@86400");
        assert_eq!(
            (s.year, s.day, s.hour),
            (vec![at(1970)], vec![at(2)], vec![at(0)])
        );
        assert!(parse("@-5").is_err(), "before 1970");
        assert!(parse("@12x").is_err());
    }
}
