//! What a curl user meets past the everyday options, each checked side by side with
//! real curl against a server on 127.0.0.1: `--cacert` with the certificates
//! `openssl req -x509` makes (CA:TRUE, or a name in the CN only) and TLS failures in
//! words; exit 23 when the body cannot be written (a reader gone, stdout closed, a
//! full device, `-o` failing), measured on the client's own exit; `Host` first in the
//! bytes on the wire; `-m`, `--proto`, `--proto-redir`, `--basic` and options after
//! the URL.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::Duration;

use crate::support::curl::{self, Case};
use crate::support::http_server::{self, Reply, Server};
use crate::support::{Invocation, bin, exited_within, run};

// ---- TLS: --cacert ----

/// Runs `openssl ARGS` in `dir`.
fn openssl(dir: &Path, args: &[&str]) {
    let out = Invocation::of("openssl").args(args).current_dir(dir).run();
    assert_eq!(out.status, 0, "openssl {args:?}: {}", out.stderr);
}

/// `openssl req -x509` as people type it: a self-signed certificate with its key,
/// `NAME.pem` and `NAME.key` in `dir`, for `subject`, with `ext` added (`-addext`).
fn self_signed(dir: &Path, name: &str, subject: &str, ext: &[&str]) -> PathBuf {
    let (cert, key) = (format!("{name}.pem"), format!("{name}.key"));
    let mut args = vec![
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &cert, "-days",
        "2", "-subj", subject,
    ];
    for e in ext {
        args.extend(["-addext", e]);
    }
    openssl(dir, &args);
    dir.join(cert)
}

/// A TLS server presenting `NAME.pem` (key `NAME.key`) from `dir`.
fn tls_server(dir: &Path, name: &str) -> impl Fn(&Path) -> Server + 'static {
    let read = |ext: &str| std::fs::read(dir.join(format!("{name}.{ext}"))).unwrap();
    let config = http_server::tls_config_of(&read("pem"), &read("key"));
    move |_| Server::tls_with(Arc::clone(&config), vec![Reply::ok("trusted")])
}

fn text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// The retry side's stderr says the TLS failure in words, never in a library's
/// debug text, and its hint names --cacert before -k.
fn assert_said_in_words(stderr: &str, words: &str) {
    assert!(stderr.contains(words), "not {words:?}: {stderr}");
    for debug in ["Other(", "OtherError", "Context {", "InvalidCertificate"] {
        assert!(!stderr.contains(debug), "debug text {debug:?}: {stderr}");
    }
    let cacert = stderr.find("--cacert").expect("the hint names --cacert");
    let insecure = stderr.find("-k ").expect("the hint names -k");
    assert!(cacert < insecure, "--cacert after -k: {stderr}");
}

/// curl and retry with `--cacert TRUSTED` against a TLS server presenting `SERVED`
/// (from `pki`), at `https://HOST:PORT/`; `localhost` is sent to 127.0.0.1.
fn fetch(pki: &Path, served: &str, trusted: &Path, host: &str) -> curl::Compared {
    let url = format!("https://{host}:{{port}}/");
    Case::new(&[
        "--cacert",
        &text(trusted),
        "--resolve",
        "localhost:{port}:127.0.0.1",
        &url,
    ])
    .server(tls_server(pki, served))
    .run()
}

/// Both refuse the certificate with 60; retry says why in `words`.
fn assert_refused(c: &curl::Compared, words: &str) {
    c.assert_same_output();
    assert_eq!(c.retry.status, 60);
    assert_said_in_words(&c.retry.stderr, words);
}

#[test]
fn cacert_trusts_the_servers_own_self_signed_ca_certificate_like_curl() {
    curl::require_curl();
    let pki = tempfile::tempdir().unwrap();
    let alt = "subjectAltName=DNS:localhost,IP:127.0.0.1";
    let cert = self_signed(pki.path(), "srv", "/CN=localhost", &[alt]);
    let shown = Invocation::of("openssl")
        .args(["x509", "-noout", "-ext", "basicConstraints", "-in"])
        .arg(&cert)
        .run();
    assert!(
        shown.stdout_text().contains("CA:TRUE"),
        "OpenSSL 3 marks it a CA: {}",
        shown.stdout_text()
    );
    for host in ["localhost", "127.0.0.1"] {
        let c = fetch(pki.path(), "srv", &cert, host);
        c.assert_same();
        assert_eq!(c.retry.status, 0, "{}", c.retry.stderr);
        assert_eq!(c.retry.stdout, b"trusted");
    }
}

