//! `retry`: run a command or an HTTP request, retrying only the failures that
//! another attempt could fix. `run` is the whole program: parse, build the
//! executor for the target, pass the scheduled-job gate, run the one retry loop,
//! write the report, and turn the outcome into an exit status.

mod classify;
mod cli;
mod clock;
mod config;
mod cron;
mod domain;
mod dry_run;
mod engine;
mod exec;
mod files;
mod fleet;
mod gate;
mod generate;
mod headers;
mod hooks;
mod parse;
mod report;
mod resolve;
mod run;
mod schedule;
mod signals;
mod spool;
mod state;
mod streams;
mod sys;
mod traces;
mod wait;

/// The clap definition, for tests that walk every option.
pub use cli::Cli;
/// For `main`, first: opens the null device on any of the standard streams that is
/// closed, as std does, so that no file retry opens later becomes the command's stdin,
/// stdout or stderr; a closed stdout is recorded (what retry writes there is lost, and
/// it must say so: curl's 23).
pub fn open_standard_streams() {
    if sys::open_standard_streams() {
        streams::record_closed_stdout();
    }
}

/// For `main`, while no other thread exists: writes to a closed pipe fail with EPIPE
/// instead of killing retry (std does the same; Windows has no SIGPIPE).
pub fn ignore_sigpipe() {
    sys::ignore_sigpipe();
}
/// For `main`, before any signal disposition changes: records what retry inherited,
/// which every command and hook it starts gets back.
pub use signals::record_inherited as record_inherited_signals;

/// Other tools' spellings of retry's options, public for the test that tries each.
pub use cli::spellings::{SPELLINGS, Spelling, When};

/// The parsers of outside input (flag values, lock and state targets, marker file
/// names, state records, HTTP header lines and wait headers, OpenTelemetry's values),
/// public for the property tests.
pub mod parsers {
    pub use crate::cli::signal_value as signal;
    pub use crate::parse::{attempts, duration, exit_codes, factor, positive_duration, statuses};

    /// `--lock` and `--state` targets, and `--once` marker file names.
    pub mod state {
        pub use crate::state::readers::{check_key, escape_key, key_from_file_name};
        pub use crate::state::{Backend, parse_lock_target, parse_state_target, parse_target};
    }

    /// The readers of state records: budget and circuit files, fencing counters and
    /// `--once` markers.
    pub mod records {
        pub use crate::state::readers::{
            Stored, parse_budget, parse_circuit, parse_counter, parse_marker,
        };
        pub use crate::state::{LATEST_MS, show_time};
    }

    /// OpenTelemetry's values: the OTLP endpoint, `key=value` lists and `TRACEPARENT`.
    pub mod traces {
        pub use crate::parse::{key_value_list, otlp_endpoint};

        /// A `TRACEPARENT` value as retry reads it, written back (`None`: refused).
        pub fn traceparent(text: &str) -> Option<String> {
            crate::domain::SpanContext::parse(text, None).map(|span| span.traceparent())
        }
    }

    /// `-H` lines and the wait headers a server sends.
    pub mod headers {
        pub use crate::headers::{
            EPOCH_THRESHOLD, HeaderAction, MAX_WAIT, check_name, delta_seconds, header_file,
            header_line, http_date, rate_limit_field, rate_limit_remaining, rate_limit_reset,
            retry_after,
        };
    }
}

use std::ffi::OsString;

use anyhow::Context;

use crate::config::{Config, TargetConfig};
use crate::domain::LogConfig;
use crate::domain::{ExitStatus, Interrupted};

/// retry's own failure (bad usage or value, state unreachable, lock lost): for `main`.
pub const USAGE_EXIT: u8 = ExitStatus::USAGE.code();

/// Runs retry with `args` (the program name first) and returns the exit status.
pub fn run<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    i32::from(run_args(args).code())
}

fn run_args<I, T>(args: I) -> ExitStatus
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let argv: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let cli = match cli::parse(argv.iter().cloned()) {
        Ok(cli) => cli,
        Err(err) => return clap_exit(err, &argv),
    };
    if let Some(kind) = cli.generate {
        return match generate::write(kind) {
            Ok(()) => ExitStatus::SUCCESS,
            Err(err) => fail(&err),
        };
    }
    let log = config::log_config(&cli);
    report::init(log.clone());
    if let Some(fd) = cli.scheduling.slot_log_fd {
        slot_run_log(fd);
    }
    if cli.scheduling.crontab.is_some() {
        return match run_crontab(cli, &argv, &log) {
            Ok(status) => status,
            Err(err) => fail(&err),
        };
    }
    match Config::from_cli(cli, &log).and_then(|config| run_config(config, &argv)) {
        Ok(status) => status,
        Err(err) => fail(&err),
    }
}

