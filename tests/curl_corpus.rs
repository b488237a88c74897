//! Fourteen `curl --retry` lines of the kinds public scripts, Dockerfiles and CI files
//! use (our own equivalents: `--retry N --retry-delay S --retry-max-time M --max-time T`,
//! `--retry-connrefused`, `--retry-all-errors`, `-fsSL`, `-o`), each run unchanged by the
//! real curl and by retry against local servers that fail, reset the connection and cut
//! the body off, first for a while and then for good. Both must end with the same exit
//! status and the same bytes (on stdout, or in the `-o` file), but for the differences
//! docs/curl.md lists, each checked for what it is:
//!
//! - retry retries a reset connection or a cut-off body (curl's 56 and 18) without
//!   `--retry-all-errors`, where curl gives up at once: retry then ends with the good body;
//! - a body cut off on stdout reaches curl's stdout before the next attempt's; retry's
//!   stdout holds only the final attempt's body;
//! - a download that never completes leaves curl's `-o` file with the part it got;
//!   retry's `-o` file appears only when complete.

use std::time::Duration;

use crate::support::curl::{Case, Compared};
use crate::support::http_server::Reply;

/// The corpus: each line as a script would write it; `{url}` is the side's server and
/// `{dir}` its working directory.
const CORPUS: [&str; 14] = [
    "-fsSL --retry 3 {url}/install.sh",
    "-fsSL --retry 5 --retry-delay 1 {url}/get.sh",
    "-fsSL --retry 3 --retry-connrefused {url}/health",
    "-fsSL --retry 3 --retry-all-errors {url}/api/v1/status",
    "-fsSL --retry 2 --retry-delay 1 --retry-max-time 30 --max-time 10 {url}/data.json",
    "--max-time 10 --retry 5 --retry-max-time 40 -fsS {url}/status",
    "-fL --retry 3 --retry-delay 1 -o {dir}/release.tar.gz {url}/release.tar.gz",
    "-fsSL --retry 3 --retry-all-errors --retry-delay 1 -o {dir}/key.gpg {url}/key.gpg",
    "-sS --fail --retry 3 --retry-connrefused --retry-delay 1 {url}/ready",
    "-fsS --retry 4 --retry-delay 1 --max-time 5 {url}/ping",
    "-f --retry 3 --retry-max-time 20 -o {dir}/out.bin {url}/out.bin",
    "-fsSL --max-time 30 --retry 2 --retry-connrefused --retry-delay 1 -o {dir}/tool {url}/tool",
    "-sSf --retry 3 --retry-delay 1 --retry-max-time 15 {url}/artifact",
    "--silent --show-error --fail --location --retry 3 --retry-all-errors --max-time 10 {url}/x",
];

const GOOD: &str = "{\"status\": \"ok\"}\n";

/// How a server answers before it answers well (or for good).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// 503 with no body.
    Fails,
    /// The connection reset (RST) before a byte of the reply.
    Resets,
    /// 100 bytes declared, 7 sent, then closed.
    CutsOff,
}

impl Fault {
    fn reply(self) -> Reply {
        match self {
            Fault::Fails => Reply::status(503),
            Fault::Resets => Reply::Reset,
            Fault::CutsOff => Reply::CutOff {
                declared: 100,
                body: b"partial".to_vec(),
            },
        }
    }

    /// curl's exit status when this is the last answer: 22 (with -f), 56, 18.
    fn curl_status(self) -> i32 {
        match self {
            Fault::Fails => 22,
            Fault::Resets => 56,
            Fault::CutsOff => 18,
        }
    }

    /// Whether curl's --retry retries it without --retry-all-errors (it retries 503, not
    /// a reset or a short body).
    fn curl_retries(self, line: &str) -> bool {
        self == Fault::Fails || line.contains("--retry-all-errors")
    }
}

/// `line` split into arguments, and the file it writes with `-o`, if any.
fn words(line: &str) -> (Vec<&str>, Option<&str>) {
    let args: Vec<&str> = line.split_whitespace().collect();
    let out = args
        .iter()
        .position(|a| *a == "-o")
        .map(|i| args[i + 1].trim_start_matches("{dir}/"));
    (args, out)
}

/// Runs `line` with both clients against servers that answer `replies`.
fn compare(line: &str, replies: Vec<Reply>) -> Compared {
    let (args, _) = words(line);
    // The line's own words decide the sleeps, for retry as for curl: no prefix.
    Case::new(&args).replies(replies).retry_args(&[]).run()
}

/// What one side left: its stdout, or its `-o` file (`None`: no file).
fn bytes(side: &crate::support::curl::Side, out: Option<&str>) -> Option<Vec<u8>> {
    match out {
        Some(name) => side.file(name),
        None => Some(side.stdout.clone()),
    }
}

