//! A crontab's job lines checked as a command line would be, fast: the options a line's
//! slot runs take (the command line's, the zone, the line's own) are checked by the one
//! command-line definition and configuration once per distinct set, not once per line,
//! so a long file of lines that share their options is checked in time linear in its
//! size; each line then costs its CRON, its name and the sizes an `exec` allows.

use std::collections::HashMap;
use std::ffi::OsString;

use super::Line;
use crate::cli;
use crate::config::{Config, ScheduleConfig};
use crate::domain::LogConfig;

/// The longest single argument Linux passes to a program (MAX_ARG_STRLEN, 32 pages,
/// its NUL included): a longer COMMAND can never be run by `sh -c`.
pub const MAX_ARGUMENT: usize = 131_071;
/// Room kept for what a slot's run adds to its command's environment (`RETRY_*`).
const ENVIRONMENT_ADDED: usize = 4096;

/// The checked options of each distinct set met so far.
pub struct Checker<'a> {
    log: &'a LogConfig,
    checked: HashMap<Vec<String>, Result<ScheduleConfig, String>>,
    /// What every slot's run inherits: this process's environment, in bytes as `exec` counts them.
    inherited: usize,
    arg_max: usize,
}

impl<'a> Checker<'a> {
    pub fn new(log: &'a LogConfig) -> Checker<'a> {
        let inherited = std::env::vars_os()
            .map(|(k, v)| exec_size(k.len() + 1 + v.len()))
            .sum();
        Checker {
            log,
            checked: HashMap::new(),
            inherited,
            arg_max: crate::sys::arg_max(),
        }
    }

    /// The schedule settings the options give, or what is wrong with them, checked once
    /// per distinct set (a line without `--job` has its name set by the caller).
    pub fn options(
        &mut self,
        options: &[String],
        shell: &[String; 2],
    ) -> Result<ScheduleConfig, String> {
        if let Some(known) = self.checked.get(options) {
            return known.clone();
        }
        let checked = check(options, shell, self.log);
        self.checked.insert(options.to_vec(), checked.clone());
        checked
    }

    /// Whether `exec` can start the line's slot run and its command: COMMAND within one
    /// argument's limit, and the arguments with the environment within `ARG_MAX`.
    pub fn sizes(
        &self,
        args: &[OsString],
        env: &[(String, String)],
        line: &Line,
    ) -> Result<(), String> {
        if line.command.len() > MAX_ARGUMENT {
            return Err(format!(
                "the command is {} bytes long, over the {MAX_ARGUMENT} bytes the system passes as one argument; put it in a script",
                line.command.len()
            ));
        }
        let args: usize = args.iter().map(|a| exec_size(a.len())).sum();
        let env: usize = env
            .iter()
            .map(|(k, v)| exec_size(k.len() + 1 + v.len()))
            .sum();
        let total = args + env + self.inherited + ENVIRONMENT_ADDED;
        if total > self.arg_max {
            return Err(format!(
                "the line's arguments and environment take {total} bytes, over the system's ARG_MAX of {}; shorten the line or its NAME=VALUE lines",
                self.arg_max
            ));
        }
        Ok(())
    }
}

/// What a string costs `exec`: its bytes, its NUL, and its pointer.
fn exec_size(len: usize) -> usize {
    len + 1 + std::mem::size_of::<usize>()
}

/// Checks `options` as a slot run of a job would take them, with a stand-in schedule
/// and command (the line's own are checked by the caller).
fn check(
    options: &[String],
    shell: &[String; 2],
    log: &LogConfig,
) -> Result<ScheduleConfig, String> {
    let mut argv: Vec<OsString> = vec!["retry".into()];
    argv.extend(options.iter().map(OsString::from));
    if !named(options) {
        argv.extend(["--job".into(), "crontab-line".into()]);
    }
    argv.extend(["--schedule", "@yearly", "--", &shell[0], &shell[1], "true"].map(OsString::from));
    let cli = cli::parse_overriding(argv.clone()).map_err(|e| cli::usage::line(&e, &argv))?;
    let config = Config::from_cli(cli, log).map_err(|e| format!("{e:#}"))?;
    config
        .schedule
        .ok_or_else(|| "no schedule in the line's options".to_string())
}

/// Whether `options` give the job a name (`--job`); otherwise the line names it.
pub fn named(options: &[String]) -> bool {
    options
        .iter()
        .any(|w| w == "--job" || w.starts_with("--job="))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh() -> [String; 2] {
        ["/bin/sh".into(), "-c".into()]
    }

    fn line(command: &str) -> Line {
        Line {
            number: 1,
            own: Vec::new(),
            command: command.into(),
            shell: sh(),
            random_delay: None,
        }
    }

    #[test]
    fn options_are_checked_once_per_set_and_a_wrong_one_names_its_flag() {
        let log = LogConfig::default();
        let mut checker = Checker::new(&log);
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let good = checker.options(&words(&["-a", "3"]), &sh()).unwrap();
        assert_eq!(good.job, "crontab-line", "named by the caller");
        let named = checker.options(&words(&["--job=nightly"]), &sh()).unwrap();
        assert_eq!(named.job, "nightly");
        let bad = checker
            .options(&words(&["--catch-up", "sometimes"]), &sh())
            .unwrap_err();
        assert!(bad.contains("--catch-up"), "{bad}");
        assert_eq!(checker.checked.len(), 3);
        assert!(checker.options(&words(&["-a", "3"]), &sh()).is_ok());
        assert_eq!(
            checker.checked.len(),
            3,
            "a set met again is not checked again"
        );
    }

    #[test]
    fn a_command_or_line_exec_cannot_pass_is_refused_with_its_size() {
        let log = LogConfig::default();
        let mut checker = Checker::new(&log);
        let long = "x".repeat(MAX_ARGUMENT + 1);
        let why = checker.sizes(&[], &[], &line(&long)).unwrap_err();
        assert!(why.contains("put it in a script"), "{why}");
        assert!(checker.sizes(&["retry".into()], &[], &line("true")).is_ok());
        checker.arg_max = 1000;
        let env = vec![("BIG".to_string(), "y".repeat(100))];
        let why = checker.sizes(&[], &env, &line("true")).unwrap_err();
        assert!(why.contains("ARG_MAX of 1000"), "{why}");
    }
}
