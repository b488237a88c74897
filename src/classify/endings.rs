//! Endings that are neither an exit status nor an HTTP status: a command that
//! could not start, timed out or was killed by a signal, a reader of retry's
//! output that went away, and the stops retry itself causes (a stopping signal it
//! received, a lock it lost). Each is a rule with its class and its source; the
//! executors report the facts, `command` and the executors pick the rule.

use crate::domain::{Class, Verdict};

/// A rule for one kind of ending. `why` is the verdict's reason, with
/// `{signal}`, `{error}`, `{lost}` or `{reason}` filled in from the attempt.
#[derive(Debug)]
pub struct EndRule {
    pub class: Class,
    pub why: &'static str,
    pub source: &'static str,
}

impl EndRule {
    /// The verdict, with each `{name}` in `why` replaced by its value.
    pub fn verdict(&self, fill: &[(&str, &str)]) -> Verdict {
        let reason = fill
            .iter()
            .fold(self.why.to_string(), |why, (name, value)| {
                why.replace(&format!("{{{name}}}"), value)
            });
        Verdict::new(self.class, reason)
    }

    /// `killed by a signal (not sent by retry): transient (signal(7))`, for `--dry-run`.
    pub fn describe(&self) -> String {
        let why = self
            .why
            .replace("{signal}", "a signal")
            .replace("{error}", "the command cannot be started")
            .replace("{lost}", "the lock was lost")
            .replace("{reason}; ", "");
        format!("{why}: {} ({})", self.class.as_str(), self.source)
    }
}

const fn rule(class: Class, why: &'static str, source: &'static str) -> EndRule {
    EndRule { class, why, source }
}

/// Checked before every other rule: the command never ran, so nothing it could have
/// said applies.
pub static NO_RESOURCES: EndRule = rule(
    Class::Transient,
    "retry could not start the command for lack of resources",
    "fork(2), execve(2): EAGAIN (ulimit -u, a cgroup's pids.max) or ENOMEM; \
     retry's own failure, exit 125 if it is the last attempt",
);

pub static NOT_RUNNABLE: EndRule = rule(
    Class::Permanent,
    "{error}: retrying cannot help",
    "not found 127, not executable 126, as sh(1) reports them",
);

pub static TIMED_OUT: EndRule = rule(
    Class::Transient,
    "attempt timed out",
    "--timeout; exit 124 if it is the last attempt, as timeout(1)",
);

pub static SIGPIPE_READER_GONE: EndRule = rule(
    Class::Permanent,
    "killed by SIGPIPE: the reader of its output went away",
    "signal(7): SIGPIPE is a write to a pipe with no readers, and retry's reader is gone too",
);

pub static SIGNALED: EndRule = rule(
    Class::Transient,
    "killed by {signal} (not sent by retry)",
    "a signal from elsewhere (the OOM killer, an operator) says nothing about the next attempt",
);

/// Turns a transient verdict permanent: no later attempt has anyone to write to.
pub static OUTPUT_CLOSED: EndRule = rule(
    Class::Permanent,
    "{reason}; the reader of retry's output went away, so no attempt can follow",
    "EPIPE or a closed pipe on retry's own stdout or stderr",
);

pub static INTERRUPTED_COMMAND: EndRule = rule(
    Class::Permanent,
    "retry received {signal} and passed it to the command",
    "a stopping signal (SIGINT, SIGTERM, SIGHUP) is the user's decision to stop",
);

pub static INTERRUPTED_REQUEST: EndRule = rule(
    Class::Permanent,
    "retry received {signal}",
    "a stopping signal (SIGINT, SIGTERM, SIGHUP) is the user's decision to stop",
);

pub static LOCK_LOST_COMMAND: EndRule = rule(
    Class::Permanent,
    "{lost}; retry stopped the command",
    "--lock: without the lock another run may start the same work",
);

pub static LOCK_LOST_REQUEST: EndRule = rule(
    Class::Permanent,
    "retry abandoned the request: {lost}",
    "--lock: without the lock another run may start the same work",
);

/// Command-mode endings checked before any exit-status rule, in order, for `--dry-run`.
pub static COMMAND_FIRST: [&EndRule; 4] = [
    &INTERRUPTED_COMMAND,
    &LOCK_LOST_COMMAND,
    &NO_RESOURCES,
    &NOT_RUNNABLE,
];

/// Command-mode endings that are not an exit status, checked after, for `--dry-run`.
pub static COMMAND_LAST: [&EndRule; 4] =
    [&TIMED_OUT, &SIGPIPE_READER_GONE, &SIGNALED, &OUTPUT_CLOSED];

/// The HTTP-mode endings retry causes itself, for `--dry-run`.
pub static REQUEST_ENDINGS: [&EndRule; 2] = [&INTERRUPTED_REQUEST, &LOCK_LOST_REQUEST];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_read_as_before() {
        assert_eq!(
            SIGNALED.verdict(&[("signal", "SIGTERM")]).reason,
            "killed by SIGTERM (not sent by retry)"
        );
        assert_eq!(
            OUTPUT_CLOSED.verdict(&[("reason", "exit status 1")]).reason,
            "exit status 1; the reader of retry's output went away, so no attempt can follow"
        );
        assert_eq!(
            LOCK_LOST_REQUEST.verdict(&[("lost", "lock lost")]),
            Verdict::permanent("retry abandoned the request: lock lost")
        );
    }

    #[test]
    fn every_rule_describes_itself_without_placeholders() {
        for rule in COMMAND_FIRST
            .iter()
            .chain(&COMMAND_LAST)
            .chain(&REQUEST_ENDINGS)
        {
            let line = rule.describe();
            assert!(!line.contains('{'), "{line}");
            assert!(line.contains(rule.class.as_str()), "{line}");
        }
    }
}