/// The fault once, then the good answer: both end with the good body, but where curl
/// gives up on a fault it does not retry (retry does).
fn recovers(fault: Fault) {
    for line in CORPUS {
        let (_, out) = words(line);
        let both = compare(line, vec![fault.reply(), Reply::ok(GOOD)]);
        let (curl, ours) = (&both.curl, &both.retry);
        let context = format!("{line} against {fault:?} then 200\nretry: {}", ours.stderr);
        assert_eq!(ours.status, 0, "{context}");
        assert_eq!(
            bytes(ours, out).as_deref(),
            Some(GOOD.as_bytes()),
            "{context}"
        );
        assert_eq!(ours.requests.len(), 2, "{context}");
        if !fault.curl_retries(line) {
            // Listed: retry retries a reset or a short body without --retry-all-errors.
            assert_eq!(curl.status, fault.curl_status(), "curl: {context}");
            assert_eq!(curl.requests.len(), 1, "curl: {context}");
            continue;
        }
        assert_eq!(curl.status, 0, "curl: {context}\ncurl: {}", curl.stderr);
        let theirs = bytes(curl, out).unwrap_or_default();
        if fault == Fault::CutsOff && out.is_none() {
            // Listed: curl's stdout has the cut-off part before the good body.
            assert_eq!(theirs, format!("partial{GOOD}").as_bytes(), "{context}");
        } else {
            assert_eq!(theirs, GOOD.as_bytes(), "{context}");
        }
    }
}

/// The fault on every answer: both give up after the same attempts with curl's status.
fn never_recovers(fault: Fault, lines: &[&str]) {
    for line in lines {
        let (_, out) = words(line);
        let both = compare(line, vec![fault.reply()]);
        let (curl, ours) = (&both.curl, &both.retry);
        let context = format!("{line} against {fault:?} for good\nretry: {}", ours.stderr);
        assert_eq!(ours.status, fault.curl_status(), "{context}");
        assert_eq!(curl.status, fault.curl_status(), "curl: {context}");
        if fault.curl_retries(line) {
            assert_eq!(ours.requests.len(), curl.requests.len(), "{context}");
        }
        match (fault, out) {
            // Listed: no partial -o file; curl's keeps the part it got.
            (Fault::CutsOff, Some(_)) => {
                assert_eq!(bytes(ours, out), None, "{context}");
                assert_eq!(bytes(curl, out).as_deref(), Some(&b"partial"[..]));
            }
            // Listed: nothing of a cut-off body on stdout; curl's has each part.
            (Fault::CutsOff, None) => {
                assert_eq!(ours.stdout, b"", "{context}");
                assert!(curl.stdout.starts_with(b"partial"), "curl: {context}");
            }
            _ => assert_eq!(bytes(ours, out), bytes(curl, out), "{context}"),
        }
    }
}

#[test]
fn each_line_recovers_from_a_failing_server_as_curl_does() {
    recovers(Fault::Fails);
}

#[test]
fn each_line_recovers_from_a_reset_connection() {
    recovers(Fault::Resets);
}

#[test]
fn each_line_recovers_from_a_body_cut_off() {
    recovers(Fault::CutsOff);
}

/// The lines with the fewest and shortest sleeps, against servers that never recover:
/// each ends with curl's exit status after as many requests as curl sent.
#[test]
fn lines_give_up_with_curl_s_status_when_the_server_never_recovers() {
    // Two or three retries a second apart, with and without --retry-all-errors and -o.
    let quick = [CORPUS[4], CORPUS[7], CORPUS[11]];
    for fault in [Fault::Fails, Fault::Resets, Fault::CutsOff] {
        never_recovers(fault, &quick);
    }
}

/// `--max-time` beside curl's retry words is curl's limit on each transfer: a reply that
/// takes 3 s is cut at 1 s (28) and the retry gets the good answer, for curl and for
/// retry alike; the whole run is bounded by `--retry-max-time` alone.
#[test]
fn max_time_beside_retry_limits_each_transfer_as_curl_s_does() {
    let line = "-fsS --max-time 1 --retry 2 --retry-delay 1 --retry-max-time 20 {url}/slow";
    let slow = Reply::Slow(Duration::from_secs(3), Box::new(Reply::ok("late\n")));
    let both = compare(line, vec![slow, Reply::ok(GOOD)]);
    both.assert_same_output();
    assert_eq!(both.retry.status, 0, "{}", both.retry.stderr);
    assert_eq!(both.retry.stdout, GOOD.as_bytes());
    assert_eq!(both.retry.requests.len(), 2);
    let dry = line.replace("{url}", "http://127.0.0.1:9");
    let mut args = vec!["--dry-run"];
    args.extend(dry.split_whitespace());
    let r = crate::support::run(&args);
    assert_eq!(r.status, 0, "{}", r.stderr);
    let text = r.stdout_text();
    assert!(
        text.contains("1s per attempt (--max-time beside --retry is curl's limit on each transfer"),
        "{text}"
    );
    assert!(
        text.contains("bounded by --retry-max-time alone (20s)"),
        "{text}"
    );
}
