//! Scheduled-job safety: the single-instance lock (`--lock`) and run-once markers
//! (`--once`, `--state`). This module owns the gate in front of the retry loop: it
//! parses lock and state targets, takes the locks, checks and records markers, and
//! decides whether the run proceeds or is skipped. Storage lives behind two small
//! traits, [`Lock`] and [`MarkerStore`], with files in `file.rs` (reached through the
//! checked state directory of `state_dir.rs`, with fencing counters in `fencing.rs`)
//! and PostgreSQL in `postgres/`; the retry loop, the report and the exit status are
//! left to others.
//! Every call takes a [`Bound`]: before the attempts it carries `--max-time`, after
//! them only signals (and each store's own limits). A PostgreSQL lock is a lease
//! that its renewer keeps alive; a lost one stops the run through
//! `signals::lose_lock_within`.

pub mod fencing;
pub mod file;
pub mod postgres;
pub mod state_dir;

use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::config::JobOptions;
use crate::domain::{ExitStatus, Interrupted, RunSummary, Stop, human};
use crate::report;
use crate::signals;
use crate::target::Backend;
use crate::wait::{Bound, Ended};

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

/// How a run of a `--once` key ended, as its record says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Succeeded,
    GaveUp,
    /// A scheduled slot that did not run (overlap, busy lock).
    Skipped,
    /// A scheduled slot refused by an open circuit.
    Refused,
}

impl Status {
    /// Every status, for checks of what a store holds.
    pub const ALL: [Status; 4] = [
        Status::Succeeded,
        Status::GaveUp,
        Status::Skipped,
        Status::Refused,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Succeeded => "succeeded",
            Status::GaveUp => "gave_up",
            Status::Skipped => "skipped",
            Status::Refused => "refused",
        }
    }

    pub fn from_name(name: &str) -> Status {
        match name {
            "gave_up" => Status::GaveUp,
            "skipped" => Status::Skipped,
            "refused" => Status::Refused,
            _ => Status::Succeeded,
        }
    }

    /// How a message says it: "succeeded", "gave up", …
    fn phrase(self) -> &'static str {
        match self {
            Status::Succeeded => "succeeded",
            Status::GaveUp => "gave up",
            Status::Skipped => "was skipped",
            Status::Refused => "was refused",
        }
    }
}

fn succeeded() -> Status {
    Status::Succeeded
}

/// A record exists but cannot be read as one: where fresh state could run work twice
/// (a `--once` marker) the caller fails closed; a first-start record is replaced.
#[derive(Debug)]
pub struct UnreadableRecord {
    pub key: String,
    /// Where it is: a file, or a table at a server.
    pub place: String,
    pub why: String,
    /// What removes it: `rm -- '…'` or `DELETE FROM …`.
    pub remove: String,
}

impl std::fmt::Display for UnreadableRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the record of --once key {:?} in {} cannot be read ({}); retry cannot tell whether \
             the key already ran, so it runs nothing: look at it, then remove it ({}) to run the \
             key again",
            self.key, self.place, self.why, self.remove
        )
    }
}

impl std::error::Error for UnreadableRecord {}

/// The lease a run holds was gone when its record was written: nothing was recorded.
#[derive(Debug)]
pub struct LeaseLost(pub String);

impl std::fmt::Display for LeaseLost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LeaseLost {}

/// A single-instance lock. Once acquired it stays held until the value is dropped
/// (which releases it), and the kernel or the server frees it when the process dies.
pub trait Lock {
    /// How messages name the lock (never with a password).
    fn describe(&self) -> String;
    /// Tries once, within `bound`: `Ok(true)` when now held, `Ok(false)` when busy.
    fn try_acquire(&mut self, bound: &Bound) -> anyhow::Result<bool>;
    /// The fencing token this acquisition was given: greater than any before it
    /// for the same lock (`None` when the lock keeps no counter).
    fn fencing_token(&self) -> Option<i64> {
        None
    }
    /// Checks now that the held lock is still held (before a success is recorded
    /// under it); `Err` says why not.
    fn confirm(&mut self, _bound: &Bound) -> Result<(), String> {
        Ok(())
    }
}

