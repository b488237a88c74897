//! `retry`: run a command or an HTTP request, retrying only the failures that
//! another attempt could fix. `run` is the whole program: parse, build the
//! executor for the target, pass the scheduled-job gate, run the one retry loop,
//! write the report, and turn the outcome into an exit status.

pub mod backoff;
pub mod classify;
pub mod cli;
pub mod clock;
pub mod dry_run;
pub mod engine;
pub mod exec;
pub mod generate;
pub mod io;
pub mod jobs;
pub mod parse;
pub mod report;
pub mod signals;

use std::ffi::OsString;
use std::io::IsTerminal;

use anyhow::Context;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use crate::backoff::Schedule;
use crate::cli::{Cli, LogFormat};
use crate::engine::{Executor, Policy, RunSummary, StopReason};
use crate::exec::RunInfo;
use crate::exec::command::CommandExecutor;
use crate::exec::http::HttpExecutor;
use crate::report::{LogConfig, ReportHeader};

/// retry's own failure: bad usage or value, lock or state store unreachable.
pub const EXIT_USAGE: i32 = 125;

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
    report::init(log_config(&cli));
    match run_cli(&cli) {
        Ok(status) => status,
        Err(err) => fail(&err),
    }
}

/// Help and version go to stdout with status 0; every other clap error is 125.
fn clap_exit(err: clap::Error) -> i32 {
    use clap::error::ErrorKind;
    let status = match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => 0,
        _ => EXIT_USAGE,
    };
    let _ = err.print();
    status
}

fn fail(err: &anyhow::Error) -> i32 {
    report::error(&format!("{err:#}"));
    EXIT_USAGE
}

fn log_config(cli: &Cli) -> LogConfig {
    let level = if cli.quiet > 0 {
        -(cli.quiet.min(2) as i8)
    } else {
        cli.verbose.min(5) as i8
    };
    let json = cli.log_format == LogFormat::Json;
    LogConfig {
        level,
        json,
        color: !json && report::color_wanted(),
        github: std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true"),
    }
}

/// What the operands name.
pub enum Target {
    Command(Vec<OsString>),
    Url(String),
}

impl Target {
    pub fn from_operands(operands: &[OsString]) -> anyhow::Result<Target> {
        let first = operands.first().context("a COMMAND or URL is required")?;
        let text = first.to_string_lossy();
        let lower = text.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return Ok(Target::Command(operands.to_vec()));
        }
        if let Some(extra) = operands.get(1) {
            anyhow::bail!(
                "unexpected argument {:?} after the URL; options go before the URL and only one URL is taken",
                extra
            );
        }
        let url = first.to_str().context("the URL is not valid UTF-8")?;
        Ok(Target::Url(url.to_string()))
    }

    fn mode(&self) -> &'static str {
        match self {
            Target::Command(_) => "command",
            Target::Url(_) => "http",
        }
    }

    fn report_value(&self) -> serde_json::Value {
        match self {
            Target::Command(argv) => {
                json!(argv.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>())
            }
            Target::Url(url) => json!(exec::http::shown_url(url)),
        }
    }
}