/// Help and version go to stdout with status 0; every other clap error is one line
/// in retry's own style (its control characters escaped, as every line's are) and 125.
fn clap_exit(err: clap::Error, args: &[OsString]) -> ExitStatus {
    use clap::error::ErrorKind;
    use std::io::Write;
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = err.print();
            ExitStatus::SUCCESS
        }
        _ => {
            let line = cli::usage::line(&err, args);
            let _ = writeln!(std::io::stderr(), "retry: {}", domain::one_line(&line));
            ExitStatus::USAGE
        }
    }
}

/// retry's own failure is 125; a wait that a stopping signal ended is 128+N.
fn fail(err: &anyhow::Error) -> ExitStatus {
    if let Some(Interrupted(sig)) = err.downcast_ref::<Interrupted>() {
        let status = ExitStatus::of_signal(*sig);
        report::notice(&format!("{err:#}; exit status {status}"));
        return status;
    }
    report::error(&format!("{err:#}"));
    ExitStatus::USAGE
}

/// A crontab's slot run writes its own lines to `--slot-log-fd`, the scheduler's stderr:
/// its command's output goes through the scheduler, labelled. The command does not get it.
fn slot_run_log(raw: i32) {
    if let Some(file) = sys::adopt_log(i64::from(raw)) {
        report::log_to(file);
    }
}

/// `retry --crontab FILE [OPTIONS]`: the file checked whole, then its dry run or its jobs.
fn run_crontab(cli: Cli, argv: &[OsString], log: &LogConfig) -> anyhow::Result<ExitStatus> {
    let path = cli.scheduling.crontab.clone().context("--crontab")?;
    // Refused as the command line's, not as the first job line's that inherits them.
    config::parse_targets(&cli)?;
    let base = config::crontab::job_options(argv.get(1..).unwrap_or_default());
    let tab = config::crontab::read(&path, &base, log)?;
    // Said once here; each slot's run reads the same values and keeps quiet.
    config::traces::say(config::traces::from_cli(&cli).1);
    if cli.output.dry_run {
        dry_run::crontab(&tab)?;
        return Ok(ExitStatus::SUCCESS);
    }
    signals::install().context("cannot install signal handlers")?;
    let reload = || config::crontab::read(&path, &base, log);
    let options = schedule::CrontabOptions {
        grace: cli.scheduling.grace,
        raw: cli.scheduling.job_output == Some(cli::JobOutput::Raw),
        metrics_listen: cli.scheduling.metrics_listen,
    };
    schedule::run_crontab(tab, &reload, options)
}

/// Runs what `config` describes; `argv` is the command line (a scheduler's slots take
/// its words again).
fn run_config(config: Config, argv: &[OsString]) -> anyhow::Result<ExitStatus> {
    if config.dry_run {
        dry_run::show(&config)?;
        return Ok(ExitStatus::SUCCESS);
    }
    let starts_processes = matches!(config.target, TargetConfig::Command(_)) || config.hooks.any();
    let slot_run = config
        .schedule
        .as_ref()
        .is_some_and(|plan| plan.run_slot.is_some());
    if slot_run {
        signals::install_for_slot()
    } else {
        signals::install()
    }
    .context("cannot install signal handlers")?;
    if starts_processes {
        // Processes that leave an attempt's or a hook's group (setsid, double fork) stay
        // retry's to end.
        if let Err(e) = exec::procs::become_subreaper() {
            report::verbose(1, &format!("cannot become a child subreaper: {e}"));
        }
        if !sys::PARENT_DEATH_SIGNAL {
            report::verbose(
                1,
                "no parent-death signal on this system: a command goes on if retry is killed with SIGKILL",
            );
        }
    }
    if let Some((plan, slot)) = config
        .schedule
        .as_ref()
        .and_then(|plan| plan.run_slot.map(|slot| (plan, slot)))
    {
        return Ok(schedule::run_slot(&config, plan, slot));
    }
    if let Some(plan) = &config.schedule {
        // Checked once up front, so a bad option is exit 125 at start, not an error at every slot.
        drop(exec::for_target(config.target.clone(), &config.run)?);
        return schedule::run(plan, argv.get(1..).unwrap_or_default());
    }
    run::run_and_trace(&config)
}
