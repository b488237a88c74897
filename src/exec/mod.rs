//! The executors: each runs one attempt of its kind and classifies it. They share
//! `RunInfo`, what every attempt of a run has in common.

pub mod command;
pub mod http;
pub mod http_headers;
pub mod procs;

use std::time::Duration;

/// What every attempt of a run has in common, whatever the mode.
#[derive(Clone, Debug)]
pub struct RunInfo {
    /// The idempotency key: `--idempotency-key VALUE`, or one UUID v4 for the run.
    pub idempotency_key: String,
    /// Whether the user asked for a key with `--idempotency-key` (auto or a value).
    pub key_requested: bool,
    /// This retry's nesting level (RETRY_DEPTH as inherited; 0 at the top).
    pub depth: u32,
    pub attempts: u32,
    pub max_time: Option<Duration>,
}
