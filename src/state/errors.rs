//! The errors of a store call that callers decide on, whatever the store: no answer
//! before a deadline ([`NoAnswer`]: `--max-time` ran out, or the store's own limit),
//! and a server that went on refusing for want of capacity ([`Refused`]: a lock wait
//! takes it for a busy lock). A record that cannot be read and a lock lost before a
//! record was written are `record`'s.

use std::time::Duration;

use crate::domain::human;

/// Why a call gave no answer.
#[derive(Debug)]
pub enum NoAnswer {
    /// The store's own limit on a call passed (a PostgreSQL URL's `connect_timeout`).
    Timeout(Duration),
    /// The caller's deadline (`--max-time`, or a lease's loss deadline) passed first.
    Deadline,
}

impl std::fmt::Display for NoAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoAnswer::Timeout(t) => write!(f, "no answer within {} (connect_timeout)", human(*t)),
            NoAnswer::Deadline => write!(f, "no answer before the run's deadline"),
        }
    }
}

impl std::error::Error for NoAnswer {}

/// A store that went on refusing connections for want of capacity until the call's
/// patience ran out.
#[derive(Debug)]
pub struct Refused {
    /// What the refusal means, and what the server said.
    pub refusal: String,
    /// How long the call tried.
    pub tried: Duration,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}, still after {} of tries",
            self.refusal,
            human(self.tried)
        )
    }
}

impl std::error::Error for Refused {}
