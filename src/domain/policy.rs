//! The policy a run follows: how many attempts, their timeout, the backoff
//! schedule, the longest server-requested wait obeyed and what the run is after
//! (`Goal`). The engine applies it.

use std::time::Duration;

use super::Schedule;

#[derive(Clone, Debug)]
pub struct Policy {
    /// The attempt limit; 0 is none (`-a 0`, which `--max-time` bounds).
    pub attempts: u32,
    pub timeout: Option<Duration>,
    pub max_time: Option<Duration>,
    /// The curl retry word (`--retry`, …) beside which `--max-time` kept curl's meaning:
    /// it is then `timeout`, the limit on each transfer, and `retry_window` alone bounds
    /// the run.
    pub max_time_per_transfer: Option<&'static str>,
    /// curl's `--retry-max-time`: no attempt starts once this much has passed since the
    /// first one started; an attempt in flight is never cut by it.
    pub retry_window: Option<Duration>,
    pub schedule: Schedule,
    /// Longest server-requested wait to obey (`--max-retry-after`).
    pub max_wait_hint: Duration,
    /// `--ignore-retry-after`: the backoff alone decides every sleep.
    pub ignore_wait_hints: bool,
    pub goal: Goal,
}

/// What ends a run well.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Goal {
    /// The first attempt that succeeds.
    FirstSuccess,
    /// `--consecutive N`: N attempts in a row that succeed.
    Consecutive(u32),
    /// `--until-failure`: the first attempt that fails; success is attempted again.
    UntilFailure,
}

impl Policy {
    /// Whether attempt `number` is the last the limit allows.
    pub fn is_last(&self, number: u32) -> bool {
        self.attempts != 0 && number >= self.attempts
    }
}

/// The flags' defaults: 5 attempts, no timeout and no time limit, the default schedule, Retry-After up to 5m.
impl Default for Policy {
    fn default() -> Self {
        Policy {
            attempts: 5,
            timeout: None,
            max_time: None,
            max_time_per_transfer: None,
            retry_window: None,
            schedule: Schedule::default(),
            max_wait_hint: Duration::from_secs(300),
            ignore_wait_hints: false,
            goal: Goal::FirstSuccess,
        }
    }
}

/// `3/5` for attempt 3 of 5, `3` when there is no limit.
pub fn of_attempts(number: u32, attempts: u32) -> String {
    if attempts == 0 {
        number.to_string()
    } else {
        format!("{number}/{attempts}")
    }
}
