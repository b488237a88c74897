//! The hooks (docs/internals.md, "The command's own word, and the hooks"): when each
//! runs, what it is told (its environment and, after the run, the report JSON on
//! stdin), and what its failure means: a warning, never another exit status or decision.
//! `--on-retry` runs inside the engine's backoff sleep through
//! [`RetryHook`]; `--on-success` and `--on-give-up` run from [`Hooks::after_run`].
//! Starting and ending the process is [`exec::hook`](crate::exec::hook)'s work.

use std::ffi::OsString;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use crate::config::{HookConfig, RunInfo};
use crate::domain::{
    AttemptRecord, ExitStatus, HookRun, Outcome, Policy, RunSummary, SpanContext, Stop, StopReason,
    TimeLimit, human,
};
use crate::engine::{RetryFacts, RetryHook};
use crate::exec::{hook, hook::HookEnd, hook::HookSpec, hook::RunningHook};
use crate::report;

/// Variables a hook is told about the run. Every one is cleared first, so a
/// hook never sees a value inherited from an outer retry that does not apply.
const HOOK_VARS: &[&str] = &[
    "RETRY_ATTEMPT",
    "RETRY_ATTEMPTS",
    "RETRY_IDEMPOTENCY_KEY",
    "RETRY_DEADLINE_MS",
    "RETRY_DEPTH",
    "RETRY_EXIT_CODE",
    "RETRY_HTTP_STATUS",
    "RETRY_OUTCOME",
    "RETRY_CLASS",
    "RETRY_REASON",
    "RETRY_NEXT_DELAY_MS",
    // Attempts write directives there; a hook has no say in the classification.
    "RETRY_CONTROL",
];

pub struct Hooks {
    config: HookConfig,
    depth: u32,
    attempts: u32,
    limit: TimeLimit,
    /// The key, when the command sees it or the request sends it.
    key: Option<String>,
    /// `RETRY_FENCING_TOKEN`, once a lock yields one.
    fencing_token: Option<i64>,
    running: Option<(RunningHook, Began)>,
    /// The run's span, when the run is traced: each hook is a span under it.
    trace: Option<SpanContext>,
    /// The hooks that ran, for their spans (kept only when the run is traced).
    ran: Vec<HookRun>,
}

/// A hook's start, for its span.
struct Began {
    flag: &'static str,
    span: Option<SpanContext>,
    at: SystemTime,
    clock: Instant,
}

/// What one hook is about: the attempt it follows and the status retry would exit with.
struct About<'a> {
    last: &'a AttemptRecord,
    exit_code: ExitStatus,
    time_left: Option<Duration>,
}

impl Hooks {
    /// `policy` gives the attempt limit and `limit` the time limit the hooks are told of.
    pub fn new(
        config: HookConfig,
        run: &RunInfo,
        policy: &Policy,
        limit: TimeLimit,
        key: Option<&str>,
    ) -> Hooks {
        Hooks {
            config,
            depth: run.depth,
            attempts: policy.attempts,
            limit,
            key: key.map(str::to_string),
            fencing_token: None,
            running: None,
            trace: None,
            ran: Vec::new(),
        }
    }

    /// The run's span: each hook gets one under it, which its `TRACEPARENT` names.
    pub fn set_trace(&mut self, run_span: SpanContext) {
        self.trace = Some(run_span);
    }

    /// The hooks that ran in a traced run, in order.
    pub fn take_runs(&mut self) -> Vec<HookRun> {
        std::mem::take(&mut self.ran)
    }

    /// A hook starts now: its span, and its `TRACEPARENT` in `env`.
    fn begin(&self, flag: &'static str, env: &mut Vec<(String, OsString)>) -> Began {
        let span = self.trace.as_ref().map(SpanContext::child);
        if let Some(span) = &span {
            env.push(var("TRACEPARENT", span.traceparent()));
            if let Some(state) = &span.state {
                env.push(var("TRACESTATE", state));
            }
        }
        Began {
            flag,
            span,
            at: SystemTime::now(),
            clock: Instant::now(),
        }
    }

