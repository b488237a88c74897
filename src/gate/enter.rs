//! The gate in front of the retry loop: skips a `--once` key that already ran, takes
//! `--lock` and the key's lock (waiting up to `--lock-wait`, never past `--max-time`),
//! and says whether the run proceeds, is skipped, or was stopped meanwhile. The locks
//! a proceeding run holds, and recording how it ended under them, are `HeldLocks`.

use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;

use crate::config::GateOptions;
use crate::domain::{ExitStatus, Interrupted, RunSummary, Stop, TimeLimit, human};
use crate::report;
use crate::signals;
use crate::state::{
    self, Burst, Done, Lock, Marker, MarkerStore, Patience, Refused, Status, host_name,
};
use crate::wait::{self, Bound, Ended, Pauses};

/// Whether the run goes ahead.
pub enum Gate {
    /// Go ahead; the locks stay held until `HeldLocks` is dropped.
    Proceed(HeldLocks),
    /// Do not run: exit with `exit_code` after printing `message`.
    Skip {
        exit_code: ExitStatus,
        message: String,
        why: SkipWhy,
    },
    /// The run must stop before it began (a signal while connecting or waiting, or
    /// a lock lost while waiting for another): `message` says which.
    Stopped { stop: Stop, message: String },
}

/// Why the gate skipped a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipWhy {
    /// The `--once` key already has a record.
    Done,
    /// `--lock` was busy.
    LockBusy,
    /// Another run of the same `--once` key holds its lock; that run records the end.
    KeyBusy,
}

/// The locks a proceeding run holds, and what it must record on success. Dropping it
/// releases them (in one burst of statements, for PostgreSQL).
pub struct HeldLocks {
    // Dropped in this order: the key lock (with its store), then the single-instance lock.
    once: Option<OnceRun>,
    lock: Option<Box<dyn Lock>>,
    fencing_token: Option<i64>,
}

struct OnceRun {
    store: Box<dyn MarkerStore>,
    key: String,
    command: Vec<String>,
}

impl Drop for HeldLocks {
    fn drop(&mut self) {
        let _burst = Burst::begin();
        // The key lock (with its store) first, then the single-instance lock.
        drop(self.once.take());
        drop(self.lock.take());
    }
}

impl HeldLocks {
    /// The fencing token (`RETRY_FENCING_TOKEN`): the `--lock` token when there is a
    /// `--lock`, else the `--once` key's (or the slot's).
    pub fn fencing_token(&self) -> Option<i64> {
        self.fencing_token
    }

    /// Whether every lock is still held, checked now when a marker is about to be
    /// written (a success recorded without its lock could be done twice).
    pub fn confirm(&mut self) -> Result<(), String> {
        if let Some(lost) = signals::lock_lost() {
            return Err(lost);
        }
        if let (Some(_), Some(lock)) = (&self.once, &mut self.lock) {
            lock.confirm(&Bound::signals_only())?;
        }
        Ok(())
    }

    /// Frees every lock now: the key's lock (with its store), then `--lock`. A lock
    /// that cannot be freed is a warning: it expires on its own.
    pub fn release(self) {
        drop(self);
    }

    /// Records the `--once` key after a successful run (nothing to do without `--once`).
    pub fn record_success(&mut self, summary: &RunSummary) -> anyhow::Result<()> {
        self.record_end(Status::Succeeded, summary)
    }

    /// Records how the run of the `--once` key ended, while its lock is still held.
    /// After the last attempt: bounded by the store's own limits and signals only.
    pub fn record_end(&mut self, status: Status, summary: &RunSummary) -> anyhow::Result<()> {
        let Some(once) = &mut self.once else {
            return Ok(());
        };
        let marker = Marker {
            status,
            key: once.key.clone(),
            succeeded_at: crate::domain::rfc3339_millis(SystemTime::now()),
            host: host_name(),
            pid: std::process::id(),
            command: once.command.clone(),
            attempts: u32::try_from(summary.attempts.len()).unwrap_or(u32::MAX),
        };
        once.store
            .record(&marker, &Bound::signals_only())
            .with_context(|| {
                format!(
                    "the run {} but --once key {:?} could not be recorded in {}",
                    status.phrase(),
                    once.key,
                    once.store.describe()
                )
            })?;
        report::verbose(
            1,
            &format!(
                "recorded --once key {:?} ({}) in {}",
                once.key,
                status.as_str(),
                once.store.describe()
            ),
        );
        Ok(())
    }
}

