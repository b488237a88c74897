//! Traces (SPEC "Traces", docs/traces.md) against a real OTLP/HTTP receiver
//! (`support::otlp`): the spans of a run, its attempts, waits and hooks under the
//! caller's TRACEPARENT; the TRACEPARENT each attempt's command and each hook sees, the
//! `traceparent` each request carries; a trace per slot of a crontab; and a collector
//! that never answers, refuses or fails, which costs a bounded time and one warning,
//! never the exit status.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::Value;

use crate::support::http_server::{Reply, Server};
use crate::support::otlp::{Mode, Receiver, named};
use crate::support::{Scratch, current_test, retry};

const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

fn caller() -> String {
    format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01")
}

/// What a collector that is down may cost a run: the export's 1 s bound, and slack.
const DOWN_COSTS_AT_MOST: Duration = Duration::from_millis(1500);

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

/// The `00-TRACE-SPAN-FLAGS` lines a script wrote, as (trace, span).
fn traceparents(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(|line| {
            let parts: Vec<&str> = line.split('-').collect();
            assert_eq!(parts.len(), 4, "a traceparent: {line:?}");
            (parts[1].to_string(), parts[2].to_string())
        })
        .collect()
}

#[test]
fn three_attempts_are_a_run_span_with_three_attempt_spans_under_the_callers_traceparent() {
    let Some(collector) = Receiver::start(&current_test(), Mode::Accept) else {
        return;
    };
    let s = Scratch::new();
    let job = s.job(
        "echo \"$TRACEPARENT\" >> \"$D/seen\"; n=$(wc -l < \"$D/seen\"); [ \"$n\" -ge 3 ] && exit 0; exit 7",
    );
    let hook = format!("echo \"$TRACEPARENT\" >> {}", s.p("hooks"));
    let r = retry()
        .args(["--delay", "20ms", "--max-delay", "20ms", "-a", "5"])
        .args(["--on-retry", &hook, "--on-success", &hook])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint())
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "authorization=Bearer%20sesame",
        )
        .env("OTEL_SERVICE_NAME", "deploys")
        .env("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test")
        .env("TRACEPARENT", caller())
        .env("TRACESTATE", "vendor=1")
        .args(["-vv", "--", &job, "a-secret-argument"])
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(
        !r.stderr.contains("sesame"),
        "a header is never shown: {}",
        r.stderr
    );
    let spans = collector.spans_at_least(8, Duration::from_secs(5));
    let text = serde_json::to_string(&spans).unwrap();
    assert!(
        !text.contains("a-secret-argument"),
        "no argument is recorded"
    );

    let runs = named(&spans, "retry.run");
    assert_eq!(runs.len(), 1, "{spans:#?}");
    let run = runs[0];
    assert_eq!(run["trace_id"], CALLER_TRACE);
    assert_eq!(
        run["parent_span_id"], CALLER_SPAN,
        "the caller is the parent"
    );
    assert_eq!(attr(run, "process.executable.name"), "job");
    assert_eq!(attr(run, "retry.attempts"), 3);
    assert_eq!(attr(run, "process.exit.code"), 0);
    assert_eq!(run["path"], "/v1/traces");
    assert_eq!(run["headers"]["authorization"], "Bearer sesame");
    assert_eq!(run["headers"]["content-type"], "application/x-protobuf");
    assert_eq!(run["resource"]["service.name"], "deploys");
    assert_eq!(run["resource"]["deployment.environment"], "test");

    let mut attempts = named(&spans, "retry.attempt");
    attempts.sort_by_key(|a| attr(a, "retry.attempt.number").as_i64());
    assert_eq!(attempts.len(), 3, "{spans:#?}");
    let seen = traceparents(&s.read("seen"));
    for (n, (attempt, (trace, span))) in attempts.iter().zip(&seen).enumerate() {
        assert_eq!(attempt["trace_id"], CALLER_TRACE);
        assert_eq!(attempt["parent_span_id"], run["span_id"]);
        assert_eq!(trace, CALLER_TRACE);
        assert_eq!(
            &attempt["span_id"],
            span,
            "attempt {}'s command sees its own span",
            n + 1
        );
        let expected = if n < 2 { 7 } else { 0 };
        assert_eq!(attr(attempt, "process.exit.code"), expected);
    }
    assert_eq!(attr(attempts[0], "error.type"), "7");
    assert_eq!(attr(attempts[0], "retry.class"), "transient");
    assert_eq!(attempts[0]["status"], 2, "an error status");
    assert_eq!(attr(attempts[2], "retry.class"), "success");
    assert_eq!(seen.iter().map(|s| &s.1).collect::<HashSet<_>>().len(), 3);

    let waits = named(&spans, "retry.wait");
    assert_eq!(waits.len(), 2, "a backoff after each failure: {spans:#?}");
    for wait in &waits {
        assert_eq!(attr(wait, "retry.wait.cause"), "backoff");
        let planned = attr(wait, "retry.wait.planned_ms").as_i64().unwrap();
        assert!(
            (0..=20).contains(&planned),
            "{planned} ms: within --max-delay"
        );
        assert_eq!(wait["parent_span_id"], run["span_id"]);
    }

    let hooks = named(&spans, "retry.hook");
    assert_eq!(
        hooks.len(),
        3,
        "two --on-retry, one --on-success: {spans:#?}"
    );
    let hook_parents = traceparents(&s.read("hooks"));
    let hook_ids: HashSet<&Value> = hooks.iter().map(|h| &h["span_id"]).collect();
    for (trace, span) in &hook_parents {
        assert_eq!(trace, CALLER_TRACE);
        assert!(
            hook_ids.contains(&Value::from(span.as_str())),
            "{span} is a hook span"
        );
    }
    assert_eq!(hook_parents.len(), 3);
}

