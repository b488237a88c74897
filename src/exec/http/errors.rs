//! Turns a reqwest error into one of the transport failure kinds of
//! `classify::http`, by looking through its chain of causes (hyper, rustls and
//! I/O errors), and into a short message for humans.

use std::error::Error as StdError;
use std::fmt;
use std::io;

use crate::classify::http::Transport;

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

pub fn transport_kind(err: &reqwest::Error, phase: Phase, https: bool) -> Transport {
    let causes = causes(err);
    if err.is_builder() {
        return Transport::BadUrl;
    }
    if let Some(tls) = causes
        .iter()
        .find_map(|c| c.downcast_ref::<rustls::Error>())
    {
        return tls_kind(tls);
    }
    if err.is_timeout() {
        return if err.is_connect() {
            Transport::ConnectTimeout
        } else {
            Transport::Timeout
        };
    }
    if phase == Phase::Body {
        return Transport::BodyCutOff;
    }
    if err.is_dns() {
        return Transport::Dns;
    }
    if err.is_connect() {
        let cut_off = io_kinds(&causes).any(|k| {
            matches!(
                k,
                io::ErrorKind::UnexpectedEof
                    | io::ErrorKind::ConnectionReset
                    | io::ErrorKind::ConnectionAborted
            )
        });
        let refused = io_kinds(&causes).any(|k| k == io::ErrorKind::ConnectionRefused);
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

/// The causes of `err`, innermost last, without reqwest's generic wrapper and
/// without repeats: `tcp connect error: Connection refused (os error 111)`.
pub fn message(err: &reqwest::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in causes(err).into_iter().skip(1) {
        let text = cause.to_string();
        // hyper-util's wrapper ("client error (Connect)") says nothing the causes do not.
        if text.starts_with("client error (") {
            continue;
        }
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
    }
    if parts.is_empty() {
        let mut text = err.to_string();
        if let Some(url) = err.url() {
            text = text.replace(&format!(" ({url})"), "");
        }
        return text;
    }
    parts.join(": ")
}
