//! `retry`: run a command or an HTTP request, retrying only the failures that
//! another attempt could fix. `run` is the whole program: parse, build the
//! executor for the target, pass the scheduled-job gate, run the one retry loop,
//! write the report, and turn the outcome into an exit status.

pub mod backoff;
pub mod classify;
pub mod cli;
pub mod clock;
pub mod config;
pub mod curl;
pub mod dry_run;
pub mod engine;
pub mod exec;
pub mod exit;
pub mod fleet;
pub mod generate;
pub mod io;
pub mod jobs;
pub mod parse;
pub mod report;
pub mod signals;

use std::ffi::OsString;

use anyhow::Context;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use crate::config::fleet::{CircuitConfig, FleetConfig};
use crate::config::{Config, TargetConfig};
use crate::engine::{Policy, RetryBudget, RunSummary, StopReason};
use crate::exec::command::CommandExecutor;
use crate::exec::http::HttpExecutor;
use crate::exec::{Executor, RunInfo};
use crate::exit::ExitCode;
use crate::report::ReportHeader;

/// retry's own failure (bad usage or value, state unreachable, lock lost): for `main`.
pub const USAGE_EXIT: u8 = ExitCode::USAGE as u8;

/// Runs retry with `args` (the program name first) and returns the exit status.
pub fn run<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match cli::parse(args) {
        Ok(cli) => cli,
        Err(err) => return clap_exit(err),
    };
    if let Some(kind) = cli.generate {
        return match generate::write(kind) {
            Ok(()) => 0,
            Err(err) => fail(&err),
        };
    }
    report::init(config::log_config(&cli));
    match Config::from_cli(cli).and_then(run_config) {
        Ok(status) => status,
        Err(err) => fail(&err),
    }
}

/// Help and version go to stdout with status 0; every other clap error is 125.
fn clap_exit(err: clap::Error) -> i32 {
    use clap::error::ErrorKind;
    let status = match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => 0,
        _ => ExitCode::USAGE,
    };
    let _ = err.print();
    status
}

fn fail(err: &anyhow::Error) -> i32 {
    report::error(&format!("{err:#}"));
    ExitCode::USAGE
}

/// The executor for the target, with every option checked before anything runs.
fn executor(target: TargetConfig, run: &RunInfo) -> anyhow::Result<Box<dyn Executor>> {
    Ok(match target {
        TargetConfig::Command(config) => Box::new(CommandExecutor::new(*config, run)),
        TargetConfig::Http(config) => Box::new(HttpExecutor::new(&config.cli, &config.url, run)?),
    })
}

fn run_config(config: Config) -> anyhow::Result<i32> {
    let header_target = config.target_value();
    let mode = config.mode_name();
    let shown_key = config.shown_key().map(str::to_string);
    let is_command = matches!(config.target, TargetConfig::Command(_));
    let mut exec = executor(config.target, &config.run)?;
    let seed = config.seed.unwrap_or_else(rand::random);
    if config.dry_run {
        let mut text = dry_run::render(&config.policy, &config.run, !is_command, &exec.describe());
        text += &dry_run::fleet(&config.fleet, config.seed, config.run.nested);
        print!("{text}");
        return Ok(0);
    }
    signals::install().context("cannot install signal handlers")?;
    if is_command {
        // Processes that leave the attempt's group (setsid, double fork) stay retry's to end.
        if let Err(e) = exec::procs::become_subreaper() {
            report::verbose(1, &format!("cannot become a child subreaper: {e}"));
        }
    }
    let header = ReportHeader {
        target: header_target,
        mode,
        idempotency_key: shown_key.as_deref(),
    };
    let report_path = config.report.as_deref();
    // The run, and its --max-time budget, start before the splay and the wait for a lock.
    let clock = clock::SystemClock::new();
    // A nested run leaves the fleet's accounting to the outer one.
    let mut fleet = match (&config.fleet.state, config.run.nested) {
        (Some(target), false) => Some(fleet::Fleet::new(fleet::open(target)?)),
        _ => None,
    };
    if let Err(message) = splay(&config.fleet, seed, config.policy.max_time) {
        let (exit_code, message) = message;
        report::notice(&message);
        let summary = not_run(exit_code, StopReason::Signal, message, &clock);
        return finish_report(report_path, &header, summary);
    }
    let mut held = match jobs::prepare(&config.jobs)? {
        jobs::Gate::Proceed(held) => held,
        jobs::Gate::Skip { exit_code, message } => {
            report::notice(&message);
            let summary = not_run(exit_code, StopReason::Skipped, message, &clock);
            return finish_report(report_path, &header, summary);
        }
        jobs::Gate::Stopped { stop, message } => {
            report::notice(&message);
            let (exit_code, reason) = match stop {
                signals::Stop::Signal(sig) => (ExitCode::signal(sig), StopReason::Signal),
                signals::Stop::LockLost(_) => (ExitCode::USAGE, StopReason::LockLost),
            };
            let summary = not_run(exit_code, reason, message, &clock);
            return finish_report(report_path, &header, summary);
        }
    };
    if let Some(token) = held.fencing_token() {
        exec.set_fencing_token(token);
    }
    let circuit = config.fleet.circuit.as_ref();
    if let (Some(c), Some(f)) = (circuit, fleet.as_mut()) {
        if let Some((exit_code, message)) = admit(f, c) {
            report::notice(&message);
            let summary = not_run(exit_code, StopReason::CircuitOpen, message, &clock);
            return finish_report(report_path, &header, summary);
        }
    }
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
    let engine_setup = EngineSetup {
        policy: &config.policy,
        seed,
        countdown: config.countdown,
        header: &header,
        clock: &clock,
    };
    let mut summary = {
        let budget = match (&config.fleet.budget, fleet.as_mut()) {
            (Some(b), Some(f)) => Some(f.budget(b)),
            _ => None,
        };
        run_engine(exec.as_mut(), &engine_setup, budget)?
    };
    if summary.stopped_because == StopReason::Success {
        match held.confirm() {
            Ok(()) => held.record_success(&summary)?,
            Err(lost) => summary = lost_after_success(summary, &lost),
        }
    }
    if let (Some(c), Some(f)) = (circuit, fleet.as_mut()) {
        // A run stopped by a signal counts for nothing; every other ending but success is a failed run.
        if summary.stopped_because != StopReason::Signal {
            f.record_run(c, summary.stopped_because == StopReason::Success);
        }
    }
    finish_report(report_path, &header, summary)
}

