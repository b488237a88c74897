//! One run, as a sequence of named phases in the order docs/fleets.md gives: open the
//! state, the splay, the gate (lock, `--once` check), the circuit's admission, the
//! attempts, the record (the marker, then the budget's and circuit's updates), the
//! hook, the release of the locks, the report. Each phase can end the run with its
//! outcome ([`Ended`]). A plain invocation makes one run; a scheduler makes one per
//! slot with that slot's overrides ([`SlotRun`]). A traced run's trace is made as it
//! goes ([`RunTrace`]) and handed back finished with its end, to send after the
//! report. Building the configuration is `config`'s work, the retry loop `engine`'s,
//! the locks and markers [`gate`]'s, the budget, circuit and splay `fleet`'s, the
//! spans and their export `traces`'.

use serde_json::json;

use crate::clock::{SignalSleeper, SystemClock};
use crate::config::{Config, GateOptions, ReportTo, RunInfo, SlotGate, TargetConfig};
use crate::domain::{ExitStatus, Hold, Jitter, RunSummary, Stop, StopReason, TimeLimit};
use crate::engine::{self, Clock, RetryBudget, Sleeper};
use crate::exec::{self, Executor};
use crate::fleet::{self, Fleet};
use crate::gate::{self, Gate, HeldLocks, SkipWhy};
use crate::hooks::Hooks;
use crate::report::{self, ReportHeader};
use crate::signals;
use crate::state::{self, Backend, NoAnswer, Status};
use crate::traces::{self, RunTrace};

/// What a scheduled slot changes in a run.
pub struct SlotRun<'a> {
    /// `JOB@SLOT`: the `--once` key (the slot's claim) and the source of the idempotency key.
    pub key: String,
    /// Where the slot's record goes.
    pub state: Backend,
    /// The job's run lock under `--overlap`.
    pub gate: SlotGate,
    /// Whether the slot is claimed and recorded under its key (every slot but a
    /// crontab's `@reboot` run, which is each replica's own).
    pub claim: bool,
    /// Called once the slot's attempts begin (its gate and the circuit passed), with
    /// how long the run slept for `--splay`.
    pub started: &'a dyn Fn(std::time::Duration),
}

impl SlotRun<'_> {
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
    /// The run's trace, when it is traced and recorded: for its caller to send, last.
    pub trace: Option<traces::Finished>,
}

/// Makes the one run of a plain invocation and sends its trace (one warning if it
/// cannot be sent): its exit status.
pub fn run_and_trace(config: &Config) -> anyhow::Result<ExitStatus> {
    let mut end = one_run(config, None)?;
    if let Some(trace) = end.trace.take() {
        let sent = trace.send(signals::pending().is_some());
        if let Some(warning) = traces::Warnings::default().settle(&sent) {
            report::notice(&warning);
        }
    }
    Ok(end.summary.exit_code)
}

/// Makes one run, on the real clock.
pub fn one_run(config: &Config, slot: Option<&SlotRun<'_>>) -> anyhow::Result<RunEnd> {
    prepare(config, slot)?.make(config, slot)
}

/// A run's executor, made and prepared ahead of the run ([`Executor::prepare`]).
pub struct Prepared {
    info: RunInfo,
    exec: Box<dyn Executor>,
}

/// Makes the run's executor and what its first attempt needs; a slot's run calls it
/// before its slot's time.
pub fn prepare(config: &Config, slot: Option<&SlotRun<'_>>) -> anyhow::Result<Prepared> {
    let info = run_info(config, slot);
    let mut exec = exec::for_target(config.target.clone(), &info)?;
    exec.prepare();
    Ok(Prepared { info, exec })
}

impl Prepared {
    /// Makes the run `prepare` was given, on the real clock.
    pub fn make(self, config: &Config, slot: Option<&SlotRun<'_>>) -> anyhow::Result<RunEnd> {
        let Prepared { info, mut exec } = self;
        make_run(config, slot, &info, exec.as_mut())
    }
}

fn make_run(
    config: &Config,
    slot: Option<&SlotRun<'_>>,
    info: &RunInfo,
    exec: &mut dyn Executor,
) -> anyhow::Result<RunEnd> {
    // The run, and its time limit, start before the splay and the wait for a lock.
    let clock = SystemClock::new();
    let attempts = config.policy.attempts;
    let mut pause = SignalSleeper {
        countdown: false,
        attempts,
    };
    let mut backoff = SignalSleeper {
        countdown: config.countdown,
        attempts,
    };
    let waits = Waits {
        clock: &clock,
        pause: &mut pause,
        backoff: &mut backoff,
    };
    let trace = config
        .traces
        .as_ref()
        .map(|t| RunTrace::start(t, &config.target, slot.map(|s| s.key.as_str())));
    let mut run = Run::new(config, slot, info, waits);
    run.trace = trace;
    let mut end = run.make(exec)?;
    if let Some(trace) = run.trace.take() {
        end.trace = trace.finish(&end.summary, &run.hooks_ran);
    }
    Ok(end)
}

