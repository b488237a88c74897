//! What an attempt and a run come to, in every mode: the class an attempt gets and why
//! (`Verdict`, with the per-rule retry `RetryCap`), how it ended (`Outcome`), the wait the
//! other side asked for (`WaitHint`), and the record of a run (`AttemptRecord`,
//! `RunSummary`, `StopReason`). Deciding any of it is the classifier's and the
//! engine's work; this module only names it.

use std::time::{Duration, SystemTime};

use serde::Serialize;

use super::{ExitStatus, Signal, SpanId, human};

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
pub enum RetryCapKey {
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
pub struct RetryCap {
    pub key: RetryCapKey,
    pub max_retries: u32,
}

impl RetryCap {
    pub const fn twice(key: RetryCapKey) -> Self {
        RetryCap {
            key,
            max_retries: 2,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub class: Class,
    pub reason: String,
    /// At most this many retries of the rule across the run.
    pub retry_cap: Option<RetryCap>,
}

impl Verdict {
    pub fn new(class: Class, reason: impl Into<String>) -> Self {
        Verdict {
            class,
            reason: reason.into(),
            retry_cap: None,
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

    pub fn capped(mut self, cap: Option<RetryCap>) -> Self {
        self.retry_cap = cap;
        self
    }
}

/// How an attempt ended, as recorded in the report and shown in logs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Outcome {
    Exit {
        code: ExitStatus,
    },
    Signal {
        signal: Signal,
        /// The signal's name, for readers of the report.
        name: String,
    },
    Timeout {
        after_ms: u64,
        /// The timeout's signal was not enough: `--kill-after`'s SIGKILL ended the
        /// attempt this long after it.
        #[serde(skip_serializing_if = "Option::is_none")]
        killed_after_ms: Option<u64>,
    },
    NotRunnable {
        code: ExitStatus,
        error: String,
    },
    /// retry could not start the command for lack of resources (EAGAIN, ENOMEM).
    NoResources {
        error: String,
    },
    Http {
        status: u16,
    },
    Error {
        kind: String,
        message: String,
    },
}

impl Outcome {
    /// Killed by `signal`.
    pub fn signaled(signal: Signal) -> Outcome {
        Outcome::Signal {
            signal,
            name: signal.name(),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Outcome::Exit { code } => format!("exit status {code}"),
            Outcome::Signal { name, .. } => format!("killed by {name}"),
            Outcome::Timeout {
                after_ms,
                killed_after_ms,
            } => {
                let ms = |ms: u64| human(Duration::from_millis(ms));
                let killed =
                    killed_after_ms.map_or(String::new(), |k| format!(", killed {} later", ms(k)));
                format!("timed out after {}{killed}", ms(*after_ms))
            }
            Outcome::NotRunnable { error, .. } | Outcome::NoResources { error } => error.clone(),
            Outcome::Http { status } => format!("HTTP {status}"),
            Outcome::Error { message, .. } => message.clone(),
        }
    }

    /// Whether retry could not start the attempt for lack of resources: the service
    /// never saw it, so it neither spends nor earns budget tokens nor counts for a circuit.
    pub fn lacked_resources(&self) -> bool {
        matches!(self, Outcome::NoResources { .. })
    }
}

/// A wait the other side asked for (Retry-After and friends).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitHint {
    pub wait: Duration,
    /// The header as the server sent it (or the command's directive), quoted in messages.
    pub source: String,
    /// Who asked, for messages: "the server" or "the command".
    pub asked_by: &'static str,
}

/// Why a run stopped, as the report says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    Success,
    Permanent,
    Attempts,
    MaxTime,
    RetryAfterTooLong,
    Signal,
    Skipped,
    LockLost,
    /// The shared retry budget refused a retry.
    Budget,
    /// The circuit breaker was open: no attempt was made.
    CircuitOpen,
    /// A newer slot of the job took its place (`--overlap replace`).
    Replaced,
}

/// One attempt, as the report and the logs show it.
#[derive(Clone, Debug)]
pub struct AttemptRecord {
    pub number: u32,
    pub started_at: SystemTime,
    pub duration: Duration,
    pub outcome: Outcome,
    pub class: Class,
    pub reason: String,
    pub wait_hint: Option<WaitHint>,
    /// The sleep that followed, if any.
    pub delay: Option<Duration>,
    /// The attempt's span, when the run is traced.
    pub span: Option<SpanId>,
}

/// What held a run (`--throttled wait`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HoldCause {
    /// The shared retry budget refused a retry.
    Budget,
    /// The circuit breaker was open before the first attempt.
    Circuit,
}

/// A time a run was held, sending nothing: it counts towards `--max-time`, never `-a`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hold {
    pub started_at: SystemTime,
    pub duration: Duration,
    pub cause: HoldCause,
}

/// How a run ended: its attempts, the exit status and why it stopped.
#[derive(Clone, Debug)]
pub struct RunSummary {
    pub attempts: Vec<AttemptRecord>,
    pub exit_code: ExitStatus,
    pub stopped_because: StopReason,
    /// One line saying why the run stopped.
    pub message: String,
    pub elapsed: Duration,
    /// Holds, in order (`--throttled wait`); attempts count only what was sent.
    pub holds: Vec<Hold>,
}

impl RunSummary {
    /// Whether the run ended well: an attempt succeeded and ended it, or it ended on a
    /// success with exit 0 (`--until-failure` that saw no failure).
    pub fn succeeded(&self) -> bool {
        let ended_on_success = self
            .attempts
            .last()
            .is_some_and(|last| last.class == Class::Success);
        self.stopped_because == StopReason::Success
            || (ended_on_success && self.exit_code.is_success())
    }
}
