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
    self, Burst, Done, Lock, Marker, MarkerStore, NoAnswer, Patience, Refused, RunLock, Status,
    host_name,
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
    /// The job's previous slot still runs (`--overlap`), on this scheduler or another.
    Overlap,
}

/// The locks a proceeding run holds, and what it must record on success. Dropping it
/// releases them (in one burst of statements, for PostgreSQL).
pub struct HeldLocks {
    // Dropped in this order: the key lock (with its store), the single-instance lock,
    // then the job's run lock (a slot that replaces this one waits for it).
    once: Option<OnceRun>,
    lock: Option<Box<dyn Lock>>,
    run: Option<Box<dyn RunLock>>,
    fencing_token: Option<i64>,
}

pub(super) struct OnceRun {
    store: Box<dyn MarkerStore>,
    key: String,
    command: Vec<String>,
}

impl OnceRun {
    /// Records the key as skipped while its lock is held, which the record frees: no
    /// other scheduler can claim the slot between the skip and its record.
    pub(super) fn record_skip(&mut self) -> anyhow::Result<()> {
        let marker = Marker {
            status: Status::Skipped,
            key: self.key.clone(),
            succeeded_at: crate::domain::rfc3339_millis(SystemTime::now()),
            host: host_name(),
            pid: std::process::id(),
            command: self.command.clone(),
            attempts: 0,
        };
        self.store
            .record(&marker, &Bound::signals_only())
            .with_context(|| format!("cannot record {:?} in {}", self.key, self.store.describe()))
    }
}

impl Drop for HeldLocks {
    fn drop(&mut self) {
        let _burst = Burst::begin();
        drop(self.once.take());
        drop(self.lock.take());
        drop(self.run.take());
    }
}

impl HeldLocks {
    /// The locks a proceeding run holds; its fencing token is `--lock`'s, else the key's.
    pub(super) fn new(
        once: Option<OnceRun>,
        lock: Option<Box<dyn Lock>>,
        run: Option<Box<dyn RunLock>>,
    ) -> HeldLocks {
        let fencing_token = lock
            .as_ref()
            .and_then(|l| l.fencing_token())
            .or_else(|| once.as_ref().and_then(|o| o.store.key_token()));
        HeldLocks {
            once,
            lock,
            run,
            fencing_token,
        }
    }

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

/// How long the gate may wait for its locks, and the bound of its calls.
pub(super) struct Waiting<'a> {
    /// Each call's bound: the run's time limit.
    pub(super) calls: Bound,
    /// `--lock-wait`, or less when the time limit is shorter.
    pub(super) wait: Duration,
    pub(super) deadline: Instant,
    pub(super) limit: &'a TimeLimit,
}

/// A part of the gate: its value, or the gate's early end (`Ok`: a skip or a stop;
/// `Err`: retry's own error).
pub(super) type Part<T> = Result<T, anyhow::Result<Gate>>;

/// Ends the gate with `gate`.
fn end<T>(gate: Gate) -> Part<T> {
    Err(Ok(gate))
}

/// Opens the `--once` key's store and skips a key that already ran.
pub(super) fn open_once(
    opts: &GateOptions,
    key: &str,
    state: &crate::state::Backend,
    waiting: &Waiting<'_>,
) -> Part<OnceRun> {
    let opened = state::open_markers(state, opts.statuses, &waiting.calls);
    let mut store = match opened {
        Ok(store) => store,
        Err(err) => return Err(stopped_by(err, "connecting to the --state server")),
    };
    match store.find(key, &waiting.calls) {
        Ok(Some(done)) if skips(opts, &done) => return end(already_done(key, &done)),
        Ok(found) => again(key, found.as_ref()),
        Err(err) => return Err(stopped_by(err, "reading the --once key")),
    }
    Ok(OnceRun {
        store,
        key: key.to_string(),
        command: opts.command.clone(),
    })
}

/// Takes `--lock`, waiting up to `--lock-wait` for it.
pub(super) fn take_lock(
    opts: &GateOptions,
    target: &crate::state::Backend,
    waiting: &Waiting<'_>,
) -> Part<Box<dyn Lock>> {
    let opened = state::open_lock(target, opts.state.as_ref(), &waiting.calls);
    let mut backend = match opened {
        Ok(backend) => backend,
        Err(err) => return Err(stopped_by(err, "connecting to the --lock server")),
    };
    let what = format!("lock {}", backend.describe());
    let pauses = backend.poll_pauses();
    match acquire(
        &what,
        waiting,
        (waiting.deadline, report::info),
        pauses,
        |b| backend.try_acquire(b),
    ) {
        Ok(Acquired::Held) => {}
        Ok(Acquired::Busy) => return end(busy(opts, waiting.wait, format!("{what} is busy"))),
        Ok(Acquired::Stopped(stop)) => return end(stopped(stop, &format!("waiting for {what}"))),
        Err(err) => return Err(stopped_by(err, &format!("taking {what}"))),
    }
    report::verbose(1, &format!("holding {what}"));
    Ok(backend)
}

