//! Which missed slots a catch-up runs (`--catch-up none|latest|all`), as a pure function
//! of the slots of a span, the slots that have a record, and the job's first start.
//! When to catch up (at start, after a pause, after a queued run) is the agenda's.

use std::collections::HashSet;

use jiff::Timestamp;

use super::Slot;
use crate::domain::CatchUp;

/// What a catch-up runs, oldest first, and how many missed slots it drops.
#[derive(Debug, PartialEq, Eq)]
pub struct CatchUpPlan {
    pub run: Vec<Slot>,
    pub dropped: usize,
}

/// Decides the catch-up over `slots` (every slot of the span, oldest first); a slot
/// in `handled` has a record and is never run again, and a slot before `first_start`
/// (the second the job's first scheduler started) was never missed: it is neither run
/// nor counted as dropped, as cron never runs a slot from before the job existed.
pub fn plan_catch_up(
    policy: CatchUp,
    slots: &[Slot],
    handled: &HashSet<Slot>,
    first_start: Slot,
) -> CatchUpPlan {
    let slots: Vec<Slot> = slots
        .iter()
        .copied()
        .filter(|s| *s >= first_start)
        .collect();
    let missed: Vec<Slot> = slots
        .iter()
        .copied()
        .filter(|s| !handled.contains(s))
        .collect();
    match policy {
        CatchUp::None => CatchUpPlan {
            run: Vec::new(),
            dropped: missed.len(),
        },
        CatchUp::All => CatchUpPlan {
            run: missed,
            dropped: 0,
        },
        CatchUp::Latest => {
            let newest = slots.last().filter(|s| !handled.contains(s));
            CatchUpPlan {
                run: newest.into_iter().copied().collect(),
                dropped: missed.len() - usize::from(newest.is_some()),
            }
        }
    }
}

/// The second `t` falls in: a first start is recorded to the second, so a slot in
/// that very second still counts as after it.
pub fn whole_second(t: Slot) -> Slot {
    Timestamp::from_second(t.as_second()).unwrap_or(t)
}

/// The policy's name, as `--catch-up` spells it.
pub fn policy_name(policy: CatchUp) -> &'static str {
    match policy {
        CatchUp::None => "none",
        CatchUp::Latest => "latest",
        CatchUp::All => "all",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(text: &str) -> Slot {
        text.parse().unwrap()
    }

    fn set(slots: &[&str]) -> HashSet<Slot> {
        slots.iter().map(|s| t(s)).collect()
    }

    #[test]
    fn plans_follow_the_policy_and_never_rerun_a_recorded_slot() {
        let slots = [
            t("2026-01-01T01:00:00Z"),
            t("2026-01-01T02:00:00Z"),
            t("2026-01-01T03:00:00Z"),
        ];
        let first = t("2025-01-01T00:00:00Z");
        let handled = set(&["2026-01-01T02:00:00Z"]);
        let latest = plan_catch_up(CatchUp::Latest, &slots, &handled, first);
        assert_eq!(latest.run, [slots[2]]);
        assert_eq!(latest.dropped, 1);
        let all = plan_catch_up(CatchUp::All, &slots, &handled, first);
        assert_eq!(all.run, [slots[0], slots[2]]);
        assert_eq!(all.dropped, 0);
        let none = plan_catch_up(CatchUp::None, &slots, &handled, first);
        assert!(none.run.is_empty());
        assert_eq!(none.dropped, 2);
        let newest_done = set(&["2026-01-01T03:00:00Z"]);
        let latest = plan_catch_up(CatchUp::Latest, &slots, &newest_done, first);
        assert!(
            latest.run.is_empty(),
            "the newest slot ran: nothing to catch up"
        );
        assert_eq!(latest.dropped, 2);
    }

    #[test]
    fn nothing_before_the_first_start_is_missed() {
        let slots = [
            t("2026-01-01T01:00:00Z"),
            t("2026-01-01T02:00:00Z"),
            t("2026-01-01T03:00:00Z"),
        ];
        let first = t("2026-01-01T02:00:00Z");
        let all = plan_catch_up(CatchUp::All, &slots, &HashSet::new(), first);
        assert_eq!(
            all.run,
            [slots[1], slots[2]],
            "a slot in the first start's second runs"
        );
        let none = plan_catch_up(CatchUp::None, &slots, &HashSet::new(), first);
        assert_eq!(none.dropped, 2);
        assert_eq!(
            whole_second(t("2026-01-01T02:00:00.900Z")),
            t("2026-01-01T02:00:00Z")
        );
    }
}
