//! A scheduled slot's gate. The slot's key is its claim: a record of it, or its lock
//! held elsewhere, makes the slot another scheduler's, and this run leaves it alone
//! without a word (its end is that scheduler's to record and say). A claimed slot then
//! takes the job's run lock under `--overlap skip`, `queue` and `replace`, so that the
//! job's slots never run together on any scheduler sharing `--state`; then `--lock`. A
//! claimed slot that does not run (the job's previous slot runs on, `--lock` is busy)
//! is recorded as skipped under its claim.

use std::time::{Duration, Instant};

use super::enter::{
    Acquired, Gate, HeldLocks, OnceRun, Part, SkipWhy, Waiting, acquire, open_once, stopped,
    stopped_by, take_key, take_lock,
};
use crate::config::{GateOptions, SlotGate};
use crate::domain::{ExitStatus, Overlap, human};
use crate::report;
use crate::state::{self, Backend, RunLock};

/// Passes a slot's gate: the claim, the job's run lock, `--lock`.
pub(super) fn pass(opts: &GateOptions, slot: &SlotGate, waiting: &Waiting<'_>) -> Part<HeldLocks> {
    let Some(state) = &opts.state else {
        return Err(Err(anyhow::anyhow!("a scheduled slot has a state")));
    };
    // A crontab's @reboot run claims nothing: it is each replica's own.
    let mut once = match &opts.once {
        Some(key) => {
            let mut once = open_once(opts, key, state, waiting)?;
            // Claimed elsewhere: left to that run, once any wait for it is over.
            take_key(opts, &mut once, waiting, Instant::now() + slot.claim_wait)?;
            Some(once)
        }
        None => None,
    };
    let run = match slot.overlap {
        Overlap::Allow => None,
        _ => Some(take_run_lock(slot, state, once.as_mut(), waiting)?),
    };
    let lock = match opts.lock.as_ref().map(|t| take_lock(opts, t, waiting)) {
        None => None,
        Some(Ok(lock)) => Some(lock),
        Some(Err(Ok(skip @ Gate::Skip { .. }))) => {
            recorded(once.as_mut());
            return Err(Ok(skip));
        }
        Some(Err(other)) => return Err(other),
    };
    Ok(HeldLocks::new(once, lock, run))
}

/// Takes the job's run lock: at once under `--overlap skip`; waiting for the previous
/// slot under `queue`; asking it to stop, then waiting for it, under `replace`.
fn take_run_lock(
    slot: &SlotGate,
    state: &Backend,
    once: Option<&mut OnceRun>,
    waiting: &Waiting<'_>,
) -> Part<Box<dyn RunLock>> {
    let replace = slot.overlap == Overlap::Replace;
    let mut lock = match state::open_run_lock(state, &slot.job, replace, &waiting.calls) {
        Ok(lock) => lock,
        Err(err) => return Err(stopped_by(err, "connecting to the --state server")),
    };
    let what = format!("the run lock of job {}", slot.job);
    let held = match lock.try_acquire(&waiting.calls) {
        Ok(held) => held,
        Err(err) => return Err(stopped_by(err, &format!("taking {what}"))),
    };
    if held {
        return Ok(lock);
    }
    let wait = match slot.overlap {
        Overlap::Queue => slot.queue_wait,
        Overlap::Replace => {
            if let Err(err) = lock.ask_holder_to_stop(&waiting.calls) {
                report::error(&format!(
                    "cannot ask the job's running slot to stop: {err:#}"
                ));
            }
            lock.replace_wait()
        }
        _ => Duration::ZERO,
    };
    let pauses = lock.poll_pauses();
    let until = Instant::now() + wait;
    match acquire(&what, waiting, (until, report::info), pauses, |b| {
        lock.try_acquire(b)
    }) {
        Ok(Acquired::Held) => Ok(lock),
        Ok(Acquired::Busy) => {
            recorded(once);
            let message = format!("skipped: {}", still_running(slot.overlap, wait));
            Err(Ok(Gate::Skip {
                exit_code: ExitStatus::SUCCESS,
                message,
                why: SkipWhy::Overlap,
            }))
        }
        Ok(Acquired::Stopped(stop)) => Err(Ok(stopped(stop, &format!("waiting for {what}")))),
        Err(err) => Err(stopped_by(err, &format!("taking {what}"))),
    }
}

/// Why a slot that found the job's previous slot running did not run.
fn still_running(overlap: Overlap, waited: Duration) -> String {
    match overlap {
        Overlap::Queue => format!(
            "the job's previous slot still ran after waiting {} for it (--overlap queue)",
            human(waited)
        ),
        Overlap::Replace => format!(
            "the job's previous slot had not ended {} after it was asked to (--overlap replace)",
            human(waited)
        ),
        _ => "the job's previous slot still runs (--overlap skip)".into(),
    }
}

/// Records the claimed slot as skipped (a slot that claims nothing has no record); a
/// record that cannot be made is an error line.
fn recorded(once: Option<&mut OnceRun>) {
    if let Some(Err(err)) = once.map(OnceRun::record_skip) {
        report::error(&format!("{err:#}"));
    }
}
