//! The executors: each runs one attempt of its kind and classifies it. The
//! `Executor` trait sits here with the types it takes and returns (what an attempt
//! is told, `AttemptContext`; what it reports, `AttemptReport`; what it shows of
//! itself for `--dry-run`, `Description`), as the engine that drives it and every
//! executor share them; `command/` and `http/` implement it, [`hook`] and [`procs`] are
//! the process handling hooks share with commands.

pub mod command;
pub mod hook;
pub mod http;
pub mod procs;

use std::time::Duration;

use crate::config::{RunInfo, TargetConfig};
use crate::domain::{ExitStatus, Outcome, Signal, SpanContext, Verdict, WaitHint};

/// Runs attempts of one kind (a command, an HTTP request) and classifies them;
/// chosen once per run as `Box<dyn Executor>`.
pub trait Executor {
    /// Runs one attempt. `Err` is retry's own failure (exit 125), not the attempt's.
    fn attempt(&mut self, ctx: &AttemptContext) -> anyhow::Result<AttemptReport>;
    /// The last attempt is final: hand its held output (if any) to the user.
    fn deliver(&mut self) -> anyhow::Result<()>;
    /// The last attempt's held output will never be shown.
    fn discard(&mut self) {}
    /// Makes ahead what the first attempt needs and is slow to make, so that a slot's
    /// run, which calls it before its slot's time, starts its command sooner.
    fn prepare(&mut self) {}
    /// The run holds a lock with this fencing token: the command sees it as
    /// `RETRY_FENCING_TOKEN` (a request has nowhere to carry it).
    fn set_fencing_token(&mut self, _token: i64) {}
    /// What `--dry-run` shows of this executor: the target, facts about it, and
    /// the classification rules in force, in the order they are checked.
    fn describe(&self) -> Description;
}

/// The executor for the target, with every option checked before anything runs.
pub fn for_target(target: TargetConfig, run: &RunInfo) -> anyhow::Result<Box<dyn Executor>> {
    Ok(match target {
        TargetConfig::Command(config) => Box::new(command::CommandExecutor::new(*config, run)?),
        TargetConfig::Http(config) => Box::new(http::HttpExecutor::new(*config, run)?),
    })
}

/// An executor's own part of the dry run.
pub struct Description {
    pub target: String,
    pub notes: Vec<String>,
    pub rules: Vec<String>,
}

/// What one attempt needs to know about its place in the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttemptContext {
    pub number: u32,
    /// The attempt limit (`-a`; 0: none).
    pub attempts: u32,
    /// The attempt's timeout: `--timeout`, cut to what is left of the time limit.
    pub timeout: Option<Duration>,
    /// What is left of the time limit (`--max-time`) when the attempt starts.
    pub time_left: Option<Duration>,
    /// What is left of the time limit, not `--timeout`, is the attempt's timeout: an
    /// attempt that runs out ends the run (`out_of_time`).
    pub cut_by_time_limit: bool,
    /// The attempt's span when the run is traced: the command's `TRACEPARENT`, the
    /// request's `traceparent`.
    pub span: Option<SpanContext>,
}

/// What an executor reports about one attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttemptReport {
    pub outcome: Outcome,
    pub verdict: Verdict,
    /// The exit status retry ends with if this attempt is the last.
    pub exit_code: ExitStatus,
    pub wait_hint: Option<WaitHint>,
    /// retry itself received this signal during the attempt: stop now.
    pub interrupted_by: Option<Signal>,
    /// The attempt was cut short because the time limit (`--max-time`) ran out.
    pub out_of_time: bool,
    /// A lock the run holds was lost during the attempt (the message says which):
    /// the attempt was stopped and the run ends.
    pub lock_lost: Option<String>,
}

impl AttemptReport {
    pub fn new(outcome: Outcome, verdict: Verdict, exit_code: ExitStatus) -> Self {
        AttemptReport {
            outcome,
            verdict,
            exit_code,
            wait_hint: None,
            interrupted_by: None,
            out_of_time: false,
            lock_lost: None,
        }
    }
}
