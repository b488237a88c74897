//! The options under "curl's options (HTTP mode)": curl's own words, with curl's meaning,
//! for a request retry makes itself (docs/internals.md, "curl's vocabulary"). Their
//! value parsers are in [`cli::curl`](crate::cli::curl); what retry refuses of curl's is
//! [`curl_words`](crate::cli::curl_words)'.

use std::path::PathBuf;
use std::time::Duration;

use clap::ValueHint;

use crate::cli::curl::{
    FormField, ProxyUrl, ResolveEntry, cookie_value, form_value, noproxy_value, proxy_value,
    referer_value, resolve_value, user_agent_value,
};
use crate::cli::values::continue_value;
use crate::domain::Protocols;
use crate::parse;

// Every option here is off or empty unless given: `Default` is derived.

#[derive(clap::Args, Debug, Clone, Default)]
#[group(skip)]
#[command(next_help_heading = super::CURL)]
pub struct CurlArgs {
    // ---- output, and curl's words for retrying ----
    /// Accepted: a status >= 400 always fails here (exit 22)
    #[arg(short = 'f', long)]
    pub fail: bool,

    /// On giving up with a status >= 400, output that response's body
    ///
    /// The body goes to stdout, or to -o FILE; the exit status stays 22.
    #[arg(long)]
    pub fail_with_body: bool,

    /// Nothing on stderr (-qq); with -S, the final error line only (-q)
    ///
    /// With -v (-sv) the verbose lines are shown, as curl shows them.
    #[arg(short = 's', long)]
    pub silent: bool,

    /// With -s, still print the final error line
    #[arg(short = 'S', long)]
    pub show_error: bool,

    /// Accepted: redirects are always followed (--max-redirs 0 turns that off)
    #[arg(short = 'L', long)]
    pub location: bool,

    /// Send HEAD; the response headers are the output
    #[arg(short = 'I', long, conflicts_with_all = ["method", "data", "json"])]
    pub head: bool,

    /// After the final attempt, print FORMAT (curl's %{variables}; @FILE reads it)
    ///
    /// Variables, as %{NAME}: http_code, response_code, url_effective, time_total,
    /// size_download, size_header, num_redirects, content_type, exitcode, errormsg,
    /// num_retries, method; %{stdout} and %{stderr} switch the stream; %header{NAME} is a
    /// header of the final response. Escapes: \n \r \t \\ and %%. An unknown variable is
    /// refused before anything runs.
    #[arg(short = 'w', long, value_name = "FORMAT", allow_hyphen_values = true)]
    pub write_out: Option<String>,

    /// Write the final response headers to FILE (- for stdout)
    ///
    /// After redirects every header block of the chain is written, as curl -L does.
    #[arg(short = 'D', long, value_name = "FILE")]
    pub dump_header: Option<PathBuf>,

    /// -o with the URL's last path segment as FILE
    #[arg(short = 'O', long, conflicts_with = "output")]
    pub remote_name: bool,

    /// curl's: N retries, the same as -a N+1
    ///
    /// Given with -a it is refused: say it once.
    #[arg(allow_hyphen_values = true, long = "retry", value_name = "N", conflicts_with = "attempts", value_parser = parse::retries)]
    pub curl_retry: Option<u32>,

    /// curl's: sleep exactly SECONDS before each retry (--delay S --backoff constant -j none)
    ///
    /// With -j the sleeps are spread as -j says. 0 keeps the default backoff, as in curl.
    /// Given with --delay, --backoff or --delays it is refused.
    #[arg(allow_hyphen_values = true, long, value_name = "SECONDS", conflicts_with_all = ["delay", "backoff"], value_parser = parse::duration)]
    pub retry_delay: Option<Duration>,

