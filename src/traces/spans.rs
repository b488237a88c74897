//! A run's spans, made after the run from what it recorded: the run (`retry.run`), each
//! attempt (`retry.attempt`, whose ID the attempt's `TRACEPARENT` named), each wait
//! (`retry.wait`: the backoff or Retry-After sleep after an attempt, a hold, the wait
//! for a lock, the splay) and each hook (`retry.hook`). Attribute names are
//! OpenTelemetry's semantic conventions where one exists (`process.exit.code`,
//! `http.response.status_code`, `error.type`, `url.full`), `retry.*` otherwise. Nothing
//! of a command's arguments is recorded, and a URL's user information is `***`, as in
//! the report. A pure function of the records and the times handed in.

use std::time::{Duration, SystemTime};

use crate::domain::{
    AttemptRecord, Class, Hold, HoldCause, HookRun, Outcome, RunSummary, SpanContext, SpanId,
};

/// What a span is said to do, in OTLP's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Internal,
    /// A request to another service (an HTTP attempt).
    Client,
}

/// An attribute's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Text(String),
    Int(i64),
}

/// One finished span.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub name: &'static str,
    pub id: SpanId,
    pub parent: Option<SpanId>,
    pub kind: Kind,
    pub start: SystemTime,
    pub end: SystemTime,
    pub attributes: Vec<(&'static str, Value)>,
    /// Set for a failure: what failed, in the report's words.
    pub error: Option<String>,
    /// A span of another trace it follows from (a slot's scheduler).
    pub link: Option<SpanContext>,
}

impl Span {
    fn new(name: &'static str, parent: SpanId, (start, end): (SystemTime, SystemTime)) -> Span {
        Span {
            name,
            id: SpanId::random(),
            parent: Some(parent),
            kind: Kind::Internal,
            start,
            end: end.max(start),
            attributes: Vec::new(),
            error: None,
            link: None,
        }
    }

    fn with(mut self, key: &'static str, value: Value) -> Span {
        self.attributes.push((key, value));
        self
    }
}

/// What the run was, for its span's attributes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// The command's program, by its file name (never its arguments).
    Command { program: String },
    /// The request's method and URL, its user information `***`.
    Http { method: String, url: String },
}

/// A wait the run made outside the retry loop (the loop's own are in the summary).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wait {
    pub cause: &'static str,
    pub started_at: SystemTime,
    pub duration: Duration,
}

/// A run as its spans are made from it.
pub struct RunRecord<'a> {
    pub span: &'a SpanContext,
    /// The run's span's parent, from another process (`TRACEPARENT`).
    pub parent: Option<&'a SpanContext>,
    pub link: Option<&'a SpanContext>,
    pub target: &'a Target,
    /// A scheduled slot's key, `JOB@SLOT`.
    pub slot: Option<&'a str>,
    pub started_at: SystemTime,
    pub ended_at: SystemTime,
    pub summary: &'a RunSummary,
    pub waits: &'a [Wait],
    pub hooks: &'a [HookRun],
}

/// Every span of the run, the run's first.
pub fn of_run(run: &RunRecord<'_>) -> Vec<Span> {
    let id = run.span.span_id;
    let mut spans = vec![run_span(run)];
    let attempts = &run.summary.attempts;
    for (n, record) in attempts.iter().enumerate() {
        spans.push(attempt_span(id, record, run.target));
        let next = attempts.get(n + 1).map(|a| a.started_at);
        spans.extend(sleep_span(id, record, next, run));
    }
    spans.extend(run.summary.holds.iter().map(|hold| hold_span(id, hold)));
    spans.extend(run.waits.iter().map(|wait| wait_span(id, wait)));
    spans.extend(run.hooks.iter().map(|hook| hook_span(id, hook)));
    spans
}

