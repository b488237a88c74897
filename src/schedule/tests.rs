//! The loop against a scripted world: a fake clock that runs moves forward, a
//! sleeper that jumps to the wake-up time, and state in memory (slot records and the
//! job's first start). No sleeping.

use std::collections::{HashSet, VecDeque};

use super::*;
use crate::cron::CronSchedule;

fn t(text: &str) -> Slot {
    text.parse().unwrap()
}

/// The slots a schedule read in Europe/Berlin (overlaps skipped, 1 h window) runs from
/// `start` until the world stops it after `stop_after` runs.
fn ran_in_berlin(cron: &str, catch_up: CatchUp, start: &str, stop_after: usize) -> Vec<Slot> {
    let zone = crate::cron::Zone::named("Europe/Berlin").unwrap();
    let mut cfg = config(cron, catch_up, Overlap::Skip, 3600);
    cfg.cron = CronSchedule::parse(cron, zone).unwrap();
    let mut world = Fake::new(start, HashSet::new(), stop_after);
    run(&cfg, &mut world);
    world.ran
}

fn set(slots: &[&str]) -> HashSet<Slot> {
    slots.iter().map(|s| t(s)).collect()
}

fn config(cron: &str, catch_up: CatchUp, overlap: Overlap, window_s: u64) -> ScheduleConfig {
    ScheduleConfig {
        cron: CronSchedule::parse(cron, crate::cron::Zone::utc()).unwrap(),
        job: "job".into(),
        catch_up,
        window: std::time::Duration::from_secs(window_s),
        overlap,
        grace: std::time::Duration::from_secs(20),
        state: crate::state::parse_state_target("/nonexistent").unwrap(),
        metrics_listen: None,
        run_slot: None,
    }
}

/// A world whose clock only moves when the scheduler sleeps or a run takes time.
struct Fake {
    now: Slot,
    records: HashSet<Slot>,
    /// The job's first-start record (`None`: the job never started).
    first: Option<Slot>,
    tallies: Vec<Tally>,
    /// How long each run takes, in seconds (the last value repeats).
    durations: VecDeque<i64>,
    ran: Vec<Slot>,
    skipped: Vec<Slot>,
    said: Vec<String>,
    /// Stop with SIGTERM once this many runs have been made.
    stop_after: usize,
    /// A suspend: at this wake-up the clock jumps to the second time.
    jump: Option<(Slot, Slot)>,
    /// A stalled call: the first prune after the one at start takes this long.
    prune_stall: Option<jiff::SignedDuration>,
    prunes: usize,
}

impl Fake {
    /// A job that first started long ago, with `records`.
    fn new(now: &str, records: HashSet<Slot>, stop_after: usize) -> Fake {
        Fake {
            first: Some(t("2000-01-01T00:00:00Z")),
            ..Fake::fresh(now, stop_after)
        }
        .with_records(records)
    }

    /// A job started for the first time, with nothing in its state.
    fn fresh(now: &str, stop_after: usize) -> Fake {
        Fake {
            now: t(now),
            records: HashSet::new(),
            first: None,
            tallies: Vec::new(),
            durations: VecDeque::from([0]),
            ran: Vec::new(),
            skipped: Vec::new(),
            said: Vec::new(),
            stop_after,
            jump: None,
            prune_stall: None,
            prunes: 0,
        }
    }

    fn with_records(self, records: HashSet<Slot>) -> Fake {
        Fake { records, ..self }
    }
}

impl World for Fake {
    fn now(&self) -> Slot {
        self.now
    }
    fn sleep_until(&mut self, at: Slot) -> Result<(), Signal> {
        if self.ran.len() >= self.stop_after {
            return Err(Signal::TERM);
        }
        self.now = self.now.max(at);
        if let Some((when, to)) = self.jump.filter(|(when, _)| *when <= self.now) {
            let _ = when;
            self.now = to;
            self.jump = None;
        }
        Ok(())
    }
    fn handled(&mut self) -> anyhow::Result<HashSet<Slot>> {
        Ok(self.records.clone())
    }
    fn first_start(&mut self, now: Slot) -> anyhow::Result<Slot> {
        Ok(*self.first.get_or_insert(whole_second(now)))
    }
    fn run_slot(&mut self, slot: Slot) -> SlotEnd {
        let secs = if self.durations.len() > 1 {
            self.durations.pop_front().unwrap()
        } else {
            self.durations[0]
        };
        self.now += jiff::SignedDuration::from_secs(secs);
        self.ran.push(slot);
        self.records.insert(slot);
        SlotEnd::Ended
    }
    fn skip_slot(&mut self, slot: Slot) {
        self.skipped.push(slot);
        self.records.insert(slot);
    }
    fn prune(&mut self, _before: Slot) {
        self.prunes += 1;
        if let Some(stall) = self.prune_stall.filter(|_| self.prunes == 2) {
            self.now += stall;
        }
    }
    fn say(&mut self, message: &str) {
        self.said.push(message.to_string());
    }
    fn tally(&mut self, tally: Tally) {
        self.tallies.push(tally);
    }
}

