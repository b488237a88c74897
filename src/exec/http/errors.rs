//! Turns a reqwest error into one of the transport failure kinds of
//! [`classify::http`](crate::classify::http), by looking through its chain of causes (hyper, rustls,
//! SOCKS and I/O errors), and into a short message for humans:
//! `could not connect to 127.0.0.1:9: connection refused`.

use std::error::Error as StdError;
use std::fmt;
use std::io;

use reqwest::Url;

use crate::classify::http::{Transport, transport_row};

/// The message when a chain goes past `--max-redirs`.
pub struct TooManyRedirects {
    pub max: u32,
}

impl fmt::Display for TooManyRedirects {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let noun = if self.max == 1 {
            "redirect"
        } else {
            "redirects"
        };
        write!(f, "more than {} {noun} (--max-redirs)", self.max)
    }
}

/// Where in the exchange the error happened.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Sending the request and waiting for the response head.
    Send,
    /// Reading the response body.
    Body,
}

/// The kind of failure and what to say about it.
pub fn classify(err: &reqwest::Error, phase: Phase, url: &Url) -> (Transport, String) {
    let causes = causes(err);
    let tls = causes
        .iter()
        .find_map(|c| c.downcast_ref::<rustls::Error>());
    let (kind, detail) = match (socks_failure(&causes), tls) {
        (Some(found), _) => found,
        (None, Some(tls)) => (tls_kind(tls), super::tls::describe(tls)),
        (None, None) => (
            transport_kind(err, &causes, phase, url.scheme() == "https"),
            innermost(&causes),
        ),
    };
    // After redirects the failing server may not be the one asked for.
    let url = err.url().unwrap_or(url);
    let host = url.host_str().unwrap_or("?");
    let server = format!("{host}:{}", url.port_or_known_default().unwrap_or(0));
    let says = transport_row(kind)
        .says
        .replace("{server}", &server)
        .replace("{host}", host);
    // The resolver names the host too; once is enough.
    let detail = detail
        .strip_prefix(&format!("cannot resolve {host}: "))
        .map_or(detail.clone(), str::to_string);
    (kind, format!("{says}: {detail}"))
}

