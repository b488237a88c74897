//! CRON expressions and the time zone they are read in: parsing and matching
//! (croner, with Vixie/cronie semantics), and the slots, as UTC instants, that fall
//! in a span. Matching runs on the local wall clock; turning a local time into an
//! instant applies the daylight-saving rules here, as cronie does: a fixed local
//! time (no wildcard or step in the seconds, minute or hour field) that falls in a
//! gap runs once at the first instant after it, and one that happens twice runs in
//! the first pass only; a wildcard or stepped time runs in both passes and not in a gap.

use std::time::Duration;

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::Timestamp;
use jiff::civil::DateTime;

mod zone;

pub use zone::{Resolved, Zone};

/// What `--schedule` accepts, for error messages.
pub const CRON_ACCEPTS: &str = "expected five fields (minute hour day month weekday), \
     seven (second minute hour day month weekday year), @hourly, @daily (@midnight), \
     @weekly, @monthly, @yearly (@annually) or @every DUR";

/// Matching local times looked at for one slot before giving up (each gap or repeated
/// pass skips at most a few).
const MAX_CANDIDATES: usize = 10_000;

/// A parsed `--schedule`, before the zone it is read in is known.
#[derive(Clone, Debug)]
pub struct Expression {
    kind: Kind,
    text: String,
}

/// What the slots are.
#[derive(Clone, Debug)]
enum Kind {
    /// A CRON expression on the wall clock of the zone.
    Cron {
        cron: Box<Cron>,
        /// No wildcard or step in the seconds, minute and hour fields.
        fixed: bool,
    },
    /// `@every DUR`: whole multiples of DUR since the Unix epoch, whatever the zone,
    /// so that replicas started at different times agree on the slots.
    Every(Duration),
}

/// A parsed `--schedule` in its zone.
#[derive(Clone, Debug)]
pub struct CronSchedule {
    kind: Kind,
    pub text: String,
    pub zone: Zone,
}

impl Expression {
    /// Parses CRON: five fields, seven (seconds first, year last, as cronexpr and
    /// supercronic read them), a nickname or `@every DUR`. Day of month OR day of
    /// week, as cronie does. Six fields are refused: tools disagree on what they mean.
    pub fn parse(text: &str) -> Result<Expression, String> {
        let trimmed = text.trim();
        let every_at = trimmed
            .get(..6)
            .filter(|head| head.eq_ignore_ascii_case("@every"));
        let kind = match every_at.map(|head| &trimmed[head.len()..]) {
            Some(rest) if rest.is_empty() || rest.starts_with(char::is_whitespace) => {
                Kind::Every(every(text, rest.trim())?)
            }
            _ => cron_kind(text)?,
        };
        Ok(Expression {
            kind,
            text: text.trim().to_string(),
        })
    }
}

/// The nicknames cronie reads, as the five fields they stand for.
const NICKNAMES: [(&str, &str); 7] = [
    ("@yearly", "0 0 1 1 *"),
    ("@annually", "0 0 1 1 *"),
    ("@monthly", "0 0 1 * *"),
    ("@weekly", "0 0 * * 0"),
    ("@daily", "0 0 * * *"),
    ("@midnight", "0 0 * * *"),
    ("@hourly", "0 * * * *"),
];

/// A field of CRON: its name in messages, its range, and the words it takes besides
/// numbers (croner's `L`, `W` and `#` forms are checked by croner itself).
struct Field {
    name: &'static str,
    low: u32,
    high: u32,
    names: &'static [&'static str],
    /// Letters croner reads in this field (`L`, `W`, `#`), checked by croner.
    extra: &'static str,
}

const MONTHS: &[&str] = &[
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const WEEKDAYS: &[&str] = &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

const SECOND: Field = field("second", 0, 59, &[], "");
const MINUTE: Field = field("minute", 0, 59, &[], "");
const HOUR: Field = field("hour", 0, 23, &[], "");
const DAY: Field = field("day", 1, 31, &[], "LW?");
const MONTH: Field = field("month", 1, 12, MONTHS, "");
const WEEKDAY: Field = field("weekday", 0, 7, WEEKDAYS, "L#?");
// cronexpr's (supercronic's) years.
const YEAR: Field = field("year", 1970, 2099, &[], "");

const fn field(
    name: &'static str,
    low: u32,
    high: u32,
    names: &'static [&'static str],
    extra: &'static str,
) -> Field {
    Field {
        name,
        low,
        high,
        names,
        extra,
    }
}