fn run_span(run: &RunRecord<'_>) -> Span {
    let summary = run.summary;
    let mut span = Span::new(
        "retry.run",
        run.span.span_id,
        (run.started_at, run.ended_at),
    );
    span.id = run.span.span_id;
    span.parent = run.parent.map(|p| p.span_id);
    span.link = run.link.cloned();
    span = match run.target {
        Target::Command { program } => span
            .with("retry.mode", text("command"))
            .with("process.executable.name", text(program)),
        Target::Http { method, url } => span
            .with("retry.mode", text("http"))
            .with("http.request.method", text(method))
            .with("url.full", text(url)),
    };
    span = span
        .with("retry.attempts", int(summary.attempts.len()))
        .with("retry.stopped_because", text(stopped_because(summary)))
        .with(
            "process.exit.code",
            Value::Int(summary.exit_code.code().into()),
        );
    if let Some(slot) = run.slot {
        span = span.with("retry.slot", text(slot));
    }
    if !summary.succeeded() {
        span = span.with("error.type", text(stopped_because(summary)));
        span.error = Some(summary.message.clone());
    }
    span
}

fn attempt_span(run: SpanId, record: &AttemptRecord, target: &Target) -> Span {
    let end = record.started_at + record.duration;
    let mut span = Span::new("retry.attempt", run, (record.started_at, end))
        .with("retry.attempt.number", int(record.number))
        .with("retry.class", text(record.class.as_str()))
        .with("retry.reason", text(&record.reason));
    if let Some(id) = record.span {
        span.id = id;
    }
    if matches!(target, Target::Http { .. }) {
        span.kind = Kind::Client;
    }
    match &record.outcome {
        Outcome::Exit { code } | Outcome::NotRunnable { code, .. } => {
            span = span.with("process.exit.code", Value::Int(code.code().into()));
        }
        Outcome::Http { status } => {
            span = span.with("http.response.status_code", Value::Int((*status).into()));
        }
        _ => {}
    }
    if record.class != Class::Success {
        span = span.with("error.type", text(error_type(&record.outcome)));
        span.error = Some(record.reason.clone());
    }
    span
}

/// The sleep that followed an attempt: from its end to the next attempt (or the hold
/// before it), never past the run's end.
fn sleep_span(
    run: SpanId,
    record: &AttemptRecord,
    next: Option<SystemTime>,
    whole: &RunRecord<'_>,
) -> Option<Span> {
    let delay = record.delay?;
    let start = record.started_at + record.duration;
    let held = whole
        .summary
        .holds
        .iter()
        .map(|h| h.started_at)
        .filter(|at| *at >= start)
        .min();
    let end = [next, held, Some(whole.ended_at)]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(start + delay);
    let cause = match record.wait_hint {
        Some(_) => "retry_after",
        None => "backoff",
    };
    let mut span = Span::new("retry.wait", run, (start, end))
        .with("retry.wait.cause", text(cause))
        .with("retry.wait.planned_ms", int(delay.as_millis()));
    if let Some(hint) = &record.wait_hint {
        span = span
            .with("retry.retry_after", text(&hint.source))
            .with("retry.retry_after_ms", int(hint.wait.as_millis()));
    }
    Some(span)
}

fn hold_span(run: SpanId, hold: &Hold) -> Span {
    let cause = match hold.cause {
        HoldCause::Budget => "budget",
        HoldCause::Circuit => "circuit",
    };
    Span::new(
        "retry.wait",
        run,
        (hold.started_at, hold.started_at + hold.duration),
    )
    .with("retry.wait.cause", text(cause))
}

fn wait_span(run: SpanId, wait: &Wait) -> Span {
    Span::new(
        "retry.wait",
        run,
        (wait.started_at, wait.started_at + wait.duration),
    )
    .with("retry.wait.cause", text(wait.cause))
}

fn hook_span(run: SpanId, hook: &HookRun) -> Span {
    let mut span = Span::new(
        "retry.hook",
        run,
        (hook.started_at, hook.started_at + hook.duration),
    )
    .with("retry.hook", text(hook.flag));
    span.id = hook.span;
    if let Some(code) = hook.exit_code {
        span = span.with("process.exit.code", Value::Int(code.into()));
    }
    if let Some(failure) = &hook.failure {
        span = span.with("error.type", text("hook_failed"));
        span.error = Some(failure.clone());
    }
    span
}