/// Takes the key's lock (waiting up to `--lock-wait` when `wait`, else trying once)
/// and checks the key again under it.
pub(super) fn take_key(
    opts: &GateOptions,
    run: &mut OnceRun,
    waiting: &Waiting<'_>,
    until: Instant,
) -> Part<()> {
    let what = format!("the lock on --once key {:?}", run.key);
    let store = &mut run.store;
    let key = run.key.as_str();
    let pauses = store.poll_pauses();
    // A slot's claim is its scheduler's business: its wait is said at -v only.
    let say: fn(&str) = match opts.slot {
        Some(_) => |text| report::verbose(1, text),
        None => report::info,
    };
    match acquire(&what, waiting, (until, say), pauses, |b| {
        store.try_lock_key(key, b)
    }) {
        Ok(Acquired::Held) => {}
        Ok(Acquired::Busy) => {
            let text =
                format!("another run with --once key {key:?} is in progress ({what} is busy)");
            return end(busy(opts, waiting.wait, text));
        }
        Ok(Acquired::Stopped(stop)) => return end(stopped(stop, &format!("waiting for {what}"))),
        Err(err) => return Err(stopped_by(err, &format!("taking {what}"))),
    }
    match store.find(key, &waiting.calls) {
        Ok(Some(done)) if skips(opts, &done) => return end(already_done(key, &done)),
        Ok(_) => {}
        Err(err) => return Err(stopped_by(err, "reading the --once key")),
    }
    report::verbose(1, &format!("holding {what} in {}", store.describe()));
    Ok(())
}

pub(super) enum Acquired {
    Held,
    Busy,
    Stopped(Stop),
}

/// Tries `attempt` until it succeeds or `deadline` (`--lock-wait`) passes, saying by
/// `say` that it waits, pausing in between as `pauses` says, with no connection open,
/// so that a stopping signal (or a lock already held being lost) ends the wait at once;
/// the last try is made at the deadline. Each try is bounded by the run's time limit. A poll after the
/// first that the server refuses for want of capacity finds the lock as busy as
/// before: the next poll asks again (a refusal is an error only when the last poll
/// met one).
pub(super) fn acquire(
    what: &str,
    waiting: &Waiting<'_>,
    (deadline, say): (Instant, fn(&str)),
    mut pauses: Pauses,
    mut attempt: impl FnMut(&Bound) -> anyhow::Result<bool>,
) -> anyhow::Result<Acquired> {
    let mut announced = false;
    let calls = Bound::ending_with(waiting.limit);
    let wait = deadline.saturating_duration_since(Instant::now());
    let bound = Bound::until(Some(deadline)).or_lost_lock();
    let pause = |d| state::idle(|| wait::sleep(d, &bound));
    let mut polls = 0;
    let mut refused = None;
    let tried = wait::poll_until(&bound, &mut pauses, pause, || {
        polls += 1;
        // The first poll asks for the whole wait; later ones once, and are polled again.
        let _poll = (polls > 1).then(|| Burst::patient(Patience::None));
        let held = match attempt(&calls) {
            Err(e) if passing(&e) => {
                refused = Some(e);
                return Ok(None);
            }
            held => held?,
        };
        refused = None;
        if !held && !announced && Instant::now() < deadline {
            say(&format!(
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

/// Whether a poll's failure is a state the server passes through (a refusal for
/// capacity, a restart of the server or the pooler, no answer within `connect_timeout`
/// while a pooler waits for its server): the lock is polled again while the wait lasts.
fn passing(err: &anyhow::Error) -> bool {
    err.downcast_ref::<Refused>().is_some()
        || matches!(err.downcast_ref::<NoAnswer>(), Some(NoAnswer::Timeout(_)))
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
pub(super) fn stopped(stop: Stop, doing: &str) -> Gate {
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
pub(super) fn stopped_by(err: anyhow::Error, doing: &str) -> anyhow::Result<Gate> {
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
