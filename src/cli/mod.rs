//! The clap definition: the one source of every flag, its help text, the man page
//! and the shell completions, and the parse that runs before `config`. Beside it:
//! [`help`] (the prose of `--help` and the man page), [`values`] (retry's value parsers,
//! which return the types the program takes), [`modes`] (which options belong to one
//! mode), [`curl`] (curl's value parsers), [`curl_words`] (curl's refused options and
//! aliases), [`spellings`] (other tools' words for retry's options) and [`plain`] (a
//! command line without options, read without clap). A bad value is
//! refused here, before anything runs; checking the flags
//! against each other is `config`'s work.

pub mod curl;
pub mod curl_words;
pub mod help;
mod modes;
mod plain;
pub mod spellings;
pub mod usage;
mod values;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Parser, ValueEnum, ValueHint};

use crate::cron;
use crate::domain::{
    BackoffKind, CatchUp, JitterKind, LeaseTtl, LogFormat, Overlap, ProfileName, Protocols,
    StdinMode, Throttled,
};
use crate::parse::{self, CodeSet};
use curl::{DataArg, ResolveEntry};
pub use modes::{Mode, mode_of};
pub use values::signal_value;
use values::{
    MethodParser, continue_value, exit_codes_value, fleet_name_value, header_name_value,
    hook_value, job_name_value, key_value, lease_ttl_value, metrics_listen_value, once_key_value,
    regex_value, run_slot_value,
};

const TIMING: &str = "Attempts and timing";
const CLASSIFY: &str = "Classification (command mode)";
const PROCESS: &str = "Process handling (command mode)";
const HTTP: &str = "HTTP mode";
const CURL: &str = "curl's options (HTTP mode)";
const JOBS: &str = "Scheduled jobs";
const HOOKS: &str = "Hooks";
const SCHEDULE: &str = "Running on a schedule";
const FLEET: &str = "Fleets (state shared through --state)";
const OUTPUT: &str = "Output and reporting";

const AFTER_HELP: &str = "Run `retry --help` for details and examples.";

// Value flags take `allow_hyphen_values`, so `--max-delay -1s` is refused as a bad
// value of --max-delay rather than as an unknown flag.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "retry",
    version,
    about = "Run a command or HTTP request, retrying only failures another attempt could fix",
    long_about = "Run a command or an HTTP request, retrying only the failures that another \
                  attempt could fix: transient failures are retried with jittered exponential \
                  backoff (or as long as the server's Retry-After says), permanent ones stop \
                  at once, and the run ends after the attempt limit or the time limit with \
                  the last failure's exit status.",
    override_usage = "retry [OPTIONS] [--] COMMAND [ARG]...\n       retry [OPTIONS] URL",
    after_help = AFTER_HELP,
    max_term_width = help::MAX_WIDTH,
    group(clap::ArgGroup::new("scheduling").args(["schedule", "crontab"]).multiple(false))
)]
pub struct Cli {
    /// Total attempts, the first included (1 = never retry; 0 = no limit, with --max-time)
    ///
    /// -a 0 --max-time 10m keeps attempting until the time limit runs out (RETRY_ATTEMPTS is
    /// then 0).
    #[arg(allow_hyphen_values = true, short = 'a', long, value_name = "N", default_value = "5", value_parser = parse::attempt_limit, help_heading = TIMING)]
    pub attempts: u32,

    /// Base delay before the first retry
    ///
    /// Later delays grow as --backoff says. DUR is 250ms, 2s, 1m30s or a number of
    /// seconds such as 1.5.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", default_value = "1s", value_parser = parse::duration, help_heading = TIMING)]
    pub delay: Duration,

    /// Cap on any one backoff sleep, applied before jitter [default: 30s, or --delay when longer]
    ///
    /// Never below --delay: a --max-delay shorter than --delay is refused.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", value_parser = parse::duration, help_heading = TIMING)]
    pub max_delay: Option<Duration>,

    /// How the delay grows from one retry to the next
    #[arg(long, value_name = "KIND", value_enum, default_value_t = BackoffKind::Exponential, help_heading = TIMING)]
    pub backoff: BackoffKind,

    /// Exponential growth factor, above 1 (at most 1000)
    #[arg(allow_hyphen_values = true, long, value_name = "F", default_value = "2", value_parser = parse::factor, help_heading = TIMING)]
    pub factor: f64,

    /// How each sleep d is randomised, so clients that failed together return apart
    #[arg(short = 'j', long, value_name = "KIND", value_enum, default_value_t = JitterKind::Full, help_heading = TIMING)]
    pub jitter: JitterKind,

    /// The sleeps before retry 1, 2, 3 ..., the last one repeating, e.g. 1s,5s,30s
    ///
    /// Instead of --delay, --backoff, --factor and --max-delay. Jitter applies as usual:
    /// -j none sleeps exactly these.
    #[arg(long, value_name = "LIST", value_parser = parse::delay_list, conflicts_with_all = ["delay", "backoff", "factor", "max_delay", "retry_delay"], help_heading = TIMING)]
    pub delays: Option<parse::DelayList>,

    /// Succeed only after N successful attempts in a row, e.g. --consecutive 3
    ///
    /// A failure starts the count again; -a and --max-time count every attempt. The sleep
    /// after a success is --delay; after a failure, the backoff from its start.
    #[arg(allow_hyphen_values = true, long, value_name = "N", value_parser = parse::in_a_row, help_heading = TIMING)]
    pub consecutive: Option<u32>,

    /// Attempt again after every success, until an attempt fails (hunting a flaky test)
    ///
    /// The first failure ends the run with its status; if every attempt succeeds, retry
    /// exits 0 saying no failure was seen. E.g. --until-failure -a 100 -- cargo test flaky.
    #[arg(long, conflicts_with_all = ["consecutive", "success_on", "once", "schedule"], help_heading = TIMING)]
    pub until_failure: bool,

