//! Each phase of a run on the engine's fake clock, sleepers and executor, with file
//! stores in a temporary directory: what it does, and how it ends the run.

use std::path::Path;
use std::time::Duration;

use super::*;
use crate::domain::{HoldCause, Throttled};
use crate::engine::fakes::{FakeClock, FakeSleeper, Scripted, fail, ok};
use crate::wait::Bound;

fn config(args: &[&str]) -> Config {
    let argv = ["retry"].iter().chain(args).chain(&["true"]).copied();
    let cli = crate::cli::parse(argv).expect("valid flags");
    let log = crate::config::log_config(&cli);
    Config::from_cli(cli, &log).expect("a valid configuration")
}

/// The fake clock and the run's two fake sleepers.
struct Fakes {
    clock: FakeClock,
    pause: FakeSleeper,
    backoff: FakeSleeper,
}

impl Fakes {
    fn new() -> Fakes {
        let clock = FakeClock::default();
        Fakes {
            pause: FakeSleeper::new(&clock),
            backoff: FakeSleeper::new(&clock),
            clock,
        }
    }

    fn run<'a>(&'a mut self, config: &'a Config) -> Run<'a> {
        let waits = Waits {
            clock: &self.clock,
            pause: &mut self.pause,
            backoff: &mut self.backoff,
        };
        Run::new(config, None, &config.run, waits)
    }
}

/// The time limit of a run made with `c`, from now.
fn limit_of(c: &Config) -> TimeLimit {
    TimeLimit::starting_now(c.policy.max_time)
}

fn early(ended: Ended) -> (RunSummary, Option<SkipWhy>) {
    match ended {
        Ended::Early { summary, skipped } => (summary, skipped),
        Ended::Failed(err) => panic!("retry's own error instead of an outcome: {err:#}"),
    }
}

fn state_arg(dir: &Path) -> String {
    dir.join("state").display().to_string()
}

#[test]
fn opening_the_state_makes_the_fleets_folders_and_a_nested_run_opens_none() {
    let tmp = tempfile::tempdir().unwrap();
    let state = state_arg(tmp.path());
    let mut c = config(&["--retry-budget", "api", "--state", &state]);
    c.run.nested = true;
    assert!(Fakes::new().run(&c).open_state().is_ok());
    assert!(!tmp.path().join("state").exists(), "the outer run counts");
    c.run.nested = false;
    assert!(Fakes::new().run(&c).open_state().is_ok());
    assert!(tmp.path().join("state/budgets").is_dir());
}

#[test]
fn a_state_that_cannot_be_opened_is_retrys_own_error() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let c = config(&["--circuit", "c", "--state", &file.display().to_string()]);
    let mut fakes = Fakes::new();
    let opened = fakes.run(&c).open_state();
    assert!(matches!(opened, Err(Ended::Failed(_))));
}

#[test]
fn the_splay_sleeps_its_seeded_draw_within_max_time_and_a_signal_ends_the_run() {
    let c = config(&["--splay", "10s", "--seed", "7", "--max-time", "2s"]);
    let mut fakes = Fakes::new();
    let mut run = fakes.run(&c);
    let fleet = run.open_state().ok().unwrap();
    assert!(run.splay(&fleet).is_ok());
    let drawn = fleet::splay_delay(Duration::from_secs(10), 7).min(Duration::from_secs(2));
    assert_eq!(fakes.pause.slept, [drawn]);
    // Each run's clock starts at zero: the splay is cut to what is left of the time limit.
    let mut fakes = Fakes::new();
    fakes.pause.signal_on = Some(0);
    let mut run = fakes.run(&c);
    let fleet = run.open_state().ok().unwrap();
    let (summary, _) = early(run.splay(&fleet).unwrap_err());
    assert_eq!(summary.exit_code, ExitStatus::new(143));
    assert_eq!(summary.stopped_because, StopReason::Signal);
    assert!(summary.message.contains("--splay"), "{}", summary.message);
    // What went before the splay (opening the state) is spent from the time limit.
    let mut fakes = Fakes::new();
    fakes.clock.advance(Duration::from_millis(1500));
    let mut run = fakes.run(&c);
    let fleet = run.open_state().ok().unwrap();
    assert!(run.splay(&fleet).is_ok());
    assert_eq!(fakes.pause.slept, [drawn.min(Duration::from_millis(500))]);
}

