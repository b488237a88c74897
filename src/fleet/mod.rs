//! The fleet as a run meets it: every `retry` that names the same retry budget or
//! circuit breaker through the same `--state` shares it. [`Fleet`] is the one face a
//! run asks, in the run's order: the splay before anything ([`splay`]), the circuit
//! before the first attempt ([`circuit`], with its holds), the budget before each retry
//! ([`budget`], through the engine's [`RetryBudget`](crate::engine::RetryBudget)), and
//! the circuit again with how the run ended. The store fails open once it fails
//! mid-run ([`store`]). What the records hold, the rules every store applies to them and
//! the stores themselves are `state`'s.

mod budget;
mod circuit;
mod splay;
mod store;

use std::time::Duration;

use crate::config::fleet::FleetConfig;
use crate::domain::{ExitStatus, Hold, RunSummary, StopReason, TimeLimit};
use crate::engine::{Clock, Sleeper};
use crate::state;
use crate::wait::Bound;
pub use budget::SharedBudget;
#[cfg(test)]
pub use splay::splay_delay;
pub use splay::{describe as describe_splay, longest as longest_splay};
use store::Store;

/// A run's fleet: its settings, and its store unless it has none (no budget or
/// circuit, or a nested run, whose outer run counts).
pub struct Fleet<'a> {
    config: &'a FleetConfig,
    seed: u64,
    store: Option<Store>,
}

/// How a fleet policy ended a run before its first attempt.
#[derive(Debug)]
pub struct Stopped {
    pub exit_code: ExitStatus,
    pub reason: StopReason,
    pub message: String,
    /// The holds the run went through first.
    pub holds: Vec<Hold>,
}

impl Stopped {
    fn new(exit_code: ExitStatus, reason: StopReason, message: String) -> Stopped {
        Stopped {
            exit_code,
            reason,
            message,
            holds: Vec::new(),
        }
    }
}

impl<'a> Fleet<'a> {
    /// Opens the fleet of a run: its store is opened (creating directories or tables)
    /// and its records checked within the run's time limit. An error is exit 125
    /// ([`state::NoAnswer::Deadline`] when the time limit ended it).
    pub fn open(
        config: &'a FleetConfig,
        nested: bool,
        seed: u64,
        limit: &TimeLimit,
    ) -> anyhow::Result<Fleet<'a>> {
        let store = match (&config.state, nested) {
            (Some(target), false) => {
                let holds = config
                    .budget
                    .as_ref()
                    .is_some_and(|b| b.probe_after.is_some());
                let bound = Bound::ending_with(limit);
                let mut store = state::open_fleet(target, holds, &bound)?;
                store.check(config.budget.as_ref(), config.circuit.as_ref())?;
                Some(Store::new(store, *limit))
            }
            _ => None,
        };
        Ok(Fleet {
            config,
            seed,
            store,
        })
    }

    /// Sleeps the `--splay` (never past the time limit, `left`); a stopping signal ends
    /// the run.
    pub fn splay(&self, left: Option<Duration>, sleeper: &mut dyn Sleeper) -> Result<(), Stopped> {
        splay::sleep(self.config.splay, self.seed, left, sleeper)
    }

    /// Asks the circuit, if any, whether the run may make its first attempt; returns
    /// the holds it went through (`--throttled wait`), or how the run ends.
    pub fn admit(
        &mut self,
        clock: &dyn Clock,
        sleeper: &mut dyn Sleeper,
        limit: &TimeLimit,
    ) -> Result<Vec<Hold>, Stopped> {
        let (Some(circuit), Some(store)) = (&self.config.circuit, self.store.as_mut()) else {
            return Ok(Vec::new());
        };
        let asking = circuit::Asking {
            circuit,
            throttled: self.config.throttled,
            seed: self.seed,
            limit,
            hold_limit: self.config.hold_limit,
            clock,
            sleeper,
        };
        circuit::admit(store, asking)
    }

    /// The retry budget, if any, as the engine asks it.
    pub fn budget(&mut self) -> Option<SharedBudget<'_>> {
        match (&self.config.budget, self.store.as_mut()) {
            (Some(budget), Some(store)) => Some(SharedBudget::new(store, budget)),
            _ => None,
        }
    }

    /// Tells the circuit, if any, how the run ended (after the last attempt).
    pub fn record_run(&mut self, summary: &RunSummary) {
        if let (Some(circuit), Some(store)) = (&self.config.circuit, self.store.as_mut()) {
            circuit::record(store, circuit, summary);
        }
    }
}
