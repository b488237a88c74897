//! The peers' options in HTTP mode, against a real server on 127.0.0.1: request counts,
//! the gaps between requests, and exit statuses.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use super::delays;
use crate::support::http_server::{Reply, Server};
use crate::support::{Invocation, Scratch, read_json, retry};

/// The time between each request and the next, as the server saw them arrive.
fn gaps(server: &Server) -> Vec<Duration> {
    let at: Vec<Instant> = server.requests().iter().map(|r| r.at).collect();
    at.windows(2).map(|w| w[1] - w[0]).collect()
}

fn service_unavailable() -> Reply {
    Reply::status(503).body(b"down")
}

// ---- --consecutive against a flapping service and one that recovers ----

#[test]
fn consecutive_never_succeeds_against_a_server_that_alternates() {
    let replies = (0..10)
        .map(|i| {
            if i % 2 == 0 {
                Reply::ok("up")
            } else {
                service_unavailable()
            }
        })
        .collect();
    let server = Server::script(replies).expect_hits(10);
    let r = retry()
        .args([
            "--consecutive",
            "3",
            "-a",
            "10",
            "--delay",
            "20ms",
            "-j",
            "none",
        ])
        .arg(server.url("/health"))
        .run();
    assert_eq!(r.status, 22, "{}", r.stderr);
    assert!(
        r.stdout.is_empty(),
        "a run that did not succeed prints no body"
    );
    assert!(
        r.stderr
            .contains("gave up after 10 attempts, without 3 successes in a row (at most 1)"),
        "{}",
        r.stderr
    );
    assert!(
        gaps(&server)
            .iter()
            .all(|g| *g >= Duration::from_millis(20))
    );
}

#[test]
fn consecutive_succeeds_after_exactly_three_in_a_row_once_the_server_recovers() {
    let server = Server::script(vec![
        service_unavailable(),
        service_unavailable(),
        Reply::ok("one"),
        Reply::ok("two"),
        Reply::ok("three"),
        Reply::ok("never asked"),
    ])
    .expect_hits(5);
    let s = Scratch::new();
    let report = s.path("report.json");
    let r = retry()
        .args([
            "--consecutive",
            "3",
            "-a",
            "10",
            "--delay",
            "100ms",
            "-j",
            "none",
        ])
        .report(&report)
        .arg(server.url("/health"))
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), "three", "the last success's body, once");
    // 503 503 (backoff 100ms, 200ms), then 100ms (--delay) between the successes.
    assert_eq!(delays(&read_json(&report)), [100, 200, 100, 100]);
    let gaps = gaps(&server);
    for (gap, least) in gaps.iter().zip([100, 200, 100, 100]) {
        assert!(*gap >= Duration::from_millis(least), "{gaps:?}");
    }
}

#[test]
fn consecutive_short_of_its_goal_on_a_success_leaves_the_output_file_alone() {
    let server = Server::script(vec![
        service_unavailable(),
        Reply::ok("new"),
        Reply::ok("newer"),
    ])
    .expect_hits(3);
    let s = Scratch::new();
    let out = s.write("page", b"old");
    let r = retry()
        .fast()
        .args(["--consecutive", "3", "-a", "3", "-o"])
        .arg(&out)
        .arg(server.url("/"))
        .run();
    // Two successes in a row, not three: the run failed, with the 503's status.
    assert_eq!(r.status, 22, "{}", r.stderr);
    assert_eq!(std::fs::read(&out).unwrap(), b"old");
    assert!(r.stdout.is_empty());
}

// ---- urllib3: a 413 with Retry-After, HTTP-dates as mail libraries read them ----

#[test]
fn a_413_with_retry_after_is_retried_after_the_wait() {
    let server = Server::script(vec![
        Reply::status(413).header("Retry-After", "1"),
        Reply::ok("accepted"),
    ])
    .expect_hits(2);
    let r = retry()
        .args(["-j", "none", "-X", "PUT", "-d", "part"])
        .arg(server.url("/upload"))
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(
        gaps(&server)[0] >= Duration::from_secs(1),
        "{:?}",
        gaps(&server)
    );
}

#[test]
fn a_413_without_retry_after_stops_at_once() {
    let server = Server::script(vec![Reply::status(413), Reply::ok("never")]).expect_hits(1);
    let r = retry().fast().arg(server.url("/upload")).run();
    assert_eq!(r.status, 22, "{}", r.stderr);
    assert!(r.stderr.contains("permanent"), "{}", r.stderr);
}

#[test]
fn a_lenient_http_date_counts_and_a_malformed_one_does_not() {
    // A 413 is transient only with a Retry-After that could be read: a date in the
    // past is read (no wait), a malformed one is not.
    for (date, hits, status) in [
        ("Sun, 6 Nov 1994 08:49:37 UTC", 2, 0),
        ("Sun, 6 Nov 1994 08:49:37 +0000", 2, 0),
        ("Sun, 6 Nov 1994 08:49:37 PST", 1, 22),
    ] {
        let server = Server::script(vec![
            Reply::status(413).header("Retry-After", date),
            Reply::ok("ok"),
        ])
        .expect_hits(hits);
        let r = retry().fast().arg(server.url("/")).run();
        assert_eq!(r.status, status, "{date}: {}", r.stderr);
    }
}