/// Where `--once` successes (and a scheduler's slot records) are kept.
pub trait MarkerStore {
    /// How messages name the store (never with a password).
    fn describe(&self) -> String;
    /// The recorded end of `key`, if any.
    fn find(&mut self, key: &str, bound: &Bound) -> anyhow::Result<Option<Done>>;
    /// Tries once to take the lock that keeps runs with the same `key` apart;
    /// `Ok(false)` when another run holds it. Held until recorded or dropped.
    fn try_lock_key(&mut self, key: &str, bound: &Bound) -> anyhow::Result<bool>;
    /// The fencing token of the key lock held, when the store keeps one.
    fn key_token(&self) -> Option<i64> {
        None
    }
    /// Records how a run ended, durably; returns only once it is committed. For the
    /// key whose lock this store holds, the record is made only while that lock is
    /// still held ([`LeaseLost`] otherwise), and it frees the lock.
    fn record(&mut self, marker: &Marker, bound: &Bound) -> anyhow::Result<()>;
    /// The keys with a record that start with `prefix` (readable or not).
    fn keys_with_prefix(&mut self, prefix: &str, bound: &Bound) -> anyhow::Result<Vec<String>>;
    /// For each record of a key starting with `prefix` that cannot be read, a line
    /// naming it, why, and how to remove it.
    fn unreadable_with_prefix(
        &mut self,
        prefix: &str,
        bound: &Bound,
    ) -> anyhow::Result<Vec<String>>;
    /// Removes the records of keys starting with `prefix` recorded before `before`;
    /// returns how many.
    fn prune(&mut self, prefix: &str, before: SystemTime, bound: &Bound) -> anyhow::Result<usize>;
}

/// A recorded success, as found in a store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Done {
    pub status: Status,
    /// RFC 3339, or a note saying why the time is unknown.
    pub succeeded_at: String,
    pub host: String,
    /// Where the record is, for the person who wants to delete it.
    pub place: String,
}

/// What a success record says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    pub key: String,
    /// How the run ended (older markers, without the field, are successes).
    #[serde(default = "succeeded")]
    pub status: Status,
    /// RFC 3339, UTC: when the record was made.
    pub succeeded_at: String,
    pub host: String,
    pub pid: u32,
    pub command: Vec<String>,
    pub attempts: u32,
}

/// The locks a proceeding run holds, and what it must record on success.
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
            succeeded_at: report::timestamp(SystemTime::now()),
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

/// Records how a slot ended with a store of its own (for a slot that never held its
/// key lock, or whose lock was lost). After the slot: signals and the store's limits only.
pub fn record_status(
    state: &Backend,
    key: &str,
    status: Status,
    command: &[String],
) -> anyhow::Result<()> {
    let bound = Bound::signals_only();
    let ttl = crate::target::postgres::DEFAULT_LEASE_TTL;
    let mut store = open_store(state.clone(), true, ttl, &bound)?;
    let marker = Marker {
        key: key.to_string(),
        status,
        succeeded_at: report::timestamp(SystemTime::now()),
        host: host_name(),
        pid: std::process::id(),
        command: command.to_vec(),
        attempts: 0,
    };
    store
        .record(&marker, &bound)
        .with_context(|| format!("cannot record {key:?} in {}", store.describe()))
}

/// This machine's name, for markers (Linux keeps it in /proc).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// Opens the backend for a `--lock` target (connecting, for PostgreSQL).
fn open_lock(opts: &JobOptions, target: Backend, bound: &Bound) -> anyhow::Result<Box<dyn Lock>> {
    Ok(match target {
        Backend::File(path) => Box::new(file::FileLock::new(path, opts.fencing_state.clone())),
        Backend::Postgres(pg) => Box::new(postgres::PgLock::connect(pg, opts.lease_ttl, bound)?),
    })
}

/// Opens the backend for a `--state` target (creating the directory or tables);
/// `statuses` when endings other than success are recorded (a scheduler).
pub fn open_store(
    target: Backend,
    statuses: bool,
    lease_ttl: Duration,
    bound: &Bound,
) -> anyhow::Result<Box<dyn MarkerStore>> {
    Ok(match target {
        Backend::File(dir) => Box::new(file::FileStore::open(dir)?),
        Backend::Postgres(pg) => {
            Box::new(postgres::PgStore::connect(pg, statuses, lease_ttl, bound)?)
        }
    })
}

/// Opens a `--state` target to read it only (a dry run): nothing is created, and what
/// does not exist holds no record.
pub fn open_store_read_only(
    target: Backend,
    bound: &Bound,
) -> anyhow::Result<Box<dyn MarkerStore>> {
    Ok(match target {
        Backend::File(dir) => Box::new(file::FileStore::open(dir)?),
        Backend::Postgres(pg) => Box::new(postgres::PgStore::connect_read_only(pg, bound)?),
    })
}