#[test]
fn cacert_trusts_a_certificate_naming_the_host_only_in_its_cn_like_curl() {
    let pki = tempfile::tempdir().unwrap();
    let cert = self_signed(pki.path(), "cn", "/CN=localhost", &[]);
    let c = fetch(pki.path(), "cn", &cert, "localhost");
    c.assert_same();
    assert_eq!(c.retry.status, 0, "{}", c.retry.stderr);
    // The CN names localhost, not the address: both refuse it.
    let c = fetch(pki.path(), "cn", &cert, "127.0.0.1");
    assert_refused(
        &c,
        "the certificate is issued for CN=localhost, not 127.0.0.1",
    );
}

#[test]
fn cacert_still_checks_the_host_name_like_curl() {
    let pki = tempfile::tempdir().unwrap();
    let alt = "subjectAltName=DNS:other.test";
    let cert = self_signed(pki.path(), "other", "/CN=other.test", &[alt]);
    let c = fetch(pki.path(), "other", &cert, "localhost");
    assert_refused(
        &c,
        "the certificate is issued for other.test, CN=other.test, not localhost",
    );
}

#[test]
fn a_certificate_signed_by_another_authority_is_said_in_words_like_curl() {
    let pki = tempfile::tempdir().unwrap();
    let alt = "subjectAltName=IP:127.0.0.1";
    let leaf = "basicConstraints=critical,CA:FALSE";
    self_signed(pki.path(), "srv", "/CN=server", &[alt, leaf]);
    let stranger = self_signed(pki.path(), "stranger", "/CN=stranger", &[alt]);
    let c = fetch(pki.path(), "srv", &stranger, "127.0.0.1");
    assert_refused(&c, "the certificate is signed by an unknown authority");
}

#[test]
fn an_expired_certificate_is_said_with_its_date_like_curl() {
    let pki = tempfile::tempdir().unwrap();
    let dir = pki.path();
    // `openssl ca` sets dates in the past, which `req -x509` cannot.
    std::fs::write(dir.join("index.txt"), "").unwrap();
    std::fs::write(dir.join("serial"), "01\n").unwrap();
    std::fs::write(
        dir.join("ca.cnf"),
        "[ca]\ndefault_ca = d\n[d]\ndatabase = index.txt\nserial = serial\n\
         new_certs_dir = .\ndefault_md = sha256\npolicy = p\ncopy_extensions = copy\n\
         [p]\ncommonName = supplied\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "old.key",
            "-out",
            "old.csr",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
    );
    openssl(
        dir,
        &[
            "ca",
            "-batch",
            "-config",
            "ca.cnf",
            "-selfsign",
            "-keyfile",
            "old.key",
            "-in",
            "old.csr",
            "-out",
            "old.pem",
            "-notext",
            "-startdate",
            "20200101000000Z",
            "-enddate",
            "20200102000000Z",
        ],
    );
    let c = fetch(dir, "old", &dir.join("old.pem"), "127.0.0.1");
    assert_refused(&c, "the certificate expired on 2020-01-02 00:00:00 UTC");
}

// ---- exit 23: the body cannot be written ----

/// A body much larger than a pipe holds, so a reader that leaves early breaks the write.
fn big_body() -> Vec<u8> {
    (0..1 << 20).map(|i| b'a' + (i % 26) as u8).collect()
}

/// The arguments of `PROGRAM -sS URL`: retry's with fast backoff.
fn client_args(program: &str, url: &str) -> Vec<String> {
    let mut args: Vec<String> = Vec::new();
    if program != "curl" {
        args.extend(["--delay", "1ms", "--max-delay", "5ms"].map(String::from));
    }
    args.extend(["-sS".to_string(), url.to_string()]);
    args
}

/// `PROGRAM -sS URL` (curl, or retry with fast backoff), to be started by the caller.
fn client(program: &str, url: &str) -> Invocation {
    let mut client = Invocation::of(program);
    client.args(client_args(program, url));
    client
}

/// Waits for `child` itself to exit, within 20 s; its status (128+N for a signal).
fn exit_of(mut child: Child) -> i32 {
    exited_within(&mut child, Duration::from_secs(20)).expect("no exit")
}