/// The run's settings with the slot's overrides applied.
fn run_info(config: &Config, slot: Option<&SlotRun<'_>>) -> RunInfo {
    let mut run = config.run.clone();
    if let Some(slot) = slot {
        run.idempotency_key = slot.idempotency_key();
    }
    run
}

/// How a run ends before its last phase: with an outcome to report (and, for a skip,
/// why), or with retry's own error (exit 125, no report).
enum Ended {
    Early {
        summary: RunSummary,
        skipped: Option<SkipWhy>,
    },
    Failed(anyhow::Error),
}

impl From<anyhow::Error> for Ended {
    fn from(err: anyhow::Error) -> Ended {
        Ended::Failed(err)
    }
}

/// The run's clock and its two sleepers: `pause` for the splay and the circuit's
/// holds, `backoff` (with the countdown on a terminal) for the engine's sleeps.
struct Waits<'a> {
    clock: &'a dyn Clock,
    pause: &'a mut dyn Sleeper,
    backoff: &'a mut dyn Sleeper,
}

/// What the phases of one run share.
struct Run<'a> {
    config: &'a Config,
    slot: Option<&'a SlotRun<'a>>,
    /// How long the run slept for `--splay`.
    splayed: std::time::Duration,
    info: &'a RunInfo,
    /// The scheduled-job options with the slot's overrides.
    gate: GateOptions,
    header: ReportHeader<'a>,
    seed: u64,
    /// The time limit (`--max-time`), counted from the run's start.
    limit: TimeLimit,
    waits: Waits<'a>,
    /// The run's trace, when it is traced.
    trace: Option<RunTrace>,
    /// The hooks that ran, for their spans.
    hooks_ran: Vec<crate::domain::HookRun>,
}

