//! One run, in the order the README gives: the gate (lock, `--once` check), the
//! attempts, the marker, the hook, the release, the report. A plain invocation makes one; a scheduler
//! makes one per slot with that slot's overrides ([`SlotRun`]). Building the
//! configuration is `config`'s job, the retry loop `engine`'s.

use serde_json::json;

use crate::config::{Config, ReportTo, RunInfo, TargetConfig, fleet::FleetConfig};
use crate::domain::{
    CircuitConfig, ExitStatus, Hold, HoldCause, Policy, RunSummary, Signal, Stop, StopReason,
    Throttled,
};
use crate::engine::{self, RetryBudget};
use crate::exec::{self, Executor};
use crate::hooks::Hooks;
use crate::jobs::{self, SkipWhy};
use crate::report::{self, ReportHeader};
use crate::state::{self, Backend, LockLost, NoAnswer, Status};
use crate::{clock, fleet, signals};

/// What a scheduled slot changes in a run.
#[derive(Clone, Debug)]
pub struct SlotRun {
    /// `JOB@SLOT`: the `--once` key and the source of the idempotency key.
    pub key: String,
    /// Where the slot's record goes.
    pub state: Backend,
}

impl SlotRun {
    /// The idempotency key of the slot: a UUID v5 of `JOB@SLOT`, the same on every rerun.
    pub fn idempotency_key(&self) -> String {
        uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, self.key.as_bytes()).to_string()
    }
}

/// How one run ended.
pub struct RunEnd {
    pub summary: RunSummary,
    /// Set when the gate skipped the run.
    pub skipped: Option<SkipWhy>,
}

/// The run's settings with the slot's overrides applied.
fn run_info(config: &Config, slot: Option<&SlotRun>) -> RunInfo {
    let mut run = config.run.clone();
    if let Some(slot) = slot {
        run.idempotency_key = slot.idempotency_key();
    }
    run
}