    /// Let the backoff alone decide: ignore Retry-After, RateLimit-Reset and RETRY_CONTROL waits
    ///
    /// As urllib3's respect_retry_after_header=False, e.g. --ignore-retry-after --delay 5s.
    /// What was asked is still logged and reported; --max-retry-after no longer applies.
    #[arg(long, conflicts_with = "max_retry_after", help_heading = TIMING)]
    pub ignore_retry_after: bool,

    /// Limit on one attempt; an attempt that runs out is a transient failure
    ///
    /// In command mode the process group, and the processes that left it, get SIGTERM, then
    /// SIGKILL after --kill-after; if it was the last attempt, retry exits 124.
    ///
    /// -m is curl's spelling of the same limit (curl's per-transfer --max-time). 0 means
    /// no limit, as `timeout 0` and curl's -m 0.
    #[arg(allow_hyphen_values = true, short = 't', visible_short_alias = 'm', long, value_name = "DUR", value_parser = parse::duration, help_heading = TIMING)]
    pub timeout: Option<Duration>,

    /// Wall-clock time limit for the attempts and the waits before and between them
    ///
    /// No sleep or attempt starts that would end past it, each attempt's --timeout is
    /// cut to what is left, and --on-retry ends with it. What follows the last attempt
    /// has its own limits: --on-give-up and --on-success still run, under --hook-timeout.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", value_parser = parse::positive_duration, help_heading = TIMING)]
    pub max_time: Option<Duration>,

    /// Seed the jitter, for reproducible schedules
    #[arg(allow_hyphen_values = true, long, value_name = "N", help_heading = TIMING)]
    pub seed: Option<u64>,

    /// Retry even when running inside another retry (RETRY_DEPTH >= 1)
    #[arg(long, help_heading = TIMING)]
    pub allow_nested: bool,

    /// Exit-code vocabulary of a known tool; auto picks one from the command's name
    #[arg(long, value_name = "NAME", value_enum, default_value_t = ProfileName::Auto, help_heading = CLASSIFY)]
    pub profile: ProfileName,

    /// Exit codes that are permanent failures, e.g. 2,64-78
    ///
    /// An attempt stopped by --timeout counts as exit 124: --stop-on 124 makes timeouts
    /// permanent.
    #[arg(allow_hyphen_values = true, long, value_name = "LIST", value_parser = exit_codes_value("--stop-on"), help_heading = CLASSIFY)]
    pub stop_on: Option<CodeSet>,

    /// Exit codes that are retried; every other non-zero exit becomes permanent, e.g. 75
    ///
    /// An attempt stopped by --timeout counts as exit 124: it is retried only when LIST
    /// names 124.
    #[arg(allow_hyphen_values = true, long, value_name = "LIST", value_parser = exit_codes_value("--retry-on"), help_heading = CLASSIFY)]
    pub retry_on: Option<CodeSet>,

    /// Exit codes that count as success, e.g. 0,1 for grep
    #[arg(allow_hyphen_values = true, long, value_name = "LIST", value_parser = parse::exit_codes, help_heading = CLASSIFY)]
    pub success_on: Option<CodeSet>,

    /// An output line matching REGEX makes the attempt a permanent failure (repeatable)
    ///
    /// Lines of stdout and stderr are checked; this rule comes first. Output still streams
    /// live and in order. In HTTP mode the response body's lines (its first MiB, decoded)
    /// are checked, and a body a rule made a failure is never written.
    #[arg(long, value_name = "REGEX", value_parser = regex_value, help_heading = CLASSIFY)]
    pub stop_on_output: Vec<regex::bytes::Regex>,

    /// An output line matching REGEX makes the attempt transient, even on exit 0 (repeatable)
    ///
    /// Lines of stdout and stderr are checked after --stop-on-output and before the exit
    /// code rules. In HTTP mode the response body's lines, before the status rules, e.g.
    /// --retry-on-output ThrottlingException.
    #[arg(long, value_name = "REGEX", value_parser = regex_value, help_heading = CLASSIFY)]
    pub retry_on_output: Vec<regex::bytes::Regex>,

    /// An output line matching REGEX makes the attempt a success, whatever its exit (repeatable)
    ///
    /// Checked after --retry-on-output and before the exit code rules, e.g.
    /// --success-on-output '^Already up to date'. In HTTP mode the response body's lines.
    #[arg(long, value_name = "REGEX", value_parser = regex_value, help_heading = CLASSIFY)]
    pub success_on_output: Vec<regex::bytes::Regex>,

    /// Where the command's stdin comes from on each attempt
    #[arg(long, value_name = "MODE", value_enum, default_value_t = StdinMode::Auto, help_heading = PROCESS)]
    pub stdin: StdinMode,

    /// Spool each attempt's stdout and write only the final attempt's
    ///
    /// The spool moves to disk past a few MiB. Only the attempt that succeeded, or the last
    /// one, reaches stdout, so a pipeline downstream sees exactly one attempt's output.
    #[arg(long, help_heading = PROCESS)]
    pub hold_stdout: bool,

    /// Spool each attempt's stderr and write only the final attempt's, as --hold-stdout
    ///
    /// retry's own lines are not held. E.g. --hold-stdout --hold-stderr: a log sees one
    /// attempt's output, stdout first.
    #[arg(long, help_heading = PROCESS)]
    pub hold_stderr: bool,

    /// After --timeout's SIGTERM, wait this long before SIGKILL
    ///
    /// An attempt that needed the SIGKILL exits 137, as timeout(1) does (to exit code rules
    /// it is still a timeout, 124); the log says "timed out after 1s, killed 5s later".
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", default_value = "5s", value_parser = parse::duration, help_heading = PROCESS)]
    pub kill_after: Duration,

