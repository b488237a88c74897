//! HTTP-mode classification as tables: status classes (RFC 9110 §15 and RFC
//! 6585, with the rate-limited 403 and the refusals a non-idempotent request
//! may be sent again after), the idempotent methods (RFC 9110 §9.2.2), and
//! transport failures with the curl exit code each one ends with. The status
//! table also classifies a status a tool shows on stderr (`profiles`).
//! `HttpRules::status` and `HttpRules::transport` turn facts about one attempt
//! into a verdict; running the request is the executor's work and reading its
//! headers `wait`'s.

use crate::classify::endings;
use crate::domain::{Class, ExitStatus, RetryCap, RetryCapKey, Verdict};
use crate::parse::CodeSet;
use Class::{Permanent, Transient};

/// Exit status when the final response has a status of 400 or more (curl --fail).
pub const EXIT_HTTP_ERROR: ExitStatus = ExitStatus::new(22);

/// A 500 is worth one or two more tries, never many.
pub const RETRY_CAP_500: RetryCap = RetryCap::twice(RetryCapKey::Http500);

/// What a response must show, beyond its status, for a row to apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requires {
    Nothing,
    /// A rate-limit header says no requests are left (`X-RateLimit-Remaining: 0`).
    RateLimitSpent,
    /// A valid Retry-After came with it: the server says the condition is temporary.
    RetryAfter,
}

impl Requires {
    fn describe(self) -> &'static str {
        match self {
            Requires::Nothing => "",
            Requires::RateLimitSpent => " with X-RateLimit-Remaining: 0",
            Requires::RetryAfter => " with Retry-After",
        }
    }
}

/// When the server has provably refused the request before acting on it, so a
/// request that is not idempotent may still be sent again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    Never,
    Always,
    /// Only when the response asks for a wait with Retry-After.
    WithRetryAfter,
}

pub struct StatusRow {
    pub codes: (u16, u16),
    pub requires: Requires,
    pub class: Class,
    pub retry_cap: Option<RetryCap>,
    pub refused: Refused,
    pub why: &'static str,
}

const fn row(lo: u16, hi: u16, class: Class, why: &'static str) -> StatusRow {
    StatusRow {
        codes: (lo, hi),
        requires: Requires::Nothing,
        class,
        retry_cap: None,
        refused: Refused::Never,
        why,
    }
}

/// Status classes, first match wins. Source: RFC 9110 §15 (status codes),
/// RFC 6585 §4 (429), and the rate-limit headers of draft-ietf-httpapi-ratelimit-headers
/// and GitHub's REST API (a spent limit answered with 403).
pub const STATUS_TABLE: &[StatusRow] = &[
    row(
        100,
        399,
        Class::Success,
        "no error after redirects (RFC 9110 §15.2-15.4)",
    ),
    row(
        408,
        408,
        Class::Transient,
        "Request Timeout: the server gave up waiting for the request (RFC 9110 §15.5.9)",
    ),
    StatusRow {
        refused: Refused::Always,
        ..row(
            429,
            429,
            Class::Transient,
            "Too Many Requests: rate limited, try again later (RFC 6585 §4)",
        )
    },
    StatusRow {
        requires: Requires::RateLimitSpent,
        refused: Refused::Always,
        ..row(403, 403, Class::Transient, "a rate limit, retried like 429")
    },
    StatusRow {
        requires: Requires::RetryAfter,
        ..row(
            413,
            413,
            Class::Transient,
            "Content Too Large, for now: Retry-After says the condition is temporary (RFC 9110 §15.5.14)",
        )
    },
    StatusRow {
        retry_cap: Some(RETRY_CAP_500),
        ..row(
            500,
            500,
            Class::Transient,
            "Internal Server Error: may be a passing fault, worth two more tries at most (RFC 9110 §15.6.1)",
        )
    },
    row(
        501,
        501,
        Class::Permanent,
        "Not Implemented: the server does not support this request (RFC 9110 §15.6.2)",
    ),
    row(
        502,
        502,
        Class::Transient,
        "Bad Gateway: an upstream server failed (RFC 9110 §15.6.3)",
    ),
    StatusRow {
        refused: Refused::WithRetryAfter,
        ..row(
            503,
            503,
            Class::Transient,
            "Service Unavailable: overloaded or down for maintenance (RFC 9110 §15.6.4)",
        )
    },
    row(
        504,
        504,
        Class::Transient,
        "Gateway Timeout: an upstream server did not answer in time (RFC 9110 §15.6.5)",
    ),
    row(
        505,
        505,
        Class::Permanent,
        "HTTP Version Not Supported (RFC 9110 §15.6.6)",
    ),
    row(
        400,
        499,
        Class::Permanent,
        "client error: the request itself is wrong and will be refused again (RFC 9110 §15.5)",
    ),
    row(
        500,
        599,
        Class::Permanent,
        "server error that retrying is not known to fix (RFC 9110 §15.6)",
    ),
];