/// Makes one run: the gate, the attempts, the record and the report.
pub fn one_run(config: &Config, slot: Option<&SlotRun>) -> anyhow::Result<RunEnd> {
    let run = run_info(config, slot);
    let mut exec = exec::for_target(config.target.clone(), &run)?;
    let shown = run.key_requested || matches!(config.target, TargetConfig::Command(_));
    let header = ReportHeader {
        target: config.target_value(),
        mode: config.mode_name(),
        idempotency_key: shown.then_some(run.idempotency_key.as_str()),
    };
    let mut job_options = config.jobs.clone();
    if let Some(slot) = slot {
        job_options.once = Some(slot.key.clone());
        job_options.state = Some(slot.state.clone());
        job_options.statuses = true;
    }
    let report_path = config.report.as_ref();
    let mut hooks = Hooks::new(config.hooks.clone(), &run, header.idempotency_key);
    let seed = config.seed.unwrap_or_else(crate::domain::random_seed);
    // The run, and its --max-time budget, start before the splay and the wait for a lock.
    let clock = clock::SystemClock::new();
    let run_deadline = config
        .policy
        .max_time
        .and_then(|t| std::time::Instant::now().checked_add(t));
    let end_early = |summary: RunSummary, skipped: Option<SkipWhy>| {
        finish_report(report_path, &header, &summary)?;
        anyhow::Ok(RunEnd { summary, skipped })
    };
    // A nested run leaves the fleet's accounting to the outer one.
    let mut fleet = match (&config.fleet.state, config.run.nested) {
        (Some(target), false) => {
            match fleet::open(
                &config.fleet,
                target,
                &crate::wait::Bound::until(run_deadline),
            ) {
                Ok(store) => Some(fleet::Fleet::new(store, run_deadline)),
                Err(err) => return end_early(out_of_time(err, &clock)?, None),
            }
        }
        _ => None,
    };
    if let Err((exit_code, message)) = splay(&config.fleet, seed, config.policy.max_time) {
        last_word(slot, &message);
        return end_early(
            not_run(exit_code, StopReason::Signal, message, &clock),
            None,
        );
    }
    let gate = match jobs::prepare(&job_options, run_deadline) {
        Ok(gate) => gate,
        Err(err) => return end_early(out_of_time(err, &clock)?, None),
    };
    let mut held = match gate {
        jobs::Gate::Proceed(held) => held,
        jobs::Gate::Skip {
            exit_code,
            message,
            why,
        } => {
            last_word(slot, &message);
            let summary = not_run(exit_code, StopReason::Skipped, message, &clock);
            return end_early(summary, Some(why));
        }
        jobs::Gate::Stopped { stop, message } => {
            last_word(slot, &message);
            let (exit_code, reason) = match stop {
                crate::domain::Stop::Signal(sig) => {
                    (ExitStatus::of_signal(sig), StopReason::Signal)
                }
                crate::domain::Stop::LockLost(_) => (ExitStatus::USAGE, StopReason::LockLost),
            };
            return end_early(not_run(exit_code, reason, message, &clock), None);
        }
    };
    if let Some(token) = held.fencing_token() {
        exec.set_fencing_token(token);
        hooks.set_fencing_token(token);
    }
    let circuit = config.fleet.circuit.as_ref();
    let mut circuit_holds = Vec::new();
    let holding = CircuitHolds {
        throttled: config.fleet.throttled,
        seed,
        run_deadline,
    };
    let refused = match (circuit, fleet.as_mut()) {
        (Some(c), Some(f)) => holding.admit(f, c, &mut circuit_holds),
        _ => None,
    };
    if let Some((exit_code, reason, message)) = refused {
        last_word(slot, &message);
        let mut summary = not_run(exit_code, reason, message, &clock);
        summary.holds = circuit_holds;
        if let Some(slot) = slot.filter(|_| reason == StopReason::CircuitOpen) {
            record_refused(slot, &job_options.command);
        }
        return end_early(summary, None);
    }
    announce(config, &header);
    let engine_setup = EngineSetup {
        policy: &config.policy,
        seed,
        countdown: config.countdown,
        header: &header,
        clock: &clock,
        final_line: slot.is_none(),
    };
    let mut summary = {
        let budget = match (&config.fleet.budget, fleet.as_mut()) {
            (Some(b), Some(f)) => Some(f.budget(b)),
            _ => None,
        };
        run_engine(exec.as_mut(), &engine_setup, &mut hooks, budget)?
    };
    summary.holds.splice(0..0, circuit_holds);
    // The marker, the records and the circuit's update share one connection.
    let burst = state::Burst::begin();
    if summary.stopped_because == StopReason::Success {
        summary = record_success(&mut held, summary);
    }
    if let Some(slot) = slot {
        record_gave_up(&mut held, slot, &summary, &job_options.command);
    }
    if let (Some(c), Some(f)) = (circuit, fleet.as_mut()) {
        if counts_for_circuit(&summary) {
            f.record_run(c, summary.succeeded());
        }
    }
    drop(burst);
    // A signal during the marker, the records or the updates ends the run with 128+N.
    let summary = stopped_after_the_attempts(summary, slot);
    // After the marker, budget and circuit updates, under the locks.
    let summary = hooks.after_run(summary, |s| report::report_json(&header, s));
    // Released before the report is written, so that the report can say that a signal
    // came during the release.
    held.release();
    let summary = stopped_after_the_attempts(summary, slot);
    let summary = final_report(report_path, &header, summary, slot)?;
    Ok(RunEnd {
        summary,
        skipped: None,
    })
}

/// Writes the report of a run that made attempts, last of all; a stopping signal that
/// arrives while a report file is written ends the run with 128+N, and the file is
/// written again to say so (a report on stderr is printed once: it cannot be taken back).
fn final_report(
    to: Option<&ReportTo>,
    header: &ReportHeader<'_>,
    summary: RunSummary,
    slot: Option<&SlotRun>,
) -> anyhow::Result<RunSummary> {
    finish_report(to, header, &summary)?;
    if !matches!(to, Some(ReportTo::File(_))) {
        return Ok(summary);
    }
    let written = summary.stopped_because;
    let summary = stopped_after_the_attempts(summary, slot);
    if summary.stopped_because != written {
        finish_report(to, header, &summary)?;
    }
    Ok(summary)
}

