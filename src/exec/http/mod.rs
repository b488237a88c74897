//! HTTP mode: sends one attempt of the request with reqwest on the thread's
//! current-thread tokio runtime ([`wait::on_runtime`](crate::wait::on_runtime)), classifies how it ended (status,
//! transport failure, method safety), reads the waits the server asks for, and
//! holds the body until the engine says which attempt is final. One attempt's
//! requests and body are [`exchange`]'s; the rules are tables in [`classify::http`](crate::classify::http);
//! header parsing is `headers`'. What to send and how comes typed from
//! [`config::http`](crate::config::http); this module never sees clap.

mod client;
mod errors;
mod exchange;
mod output;
mod redirect;
mod request;
mod resume;
mod scan;
mod tls;
mod writeout;

use std::cell::RefCell;
use std::time::{Duration, Instant};

use reqwest::Url;

use crate::classify::command::OutputWatch;
use crate::classify::profiles;
use crate::classify::{
    endings, http::EXIT_HTTP_ERROR, http::HttpRules, http::Transport, server_wait,
};
use crate::config::{
    RunInfo, http::Destination, http::HttpConfig, http::HttpVersion, http::OutputOptions,
    http::Payload, http::Request,
};
use crate::domain::{Class, ExitStatus, Outcome, Protocols, Signal, human, one_line, redact_url};
use crate::exec::{AttemptContext, AttemptReport, Description, Executor};
use crate::{report, signals};

use exchange::{Attempted, Exchange};
use output::HeldResponse;
use request::{describe_headers, display_url};
use resume::Resume;
use writeout::{Ending, Transfer};

/// How often a running attempt checks for a stopping signal.
const SIGNAL_POLL: Duration = Duration::from_millis(20);

pub struct HttpExecutor {
    /// `HTTP METHOD URL` (user information redacted), for the dry run.
    target: String,
    client: reqwest::Client,
    spec: Box<Request>,
    rules: HttpRules,
    destination: Destination,
    include: bool,
    held: HeldResponse,
    max_redirs: u32,
    max_retry_after: Duration,
    connect_timeout: Option<Duration>,
    output: Box<OutputOptions>,
    /// `-C -`: the part kept between attempts.
    resume: Option<Resume>,
    /// What the latest attempt left for -w and -D.
    transfer: Box<RefCell<Transfer>>,
    /// How the latest attempt ended: exit status, error message, its number.
    ending: (ExitStatus, String, u32),
    /// What curl's request options change, for `--dry-run`.
    curl_notes: Vec<String>,
    /// `Host` goes first: every request but HTTP/2 with prior knowledge may be HTTP/1.1.
    host_first: bool,
    /// The output rules, matched against each response body's lines.
    body_watch: Option<OutputWatch>,
}

impl HttpExecutor {
    /// Builds the client on this thread's runtime; `info` holds the run's idempotency key.
    pub fn new(config: HttpConfig, info: &RunInfo) -> anyhow::Result<Self> {
        let rules = rules(&config);
        let body_watch = config
            .body_rules
            .any()
            .then(|| OutputWatch::new(config.body_rules.clone(), &profiles::GENERIC))
            .transpose()?;
        let spec = config.request.with_run_key(&info.idempotency_key)?;
        // reqwest is built without a default crypto provider; another part of
        // the program may have installed it already, which is just as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = crate::wait::in_runtime(|| client::build(&config.client))?;
        Ok(HttpExecutor {
            // The URL as it will be sent: -G's query and -T's file name included.
            target: format!(
                "HTTP {} {}",
                spec.method,
                spec.url
                    .as_ref()
                    .map_or_else(|_| one_line(&redact_url(&config.url)).into(), display_url)
            ),
            client,
            curl_notes: client::describe(&config.client, spec.shown_user.as_deref()),
            rules,
            spec: Box::new(spec),
            destination: config.destination,
            include: config.include,
            held: HeldResponse::Nothing,
            max_redirs: config.max_redirs,
            max_retry_after: config.max_retry_after,
            connect_timeout: config.client.connect_timeout,
            resume: config.output.resume.then(Resume::default),
            output: Box::new(config.output),
            transfer: Box::default(),
            ending: (ExitStatus::SUCCESS, String::new(), 0),
            body_watch,
            host_first: !matches!(
                config.client.version,
                HttpVersion::Http2 {
                    prior_knowledge: true
                }
            ),
        })
    }