    /// The variables of retry's environment a hook must not see: a traced run's hook
    /// gets no `TRACESTATE` of another trace.
    fn removed(&self) -> Vec<&'static str> {
        let stale_state = self.trace.as_ref().is_some_and(|t| t.state.is_none());
        let traced = stale_state.then_some("TRACESTATE");
        HOOK_VARS.iter().copied().chain(traced).collect()
    }

    /// A hook ended as `end` says: kept for its span when the run is traced.
    fn ended(&mut self, began: Began, end: &HookEnd) {
        let Some(span) = began.span else {
            return;
        };
        let (exit_code, failure) = match end {
            HookEnd::Exited(code) if code.is_success() => (Some(code.code().into()), None),
            HookEnd::Exited(code) => (
                Some(code.code().into()),
                Some(format!("failed with exit status {code}")),
            ),
            HookEnd::Signaled(sig) => (None, Some(format!("killed by {sig}"))),
            HookEnd::TimedOut(limit) => (
                None,
                Some(format!("ran out of time after {}", human(*limit))),
            ),
            HookEnd::Failed(why) => (None, Some(format!("could not run: {why}"))),
            HookEnd::Interrupted(sig) => (None, Some(format!("interrupted by {sig}"))),
            HookEnd::LockLost(lost) => (None, Some(lost.clone())),
        };
        self.ran.push(HookRun {
            flag: began.flag,
            span: span.span_id,
            started_at: began.at,
            duration: began.clock.elapsed(),
            exit_code,
            failure,
        });
    }

    /// The environment of a hook about `about`: the command's RETRY_* variables
    /// (RETRY_DEPTH is retry's own, so a retry inside a hook retries) and the
    /// attempt's ending.
    fn env(&self, about: &About<'_>) -> Vec<(String, OsString)> {
        let last = about.last;
        let mut env: Vec<(String, OsString)> = vec![
            var("RETRY_ATTEMPT", last.number),
            var("RETRY_ATTEMPTS", self.attempts),
            var("RETRY_DEPTH", self.depth),
            var("RETRY_EXIT_CODE", about.exit_code),
            var("RETRY_OUTCOME", last.outcome.describe()),
            var("RETRY_CLASS", last.class.as_str()),
            var("RETRY_REASON", &last.reason),
        ];
        if let Some(key) = &self.key {
            env.push(var("RETRY_IDEMPOTENCY_KEY", key));
        }
        if let Some(left) = about.time_left {
            env.push(var("RETRY_DEADLINE_MS", left.as_millis()));
        }
        if let Outcome::Http { status } = last.outcome {
            env.push(var("RETRY_HTTP_STATUS", status));
        }
        if let Some(token) = self.fencing_token {
            env.push(var("RETRY_FENCING_TOKEN", token));
        }
        env
    }

    /// The lock's fencing token, as the command gets it.
    pub fn set_fencing_token(&mut self, token: i64) {
        self.fencing_token = Some(token);
    }

    /// Runs `--on-success` or `--on-give-up` for a finished run, with the report
    /// as `--report` would write it now (`report`) on stdin. A signal during the
    /// hook makes the run one stopped by that signal.
    pub fn after_run(
        &mut self,
        summary: RunSummary,
        report: impl FnOnce(&RunSummary) -> Value,
    ) -> RunSummary {
        let Some((flag, command)) = self.final_hook(&summary) else {
            return summary;
        };
        let Some(last) = summary.attempts.last() else {
            return summary;
        };
        let mut json = serde_json::to_vec_pretty(&report(&summary)).unwrap_or_default();
        json.push(b'\n');
        let about = About {
            last,
            exit_code: summary.exit_code,
            time_left: self.limit.left(summary.elapsed),
        };
        let mut env = self.env(&about);
        let began = self.begin(flag, &mut env);
        let removed = self.removed();
        let spec = HookSpec {
            command,
            env,
            remove: &removed,
            stdin: Some(json),
            timeout: self.config.timeout,
        };
        let end = match hook::start(spec) {
            Ok(running) => running.wait(),
            Err(end) => end,
        };
        self.ended(began, &end);
        match settle(flag, &end) {
            Some(stop) => stopped_during(summary, flag, stop),
            None => summary,
        }
    }

    /// Which hook follows a run: never one stopped by a signal, skipped or refused
    /// before any attempt ran.
    fn final_hook(&self, summary: &RunSummary) -> Option<(&'static str, &str)> {
        if summary.attempts.is_empty() {
            return None;
        }
        match summary.stopped_because {
            _ if summary.succeeded() => Some(("--on-success", self.config.on_success.as_deref()?)),
            StopReason::Signal | StopReason::Skipped => None,
            _ => Some(("--on-give-up", self.config.on_give_up.as_deref()?)),
        }
    }
}

