//! Where locks, `--once` markers, slot records and the fleet's budgets and circuits
//! live: the storage layer, under [`gate`](crate::gate) and [`fleet`](crate::fleet). It owns the grammar of a
//! `--lock`/`--state` target ([`Backend`]), what a record holds and the errors callers
//! decide on ([`NoAnswer`], [`Refused`], [`LockLost`], [`UnreadableRecord`]), the three
//! store traits ([`Lock`], [`MarkerStore`], [`FleetStore`], with the rules every store
//! applies to budget and circuit records), the factory that opens each for a target
//! ([`open`]), and the [`Burst`] of calls that share a connection. Each backend is one
//! folder behind those traits: `file/` (the checked state directory, flocks, fencing
//! counters, JSON records) and `postgres/` (connections, leases, tables). Nothing
//! outside this module names a backend; when to lock, record or consult a budget is
//! [`gate`](crate::gate)'s and [`fleet`](crate::fleet)'s.

mod burst;
mod errors;
mod file;
mod open;
mod postgres;
mod record;
mod rules;
mod stores;
mod target;

pub use burst::{Burst, Patience, idle};
pub use errors::{NoAnswer, Refused};
pub use open::{
    open_fleet, open_fleet_read_only, open_lock, open_markers, open_markers_read_only,
    open_run_lock,
};
pub use record::{Done, LockLost, Marker, Status, UnreadableRecord, host_name};
pub use rules::{
    Admission, Answer, FleetStore, LATEST_MS, Spent, allows_retry, describe_budget, ms_since_epoch,
    now_ms, show_time, show_tokens,
};
pub use stores::{Lock, MarkerStore, RunLock};
pub use target::{
    Backend, default_state, give_lease_ttl, parse_lock_target, parse_state_target, parse_target,
};

/// The readers of what the state directory holds (budget and circuit records, fencing
/// counters, `--once` markers, marker file names), public for the property tests.
pub mod readers {
    pub use super::file::fencing::{Stored, parse_counter};
    pub use super::file::key::{check_key, escape_key, key_from_file_name};
    pub use super::file::lock::parse_marker;
    pub use super::file::throttle_files::{parse_budget, parse_circuit};
}
