//! What the retry loop tells the outside world while it runs: one `Event` per step,
//! to whoever implements `Events` (the logger, a test's collector).

use std::time::Duration;

use super::{AttemptRecord, HoldCause, RunSummary};

/// What the loop tells the outside world while it runs.
pub enum Event<'a> {
    AttemptStarting {
        number: u32,
        attempts: u32,
        /// The attempt's timeout, if it has one.
        timeout: Option<Duration>,
    },
    AttemptFailed {
        record: &'a AttemptRecord,
        attempts: u32,
        next: Option<Duration>,
    },
    Succeeded {
        record: &'a AttemptRecord,
        attempts: u32,
        /// When the goal wants more successes (`--consecutive`, `--until-failure`): the
        /// sleep before the next attempt, and the progress (`2 of 3 in a row`).
        next: Option<(Duration, &'a str)>,
    },
    /// A run held (`--throttled wait`) for `duration`, sending nothing; `why` says
    /// what held it ("retry budget api is spent (4 of 10 tokens)").
    Held {
        cause: HoldCause,
        why: &'a str,
        duration: Duration,
    },
    Stopped {
        summary: &'a RunSummary,
    },
}

pub trait Events {
    fn event(&mut self, event: Event<'_>);
}
