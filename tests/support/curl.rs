//! Conformance with curl: runs the real `curl` and `retry` with the same
//! arguments, each against its own fresh recording server answering the same
//! way and each in its own working directory, and compares what the servers
//! received and what each client printed, as docs/internals.md ("curl's vocabulary")
//! judges it: the method, the path and query, the body bytes, the set of headers
//! (names case-insensitive; User-Agent's default value and a multipart boundary
//! excepted), the output bytes and the exit status. It drives `support::http_server`.
//!
//! In arguments, `{url}` stands for `http://127.0.0.1:PORT`, `{https}` for
//! `https://127.0.0.1:PORT`, `{port}` for PORT and `{dir}` for the side's own
//! working directory, each filled in per side.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use crate::support::http_server::{Reply, Request, Server};
use crate::support::run::Invocation;

/// What a side's server recorded; anything that listens and records can be one.
pub trait Recorder {
    fn requests(&self) -> Vec<Request>;
    /// The port `{port}` and `{url}` name, or 0 when there is none (a Unix socket).
    fn port(&self) -> u16;
}

impl Recorder for Server {
    fn requests(&self) -> Vec<Request> {
        Server::requests(self)
    }
    fn port(&self) -> u16 {
        Server::port(self)
    }
}

type Handler = dyn Fn(&Request, usize) -> Reply + Send + Sync;
/// Makes one side's server; the argument is that side's working directory.
type Factory = dyn Fn(&Path) -> Box<dyn Recorder>;

/// One comparison: the arguments both clients get, and how the servers answer.
pub struct Case {
    args: Vec<String>,
    retry_prefix: Vec<String>,
    files: Vec<(String, Vec<u8>)>,
    stdin: Option<Vec<u8>>,
    env: Vec<(String, String)>,
    factory: Arc<Factory>,
}

impl Case {
    /// `curl -q ARGS` against `retry PREFIX ARGS`; every request is answered
    /// `200 OK` with the body `ok` until `reply`, `replies` or `handler` say
    /// otherwise. The default PREFIX is `--delay 1ms --max-delay 5ms`.
    pub fn new(args: &[&str]) -> Case {
        Case {
            args: args.iter().map(|a| a.to_string()).collect(),
            retry_prefix: vec![
                "--delay".into(),
                "1ms".into(),
                "--max-delay".into(),
                "5ms".into(),
            ],
            files: Vec::new(),
            stdin: None,
            env: Vec::new(),
            factory: plain(Arc::new(|_, _| Reply::ok("ok"))),
        }
    }

    /// Every request gets this reply.
    pub fn reply(self, reply: Reply) -> Case {
        self.replies(vec![reply])
    }

    /// The nth request of a side gets `replies[n]`, the last one repeating.
    pub fn replies(self, replies: Vec<Reply>) -> Case {
        assert!(!replies.is_empty());
        self.handler(move |_, n| replies[n.min(replies.len() - 1)].clone())
    }

    /// The reply is computed from the request and its number on that side.
    pub fn handler(mut self, h: impl Fn(&Request, usize) -> Reply + Send + Sync + 'static) -> Case {
        self.factory = plain(Arc::new(h));
        self
    }

