//! The one retry loop, shared by every mode. It owns the policy (attempt limit,
//! the time limit, backoff and jitter, server-requested waits, per-rule retry
//! limits) and nothing else: running an attempt and classifying it is the
//! executor's work, what the run is after (the first success, N in a row, the first
//! failure) the goal's tally, sleeping is the sleeper's, running `--on-retry` beside
//! the sleep is the retry hook's, and the clock is injected so the loop is tested
//! without sleeping. Each turn of the loop is a sequence of phases on [`Loop`]: the
//! attempt and what follows it ([`decide`], and the shared budget in [`budget`]), then the
//! sleep before a retry, the pause after a success the goal wants more of, or the
//! run's end with its output delivered.

use std::collections::HashMap;
use std::time::Duration;

use crate::domain::{
    AttemptRecord, Class, Event, ExitStatus, Hold, Interrupted, OutputLost, Policy, RetryCapKey,
    RunSummary, Signal, SpanContext, Stop, StopReason, TimeLimit,
};
use crate::exec::{AttemptContext, AttemptReport, Executor};

mod budget;
mod decide;
mod env;
#[cfg(test)]
pub mod fakes;
mod goal;

pub use env::{Clock, Env, Refusal, RetryBudget, RetryFacts, RetryHook, Sleeper};
use goal::Tally;
pub use goal::describe_goal;

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

/// Runs attempts until the policy, the goal, a signal or a lost lock ends the run.
pub fn run(
    exec: &mut dyn Executor,
    policy: &Policy,
    env: &mut Env<'_>,
) -> anyhow::Result<RunSummary> {
    let mut turns = Loop::new(policy);
    let mut number = 1;
    loop {
        let (report, next) = turns.attempt(exec, env, number)?;
        let ended = match next {
            Next::Sleep(delay) => turns.retry_after(exec, env, &report, delay).err(),
            Next::Again(delay, progress) => turns.again_after(exec, env, delay, &progress).err(),
            Next::Stop(reason, message) => {
                Some(turns.stop(exec, env, &report, (reason, message))?)
            }
        };
        if let Some(end) = ended {
            return Ok(finish(turns.records, turns.holds, end, env));
        }
        number = number.saturating_add(1);
    }
}

/// What the loop keeps from one attempt to the next.
struct Loop<'p> {
    policy: &'p Policy,
    records: Vec<AttemptRecord>,
    holds: Vec<Hold>,
    limit_counts: HashMap<RetryCapKey, u32>,
    /// The last backoff delay drawn (decorrelated jitter draws the next from it).
    previous_delay: Option<Duration>,
    /// The delay before the one this retry's was drawn after: a hold draws afresh
    /// from the distribution this retry's delay came from.
    drawn_after: Option<Duration>,
    tally: Tally,
    /// When the first attempt started, on the run's clock (`--retry-max-time` counts from it).
    first_started: Option<Duration>,
}