/// Whether a run counts for its circuit: every ending does (success closes it, any other
/// is a failed run) but a signal's and one on an attempt retry could not start for lack
/// of resources, which says nothing of the service.
fn counts_for_circuit(summary: &RunSummary) -> bool {
    let unstarted = summary
        .attempts
        .last()
        .is_some_and(|last| last.outcome.lacked_resources());
    summary.stopped_because != StopReason::Signal && !unstarted
}

/// Says why a run ended before (or after) its attempts, as the run's last line; a
/// scheduled slot says it in its own end line instead (`schedule::outcome`).
fn last_word(slot: Option<&SlotRun>, message: &str) {
    if slot.is_none() {
        report::notice(message);
    }
}

/// A slot that ran and did not succeed is recorded as gave up (an interrupted one is
/// not: it has no end, so it counts as missed).
fn record_gave_up(
    held: &mut jobs::HeldLocks,
    slot: &SlotRun,
    summary: &RunSummary,
    command: &[String],
) {
    if matches!(
        summary.stopped_because,
        StopReason::Success | StopReason::Signal
    ) {
        return;
    }
    // A lost lock took the store's connection with it: record on a fresh one.
    let recorded = held
        .record_end(Status::GaveUp, summary)
        .or_else(|_| jobs::record_status(&slot.state, &slot.key, Status::GaveUp, command));
    if let Err(err) = recorded {
        report::error(&format!("{err:#}"));
    }
}

fn announce(config: &Config, header: &ReportHeader<'_>) {
    if config.run.nested {
        report::info(&format!(
            "running inside another retry (RETRY_DEPTH={}): one attempt only, the outer retry decides; \
             --allow-nested retries here too",
            config.run.depth
        ));
    }
    if let Some(key) = header.idempotency_key.filter(|_| report::shows(1)) {
        report::verbose(1, &format!("idempotency key: {key}"));
    }
}

/// Writes the report, if asked for.
fn finish_report(
    to: Option<&ReportTo>,
    header: &ReportHeader<'_>,
    summary: &RunSummary,
) -> anyhow::Result<()> {
    match to {
        Some(ReportTo::File(path)) => report::write_report(path, header, summary),
        Some(ReportTo::Stderr) => {
            report::report_to_stderr(header, summary);
            Ok(())
        }
        None => Ok(()),
    }
}

/// Records the success under the run's locks: a lock lost first (or a lease found gone
/// by the statement that records) is exit 125 `lock_lost`; a marker that cannot be
/// written is exit 125 saying a later run will run the command again.
fn record_success(held: &mut jobs::HeldLocks, summary: RunSummary) -> RunSummary {
    if let Err(lost) = held.confirm() {
        return lost_after_success(summary, &lost);
    }
    match held.record_success(&summary) {
        Ok(()) => summary,
        Err(err) if err.downcast_ref::<LockLost>().is_some() => {
            let lost = err
                .downcast_ref::<LockLost>()
                .map(ToString::to_string)
                .unwrap_or_default();
            lost_after_success(summary, &format!("the command succeeded but {lost}"))
        }
        Err(err) => {
            let message = format!(
                "{err:#}; the command succeeded but its success could not be recorded, so a later run will run it again"
            );
            report::error(&format!("{message}; exit status {}", ExitStatus::USAGE));
            RunSummary {
                exit_code: ExitStatus::USAGE,
                message,
                ..summary
            }
        }
    }
}

/// The last attempt succeeded, but a lock was lost before its success could count.
fn lost_after_success(summary: RunSummary, lost: &str) -> RunSummary {
    let message = format!("{lost}; the success is not recorded");
    report::error(&format!("{message}; exit status {}", ExitStatus::USAGE));
    RunSummary {
        exit_code: ExitStatus::USAGE,
        stopped_because: StopReason::LockLost,
        message,
        ..summary
    }
}

/// A call before the first attempt failed: when `--max-time` ended it, the run ends
/// with 125 (report `max_time`); any other error stays an error.
fn out_of_time(err: anyhow::Error, clock: &clock::SystemClock) -> anyhow::Result<RunSummary> {
    let ran_out = matches!(err.downcast_ref::<NoAnswer>(), Some(NoAnswer::Deadline));
    if !ran_out {
        return Err(err);
    }
    let message = format!("{err:#}: --max-time ran out before the first attempt");
    report::error(&format!("{message}; exit status {}", ExitStatus::USAGE));
    Ok(not_run(
        ExitStatus::USAGE,
        StopReason::MaxTime,
        message,
        clock,
    ))
}