    /// Each side gets a server made by `make` (called with the side's directory).
    pub fn server<R: Recorder + 'static>(mut self, make: impl Fn(&Path) -> R + 'static) -> Case {
        self.factory = Arc::new(move |dir| Box::new(make(dir)));
        self
    }

    /// Replaces the arguments retry alone gets before ARGS.
    pub fn retry_args(mut self, prefix: &[&str]) -> Case {
        self.retry_prefix = prefix.iter().map(|a| a.to_string()).collect();
        self
    }

    /// A file created in each side's working directory before it runs.
    pub fn file(mut self, name: &str, contents: &[u8]) -> Case {
        self.files.push((name.into(), contents.to_vec()));
        self
    }

    /// Bytes given to both clients on stdin (otherwise stdin is /dev/null).
    pub fn stdin(mut self, bytes: &[u8]) -> Case {
        self.stdin = Some(bytes.to_vec());
        self
    }

    /// An environment variable set for both clients.
    pub fn env(mut self, name: &str, value: &str) -> Case {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Runs curl, then retry, each against a fresh server.
    pub fn run(&self) -> Compared {
        let curl = self.side("curl", &["-q"]);
        let retry = self.side(super::bin(), &self.retry_prefix);
        Compared { curl, retry }
    }

    fn side<S: AsRef<str>>(&self, program: &str, prefix: &[S]) -> Side {
        let dir = tempfile::tempdir().expect("tempdir");
        for (name, contents) in &self.files {
            std::fs::write(dir.path().join(name), contents).expect("write a case file");
        }
        let server = (self.factory)(dir.path());
        let port = server.port();
        let args: Vec<String> = self
            .args
            .iter()
            .map(|a| fill(a, port, dir.path()))
            .collect();
        let mut client = Invocation::of(program);
        client
            .args(prefix.iter().map(AsRef::as_ref))
            .args(&args)
            .current_dir(dir.path());
        for (name, value) in &self.env {
            client.env(name, value);
        }
        if let Some(bytes) = &self.stdin {
            client.input(bytes.clone());
        }
        let run = client.run();
        // The server records a request before answering it, so all are in.
        let requests = server.requests();
        drop(server);
        Side {
            program: program.to_string(),
            args,
            requests,
            port,
            status: run.status,
            stdout: run.stdout,
            stderr: run.stderr,
            dir,
        }
    }
}

fn plain(handler: Arc<Handler>) -> Arc<Factory> {
    Arc::new(move |_| {
        let handler = Arc::clone(&handler);
        Box::new(Server::handler(move |r, n| handler(r, n)))
    })
}

fn fill(arg: &str, port: u16, dir: &Path) -> String {
    arg.replace("{url}", &format!("http://127.0.0.1:{port}"))
        .replace("{https}", &format!("https://127.0.0.1:{port}"))
        .replace("{port}", &port.to_string())
        .replace("{dir}", &dir.to_string_lossy())
}

/// One client's run: what its server received and what it printed.
pub struct Side {
    pub program: String,
    /// The arguments after the prefix, placeholders filled in.
    pub args: Vec<String>,
    pub requests: Vec<Request>,
    pub port: u16,
    pub status: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
    /// The side's working directory, kept until the side is dropped.
    pub dir: tempfile::TempDir,
}

impl Side {
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A file the client left in its working directory, if any.
    pub fn file(&self, name: &str) -> Option<Vec<u8>> {
        std::fs::read(self.path(name)).ok()
    }

    /// The requests, normalised for comparison (see `Normal`).
    pub fn normal(&self) -> Vec<Normal> {
        self.requests
            .iter()
            .map(|r| Normal::of(r, self.port))
            .collect()
    }

    fn describe(&self) -> String {
        format!(
            "{} {:?}\nexit {}\nstderr: {}",
            self.program, self.args, self.status, self.stderr
        )
    }
}