/// The fields of five-field and seven-field CRON, in order.
const FIVE: [&Field; 5] = [&MINUTE, &HOUR, &DAY, &MONTH, &WEEKDAY];
const SEVEN: [&Field; 7] = [&SECOND, &MINUTE, &HOUR, &DAY, &MONTH, &WEEKDAY, &YEAR];

/// A CRON expression or nickname, for croner.
fn cron_kind(text: &str) -> Result<Kind, String> {
    if text.contains(['\n', '\r']) {
        return Err(format!(
            "'{}' has a line break; a schedule is one line",
            text.escape_debug()
        ));
    }
    let trimmed = text.trim();
    let expanded = match trimmed.strip_prefix('@') {
        Some(_) => nickname(trimmed)?,
        None => trimmed,
    };
    let fields: Vec<&str> = expanded.split_whitespace().collect();
    let table: &[&Field] = match fields.len() {
        5 => &FIVE,
        7 => &SEVEN,
        6 => return Err(six_fields(text, &fields)),
        n => return Err(format!("'{trimmed}' has {n} fields; {CRON_ACCEPTS}")),
    };
    for (value, field) in fields.iter().zip(table) {
        check_field(value, field)?;
    }
    // The day fields follow the time fields (seconds, minute and hour; or minute and hour).
    let time = if table.len() == 7 { 3 } else { 2 };
    let (day, weekday) = (fields[time], fields[time + 2]);
    // cronie: a day field that begins with `*` is unrestricted, and then a day must
    // match both fields; with both restricted, either one.
    let both = day.starts_with(['*', '?']) || weekday.starts_with(['*', '?']);
    let parser = CronParser::builder()
        .seconds(Seconds::Optional)
        .year(Year::Optional)
        .dom_and_dow(both)
        .build();
    // The fields were checked above: what croner still refuses gets retry's words.
    let cron = parser
        .parse(expanded)
        .map_err(|_| format!("'{trimmed}': {CRON_ACCEPTS}"))?;
    let fixed = fields[..time].iter().all(|f| !f.contains(['*', '?', '/']));
    Ok(Kind::Cron {
        cron: Box::new(cron),
        fixed,
    })
}

/// The five fields a nickname stands for; `@reboot` and unknown names are refused.
fn nickname(text: &str) -> Result<&'static str, String> {
    if text.eq_ignore_ascii_case("@reboot") {
        return Err(
            "'@reboot': the scheduler runs jobs at times only; run the command before the scheduler starts (in the container's entrypoint or the service's ExecStartPre)"
                .into(),
        );
    }
    NICKNAMES
        .iter()
        .find(|(name, _)| text.eq_ignore_ascii_case(name))
        .map(|(_, fields)| *fields)
        .ok_or_else(|| format!("'{text}' is no schedule name; {CRON_ACCEPTS}"))
}

/// Refuses a field with an empty list element, a step of 0, a number out of its
/// range, or a word it does not take, naming the field and its range.
fn check_field(value: &str, field: &Field) -> Result<(), String> {
    let what = |shown: &str, why: &str| format!("'{shown}' in the {} field: {why}", field.name);
    for element in value.split(',') {
        if element.is_empty() {
            return Err(what(value, "an empty list element (write 1,2, not 1,,2)"));
        }
        let (span, step) = match element.split_once('/') {
            Some((span, step)) => (span, Some(step)),
            None => (element, None),
        };
        if step.is_some_and(|step| step.parse::<u32>().map_or(true, |n| n == 0)) {
            return Err(what(element, "a step is a whole number of at least 1"));
        }
        if span == "*" || span == "?" {
            continue;
        }
        let ends = match span.split_once('-') {
            Some((a, b)) => [a, b],
            None => [span, span],
        };
        for end in ends {
            if !takes(end, field) {
                return Err(what(end, &accepts(field)));
            }
        }
    }
    Ok(())
}

/// Whether one end of a range (or a single value) is one the field takes.
fn takes(end: &str, field: &Field) -> bool {
    if let Ok(n) = end.parse::<u64>() {
        return (u64::from(field.low)..=u64::from(field.high)).contains(&n);
    }
    let upper = end.to_ascii_uppercase();
    // croner's L, W and # forms: digits and the field's own letters, checked by croner.
    let croner_form = !end.is_empty()
        && upper.chars().any(|c| field.extra.contains(c))
        && upper
            .chars()
            .all(|c| c.is_ascii_digit() || field.extra.contains(c));
    field.names.contains(&upper.as_str()) || croner_form
}

