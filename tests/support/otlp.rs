//! A real OTLP/HTTP trace receiver for the trace tests: `otlp_receiver.py`, on
//! OpenTelemetry's own Python messages (PyPI's opentelemetry-proto, which
//! `.ci/install-packages` installs), so what retry encodes is read by another
//! implementation. It accepts (and hands back every span as JSON), answers 500, or
//! reads a request and never answers. Without the Python package a test says SKIPPED,
//! unless `RETRY_TEST_REQUIRE_OTLP=1` makes that a failure. The interpreter is
//! `RETRY_TEST_PYTHON`, else `python3`.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How the receiver answers an export.
#[derive(Clone, Copy, Debug)]
pub enum Mode {
    Accept,
    /// HTTP 500.
    Fail,
    /// Reads the request and never answers.
    Silent,
}

pub struct Receiver {
    child: Child,
    /// Held open: the receiver ends when it is closed.
    _stdin: ChildStdin,
    port: u16,
    spans: Arc<Mutex<Vec<Value>>>,
}

fn python() -> String {
    std::env::var("RETRY_TEST_PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".into())
}

/// Whether the Python messages are there; says SKIPPED (or fails, when required) if not.
fn available(test: &str) -> bool {
    static FOUND: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let found = *FOUND.get_or_init(|| {
        Command::new(python())
            .args([
                "-c",
                "import opentelemetry.proto.collector.trace.v1.trace_service_pb2",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if !found {
        let why = "PyPI's opentelemetry-proto is not installed for python3 (.ci/install-packages installs it)";
        if std::env::var("RETRY_TEST_REQUIRE_OTLP").is_ok_and(|v| v == "1") {
            panic!("{test}: {why}, and RETRY_TEST_REQUIRE_OTLP=1 makes the trace tests mandatory");
        }
        super::say_skipped(&format!(
            "{test}: {why}; RETRY_TEST_REQUIRE_OTLP=1 makes this a failure"
        ));
    }
    found
}

impl Receiver {
    /// A receiver on 127.0.0.1 answering as `mode` says; `None` (SKIPPED) without Python's
    /// opentelemetry-proto.
    pub fn start(test: &str, mode: Mode) -> Option<Receiver> {
        if !available(test) {
            return None;
        }
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/support/otlp_receiver.py"
        );
        let mode = match mode {
            Mode::Accept => "accept",
            Mode::Fail => "fail",
            Mode::Silent => "silent",
        };
        let mut child = Command::new(python())
            .args([script, mode])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the OTLP receiver");
        let stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().expect("the receiver's port").unwrap();
        let port = first
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .expect("PORT N");
        let spans = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&spans);
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let span: Value = serde_json::from_str(&line).expect("a span as JSON");
                kept.lock().unwrap().push(span);
            }
        });
        Some(Receiver {
            child,
            _stdin: stdin,
            port,
            spans,
        })
    }

    /// Its base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` or `--otel` take it.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The spans received so far.
    pub fn spans(&self) -> Vec<Value> {
        self.spans.lock().unwrap().clone()
    }

    /// The spans, once at least `n` came (or `within` passed).
    pub fn spans_at_least(&self, n: usize, within: Duration) -> Vec<Value> {
        let end = Instant::now() + within;
        loop {
            let spans = self.spans();
            if spans.len() >= n || Instant::now() >= end {
                return spans;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The spans named `name`.
pub fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}
