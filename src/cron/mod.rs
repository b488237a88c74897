//! `--schedule`'s expressions and the zone they are read in. A value of five or seven
//! fields, or one starting with `@`, is CRON ([`vixie`], and [`every`] for `@every
//! DUR`); a value of one to four words is a systemd calendar expression, OnCalendar=
//! ([`calendar`]). Either gives its slots as UTC instants through [`CronSchedule`]:
//! CRON with cron's daylight-saving rule ([`wall`]), a calendar expression with
//! systemd's. The zone (`--tz`, `CRON_TZ`, `TZ`, the host's) is [`zone`]'s; a zone
//! named inside a calendar expression wins over it.

use std::time::Duration;

use jiff::Timestamp;

mod calendar;
mod every;
mod nicknames;
mod vixie;
mod wall;
mod zone;

#[cfg(test)]
pub use nicknames::{listed as listed_nicknames, tests::flat};
pub use vixie::cron_accepts;
pub use zone::Zone;

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
    Cron(vixie::VixieCron),
    /// `@every DUR`: whole multiples of DUR since the Unix epoch, whatever the zone.
    Every(Duration),
    /// A systemd calendar expression, which may name its own zone.
    Calendar(Box<calendar::Calendar>),
    /// `@reboot`: no time at all, but each start of a crontab's scheduler.
    Reboot,
}

/// A parsed `--schedule` in its zone.
#[derive(Clone, Debug)]
pub struct CronSchedule {
    kind: Kind,
    pub text: String,
    /// The zone the slots are read in: a calendar expression's own, else the one given.
    pub zone: Zone,
}

impl Expression {
    /// Parses `--schedule`: five or seven fields, or a value starting with `@`, as CRON
    /// (six fields refused: tools disagree on what they mean); one to four words as a
    /// systemd calendar expression. A value neither reads is refused naming both.
    pub fn parse(text: &str) -> Result<Expression, String> {
        one_line(text)?;
        let trimmed = text.trim();
        let every_at = trimmed
            .get(..6)
            .filter(|head| head.eq_ignore_ascii_case("@every"));
        let words = trimmed.split_whitespace().count();
        let kind = match every_at.map(|head| &trimmed[head.len()..]) {
            Some(rest) if rest.is_empty() || rest.starts_with(char::is_whitespace) => {
                Kind::Every(every::parse(text, rest.trim())?)
            }
            // Taken here; who runs it (a crontab) or refuses it (--schedule) is the caller's.
            _ if trimmed.eq_ignore_ascii_case("@reboot") => Kind::Reboot,
            _ if trimmed.starts_with('@') || words >= 5 => Kind::Cron(vixie::parse(trimmed)?),
            _ if words == 0 => return Err(format!("an empty schedule; {}", cron_accepts())),
            _ => Kind::Calendar(Box::new(whole_seconds(trimmed).map_err(
                |refusal| match refusal {
                    Refusal::Grammar(why) => format!(
                        "'{trimmed}' is not CRON, nor a calendar expression ({why}); {}",
                        cron_accepts()
                    ),
                    Refusal::Fraction => format!("'{trimmed}': {FRACTION}"),
                },
            )?)),
        };
        Ok(Expression {
            kind,
            text: trimmed.to_string(),
        })
    }

    /// Parses a systemd calendar expression alone (a crontab's `@calendar 'EXPR'`), as
    /// `--schedule` reads one, so that EXPR given to `--schedule` reads the same: the
    /// error says what is wrong with it, without `'EXPR'`. Fractions of a second, which
    /// systemd takes, are refused (slots are keyed to the second), and so is a leading
    /// `@` (CRON's).
    pub fn calendar(text: &str) -> Result<Expression, String> {
        one_line(text)?;
        let trimmed = text.trim();
        // As --schedule reads it: a leading @ is CRON's, so systemd's @SECONDS is not taken.
        if trimmed.starts_with('@') {
            return Err(
                "a value starting with @ is CRON's (@daily, @every DUR), not a calendar expression"
                    .into(),
            );
        }
        let parsed = whole_seconds(trimmed).map_err(|refusal| match refusal {
            Refusal::Grammar(why) => why,
            Refusal::Fraction => FRACTION.to_string(),
        })?;
        Ok(Expression {
            kind: Kind::Calendar(Box::new(parsed)),
            text: trimmed.to_string(),
        })
    }
}

