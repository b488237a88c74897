//! Byte plumbing for command mode: stdin replay, output pumps, spools, and the
//! writes to retry's own stdout that a stalled reader or a signal must not hang.

pub mod out;
pub mod pump;
pub mod spool;
pub mod stdin;

use std::sync::OnceLock;

/// The first failure of retry's own plumbing during an attempt (a stdin
/// recording or an output spool that could not spill to disk). Setting it wakes
/// the supervisor, which stops the attempt: the command must never go on with a
/// truncated input as if it were whole.
#[derive(Debug, Default)]
pub struct Fault(OnceLock<String>);

impl Fault {
    pub fn set(&self, message: String) {
        if self.0.set(message).is_ok() {
            crate::signals::wake();
        }
    }

    pub fn get(&self) -> Option<&str> {
        self.0.get().map(String::as_str)
    }
}
