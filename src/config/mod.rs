//! The typed configuration, built once from clap's `Cli`: every value parsed
//! into a type (enums, compiled patterns, parsed targets), the options checked
//! together and against the mode the target selects. Everything after this
//! module takes its own part of `Config`; nothing downstream sees clap, and this
//! module sees nothing downstream: it depends on `cli`, the readers of outside input
//! (`parse`, `headers`, `cron`, `files`, `spool`), the storage layer's target grammar
//! (`state`), `wait` and the bottom layers. It leaves running the attempts to the
//! executors and the gate to [`gate`](crate::gate).

mod command;
pub mod crontab;
pub mod fleet;
mod gate;
pub mod hooks;
pub mod http;
mod policy;
pub mod schedule;
pub mod traces;

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Context;
use serde_json::json;

pub use self::command::{CommandConfig, StdoutRule};
pub use self::gate::{GateOptions, SlotGate, parse_targets};
pub use self::hooks::HookConfig;
pub use self::http::HttpConfig;
pub use self::schedule::ScheduleConfig;
pub use self::traces::TraceConfig;
use crate::cli::Cli;
use crate::domain::{LogConfig, LogFormat, Policy};
use crate::files;

/// Everything a run needs, typed.
pub struct Config {
    pub target: TargetConfig,
    pub policy: Policy,
    pub run: RunInfo,
    /// Show a live countdown while sleeping (stderr is a terminal, text logs, not quiet).
    pub countdown: bool,
    pub gate: GateOptions,
    pub hooks: HookConfig,
    /// Retry budget, circuit breaker and splay (`--retry-budget`, `--circuit`, `--splay`).
    pub fleet: fleet::FleetConfig,
    pub report: Option<ReportTo>,
    pub dry_run: bool,
    /// `--seed`, or `None` for a random one.
    pub seed: Option<u64>,
    /// `--schedule` and its options: run once per slot instead of once.
    pub schedule: Option<ScheduleConfig>,
    /// Where the run's trace goes, when it is traced (`--otel`, `OTEL_*`).
    pub traces: Option<TraceConfig>,
}

/// Where `--report` goes: a file, written atomically, or stderr (`--report -`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReportTo {
    File(PathBuf),
    Stderr,
}

impl ReportTo {
    /// `-` is stderr, never a file named `-`; a file must be writable before anything runs.
    fn from_cli(cli: &Cli) -> anyhow::Result<Option<ReportTo>> {
        match &cli.output.report {
            None => Ok(None),
            Some(path) if path.as_os_str() == "-" => {
                if cli.scheduling.schedule.is_some() {
                    anyhow::bail!(
                        "--report -: under --schedule stderr is the scheduler's log, one timestamped line at a time; give --report FILE"
                    );
                }
                Ok(Some(ReportTo::Stderr))
            }
            Some(path) => {
                files::check_file_target("--report", path)?;
                Ok(Some(ReportTo::File(path.clone())))
            }
        }
    }
}

/// What every attempt of a run has in common, whatever the mode.
#[derive(Clone, Debug)]
pub struct RunInfo {
    /// The idempotency key: `--idempotency-key VALUE`, or one UUID v4 for the run.
    pub idempotency_key: String,
    /// Whether the user asked for a key with `--idempotency-key` (auto or a value).
    pub key_requested: bool,
    /// This retry's nesting level (RETRY_DEPTH as inherited; 0 at the top).
    pub depth: u32,
    /// Inside another retry without --allow-nested: one attempt only.
    pub nested: bool,
}

/// What the operands name, with that mode's settings.
#[derive(Clone)]
pub enum TargetConfig {
    Command(Box<CommandConfig>),
    Http(Box<HttpConfig>),
}

/// `--idempotency-key`: made once per run (`auto`) or given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyChoice {
    /// No flag: a UUID v4 is made for `RETRY_IDEMPOTENCY_KEY`, nothing is sent in HTTP mode.
    Default,
    Auto,
    Value(String),
}

impl KeyChoice {
    fn from_flag(flag: Option<&str>) -> KeyChoice {
        match flag {
            None => KeyChoice::Default,
            Some("auto") => KeyChoice::Auto,
            Some(value) => KeyChoice::Value(value.to_string()),
        }
    }
}