/// Why a calendar expression is refused.
enum Refusal {
    /// systemd would refuse it too: what is wrong.
    Grammar(String),
    /// systemd takes it, but a slot is a whole second.
    Fraction,
}

const FRACTION: &str =
    "a fraction of a second; slots are keyed to the second, so give whole seconds";

/// A calendar expression whose times are whole seconds.
fn whole_seconds(text: &str) -> Result<calendar::Calendar, Refusal> {
    let parsed = calendar::Calendar::parse(text).map_err(Refusal::Grammar)?;
    if !parsed.whole_seconds() {
        return Err(Refusal::Fraction);
    }
    Ok(parsed)
}

/// Refuses a line break: a schedule is one line.
fn one_line(text: &str) -> Result<(), String> {
    if text.contains(['\n', '\r']) {
        return Err(format!(
            "'{}' has a line break; a schedule is one line",
            text.escape_debug()
        ));
    }
    Ok(())
}

impl CronSchedule {
    /// `expression`, read in `zone` unless it names its own.
    pub fn new(expression: Expression, zone: Zone) -> CronSchedule {
        let Expression { kind, text } = expression;
        let zone = match &kind {
            Kind::Calendar(calendar) => calendar.zone().unwrap_or(zone),
            Kind::Cron(_) | Kind::Every(_) | Kind::Reboot => zone,
        };
        CronSchedule { kind, text, zone }
    }

    /// Parses a schedule, read in `zone`.
    #[cfg(test)]
    pub fn parse(text: &str, zone: Zone) -> Result<CronSchedule, String> {
        Expression::parse(text).map(|expression| CronSchedule::new(expression, zone))
    }