    /// The classification rules in force, for `--dry-run`.
    fn rules(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Err(e) = &self.spec.url {
            out.push(format!("{}: permanent (exit 3)", one_line(e)));
        }
        if let Some(watch) = &self.body_watch {
            out.extend(watch.describe("the response body (its first MiB)"));
        }
        out.extend(self.rules.describe());
        out.push(format!(
            "a wait the server asks for is obeyed up to {} (--max-retry-after); a longer wait ends the run",
            human(self.max_retry_after)
        ));
        out.extend(server_wait::describe());
        out.push(match self.max_redirs {
            0 => "redirects are not followed (--max-redirs 0): a 3xx response is the result".into(),
            n => format!(
                "up to {n} redirects followed; Authorization and Cookie are not sent to another host"
            ),
        });
        if self.spec.protocols != Protocols::ALL || self.spec.redirect_protocols != Protocols::ALL {
            out.push(format!(
                "the URL may use {} (--proto), a redirect {} (--proto-redir); another is exit 1, permanent",
                self.spec.protocols.describe(),
                self.spec.redirect_protocols.describe()
            ));
        }
        if let Some(t) = self.connect_timeout {
            out.push(format!(
                "connecting is limited to {} (--connect-timeout)",
                human(t)
            ));
        }
        out.extend(self.curl_notes.iter().cloned());
        if let Some(body @ Payload::Upload(_)) = &self.spec.body {
            out.push(format!(
                "{} (-T): sent from its start on every attempt, with Content-Length and no \
                 Content-Type unless -H gives one",
                body.describe()
            ));
        }
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
        if self.resume.is_some() {
            out.push(
                "a body cut off is kept and the next attempt asks for the rest (-C -: Range, If-Range)"
                    .into(),
            );
        }
        if self.output.fail_with_body {
            out.push("on giving up with a status >= 400, that response's body is output (--fail-with-body)".into());
        }
        out
    }

    fn log_request(&self, url: &Url) {
        let values = report::config().level >= 2;
        let body = self
            .spec
            .body
            .as_ref()
            .map(|b| format!("; {}", b.describe()))
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

/// The classification rules for the request: its method, and whether it carries an
/// idempotency key.
fn rules(config: &HttpConfig) -> HttpRules {
    HttpRules {
        retry_on_status: config.retry_on_status.clone(),
        stop_on_status: config.stop_on_status.clone(),
        method: config.request.method.clone(),
        key_in_use: config.request.key_header.is_some(),
        retry_unsafe: config.retry_unsafe,
        retry_all_errors: config.retry_all_errors,
    }
}

enum Ended {
    Done(Attempted),
    TimedOut,
    Signal(Signal),
    /// A lock the run holds was lost: the request is abandoned.
    LockLost(String),
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
        lost = lost_lock() => Ended::LockLost(lost),
    }
}

async fn stopping_signal() -> Signal {
    loop {
        if let Some(signal) = signals::pending() {
            return signal;
        }
        tokio::time::sleep(SIGNAL_POLL).await;
    }
}

async fn lost_lock() -> String {
    loop {
        if let Some(lost) = signals::lock_lost() {
            return lost;
        }
        tokio::time::sleep(SIGNAL_POLL).await;
    }
}

impl Executor for HttpExecutor {
    fn attempt(&mut self, ctx: &AttemptContext) -> anyhow::Result<AttemptReport> {
        self.held = HeldResponse::Nothing;
        *self.transfer.borrow_mut() = Transfer {
            method: self.spec.method.to_string(),
            url: self.spec.url.as_ref().map(display_url).unwrap_or_default(),
            ..Transfer::default()
        };
        let started = Instant::now();
        let report = self.attempt_once(ctx)?;
        self.transfer.borrow_mut().elapsed = started.elapsed();
        self.ending = (report.exit_code, error_message(&report), ctx.number);
        Ok(report)
    }

    fn deliver(&mut self) -> anyhow::Result<()> {
        let transfer = self.transfer.take();
        if let Some(path) = &self.output.dump_header {
            writeout::dump_headers(path, &transfer.heads)?;
        }
        std::mem::take(&mut self.held).deliver(&self.destination)?;
        if let Some(format) = &self.output.write_out {
            let (exit_code, error, number) = &self.ending;
            let ending = Ending {
                exit_code: *exit_code,
                error,
                retries: number.saturating_sub(1),
            };
            if let Err(e) = writeout::write(format, &transfer, &ending) {
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    return Err(anyhow::Error::new(e).context("-w/--write-out: cannot write"));
                }
            }
        }
        Ok(())
    }

