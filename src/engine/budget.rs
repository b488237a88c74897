//! How the loop asks the shared retry budget (`--retry-budget`): each attempt is
//! counted, a retry is asked for before its sleep (`--throttled exit`) or after it,
//! where a refusal holds the run (`--throttled wait`). The budget itself is the
//! fleet's, behind [`RetryBudget`](super::RetryBudget).

use std::time::Duration;

use super::decide::StartBy;
use super::{End, Env, Next, Refusal, stopped_while_sleeping};
use crate::domain::{Class, Event, ExitStatus, Hold, HoldCause, Policy, StopReason, human};
use crate::exec::AttemptReport;

/// Counts the attempt in the shared budget, and asks it before a retry. An attempt
/// cut short by retry's own signal or a lost lock, or one retry could not start for
/// lack of resources, says nothing about the service.
pub(super) fn consult_budget(report: &AttemptReport, next: Next, env: &mut Env<'_>) -> Next {
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
pub(super) struct Asked {
    /// The attempt that failed.
    pub retry: u32,
    /// The delay before the one this retry's was drawn after (decorrelated jitter).
    pub drawn_after: Option<Duration>,
    /// The status the run ends with if it ends here.
    pub last_exit: ExitStatus,
}

/// `--throttled wait`: asks the budget when the backoff sleep is over; while it
/// refuses, holds the run (sending nothing, so `-a` is not spent) and asks again. The
/// k-th hold of a retry is a fresh jittered draw of the delay the schedule gives k
/// retries later (so holds back off up to `--max-delay`, as the retries would have),
/// never under a tenth of `--delay`. Held runs that kept asking at the retry's own
/// delay would all come back within that delay of the recovery (a peak of N·100 ms /
/// `E[hold]` requests per 100 ms) and would ask the store several times a second each
/// for the whole outage. A hold that would end past the time limit (`--max-time`, or
/// curl's `--retry-max-time`: `start_by`) is not started: the run ends as `exit` would
/// have.
pub(super) fn hold_while_refused(
    env: &mut Env<'_>,
    policy: &Policy,
    (asked, start_by): (&Asked, Option<StartBy>),
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
        if let Some(by) = start_by.filter(|by| hold >= by.left(now)) {
            let message = format!(
                "{why}: not retrying; {} has {} left, less than the next {} hold",
                by.flag,
                human(by.left(now)),
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
