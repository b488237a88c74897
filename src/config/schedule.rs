//! `--schedule` and its options, typed: the parsed CRON in its zone, the job's
//! name, the catch-up and overlap policies, where slot records live and where the
//! metrics are served.

use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::cli::Cli;
use crate::cron::{self, CronSchedule};
use crate::domain::{CatchUp, Overlap, StdinMode};
use crate::state::{self, Backend};

/// A scheduled job as its scheduler runs it: the schedule, and the words of each slot's
/// run of `retry` (the scheduler puts its `--run-slot SLOT` first), with the environment
/// a crontab gives it. A crontab line or a `--schedule` command line is read into one
/// once; each slot's run parses its words again in a process of its own.
#[derive(Clone, Debug)]
pub struct Job {
    pub schedule: ScheduleConfig,
    /// The slot run's arguments after the program's name: its options, `--` and what it
    /// runs (a crontab line's COMMAND as `SHELL -c COMMAND`).
    pub args: Vec<std::ffi::OsString>,
    /// `NAME=VALUE` lines above the job in a crontab.
    pub env: Vec<(String, String)>,
    /// The crontab line it was read from (`None`: the command line's `--schedule`).
    pub line: Option<Line>,
}

/// What the dry run and messages say of a crontab line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// Its number (from 1).
    pub number: usize,
    /// Its own options (over the command line's).
    pub own: Vec<String>,
    /// COMMAND, as the shell gets it.
    pub command: String,
    /// The shell that runs COMMAND (`SHELL=`, else `/bin/sh`), with its flag.
    pub shell: [String; 2],
    /// `RANDOM_DELAY=`'s minutes above it, when one is in force (a `--splay` of its own).
    pub random_delay: Option<u32>,
}

impl Job {
    /// How messages name the job: its name and, for a crontab's, its line.
    pub fn describe(&self) -> String {
        match &self.line {
            Some(line) => format!("job {} (line {})", self.schedule.job, line.number),
            None => format!("job {}", self.schedule.job),
        }
    }

    /// Whether a reload leaves the job as it was: its name, schedule, words and environment.
    pub fn same_as(&self, other: &Job) -> bool {
        self.schedule.job == other.schedule.job
            && self.schedule.cron.text == other.schedule.cron.text
            && self.args == other.args
            && self.env == other.env
    }
}

#[derive(Clone, Debug)]
pub struct ScheduleConfig {
    pub cron: CronSchedule,
    pub job: String,
    pub catch_up: CatchUp,
    pub window: Duration,
    pub overlap: Overlap,
    /// `--grace`: how long a running slot may go on after SIGINT or SIGTERM.
    pub grace: Duration,
    /// Where slot records live (the default state directory when `--state` is not given).
    pub state: Backend,
    /// `--run-slot`: run this one slot of a crontab's job, and exit.
    pub run_slot: Option<jiff::Timestamp>,
    /// The slot run is a catch-up of a missed slot (the scheduler's hidden `--caught-up`).
    pub caught_up: bool,
    /// `--metrics-listen`: where `/metrics` is served.
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// `--job-output labelled` under `--schedule` (a crontab's default).
    pub labelled: bool,
}

impl ScheduleConfig {
    /// `None` without `--schedule`; errors name the flag and what it accepts.
    /// `state` is `--state`, parsed once by the configuration.
    pub fn from_cli(cli: &Cli, state: Option<&Backend>) -> anyhow::Result<Option<ScheduleConfig>> {
        let Some(expression) = cli.scheduling.schedule.clone() else {
            if let Some(addr) = cli.scheduling.metrics_listen {
                anyhow::bail!(
                    "--metrics-listen {addr}: it serves a scheduler's metrics, and there is none without --schedule CRON"
                );
            }
            return Ok(None);
        };
        if cli.process.stdin_given && cli.process.stdin != StdinMode::Null {
            anyhow::bail!("--stdin: only null goes with --schedule (each slot's stdin is empty)");
        }
        let zone = cron::choose_zone(cli.scheduling.tz.as_deref()).map_err(anyhow::Error::msg)?;
        let cron = CronSchedule::new(expression, zone);
        // A crontab's @reboot line runs each of its slots' runs with it; alone it names no time.
        if cron.is_reboot() && cli.scheduling.run_slot.is_none() {
            anyhow::bail!(
                "--schedule: '@reboot' names no time; run the command before the scheduler starts (in the container's entrypoint or the service's ExecStartPre), or put it in a crontab, where @reboot runs once at each start of the scheduler"
            );
        }
        let state = match state {
            Some(state) => state.clone(),
            None => state::default_state()?,
        };
        let job = match &cli.scheduling.job {
            Some(name) => name.clone(),
            None => default_job_name(&cli.target),
        };
        // The longest slot key: JOB@YYYY-MM-DDTHH:MM:SSZ.
        state
            .check_key(&format!("{job}@2000-01-01T00:00:00Z"))
            .map_err(|e| anyhow::anyhow!("--job: {e}"))?;
        Ok(Some(ScheduleConfig {
            cron,
            job,
            catch_up: cli.scheduling.catch_up,
            window: cli.scheduling.catch_up_window,
            overlap: cli.scheduling.overlap,
            grace: cli.scheduling.grace,
            state,
            metrics_listen: cli.scheduling.metrics_listen,
            run_slot: cli.scheduling.run_slot,
            caught_up: cli.scheduling.caught_up,
            labelled: cli.scheduling.job_output == Some(crate::cli::JobOutput::Labelled),
        }))
    }
}

/// The command's base name (or the URL's host), `-`, and the first 8 hex digits of
/// the SHA-256 of the whole command line, so two different jobs never share slots.
pub fn default_job_name(target: &[std::ffi::OsString]) -> String {
    let words: Vec<String> = target
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let first = words.first().map(String::as_str).unwrap_or("job");
    let base = match first.split_once("://") {
        Some((_, rest)) => {
            let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
            let host_port = authority.rsplit('@').next().unwrap_or(authority);
            host_port.split(':').next().unwrap_or(host_port).to_string()
        }
        None => first.rsplit('/').next().unwrap_or(first).to_string(),
    };
    let base: String = base.chars().filter(|c| !matches!(c, '@' | '/')).collect();
    let digest = Sha256::digest(words.join("\0").as_bytes());
    let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{hex}", if base.is_empty() { "job" } else { &base })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(args: &[&str]) -> String {
        default_job_name(&args.iter().map(Into::into).collect::<Vec<_>>())
    }

    #[test]
    fn default_job_names_show_the_command_and_tell_command_lines_apart() {
        let a = name(&["/usr/bin/backup", "--full"]);
        let b = name(&["/usr/bin/backup", "--incremental"]);
        assert!(
            a.starts_with("backup-") && a.len() == "backup-".len() + 8,
            "{a}"
        );
        assert_ne!(a, b);
        assert_eq!(a, name(&["/usr/bin/backup", "--full"]));
        let url = name(&["https://user:pw@api.example.test:8443/ping"]);
        assert!(url.starts_with("api.example.test-"), "{url}");
    }
}
