//! The two storage traits the gate works through: a single-instance [`Lock`] and a
//! [`MarkerStore`] of `--once` records and slot records. `open` opens them for a
//! target; each backend implements them.

use std::time::{Duration, SystemTime};

#[cfg(doc)]
use super::record::LockLost;
use super::record::{Done, Marker};
use crate::wait::{Bound, Pauses};

/// The pauses between two tries of a busy lock that costs nothing to try (a file's
/// flock): from 5 ms up to 200 ms apart.
pub fn local_poll_pauses() -> Pauses {
    Pauses::new(Duration::from_millis(5), Duration::from_millis(200))
}

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
    /// The pauses between two tries while waiting for it (`--lock-wait`).
    fn poll_pauses(&self) -> Pauses {
        local_poll_pauses()
    }
}

/// The lock a scheduled job's running slot holds (`--overlap skip`, `queue`, `replace`),
/// so that the job's slots do not run together on any scheduler sharing the state; its
/// holder can be asked to stop for a newer slot.
pub trait RunLock: Lock {
    /// Asks the live holder to stop its slot: a newer slot replaces it (`--overlap
    /// replace`). The holder stops as a lost lock stops a run.
    fn ask_holder_to_stop(&mut self, bound: &Bound) -> anyhow::Result<()>;
    /// How long a replacing slot waits for the holder to end and let go.
    fn replace_wait(&self) -> Duration;
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
    /// The pauses between two tries while waiting for the key's lock (`--lock-wait`).
    fn poll_pauses(&self) -> Pauses {
        local_poll_pauses()
    }
    /// Records how a run ended, durably; returns only once it is committed. For the
    /// key whose lock this store holds, the record is made only while that lock is
    /// still held ([`LockLost`] otherwise), and it frees the lock.
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
