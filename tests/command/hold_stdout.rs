//! Command mode: hold-stdout.

use super::*;

#[test]
fn hold_stdout_passes_exactly_one_attempt() {
    let (_, r) = run_job(
        "echo run >> \"$D/count\"; n=$(wc -l < \"$D/count\"); echo \"attempt $n\"; [ $n -ge 3 ]",
        &["--hold-stdout"],
    );
    assert_eq!(r.status, 0);
    assert_eq!(r.stdout_text(), "attempt 3\n");
}

#[test]
fn hold_stdout_shows_the_last_failed_attempt() {
    let (_, r) = run_job(
        "echo run >> \"$D/count\"; echo \"attempt $(wc -l < \"$D/count\")\"; exit 1",
        &["-a", "3", "--hold-stdout"],
    );
    assert_eq!(r.status, 1);
    assert_eq!(r.stdout_text(), "attempt 3\n");
}

#[test]
fn hold_stdout_spools_large_output() {
    let (_, r) = run_job(
        "echo run >> \"$D/count\"; head -c 9000000 /dev/zero; [ $(wc -l < \"$D/count\") -ge 2 ]",
        &["--hold-stdout"],
    );
    assert_eq!(r.status, 0);
    assert_eq!(r.stdout.len(), 9_000_000);
    assert!(r.stdout.iter().all(|&b| b == 0));
}

// ---- A wrapped curl or wget: its stdout held unless --no-hold-stdout ----

const GOOD: &str = "{\"status\": \"ok\"}\n";

/// A server whose first answer is cut off after `partial` and whose second is [`GOOD`].
fn cut_then_good() -> crate::support::http_server::Server {
    use crate::support::http_server::{Reply, Server};
    Server::script(vec![
        Reply::CutOff {
            declared: 100,
            body: b"partial".to_vec(),
        },
        Reply::ok(GOOD),
    ])
}

/// `retry -- curl -s URL` whose first answer is cut off writes only the good body, to a
/// pipe and to a file: curl's stdout is held as with --hold-stdout.
#[test]
fn a_wrapped_curl_s_cut_off_body_never_reaches_a_pipe_or_a_file() {
    let server = cut_then_good();
    let r = retry()
        .fast()
        .args(["--", "curl", "-s", &server.url("/")])
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), GOOD, "to a pipe");
    assert_eq!(server.hits(), 2);

    let server = cut_then_good();
    let s = Scratch::new();
    let file = std::fs::File::create(s.path("out")).unwrap();
    let r = retry()
        .fast()
        .args(["--", "curl", "-s", &server.url("/")])
        .stdout(file)
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(s.read("out"), GOOD, "to a file");
    assert_eq!(server.hits(), 2);
}

/// `--no-hold-stdout` lets each attempt's output through as it comes, as curl alone
/// would; the dry run names the rule either way.
#[test]
fn no_hold_stdout_streams_a_wrapped_curl_live_and_the_dry_run_says_which() {
    let server = cut_then_good();
    let r = retry()
        .fast()
        .args(["--no-hold-stdout", "--", "curl", "-s", &server.url("/")])
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), format!("partial{GOOD}"));

    let dry = run(&["--dry-run", "--", "curl", "-s", "http://127.0.0.1:9/"]);
    assert!(
        dry.stdout_text()
            .contains("stdout:      held: curl writes to a pipe or a file"),
        "{}",
        dry.stdout_text()
    );
    let dry = run(&["--dry-run", "--no-hold-stdout", "--", "wget", "-qO-", "x"]);
    assert!(
        dry.stdout_text()
            .contains("stdout:      live (--no-hold-stdout)"),
        "{}",
        dry.stdout_text()
    );
    // To /dev/null a partial body does no harm: live, and said so.
    let out = s_dry_to_file(&["--dry-run", "--", "curl", "-s", "http://127.0.0.1:9/"]);
    assert!(
        out.contains("held: curl writes to a pipe or a file"),
        "{out}"
    );
    // Any other command streams live, with or without the flag.
    let generic = run(&["--dry-run", "--no-hold-stdout", "--", "true"]);
    assert_eq!(generic.status, 0, "{}", generic.stderr);
    let both = run(&["--hold-stdout", "--no-hold-stdout", "--", "true"]);
    assert_eq!(both.status, 125, "{}", both.stderr);
}

/// The dry run's text when retry's stdout is a file.
fn s_dry_to_file(args: &[&str]) -> String {
    let s = Scratch::new();
    let file = std::fs::File::create(s.path("dry")).unwrap();
    let r = retry().args(args).stdout(file).run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    s.read("dry")
}

/// A wrapped curl whose held stdout cannot be spooled (no temporary directory, past the
/// 4 MiB kept in memory) stops with 125 naming the directory and what to do instead.
#[test]
fn a_held_stdout_that_cannot_be_spooled_is_125_suggesting_no_hold_stdout() {
    use crate::support::http_server::{Reply, Server};
    let server = Server::script(vec![Reply::ok(&"x".repeat(6_000_000))]);
    let r = retry()
        .fast()
        .env("TMPDIR", "/nonexistent")
        .args(["--", "curl", "-s", &server.url("/big")])
        .run();
    assert_eq!(r.status, 125, "{}", r.stderr);
    assert!(r.stdout.is_empty());
    r.assert_stderr_has("/nonexistent");
    r.assert_stderr_has("--no-hold-stdout");
    r.assert_stderr_has("-o FILE");
    assert_eq!(server.hits(), 1, "not retried: {}", r.stderr);
}

/// While stdout is held, a reader that goes away is noticed at once: the attempt's
/// stdout is closed, the command meets the broken pipe (SIGPIPE, 141) and no further
/// attempt starts.
#[test]
fn a_reader_that_goes_while_stdout_is_held_closes_the_attempt_s_stdout() {
    let s = Scratch::new();
    let start = Instant::now();
    let mut child = retry()
        .args(["-a", "3", "--hold-stdout"])
        .sh("echo first; echo x > \"$0\"; while :; do sleep 0.1; echo more; done")
        .arg(s.p("running"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    // The attempt runs, its output held.
    wait_for_file(&s.path("running"), Duration::from_secs(5));
    // The reader goes: the only read end of retry's stdout is closed.
    drop(child.stdout.take());
    let (status, _) = support::wait_exit(&mut child, Duration::from_secs(10));
    let out = support::wait_for_run(child);
    assert_eq!(status, 141, "{}", out.stderr);
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "took {:?}",
        start.elapsed()
    );
    assert!(!out.stderr.contains("attempt 2"), "retried: {}", out.stderr);
}