/// Sleeps the `--splay` (never past `--max-time`); a stopping signal ends it at once
/// with the exit status and message to give.
fn splay(
    fleet: &FleetConfig,
    seed: u64,
    max_time: Option<std::time::Duration>,
) -> Result<(), (i32, String)> {
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
            parse::human(delay),
            parse::human(fleet.splay)
        ),
    );
    signals::sleep_or_stop(delay).map_err(|stop| {
        let sig = match stop {
            signals::Stop::Signal(sig) => sig,
            signals::Stop::LockLost(_) => 0,
        };
        let exit_code = ExitCode::signal(sig);
        let message = format!(
            "stopped by {} during the --splay sleep; exit status {exit_code}",
            exit::signal_name(sig)
        );
        (exit_code, message)
    })
}

/// Asks the circuit whether the run may go ahead: `Some` (exit status, message) when
/// it is open. Claiming the probe is said aloud.
fn admit(fleet: &mut fleet::Fleet, c: &CircuitConfig) -> Option<(i32, String)> {
    match fleet.admit(c) {
        fleet::Admission::Closed => None,
        fleet::Admission::Probe => {
            report::info(&format!(
                "circuit {} was open and its cooldown is over: this run is the probe",
                c.name
            ));
            None
        }
        fleet::Admission::Open { until_ms, failures } => Some((
            i32::from(c.exit),
            format!(
                "circuit {} is open until {} after {failures} failed runs in a row: not running",
                c.name,
                fleet::show_time(until_ms)
            ),
        )),
    }
}

/// Writes the report, if asked for, and gives the run's exit status.
fn finish_report(
    path: Option<&std::path::Path>,
    header: &ReportHeader<'_>,
    summary: RunSummary,
) -> anyhow::Result<i32> {
    if let Some(path) = path {
        report::write_report(path, header, &summary)?;
    }
    Ok(summary.exit_code)
}

/// The last attempt succeeded, but a lock was lost before its success could count.
fn lost_after_success(summary: RunSummary, lost: &str) -> RunSummary {
    let message = format!("{lost}; the success is not recorded");
    report::error(&format!("{message}; exit status {}", ExitCode::USAGE));
    RunSummary {
        exit_code: ExitCode::USAGE,
        stopped_because: StopReason::LockLost,
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
}

fn run_engine(
    exec: &mut dyn Executor,
    setup: &EngineSetup<'_>,
    mut budget: Option<fleet::SharedBudget<'_>>,
) -> anyhow::Result<RunSummary> {
    let seed = setup.seed;
    if report::shows(2) {
        report::verbose(
            2,
            &format!("jitter seed {seed} (--seed {seed} repeats this schedule)"),
        );
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
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
    };
    let mut env = engine::Env {
        clock: setup.clock,
        sleeper: &mut sleeper,
        rng: &mut rng,
        events: &mut logger,
        budget: budget.as_mut().map(|b| b as &mut dyn RetryBudget),
    };
    engine::run(exec, setup.policy, &mut env)
}

/// A run that ended at the gate, before any attempt.
fn not_run(
    exit_code: i32,
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
    }
}