    /// The signal --timeout sends first, e.g. --signal INT (GNU timeout's -s)
    ///
    /// A name (INT, SIGINT) or number. SIGCONT follows it, and SIGKILL after --kill-after.
    #[arg(long, value_name = "SIG", default_value = "TERM", value_parser = signal_value, help_heading = PROCESS)]
    pub signal: crate::sys::Signal,

    /// A timed-out attempt exits with its own status (128+N for signal N), not 124
    ///
    /// As GNU timeout's --preserve-status. Exit code rules still see 124.
    #[arg(long, help_heading = PROCESS)]
    pub preserve_status: bool,

    /// HTTP method; default GET, or POST when a body is given (PUT with -T)
    ///
    /// Any method name is sent as given; GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS
    /// and TRACE are offered by the shell completions.
    #[arg(short = 'X', long = "request", value_name = "METHOD", value_parser = MethodParser, hide_possible_values = true, help_heading = HTTP)]
    pub method: Option<reqwest::Method>,

    /// Request header 'Name: value' (repeatable); @FILE reads header lines from FILE
    ///
    /// @FILE keeps secrets out of the process list. Header values are never logged.
    #[arg(short = 'H', long = "header", value_name = "HEADER", help_heading = HTTP)]
    pub headers: Vec<String>,

    /// Request body: DATA, @FILE or @- for stdin; read once, sent identically every attempt
    ///
    /// As with curl, carriage returns and newlines are removed from @FILE and @- (use
    /// --data-binary to keep them), and several -d-style options join with '&'.
    #[arg(short = 'd', long = "data", value_name = "DATA", conflicts_with = "json", help_heading = HTTP)]
    pub data: Vec<String>,

    /// JSON request body (DATA, @FILE or @-), with Content-Type and Accept set to JSON
    #[arg(long, value_name = "DATA", help_heading = HTTP)]
    pub json: Option<String>,

    /// Write the successful body to FILE atomically; FILE is untouched if the run fails
    ///
    /// -o - is stdout, as with curl.
    #[arg(short = 'o', long, value_name = "FILE", value_hint = ValueHint::FilePath, help_heading = HTTP)]
    pub output: Option<PathBuf>,

    /// Print the response status line and headers before the body
    #[arg(short = 'i', long, help_heading = HTTP)]
    pub include: bool,

    /// Limit on connecting
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", value_parser = parse::positive_duration, help_heading = HTTP)]
    pub connect_timeout: Option<Duration>,

    /// Skip TLS certificate verification
    #[arg(short = 'k', long, help_heading = HTTP)]
    pub insecure: bool,

    /// Redirects followed (0 = none)
    #[arg(allow_hyphen_values = true, long, value_name = "N", default_value = "10", help_heading = HTTP)]
    pub max_redirs: u32,

    /// Send an idempotency key with every attempt: auto makes one UUID v4 for the run
    ///
    /// Any other VALUE is sent as given. With a key, non-idempotent requests (POST, PATCH)
    /// are retried like idempotent ones.
    #[arg(long, value_name = "auto|VALUE", value_parser = key_value, help_heading = HTTP)]
    pub idempotency_key: Option<String>,

    /// Header name for the idempotency key
    #[arg(long, value_name = "NAME", default_value = "Idempotency-Key", value_parser = header_name_value, help_heading = HTTP)]
    pub idempotency_header: reqwest::header::HeaderName,

    /// Allow retrying non-idempotent methods (POST, PATCH, ...) without a key
    #[arg(long, help_heading = HTTP)]
    pub retry_unsafe: bool,

    /// HTTP statuses that are retried (overrides the built-in classes)
    ///
    /// Every other status >= 400 is permanent. In command mode, the status curl -f (or
    /// wget, git) prints on stderr, e.g. --retry-on-status 503 -- curl -fsS URL.
    #[arg(allow_hyphen_values = true, long, value_name = "LIST", value_parser = parse::statuses, help_heading = HTTP)]
    pub retry_on_status: Option<CodeSet>,

    /// HTTP statuses that stop at once (overrides the built-in classes)
    ///
    /// In command mode, the status curl -f (or wget, git) prints on stderr.
    #[arg(allow_hyphen_values = true, long, value_name = "LIST", value_parser = parse::statuses, help_heading = HTTP)]
    pub stop_on_status: Option<CodeSet>,

    /// Longest Retry-After to obey; a longer one ends the run at once
    ///
    /// Rate-limit resets count the same way. The message says what the server asked.
    /// The wait W is compared, not the spread added to it: the sleep is W plus the
    /// --jitter mode applied to max(W, backoff delay), e.g. W + U(0, max(W, d)).
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", default_value = "5m", value_parser = parse::duration, help_heading = HTTP)]
    pub max_retry_after: Duration,

    // ---- curl output options: curl's meaning, HTTP mode only (see `curl`) ----
    /// Accepted: a status >= 400 always fails here (exit 22)
    #[arg(short = 'f', long, help_heading = CURL)]
    pub fail: bool,

    /// On giving up with a status >= 400, output that response's body
    ///
    /// The body goes to stdout, or to -o FILE; the exit status stays 22.
    #[arg(long, help_heading = CURL)]
    pub fail_with_body: bool,

    /// Nothing on stderr (-qq); with -S, the final error line only (-q)
    ///
    /// With -v (-sv) the verbose lines are shown, as curl shows them.
    #[arg(short = 's', long, help_heading = CURL)]
    pub silent: bool,

    /// With -s, still print the final error line
    #[arg(short = 'S', long, help_heading = CURL)]
    pub show_error: bool,

    /// Accepted: redirects are always followed (--max-redirs 0 turns that off)
    #[arg(short = 'L', long, help_heading = CURL)]
    pub location: bool,

