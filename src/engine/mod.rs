//! The one retry loop, shared by every mode. It owns the policy (attempt limit,
//! `--max-time` budget, backoff and jitter, server-requested waits, per-rule retry
//! limits) and nothing else: running an attempt and classifying it is the
//! executor's job, what the run is after (the first success, N in a row, the first
//! failure) the goal's tally, sleeping is the sleeper's, running `--on-retry` beside
//! the sleep is the retry hook's, and the clock is injected so the loop is tested
//! without sleeping.

use std::collections::HashMap;
use std::time::Duration;

use rand_chacha::ChaCha8Rng;

use crate::domain::{
    AttemptRecord, Class, Event, ExitStatus, Hold, HoldCause, Interrupted, LimitKey, OutputLost,
    Policy, RunSummary, Signal, Stop, StopReason, Verdict, WaitHint, human,
};
use crate::exec::{AttemptContext, AttemptReport, Executor};

mod env;
#[cfg(test)]
pub mod fakes;
mod goal;

pub use env::{Clock, Env, Refusal, RetryBudget, RetryFacts, RetryHook, Sleeper};
use goal::{Pause, Step, Tally};

/// What to do after an attempt.
enum Next {
    Stop(StopReason, String),
    /// A failure is retried after this sleep.
    Sleep(Duration),
    /// A success the goal wants more of: attempt again after this sleep (the
    /// progress, `2 of 3 in a row`, is for the log).
    Again(Duration, String),
}

/// How a run ends: its exit status, why, and the line that says so.
type End = (ExitStatus, StopReason, String);

pub fn run(
    exec: &mut dyn Executor,
    policy: &Policy,
    env: &mut Env<'_>,
) -> anyhow::Result<RunSummary> {
    // The clock counts from the run's start: what ran before the loop is already spent.
    let deadline = policy.max_time;
    let mut records: Vec<AttemptRecord> = Vec::new();
    let mut holds: Vec<Hold> = Vec::new();
    let mut limit_counts: HashMap<LimitKey, u32> = HashMap::new();
    let mut previous_delay = None;
    let mut tally = Tally::new(policy.goal);
    let mut number = 1;
    loop {
        let now = env.clock.now();
        let budget_left = deadline.map(|d| d.saturating_sub(now));
        let ctx = AttemptContext {
            number,
            limit: policy.attempts,
            timeout: min_opt(policy.timeout, budget_left),
            budget_left,
            timeout_is_budget: budget_limits(policy.timeout, budget_left),
        };
        env.events.event(Event::AttemptStarting {
            number,
            limit: ctx.limit,
            timeout: ctx.timeout,
        });
        let started_at = env.clock.wall();
        let mut report = exec.attempt(&ctx)?;
        let duration = env.clock.now().saturating_sub(now);
        apply_limit(&mut report.verdict, &mut limit_counts);
        // A hold draws afresh from the distribution this retry's delay came from.
        let drawn_after = previous_delay;
        let next = decide(&report, &ctx, policy, env, &mut tally, &mut previous_delay);
        let next = consult_budget(&report, next, env);
        records.push(record_of(number, (started_at, duration), &report, &next));
        let record = records.last().expect("just pushed");
        match next {
            Next::Sleep(delay) => {
                env.events.event(Event::AttemptFailed {
                    record,
                    limit: policy.attempts,
                    next: Some(delay),
                });
                exec.discard();
                let facts = RetryFacts {
                    record,
                    exit_code: report.exit_code,
                    next_delay: delay,
                    budget_left: deadline.map(|d| d.saturating_sub(env.clock.now())),
                };
                let sleep_ends = env.clock.now() + delay;
                if let Err(stop) = sleep_with_hook(env, &facts, number + 1) {
                    return Ok(finish(records, holds, stopped_while_sleeping(stop), env));
                }
                if deadline.is_some_and(|d| env.clock.now() >= d) {
                    // The sleep ends before --max-time; what runs past it is the hook.
                    let during = if deadline.is_some_and(|d| sleep_ends < d) {
                        "ran out during the --on-retry hook"
                    } else {
                        "ran out while waiting to retry"
                    };
                    let message = budget_message(policy, during);
                    let (code, reason) = (report.exit_code, StopReason::MaxTime);
                    return Ok(finish(records, holds, (code, reason, message), env));
                }
                let asked = Asked {
                    retry: number,
                    drawn_after,
                    last_exit: report.exit_code,
                };
                if let Err(end) = hold_while_refused(env, policy, deadline, &asked, &mut holds) {
                    return Ok(finish(records, holds, end, env));
                }
            }
            Next::Again(delay, progress) => {
                exec.discard();
                if let Err(end) =
                    pause_after_success(env, policy, record, (delay, &progress), &tally)
                {
                    return Ok(finish(records, holds, end, env));
                }
            }
            Next::Stop(reason, message) => {
                say_last(env, record, policy.attempts);
                let mut exit_code = match reason {
                    StopReason::Success => ExitStatus::SUCCESS,
                    StopReason::Signal => {
                        ExitStatus::of_signal(report.interrupted_by.unwrap_or(Signal::new(0)))
                    }
                    StopReason::LockLost => ExitStatus::USAGE,
                    _ if record.class == Class::Success => tally.short_exit(),
                    _ => report.exit_code,
                };
                let (mut reason, mut message) = (reason, message);
                // A run that fails on a success short of its goal shows nothing of it as a result.
                let short = record.class == Class::Success && !exit_code.is_success();
                if short || matches!(reason, StopReason::Signal | StopReason::LockLost) {
                    exec.discard();
                } else if let Err(err) = exec.deliver() {
                    if let Some(lost) = err.downcast_ref::<OutputLost>() {
                        // The output is the result: a run whose output was lost failed.
                        (exit_code, reason) = (lost.status, StopReason::Permanent);
                        message = lost.message.clone();
                    } else if let Some(Interrupted(signal)) = err.downcast_ref::<Interrupted>() {
                        // A signal while writing a held output to a stalled reader ends the run at once.
                        exit_code = ExitStatus::of_signal(*signal);
                        reason = StopReason::Signal;
                        message =
                            format!("interrupted by {} while writing the output", signal.name());
                    } else {
                        return Err(err);
                    }
                }
                return Ok(finish(records, holds, (exit_code, reason, message), env));
            }
        }
        number = number.saturating_add(1);
    }
}

