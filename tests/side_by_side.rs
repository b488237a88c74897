//! Behaviours users bring from curl, GNU timeout and flock(1), each run side by side
//! with the real tool: the same arguments, the same local server or lock, the same
//! exit status and output.

use std::time::Duration;

use crate::support::http_server::{Reply, Server};
use crate::support::{Invocation, Run, run};

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

/// The real GNU timeout's exit status and output for `args`, and retry's for
/// `-a 1 OWN -- COMMAND`.
fn beside_timeout(timeout_args: &[&str], own: &[&str], script: &str) -> (Run, Run) {
    let mut theirs = timeout_args.to_vec();
    theirs.extend(["sh", "-c", script]);
    let gnu = Invocation::of("timeout").args(&theirs).run();
    let mut ours = vec!["-a", "1"];
    ours.extend_from_slice(own);
    ours.extend(["--", "sh", "-c", script]);
    (gnu, run(&ours))
}

/// Retry's exit status and output are GNU timeout's.
fn assert_same_status_and_stdout(ours: &Run, gnu: &Run) {
    assert_eq!(
        (ours.status, ours.stdout_text()),
        (gnu.status, gnu.stdout_text())
    );
}

/// To the exit code rules a timed-out attempt is 124: with `--stop-on 124` a run of
/// three attempts under `limit` stops after the first, exiting `status`.
fn stops_at_once_on_124(limit: &[&str], command: &[&str], status: i32) {
    let mut args = vec!["-a", "3", "--delay", "1ms"];
    args.extend_from_slice(limit);
    args.extend(["--stop-on", "124", "--"]);
    args.extend_from_slice(command);
    let stopped = run(&args);
    assert_eq!(stopped.status, status, "{}", stopped.stderr);
    stopped.assert_stderr_has("exit status 124 is in --stop-on");
    stopped.assert_stderr_lacks("attempt 2/3");
}

/// `--signal INT` sends SIGINT at the limit, as `timeout -s INT` does, and the
/// attempt is still a timeout (124).
#[test]
fn signal_sends_the_named_signal_like_gnu_timeout() {
    let script =
        "trap 'echo got INT; exit 3' INT; trap 'echo got TERM; exit 4' TERM; sleep 5 & wait";
    let (gnu, ours) = beside_timeout(&["-s", "INT", "1"], &["-t", "1", "--signal", "INT"], script);
    assert_eq!(gnu.status, 124);
    assert_same_status_and_stdout(&ours, &gnu);
    assert_eq!(ours.stdout_text(), "got INT\n");
    let (gnu, ours) = beside_timeout(
        &["--preserve-status", "-s", "INT", "1"],
        &["-t", "1", "--signal", "SIGINT", "--preserve-status"],
        script,
    );
    assert_eq!((ours.status, gnu.status), (3, 3), "{}", ours.stderr);
    let dry = run(&["--dry-run", "-t", "1", "--signal", "INT", "--", "true"]);
    assert!(
        dry.stdout_text().contains("SIGINT (--signal)"),
        "{}",
        dry.stdout_text()
    );
}

/// `--preserve-status`: a timed-out attempt exits with its own status, 128+15 for one
/// SIGTERM ended, as `timeout --preserve-status`; exit code rules still see 124.
#[test]
fn preserve_status_exits_with_the_attempts_own_status_like_gnu_timeout() {
    let (gnu, ours) = beside_timeout(
        &["--preserve-status", "1"],
        &["-t", "1", "--preserve-status"],
        "sleep 5",
    );
    assert_eq!((ours.status, gnu.status), (143, 143), "{}", ours.stderr);
    stops_at_once_on_124(&["-t", "200ms", "--preserve-status"], &["sleep", "5"], 143);
}

/// `-t 0` and `-m 0` are no limit, as `timeout 0` is.
#[test]
fn a_zero_timeout_is_no_limit_like_gnu_timeout() {
    let script = "sleep 1; echo done; exit 4";
    let (gnu, ours) = beside_timeout(&["0"], &["-t", "0"], script);
    assert_eq!((gnu.status, gnu.stdout_text()), (4, "done\n".to_string()));
    assert_same_status_and_stdout(&ours, &gnu);
    let (_, curl_word) = beside_timeout(&["0"], &["-m", "0"], script);
    assert_eq!(curl_word.status, 4, "{}", curl_word.stderr);
}

