//! CRON expressions and the time zone they are read in: parsing and matching
//! (croner, with Vixie/cronie semantics), and the slots, as UTC instants, that fall
//! in a span. Matching runs on the local wall clock; turning a local time into an
//! instant applies SPEC's daylight-saving rules here, as cronie does: a fixed local
//! time (no wildcard or step in the seconds, minute or hour field) that falls in a
//! gap runs once at the first instant after it, and one that happens twice runs in
//! the first pass only; a wildcard or stepped time runs in both passes and not in a gap.

use croner::Cron;
use croner::parser::{CronParser, Seconds};
use jiff::Timestamp;
use jiff::civil::DateTime;

mod zone;

pub use zone::{Resolved, Zone};

/// What `--schedule` accepts, for error messages.
pub const CRON_ACCEPTS: &str = "expected five fields (minute hour day month weekday), \
     an optional leading seconds field, or @hourly, @daily, @weekly, @monthly, @yearly";

/// Matching local times looked at for one slot before giving up (each gap or repeated
/// pass skips at most a few).
const MAX_CANDIDATES: usize = 10_000;

/// A parsed `--schedule`, before the zone it is read in is known.
#[derive(Clone, Debug)]
pub struct Expression {
    cron: Cron,
    text: String,
    /// No wildcard or step in the seconds, minute and hour fields.
    fixed: bool,
}

/// A parsed `--schedule` in its zone.
#[derive(Clone, Debug)]
pub struct CronSchedule {
    cron: Cron,
    pub text: String,
    pub zone: Zone,
    /// No wildcard or step in the seconds, minute and hour fields.
    fixed: bool,
}

impl Expression {
    /// Parses CRON. Day of month OR day of week, as cronie does.
    pub fn parse(text: &str) -> Result<Expression, String> {
        let fields: Vec<&str> = text.split_whitespace().collect();
        let nickname = text.trim_start().starts_with('@');
        if !nickname && !(5..=6).contains(&fields.len()) {
            return Err(format!(
                "{text:?} has {} fields; {CRON_ACCEPTS}",
                fields.len()
            ));
        }
        let parser = CronParser::builder()
            .seconds(Seconds::Optional)
            .dom_and_dow(false)
            .build();
        let cron = parser
            .parse(text)
            .map_err(|e| format!("{text:?}: {e}; {CRON_ACCEPTS}"))?;
        let fixed = if nickname {
            !text.trim().eq_ignore_ascii_case("@hourly")
        } else {
            let time_fields = &fields[..fields.len() - 3];
            time_fields.iter().all(|f| !f.contains(['*', '?', '/']))
        };
        Ok(Expression {
            cron,
            text: text.to_string(),
            fixed,
        })
    }
}

impl CronSchedule {
    /// `expression`, read in `zone`.
    pub fn new(expression: Expression, zone: Zone) -> CronSchedule {
        let Expression { cron, text, fixed } = expression;
        CronSchedule {
            cron,
            text,
            zone,
            fixed,
        }
    }

    /// Parses CRON, read in `zone`.
    #[cfg(test)]
    pub fn parse(text: &str, zone: Zone) -> Result<CronSchedule, String> {
        Expression::parse(text).map(|expression| CronSchedule::new(expression, zone))
    }

    /// The first slot strictly after `t`.
    pub fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        let local = self.zone.local_time(t);
        let ahead = self.forward(t, local);
        let repeated = if self.fixed {
            None
        } else {
            self.later_pass(t, local)
        };
        match (ahead, repeated) {
            (Some(a), Some(r)) => Some(a.min(r)),
            (a, r) => a.or(r),
        }
    }

    /// The first matching local time after `local` that has an instant after `t`.
    fn forward(&self, t: Timestamp, local: DateTime) -> Option<Timestamp> {
        let mut civil = local;
        for _ in 0..MAX_CANDIDATES {
            let candidate = self.cron.find_next_occurrence(&civil, false).ok()?;
            if let Some(at) = self.instant(candidate, t) {
                return Some(at);
            }
            civil = candidate;
        }
        None
    }

    /// When the matching local time `c` runs, if after `t`, by SPEC's DST rules.
    fn instant(&self, c: DateTime, t: Timestamp) -> Option<Timestamp> {
        match self.zone.resolve(c) {
            Resolved::Single(at) => Some(at).filter(|at| *at > t),
            Resolved::Twice(first, second) => {
                if first > t {
                    Some(first)
                } else {
                    Some(second).filter(|at| !self.fixed && *at > t)
                }
            }
            // A fixed time the clocks jump over runs when they jump.
            Resolved::Gap { jump } if self.fixed => Some(jump).filter(|at| *at > t),
            Resolved::Gap { .. } => None,
        }
    }

    /// While `t` is in the first pass of a repeated hour, the second pass of the local
    /// times before `local` is still ahead: its first matching time, if any.
    fn later_pass(&self, t: Timestamp, local: DateTime) -> Option<Timestamp> {
        let Resolved::Twice(first, _) = self.zone.resolve(local) else {
            return None;
        };
        if first != t {
            return None;
        }
        // The second pass starts when the clocks go back: the zone's next change.
        let repeat_start = self.zone.local_time(self.zone.next_change(t)?);
        let candidate = self.cron.find_next_occurrence(&repeat_start, true).ok()?;
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
            "*/20 * * * * *",
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
        for bad in [
            "",
            "* * * *",
            "61 * * * *",
            "* * * * * * * *",
            "@sometimes",
            "a b c d e",
        ] {
            let err = CronSchedule::parse(bad, Zone::utc()).unwrap_err();
            assert!(err.contains("expected five fields"), "{bad}: {err}");
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
        let s = CronSchedule::parse("*/20 * * * * *", BERLIN()).unwrap();
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
        let s = CronSchedule::parse("*/20 * * * * *", BERLIN()).unwrap();
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