fn transport_kind(
    err: &reqwest::Error,
    causes: &[&(dyn StdError + 'static)],
    phase: Phase,
    https: bool,
) -> Transport {
    if err.is_builder() {
        return Transport::BadUrl;
    }
    if err.is_timeout() {
        return if err.is_connect() {
            Transport::ConnectTimeout
        } else {
            Transport::Timeout
        };
    }
    if phase == Phase::Body {
        // hyper says end of file for a clean close before the declared length (or the
        // last chunk); a reset is the operating system's own error.
        let clean_close = io_kinds(causes).any(|k| k == io::ErrorKind::UnexpectedEof);
        return if clean_close {
            Transport::BodyShort
        } else {
            Transport::BodyCutOff
        };
    }
    if err.is_dns() {
        return Transport::Dns;
    }
    if err.is_connect() {
        let cut_off = io_kinds(causes).any(|k| {
            matches!(
                k,
                io::ErrorKind::UnexpectedEof
                    | io::ErrorKind::ConnectionReset
                    | io::ErrorKind::ConnectionAborted
            )
        });
        let refused = io_kinds(causes).any(|k| k == io::ErrorKind::ConnectionRefused);
        return if https && cut_off && !refused {
            Transport::TlsHandshakeInterrupted
        } else {
            Transport::Connect
        };
    }
    let empty = causes
        .iter()
        .filter_map(|c| c.downcast_ref::<hyper::Error>())
        .any(hyper::Error::is_incomplete_message);
    if empty {
        Transport::EmptyReply
    } else {
        Transport::Receive
    }
}

fn tls_kind(err: &rustls::Error) -> Transport {
    use rustls::Error as E;
    match err {
        E::InvalidCertificate(_)
        | E::NoCertificatesPresented
        | E::InvalidCertRevocationList(_)
        | E::UnsupportedNameType => Transport::TlsCertificate,
        _ => Transport::TlsHandshakeFailed,
    }
}

/// hyper-util's SOCKS errors, which reqwest's `socks` feature passes on. Their types
/// are not exported, so the derived `Debug` text of the error is matched: a pattern,
/// what it means, and the kind. Source: RFC 1928 §3 and §6 (SOCKS5 methods and
/// replies), RFC 1929 (user/password), the SOCKS4 protocol (replies 91-93).
const SOCKS_ERRORS: &[(&str, &str, Transport)] = &[
    (
        "V5(Command(GeneralServerFailure))",
        "SOCKS5 reply 1, general failure",
        Transport::SocksUnreachable,
    ),
    (
        "V5(Command(ConnectionNotAllowed))",
        "SOCKS5 reply 2, connection not allowed by ruleset",
        Transport::SocksRejected,
    ),
    (
        "V5(Command(NetworkUnreachable))",
        "SOCKS5 reply 3, network unreachable",
        Transport::SocksUnreachable,
    ),
    (
        "V5(Command(HostUnreachable))",
        "SOCKS5 reply 4, host unreachable",
        Transport::SocksUnreachable,
    ),
    (
        "V5(Command(ConnectionRefused))",
        "SOCKS5 reply 5, connection refused",
        Transport::SocksUnreachable,
    ),
    (
        "V5(Command(TtlExpired))",
        "SOCKS5 reply 6, TTL expired",
        Transport::SocksUnreachable,
    ),
    (
        "V5(Command(CommandNotSupported))",
        "SOCKS5 reply 7, command not supported",
        Transport::SocksRejected,
    ),
    (
        "V5(Command(AddressTypeNotSupported))",
        "SOCKS5 reply 8, address type not supported",
        Transport::SocksRejected,
    ),
    (
        "V5(Auth(Unsupported))",
        "no acceptable authentication method",
        Transport::SocksRejected,
    ),
    (
        "V5(Auth(MethodMismatch))",
        "the proxy chose a method that was not offered",
        Transport::SocksRejected,
    ),
    (
        "V5(Auth(Failed))",
        "user name or password not accepted",
        Transport::SocksRejected,
    ),
    (
        "V5(HostTooLong)",
        "the host name is longer than 255 bytes",
        Transport::SocksRejected,
    ),
    (
        "V4(Command(Failed))",
        "SOCKS4 reply 91, request rejected or failed",
        Transport::Socks4Failed,
    ),
    (
        "V4(Command(IdentFailure))",
        "SOCKS4 reply 92, the proxy could not reach identd",
        Transport::SocksRejected,
    ),
    (
        "V4(Command(IdentMismatch))",
        "SOCKS4 reply 93, identd reported another user",
        Transport::SocksRejected,
    ),
    (
        "V4(IpV6)",
        "SOCKS4 cannot connect to an IPv6 address",
        Transport::SocksRejected,
    ),
    (
        "Parsing(",
        "the proxy's reply is not SOCKS",
        Transport::SocksRejected,
    ),
    (
        "Io(",
        "the proxy closed the connection during the handshake",
        Transport::SocksBroken,
    ),
    (
        "Inner(ConnectError(\"dns error\"",
        "no address for the proxy's name",
        Transport::ProxyDns,
    ),
    (
        "Inner(",
        "connection refused or unreachable",
        Transport::ProxyConnect,
    ),
];

/// reqwest's own SOCKS wrapper says this when the target's name did not resolve.
const SOCKS_LOCAL_RESOLVE: &str = "error resolving for socks proxy";

/// A failure of the SOCKS handshake, if that is what `causes` hold.
fn socks_failure(causes: &[&(dyn StdError + 'static)]) -> Option<(Transport, String)> {
    if causes.iter().any(|c| c.to_string() == SOCKS_LOCAL_RESOLVE) {
        return Some((Transport::SocksResolve, innermost(causes)));
    }
    let socks = causes
        .iter()
        .find(|c| c.to_string().starts_with("SOCKS error"))?;
    let debug = format!("{socks:?}");
    let found = SOCKS_ERRORS
        .iter()
        .find(|(pattern, _, _)| debug.starts_with(pattern));
    Some(match found {
        // The connection to the proxy failed: the OS's reason is inside.
        Some((_, says, kind)) if debug.starts_with("Inner(") => {
            (*kind, os_message(&debug).unwrap_or((*says).to_string()))
        }
        Some((_, says, kind)) => (*kind, (*says).to_string()),
        None => (
            Transport::SocksRejected,
            "an unexpected SOCKS failure".into(),
        ),
    })
}

/// `message: "Connection refused"` in an I/O error's `Debug` text, lower-cased.
fn os_message(debug: &str) -> Option<String> {
    let (_, rest) = debug.split_once("message: \"")?;
    let (message, _) = rest.split_once('"')?;
    Some(lower_first(message))
}

fn io_kinds<'a>(
    causes: &'a [&'a (dyn StdError + 'static)],
) -> impl Iterator<Item = io::ErrorKind> + 'a {
    causes
        .iter()
        .filter_map(|c| c.downcast_ref::<io::Error>())
        .map(io::Error::kind)
}

/// The error and its causes, looking inside I/O errors too (their `source`
/// skips the error they wrap).
fn causes(err: &reqwest::Error) -> Vec<&(dyn StdError + 'static)> {
    let mut out: Vec<&(dyn StdError + 'static)> = Vec::new();
    let mut next: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = next {
        out.push(e);
        next = match e.downcast_ref::<io::Error>().and_then(|io| io.get_ref()) {
            Some(inner) => Some(inner as &(dyn StdError + 'static)),
            None => e.source(),
        };
        if out.len() > 32 {
            break;
        }
    }
    out
}

/// The innermost cause, which says the most (`connection refused`), without the
/// OS's error number; reqwest's own text when there is nothing under it.
fn innermost(causes: &[&(dyn StdError + 'static)]) -> String {
    let text = causes.last().map(ToString::to_string).unwrap_or_default();
    let text = match text.find(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_string(),
        _ => text,
    };
    let text = match causes.first() {
        Some(err) if causes.len() == 1 => without_url(err, text),
        _ => text,
    };
    lower_first(&text)
}

/// reqwest's message names the URL, which the caller names already.
fn without_url(err: &&(dyn StdError + 'static), text: String) -> String {
    match err
        .downcast_ref::<reqwest::Error>()
        .and_then(reqwest::Error::url)
    {
        Some(url) => text.replace(&format!(" ({url})"), ""),
        None => text,
    }
}

/// `Connection refused` → `connection refused`; `TLS …` stays as it is.
fn lower_first(text: &str) -> String {
    let mut chars = text.chars();
    match (chars.next(), chars.next()) {
        (Some(first), Some(second)) if first.is_uppercase() && second.is_lowercase() => first
            .to_lowercase()
            .chain(text[first.len_utf8()..].chars())
            .collect(),
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_start_in_lower_case_but_keep_acronyms() {
        assert_eq!(lower_first("Connection refused"), "connection refused");
        assert_eq!(lower_first("TLS alert"), "TLS alert");
        assert_eq!(lower_first(""), "");
    }

    #[test]
    fn the_os_reason_is_read_from_a_debug_text() {
        let debug = r#"Inner(ConnectError("tcp connect error", 127.0.0.1:1, Os { code: 111, kind: ConnectionRefused, message: "Connection refused" }))"#;
        assert_eq!(os_message(debug).as_deref(), Some("connection refused"));
        assert_eq!(os_message("Io(Kind(UnexpectedEof))"), None);
    }

    #[test]
    fn every_socks_pattern_names_a_socks_or_proxy_kind() {
        for (pattern, _, kind) in SOCKS_ERRORS {
            assert!(
                transport_row(*kind).name.contains("socks")
                    || transport_row(*kind).name.contains("proxy"),
                "{pattern}"
            );
        }
    }
}
