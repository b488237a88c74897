//! What a `--once` key's record says (`Marker`) and what a store found (`Done`), how
//! a run ended (`Status`), and the errors a store gives when a record cannot be read
//! or a lease was gone when it was written. Writing and reading records is the
//! stores' work (`file`, `postgres`).

use serde::{Deserialize, Serialize};

/// How a run of a `--once` key ended, as its record says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Succeeded,
    GaveUp,
    /// A scheduled slot that did not run (overlap, busy lock).
    Skipped,
    /// A scheduled slot refused by an open circuit.
    Refused,
}

impl Status {
    /// Every status, for checks of what a store holds.
    pub const ALL: [Status; 4] = [
        Status::Succeeded,
        Status::GaveUp,
        Status::Skipped,
        Status::Refused,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Succeeded => "succeeded",
            Status::GaveUp => "gave_up",
            Status::Skipped => "skipped",
            Status::Refused => "refused",
        }
    }

    pub fn from_name(name: &str) -> Status {
        match name {
            "gave_up" => Status::GaveUp,
            "skipped" => Status::Skipped,
            "refused" => Status::Refused,
            _ => Status::Succeeded,
        }
    }

    /// How a message says it: "succeeded", "gave up", …
    pub fn phrase(self) -> &'static str {
        match self {
            Status::Succeeded => "succeeded",
            Status::GaveUp => "gave up",
            Status::Skipped => "was skipped",
            Status::Refused => "was refused",
        }
    }
}

fn succeeded() -> Status {
    Status::Succeeded
}

/// A record exists but cannot be read as one: where fresh state could run work twice
/// (a `--once` marker) the caller fails closed; a first-start record is replaced.
#[derive(Debug)]
pub struct UnreadableRecord {
    pub key: String,
    /// Where it is: a file, or a table at a server.
    pub place: String,
    pub why: String,
    /// What removes it: `rm -- '…'` or `DELETE FROM …`.
    pub remove: String,
}

impl std::fmt::Display for UnreadableRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the record of --once key {:?} in {} cannot be read ({}); retry cannot tell whether \
             the key already ran, so it runs nothing: look at it, then remove it ({}) to run the \
             key again",
            self.key, self.place, self.why, self.remove
        )
    }
}

impl std::error::Error for UnreadableRecord {}

/// The lock (a lease) a run holds was gone when its record was written: nothing was
/// recorded.
#[derive(Debug)]
pub struct LockLost(pub String);

impl std::fmt::Display for LockLost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LockLost {}

/// A recorded success, as found in a store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Done {
    pub status: Status,
    /// RFC 3339, or a note saying why the time is unknown.
    pub succeeded_at: String,
    pub host: String,
    /// Where the record is, for the person who wants to delete it.
    pub place: String,
    /// The attempts the recorded run made.
    pub attempts: u32,
    /// The command line that made the record, as one line (a first-start record's is
    /// the schedule it was made for).
    pub command: String,
}

/// What a success record says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    pub key: String,
    /// How the run ended (older markers, without the field, are successes).
    #[serde(default = "succeeded")]
    pub status: Status,
    /// RFC 3339, UTC: when the record was made.
    pub succeeded_at: String,
    pub host: String,
    pub pid: u32,
    pub command: Vec<String>,
    pub attempts: u32,
}

/// This machine's name, for markers.
pub fn host_name() -> String {
    crate::sys::host_name()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into())
}
