//! The agenda driven by a simulated loop: a clock that only the simulation moves,
//! runs of scripted lengths, records in memory, and the job's run lock as a slot's run
//! meets it (a slot that starts while another runs under `--overlap skip` is skipped by
//! its own run). No sleeping.

use std::collections::{HashSet, VecDeque};

mod overlap;
mod starts;

use super::*;
use crate::cron::CronSchedule;

fn t(text: &str) -> Slot {
    text.parse().unwrap()
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
        caught_up: false,
        labelled: false,
    }
}

/// A loop in miniature, around one agenda.
struct Sim {
    agenda: Agenda,
    now: Slot,
    records: HashSet<Slot>,
    /// How long each run takes, in seconds (the last value repeats).
    durations: VecDeque<i64>,
    /// Runs under way and when each ends.
    running: Vec<(Slot, Slot)>,
    ran: Vec<Slot>,
    skipped: Vec<Slot>,
    replaced: Vec<Slot>,
    said: Vec<String>,
    tallies: Vec<Tally>,
    /// A suspend: at the first wake-up at or after the first time, the clock jumps to the second.
    jump: Option<(Slot, Slot)>,
}

impl Sim {
    /// A job whose first start was `first`, started at `now` with `records`.
    fn new(cfg: ScheduleConfig, now: &str, first: &str, records: HashSet<Slot>) -> Sim {
        let now = t(now);
        let mut sim = Sim {
            agenda: Agenda::new(cfg, now, std::time::Duration::ZERO),
            now,
            records,
            durations: VecDeque::from([0]),
            running: Vec::new(),
            ran: Vec::new(),
            skipped: Vec::new(),
            replaced: Vec::new(),
            said: Vec::new(),
            tallies: Vec::new(),
            jump: None,
        };
        let handled = sim.records.clone();
        let steps = sim.agenda.begin(&handled, t(first));
        sim.apply(steps);
        sim
    }

    fn duration(&mut self) -> i64 {
        if self.durations.len() > 1 {
            self.durations.pop_front().unwrap()
        } else {
            self.durations[0]
        }
    }

    fn apply(&mut self, steps: Vec<Step>) {
        for step in steps {
            match step {
                Step::Start { slot, .. } => self.start(slot),
                Step::Replace(slot) => {
                    self.running.retain(|(s, _)| *s != slot);
                    self.replaced.push(slot);
                    self.records.insert(slot);
                    let more = self.agenda.ended(slot);
                    self.apply(more);
                }
                Step::ReadRecords => {
                    let more = self.agenda.records(Ok(self.records.clone()));
                    self.apply(more);
                }
                Step::Say(text) | Step::Error(text) => self.said.push(text),
                Step::Tally(tally) => self.tallies.push(tally),
            }
        }
    }

    fn start(&mut self, slot: Slot) {
        let busy = !self.running.is_empty();
        if busy && self.agenda.config().overlap == Overlap::Skip {
            // The slot's run finds the job's run lock held: it records the skip and ends.
            self.skipped.push(slot);
            self.records.insert(slot);
            let more = self.agenda.ended(slot);
            return self.apply(more);
        }
        let secs = self.duration();
        self.ran.push(slot);
        self.running
            .push((slot, self.now + SignedDuration::from_secs(secs)));
        if secs == 0 {
            self.finish_due();
        }
    }

    /// Ends the runs whose time has come, in the order they end.
    fn finish_due(&mut self) {
        while let Some(at) = self.running.iter().position(|(_, end)| *end <= self.now) {
            let (slot, _) = self.running.remove(at);
            self.records.insert(slot);
            let more = self.agenda.ended(slot);
            self.apply(more);
        }
    }

    /// Runs until `runs` slots have run (or nothing more would happen).
    fn until_runs(&mut self, runs: usize) -> &mut Sim {
        for _ in 0..10_000 {
            if self.ran.len() >= runs {
                break;
            }
            let next_end = self.running.iter().map(|(_, end)| *end).min();
            let next = match (self.agenda.wake_at(), next_end) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => match a.or(b) {
                    Some(next) => next,
                    None => break,
                },
            };
            self.now = self.now.max(next);
            if let Some((_, to)) = self.jump.filter(|(when, _)| *when <= self.now) {
                self.now = to;
                self.jump = None;
            }
            self.finish_due();
            let steps = self.agenda.tick(self.now);
            self.apply(steps);
            self.finish_due();
        }
        self
    }

    fn says(&self, text: &str) -> bool {
        self.said.iter().any(|s| s.contains(text))
    }
}