impl<'p> Loop<'p> {
    fn new(policy: &'p Policy) -> Loop<'p> {
        Loop {
            policy,
            records: Vec::new(),
            holds: Vec::new(),
            limit_counts: HashMap::new(),
            previous_delay: None,
            drawn_after: None,
            tally: Tally::new(policy.goal),
            first_started: None,
        }
    }

    /// Makes attempt `number` within what is left of the time limit, decides what
    /// follows it (the shared budget has its say), and records it with its sleep.
    fn attempt(
        &mut self,
        exec: &mut dyn Executor,
        env: &mut Env<'_>,
        number: u32,
    ) -> anyhow::Result<(AttemptReport, Next)> {
        let policy = self.policy;
        // The clock counts from the run's start: what ran before the loop is already spent.
        let now = env.clock.now();
        self.first_started.get_or_insert(now);
        let ctx = AttemptContext {
            number,
            attempts: policy.attempts,
            timeout: env.limit.cap(policy.timeout, now),
            time_left: env.limit.left(now),
            cut_by_time_limit: env.limit.cuts(policy.timeout, now),
            span: env.trace.map(SpanContext::child),
        };
        env.events.event(Event::AttemptStarting {
            number,
            attempts: ctx.attempts,
            timeout: ctx.timeout,
        });
        let started_at = env.clock.wall();
        let mut report = exec.attempt(&ctx)?;
        let duration = env.clock.now().saturating_sub(now);
        decide::apply_retry_cap(&mut report.verdict, &mut self.limit_counts);
        self.drawn_after = self.previous_delay;
        let next = decide::decide(
            &report,
            &ctx,
            policy,
            self.start_by(&env.limit),
            env,
            &mut self.tally,
            &mut self.previous_delay,
        );
        let next = budget::consult_budget(&report, next, env);
        let mut record = record_of(number, (started_at, duration), &report, &next);
        record.span = ctx.span.map(|span| span.span_id);
        self.records.push(record);
        Ok((report, next))
    }

    /// The latest time the next attempt may start.
    fn start_by(&self, limit: &TimeLimit) -> Option<decide::StartBy> {
        decide::StartBy::of(self.policy, limit, self.first_started.unwrap_or_default())
    }

    /// A failure retried after `delay`: the sleep with `--on-retry` beside it, then
    /// the time limit's check and, under `--throttled wait`, the budget's holds.
    fn retry_after(
        &mut self,
        exec: &mut dyn Executor,
        env: &mut Env<'_>,
        report: &AttemptReport,
        delay: Duration,
    ) -> Result<(), End> {
        let policy = self.policy;
        let start_by = self.start_by(&env.limit);
        let record = self.records.last().expect("the attempt is recorded");
        env.events.event(Event::AttemptFailed {
            record,
            attempts: policy.attempts,
            next: Some(delay),
        });
        exec.discard();
        let facts = RetryFacts {
            record,
            exit_code: report.exit_code,
            next_delay: delay,
            time_left: env.limit.left(env.clock.now()),
        };
        let sleep_ends = env.clock.now() + delay;
        sleep_with_hook(env, &facts, record.number + 1).map_err(stopped_while_sleeping)?;
        if let Some(by) = start_by.filter(|by| env.clock.now() >= by.at) {
            // The sleep ends before the time limit; what runs past it is the hook.
            let during = if sleep_ends < by.at {
                "ran out during the --on-retry hook"
            } else {
                "ran out while waiting to retry"
            };
            let message = by.message(during);
            return Err((report.exit_code, StopReason::MaxTime, message));
        }
        let asked = budget::Asked {
            retry: record.number,
            drawn_after: self.drawn_after,
            last_exit: report.exit_code,
        };
        budget::hold_while_refused(env, policy, (&asked, start_by), &mut self.holds)
    }

    /// The sleep after a success the goal wants more of (no `--on-retry`: nothing
    /// failed). A run that reaches the time limit here ends as it would after that success.
    fn again_after(
        &mut self,
        exec: &mut dyn Executor,
        env: &mut Env<'_>,
        delay: Duration,
        progress: &str,
    ) -> Result<(), End> {
        exec.discard();
        let (policy, tally) = (self.policy, &self.tally);
        let record = self.records.last().expect("the attempt is recorded");
        env.events.event(Event::Succeeded {
            record,
            attempts: policy.attempts,
            next: Some((delay, progress)),
        });
        env.sleeper
            .sleep(delay, record.number.saturating_add(1))
            .map_err(stopped_while_sleeping)?;
        if let Some(by) = self
            .start_by(&env.limit)
            .filter(|by| env.clock.now() >= by.at)
        {
            let message = by.message("ran out while waiting for the next attempt");
            let message = format!("{message}{}", tally.shortfall());
            return Err((tally.short_exit(), StopReason::MaxTime, message));
        }
        Ok(())
    }

    /// The run's last attempt: its event, then its output delivered, unless the run
    /// fails on a success short of its goal or stops for a signal or a lost lock.
    fn stop(
        &mut self,
        exec: &mut dyn Executor,
        env: &mut Env<'_>,
        report: &AttemptReport,
        (reason, message): (StopReason, String),
    ) -> anyhow::Result<End> {
        let record = self.records.last().expect("the attempt is recorded");
        say_last(env, record, self.policy.attempts);
        let exit_code = match reason {
            StopReason::Success => ExitStatus::SUCCESS,
            StopReason::Signal => {
                ExitStatus::of_signal(report.interrupted_by.unwrap_or(Signal::new(0)))
            }
            StopReason::LockLost => ExitStatus::USAGE,
            _ if record.class == Class::Success => self.tally.short_exit(),
            _ => report.exit_code,
        };
        // A run that fails on a success short of its goal shows nothing of it as a result.
        let short = record.class == Class::Success && !exit_code.is_success();
        if short || matches!(reason, StopReason::Signal | StopReason::LockLost) {
            exec.discard();
            return Ok((exit_code, reason, message));
        }
        deliver(exec, (exit_code, reason, message))
    }
}

/// Hands the last attempt's output on. Output that was lost makes the run a failure (the
/// output is the result); a signal while writing a held output to a stalled reader ends
/// the run at once.
fn deliver(exec: &mut dyn Executor, end: End) -> anyhow::Result<End> {
    let Err(err) = exec.deliver() else {
        return Ok(end);
    };
    if let Some(lost) = err.downcast_ref::<OutputLost>() {
        return Ok((lost.status, StopReason::Permanent, lost.message.clone()));
    }
    if let Some(Interrupted(signal)) = err.downcast_ref::<Interrupted>() {
        let message = format!("interrupted by {} while writing the output", signal.name());
        return Ok((ExitStatus::of_signal(*signal), StopReason::Signal, message));
    }
    Err(err)
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
        span: None,
    }
}

/// The event of the run's last attempt: it succeeded, or it failed with no retry.
fn say_last(env: &mut Env<'_>, record: &AttemptRecord, attempts: u32) {
    env.events.event(if record.class == Class::Success {
        Event::Succeeded {
            record,
            attempts,
            next: None,
        }
    } else {
        Event::AttemptFailed {
            record,
            attempts,
            next: None,
        }
    });
}

/// The backoff sleep with `--on-retry` running beside it: over when both are.
fn sleep_with_hook(env: &mut Env<'_>, facts: &RetryFacts<'_>, upcoming: u32) -> Result<(), Stop> {
    env.retry_hook.start(facts);
    let slept = env.sleeper.sleep(facts.next_delay, upcoming);
    // A stop during the sleep reaches the hook too: waiting passes the signal on.
    let waited = env.retry_hook.wait();
    slept.and(waited)
}

/// The exit status, reason and message of a run stopped during a backoff sleep.
pub(super) fn stopped_while_sleeping(stop: Stop) -> End {
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

#[cfg(test)]
mod tests;