#[test]
fn three_requests_carry_three_traceparents_of_the_trace_and_a_given_one_wins() {
    let Some(collector) = Receiver::start(&current_test(), Mode::Accept) else {
        return;
    };
    let server = Server::script(vec![
        Reply::status(503),
        Reply::status(503),
        Reply::ok("done"),
    ]);
    let r = retry()
        .fast()
        .args(["--otel", &collector.endpoint(), &server.url("/x")])
        .env("TRACEPARENT", caller())
        .env("TRACESTATE", "vendor=1")
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    let spans = collector.spans_at_least(6, Duration::from_secs(5));
    let attempts = named(&spans, "retry.attempt");
    assert_eq!(attempts.len(), 3, "{spans:#?}");
    let ids: HashSet<&str> = attempts
        .iter()
        .map(|a| a["span_id"].as_str().unwrap())
        .collect();
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let sent: Vec<(String, String)> = requests
        .iter()
        .map(|q| q.header("traceparent").expect("a traceparent").to_string())
        .flat_map(|tp| traceparents(&tp))
        .collect();
    assert_eq!(
        sent.iter().map(|s| &s.1).collect::<HashSet<_>>().len(),
        3,
        "{sent:?}"
    );
    for (trace, span) in &sent {
        assert_eq!(trace, CALLER_TRACE);
        assert!(ids.contains(span.as_str()), "{span} names an attempt span");
    }
    assert!(
        requests
            .iter()
            .all(|q| q.header("tracestate") == Some("vendor=1"))
    );
    let statuses: Vec<&Value> = attempts
        .iter()
        .map(|a| attr(a, "http.response.status_code"))
        .collect();
    assert!(statuses.contains(&&Value::from(503)) && statuses.contains(&&Value::from(200)));
    let run = named(&spans, "retry.run")[0];
    assert_eq!(attr(run, "url.full"), server.url("/x").as_str());
    assert!(attempts.iter().all(|a| a["kind"] == 3), "client spans");

    // A -H traceparent the user gives wins; without tracing nothing is added.
    let given = "00-11111111111111111111111111111111-2222222222222222-01";
    let server = Server::script(vec![Reply::ok("done")]);
    let header = format!("traceparent: {given}");
    let r = retry()
        .args([
            "--otel",
            &collector.endpoint(),
            "-H",
            &header,
            &server.url("/y"),
        ])
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(server.requests()[0].header("traceparent"), Some(given));
    let server = Server::script(vec![Reply::ok("done")]);
    let r = retry()
        .arg(server.url("/z"))
        .env("TRACEPARENT", caller())
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(server.requests()[0].header("traceparent"), None, "untraced");
}

