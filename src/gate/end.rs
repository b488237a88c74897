//! What a run's end records under its locks, and what that makes of the run: the
//! success of a `--once` key (a lock lost first, or a marker that cannot be written,
//! is exit 125), and a scheduled slot's other endings, with a store of their own when
//! the slot's lock is gone.

use std::time::SystemTime;

use anyhow::Context;

use super::HeldLocks;
use crate::domain::{ExitStatus, RunSummary, StopReason};
use crate::report;
use crate::state::{self, Backend, LockLost, Marker, Status, host_name};
use crate::wait::Bound;

/// Records how a slot ended with a store of its own (for a slot that never held its
/// key lock, or whose lock was lost). After the slot: signals and the store's limits only.
fn record_status(
    target: &Backend,
    key: &str,
    status: Status,
    command: &[String],
) -> anyhow::Result<()> {
    let bound = Bound::signals_only();
    let mut store = state::open_markers(target, true, &bound)?;
    let marker = Marker {
        key: key.to_string(),
        status,
        succeeded_at: crate::domain::rfc3339_millis(SystemTime::now()),
        host: host_name(),
        pid: std::process::id(),
        command: command.to_vec(),
        attempts: 0,
    };
    store
        .record(&marker, &bound)
        .with_context(|| format!("cannot record {key:?} in {}", store.describe()))
}

/// Records the success under the run's locks: a lock lost first (or a lease found gone
/// by the statement that records) is exit 125 `lock_lost`; a marker that cannot be
/// written is exit 125 saying a later run will run the command again.
pub fn record_success(held: &mut HeldLocks, summary: RunSummary) -> RunSummary {
    if let Err(lost) = held.confirm() {
        return lost_after_success(summary, &lost);
    }
    match held.record_success(&summary) {
        Ok(()) => summary,
        Err(err) if err.downcast_ref::<LockLost>().is_some() => {
            let lost = err
                .downcast_ref::<LockLost>()
                .map(ToString::to_string)
                .unwrap_or_default();
            lost_after_success(summary, &format!("the command succeeded but {lost}"))
        }
        Err(err) => {
            let message = format!(
                "{err:#}; the command succeeded but its success could not be recorded, so a later run will run it again"
            );
            report::error(&format!("{message}; exit status {}", ExitStatus::USAGE));
            RunSummary {
                exit_code: ExitStatus::USAGE,
                message,
                ..summary
            }
        }
    }
}

/// The last attempt succeeded, but a lock was lost before its success could count.
fn lost_after_success(summary: RunSummary, lost: &str) -> RunSummary {
    let message = format!("{lost}; the success is not recorded");
    report::error(&format!("{message}; exit status {}", ExitStatus::USAGE));
    RunSummary {
        exit_code: ExitStatus::USAGE,
        stopped_because: StopReason::LockLost,
        message,
        ..summary
    }
}

/// A slot that ran and did not succeed is recorded as gave up (an interrupted one is
/// not: it has no end, so it counts as missed).
pub fn record_gave_up(
    held: &mut HeldLocks,
    (state, key): (&Backend, &str),
    summary: &RunSummary,
    command: &[String],
) {
    if matches!(
        summary.stopped_because,
        StopReason::Success | StopReason::Signal
    ) {
        return;
    }
    // A lost lock took the store's connection with it: record on a fresh one.
    let recorded = held
        .record_end(Status::GaveUp, summary)
        .or_else(|_| record_status(state, key, Status::GaveUp, command));
    if let Err(err) = recorded {
        report::error(&format!("{err:#}"));
    }
}

/// Records how a slot ended with a store of its own ([`record_status`]); a record that
/// cannot be made is an error line, and the slot's end stands.
pub fn record_slot(state: &Backend, key: &str, status: Status, command: &[String]) {
    if let Err(err) = record_status(state, key, status, command) {
        report::error(&format!("{err:#}"));
    }
}
