//! HTTP mode: sends one attempt of the request with reqwest on a current-thread
//! tokio runtime that exists only here, classifies how it ended (status,
//! transport failure, method safety), reads the waits the server asks for, and
//! holds the body until the engine says which attempt is final. The rules are
//! tables in `classify::http`; header parsing is `exec::http_headers`.

mod body;
pub mod curl;
mod errors;
mod output;
mod request;

use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::{Response, Url};

use crate::classify::http::{EXIT_HTTP_ERROR, HttpRules, StatusFacts, Transport};
use crate::classify::{Class, Verdict};
use crate::cli::Cli;
use crate::engine::{AttemptContext, AttemptReport, Executor, Outcome, WaitHint};
use crate::exec::RunInfo;
use crate::exec::http_headers;
use crate::parse::human;
use crate::{report, signals};

use errors::{Phase, TooManyRedirects};
use output::{Body, Destination, Held};
use request::{RequestSpec, describe_headers, display_url};

/// How often a running attempt checks for a stopping signal.
const SIGNAL_POLL: Duration = Duration::from_millis(20);
/// How much of an error body is read for the stderr message, and how long for.
const EXCERPT_BYTES: usize = 1024;
const EXCERPT_CHARS: usize = 200;
const EXCERPT_WAIT: Duration = Duration::from_secs(1);

pub struct HttpExecutor {
    // Boxed: the executor sits in an enum beside the command executor.
    runtime: Box<tokio::runtime::Runtime>,
    client: reqwest::Client,
    spec: Box<RequestSpec>,
    rules: HttpRules,
    destination: Destination,
    include: bool,
    held: Held,
    max_redirs: u32,
    max_retry_after: Duration,
    connect_timeout: Option<Duration>,
    /// What curl's request options change, for `--dry-run`.
    curl_notes: Vec<String>,
}

impl HttpExecutor {
    pub fn new(cli: &Cli, url: &str, info: &RunInfo) -> anyhow::Result<Self> {
        let destination = Destination::new(cli.output.as_deref())?;
        let spec = RequestSpec::new(cli, url, info)?;
        let rules = HttpRules {
            retry_on_status: cli.retry_on_status.clone(),
            stop_on_status: cli.stop_on_status.clone(),
            method: spec.method.to_string(),
            key_in_use: spec.key_in_use(),
            retry_unsafe: cli.retry_unsafe,
        };
        // reqwest is built without a default crypto provider; another part of
        // the program may have installed it already, which is just as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the HTTP runtime")?;
        let client = {
            let _guard = runtime.enter();
            build_client(cli, spec.url.as_ref().ok())?
        };
        Ok(HttpExecutor {
            runtime: Box::new(runtime),
            client,
            spec: Box::new(spec),
            rules,
            destination,
            include: cli.include,
            held: Held::Nothing,
            max_redirs: cli.max_redirs,
            max_retry_after: cli.max_retry_after,
            connect_timeout: cli.connect_timeout,
            curl_notes: curl::describe(cli),
        })
    }

    /// The classification rules in force, for `--dry-run`.
    pub fn rules(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Err(e) = &self.spec.url {
            out.push(format!("{e}: permanent (exit 3)"));
        }
        out.extend(self.rules.describe());
        out.push(format!(
            "Retry-After (and on 429 RateLimit-Reset, X-RateLimit-Reset, RateLimit t=) is obeyed up to {} \
             (--max-retry-after); a longer wait ends the run",
            human(self.max_retry_after)
        ));
        out.push(match self.max_redirs {
            0 => "redirects are not followed (--max-redirs 0): a 3xx response is the result".into(),
            n => format!(
                "up to {n} redirects followed; Authorization and Cookie are not sent to another host"
            ),
        });
        if let Some(t) = self.connect_timeout {
            out.push(format!(
                "connecting is limited to {} (--connect-timeout)",
                human(t)
            ));
        }
        out.extend(self.curl_notes.iter().cloned());
        if let Some(name) = &self.spec.key_header {
            out.push(format!(
                "header {name} carries the idempotency key on every attempt"
            ));
        }
        out.push(match &self.destination {
            Destination::Stdout => {
                "output: the final successful body goes to stdout once; nothing on failure".into()
            }
            Destination::Special(path) => format!(
                "output: written to {} after success (not a regular file, so not renamed over)",
                path.display()
            ),
            Destination::File { path, .. } => format!(
                "output: {} is replaced atomically after success and left untouched on failure",
                path.display()
            ),
        });
        out
    }

