//! Everything retry says about a run, and how it says it: stderr lines (text or JSON
//! Lines), GitHub Actions annotations, the events of a run as the engine emits them, and
//! the JSON of the `--report` file. The engine emits events; it never formats them.
//! Where and how a file is written is `files`' work.
//!
//! Every JSON line starts with `"time"`; under `--schedule` every text line starts
//! with the time too (a container's log has no other clock). Annotations and the
//! terminal countdown carry no time: an annotation must start its line.

use std::io::Write;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::domain::{
    AttemptRecord, Class, Event, Events, Hold, LogConfig, Outcome, RunSummary, StopReason, human,
    of_attempts, one_line, rfc3339_millis,
};

static CONFIG: OnceLock<LogConfig> = OnceLock::new();
/// The scheduled slot being run (`JOB@SLOT`), named by every line while it runs.
static SLOT: Mutex<Option<String>> = Mutex::new(None);

/// Names `slot` in every line from now on (`None`: no slot).
pub fn set_slot(slot: Option<String>) {
    *SLOT.lock().unwrap_or_else(|p| p.into_inner()) = slot;
}

thread_local! {
    /// The label this thread's lines carry instead of [`SLOT`], while one is set: a
    /// thread beside a running slot speaks of another slot, or of none.
    static THREAD_SLOT: std::cell::RefCell<Option<Option<String>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `f` with this thread's lines naming `slot` (`None`: no slot), whatever slot runs.
pub fn with_slot<T>(slot: Option<String>, f: impl FnOnce() -> T) -> T {
    let before = THREAD_SLOT.with(|s| s.replace(Some(slot)));
    let out = f();
    THREAD_SLOT.with(|s| *s.borrow_mut() = before);
    out
}

fn slot() -> Option<String> {
    if let Some(label) = THREAD_SLOT.with(|s| s.borrow().clone()) {
        return label;
    }
    SLOT.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Adds the slot, if any, to a JSON line.
fn add_slot(line: &mut Value) {
    if let (Some(slot), Some(obj)) = (slot(), line.as_object_mut()) {
        obj.insert("slot".into(), Value::String(slot));
    }
}

pub fn init(config: LogConfig) {
    let _ = CONFIG.set(config);
}

pub fn config() -> &'static LogConfig {
    CONFIG.get_or_init(LogConfig::default)
}

/// Every message goes out here: a text line with its control characters escaped
/// (`one_line`), so a value it echoes can neither break it nor reach the terminal
/// raw; JSON escapes them itself.
fn emit(level: &str, message: &str, fields: Value) {
    let cfg = config();
    if cfg.json {
        let mut line = json!({ "event": "message", "level": level, "message": message });
        merge(&mut line, fields);
        write_json(line);
    } else {
        put(format!("{}{}\n", prefix(cfg), one_line(message)));
    }
}

/// A text line whose values are escaped already (and which may carry `paint`'s colours).
fn write_text(cfg: &LogConfig, shown: &str) {
    put(format!("{}{shown}\n", prefix(cfg)));
}

/// Where retry's own lines go instead of stderr (unset: stderr): a crontab's slot run
/// writes them to the scheduler's stderr while its command's output goes through
/// the scheduler to be labelled.
static LOG_TO: std::sync::OnceLock<std::fs::File> = std::sync::OnceLock::new();

/// Sends retry's own lines to `file` from now on (the first call only).
pub fn log_to(file: std::fs::File) {
    let _ = LOG_TO.set(file);
}

/// Writes one whole line in one write, so lines of processes sharing the stream
/// never interleave.
fn put(line: String) {
    match LOG_TO.get() {
        Some(mut file) => {
            let _ = file.write_all(line.as_bytes());
        }
        None => {
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
        }
    }
}

/// Writes one JSON line: `"time"` first, then `line`'s members and the slot, if any.
fn write_json(mut line: Value) {
    add_slot(&mut line);
    put(format!("{}\n", time_first(&line)));
}

/// `line` as one JSON line with `"time"` (now) first, for lines written elsewhere.
pub fn with_time(line: &Value) -> String {
    time_first(line)
}

/// `line` as JSON with a `"time"` member (now) before the others: serde_json orders
/// a map's members by name, and log collectors look for the time first.
fn time_first(line: &Value) -> String {
    let time = Value::String(rfc3339_millis(SystemTime::now()));
    let rest = line.to_string();
    match rest.strip_prefix('{').filter(|r| *r != "}") {
        Some(members) => format!("{{\"time\":{time},{members}"),
        None => format!("{{\"time\":{time}}}"),
    }
}

fn prefix(cfg: &LogConfig) -> String {
    let name = if cfg.color {
        "\x1b[1mretry:\x1b[0m "
    } else {
        "retry: "
    };
    let time = if cfg.timestamps {
        format!("{} ", rfc3339_millis(SystemTime::now()))
    } else {
        String::new()
    };
    match slot() {
        Some(slot) => format!("{time}{name}[{slot}] "),
        None => format!("{time}{name}"),
    }
}

/// A normal-level message (hidden by -q).
pub fn info(message: &str) {
    if config().level >= 0 {
        emit("info", message, Value::Null);
    }
}

/// Whether `-v` × `n` messages are shown: check it before formatting one on a hot path.
pub fn shows(n: u8) -> bool {
    i16::from(config().level) >= i16::from(n)
}

/// A message shown from `-v` × `n` on.
pub fn verbose(n: u8, message: &str) {
    if shows(n) {
        emit("debug", message, Value::Null);
    }
}

/// A message shown even with -q (hidden by -qq): warnings and the last word.
pub fn notice(message: &str) {
    if config().level >= -1 {
        emit("notice", message, Value::Null);
    }
}

/// retry's own error: always shown.
pub fn error(message: &str) {
    emit("error", message, Value::Null);
}

/// A line about a scheduled slot as a whole (its start or its end): `text` at the
/// normal level, or with `notice` also under `-q`; in JSON, `event` with `fields`.
pub fn slot_event(notice: bool, text: &str, event: &str, fields: Value) {
    let cfg = config();
    if cfg.level < if notice { -1 } else { 0 } {
        return;
    }
    if cfg.json {
        let mut line = json!({ "event": event, "message": text });
        merge(&mut line, fields);
        write_json(line);
    } else {
        put(format!("{}{}\n", prefix(cfg), one_line(text)));
    }
}

fn merge(target: &mut Value, extra: Value) {
    if let (Some(target), Value::Object(extra)) = (target.as_object_mut(), extra) {
        target.extend(extra);
    }
}

fn paint(class: Class, text: &str) -> String {
    if !config().color {
        return text.to_string();
    }
    let code = match class {
        Class::Success => "32",
        Class::Transient => "33",
        Class::Permanent => "31",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

/// Escapes a GitHub Actions workflow-command message (its line breaks as the runner
/// reads them, any other control character as every line escapes it).
fn github_escape(text: &str) -> String {
    let escaped = text
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A");
    one_line(&escaped).into_owned()
}

fn github(kind: &str, message: &str) {
    let cfg = config();
    if cfg.github && cfg.level >= -1 {
        let _ = writeln!(
            std::io::stderr().lock(),
            "::{kind} title=retry::{}",
            github_escape(message)
        );
    }
}

/// Formats engine events for stderr.
pub struct Logger {
    /// Extra fields added to every JSON event (target, mode, key).
    pub context: Value,
    /// Whether the run's last line is written here; a scheduler's slot ends with a
    /// line of its own instead, which says the same and more.
    pub final_line: bool,
    /// The run is held: the first hold after an attempt is said, the rest only with -v.
    pub holding: bool,
}

impl Logger {
    /// The line of a failed attempt, its values escaped (`painted`: the class in colour).
    fn attempt_line(record: &AttemptRecord, attempts: u32, painted: bool) -> String {
        let class = record.class.as_str();
        format!(
            "attempt {} failed: {} ({}: {})",
            of_attempts(record.number, attempts),
            one_line(&record.outcome.describe()),
            if painted {
                paint(record.class, class)
            } else {
                class.to_string()
            },
            one_line(&record.reason)
        )
    }

    fn json_event(&self, event: &str, mut fields: Value) {
        let mut line = json!({ "event": event });
        merge(&mut line, std::mem::take(&mut fields));
        merge(&mut line, self.context.clone());
        write_json(line);
    }
}

impl Events for Logger {
    fn event(&mut self, event: Event<'_>) {
        let cfg = config().clone();
        match event {
            Event::AttemptStarting {
                number,
                attempts,
                timeout,
            } => {
                self.holding = false;
                if cfg.level >= 1 {
                    let shown = timeout
                        .map(|t| format!(" (timeout {})", human(t)))
                        .unwrap_or_default();
                    if cfg.json {
                        self.json_event("attempt_started", json!({ "attempt": number, "attempts": attempts, "timeout_ms": timeout.map(|t| t.as_millis() as u64) }));
                    } else {
                        emit(
                            "debug",
                            &format!("attempt {}{shown}", of_attempts(number, attempts)),
                            Value::Null,
                        );
                    }
                }
            }
            Event::AttemptFailed {
                record,
                attempts,
                next,
            } => {
                let next = next
                    .map(|delay| format!("; next attempt in {}", human(delay)))
                    .unwrap_or_default();
                if !next.is_empty() {
                    github(
                        "warning",
                        &(Self::attempt_line(record, attempts, false) + &next),
                    );
                }
                if cfg.level < 0 {
                    return;
                }
                if cfg.json {
                    self.json_event("attempt_failed", attempt_json(record, attempts));
                } else {
                    write_text(&cfg, &(Self::attempt_line(record, attempts, true) + &next));
                }
            }
            Event::Succeeded {
                record,
                attempts,
                next,
            } => {
                let noteworthy = record.number > 1 || next.is_some();
                if cfg.level < 0 || (!noteworthy && cfg.level < 1) {
                    return;
                }
                if cfg.json {
                    let mut fields = attempt_json(record, attempts);
                    if let Some((_, progress)) = next {
                        merge(&mut fields, json!({ "progress": progress }));
                    }
                    self.json_event("attempt_succeeded", fields);
                } else {
                    let mut text = format!(
                        "attempt {} {}",
                        of_attempts(record.number, attempts),
                        paint(Class::Success, "succeeded")
                    );
                    if let Some((delay, progress)) = next {
                        let progress = one_line(progress);
                        text.push_str(&format!(" ({progress}); next attempt in {}", human(delay)));
                    }
                    write_text(&cfg, &text);
                }
            }
            Event::Held {
                cause,
                why,
                duration,
            } => {
                let again = std::mem::replace(&mut self.holding, true);
                if cfg.level < 0 || (again && cfg.level < 1) {
                    return;
                }
                let line = if again {
                    format!("{why}: holding the run {} more", human(duration))
                } else {
                    format!(
                        "{why}: holding the run {}, sending nothing, then asking again \
                         (until --max-time; -v shows each hold)",
                        human(duration)
                    )
                };
                if cfg.json {
                    let fields =
                        json!({ "cause": cause, "duration_ms": millis(duration), "message": line });
                    self.json_event("held", fields);
                } else {
                    emit("info", &line, Value::Null);
                }
            }
            Event::Stopped { summary } => {
                if summary.stopped_because == StopReason::Success {
                    if cfg.json && cfg.level >= 0 && self.final_line {
                        self.json_event("stopped", result_json(summary));
                    }
                    return;
                }
                let cause = last_cause(summary);
                let line = final_line(summary, cause.as_deref());
                // A run that exits 0 short of its goal (--until-failure found none) is no error.
                if !summary.exit_code.is_success() {
                    github("error", &line);
                }
                if cfg.level < -1 || !self.final_line {
                    return;
                }
                if cfg.json {
                    let mut fields = result_json(summary);
                    merge(
                        &mut fields,
                        json!({ "message": summary.message, "cause": cause }),
                    );
                    self.json_event("stopped", fields);
                } else {
                    emit("notice", &line, Value::Null);
                }
            }
        }
    }
}

/// What the last attempt ended with: its outcome, or, where that is only the exit
/// status the line already gives, why it was classified so (`curl: could not connect`);
/// nothing the stop message already says.
fn last_cause(summary: &RunSummary) -> Option<String> {
    let last = summary.attempts.last()?;
    if let Some(ended) = ended_well_by_itself(last) {
        // retry stopped it (a lost lock): what happened first comes first.
        if last.reason.ends_with(STOPPED_BY_RETRY) {
            return Some(format!("{}, which then exited 0", last.reason));
        }
        // A rule made it a failure: name the rule, unless the message already does.
        if summary.message.contains(&last.reason) {
            return Some(ended);
        }
        return Some(format!("{ended}, but {}", last.reason));
    }
    let mut cause = last.outcome.describe();
    if cause == format!("exit status {}", summary.exit_code) {
        cause = last.reason.clone();
    }
    let said = cause.is_empty() || summary.message.contains(&cause);
    (!said).then_some(cause)
}

/// How the reason of an attempt that retry stopped (its lock lost) ends.
const STOPPED_BY_RETRY: &str = "retry stopped the command";

/// How a failed attempt ended when that alone would have been a success (exit 0, an
/// HTTP status below 400): a rule made it a failure.
fn ended_well_by_itself(last: &AttemptRecord) -> Option<String> {
    if last.class == Class::Success {
        return None;
    }
    match &last.outcome {
        Outcome::Exit { code } if code.is_success() => Some("the command exited 0".into()),
        Outcome::Http { status } if *status < 400 => Some(format!("HTTP {status}")),
        _ => None,
    }
}

/// The last line of a run that did not succeed: why it stopped, the exit status and
/// the last failure's cause, `gave up after 3 attempts: exit status 7 (could not
/// connect to 127.0.0.1:9: connection refused)`.
fn final_line(summary: &RunSummary, cause: Option<&str>) -> String {
    let line = format!("{}: exit status {}", summary.message, summary.exit_code);
    match cause {
        Some(cause) => format!("{line} ({cause})"),
        None => line,
    }
}

/// The run's last line, as the end line of a scheduled slot quotes it (a run that
/// made no attempt says why in its message, exit status included).
pub fn last_word(summary: &RunSummary) -> String {
    if summary.attempts.is_empty() {
        return summary.message.clone();
    }
    final_line(summary, last_cause(summary).as_deref())
}

/// One attempt as the report and the JSON log lines show it.
fn record_json(record: &AttemptRecord) -> Value {
    let mut v = json!({
        "n": record.number,
        "started_at": rfc3339_millis(record.started_at),
        "duration_ms": millis(record.duration),
        "outcome": record.outcome,
        "class": record.class,
        "reason": record.reason,
    });
    if let Some(delay) = record.delay {
        merge(&mut v, json!({ "delay_ms": millis(delay) }));
    }
    if let Some(hint) = &record.wait_hint {
        merge(
            &mut v,
            json!({ "retry_after_ms": millis(hint.wait), "retry_after": hint.source }),
        );
    }
    v
}

fn attempt_json(record: &AttemptRecord, attempts: u32) -> Value {
    let mut v = record_json(record);
    merge(
        &mut v,
        json!({ "attempt": record.number, "attempts": attempts }),
    );
    v
}

fn result_json(summary: &RunSummary) -> Value {
    json!({
        "exit_code": summary.exit_code,
        "attempts": summary.attempts.len(),
        "elapsed_ms": millis(summary.elapsed),
        "stopped_because": summary.stopped_because,
    })
}

fn millis(d: Duration) -> u64 {
    d.as_millis().min(u128::from(u64::MAX)) as u64
}

/// What the report says about the run besides its attempts.
pub struct ReportHeader<'a> {
    pub target: Value,
    pub mode: &'a str,
    pub idempotency_key: Option<&'a str>,
}

/// The `--report` document for a run.
pub fn report_json(header: &ReportHeader<'_>, summary: &RunSummary) -> Value {
    let attempts: Vec<Value> = summary.attempts.iter().map(record_json).collect();
    json!({
        "version": 1,
        "target": header.target,
        "mode": header.mode,
        "idempotency_key": header.idempotency_key,
        "attempts": attempts,
        "holds": summary.holds.iter().map(hold_json).collect::<Vec<_>>(),
        "result": result_json(summary),
    })
}

/// A hold (`--throttled wait`) as the report lists it.
fn hold_json(hold: &Hold) -> Value {
    json!({
        "started_at": rfc3339_millis(hold.started_at),
        "duration_ms": millis(hold.duration),
        "cause": hold.cause,
    })
}

/// `--report -`: the same document on stderr when the run ends, on one line (as recur
/// writes its report there) in one write, so it is told apart from the log lines.
pub fn report_to_stderr(header: &ReportHeader<'_>, summary: &RunSummary) {
    let mut text = report_json(header, summary).to_string().into_bytes();
    text.push(b'\n');
    // A stderr that cannot take it has nobody to tell.
    let _ = std::io::stderr().lock().write_all(&text);
}

pub fn write_report(
    path: &Path,
    header: &ReportHeader<'_>,
    summary: &RunSummary,
) -> anyhow::Result<()> {
    let mut text = serde_json::to_vec_pretty(&report_json(header, summary))?;
    text.push(b'\n');
    crate::files::write_atomically(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_retry_stopped_for_a_lost_lease_is_told_in_the_order_it_happened() {
        let code = crate::domain::ExitStatus::SUCCESS;
        let reason = "the lease lock:x was lost at 2026-12-07T02:00:00.000Z: it expired or \
                      another holder took it; retry stopped the command";
        let summary = RunSummary {
            attempts: vec![AttemptRecord {
                number: 1,
                started_at: std::time::SystemTime::UNIX_EPOCH,
                duration: std::time::Duration::ZERO,
                outcome: Outcome::Exit { code },
                class: Class::Permanent,
                reason: reason.into(),
                wait_hint: None,
                delay: None,
                span: None,
            }],
            exit_code: crate::domain::ExitStatus::USAGE,
            stopped_because: crate::domain::StopReason::LockLost,
            message: "the lease lock:x was lost".into(),
            elapsed: std::time::Duration::ZERO,
            holds: Vec::new(),
        };
        assert_eq!(
            last_cause(&summary).as_deref(),
            Some(format!("{reason}, which then exited 0").as_str())
        );
    }

    #[test]
    fn github_messages_are_escaped() {
        assert_eq!(github_escape("50%\nnext"), "50%25%0Anext");
        assert_eq!(github_escape("a\x1b[2J\tb"), r"a\u{1b}[2J\tb");
    }

    #[test]
    fn json_lines_start_with_the_time() {
        let line = time_first(&json!({ "event": "message", "attempt": 1 }));
        assert!(line.starts_with("{\"time\":\""), "{line}");
        let parsed: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(parsed["attempt"], 1);
        assert!(crate::domain::parse_rfc3339(parsed["time"].as_str().unwrap()).is_some());
        let empty: Value = serde_json::from_str(&time_first(&json!({}))).unwrap();
        assert!(empty["time"].is_string(), "{empty}");
    }
}
