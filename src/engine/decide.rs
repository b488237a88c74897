//! What follows an attempt: the goal's tally, the classification and its per-rule
//! retry limits, the attempt limit, the time limit, and the backoff or the wait the other
//! side asked for decide whether to stop, retry after a sleep, or attempt again after
//! a success the goal wants more of.

use std::collections::HashMap;
use std::time::Duration;

use rand_chacha::ChaCha8Rng;

use super::goal::{Pause, Step, Tally};
use super::{Env, Next};
use crate::domain::{Class, Policy, RetryCapKey, StopReason, TimeLimit, Verdict, WaitHint, human};
use crate::exec::{AttemptContext, AttemptReport};

/// Turns a verdict limited to N retries into a permanent one past N.
pub(super) fn apply_retry_cap(verdict: &mut Verdict, counts: &mut HashMap<RetryCapKey, u32>) {
    let (Class::Transient, Some(cap)) = (verdict.class, verdict.retry_cap) else {
        return;
    };
    let count = counts.entry(cap.key).or_insert(0);
    *count += 1;
    if *count > cap.max_retries {
        verdict.class = Class::Permanent;
        verdict.reason = format!(
            "{}; already retried {} time{}",
            verdict.reason,
            cap.max_retries,
            if cap.max_retries == 1 { "" } else { "s" }
        );
    }
}

/// The latest time an attempt may start, on the run's clock, and the flag that sets it:
/// the time limit (`--max-time`), or curl's `--retry-max-time` counted from the first
/// attempt's start.
#[derive(Clone, Copy, Debug)]
pub(super) struct StartBy {
    pub at: Duration,
    pub flag: &'static str,
    /// The flag's whole limit.
    pub total: Duration,
}

impl StartBy {
    /// The sooner of the time limit and `--retry-max-time` (`first` is when attempt 1
    /// started).
    pub fn of(policy: &Policy, limit: &TimeLimit, first: Duration) -> Option<StartBy> {
        let time_limit = limit.total().map(|total| StartBy {
            at: total,
            flag: "--max-time",
            total,
        });
        let window = policy.retry_window.map(|total| StartBy {
            at: first.saturating_add(total),
            flag: "--retry-max-time",
            total,
        });
        match (time_limit, window) {
            (Some(a), Some(b)) => Some(if b.at < a.at { b } else { a }),
            (a, b) => a.or(b),
        }
    }

    pub fn left(&self, now: Duration) -> Duration {
        self.at.saturating_sub(now)
    }

    /// `stopped: the --max-time limit of 3s ran out while waiting to retry`.
    pub fn message(&self, detail: &str) -> String {
        format!(
            "stopped: the {} limit of {} {detail}",
            self.flag,
            human(self.total)
        )
    }
}

/// What follows attempt `ctx.number`, which `report` tells of; no attempt starts past `start_by`.
pub(super) fn decide(
    report: &AttemptReport,
    ctx: &AttemptContext,
    policy: &Policy,
    start_by: Option<StartBy>,
    env: &mut Env<'_>,
    tally: &mut Tally,
    previous_delay: &mut Option<Duration>,
) -> Next {
    if let Some(message) = &report.lock_lost {
        return Next::Stop(StopReason::LockLost, message.clone());
    }
    if let Some(signal) = report.interrupted_by {
        return Next::Stop(StopReason::Signal, format!("interrupted by {signal}"));
    }
    let retry = match tally.after(ctx.number, report.verdict.class, report.exit_code) {
        Step::Reached(reason, message) => return Next::Stop(reason, message),
        Step::Again { pause, progress } => {
            let step = (pause, progress);
            return again(step, ctx, policy, start_by, env, tally, previous_delay);
        }
        Step::Failed { retry } => retry,
    };
    if report.verdict.class == Class::Permanent {
        return Next::Stop(
            StopReason::Permanent,
            format!("permanent failure: {}", report.verdict.reason),
        );
    }
    if report.out_of_time {
        return Next::Stop(
            StopReason::MaxTime,
            time_limit_message(&env.limit, "ran out during the last attempt"),
        );
    }
    if policy.is_last(ctx.number) {
        return Next::Stop(StopReason::Attempts, tally.out_of_attempts(ctx.number));
    }
    let now = env.clock.now();
    let left = start_by.map(|s| (s, s.left(now)));
    let hint = report.wait_hint.as_ref().filter(|h| !h.wait.is_zero());
    if let Some(hint) = hint.filter(|_| !policy.ignore_wait_hints) {
        return obey_hint(hint, retry, policy, left, env.jitter.rng());
    }
    let delay = policy
        .schedule
        .delay(retry, *previous_delay, env.jitter.rng());
    *previous_delay = Some(delay);
    match left {
        Some((by, left)) if delay >= left => {
            Next::Stop(StopReason::MaxTime, too_little_left(by, left, delay))
        }
        _ => Next::Sleep(delay),
    }
}