    /// Send HEAD; the response headers are the output
    #[arg(short = 'I', long, conflicts_with_all = ["method", "data", "json"], help_heading = CURL)]
    pub head: bool,

    /// After the final attempt, print FORMAT (curl's %{variables}; @FILE reads it)
    ///
    /// Variables, as %{NAME}: http_code, response_code, url_effective, time_total,
    /// size_download, size_header, num_redirects, content_type, exitcode, errormsg,
    /// num_retries, method; %{stdout} and %{stderr} switch the stream; %header{NAME} is a
    /// header of the final response. Escapes: \n \r \t \\ and %%. An unknown variable is
    /// refused before anything runs.
    #[arg(short = 'w', long, value_name = "FORMAT", allow_hyphen_values = true, help_heading = CURL)]
    pub write_out: Option<String>,

    /// Write the final response headers to FILE (- for stdout)
    ///
    /// After redirects every header block of the chain is written, as curl -L does.
    #[arg(short = 'D', long, value_name = "FILE", help_heading = CURL)]
    pub dump_header: Option<PathBuf>,

    /// -o with the URL's last path segment as FILE
    #[arg(short = 'O', long, conflicts_with = "output", help_heading = CURL)]
    pub remote_name: bool,

    /// curl's: N retries, the same as -a N+1
    ///
    /// Given with -a it is refused: say it once.
    #[arg(allow_hyphen_values = true, long = "retry", value_name = "N", conflicts_with = "attempts", value_parser = parse::retries, help_heading = CURL)]
    pub curl_retry: Option<u32>,

    /// curl's: sleep exactly SECONDS before each retry (--delay S --backoff constant -j none)
    ///
    /// With -j the sleeps are spread as -j says. 0 keeps the default backoff, as in curl.
    /// Given with --delay, --backoff or --delays it is refused.
    #[arg(allow_hyphen_values = true, long, value_name = "SECONDS", conflicts_with_all = ["delay", "backoff"], value_parser = parse::duration, help_heading = CURL)]
    pub retry_delay: Option<Duration>,

    /// curl's: no retry starts once SECONDS have passed since the first attempt started
    ///
    /// As in curl, an attempt in flight is not cut: it may run past the limit (-t/-m
    /// limit an attempt, --max-time the whole run). A sleep that would end past it is
    /// not started. 0 means no limit, as in curl. Given with --max-time it is refused.
    #[arg(allow_hyphen_values = true, long, value_name = "SECONDS", conflicts_with = "max_time", value_parser = parse::duration, help_heading = CURL)]
    pub retry_max_time: Option<Duration>,

    /// Accepted: a refused connection is always retried
    #[arg(long, help_heading = CURL)]
    pub retry_connrefused: bool,

    /// Every failure is transient, 4xx included, if the request is safe to repeat
    ///
    /// Safe to repeat: an idempotent method, or a key (--idempotency-key) or
    /// --retry-unsafe. A malformed URL still stops at once.
    #[arg(long, help_heading = CURL)]
    pub retry_all_errors: bool,

    /// With -o, resume a body cut off mid-way (only -C -)
    ///
    /// The next attempt asks for the rest (Range, with If-Range carrying the strong ETag or
    /// the Last-Modified of the response that began it). A 206 is appended only when it
    /// carries that validator and its Content-Range runs from the end of the part to the
    /// length the first response declared; anything else fetches the whole body again. A
    /// response without a validator or a length is not resumed. A FILE already there is
    /// resumed from on the first attempt, as curl does (Range from its length, no If-Range).
    /// FILE appears only when complete and exactly as long as declared.
    #[arg(short = 'C', long, value_name = "-", allow_hyphen_values = true, value_parser = continue_value, help_heading = CURL)]
    pub continue_at: Option<String>,
    // ---- end of curl output options ----
    // ---- curl request options (docs/internals.md, "curl's vocabulary"); HTTP mode only ----
    /// Basic authentication; the password is shown as *** everywhere
    ///
    /// Not sent to another host after a redirect. curl's password prompt is not supported.
    #[arg(short = 'u', long = "user", value_name = "USER:PASSWORD", help_heading = CURL)]
    pub user: Option<String>,

    /// Accepted: -u sends Basic authentication, as curl does by default
    #[arg(long, hide_short_help = true, help_heading = CURL)]
    pub basic: bool,

    /// Protocols the URL may use, in curl's syntax: =https, -all,+https or http,https
    ///
    /// Names are read left to right from both (http and https): a name alone or with +
    /// permits, with - denies, with = permits only that one; all stands for every
    /// protocol. A URL outside them is exit 1 (curl's unsupported protocol), permanent.
    #[arg(long, value_name = "LIST", allow_hyphen_values = true, value_parser = Protocols::parse, hide_short_help = true, help_heading = CURL)]
    pub proto: Option<Protocols>,

    /// Protocols a redirect may go to, in --proto's syntax (--proto applies as well)
    ///
    /// A redirect outside them is exit 1, permanent.
    #[arg(long, value_name = "LIST", allow_hyphen_values = true, value_parser = Protocols::parse, hide_short_help = true, help_heading = CURL)]
    pub proto_redir: Option<Protocols>,

    /// User-Agent header ("" sends none)
    #[arg(short = 'A', long = "user-agent", value_name = "NAME", value_parser = curl::user_agent_value, help_heading = CURL)]
    pub user_agent: Option<String>,

    /// Referer header
    #[arg(short = 'e', long = "referer", value_name = "URL", value_parser = curl::referer_value, help_heading = CURL)]
    pub referer: Option<String>,

    /// Cookie header 'NAME=VALUE; NAME2=VALUE2' (repeatable; curl's cookie file is refused)
    #[arg(short = 'b', long = "cookie", value_name = "DATA", value_parser = curl::cookie_value, help_heading = CURL)]
    pub cookie: Vec<String>,

