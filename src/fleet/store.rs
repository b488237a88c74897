//! The fleet's store as a run uses it: after its first failure, a warning, then
//! nothing (budgets and circuits fail open). A call before an attempt ends with
//! `--max-time` too, one after an attempt while `--max-time` lasts, and one after the
//! last attempt only with the store's own limits.

use crate::domain::{Signal, TimeLimit};
use crate::report;
use crate::state::FleetStore;
use crate::wait::Bound;

/// The store as a run uses it: after its first failure, a warning, then nothing
/// (budgets and circuits fail open). Calls before and between attempts end with
/// `--max-time` too; those after it (and after the last attempt) only with the
/// store's limits.
pub(super) struct Store {
    store: Option<Box<dyn FleetStore>>,
    limit: TimeLimit,
}

/// When in the run a store call is made.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Before the first attempt or a retry: `--max-time` bounds it.
    Before,
    /// After an attempt: `--max-time` bounds it while it lasts (a later attempt may
    /// follow), the store's own limits once it has passed (none will).
    Between,
    /// After the last attempt: the store's own limits.
    After,
}

/// Why a store call before the first attempt (or a retry) ended the run.
#[derive(Debug)]
pub(super) enum Halt {
    /// `--max-time` ran out during the call (what the store said).
    OutOfTime(String),
    /// A stopping signal arrived during the call.
    Signal(Signal),
}

impl Store {
    pub(super) fn new(store: Box<dyn FleetStore>, limit: TimeLimit) -> Store {
        Store {
            store: Some(store),
            limit,
        }
    }

    fn time_is_up(&self) -> bool {
        self.limit.passed(self.limit.elapsed())
    }

    fn bound(&self, phase: Phase) -> Bound {
        match phase {
            Phase::Before => Bound::ending_with(&self.limit),
            Phase::Between if !self.time_is_up() => Bound::ending_with(&self.limit),
            Phase::Between | Phase::After => Bound::signals_only(),
        }
    }

    /// Runs `op` on the store, unless it already failed; a failure warns once. `Err`
    /// when `--max-time` ended the call (the store stays for the calls after it), or
    /// a signal ended one made before an attempt.
    pub(super) fn with<T>(
        &mut self,
        phase: Phase,
        op: impl FnOnce(&mut dyn FleetStore, &Bound) -> anyhow::Result<T>,
    ) -> Result<Option<T>, Halt> {
        let bound = self.bound(phase);
        let Some(store) = self.store.as_mut() else {
            return Ok(None);
        };
        let err = match op(store.as_mut(), &bound) {
            Ok(value) => return Ok(Some(value)),
            Err(err) => err,
        };
        // A signal stops the run; it is no failure of the store to warn about.
        if let Some(crate::domain::Interrupted(sig)) = err.downcast_ref() {
            let sig = *sig;
            self.store = None;
            return match phase {
                Phase::Before => Err(Halt::Signal(sig)),
                Phase::Between | Phase::After => Ok(None),
            };
        }
        let described = store.describe();
        if phase != Phase::After && self.time_is_up() {
            return Err(Halt::OutOfTime(format!("{err:#}")));
        }
        report::notice(&format!(
            "warning: the fleet state in {described} failed ({err:#}); going on without the retry budget and circuit breaker"
        ));
        self.store = None;
        Ok(None)
    }
}
