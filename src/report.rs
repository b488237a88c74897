//! Everything retry says: stderr lines (text or JSON Lines), GitHub Actions
//! annotations, and the `--report` file. The engine emits events; this module
//! decides how they look. Messages from other modules go through `info`,
//! `verbose` and `error` so that `-q`, `-v` and `--log-format` apply everywhere.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use serde_json::{Value, json};

use crate::classify::Class;
use crate::engine::{AttemptRecord, Event, Events, RunSummary, StopReason};
use crate::parse::human;

#[derive(Clone, Debug, Default)]
pub struct LogConfig {
    /// -2 = -qq, -1 = -q, 0 = default, 1.. = -v count.
    pub level: i8,
    pub json: bool,
    pub color: bool,
    pub github: bool,
}

static CONFIG: OnceLock<LogConfig> = OnceLock::new();

pub fn init(config: LogConfig) {
    let _ = CONFIG.set(config);
}

pub fn config() -> &'static LogConfig {
    CONFIG.get_or_init(LogConfig::default)
}

/// Whether stderr is a terminal and colour is not turned off (NO_COLOR, TERM=dumb).
pub fn color_wanted() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

fn emit(level: &str, message: &str, fields: Value) {
    let cfg = config();
    let mut stderr = std::io::stderr().lock();
    if cfg.json {
        let mut line = json!({ "ts": timestamp(SystemTime::now()), "event": "message", "level": level, "message": message });
        merge(&mut line, fields);
        let _ = writeln!(stderr, "{line}");
    } else {
        let _ = writeln!(stderr, "{}{message}", prefix(cfg));
    }
}