impl StatusRow {
    fn applies(&self, facts: &StatusFacts) -> bool {
        let requirement = match self.requires {
            Requires::Nothing => true,
            Requires::RateLimitSpent => facts.rate_limited,
            Requires::RetryAfter => facts.retry_after,
        };
        (self.codes.0..=self.codes.1).contains(&facts.status) && requirement
    }

    /// Whether the server refused the request before acting on it.
    fn refused(&self, facts: &StatusFacts) -> bool {
        match self.refused {
            Refused::Never => false,
            Refused::Always => true,
            Refused::WithRetryAfter => facts.retry_after,
        }
    }

    /// The row's verdict for `status`; a row with a requirement says it in full.
    pub fn verdict(&self, status: u16) -> Verdict {
        let reason = match self.requires {
            Requires::Nothing => format!("HTTP {status}: {}", self.why),
            shows => format!("HTTP {status}{} is {}", shows.describe(), self.why),
        };
        Verdict::new(self.class, reason).capped(self.retry_cap)
    }

    /// `status 500: transient, at most 2 retries (...)`, for `--dry-run`.
    pub fn describe(&self) -> String {
        let (lo, hi) = self.codes;
        let codes = if lo == hi {
            lo.to_string()
        } else {
            format!("{lo}-{hi}")
        };
        let shows = self.requires.describe();
        let cap = self
            .retry_cap
            .map(|l| format!(", at most {} retries", l.max_retries))
            .unwrap_or_default();
        let exit = if self.class == Class::Success {
            String::new()
        } else {
            format!(", exit {EXIT_HTTP_ERROR}")
        };
        format!(
            "status {codes}{shows}: {}{cap} ({}{exit})",
            self.class.as_str(),
            self.why
        )
    }
}

/// The responses that show the server refused the request before acting on it:
/// `on 429, on 403 with X-RateLimit-Remaining: 0, or on 503 with Retry-After`.
fn refusals() -> String {
    let mut parts: Vec<String> = STATUS_TABLE
        .iter()
        .filter(|row| row.refused != Refused::Never)
        .map(|row| {
            let with = match row.refused {
                Refused::WithRetryAfter => " with Retry-After",
                _ => "",
            };
            format!("on {}{}{with}", row.codes.0, row.requires.describe())
        })
        .collect();
    if let Some(last) = parts.pop() {
        parts.push(format!("or {last}"));
    }
    parts.join(", ")
}

/// The first row of the status table that applies to a response.
pub fn status_row(facts: &StatusFacts) -> Option<&'static StatusRow> {
    STATUS_TABLE.iter().find(|row| row.applies(facts))
}

pub struct MethodRow {
    pub method: &'static str,
    pub source: &'static str,
}

/// Methods whose repetition has the same effect as one request. Source: RFC
/// 9110 §9.2.2 (idempotent methods), which includes the safe ones of §9.2.1.
pub const IDEMPOTENT_METHODS: &[MethodRow] = &[
    MethodRow {
        method: "GET",
        source: "RFC 9110 §9.3.1 (safe)",
    },
    MethodRow {
        method: "HEAD",
        source: "RFC 9110 §9.3.2 (safe)",
    },
    MethodRow {
        method: "OPTIONS",
        source: "RFC 9110 §9.3.7 (safe)",
    },
    MethodRow {
        method: "TRACE",
        source: "RFC 9110 §9.3.8 (safe)",
    },
    MethodRow {
        method: "PUT",
        source: "RFC 9110 §9.3.4",
    },
    MethodRow {
        method: "DELETE",
        source: "RFC 9110 §9.3.5",
    },
];