/// A request as conformance judges it: the port replaced by `PORT` (each side
/// has its own server), header names lower-cased and sorted, a default
/// User-Agent (`curl/…` or `retry/…`) replaced by `<default>`, and a multipart
/// boundary replaced by `<boundary>` in Content-Type and body alike, with
/// Content-Length then taken from the normalised body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Normal {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Normal {
    pub fn of(request: &Request, port: u16) -> Normal {
        let port_text = port.to_string();
        let unport = |s: &str| {
            if port == 0 {
                s.to_string()
            } else {
                s.replace(&format!(":{port_text}"), ":PORT")
            }
        };
        let mut body = request.body.clone();
        let boundary = request
            .header("content-type")
            .and_then(|ct| ct.split_once("boundary="))
            .map(|(_, b)| b.trim_matches('"').to_string());
        if let Some(boundary) = &boundary {
            body = replace_bytes(&body, boundary.as_bytes(), b"<boundary>");
        }
        let mut headers: Vec<(String, String)> = request
            .headers
            .iter()
            .map(|(k, v)| {
                let name = k.to_ascii_lowercase();
                let value = match name.as_str() {
                    "user-agent" if v.starts_with("curl/") || v.starts_with("retry/") => {
                        "<default>".to_string()
                    }
                    "content-type" => match &boundary {
                        Some(b) => v.replace(b.as_str(), "<boundary>"),
                        None => v.clone(),
                    },
                    "content-length" if boundary.is_some() => body.len().to_string(),
                    _ => unport(v),
                };
                (name, value)
            })
            .collect();
        headers.sort();
        Normal {
            method: request.method.clone(),
            target: unport(&request.target),
            headers,
            body,
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A copy without the named headers (for a documented, deliberate difference).
    pub fn without(&self, names: &[&str]) -> Normal {
        let mut out = self.clone();
        out.headers
            .retain(|(k, _)| !names.iter().any(|n| n.eq_ignore_ascii_case(k)));
        out
    }
}

fn replace_bytes(haystack: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    if needle.is_empty() {
        return haystack.to_vec();
    }
    let mut out = Vec::with_capacity(haystack.len());
    let mut i = 0;
    while i < haystack.len() {
        if haystack[i..].starts_with(needle) {
            out.extend_from_slice(with);
            i += needle.len();
        } else {
            out.push(haystack[i]);
            i += 1;
        }
    }
    out
}

/// Both sides of one comparison.
pub struct Compared {
    pub curl: Side,
    pub retry: Side,
}

impl Compared {
    /// Same requests (see `Normal`), same stdout bytes, same exit status.
    pub fn assert_same(&self) {
        self.assert_same_requests();
        self.assert_same_output();
    }

    /// Same number of requests, each the same once normalised.
    pub fn assert_same_requests(&self) {
        self.assert_same_requests_except(&[]);
    }

    /// As `assert_same_requests`, ignoring the named headers on both sides.
    pub fn assert_same_requests_except(&self, headers: &[&str]) {
        let without = |side: &Side| -> Vec<Normal> {
            side.normal().iter().map(|n| n.without(headers)).collect()
        };
        let (curl, retry) = (without(&self.curl), without(&self.retry));
        assert!(
            !curl.is_empty(),
            "curl sent no request\n{}",
            self.curl.describe()
        );
        assert_eq!(
            curl.len(),
            retry.len(),
            "number of requests\ncurl: {curl:#?}\nretry: {retry:#?}\n{}\n{}",
            self.curl.describe(),
            self.retry.describe()
        );
        for (c, r) in curl.iter().zip(&retry) {
            assert_same_request(c, r);
        }
    }

    /// Same stdout bytes and exit status.
    pub fn assert_same_output(&self) {
        assert_eq!(
            self.curl.status,
            self.retry.status,
            "exit status\n{}\n{}",
            self.curl.describe(),
            self.retry.describe()
        );
        assert!(
            self.curl.stdout == self.retry.stdout,
            "stdout differs\ncurl:  {:?}\nretry: {:?}\n{}",
            String::from_utf8_lossy(&self.curl.stdout),
            String::from_utf8_lossy(&self.retry.stdout),
            self.retry.describe()
        );
    }

    /// The first request of each side, normalised.
    pub fn first(&self) -> (Normal, Normal) {
        let curl = self.curl.normal();
        let retry = self.retry.normal();
        assert!(
            !curl.is_empty(),
            "curl sent no request\n{}",
            self.curl.describe()
        );
        assert!(
            !retry.is_empty(),
            "retry sent no request\n{}",
            self.retry.describe()
        );
        (curl[0].clone(), retry[0].clone())
    }
}

/// Method, target, header set and body bytes equal, with a readable diff.
pub fn assert_same_request(curl: &Normal, retry: &Normal) {
    assert_eq!(curl.method, retry.method, "method");
    assert_eq!(curl.target, retry.target, "path and query");
    assert_eq!(
        curl.headers, retry.headers,
        "headers (left curl, right retry)"
    );
    assert!(
        curl.body == retry.body,
        "body differs\ncurl:  {:?}\nretry: {:?}",
        String::from_utf8_lossy(&curl.body),
        String::from_utf8_lossy(&retry.body)
    );
}

/// Whether `curl` runs here; tests that need it fail without it (CI installs it).
pub fn require_curl() {
    let ok = Command::new("curl")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "these tests need curl on PATH (.ci/run installs it)");
}