/// Passes the gate: skips a key that already succeeded, takes `--lock`, then the
/// key lock, and re-checks the key under it, so that two runs never both proceed.
/// Waiting for the locks ends at `--lock-wait`, or after all of the run's time limit
/// when that is shorter (whose end bounds every call before the attempts too). The
/// checks and takes share one
/// connection (none is open while a wait pauses), and a server that refuses it for
/// capacity is asked again until `--lock-wait` ends, or for `connect_timeout`.
pub fn prepare(opts: &GateOptions, limit: &TimeLimit) -> anyhow::Result<Gate> {
    let calls = Bound::ending_with(limit);
    let wait = limit
        .total()
        .map_or(opts.lock_wait, |t| t.min(opts.lock_wait));
    let deadline = Instant::now() + wait;
    let _burst = Burst::patient(if wait.is_zero() {
        Patience::ConnectTimeout
    } else {
        Patience::Until(deadline)
    });
    let mut once = None;
    if let (Some(key), Some(state)) = (&opts.once, &opts.state) {
        let opened = state::open_markers(state, opts.statuses, &calls);
        let mut store = match opened {
            Ok(store) => store,
            Err(err) => return stopped_by(err, "connecting to the --state server"),
        };
        match store.find(key, &calls) {
            Ok(Some(done)) if skips(opts, &done) => return Ok(already_done(key, &done)),
            Ok(found) => again(key, found.as_ref()),
            Err(err) => return stopped_by(err, "reading the --once key"),
        }
        once = Some(OnceRun {
            store,
            key: key.to_string(),
            command: opts.command.clone(),
        });
    }
    let mut lock = None;
    let mut fencing_token = None;
    if let Some(target) = &opts.lock {
        let opened = state::open_lock(target, opts.state.as_ref(), &calls);
        let mut backend = match opened {
            Ok(backend) => backend,
            Err(err) => return stopped_by(err, "connecting to the --lock server"),
        };
        let what = format!("lock {}", backend.describe());
        let pauses = backend.poll_pauses();
        match acquire(&what, deadline, limit, wait, pauses, |b| {
            backend.try_acquire(b)
        }) {
            Ok(Acquired::Held) => {}
            Ok(Acquired::Busy) => return Ok(busy(opts, wait, format!("{what} is busy"))),
            Ok(Acquired::Stopped(stop)) => {
                return Ok(stopped(stop, &format!("waiting for {what}")));
            }
            Err(err) => return stopped_by(err, &format!("taking {what}")),
        }
        report::verbose(1, &format!("holding {what}"));
        fencing_token = backend.fencing_token();
        lock = Some(backend);
    }
    if let Some(run) = &mut once {
        let what = format!("the lock on --once key {:?}", run.key);
        let store = &mut run.store;
        let key = run.key.as_str();
        let pauses = store.poll_pauses();
        match acquire(&what, deadline, limit, wait, pauses, |b| {
            store.try_lock_key(key, b)
        }) {
            Ok(Acquired::Held) => {}
            Ok(Acquired::Busy) => {
                let text =
                    format!("another run with --once key {key:?} is in progress ({what} is busy)");
                return Ok(busy(opts, wait, text));
            }
            Ok(Acquired::Stopped(stop)) => {
                return Ok(stopped(stop, &format!("waiting for {what}")));
            }
            Err(err) => return stopped_by(err, &format!("taking {what}")),
        }
        match store.find(key, &calls) {
            Ok(Some(done)) if skips(opts, &done) => return Ok(already_done(key, &done)),
            Ok(_) => {}
            Err(err) => return stopped_by(err, "reading the --once key"),
        }
        report::verbose(1, &format!("holding {what} in {}", store.describe()));
        fencing_token = fencing_token.or_else(|| store.key_token());
    }
    if let Some(token) = fencing_token {
        report::verbose(1, &format!("fencing token {token} (RETRY_FENCING_TOKEN)"));
    }
    Ok(Gate::Proceed(HeldLocks {
        once,
        lock,
        fencing_token,
    }))
}

enum Acquired {
    Held,
    Busy,
    Stopped(Stop),
}