impl Config {
    /// `log` is the logging `log_config` read first from the same flags.
    pub fn from_cli(cli: Cli, log: &LogConfig) -> anyhow::Result<Config> {
        let depth = inherited_depth();
        let nested = depth >= 1 && !cli.timing.allow_nested;
        let key = KeyChoice::from_flag(cli.http.idempotency_key.as_deref());
        let run = RunInfo {
            idempotency_key: match &key {
                KeyChoice::Value(value) => value.clone(),
                KeyChoice::Default | KeyChoice::Auto => uuid::Uuid::new_v4().to_string(),
            },
            key_requested: key != KeyChoice::Default,
            depth,
            nested,
        };
        let countdown = std::io::stderr().is_terminal() && log.level >= 0 && !log.json;
        let report = ReportTo::from_cli(&cli)?;
        // --state is read by the markers, the fleet state and the scheduler.
        let (lock, state) = gate::targets(&cli)?;
        let gate = GateOptions::from_cli(&cli, lock, state.as_ref())?;
        let fleet = fleet::FleetConfig::from_cli(&cli, state.as_ref())?;
        let policy = policy::from_cli(&cli, nested)?;
        let hooks = HookConfig::from_cli(&cli);
        let (dry_run, seed) = (cli.output.dry_run, cli.timing.seed);
        let schedule = ScheduleConfig::from_cli(&cli, state.as_ref())?;
        let (traces, trace_warnings) = traces::from_cli(&cli);
        let mut target = TargetConfig::from_cli(cli, key)?;
        // Said after every check: a refused command line says nothing about telemetry.
        traces::say(trace_warnings);
        if let (Some(_), TargetConfig::Command(c)) = (&schedule, &mut target) {
            c.stdin = crate::domain::StdinMode::Null;
        }
        Ok(Config {
            target,
            policy,
            run,
            countdown,
            gate,
            hooks,
            fleet,
            report,
            dry_run,
            seed,
            schedule,
            traces,
        })
    }

    /// How the report and JSON logs name the target (a URL's user information redacted).
    pub fn target_value(&self) -> serde_json::Value {
        match &self.target {
            TargetConfig::Command(c) => {
                json!(
                    c.argv
                        .iter()
                        .map(|a| a.to_string_lossy())
                        .collect::<Vec<_>>()
                )
            }
            TargetConfig::Http(h) => json!(crate::domain::redact_url(&h.url)),
        }
    }

    pub fn mode_name(&self) -> &'static str {
        match self.target {
            TargetConfig::Command(_) => "command",
            TargetConfig::Http(_) => "http",
        }
    }
}

impl TargetConfig {
    /// A first operand starting with http:// or https:// is a request; anything else a command.
    fn from_cli(cli: Cli, key: KeyChoice) -> anyhow::Result<TargetConfig> {
        let first = cli.target.first().context("a COMMAND or URL is required")?;
        let lower = first.to_string_lossy().to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return Ok(TargetConfig::Command(Box::new(CommandConfig::from_cli(
                cli,
            )?)));
        }
        if let Some(extra) = cli.target.get(1) {
            anyhow::bail!(
                "{}: a second URL or operand after the URL; retry sends one request per run, so run one retry per URL",
                extra.to_string_lossy()
            );
        }
        let url = first
            .to_str()
            .context("the URL is not valid UTF-8")?
            .to_string();
        HttpConfig::from_cli(cli, url, key).map(|h| TargetConfig::Http(Box::new(h)))
    }
}

/// The deepest nesting level RETRY_DEPTH is read as.
const MAX_DEPTH: u32 = 1000;

/// RETRY_DEPTH as inherited; anything but a level from 0 to [`MAX_DEPTH`] counts as
/// the top level, with a warning.
fn inherited_depth() -> u32 {
    let Some(given) = std::env::var_os("RETRY_DEPTH") else {
        return 0;
    };
    let level = given.to_str().and_then(|v| v.trim().parse().ok());
    match level.filter(|level| *level <= MAX_DEPTH) {
        Some(level) => level,
        None => {
            crate::report::notice(&format!(
                "warning: RETRY_DEPTH '{}' is not a nesting level (0 to {MAX_DEPTH}); counting it as 0",
                given.to_string_lossy()
            ));
            0
        }
    }
}

/// Logging, read first so that errors in the rest of the flags are logged as asked.
pub fn log_config(cli: &Cli) -> LogConfig {
    let level = if cli.output.quiet > 0 {
        -(cli.output.quiet.min(2) as i8)
    } else {
        cli.output.verbose.min(5) as i8
    };
    let json = cli.output.log_format == LogFormat::Json;
    LogConfig {
        level,
        json,
        color: !json && color_wanted(),
        github: std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true"),
        // A scheduler's stderr is a container's log: each line says when.
        timestamps: cli.scheduling.schedule.is_some() || cli.scheduling.crontab.is_some(),
    }
}

/// Whether stderr is a terminal and colour is not turned off (NO_COLOR, TERM=dumb).
fn color_wanted() -> bool {
    std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

/// A command line as one line of text, for messages and the dry run (its words'
/// control characters escaped).
pub fn display_argv(argv: &[std::ffi::OsString]) -> String {
    let words: Vec<String> = argv
        .iter()
        .map(|a| crate::domain::one_line(&a.to_string_lossy()).into_owned())
        .collect();
    words.join(" ")
}
