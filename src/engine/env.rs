//! What the retry loop is given besides the executor: the clock and the time limit, the sleeper, the
//! `--on-retry` hook that runs beside each sleep, the shared retry budget, the jitter
//! and where events go (`Env`). The loop is tested with fakes of each.

use std::time::{Duration, SystemTime};

use crate::domain::{AttemptRecord, Events, ExitStatus, Jitter, SpanContext, Stop, TimeLimit};

pub trait Clock {
    /// Time since the run started: the time limit counts from zero, so whatever ran
    /// before the loop (waiting for a lock) is already spent.
    fn now(&self) -> Duration;
    fn wall(&self) -> SystemTime;
}

pub trait Sleeper {
    /// Sleeps `d` before attempt `upcoming`; `Err` if the run must stop now.
    fn sleep(&mut self, d: Duration, upcoming: u32) -> Result<(), Stop>;
}

/// What `--on-retry` is told about the attempt that failed.
pub struct RetryFacts<'a> {
    pub record: &'a AttemptRecord,
    /// The status retry would exit with if this attempt were the last.
    pub exit_code: ExitStatus,
    pub next_delay: Duration,
    /// What is left of the time limit: the hook may not run past it.
    pub time_left: Option<Duration>,
}

/// `--on-retry`, run inside the backoff sleep: started before the sleep and
/// waited for after it, so the next attempt starts when both are over.
pub trait RetryHook {
    fn start(&mut self, facts: &RetryFacts<'_>);
    /// Waits for the hook started last, if one runs; `Err` if the run must stop now.
    fn wait(&mut self) -> Result<(), Stop>;
}

/// Why a shared retry budget refused a retry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The budget is spent: what it holds (`retry budget api is spent (4 of 10 tokens)`).
    Spent(String),
    /// The time limit ran out while the budget was being asked (what the store said).
    OutOfTime(String),
}

/// A retry budget shared with other runs (`--retry-budget`).
pub trait RetryBudget {
    /// Counts one finished attempt.
    fn record(&mut self, success: bool);
    /// Whether a retry may be made now.
    fn may_retry(&mut self) -> Result<(), Refusal>;
    /// `--throttled wait`: the budget is asked after the backoff sleep and a refusal
    /// holds the run; otherwise it is asked before the sleep and a refusal ends it.
    fn holds(&self) -> bool;
}

/// Everything the loop needs from outside besides the executor.
pub struct Env<'a> {
    pub clock: &'a dyn Clock,
    /// The run's time limit (`--max-time`), on `clock`.
    pub limit: TimeLimit,
    pub sleeper: &'a mut dyn Sleeper,
    pub jitter: &'a mut Jitter,
    pub events: &'a mut dyn Events,
    pub retry_hook: &'a mut dyn RetryHook,
    /// The shared retry budget, if any (none for a nested run: the outer one counts).
    pub budget: Option<&'a mut dyn RetryBudget>,
    /// The run's span when the run is traced: each attempt is a span under it.
    pub trace: Option<&'a SpanContext>,
}
