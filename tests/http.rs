//! HTTP mode against a real server on 127.0.0.1: scripted status sequences,
//! server-requested waits, method safety and idempotency keys, injected faults,
//! exactly-once output, request options, redirects and proxies.

use crate::support::http_server;

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::support::ports::free_port;
use crate::support::{fast, read_json, retry, run};
use http_server::{Reply, Request, Server};

fn gap(requests: &[Request], i: usize) -> Duration {
    requests[i + 1].at.duration_since(requests[i].at)
}

/// Serves `first`, then 200 "done", to `retry FAST FLAGS URL`; checks that the run
/// succeeded with that body and returns how long retry waited before asking again.
#[track_caller]
fn wait_after(case: &str, first: Reply, flags: &[&str]) -> Duration {
    let server = Server::script(vec![first, Reply::ok("done")]).expect_hits(2);
    let r = retry().fast().args(flags).arg(server.url("/")).run();
    let got = (r.status, r.stdout_text());
    assert_eq!(got, (0, "done".into()), "{case}: {}", r.stderr);
    gap(&server.requests(), 0)
}

#[test]
fn unavailable_twice_then_ok_prints_the_body_once() {
    let server = Server::script(vec![
        Reply::status(503).body(b"busy"),
        Reply::status(503).body(b"busy"),
        Reply::ok("hello\n"),
    ])
    .expect_hits(3);
    let r = run(&fast(&[&server.url("/")]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), "hello\n");
    r.assert_stderr_has("attempt 1/5 failed: HTTP 503");
}

#[test]
fn retry_after_seconds_is_honoured() {
    let waited = wait_after("", Reply::status(429).header("Retry-After", "1"), &[]);
    assert!(
        waited >= Duration::from_millis(1000) && waited < Duration::from_secs(4),
        "{waited:?}"
    );
}

#[test]
fn rate_limit_headers_on_429_set_the_wait() {
    for (name, value) in [
        ("RateLimit-Reset", "1"),
        ("X-RateLimit-Reset", "1"),
        ("RateLimit", "\"default\";r=0;t=1"),
    ] {
        let first = Reply::status(429).header(name, value);
        let waited = wait_after(name, first, &["--report", "/dev/null"]);
        assert!(
            waited >= Duration::from_millis(1000) && waited < Duration::from_secs(4),
            "{name}: {waited:?}"
        );
    }
}

#[test]
fn retry_after_takes_precedence_over_rate_limit_reset() {
    // Obeying the 600 s reset would end the run (past --max-retry-after 5m).
    let first = Reply::status(429)
        .header("Retry-After", "1")
        .header("X-RateLimit-Reset", "600");
    assert!(wait_after("", first, &[]) < Duration::from_secs(4));
}

#[test]
fn retry_after_http_date_is_honoured() {
    let when = crate::support::time::http_date(SystemTime::now() + Duration::from_secs(2));
    let waited = wait_after(&when, Reply::status(503).header("Retry-After", &when), &[]);
    // The date has whole seconds: the wait is between 1 and 2 s, plus the spread.
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
}

#[test]
fn retry_after_in_the_past_or_malformed_means_normal_backoff() {
    for value in ["Sun, 06 Nov 1994 08:49:37 GMT", "whenever"] {
        let waited = wait_after(value, Reply::status(503).header("Retry-After", value), &[]);
        assert!(waited < Duration::from_millis(900), "{value}: {waited:?}");
    }
}

#[test]
fn retry_after_past_the_cap_ends_the_run_quoting_the_header() {
    let server =
        Server::script(vec![Reply::status(503).header("Retry-After", "120")]).expect_hits(1);
    let r = run(&fast(&["--max-retry-after", "5s", &server.url("/")]));
    assert_eq!(r.status, 22, "{}", r.stderr);
    r.assert_stderr_has("Retry-After: 120");
    assert!(r.elapsed < Duration::from_secs(5));
}

#[test]
fn retry_after_past_the_time_limit_ends_the_run() {
    let server =
        Server::script(vec![Reply::status(429).header("Retry-After", "30")]).expect_hits(1);
    let r = run(&fast(&["--max-time", "3s", &server.url("/")]));
    assert_eq!(r.status, 22, "{}", r.stderr);
    r.assert_stderr_has("left of --max-time");
}