    fn log_request(&self, url: &Url) {
        let values = report::config().level >= 2;
        let body = self
            .spec
            .body
            .as_ref()
            .map(|b| format!("; body {} bytes", b.len()))
            .unwrap_or_default();
        report::verbose(
            1,
            &format!(
                "request: {} {} (headers: {}{body})",
                self.spec.method,
                display_url(url),
                describe_headers(&self.spec.headers, values)
            ),
        );
    }

    fn transport_report(&self, kind: Transport, message: String) -> AttemptReport {
        let (verdict, exit_code) = self.rules.transport(kind);
        let name = crate::classify::http::transport_row(kind).name;
        AttemptReport::new(
            Outcome::Error {
                kind: name.into(),
                message,
            },
            verdict,
            exit_code,
        )
    }
}

/// The URL as it may be shown: any password as `***`; unparsable text as given.
pub fn shown_url(url: &str) -> String {
    match Url::parse(url) {
        Ok(parsed) if parsed.password().is_some() => display_url(&parsed),
        _ => url.to_string(),
    }
}

fn build_client(cli: &Cli, url: Option<&Url>) -> anyhow::Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        .redirect(redirect_policy(cli.max_redirs))
        .referer(false)
        .tls_danger_accept_invalid_certs(cli.insecure);
    if let Some(t) = cli.connect_timeout {
        builder = builder.connect_timeout(t);
    }
    builder = curl::client(cli, url, builder)?;
    builder.build().context("cannot set up the HTTP client")
}

/// Follows up to `max` redirects (0: none, the 3xx is the answer). reqwest
/// drops Authorization, Cookie and Proxy-Authorization on every redirect to
/// another host, port or scheme, whatever the policy.
fn redirect_policy(max: u32) -> reqwest::redirect::Policy {
    if max == 0 {
        return reqwest::redirect::Policy::none();
    }
    reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() > max as usize {
            return attempt.error(TooManyRedirects { max });
        }
        report::verbose(
            1,
            &format!(
                "redirect: {} to {}",
                attempt.status().as_u16(),
                display_url(attempt.url())
            ),
        );
        attempt.follow()
    })
}

/// How one attempt ended, before it becomes a report.
enum Attempted {
    Response {
        status: u16,
        verdict: Verdict,
        hint: Option<WaitHint>,
        held: Held,
    },
    Failed {
        kind: Transport,
        message: String,
    },
}

enum Ended {
    Done(Attempted),
    TimedOut,
    Signal(i32),
}

/// What one attempt needs, borrowed from the executor.
struct Exchange<'a> {
    client: &'a reqwest::Client,
    spec: &'a RequestSpec,
    url: Url,
    rules: &'a HttpRules,
    destination: &'a Destination,
    include: bool,
}

impl Exchange<'_> {
    async fn run(&self) -> Attempted {
        let mut request = self
            .client
            .request(self.spec.method.clone(), self.url.clone())
            .headers(self.spec.headers.clone());
        if let Some(body) = &self.spec.body {
            request = request.body(body.clone());
        }
        let mut response = match request.send().await {
            Ok(response) => response,
            Err(e) => return failed(&e, Phase::Send, &self.url),
        };
        let status = response.status().as_u16();
        log_response(&response);
        let (facts, hint) = server_wait(response.headers(), status, SystemTime::now());
        let verdict = self.rules.status(&facts);
        let held = if verdict.class == Class::Success {
            match self.receive(&mut response).await {
                Ok(body) => Held::Body(body),
                Err(failure) => return failure,
            }
        } else {
            Held::Failed {
                status,
                excerpt: read_excerpt(&mut response).await,
            }
        };
        let hint = hint.filter(|_| verdict.class == Class::Transient);
        if let Some(hint) = &hint {
            report::verbose(
                1,
                &format!(
                    "the server asked to wait {} ({})",
                    human(hint.wait),
                    hint.source
                ),
            );
        }
        Attempted::Response {
            status,
            verdict,
            hint,
            held,
        }
    }

    /// Streams the body into a fresh holder, chunk by chunk: memory stays
    /// bounded whatever the size.
    async fn receive(&self, response: &mut Response) -> Result<Body, Attempted> {
        let local = |e: std::io::Error| Attempted::Failed {
            kind: Transport::LocalWrite,
            message: format!("cannot hold the response body: {e}"),
        };
        let mut body = self.destination.holder().map_err(local)?;
        if self.include {
            body.write(&head(response)).map_err(local)?;
        }
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => body.write(&chunk).map_err(local)?,
                Ok(None) => return Ok(body),
                Err(e) => {
                    let mut failure = failed(&e, Phase::Body, &self.url);
                    if let Attempted::Failed { message, .. } = &mut failure {
                        message.push_str(&format!(" (after {} bytes)", body.len()));
                    }
                    return Err(failure);
                }
            }
        }
    }
}

