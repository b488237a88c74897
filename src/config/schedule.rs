//! `--schedule` and its options, typed: the parsed CRON in its zone, the job's
//! name, the catch-up and overlap policies, where slot records live and where the
//! metrics are served.

use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::cli::Cli;
use crate::cron::{self, CronSchedule};
use crate::domain::{CatchUp, Overlap, StdinMode};
use crate::state::{self, Backend};

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
    /// `--metrics-listen`: where `/metrics` is served.
    pub metrics_listen: Option<std::net::SocketAddr>,
}

impl ScheduleConfig {
    /// `None` without `--schedule`; errors name the flag and what it accepts.
    /// `state` is `--state`, parsed once by the configuration.
    pub fn from_cli(cli: &Cli, state: Option<&Backend>) -> anyhow::Result<Option<ScheduleConfig>> {
        let Some(expression) = cli.schedule.clone() else {
            if let Some(addr) = cli.metrics_listen {
                anyhow::bail!(
                    "--metrics-listen {addr}: it serves a scheduler's metrics, and there is none without --schedule CRON"
                );
            }
            return Ok(None);
        };
        if cli.stdin_given && cli.stdin != StdinMode::Null {
            anyhow::bail!("--stdin: only null goes with --schedule (each slot's stdin is empty)");
        }
        let zone = cron::choose_zone(cli.tz.as_deref()).map_err(anyhow::Error::msg)?;
        let cron = CronSchedule::new(expression, zone);
        let state = match state {
            Some(state) => state.clone(),
            None => state::default_state()?,
        };
        let job = match &cli.job {
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
            catch_up: cli.catch_up,
            window: cli.catch_up_window,
            overlap: cli.overlap,
            grace: cli.grace,
            state,
            metrics_listen: cli.metrics_listen,
            run_slot: cli.run_slot,
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