fn run(cfg: &ScheduleConfig, world: &mut Fake) -> u8 {
    Scheduler { config: cfg }.run(world).unwrap().code()
}

#[test]
fn catch_up_plans_follow_the_policy_and_never_rerun_a_recorded_slot() {
    let slots = [
        t("2026-01-01T00:00:00Z"),
        t("2026-01-01T01:00:00Z"),
        t("2026-01-01T02:00:00Z"),
    ];
    let handled = set(&["2026-01-01T01:00:00Z"]);
    let long_ago = t("2025-01-01T00:00:00Z");
    let all = plan_catch_up(CatchUp::All, &slots, &handled, long_ago);
    assert_eq!(all.run, vec![slots[0], slots[2]]);
    assert_eq!(all.dropped, 0);
    let latest = plan_catch_up(CatchUp::Latest, &slots, &handled, long_ago);
    assert_eq!((latest.run, latest.dropped), (vec![slots[2]], 1));
    let none = plan_catch_up(CatchUp::None, &slots, &handled, long_ago);
    assert_eq!((none.run.len(), none.dropped), (0, 2));
    // The newest slot has a record (it gave up, say): latest runs nothing.
    let done = set(&["2026-01-01T02:00:00Z"]);
    let latest = plan_catch_up(CatchUp::Latest, &slots, &done, slots[0]);
    assert_eq!((latest.run.len(), latest.dropped), (0, 2));
}

#[test]
fn catch_up_never_reaches_back_past_the_first_start() {
    let slots = [
        t("2026-01-01T00:00:00Z"),
        t("2026-01-01T01:00:00Z"),
        t("2026-01-01T02:00:00Z"),
    ];
    let none = HashSet::new();
    // Slots before the first start were never missed: not run, not counted as dropped.
    let first = t("2026-01-01T00:30:00Z");
    let all = plan_catch_up(CatchUp::All, &slots, &none, first);
    assert_eq!((all.run, all.dropped), (vec![slots[1], slots[2]], 0));
    let dropped = plan_catch_up(CatchUp::None, &slots, &none, first);
    assert_eq!(dropped.dropped, 2);
    // A slot in the very second of the first start counts as after it.
    let at_slot = plan_catch_up(CatchUp::All, &slots, &none, slots[2]);
    assert_eq!((at_slot.run, at_slot.dropped), (vec![slots[2]], 0));
    let after_all = plan_catch_up(CatchUp::Latest, &slots, &none, t("2026-01-01T02:00:01Z"));
    assert_eq!((after_all.run.len(), after_all.dropped), (0, 0));
    assert_eq!(
        whole_second(t("2026-01-01T02:00:00.999Z")),
        t("2026-01-01T02:00:00Z")
    );
}

#[test]
fn slot_keys_round_trip() {
    let slot = t("2026-03-29T01:00:00Z");
    assert_eq!(
        slot_key("backup-1a2b3c4d", slot),
        "backup-1a2b3c4d@2026-03-29T01:00:00Z"
    );
    assert_eq!(
        slot_of_key("backup-1a2b3c4d", "backup-1a2b3c4d@2026-03-29T01:00:00Z"),
        Some(slot)
    );
    assert_eq!(
        slot_of_key("backup", "backup-1a2b3c4d@2026-03-29T01:00:00Z"),
        None
    );
}

#[test]
fn a_start_catches_up_the_latest_missed_slot_then_runs_on_time() {
    let cfg = config("0 * * * *", CatchUp::Latest, Overlap::Skip, 6 * 3600);
    let mut world = Fake::new("2026-01-01T05:30:00Z", set(&["2026-01-01T03:00:00Z"]), 3);
    assert_eq!(run(&cfg, &mut world), 143);
    assert_eq!(
        world.ran,
        vec![
            t("2026-01-01T05:00:00Z"),
            t("2026-01-01T06:00:00Z"),
            t("2026-01-01T07:00:00Z")
        ]
    );
    // The window reaches back to 23:30: 00, 01, 02 and 04 are dropped, 03 has a record.
    assert!(
        world
            .said
            .iter()
            .any(|s| s.contains("dropped 4 older missed slots")),
        "{:?}",
        world.said
    );
}

