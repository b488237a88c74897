//! The fleet's settings: what a shared retry budget and a shared circuit breaker are
//! (`--retry-budget`, `--circuit` and their options). The stores keep their records,
//! `fleet` decides when a run consults them.

use std::time::Duration;

use super::ExitStatus;

/// A shared retry budget: gRPC's retry throttling.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetConfig {
    pub name: String,
    /// N: tokens the budget holds.
    pub size: u32,
    /// R: tokens a successful attempt earns.
    pub ratio: f64,
    /// `--throttled wait`: a refused retry holds the run, and a held run may probe the
    /// spent budget when no retry of it was sent for this long (`--delay`). `None`:
    /// `--throttled exit`, a refusal ends the run.
    pub probe_after: Option<Duration>,
}

/// A shared circuit breaker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CircuitConfig {
    pub name: String,
    /// Failed runs in a row that open it.
    pub failures: u32,
    pub cooldown: Duration,
    /// Exit status of a refused run.
    pub exit: ExitStatus,
}