/// The attempt as the report and the logs show it, with the sleep that follows it.
fn record_of(
    number: u32,
    (started_at, duration): (std::time::SystemTime, Duration),
    report: &AttemptReport,
    next: &Next,
) -> AttemptRecord {
    AttemptRecord {
        number,
        started_at,
        duration,
        outcome: report.outcome.clone(),
        class: report.verdict.class,
        reason: report.verdict.reason.clone(),
        wait_hint: report.wait_hint.clone(),
        delay: match next {
            Next::Sleep(d) | Next::Again(d, _) => Some(*d),
            Next::Stop(..) => None,
        },
    }
}

/// The event of the run's last attempt: it succeeded, or it failed with no retry.
fn say_last(env: &mut Env<'_>, record: &AttemptRecord, limit: u32) {
    env.events.event(if record.class == Class::Success {
        Event::Succeeded {
            record,
            limit,
            next: None,
        }
    } else {
        Event::AttemptFailed {
            record,
            limit,
            next: None,
        }
    });
}

/// The sleep after a success the goal wants more of (no `--on-retry`: nothing failed).
/// A run that reaches `--max-time` here ends as it would after that success.
fn pause_after_success(
    env: &mut Env<'_>,
    policy: &Policy,
    record: &AttemptRecord,
    (delay, progress): (Duration, &str),
    tally: &Tally,
) -> Result<(), End> {
    env.events.event(Event::Succeeded {
        record,
        limit: policy.attempts,
        next: Some((delay, progress)),
    });
    env.sleeper
        .sleep(delay, record.number.saturating_add(1))
        .map_err(stopped_while_sleeping)?;
    if policy.max_time.is_some_and(|d| env.clock.now() >= d) {
        let message = budget_message(policy, "ran out while waiting for the next attempt");
        let message = format!("{message}{}", tally.shortfall());
        return Err((tally.short_exit(), StopReason::MaxTime, message));
    }
    Ok(())
}

/// The backoff sleep with `--on-retry` running beside it: over when both are.
fn sleep_with_hook(env: &mut Env<'_>, facts: &RetryFacts<'_>, upcoming: u32) -> Result<(), Stop> {
    env.retry_hook.start(facts);
    let slept = env.sleeper.sleep(facts.next_delay, upcoming);
    // A stop during the sleep reaches the hook too: waiting passes the signal on.
    let waited = env.retry_hook.wait();
    slept.and(waited)
}