    /// Request body: DATA, @FILE or @- sent byte for byte (newlines kept)
    #[arg(long = "data-binary", value_name = "DATA", conflicts_with = "json", help_heading = CURL)]
    pub data_binary: Vec<String>,

    /// Request body: DATA as given; a leading @ is not a file
    #[arg(long = "data-raw", value_name = "DATA", conflicts_with = "json", hide_short_help = true, help_heading = CURL)]
    pub data_raw: Vec<String>,

    /// URL-encoded body part: CONTENT, =CONTENT, NAME=CONTENT, @FILE or NAME@FILE
    #[arg(long = "data-urlencode", value_name = "DATA", conflicts_with = "json", hide_short_help = true, help_heading = CURL)]
    pub data_urlencode: Vec<String>,

    /// Every -d-style argument in command-line order (filled in by `parse`).
    #[arg(skip)]
    pub data_args: Vec<DataArg>,

    /// Whether --stdin was given, not defaulted (filled in by `parse`).
    #[arg(skip)]
    pub stdin_given: bool,

    /// Whether -j was given, not defaulted (filled in by `parse`).
    #[arg(skip)]
    pub jitter_given: bool,

    /// Upload FILE as the body of a PUT (- reads stdin), as it is
    ///
    /// No Content-Type unless one is given with -H. FILE is opened again and streamed
    /// from its start on every attempt; stdin (and a FIFO) is recorded once and replayed.
    /// When the URL's path is empty or ends with /, FILE's name is appended to it.
    #[arg(short = 'T', long = "upload-file", value_name = "FILE", value_hint = ValueHint::FilePath,
          conflicts_with_all = ["data", "data_binary", "data_raw", "data_urlencode", "json", "form", "get", "head"],
          help_heading = CURL)]
    pub upload_file: Option<String>,

    /// Send [ ] { } in the URL as they are: no globbing
    ///
    /// Without -g a URL with these characters in its path or query is refused: curl
    /// would expand it into several transfers. { and } in the path go percent-encoded.
    #[arg(short = 'g', long, help_heading = CURL)]
    pub globoff: bool,

    /// Send the -d-style data in the URL's query string, with GET
    #[arg(short = 'G', long = "get", conflicts_with = "json", help_heading = CURL)]
    pub get: bool,

    /// Multipart form field: NAME=VALUE, NAME=@FILE (upload) or NAME=<FILE (repeatable)
    ///
    /// ;type=MIME and ;filename=NAME may follow. The body is built once, boundary
    /// included, and every attempt sends the same bytes.
    #[arg(short = 'F', long = "form", value_name = "NAME=VALUE", value_parser = curl::form_value,
          conflicts_with_all = ["data", "data_binary", "data_raw", "data_urlencode", "json", "get"], help_heading = CURL)]
    pub form: Vec<curl::FormField>,

    /// Ask for gzip, deflate, br or zstd and decode the body (otherwise never decoded)
    #[arg(long, help_heading = CURL)]
    pub compressed: bool,

    /// Use this proxy instead of the environment's: http://, https://, socks5[h]://, socks4[a]://
    ///
    /// HOST:PORT alone is http://. socks5h:// and socks4a:// leave the name to the proxy to
    /// resolve. The environment's HTTP_PROXY, HTTPS_PROXY and ALL_PROXY may name a SOCKS
    /// proxy too.
    // Help text, not rustdoc: brackets and URLs are what the user types.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(short = 'x', long = "proxy", value_name = "URL", value_parser = curl::proxy_value, help_heading = CURL)]
    pub proxy: Option<curl::ProxyUrl>,

    /// Hosts reached without a proxy: comma-separated names, domains, addresses or *
    ///
    /// Replaces NO_PROXY; applies to -x and to the environment's proxies alike.
    #[arg(long = "noproxy", value_name = "LIST", value_parser = curl::noproxy_value, hide_short_help = true, help_heading = CURL)]
    pub noproxy: Option<String>,

    /// Trust only the CA certificates (PEM) in FILE
    #[arg(long, value_name = "FILE", hide_short_help = true, help_heading = CURL)]
    pub cacert: Option<PathBuf>,

    /// Client certificate (PEM); FILE may hold the private key too
    #[arg(short = 'E', long, value_name = "FILE", hide_short_help = true, help_heading = CURL)]
    pub cert: Option<PathBuf>,

    /// Private key (PEM) for --cert
    #[arg(long, value_name = "FILE", requires = "cert", hide_short_help = true, help_heading = CURL)]
    pub key: Option<PathBuf>,

    /// Use HTTP/1.1 only
    #[arg(long = "http1.1", conflicts_with = "http2", hide_short_help = true, help_heading = CURL)]
    pub http1_1: bool,

    /// Use HTTP/2: over https:// offered first by ALPN (HTTP/1.1 if the server declines, as with
    /// curl); over http:// prior knowledge (h2c), without curl's Upgrade request
    #[arg(long = "http2", hide_short_help = true, help_heading = CURL)]
    pub http2: bool,

    /// Connect to ADDR for HOST:PORT instead of resolving HOST (repeatable)
    #[arg(long, value_name = "HOST:PORT:ADDR", value_parser = curl::resolve_value, hide_short_help = true, help_heading = CURL)]
    pub resolve: Vec<ResolveEntry>,

    /// Resolve names to IPv4 addresses only
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6", hide_short_help = true, help_heading = CURL)]
    pub ipv4: bool,

    /// Resolve names to IPv6 addresses only
    #[arg(short = '6', long = "ipv6", hide_short_help = true, help_heading = CURL)]
    pub ipv6: bool,

    /// Talk HTTP over the Unix socket PATH (the URL's host is only the Host header)
    #[arg(long = "unix-socket", value_name = "PATH", conflicts_with = "proxy", hide_short_help = true, help_heading = CURL)]
    pub unix_socket: Option<PathBuf>,
    // ---- end of curl request options ----
    /// Run only while holding a lock: a file PATH (flock) or postgres://...#NAME
    ///
    /// A directory is locked itself, as flock(1) locks one.
    // The text: the configuration reads it with the storage layer's grammar.
    #[arg(long, value_name = "TARGET", value_hint = ValueHint::FilePath, help_heading = JOBS)]
    pub lock: Option<String>,

    /// Wait this long for a busy lock before skipping (0 = skip at once)
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", default_value = "0", value_parser = parse::duration, help_heading = JOBS)]
    pub lock_wait: Duration,

    /// Exit status when skipped because the lock is busy
    #[arg(allow_hyphen_values = true, long, value_name = "CODE", default_value = "0", value_parser = clap::value_parser!(u8), help_heading = JOBS)]
    pub busy_exit: u8,

    /// Skip if KEY already succeeded; record KEY after success
    ///
    /// A skip exits 0. Otherwise the run holds a lock on KEY, so concurrent runs with the
    /// same key never both run, and a failed run records nothing.
    #[arg(long, value_name = "KEY", value_parser = once_key_value, help_heading = JOBS)]
    pub once: Option<String>,

    /// Where markers, schedule records, budgets, circuits and fencing counters live: a
    /// directory or postgres://... [default: $XDG_STATE_HOME/retry or ~/.local/state/retry]
    ///
    /// A directory is created with mode 0700; an existing one must be owned by you or root
    /// and not writable by group or others, and a symbolic link where a state file goes is
    /// refused (exit 125): retry never writes outside it.
    // The text: the configuration reads it with the storage layer's grammar.
    #[arg(long, value_name = "TARGET", value_hint = ValueHint::DirPath, help_heading = JOBS)]
    pub state: Option<String>,

    /// Lifetime of a PostgreSQL lease, 3s to 1h [default: 15s]
    ///
    /// A PostgreSQL lock (--lock postgres://...#NAME, a --once key or a slot in --state
    /// postgres://...) is a lease renewed every TTL/3; a holder that cannot renew it for
    /// 2/3 of TTL loses it and its command is killed before TTL runs out. A holder killed by
    /// SIGKILL keeps others out for up to TTL: a shorter TTL frees the lock sooner, a
    /// longer one rides out longer network trouble.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", value_parser = lease_ttl_value, help_heading = JOBS)]
    pub lease_ttl: Option<LeaseTtl>,

    /// Run CMD with sh -c after a failed attempt that will be retried, during the sleep
    ///
    /// The next attempt starts when the sleep is over or CMD has ended, whichever is later;
    /// both count towards --max-time. CMD gets RETRY_NEXT_DELAY_MS besides the variables
    /// every hook gets (see Environment).
    #[arg(long, value_name = "CMD", value_parser = hook_value, help_heading = HOOKS)]
    pub on_retry: Option<String>,

    /// Run CMD with sh -c after the last attempt failed, with the report JSON on stdin
    ///
    /// Runs when at least one attempt ran and the run ends without success for any reason
    /// but a signal; never after a skip. How failed work reaches a queue to try later.
    #[arg(long, value_name = "CMD", value_parser = hook_value, help_heading = HOOKS)]
    pub on_give_up: Option<String>,

    /// Run CMD with sh -c after an attempt succeeded, with the report JSON on stdin
    ///
    /// How a dead-man monitor hears of success, e.g. curl -fsS https://hc-ping.com/UUID.
    // Help text, not rustdoc: brackets and URLs are what the user types.
    #[allow(rustdoc::bare_urls)]
    #[arg(long, value_name = "CMD", value_parser = hook_value, help_heading = HOOKS)]
    pub on_success: Option<String>,

    /// Limit on each hook: its processes get SIGTERM, then SIGKILL a second later
    ///
    /// Its processes are its group and those that left it; what a hook leaves running
    /// when it ends is ended the same way. A hook's output goes to stderr. A hook that fails or times out is a warning: it never
    /// changes the exit status or a retry decision.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", default_value = "30s", value_parser = parse::positive_duration, help_heading = HOOKS)]
    pub hook_timeout: Duration,

    /// Run in the foreground, one run at each time CRON names
    ///
    /// Five fields (minute hour day month weekday), or seven (second minute hour day month
    /// weekday year, as supercronic reads them); names, ranges, lists, steps, @hourly,
    /// @daily (@midnight), @weekly, @monthly, @yearly (@annually), or @every DUR (slots at
    /// whole multiples of DUR since the Unix epoch). Six fields are refused: tools read
    /// them as seconds first or as year last; @reboot is refused (run the command before
    /// the scheduler starts). With both day fields restricted a day matching either runs,
    /// and one that begins with * is unrestricted (cronie's rule). Each slot runs once
    /// across schedulers sharing --state (key JOB@SLOT); stop with SIGINT or SIGTERM.
    #[arg(long, value_name = "CRON", conflicts_with_all = ["once", "busy_exit"], value_parser = cron::Expression::parse, help_heading = SCHEDULE)]
    pub schedule: Option<cron::Expression>,

    /// Run every job of a crontab file in this one process
    ///
    /// One job a line: CRON COMMAND (COMMAND run by /bin/sh -c, on Windows cmd /c), NAME=VALUE and
    /// CRON_TZ=ZONE lines for the jobs below them, # comments; a line's own retry options
    /// before -- when the text after CRON starts with -. Options given here apply to every
    /// job; a line's own override them. The whole file is checked first (FILE:LINE).
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath, help_heading = SCHEDULE)]
    pub crontab: Option<std::path::PathBuf>,

    /// How a crontab's jobs' output is written: each line labelled with its job and slot, or raw
    #[arg(long, value_name = "HOW", value_enum, default_value_t = JobOutput::Labelled, requires = "crontab", help_heading = SCHEDULE)]
    pub job_output: JobOutput,

    /// Run one slot of the schedule and exit (a crontab's scheduler runs each slot so)
    #[arg(long, value_name = "SLOT", hide = true, requires = "schedule", value_parser = run_slot_value)]
    pub run_slot: Option<jiff::Timestamp>,

    /// The descriptor a slot run writes its own lines to (the crontab scheduler's stderr)
    #[arg(long, value_name = "FD", hide = true, requires = "run_slot", value_parser = clap::value_parser!(i32).range(3..))]
    pub slot_log_fd: Option<i32>,

    /// The job's name in slot keys, locks and logs
    /// [default: the command's base name (or the URL's host) and 8 hex digits of its SHA-256]
    #[arg(long, value_name = "NAME", requires = "scheduling", value_parser = job_name_value, help_heading = SCHEDULE)]
    pub job: Option<String>,

    /// What to do with missed slots (no record in --state)
    #[arg(long, value_name = "WHICH", value_enum, default_value_t = CatchUp::Latest, requires = "scheduling", help_heading = SCHEDULE)]
    pub catch_up: CatchUp,

    /// How far back missed slots are looked for
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", default_value = "24h", value_parser = parse::duration, requires = "scheduling", help_heading = SCHEDULE)]
    pub catch_up_window: Duration,

    /// A slot that comes while the previous run still runs: skip it, or run it after
    #[arg(long, value_name = "WHAT", value_enum, default_value_t = Overlap::Skip, requires = "scheduling", help_heading = SCHEDULE)]
    pub overlap: Overlap,

    /// How long a running slot may go on after SIGINT or SIGTERM stops the scheduler
    ///
    /// No new slot starts; the running one gets this long to finish, then SIGTERM and
    /// --kill-after. 0 ends it at once; a second SIGINT or SIGTERM ends it at once too.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", default_value = "20s", value_parser = parse::duration, requires = "scheduling", help_heading = SCHEDULE)]
    pub grace: Duration,

    /// The zone CRON is read in (IANA name, from TZDIR or /usr/share/zoneinfo) [default: TZ, else local]
    #[arg(long, value_name = "ZONE", requires = "scheduling", help_heading = SCHEDULE)]
    pub tz: Option<String>,

    /// Serve the scheduler's Prometheus metrics over HTTP at http://ADDR:PORT/metrics
    ///
    /// ADDR is an IP address (127.0.0.1, 0.0.0.0, [::]); names are not looked up. Port 0
    /// takes a free port, which the start-up line names. Every series has the label
    /// retry_job: slots by outcome, attempts, caught-up and dropped slots, and the times of
    /// the last slot, the last success and the next slot. A port that cannot be bound is
    /// exit 125 at start.
    // Help text, not rustdoc: brackets and URLs are what the user types.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long, value_name = "ADDR:PORT", value_parser = metrics_listen_value, help_heading = SCHEDULE)]
    pub metrics_listen: Option<std::net::SocketAddr>,

    /// Share a retry budget called NAME: retries stop while half its tokens are spent
    ///
    /// gRPC's retry throttling, shared through --state by every retry naming NAME: a failed
    /// attempt takes one token, a successful one earns --budget-ratio, and a retry is made
    /// only while more than half of --budget-size remains. A first attempt is never held back.
    #[arg(long, value_name = "NAME", value_parser = fleet_name_value, help_heading = FLEET)]
    pub retry_budget: Option<String>,

    /// Tokens the retry budget holds (it starts full)
    #[arg(allow_hyphen_values = true, long, value_name = "N", default_value = "10", value_parser = parse::budget_size, help_heading = FLEET)]
    pub budget_size: u32,

    /// Tokens a successful attempt earns, 0 < R <= 1
    #[arg(allow_hyphen_values = true, long, value_name = "R", default_value = "0.1", value_parser = parse::budget_ratio, help_heading = FLEET)]
    pub budget_ratio: f64,

    /// Share a circuit breaker called NAME: after failed runs in a row, runs are refused
    ///
    /// Each run that gives up counts one failure, a success resets the count. At
    /// --circuit-failures the circuit opens for --circuit-cooldown: runs exit --circuit-exit
    /// without an attempt. After the cooldown one run claims the probe; its success closes it.
    #[arg(long, value_name = "NAME", value_parser = fleet_name_value, help_heading = FLEET)]
    pub circuit: Option<String>,

    /// Failed runs in a row that open the circuit
    #[arg(allow_hyphen_values = true, long, value_name = "N", default_value = "5", value_parser = parse::attempts, help_heading = FLEET)]
    pub circuit_failures: u32,

    /// How long the circuit stays open
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", default_value = "60s", value_parser = parse::positive_duration, help_heading = FLEET)]
    pub circuit_cooldown: Duration,

    /// Exit status of a run refused by an open circuit
    #[arg(allow_hyphen_values = true, long, value_name = "CODE", default_value = "75", value_parser = clap::value_parser!(u8), help_heading = FLEET)]
    pub circuit_exit: u8,

    /// What a spent retry budget or an open circuit does to the run: hold it, or end it
    ///
    /// exit (the default) ends the run: a refused retry with the last attempt's status, an
    /// open circuit with --circuit-exit. wait holds it, sending nothing and not spending -a:
    /// a refused retry asks again after a fresh jittered draw of the backoff (each hold
    /// drawn as the next retry's delay would be, up to --max-delay), and while the budget
    /// is spent one held run per --delay fleet-wide is let through as a probe; a run held
    /// by an open circuit asks again when the circuit's cooldown ends. wait needs
    /// --max-time, which bounds the holds; a run it ends while held exits as exit would
    /// have.
    #[arg(long, value_name = "HOW", value_enum, help_heading = FLEET)]
    pub throttled: Option<Throttled>,

    /// Sleep a random time up to DUR before the first attempt (repeatable with --seed)
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", default_value = "0", value_parser = parse::duration, help_heading = FLEET)]
    pub splay: Duration,

    /// Less on stderr: no per-attempt lines (-qq: nothing but retry's own errors)
    #[arg(short = 'q', long, action = ArgAction::Count, conflicts_with = "verbose", help_heading = OUTPUT)]
    pub quiet: u8,

    /// More on stderr (repeatable)
    #[arg(short = 'v', long, action = ArgAction::Count, help_heading = OUTPUT)]
    pub verbose: u8,

    /// Format of stderr event lines
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormat::Text, help_heading = OUTPUT)]
    pub log_format: LogFormat,

    /// Write a JSON record of every attempt and the result to FILE (- for stderr)
    ///
    /// FILE is written atomically when the run ends, also on failure and on signals;
    /// --report - writes the same JSON to stderr on one line, never to a file named -.
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath, help_heading = OUTPUT)]
    pub report: Option<PathBuf>,

    /// Print the schedule and classification rules, run nothing, exit 0
    #[arg(long, help_heading = OUTPUT)]
    pub dry_run: bool,

    /// Write a completion script or the man page to stdout
    #[arg(long, value_name = "KIND", value_enum, hide = true)]
    pub generate: Option<GenerateKind>,

    /// The command and its arguments, or a URL
    #[arg(
        value_name = "COMMAND|URL",
        trailing_var_arg = true,
        required_unless_present_any = ["generate", "crontab"],
        conflicts_with = "crontab"
    )]
    pub target: Vec<OsString>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum GenerateKind {
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
    Man,
}

