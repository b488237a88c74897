//! The options under "HTTP mode": retry's own words for the request (method, headers,
//! body, output), its idempotency key, and the statuses and waits that classify a
//! response. The status lists, the key and --max-retry-after apply in command mode
//! too, so they are in `BOTH_MODES`.

use std::path::PathBuf;
use std::time::Duration;

use clap::ValueHint;

use super::parsed;
use crate::cli::curl::DataArg;
use crate::cli::values::{MethodParser, header_name_value, key_value};
use crate::parse::{self, CodeSet};

// Each default, named once: the field's `default_value` and `Default` below read it.
const MAX_REDIRS: u32 = 10;
const IDEMPOTENCY_HEADER: &str = "Idempotency-Key";
const MAX_RETRY_AFTER: &str = "5m";

#[derive(clap::Args, Debug, Clone)]
#[group(skip)]
#[command(next_help_heading = super::HTTP)]
pub struct HttpArgs {
    /// HTTP method; default GET, or POST when a body is given (PUT with -T)
    ///
    /// Any method name is sent as given; GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS
    /// and TRACE are offered by the shell completions.
    #[arg(short = 'X', long = "request", value_name = "METHOD", value_parser = MethodParser, hide_possible_values = true)]
    pub method: Option<reqwest::Method>,

    /// Request header 'Name: value' (repeatable); @FILE reads header lines from FILE
    ///
    /// @FILE keeps secrets out of the process list. Header values are never logged.
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,

    /// Request body: DATA, @FILE or @- for stdin; read once, sent identically every attempt
    ///
    /// As with curl, carriage returns and newlines are removed from @FILE and @- (use
    /// --data-binary to keep them), and several -d-style options join with '&'.
    #[arg(
        short = 'd',
        long = "data",
        value_name = "DATA",
        conflicts_with = "json"
    )]
    pub data: Vec<String>,

    /// JSON request body (DATA, @FILE or @-), with Content-Type and Accept set to JSON
    #[arg(long, value_name = "DATA")]
    pub json: Option<String>,

    /// Write the successful body to FILE atomically; FILE is untouched if the run fails
    ///
    /// -o - is stdout, as with curl.
    #[arg(short = 'o', long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub output: Option<PathBuf>,

    /// Print the response status line and headers before the body
    #[arg(short = 'i', long)]
    pub include: bool,

    /// Limit on connecting
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", value_parser = parse::positive_duration)]
    pub connect_timeout: Option<Duration>,

    /// Skip TLS certificate verification
    #[arg(short = 'k', long)]
    pub insecure: bool,

    /// Redirects followed (0 = none)
    #[arg(allow_hyphen_values = true, long, value_name = "N", default_value_t = MAX_REDIRS)]
    pub max_redirs: u32,

    /// Send an idempotency key with every attempt: auto makes one UUID v4 for the run
    ///
    /// Any other VALUE is sent as given. With a key, non-idempotent requests (POST, PATCH)
    /// are retried like idempotent ones.
    #[arg(long, value_name = "auto|VALUE", value_parser = key_value)]
    pub idempotency_key: Option<String>,

    /// Header name for the idempotency key
    #[arg(long, value_name = "NAME", default_value = IDEMPOTENCY_HEADER, value_parser = header_name_value)]
    pub idempotency_header: reqwest::header::HeaderName,

    /// Allow retrying non-idempotent methods (POST, PATCH, ...) without a key
    #[arg(long)]
    pub retry_unsafe: bool,

    /// HTTP statuses that are retried (overrides the built-in classes)
    ///
    /// Every other status >= 400 is permanent. In command mode, the status curl -f (or
    /// wget, git) prints on stderr, e.g. --retry-on-status 503 -- curl -fsS URL.
    #[arg(allow_hyphen_values = true, long, value_name = "LIST", value_parser = parse::statuses)]
    pub retry_on_status: Option<CodeSet>,

    /// HTTP statuses that stop at once (overrides the built-in classes)
    ///
    /// In command mode, the status curl -f (or wget, git) prints on stderr.
    #[arg(allow_hyphen_values = true, long, value_name = "LIST", value_parser = parse::statuses)]
    pub stop_on_status: Option<CodeSet>,

    /// Longest Retry-After to obey; a longer one ends the run at once
    ///
    /// Rate-limit resets count the same way. The message says what the server asked.
    /// The wait W is compared, not the spread added to it: the sleep is W plus the
    /// --jitter mode applied to max(W, backoff delay), e.g. W + U(0, max(W, d)).
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", default_value = MAX_RETRY_AFTER, value_parser = parse::duration)]
    pub max_retry_after: Duration,

    /// Every -d-style argument in command-line order (filled in by `parse`).
    #[arg(skip)]
    pub data_args: Vec<DataArg>,
}

impl Default for HttpArgs {
    fn default() -> Self {
        HttpArgs {
            method: None,
            headers: Vec::new(),
            data: Vec::new(),
            json: None,
            output: None,
            include: false,
            connect_timeout: None,
            insecure: false,
            max_redirs: MAX_REDIRS,
            idempotency_key: None,
            idempotency_header: parsed(header_name_value, IDEMPOTENCY_HEADER),
            retry_unsafe: false,
            retry_on_status: None,
            stop_on_status: None,
            max_retry_after: parsed(parse::duration, MAX_RETRY_AFTER),
            data_args: Vec::new(),
        }
    }
}
