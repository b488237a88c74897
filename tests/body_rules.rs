//! HTTP mode's output rules: `--retry-on-output`, `--stop-on-output` and
//! `--success-on-output` judge the lines of a response body, as they judge a
//! command's output, against a real server on 127.0.0.1; only the final attempt's
//! body is ever written.

use crate::support::http_server::{Reply, Server};
use crate::support::{Scratch, fast, retry};

fn busy_busy_ok() -> Server {
    Server::script(vec![
        Reply::ok("status\nbusy\n"),
        Reply::ok("status\nbusy\n"),
        Reply::ok("status\nok\n"),
    ])
    .expect_hits(3)
}

#[test]
fn a_body_that_says_busy_is_retried_and_only_the_final_body_is_written() {
    let server = busy_busy_ok();
    let r = retry()
        .fast()
        .args(["--retry-on-output", "^busy$", &server.url("/")])
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), "status\nok\n");
    r.assert_stderr_has("--retry-on-output matched 'busy' in the body");
}

#[test]
fn to_a_file_only_the_final_body_is_written() {
    let server = busy_busy_ok();
    let s = Scratch::new();
    let out = s.path("out");
    let r = retry()
        .fast()
        .args(["--retry-on-output", "busy", "-o"])
        .arg(&out)
        .arg(server.url("/"))
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "status\nok\n");
    assert!(r.stdout.is_empty());
}

#[test]
fn a_body_that_stays_busy_is_never_written_and_the_run_fails() {
    let server = Server::script(vec![Reply::ok("busy\n")]).expect_hits(2);
    let r = retry()
        .fast()
        .args(["-a", "2", "--retry-on-output", "busy", &server.url("/")])
        .run();
    assert_eq!(r.status, 22, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout_text());
}

#[test]
fn stop_and_success_rules_override_the_status() {
    // A throttling code in a 400 body is transient; an error in a 200 body permanent.
    let server = Server::script(vec![
        Reply::status(400).body(b"{\"code\": \"ThrottlingException\"}"),
        Reply::ok("{\"errors\": [\"boom\"]}\n"),
    ])
    .expect_hits(2);
    let r = retry()
        .fast()
        .args([
            "--retry-on-output",
            "ThrottlingException",
            "--stop-on-output",
            "\"errors\"",
            &server.url("/"),
        ])
        .run();
    assert_eq!(r.status, 22, "{}", r.stderr);
    assert!(r.stdout.is_empty());
    r.assert_stderr_has("--stop-on-output matched '{\"errors\": [\"boom\"]}' in the body");
    let accepted =
        Server::script(vec![Reply::status(503).body(b"maintenance: ok to skip\n")]).expect_hits(1);
    let r = retry()
        .args(["--success-on-output", "ok to skip", &accepted.url("/")])
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), "maintenance: ok to skip\n");
}

#[test]
fn body_rules_with_resume_are_refused() {
    let s = Scratch::new();
    let out = s.path("out");
    let r = retry()
        .args(fast(&["--retry-on-output", "busy", "-C", "-", "-o"]))
        .arg(&out)
        .arg("http://127.0.0.1:9/")
        .run();
    assert_eq!(r.status, 125, "{}", r.stderr);
    r.assert_stderr_has("-C/--continue-at");
}
