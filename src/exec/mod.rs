//! The executors: each runs one attempt of its kind and classifies it. They share
//! `RunInfo`, what every attempt of a run has in common.

pub mod command;
pub mod hook;
pub mod http;
pub mod procs;

use crate::engine::{AttemptContext, AttemptReport};

/// Runs attempts of one kind (a command, an HTTP request) and classifies them;
/// chosen once per run as `Box<dyn Executor>`.
pub trait Executor {
    /// Runs one attempt. `Err` is retry's own failure (exit 125), not the attempt's.
    fn attempt(&mut self, ctx: &AttemptContext) -> anyhow::Result<AttemptReport>;
    /// The last attempt is final: hand its held output (if any) to the user.
    fn deliver(&mut self) -> anyhow::Result<()>;
    /// The last attempt's held output will never be shown.
    fn discard(&mut self) {}
    /// The run holds a lock with this fencing token: the command sees it as
    /// `RETRY_FENCING_TOKEN` (a request has nowhere to carry it).
    fn set_fencing_token(&mut self, _token: i64) {}
    /// What `--dry-run` shows of this executor: the target, facts about it, and
    /// the classification rules in force, in the order they are checked.
    fn describe(&self) -> Description;
}

/// An executor's own part of the dry run.
pub struct Description {
    pub target: String,
    pub notes: Vec<String>,
    pub rules: Vec<String>,
}