const LONG_AGO: &str = "2000-01-01T00:00:00Z";

#[test]
fn a_start_catches_up_the_latest_missed_slot_then_runs_on_time() {
    let cfg = config("0 * * * *", CatchUp::Latest, Overlap::Skip, 6 * 3600);
    let records = set(&["2026-01-01T03:00:00Z"]);
    let mut sim = Sim::new(cfg, "2026-01-01T05:30:00Z", LONG_AGO, records);
    sim.until_runs(3);
    assert_eq!(
        sim.ran,
        [
            t("2026-01-01T05:00:00Z"),
            t("2026-01-01T06:00:00Z"),
            t("2026-01-01T07:00:00Z")
        ]
    );
    // The window reaches back to 23:30: 00, 01, 02 and 04 are dropped, 03 has a record.
    assert!(sim.says("dropped 4 older missed slots"), "{:?}", sim.said);
}

#[test]
fn catch_up_all_runs_each_missed_slot_in_order_and_none_runs_none() {
    let cfg = config("0 * * * *", CatchUp::All, Overlap::Skip, 3 * 3600);
    let records = set(&["2026-01-01T04:00:00Z"]);
    let mut sim = Sim::new(cfg, "2026-01-01T05:30:00Z", LONG_AGO, records);
    sim.until_runs(3);
    assert_eq!(
        sim.ran,
        [
            t("2026-01-01T03:00:00Z"),
            t("2026-01-01T05:00:00Z"),
            t("2026-01-01T06:00:00Z")
        ]
    );
    let cfg = config("0 * * * *", CatchUp::None, Overlap::Skip, 3 * 3600);
    let mut sim = Sim::new(cfg, "2026-01-01T05:30:00Z", LONG_AGO, HashSet::new());
    sim.until_runs(1);
    assert_eq!(sim.ran, [t("2026-01-01T06:00:00Z")]);
    assert!(sim.says("dropped 3 missed slots of job job (--catch-up none)"));
}

#[test]
fn a_suspended_host_catches_up_from_state_on_waking() {
    let cfg = config("0 * * * *", CatchUp::Latest, Overlap::Skip, 24 * 3600);
    let records = set(&["2026-01-01T00:00:00Z"]);
    let mut sim = Sim::new(cfg, "2026-01-01T00:30:00Z", LONG_AGO, records);
    // Asleep from 01:00 to 04:10: 01..04 come due at once; only 04:00 runs.
    sim.jump = Some((t("2026-01-01T01:00:00Z"), t("2026-01-01T04:10:00Z")));
    sim.until_runs(2);
    assert_eq!(
        sim.ran,
        [t("2026-01-01T04:00:00Z"), t("2026-01-01T05:00:00Z")]
    );
    assert!(
        sim.says("4 slots came due at once, the oldest 3h10m ago (the host was suspended"),
        "{:?}",
        sim.said
    );
    assert!(sim.says("dropped 3 older missed slots"), "{:?}", sim.said);
}

#[test]
fn records_that_cannot_be_read_keep_the_due_slots_from_running() {
    let cfg = config("0 * * * *", CatchUp::Latest, Overlap::Skip, 24 * 3600);
    let mut agenda = Agenda::new(cfg, t("2026-01-01T00:30:00Z"), std::time::Duration::ZERO);
    agenda.begin(&HashSet::new(), t(LONG_AGO));
    assert_eq!(agenda.tick(t("2026-01-01T03:10:00Z"))[1], Step::ReadRecords);
    let steps = agenda.records(Err("cannot read the state".into()));
    assert_eq!(
        steps,
        [Step::Error(
            "cannot read the state; 3 due slots of job job do not run".into()
        )]
    );
    assert_eq!(agenda.wake_at(), Some(t("2026-01-01T04:00:00Z")));
}