impl<'a> Run<'a> {
    fn new(
        config: &'a Config,
        slot: Option<&'a SlotRun<'a>>,
        info: &'a RunInfo,
        waits: Waits<'a>,
    ) -> Run<'a> {
        let shown = info.key_requested || matches!(config.target, TargetConfig::Command(_));
        let mut gate = config.gate.clone();
        if let Some(slot) = slot {
            gate.once = slot.claim.then(|| slot.key.clone());
            gate.state = Some(slot.state.clone());
            gate.statuses = slot.claim;
            gate.slot = Some(slot.gate.clone());
        }
        Run {
            header: ReportHeader {
                target: config.target_value(),
                mode: config.mode_name(),
                idempotency_key: shown.then_some(info.idempotency_key.as_str()),
            },
            seed: config.seed.unwrap_or_else(crate::domain::random_seed),
            config,
            slot,
            splayed: std::time::Duration::ZERO,
            info,
            gate,
            limit: TimeLimit::starting_now(config.policy.max_time),
            waits,
            trace: None,
            hooks_ran: Vec::new(),
        }
    }

    /// Makes the run; an early end is reported as the last phase would have.
    fn make(&mut self, exec: &mut dyn Executor) -> anyhow::Result<RunEnd> {
        match self.phases(exec) {
            Ok(summary) => Ok(RunEnd {
                summary,
                skipped: None,
                trace: None,
            }),
            Err(Ended::Early { summary, skipped }) => {
                finish_report(self.config.report.as_ref(), &self.header, &summary)?;
                Ok(RunEnd {
                    summary,
                    skipped,
                    trace: None,
                })
            }
            Err(Ended::Failed(err)) => Err(err),
        }
    }

    fn phases(&mut self, exec: &mut dyn Executor) -> Result<RunSummary, Ended> {
        let mut fleet = self.open_state()?;
        self.splay(&fleet)?;
        let mut held = self.gate()?;
        let mut hooks = Hooks::new(
            self.config.hooks.clone(),
            self.info,
            &self.config.policy,
            self.limit,
            self.header.idempotency_key,
        );
        if let Some(token) = held.fencing_token() {
            exec.set_fencing_token(token);
            hooks.set_fencing_token(token);
        }
        if let Some(trace) = &self.trace {
            hooks.set_trace(trace.span().clone());
        }
        let holds = self.admit(&mut fleet)?;
        if let Some(slot) = self.slot {
            (slot.started)(self.splayed);
        }
        let summary = self.attempts(exec, &mut hooks, &mut fleet, holds);
        self.hooks_ran = hooks.take_runs();
        let summary = self.record(&mut held, &mut fleet, summary?);
        let summary = self.hook(&mut hooks, summary);
        self.hooks_ran.extend(hooks.take_runs());
        let summary = self.release(held, summary);
        self.report(summary)
    }

    /// Opens the fleet's state; the time limit running out first ends the run.
    fn open_state(&self) -> Result<Fleet<'a>, Ended> {
        let config = self.config;
        Fleet::open(&config.fleet, config.run.nested, self.seed, &self.limit)
            .map_err(|err| self.out_of_time(err))
    }

    fn splay(&mut self, fleet: &Fleet<'_>) -> Result<(), Ended> {
        let left = self.limit.left(self.waits.clock.now());
        let began = self.waits.clock.now();
        let splayed = fleet.splay(left, self.waits.pause);
        self.splayed = self.waits.clock.now().saturating_sub(began);
        let splays = !self.config.fleet.splay.is_zero();
        if let Some(trace) = self.trace.as_mut().filter(|_| splays) {
            trace.waited("splay", self.splayed);
        }
        splayed.map_err(|stopped| self.stopped(stopped))
    }

    /// The lock and the `--once` check: the run goes ahead holding its locks, or is
    /// skipped, or was stopped while waiting.
    fn gate(&mut self) -> Result<HeldLocks, Ended> {
        let began = self.waits.clock.now();
        let gate = gate::prepare(&self.gate, &self.limit);
        let locked = self.gate.lock.is_some() || self.gate.slot.is_some();
        if let Some(trace) = self.trace.as_mut().filter(|_| locked) {
            trace.waited("lock", self.waits.clock.now().saturating_sub(began));
        }
        let gate = gate.map_err(|e| self.out_of_time(e))?;
        let (exit_code, reason, message, skipped) = match gate {
            Gate::Proceed(held) => return Ok(held),
            Gate::Skip {
                exit_code,
                message,
                why,
            } => (exit_code, StopReason::Skipped, message, Some(why)),
            Gate::Stopped { stop, message } => match stop {
                Stop::Signal(sig) => (
                    ExitStatus::of_signal(sig),
                    StopReason::Signal,
                    message,
                    None,
                ),
                Stop::LockLost(_) => (ExitStatus::USAGE, StopReason::LockLost, message, None),
            },
        };
        last_word(self.slot, &message);
        let summary = self.not_run(exit_code, reason, message);
        Err(Ended::Early { summary, skipped })
    }

    /// The circuit's admission; a slot it refuses is recorded as refused (every slot a
    /// scheduler handles gets a record).
    fn admit(&mut self, fleet: &mut Fleet<'_>) -> Result<Vec<Hold>, Ended> {
        let refused = match fleet.admit(self.waits.clock, self.waits.pause, &self.limit) {
            Ok(holds) => return Ok(holds),
            Err(refused) => refused,
        };
        let open = refused.reason == StopReason::CircuitOpen;
        let ended = self.stopped(refused);
        if let Some(slot) = self.slot.filter(|s| open && s.claim) {
            gate::record_slot(&slot.state, &slot.key, Status::Refused, &self.gate.command);
        }
        Err(ended)
    }

    /// The retry loop, its retry budget shared with the fleet; the circuit's holds come first
    /// in the summary.
    fn attempts(
        &mut self,
        exec: &mut dyn Executor,
        hooks: &mut Hooks,
        fleet: &mut Fleet<'_>,
        holds: Vec<Hold>,
    ) -> Result<RunSummary, Ended> {
        announce(self.config, &self.header);
        let seed = self.seed;
        if report::shows(2) {
            report::verbose(
                2,
                &format!("jitter seed {seed} (--seed {seed} repeats this schedule)"),
            );
        }
        let mut logger = logger(&self.header, self.slot.is_none());
        let mut budget = fleet.budget();
        let mut env = engine::Env {
            clock: self.waits.clock,
            limit: self.limit,
            sleeper: self.waits.backoff,
            jitter: &mut Jitter::new(seed),
            events: &mut logger,
            retry_hook: hooks,
            budget: budget.as_mut().map(|b| b as &mut dyn RetryBudget),
            trace: self.trace.as_ref().map(RunTrace::span),
        };
        let mut summary = Self::replaced(engine::run(exec, &self.config.policy, &mut env)?);
        summary.holds.splice(0..0, holds);
        Ok(summary)
    }

    /// The marker, then the budget's and circuit's updates, in one burst of store calls
    /// (one connection); a signal meanwhile ends the run with 128+N.
    fn record(
        &self,
        held: &mut HeldLocks,
        fleet: &mut Fleet<'_>,
        summary: RunSummary,
    ) -> RunSummary {
        let burst = state::Burst::begin();
        let mut summary = summary;
        if summary.stopped_because == StopReason::Success {
            summary = gate::record_success(held, summary);
        }
        if let Some(slot) = self.slot.filter(|s| s.claim) {
            let place = (&slot.state, slot.key.as_str());
            gate::record_gave_up(held, place, &summary, &self.gate.command);
        }
        fleet.record_run(&summary);
        drop(burst);
        stopped_after_the_attempts(summary, self.slot)
    }

    /// A run a newer slot replaced ended as for a lost lock: it ends as replaced.
    fn replaced(summary: RunSummary) -> RunSummary {
        if summary.stopped_because != StopReason::LockLost || !signals::replaced() {
            return summary;
        }
        RunSummary {
            stopped_because: StopReason::Replaced,
            ..summary
        }
    }

    /// `--on-success` or `--on-give-up`, after the updates and under the locks.
    fn hook(&self, hooks: &mut Hooks, summary: RunSummary) -> RunSummary {
        hooks.after_run(summary, |s| report::report_json(&self.header, s))
    }

    /// Frees the locks before the report is written, so that the report can say that a
    /// signal came during the release.
    fn release(&self, held: HeldLocks, summary: RunSummary) -> RunSummary {
        held.release();
        stopped_after_the_attempts(summary, self.slot)
    }

    fn report(&self, summary: RunSummary) -> Result<RunSummary, Ended> {
        let to = self.config.report.as_ref();
        Ok(final_report(to, &self.header, summary, self.slot)?)
    }

    /// A run that a fleet policy ended before its first attempt.
    fn stopped(&self, stopped: fleet::Stopped) -> Ended {
        last_word(self.slot, &stopped.message);
        let mut summary = self.not_run(stopped.exit_code, stopped.reason, stopped.message);
        summary.holds = stopped.holds;
        Ended::Early {
            summary,
            skipped: None,
        }
    }

    /// A call before the first attempt failed: when the time limit ended it, the run ends
    /// with 125 (report `max_time`); any other error stays an error.
    fn out_of_time(&self, err: anyhow::Error) -> Ended {
        if !matches!(err.downcast_ref::<NoAnswer>(), Some(NoAnswer::Deadline)) {
            return Ended::Failed(err);
        }
        let message = format!("{err:#}: --max-time ran out before the first attempt");
        report::error(&format!("{message}; exit status {}", ExitStatus::USAGE));
        let summary = self.not_run(ExitStatus::USAGE, StopReason::MaxTime, message);
        Ended::Early {
            summary,
            skipped: None,
        }
    }

    /// A run that ended before any attempt.
    fn not_run(
        &self,
        exit_code: ExitStatus,
        stopped_because: StopReason,
        message: String,
    ) -> RunSummary {
        RunSummary {
            attempts: Vec::new(),
            exit_code,
            stopped_because,
            message,
            elapsed: self.waits.clock.now(),
            holds: Vec::new(),
        }
    }
}