    /// The first slot strictly after `t`.
    pub fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        match &self.kind {
            Kind::Every(every) => every::next_after(t, *every),
            Kind::Cron(cron) => wall::next_after(cron, &self.zone, t),
            Kind::Calendar(calendar) => calendar.next_after(&self.zone, t),
            Kind::Reboot => None,
        }
    }

    /// Whether this is `@reboot`: each start of a crontab's scheduler, no time at all.
    pub fn is_reboot(&self) -> bool {
        matches!(self.kind, Kind::Reboot)
    }

    /// The slots in (`from`, `to`], oldest first, at most `limit` of them (the newest kept).
    pub fn slots_between(&self, from: Timestamp, to: Timestamp, limit: usize) -> Vec<Timestamp> {
        if let Kind::Every(every) = &self.kind {
            return every::between(from, to, *every, limit);
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
pub(crate) mod tests {
    use super::*;

    pub fn utc(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    /// The slots of `cron` in (`from`, `to`], as RFC 3339 UTC.
    pub fn slots(cron: &str, zone: Zone, from: &str, to: &str) -> Vec<String> {
        let s = CronSchedule::parse(cron, zone).unwrap_or_else(|e| panic!("{cron}: {e}"));
        s.slots_between(utc(from), utc(to), 1000)
            .iter()
            .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
            .collect()
    }

    pub fn berlin() -> Zone {
        Zone::named("Europe/Berlin").unwrap()
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

    fn kind(text: &str) -> &'static str {
        match Expression::parse(text).map(|e| e.kind) {
            Ok(Kind::Cron(_)) => "cron",
            Ok(Kind::Every(_)) => "every",
            Ok(Kind::Calendar(_)) => "calendar",
            Ok(Kind::Reboot) => "reboot",
            Err(_) => "refused",
        }
    }

    #[test]
    fn five_or_seven_fields_or_an_at_are_cron_and_one_to_four_words_a_calendar() {
        for cron in ["0 3 * * *", "0 0 3 * * * *", "@daily", "@weekly"] {
            assert_eq!(kind(cron), "cron", "{cron}");
        }
        assert_eq!(kind("@every 1m"), "every");
        assert_eq!(kind("@reboot"), "reboot");
        for calendar in [
            "daily",
            "Mon..Fri 09:00",
            "*-*-01 03:00:00",
            "*:0/15",
            "2026-12-24 18:00 Europe/Berlin",
            "Mon *-*-* 09:00 UTC",
        ] {
            assert_eq!(kind(calendar), "calendar", "{calendar}");
        }
        for refused in ["*/5 * * * * *", "@1774699200", "* * * * * * * *"] {
            assert_eq!(kind(refused), "refused", "{refused}");
        }
    }

    #[test]
    fn a_value_neither_grammar_reads_is_refused_naming_both() {
        for bad in ["* * * *", "Mon..Fri 25:00", "every day", "0 3", "", "  "] {
            let err = Expression::parse(bad).unwrap_err();
            assert!(err.contains("five fields"), "{bad}: {err}");
            assert!(err.contains("calendar expression"), "{bad}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
        let err = Expression::parse("Mon..Fri 25:00").unwrap_err();
        assert!(
            err.contains("'25' in the hour field: out of range (0-23)"),
            "{err}"
        );
    }

    #[test]
    fn a_zone_inside_a_calendar_expression_wins_over_the_schedule_s() {
        let new_york = Zone::named("America/New_York").unwrap();
        let own = CronSchedule::parse("daily Europe/Berlin", new_york.clone()).unwrap();
        assert_eq!(own.zone.name(), "Europe/Berlin");
        assert_eq!(
            own.next_after(utc("2026-07-01T12:00:00Z")),
            Some(utc("2026-07-01T22:00:00Z"))
        );
        let given = CronSchedule::parse("daily", new_york).unwrap();
        assert_eq!(given.zone.name(), "America/New_York");
        assert_eq!(
            given.next_after(utc("2026-07-01T12:00:00Z")),
            Some(utc("2026-07-02T04:00:00Z"))
        );
        assert_eq!(
            CronSchedule::parse("daily UTC", berlin())
                .unwrap()
                .zone
                .name(),
            "UTC"
        );
    }

    #[test]
    fn a_calendar_expression_alone_is_what_a_crontab_s_calendar_line_gives() {
        let e = Expression::calendar(" Mon..Fri 09:00 ").unwrap();
        assert!(matches!(e.kind, Kind::Calendar(_)));
        assert_eq!(e.text, "Mon..Fri 09:00");
        for bad in ["0 3 * * *", "@daily", "Mon 25:00", "@1774699200"] {
            assert!(Expression::calendar(bad).is_err(), "{bad}");
        }
        // What it accepts, --schedule reads as the same calendar expression.
        for good in ["Mon @1774699200", "hourly UTC", "*-*~01 23:00"] {
            let alone = Expression::calendar(good).unwrap();
            let routed = Expression::parse(good).unwrap();
            assert!(matches!(
                (alone.kind, routed.kind),
                (Kind::Calendar(_), Kind::Calendar(_))
            ));
        }
        for fraction in ["*:*:0.5", "*:*:0/0.5", "12:00:01.25"] {
            let err = Expression::calendar(fraction).unwrap_err();
            assert!(err.contains("fraction of a second"), "{fraction}: {err}");
            assert!(
                Expression::parse(fraction)
                    .unwrap_err()
                    .contains("fraction")
            );
        }
        assert!(
            Expression::calendar("Mon 09:00\n")
                .unwrap_err()
                .contains("line break")
        );
    }

    #[test]
    fn calendar_slots_follow_systemd_across_the_changes() {
        // Berlin, 2026-10-25: 02:30 happens twice and runs in the first pass only.
        assert_eq!(
            slots(
                "*-*-* 02:30",
                berlin(),
                "2026-10-24T12:00:00Z",
                "2026-10-26T12:00:00Z"
            ),
            ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]
        );
        // 2026-03-29: 02:30 does not exist and does not run that day.
        assert_eq!(
            slots(
                "*-*-* 02:30",
                berlin(),
                "2026-03-28T12:00:00Z",
                "2026-03-30T12:00:00Z"
            ),
            ["2026-03-30T00:30:00Z"]
        );
    }
}