#[test]
fn catch_up_all_runs_each_missed_slot_in_order_and_none_runs_none() {
    let cfg = config("0 * * * *", CatchUp::All, Overlap::Skip, 3 * 3600);
    let mut world = Fake::new("2026-01-01T05:30:00Z", set(&["2026-01-01T04:00:00Z"]), 2);
    run(&cfg, &mut world);
    assert_eq!(
        world.ran,
        vec![t("2026-01-01T03:00:00Z"), t("2026-01-01T05:00:00Z")]
    );
    let cfg = config("0 * * * *", CatchUp::None, Overlap::Skip, 3 * 3600);
    let mut world = Fake::new("2026-01-01T05:30:00Z", HashSet::new(), 1);
    run(&cfg, &mut world);
    assert_eq!(world.ran, vec![t("2026-01-01T06:00:00Z")]);
    assert!(
        world
            .said
            .iter()
            .any(|s| s.contains("dropped 3 missed slots (--catch-up none)"))
    );
}

#[test]
fn overlap_skip_records_the_slots_that_came_during_a_long_run() {
    let cfg = config("@every 10s", CatchUp::None, Overlap::Skip, 60);
    let mut world = Fake::new("2026-01-01T00:00:05Z", HashSet::new(), 3);
    world.durations = VecDeque::from([25, 0]);
    run(&cfg, &mut world);
    // 00:10 runs for 25 s; 00:20 and 00:30 come during it and are skipped.
    assert_eq!(
        world.skipped,
        vec![t("2026-01-01T00:00:20Z"), t("2026-01-01T00:00:30Z")]
    );
    assert_eq!(
        world.ran,
        vec![
            t("2026-01-01T00:00:10Z"),
            t("2026-01-01T00:00:40Z"),
            t("2026-01-01T00:00:50Z")
        ]
    );
}

#[test]
fn overlap_queue_runs_the_slot_that_came_after_the_long_run() {
    let cfg = config("@every 10s", CatchUp::Latest, Overlap::Queue, 60);
    let mut world = Fake::new("2026-01-01T00:00:05Z", HashSet::new(), 4);
    world.durations = VecDeque::from([0, 15, 0]);
    run(&cfg, &mut world);
    assert!(world.skipped.is_empty());
    // 00:00 is caught up at start; 00:10 runs until 00:25; 00:20 came meanwhile and runs after.
    assert_eq!(
        world.ran,
        vec![
            t("2026-01-01T00:00:00Z"),
            t("2026-01-01T00:00:10Z"),
            t("2026-01-01T00:00:20Z"),
            t("2026-01-01T00:00:30Z")
        ]
    );
}

#[test]
fn a_suspended_host_catches_up_from_state_on_waking() {
    let cfg = config("0 * * * *", CatchUp::Latest, Overlap::Skip, 24 * 3600);
    let mut world = Fake::new("2026-01-01T00:30:00Z", set(&["2026-01-01T00:00:00Z"]), 2);
    // Asleep from 01:00 to 04:10: 01..04 come due at once; only 04:00 runs.
    world.jump = Some((t("2026-01-01T01:00:00Z"), t("2026-01-01T04:10:00Z")));
    run(&cfg, &mut world);
    assert_eq!(
        world.ran,
        vec![t("2026-01-01T04:00:00Z"), t("2026-01-01T05:00:00Z")]
    );
    let said = world.said.iter().find(|s| s.contains("came due at once"));
    assert!(
        said.is_some_and(|s| s.contains("the host was suspended")),
        "{:?}",
        world.said
    );
}

#[test]
fn slots_missed_while_the_schedulers_own_call_stalled_are_not_blamed_on_the_host() {
    let cfg = config("*/10 * * * *", CatchUp::Latest, Overlap::Skip, 24 * 3600);
    let mut world = Fake::new("2026-01-01T00:05:00Z", HashSet::new(), 9);
    // The hourly prune after 01:10's run stalls until 01:45: 01:20 to 01:40 come due at once.
    world.prune_stall = Some(jiff::SignedDuration::from_mins(35));
    run(&cfg, &mut world);
    assert!(
        world.ran.contains(&t("2026-01-01T01:40:00Z")),
        "{:?}",
        world.ran
    );
    assert!(
        !world.ran.contains(&t("2026-01-01T01:20:00Z")),
        "{:?}",
        world.ran
    );
    let said = world.said.iter().find(|s| s.contains("came due at once"));
    assert_eq!(
        said.map(String::as_str),
        Some(
            "3 slots came due at once (this scheduler's own call to the state stalled, ending \
             25m after the first of them); catching up from state"
        ),
        "{:?}",
        world.said
    );
}

#[test]
fn a_fixed_time_in_the_spring_gap_runs_once_through_the_loop() {
    assert_eq!(
        ran_in_berlin("30 2 * * *", CatchUp::Latest, "2026-03-28T12:00:00Z", 2),
        vec![t("2026-03-29T01:00:00Z"), t("2026-03-30T00:30:00Z")]
    );
}