/// The row that makes `method` idempotent, if one does.
fn idempotent_row(method: &str) -> Option<&'static MethodRow> {
    IDEMPOTENT_METHODS
        .iter()
        .find(|row| row.method.eq_ignore_ascii_case(method))
}

pub fn is_idempotent(method: &str) -> bool {
    idempotent_row(method).is_some()
}

/// Ways an attempt can fail before a complete response arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    BadUrl,
    /// The URL's or a redirect's scheme is outside --proto / --proto-redir.
    UnsupportedProtocol,
    Dns,
    Connect,
    ConnectTimeout,
    TlsHandshakeInterrupted,
    TlsHandshakeFailed,
    TlsCertificate,
    TooManyRedirects,
    Timeout,
    EmptyReply,
    Receive,
    /// The body ended, the server closing the connection cleanly, before the length
    /// it declared (curl's partial file).
    BodyShort,
    /// The connection broke (reset) while the body was coming.
    BodyCutOff,
    LocalWrite,
    /// The file to upload (-T) could not be opened for this request.
    LocalRead,
    /// The proxy's own name did not resolve.
    ProxyDns,
    /// The proxy could not be reached.
    ProxyConnect,
    /// The target's name did not resolve for a SOCKS proxy that takes addresses.
    SocksResolve,
    /// The SOCKS proxy could not reach the target (SOCKS5 replies 1 and 3-6).
    SocksUnreachable,
    /// SOCKS4's reply 91: rejected, or the target could not be reached.
    Socks4Failed,
    /// The SOCKS proxy refused this client (no acceptable method, failed
    /// authentication, SOCKS5 reply 2, an unsupported request).
    SocksRejected,
    /// The SOCKS proxy closed the connection during the handshake.
    SocksBroken,
}

pub struct TransportRow {
    pub kind: Transport,
    /// Short name for reports and JSON logs.
    pub name: &'static str,
    pub class: Class,
    pub exit_code: ExitStatus,
    /// The request provably never reached the server, so even a non-idempotent
    /// one is safe to send again.
    pub never_sent: bool,
    pub retry_cap: Option<RetryCap>,
    pub why: &'static str,
    /// What happened, for messages; `{server}` is the host and port, `{host}` the host.
    pub says: &'static str,
}