/// What a field takes: its range, and its names if it has any.
fn accepts(field: &Field) -> String {
    match field.names {
        [] => format!("{}-{}", field.low, field.high),
        names => format!(
            "{}-{} or {}-{}",
            field.low,
            field.high,
            names[0],
            names[names.len() - 1]
        ),
    }
}

/// Six fields mean seconds first to Quartz, Spring and croner, and year last to
/// cronexpr (supercronic's parser): the message spells out both in seven fields.
fn six_fields(text: &str, fields: &[&str]) -> String {
    let seconds_first = format!("{} *", fields.join(" "));
    let year_last = format!("0 {}", fields.join(" "));
    format!(
        "'{}' has six fields, which tools read two ways; write seven (second minute hour day \
         month weekday year): '{seconds_first}' if the first field is seconds (Quartz, Spring), \
         or '{year_last}' if the last is the year (supercronic)",
        text.trim()
    )
}

/// `@every DUR`: a whole number of seconds, at least one.
fn every(text: &str, duration: &str) -> Result<Duration, String> {
    let d = crate::parse::duration(duration).map_err(|e| format!("'{}': {e}", text.trim()))?;
    if d < Duration::from_secs(1) || d.subsec_nanos() != 0 {
        return Err(format!(
            "'{}': @every takes a whole number of seconds, at least 1s (slots are keyed to the second)",
            text.trim()
        ));
    }
    Ok(d)
}

impl CronSchedule {
    /// `expression`, read in `zone`.
    pub fn new(expression: Expression, zone: Zone) -> CronSchedule {
        let Expression { kind, text } = expression;
        CronSchedule { kind, text, zone }
    }

    /// Parses CRON, read in `zone`.
    #[cfg(test)]
    pub fn parse(text: &str, zone: Zone) -> Result<CronSchedule, String> {
        Expression::parse(text).map(|expression| CronSchedule::new(expression, zone))
    }

    /// The first slot strictly after `t`.
    pub fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        let (cron, fixed) = match &self.kind {
            Kind::Every(d) => return next_multiple(t, *d),
            Kind::Cron { cron, fixed } => (cron, *fixed),
        };
        let local = self.zone.local_time(t);
        let ahead = self.forward(cron, fixed, t, local);
        let repeated = if fixed {
            None
        } else {
            self.later_pass(cron, t, local)
        };
        match (ahead, repeated) {
            (Some(a), Some(r)) => Some(a.min(r)),
            (a, r) => a.or(r),
        }
    }

    /// The first matching local time after `local` that has an instant after `t`.
    fn forward(
        &self,
        cron: &Cron,
        fixed: bool,
        t: Timestamp,
        local: DateTime,
    ) -> Option<Timestamp> {
        let mut civil = local;
        for _ in 0..MAX_CANDIDATES {
            let candidate = cron.find_next_occurrence(&civil, false).ok()?;
            if let Some(at) = self.instant(fixed, candidate, t) {
                return Some(at);
            }
            civil = candidate;
        }
        None
    }

    /// When the matching local time `c` runs, if after `t`, by the DST rules above.
    fn instant(&self, fixed: bool, c: DateTime, t: Timestamp) -> Option<Timestamp> {
        match self.zone.resolve(c) {
            Resolved::Single(at) => Some(at).filter(|at| *at > t),
            Resolved::Twice(first, second) => {
                if first > t {
                    Some(first)
                } else {
                    Some(second).filter(|at| !fixed && *at > t)
                }
            }
            // A fixed time the clocks jump over runs when they jump.
            Resolved::Gap { jump } if fixed => Some(jump).filter(|at| *at > t),
            Resolved::Gap { .. } => None,
        }
    }

    /// While `t` is in the first pass of a repeated hour, the second pass of the local
    /// times before `local` is still ahead: its first matching time, if any.
    fn later_pass(&self, cron: &Cron, t: Timestamp, local: DateTime) -> Option<Timestamp> {
        let Resolved::Twice(first, _) = self.zone.resolve(local) else {
            return None;
        };
        if first != t {
            return None;
        }
        // The second pass starts when the clocks go back: the zone's next change.
        let repeat_start = self.zone.local_time(self.zone.next_change(t)?);
        let candidate = cron.find_next_occurrence(&repeat_start, true).ok()?;
        if candidate > local {
            return None;
        }
        match self.zone.resolve(candidate) {
            Resolved::Twice(_, second) => Some(second),
            _ => None,
        }
    }

    /// The slots in (`from`, `to`], oldest first, at most `limit` of them (the newest kept).
    pub fn slots_between(&self, from: Timestamp, to: Timestamp, limit: usize) -> Vec<Timestamp> {
        if let Kind::Every(every) = &self.kind {
            return every_between(from, to, *every, limit);
        }
        let mut out = std::collections::VecDeque::new();
        let mut t = from;
        while let Some(next) = self.next_after(t) {
            if next > to {
                break;
            }
            if out.len() == limit {
                out.pop_front();
            }
            out.push_back(next);
            t = next;
        }
        out.into()
    }

    /// The next `n` slots after `t`.
    pub fn upcoming(&self, t: Timestamp, n: usize) -> Vec<Timestamp> {
        let mut out = Vec::with_capacity(n);
        let mut t = t;
        while out.len() < n {
            let Some(next) = self.next_after(t) else {
                break;
            };
            out.push(next);
            t = next;
        }
        out
    }
}