/// The engine's logger: JSON events carry the mode, the target and the key shown; the
/// run's last line is written here unless a scheduler's slot writes its own.
fn logger(header: &ReportHeader<'_>, final_line: bool) -> report::Logger {
    let context = match header.idempotency_key {
        Some(key) => {
            json!({ "mode": header.mode, "target": header.target, "idempotency_key": key })
        }
        None => json!({ "mode": header.mode, "target": header.target }),
    };
    report::Logger {
        context,
        final_line,
        holding: false,
    }
}

/// Writes the report of a run that made attempts, last of all; a stopping signal that
/// arrives while a report file is written ends the run with 128+N, and the file is
/// written again to say so (a report on stderr is printed once: it cannot be taken back).
fn final_report(
    to: Option<&ReportTo>,
    header: &ReportHeader<'_>,
    summary: RunSummary,
    slot: Option<&SlotRun<'_>>,
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

/// Says why a run ended before (or after) its attempts, as the run's last line; a
/// scheduled slot says it in its own end line instead (the `outcome` module of [`crate::schedule`]).
fn last_word(slot: Option<&SlotRun<'_>>, message: &str) {
    if slot.is_none() {
        report::notice(message);
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
        Some(ReportTo::File(path)) => {
            report::write_report(path, header, summary).map_err(|e| e.context("--report"))
        }
        Some(ReportTo::Stderr) => {
            report::report_to_stderr(header, summary);
            Ok(())
        }
        None => Ok(()),
    }
}

/// A stopping signal that arrived after the attempts (while the marker, a record, a
/// fleet update, the release or the report was being written) ends the run as a signal
/// does: 128+N.
fn stopped_after_the_attempts(summary: RunSummary, slot: Option<&SlotRun<'_>>) -> RunSummary {
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

#[cfg(test)]
mod tests;
