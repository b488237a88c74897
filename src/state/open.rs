//! Opening a store for a `--lock` or `--state` target: the one place that picks a
//! backend by the target's kind. A new backend adds its arm to each function here.

use std::path::PathBuf;

use super::file::lock::{FileLock, FileRunLock, FileStore};
use super::file::throttle_files::FileFleet;
use super::postgres::throttle_rows::PgFleet;
use super::postgres::{PgLock, PgRunLock, PgStore};
use super::target::{Backend, default_state_dir};
use super::{FleetStore, Lock, MarkerStore, RunLock};
use crate::wait::Bound;

/// Opens the `--lock` target `lock` (connecting, for a server, within `bound`), its
/// fencing tokens counted in `state` where that is a directory.
pub fn open_lock(
    lock: &Backend,
    state: Option<&Backend>,
    bound: &Bound,
) -> anyhow::Result<Box<dyn Lock>> {
    Ok(match lock {
        Backend::File(path) => Box::new(FileLock::new(path.clone(), fencing_dir(state))),
        Backend::Postgres(pg) => Box::new(PgLock::connect(pg.clone(), bound)?),
    })
}

/// Opens the run lock of scheduled job `job` in the `--state` target `state`
/// (connecting, for a server, within `bound`); `replace` when a newer slot may ask its
/// holder to stop (`--overlap replace`).
pub fn open_run_lock(
    state: &Backend,
    job: &str,
    replace: bool,
    bound: &Bound,
) -> anyhow::Result<Box<dyn RunLock>> {
    Ok(match state {
        Backend::File(dir) => Box::new(FileRunLock::open(dir.clone(), job)?),
        Backend::Postgres(pg) => Box::new(PgRunLock::connect(pg.clone(), job, replace, bound)?),
    })
}

/// The state directory whose `fencing/` counts a lock file's tokens: `--state`'s when
/// it is a directory, the default one without `--state`, none beside a server (the
/// clock alone).
fn fencing_dir(state: Option<&Backend>) -> Option<PathBuf> {
    match state {
        Some(Backend::File(dir)) => Some(dir.clone()),
        Some(Backend::Postgres(_)) => None,
        None => default_state_dir().ok(),
    }
}

/// Opens the markers of a `--state` target (creating the directory or tables);
/// `statuses` when endings other than success are recorded (a scheduler).
pub fn open_markers(
    target: &Backend,
    statuses: bool,
    bound: &Bound,
) -> anyhow::Result<Box<dyn MarkerStore>> {
    Ok(match target {
        Backend::File(dir) => Box::new(FileStore::open(dir.clone())?),
        Backend::Postgres(pg) => Box::new(PgStore::connect(pg.clone(), statuses, bound)?),
    })
}

/// Opens the markers of a `--state` target to read them only (a dry run): nothing is
/// created, and what does not exist holds no record.
pub fn open_markers_read_only(
    target: &Backend,
    bound: &Bound,
) -> anyhow::Result<Box<dyn MarkerStore>> {
    Ok(match target {
        Backend::File(dir) => Box::new(FileStore::open(dir.clone())?),
        Backend::Postgres(pg) => Box::new(PgStore::connect_read_only(pg.clone(), bound)?),
    })
}

/// Opens the budgets and circuits of a `--state` target (creating directories or
/// tables, within `bound`); `holds` when a run may hold (`--throttled wait`), which
/// keeps when a held run's retry was last let through.
pub fn open_fleet(
    target: &Backend,
    holds: bool,
    bound: &Bound,
) -> anyhow::Result<Box<dyn FleetStore>> {
    Ok(match target {
        Backend::File(dir) => Box::new(FileFleet::open(dir.clone())?),
        Backend::Postgres(pg) => Box::new(PgFleet::connect(pg.clone(), holds, bound)?),
    })
}

/// Opens the budgets and circuits of a `--state` target to read them only: a missing
/// directory or table reads as fresh state.
pub fn open_fleet_read_only(
    target: &Backend,
    bound: &Bound,
) -> anyhow::Result<Box<dyn FleetStore>> {
    Ok(match target {
        Backend::File(dir) => Box::new(FileFleet::at(dir.clone())?),
        Backend::Postgres(pg) => Box::new(PgFleet::connect_read_only(pg.clone(), bound)?),
    })
}
