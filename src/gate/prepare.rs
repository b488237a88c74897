//! The gate's order: a plain run skips a `--once` key that already succeeded, takes
//! `--lock`, then the key's lock; a scheduled slot claims its key first ([`slot`](super::slot)).
//! The parts each takes are [`enter`](super::enter)'s.

use std::time::Instant;

use super::enter::{Gate, HeldLocks, Part, Waiting, open_once, take_key, take_lock};
use crate::config::GateOptions;
use crate::domain::TimeLimit;
use crate::report;
use crate::state::{Burst, Patience};
use crate::wait::Bound;

/// Passes the gate: skips a key that already succeeded, takes `--lock`, then the
/// key lock, and re-checks the key under it, so that two runs never both proceed. A
/// scheduled slot claims its key first and takes the job's run lock next (the
/// [`slot`](super::slot) part). Waiting for the locks ends at `--lock-wait`, or after
/// all of the run's time limit when that is shorter (whose end bounds every call before
/// the attempts too). The checks and takes share one connection (none is open while a
/// wait pauses), and a server that refuses it for capacity is asked again until
/// `--lock-wait` ends, or for `connect_timeout`.
pub fn prepare(opts: &GateOptions, limit: &TimeLimit) -> anyhow::Result<Gate> {
    let wait = limit
        .total()
        .map_or(opts.lock_wait, |t| t.min(opts.lock_wait));
    let waiting = Waiting {
        calls: Bound::ending_with(limit),
        wait,
        deadline: Instant::now() + wait,
        limit,
    };
    let _burst = Burst::patient(if wait.is_zero() {
        Patience::ConnectTimeout
    } else {
        Patience::Until(waiting.deadline)
    });
    let passed = match &opts.slot {
        Some(slot) => super::slot::pass(opts, slot, &waiting),
        None => pass(opts, &waiting),
    };
    match passed {
        Ok(held) => {
            if let Some(token) = held.fencing_token() {
                report::verbose(1, &format!("fencing token {token} (RETRY_FENCING_TOKEN)"));
            }
            Ok(Gate::Proceed(held))
        }
        Err(ended) => ended,
    }
}

/// The gate of a run that is no scheduled slot.
fn pass(opts: &GateOptions, waiting: &Waiting<'_>) -> Part<HeldLocks> {
    let mut once = match (&opts.once, &opts.state) {
        (Some(key), Some(state)) => Some(open_once(opts, key, state, waiting)?),
        _ => None,
    };
    let lock = opts
        .lock
        .as_ref()
        .map(|target| take_lock(opts, target, waiting))
        .transpose()?;
    if let Some(run) = &mut once {
        take_key(opts, run, waiting, waiting.deadline)?;
    }
    Ok(HeldLocks::new(once, lock, None))
}
