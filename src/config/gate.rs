//! The scheduled-job settings (`--lock`, `--lock-wait`, `--busy-exit`, `--once`,
//! `--state`, `--lease-ttl`), with the targets parsed and checked against each other.
//! Taking locks and recording markers is [`gate`](crate::gate)'s work.

use std::time::Duration;

use crate::cli::Cli;
use crate::domain::ExitStatus;
use crate::state::{self, Backend};

/// `--lock` and `--state`, parsed (the error starting with the flag).
pub fn parse_targets(cli: &Cli) -> anyhow::Result<(Option<Backend>, Option<Backend>)> {
    let parse = |text: &Option<String>, parser: fn(&str) -> Result<Backend, String>| {
        text.as_deref()
            .map(parser)
            .transpose()
            .map_err(anyhow::Error::msg)
    };
    let lock = parse(&cli.gate.lock, state::parse_lock_target)?;
    Ok((lock, parse(&cli.gate.state, state::parse_state_target)?))
}

/// `--lock` and `--state` parsed, each PostgreSQL target carrying `--lease-ttl`
/// (refused when neither leases).
pub fn targets(cli: &Cli) -> anyhow::Result<(Option<Backend>, Option<Backend>)> {
    let (mut lock, mut state) = parse_targets(cli)?;
    if let Some(ttl) = cli.gate.lease_ttl {
        state::give_lease_ttl(ttl, [lock.as_mut(), state.as_mut()]).map_err(anyhow::Error::msg)?;
    }
    Ok((lock, state))
}

/// The scheduled-job settings, with lock and state targets parsed and checked.
#[derive(Clone, Debug)]
pub struct GateOptions {
    pub lock: Option<Backend>,
    pub lock_wait: Duration,
    pub busy_exit: ExitStatus,
    pub once: Option<String>,
    /// Where `--once` markers live (the default directory when `--once` has no `--state`).
    pub state: Option<Backend>,
    /// The command (or URL) being run, recorded in `--once` markers.
    pub command: Vec<String>,
    /// Records other endings than success (a scheduler's slots).
    pub statuses: bool,
    /// A scheduled slot's part of the gate (set by the slot's run, never by a flag).
    pub slot: Option<SlotGate>,
}

/// What a scheduled slot adds to the gate: its key is its claim (a record of it, or its
/// lock held elsewhere, makes it another scheduler's), and under `--overlap skip`,
/// `queue` and `replace` the job's run lock keeps its slots from running together on
/// every scheduler that shares `--state`.
#[derive(Clone, Debug)]
pub struct SlotGate {
    pub job: String,
    pub overlap: crate::domain::Overlap,
    /// How long a queued slot waits for the job's previous one (`--overlap queue`).
    pub queue_wait: Duration,
    /// How long the slot waits for its key held by another run before leaving the slot
    /// to it: zero on time; a caught-up slot's holder may be a run whose scheduler died,
    /// still ending without a record.
    pub claim_wait: Duration,
}

impl GateOptions {
    /// Checks the targets against each other and the other flags, once,
    /// before anything runs (exit 125 on error). `lock` and `state` are `--lock` and
    /// `--state`, read once by the configuration ([`targets`]).
    pub fn from_cli(
        cli: &Cli,
        lock: Option<Backend>,
        state: Option<&Backend>,
    ) -> anyhow::Result<GateOptions> {
        let once = cli.gate.once.clone();
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
        Ok(GateOptions {
            lock,
            lock_wait: cli.gate.lock_wait,
            busy_exit: ExitStatus::new(cli.gate.busy_exit),
            once,
            state,
            command: cli
                .target
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            statuses: cli.scheduling.schedule.is_some(),
            slot: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(args: &[&str]) -> anyhow::Result<GateOptions> {
        let cli = crate::cli::parse(args.iter().copied()).map_err(|e| anyhow::anyhow!("{e}"))?;
        let (lock, state) = targets(&cli)?;
        GateOptions::from_cli(&cli, lock, state.as_ref())
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
        assert_eq!(opts.lock, state::parse_lock_target("/run/lock/x.lock").ok());
        assert_eq!(
            opts.state,
            state::parse_state_target("postgres://u@h/db").ok()
        );
    }

    #[test]
    fn a_lease_ttl_rides_in_the_postgres_target_and_is_refused_without_one() {
        let args = ["retry", "--lease-ttl", "6s", "--state", "postgres://u@h/db"];
        let opts = options(&[&args[..], &["--once", "k", "true"]].concat()).unwrap();
        let shown = opts.state.as_ref().map(|s| s.describe_marker("k")).unwrap();
        assert!(shown.contains("for 6s, renewed every 2s"), "{shown}");
        let err = options(&["retry", "--lease-ttl", "6s", "--lock", "x.lock", "true"]);
        assert!(err.unwrap_err().to_string().starts_with("--lease-ttl: "));
    }
}