#[test]
fn untraced_an_inherited_traceparent_reaches_the_command_unchanged() {
    let Some(collector) = Receiver::start(&current_test(), Mode::Accept) else {
        return;
    };
    let print = "echo \"$TRACEPARENT $TRACESTATE\"";
    for off in [
        vec![],
        vec![("OTEL_SDK_DISABLED", "true")],
        vec![("OTEL_TRACES_EXPORTER", "none")],
        vec![("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")],
    ] {
        let mut run = retry();
        run.sh(print)
            .env("TRACEPARENT", caller())
            .env("TRACESTATE", "vendor=1");
        if !off.is_empty() {
            run.env("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint());
        }
        for (name, value) in &off {
            run.env(name, value);
        }
        let r = run.run();
        assert_eq!(r.status, 0, "{off:?}: {}", r.stderr);
        assert_eq!(
            r.stdout_text().trim(),
            format!("{} vendor=1", caller()),
            "{off:?}"
        );
        let warnings = r.stderr.lines().filter(|l| l.contains("warning")).count();
        let grpc = off.iter().any(|(_, v)| *v == "grpc");
        assert_eq!(warnings, usize::from(grpc), "{off:?}: {}", r.stderr);
    }
    std::thread::sleep(Duration::from_millis(200));
    assert!(collector.spans().is_empty(), "nothing was exported");
}

#[test]
fn a_crontab_of_two_jobs_gives_a_trace_per_slot() {
    let Some(collector) = Receiver::start(&current_test(), Mode::Accept) else {
        return;
    };
    let dir = Scratch::new();
    let tab = "@every 1s --job one -- echo \"$TRACEPARENT\" >> \"$D/one\"\n\
               @every 1s --job two -- echo \"$TRACEPARENT\" >> \"$D/two\"\n";
    let file = dir.write("jobs.tab", tab.as_bytes());
    let child = retry()
        .arg("--crontab")
        .arg(&file)
        .args(["--state", &dir.p("state")])
        .env("D", dir.path(""))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint())
        .env("TRACEPARENT", caller())
        .start();
    std::thread::sleep(Duration::from_millis(3500));
    crate::support::signal(&child, Signal::SIGTERM);
    let r = crate::support::wait_for_run(child);
    assert_eq!(r.status, 143, "{}", r.stderr);
    let spans = collector.spans_at_least(8, Duration::from_secs(5));
    let runs = named(&spans, "retry.run");
    let slots: HashSet<&str> = runs
        .iter()
        .map(|r| attr(r, "retry.slot").as_str().unwrap())
        .collect();
    assert_eq!(slots.len(), runs.len(), "one run span per slot: {runs:#?}");
    assert!(slots.iter().any(|s| s.starts_with("one@")), "{slots:?}");
    assert!(slots.iter().any(|s| s.starts_with("two@")), "{slots:?}");
    let traces: HashSet<&str> = runs
        .iter()
        .map(|r| r["trace_id"].as_str().unwrap())
        .collect();
    assert_eq!(traces.len(), runs.len(), "each slot a trace of its own");
    assert!(!traces.contains(CALLER_TRACE));
    for run in &runs {
        assert_eq!(
            run["parent_span_id"], "",
            "a slot's run is its trace's root"
        );
        assert_eq!(
            run["links"],
            serde_json::json!([[CALLER_TRACE, CALLER_SPAN]])
        );
    }
    // Each slot's command saw its own trace's attempt span.
    let attempts = named(&spans, "retry.attempt");
    let attempt_ids: HashSet<(&str, &str)> = attempts
        .iter()
        .map(|a| {
            (
                a["trace_id"].as_str().unwrap(),
                a["span_id"].as_str().unwrap(),
            )
        })
        .collect();
    let seen = [dir.read("one"), dir.read("two")].concat();
    let seen = traceparents(&seen);
    assert!(seen.len() >= 2, "{seen:?}");
    for (trace, span) in &seen {
        assert!(
            attempt_ids.contains(&(trace.as_str(), span.as_str()))
                || !traces.contains(trace.as_str()),
            "{trace}-{span}"
        );
    }
    assert!(seen.iter().any(|(t, _)| traces.contains(t.as_str())));
}