fn failed(err: &reqwest::Error, phase: Phase, url: &Url) -> Attempted {
    let kind = errors::transport_kind(err, phase, url.scheme() == "https");
    let mut message = errors::message(err);
    if phase == Phase::Send && kind != Transport::TooManyRedirects {
        // Name the server: after redirects or through a proxy it may not be the one asked for.
        let host = err.url().unwrap_or(url);
        let port = host.port_or_known_default().unwrap_or(0);
        message = format!("{}:{port}: {message}", host.host_str().unwrap_or("?"));
    }
    Attempted::Failed { kind, message }
}

async fn attempt_within(exchange: Exchange<'_>, timeout: Option<Duration>) -> Ended {
    let bounded = async {
        match timeout {
            Some(t) => tokio::time::timeout(t, exchange.run()).await.ok(),
            None => Some(exchange.run().await),
        }
    };
    tokio::select! {
        done = bounded => done.map_or(Ended::TimedOut, Ended::Done),
        signal = stopping_signal() => Ended::Signal(signal),
    }
}

async fn stopping_signal() -> i32 {
    loop {
        if let Some(signal) = signals::pending() {
            return signal;
        }
        tokio::time::sleep(SIGNAL_POLL).await;
    }
}

/// The status line and headers as received, for -i.
fn head(response: &Response) -> Vec<u8> {
    let status = response.status();
    let mut out = format!(
        "{:?} {} {}\r\n",
        response.version(),
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    )
    .into_bytes();
    for (name, value) in response.headers() {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out
}

fn log_response(response: &Response) {
    let values = report::config().level >= 2;
    report::verbose(
        1,
        &format!(
            "response: {:?} {} from {} (headers: {})",
            response.version(),
            response.status(),
            display_url(response.url()),
            describe_headers(response.headers(), values)
        ),
    );
}

/// The start of an error body, read briefly; whatever arrived is enough.
async fn read_excerpt(response: &mut Response) -> String {
    let mut bytes = Vec::new();
    let read = async {
        while bytes.len() < EXCERPT_BYTES {
            match response.chunk().await {
                Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(EXCERPT_WAIT, read).await;
    bytes.truncate(EXCERPT_BYTES);
    output::excerpt(&bytes, EXCERPT_CHARS)
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The wait the server asked for, as the engine will quote it.
fn hint(name: &str, value: &str, wait: Duration) -> WaitHint {
    let value: String = value.trim().chars().take(100).collect();
    WaitHint {
        wait,
        source: format!("{name}: {value}"),
    }
}

/// Reads the rate-limit facts and the requested wait from a response's
/// headers. Retry-After comes first; the rate-limit reset headers count on 429
/// and on a rate-limited 403 only.
fn server_wait(
    headers: &HeaderMap,
    status: u16,
    now: SystemTime,
) -> (StatusFacts, Option<WaitHint>) {
    let rate_limited = status == 403
        && ["x-ratelimit-remaining", "ratelimit-remaining"]
            .iter()
            .any(|n| header(headers, n).and_then(http_headers::rate_limit_remaining) == Some(0));
    let mut facts = StatusFacts {
        status,
        retry_after: false,
        rate_limited,
    };
    if let Some(raw) = headers.get(RETRY_AFTER) {
        let text = String::from_utf8_lossy(raw.as_bytes());
        match http_headers::retry_after(&text, now) {
            Some(wait) => {
                facts.retry_after = true;
                if wait.is_zero() {
                    report::verbose(1, &format!("Retry-After: {text} asks for no wait"));
                    return (facts, None);
                }
                return (facts, Some(hint("Retry-After", &text, wait)));
            }
            None => report::verbose(
                1,
                &format!("ignored a malformed Retry-After: {}", text.trim()),
            ),
        }
    }
    if status != 429 && !rate_limited {
        return (facts, None);
    }
    for name in ["RateLimit-Reset", "X-RateLimit-Reset"] {
        if let Some(value) = header(headers, name) {
            match http_headers::rate_limit_reset(value, now) {
                Some(wait) if !wait.is_zero() => return (facts, Some(hint(name, value, wait))),
                _ => {}
            }
        }
    }
    let field =
        header(headers, "RateLimit").and_then(|v| Some((v, http_headers::rate_limit_field(v)?)));
    if let Some((value, wait)) = field.filter(|(_, w)| !w.is_zero()) {
        return (facts, Some(hint("RateLimit", value, wait)));
    }
    (facts, None)
}

impl Executor for HttpExecutor {
    fn attempt(&mut self, ctx: &AttemptContext) -> anyhow::Result<AttemptReport> {
        self.held = Held::Nothing;
        let url = match &self.spec.url {
            Ok(url) => url.clone(),
            Err(message) => return Ok(self.transport_report(Transport::BadUrl, message.clone())),
        };
        self.log_request(&url);
        let exchange = Exchange {
            client: &self.client,
            spec: &self.spec,
            url,
            rules: &self.rules,
            destination: &self.destination,
            include: self.include,
        };
        let started = Instant::now();
        let ended = self.runtime.block_on(attempt_within(exchange, ctx.timeout));
        Ok(match ended {
            Ended::Done(Attempted::Response {
                status,
                verdict,
                hint,
                held,
            }) => {
                let exit_code = if verdict.class == Class::Success {
                    0
                } else {
                    EXIT_HTTP_ERROR
                };
                self.held = held;
                let mut report = AttemptReport::new(Outcome::Http { status }, verdict, exit_code);
                report.wait_hint = hint;
                report
            }
            Ended::Done(Attempted::Failed { kind, message }) => {
                self.transport_report(kind, message)
            }
            Ended::TimedOut => {
                let (verdict, exit_code) = self.rules.transport(Transport::Timeout);
                let after_ms = started.elapsed().as_millis() as u64;
                let mut report =
                    AttemptReport::new(Outcome::Timeout { after_ms }, verdict, exit_code);
                report.budget_expired = ctx.timeout_is_budget;
                report
            }
            Ended::Signal(signal) => {
                let name = crate::classify::command::signal_name(signal);
                let mut report = AttemptReport::new(
                    Outcome::Error {
                        kind: "interrupted".into(),
                        message: format!("interrupted by {name}"),
                    },
                    Verdict::permanent(format!("retry received {name}")),
                    128 + signal,
                );
                report.interrupted_by = Some(signal);
                report
            }
        })
    }

    fn deliver(&mut self) -> anyhow::Result<()> {
        std::mem::take(&mut self.held).deliver(&self.destination)
    }

    fn discard(&mut self) {
        self.held = Held::Nothing;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(*k, HeaderValue::from_static(v));
        }
        map
    }

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)
    }

    #[test]
    fn retry_after_wins_over_rate_limit_headers() {
        let h = headers(&[("retry-after", "7"), ("x-ratelimit-reset", "60")]);
        let (facts, hint) = server_wait(&h, 429, now());
        assert!(facts.retry_after);
        let hint = hint.unwrap();
        assert_eq!(hint.wait, Duration::from_secs(7));
        assert_eq!(hint.source, "Retry-After: 7");
    }

    #[test]
    fn rate_limit_reset_counts_on_429_and_limited_403_only() {
        let h = headers(&[
            ("x-ratelimit-reset", "1700000030"),
            ("x-ratelimit-remaining", "0"),
        ]);
        assert_eq!(
            server_wait(&h, 429, now()).1.unwrap().wait,
            Duration::from_secs(30)
        );
        let (facts, hint) = server_wait(&h, 403, now());
        assert!(facts.rate_limited);
        assert_eq!(hint.unwrap().source, "X-RateLimit-Reset: 1700000030");
        assert!(server_wait(&h, 503, now()).1.is_none());
        let field = headers(&[("ratelimit", "\"default\";r=0;t=12")]);
        assert_eq!(
            server_wait(&field, 429, now()).1.unwrap().wait,
            Duration::from_secs(12)
        );
    }

    #[test]
    fn malformed_or_past_retry_after_gives_no_hint() {
        let bad = headers(&[("retry-after", "tomorrow")]);
        let (facts, hint) = server_wait(&bad, 503, now());
        assert!(!facts.retry_after && hint.is_none());
        let past = headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")]);
        let (facts, hint) = server_wait(&past, 503, now());
        assert!(facts.retry_after && hint.is_none());
    }
}