#[test]
fn rate_limited_403_waits_for_the_reset() {
    let first = Reply::status(403)
        .header("X-RateLimit-Remaining", "0")
        .header("X-RateLimit-Reset", "1");
    let waited = wait_after("", first, &["--report", "/dev/null"]);
    assert!(waited >= Duration::from_millis(1000), "{waited:?}");
}

#[test]
fn internal_error_forever_is_tried_three_times() {
    let server = Server::script(vec![Reply::status(500)]).expect_hits(3);
    let r = run(&fast(&["-a", "10", &server.url("/")]));
    assert_eq!(r.status, 22, "{}", r.stderr);
    r.assert_stderr_has("already retried 2 times");
}

#[test]
fn not_found_is_permanent_and_its_body_is_quoted() {
    let server = Server::script(vec![Reply::status(404).body(b"no such page\r\n")]).expect_hits(1);
    let r = run(&fast(&[&server.url("/missing")]));
    assert_eq!(r.status, 22, "{}", r.stderr);
    assert!(r.stdout.is_empty());
    r.assert_stderr_has("no such page");
}

#[test]
fn post_without_a_key_is_not_retried_and_says_why() {
    let server = Server::script(vec![Reply::status(503)]).expect_hits(1);
    let r = run(&fast(&["-d", "x=1", &server.url("/")]));
    assert_eq!(r.status, 22, "{}", r.stderr);
    r.assert_stderr_has("--idempotency-key auto");
    r.assert_stderr_has("POST is not idempotent");
    let req = &server.requests()[0];
    assert_eq!(req.method, "POST");
    assert_eq!(req.header("idempotency-key"), None);
}

#[test]
fn post_is_retried_on_429_and_on_503_with_retry_after() {
    let server = Server::script(vec![
        Reply::status(429),
        Reply::status(503).header("Retry-After", "0"),
        Reply::ok("ok"),
    ])
    .expect_hits(3);
    let r = run(&fast(&["-d", "x=1", &server.url("/")]));
    assert_eq!(r.status, 0, "{}", r.stderr);
}

#[test]
fn post_with_a_key_is_retried_and_takes_effect_once() {
    // The server applies each key's effect once, then "loses" two replies.
    let effects: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    let seen = Arc::clone(&effects);
    let server = Server::handler(move |req, n| {
        let key = req.header("Idempotency-Key").unwrap_or("none").to_string();
        let mut effects = seen.lock().unwrap();
        let applied = effects.entry(key).or_insert(0);
        if *applied == 0 {
            *applied += 1;
        }
        if n < 2 {
            Reply::status(503)
        } else {
            Reply::status(201).body(b"charged")
        }
    })
    .expect_hits(3);
    let r = run(&fast(&[
        "-v",
        "--idempotency-key",
        "auto",
        "-d",
        "amount=5",
        &server.url("/charges"),
    ]));
    assert_eq!(
        (r.status, r.stdout_text().as_str()),
        (0, "charged"),
        "{}",
        r.stderr
    );
    let keys: Vec<String> = server
        .requests()
        .iter()
        .map(|q| q.header("Idempotency-Key").unwrap().to_string())
        .collect();
    assert!(keys.iter().all(|k| k == &keys[0]), "{keys:?}");
    assert_eq!(keys[0].len(), 36, "a UUID: {}", keys[0]);
    let effects = effects.lock().unwrap();
    assert_eq!(effects.len(), 1);
    assert_eq!(effects.values().sum::<u32>(), 1);
    assert!(
        r.stderr.contains(&keys[0]),
        "-v shows the key: {}",
        r.stderr
    );
}

