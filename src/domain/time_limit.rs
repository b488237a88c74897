//! The run's time limit (`--max-time`) as one value, built once when the run starts
//! and handed to every phase: what is left of it, whether it has passed, and how long
//! a call with a timeout of its own may take within it.

use std::time::{Duration, Instant};

/// The run's time limit: when the run started and how long it may take (`None`: no
/// limit). "Now" is a time on the run's clock, counted from the start (the engine's
/// clock, real or fake); [`end`](TimeLimit::end) is the real instant it ends at, for
/// waits on the real clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeLimit {
    started: Instant,
    total: Option<Duration>,
}

impl TimeLimit {
    /// A limit of `total` (if any) from now.
    pub fn starting_now(total: Option<Duration>) -> TimeLimit {
        TimeLimit {
            started: Instant::now(),
            total,
        }
    }

    /// The whole limit, as `--max-time` gave it.
    pub const fn total(&self) -> Option<Duration> {
        self.total
    }

    /// The real instant the limit ends at.
    pub fn end(&self) -> Option<Instant> {
        self.total.and_then(|t| self.started.checked_add(t))
    }

    /// Time since the start on the real clock, for callers without the run's clock.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// What is left at `now`.
    pub fn left(&self, now: Duration) -> Option<Duration> {
        self.total.map(|t| t.saturating_sub(now))
    }

    /// Whether the limit has passed at `now`.
    pub fn passed(&self, now: Duration) -> bool {
        self.total.is_some_and(|t| now >= t)
    }

    /// A call's own timeout (if any) cut to what is left at `now`.
    pub fn cap(&self, own: Option<Duration>, now: Duration) -> Option<Duration> {
        match (own, self.left(now)) {
            (Some(own), Some(left)) => Some(own.min(left)),
            (own, left) => own.or(left),
        }
    }

    /// Whether what is left at `now`, rather than the call's own timeout, limits a call.
    pub fn cuts(&self, own: Option<Duration>, now: Duration) -> bool {
        match (self.left(now), own) {
            (Some(left), Some(own)) => left < own,
            (left, _) => left.is_some(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn what_is_left_counts_down_to_zero_and_then_the_limit_has_passed() {
        let limit = TimeLimit::starting_now(Some(3 * S));
        assert_eq!(limit.left(S), Some(2 * S));
        assert_eq!(limit.left(5 * S), Some(Duration::ZERO));
        assert!(!limit.passed(2 * S) && limit.passed(3 * S));
        assert!(limit.end().is_some_and(|end| end > Instant::now()));
        let none = TimeLimit::starting_now(None);
        assert_eq!(
            (none.left(S), none.passed(S), none.end()),
            (None, false, None)
        );
    }

    #[test]
    fn a_calls_own_timeout_is_cut_to_what_is_left() {
        let limit = TimeLimit::starting_now(Some(3 * S));
        assert_eq!(limit.cap(Some(5 * S), S), Some(2 * S));
        assert!(limit.cuts(Some(5 * S), S));
        assert_eq!(limit.cap(Some(S), S), Some(S));
        assert!(!limit.cuts(Some(S), S));
        assert_eq!(limit.cap(None, S), Some(2 * S));
        assert!(limit.cuts(None, S));
        let none = TimeLimit::starting_now(None);
        assert_eq!(none.cap(Some(S), S), Some(S));
        assert_eq!(none.cap(None, S), None);
        assert!(!none.cuts(Some(S), S) && !none.cuts(None, S));
    }
}