/// Passes the gate: skips a key that already succeeded, takes `--lock`, then the
/// key lock, and re-checks the key under it, so that two runs never both proceed.
/// Waiting for the locks ends at `--lock-wait` or at `run_deadline` (`--max-time`),
/// which bounds every call before the attempts too.
pub fn prepare(opts: &JobOptions, run_deadline: Option<Instant>) -> anyhow::Result<Gate> {
    let calls = Bound::until(run_deadline);
    let wait = opts
        .max_time
        .map_or(opts.lock_wait, |t| t.min(opts.lock_wait));
    let deadline = Instant::now() + wait;
    let mut once = None;
    if let (Some(key), Some(state)) = (&opts.once, &opts.state) {
        let opened = open_store(state.clone(), opts.statuses, opts.lease_ttl, &calls);
        let mut store = match opened {
            Ok(store) => store,
            Err(err) => return stopped_by(err, "connecting to the --state server"),
        };
        match store.find(key, &calls) {
            Ok(Some(done)) => return Ok(already_done(key, &done)),
            Ok(None) => {}
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
        let mut backend = match open_lock(opts, target.clone(), &calls) {
            Ok(backend) => backend,
            Err(err) => return stopped_by(err, "connecting to the --lock server"),
        };
        let what = format!("lock {}", backend.describe());
        match acquire(&what, deadline, run_deadline, wait, |b| {
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
        match acquire(&what, deadline, run_deadline, wait, |b| {
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
            Ok(Some(done)) => return Ok(already_done(key, &done)),
            Ok(None) => {}
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
/// between so that a stopping signal (or a lock already held being lost) ends the
/// wait at once. Each try is bounded by `run_deadline` (`--max-time`).
fn acquire(
    what: &str,
    deadline: Instant,
    run_deadline: Option<Instant>,
    wait: Duration,
    mut attempt: impl FnMut(&Bound) -> anyhow::Result<bool>,
) -> anyhow::Result<Acquired> {
    let mut announced = false;
    let calls = Bound::until(run_deadline);
    let bound = Bound::until(Some(deadline)).or_lost_lock();
    let tried = crate::wait::retry_until(&bound, || {
        let held = attempt(&calls)?;
        if !held && !announced && Instant::now() < deadline {
            report::info(&format!(
                "{what} is busy; waiting up to {} for it",
                human(wait)
            ));
            announced = true;
        }
        anyhow::Ok(held.then_some(()))
    });
    match tried {
        Ok(Ok(())) => Ok(Acquired::Held),
        Ok(Err(e)) => Err(e),
        Err(Ended::TimedOut) => Ok(Acquired::Busy),
        Err(Ended::Stopped(stop)) => Ok(Acquired::Stopped(stop)),
    }
}

/// `wait` is how long the gate waited: `--lock-wait`, or less when `--max-time` is shorter.
fn busy(opts: &JobOptions, wait: Duration, text: String) -> Gate {
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
    let Ok(then) = humantime::parse_rfc3339_weak(rfc3339) else {
        return String::new();
    };
    let Ok(ago) = SystemTime::now().duration_since(then) else {
        return String::new();
    };
    let minutes = Duration::from_secs(ago.as_secs() / 60 * 60);
    if minutes.is_zero() {
        " (less than a minute ago)".into()
    } else {
        format!(" ({} ago)", humantime::format_duration(minutes))
    }
}

/// Renders argv for a human: words with spaces or quotes are single-quoted.
pub fn command_line(argv: &[String]) -> String {
    let quote = |a: &String| {
        let plain = !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c));
        if plain {
            a.clone()
        } else {
            format!("'{}'", a.replace('\'', r"'\''"))
        }
    };
    argv.iter().map(quote).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_quote_what_needs_it() {
        let argv = ["sh", "-c", "echo it's done", ""].map(String::from);
        assert_eq!(command_line(&argv), r"sh -c 'echo it'\''s done' ''");
    }

    #[test]
    fn ages_are_rounded_to_minutes() {
        let then = report::timestamp(SystemTime::now() - Duration::from_secs(3 * 3600 + 65));
        assert_eq!(age(&then), " (3h 1m ago)");
        assert_eq!(age("not a time"), "");
    }
}
