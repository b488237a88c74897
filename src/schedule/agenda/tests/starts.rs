//! Where a job starts: a first deployment, a restart, a retired job, and the
//! slots of a zone's changes of offset.

use super::*;

/// The slots a schedule read in Europe/Berlin runs from `start`.
fn ran_in_berlin(cron: &str, catch_up: CatchUp, start: &str, runs: usize) -> Vec<Slot> {
    let zone = crate::cron::Zone::named("Europe/Berlin").unwrap();
    let mut cfg = config(cron, catch_up, Overlap::Skip, 3600);
    cfg.cron = CronSchedule::parse(cron, zone).unwrap();
    let mut sim = Sim::new(cfg, start, LONG_AGO, HashSet::new());
    sim.until_runs(runs);
    sim.ran
}

#[test]
fn a_fixed_time_in_the_spring_gap_runs_once() {
    assert_eq!(
        ran_in_berlin("30 2 * * *", CatchUp::Latest, "2026-03-28T12:00:00Z", 2),
        [t("2026-03-29T01:00:00Z"), t("2026-03-30T00:30:00Z")]
    );
}

#[test]
fn a_repeated_hour_runs_a_fixed_time_once_and_an_hourly_job_twice() {
    assert_eq!(
        ran_in_berlin("30 2 * * *", CatchUp::None, "2026-10-24T12:00:00Z", 2),
        [t("2026-10-25T00:30:00Z"), t("2026-10-26T01:30:00Z")]
    );
    assert_eq!(
        ran_in_berlin("30 * * * *", CatchUp::None, "2026-10-24T23:45:00Z", 3),
        [
            t("2026-10-25T00:30:00Z"),
            t("2026-10-25T01:30:00Z"),
            t("2026-10-25T02:30:00Z")
        ]
    );
}

#[test]
fn a_first_deployment_waits_for_the_next_slot() {
    // `0 3 * * *` deployed at 22:00 runs at 03:00, not at once (--catch-up latest).
    let cfg = config("0 3 * * *", CatchUp::Latest, Overlap::Skip, 24 * 3600);
    let start = "2026-01-01T22:00:00.250Z";
    let mut sim = Sim::new(cfg, start, "2026-01-01T22:00:00Z", HashSet::new());
    sim.until_runs(1);
    assert_eq!(sim.ran, [t("2026-01-02T03:00:00Z")]);
    assert!(!sim.says("catch-up"), "{:?}", sim.said);
    assert!(
        !sim.tallies
            .iter()
            .any(|t| matches!(t, Tally::Dropped(_) | Tally::CaughtUp))
    );
    assert_eq!(sim.tallies[0], Tally::Next(t("2026-01-02T03:00:00Z")));
}

#[test]
fn catch_up_all_on_a_first_start_runs_none_of_the_window() {
    let cfg = config("*/5 * * * *", CatchUp::All, Overlap::Skip, 24 * 3600);
    let start = "2026-01-01T12:02:00Z";
    let mut sim = Sim::new(cfg, start, start, HashSet::new());
    sim.until_runs(2);
    assert_eq!(
        sim.ran,
        [t("2026-01-01T12:05:00Z"), t("2026-01-01T12:10:00Z")]
    );
}

#[test]
fn a_slot_in_the_second_of_the_first_start_runs_at_once() {
    let cfg = config("0 * * * *", CatchUp::Latest, Overlap::Skip, 24 * 3600);
    let start = "2026-01-01T12:00:00.400Z";
    let mut sim = Sim::new(cfg, start, "2026-01-01T12:00:00Z", HashSet::new());
    sim.until_runs(1);
    assert_eq!(sim.ran, [t("2026-01-01T12:00:00Z")]);
    assert_eq!(
        sim.tallies[..2],
        [Tally::Next(t("2026-01-01T13:00:00Z")), Tally::CaughtUp]
    );
}

#[test]
fn a_restart_catches_up_only_what_came_after_the_first_start() {
    let cfg = config("0 * * * *", CatchUp::All, Overlap::Skip, 24 * 3600);
    let records = set(&["2026-01-01T11:00:00Z"]);
    let first = "2026-01-01T10:30:00Z";
    let mut sim = Sim::new(cfg, "2026-01-01T13:10:00Z", first, records);
    sim.until_runs(3);
    assert_eq!(
        sim.ran,
        [
            t("2026-01-01T12:00:00Z"),
            t("2026-01-01T13:00:00Z"),
            t("2026-01-01T14:00:00Z")
        ]
    );
    let caught_up = sim.tallies.iter().filter(|t| **t == Tally::CaughtUp);
    assert_eq!(caught_up.count(), 2);
    // --catch-up none counts the same two as dropped, and none before the first start.
    let cfg = config("0 * * * *", CatchUp::None, Overlap::Skip, 24 * 3600);
    let sim = Sim::new(cfg, "2026-01-01T13:10:00Z", first, HashSet::new());
    assert!(
        sim.tallies.contains(&Tally::Dropped(3)),
        "{:?}",
        sim.tallies
    );
    assert!(sim.says("dropped 3 missed slots"));
}

#[test]
fn a_retired_job_starts_nothing_and_its_running_slot_finishes() {
    let cfg = config("@every 10s", CatchUp::None, Overlap::Skip, 60);
    let mut agenda = Agenda::new(cfg, t("2026-01-01T00:00:05Z"), std::time::Duration::ZERO);
    agenda.begin(&HashSet::new(), t(LONG_AGO));
    let steps = agenda.tick(t("2026-01-01T00:00:10Z"));
    assert!(steps.contains(&Step::Start {
        slot: t("2026-01-01T00:00:10Z"),
        caught_up: false
    }));
    agenda.retire();
    assert_eq!(agenda.wake_at(), None);
    assert!(agenda.tick(t("2026-01-01T00:00:20Z")).is_empty());
    assert!(!agenda.idle());
    assert!(agenda.ended(t("2026-01-01T00:00:10Z")).is_empty());
    assert!(agenda.idle());
}
