//! Byte plumbing for command mode: stdin replay, output pumps, and the writes to
//! retry's own stdout that a stalled reader or a signal must not hang. The spool
//! they hold bytes in is `spool`'s.

pub mod out;
pub mod pump;
pub mod stdin;

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether fd 1 was closed when retry started (`>&-`): `main` puts /dev/null there
/// so that no file retry opens becomes stdout, and this remembers that output
/// written there is lost.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// For `main`, before anything else runs: fd 1 was closed at start.
pub fn record_closed_stdout() {
    STDOUT_CLOSED.store(true, Ordering::Relaxed);
}

/// Whether fd 1 was closed at start, so that anything written to it is lost.
pub fn stdout_was_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// retry's own stdin, stdout or stderr (fd 0, 1 or 2).
pub fn std_fd(fd: i32) -> crate::sys::Fd<'static> {
    crate::sys::std_stream(fd)
}

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
