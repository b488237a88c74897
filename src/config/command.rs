//! Command mode's settings: the argv, the inputs of the classification rules (exit
//! code lists, the output patterns compiled once by clap, the profile asked for) and
//! the process-handling options. Building the rule tables from them is the command
//! executor's work.

use std::ffi::OsString;
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
    pub hold_stdout: bool,
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
            ("--retry-on-status", cli.retry_on_status.is_some()),
            ("--stop-on-status", cli.stop_on_status.is_some()),
        ];
        if let Some((flag, _)) = lists.iter().find(|(_, given)| *given) {
            let profile = profiles::pick(cli.profile, &cli.target[0]);
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
        Ok(CommandConfig {
            rules: RuleInputs {
                stop_on: cli.stop_on,
                retry_on: cli.retry_on,
                success_on: cli.success_on,
                stop_on_output: cli.stop_on_output,
                retry_on_output: cli.retry_on_output,
                success_on_output: cli.success_on_output,
                stop_on_status: cli.stop_on_status,
                retry_on_status: cli.retry_on_status,
                profile: cli.profile,
            },
            stdin: cli.stdin,
            hold_stdout: cli.hold_stdout,
            hold_stderr: cli.hold_stderr,
            kill_after: cli.kill_after,
            timeout_signal: cli.signal,
            preserve_status: cli.preserve_status,
            argv: cli.target,
        })
    }
}