#[test]
fn a_repeated_hour_runs_a_fixed_time_once_and_an_hourly_job_twice() {
    assert_eq!(
        ran_in_berlin("30 2 * * *", CatchUp::None, "2026-10-24T12:00:00Z", 2),
        vec![t("2026-10-25T00:30:00Z"), t("2026-10-26T01:30:00Z")]
    );
    assert_eq!(
        ran_in_berlin("30 * * * *", CatchUp::None, "2026-10-24T23:45:00Z", 3),
        vec![
            t("2026-10-25T00:30:00Z"),
            t("2026-10-25T01:30:00Z"),
            t("2026-10-25T02:30:00Z")
        ]
    );
}

#[test]
fn a_first_deployment_waits_for_the_next_slot_and_records_its_start() {
    // `0 3 * * *` deployed at 22:00 runs at 03:00, not at once (--catch-up latest).
    let cfg = config("0 3 * * *", CatchUp::Latest, Overlap::Skip, 24 * 3600);
    let mut world = Fake::fresh("2026-01-01T22:00:00.250Z", 1);
    assert_eq!(run(&cfg, &mut world), 143);
    assert_eq!(world.ran, vec![t("2026-01-02T03:00:00Z")]);
    assert_eq!(world.first, Some(t("2026-01-01T22:00:00Z")));
    assert!(
        !world.said.iter().any(|s| s.contains("catch-up")),
        "{:?}",
        world.said
    );
    assert!(
        !world
            .tallies
            .iter()
            .any(|t| matches!(t, Tally::Dropped(_) | Tally::CaughtUp))
    );
    assert_eq!(world.tallies[0], Tally::Next(t("2026-01-02T03:00:00Z")));
}

#[test]
fn catch_up_all_on_a_first_start_runs_none_of_the_window() {
    let cfg = config("*/5 * * * *", CatchUp::All, Overlap::Skip, 24 * 3600);
    let mut world = Fake::fresh("2026-01-01T12:02:00Z", 2);
    run(&cfg, &mut world);
    assert_eq!(
        world.ran,
        vec![t("2026-01-01T12:05:00Z"), t("2026-01-01T12:10:00Z")]
    );
}

#[test]
fn a_slot_in_the_second_of_the_first_start_runs_at_once() {
    let cfg = config("0 * * * *", CatchUp::Latest, Overlap::Skip, 24 * 3600);
    let mut world = Fake::fresh("2026-01-01T12:00:00.400Z", 1);
    run(&cfg, &mut world);
    assert_eq!(world.ran, vec![t("2026-01-01T12:00:00Z")]);
    assert_eq!(
        world.tallies[..2],
        [Tally::Next(t("2026-01-01T13:00:00Z")), Tally::CaughtUp]
    );
}

#[test]
fn a_restart_catches_up_only_what_came_after_the_first_start() {
    let cfg = config("0 * * * *", CatchUp::All, Overlap::Skip, 24 * 3600);
    let mut world = Fake::fresh("2026-01-01T13:10:00Z", 3);
    world.first = Some(t("2026-01-01T10:30:00Z"));
    world.records = set(&["2026-01-01T11:00:00Z"]);
    run(&cfg, &mut world);
    assert_eq!(
        world.ran,
        vec![
            t("2026-01-01T12:00:00Z"),
            t("2026-01-01T13:00:00Z"),
            t("2026-01-01T14:00:00Z")
        ]
    );
    assert_eq!(world.first, Some(t("2026-01-01T10:30:00Z")), "kept");
    let caught_up = world
        .tallies
        .iter()
        .filter(|t| **t == Tally::CaughtUp)
        .count();
    assert_eq!(caught_up, 2);
    // --catch-up none counts the same two as dropped, and none before the first start.
    let cfg = config("0 * * * *", CatchUp::None, Overlap::Skip, 24 * 3600);
    let mut world = Fake::fresh("2026-01-01T13:10:00Z", 1);
    world.first = Some(t("2026-01-01T10:30:00Z"));
    run(&cfg, &mut world);
    assert!(
        world.tallies.contains(&Tally::Dropped(3)),
        "{:?}",
        world.tallies
    );
    assert!(
        world
            .said
            .iter()
            .any(|s| s.contains("dropped 3 missed slots"))
    );
}

#[test]
fn a_stop_says_the_signal_and_the_status() {
    let cfg = config("0 * * * *", CatchUp::None, Overlap::Skip, 3600);
    let mut world = Fake::fresh("2026-01-01T12:30:00Z", 0);
    assert_eq!(run(&cfg, &mut world), 143);
    assert_eq!(
        world.said.last().map(String::as_str),
        Some("stopped by SIGTERM; exit status 143")
    );
}
