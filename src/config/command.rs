//! Command mode's settings: the argv, the inputs of the classification rules (exit
//! code lists, the output patterns compiled once by clap, the profile asked for) and
//! the process-handling options. Building the rule tables from them is the command
//! executor's work.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::time::Duration;

use regex::bytes::Regex;

use crate::classify::profiles;
use crate::cli::Cli;
use crate::domain::{ProfileName, StdinMode};
use crate::parse::CodeSet;

#[derive(Clone)]
pub struct CommandConfig {
    pub argv: Vec<OsString>,
    /// What the classification rules are built from.
    pub rules: RuleInputs,
    pub stdin: StdinMode,
    /// Whether each attempt's stdout is held until the final one is known, and why.
    pub stdout: StdoutRule,
    pub hold_stderr: bool,
    pub kill_after: Duration,
    /// `--signal`: what `--timeout` sends first.
    pub timeout_signal: crate::sys::Signal,
    /// `--preserve-status`: a timed-out attempt's own status instead of 124.
    pub preserve_status: bool,
}

/// What command mode's rules are built from: the exit code lists (`--stop-on`,
/// `--retry-on`, `--success-on`), the output patterns clap compiled
/// (`--stop-on-output`, `--retry-on-output`, `--success-on-output`) and the profile
/// asked for (`--profile`, where `auto` picks one from the command's name).
#[derive(Clone)]
pub struct RuleInputs {
    pub stop_on: Option<CodeSet>,
    pub retry_on: Option<CodeSet>,
    pub success_on: Option<CodeSet>,
    pub stop_on_output: Vec<Regex>,
    pub retry_on_output: Vec<Regex>,
    pub success_on_output: Vec<Regex>,
    /// `--stop-on-status`, `--retry-on-status`: for the status a tool prints (curl -f).
    pub stop_on_status: Option<CodeSet>,
    pub retry_on_status: Option<CodeSet>,
    pub profile: ProfileName,
}

impl CommandConfig {
    /// Refuses a status list for a command whose profile reads no HTTP status.
    pub fn from_cli(cli: Cli) -> anyhow::Result<CommandConfig> {
        let lists = [
            ("--retry-on-status", cli.http.retry_on_status.is_some()),
            ("--stop-on-status", cli.http.stop_on_status.is_some()),
        ];
        if let Some((flag, _)) = lists.iter().find(|(_, given)| *given) {
            let profile = profiles::pick(cli.classification.profile, &cli.target[0]);
            if !profile.shows_status() {
                anyhow::bail!(
                    "{flag}: in command mode it judges the HTTP status a tool prints (curl -f, \
                     wget, git), and the command '{}' has the {} profile, which reads none; \
                     give --profile curl (or wget, git) for a wrapper of one, or use --retry-on \
                     with exit codes",
                    cli.target[0].to_string_lossy(),
                    profile.name
                );
            }
        }
        let stdout = StdoutRule::from_cli(&cli);
        Ok(CommandConfig {
            rules: RuleInputs {
                stop_on: cli.classification.stop_on,
                retry_on: cli.classification.retry_on,
                success_on: cli.classification.success_on,
                stop_on_output: cli.classification.stop_on_output,
                retry_on_output: cli.classification.retry_on_output,
                success_on_output: cli.classification.success_on_output,
                stop_on_status: cli.http.stop_on_status,
                retry_on_status: cli.http.retry_on_status,
                profile: cli.classification.profile,
            },
            stdin: cli.process.stdin,
            stdout,
            hold_stderr: cli.process.hold_stderr,
            kill_after: cli.process.kill_after,
            timeout_signal: cli.process.signal,
            preserve_status: cli.process.preserve_status,
            argv: cli.target,
        })
    }
}

/// Whether each attempt's stdout is held (spooled, and only the final attempt's
/// written), and which rule says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StdoutRule {
    /// Streamed live, the default.
    Live,
    /// `--hold-stdout`.
    Asked,
    /// A wrapped curl or wget writing to a pipe or a file: held, so that a failed
    /// attempt's partial body never gets there before the good one.
    Wrapped { tool: &'static str },
    /// `--no-hold-stdout`: live, whatever the command.
    Declined,
    /// A wrapped curl or wget writing to a terminal or /dev/null, where a partial body
    /// does no harm: live.
    Harmless {
        tool: &'static str,
        to: &'static str,
    },
}

/// The profiles of the tools whose failed attempts leave a partial body on stdout.
const BODY_WRITERS: [&str; 2] = ["curl", "wget"];

impl StdoutRule {
    fn from_cli(cli: &Cli) -> StdoutRule {
        if cli.process.hold_stdout {
            return StdoutRule::Asked;
        }
        if cli.process.no_hold_stdout {
            return StdoutRule::Declined;
        }
        let profile = profiles::pick(cli.classification.profile, &cli.target[0]).name;
        let Some(tool) = BODY_WRITERS.into_iter().find(|t| *t == profile) else {
            return StdoutRule::Live;
        };
        let out = crate::sys::std_stream(1);
        if std::io::stdout().is_terminal() {
            StdoutRule::Harmless {
                tool,
                to: "a terminal",
            }
        } else if crate::sys::is_null_device(out) {
            StdoutRule::Harmless {
                tool,
                to: "/dev/null",
            }
        } else {
            StdoutRule::Wrapped { tool }
        }
    }

    pub fn holds(self) -> bool {
        matches!(self, StdoutRule::Asked | StdoutRule::Wrapped { .. })
    }

    /// The dry run's line, when a rule decides.
    pub fn describe(self) -> Option<String> {
        Some(match self {
            StdoutRule::Live => return None,
            StdoutRule::Asked => {
                "held (--hold-stdout): only the final attempt's stdout is written".into()
            }
            StdoutRule::Wrapped { tool } => format!(
                "held: {tool} writes to a pipe or a file, where a failed attempt's partial body \
                 must not come before the good one; only the final attempt's stdout is written \
                 (--no-hold-stdout streams it live)"
            ),
            StdoutRule::Declined => "live (--no-hold-stdout): each attempt's stdout is written \
                 as it comes, a failed attempt's partial output included"
                .into(),
            StdoutRule::Harmless { tool, to } => format!(
                "live: {tool} writes to {to}, where a partial body does no harm (to a pipe or a \
                 file it would be held)"
            ),
        })
    }
}
