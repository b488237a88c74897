//! HTTP mode's settings, built once from the command line: the request (method,
//! URL, headers, body), the classification rules' inputs, where the body goes,
//! curl's output options and the client settings. A bad value is refused here,
//! naming its flag; a malformed URL is left to the attempt (exit 3). Sending the
//! request is `exec::http`'s job.

mod body;
mod client;
mod request;

use std::path::PathBuf;
use std::time::Duration;

pub use self::client::{ClientSettings, Family, HttpVersion, ProxyChoice};
pub use self::request::{ACCEPT_ENCODINGS, Request};
use super::KeyChoice;
use crate::classify::http::HttpRules;
use crate::cli::Cli;
use crate::exec::http::{Destination, WriteOut};
use crate::report;

pub struct HttpConfig {
    /// The URL as given, for the report and the logs.
    pub url: String,
    pub request: Request,
    pub rules: HttpRules,
    /// `-o FILE` (or `-O`), checked; stdout without it.
    pub destination: Destination,
    pub output: OutputOptions,
    /// `-i`: the status line and headers go before the body.
    pub include: bool,
    pub max_redirs: u32,
    pub max_retry_after: Duration,
    pub client: ClientSettings,
}

/// curl's output options (-w, -D, --fail-with-body, -C -).
pub struct OutputOptions {
    pub write_out: Option<WriteOut>,
    pub dump_header: Option<HeaderDump>,
    pub fail_with_body: bool,
    /// `-C -`: a body cut off is kept and the next attempt asks for the rest.
    pub resume: bool,
}

/// `-D`: where the final response's headers go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderDump {
    /// `-D -`.
    Stdout,
    File(PathBuf),
}

impl OutputOptions {
    fn from_cli(cli: &Cli) -> anyhow::Result<OutputOptions> {
        let write_out = cli.write_out.as_deref().map(WriteOut::new).transpose()?;
        let dump_header = match cli.dump_header.as_deref() {
            None => None,
            Some(path) if path == "-" => Some(HeaderDump::Stdout),
            Some(path) => {
                report::check_file_target("-D/--dump-header", path)?;
                Some(HeaderDump::File(path.to_path_buf()))
            }
        };
        Ok(OutputOptions {
            write_out,
            dump_header,
            fail_with_body: cli.fail_with_body,
            resume: cli.continue_at.is_some(),
        })
    }
}

impl HttpConfig {
    /// `key` is `--idempotency-key` as read once by `Config`.
    pub fn from_cli(cli: Cli, url: String, key: KeyChoice) -> anyhow::Result<HttpConfig> {
        let destination = Destination::new(cli.output.as_deref())?;
        let output = OutputOptions::from_cli(&cli)?;
        let request = Request::from_cli(&cli, &url, key)?;
        let rules = HttpRules {
            retry_on_status: cli.retry_on_status.clone(),
            stop_on_status: cli.stop_on_status.clone(),
            method: request.method.clone(),
            key_in_use: request.key_header.is_some(),
            retry_unsafe: cli.retry_unsafe,
            retry_all_errors: cli.retry_all_errors,
        };
        let client = ClientSettings::from_cli(&cli, request.url.as_ref().ok())?;
        Ok(HttpConfig {
            url,
            request,
            rules,
            destination,
            output,
            include: cli.include,
            max_redirs: cli.max_redirs,
            max_retry_after: cli.max_retry_after,
            client,
        })
    }
}