/// RETRY_DEPTH as inherited; anything unreadable counts as the top level.
fn inherited_depth() -> u32 {
    std::env::var("RETRY_DEPTH")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn run_info(cli: &Cli, depth: u32, attempts: u32) -> RunInfo {
    let idempotency_key = match cli.idempotency_key.as_deref() {
        Some(key) if key != "auto" => key.to_string(),
        _ => uuid::Uuid::new_v4().to_string(),
    };
    RunInfo {
        idempotency_key,
        key_requested: cli.idempotency_key.is_some(),
        depth,
        attempts,
        max_time: cli.max_time,
    }
}

pub fn policy(cli: &Cli, attempts: u32) -> Policy {
    Policy {
        attempts,
        timeout: cli.timeout,
        max_time: cli.max_time,
        schedule: Schedule {
            kind: cli.backoff,
            base: cli.delay,
            cap: cli.max_delay,
            factor: cli.factor,
            jitter: cli.jitter,
        },
        max_wait_hint: cli.max_retry_after,
    }
}

fn job_options(cli: &Cli) -> jobs::JobOptions {
    jobs::JobOptions {
        lock: cli.lock.clone(),
        lock_wait: cli.lock_wait,
        busy_exit: cli.busy_exit,
        once: cli.once.clone(),
        state: cli.state.clone(),
        command: cli
            .target
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
    }
}

/// The executor for the target, with every option checked before anything runs.
enum Built {
    Command(CommandExecutor),
    Http(HttpExecutor),
}

impl Built {
    fn executor(&mut self) -> &mut dyn Executor {
        match self {
            Built::Command(e) => e,
            Built::Http(e) => e,
        }
    }

    fn rules(&self) -> Vec<String> {
        match self {
            Built::Command(e) => e.rules(),
            Built::Http(e) => e.rules(),
        }
    }

    fn notes(&self) -> Vec<String> {
        match self {
            Built::Command(e) => e.notes(),
            Built::Http(_) => Vec::new(),
        }
    }
}

fn run_cli(cli: &Cli) -> anyhow::Result<i32> {
    let target = Target::from_operands(&cli.target)?;
    if let (Target::Command(argv), Some(flag)) = (&target, cli::curl::request_option_given(cli)) {
        anyhow::bail!(
            "{flag} is an HTTP-mode option, but the target {:?} selected command mode \
             (a URL starting with http:// or https:// selects HTTP mode)",
            argv[0]
        );
    }
    let depth = inherited_depth();
    let nested = depth >= 1 && !cli.allow_nested;
    // Only one layer retries: inside another retry, make one attempt and let it decide.
    let attempts = if nested { 1 } else { cli.attempts };
    let info = run_info(cli, depth, attempts);
    let policy = policy(cli, attempts);
    if let Some(path) = &cli.report {
        report::check_file_target("--report", path)?;
    }
    let report_path = cli.report.as_deref();
    let jobs = job_options(cli);
    jobs.validate()?;
    let mut built = match &target {
        Target::Command(argv) => Built::Command(CommandExecutor::new(cli, argv, &info)?),
        Target::Url(url) => Built::Http(HttpExecutor::new(cli, url, &info)?),
    };
    if cli.dry_run {
        let text = dry_run::render(
            cli,
            &target,
            &policy,
            &built.notes(),
            &built.rules(),
            nested,
        );
        print!("{text}");
        return Ok(0);
    }
    signals::install().context("cannot install signal handlers")?;
    let header = ReportHeader {
        target: target.report_value(),
        mode: target.mode(),
        idempotency_key: (cli.idempotency_key.is_some() || matches!(target, Target::Command(_)))
            .then_some(info.idempotency_key.as_str()),
    };
    let mut held = match jobs::prepare(&jobs)? {
        jobs::Gate::Proceed(held) => held,
        jobs::Gate::Skip { exit_code, message } => {
            report::notice(&message);
            if let Some(path) = &report_path {
                report::write_report(path, &header, &skipped(exit_code, message))?;
            }
            return Ok(exit_code);
        }
    };
    if nested {
        report::info(&format!(
            "running inside another retry (RETRY_DEPTH={depth}): one attempt only, the outer retry decides; \
             --allow-nested retries here too"
        ));
    }
    if let Some(key) = header.idempotency_key.filter(|_| report::shows(1)) {
        report::verbose(1, &format!("idempotency key: {key}"));
    }
    let summary = run_engine(cli, built.executor(), &policy, &header)?;
    if summary.stopped_because == StopReason::Success {
        held.record_success(&summary)?;
    }
    if let Some(path) = &report_path {
        report::write_report(path, &header, &summary)?;
    }
    Ok(summary.exit_code)
}

fn run_engine(
    cli: &Cli,
    exec: &mut dyn Executor,
    policy: &Policy,
    header: &ReportHeader<'_>,
) -> anyhow::Result<RunSummary> {
    let seed = cli.seed.unwrap_or_else(rand::random);
    if report::shows(2) {
        report::verbose(
            2,
            &format!("jitter seed {seed} (--seed {seed} repeats this schedule)"),
        );
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let clock = clock::SystemClock::new();
    let countdown =
        std::io::stderr().is_terminal() && cli.quiet == 0 && cli.log_format == LogFormat::Text;
    let mut sleeper = clock::SignalSleeper {
        countdown,
        limit: policy.attempts,
    };
    let mut logger = report::Logger {
        context: match header.idempotency_key {
            Some(key) => {
                json!({ "mode": header.mode, "target": header.target, "idempotency_key": key })
            }
            None => json!({ "mode": header.mode, "target": header.target }),
        },
    };
    let mut env = engine::Env {
        clock: &clock,
        sleeper: &mut sleeper,
        rng: &mut rng,
        events: &mut logger,
    };
    engine::run(exec, policy, &mut env)
}

fn skipped(exit_code: i32, message: String) -> RunSummary {
    RunSummary {
        attempts: Vec::new(),
        exit_code,
        stopped_because: StopReason::Skipped,
        message,
        elapsed: std::time::Duration::ZERO,
    }
}