const fn transport(
    kind: Transport,
    (name, class, exit_code): (&'static str, Class, u8),
    never_sent: bool,
    why: &'static str,
    says: &'static str,
) -> TransportRow {
    TransportRow {
        kind,
        name,
        class,
        exit_code: ExitStatus::new(exit_code),
        never_sent,
        retry_cap: None,
        why,
        says,
    }
}

/// A SOCKS4 proxy's reply 91 is worth one or two more tries, never many: it also
/// stands for a rule that rejects the request.
pub const RETRY_CAP_SOCKS4: RetryCap = RetryCap::twice(RetryCapKey::Socks4Failed);

/// Transport failures. Exit codes: curl(1) "EXIT CODES" and libcurl-errors(3):
/// a body the server ended cleanly before its declared length is a partial file
/// (18), one whose connection was reset a receive failure (56); both are retried.
/// SOCKS replies: RFC 1928 §6 and the SOCKS4 protocol; curl ends every SOCKS
/// refusal with 97 (CURLE_PROXY), an unresolved proxy with 5 and an unreachable one with 7.
pub const TRANSPORT_TABLE: &[TransportRow] = &[
    transport(
        Transport::BadUrl,
        ("bad_url", Permanent, 3),
        true,
        "malformed URL: no attempt can fix it",
        "malformed URL",
    ),
    transport(
        Transport::UnsupportedProtocol,
        ("unsupported_protocol", Permanent, 1),
        true,
        "the protocol is not permitted (--proto, --proto-redir) or not spoken: no attempt can fix it",
        "unsupported protocol",
    ),
    transport(
        Transport::Dns,
        ("dns", Transient, 6),
        true,
        "could not resolve the host: DNS may recover",
        "could not resolve host {host}",
    ),
    transport(
        Transport::Connect,
        ("connect", Transient, 7),
        true,
        "could not connect (refused, reset or unreachable): the server may come back",
        "could not connect to {server}",
    ),
    transport(
        Transport::ConnectTimeout,
        ("connect_timeout", Transient, 28),
        true,
        "connecting timed out",
        "connecting to {server} timed out",
    ),
    transport(
        Transport::TlsHandshakeInterrupted,
        ("tls_handshake", Transient, 35),
        true,
        "the TLS handshake was cut off",
        "the TLS handshake with {server} was cut off",
    ),
    transport(
        Transport::TlsHandshakeFailed,
        ("tls_handshake", Permanent, 35),
        true,
        "the TLS handshake failed: client and server disagree, another attempt will too",
        "the TLS handshake with {server} failed",
    ),
    transport(
        Transport::TlsCertificate,
        ("tls_certificate", Permanent, 60),
        true,
        "the server's certificate was not accepted (--cacert FILE trusts a private CA or the server's own certificate; -k skips the check)",
        "the certificate of {server} was not accepted",
    ),
    transport(
        Transport::TooManyRedirects,
        ("too_many_redirects", Permanent, 47),
        false,
        "more redirects than --max-redirs allows",
        "too many redirects",
    ),
    transport(
        Transport::Timeout,
        ("timeout", Transient, 28),
        false,
        "the attempt timed out",
        "timed out waiting for {server}",
    ),
    transport(
        Transport::EmptyReply,
        ("empty_reply", Transient, 52),
        false,
        "the server closed the connection without a reply",
        "empty reply from {server}",
    ),
    transport(
        Transport::Receive,
        ("receive", Transient, 56),
        false,
        "the connection failed while waiting for the response",
        "receive failure from {server}",
    ),
    transport(
        Transport::BodyShort,
        ("body_short", Transient, 18),
        false,
        "the server closed the connection before the whole body came",
        "the body was shorter than declared",
    ),
    transport(
        Transport::BodyCutOff,
        ("body_cut_off", Transient, 56),
        false,
        "the response body was cut off",
        "the body was cut off",
    ),
    transport(
        Transport::LocalWrite,
        ("write", Permanent, 23),
        false,
        "the body could not be written locally",
        "write error",
    ),
    transport(
        Transport::LocalRead,
        ("read", Permanent, 26),
        true,
        "the file to upload could not be read",
        "cannot read the file to upload",
    ),
    transport(
        Transport::ProxyDns,
        ("proxy_dns", Transient, 5),
        true,
        "could not resolve the proxy's host: DNS may recover",
        "could not resolve the proxy's host",
    ),
    transport(
        Transport::ProxyConnect,
        ("proxy_connect", Transient, 7),
        true,
        "could not connect to the proxy: it may come back",
        "could not connect to the SOCKS proxy",
    ),
    transport(
        Transport::SocksResolve,
        ("socks_resolve", Transient, 97),
        true,
        "could not resolve the host for the SOCKS proxy: DNS may recover",
        "could not resolve host {host} for the SOCKS proxy",
    ),
    transport(
        Transport::SocksUnreachable,
        ("socks_unreachable", Transient, 97),
        true,
        "the SOCKS proxy could not reach the server (SOCKS5 reply 1 or 3-6): the server may come back; \
         the request never reached it",
        "the SOCKS proxy could not connect to {server}",
    ),
    TransportRow {
        retry_cap: Some(RETRY_CAP_SOCKS4),
        ..transport(
            Transport::Socks4Failed,
            ("socks4_failed", Transient, 97),
            true,
            "the SOCKS4 proxy rejected the request or could not reach the server (reply 91)",
            "the SOCKS4 proxy did not connect to {server}",
        )
    },
    transport(
        Transport::SocksRejected,
        ("socks_rejected", Permanent, 97),
        true,
        "the SOCKS proxy rejected this client (no acceptable method, failed authentication, \
         SOCKS5 reply 2, a request it does not support): another attempt will be rejected too",
        "the SOCKS proxy refused to connect to {server}",
    ),
    transport(
        Transport::SocksBroken,
        ("socks_handshake", Transient, 97),
        true,
        "the SOCKS proxy closed the connection during the handshake",
        "the SOCKS handshake for {server} failed",
    ),
];

pub fn transport_row(kind: Transport) -> &'static TransportRow {
    TRANSPORT_TABLE
        .iter()
        .find(|row| row.kind == kind)
        .expect("every transport kind has a row")
}

