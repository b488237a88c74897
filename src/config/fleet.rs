//! The fleet settings (`--retry-budget`, `--circuit`, `--splay`) and where their
//! shared state lives. Running them is `fleet`'s work.

use std::time::Duration;

use crate::cli::Cli;
use crate::domain::{BudgetConfig, CircuitConfig, ExitStatus, Throttled};
use crate::state::{self, Backend};

/// Everything fleet-wide a run does.
#[derive(Clone, Debug, PartialEq)]
pub struct FleetConfig {
    pub budget: Option<BudgetConfig>,
    pub circuit: Option<CircuitConfig>,
    /// What a spent budget or an open circuit does to the run.
    pub throttled: Throttled,
    pub splay: Duration,
    /// curl's `--retry-max-time`, which bounds a held run (`--throttled wait`) beside
    /// curl's retry words, where `--max-time` limits each transfer.
    pub hold_limit: Option<Duration>,
    /// Where budgets and circuits live (`--state`, or the default directory).
    pub state: Option<Backend>,
}

impl FleetConfig {
    /// `state` is `--state`, parsed once by the configuration.
    pub fn from_cli(cli: &Cli, state: Option<&Backend>) -> anyhow::Result<FleetConfig> {
        let throttled = throttled(cli)?;
        let budget = cli.fleet.retry_budget.as_ref().map(|name| BudgetConfig {
            name: name.clone(),
            size: cli.fleet.budget_size,
            ratio: cli.fleet.budget_ratio,
            probe_after: (throttled == Throttled::Wait).then_some(cli.timing.delay),
        });
        let circuit = cli.fleet.circuit.as_ref().map(|name| CircuitConfig {
            name: name.clone(),
            failures: cli.fleet.circuit_failures,
            cooldown: cli.fleet.circuit_cooldown,
            exit: ExitStatus::new(cli.fleet.circuit_exit),
        });
        let state = if budget.is_none() && circuit.is_none() {
            None
        } else {
            Some(state_target(state)?)
        };
        Ok(FleetConfig {
            budget,
            circuit,
            throttled,
            splay: cli.fleet.splay,
            hold_limit: cli.curl.retry_max_time.filter(|d| !d.is_zero()),
            state,
        })
    }
}

/// `--throttled`, refused where it would mean nothing: without a budget or a circuit
/// to throttle, or `wait` without `--max-time` (beside curl's retry words,
/// `--retry-max-time`), which bounds the holds.
fn throttled(cli: &Cli) -> anyhow::Result<Throttled> {
    let Some(throttled) = cli.fleet.throttled else {
        return Ok(Throttled::Exit);
    };
    if cli.fleet.retry_budget.is_none() && cli.fleet.circuit.is_none() {
        anyhow::bail!(
            "--throttled: it says what a spent --retry-budget or an open --circuit does to a run, \
             and there is neither"
        );
    }
    let bounded =
        cli.timing.max_time.is_some() || cli.curl.retry_max_time.is_some_and(|d| !d.is_zero());
    if throttled == Throttled::Wait && !bounded {
        anyhow::bail!(
            "--throttled wait: a held run waits until the budget or circuit lets it go, so it \
             needs --max-time to bound the wait (e.g. --max-time 30s; beside curl's --retry \
             words, --retry-max-time)"
        );
    }
    Ok(throttled)
}

/// `--state`, or the default directory, which must then be findable.
fn state_target(state: Option<&Backend>) -> anyhow::Result<Backend> {
    match state {
        Some(state) => Ok(state.clone()),
        None => state::default_state().map_err(|_| {
            anyhow::anyhow!(
                "--retry-budget/--circuit: no state directory: {}; give --state DIR",
                crate::sys::USER_STATE_DIR_UNSET
            )
        }),
    }
}