    /// curl's: no retry starts once SECONDS have passed since the first attempt started
    ///
    /// As in curl, an attempt in flight is not cut: it may run past the limit (-t/-m
    /// limit an attempt). A sleep that would end past it is not started. 0 means no
    /// limit, as in curl. It bounds the whole run alone: beside it --max-time is curl's
    /// per-transfer limit, and --throttled wait holds a run no longer than it.
    #[arg(allow_hyphen_values = true, long, value_name = "SECONDS", value_parser = parse::duration)]
    pub retry_max_time: Option<Duration>,

    /// Accepted: a refused connection is always retried
    #[arg(long)]
    pub retry_connrefused: bool,

    /// Every failure is transient, 4xx included, if the request is safe to repeat
    ///
    /// Safe to repeat: an idempotent method, or a key (--idempotency-key) or
    /// --retry-unsafe. A malformed URL still stops at once.
    #[arg(long)]
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
    #[arg(short = 'C', long, value_name = "-", allow_hyphen_values = true, value_parser = continue_value)]
    pub continue_at: Option<String>,

    // ---- the request ----
    /// Basic authentication; the password is shown as *** everywhere
    ///
    /// Not sent to another host after a redirect. curl's password prompt is not supported.
    #[arg(short = 'u', long = "user", value_name = "USER:PASSWORD")]
    pub user: Option<String>,

    /// Accepted: -u sends Basic authentication, as curl does by default
    #[arg(long, hide_short_help = true)]
    pub basic: bool,

    /// Protocols the URL may use, in curl's syntax: =https, -all,+https or http,https
    ///
    /// Names are read left to right from both (http and https): a name alone or with +
    /// permits, with - denies, with = permits only that one; all stands for every
    /// protocol. A URL outside them is exit 1 (curl's unsupported protocol), permanent.
    #[arg(long, value_name = "LIST", allow_hyphen_values = true, value_parser = Protocols::parse, hide_short_help = true)]
    pub proto: Option<Protocols>,

    /// Protocols a redirect may go to, in --proto's syntax (--proto applies as well)
    ///
    /// A redirect outside them is exit 1, permanent.
    #[arg(long, value_name = "LIST", allow_hyphen_values = true, value_parser = Protocols::parse, hide_short_help = true)]
    pub proto_redir: Option<Protocols>,

    /// User-Agent header ("" sends none)
    #[arg(short = 'A', long = "user-agent", value_name = "NAME", value_parser = user_agent_value)]
    pub user_agent: Option<String>,

    /// Referer header
    #[arg(short = 'e', long = "referer", value_name = "URL", value_parser = referer_value)]
    pub referer: Option<String>,

    /// Cookie header 'NAME=VALUE; NAME2=VALUE2' (repeatable; curl's cookie file is refused)
    #[arg(short = 'b', long = "cookie", value_name = "DATA", value_parser = cookie_value)]
    pub cookie: Vec<String>,

    /// Request body: DATA, @FILE or @- sent byte for byte (newlines kept)
    #[arg(long = "data-binary", value_name = "DATA", conflicts_with = "json")]
    pub data_binary: Vec<String>,