#[test]
fn idempotency_key_value_and_header_name_are_used_as_given() {
    let server = Server::script(vec![Reply::status(502), Reply::ok("")]).expect_hits(2);
    let r = run(&fast(&[
        "-X",
        "PATCH",
        "--idempotency-key",
        "order-42",
        "--idempotency-header",
        "X-Request-Id",
        &server.url("/"),
    ]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    for req in server.requests() {
        assert_eq!(req.header("X-Request-Id"), Some("order-42"));
        assert_eq!(req.header("Idempotency-Key"), None);
        assert_eq!(req.method, "PATCH");
    }
}

#[test]
fn retry_unsafe_retries_post_without_a_key() {
    let server = Server::script(vec![Reply::status(502), Reply::ok("")]).expect_hits(2);
    let r = run(&fast(&["--retry-unsafe", "-d", "x", &server.url("/")]));
    assert_eq!(r.status, 0, "{}", r.stderr);
}

#[test]
fn refused_connection_exits_7_after_every_attempt() {
    let url = format!("http://127.0.0.1:{}/", free_port());
    let r = run(&fast(&["-a", "3", &url]));
    assert_eq!(r.status, 7, "{}", r.stderr);
    r.assert_stderr_has("attempt 3/3 failed");
}

#[test]
fn post_is_retried_when_the_connection_was_refused() {
    let url = format!("http://127.0.0.1:{}/", free_port());
    let r = run(&fast(&["-a", "2", "-d", "x", &url]));
    assert_eq!(r.status, 7, "{}", r.stderr);
    r.assert_stderr_has("attempt 2/2 failed");
}

#[test]
fn a_reply_slower_than_the_timeout_exits_28() {
    let server = Server::script(vec![Reply::Slow(
        Duration::from_secs(2),
        Box::new(Reply::ok("late")),
    )])
    .expect_hits(2);
    let r = run(&fast(&["-a", "2", "-t", "300ms", &server.url("/")]));
    assert_eq!(r.status, 28, "{}", r.stderr);
    assert!(r.stdout.is_empty());
    assert!(r.elapsed < Duration::from_secs(2), "{:?}", r.elapsed);
}

#[test]
fn a_body_cut_off_is_retried_and_never_printed() {
    let server = Server::script(vec![
        Reply::CutOff {
            declared: 1000,
            body: b"partial".to_vec(),
        },
        Reply::ok("complete"),
    ])
    .expect_hits(2);
    let r = run(&fast(&[&server.url("/")]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), "complete");
}

#[test]
fn a_body_short_every_time_exits_18_with_nothing_printed() {
    // The server closes cleanly after fewer bytes than it declared: curl's partial file.
    let server = Server::script(vec![Reply::CutOff {
        declared: 1000,
        body: b"partial".to_vec(),
    }])
    .expect_hits(2);
    let r = run(&fast(&["-a", "2", &server.url("/")]));
    assert_eq!(r.status, 18, "{}", r.stderr);
    assert!(r.stdout.is_empty());
}

#[test]
fn an_empty_reply_exits_52() {
    let server = Server::script(vec![Reply::Close]).expect_hits(2);
    let r = run(&fast(&["-a", "2", &server.url("/")]));
    assert_eq!(r.status, 52, "{}", r.stderr);
}

#[test]
fn output_file_is_untouched_on_failure_and_replaced_on_success() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("page.html");
    std::fs::write(&path, "old").unwrap();
    let out = path.to_str().unwrap();

    let failing = Server::script(vec![
        Reply::CutOff {
            declared: 100,
            body: b"new but".to_vec(),
        },
        Reply::status(503).body(b"down"),
    ])
    .expect_hits(2);
    let r = run(&fast(&["-a", "2", "-o", out, &failing.url("/")]));
    assert_eq!(r.status, 22, "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
    assert_eq!(entries(dir.path()), ["page.html"]);

    let working = Server::script(vec![Reply::status(502), Reply::ok("new")]).expect_hits(2);
    let r = run(&fast(&["-o", out, &working.url("/")]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(r.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
    assert_eq!(entries(dir.path()), ["page.html"]);
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The umask this process (and so retry) runs with, from /proc.
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
    u32::from_str_radix(line["Umask:".len()..].trim(), 8).unwrap()
}

#[test]
fn output_files_get_the_mode_a_redirection_would() {
    use std::os::unix::fs::PermissionsExt;
    let mode_of = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    let dir = tempfile::tempdir().unwrap();
    let new = dir.path().join("new");
    let server = Server::script(vec![Reply::ok("one")]).expect_hits(1);
    let r = run(&fast(&["-o", new.to_str().unwrap(), &server.url("/")]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(mode_of(&new), 0o666 & !umask());

    let kept = dir.path().join("kept");
    std::fs::write(&kept, "old").unwrap();
    std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o640)).unwrap();
    let server = Server::script(vec![Reply::ok("two")]).expect_hits(1);
    let r = run(&fast(&["-o", kept.to_str().unwrap(), &server.url("/")]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(
        (mode_of(&kept), std::fs::read_to_string(&kept).unwrap()),
        (0o640, "two".to_string())
    );
    assert_eq!(entries(dir.path()), ["kept", "new"]);
}

#[test]
fn output_to_a_missing_directory_is_a_usage_error() {
    let server = Server::script(vec![Reply::ok("")]).expect_hits(0);
    let r = run(&fast(&["-o", "/no/such/dir/file", &server.url("/")]));
    assert_eq!(r.status, 125, "{}", r.stderr);
}

#[test]
fn headers_from_a_file_are_sent_and_their_values_never_logged() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("headers");
    std::fs::write(
        &file,
        "# credentials\nAuthorization: Bearer s3cret-token\n\nX-Trace: seven\n",
    )
    .unwrap();
    let server = Server::script(vec![Reply::ok("")]).expect_hits(1);
    let arg = format!("@{}", file.display());
    let r = run(&fast(&[
        "-vv",
        "-H",
        &arg,
        "-H",
        "Cookie: id=c00kie",
        &server.url("/"),
    ]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    let req = &server.requests()[0];
    assert_eq!(req.header("Authorization"), Some("Bearer s3cret-token"));
    assert_eq!(req.header("X-Trace"), Some("seven"));
    assert_eq!(req.header("Cookie"), Some("id=c00kie"));
    r.assert_stderr_has("authorization");
    r.assert_stderr_lacks("s3cret");
    r.assert_stderr_lacks("c00kie");
}

#[test]
fn header_values_are_not_shown_at_v() {
    let server = Server::script(vec![Reply::ok("")]).expect_hits(1);
    let r = run(&fast(&[
        "-v",
        "-H",
        "X-Api-Key: hidden-value",
        &server.url("/"),
    ]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    r.assert_stderr_has("x-api-key");
    r.assert_stderr_lacks("hidden-value");
    r.assert_stderr_has("request: GET");
    r.assert_stderr_has("200 OK");
}

#[test]
fn a_bad_header_is_refused_before_anything_is_sent() {
    let server = Server::script(vec![Reply::ok("")]).expect_hits(0);
    let r = run(&fast(&["-H", "no colon here", &server.url("/")]));
    assert_eq!(r.status, 125, "{}", r.stderr);
    let r = run(&fast(&["-H", "@/no/such/file", &server.url("/")]));
    assert_eq!(r.status, 125, "{}", r.stderr);
}

#[test]
fn body_from_a_file_is_sent_byte_identically_every_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("body.bin");
    let bytes: Vec<u8> = (0..=255u8)
        .chain(b"\r\nline\n\0end".iter().copied())
        .collect();
    std::fs::write(&file, &bytes).unwrap();
    let server =
        Server::script(vec![Reply::status(503), Reply::status(503), Reply::ok("")]).expect_hits(3);
    let arg = format!("@{}", file.display());
    let r = retry()
        .fast()
        .args(["-X", "PUT", "--data-binary", &arg])
        .arg(server.url("/upload"))
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    for req in server.requests() {
        assert_eq!(req.method, "PUT");
        assert_eq!(req.body, bytes);
    }
}

#[test]
fn body_from_stdin_is_read_once() {
    let server = Server::script(vec![Reply::status(502), Reply::ok("")]).expect_hits(2);
    let r = retry()
        .args(fast(&["-X", "PUT", "-d", "@-", &server.url("/")]))
        .input("from stdin")
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    for req in server.requests() {
        assert_eq!(req.body, b"from stdin");
    }
}

#[test]
fn json_sets_its_headers() {
    let server = Server::script(vec![Reply::ok("{}")]).expect_hits(1);
    let r = run(&fast(&["--json", r#"{"a":1}"#, &server.url("/api")]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    let req = &server.requests()[0];
    assert_eq!(req.method, "POST");
    assert_eq!(req.header("Content-Type"), Some("application/json"));
    assert_eq!(req.header("Accept"), Some("application/json"));
    assert_eq!(req.body, br#"{"a":1}"#);
}

#[test]
fn include_prints_the_status_line_and_headers_first() {
    let server =
        Server::script(vec![Reply::ok("body").header("X-Served-By", "test")]).expect_hits(1);
    let r = run(&fast(&["-i", &server.url("/")]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    let out = r.stdout_text();
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    assert!(out.contains("x-served-by: test\r\n"), "{out}");
    assert!(out.ends_with("\r\n\r\nbody"), "{out}");
}

#[test]
fn status_overrides_replace_the_built_in_classes() {
    let server = Server::script(vec![Reply::status(404), Reply::ok("")]).expect_hits(2);
    let r = run(&fast(&["--retry-on-status", "404", &server.url("/")]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    let server = Server::script(vec![Reply::status(503)]).expect_hits(1);
    let r = run(&fast(&["--stop-on-status", "503", &server.url("/")]));
    assert_eq!(r.status, 22, "{}", r.stderr);
}

#[test]
fn credentials_are_dropped_across_a_cross_host_redirect() {
    let landing = Server::script(vec![Reply::ok("landed")]).expect_hits(1);
    let target = format!("http://localhost:{}/landing", landing.port());
    let origin =
        Server::script(vec![Reply::status(302).header("Location", &target)]).expect_hits(1);
    let r = run(&fast(&[
        "-H",
        "Authorization: Bearer secret",
        "-H",
        "Cookie: session=1",
        "-H",
        "X-Other: kept",
        &origin.url("/start"),
    ]));
    assert_eq!(
        (r.status, r.stdout_text().as_str()),
        (0, "landed"),
        "{}",
        r.stderr
    );
    assert_eq!(
        origin.requests()[0].header("Authorization"),
        Some("Bearer secret")
    );
    let req = &landing.requests()[0];
    assert_eq!(req.header("Authorization"), None);
    assert_eq!(req.header("Cookie"), None);
    assert_eq!(req.header("X-Other"), Some("kept"));
}

#[test]
fn credentials_stay_on_a_same_host_redirect() {
    let server = Server::handler(|req, _| {
        if req.target == "/start" {
            Reply::status(302).header("Location", "/next")
        } else {
            Reply::ok("here")
        }
    })
    .expect_hits(2);
    let r = run(&fast(&[
        "-H",
        "Authorization: Bearer secret",
        &server.url("/start"),
    ]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(
        server.requests()[1].header("Authorization"),
        Some("Bearer secret")
    );
}

#[test]
fn too_many_redirects_exits_47() {
    let server =
        Server::script(vec![Reply::status(302).header("Location", "/again")]).expect_hits(3);
    let r = run(&fast(&["--max-redirs", "2", &server.url("/")]));
    assert_eq!(r.status, 47, "{}", r.stderr);
}

#[test]
fn max_redirs_zero_returns_the_redirect() {
    let server = Server::script(vec![Reply::status(302).header("Location", "/x")]).expect_hits(1);
    let r = run(&fast(&["--max-redirs", "0", "-i", &server.url("/")]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    r.assert_stdout_has("location: /x");
}

#[test]
fn a_malformed_url_exits_3_without_retrying() {
    let r = run(&fast(&["-a", "3", "http://[::1/"]));
    assert_eq!(r.status, 3, "{}", r.stderr);
    r.assert_stderr_has("malformed URL");
    r.assert_stderr_lacks("attempt 2");
}

/// The lines of `stderr`, each checked to hold no raw control character.
fn escaped_lines(stderr: &str) -> Vec<&str> {
    let lines: Vec<&str> = stderr.lines().collect();
    for line in &lines {
        assert!(
            !line.chars().any(char::is_control),
            "a raw control character: {line:?}"
        );
        assert!(
            line.starts_with("retry: "),
            "not one of retry's lines: {line:?}"
        );
    }
    lines
}

#[test]
fn a_url_with_whitespace_or_a_control_character_is_refused_unsent_like_curl() {
    crate::support::curl::require_curl();
    let server = Server::script(vec![Reply::ok("sent")]).expect_hits(0);
    for tail in [
        "/a b",
        "/a\r\nX-Injected: 1",
        "/a\tb",
        "/a\x1bb",
        "/\x7f",
        "/ ",
    ] {
        let url = server.url(tail);
        let curl = std::process::Command::new("curl")
            .args(["-sS", "-o", "/dev/null", &url])
            .output()
            .expect("run curl");
        assert_eq!(curl.status.code(), Some(3), "curl refuses {url:?}");
        let r = run(&fast(&["-a", "3", &url]));
        assert_eq!(r.status, 3, "{url:?}: {}", r.stderr);
        assert_eq!(r.stdout, b"", "{url:?}");
        let lines = escaped_lines(&r.stderr);
        assert_eq!(
            lines.len(),
            2,
            "{url:?}: one attempt, one last line: {}",
            r.stderr
        );
        assert!(
            lines[1].contains("URL rejected: malformed input"),
            "{}",
            r.stderr
        );
    }
    assert_eq!(server.hits(), 0, "nothing was sent");
}

#[test]
fn a_proxy_url_with_a_control_character_is_refused_before_anything_is_sent() {
    let server = Server::script(vec![Reply::ok("sent")]).expect_hits(0);
    let proxy = format!("http://127.0.0.1:{}\n", server.port());
    let r = run(&fast(&["-x", &proxy, &server.url("/")]));
    assert_eq!(r.status, 125, "{}", r.stderr);
    let lines = escaped_lines(&r.stderr);
    assert_eq!(lines.len(), 1, "{}", r.stderr);
    assert!(lines[0].starts_with("retry: -x/--proxy: "), "{}", r.stderr);
    assert!(
        lines[0].contains(r"\n'"),
        "the value shown escaped: {}",
        r.stderr
    );
}

#[test]
fn a_retry_after_date_in_year_9999_is_read_and_too_long_for_the_run() {
    let date = "Fri, 31 Dec 9999 23:59:59 GMT";
    let server =
        Server::script(vec![Reply::status(503).header("Retry-After", date)]).expect_hits(1);
    let report = tempfile::NamedTempFile::new().unwrap();
    let path = report.path().to_str().unwrap();
    let r = run(&fast(&["--report", path, &server.url("/")]));
    assert_eq!(r.status, 22, "{}", r.stderr);
    assert!(r.elapsed < Duration::from_secs(5), "{:?}", r.elapsed);
    r.assert_stderr_has(&format!("Retry-After: {date}"));
    r.assert_stderr_lacks("malformed");
    let doc = read_json(report.path());
    assert_eq!(
        doc["result"]["stopped_because"], "retry_after_too_long",
        "{doc}"
    );
}

#[test]
fn report_carries_status_retry_after_and_key() {
    let server = Server::script(vec![
        Reply::status(429).header("Retry-After", "1"),
        Reply::ok("ok"),
    ])
    .expect_hits(2);
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let r = retry()
        .fast()
        .args(["--idempotency-key", "auto"])
        .report(&report)
        .arg(server.url("/"))
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    let doc = read_json(&report);
    assert_eq!(doc["mode"], "http");
    let key = server.requests()[0]
        .header("Idempotency-Key")
        .unwrap()
        .to_string();
    assert_eq!(doc["idempotency_key"], key.as_str());
    let first = &doc["attempts"][0];
    assert_eq!(first["outcome"]["type"], "http");
    assert_eq!(first["outcome"]["status"], 429);
    assert_eq!(first["retry_after"], "Retry-After: 1");
    assert!(first["delay_ms"].as_u64().unwrap() >= 1000);
    assert_eq!(doc["attempts"][1]["outcome"]["status"], 200);
    assert_eq!(doc["result"]["exit_code"], 0);
}

#[test]
fn json_log_carries_status_retry_after_and_key() {
    let server = Server::script(vec![
        Reply::status(503).header("Retry-After", "1"),
        Reply::ok("ok"),
    ])
    .expect_hits(2);
    let r = run(&fast(&[
        "--log-format",
        "json",
        "--idempotency-key",
        "key-7",
        &server.url("/"),
    ]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    let failed = r
        .stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["event"] == "attempt_failed")
        .expect("an attempt_failed event");
    assert_eq!(failed["outcome"]["status"], 503);
    assert_eq!(failed["retry_after"], "Retry-After: 1");
    assert_eq!(failed["idempotency_key"], "key-7");
}

#[test]
fn proxy_from_the_environment_is_used() {
    let proxy = Server::script(vec![Reply::ok("via proxy")]).expect_hits(1);
    // The origin is a dead local port: only the proxy can answer.
    let origin = format!("http://localhost:{}/path", free_port());
    let r = retry()
        .fast()
        .arg(&origin)
        .env("HTTP_PROXY", format!("http://127.0.0.1:{}", proxy.port()))
        .run();
    assert_eq!(
        (r.status, r.stdout_text().as_str()),
        (0, "via proxy"),
        "{}",
        r.stderr
    );
    assert_eq!(proxy.requests()[0].target, origin);
}

#[test]
fn no_proxy_bypasses_the_proxy() {
    let server = Server::script(vec![Reply::ok("direct")]).expect_hits(1);
    let r = retry()
        .fast()
        .arg(server.url("/"))
        .env("HTTP_PROXY", format!("http://127.0.0.1:{}", free_port()))
        .env("NO_PROXY", "127.0.0.1")
        .run();
    assert_eq!(
        (r.status, r.stdout_text().as_str()),
        (0, "direct"),
        "{}",
        r.stderr
    );
}

#[test]
fn dry_run_lists_the_http_rules_and_sends_nothing() {
    let server = Server::script(vec![Reply::ok("")]).expect_hits(0);
    let r = run(&fast(&["--dry-run", "-X", "POST", &server.url("/")]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    let out = r.stdout_text();
    assert!(out.contains("status 503: transient"), "{out}");
    assert!(out.contains("POST is not idempotent"), "{out}");
    assert!(out.contains("--max-retry-after"), "{out}");
}

#[test]
fn a_signal_during_a_request_stops_at_once() {
    let server = Server::script(vec![Reply::Slow(
        Duration::from_secs(3),
        Box::new(Reply::ok("late")),
    )])
    .expect_hits(1);
    let start = Instant::now();
    let child = retry()
        .fast()
        .arg(server.url("/"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    crate::support::wait_until(Duration::from_secs(5), || server.hits() > 0);
    crate::support::signal(&child, nix::sys::signal::Signal::SIGTERM);
    let r = crate::support::run::finish(child, start);
    assert_eq!(r.status, 143, "{}", r.stderr);
    assert!(r.elapsed < Duration::from_secs(2), "{:?}", r.elapsed);
    assert!(r.stdout.is_empty());
}

#[test]
fn an_unknown_certificate_is_permanent_and_exits_60() {
    let server = Server::tls_script(vec![Reply::ok("secret")]).expect_hits(0);
    let r = run(&fast(&["-a", "3", &server.https_url("/")]));
    assert_eq!(r.status, 60, "{}", r.stderr);
    r.assert_stderr_lacks("attempt 2");
    assert!(r.stdout.is_empty());
}

#[test]
fn insecure_skips_the_certificate_check() {
    let server = Server::tls_script(vec![Reply::status(503), Reply::ok("over tls")]).expect_hits(2);
    let r = run(&fast(&["-k", &server.https_url("/")]));
    assert_eq!(
        (r.status, r.stdout_text().as_str()),
        (0, "over tls"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_tls_handshake_cut_off_is_retried_and_exits_35() {
    let server = Server::hang_up().expect_hits(2);
    let r = run(&fast(&["-a", "2", &server.https_url("/")]));
    assert_eq!(r.status, 35, "{}", r.stderr);
}

#[test]
fn a_large_body_is_delivered_whole_once() {
    // Past the 4 MiB in-memory spool, so the held body lives on disk.
    let body: Vec<u8> = (0..6 << 20).map(|i: u32| (i % 251) as u8).collect();
    let server = Server::script(vec![
        Reply::CutOff {
            declared: body.len(),
            body: body[..1 << 20].to_vec(),
        },
        Reply::status(200).body(&body),
    ])
    .expect_hits(2);
    let r = run(&fast(&[&server.url("/big")]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(r.stdout == body, "stdout has {} bytes", r.stdout.len());
}

#[test]
fn output_and_report_to_a_device_write_in_place() {
    use std::os::unix::fs::FileTypeExt;
    let server = Server::script(vec![Reply::ok("body")]).expect_hits(1);
    let r = run(&fast(&[
        "-o",
        "/dev/null",
        "--report",
        "/dev/null",
        &server.url("/"),
    ]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    let meta = std::fs::metadata("/dev/null").unwrap();
    assert!(
        meta.file_type().is_char_device(),
        "/dev/null must stay the null device"
    );
}
