//! Scheduled-job safety: the single-instance lock (`--lock`) and run-once markers
//! (`--once`, `--state`). `gate` is the gate in front of the retry loop: it takes the
//! locks, checks and records markers, and decides whether the run proceeds or is
//! skipped. What a record says is `record`'s. Storage lives behind two small traits
//! in `store`, [`Lock`] and [`MarkerStore`], with files in `file.rs` (reached through
//! the checked state directory of `state_dir.rs`, with fencing counters in
//! `fencing.rs`) and PostgreSQL in `postgres/`. Parsing a target is `target`'s; the
//! retry loop, the report and the exit status are left to others.
//! Every call takes a [`Bound`]: before the attempts it carries `--max-time`, after
//! them only signals (and each store's own limits). A PostgreSQL lock is a lease
//! that its renewer keeps alive; a lost one stops the run through
//! `signals::lose_lock_within`.

mod gate;

pub use crate::state::record::{LeaseLost, Marker, Status, UnreadableRecord, host_name};
pub use crate::state::stores::{MarkerStore, open_store, open_store_read_only, record_status};
#[cfg(doc)]
use crate::wait::Bound;
pub use gate::{Gate, HeldLocks, SkipWhy, prepare};
