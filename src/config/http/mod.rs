//! HTTP mode's settings, built once from the command line: the request (method,
//! URL as curl reads it, headers, the body built once or the `-T` upload), the
//! classification rules' inputs, where the body goes and curl's output options
//! ([`output`], [`write_out`]), and the client settings. A bad value is refused here, naming its flag; a malformed URL is
//! left to the attempt (exit 3). Sending the request is [`exec::http`](crate::exec::http)'s work.

mod body;
mod client;
mod output;
mod request;
mod upload;
mod url;
mod write_out;

use std::time::Duration;

pub use self::client::{ClientSettings, HttpVersion, ProxyChoice};
pub use self::output::{Destination, HeaderDump, OutputOptions};
pub use self::request::{ACCEPT_ENCODINGS, Request};
pub use self::upload::Payload;
pub use self::write_out::{Piece, WriteOut};
use super::KeyChoice;
use crate::classify::command::OutputRules;
use crate::cli::Cli;
use crate::parse::CodeSet;

#[derive(Clone)]
pub struct HttpConfig {
    /// The URL as given, for the report and the logs.
    pub url: String,
    pub request: Request,
    /// `--retry-on-status`, `--stop-on-status`: the statuses that override the table.
    pub retry_on_status: Option<CodeSet>,
    pub stop_on_status: Option<CodeSet>,
    /// `--retry-unsafe`: non-idempotent requests are retried without a key.
    pub retry_unsafe: bool,
    /// `--retry-all-errors`: every failure is transient if the request is safe to repeat.
    pub retry_all_errors: bool,
    /// `--stop-on-output`, `--retry-on-output`, `--success-on-output`: matched against
    /// the lines of a response body.
    pub body_rules: OutputRules,
    /// `-o FILE` (or `-O`), checked; stdout without it.
    pub destination: Destination,
    pub output: OutputOptions,
    /// `-i`: the status line and headers go before the body.
    pub include: bool,
    pub max_redirs: u32,
    pub max_retry_after: Duration,
    pub client: ClientSettings,
}

impl HttpConfig {
    /// `key` is `--idempotency-key` as read once by `Config`.
    pub fn from_cli(cli: Cli, url: String, key: KeyChoice) -> anyhow::Result<HttpConfig> {
        let destination = Destination::new(cli.http.output.as_deref())?;
        let output = OutputOptions::from_cli(&cli)?;
        let request = Request::from_cli(&cli, &url, key)?;
        let client = ClientSettings::from_cli(&cli, request.url.as_ref().ok())?;
        let body_rules = OutputRules {
            stop: cli.classification.stop_on_output.clone(),
            retry: cli.classification.retry_on_output.clone(),
            success: cli.classification.success_on_output.clone(),
        };
        if output.resume && body_rules.any() {
            anyhow::bail!(
                "-C/--continue-at: cannot be used with --stop-on-output, --retry-on-output or \
                 --success-on-output: a resumed body arrives in parts, and the rules judge a \
                 whole one; drop -C - or the output rule"
            );
        }
        Ok(HttpConfig {
            url,
            request,
            retry_on_status: cli.http.retry_on_status.clone(),
            stop_on_status: cli.http.stop_on_status.clone(),
            retry_unsafe: cli.http.retry_unsafe,
            retry_all_errors: cli.curl.retry_all_errors,
            body_rules,
            destination,
            output,
            include: cli.http.include,
            max_redirs: cli.http.max_redirs,
            max_retry_after: cli.http.max_retry_after,
            client,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::Method;
    use reqwest::header::{AUTHORIZATION, HeaderName};

    fn config(args: &[&str]) -> anyhow::Result<HttpConfig> {
        let cli = crate::cli::parse(args.iter().copied()).expect("the flags parse");
        let key = KeyChoice::from_flag(cli.http.idempotency_key.as_deref());
        let url = cli.target[0].to_string_lossy().into_owned();
        HttpConfig::from_cli(cli, url, key)
    }

    #[test]
    fn values_arrive_typed() {
        let c = config(&[
            "retry",
            "-X",
            "patch",
            "-D",
            "-",
            "--noproxy",
            "*",
            "-u",
            "me:pw",
            "--http2",
            "--idempotency-key",
            "auto",
            "-d",
            "a=1",
            "https://h/p",
        ])
        .unwrap();
        assert_eq!(c.request.method, Method::PATCH);
        assert_eq!(c.request.key, KeyChoice::Auto);
        assert_eq!(
            c.request.key_header,
            Some(HeaderName::from_static("idempotency-key"))
        );
        assert!(matches!(&c.request.body, Some(Payload::Bytes(b)) if b == &b"a=1"[..]));
        assert!(c.request.headers.contains_key(AUTHORIZATION));
        assert_eq!(c.request.shown_user.as_deref(), Some("me:***"));
        assert_eq!(c.output.dump_header, Some(HeaderDump::Stdout));
        assert!(matches!(c.client.proxy, ProxyChoice::Direct));
        assert_eq!(
            c.client.version,
            HttpVersion::Http2 {
                prior_knowledge: false
            }
        );
    }

    #[test]
    fn the_run_key_goes_in_only_when_asked_for() {
        let asked = config(&["retry", "--idempotency-key", "k1", "http://h/"]).unwrap();
        let sent = asked.request.with_run_key("k1").unwrap();
        assert_eq!(sent.headers["idempotency-key"], "k1");
        let default = config(&["retry", "http://h/"]).unwrap();
        assert!(default.request.key_header.is_none());
        let sent = default.request.with_run_key("uuid").unwrap();
        assert!(!sent.headers.contains_key("idempotency-key"));
    }

    #[test]
    fn a_malformed_url_is_left_to_the_attempt() {
        let c = config(&["retry", "http://"]).unwrap();
        assert!(c.request.url.unwrap_err().starts_with("malformed URL"));
        assert!(config(&["retry", "-u", "nopassword", "http://h/"]).is_err());
    }
}