/// Counts the attempt in the shared budget, and asks it before a retry. An attempt
/// cut short by retry's own signal or a lost lock, or one retry could not start for
/// lack of resources, says nothing about the service.
fn consult_budget(report: &AttemptReport, next: Next, env: &mut Env<'_>) -> Next {
    let Some(budget) = env.budget.as_deref_mut() else {
        return next;
    };
    if report.interrupted_by.is_some()
        || report.lock_lost.is_some()
        || report.outcome.lacked_resources()
    {
        return next;
    }
    budget.record(report.verdict.class == Class::Success);
    if budget.holds() {
        // --throttled wait asks when the sleep ends (hold_while_refused).
        return next;
    }
    match next {
        Next::Sleep(_) => match budget.may_retry() {
            Ok(()) => next,
            Err(Refusal::Spent(why)) => {
                Next::Stop(StopReason::Budget, format!("{why}: not retrying"))
            }
            Err(Refusal::OutOfTime(message)) => Next::Stop(StopReason::MaxTime, message),
        },
        stop => stop,
    }
}

/// The retry a held run waits to make.
struct Asked {
    /// The attempt that failed.
    retry: u32,
    /// The delay before the one this retry's was drawn after (decorrelated jitter).
    drawn_after: Option<Duration>,
    /// The status the run ends with if it ends here.
    last_exit: ExitStatus,
}

/// `--throttled wait`: asks the budget when the backoff sleep is over; while it
/// refuses, holds the run (sending nothing, so `-a` is not spent) and asks again. The
/// k-th hold of a retry is a fresh jittered draw of the delay the schedule gives k
/// retries later (so holds back off up to `--max-delay`, as the retries would have),
/// never under a tenth of `--delay`. Held runs that kept asking at the retry's own
/// delay would all come back within that delay of the recovery (a peak of N·100 ms /
/// E[hold] requests per 100 ms) and would ask the store several times a second each
/// for the whole outage. A hold that would end past `--max-time` is not started: the
/// run ends as `exit` would have.
fn hold_while_refused(
    env: &mut Env<'_>,
    policy: &Policy,
    deadline: Option<Duration>,
    asked: &Asked,
    holds: &mut Vec<Hold>,
) -> Result<(), End> {
    let Some(budget) = env.budget.as_deref_mut().filter(|b| b.holds()) else {
        return Ok(());
    };
    let mut previous = asked.drawn_after;
    for k in 1u32.. {
        let why = match budget.may_retry() {
            Ok(()) => return Ok(()),
            Err(Refusal::OutOfTime(message)) => {
                return Err((asked.last_exit, StopReason::MaxTime, message));
            }
            Err(Refusal::Spent(why)) => why,
        };
        let later = asked.retry.saturating_add(k);
        let drawn = (policy.schedule).delay(later, previous, env.jitter.rng());
        previous = Some(drawn);
        let hold = drawn.max(policy.schedule.base / 10);
        let now = env.clock.now();
        if let Some(left) = deadline
            .map(|d| d.saturating_sub(now))
            .filter(|&left| hold >= left)
        {
            let message = format!(
                "{why}: not retrying; --max-time has {} left, less than the next {} hold",
                human(left),
                human(hold)
            );
            return Err((asked.last_exit, StopReason::Budget, message));
        }
        env.events.event(Event::Held {
            cause: HoldCause::Budget,
            why: &why,
            duration: hold,
        });
        let started_at = env.clock.wall();
        let slept = env.sleeper.sleep(hold, asked.retry + 1);
        holds.push(Hold {
            started_at,
            duration: env.clock.now().saturating_sub(now),
            cause: HoldCause::Budget,
        });
        slept.map_err(stopped_while_sleeping)?;
    }
    unreachable!("a run holds at most u32::MAX times")
}

/// Turns a verdict limited to N retries into a permanent one past N.
fn apply_limit(verdict: &mut Verdict, counts: &mut HashMap<LimitKey, u32>) {
    let (Class::Transient, Some(limit)) = (verdict.class, verdict.limit) else {
        return;
    };
    let count = counts.entry(limit.key).or_insert(0);
    *count += 1;
    if *count > limit.max_retries {
        verdict.class = Class::Permanent;
        verdict.reason = format!(
            "{}; already retried {} time{}",
            verdict.reason,
            limit.max_retries,
            if limit.max_retries == 1 { "" } else { "s" }
        );
    }
}

