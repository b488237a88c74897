//! The policy a run follows: how many attempts, their time limits, the backoff
//! schedule and the longest server-requested wait obeyed. The engine applies it.

use std::time::Duration;

use super::Schedule;

#[derive(Clone, Debug)]
pub struct Policy {
    pub attempts: u32,
    pub timeout: Option<Duration>,
    pub max_time: Option<Duration>,
    pub schedule: Schedule,
    /// Longest server-requested wait to obey (`--max-retry-after`).
    pub max_wait_hint: Duration,
}

/// The flags' defaults: 5 attempts, no time limits, the default schedule, Retry-After up to 5m.
impl Default for Policy {
    fn default() -> Self {
        Policy {
            attempts: 5,
            timeout: None,
            max_time: None,
            schedule: Schedule::default(),
            max_wait_hint: Duration::from_secs(300),
        }
    }
}