/// Tries `attempt` until it succeeds or `deadline` (`--lock-wait`) passes, pausing in
/// between as `pauses` says, with no connection open, so that a stopping signal (or a
/// lock already held being lost) ends the wait at once; the last try is made at the
/// deadline. Each try is bounded by the run's time limit. A poll after the
/// first that the server refuses for want of capacity finds the lock as busy as
/// before: the next poll asks again (a refusal is an error only when the last poll
/// met one).
fn acquire(
    what: &str,
    deadline: Instant,
    limit: &TimeLimit,
    wait: Duration,
    mut pauses: Pauses,
    mut attempt: impl FnMut(&Bound) -> anyhow::Result<bool>,
) -> anyhow::Result<Acquired> {
    let mut announced = false;
    let calls = Bound::ending_with(limit);
    let bound = Bound::until(Some(deadline)).or_lost_lock();
    let pause = |d| state::idle(|| wait::sleep(d, &bound));
    let mut polls = 0;
    let mut refused = None;
    let tried = wait::poll_until(&bound, &mut pauses, pause, || {
        polls += 1;
        let held = if polls == 1 {
            attempt(&calls)?
        } else {
            let _poll = Burst::patient(Patience::None);
            match attempt(&calls) {
                Err(e) if e.downcast_ref::<Refused>().is_some() => {
                    refused = Some(e);
                    return Ok(None);
                }
                held => held?,
            }
        };
        refused = None;
        if !held && !announced && Instant::now() < deadline {
            report::info(&format!(
                "{what} is busy; waiting up to {} for it",
                human(wait)
            ));
            announced = true;
        }
        anyhow::Ok(held.then_some(()))
    });
    match (tried, refused) {
        (Ok(Ok(())), _) => Ok(Acquired::Held),
        (Ok(Err(e)), _) | (Err(Ended::TimedOut), Some(e)) => Err(e),
        (Err(Ended::TimedOut), None) => Ok(Acquired::Busy),
        (Err(Ended::Stopped(stop)), _) => Ok(Acquired::Stopped(stop)),
    }
}

/// `wait` is how long the gate waited: `--lock-wait`, or less when the time limit is shorter.
fn busy(opts: &GateOptions, wait: Duration, text: String) -> Gate {
    let waited = if wait.is_zero() {
        String::new()
    } else if wait < opts.lock_wait {
        format!(" after waiting {} (all of --max-time)", human(wait))
    } else {
        format!(" after waiting {}", human(wait))
    };
    let exit_code = opts.busy_exit;
    Gate::Skip {
        exit_code,
        message: format!("skipped: {text}{waited}; exit status {exit_code}"),
        why: if text.starts_with("another run") {
            SkipWhy::KeyBusy
        } else {
            SkipWhy::LockBusy
        },
    }
}

/// A gate that stopped while `doing` something: a signal, or a lock lost meanwhile.
fn stopped(stop: Stop, doing: &str) -> Gate {
    let message = match &stop {
        Stop::Signal(sig) => format!(
            "stopped by {sig} while {doing}; exit status {}",
            ExitStatus::of_signal(*sig)
        ),
        Stop::LockLost(lost) => format!("{lost} while {doing}; exit status {}", ExitStatus::USAGE),
    };
    Gate::Stopped { stop, message }
}

/// A gate stopped by a signal while talking to a store; any other error stays an error.
fn stopped_by(err: anyhow::Error, doing: &str) -> anyhow::Result<Gate> {
    match err.downcast_ref::<Interrupted>() {
        Some(Interrupted(sig)) => Ok(stopped(Stop::Signal(*sig), doing)),
        None => Err(err),
    }
}

/// Whether a record makes the run a skip: any record of a scheduled slot (the slot was
/// handled, however it ended), only a success for a `--once` key (a run that gave up
/// is run again).
fn skips(opts: &GateOptions, done: &Done) -> bool {
    opts.statuses || done.status == Status::Succeeded
}

/// Says, with `-v`, that a `--once` key runs again although it has a record.
fn again(key: &str, found: Option<&Done>) {
    if let Some(done) = found {
        report::verbose(
            1,
            &format!(
                "--once key {key:?} {} at {} on host {}, not succeeded: running it again",
                done.status.phrase(),
                done.succeeded_at,
                done.host
            ),
        );
    }
}

fn already_done(key: &str, done: &Done) -> Gate {
    Gate::Skip {
        exit_code: ExitStatus::SUCCESS,
        why: SkipWhy::Done,
        message: format!(
            "skipped: --once key {key:?} already {} at {}{} on host {} (recorded in {}); exit status 0",
            done.status.phrase(),
            done.succeeded_at,
            age(&done.succeeded_at),
            done.host,
            done.place
        ),
    }
}

/// " (3h 5m ago)" for an RFC 3339 time in the past; empty when unknown.
fn age(rfc3339: &str) -> String {
    let Some(then) = crate::domain::parse_rfc3339(rfc3339) else {
        return String::new();
    };
    let Ok(ago) = SystemTime::now().duration_since(SystemTime::from(then)) else {
        return String::new();
    };
    let minutes = Duration::from_secs(ago.as_secs() / 60 * 60);
    if minutes.is_zero() {
        " (less than a minute ago)".into()
    } else {
        format!(" ({} ago)", humantime::format_duration(minutes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_are_rounded_to_minutes() {
        let then =
            crate::domain::rfc3339_millis(SystemTime::now() - Duration::from_secs(3 * 3600 + 65));
        assert_eq!(age(&then), " (3h 1m ago)");
        assert_eq!(age("not a time"), "");
    }
}
