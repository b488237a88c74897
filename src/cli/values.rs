//! The value parsers of retry's own flags (curl's are in `curl`): each turns the text
//! into the type the rest of the program takes, or refuses it saying what is accepted,
//! so that clap names the flag and nothing runs.

use reqwest::header::HeaderName;

use crate::domain::LeaseTtl;
use crate::parse;

/// `--lease-ttl`: a duration from 3s to 1h.
pub fn lease_ttl_value(text: &str) -> Result<LeaseTtl, String> {
    LeaseTtl::new(parse::duration(text)?)
}

/// `--retry-on` and `--stop-on`: exit codes; an HTTP status among them is refused
/// naming the flag for statuses (`--retry-on-status`, `--stop-on-status`).
pub fn exit_codes_value(
    flag: &'static str,
) -> impl Fn(&str) -> Result<parse::CodeSet, String> + Clone {
    move |text| {
        parse::exit_codes(text).map_err(|why| {
            let is_status = |item: &&str| {
                item.split('-').all(|n| {
                    n.trim()
                        .parse::<u32>()
                        .is_ok_and(|n| (100..=599).contains(&n))
                })
            };
            let statuses: Vec<&str> = text.split(',').map(str::trim).filter(is_status).collect();
            if statuses.is_empty() {
                why
            } else {
                format!(
                    "{why}; for HTTP statuses use {flag}-status {}",
                    statuses.join(",")
                )
            }
        })
    }
}

/// A hook's shell command: run with `sh -c`, so any non-blank text.
pub fn hook_value(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        Err("expected a shell command, run with sh -c".into())
    } else {
        Ok(text.to_string())
    }
}

pub fn continue_value(text: &str) -> Result<String, String> {
    if text == "-" {
        Ok(text.to_string())
    } else {
        Err(format!(
            "'{text}' is not supported; only '-C -' (resume where the last attempt stopped, with -o) is"
        ))
    }
}

/// `--signal`: a name as kill(1) and timeout(1) take it (TERM, SIGTERM, term) or a number.
pub fn signal_value(text: &str) -> Result<crate::sys::Signal, String> {
    crate::sys::parse_signal(text).ok_or_else(|| {
        format!(
            "'{text}' is not a signal; expected {}",
            crate::sys::SIGNALS_ACCEPTED
        )
    })
}

/// Compiled here, once: the classifier takes the compiled pattern.
pub fn regex_value(text: &str) -> Result<regex::bytes::Regex, String> {
    // The library's message spans lines, pointing at the spot; its last line says why.
    regex::bytes::Regex::new(text).map_err(|e| {
        let shown = e.to_string();
        let why = shown.lines().last().unwrap_or_default();
        let why = why.trim().trim_start_matches("error: ");
        format!("'{text}' is not a valid regular expression ({why}); expected a Rust regex")
    })
}

/// An RFC 9110 token: what methods and header names are made of.
fn is_token(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

const NOT_IDEMPOTENT: &str = "not idempotent: retried only when it never reached the server";

/// The methods the completions offer for `-X` (RFC 9110 §9.3, RFC 5789), and what
/// each means for retrying.
const METHODS: [(&str, &str); 8] = [
    ("GET", "idempotent"),
    ("HEAD", "idempotent"),
    ("POST", NOT_IDEMPOTENT),
    ("PUT", "idempotent"),
    ("DELETE", "idempotent"),
    ("PATCH", NOT_IDEMPOTENT),
    ("OPTIONS", "idempotent"),
    ("TRACE", "idempotent"),
];

/// `-X`: any method token, as curl sends any; the common ones are clap's possible
/// values, so that completions offer them while others are still accepted.
#[derive(Clone)]
pub struct MethodParser;

impl clap::builder::TypedValueParser for MethodParser {
    type Value = reqwest::Method;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<reqwest::Method, clap::Error> {
        method_value.parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        let values = METHODS
            .iter()
            .map(|(name, help)| clap::builder::PossibleValue::new(*name).help(*help));
        Some(Box::new(values))
    }
}

/// Parsed once, here: everything after the command line takes the `Method`.
fn method_value(text: &str) -> Result<reqwest::Method, String> {
    match reqwest::Method::from_bytes(text.to_ascii_uppercase().as_bytes()) {
        Ok(method) if is_token(text) => Ok(method),
        _ => Err(format!(
            "'{text}' is not an HTTP method; expected a token such as GET, POST or PUT"
        )),
    }
}

/// `--idempotency-header`: a token, as the header name the request carries.
pub fn header_name_value(text: &str) -> Result<HeaderName, String> {
    match HeaderName::from_bytes(text.as_bytes()) {
        Ok(name) if is_token(text) => Ok(name),
        _ => Err(format!(
            "'{text}' is not a header name; expected a token such as Idempotency-Key"
        )),
    }
}

pub fn key_value(text: &str) -> Result<String, String> {
    let ok =
        !text.is_empty() && text.len() <= 255 && text.bytes().all(|b| (0x21..0x7f).contains(&b));
    if ok {
        Ok(text.to_string())
    } else {
        Err("expected auto or 1 to 255 visible ASCII characters without spaces".into())
    }
}

pub fn job_name_value(text: &str) -> Result<String, String> {
    let ok = !text.is_empty()
        && text.len() <= 100
        && !text.contains('@')
        && !text.chars().any(|c| c.is_control() || c == '/');
    if ok {
        Ok(text.to_string())
    } else {
        Err("expected a name of 1 to 100 characters without '@', '/' or control characters".into())
    }
}

/// `--metrics-listen`: an IP address and a port; a name would need a lookup, which a
/// listening address never does here.
pub fn metrics_listen_value(text: &str) -> Result<std::net::SocketAddr, String> {
    text.parse().map_err(|_| {
        "expected an IP address and a port, such as 127.0.0.1:9746, 0.0.0.0:9746 or [::]:9746 \
         (names are not looked up)"
            .into()
    })
}

/// Budget and circuit names: what a --once key accepts.
pub fn fleet_name_value(text: &str) -> Result<String, String> {
    once_key_value(text)
        .map_err(|_| "expected a name of 1 to 200 characters without control characters".into())
}

pub fn once_key_value(text: &str) -> Result<String, String> {
    // Characters, as the message says: a key in any script gets the same 200.
    let ok = !text.is_empty() && text.chars().count() <= 200 && !text.chars().any(char::is_control);
    if ok {
        Ok(text.to_string())
    } else {
        Err("expected a key of 1 to 200 characters without control characters".into())
    }
}

/// `--run-slot`: a slot as RFC 3339 UTC.
pub fn run_slot_value(text: &str) -> Result<jiff::Timestamp, String> {
    text.parse()
        .map_err(|_| "expected a slot in RFC 3339 (2026-01-01T03:00:00Z)".to_string())
}