/// What the classifier needs to know about a response.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatusFacts {
    pub status: u16,
    /// A valid Retry-After came with it (a date in the past included).
    pub retry_after: bool,
    /// 403 with `X-RateLimit-Remaining: 0`: a rate limit, not a refusal.
    pub rate_limited: bool,
}

/// The HTTP rules in force for one run.
/// `--stop-on-status` and `--retry-on-status` (in that order) for `status`; `None` when
/// neither decides. Command mode applies them to the status a tool prints (curl -f).
pub fn listed_status(
    status: u16,
    (stop_on, retry_on): (Option<&CodeSet>, Option<&CodeSet>),
) -> Option<Verdict> {
    let code = u32::from(status);
    if stop_on.is_some_and(|s| s.contains(code)) {
        return Some(Verdict::permanent(format!(
            "HTTP {status} is in --stop-on-status"
        )));
    }
    let set = retry_on?;
    if set.contains(code) {
        return Some(Verdict::transient(format!(
            "HTTP {status} is in --retry-on-status"
        )));
    }
    (status >= 400)
        .then(|| Verdict::permanent(format!("HTTP {status} is not in --retry-on-status")))
}

#[derive(Clone, Debug)]
pub struct HttpRules {
    pub retry_on_status: Option<CodeSet>,
    pub stop_on_status: Option<CodeSet>,
    pub method: reqwest::Method,
    /// An idempotency key is sent, so the server can tell repeats apart.
    pub key_in_use: bool,
    pub retry_unsafe: bool,
    /// curl's --retry-all-errors: every failure is transient (a malformed URL and
    /// retry's own write errors excepted), 4xx included.
    pub retry_all_errors: bool,
}

impl HttpRules {
    /// Whether every transient failure may be retried, whatever the method.
    pub fn retries_are_safe(&self) -> bool {
        is_idempotent(self.method.as_str()) || self.key_in_use || self.retry_unsafe
    }

    pub fn status(&self, facts: &StatusFacts) -> Verdict {
        let mut verdict = self.status_class(facts);
        let stopped = self
            .stop_on_status
            .as_ref()
            .is_some_and(|s| s.contains(u32::from(facts.status)));
        if self.retry_all_errors && verdict.class == Class::Permanent && !stopped {
            verdict = Verdict::transient(format!("HTTP {}: --retry-all-errors", facts.status));
        }
        if self.retry_all_errors {
            // A 500 is retried as often as any other failure, as curl does.
            verdict.retry_cap = None;
        }
        let refused = status_row(facts).is_some_and(|row| row.refused(facts));
        self.guard_method(verdict, refused)
    }

    fn status_class(&self, facts: &StatusFacts) -> Verdict {
        let status = facts.status;
        let lists = (self.stop_on_status.as_ref(), self.retry_on_status.as_ref());
        if let Some(verdict) = listed_status(status, lists) {
            return verdict;
        }
        match status_row(facts) {
            Some(row) => row.verdict(status),
            None => Verdict::permanent(format!("HTTP {status} is not a known status class")),
        }
    }

    /// The verdict and exit status for a failure before a complete response.
    pub fn transport(&self, kind: Transport) -> (Verdict, ExitStatus) {
        let row = transport_row(kind);
        let mut verdict = Verdict::new(row.class, row.why).capped(row.retry_cap);
        let all = self.retry_all_errors
            && !matches!(
                kind,
                Transport::BadUrl
                    | Transport::UnsupportedProtocol
                    | Transport::LocalWrite
                    | Transport::LocalRead
            );
        if all && verdict.class == Class::Permanent {
            verdict = Verdict::transient(format!("{}; --retry-all-errors", row.why));
        }
        if self.retry_all_errors {
            // Every failure is retried as often as any other, as curl does.
            verdict.retry_cap = None;
        }
        (self.guard_method(verdict, row.never_sent), row.exit_code)
    }

    /// A non-idempotent request may already have taken effect: retrying it is
    /// refused unless the failure shows it did not, or repeats are made safe.
    fn guard_method(&self, verdict: Verdict, exempt: bool) -> Verdict {
        if verdict.class != Class::Transient || exempt || self.retries_are_safe() {
            return verdict;
        }
        Verdict::permanent(format!(
            "{}; not retried: {} is not idempotent and the request may already have taken effect \
             (send an idempotency key with --idempotency-key auto, or allow it with --retry-unsafe)",
            verdict.reason, self.method
        ))
    }

