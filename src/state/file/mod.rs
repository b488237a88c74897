//! The file backend.

pub mod dir;
pub mod fencing;
pub mod fleet;
pub mod key;
pub mod lock;
