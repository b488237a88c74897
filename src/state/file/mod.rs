//! The file backend, for jobs on one host: `--lock PATH` as an exclusive `flock(2)`
//! with fencing tokens counted in the state directory ([`lock`], [`fencing`]), `--once`
//! markers and slot records as JSON files named after their keys ([`lock`], [`key`]),
//! and the fleet's budgets and circuits as small JSON records ([`throttle_files`]). Every file
//! in the state directory is reached through the checked [`dir::StateDir`], never
//! through a link.

use std::path::Path;

pub mod dir;
pub mod fencing;
pub mod key;
pub mod lock;
pub mod throttle_files;

/// What `--lock PATH` is, for `--dry-run`.
pub fn describe_lock(path: &Path) -> String {
    format!("flock on {}", path.display())
}

/// Where a `--once` key's marker goes in the state directory `dir`, for `--dry-run`.
pub fn describe_marker(dir: &Path) -> String {
    format!("a marker file in {}", dir.display())
}