/// [`CronSchedule::slots_between`] of `@every`, counted instead of stepped one slot at a
/// time (a day's catch-up window of `@every 1s` is 86,400 steps at every start).
fn every_between(from: Timestamp, to: Timestamp, every: Duration, limit: usize) -> Vec<Timestamp> {
    let (Some(first), Ok(step)) = (next_multiple(from, every), i128::try_from(every.as_nanos()))
    else {
        return Vec::new();
    };
    if first > to {
        return Vec::new();
    }
    let count = (to.as_nanosecond() - first.as_nanosecond()) / step + 1;
    let kept = count.min(i128::try_from(limit).unwrap_or(i128::MAX));
    let (Ok(start), Ok(step)) = (
        Timestamp::from_nanosecond(first.as_nanosecond() + (count - kept) * step),
        jiff::SignedDuration::try_from(every),
    ) else {
        return Vec::new();
    };
    // Added, not divided: each slot from the one before it.
    std::iter::successors(Some(start), |t| t.checked_add(step).ok())
        .take(usize::try_from(kept).unwrap_or(usize::MAX))
        .collect()
}

/// The first whole multiple of `every` since the Unix epoch strictly after `t`.
fn next_multiple(t: Timestamp, every: Duration) -> Option<Timestamp> {
    let step = i128::try_from(every.as_nanos()).ok()?;
    let next = (t.as_nanosecond().div_euclid(step) + 1).checked_mul(step)?;
    Timestamp::from_nanosecond(next).ok()
}

/// Parses an IANA zone name (`--tz`, or `TZ` with its optional leading colon).
pub fn parse_zone(name: &str) -> Result<Zone, String> {
    Zone::named(name.strip_prefix(':').unwrap_or(name))
}

