//! `retry`: run a command or an HTTP request, retrying only the failures that
//! another attempt could fix. `run` is the whole program: parse, build the
//! executor for the target, pass the scheduled-job gate, run the one retry loop,
//! write the report, and turn the outcome into an exit status.

mod backoff;
mod classify;
mod cli;
mod clock;
mod config;
mod dry_run;
mod engine;
mod exec;
mod exit;
mod generate;
mod hooks;
mod io;
mod jobs;
mod parse;
mod report;
mod signals;

/// The clap definition, for tests that walk every option.
pub use cli::Cli;

/// The parsers of outside input (flag values, lock and state targets, marker file
/// names, HTTP header lines and wait headers), public for the property tests.
pub mod parsers {
    pub use crate::parse::{attempts, duration, exit_codes, factor, positive_duration, statuses};

    /// `--lock` and `--state` targets, and `--once` marker file names.
    pub mod jobs {
        pub use crate::jobs::file::{check_key, escape_key, key_from_file_name};
        pub use crate::jobs::{Backend, parse_lock_target, parse_state_target, parse_target};
    }

    /// `-H` lines and the wait headers a server sends.
    pub mod headers {
        pub use crate::exec::http_headers::{
            EPOCH_THRESHOLD, HeaderAction, MAX_WAIT, check_name, delta_seconds, header_file,
            header_line, http_date, rate_limit_field, rate_limit_remaining, rate_limit_reset,
            retry_after,
        };
    }
}

use std::ffi::OsString;

use anyhow::Context;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use crate::config::{Config, TargetConfig};
use crate::engine::{Policy, RunSummary, StopReason};
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
        TargetConfig::Http(config) => Box::new(HttpExecutor::new(*config, run)?),
    })
}

fn run_config(config: Config) -> anyhow::Result<i32> {
    let header_target = config.target_value();
    let mode = config.mode_name();
    let shown_key = config.shown_key().map(str::to_string);
    let is_command = matches!(config.target, TargetConfig::Command(_));
    let mut exec = executor(config.target, &config.run)?;
    if config.dry_run {
        let text = dry_run::render(&config.policy, &config.run, !is_command, &exec.describe());
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
    let mut hooks = hooks::Hooks::new(config.hooks, &config.run, header.idempotency_key);
    // The run, and its --max-time budget, start before the wait for a lock.
    let clock = clock::SystemClock::new();
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
        seed: config.seed,
        countdown: config.countdown,
        header: &header,
        clock: &clock,
    };
    let mut summary = run_engine(exec.as_mut(), &engine_setup, &mut hooks)?;
    if summary.stopped_because == StopReason::Success {
        match held.confirm() {
            Ok(()) => held.record_success(&summary)?,
            Err(lost) => summary = lost_after_success(summary, &lost),
        }
    }
    // After the marker, budget and circuit updates; before the report (SPEC: the order of a run).
    let summary = hooks.after_run(summary, |s| report::report_json(&header, s));
    finish_report(report_path, &header, summary)
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
    seed: Option<u64>,
    countdown: bool,
    header: &'a ReportHeader<'a>,
    clock: &'a clock::SystemClock,
}

fn run_engine(
    exec: &mut dyn Executor,
    setup: &EngineSetup<'_>,
    hooks: &mut hooks::Hooks,
) -> anyhow::Result<RunSummary> {
    let seed = setup.seed.unwrap_or_else(rand::random);
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
        retry_hook: hooks,
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