    /// Request body: DATA as given; a leading @ is not a file
    #[arg(
        long = "data-raw",
        value_name = "DATA",
        conflicts_with = "json",
        hide_short_help = true
    )]
    pub data_raw: Vec<String>,

    /// URL-encoded body part: CONTENT, =CONTENT, NAME=CONTENT, @FILE or NAME@FILE
    #[arg(
        long = "data-urlencode",
        value_name = "DATA",
        conflicts_with = "json",
        hide_short_help = true
    )]
    pub data_urlencode: Vec<String>,

    /// Upload FILE as the body of a PUT (- reads stdin), as it is
    ///
    /// No Content-Type unless one is given with -H. FILE is opened again and streamed
    /// from its start on every attempt; stdin (and a FIFO) is recorded once and replayed.
    /// When the URL's path is empty or ends with /, FILE's name is appended to it.
    #[arg(short = 'T', long = "upload-file", value_name = "FILE", value_hint = ValueHint::FilePath,
          conflicts_with_all = ["data", "data_binary", "data_raw", "data_urlencode", "json", "form", "get", "head"])]
    pub upload_file: Option<String>,

    /// Send [ ] { } in the URL as they are: no globbing
    ///
    /// Without -g a URL with these characters in its path or query is refused: curl
    /// would expand it into several transfers. { and } in the path go percent-encoded.
    #[arg(short = 'g', long)]
    pub globoff: bool,

    /// Send the -d-style data in the URL's query string, with GET
    #[arg(short = 'G', long = "get", conflicts_with = "json")]
    pub get: bool,

    /// Multipart form field: NAME=VALUE, NAME=@FILE (upload) or NAME=<FILE (repeatable)
    ///
    /// ;type=MIME and ;filename=NAME may follow. The body is built once, boundary
    /// included, and every attempt sends the same bytes.
    #[arg(short = 'F', long = "form", value_name = "NAME=VALUE", value_parser = form_value,
          conflicts_with_all = ["data", "data_binary", "data_raw", "data_urlencode", "json", "get"])]
    pub form: Vec<FormField>,

    /// Ask for gzip, deflate, br or zstd and decode the body (otherwise never decoded)
    #[arg(long)]
    pub compressed: bool,

    /// Use this proxy instead of the environment's: http://, https://, socks5[h]://, socks4[a]://
    ///
    /// HOST:PORT alone is http://. socks5h:// and socks4a:// leave the name to the proxy to
    /// resolve. The environment's HTTP_PROXY, HTTPS_PROXY and ALL_PROXY may name a SOCKS
    /// proxy too.
    // Help text, not rustdoc: brackets and URLs are what the user types.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(short = 'x', long = "proxy", value_name = "URL", value_parser = proxy_value)]
    pub proxy: Option<ProxyUrl>,

    /// Hosts reached without a proxy: comma-separated names, domains, addresses or *
    ///
    /// Replaces NO_PROXY; applies to -x and to the environment's proxies alike.
    #[arg(long = "noproxy", value_name = "LIST", value_parser = noproxy_value, hide_short_help = true)]
    pub noproxy: Option<String>,

    /// Trust only the CA certificates (PEM) in FILE
    #[arg(long, value_name = "FILE", hide_short_help = true)]
    pub cacert: Option<PathBuf>,

    /// Client certificate (PEM); FILE may hold the private key too
    #[arg(short = 'E', long, value_name = "FILE", hide_short_help = true)]
    pub cert: Option<PathBuf>,

    /// Private key (PEM) for --cert
    #[arg(long, value_name = "FILE", requires = "cert", hide_short_help = true)]
    pub key: Option<PathBuf>,

    /// Use HTTP/1.1 only
    #[arg(long = "http1.1", conflicts_with = "http2", hide_short_help = true)]
    pub http1_1: bool,

    /// Use HTTP/2: over https:// offered first by ALPN (HTTP/1.1 if the server declines, as with
    /// curl); over http:// prior knowledge (h2c), without curl's Upgrade request
    #[arg(long = "http2", hide_short_help = true)]
    pub http2: bool,

    /// Connect to ADDR for HOST:PORT instead of resolving HOST (repeatable)
    #[arg(long, value_name = "HOST:PORT:ADDR", value_parser = resolve_value, hide_short_help = true)]
    pub resolve: Vec<ResolveEntry>,

    /// Resolve names to IPv4 addresses only
    #[arg(
        short = '4',
        long = "ipv4",
        conflicts_with = "ipv6",
        hide_short_help = true
    )]
    pub ipv4: bool,

    /// Resolve names to IPv6 addresses only
    #[arg(short = '6', long = "ipv6", hide_short_help = true)]
    pub ipv6: bool,

    /// Talk HTTP over the Unix socket PATH (the URL's host is only the Host header)
    #[arg(
        long = "unix-socket",
        value_name = "PATH",
        conflicts_with = "proxy",
        hide_short_help = true
    )]
    pub unix_socket: Option<PathBuf>,
}