/// An attempt that ignores SIGTERM and needs --kill-after's SIGKILL exits 137, as
/// `timeout -k` does; the log names the limit and the kill, never their sum.
#[test]
fn an_attempt_killed_after_the_limit_exits_137_like_gnu_timeout() {
    let script = "trap '' TERM; sleep 5";
    let (gnu, ours) = beside_timeout(&["-k", "1", "1"], &["-t", "1", "--kill-after", "1"], script);
    assert_eq!((ours.status, gnu.status), (137, 137), "{}", ours.stderr);
    ours.assert_stderr_has("timed out after 1s, killed 1s later");
    ours.assert_stderr_lacks("after 2s");
    // To the exit code rules it is a timeout: --stop-on 124 stops at once.
    stops_at_once_on_124(
        &["-t", "300ms", "--kill-after", "300ms"],
        &["sh", "-c", script],
        137,
    );
}

/// `--retry-on-status 503 -- curl -fsS URL`: the status real curl prints with -f
/// decides: a 503 is retried, a 404 (or a 502, not listed) is not.
#[test]
fn retry_on_status_judges_the_status_curl_prints() {
    let busy = Server::script(vec![Reply::status(503), Reply::ok("up\n")]).expect_hits(2);
    let url = busy.url("/");
    let r = run(&[
        "--delay",
        "1ms",
        "--retry-on-status",
        "503",
        "--",
        "curl",
        "-fsS",
        &url,
    ]);
    assert_eq!(
        (r.status, r.stdout_text().as_str()),
        (0, "up\n"),
        "{}",
        r.stderr
    );
    r.assert_stderr_has("HTTP 503 is in --retry-on-status");
    for status in [404, 502] {
        let gone = Server::script(vec![Reply::status(status)]).expect_hits(1);
        let url = gone.url("/");
        let r = run(&[
            "--delay",
            "1ms",
            "--retry-on-status",
            "503",
            "--",
            "curl",
            "-fsS",
            &url,
        ]);
        assert_eq!(r.status, 22, "{}", r.stderr);
        r.assert_stderr_has(&format!("HTTP {status} is not in --retry-on-status"));
    }
    let stopped = Server::script(vec![Reply::status(503)]).expect_hits(1);
    let url = stopped.url("/");
    let r = run(&[
        "--delay",
        "1ms",
        "--stop-on-status",
        "503",
        "--",
        "curl",
        "-fsS",
        &url,
    ]);
    assert_eq!(r.status, 22, "{}", r.stderr);
    let refused = run(&["--retry-on-status", "503", "--", "sh", "-c", "exit 1"]);
    assert_eq!(refused.status, 125, "{}", refused.stderr);
    refused.assert_stderr_has("--retry-on-status: in command mode");
}

/// Serves BODY whole, or from byte N for `Range: bytes=N-`, with a strong ETag.
fn ranges(body: &'static [u8]) -> Server {
    Server::handler(move |request, _| {
        let from = request
            .header("range")
            .and_then(|r| r.strip_prefix("bytes="))
            .and_then(|r| r.strip_suffix('-'))
            .and_then(|n| n.parse::<usize>().ok());
        match from {
            Some(from) if from < body.len() => {
                let range = format!("bytes {from}-{}/{}", body.len() - 1, body.len());
                Reply::status(206)
                    .header("ETag", "\"v1\"")
                    .header("Content-Range", &range)
                    .body(&body[from..])
            }
            _ => Reply::status(200).header("ETag", "\"v1\"").body(body),
        }
    })
}

/// `-C - -o FILE` with FILE already there asks for the rest from its length on the
/// first attempt and completes it, as curl does.
#[test]
fn continue_at_resumes_an_existing_file_like_curl() {
    const BODY: &[u8] = b"0123456789abcdefghij\n";
    let s = crate::support::Scratch::new();
    let mut finished = Vec::new();
    for program in ["curl", "retry"] {
        let server = ranges(BODY);
        let out = s.path(&format!("{program}.out"));
        std::fs::write(&out, &BODY[..8]).unwrap();
        let out_text = out.to_string_lossy().into_owned();
        let url = server.url("/file");
        let args = ["-sS", "-C", "-", "-o", out_text.as_str(), url.as_str()];
        let r = match program {
            "curl" => Invocation::of("curl").args(args).run(),
            _ => run(&args),
        };
        assert_eq!(r.status, 0, "{program}: {}", r.stderr);
        let requests = server.requests();
        assert_eq!(requests.len(), 1, "{program}");
        assert_eq!(requests[0].header("range"), Some("bytes=8-"), "{program}");
        finished.push(std::fs::read(&out).unwrap());
    }
    assert_eq!(finished[0], BODY);
    assert_eq!(finished[1], BODY);
}