impl RetryHook for Hooks {
    fn start(&mut self, facts: &RetryFacts<'_>) {
        let Some(command) = self.config.on_retry.as_deref() else {
            return;
        };
        let about = About {
            last: facts.record,
            exit_code: facts.exit_code,
            time_left: facts.time_left,
        };
        let mut env = self.env(&about);
        env.push(var("RETRY_NEXT_DELAY_MS", facts.next_delay.as_millis()));
        // The hook is part of the run: it may not outlast the time limit.
        let timeout = facts
            .time_left
            .map_or(self.config.timeout, |left| left.min(self.config.timeout));
        let began = self.begin("--on-retry", &mut env);
        let removed = self.removed();
        let spec = HookSpec {
            command,
            env,
            remove: &removed,
            stdin: None,
            timeout,
        };
        match hook::start(spec) {
            Ok(running) => self.running = Some((running, began)),
            Err(end) => {
                self.ended(began, &end);
                settle("--on-retry", &end);
            }
        }
    }

    fn wait(&mut self) -> Result<(), Stop> {
        let Some((running, began)) = self.running.take() else {
            return Ok(());
        };
        let end = running.wait();
        self.ended(began, &end);
        match settle("--on-retry", &end) {
            Some(stop) => Err(stop),
            None => Ok(()),
        }
    }
}

fn var(name: &str, value: impl ToString) -> (String, OsString) {
    (name.to_string(), value.to_string().into())
}

/// Says how a hook ended when that is worth a word; what stops the run, if retry
/// received a stopping signal or lost its lock during it.
fn settle(flag: &str, end: &HookEnd) -> Option<Stop> {
    let warn = |what: String| {
        report::notice(&format!(
            "warning: the {flag} hook {what}; the run goes on as if it had succeeded"
        ));
    };
    match end {
        HookEnd::Exited(code) if code.is_success() => {
            report::verbose(1, &format!("the {flag} hook succeeded"))
        }
        HookEnd::Exited(code) => warn(format!("failed with exit status {code}")),
        HookEnd::Signaled(sig) => warn(format!("was killed by {sig}")),
        HookEnd::TimedOut(limit) => warn(format!(
            "ran out of time after {} and was stopped",
            human(*limit)
        )),
        HookEnd::Failed(why) => warn(format!("could not run: {why}")),
        HookEnd::Interrupted(sig) => return Some(Stop::Signal(*sig)),
        HookEnd::LockLost(lost) => return Some(Stop::LockLost(lost.clone())),
    }
    None
}

