//! What a run's end records in its `--state` beside the gate's own record of a
//! success: a scheduled slot's other endings.

use std::time::SystemTime;

use anyhow::Context;

use crate::state::{self, Backend, DEFAULT_LEASE_TTL, Marker, Status, host_name};
use crate::wait::Bound;

/// Records how a slot ended with a store of its own (for a slot that never held its
/// key lock, or whose lock was lost). After the slot: signals and the store's limits only.
pub fn record_status(
    target: &Backend,
    key: &str,
    status: Status,
    command: &[String],
) -> anyhow::Result<()> {
    let bound = Bound::signals_only();
    let mut store = state::open_markers(target, true, DEFAULT_LEASE_TTL, &bound)?;
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
