//! Where locks and state live: the storage layer under `jobs` and `fleet`.

pub mod file;
pub mod fleet;
pub mod postgres;
pub mod record;
pub mod stores;
pub mod target;

pub use target::*;
