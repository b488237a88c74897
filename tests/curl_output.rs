//! The output side of curl's vocabulary: each option's output bytes, requests and
//! exit status compared with real curl's against a local server on 127.0.0.1,
//! plus what curl cannot be compared on (resuming, against a server that serves two
//! versions of a resource; num_retries; the --retry family mapped onto retry's own
//! schedule).
//!
//! Header blocks are served with lower-case names: retry's HTTP stack does not keep
//! the case of header names, so `-i`, `-I` and `-D` print them in lower case (as
//! HTTP/2 does), where curl prints them as received.

use crate::support::http_server;

use crate::support::curl;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{Invocation, Run, retry, run, wait_until};
use curl::{Case, Compared, Side};
use http_server::{Reply, Request, Server};
use sha2::{Digest, Sha256};

/// A reply written byte for byte: lower-case header names, then the body.
fn raw(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    raw_declaring(status, headers, body, body.len())
}

fn raw_declaring(status: &str, headers: &[(&str, &str)], body: &[u8], length: usize) -> Reply {
    let mut bytes = format!("HTTP/1.1 {status}\r\n").into_bytes();
    for (name, value) in headers {
        bytes.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    bytes.extend_from_slice(
        format!("content-length: {length}\r\nconnection: close\r\n\r\n").as_bytes(),
    );
    bytes.extend_from_slice(body);
    Reply::Raw(bytes)
}

/// `retry --delay 1ms -a ATTEMPTS`: retries that come at once.
fn attempts(attempts: &str) -> Invocation {
    let mut retry = retry();
    retry.args(["--delay", "1ms", "-a", attempts]);
    retry
}

/// `retry --delay 1ms -C - -o FILE`: a download into `file` that resumes where a cut-off
/// attempt left it, retried at once.
fn resuming(file: &Path) -> Invocation {
    let mut retry = retry();
    retry.args(["--delay", "1ms", "-C", "-", "-o"]).arg(file);
    retry
}

/// stdout with the side's own port replaced, so URLs compare.
fn unported(side: &Side) -> String {
    String::from_utf8_lossy(&side.stdout).replace(&format!(":{}", side.port), ":PORT")
}

/// Same requests (retry's default Accept header is the request options' concern,
/// not judged here), same output bytes (ports aside) and exit status.
fn assert_conforms(c: &Compared) {
    c.assert_same_requests_except(&["accept"]);
    assert_eq!(
        c.curl.status, c.retry.status,
        "exit status\ncurl stderr: {}\nretry stderr: {}",
        c.curl.stderr, c.retry.stderr
    );
    assert_eq!(
        unported(&c.curl),
        unported(&c.retry),
        "stdout (left curl, right retry)"
    );
}

fn redirect_chain(request: &Request, _: usize) -> Reply {
    match request.target.as_str() {
        "/a" => raw(
            "301 Moved Permanently",
            &[("location", "/b"), ("x-hop", "1")],
            b"moved",
        ),
        "/b" => raw("302 Found", &[("location", "/c?q=1")], b""),
        _ => raw(
            "200 OK",
            &[("content-type", "text/plain"), ("etag", "\"v1\"")],
            b"the end\n",
        ),
    }
}

#[test]
fn fail_matches_curl() {
    curl::require_curl();
    let c = Case::new(&["-f", "{url}/missing"])
        .reply(Reply::status(404).body(b"no such page"))
        .run();
    assert_conforms(&c);
    assert_eq!(c.retry.status, 22);
    assert!(c.retry.stdout.is_empty());
}

#[test]
fn fail_with_body_matches_curl() {
    let c = Case::new(&["--fail-with-body", "{url}/missing"])
        .reply(Reply::status(404).body(b"no such page\n"))
        .run();
    assert_conforms(&c);
    assert_eq!(c.retry.stdout, b"no such page\n");
    assert_eq!(c.retry.status, 22);
}

#[test]
fn fail_with_body_writes_to_the_output_file_like_curl() {
    let c = Case::new(&["--fail-with-body", "-o", "out", "{url}/x"])
        .reply(Reply::status(403).body(b"denied"))
        .run();
    assert_conforms(&c);
    assert_eq!(c.curl.file("out"), Some(b"denied".to_vec()));
    assert_eq!(c.retry.file("out"), c.curl.file("out"));
}

#[test]
fn silent_prints_nothing_on_stderr_like_curl() {
    let c = Case::new(&["-fs", "{url}/missing"])
        .reply(Reply::status(404))
        .run();
    assert_conforms(&c);
    assert_eq!(c.curl.stderr, "");
    assert_eq!(c.retry.stderr, "", "retry -s printed on stderr");
}

#[test]
fn silent_show_error_prints_only_the_final_error_line() {
    let c = Case::new(&["-fsS", "{url}/missing"])
        .reply(Reply::status(404))
        .run();
    assert_conforms(&c);
    assert_eq!(c.curl.stderr.lines().count(), 1, "{}", c.curl.stderr);
    let lines: Vec<&str> = c.retry.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", c.retry.stderr);
    assert!(lines[0].contains("404"), "{}", lines[0]);
}

#[test]
fn location_follows_like_curl() {
    let c = Case::new(&["-L", "{url}/a"]).handler(redirect_chain).run();
    assert_conforms(&c);
    assert_eq!(c.retry.stdout, b"the end\n");
    assert_eq!(c.retry.requests.len(), 3);
}

#[test]
fn include_shows_every_response_of_a_redirect_chain_like_curl_il() {
    let c = Case::new(&["-iL", "{url}/a"]).handler(redirect_chain).run();
    assert_conforms(&c);
    let out = String::from_utf8_lossy(&c.retry.stdout).into_owned();
    let first = out.find("HTTP/1.1 301").expect("the 301 is shown");
    let second = out.find("HTTP/1.1 302").expect("the 302 is shown");
    let last = out.find("HTTP/1.1 200").expect("the 200 is shown");
    assert!(first < second && second < last, "{out}");
    assert!(out.ends_with("\r\n\r\nthe end\n"), "{out}");
}

#[test]
fn include_without_redirects_matches_curl() {
    let c = Case::new(&["-i", "{url}/"])
        .reply(raw(
            "200 Fine Thanks",
            &[("x-a", "1"), ("content-type", "text/html")],
            b"<p>",
        ))
        .run();
    assert_conforms(&c);
}

#[test]
fn head_prints_the_headers_like_curl() {
    let head = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 42\r\nconnection: close\r\n\r\n";
    let c = Case::new(&["-I", "{url}/file"])
        .reply(Reply::Raw(head.to_vec()))
        .run();
    assert_conforms(&c);
    assert_eq!(c.retry.requests[0].method, "HEAD");
    assert_eq!(c.retry.stdout, head);
}

const WRITE_OUT: &str = "%{http_code} %{response_code} %{url_effective} %{size_download} \
    %{num_redirects} %{content_type} %{exitcode} [%{errormsg}] %header{etag} %{method} 100%%\\n";

#[test]
fn write_out_matches_curl_after_redirects() {
    let c = Case::new(&["-L", "-w", WRITE_OUT, "{url}/a"])
        .handler(redirect_chain)
        .run();
    assert_conforms(&c);
    assert!(
        unported(&c.retry)
            .ends_with("200 200 http://127.0.0.1:PORT/c?q=1 8 2 text/plain 0 [] \"v1\" GET 100%\n"),
        "{}",
        unported(&c.retry)
    );
}

#[test]
fn write_out_matches_curl_on_a_failure() {
    let c = Case::new(&["-f", "-w", WRITE_OUT, "{url}/missing"])
        .reply(raw(
            "404 Not Found",
            &[("content-type", "text/html")],
            b"gone",
        ))
        .run();
    assert_conforms(&c);
    assert!(
        unported(&c.retry).contains("404 404 http://127.0.0.1:PORT/missing 0 0 text/html 22 [The requested URL returned error: 404]"),
        "{}",
        unported(&c.retry)
    );
}

#[test]
fn write_out_from_a_file_and_to_stderr_match_curl() {
    let c = Case::new(&["-s", "-o", "/dev/null", "-w", "@fmt", "{url}/"])
        .file(
            "fmt",
            b"out=%{http_code}\\n%{stderr}err=%{size_download}\\n",
        )
        .reply(Reply::ok("12345"))
        .run();
    assert_conforms(&c);
    assert_eq!(c.retry.stdout, b"out=200\n");
    assert_eq!(c.curl.stderr, "err=5\n");
    assert_eq!(c.retry.stderr, "err=5\n");
}

#[test]
fn write_out_time_total_is_seconds_with_six_decimals() {
    let c = Case::new(&["-w", "%{time_total}", "-o", "/dev/null", "{url}/"]).run();
    assert_eq!(c.curl.status, 0);
    for side in [&c.curl, &c.retry] {
        let text = String::from_utf8_lossy(&side.stdout).into_owned();
        let (whole, fraction) = text.split_once('.').unwrap_or_else(|| panic!("{text}"));
        assert!(
            whole.parse::<u64>().is_ok() && fraction.len() == 6,
            "{text}"
        );
        assert!(text.parse::<f64>().unwrap() < 5.0, "{text}");
    }
}

#[test]
fn write_out_counts_retries() {
    let server = Server::script(vec![Reply::status(503), Reply::status(503), Reply::ok("x")]);
    let out = run(&[
        "--delay",
        "1ms",
        "-w",
        "%{num_retries} %{exitcode}",
        "-o",
        "/dev/null",
        &server.url("/"),
    ]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "2 0");
}

#[test]
fn write_out_refuses_an_unknown_variable() {
    let out = run(&["-w", "%{time_connect}", "http://127.0.0.1:9/"]);
    assert_eq!(out.status, 125);
    let stderr = out.stderr;
    assert!(
        stderr.contains("-w/--write-out") && stderr.contains("time_connect"),
        "{stderr}"
    );
}

#[test]
fn dump_header_matches_curl() {
    let c = Case::new(&["-D", "headers", "{url}/"])
        .reply(raw(
            "200 OK",
            &[("x-one", "1"), ("content-type", "text/plain")],
            b"body",
        ))
        .run();
    assert_conforms(&c);
    let curl_file = c.curl.file("headers").expect("curl wrote the headers");
    assert_eq!(c.retry.file("headers"), Some(curl_file));
}

#[test]
fn dump_header_to_stdout_matches_curl() {
    let c = Case::new(&["-D", "-", "{url}/"])
        .reply(raw("200 OK", &[("x-one", "1")], b"body"))
        .run();
    assert_conforms(&c);
}

#[test]
fn remote_name_matches_curl() {
    let c = Case::new(&["-O", "{url}/files/report.csv?v=2"])
        .reply(Reply::ok("a,b\n1,2\n"))
        .run();
    assert_conforms(&c);
    assert_eq!(c.curl.file("report.csv"), Some(b"a,b\n1,2\n".to_vec()));
    assert_eq!(c.retry.file("report.csv"), c.curl.file("report.csv"));
}

#[test]
fn retry_n_makes_n_plus_one_requests_like_curl() {
    let c = Case::new(&["-f", "--retry", "2", "--retry-delay", "1", "{url}/"])
        .retry_args(&[])
        .reply(Reply::status(503))
        .run();
    assert_conforms(&c);
    assert_eq!(c.retry.requests.len(), 3);
}

#[test]
fn retry_all_errors_retries_a_404_like_curl() {
    let c = Case::new(&[
        "-f",
        "--retry",
        "1",
        "--retry-delay",
        "1",
        "--retry-all-errors",
        "{url}/",
    ])
    .retry_args(&[])
    .reply(Reply::status(404))
    .run();
    assert_conforms(&c);
    assert_eq!(c.retry.requests.len(), 2);
}

#[test]
fn retry_all_errors_does_not_repeat_a_post_without_a_key() {
    let server = Server::script(vec![Reply::status(404)]).expect_hits(1);
    let out = run(&[
        "--retry",
        "3",
        "--retry-all-errors",
        "-d",
        "x",
        &server.url("/"),
    ]);
    assert_eq!(out.status, 22);
}

#[test]
fn retry_family_is_retrys_own_schedule() {
    let url = "http://127.0.0.1:9/";
    let curl_words = run(&["--dry-run", "--retry", "3", "--retry-delay", "2", url]);
    let own_words = run(&[
        "--dry-run",
        "-a",
        "4",
        "--delay",
        "2",
        "--backoff",
        "constant",
        "-j",
        "none",
        url,
    ]);
    assert_eq!(curl_words.status, 0);
    assert_eq!(curl_words.stdout, own_words.stdout);
}

#[test]
fn retry_connrefused_retries_a_refused_connection_like_curl() {
    let port = crate::support::ports::free_port();
    let url = format!("http://127.0.0.1:{port}/");
    let args = [
        "-s",
        "--retry",
        "1",
        "--retry-delay",
        "1",
        "--retry-connrefused",
        &url,
    ];
    let curl = Invocation::of("curl").args(args).run();
    let ours = run(&args);
    assert_eq!(curl.status, 7);
    assert_eq!(ours.status, 7);
}

#[test]
fn retry_options_conflict_with_retrys_own() {
    for (args, names) in [
        (&["--retry", "2", "-a", "3"][..], ["--retry", "--attempts"]),
        (
            &["--retry-delay", "1", "--delay", "2s"],
            ["--retry-delay", "--delay"],
        ),
    ] {
        let mut all = args.to_vec();
        all.push("http://127.0.0.1:9/");
        let out = run(&all);
        let stderr = out.stderr;
        assert_eq!(out.status, 125, "{args:?}: {stderr}");
        assert!(
            names.iter().all(|n| stderr.contains(n)),
            "{args:?}: {stderr}"
        );
    }
}

const SIZE: usize = 50 * 1024 * 1024;

/// 50 MiB that differ from byte to byte, so a misplaced part shows in the digest.
fn big_body() -> Vec<u8> {
    (0..SIZE)
        .map(|i| (i % 251) as u8 ^ (i >> 16) as u8)
        .collect()
}

/// The first request gets half the body and a closed connection; a request for
/// the rest (Range and a matching If-Range) gets a 206 with the rest.
fn resumable(body: std::sync::Arc<Vec<u8>>) -> impl Fn(&Request, usize) -> Reply {
    move |request, _| {
        let etag = "\"big-1\"";
        let from = request
            .header("range")
            .and_then(|r| r.strip_prefix("bytes="))
            .and_then(|r| r.strip_suffix('-'))
            .and_then(|n| n.parse::<usize>().ok());
        match from {
            Some(from) if request.header("if-range") == Some(etag) => {
                let range = format!("bytes {from}-{}/{SIZE}", SIZE - 1);
                let rest = raw(
                    "206 Partial Content",
                    &[("etag", etag), ("content-range", &range)],
                    &body[from..],
                );
                // A moment to look at the target while the rest is awaited.
                Reply::Slow(Duration::from_millis(300), Box::new(rest))
            }
            _ => raw_declaring("200 OK", &[("etag", etag)], &body[..SIZE / 2], SIZE),
        }
    }
}

#[test]
fn continue_at_resumes_a_cut_off_body() {
    let body = std::sync::Arc::new(big_body());
    let expected = Sha256::digest(body.as_slice());
    let server = Server::handler(resumable(body.clone()));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.bin");
    let child = resuming(&file)
        .arg(server.url("/big"))
        .stderr(Stdio::piped())
        .spawn();
    let waited = Instant::now();
    wait_until(Duration::from_secs(30), || server.hits() >= 2);
    assert!(!file.exists(), "FILE appeared before the body was complete");
    let out = crate::support::run::finish(child, waited);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one cut-off transfer, one for the rest");
    assert_eq!(requests[0].header("range"), None);
    let range = requests[1]
        .header("range")
        .expect("the second attempt asks for the rest");
    let from: usize = range["bytes=".len()..range.len() - 1].parse().unwrap();
    assert!(from > 0 && from <= SIZE / 2, "{range}");
    assert_eq!(requests[1].header("if-range"), Some("\"big-1\""));
    let got = std::fs::read(&file).unwrap();
    assert_eq!(got.len(), SIZE);
    assert_eq!(Sha256::digest(&got), expected, "the resumed file's SHA-256");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "no temporary file is left behind");
}

