//! Why a run must end before its policy says so (`Stop`), the error that carries
//! a stopping signal out of a call that was waiting (`Interrupted`), and the one
//! that says the final output was lost (`OutputLost`).

use super::{ExitStatus, Signal};

/// Why a run must stop before its policy says so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// retry received this stopping signal.
    Signal(Signal),
    /// A lock the run holds is gone; the message names it and says how.
    LockLost(String),
}

/// retry received a stopping signal while it waited (on a server, a lock, a reader
/// of its output): the run ends with 128+N.
#[derive(Debug)]
pub struct Interrupted(pub Signal);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "interrupted by {}", self.0)
    }
}

impl std::error::Error for Interrupted {}

/// The final attempt's output could not be delivered (a reader gone, a closed or full
/// stdout, an `-o` file that cannot be written): the run ends with `status`, never 0.
#[derive(Debug)]
pub struct OutputLost {
    pub status: ExitStatus,
    pub message: String,
}

impl std::fmt::Display for OutputLost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for OutputLost {}