fn decide(
    report: &AttemptReport,
    ctx: &AttemptContext,
    policy: &Policy,
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
            return again(pause, progress, ctx, policy, env, tally, previous_delay);
        }
        Step::Failed { retry } => retry,
    };
    if report.verdict.class == Class::Permanent {
        return Next::Stop(
            StopReason::Permanent,
            format!("permanent failure: {}", report.verdict.reason),
        );
    }
    if report.budget_expired {
        return Next::Stop(
            StopReason::MaxTime,
            budget_message(policy, "ran out during the last attempt"),
        );
    }
    if policy.is_last(ctx.number) {
        return Next::Stop(StopReason::Attempts, tally.out_of_attempts(ctx.number));
    }
    let left = policy.max_time.map(|d| d.saturating_sub(env.clock.now()));
    let hint = report.wait_hint.as_ref().filter(|h| !h.wait.is_zero());
    if let Some(hint) = hint.filter(|_| !policy.ignore_wait_hints) {
        return obey_hint(hint, retry, policy, left, env.jitter.rng());
    }
    let delay = policy
        .schedule
        .delay(retry, *previous_delay, env.jitter.rng());
    *previous_delay = Some(delay);
    match left {
        Some(left) if delay >= left => {
            Next::Stop(StopReason::MaxTime, too_little_left(policy, left, delay))
        }
        _ => Next::Sleep(delay),
    }
}

/// A success the goal wants more of: the sleep before the next attempt, unless the
/// limit or `--max-time` ends the run first.
fn again(
    pause: Pause,
    progress: String,
    ctx: &AttemptContext,
    policy: &Policy,
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
    let left = policy.max_time.map(|d| d.saturating_sub(env.clock.now()));
    match left {
        Some(left) if delay >= left => {
            let message = too_little_left(policy, left, delay) + &tally.shortfall();
            Next::Stop(StopReason::MaxTime, message)
        }
        _ => Next::Again(delay, progress),
    }
}

/// `stopped: the --max-time budget of 3s has 200ms left, less than the next 1s sleep`.
fn too_little_left(policy: &Policy, left: Duration, delay: Duration) -> String {
    let detail = format!(
        "has {} left, less than the next {} sleep",
        human(left),
        human(delay)
    );
    budget_message(policy, &detail)
}

/// Waits as long as the server asked, plus a spread so that clients told the
/// same time do not come back in one wave; refuses waits past the caps.
fn obey_hint(
    hint: &WaitHint,
    retry: u32,
    policy: &Policy,
    left: Option<Duration>,
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
    if let Some(left) = left.filter(|left| hint.wait >= *left) {
        return Next::Stop(
            StopReason::RetryAfterTooLong,
            format!(
                "{} asked to wait {} ({}), longer than the {} left of --max-time",
                hint.asked_by,
                human(hint.wait),
                hint.source,
                human(left)
            ),
        );
    }
    let delay = policy.schedule.after_wait(hint.wait, retry, rng);
    Next::Sleep(left.map_or(delay, |left| {
        delay.min(left.saturating_sub(Duration::from_millis(1)))
    }))
}

fn budget_message(policy: &Policy, detail: &str) -> String {
    let budget = policy.max_time.map(human).unwrap_or_default();
    format!("stopped: the --max-time budget of {budget} {detail}")
}

/// The exit status, reason and message of a run stopped during a backoff sleep.
fn stopped_while_sleeping(stop: Stop) -> End {
    match stop {
        Stop::Signal(signal) => (
            ExitStatus::of_signal(signal),
            StopReason::Signal,
            format!("interrupted by {} while waiting to retry", signal.name()),
        ),
        Stop::LockLost(message) => (ExitStatus::USAGE, StopReason::LockLost, message),
    }
}

fn finish(
    attempts: Vec<AttemptRecord>,
    holds: Vec<Hold>,
    (exit_code, stopped_because, message): End,
    env: &mut Env<'_>,
) -> RunSummary {
    let summary = RunSummary {
        attempts,
        exit_code,
        stopped_because,
        message,
        elapsed: env.clock.now(),
        holds,
    };
    env.events.event(Event::Stopped { summary: &summary });
    summary
}

/// Whether what is left of the budget, rather than `--timeout`, limits an attempt.
fn budget_limits(timeout: Option<Duration>, budget_left: Option<Duration>) -> bool {
    match (budget_left, timeout) {
        (Some(left), Some(t)) => left < t,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

fn min_opt(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests;