/// Parses the command line; `Err` carries clap's error, to be printed with exit 125.
pub fn parse<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    if let Some(cli) = plain::without_options(&args) {
        return Ok(cli);
    }
    // A crontab's slot runs take the command line's options, then the line's own,
    // which override them (as the scheduler builds them: `--run-slot` before `--`).
    let slot_run = args
        .iter()
        .take_while(|a| *a != "--")
        .any(|a| a == "--run-slot");
    parse_with(args, slot_run)
}

/// Parses a crontab line's options after the command line's: a later value of an
/// option replaces an earlier one instead of being refused as given twice.
pub fn parse_overriding(args: Vec<OsString>) -> Result<Cli, clap::Error> {
    parse_with(args, true)
}

fn parse_with(args: Vec<OsString>, overriding: bool) -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let mut cmd = Cli::command().args_override_self(overriding);
    // The long epilogue is formatted only when it will be shown: building it costs
    // more than the rest of start-up, and `retry -- true` must start fast.
    if args.iter().any(|a| a == "--help") {
        let width = help::width();
        cmd = cmd
            .term_width(width)
            .after_long_help(help::after_long_help(width));
    } else if args.iter().skip(1).any(asks_short_help) {
        cmd = help::short(cmd).term_width(help::width());
    }
    let args = curl_words::refuse_unknown_options(&mut cmd, args)?;
    let mut matches = cmd.try_get_matches_from_mut(args)?;
    curl_words::refuse_other_mode(&cmd, &matches)?;
    // Read before the values are taken out: the body options in command-line order,
    // and whether --stdin was given at all (--schedule refuses it).
    let data_args = curl::data_args(&matches);
    let stdin_given = matches.value_source("stdin") == Some(clap::parser::ValueSource::CommandLine);
    let jitter_given =
        matches.value_source("jitter") == Some(clap::parser::ValueSource::CommandLine);
    // `_mut` takes the values out instead of cloning every match first.
    let mut cli = Cli::from_arg_matches_mut(&mut matches)?;
    cli.data_args = data_args;
    cli.stdin_given = stdin_given;
    cli.jitter_given = jitter_given;
    curl_words::apply_aliases(&mut cli)?;
    // Parsing happens once per process: freeing clap's command and matches one by one
    // would cost more instructions than building them, for memory the exit returns.
    std::mem::forget(cmd);
    std::mem::forget(matches);
    Ok(cli)
}