    /// The rules in force, in the order they are checked, for `--dry-run`.
    pub fn describe(&self) -> Vec<String> {
        let mut out: Vec<String> = endings::REQUEST_ENDINGS
            .iter()
            .map(|rule| rule.describe())
            .collect();
        if self.retry_all_errors {
            out.push(
                "--retry-all-errors: every failure below is transient (a malformed URL excepted), \
                 for requests that are safe to repeat"
                    .into(),
            );
        }
        if let Some(s) = &self.stop_on_status {
            out.push(format!("status in --stop-on-status {s}: permanent"));
        }
        if let Some(s) = &self.retry_on_status {
            out.push(format!(
                "status in --retry-on-status {s}: transient; any other status >= 400: permanent"
            ));
        }
        out.extend(STATUS_TABLE.iter().map(StatusRow::describe));
        for row in TRANSPORT_TABLE {
            let cap = row
                .retry_cap
                .map(|l| format!(", at most {} retries", l.max_retries))
                .unwrap_or_default();
            out.push(format!(
                "{}: {}{cap} (exit {})",
                row.why,
                row.class.as_str(),
                row.exit_code
            ));
        }
        out.push(self.describe_method());
        out
    }

    fn describe_method(&self) -> String {
        let method = &self.method;
        if let Some(row) = idempotent_row(method.as_str()) {
            format!(
                "method {method} is idempotent ({}): every transient failure is retried",
                row.source
            )
        } else if self.key_in_use {
            format!(
                "method {method} is not idempotent, but an idempotency key is sent: every transient failure is retried"
            )
        } else if self.retry_unsafe {
            format!(
                "method {method} is not idempotent; --retry-unsafe: every transient failure is retried"
            )
        } else {
            format!(
                "method {method} is not idempotent (RFC 9110 §9.2.2): retried only when the request never reached \
                 the server (DNS, connect, TLS handshake or SOCKS proxy failure), {}; \
                 --idempotency-key auto or --retry-unsafe allow more",
                refusals()
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(method: &str) -> HttpRules {
        HttpRules {
            retry_on_status: None,
            stop_on_status: None,
            method: reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
            retry_all_errors: false,
            key_in_use: false,
            retry_unsafe: false,
        }
    }

    fn status(code: u16) -> StatusFacts {
        StatusFacts {
            status: code,
            ..StatusFacts::default()
        }
    }

    fn class_of(r: &HttpRules, code: u16) -> Class {
        r.status(&status(code)).class
    }

    #[test]
    fn status_classes_follow_the_table() {
        let r = rules("GET");
        for code in [200, 204, 301, 304] {
            assert_eq!(class_of(&r, code), Class::Success, "{code}");
        }
        for code in [408, 429, 500, 502, 503, 504] {
            assert_eq!(class_of(&r, code), Class::Transient, "{code}");
        }
        for code in [400, 401, 403, 404, 422, 501, 505, 511, 599] {
            assert_eq!(class_of(&r, code), Class::Permanent, "{code}");
        }
        assert_eq!(r.status(&status(500)).retry_cap, Some(RETRY_CAP_500));
    }

    #[test]
    fn a_413_is_transient_only_with_retry_after() {
        let r = rules("GET");
        let too_large = |retry_after| StatusFacts {
            status: 413,
            retry_after,
            ..StatusFacts::default()
        };
        let temporary = r.status(&too_large(true));
        assert_eq!(temporary.class, Class::Transient);
        assert!(
            temporary.reason.contains("with Retry-After"),
            "{}",
            temporary.reason
        );
        assert_eq!(r.status(&too_large(false)).class, Class::Permanent);
        // The server acted on nothing, but a POST is repeated only where the table says.
        assert_eq!(
            rules("POST").status(&too_large(true)).class,
            Class::Permanent
        );
    }

    #[test]
    fn rate_limited_403_is_transient() {
        let facts = StatusFacts {
            status: 403,
            rate_limited: true,
            ..StatusFacts::default()
        };
        assert_eq!(rules("POST").status(&facts).class, Class::Transient);
    }

    #[test]
    fn overrides_come_first() {
        let mut r = rules("GET");
        r.stop_on_status = Some(CodeSet::parse("503", 100..=599, "s").unwrap());
        r.retry_on_status = Some(CodeSet::parse("404,202", 100..=599, "s").unwrap());
        assert_eq!(class_of(&r, 503), Class::Permanent);
        assert_eq!(class_of(&r, 404), Class::Transient);
        assert_eq!(class_of(&r, 202), Class::Transient);
        assert_eq!(class_of(&r, 502), Class::Permanent);
        assert_eq!(class_of(&r, 200), Class::Success);
    }

    #[test]
    fn post_is_retried_only_when_provably_safe() {
        let r = rules("POST");
        let refused = r.status(&status(503));
        assert_eq!(refused.class, Class::Permanent);
        assert!(refused.reason.contains("--idempotency-key auto"));
        assert_eq!(class_of(&r, 429), Class::Transient);
        let with_hint = StatusFacts {
            status: 503,
            retry_after: true,
            ..StatusFacts::default()
        };
        assert_eq!(r.status(&with_hint).class, Class::Transient);
        assert_eq!(r.transport(Transport::Connect).0.class, Class::Transient);
        assert_eq!(r.transport(Transport::Dns).0.class, Class::Transient);
        assert_eq!(r.transport(Transport::EmptyReply).0.class, Class::Permanent);
        let mut keyed = rules("PATCH");
        keyed.key_in_use = true;
        assert_eq!(class_of(&keyed, 503), Class::Transient);
        let mut unsafe_ok = rules("POST");
        unsafe_ok.retry_unsafe = true;
        assert_eq!(class_of(&unsafe_ok, 502), Class::Transient);
    }

    #[test]
    fn the_method_rule_names_every_refusal_in_the_table() {
        assert_eq!(
            refusals(),
            "on 429, on 403 with X-RateLimit-Remaining: 0, or on 503 with Retry-After"
        );
    }

    #[test]
    fn idempotent_set_is_rfc_9110() {
        for m in ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE", "get"] {
            assert!(is_idempotent(m), "{m}");
        }
        for m in ["POST", "PATCH", "CONNECT", "PURGE"] {
            assert!(!is_idempotent(m), "{m}");
        }
    }

    #[test]
    fn transport_exit_codes_are_curls() {
        let r = rules("GET");
        let code = |k| r.transport(k).1.code();
        assert_eq!(code(Transport::BadUrl), 3);
        assert_eq!(code(Transport::UnsupportedProtocol), 1);
        assert_eq!(code(Transport::Dns), 6);
        assert_eq!(code(Transport::Connect), 7);
        assert_eq!(code(Transport::Timeout), 28);
        assert_eq!(code(Transport::TlsHandshakeInterrupted), 35);
        assert_eq!(code(Transport::TooManyRedirects), 47);
        assert_eq!(code(Transport::EmptyReply), 52);
        assert_eq!(code(Transport::BodyShort), 18);
        assert_eq!(code(Transport::BodyCutOff), 56);
        assert_eq!(code(Transport::TlsCertificate), 60);
        assert_eq!(
            r.transport(Transport::TlsCertificate).0.class,
            Class::Permanent
        );
    }

    #[test]
    fn retry_all_errors_makes_failures_transient_for_safe_requests_only() {
        let mut get = rules("GET");
        get.retry_all_errors = true;
        assert_eq!(class_of(&get, 404), Class::Transient);
        assert_eq!(class_of(&get, 501), Class::Transient);
        assert_eq!(
            get.status(&status(500)).retry_cap,
            None,
            "no two-retry limit on 500"
        );
        assert_eq!(
            get.transport(Transport::TlsCertificate).0.class,
            Class::Transient
        );
        assert_eq!(get.transport(Transport::BadUrl).0.class, Class::Permanent);
        get.stop_on_status = Some(CodeSet::parse("404", 100..=599, "HTTP status").unwrap());
        assert_eq!(
            class_of(&get, 404),
            Class::Permanent,
            "--stop-on-status still wins"
        );
        let mut post = rules("POST");
        post.retry_all_errors = true;
        assert_eq!(class_of(&post, 404), Class::Permanent);
    }
}