#[test]
fn continue_at_starts_again_when_the_server_sends_everything() {
    let server = Server::script(vec![
        raw_declaring("200 OK", &[("etag", "\"a\"")], b"01234", 10),
        raw("200 OK", &[("etag", "\"b\"")], b"abcdefghij"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    let out = resuming(&file).arg(server.url("/")).run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(server.requests()[1].header("range"), Some("bytes=5-"));
    assert_eq!(std::fs::read(&file).unwrap(), b"abcdefghij");
}

#[test]
fn continue_at_without_a_validator_does_not_resume() {
    let server = Server::script(vec![
        raw_declaring("200 OK", &[], b"01234", 10),
        raw("200 OK", &[], b"0123456789"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    let out = resuming(&file).arg(server.url("/")).run();
    assert_eq!(out.status, 0);
    assert_eq!(server.requests()[1].header("range"), None);
    assert_eq!(std::fs::read(&file).unwrap(), b"0123456789");
}

#[test]
fn continue_at_needs_dash_and_an_output_file() {
    for (args, says) in [
        (&["-C", "100", "-o", "f"][..], "only '-C -'"),
        (&["-C", "-"], "needs -o FILE"),
        (&["-C", "-", "-o", "f", "-i"], "cannot be used with -i"),
    ] {
        let mut all = args.to_vec();
        all.push("http://127.0.0.1:9/x");
        let out = run(&all);
        let stderr = out.stderr;
        assert_eq!(out.status, 125, "{args:?}: {stderr}");
        assert!(
            stderr.contains(says) && stderr.contains("--continue-at"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn show_error_alone_changes_nothing_like_curl() {
    let c = Case::new(&["-fS", "{url}/missing"])
        .reply(Reply::status(404))
        .run();
    assert_conforms(&c);
    assert!(c.curl.stderr.contains("404"), "{}", c.curl.stderr);
    assert!(c.retry.stderr.contains("404"), "{}", c.retry.stderr);
}

#[test]
fn continue_at_on_a_whole_body_matches_curl() {
    let c = Case::new(&["-C", "-", "-o", "file", "{url}/file"])
        .reply(raw("200 OK", &[("etag", "\"e\"")], b"whole body"))
        .run();
    assert_conforms(&c);
    assert_eq!(c.retry.requests[0].header("range"), None);
    assert_eq!(c.curl.file("file"), Some(b"whole body".to_vec()));
    assert_eq!(c.retry.file("file"), c.curl.file("file"));
}

#[test]
fn dump_header_after_redirects_matches_curl() {
    let c = Case::new(&["-L", "-D", "headers", "-o", "body", "{url}/a"])
        .handler(redirect_chain)
        .run();
    assert_conforms(&c);
    let curl_file = c.curl.file("headers").expect("curl wrote the headers");
    assert_eq!(
        String::from_utf8_lossy(&c.retry.file("headers").unwrap_or_default()),
        String::from_utf8_lossy(&curl_file)
    );
    assert_eq!(c.retry.file("body"), Some(b"the end\n".to_vec()));
}

#[test]
fn output_dash_is_stdout_like_curl() {
    let c = Case::new(&["-sS", "-o", "-", "{url}/page"])
        .reply(Reply::ok("to stdout\n"))
        .run();
    assert_conforms(&c);
    assert_eq!(c.retry.stdout, b"to stdout\n");
    assert_eq!(c.retry.file("-"), None, "retry wrote a file named -");
    // With -D - as well, the headers come first, then the body, as with curl.
    let c = Case::new(&["-o", "-", "-D", "-", "{url}/page"])
        .reply(raw("200 OK", &[("x-one", "1")], b"body"))
        .run();
    assert_conforms(&c);
}

#[test]
fn silent_with_verbose_is_verbose_like_curl() {
    let c = Case::new(&["-sv", "{url}/v"]).reply(Reply::ok("ok")).run();
    assert_conforms(&c);
    assert!(c.curl.stderr.contains("> GET /v"), "{}", c.curl.stderr);
    assert!(
        c.retry.stderr.contains("request: GET http://127.0.0.1:"),
        "{}",
        c.retry.stderr
    );
    // -s -v in two words, and -v before -s, mean the same.
    for args in [&["-s", "-v"][..], &["-v", "-s"]] {
        let mut all = args.to_vec();
        let url = format!("http://127.0.0.1:{}/", crate::support::ports::free_port());
        all.extend(["-a", "1", url.as_str()]);
        let out = run(&all);
        assert_eq!(out.status, 7, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("attempt 1/1"),
            "{args:?}: {}",
            out.stderr
        );
    }
}

/// The final line names the last failure's cause, as curl's one line does, with
/// -sS and -q alike and in the GitHub annotation.
#[test]
fn the_final_line_names_the_cause_like_curl() {
    let port = crate::support::ports::free_port();
    let url = format!("http://127.0.0.1:{port}/");
    let curl = Invocation::of("curl").args(["-sS", &url]).run();
    assert_eq!(curl.status, 7);
    assert!(curl.stderr.contains("Failed to connect"), "{}", curl.stderr);
    let cause =
        format!("exit status 7 (could not connect to 127.0.0.1:{port}: connection refused)");
    for flags in [&["-sS"][..], &["-q"]] {
        let out = attempts("3").args(flags).arg(&url).run();
        assert_eq!(out.status, 7, "{flags:?}");
        assert_eq!(
            out.stderr,
            format!("retry: gave up after 3 attempts: {cause}\n"),
            "{flags:?}"
        );
    }
    let out = attempts("2")
        .args(["-sS", &url])
        .env("GITHUB_ACTIONS", "true")
        .run();
    assert!(
        out.stderr.contains(&format!(
            "::error title=retry::gave up after 2 attempts: {cause}"
        )),
        "{}",
        out.stderr
    );
    // A response's status is the cause when the stop message does not say it already.
    let server = Server::script(vec![Reply::status(503)]);
    let out = attempts("2").args(["-sS", &server.url("/")]).run();
    assert_eq!(
        out.stderr,
        "retry: gave up after 2 attempts: exit status 22 (HTTP 503)\n"
    );
}

/// `retry -C - -o FILE URL` against `replies`: the run, the requests, FILE's bytes.
fn resume_against(replies: Vec<Reply>) -> (Run, Vec<Request>, Option<Vec<u8>>) {
    let server = Server::script(replies);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    let out = resuming(&file).args(["-v", &server.url("/f")]).run();
    let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
    assert!(leftovers <= 1, "a temporary file was left behind");
    (out, server.requests(), std::fs::read(&file).ok())
}

/// The first version's first half, cut off; a broken cache then answers the request
/// for the rest with the second version's rest: never glued on.
#[test]
fn continue_at_never_glues_two_versions_together() {
    let (out, requests, file) = resume_against(vec![
        raw_declaring("200 OK", &[("etag", "\"v1\"")], b"AAAAA", 10),
        raw(
            "206 Partial Content",
            &[("etag", "\"v2\""), ("content-range", "bytes 5-9/10")],
            b"vwxyz",
        ),
        raw("200 OK", &[("etag", "\"v2\"")], b"VVVVVvwxyz"),
    ]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(file.as_deref(), Some(&b"VVVVVvwxyz"[..]));
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[1].header("range"), Some("bytes=5-"));
    assert_eq!(requests[1].header("if-range"), Some("\"v1\""));
    // The whole body is fetched again at once, in the same attempt.
    assert_eq!(requests[2].header("range"), None);
    assert_eq!(requests[2].header("if-range"), None);
    assert!(out.stderr.contains("another version"), "{}", out.stderr);
    assert_eq!(out.stderr.matches("failed").count(), 1, "{}", out.stderr);
}

#[test]
fn continue_at_refuses_a_range_that_overruns_or_overlaps() {
    const MIB: usize = 1 << 20;
    let body: Vec<u8> = (0..MIB).map(|i| (i % 253) as u8).collect();
    let etag = ("etag", "\"big\"");
    for (range, rest) in [
        // Runs past the declared total (1,049,576 bytes against 1,048,576).
        (
            format!("bytes {}-{}/{MIB}", MIB / 2, MIB + 999),
            vec![b'x'; MIB / 2 + 1000],
        ),
        // Another total than the first response declared.
        (
            format!("bytes {}-{}/{}", MIB / 2, MIB, MIB + 1),
            vec![b'x'; MIB / 2 + 1],
        ),
        // Starts before the end of the part kept.
        (
            format!("bytes {}-{}/{MIB}", MIB / 2 - 10, MIB - 1),
            body[MIB / 2 - 10..].to_vec(),
        ),
    ] {
        let (out, requests, file) = resume_against(vec![
            raw_declaring("200 OK", &[etag], &body[..MIB / 2], MIB),
            raw(
                "206 Partial Content",
                &[etag, ("content-range", &range)],
                &rest,
            ),
            raw("200 OK", &[etag], &body),
        ]);
        assert_eq!(out.status, 0, "{range}: {}", out.stderr);
        assert_eq!(requests.len(), 3, "{range}");
        let file = file.unwrap();
        assert_eq!(file.len(), MIB, "{range}");
        assert!(file == body, "{range}: the file is the resource");
    }
}

#[test]
fn continue_at_checks_last_modified_when_there_is_no_etag() {
    let first = "Sun, 06 Nov 1994 08:49:37 GMT";
    let later = "Mon, 07 Nov 1994 08:49:37 GMT";
    // The same Last-Modified and the rest: appended.
    let (out, requests, file) = resume_against(vec![
        raw_declaring("200 OK", &[("last-modified", first)], b"01234", 10),
        raw(
            "206 Partial Content",
            &[("last-modified", first), ("content-range", "bytes 5-9/10")],
            b"56789",
        ),
    ]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].header("if-range"), Some(first));
    assert_eq!(file.as_deref(), Some(&b"0123456789"[..]));
    // Another Last-Modified: the whole body again.
    let (out, requests, file) = resume_against(vec![
        raw_declaring("200 OK", &[("last-modified", first)], b"01234", 10),
        raw(
            "206 Partial Content",
            &[("last-modified", later), ("content-range", "bytes 5-9/10")],
            b"fghij",
        ),
        raw("200 OK", &[("last-modified", later)], b"abcdefghij"),
    ]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(requests.len(), 3);
    assert_eq!(file.as_deref(), Some(&b"abcdefghij"[..]));
}

#[test]
fn continue_at_starts_again_after_a_416() {
    let (out, requests, file) = resume_against(vec![
        raw_declaring("200 OK", &[("etag", "\"a\"")], b"01234", 10),
        raw(
            "416 Range Not Satisfiable",
            &[("content-range", "bytes */4")],
            b"",
        ),
        raw("200 OK", &[("etag", "\"b\"")], b"abcd"),
    ]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(requests.len(), 3);
    assert_eq!(file.as_deref(), Some(&b"abcd"[..]));
}