#[test]
fn the_gate_skips_a_key_that_succeeded_and_a_busy_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let state = state_arg(tmp.path());
    let c = config(&["--once", "k", "--state", &state]);
    let mut fakes = Fakes::new();
    let mut exec = Scripted::new(&fakes.clock, vec![ok()]);
    let end = fakes.run(&c).make(&mut exec).unwrap();
    assert_eq!(end.summary.stopped_because, StopReason::Success);
    let (summary, skipped) = early(fakes.run(&c).gate().err().unwrap());
    assert_eq!(skipped, Some(SkipWhy::Done));
    assert_eq!(summary.exit_code, ExitStatus::SUCCESS);
    assert_eq!(summary.stopped_because, StopReason::Skipped);

    let lock = tmp.path().join("lock").display().to_string();
    let c = config(&["--lock", &lock, "--busy-exit", "75", "--state", &state]);
    let target = c.gate.lock.clone().unwrap();
    let bound = Bound::signals_only();
    let mut held = state::open_lock(&target, c.gate.state.as_ref(), &bound).unwrap();
    assert!(held.try_acquire(&bound).unwrap());
    let (summary, skipped) = early(Fakes::new().run(&c).gate().err().unwrap());
    assert_eq!(skipped, Some(SkipWhy::LockBusy));
    assert_eq!(summary.exit_code, ExitStatus::new(75));
}

/// Opens circuit `c` (one failure opens it for `cooldown`) in the state directory.
fn open_circuit(c: &Config) {
    let circuit = c.fleet.circuit.as_ref().unwrap();
    let target = c.fleet.state.as_ref().unwrap();
    let bound = Bound::signals_only();
    let mut store = state::open_fleet(target, false, &bound).unwrap();
    store.record_run(circuit, false, &bound).unwrap();
}

#[test]
fn an_open_circuit_refuses_the_run_and_under_throttled_wait_holds_it_until_max_time() {
    let tmp = tempfile::tempdir().unwrap();
    let state = state_arg(tmp.path());
    let circuit = [
        "--circuit",
        "c",
        "--circuit-failures",
        "1",
        "--circuit-cooldown",
        "5s",
    ];
    let args = [&circuit[..], &["--circuit-exit", "9", "--state", &state]].concat();
    let c = config(&args);
    open_circuit(&c);
    let mut fakes = Fakes::new();
    let mut run = fakes.run(&c);
    let mut fleet = run.open_state().ok().unwrap();
    let (summary, _) = early(run.admit(&mut fleet).unwrap_err());
    assert_eq!(summary.exit_code, ExitStatus::new(9));
    assert_eq!(summary.stopped_because, StopReason::CircuitOpen);
    assert!(summary.holds.is_empty());

    let args = [&args[..], &["--throttled", "wait", "--max-time", "2s"]].concat();
    let c = config(&args);
    assert_eq!(c.fleet.throttled, Throttled::Wait);
    let mut run = fakes.run(&c);
    let mut fleet = run.open_state().ok().unwrap();
    let (summary, _) = early(run.admit(&mut fleet).unwrap_err());
    // A tenth of the cooldown at a time, while the next one still ends within --max-time.
    let tenth = Duration::from_millis(500);
    assert_eq!(fakes.pause.slept, [tenth; 4]);
    assert_eq!(summary.holds.len(), 4);
    assert!(summary.holds.iter().all(|h| h.cause == HoldCause::Circuit));
    assert_eq!(summary.stopped_because, StopReason::CircuitOpen);
    assert!(
        summary
            .message
            .ends_with("--max-time ends before it would be asked again"),
        "{}",
        summary.message
    );
}

