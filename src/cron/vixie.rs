//! CRON as Vixie cron and cronie read it, checked here and matched by croner: five
//! fields or seven (seconds first, year last, as cronexpr and supercronic read them),
//! the nicknames, each field's range named in retry's words, weekday names with `#`
//! and `L` as cronexpr takes them (`MON#2`, `FRIL`), cronie's day rule, and whether
//! a slot counts as a fixed local time for cron's daylight-saving rule (neither the
//! minute nor the hour field begins with `*`: cronie's MIN_STAR and HR_STAR).

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

/// What `--schedule` accepts, for error messages: CRON, and the calendar expressions
/// that are not CRON.
pub fn cron_accepts() -> String {
    format!(
        "expected five fields (minute hour day month weekday), seven (second minute hour \
         day month weekday year), {}, @every DUR, or a systemd calendar expression of one \
         to four words (Mon..Fri 09:00, *-*-01 03:00, hourly, *:0/15, 2026-12-24 18:00 \
         Europe/Berlin)",
        super::nicknames::listed()
    )
}

/// A CRON expression (not `@every`), ready to match.
#[derive(Clone, Debug)]
pub struct VixieCron {
    pub cron: Box<Cron>,
    /// Neither the minute nor the hour field begins with `*`: a fixed local time, which
    /// runs once across a daylight-saving change.
    pub fixed: bool,
}

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

/// Parses a CRON expression or nickname (not `@every`). Day of month OR day of week,
/// as cronie does; six fields are refused, as tools disagree on what they mean.
pub fn parse(text: &str) -> Result<VixieCron, String> {
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
        n => return Err(format!("'{trimmed}' has {n} fields; {}", cron_accepts())),
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
        .map_err(|_| format!("'{trimmed}': {}", cron_accepts()))?;
    // cronie's MIN_STAR and HR_STAR: the minute or the hour field begins with `*`.
    let starred = |f: &str| f.starts_with(['*', '?']);
    let fixed = !starred(fields[time - 2]) && !starred(fields[time - 1]);
    Ok(VixieCron {
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
    super::nicknames::fields(text)
        .ok_or_else(|| format!("'{text}' is no schedule name; {}", cron_accepts()))
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
    // croner's L, W and # forms: digits and the field's own letters, checked by croner;
    // a name leads them as its number does (cronexpr's MON#2 and FRIL).
    let numbered = numbered(&upper, field);
    let croner_form = !numbered.is_empty()
        && numbered.chars().any(|c| field.extra.contains(c))
        && numbered
            .chars()
            .all(|c| c.is_ascii_digit() || field.extra.contains(c));
    field.names.contains(&upper.as_str()) || croner_form
}

/// `upper` with a leading name of the field written as its number (`MON#2` is `1#2`).
fn numbered(upper: &str, field: &Field) -> String {
    let named = field.names.iter().enumerate().find_map(|(i, name)| {
        let rest = upper.strip_prefix(name)?;
        Some(format!(
            "{}{rest}",
            i + usize::try_from(field.low).unwrap_or(0)
        ))
    });
    named.unwrap_or_else(|| upper.to_string())
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

#[cfg(test)]
mod tests {
    use super::super::tests::slots;
    use super::super::{CronSchedule, Zone};
    use super::*;

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
    fn midnight_and_annually_are_daily_and_yearly_and_reboot_is_no_time() {
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
        let reboot = CronSchedule::parse("@REBOOT", Zone::utc()).unwrap();
        assert!(reboot.is_reboot() && reboot.next_after(super::super::tests::utc(from)).is_none());
        assert!(
            nickname("@reboot")
                .unwrap_err()
                .contains("before the scheduler starts")
        );
    }

    #[test]
    fn six_fields_are_refused_showing_both_seven_field_spellings() {
        let err = CronSchedule::parse("*/5 * * * * *", Zone::utc()).unwrap_err();
        assert!(err.contains("'*/5 * * * * * *'"), "{err}");
        assert!(err.contains("'0 */5 * * * * *'"), "{err}");
        assert!(!err.contains("between"), "{err}");
    }

    #[test]
    fn named_weekdays_take_hash_and_l_as_cronexpr_reads_them() {
        let (from, to) = ("2026-01-01T00:00:00Z", "2026-04-01T00:00:00Z");
        let second_mondays = [
            "2026-01-12T09:00:00Z",
            "2026-02-09T09:00:00Z",
            "2026-03-09T09:00:00Z",
        ];
        for cron in [
            "0 9 * * MON#2",
            "0 9 * * mon#2",
            "0 9 * * 1#2",
            "0 0 9 * * MON#2 *",
        ] {
            assert_eq!(slots(cron, Zone::utc(), from, to), second_mondays, "{cron}");
        }
        let last_fridays = [
            "2026-01-30T09:00:00Z",
            "2026-02-27T09:00:00Z",
            "2026-03-27T09:00:00Z",
        ];
        for cron in ["0 9 * * FRIL", "0 9 * * fril", "0 9 * * 5L"] {
            assert_eq!(slots(cron, Zone::utc(), from, to), last_fridays, "{cron}");
        }
        assert_eq!(
            slots("0 9 * * SUN#1", Zone::utc(), from, to),
            [
                "2026-01-04T09:00:00Z",
                "2026-02-01T09:00:00Z",
                "2026-03-01T09:00:00Z"
            ]
        );
        for bad in [
            "0 9 * * MONDAY#2",
            "0 9 * * MON#",
            "0 9 * * XMON#2",
            "0 9 * JAN#2 *",
        ] {
            let err = CronSchedule::parse(bad, Zone::utc()).unwrap_err();
            assert!(
                err.contains("field") || err.contains("expected"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn a_time_is_fixed_unless_its_minute_or_hour_begins_with_a_star() {
        let fixed = |cron: &str| parse(cron).unwrap().fixed;
        for cron in [
            "0-59/30 2 * * *",
            "0,30 2 * * *",
            "30 2-3 * * *",
            "@daily",
            "*/5 0 2 * * * *",
        ] {
            assert!(fixed(cron), "{cron}");
        }
        for cron in [
            "*/30 2 * * *",
            "30 * * * *",
            "30 */2 * * *",
            "@hourly",
            "0 */2 2 * * * *",
        ] {
            assert!(!fixed(cron), "{cron}");
        }
    }
}