/// `PROGRAM -sS URL | head -c 10`: the client's own exit status, and the requests
/// its server received.
fn with_early_reader(program: &str) -> (i32, usize) {
    let server = Server::script(vec![Reply::ok("").body(&big_body())]);
    let mut child = client(program, &server.url("/big"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let mut head = [0u8; 10];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap();
    // The reader is gone: the pipe was dropped with the rest unread.
    (exit_of(child), server.hits())
}

#[test]
fn a_reader_that_goes_away_is_exit_23_like_curl_and_never_retried() {
    curl::require_curl();
    assert_eq!(with_early_reader("curl").0, 23);
    assert_eq!(with_early_reader(bin()), (23, 1));
}

/// `PROGRAM -sS URL` with stdout closed (`>&-`), through `sh -c 'exec … >&-'` so
/// the status is the client's own.
fn with_closed_stdout(program: &str, url: &str) -> i32 {
    let mut words: Vec<String> = vec![program.to_string()];
    words.extend(client_args(program, url));
    Invocation::of("sh")
        .args(["-c", "exec \"$@\" >&-", "sh"])
        .args(&words)
        .run()
        .status
}

#[test]
fn a_closed_stdout_is_exit_23_like_curl_unless_there_is_nothing_to_write() {
    let server = Server::script(vec![Reply::ok("a body")]);
    for program in ["curl", bin()] {
        assert_eq!(
            with_closed_stdout(program, &server.url("/x")),
            23,
            "{program}"
        );
    }
    let empty = Server::script(vec![Reply::ok("")]);
    for program in ["curl", bin()] {
        assert_eq!(with_closed_stdout(program, &empty.url("/")), 0, "{program}");
    }
}

#[test]
fn a_full_device_is_exit_23_like_curl() {
    let server = Server::script(vec![Reply::ok("a body for /dev/full")]);
    for program in ["curl", bin()] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = client(program, &server.url("/")).stdout(full).run();
        assert_eq!(out.status, 23, "{program}: {}", out.stderr);
    }
    // -o onto the device fails the same way.
    let c = Case::new(&["-sS", "-o", "/dev/full", "{url}/o"]).run();
    c.assert_same();
    assert_eq!(c.retry.status, 23, "{}", c.retry.stderr);
    assert!(
        c.retry.stderr.contains("the body could not be written"),
        "{}",
        c.retry.stderr
    );
}

// ---- the request on the wire ----

/// A server that records the raw bytes of one request head and answers 200.
fn capture_head(program: &str, args: &[&str]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let reader = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut head = String::new();
        let mut lines = BufReader::new(&stream);
        while lines.read_line(&mut head).unwrap() > 0 && !head.ends_with("\r\n\r\n") {}
        let mut out = &stream;
        let _ =
            out.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        head.replace(&port.to_string(), "PORT")
    });
    let mut client = Invocation::of(program);
    let url = format!("http://127.0.0.1:{port}/p");
    let args: Vec<String> = args.iter().map(|a| a.replace("{url}", &url)).collect();
    let out = client.args(&args).run();
    assert_eq!(out.status, 0, "{program}: {}", out.stderr);
    reader.join().unwrap()
}

