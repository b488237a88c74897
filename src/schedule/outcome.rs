//! How a scheduled slot ended, in one word (the outcome its record, its end line and
//! `retry_slots_total` share) and in the end line itself: outcome, attempts, duration,
//! exit status and, for a slot that did not succeed, why. The run and its messages
//! are `run`'s; where the line goes is `report`'s.

use std::time::Duration;

use serde_json::json;

use crate::domain::{ExitStatus, RunSummary, Signal, StopReason, human};
use crate::report;

/// What became of a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Succeeded,
    /// It ran and did not succeed (its failure went to `--on-give-up`).
    GaveUp,
    /// It did not run: a busy lock, another scheduler had it, the previous run was
    /// still running, or the state could not be reached.
    Skipped,
    /// The open circuit refused it.
    Refused,
    /// A stopping signal ended it (no record: it counts as missed).
    Stopped(Signal),
}

impl Outcome {
    /// The value of the `outcome` label and the word of the end line.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Succeeded => "succeeded",
            Outcome::GaveUp => "gave_up",
            Outcome::Skipped => "skipped",
            Outcome::Refused => "refused",
            Outcome::Stopped(_) => "stopped",
        }
    }

    /// The outcome a label names (`None`: a stop, which counts under no outcome).
    pub fn from_label(label: &str) -> Option<Outcome> {
        [
            Outcome::Succeeded,
            Outcome::GaveUp,
            Outcome::Skipped,
            Outcome::Refused,
        ]
        .into_iter()
        .find(|o| o.label() == label)
    }

    /// How the end line says it.
    fn phrase(self) -> String {
        match self {
            Outcome::GaveUp => "gave up".into(),
            Outcome::Stopped(sig) => format!("stopped by {sig}"),
            other => other.label().into(),
        }
    }

    /// How a run's summary ended, as a slot: it gave up only if an attempt ran.
    pub fn of(summary: &RunSummary) -> Outcome {
        match summary.stopped_because {
            StopReason::Success => Outcome::Succeeded,
            StopReason::CircuitOpen => Outcome::Refused,
            StopReason::Signal => {
                Outcome::Stopped(summary.exit_code.signal().unwrap_or(Signal::TERM))
            }
            _ if summary.attempts.is_empty() => Outcome::Skipped,
            _ => Outcome::GaveUp,
        }
    }
}

/// A slot's end, as its end line tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ended {
    pub outcome: Outcome,
    pub attempts: usize,
    pub took: Duration,
    pub exit_code: ExitStatus,
    /// Why, for a slot that did not succeed (the run's last line, or the error that
    /// kept it from running).
    pub cause: Option<String>,
    /// The attempt a stop came before (it came while the slot waited to retry).
    pub before: Option<u32>,
}

impl Ended {
    pub fn of_run(summary: &RunSummary, took: Duration) -> Ended {
        let outcome = Outcome::of(summary);
        let failed = outcome != Outcome::Succeeded || !summary.exit_code.is_success();
        let waiting = summary.attempts.last().filter(|last| last.delay.is_some());
        Ended {
            outcome,
            attempts: summary.attempts.len(),
            took,
            exit_code: summary.exit_code,
            cause: failed.then(|| report::last_word(summary)),
            before: waiting
                .filter(|_| matches!(outcome, Outcome::Stopped(_)))
                .map(|last| last.number + 1),
        }
    }

    /// A slot that did not run because the state could not be reached (`why`).
    pub fn not_run(why: &str, took: Duration) -> Ended {
        Ended {
            outcome: Outcome::Skipped,
            attempts: 0,
            took,
            exit_code: ExitStatus::USAGE,
            cause: Some(why.to_string()),
            before: None,
        }
    }

    /// Whether the line stays under `-q`: every end but a clean success.
    pub fn noteworthy(&self) -> bool {
        self.outcome != Outcome::Succeeded || !self.exit_code.is_success()
    }