/// A stopping signal that arrived after the attempts (while the marker, a record, a
/// fleet update, the release or the report was being written) ends the run as a signal
/// does: 128+N.
fn stopped_after_the_attempts(summary: RunSummary, slot: Option<&SlotRun>) -> RunSummary {
    let Some(sig) = signals::pending() else {
        return summary;
    };
    if summary.stopped_because == StopReason::Signal {
        return summary;
    }
    let exit_code = ExitStatus::of_signal(sig);
    let message = format!(
        "stopped by {sig} after the last attempt ({}); exit status {exit_code}",
        summary.message
    );
    last_word(slot, &message);
    RunSummary {
        exit_code,
        stopped_because: StopReason::Signal,
        message,
        ..summary
    }
}

/// What the engine needs besides the executor.
struct EngineSetup<'a> {
    policy: &'a Policy,
    seed: u64,
    countdown: bool,
    header: &'a ReportHeader<'a>,
    clock: &'a clock::SystemClock,
    /// The engine's logger writes the run's last line (not a scheduled slot's).
    final_line: bool,
}

fn run_engine(
    exec: &mut dyn Executor,
    setup: &EngineSetup<'_>,
    hooks: &mut Hooks,
    mut budget: Option<fleet::SharedBudget<'_>>,
) -> anyhow::Result<RunSummary> {
    let seed = setup.seed;
    if report::shows(2) {
        report::verbose(
            2,
            &format!("jitter seed {seed} (--seed {seed} repeats this schedule)"),
        );
    }
    let mut jitter = crate::domain::Jitter::new(seed);
    let mut sleeper = clock::SignalSleeper {
        countdown: setup.countdown,
        limit: setup.policy.attempts,
    };
    let header = setup.header;
    let mut logger = report::Logger {
        context: match header.idempotency_key {
            Some(key) => {
                json!({ "mode": header.mode, "target": header.target, "idempotency_key": key })
            }
            None => json!({ "mode": header.mode, "target": header.target }),
        },
        final_line: setup.final_line,
        holding: false,
    };
    let mut env = engine::Env {
        clock: setup.clock,
        sleeper: &mut sleeper,
        jitter: &mut jitter,
        events: &mut logger,
        retry_hook: hooks,
        budget: budget.as_mut().map(|b| b as &mut dyn RetryBudget),
    };
    engine::run(exec, setup.policy, &mut env)
}

/// A run that ended at the gate, before any attempt.
fn not_run(
    exit_code: ExitStatus,
    stopped_because: StopReason,
    message: String,
    clock: &clock::SystemClock,
) -> RunSummary {
    use engine::Clock;
    RunSummary {
        attempts: Vec::new(),
        exit_code,
        stopped_because,
        message,
        elapsed: clock.now(),
        holds: Vec::new(),
    }
}

/// Sleeps the `--splay` (never past `--max-time`); a stopping signal ends it at once
/// with the exit status and message to give.
fn splay(
    fleet: &FleetConfig,
    seed: u64,
    max_time: Option<std::time::Duration>,
) -> Result<(), (ExitStatus, String)> {
    let mut delay = fleet::splay_delay(fleet.splay, seed);
    if let Some(max) = max_time {
        delay = delay.min(max);
    }
    if delay.is_zero() {
        return Ok(());
    }
    report::verbose(
        1,
        &format!(
            "splay: sleeping {} before the first attempt (up to {}, --seed {seed})",
            crate::domain::human(delay),
            crate::domain::human(fleet.splay)
        ),
    );
    crate::wait::sleep_or_stop(delay).map_err(|stop| {
        let sig = match stop {
            crate::domain::Stop::Signal(sig) => sig,
            crate::domain::Stop::LockLost(_) => Signal::new(0),
        };
        let exit_code = ExitStatus::of_signal(sig);
        let message = format!("stopped by {sig} during the --splay sleep; exit status {exit_code}");
        (exit_code, message)
    })
}

/// How a run treats an open circuit: `--throttled wait` holds it.
struct CircuitHolds {
    throttled: Throttled,
    seed: u64,
    run_deadline: Option<std::time::Instant>,
}