/// The header lines of a captured head, after the request line.
fn header_lines(head: &str) -> Vec<&str> {
    head.split("\r\n")
        .skip(1)
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn host_is_the_first_header_on_the_wire_like_curl() {
    curl::require_curl();
    for extra in [&[][..], &["-H", "Host: example.test"], &["-d", "a=1"]] {
        let mut args = extra.to_vec();
        args.push("{url}");
        let curl_head = capture_head("curl", &args);
        let retry_head = capture_head(bin(), &args);
        let (c, r) = (header_lines(&curl_head), header_lines(&retry_head));
        assert!(c[0].starts_with("Host: "), "{curl_head:?}");
        assert_eq!(r[0], c[0], "curl: {curl_head:?}\nretry: {retry_head:?}");
        assert_eq!(r.iter().filter(|l| l.starts_with("Host:")).count(), 1);
    }
}

#[test]
fn an_empty_header_goes_with_an_empty_value_like_curl() {
    let args = ["-H", "X-Empty;", "{url}"];
    let curl_head = capture_head("curl", &args);
    let retry_head = capture_head(bin(), &args);
    for head in [&curl_head, &retry_head] {
        let line = header_lines(head)
            .into_iter()
            .find(|l| l.starts_with("X-Empty:"))
            .unwrap_or_else(|| panic!("no X-Empty in {head:?}"));
        // curl writes `X-Empty:`; the HTTP library always puts a space after the colon.
        assert_eq!(line.trim_end(), "X-Empty:", "{head:?}");
    }
}

// ---- curl's options ----

#[test]
fn m_limits_the_transfer_like_curl() {
    let slow = || Reply::Slow(Duration::from_secs(3), Box::new(Reply::ok("late")));
    let c = Case::new(&["-sS", "-m", "0.5", "{url}/slow"])
        .reply(slow())
        .retry_args(&["-a", "1"])
        .run();
    c.assert_same();
    assert_eq!(c.retry.status, 28, "{}", c.retry.stderr);
    // As -t: every attempt gets the limit.
    let s = Server::script(vec![slow()]);
    let out = run(&["--delay", "1ms", "-a", "2", "-m", "0.3", &s.url("/")]);
    assert_eq!((out.status, s.hits()), (28, 2), "{}", out.stderr);
}

#[test]
fn proto_refuses_a_url_outside_it_with_exit_1_like_curl() {
    for proto in ["=https", "-all,+https", "-http"] {
        let c = Case::new(&["-sS", "--proto", proto, "{url}/no"]).run();
        c.assert_same_output();
        assert_eq!(c.retry.status, 1, "{proto}: {}", c.retry.stderr);
        assert!(c.retry.requests.is_empty() && c.curl.requests.is_empty());
        assert!(c.retry.stderr.contains("--proto"), "{}", c.retry.stderr);
    }
    for proto in ["http,https", "=http", "all"] {
        Case::new(&["--proto", proto, "{url}/yes"])
            .run()
            .assert_same();
    }
    // Refused at once: it is permanent.
    let s = Server::script(vec![Reply::ok("never")]).expect_hits(0);
    let out = run(&["--delay", "1ms", "--proto", "=https", &s.url("/")]);
    assert_eq!(out.status, 1);
    assert!(
        out.stderr.contains("attempt 1/5 failed") && !out.stderr.contains("attempt 2/"),
        "{}",
        out.stderr
    );
}

#[test]
fn proto_redir_refuses_a_redirect_outside_it_with_exit_1_like_curl() {
    let redirect = |r: &http_server::Request, _: usize| match r.target.as_str() {
        "/from" => Reply::status(302).header("Location", "/to"),
        _ => Reply::ok("arrived"),
    };
    let c = Case::new(&["-sS", "-L", "--proto-redir", "=https", "{url}/from"])
        .handler(redirect)
        .run();
    c.assert_same();
    assert_eq!(c.retry.status, 1, "{}", c.retry.stderr);
    // --proto applies to redirects too; within both, the redirect is followed.
    let c = Case::new(&["-L", "--proto-redir", "http", "{url}/from"])
        .handler(redirect)
        .run();
    c.assert_same();
    assert_eq!(c.retry.stdout, b"arrived");
}

#[test]
fn basic_is_accepted_like_curl() {
    let c = Case::new(&["--basic", "-u", "a:b", "{url}/auth"]).run();
    c.assert_same();
    assert!(c.first().1.header("authorization").is_some());
}

#[test]
fn options_may_follow_the_url_like_curl() {
    let c = Case::new(&["{url}/after", "-o", "out", "-H", "X-After: 1", "-sS"]).run();
    c.assert_same();
    assert_eq!(c.retry.file("out").as_deref(), Some(&b"ok"[..]));
    assert_eq!(c.first().1.header("x-after"), Some("1"));
}

#[test]
fn a_second_url_is_refused_in_one_line() {
    let s = Server::script(vec![Reply::ok("x")]).expect_hits(0);
    for extra in [
        &["http://127.0.0.1:9/b"][..],
        &["--", "http://127.0.0.1:9/b"],
    ] {
        let mut args = vec![s.url("/a")];
        args.extend(extra.iter().map(|a| a.to_string()));
        let out = crate::support::retry().args(&args).run();
        assert_eq!(out.status, 125, "{}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(
            out.stderr
                .starts_with("retry: http://127.0.0.1:9/b: a second URL"),
            "{}",
            out.stderr
        );
    }
}

#[test]
fn connect_to_is_refused_naming_what_replaces_it() {
    let out = run(&["--connect-to", "a:80:b:81", "http://127.0.0.1:9/"]);
    assert_eq!(out.status, 125);
    assert!(
        out.stderr.starts_with("retry: --connect-to: "),
        "{}",
        out.stderr
    );
    for says in [
        "--resolve HOST:PORT:ADDR",
        "the port stays the same",
        "Host: NAME",
    ] {
        assert!(out.stderr.contains(says), "{says}: {}", out.stderr);
    }
}
