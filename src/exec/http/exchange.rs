//! One attempt's exchange: the request (and the hops of a redirect chain, each
//! shown for -i and -D), the status classified, and the body streamed into its
//! holder. With `-C -` it asks for the rest of a kept part, and when the answer is
//! not provably that rest it fetches the whole body again, in the same attempt.

use std::cell::RefCell;
use std::time::{Duration, SystemTime};

use reqwest::header::{CONTENT_LENGTH, IF_RANGE, RANGE};
use reqwest::{RequestBuilder, Response, StatusCode, Url};

use super::errors::{self, Phase};
use super::output;
use super::output::{Body, HeldResponse};
use super::redirect::{Follow, Hop};
use super::request::{describe_headers, display_url, with_host_first};
use super::resume::{Asked, Resume};
use super::scan::BodyScan;
use super::writeout::Transfer;
use crate::classify::command::OutputWatch;
use crate::classify::{http::HttpRules, http::Transport, server_wait};
use crate::config::{http::Destination, http::Payload, http::Request};
use crate::domain::{Class, SpanContext, Verdict, WaitHint, human};
use crate::report;
use crate::spool::SpillError;

/// How much of an error body is read for the stderr message, and how long for.
const EXCERPT_BYTES: usize = 1024;
const EXCERPT_CHARS: usize = 200;
const EXCERPT_WAIT: Duration = Duration::from_secs(1);

/// How one attempt ended, before it becomes a report.
pub enum Attempted {
    Response {
        status: u16,
        verdict: Verdict,
        hint: Option<WaitHint>,
        held: HeldResponse,
    },
    Failed {
        kind: Transport,
        message: String,
    },
    /// retry's own failure (a body spool that could not spill): exit 125.
    Fault(String),
}

/// What one attempt needs, borrowed from the executor.
pub struct Exchange<'a> {
    pub client: &'a reqwest::Client,
    pub spec: &'a Request,
    pub url: Url,
    pub rules: &'a HttpRules,
    pub destination: &'a Destination,
    pub include: bool,
    pub max_redirs: u32,
    pub fail_with_body: bool,
    pub resume: Option<&'a Resume>,
    pub transfer: &'a RefCell<Transfer>,
    /// Send `Host` first (HTTP/1.1; HTTP/2 carries the host as `:authority`).
    pub host_first: bool,
    /// The output rules, when given: every body is read and its lines judged.
    pub body_watch: Option<&'a OutputWatch>,
    /// The attempt's span, sent as `traceparent` (and `tracestate`), when the run is
    /// traced and no `-H traceparent` line was given.
    pub span: Option<&'a SpanContext>,
}