/// Whether an argument may be `-h`, alone or in a group of short flags (`-vh`); a
/// false yes only trims a help that is not shown.
fn asks_short_help(arg: &OsString) -> bool {
    let arg = arg.to_string_lossy();
    arg.starts_with('-') && !arg.starts_with("--") && arg.contains('h')
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn target_takes_everything_after_it() {
        let cli = parse(["retry", "-a", "3", "ls", "-la", "--attempts", "9"]).unwrap();
        assert_eq!(cli.attempts, 3);
        assert_eq!(cli.target, ["ls", "-la", "--attempts", "9"]);
    }

    #[test]
    fn double_dash_separates() {
        let cli = parse(["retry", "--", "-weird", "x"]).unwrap();
        assert_eq!(cli.target, ["-weird", "x"]);
    }

    #[test]
    fn bad_values_name_the_flag() {
        let err = parse(["retry", "--delay", "soon", "true"]).unwrap_err();
        assert!(err.to_string().contains("--delay"), "{err}");
        let err = parse(["retry", "--attempts", "none", "true"]).unwrap_err();
        assert!(err.to_string().contains("--attempts"), "{err}");
        let err = parse(["retry", "--stop-on-output", "(", "true"]).unwrap_err();
        assert!(err.to_string().contains("--stop-on-output"), "{err}");
    }
}

/// `--job-output`: how a crontab's jobs' output lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum JobOutput {
    /// `TIMESTAMP [JOB@SLOT] line` (JSON under --log-format json), each line whole.
    Labelled,
    /// Unchanged.
    Raw,
}