#[test]
fn the_attempts_spend_the_shared_budget_after_the_circuits_holds() {
    let tmp = tempfile::tempdir().unwrap();
    let state = state_arg(tmp.path());
    let c = config(&[
        "--retry-budget",
        "api",
        "--jitter",
        "none",
        "--state",
        &state,
    ]);
    let mut fakes = Fakes::new();
    let mut exec = Scripted::new(&fakes.clock, vec![fail(1), ok()]);
    let mut run = fakes.run(&c);
    let mut fleet = run.open_state().ok().unwrap();
    let mut hooks = Hooks::new(c.hooks.clone(), &c.run, &c.policy, limit_of(&c), None);
    let held = Hold {
        started_at: std::time::SystemTime::UNIX_EPOCH,
        duration: Duration::from_millis(5),
        cause: HoldCause::Circuit,
    };
    let summary = run
        .attempts(&mut exec, &mut hooks, &mut fleet, vec![held])
        .ok()
        .unwrap();
    assert_eq!(summary.attempts.len(), 2);
    assert_eq!(summary.stopped_because, StopReason::Success);
    assert_eq!(summary.holds.len(), 1);
    assert_eq!(fakes.backoff.slept, [Duration::from_secs(1)]);
    assert!(fakes.pause.slept.is_empty());
    let budget = c.fleet.budget.as_ref().unwrap();
    let bound = Bound::signals_only();
    let target = c.fleet.state.as_ref().unwrap();
    let mut store = state::open_fleet_read_only(target, &bound).unwrap();
    let tokens = store.tokens(budget, &bound).unwrap();
    assert!((tokens - 9.1).abs() < 1e-9, "10 - 1 + 0.1: {tokens}");
}

#[test]
fn the_record_counts_a_failed_run_in_the_circuit_and_marks_no_key() {
    let tmp = tempfile::tempdir().unwrap();
    let state = state_arg(tmp.path());
    let c = config(&[
        "-a",
        "1",
        "--once",
        "k",
        "--circuit",
        "c",
        "--state",
        &state,
    ]);
    let mut fakes = Fakes::new();
    let mut exec = Scripted::new(&fakes.clock, vec![fail(3)]);
    let mut run = fakes.run(&c);
    let mut fleet = run.open_state().ok().unwrap();
    let mut held = run.gate().ok().unwrap();
    let mut hooks = Hooks::new(c.hooks.clone(), &c.run, &c.policy, limit_of(&c), None);
    let summary = run
        .attempts(&mut exec, &mut hooks, &mut fleet, Vec::new())
        .ok()
        .unwrap();
    let summary = run.record(&mut held, &mut fleet, summary);
    assert_eq!(summary.exit_code, ExitStatus::new(3));
    drop(held);
    let bound = Bound::signals_only();
    let target = c.fleet.state.as_ref().unwrap();
    let mut store = state::open_fleet_read_only(target, &bound).unwrap();
    let circuit = c.fleet.circuit.as_ref().unwrap();
    assert_eq!(store.circuit(circuit, &bound).unwrap().failures, 1);
    assert!(run.gate().is_ok(), "a run that gave up runs again");
}

#[test]
fn a_failing_hook_changes_nothing_of_the_run() {
    let c = config(&["-a", "1", "--on-give-up", "exit 3"]);
    let mut fakes = Fakes::new();
    let mut exec = Scripted::new(&fakes.clock, vec![fail(4)]);
    let mut run = fakes.run(&c);
    let mut fleet = run.open_state().ok().unwrap();
    let mut hooks = Hooks::new(c.hooks.clone(), &c.run, &c.policy, limit_of(&c), None);
    let summary = run
        .attempts(&mut exec, &mut hooks, &mut fleet, Vec::new())
        .ok()
        .unwrap();
    let after = run.hook(&mut hooks, summary.clone());
    assert_eq!(
        (after.exit_code, after.stopped_because, after.message),
        (summary.exit_code, summary.stopped_because, summary.message)
    );
}

#[test]
fn the_locks_are_released_and_the_report_is_written_last() {
    let tmp = tempfile::tempdir().unwrap();
    let state = state_arg(tmp.path());
    let lock = tmp.path().join("lock").display().to_string();
    let report = tmp.path().join("report.json");
    let args = ["--lock", &lock, "--state", &state, "--report"];
    let c = config(&[&args[..], &[report.to_str().unwrap()]].concat());
    let mut fakes = Fakes::new();
    let mut exec = Scripted::new(&fakes.clock, vec![ok()]);
    let end = fakes.run(&c).make(&mut exec).unwrap();
    assert_eq!(end.summary.stopped_because, StopReason::Success);
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(written["result"]["stopped_because"], "success");
    let bound = Bound::signals_only();
    let target = c.gate.lock.clone().unwrap();
    let mut again = state::open_lock(&target, c.gate.state.as_ref(), &bound).unwrap();
    assert!(again.try_acquire(&bound).unwrap(), "released");
}