/// A run of `exit 3` with its trace sent to `endpoint`: the status and how long it took.
fn failing_run_with(endpoint: &str) -> crate::support::Run {
    retry()
        .args(["-a", "1"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .sh("exit 3")
        .run()
}

#[test]
fn a_collector_that_never_answers_refuses_or_fails_costs_the_bound_and_one_warning() {
    let Some(silent) = Receiver::start(&current_test(), Mode::Silent) else {
        return;
    };
    let Some(failing) = Receiver::start(&current_test(), Mode::Fail) else {
        return;
    };
    // A port nothing listens on: bound, then let go.
    let refusing = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port())
    };
    for (what, endpoint) in [
        ("never answers", silent.endpoint()),
        ("refuses", refusing),
        ("answers 500", failing.endpoint()),
    ] {
        let r = failing_run_with(&endpoint);
        assert_eq!(r.status, 3, "{what}: the run's own status: {}", r.stderr);
        assert!(r.elapsed < DOWN_COSTS_AT_MOST, "{what}: {:?}", r.elapsed);
        let warnings: Vec<&str> = r
            .stderr
            .lines()
            .filter(|l| l.contains("trace was not sent"))
            .collect();
        assert_eq!(warnings.len(), 1, "{what}: {}", r.stderr);
        let ok = retry()
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
            .sh("exit 0")
            .run();
        assert_eq!(ok.status, 0, "{what}: {}", ok.stderr);
    }
    let r = failing_run_with(&silent.endpoint());
    assert!(r.stderr.contains("no answer within 1s"), "{}", r.stderr);
    let r = failing_run_with(&failing.endpoint());
    assert!(r.stderr.contains("HTTP 500"), "{}", r.stderr);
}

#[test]
fn a_stopping_signal_leaves_the_export_a_quarter_second_and_a_second_ends_it() {
    let Some(silent) = Receiver::start(&current_test(), Mode::Silent) else {
        return;
    };
    for signals in [1, 2] {
        let child = retry()
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", silent.endpoint())
            .sh("sleep 30")
            .start();
        std::thread::sleep(Duration::from_millis(300));
        let sent = Instant::now();
        crate::support::signal(&child, Signal::SIGTERM);
        if signals == 2 {
            std::thread::sleep(Duration::from_millis(100));
            crate::support::signal(&child, Signal::SIGTERM);
        }
        let r = crate::support::wait_for_run(child);
        let took = sent.elapsed();
        assert_eq!(r.status, 143, "{}", r.stderr);
        assert!(
            took < Duration::from_millis(900),
            "{signals} signal(s): {took:?}"
        );
    }
}

#[test]
fn the_dry_run_says_where_the_trace_goes_and_no_header() {
    let r = retry()
        .args([
            "--dry-run",
            "--otel",
            "http://user:pw@collector.localhost:4318",
        ])
        .env("OTEL_EXPORTER_OTLP_HEADERS", "api-key=sesame")
        .env("OTEL_SERVICE_NAME", "deploys")
        .args(["--", "true"])
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    let out = r.stdout_text();
    let line = out.lines().find(|l| l.starts_with("trace:")).expect(&out);
    assert!(
        line.contains("http://***@collector.localhost:4318/v1/traces"),
        "{line}"
    );
    assert!(
        line.contains("\"deploys\"") && line.contains("1 header"),
        "{line}"
    );
    assert!(!out.contains("sesame") && !out.contains("pw"), "{out}");
    let bad = retry()
        .args(["--otel", "collector:4318", "--", "true"])
        .run();
    assert_eq!(bad.status, 125);
    assert!(bad.stderr.starts_with("retry: --otel"), "{}", bad.stderr);
}

#[test]
fn a_collector_that_never_answers_delays_no_slot_and_is_said_once() {
    let Some(silent) = Receiver::start(&current_test(), Mode::Silent) else {
        return;
    };
    let s = Scratch::new();
    // The command takes half the interval: its export runs well into the next slot.
    let line = format!("sleep 0.5; echo run >> {}", s.p("runs"));
    // Each slot's export waits its whole second, into the next slot's time.
    // Started late in a second, the slot of that second (run at once) would still run
    // when the next one is due, and that one would be skipped for --overlap skip.
    crate::support::time::just_after_a_whole_second();
    let child = retry()
        .args([
            "--schedule",
            "@every 1s",
            "--overlap",
            "skip",
            "--state",
            &s.p("state"),
        ])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", silent.endpoint())
        .args(["--", "sh", "-c", &line])
        .start();
    std::thread::sleep(Duration::from_millis(4600));
    crate::support::signal(&child, Signal::SIGTERM);
    let r = crate::support::wait_for_run(child);
    assert_eq!(r.status, 143, "{}", r.stderr);
    assert!(
        s.count("runs") >= 4,
        "{} runs: {}",
        s.count("runs"),
        r.stderr
    );
    assert!(!r.stderr.contains("skipped"), "{}", r.stderr);
    let warnings = r
        .stderr
        .lines()
        .filter(|l| l.contains("trace was not sent"))
        .count();
    assert_eq!(warnings, 1, "one warning per outage: {}", r.stderr);
}
