//! CRON expressions and the time zone they are read in: parsing (croner, with
//! Vixie/cronie semantics) and the slots, as UTC instants, that fall in a span.
//! DST handling is croner's (OCPS): a fixed local time in a gap runs at the first
//! instant after it, a fixed time that happens twice runs once (the first pass),
//! and a wildcard or stepped hour runs in both passes; the tests pin it.

use std::str::FromStr;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds};

/// What `--schedule` accepts, for error messages.
pub const CRON_ACCEPTS: &str = "expected five fields (minute hour day month weekday), \
     an optional leading seconds field, or @hourly, @daily, @weekly, @monthly, @yearly";

/// A parsed `--schedule` in its zone.
#[derive(Clone, Debug)]
pub struct CronSchedule {
    cron: Cron,
    pub text: String,
    pub zone: Tz,
}

impl CronSchedule {
    /// Parses CRON, read in `zone`. Day of month OR day of week, as cronie does.
    pub fn parse(text: &str, zone: Tz) -> Result<CronSchedule, String> {
        let fields = text.split_whitespace().count();
        if !text.trim_start().starts_with('@') && !(5..=6).contains(&fields) {
            return Err(format!("{text:?} has {fields} fields; {CRON_ACCEPTS}"));
        }
        let parser = CronParser::builder()
            .seconds(Seconds::Optional)
            .dom_and_dow(false)
            .build();
        let cron = parser
            .parse(text)
            .map_err(|e| format!("{text:?}: {e}; {CRON_ACCEPTS}"))?;
        Ok(CronSchedule {
            cron,
            text: text.to_string(),
            zone,
        })
    }

    /// The first slot strictly after `t`.
    pub fn next_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let local = t.with_timezone(&self.zone);
        self.cron
            .find_next_occurrence(&local, false)
            .ok()
            .map(|d| d.with_timezone(&Utc))
    }

    /// The slots in (`from`, `to`], oldest first, at most `limit` of them (the newest kept).
    pub fn slots_between(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        limit: usize,
    ) -> Vec<DateTime<Utc>> {
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
    pub fn upcoming(&self, t: DateTime<Utc>, n: usize) -> Vec<DateTime<Utc>> {
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

/// What `--tz` accepts, for error messages.
pub const TZ_ACCEPTS: &str = "expected an IANA time zone name such as Europe/Berlin or UTC";

/// Parses an IANA zone name (`--tz`, or `TZ` with its optional leading colon).
pub fn parse_zone(name: &str) -> Result<Tz, String> {
    let name = name.strip_prefix(':').unwrap_or(name);
    Tz::from_str(name).map_err(|_| format!("unknown time zone {name:?}; {TZ_ACCEPTS}"))
}

/// `--tz`, else `TZ`, else the zone /etc/localtime names, else UTC.
pub fn choose_zone(flag: Option<&str>) -> Result<Tz, String> {
    if let Some(name) = flag {
        return parse_zone(name).map_err(|e| format!("--tz: {e}"));
    }
    if let Some(name) = std::env::var("TZ").ok().filter(|v| !v.is_empty()) {
        return parse_zone(&name).map_err(|e| format!("TZ: {e}; or give --tz ZONE"));
    }
    Ok(local_zone().unwrap_or(Tz::UTC))
}

/// The zone this host's /etc/localtime links to (…/zoneinfo/AREA/CITY), or /etc/timezone.
fn local_zone() -> Option<Tz> {
    let link = std::fs::read_link("/etc/localtime").ok();
    let from_link = link.as_ref().and_then(|p| {
        let text = p.to_str()?;
        let (_, name) = text.split_once("zoneinfo/")?;
        Tz::from_str(name).ok()
    });
    from_link.or_else(|| {
        let text = std::fs::read_to_string("/etc/timezone").ok()?;
        Tz::from_str(text.trim()).ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn utc(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    fn slots(cron: &str, zone: Tz, from: &str, to: &str) -> Vec<String> {
        let s = CronSchedule::parse(cron, zone).unwrap();
        s.slots_between(utc(from), utc(to), 1000)
            .iter()
            .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
            .collect()
    }

    const BERLIN: Tz = chrono_tz::Europe::Berlin;

    #[test]
    fn weekdays_zero_and_seven_are_sunday_and_one_is_monday() {
        // 2026-03-01 is a Sunday, 2026-03-02 a Monday.
        for cron in ["0 12 * * 0", "0 12 * * 7", "0 12 * * SUN"] {
            let got = slots(
                cron,
                Tz::UTC,
                "2026-02-28T00:00:00Z",
                "2026-03-03T00:00:00Z",
            );
            assert_eq!(got, ["2026-03-01T12:00:00Z"], "{cron}");
        }
        let got = slots(
            "0 12 * * 1",
            Tz::UTC,
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
            Tz::UTC,
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
            Tz::UTC,
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
            Tz::UTC,
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
            Tz::UTC,
            "2026-01-01T00:00:00Z",
            "2026-01-03T00:00:00Z",
        );
        assert_eq!(got, ["2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"]);
        assert_eq!(
            slots(
                "@hourly",
                Tz::UTC,
                "2026-01-01T00:00:00Z",
                "2026-01-01T02:00:00Z"
            )
            .len(),
            2
        );
        assert_eq!(
            slots(
                "@yearly",
                Tz::UTC,
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
            let err = CronSchedule::parse(bad, Tz::UTC).unwrap_err();
            assert!(err.contains("expected five fields"), "{bad}: {err}");
        }
    }

    #[test]
    fn spring_forward_a_missing_fixed_time_runs_once_at_the_next_valid_time() {
        // Berlin 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00Z); 02:30 does not exist.
        let got = slots(
            "30 2 * * *",
            BERLIN,
            "2026-03-28T12:00:00Z",
            "2026-03-30T12:00:00Z",
        );
        assert_eq!(got, ["2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"]);
    }

    #[test]
    fn spring_forward_a_stepped_hour_skips_only_the_missing_hour() {
        let got = slots(
            "0 * * * *",
            BERLIN,
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
            BERLIN,
            "2026-10-24T12:00:00Z",
            "2026-10-26T12:00:00Z",
        );
        assert_eq!(got, ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]);
    }

    #[test]
    fn fall_back_a_wildcard_hour_runs_in_both_passes() {
        let got = slots(
            "30 * * * *",
            BERLIN,
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
            BERLIN,
            "2026-10-24T23:45:00Z",
            "2026-10-25T02:45:00Z",
        );
        assert_eq!(stepped, got);
    }

    #[test]
    fn slots_are_instants_whatever_the_zone() {
        let s = CronSchedule::parse("0 9 * * *", chrono_tz::America::New_York).unwrap();
        let next = s
            .next_after(Utc.with_ymd_and_hms(2026, 7, 1, 0, 0, 0).unwrap())
            .unwrap();
        assert_eq!(next, Utc.with_ymd_and_hms(2026, 7, 1, 13, 0, 0).unwrap());
    }

    #[test]
    fn zones_parse_by_iana_name_and_refuse_others() {
        assert_eq!(parse_zone("Europe/Berlin"), Ok(BERLIN));
        assert_eq!(parse_zone(":UTC"), Ok(Tz::UTC));
        assert!(parse_zone("Mars/Olympus").unwrap_err().contains("IANA"));
        assert!(
            choose_zone(Some("nowhere"))
                .unwrap_err()
                .starts_with("--tz:")
        );
    }
}