/// `error.type` of a failed attempt: the status or exit code, the signal, or what
/// went wrong.
fn error_type(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Exit { code } => code.code().to_string(),
        Outcome::Http { status } => status.to_string(),
        Outcome::Signal { name, .. } => name.clone(),
        Outcome::Timeout { .. } => "timeout".into(),
        Outcome::NotRunnable { .. } => "not_runnable".into(),
        Outcome::NoResources { .. } => "no_resources".into(),
        Outcome::Error { kind, .. } => kind.clone(),
    }
}

/// Why the run stopped, as the report says it (`attempts`, `max_time`).
fn stopped_because(summary: &RunSummary) -> String {
    serde_json::to_value(summary.stopped_because)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn text(value: impl ToString) -> Value {
    Value::Text(value.to_string())
}

fn int(value: impl TryInto<i64>) -> Value {
    Value::Int(value.try_into().unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{ExitStatus, StopReason, WaitHint};

    fn at(ms: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000) + Duration::from_millis(ms)
    }

    fn attempt(
        number: u32,
        start: u64,
        took: u64,
        outcome: Outcome,
        delay: Option<u64>,
    ) -> AttemptRecord {
        let class = match &outcome {
            Outcome::Exit { code } if code.is_success() => Class::Success,
            _ => Class::Transient,
        };
        AttemptRecord {
            number,
            started_at: at(start),
            duration: Duration::from_millis(took),
            outcome,
            class,
            reason: format!("reason {number}"),
            wait_hint: None,
            delay: delay.map(Duration::from_millis),
            span: Some(SpanId::random()),
        }
    }

    fn exit(code: u8) -> Outcome {
        Outcome::Exit {
            code: ExitStatus::new(code),
        }
    }

    fn attr<'s>(span: &'s Span, key: &str) -> Option<&'s Value> {
        span.attributes
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    }

    fn summary(attempts: Vec<AttemptRecord>, holds: Vec<Hold>) -> RunSummary {
        RunSummary {
            attempts,
            exit_code: ExitStatus::SUCCESS,
            stopped_because: StopReason::Success,
            message: "succeeded".into(),
            elapsed: Duration::from_secs(1),
            holds,
        }
    }

    #[test]
    fn three_attempts_are_a_run_three_attempts_and_the_waits_between() {
        let mut second = attempt(2, 150, 10, exit(1), Some(100));
        second.wait_hint = Some(WaitHint {
            wait: Duration::from_millis(100),
            source: "Retry-After: 0.1".into(),
            asked_by: "the command",
        });
        let attempts = vec![
            attempt(1, 0, 100, exit(1), Some(50)),
            second,
            attempt(3, 260, 5, exit(0), None),
        ];
        let holds = vec![Hold {
            started_at: at(270),
            duration: Duration::from_millis(5),
            cause: HoldCause::Budget,
        }];
        let summary = summary(attempts, holds);
        let run_span = SpanContext::new_trace(true);
        let parent = SpanContext::new_trace(true);
        let target = Target::Command {
            program: "deploy.sh".into(),
        };
        let lock = [Wait {
            cause: "lock",
            started_at: at(0),
            duration: Duration::ZERO,
        }];
        let record = RunRecord {
            span: &run_span,
            parent: Some(&parent),
            link: None,
            target: &target,
            slot: None,
            started_at: at(0),
            ended_at: at(300),
            summary: &summary,
            waits: &lock,
            hooks: &[],
        };
        let spans = of_run(&record);
        let names: Vec<&str> = spans.iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "retry.run",
                "retry.attempt",
                "retry.wait",
                "retry.attempt",
                "retry.wait",
                "retry.attempt",
                "retry.wait",
                "retry.wait"
            ]
        );
        let run = &spans[0];
        assert_eq!(
            (run.id, run.parent),
            (run_span.span_id, Some(parent.span_id))
        );
        assert_eq!(
            attr(run, "process.executable.name"),
            Some(&text("deploy.sh"))
        );
        assert_eq!(attr(run, "retry.attempts"), Some(&Value::Int(3)));
        assert_eq!(run.error, None);
        for (span, record) in [&spans[1], &spans[3], &spans[5]]
            .iter()
            .zip(&summary.attempts)
        {
            assert_eq!(
                span.id,
                record.span.unwrap(),
                "the ID its TRACEPARENT named"
            );
            assert_eq!(span.parent, Some(run_span.span_id));
            assert_eq!(
                span.end.duration_since(span.start).unwrap(),
                record.duration
            );
        }
        assert_eq!(attr(&spans[1], "process.exit.code"), Some(&Value::Int(1)));
        assert_eq!(attr(&spans[1], "error.type"), Some(&text("1")));
        assert_eq!(spans[1].error.as_deref(), Some("reason 1"));
        assert_eq!(attr(&spans[5], "error.type"), None);
        // The backoff after attempt 1 runs from its end (100) to attempt 2 (150).
        assert_eq!((spans[2].start, spans[2].end), (at(100), at(150)));
        assert_eq!(attr(&spans[2], "retry.wait.cause"), Some(&text("backoff")));
        assert_eq!(
            attr(&spans[4], "retry.wait.cause"),
            Some(&text("retry_after"))
        );
        assert_eq!(
            attr(&spans[4], "retry.retry_after"),
            Some(&text("Retry-After: 0.1"))
        );
        assert_eq!(attr(&spans[6], "retry.wait.cause"), Some(&text("budget")));
        assert_eq!(attr(&spans[7], "retry.wait.cause"), Some(&text("lock")));
        let ids: std::collections::HashSet<SpanId> = spans.iter().map(|s| s.id).collect();
        assert_eq!(ids.len(), spans.len(), "every span its own ID");
    }

    #[test]
    fn a_failed_http_run_names_its_statuses_and_its_url_without_secrets() {
        let attempts = vec![attempt(1, 0, 10, Outcome::Http { status: 503 }, Some(1000))];
        let mut summary = summary(attempts, Vec::new());
        summary.exit_code = ExitStatus::new(22);
        summary.stopped_because = StopReason::Attempts;
        summary.message = "gave up after 1 attempt".into();
        let run_span = SpanContext::new_trace(true);
        let target = Target::Http {
            method: "GET".into(),
            url: "https://***@example.test/x".into(),
        };
        let hook = HookRun {
            flag: "--on-give-up",
            span: SpanId::random(),
            started_at: at(20),
            duration: Duration::from_millis(3),
            exit_code: Some(4),
            failure: Some("failed with exit status 4".into()),
        };
        let record = RunRecord {
            span: &run_span,
            parent: None,
            link: Some(&run_span),
            target: &target,
            slot: Some("job@2026-01-01T00:00:00Z"),
            started_at: at(0),
            ended_at: at(30),
            summary: &summary,
            waits: &[],
            hooks: std::slice::from_ref(&hook),
        };
        let spans = of_run(&record);
        let run = &spans[0];
        assert_eq!(run.parent, None);
        assert!(run.link.is_some());
        assert_eq!(attr(run, "error.type"), Some(&text("attempts")));
        assert_eq!(attr(run, "process.exit.code"), Some(&Value::Int(22)));
        assert_eq!(
            attr(run, "retry.slot"),
            Some(&text("job@2026-01-01T00:00:00Z"))
        );
        assert_eq!(spans[1].kind, Kind::Client);
        assert_eq!(
            attr(&spans[1], "http.response.status_code"),
            Some(&Value::Int(503))
        );
        assert_eq!(attr(&spans[1], "error.type"), Some(&text("503")));
        // The sleep was cut by the run's end.
        assert_eq!(spans[2].end, at(30));
        let hook_span = spans.last().unwrap();
        assert_eq!((hook_span.name, hook_span.id), ("retry.hook", hook.span));
        assert_eq!(attr(hook_span, "process.exit.code"), Some(&Value::Int(4)));
    }
}
