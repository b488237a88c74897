//! CRON's slots on a zone's wall clock, with cron's rule for daylight-saving changes
//! (cronie's, from its MIN_STAR and HR_STAR flags): matching local times come from
//! croner; turning one into an instant is done here. A fixed local time (neither the
//! minute nor the hour field begins with `*`) that falls in a gap runs once at the
//! first instant after it, and one that happens twice runs in the first pass only; any
//! other time runs in both passes and not in a gap. So `0-59/30 2 * * *` runs 02:00
//! and 02:30 once each when the clocks go back, and once, at the change, when they go
//! forward; `*/30 2 * * *` twice each and not at all.

use croner::Cron;
use jiff::Timestamp;
use jiff::civil::DateTime;

use super::vixie::VixieCron;
use super::zone::{Resolved, Zone};

/// Matching local times looked at for one slot before giving up (each gap or repeated
/// pass skips at most a few).
const MAX_CANDIDATES: usize = 10_000;

/// The first slot of `cron` strictly after `t`, read in `zone`.
pub fn next_after(cron: &VixieCron, zone: &Zone, t: Timestamp) -> Option<Timestamp> {
    let local = zone.local_time(t);
    let ahead = forward(cron, zone, t, local);
    let repeated = if cron.fixed {
        None
    } else {
        later_pass(&cron.cron, zone, t, local)
    };
    match (ahead, repeated) {
        (Some(a), Some(r)) => Some(a.min(r)),
        (a, r) => a.or(r),
    }
}

/// The first matching local time after `local` that has an instant after `t`.
fn forward(cron: &VixieCron, zone: &Zone, t: Timestamp, local: DateTime) -> Option<Timestamp> {
    let mut civil = local;
    for _ in 0..MAX_CANDIDATES {
        let candidate = cron.cron.find_next_occurrence(&civil, false).ok()?;
        if let Some(at) = instant(zone, cron.fixed, candidate, t) {
            return Some(at);
        }
        civil = candidate;
    }
    None
}

/// When the matching local time `c` runs, if after `t`, by the rules above.
fn instant(zone: &Zone, fixed: bool, c: DateTime, t: Timestamp) -> Option<Timestamp> {
    match zone.resolve(c) {
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
fn later_pass(cron: &Cron, zone: &Zone, t: Timestamp, local: DateTime) -> Option<Timestamp> {
    let Resolved::Twice(first, _) = zone.resolve(local) else {
        return None;
    };
    if first != t {
        return None;
    }
    // The second pass starts when the clocks go back: the zone's next change.
    let repeat_start = zone.local_time(zone.next_change(t)?);
    let candidate = cron.find_next_occurrence(&repeat_start, true).ok()?;
    if candidate > local {
        return None;
    }
    match zone.resolve(candidate) {
        Resolved::Twice(_, second) => Some(second),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{berlin, slots, utc};
    use super::super::{CronSchedule, Zone};

    #[test]
    fn spring_forward_a_missing_fixed_time_runs_once_at_the_next_valid_time() {
        // Berlin 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00Z); 02:30 does not exist.
        let got = slots(
            "30 2 * * *",
            berlin(),
            "2026-03-28T12:00:00Z",
            "2026-03-30T12:00:00Z",
        );
        assert_eq!(got, ["2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"]);
    }

    #[test]
    fn spring_forward_a_stepped_hour_skips_only_the_missing_hour() {
        let got = slots(
            "0 * * * *",
            berlin(),
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
            berlin(),
            "2026-10-24T12:00:00Z",
            "2026-10-26T12:00:00Z",
        );
        assert_eq!(got, ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]);
    }

    #[test]
    fn fall_back_a_wildcard_hour_runs_in_both_passes() {
        let got = slots(
            "30 * * * *",
            berlin(),
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
            berlin(),
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
            berlin(),
            "2026-03-28T22:00:00Z",
            "2026-03-29T04:00:00Z",
        );
        assert_eq!(spring, ["2026-03-29T01:00:00Z"]);
        // Autumn: 02:00 and 02:30 happen twice; each runs once, in the first pass.
        let fall = slots(
            "0,30 2 * * *",
            berlin(),
            "2026-10-24T22:00:00Z",
            "2026-10-25T04:00:00Z",
        );
        assert_eq!(fall, ["2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z"]);
        let range = slots(
            "0 2-3 * * *",
            berlin(),
            "2026-10-24T22:00:00Z",
            "2026-10-25T04:00:00Z",
        );
        assert_eq!(range, ["2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z"]);
    }

    #[test]
    fn a_stepped_minute_runs_in_both_passes_and_not_in_the_gap() {
        let fall = slots(
            "*/30 2 * * *",
            berlin(),
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
            berlin(),
            "2026-03-28T22:00:00Z",
            "2026-03-29T04:00:00Z",
        );
        assert!(spring.is_empty(), "{spring:?}");
    }

    #[test]
    fn a_seconds_schedule_walks_through_both_passes_in_order() {
        // The second pass begins on a slot: 02:00:00 CET, right after 02:59:40 CEST.
        let s = CronSchedule::parse("*/20 * * * * * *", berlin()).unwrap();
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
        let s = CronSchedule::parse("*/20 * * * * * *", berlin()).unwrap();
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
    fn a_minute_step_in_a_fixed_hour_runs_each_time_once_on_both_change_days() {
        // cronie's rule: neither `0-59/30` nor `2` begins with `*`, so the times are
        // fixed. Berlin, fall back (2026-10-25, 02:00-03:00 twice): 02:00 and 02:30 once
        // each, in the first pass.
        let fall = ("2026-10-24T22:00:00Z", "2026-10-25T04:00:00Z");
        for cron in ["0-59/30 2 * * *", "0 0-59/30 2 * * * *"] {
            assert_eq!(
                slots(cron, berlin(), fall.0, fall.1),
                ["2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z"],
                "{cron}"
            );
        }
        // Spring forward (2026-03-29, 02:00-03:00 skipped): once, at the change.
        let spring = ("2026-03-28T22:00:00Z", "2026-03-29T04:00:00Z");
        assert_eq!(
            slots("0-59/30 2 * * *", berlin(), spring.0, spring.1),
            ["2026-03-29T01:00:00Z"]
        );
        // New York: 01:00-02:00 twice on 2026-11-01, 02:00-03:00 skipped on 2026-03-08.
        let new_york = || Zone::named("America/New_York").unwrap();
        assert_eq!(
            slots(
                "0-59/30 1 * * *",
                new_york(),
                "2026-11-01T04:00:00Z",
                "2026-11-01T08:00:00Z"
            ),
            ["2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z"]
        );
        assert_eq!(
            slots(
                "0-59/30 2 * * *",
                new_york(),
                "2026-03-08T05:00:00Z",
                "2026-03-08T09:00:00Z"
            ),
            ["2026-03-08T07:00:00Z"]
        );
        // The same times with the minute starred run in both passes and not in the gap.
        assert_eq!(slots("*/30 2 * * *", berlin(), fall.0, fall.1).len(), 4);
        assert!(slots("*/30 2 * * *", berlin(), spring.0, spring.1).is_empty());
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
}