/// `--tz`, else `TZ`, else the host's zone (jiff reads /etc/localtime), else UTC.
pub fn choose_zone(flag: Option<&str>) -> Result<Zone, String> {
    if let Some(name) = flag {
        return parse_zone(name).map_err(|e| format!("--tz: {e}"));
    }
    if let Some(name) = std::env::var("TZ").ok().filter(|v| !v.is_empty()) {
        return parse_zone(&name).map_err(|e| format!("TZ: {e}; or give --tz ZONE"));
    }
    Ok(Zone::local().unwrap_or_else(Zone::utc))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn slots(cron: &str, zone: Zone, from: &str, to: &str) -> Vec<String> {
        let s = CronSchedule::parse(cron, zone).unwrap();
        s.slots_between(utc(from), utc(to), 1000)
            .iter()
            .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
            .collect()
    }

    #[allow(non_snake_case)]
    fn BERLIN() -> Zone {
        Zone::named("Europe/Berlin").unwrap()
    }

    #[test]
    fn weekdays_zero_and_seven_are_sunday_and_one_is_monday() {
        // 2026-03-01 is a Sunday, 2026-03-02 a Monday.
        for cron in ["0 12 * * 0", "0 12 * * 7", "0 12 * * SUN"] {
            let got = slots(
                cron,
                Zone::utc(),
                "2026-02-28T00:00:00Z",
                "2026-03-03T00:00:00Z",
            );
            assert_eq!(got, ["2026-03-01T12:00:00Z"], "{cron}");
        }
        let got = slots(
            "0 12 * * 1",
            Zone::utc(),
            "2026-02-28T00:00:00Z",
            "2026-03-03T00:00:00Z",
        );
        assert_eq!(got, ["2026-03-02T12:00:00Z"]);
    }

    #[test]
    fn day_of_month_or_day_of_week_when_both_are_restricted() {
        // The 13th (a Friday in March 2026) or any Monday.
        let got = slots(
            "0 0 13 * MON",
            Zone::utc(),
            "2026-03-08T00:00:00Z",
            "2026-03-17T00:00:00Z",
        );
        assert_eq!(
            got,
            [
                "2026-03-09T00:00:00Z",
                "2026-03-13T00:00:00Z",
                "2026-03-16T00:00:00Z"
            ]
        );
    }

    #[test]
    fn names_ranges_lists_steps_seconds_and_nicknames() {
        let got = slots(
            "*/20 * * * * * *",
            Zone::utc(),
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:01:00Z",
        );
        assert_eq!(
            got,
            [
                "2026-01-01T00:00:20Z",
                "2026-01-01T00:00:40Z",
                "2026-01-01T00:01:00Z"
            ]
        );
        let got = slots(
            "0 9-10,15 * JAN mon-fri",
            Zone::utc(),
            "2026-01-02T00:00:00Z",
            "2026-01-02T23:00:00Z",
        );
        assert_eq!(
            got,
            [
                "2026-01-02T09:00:00Z",
                "2026-01-02T10:00:00Z",
                "2026-01-02T15:00:00Z"
            ]
        );
        let got = slots(
            "@daily",
            Zone::utc(),
            "2026-01-01T00:00:00Z",
            "2026-01-03T00:00:00Z",
        );
        assert_eq!(got, ["2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"]);
        assert_eq!(
            slots(
                "@hourly",
                Zone::utc(),
                "2026-01-01T00:00:00Z",
                "2026-01-01T02:00:00Z"
            )
            .len(),
            2
        );
        assert_eq!(
            slots(
                "@yearly",
                Zone::utc(),
                "2026-01-01T00:00:00Z",
                "2028-01-01T00:00:00Z"
            ),
            ["2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"]
        );
    }

    #[test]
    fn bad_expressions_are_refused_saying_what_is_accepted() {
        for bad in ["", "* * * *", "* * * * * * * *", "@sometimes"] {
            let err = CronSchedule::parse(bad, Zone::utc()).unwrap_err();
            assert!(err.contains("expected five fields"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_bad_field_is_named_with_its_range_never_in_the_parser_s_words() {
        let cases = [
            ("61 * * * *", "'61' in the minute field: 0-59"),
            ("0 24 * * *", "'24' in the hour field: 0-23"),
            ("0 0 0 * *", "'0' in the day field: 1-31"),
            ("0 0 1-32 * *", "'32' in the day field: 1-31"),
            ("0 0 * 13 *", "'13' in the month field: 1-12 or JAN-DEC"),
            ("0 0 * * 8", "'8' in the weekday field: 0-7 or SUN-SAT"),
            (
                "0 0 * * funday",
                "'funday' in the weekday field: 0-7 or SUN-SAT",
            ),
            ("a b c d e", "'a' in the minute field: 0-59"),
            ("60 0 0 * * * *", "'60' in the second field: 0-59"),
            ("0 0 0 * * * 1900", "'1900' in the year field: 1970-2099"),
            (
                "*/0 * * * *",
                "'*/0' in the minute field: a step is a whole number",
            ),
            (
                "1,,2 * * * *",
                "'1,,2' in the minute field: an empty list element",
            ),
            (
                "1, * * * *",
                "'1,' in the minute field: an empty list element",
            ),
        ];
        for (bad, want) in cases {
            let err = CronSchedule::parse(bad, Zone::utc()).unwrap_err();
            assert!(err.starts_with(want), "{bad}: {err}");
            for parser_words in ["Component", "bounds", "Pattern"] {
                assert!(!err.contains(parser_words), "{bad}: {err}");
            }
        }
    }

    #[test]
    fn a_line_break_is_refused() {
        for bad in ["0 0 * * *\n", "0 0\n* * *", "@daily\r"] {
            let err = CronSchedule::parse(bad, Zone::utc()).unwrap_err();
            assert!(err.contains("line break"), "{bad:?}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn midnight_and_annually_are_daily_and_yearly_and_reboot_is_refused_with_a_word() {
        let (from, to) = ("2026-01-01T00:00:00Z", "2028-01-01T00:00:00Z");
        for (alias, name) in [("@midnight", "@daily"), ("@annually", "@yearly")] {
            assert_eq!(
                slots(alias, Zone::utc(), from, to),
                slots(name, Zone::utc(), from, to),
                "{alias}"
            );
        }
        assert_eq!(
            slots("@annually", Zone::utc(), from, to),
            ["2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"]
        );
        assert_eq!(
            slots("@MIDNIGHT", Zone::utc(), from, "2026-01-03T00:00:00Z"),
            ["2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"]
        );
        let err = CronSchedule::parse("@reboot", Zone::utc()).unwrap_err();
        assert!(err.contains("before the scheduler starts"), "{err}");
        assert!(CRON_ACCEPTS.contains("@midnight") && CRON_ACCEPTS.contains("@annually"));
    }

    #[test]
    fn a_day_field_beginning_with_a_star_is_unrestricted_as_in_cronie() {
        // 2026: the Mondays that are the 1st, 11th, 21st or 31st (worked out from the
        // calendar: 1 Jun is a Monday, so 11 May, 31 Aug, 21 Sep and 21 Dec are too).
        let got = slots(
            "0 0 */10 * 1",
            Zone::utc(),
            "2026-01-01T00:00:00Z",
            "2027-01-01T00:00:00Z",
        );
        assert_eq!(
            got,
            [
                "2026-05-11T00:00:00Z",
                "2026-06-01T00:00:00Z",
                "2026-08-31T00:00:00Z",
                "2026-09-21T00:00:00Z",
                "2026-12-21T00:00:00Z"
            ]
        );
        // The 1st when it is an even weekday (Sunday 0, Tuesday 2, Thursday 4, Saturday 6):
        // 1 Jan 2026 is a Thursday, 1 Feb and 1 Mar Sundays, 1 Apr a Wednesday.
        let got = slots(
            "0 0 1 * */2",
            Zone::utc(),
            "2025-12-31T00:00:00Z",
            "2026-05-01T00:00:00Z",
        );
        assert_eq!(
            got,
            [
                "2026-01-01T00:00:00Z",
                "2026-02-01T00:00:00Z",
                "2026-03-01T00:00:00Z"
            ]
        );
        // `*/1` is every day, so with a weekday it is that weekday only (2026-03-02 a Monday).
        let got = slots(
            "0 0 */1 * 1",
            Zone::utc(),
            "2026-03-01T00:00:00Z",
            "2026-03-10T00:00:00Z",
        );
        assert_eq!(got, ["2026-03-02T00:00:00Z", "2026-03-09T00:00:00Z"]);
        // The same in seven fields.
        let got = slots(
            "0 0 0 */10 * 1 *",
            Zone::utc(),
            "2026-05-01T00:00:00Z",
            "2026-07-01T00:00:00Z",
        );
        assert_eq!(got, ["2026-05-11T00:00:00Z", "2026-06-01T00:00:00Z"]);
        // Both restricted without a star: either one (1-31 is every day).
        let got = slots(
            "0 0 1-31 * 1",
            Zone::utc(),
            "2026-03-01T00:00:00Z",
            "2026-03-04T00:00:00Z",
        );
        assert_eq!(got.len(), 3, "{got:?}");
    }

    #[test]
    fn seven_fields_are_seconds_first_and_year_last() {
        let got = slots(
            "30 0 12 * * * 2027",
            Zone::utc(),
            "2026-12-30T00:00:00Z",
            "2027-01-02T00:00:00Z",
        );
        assert_eq!(got, ["2027-01-01T12:00:30Z"]);
        let stepped = slots(
            "0 */5 * * * * *",
            Zone::utc(),
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:15:00Z",
        );
        assert_eq!(stepped.len(), 3, "{stepped:?}");
    }

    #[test]
    fn six_fields_are_refused_showing_both_seven_field_spellings() {
        let err = CronSchedule::parse("*/5 * * * * *", Zone::utc()).unwrap_err();
        assert!(err.contains("'*/5 * * * * * *'"), "{err}");
        assert!(err.contains("'0 */5 * * * * *'"), "{err}");
        assert!(!err.contains("between"), "{err}");
    }

    #[test]
    fn every_counted_is_every_stepped() {
        let stepped = |s: &CronSchedule, from: Timestamp, to: Timestamp, limit: usize| {
            let mut out = std::collections::VecDeque::new();
            let mut t = from;
            while let Some(next) = s.next_after(t).filter(|n| *n <= to) {
                if out.len() == limit {
                    out.pop_front();
                }
                out.push_back(next);
                t = next;
            }
            Vec::from(out)
        };
        for every in ["@every 1s", "@every 7m", "@every 90m"] {
            let s = CronSchedule::parse(every, Zone::utc()).unwrap();
            for (from, to) in [
                ("2026-03-29T00:59:53Z", "2026-03-29T01:00:21Z"),
                ("2026-03-29T01:00:00Z", "2026-03-30T01:00:00Z"),
                ("2026-03-29T01:00:00.5Z", "2026-03-29T01:00:00.7Z"),
                ("2026-03-29T01:00:00Z", "2026-03-29T01:00:00Z"),
                ("2026-03-29T01:00:01Z", "2026-03-29T01:00:00Z"),
            ] {
                for limit in [1, 3, 100_000] {
                    let (from, to) = (utc(from), utc(to));
                    assert_eq!(
                        s.slots_between(from, to, limit),
                        stepped(&s, from, to, limit),
                        "{every} {from}..{to} limit {limit}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_is_whole_multiples_of_the_duration_since_the_epoch() {
        let got = slots(
            "@every 10s",
            BERLIN(),
            "2026-03-29T00:59:53Z",
            "2026-03-29T01:00:21Z",
        );
        assert_eq!(
            got,
            [
                "2026-03-29T01:00:00Z",
                "2026-03-29T01:00:10Z",
                "2026-03-29T01:00:20Z"
            ]
        );
        // 7 minutes do not divide an hour: the slots follow the epoch, not the clock.
        let s = CronSchedule::parse("@every 7m", Zone::utc()).unwrap();
        let next = s.next_after(utc("2026-01-01T00:00:00Z")).unwrap();
        assert_eq!(next.as_second() % 420, 0);
        assert!(next > utc("2026-01-01T00:00:00Z"));
        assert_eq!(
            s.next_after(next),
            Some(next + jiff::SignedDuration::from_secs(420))
        );
        for bad in [
            "@every",
            "@every 500ms",
            "@every 1.5",
            "@every soon",
            "@every 0s",
        ] {
            let err = CronSchedule::parse(bad, Zone::utc()).unwrap_err();
            assert!(!err.is_empty(), "{bad}");
        }
    }

    #[test]
    fn spring_forward_a_missing_fixed_time_runs_once_at_the_next_valid_time() {
        // Berlin 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00Z); 02:30 does not exist.
        let got = slots(
            "30 2 * * *",
            BERLIN(),
            "2026-03-28T12:00:00Z",
            "2026-03-30T12:00:00Z",
        );
        assert_eq!(got, ["2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"]);
    }

    #[test]
    fn spring_forward_a_stepped_hour_skips_only_the_missing_hour() {
        let got = slots(
            "0 * * * *",
            BERLIN(),
            "2026-03-28T23:30:00Z",
            "2026-03-29T02:30:00Z",
        );
        // 01:00 CET (00:00Z), then 03:00 CEST (01:00Z), 04:00 CEST (02:00Z).
        assert_eq!(
            got,
            [
                "2026-03-29T00:00:00Z",
                "2026-03-29T01:00:00Z",
                "2026-03-29T02:00:00Z"
            ]
        );
    }

    #[test]
    fn fall_back_a_repeated_fixed_time_runs_once() {
        // Berlin 2026-10-25: 03:00 CEST becomes 02:00 CET (01:00Z); 02:30 happens twice.
        let got = slots(
            "30 2 * * *",
            BERLIN(),
            "2026-10-24T12:00:00Z",
            "2026-10-26T12:00:00Z",
        );
        assert_eq!(got, ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]);
    }

    #[test]
    fn fall_back_a_wildcard_hour_runs_in_both_passes() {
        let got = slots(
            "30 * * * *",
            BERLIN(),
            "2026-10-24T23:45:00Z",
            "2026-10-25T02:45:00Z",
        );
        // 02:30 CEST (00:30Z), 02:30 CET (01:30Z), 03:30 CET (02:30Z).
        assert_eq!(
            got,
            [
                "2026-10-25T00:30:00Z",
                "2026-10-25T01:30:00Z",
                "2026-10-25T02:30:00Z"
            ]
        );
        let stepped = slots(
            "30 */1 * * *",
            BERLIN(),
            "2026-10-24T23:45:00Z",
            "2026-10-25T02:45:00Z",
        );
        assert_eq!(stepped, got);
    }

    #[test]
    fn lists_and_ranges_of_fixed_times_follow_the_same_rules() {
        // Spring: 02:00 and 02:30 do not exist; they run once, at 03:00 CEST.
        let spring = slots(
            "0,30 2 * * *",
            BERLIN(),
            "2026-03-28T22:00:00Z",
            "2026-03-29T04:00:00Z",
        );
        assert_eq!(spring, ["2026-03-29T01:00:00Z"]);
        // Autumn: 02:00 and 02:30 happen twice; each runs once, in the first pass.
        let fall = slots(
            "0,30 2 * * *",
            BERLIN(),
            "2026-10-24T22:00:00Z",
            "2026-10-25T04:00:00Z",
        );
        assert_eq!(fall, ["2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z"]);
        let range = slots(
            "0 2-3 * * *",
            BERLIN(),
            "2026-10-24T22:00:00Z",
            "2026-10-25T04:00:00Z",
        );
        assert_eq!(range, ["2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z"]);
    }

    #[test]
    fn a_stepped_minute_runs_in_both_passes_and_not_in_the_gap() {
        let fall = slots(
            "*/30 2 * * *",
            BERLIN(),
            "2026-10-24T22:00:00Z",
            "2026-10-25T04:00:00Z",
        );
        assert_eq!(
            fall,
            [
                "2026-10-25T00:00:00Z",
                "2026-10-25T00:30:00Z",
                "2026-10-25T01:00:00Z",
                "2026-10-25T01:30:00Z"
            ]
        );
        let spring = slots(
            "*/30 2 * * *",
            BERLIN(),
            "2026-03-28T22:00:00Z",
            "2026-03-29T04:00:00Z",
        );
        assert!(spring.is_empty(), "{spring:?}");
    }

    #[test]
    fn a_seconds_schedule_walks_through_both_passes_in_order() {
        // The second pass begins on a slot: 02:00:00 CET, right after 02:59:40 CEST.
        let s = CronSchedule::parse("*/20 * * * * * *", BERLIN()).unwrap();
        let got = s.slots_between(
            utc("2026-10-25T00:59:30Z"),
            utc("2026-10-25T01:00:30Z"),
            100,
        );
        assert_eq!(
            got,
            [
                utc("2026-10-25T00:59:40Z"),
                utc("2026-10-25T01:00:00Z"),
                utc("2026-10-25T01:00:20Z")
            ]
        );
        let s = CronSchedule::parse("*/20 * * * * * *", BERLIN()).unwrap();
        let got = s.slots_between(
            utc("2026-10-25T00:59:00Z"),
            utc("2026-10-25T01:01:00Z"),
            100,
        );
        assert_eq!(got.len(), 6, "{got:?}");
        assert!(
            got.windows(2)
                .all(|w| w[1].duration_since(w[0]).as_secs() == 20),
            "{got:?}"
        );
    }

    #[test]
    fn slots_are_instants_whatever_the_zone() {
        let s = CronSchedule::parse("0 9 * * *", Zone::named("America/New_York").unwrap()).unwrap();
        let next = s.next_after(utc("2026-07-01T00:00:00Z")).unwrap();
        assert_eq!(next, utc("2026-07-01T13:00:00Z"));
    }

    #[test]
    fn zones_parse_by_iana_name_and_refuse_others() {
        assert_eq!(parse_zone("Europe/Berlin").unwrap().name(), "Europe/Berlin");
        assert_eq!(parse_zone(":UTC").unwrap().name(), "UTC");
        assert!(parse_zone("Mars/Olympus").unwrap_err().contains("IANA"));
        assert!(
            choose_zone(Some("nowhere"))
                .unwrap_err()
                .starts_with("--tz:")
        );
    }
}