fn prefix(cfg: &LogConfig) -> &'static str {
    if cfg.color {
        "\x1b[1mretry:\x1b[0m "
    } else {
        "retry: "
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

fn merge(target: &mut Value, extra: Value) {
    if let (Some(target), Value::Object(extra)) = (target.as_object_mut(), extra) {
        target.extend(extra);
    }
}

pub fn timestamp(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
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

/// Escapes a GitHub Actions workflow-command message.
fn github_escape(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
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
}

impl Logger {
    fn attempt_line(record: &AttemptRecord, limit: u32) -> String {
        format!(
            "attempt {}/{limit} failed: {} ({}: {})",
            record.number,
            record.outcome.describe(),
            paint(record.class, record.class.as_str()),
            record.reason
        )
    }

    fn json_event(&self, event: &str, mut fields: Value) {
        let mut line = json!({ "ts": timestamp(SystemTime::now()), "event": event });
        merge(&mut line, std::mem::take(&mut fields));
        merge(&mut line, self.context.clone());
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
}

impl Events for Logger {
    fn event(&mut self, event: Event<'_>) {
        let cfg = config().clone();
        match event {
            Event::AttemptStarting { ctx } => {
                if cfg.level >= 1 {
                    let timeout = ctx
                        .timeout
                        .map(|t| format!(" (time limit {})", human(t)))
                        .unwrap_or_default();
                    if cfg.json {
                        self.json_event("attempt_started", json!({ "attempt": ctx.number, "attempts": ctx.limit, "timeout_ms": ctx.timeout.map(|t| t.as_millis() as u64) }));
                    } else {
                        emit(
                            "debug",
                            &format!("attempt {}/{}{timeout}", ctx.number, ctx.limit),
                            Value::Null,
                        );
                    }
                }
            }
            Event::AttemptFailed {
                record,
                limit,
                next,
            } => {
                let mut line = Self::attempt_line(record, limit);
                if let Some(delay) = next {
                    line.push_str(&format!("; next attempt in {}", human(delay)));
                    github("warning", &line);
                }
                if cfg.level < 0 {
                    return;
                }
                if cfg.json {
                    self.json_event("attempt_failed", attempt_json(record, limit));
                } else {
                    emit("info", &line, Value::Null);
                }
            }
            Event::Succeeded { record, limit } => {
                let noteworthy = record.number > 1;
                if cfg.level < 0 || (!noteworthy && cfg.level < 1) {
                    return;
                }
                if cfg.json {
                    self.json_event("attempt_succeeded", attempt_json(record, limit));
                } else {
                    let text = format!(
                        "attempt {}/{limit} {}",
                        record.number,
                        paint(Class::Success, "succeeded")
                    );
                    emit("info", &text, Value::Null);
                }
            }
            Event::Stopped { summary } => {
                if summary.stopped_because == StopReason::Success {
                    if cfg.json && cfg.level >= 0 {
                        self.json_event("stopped", result_json(summary));
                    }
                    return;
                }
                let line = format!("{}; exit status {}", summary.message, summary.exit_code);
                github("error", &line);
                if cfg.level < -1 {
                    return;
                }
                if cfg.json {
                    let mut fields = result_json(summary);
                    merge(&mut fields, json!({ "message": summary.message }));
                    self.json_event("stopped", fields);
                } else {
                    emit("notice", &line, Value::Null);
                }
            }
        }
    }
}

/// One attempt as the report and the JSON log lines show it.
fn record_json(record: &AttemptRecord) -> Value {
    let mut v = json!({
        "n": record.number,
        "started_at": timestamp(record.started_at),
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

fn attempt_json(record: &AttemptRecord, limit: u32) -> Value {
    let mut v = record_json(record);
    merge(
        &mut v,
        json!({ "attempt": record.number, "attempts": limit }),
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
        "result": result_json(summary),
    })
}

/// Checks up front that `flag`'s file can be written (its directory exists and
/// it is not a directory itself), so a bad path is a usage error (exit 125)
/// before anything runs, not a surprise at the end.
/// A URL as it may be shown anywhere (logs, JSON, the report, annotations, the
/// dry run): any user information is `***`, since a user name can be a token
/// as well as a password. Works on text that does not parse as a URL, too.
pub fn redact_url(text: &str) -> String {
    let Some(scheme_end) = text.find("://").map(|i| i + 3) else {
        return text.to_string();
    };
    let rest = &text[scheme_end..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{}***{}", &text[..scheme_end], &rest[at..]),
        None => text.to_string(),
    }
}

pub fn check_file_target(flag: &str, path: &Path) -> anyhow::Result<()> {
    if path.as_os_str().is_empty() {
        anyhow::bail!("{flag}: expected a file path");
    }
    if path.is_dir() {
        anyhow::bail!(
            "{flag}: {} is a directory; expected a file path",
            path.display()
        );
    }
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        // A device or FIFO is written in place: opening it is the check (never blocking on a FIFO).
        return match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(nix::libc::O_NONBLOCK)
            .open(path)
        {
            // A FIFO nobody reads yet: the reader may come by the end of the run.
            Err(e) if e.raw_os_error() == Some(nix::libc::ENXIO) => Ok(()),
            opened => opened
                .map(drop)
                .with_context(|| format!("{flag}: cannot open {} for writing", path.display())),
        };
    }
    let dir = parent_dir(path);
    let meta = std::fs::metadata(&dir)
        .with_context(|| format!("{flag}: cannot use directory {}", dir.display()))?;
    anyhow::ensure!(
        meta.is_dir(),
        "{flag}: {} is not a directory",
        dir.display()
    );
    // The file is written at the end, by rename: a file must be creatable beside it now.
    probe_dir(&dir).with_context(|| format!("{flag}: cannot create a file in {}", dir.display()))
}

/// Creates and removes a file in `dir`: the operating system's own reason if it cannot.
pub fn probe_dir(dir: &Path) -> std::io::Result<()> {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let probe = dir.join(format!(".retry-check-{}-{nanos}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)?;
    std::fs::remove_file(&probe)
}

/// The directory that holds `path` (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Writes `contents` to `path` atomically and durably: a temporary file in the
/// same directory, fsync, rename over the target, fsync the directory. After it
/// returns, the file survives a crash whole or not at all.
pub fn write_atomically(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        // A device or FIFO (`--report /dev/stderr`, `/dev/null`): write in place, never rename over it.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        return file
            .write_all(contents)
            .with_context(|| format!("cannot write {}", path.display()));
    }
    let dir = parent_dir(path);
    let mut tmp = tempfile::Builder::new()
        .prefix(".retry-")
        .tempfile_in(&dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    tmp.write_all(contents)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    // The rename itself is durable only once the directory is synced.
    std::fs::File::open(&dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("cannot sync directory {}", dir.display()))?;
    Ok(())
}

pub fn write_report(
    path: &Path,
    header: &ReportHeader<'_>,
    summary: &RunSummary,
) -> anyhow::Result<()> {
    let mut text = serde_json::to_vec_pretty(&report_json(header, summary))?;
    text.push(b'\n');
    write_atomically(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_information_in_urls_is_redacted() {
        assert_eq!(
            redact_url("http://user:SECRET@127.0.0.1:8080/x?a=b@c"),
            "http://***@127.0.0.1:8080/x?a=b@c"
        );
        assert_eq!(redact_url("https://tok@h/p"), "https://***@h/p");
        assert_eq!(redact_url("https://a:b@c@h"), "https://***@h");
        assert_eq!(redact_url("https://h/p@q"), "https://h/p@q");
        assert_eq!(redact_url("not a url"), "not a url");
    }

    #[test]
    fn github_messages_are_escaped() {
        assert_eq!(github_escape("50%\nnext"), "50%25%0Anext");
    }

    #[test]
    fn atomic_write_replaces_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left"
        );
    }

    #[test]
    fn report_path_must_have_a_directory() {
        assert!(check_file_target("--report", Path::new("/no/such/dir/r.json")).is_err());
        assert!(check_file_target("--report", Path::new("r.json")).is_ok());
        assert!(check_file_target("--report", Path::new("")).is_err());
    }

    #[test]
    fn devices_are_written_in_place_not_renamed_over() {
        write_atomically(Path::new("/dev/null"), b"{}").unwrap();
        let meta = std::fs::metadata("/dev/null").unwrap();
        use std::os::unix::fs::FileTypeExt;
        assert!(
            meta.file_type().is_char_device(),
            "/dev/null must stay a device"
        );
    }
}