#[test]
fn a_retry_after_date_in_utc_is_obeyed() {
    // Far enough ahead that a slow start of retry still leaves seconds to wait.
    let at = SystemTime::now() + Duration::from_secs(6);
    // As urllib3's servers write it: the day unpadded, the zone UTC.
    let date = jiff::Timestamp::try_from(at)
        .unwrap()
        .strftime("%a, %-d %b %Y %H:%M:%S UTC")
        .to_string();
    let server = Server::script(vec![
        service_unavailable().header("Retry-After", &date),
        Reply::ok("ok"),
    ])
    .expect_hits(2);
    let r = retry().args(["-j", "none"]).arg(server.url("/")).run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    // Whole seconds, less however long retry took to send the first request: well over
    // the 1 s the backoff alone would wait.
    let gap = gaps(&server)[0];
    assert!(gap >= Duration::from_millis(2500), "{date}: {gap:?}");
}

#[test]
fn ignore_retry_after_lets_the_backoff_decide() {
    let server = Server::script(vec![
        service_unavailable().header("Retry-After", "30"),
        Reply::status(429).header("RateLimit-Reset", "30"),
        Reply::ok("ok"),
    ])
    .expect_hits(3);
    let r = retry()
        .args(["--ignore-retry-after", "--delay", "50ms", "-j", "none"])
        .arg(server.url("/"))
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    let gaps = gaps(&server);
    assert!(gaps[0] >= Duration::from_millis(50) && gaps[1] >= Duration::from_millis(100));
    assert!(r.elapsed < Duration::from_secs(5), "{:?}", r.elapsed);
    let dry = retry()
        .args(["--ignore-retry-after", "--dry-run"])
        .arg(server.url("/"))
        .run();
    assert!(
        dry.stdout_text()
            .contains("retry-after: ignored (--ignore-retry-after)"),
        "{}",
        dry.stdout_text()
    );
}

// ---- curl's --retry-delay ----

#[test]
fn retry_delay_sleeps_exactly_as_curl_does_unless_j_is_given() {
    let statuses = || {
        vec![
            service_unavailable(),
            service_unavailable(),
            Reply::ok("ok"),
        ]
    };
    let s = Scratch::new();
    let report = s.path("report.json");
    let server = Server::script(statuses()).expect_hits(3);
    let r = retry()
        .args(["--retry", "2", "--retry-delay", "0.3"])
        .report(&report)
        .arg(server.url("/"))
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(delays(&read_json(&report)), [300, 300]);
    for gap in gaps(&server) {
        assert!(gap >= Duration::from_millis(300) && gap < Duration::from_millis(900));
    }
    // With -j the sleeps are spread, as -j says, and --seed repeats them.
    let spread = |seed: &str| {
        let server = Server::script(statuses()).expect_hits(3);
        retry()
            .args([
                "--retry",
                "2",
                "--retry-delay",
                "0.3",
                "-j",
                "full",
                "--seed",
                seed,
            ])
            .report(&report)
            .arg(server.url("/"))
            .run();
        delays(&read_json(&report))
    };
    let (first, again) = (spread("5"), spread("5"));
    assert_eq!(first, again);
    assert!(first.iter().all(|d| *d <= 300), "{first:?}");
    assert_ne!(first, [300, 300]);
}

// ---- curl's 18 (partial file) and 56 (receive failure) ----

/// How a raw server ends a response that declared more than it sent.
#[derive(Clone, Copy, Debug)]
enum Ending {
    /// Content-Length 100, 10 bytes, then a clean close (FIN).
    ShortThenClose,
    /// Chunked, one chunk, then a clean close before the last chunk.
    ChunkThenClose,
    /// Content-Length 100, 10 bytes, then a reset (RST: SO_LINGER 0).
    ShortThenReset,
}

/// A raw TCP server on 127.0.0.1 that answers every request ending as `ending`;
/// the count of requests it read.
fn raw_server(ending: Ending) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/file", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&hits);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            counted.fetch_add(1, Ordering::SeqCst);
            let _ = answer(stream, ending);
        }
    });
    (url, hits)
}

fn answer(mut stream: TcpStream, ending: Ending) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte)? == 1 {
        head.push(byte[0]);
    }
    let reply: &[u8] = match ending {
        Ending::ShortThenClose | Ending::ShortThenReset => {
            b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789"
        }
        Ending::ChunkThenClose => {
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n"
        }
    };
    stream.write_all(reply)?;
    stream.flush()?;
    if let Ending::ShortThenReset = ending {
        // Let the head and the first bytes arrive, then reset instead of closing.
        std::thread::sleep(Duration::from_millis(100));
        let linger = nix::libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        nix::sys::socket::setsockopt(&stream, nix::sys::socket::sockopt::Linger, &linger)
            .map_err(std::io::Error::from)?;
    }
    Ok(())
}

#[test]
fn a_body_short_of_its_length_is_18_and_a_reset_mid_body_56_as_with_curl() {
    for (ending, status) in [
        (Ending::ShortThenClose, 18),
        (Ending::ChunkThenClose, 18),
        (Ending::ShortThenReset, 56),
    ] {
        let (url, hits) = raw_server(ending);
        let r = retry().fast().args(["-a", "2", &url]).run();
        assert_eq!(r.status, status, "{ending:?}: {}", r.stderr);
        assert_eq!(hits.load(Ordering::SeqCst), 2, "{ending:?}: retried once");
        assert!(
            r.stdout.is_empty(),
            "{ending:?}: a partial body is never printed"
        );
        let curl = Invocation::of("curl")
            .args(["-s", "-o", "/dev/null", &url])
            .run();
        assert_eq!(curl.status, status, "{ending:?}: curl says {}", curl.status);
    }
}
