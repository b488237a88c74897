//! Outcome → class. The vocabulary (`Class`, `Verdict`, `Limit`) is shared by
//! every mode; the rules are tables with their sources: `profiles` (tools' exit
//! codes), `http` (statuses, methods, transport failures; the one status table
//! that profiles seeing a status use too), `wait` (rate-limit and wait headers),
//! `control` (the command's own word, rule 0) and `endings` (signals, timeouts
//! and retry's own stops). `command` applies
//! them to a command's ending. The engine only reads verdicts; it never
//! inspects exit codes or statuses itself.

pub mod command;
pub mod control;
pub mod endings;
pub mod http;
pub mod profiles;
pub mod wait;

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    Success,
    Transient,
    Permanent,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Success => "success",
            Class::Transient => "transient",
            Class::Permanent => "permanent",
        }
    }
}

/// Which limited rule a retry is counted against. Rules that share a key share
/// one count across the run, however the failure was seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LimitKey {
    /// HTTP 500, in a response or on a tool's stderr.
    Http500,
    /// A tool reported an HTTP error without showing the status.
    StatusNotShown,
    /// rsync's partial transfer (exit 23) for a cause it did not name.
    RsyncPartial,
    /// A SOCKS4 proxy's reply 91 (rejected or failed).
    Socks4Failed,
}

/// A rule that may only be retried a few times, counted across the run
/// (a 500 is worth one or two more tries, never many).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    pub key: LimitKey,
    pub max_retries: u32,
}

impl Limit {
    pub const fn twice(key: LimitKey) -> Self {
        Limit {
            key,
            max_retries: 2,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub class: Class,
    pub reason: String,
    pub limit: Option<Limit>,
}

impl Verdict {
    pub fn new(class: Class, reason: impl Into<String>) -> Self {
        Verdict {
            class,
            reason: reason.into(),
            limit: None,
        }
    }

    pub fn success(reason: impl Into<String>) -> Self {
        Self::new(Class::Success, reason)
    }

    pub fn transient(reason: impl Into<String>) -> Self {
        Self::new(Class::Transient, reason)
    }

    pub fn permanent(reason: impl Into<String>) -> Self {
        Self::new(Class::Permanent, reason)
    }

    pub fn limited(mut self, limit: Option<Limit>) -> Self {
        self.limit = limit;
        self
    }
}