impl Exchange<'_> {
    pub async fn run(&self) -> Attempted {
        let mut asked = self.resume.and_then(Resume::range);
        let (mut response, heads) = loop {
            let (response, heads) = match self.follow(asked.as_ref()).await {
                Ok(answer) => answer,
                Err(failure) => return failure,
            };
            match (&asked, self.resume) {
                (Some(rest), Some(resume)) if !self.is_the_rest(&response, rest, resume) => {
                    // Another version, or a range that does not fit: never glued on.
                    resume.discard();
                    asked = None;
                }
                _ => break (response, heads),
            }
        };
        let appending = asked.is_some() && response.status() == StatusCode::PARTIAL_CONTENT;
        let status = response.status().as_u16();
        let (facts, hint) =
            server_wait::from_headers(response.headers(), status, SystemTime::now(), &mut |note| {
                report::verbose(1, &note)
            });
        let verdict = self.rules.status(&facts);
        let judged = match self.body_watch {
            Some(watch) => {
                self.judge_body(&mut response, &heads, watch, verdict, status)
                    .await
            }
            None => {
                self.hold(&mut response, &heads, appending, verdict, status)
                    .await
            }
        };
        let (verdict, held) = match judged {
            Ok(judged) => judged,
            Err(failure) => return failure,
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

    /// The body held as the status's verdict says: the whole of a success (or of a
    /// failure, for --fail-with-body), the start of any other failure.
    async fn hold(
        &self,
        response: &mut Response,
        heads: &[u8],
        appending: bool,
        verdict: Verdict,
        status: u16,
    ) -> Result<(Verdict, HeldResponse), Attempted> {
        let held = if verdict.class == Class::Success {
            HeldResponse::Body(self.receive(response, heads, appending, None).await?)
        } else if self.fail_with_body && status >= 400 {
            HeldResponse::FailedBody(self.receive(response, heads, false, None).await?)
        } else {
            HeldResponse::Failed {
                status,
                excerpt: read_excerpt(response).await,
            }
        };
        Ok((verdict, held))
    }

    /// Under the output rules: every body is read whole and its lines judged, as a
    /// command's output is; a rule that matched overrides the status's verdict, and a
    /// body judged a failure is held only as an excerpt (or whole, for --fail-with-body).
    async fn judge_body(
        &self,
        response: &mut Response,
        heads: &[u8],
        watch: &OutputWatch,
        by_status: Verdict,
        status: u16,
    ) -> Result<(Verdict, HeldResponse), Attempted> {
        let mut scan = BodyScan::new(watch, EXCERPT_BYTES);
        let body = self
            .receive(response, heads, false, Some(&mut scan))
            .await?;
        let start = std::mem::take(&mut scan.start);
        let verdict = scan.verdict().unwrap_or(by_status);
        let held = if verdict.class == Class::Success {
            HeldResponse::Body(body)
        } else if self.fail_with_body && status >= 400 {
            HeldResponse::FailedBody(body)
        } else {
            HeldResponse::Failed {
                status,
                excerpt: output::excerpt(&start, EXCERPT_CHARS),
            }
        };
        Ok((verdict, held))
    }

    /// Whether the answer to a request for the rest may be appended: anything but a
    /// 206 (a 200 starts the body again) is judged on its own; a 416 means the kept
    /// part no longer fits the resource.
    fn is_the_rest(&self, response: &Response, rest: &Asked, resume: &Resume) -> bool {
        match response.status() {
            StatusCode::PARTIAL_CONTENT => resume.fits(response, rest),
            StatusCode::RANGE_NOT_SATISFIABLE => {
                report::verbose(
                    1,
                    "the server cannot send the rest (HTTP 416); fetching the whole body again",
                );
                false
            }
            _ => true,
        }
    }

    /// Sends the request and follows its redirects: the final response, and every
    /// header block of the chain for -i and -D.
    async fn follow(&self, asked: Option<&Asked>) -> Result<(Response, Vec<u8>), Attempted> {
        let mut hop = Hop::first(self.spec, self.url.clone());
        let mut heads = Vec::new();
        loop {
            let request = self.request(&hop, asked).map_err(|e| Attempted::Failed {
                kind: Transport::LocalRead,
                message: format!("cannot read the file to upload: {e}"),
            })?;
            let response = match request.send().await {
                Ok(response) => response,
                Err(e) => return Err(failed(&e, Phase::Send, &hop.url)),
            };
            log_response(&response);
            heads.extend_from_slice(&head(&response));
            self.record(&hop, &response, &heads);
            match hop.next(&response, self.max_redirs, self.spec.redirect_protocols) {
                Follow::Stay => return Ok((response, heads)),
                Follow::Go(next) => {
                    report::verbose(
                        1,
                        &format!(
                            "redirect: {} to {}",
                            response.status().as_u16(),
                            display_url(&next.url)
                        ),
                    );
                    hop = *next;
                }
                Follow::TooMany(message) => {
                    return Err(Attempted::Failed {
                        kind: Transport::TooManyRedirects,
                        message,
                    });
                }
                Follow::BadLocation(message) => {
                    return Err(Attempted::Failed {
                        kind: Transport::BadUrl,
                        message,
                    });
                }
                Follow::Refused(message) => {
                    return Err(Attempted::Failed {
                        kind: Transport::UnsupportedProtocol,
                        message,
                    });
                }
            }
        }
    }

    /// One hop's request; with a part kept (-C -), it asks for the rest. An upload
    /// is opened again here, so every request sends FILE from its start.
    fn request(&self, hop: &Hop, asked: Option<&Asked>) -> std::io::Result<RequestBuilder> {
        let headers = if self.host_first {
            with_host_first(&hop.url, &hop.headers)
        } else {
            hop.headers.clone()
        };
        let mut request = self
            .client
            .request(hop.method.clone(), hop.url.clone())
            .headers(headers);
        if let Some(span) = self.span {
            request = request.header("traceparent", span.traceparent());
            if let Some(state) = span
                .state
                .as_deref()
                .filter(|_| !hop.headers.contains_key("tracestate"))
            {
                request = request.header("tracestate", state);
            }
        }
        if let Some(rest) = asked {
            request = request.header(RANGE, format!("bytes={}-", rest.from));
            if let Some(validator) = &rest.validator {
                request = request.header(IF_RANGE, validator.clone());
            }
        }
        match &hop.body {
            Some(Payload::Bytes(bytes)) => request = request.body(bytes.clone()),
            Some(Payload::Upload(upload)) => {
                let (len, body) = upload.open()?;
                // A stream has no length of its own: without this it would go chunked.
                request = request.header(CONTENT_LENGTH, len).body(body);
            }
            None => {}
        }
        Ok(request)
    }

    /// Notes the latest response for -w and -D.
    fn record(&self, hop: &Hop, response: &Response, heads: &[u8]) {
        let mut transfer = self.transfer.borrow_mut();
        transfer.status = response.status().as_u16();
        transfer.url = display_url(&hop.url);
        transfer.method = hop.method.to_string();
        transfer.redirects = hop.followed;
        transfer.headers = response.headers().clone();
        transfer.heads = heads.to_vec();
    }

    /// Streams the body into its holder, chunk by chunk: memory stays bounded
    /// whatever the size. `appending`: the response is the rest of the kept part.
    async fn receive(
        &self,
        response: &mut Response,
        heads: &[u8],
        appending: bool,
        mut scan: Option<&mut BodyScan<'_>>,
    ) -> Result<Body, Attempted> {
        // A spool that cannot spill is retry's own failure; a file that cannot be written is curl's 23.
        let local =
            |e: std::io::Error| match e.get_ref().and_then(|e| e.downcast_ref::<SpillError>()) {
                Some(spill) => Attempted::Fault(format!("cannot hold the response body: {spill}")),
                None => Attempted::Failed {
                    kind: Transport::LocalWrite,
                    message: format!("cannot hold the response body: {e}"),
                },
            };
        let resume = self.resume;
        let mut body = match resume {
            Some(resume) => {
                resume
                    .begin(response, appending, self.destination)
                    .map_err(local)?;
                None
            }
            None => Some(output::holder(self.destination).map_err(local)?),
        };
        if let (Some(body), true) = (&mut body, self.include) {
            body.write(heads).map_err(local)?;
        }
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(e) => {
                    let held = body
                        .as_ref()
                        .map_or_else(|| resume.map_or(0, Resume::len), Body::len);
                    let mut failure = failed(&e, Phase::Body, &self.url);
                    if let Attempted::Failed { message, .. } = &mut failure {
                        message.push_str(&format!(" (after {held} bytes)"));
                    }
                    return Err(failure);
                }
            };
            self.transfer.borrow_mut().size_download += chunk.len() as u64;
            if let Some(scan) = scan.as_deref_mut() {
                scan.feed(&chunk);
            }
            match (&mut body, resume) {
                (Some(body), _) => body.write(&chunk).map_err(local)?,
                (None, Some(resume)) => resume.write(&chunk).map_err(local)?,
                (None, None) => {}
            }
        }
        match (body, resume) {
            (Some(body), _) => Ok(body),
            (None, Some(resume)) => resume.finish().map_err(|message| Attempted::Failed {
                kind: Transport::BodyCutOff,
                message,
            }),
            (None, None) => Err(local(std::io::Error::other("no holder for the body"))),
        }
    }
}

pub fn failed(err: &reqwest::Error, phase: Phase, url: &Url) -> Attempted {
    let (kind, message) = errors::classify(err, phase, url);
    Attempted::Failed { kind, message }
}

/// The status line and headers as received (names in lower case: the HTTP
/// stack does not keep their case), for -i and -D.
fn head(response: &Response) -> Vec<u8> {
    let status = response.status();
    let mut out = match response.version() {
        reqwest::Version::HTTP_2 => format!("HTTP/2 {} \r\n", status.as_u16()).into_bytes(),
        reqwest::Version::HTTP_3 => format!("HTTP/3 {} \r\n", status.as_u16()).into_bytes(),
        version => {
            let mut line = format!("{version:?} {} ", status.as_u16()).into_bytes();
            match response.extensions().get::<hyper::ext::ReasonPhrase>() {
                Some(reason) => line.extend_from_slice(reason.as_bytes()),
                None => line.extend_from_slice(status.canonical_reason().unwrap_or("").as_bytes()),
            }
            line.extend_from_slice(b"\r\n");
            line
        }
    };
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