/// The run as it ends when `stop` cut a hook short: a stopping signal (128+N) or a
/// lost lock (125, `lock_lost`).
fn stopped_during(summary: RunSummary, flag: &str, stop: Stop) -> RunSummary {
    let (exit_code, stopped_because, message) = match stop {
        Stop::Signal(sig) => (
            ExitStatus::of_signal(sig),
            StopReason::Signal,
            format!("interrupted by {sig} during the {flag} hook"),
        ),
        Stop::LockLost(lost) => (
            ExitStatus::USAGE,
            StopReason::LockLost,
            format!("{lost} during the {flag} hook"),
        ),
    };
    report::notice(&format!("{message}; exit status {exit_code}"));
    RunSummary {
        exit_code,
        stopped_because,
        message,
        ..summary
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Class;
    use std::time::SystemTime;

    fn summary(stopped_because: StopReason, attempts: usize) -> RunSummary {
        let record = AttemptRecord {
            number: 1,
            started_at: SystemTime::UNIX_EPOCH,
            duration: Duration::ZERO,
            outcome: Outcome::Http { status: 503 },
            class: Class::Transient,
            reason: "HTTP 503".into(),
            wait_hint: None,
            delay: None,
            span: None,
        };
        RunSummary {
            attempts: vec![record; attempts],
            exit_code: ExitStatus::new(22),
            stopped_because,
            message: String::new(),
            elapsed: Duration::from_secs(1),
            holds: Vec::new(),
        }
    }

    fn hooks() -> Hooks {
        let config = HookConfig {
            on_retry: None,
            on_give_up: Some("give-up".into()),
            on_success: Some("ok".into()),
            timeout: Duration::from_secs(30),
        };
        let run = RunInfo {
            idempotency_key: "k".into(),
            key_requested: false,
            depth: 2,
            nested: true,
        };
        let policy = Policy {
            attempts: 1,
            max_time: Some(Duration::from_secs(5)),
            ..Policy::default()
        };
        let limit = TimeLimit::starting_now(policy.max_time);
        Hooks::new(config, &run, &policy, limit, None)
    }

    #[test]
    fn give_up_follows_every_ending_but_success_signal_and_skip() {
        let h = hooks();
        let which = |reason, n| h.final_hook(&summary(reason, n)).map(|(flag, _)| flag);
        assert_eq!(which(StopReason::Success, 1), Some("--on-success"));
        for reason in [
            StopReason::Permanent,
            StopReason::Attempts,
            StopReason::MaxTime,
            StopReason::RetryAfterTooLong,
            StopReason::LockLost,
        ] {
            assert_eq!(which(reason, 1), Some("--on-give-up"), "{reason:?}");
        }
        assert_eq!(which(StopReason::Signal, 1), None);
        assert_eq!(which(StopReason::Skipped, 0), None);
        assert_eq!(
            which(StopReason::LockLost, 0),
            None,
            "no attempt ran: no hook"
        );
    }

    #[test]
    fn the_environment_is_the_commands_and_the_endings() {
        let h = hooks();
        let s = summary(StopReason::Attempts, 1);
        let about = About {
            last: &s.attempts[0],
            exit_code: ExitStatus::new(22),
            time_left: Some(Duration::from_millis(1500)),
        };
        let env = h.env(&about);
        let get = |name: &str| {
            env.iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.to_string_lossy().into_owned())
        };
        assert_eq!(
            get("RETRY_DEPTH").as_deref(),
            Some("2"),
            "retry's own depth"
        );
        assert_eq!(get("RETRY_EXIT_CODE").as_deref(), Some("22"));
        assert_eq!(get("RETRY_HTTP_STATUS").as_deref(), Some("503"));
        assert_eq!(get("RETRY_OUTCOME").as_deref(), Some("HTTP 503"));
        assert_eq!(get("RETRY_CLASS").as_deref(), Some("transient"));
        assert_eq!(get("RETRY_DEADLINE_MS").as_deref(), Some("1500"));
        assert_eq!(get("RETRY_IDEMPOTENCY_KEY"), None, "a key not in use");
        assert!(HOOK_VARS.contains(&"RETRY_CONTROL"));
    }
}
