//! `--overlap` in the simulated loop: skip, queue, allow and replace, and the runs
//! started ahead of their slot.

use super::*;

#[test]
fn overlap_skip_starts_each_slot_and_its_run_skips_it_while_the_long_run_goes_on() {
    let cfg = config("@every 10s", CatchUp::None, Overlap::Skip, 60);
    let mut sim = Sim::new(cfg, "2026-01-01T00:00:05Z", LONG_AGO, HashSet::new());
    sim.durations = VecDeque::from([25, 0]);
    sim.until_runs(3);
    // 00:10 runs for 25 s; 00:20 and 00:30 come during it and are skipped at their own time.
    assert_eq!(
        sim.skipped,
        [t("2026-01-01T00:00:20Z"), t("2026-01-01T00:00:30Z")]
    );
    assert_eq!(
        sim.ran,
        [
            t("2026-01-01T00:00:10Z"),
            t("2026-01-01T00:00:40Z"),
            t("2026-01-01T00:00:50Z")
        ]
    );
}

#[test]
fn overlap_queue_runs_the_slot_that_came_after_the_long_run() {
    let cfg = config("@every 10s", CatchUp::Latest, Overlap::Queue, 60);
    let mut sim = Sim::new(cfg, "2026-01-01T00:00:05Z", LONG_AGO, HashSet::new());
    sim.durations = VecDeque::from([0, 15, 0]);
    sim.until_runs(4);
    assert!(sim.skipped.is_empty());
    // 00:00 is caught up at start; 00:10 runs until 00:25; 00:20 came meanwhile and runs after.
    assert_eq!(
        sim.ran,
        [
            t("2026-01-01T00:00:00Z"),
            t("2026-01-01T00:00:10Z"),
            t("2026-01-01T00:00:20Z"),
            t("2026-01-01T00:00:30Z")
        ]
    );
}

#[test]
fn overlap_allow_runs_slots_side_by_side_and_replace_stops_the_running_one() {
    let cfg = config("@every 10s", CatchUp::None, Overlap::Allow, 60);
    let mut sim = Sim::new(cfg, "2026-01-01T00:00:05Z", LONG_AGO, HashSet::new());
    sim.durations = VecDeque::from([25, 0]);
    sim.until_runs(3);
    assert_eq!(
        sim.ran,
        [
            t("2026-01-01T00:00:10Z"),
            t("2026-01-01T00:00:20Z"),
            t("2026-01-01T00:00:30Z")
        ]
    );
    assert!(sim.skipped.is_empty() && sim.replaced.is_empty());
    let cfg = config("@every 10s", CatchUp::None, Overlap::Replace, 60);
    let mut sim = Sim::new(cfg, "2026-01-01T00:00:05Z", LONG_AGO, HashSet::new());
    sim.durations = VecDeque::from([25, 0]);
    sim.until_runs(3);
    assert_eq!(sim.replaced, [t("2026-01-01T00:00:10Z")]);
    assert_eq!(
        sim.ran,
        [
            t("2026-01-01T00:00:10Z"),
            t("2026-01-01T00:00:20Z"),
            t("2026-01-01T00:00:30Z")
        ]
    );
}

#[test]
fn a_run_starts_its_lead_ahead_of_its_slot_and_once() {
    let cfg = config("@every 10s", CatchUp::None, Overlap::Skip, 60);
    let lead = std::time::Duration::from_millis(500);
    let mut agenda = Agenda::new(cfg, t("2026-01-01T00:00:05Z"), lead);
    agenda.begin(&HashSet::new(), t(LONG_AGO));
    assert_eq!(agenda.wake_at(), Some(t("2026-01-01T00:00:09.5Z")));
    let slot = t("2026-01-01T00:00:10Z");
    let started = Step::Start {
        slot,
        caught_up: false,
    };
    assert_eq!(agenda.tick(t("2026-01-01T00:00:09.5Z")), [started]);
    assert_eq!(agenda.wake_at(), Some(slot), "then at the slot itself");
    let at_slot = agenda.tick(slot);
    assert!(
        !at_slot.iter().any(|s| matches!(s, Step::Start { .. })),
        "{at_slot:?}"
    );
    assert!(agenda.ended(slot).is_empty());
    assert_eq!(agenda.wake_at(), Some(t("2026-01-01T00:00:19.5Z")));
}

#[test]
fn under_queue_no_run_starts_ahead_while_another_runs_and_replace_tells_the_old_one_at_the_slot() {
    let lead = std::time::Duration::from_millis(500);
    let cfg = config("@every 10s", CatchUp::None, Overlap::Queue, 60);
    let mut agenda = Agenda::new(cfg, t("2026-01-01T00:00:05Z"), lead);
    agenda.begin(&HashSet::new(), t(LONG_AGO));
    agenda.tick(t("2026-01-01T00:00:09.5Z"));
    agenda.tick(t("2026-01-01T00:00:10Z"));
    assert!(
        agenda.tick(t("2026-01-01T00:00:19.5Z")).is_empty(),
        "the 10s run runs on"
    );
    let cfg = config("@every 10s", CatchUp::None, Overlap::Replace, 60);
    let mut agenda = Agenda::new(cfg, t("2026-01-01T00:00:05Z"), lead);
    agenda.begin(&HashSet::new(), t(LONG_AGO));
    agenda.tick(t("2026-01-01T00:00:09.5Z"));
    agenda.tick(t("2026-01-01T00:00:10Z"));
    let ahead = agenda.tick(t("2026-01-01T00:00:19.5Z"));
    assert_eq!(
        ahead,
        [Step::Start {
            slot: t("2026-01-01T00:00:20Z"),
            caught_up: false
        }]
    );
    let at_slot = agenda.tick(t("2026-01-01T00:00:20Z"));
    assert!(
        at_slot.contains(&Step::Replace(t("2026-01-01T00:00:10Z"))),
        "{at_slot:?}"
    );
}

#[test]
fn a_reboot_job_runs_once_at_the_scheduler_s_start_and_never_after_a_reload() {
    let mut cfg = config("@daily", CatchUp::All, Overlap::Skip, 60);
    cfg.cron = CronSchedule::parse("@reboot", crate::cron::Zone::utc()).unwrap();
    let start = t("2026-01-01T00:00:05Z");
    let mut agenda = Agenda::new(cfg.clone(), start, std::time::Duration::ZERO);
    let steps = agenda.begin_boot(true);
    assert!(
        steps.contains(&Step::Start {
            slot: start,
            caught_up: false
        }),
        "{steps:?}"
    );
    assert_eq!(agenda.wake_at(), None, "no time of its own");
    assert!(agenda.tick(t("2026-01-02T00:00:00Z")).is_empty());
    assert!(
        agenda.ended(start).is_empty(),
        "never again, never caught up"
    );
    let mut added = Agenda::new(cfg, start, std::time::Duration::ZERO);
    let steps = added.begin_boot(false);
    assert!(
        !steps.iter().any(|s| matches!(s, Step::Start { .. })),
        "{steps:?}"
    );
}