impl CircuitHolds {
    /// Asks the circuit whether the run may go ahead, as [`admitted`] says; under
    /// `--throttled wait` an open circuit holds the run (listed in `holds`) and it asks
    /// again, unless the hold would end past `--max-time`: the run then ends as
    /// `--throttled exit` would have ended it.
    fn admit(
        &self,
        fleet: &mut fleet::Fleet,
        c: &CircuitConfig,
        holds: &mut Vec<Hold>,
    ) -> Option<(ExitStatus, StopReason, String)> {
        let mut rng = fleet::hold_rng(self.seed);
        loop {
            let asked = fleet.admit(c);
            let until_ms = match asked {
                Ok(state::Admission::Open { until_ms, .. })
                    if self.throttled == Throttled::Wait =>
                {
                    until_ms
                }
                _ => return admitted(asked, c),
            };
            let hold = fleet::circuit_hold(until_ms, state::now_ms(), c.cooldown, &mut rng);
            let ends = std::time::Instant::now().checked_add(hold);
            if self
                .run_deadline
                .is_some_and(|d| ends.is_none_or(|e| e > d))
            {
                return admitted(asked, c).map(|(code, reason, message)| {
                    let message =
                        format!("{message}; --max-time ends before it would be asked again");
                    (code, reason, message)
                });
            }
            report::info(&format!(
                "circuit {} is open until {}: holding the run {}, sending nothing",
                c.name,
                state::show_time(until_ms),
                crate::domain::human(hold)
            ));
            let (started_at, began) = (std::time::SystemTime::now(), std::time::Instant::now());
            let slept = crate::wait::sleep_or_stop(hold);
            holds.push(Hold {
                started_at,
                duration: began.elapsed(),
                cause: HoldCause::Circuit,
            });
            match slept {
                Ok(()) => {}
                Err(Stop::Signal(sig)) => {
                    let exit_code = ExitStatus::of_signal(sig);
                    let message = format!(
                        "stopped by {sig} while held by circuit {}; exit status {exit_code}",
                        c.name
                    );
                    return Some((exit_code, StopReason::Signal, message));
                }
                Err(Stop::LockLost(message)) => {
                    return Some((ExitStatus::USAGE, StopReason::LockLost, message));
                }
            }
        }
    }
}

/// What the circuit's answer means for the run: `Some` (exit status, reason, message)
/// when it is open, or when `--max-time` or a signal ended the asking. Claiming the
/// probe is said aloud.
fn admitted(
    asked: Result<state::Admission, fleet::Halt>,
    c: &CircuitConfig,
) -> Option<(ExitStatus, StopReason, String)> {
    match asked {
        Ok(state::Admission::Closed) => None,
        Ok(state::Admission::Probe) => {
            report::info(&format!(
                "circuit {} was open and its cooldown is over: this run is the probe",
                c.name
            ));
            None
        }
        Ok(state::Admission::Open { until_ms, failures }) => Some((
            c.exit,
            StopReason::CircuitOpen,
            format!(
                "circuit {} is open until {} after {failures} failed run{} in a row: not running; exit status {}",
                c.name,
                state::show_time(until_ms),
                if failures == 1 { "" } else { "s" },
                c.exit
            ),
        )),
        Err(fleet::Halt::OutOfTime(why)) => Some((
            ExitStatus::USAGE,
            StopReason::MaxTime,
            format!(
                "{why}: --max-time ran out before the first attempt; exit status {}",
                ExitStatus::USAGE
            ),
        )),
        Err(fleet::Halt::Signal(sig)) => Some((
            ExitStatus::of_signal(sig),
            StopReason::Signal,
            format!(
                "stopped by {sig} while asking circuit {}; exit status {}",
                c.name,
                ExitStatus::of_signal(sig)
            ),
        )),
    }
}

/// A slot the open circuit refused is recorded as refused (SPEC: every slot a
/// scheduler handles gets a record).
fn record_refused(slot: &SlotRun, command: &[String]) {
    if let Err(err) = jobs::record_status(&slot.state, &slot.key, Status::Refused, command) {
        report::error(&format!("{err:#}"));
    }
}