/// A server that ignores the range sends the whole body: retry writes it whole, never
/// glued to what was there.
#[test]
fn continue_at_on_an_existing_file_takes_a_whole_body_whole() {
    let s = crate::support::Scratch::new();
    let out = s.path("out");
    std::fs::write(&out, b"old!").unwrap();
    let server = Server::script(vec![Reply::ok("new body\n")]);
    let r = run(&["-C", "-", "-o", &out.to_string_lossy(), &server.url("/")]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(std::fs::read(&out).unwrap(), b"new body\n");
    assert_eq!(server.requests()[0].header("range"), Some("bytes=4-"));
}

/// `--lock DIR` locks the directory itself, as `flock DIR` does: each excludes the
/// other, both ways, and the lock is free again once its holder is gone.
#[test]
fn a_directory_lock_excludes_flock_and_is_excluded_by_it() {
    use crate::support::{retry, wait_for_file, wait_for_run};
    let s = crate::support::Scratch::new();
    let dir = s.path("locked-dir");
    std::fs::create_dir(&dir).unwrap();
    let ready = s.path("flock-ready");
    let mut holder = std::process::Command::new("flock")
        .arg(&dir)
        .args([
            "sh",
            "-c",
            &format!("echo > '{}'; sleep 2", ready.display()),
        ])
        .spawn()
        .expect("run flock(1) from util-linux");
    wait_for_file(&ready, Duration::from_secs(5));
    let busy = run(&[
        "--lock",
        &dir.to_string_lossy(),
        "--busy-exit",
        "3",
        "--",
        "true",
    ]);
    assert_eq!(
        busy.status, 3,
        "flock(1) holds the directory: {}",
        busy.stderr
    );
    holder.wait().unwrap();
    let ours_ready = s.path("retry-ready");
    let ours = retry()
        .args(["--lock", &dir.to_string_lossy(), "--"])
        .args([
            "sh",
            "-c",
            &format!("echo > '{}'; sleep 2", ours_ready.display()),
        ])
        .start();
    wait_for_file(&ours_ready, Duration::from_secs(5));
    let theirs = std::process::Command::new("flock")
        .args(["-n", "-E", "7"])
        .arg(&dir)
        .arg("true")
        .status()
        .unwrap();
    assert_eq!(theirs.code(), Some(7), "retry holds the directory");
    let done = wait_for_run(ours);
    assert_eq!(done.status, 0, "{}", done.stderr);
    let free = run(&["--lock", &dir.to_string_lossy(), "--", "true"]);
    assert_eq!(free.status, 0, "{}", free.stderr);
    assert!(dir.is_dir(), "the directory is left as it was");
}

/// The order headers are sent in, as README's table of differences from curl says:
/// the same set, `Host` first and `-H` in the order given, the rest as listed there.
#[test]
fn header_order_is_what_the_readme_says_beside_curl() {
    let args = |url: &str| {
        [
            "-s",
            "-H",
            "X-B: 1",
            "-H",
            "X-A: 2",
            "-u",
            "a:b",
            "-d",
            "x=1",
            "-b",
            "c=1",
            "-e",
            "http://r.test/",
            url,
        ]
        .map(str::to_string)
    };
    let order = |program: &str| {
        let server = Server::script(vec![Reply::ok("")]);
        let url = server.url("/p");
        let r = match program {
            "curl" => Invocation::of("curl").args(args(&url)).run(),
            _ => run(&args(&url).each_ref().map(String::as_str)),
        };
        assert_eq!(r.status, 0, "{program}: {}", r.stderr);
        let request = server.requests().remove(0);
        request
            .headers
            .iter()
            .map(|(name, _)| name.to_ascii_lowercase())
            .collect::<Vec<_>>()
    };
    let curl = order("curl");
    let ours = order("retry");
    let names = |list: &str| list.split(' ').map(str::to_string).collect::<Vec<_>>();
    assert_eq!(
        curl,
        names(
            "host authorization user-agent accept referer cookie x-b x-a content-length content-type"
        )
    );
    assert_eq!(
        ours,
        names(
            "host user-agent content-type referer cookie authorization x-b x-a accept content-length"
        )
    );
    // The README, or the page of docs/ its differences from curl moved to.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    pages.extend(
        std::fs::read_dir(root.join("docs"))
            .unwrap()
            .map(|e| e.unwrap().path()),
    );
    let text: String = pages
        .iter()
        .filter_map(|page| std::fs::read_to_string(page).ok())
        .collect();
    let row = text
        .lines()
        .find(|l| l.starts_with("| header order |"))
        .expect("the docs list header order among the differences from curl");
    let said = "`Host`, `User-Agent`, `Content-Type`, `Referer`, `Cookie`, `Authorization`, \
                the `-H` headers, then `Accept` and `Content-Length`";
    assert!(row.contains(said), "{row}");
}
