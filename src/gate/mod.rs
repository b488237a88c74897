//! The gate, for scheduled jobs: the single-instance lock (`--lock`) and run-once markers
//! (`--once`, `--state`). [`enter`] is the gate in front of the retry loop: it takes the
//! locks, checks and records markers, and decides whether the run proceeds or is
//! skipped; [`end`] records a scheduled slot's other endings. The stores, what a record
//! says and parsing a target are `state`'s; the retry loop, the report and the exit
//! status are left to others.
//! Every call takes a [`Bound`]: before the attempts it carries `--max-time`, after
//! them only signals (and each store's own limits). A PostgreSQL lock is a lease
//! that its renewer keeps alive; a lost one stops the run through
//! [`signals::lose_lock_within`](crate::signals::lose_lock_within).

mod end;
mod enter;
mod prepare;
mod slot;

#[cfg(doc)]
use crate::wait::Bound;
pub use end::{record_gave_up, record_slot, record_success};
pub use enter::{Gate, HeldLocks, SkipWhy};
pub use prepare::prepare;
