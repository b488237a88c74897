//! Command mode's settings: the argv, the classification rules with the output
//! patterns compiled once, the profile picked, and the process-handling options.

use std::ffi::OsString;
use std::time::Duration;

use crate::classify::{command::CommandRules, command::OutputWatch, profiles, profiles::Profile};
use crate::cli::Cli;
use crate::domain::StdinMode;

#[derive(Clone)]
pub struct CommandConfig {
    pub argv: Vec<OsString>,
    pub rules: CommandRules,
    /// The output patterns and the profile's stderr phrases, compiled.
    pub watch: OutputWatch,
    /// `--stop-on-output` and `--retry-on-output` as given, for `--dry-run`.
    pub stop_patterns: Vec<String>,
    pub retry_patterns: Vec<String>,
    pub stdin: StdinMode,
    pub hold_stdout: bool,
    pub kill_after: Duration,
}

impl CommandConfig {
    pub fn from_cli(cli: Cli) -> anyhow::Result<CommandConfig> {
        let profile: &'static Profile = profiles::pick(cli.profile, &cli.target[0]);
        let pattern_text =
            |res: &[regex::bytes::Regex]| res.iter().map(|r| r.as_str().to_string()).collect();
        let stop_patterns = pattern_text(&cli.stop_on_output);
        let retry_patterns = pattern_text(&cli.retry_on_output);
        let watch = OutputWatch::new(cli.stop_on_output, cli.retry_on_output, profile)?;
        Ok(CommandConfig {
            rules: CommandRules {
                stop_on: cli.stop_on,
                retry_on: cli.retry_on,
                success_on: cli.success_on,
                profile,
            },
            watch,
            stop_patterns,
            retry_patterns,
            stdin: cli.stdin,
            hold_stdout: cli.hold_stdout,
            kill_after: cli.kill_after,
            argv: cli.target,
        })
    }
}