    fn discard(&mut self) {
        self.held = HeldResponse::Nothing;
    }

    fn describe(&self) -> Description {
        Description {
            target: self.target.clone(),
            notes: Vec::new(),
            rules: self.rules(),
        }
    }
}

impl HttpExecutor {
    /// One attempt; `Err` only for retry's own failure (exit 125).
    fn attempt_once(&mut self, ctx: &AttemptContext) -> anyhow::Result<AttemptReport> {
        let url = match &self.spec.url {
            Ok(url) => url.clone(),
            Err(message) => return Ok(self.transport_report(Transport::BadUrl, message.clone())),
        };
        if !self.spec.protocols.allows(url.scheme()) {
            let message = format!(
                "the URL uses {}, and --proto permits {}",
                url.scheme(),
                self.spec.protocols.describe()
            );
            return Ok(self.transport_report(Transport::UnsupportedProtocol, message));
        }
        self.log_request(&url);
        if let (1, Some(resume)) = (ctx.number, &self.resume) {
            resume.adopt(&self.destination).map_err(|e| {
                anyhow::anyhow!("-C/--continue-at: cannot read the -o file to resume from: {e}")
            })?;
        }
        let exchange = Exchange {
            client: &self.client,
            spec: &self.spec,
            url,
            rules: &self.rules,
            destination: &self.destination,
            include: self.include,
            max_redirs: self.max_redirs,
            fail_with_body: self.output.fail_with_body,
            resume: self.resume.as_ref(),
            transfer: &self.transfer,
            host_first: self.host_first,
            body_watch: self.body_watch.as_ref(),
            span: ctx.span.as_ref().filter(|_| !self.spec.own_traceparent),
        };
        let started = Instant::now();
        let ended = crate::wait::on_runtime(attempt_within(exchange, ctx.timeout));
        Ok(match ended {
            Ended::Done(Attempted::Response {
                status,
                verdict,
                hint,
                held,
            }) => {
                let exit_code = if verdict.class == Class::Success {
                    ExitStatus::SUCCESS
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
            Ended::Done(Attempted::Fault(message)) => anyhow::bail!("{message}"),
            Ended::TimedOut => {
                let (verdict, exit_code) = self.rules.transport(Transport::Timeout);
                let after_ms = started.elapsed().as_millis() as u64;
                let mut report = AttemptReport::new(
                    Outcome::Timeout {
                        after_ms,
                        killed_after_ms: None,
                    },
                    verdict,
                    exit_code,
                );
                report.out_of_time = ctx.cut_by_time_limit;
                report
            }
            Ended::Signal(signal) => {
                let name = signal.name();
                let mut report = AttemptReport::new(
                    Outcome::Error {
                        kind: "interrupted".into(),
                        message: format!("interrupted by {name}"),
                    },
                    endings::INTERRUPTED_REQUEST.verdict(&[("signal", &name)]),
                    ExitStatus::of_signal(signal),
                );
                report.interrupted_by = Some(signal);
                report
            }
            Ended::LockLost(lost) => {
                let mut report = AttemptReport::new(
                    Outcome::Error {
                        kind: "lock_lost".into(),
                        message: format!("abandoned: {lost}"),
                    },
                    endings::LOCK_LOST_REQUEST.verdict(&[("lost", &lost)]),
                    ExitStatus::USAGE,
                );
                report.lock_lost = Some(lost);
                report
            }
        })
    }
}

/// curl's %{errormsg}: empty on success.
fn error_message(report: &AttemptReport) -> String {
    match &report.outcome {
        _ if report.exit_code.is_success() => String::new(),
        Outcome::Http { status } => format!("The requested URL returned error: {status}"),
        outcome => outcome.describe(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules_take_the_method_and_key_of_the_request() {
        let cli = crate::cli::parse([
            "retry",
            "-X",
            "patch",
            "--idempotency-key",
            "auto",
            "https://h/p",
        ])
        .expect("the flags parse");
        let log = crate::config::log_config(&cli);
        let config = crate::config::Config::from_cli(cli, &log).expect("a valid configuration");
        let crate::config::TargetConfig::Http(http) = config.target else {
            panic!("HTTP mode");
        };
        let rules = rules(&http);
        assert_eq!(rules.method, reqwest::Method::PATCH);
        assert!(rules.key_in_use);
    }
}