/// A success the goal wants more of: the sleep before the next attempt, unless the
/// attempt limit or the time limit ends the run first.
fn again(
    (pause, progress): (Pause, String),
    ctx: &AttemptContext,
    policy: &Policy,
    start_by: Option<StartBy>,
    env: &mut Env<'_>,
    tally: &Tally,
    previous_delay: &mut Option<Duration>,
) -> Next {
    if policy.is_last(ctx.number) {
        return Next::Stop(StopReason::Attempts, tally.out_of_attempts(ctx.number));
    }
    let delay = match pause {
        Pause::Base => {
            // A failure after this success backs off from the start again.
            *previous_delay = None;
            policy.schedule.base
        }
        Pause::Backoff(n) => {
            let delay = policy.schedule.delay(n, *previous_delay, env.jitter.rng());
            *previous_delay = Some(delay);
            delay
        }
    };
    let now = env.clock.now();
    match start_by.map(|s| (s, s.left(now))) {
        Some((by, left)) if delay >= left => {
            let message = too_little_left(by, left, delay) + &tally.shortfall();
            Next::Stop(StopReason::MaxTime, message)
        }
        _ => Next::Again(delay, progress),
    }
}

/// `stopped: the --max-time limit of 3s has 200ms left, less than the next 1s sleep`.
pub(super) fn too_little_left(by: StartBy, left: Duration, delay: Duration) -> String {
    let detail = format!(
        "has {} left, less than the next {} sleep",
        human(left),
        human(delay)
    );
    by.message(&detail)
}

/// Waits as long as the server asked, plus a spread so that clients told the
/// same time do not come back in one wave; refuses waits past the caps.
fn obey_hint(
    hint: &WaitHint,
    retry: u32,
    policy: &Policy,
    left: Option<(StartBy, Duration)>,
    rng: &mut ChaCha8Rng,
) -> Next {
    if hint.wait > policy.max_wait_hint {
        return Next::Stop(
            StopReason::RetryAfterTooLong,
            format!(
                "{} asked to wait {} ({}), longer than --max-retry-after {}",
                hint.asked_by,
                human(hint.wait),
                hint.source,
                human(policy.max_wait_hint)
            ),
        );
    }
    if let Some((by, left)) = left.filter(|(_, left)| hint.wait >= *left) {
        return Next::Stop(
            StopReason::RetryAfterTooLong,
            format!(
                "{} asked to wait {} ({}), longer than the {} left of {}",
                hint.asked_by,
                human(hint.wait),
                hint.source,
                human(left),
                by.flag
            ),
        );
    }
    let delay = policy.schedule.after_wait(hint.wait, retry, rng);
    Next::Sleep(left.map_or(delay, |(_, left)| {
        delay.min(left.saturating_sub(Duration::from_millis(1)))
    }))
}

fn time_limit_message(limit: &TimeLimit, detail: &str) -> String {
    let total = limit.total().map(human).unwrap_or_default();
    format!("stopped: the --max-time limit of {total} {detail}")
}
