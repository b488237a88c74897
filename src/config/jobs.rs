//! The scheduled-job settings (`--lock`, `--lock-wait`, `--busy-exit`, `--once`,
//! `--state`, `--lease-ttl`), with the targets clap parsed checked against each other.
//! Taking locks and recording markers is `jobs`' job.

use std::time::Duration;

use crate::cli::Cli;
use crate::domain::ExitStatus;
use crate::state::{self, Backend};

/// The scheduled-job settings, with lock and state targets parsed and checked.
#[derive(Clone, Debug)]
pub struct JobOptions {
    pub lock: Option<Backend>,
    pub lock_wait: Duration,
    pub busy_exit: ExitStatus,
    pub once: Option<String>,
    /// Where `--once` markers live (the default directory when `--once` has no `--state`).
    pub state: Option<Backend>,
    /// The command (or URL) being run, recorded in `--once` markers.
    pub command: Vec<String>,
    /// `--lease-ttl`: the lifetime of a PostgreSQL lease.
    pub lease_ttl: Duration,
    /// Records other endings than success (a scheduler's slots).
    pub statuses: bool,
}

impl JobOptions {
    /// Checks the targets clap parsed against each other and the other flags, once,
    /// before anything runs (exit 125 on error). `state` is `--state`, read once by
    /// the configuration.
    pub fn from_cli(cli: &Cli, state: Option<&Backend>) -> anyhow::Result<JobOptions> {
        let lock = cli.lock.clone();
        let once = cli.once.clone();
        let state = match (state, &once) {
            (Some(state), _) => Some(state.clone()),
            // The default directory only matters with --once.
            (None, Some(_)) => Some(state::default_state()?),
            (None, None) => None,
        };
        if let (Some(key), Some(state)) = (&once, &state) {
            state
                .check_key(key)
                .map_err(|e| anyhow::anyhow!("--once: {e}"))?;
        }
        let leases = |b: &Option<Backend>| b.as_ref().is_some_and(Backend::leases);
        let lease_ttl = match cli.lease_ttl {
            Some(_) if !leases(&lock) && !leases(&state) => anyhow::bail!(
                "--lease-ttl: it sets the lifetime of a PostgreSQL lease, and there is none \
                 without --lock postgres://…#NAME or --state postgres://…"
            ),
            Some(ttl) => ttl,
            None => state::DEFAULT_LEASE_TTL,
        };
        Ok(JobOptions {
            lock,
            lock_wait: cli.lock_wait,
            busy_exit: ExitStatus::new(cli.busy_exit),
            once,
            state,
            command: cli
                .target
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            lease_ttl,
            statuses: cli.schedule.is_some(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(args: &[&str]) -> anyhow::Result<JobOptions> {
        let cli = crate::cli::parse(args.iter().copied()).map_err(|e| anyhow::anyhow!("{e}"))?;
        let state = cli.state.clone();
        JobOptions::from_cli(&cli, state.as_ref())
    }

    #[test]
    fn flags_with_bad_targets_are_refused_before_anything_runs() {
        let err = options(&["retry", "--lock", "postgres://h/db", "true"]).unwrap_err();
        assert!(err.to_string().contains("names no lock"), "{err}");
        let err = options(&["retry", "--state", "mysql://h/db", "true"]).unwrap_err();
        assert!(err.to_string().contains("unsupported scheme"), "{err}");
        let opts = options(&[
            "retry",
            "--lock",
            "/run/lock/x.lock",
            "--state",
            "postgres://u@h/db",
            "true",
        ])
        .unwrap();
        assert_eq!(opts.lock, state::lock_target("/run/lock/x.lock").ok());
        assert!(opts.state.as_ref().is_some_and(Backend::leases));
    }
}
