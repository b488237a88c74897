//! Behaviours users bring from curl, GNU timeout and flock(1), each run side by side
//! with the real tool: the same arguments, the same local server or lock, the same
//! exit status and output.

use std::time::Duration;

use crate::support::http_server::{Reply, Server};
use crate::support::{Invocation, run};

/// curl's `--retry-max-time` never cuts the request in flight: a reply after 3s to a
/// limit of 2s is a success, for curl and for retry alike.
#[test]
fn retry_max_time_lets_the_attempt_in_flight_finish_like_curl() {
    let server = Server::script(vec![Reply::Slow(
        Duration::from_secs(3),
        Box::new(Reply::ok("slow body\n")),
    )]);
    let url = server.url("/slow");
    let args = ["-s", "--retry", "3", "--retry-max-time", "2", url.as_str()];
    let curl = Invocation::of("curl").args(args).run();
    let ours = run(&args);
    assert_eq!(curl.status, 0, "curl: {}", curl.stderr);
    assert_eq!(ours.status, 0, "retry: {}", ours.stderr);
    assert_eq!(ours.stdout, curl.stdout);
    assert_eq!(ours.stdout, b"slow body\n");
    assert_eq!(server.hits(), 2);
}

/// No retry starts once the limit has passed: a failure that took 2s against a limit of
/// 1s is the last attempt, for curl and for retry, and it is the failure's own exit.
#[test]
fn retry_max_time_starts_no_retry_after_the_limit_like_curl() {
    let server = Server::script(vec![Reply::Slow(
        Duration::from_secs(2),
        Box::new(Reply::status(503)),
    )]);
    let url = server.url("/busy");
    let args = [
        "-sf",
        "--retry",
        "3",
        "--retry-delay",
        "1",
        "--retry-max-time",
        "1",
        url.as_str(),
    ];
    let curl = Invocation::of("curl").args(args).run();
    let curl_hits = server.hits();
    let ours = run(&args);
    assert_eq!(curl.status, 22, "curl: {}", curl.stderr);
    assert_eq!(ours.status, 22, "retry: {}", ours.stderr);
    assert_eq!(curl_hits, 1);
    assert_eq!(server.hits(), 2, "one request each");
    let dry = run(&["--dry-run", "--retry-max-time", "1", url.as_str()]);
    assert!(
        dry.stdout_text().contains("--retry-max-time"),
        "{}",
        dry.stdout_text()
    );
}