    /// `ended: gave up, 3 attempts in 2.3s, exit status 7 (gave up after 3 attempts: …)`.
    pub fn line(&self) -> String {
        let before = self
            .before
            .map_or(String::new(), |n| format!(" before attempt {n}"));
        let mut line = format!(
            "ended: {}{before}, {} attempt{} in {}, exit status {}",
            self.outcome.phrase(),
            self.attempts,
            if self.attempts == 1 { "" } else { "s" },
            human(self.took),
            self.exit_code
        );
        if let Some(cause) = &self.cause {
            // Messages of the gate and the circuit end with the exit status already.
            let suffix = format!("; exit status {}", self.exit_code);
            let cause = cause.strip_suffix(&suffix).unwrap_or(cause);
            // The outcome says it already.
            let cause = cause.strip_prefix("skipped: ").unwrap_or(cause);
            line += &format!(" ({cause})");
        }
        line
    }

    /// Writes the end line: a clean success at the normal level, anything else also under `-q`.
    pub fn log(&self) {
        let fields = json!({
            "outcome": self.outcome.label(),
            "attempts": self.attempts,
            "duration_ms": u64::try_from(self.took.as_millis()).unwrap_or(u64::MAX),
            "exit_code": self.exit_code,
        });
        report::slot_event(self.noteworthy(), &self.line(), "slot_ended", fields);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(reason: StopReason, exit_code: u8, attempts: usize, message: &str) -> RunSummary {
        let exit_code = ExitStatus::new(exit_code);
        let record = crate::domain::AttemptRecord {
            number: 1,
            started_at: std::time::SystemTime::UNIX_EPOCH,
            duration: Duration::ZERO,
            outcome: crate::domain::Outcome::Exit { code: exit_code },
            class: crate::domain::Class::Transient,
            reason: "why".into(),
            wait_hint: None,
            delay: None,
            span: None,
        };
        RunSummary {
            attempts: vec![record; attempts],
            exit_code,
            stopped_because: reason,
            message: message.into(),
            elapsed: Duration::ZERO,
            holds: Vec::new(),
        }
    }

    #[test]
    fn outcomes_follow_the_stop_reason_and_whether_an_attempt_ran() {
        let of = |reason, attempts| Outcome::of(&summary(reason, 1, attempts, ""));
        assert_eq!(of(StopReason::Success, 1), Outcome::Succeeded);
        assert_eq!(of(StopReason::Attempts, 3), Outcome::GaveUp);
        assert_eq!(of(StopReason::LockLost, 1), Outcome::GaveUp);
        assert_eq!(of(StopReason::Skipped, 0), Outcome::Skipped);
        // --max-time ran out on a store call before the first attempt: it did not run.
        assert_eq!(of(StopReason::MaxTime, 0), Outcome::Skipped);
        assert_eq!(of(StopReason::CircuitOpen, 0), Outcome::Refused);
        let stopped = Outcome::of(&summary(StopReason::Signal, 143, 1, ""));
        assert_eq!(stopped, Outcome::Stopped(Signal::TERM));
    }

    /// The end of a slot whose run stopped for `reason` with `status` after `attempts`
    /// attempts, saying `message`, `ms` milliseconds after it began.
    fn ended(reason: StopReason, status: u8, attempts: usize, message: &str, ms: u64) -> Ended {
        let summary = summary(reason, status, attempts, message);
        Ended::of_run(&summary, Duration::from_millis(ms))
    }

    #[test]
    fn end_lines_say_outcome_attempts_duration_status_and_why() {
        let ok = ended(StopReason::Success, 0, 1, "attempt 1 succeeded", 12);
        assert_eq!(
            ok.line(),
            "ended: succeeded, 1 attempt in 12ms, exit status 0"
        );
        assert!(!ok.noteworthy());
        let failed = ended(StopReason::Attempts, 7, 3, "gave up after 3 attempts", 2300);
        assert_eq!(
            failed.line(),
            "ended: gave up, 3 attempts in 2.3s, exit status 7 (gave up after 3 attempts: exit status 7 (why))"
        );
        assert!(failed.noteworthy());
        let busy = ended(
            StopReason::Skipped,
            0,
            0,
            "skipped: lock /x is busy; exit status 0",
            3,
        );
        assert_eq!(
            busy.line(),
            "ended: skipped, 0 attempts in 3ms, exit status 0 (lock /x is busy)"
        );
        let stopped = ended(StopReason::Signal, 143, 1, "interrupted by SIGTERM", 1000);
        assert!(
            stopped
                .line()
                .starts_with("ended: stopped by SIGTERM, 1 attempt in 1s, exit status 143"),
            "{}",
            stopped.line()
        );
    }
}
