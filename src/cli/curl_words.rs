//! curl's vocabulary at the edge of the command line: curl options that retry does
//! not support are refused by name with their equivalent (never with clap's "pass
//! it after --" tip), options of the other mode are refused naming the mode, and
//! curl's aliases (`--retry`, `-s`, `-I`, `-O`, …) become retry's own settings
//! before anything else sees them.

use std::ffi::OsString;

use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::{ArgMatches, Command};

use crate::cli::spellings::{self, Place, When};
use crate::cli::{Cli, Mode, mode_of};
use crate::domain::{BackoffKind, JitterKind, url_hint};

/// A curl option retry does not support, and what to use instead.
struct Unsupported {
    names: &'static [&'static str],
    instead: &'static str,
}

const fn row(names: &'static [&'static str], instead: &'static str) -> Unsupported {
    Unsupported { names, instead }
}

const NONE: &str = "";

/// curl(1) options people type that retry does not take. Source: curl's man page.
const UNSUPPORTED: &[Unsupported] = &[
    row(
        &["-K", "--config"],
        "put the options on the command line; retry reads no config file",
    ),
    row(&["-c", "--cookie-jar"], NONE),
    row(&["--junk-session-cookies"], NONE),
    row(
        &[
            "--trace",
            "--trace-ascii",
            "--trace-time",
            "--trace-ids",
            "--trace-config",
        ],
        "-vv logs each request and response with its headers (secrets masked)",
    ),
    row(&["--libcurl"], NONE),
    row(&["--limit-rate"], NONE),
    row(
        &["-Z", "--parallel", "--parallel-max", "--parallel-immediate"],
        "run one retry per URL",
    ),
    row(
        &["--url"],
        "give the URL as the operand: retry [OPTIONS] URL",
    ),
    row(&["-:", "--next", "--fail-early"], "run one retry per URL"),
    row(
        &["-n", "--netrc", "--netrc-file", "--netrc-optional"],
        "-u USER:PASSWORD, or -H @FILE with an Authorization line",
    ),
    row(
        &["-y", "--speed-time", "-Y", "--speed-limit"],
        "-t/--timeout DUR limits one attempt",
    ),
    row(&["-r", "--range"], "-H 'Range: bytes=FROM-TO'"),
    row(&["-z", "--time-cond"], "-H 'If-Modified-Since: DATE'"),
    row(
        &["-#", "--progress-bar", "--no-progress-meter"],
        "nothing: retry shows no progress meter",
    ),
    row(&["-N", "--no-buffer"], NONE),
    row(
        &["--create-dirs", "--output-dir"],
        "-o DIR/FILE in an existing directory",
    ),
    row(&["-R", "--remote-time"], NONE),
    row(&["-J", "--remote-header-name"], "-o FILE"),
    row(&["--remote-name-all"], "-O"),
    row(
        &["--remove-on-error"],
        "nothing: -o FILE is written only when the run succeeds",
    ),
    row(&["--show-headers"], "-i"),
    row(&["--http1.0"], "--http1.1"),
    row(
        &["--http2-prior-knowledge"],
        "--http2 (prior knowledge over http://)",
    ),
    row(&["--http3", "--http3-only"], NONE),
    row(
        &[
            "--digest",
            "--ntlm",
            "--ntlm-wb",
            "--negotiate",
            "--anyauth",
            "--aws-sigv4",
            "--delegation",
        ],
        NONE,
    ),
    row(
        &["--oauth2-bearer"],
        "-H 'Authorization: Bearer TOKEN', or -H @FILE",
    ),
    row(&["-U", "--proxy-user"], "-x http://USER:PASSWORD@HOST:PORT"),
    row(
        &[
            "-p",
            "--proxytunnel",
            "--proxy-header",
            "--preproxy",
            "--proxy-insecure",
            "--proxy-cacert",
        ],
        NONE,
    ),
    row(
        &["--socks4", "--socks4a", "--socks5", "--socks5-hostname"],
        "-x socks5://HOST:PORT (or socks5h://, socks4://, socks4a://; with h or a the proxy resolves the name)",
    ),
    row(
        &[
            "--cert-type",
            "--key-type",
            "--pass",
            "--capath",
            "--crlfile",
            "--pinnedpubkey",
            "--ciphers",
            "--tls-max",
            "--tlsv1.2",
            "--tlsv1.3",
            "-1",
            "--tlsv1",
            "-2",
            "-3",
            "--ssl",
            "--ssl-reqd",
        ],
        NONE,
    ),
    row(
        &["--connect-to"],
        "--resolve HOST:PORT:ADDR when the port stays the same; for another port, put the address and port in the URL and the name in -H 'Host: NAME' (http:// only: TLS checks the URL's host)",
    ),
    row(&["--abstract-unix-socket"], "--unix-socket PATH"),
    row(
        &["--interface", "--local-port", "--dns-servers", "--doh-url"],
        NONE,
    ),
    row(
        &[
            "--path-as-is",
            "--post301",
            "--post302",
            "--post303",
            "--location-trusted",
        ],
        NONE,
    ),
    row(&["--stderr"], "2> FILE"),
    row(
        &[
            "--max-filesize",
            "--ignore-content-length",
            "--raw",
            "--tr-encoding",
            "--crlf",
            "--xattr",
        ],
        NONE,
    ),
    row(
        &[
            "--tcp-nodelay",
            "--tcp-fastopen",
            "--keepalive-time",
            "--no-keepalive",
            "--expect100-timeout",
            "--happy-eyeballs-timeout-ms",
        ],
        NONE,
    ),
    row(
        &["--etag-save", "--etag-compare"],
        "-H 'If-None-Match: ETAG'",
    ),
    row(
        &["--proto-default"],
        "write the scheme in the URL: retry takes http:// and https:// URLs only",
    ),
    row(&["--data-ascii"], "-d"),
    row(&["--form-string"], "-F name=value"),
    row(&["--url-query"], "put the query in the URL"),
    row(
        &[
            "--variable",
            "--expand-url",
            "--expand-data",
            "--expand-header",
        ],
        NONE,
    ),
    row(
        &[
            "-P",
            "--ftp-port",
            "--ftp-pasv",
            "-l",
            "--list-only",
            "-Q",
            "--quote",
            "-B",
            "--use-ascii",
        ],
        "nothing: retry speaks HTTP(S) only",
    ),
    row(&["-M", "--manual"], "retry --help, or man retry"),
];

/// Escaped here (`one_line`): clap would drop an escape sequence a value holds.
pub(super) fn usage_error(message: String) -> clap::Error {
    let message = crate::domain::one_line(&message);
    clap::Error::raw(ErrorKind::ArgumentConflict, format!("{message}\n"))
}

/// The message for an option neither retry nor the tables know. `shown` is the
/// word as typed, with its group (`-fsZ`) when the option was one letter of it.
fn unknown_option(cmd: &Command, seen: &Seen, place: Place) -> clap::Error {
    let (name, shown) = (seen.name.as_str(), seen.word.as_str());
    let within = if shown == name {
        String::new()
    } else {
        format!(" (in {shown})")
    };
    let spelling =
        spellings::find(name, seen.value.as_deref(), place).or_else(|| spellings::doubled(name));
    if let Some(spelling) = spelling {
        return usage_error(format!(
            "{name}{within}: unknown option; {}",
            spellings::advice(spelling)
        ));
    }
    let row = UNSUPPORTED.iter().find(|r| r.names.contains(&name));
    let message = match row {
        Some(r) if r.instead.is_empty() => format!(
            "{name}{within}: a curl option ({}) that retry does not support; there is no equivalent",
            r.names.join(", ")
        ),
        Some(r) => format!(
            "{name}{within}: a curl option ({}) that retry does not support; instead: {}",
            r.names.join(", "),
            r.instead
        ),
        None => match similar(cmd, name) {
            Some(near) => format!("{name}{within}: unknown option; did you mean {near}?"),
            None => format!("{name}{within}: unknown option; retry --help lists the options"),
        },
    };
    usage_error(message)
}

/// retry's long option nearest to the unknown long `name`, when it is close enough to
/// be the one meant: at most two edits (a transposition is one), and no more than a
/// third of the word (`--atempts` is `--attempts`; `--persistent` is not `--version`).
fn similar(cmd: &Command, name: &str) -> Option<String> {
    let typed = name.strip_prefix("--")?;
    let longs = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .flat_map(|a| {
            let aliases = a.get_visible_aliases().unwrap_or_default();
            a.get_long().into_iter().chain(aliases)
        });
    let (edits, nearest) = longs
        .map(|long| (strsim::osa_distance(typed, long), long))
        .min()?;
    let close = edits <= 2 && edits <= (typed.chars().count() / 3).max(1);
    close.then(|| format!("--{nearest}"))
}

/// An option of HTTP mode typed before a command, or a value retry refuses, where
/// another tool's spelling is meant: curl's `--retry N` (`-a N+1`), flock's `-w N`
/// next to `--lock`, GNU timeout's `-s SIG`, recur's `-d DUR` and `-j MIN,MAX`.
fn other_tool_words(
    cmd: &Command,
    walked: &Walked,
    place: Place,
    target: Option<&OsString>,
) -> Result<(), clap::Error> {
    for seen in walked.seen.iter().filter(|s| s.known) {
        let arg = cmd
            .get_arguments()
            .find(|a| match seen.name.strip_prefix("--") {
                Some(long) => a.get_long() == Some(long),
                None => seen.name.strip_prefix('-').and_then(|s| s.chars().next()) == a.get_short(),
            });
        let Some(arg) = arg else { continue };
        let http_only = !place.http && mode_of(arg) == Some(Mode::Http);
        let what = || {
            let why = match target {
                Some(t) => format!("the command '{}' selects command mode", t.to_string_lossy()),
                None => "no URL is given".into(),
            };
            format!("{}: an option of HTTP mode, but {why}", label(arg))
        };
        if http_only && seen.name == "--retry" {
            if let Some(n) = seen.value.as_deref().and_then(|v| v.parse::<u64>().ok()) {
                return Err(usage_error(format!(
                    "{}; curl's --retry {n} is -a {} here ({n} retries after the first attempt)",
                    what(),
                    n + 1
                )));
            }
        }
        let Some(row) = spellings::find(&seen.name, seen.value.as_deref(), place) else {
            continue;
        };
        if http_only {
            return Err(usage_error(format!(
                "{}; {}",
                what(),
                spellings::advice(row)
            )));
        }
        if row.when == When::Always {
            let value = seen.value.as_deref().unwrap_or_default();
            return Err(usage_error(format!(
                "{}: '{value}' is not accepted; {}",
                seen.name,
                spellings::advice(row)
            )));
        }
    }
    Ok(())
}

/// Walks the options before the target and refuses any that retry does not know,
/// so that clap never suggests passing a curl option to the target after `--`. In
/// HTTP mode the options after the URL are walked too, and moved before it.
pub fn refuse_unknown_options(
    cmd: &mut Command,
    args: Vec<OsString>,
) -> Result<Vec<OsString>, clap::Error> {
    cmd.build();
    let walked = walk(cmd, &args[1..], true);
    let first = 1 + walked.end;
    let target = match args.get(first) {
        Some(dash) if dash == "--" => args.get(first + 1),
        other => other,
    };
    let place = place_of(&walked, target);
    refuse_unknown(cmd, &walked, place)?;
    other_tool_words(cmd, &walked, place, target)?;
    match args.get(first) {
        Some(url) if target_mode(url) == Mode::Http => options_after_url(cmd, args, first),
        _ => Ok(args),
    }
}

/// `retry URL -o out`, as curl takes it: the options after the URL go before it;
/// another operand is a second URL, refused.
fn options_after_url(
    cmd: &Command,
    args: Vec<OsString>,
    url_at: usize,
) -> Result<Vec<OsString>, clap::Error> {
    let after = &args[url_at + 1..];
    let walked = walk(cmd, after, false);
    refuse_unknown(
        cmd,
        &walked,
        Place {
            http: true,
            lock: false,
        },
    )?;
    if let Some(flag) = walked.wants_value {
        return Err(usage_error(format!(
            "{flag}: needs a value; retry --help says what it takes"
        )));
    }
    let rest = &after[walked.end..];
    let second = match rest.first() {
        Some(dash) if dash == "--" => rest.get(1),
        other => other,
    };
    if let Some(second) = second {
        return Err(usage_error(format!(
            "{}: a second URL or operand after the URL; retry sends one request per run, so run one retry per URL",
            second.to_string_lossy()
        )));
    }
    let mut out = args[..url_at].to_vec();
    out.extend_from_slice(&after[..walked.end]);
    out.push(args[url_at].clone());
    Ok(out)
}

/// Where a walk over options stopped, and what it saw.
struct Walked {
    /// The index of the first operand (or of `--`), or the end of the words.
    end: usize,
    /// The last word was an option that takes a value, and none followed.
    wants_value: Option<String>,
    /// Each option, in order.
    seen: Vec<Seen>,
}

/// An option as a walk met it.
struct Seen {
    /// `-w`, `--tries`: the option's name as typed, without a value.
    name: String,
    /// The word it was in (`-fsZ`, `--tries=3`).
    word: String,
    /// Its value: after `=`, the rest of a short group, or the next word.
    value: Option<String>,
    /// retry takes it.
    known: bool,
}

/// Walks `words` while they are options (with their values). An option retry does not
/// know is taken as a flag without a value; the caller refuses the first one, once the
/// whole walk has said where it stands (before a URL? next to `--lock`?). With
/// `whole_words`, another tool's single-dash flag (`-test`) is one option, never
/// bundled letters.
fn walk(cmd: &Command, words: &[OsString], whole_words: bool) -> Walked {
    let takes_value = |arg: &clap::Arg| arg.get_action().takes_values();
    let mut i = 0;
    let mut wants_value = None;
    let mut seen = Vec::new();
    while let Some(word) = words.get(i).map(|w| w.to_string_lossy().into_owned()) {
        if word == "--" || !word.starts_with('-') || word == "-" {
            break;
        }
        i += 1;
        let next = words.get(i).map(|w| w.to_string_lossy().into_owned());
        let other = whole_words
            .then(|| other_tool_word(&word, next.as_deref()))
            .flatten();
        if let Some((other, takes_next)) = other {
            seen.push(other);
            i += usize::from(takes_next);
            continue;
        }
        let needs_next = if let Some(long) = word.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string())),
                None => (long, None),
            };
            let arg = cmd.get_arguments().find(|a| {
                a.get_long() == Some(name) || a.get_all_aliases().is_some_and(|v| v.contains(&name))
            });
            let wants = arg.filter(|a| takes_value(a) && inline.is_none());
            seen.push(Seen {
                name: format!("--{name}"),
                word: word.clone(),
                value: inline.or_else(|| next.clone().filter(|_| arg.is_none() || wants.is_some())),
                known: arg.is_some(),
            });
            wants.map(label)
        } else {
            short_group(cmd, &word, next.as_deref(), &mut seen)
        };
        if let Some(flag) = needs_next {
            if i == words.len() {
                wants_value = Some(flag);
            }
            i += 1;
        }
    }
    Walked {
        end: i.min(words.len()),
        wants_value,
        seen,
    }
}

/// Another tool's single-dash flag typed as a whole argument, as the walk saw it, and
/// whether the next word is its value.
fn other_tool_word(word: &str, next: Option<&str>) -> Option<(Seen, bool)> {
    let (row, attached) = spellings::whole_word(word)?;
    let takes_next = !row.sample.is_empty() && !attached && next.is_some();
    let value = match word.split_once('=') {
        Some((_, value)) => Some(value.to_string()),
        None => next.filter(|_| takes_next).map(str::to_string),
    };
    let seen = Seen {
        name: row.typed.to_string(),
        word: word.to_string(),
        value,
        known: false,
    };
    Some((seen, takes_next))
}

/// Where the walked options stand: before a URL, next to `--lock`.
fn place_of(walked: &Walked, target: Option<&OsString>) -> Place {
    Place {
        http: target.is_some_and(|t| target_mode(t) == Mode::Http),
        lock: walked.seen.iter().any(|s| s.name == "--lock"),
    }
}

/// The first option retry does not know, refused.
fn refuse_unknown(cmd: &Command, walked: &Walked, place: Place) -> Result<(), clap::Error> {
    match walked.seen.iter().find(|s| !s.known) {
        Some(seen) => Err(unknown_option(cmd, seen, place)),
        None => Ok(()),
    }
}

/// A group of short options (`-fsSL`, `-o-`), each letter added to `seen`: whether
/// its last option takes the next word as its value (named, if so).
fn short_group(
    cmd: &Command,
    word: &str,
    next: Option<&str>,
    seen: &mut Vec<Seen>,
) -> Option<String> {
    let letters: Vec<char> = word[1..].chars().collect();
    for (i, letter) in letters.iter().enumerate() {
        let found = cmd.get_arguments().find(|a| {
            a.get_short() == Some(*letter)
                || a.get_all_short_aliases()
                    .is_some_and(|v| v.contains(letter))
        });
        let rest: String = letters[i + 1..].iter().collect();
        let last = rest.is_empty();
        let value = if last { next } else { Some(rest.as_str()) };
        let takes = found.is_some_and(|a| a.get_action().takes_values());
        seen.push(Seen {
            name: format!("-{letter}"),
            word: word.to_string(),
            value: (takes || found.is_none())
                .then(|| value.map(str::to_string))
                .flatten(),
            known: found.is_some(),
        });
        if takes {
            // The rest of the word is the value; without a rest, the next word is.
            return last.then(|| label(found.unwrap()));
        }
    }
    None
}

/// "-o/--output", as the option is named in messages.
pub fn label(arg: &clap::Arg) -> String {
    match (arg.get_short(), arg.get_long()) {
        (Some(s), Some(l)) => format!("-{s}/--{l}"),
        (Some(s), None) => format!("-{s}"),
        (None, Some(l)) => format!("--{l}"),
        (None, None) => arg.get_id().to_string(),
    }
}

/// The mode the target selects (a first operand starting with http:// or https:// is a
/// request: docs/internals.md, "Which mode"), or `None` without a target.
pub fn target_mode(first: &OsString) -> Mode {
    let lower = first.to_string_lossy().to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        Mode::Http
    } else {
        Mode::Command
    }
}

/// Refuses every option given on the command line that belongs to the other mode: the
/// target's, or command mode for `--crontab`, whose jobs are commands.
pub fn refuse_other_mode(cmd: &Command, matches: &ArgMatches) -> Result<(), clap::Error> {
    let first = matches
        .get_many::<OsString>("target")
        .and_then(|mut t| t.next());
    let crontab = matches.value_source("crontab") == Some(ValueSource::CommandLine);
    let (mode, target) = match first {
        Some(first) if target_mode(first) == Mode::Http => (Mode::Http, "the URL".to_string()),
        Some(first) => (
            Mode::Command,
            format!("the command '{}'", first.to_string_lossy()),
        ),
        None if crontab => (Mode::Command, "each job of a crontab".to_string()),
        None => return Ok(()),
    };
    let wrong: Vec<String> = cmd
        .get_arguments()
        .filter(|arg| {
            let given =
                matches.value_source(arg.get_id().as_str()) == Some(ValueSource::CommandLine);
            given && mode_of(arg).is_some_and(|own| own != mode)
        })
        .map(label)
        .collect();
    if wrong.is_empty() {
        return Ok(());
    }
    let other = match mode {
        Mode::Http => Mode::Command,
        Mode::Command => Mode::Http,
    };
    let (names, what) = match wrong.as_slice() {
        [one] => (one.clone(), "an option"),
        [init @ .., last] => (format!("{} and {last}", init.join(", ")), "options"),
        [] => unreachable!(),
    };
    let hint = match (mode, first) {
        (Mode::Command, Some(first)) if !on_path(first) => url_hint(&first.to_string_lossy()),
        _ => None,
    };
    let tail = hint.unwrap_or_else(|| "nothing is ever silently ignored".into());
    Err(usage_error(format!(
        "{names}: {what} of {}, but {target} selects {}; {tail}",
        other.name(),
        mode.name()
    )))
}

/// Whether `name` is a command: a path to a file, or a file in a directory of PATH.
fn on_path(name: &OsString) -> bool {
    let path = std::path::Path::new(name);
    if name.to_string_lossy().contains('/') {
        return path.is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|dirs| std::env::split_paths(&dirs).any(|dir| dir.join(name).is_file()))
}

/// Whether the option `name` (`-m`) is among the options of `args` (the program's
/// name first, the options after a URL already moved before it).
pub fn typed(cmd: &Command, args: &[OsString], name: &str) -> bool {
    walk(cmd, args.get(1..).unwrap_or_default(), false)
        .seen
        .iter()
        .any(|s| s.name == name)
}

/// curl's retry words, which make `--max-time` curl's per-transfer limit beside them.
fn curl_retry_word(cli: &Cli) -> Option<&'static str> {
    [
        ("--retry", cli.curl.curl_retry.is_some()),
        ("--retry-max-time", cli.curl.retry_max_time.is_some()),
        ("--retry-delay", cli.curl.retry_delay.is_some()),
        ("--retry-all-errors", cli.curl.retry_all_errors),
        ("--retry-connrefused", cli.curl.retry_connrefused),
    ]
    .into_iter()
    .find_map(|(word, given)| given.then_some(word))
}

/// `--max-time` keeps curl's meaning on a curl line: beside curl's retry words in HTTP
/// mode it is the per-transfer limit (`-m`), and `--retry-max-time` alone bounds the
/// run. `-m` with `--max-time` is refused in any mode: curl means one limit by both.
fn max_time_meaning(cli: &mut Cli, typed_m: bool) -> Result<(), clap::Error> {
    let Some(max_time) = cli.timing.max_time else {
        return Ok(());
    };
    if typed_m {
        return Err(usage_error(
            "-m: cannot be used with --max-time; give one of them: -m (or -t) limits each \
             attempt, --max-time the whole run (each transfer, as in curl, beside --retry)"
                .into(),
        ));
    }
    let http = cli
        .target
        .first()
        .is_some_and(|t| target_mode(t) == Mode::Http);
    let Some(word) = curl_retry_word(cli).filter(|_| http) else {
        return Ok(());
    };
    if cli.timing.timeout.is_some() {
        return Err(usage_error(format!(
            "--max-time: beside {word} it is curl's limit on each transfer, as -t/--timeout \
             is; give one of them"
        )));
    }
    cli.timing.timeout = Some(max_time);
    cli.timing.max_time = None;
    cli.timing.max_time_per_transfer = Some(word);
    Ok(())
}

/// Turns curl's spellings into retry's settings, and checks what only makes
/// sense together; `typed_m` says whether `-m` was typed (clap takes it as `-t`).
pub fn apply_aliases(cli: &mut Cli, typed_m: bool) -> Result<(), clap::Error> {
    max_time_meaning(cli, typed_m)?;
    if let Some(n) = cli.curl.curl_retry {
        cli.timing.attempts = n + 1;
    }
    // curl sleeps exactly S before each retry; -j asks for a spread all the same.
    if let Some(delay) = cli.curl.retry_delay.filter(|d| !d.is_zero()) {
        cli.timing.delay = delay;
        cli.timing.backoff = BackoffKind::Constant;
        if !cli.timing.jitter_given {
            cli.timing.jitter = JitterKind::None;
        }
    }
    // `-sv` is `-v`, as in curl: the verbose lines are what was asked for.
    if cli.curl.silent && cli.output.verbose == 0 {
        let level = if cli.curl.show_error { 1 } else { 2 };
        cli.output.quiet = cli.output.quiet.max(level);
    }
    if cli.curl.head {
        cli.http.method = Some(reqwest::Method::HEAD);
        cli.http.include = true;
    }
    if cli.curl.remote_name {
        let url = cli.target.first().map(|t| t.to_string_lossy().into_owned());
        let name = url.as_deref().and_then(remote_name).ok_or_else(|| {
            usage_error(
                "-O/--remote-name: the URL has no file name in its last path segment; use -o FILE"
                    .into(),
            )
        })?;
        cli.http.output = Some(name.into());
    }
    if cli.curl.continue_at.is_some() {
        if cli
            .http
            .output
            .as_deref()
            .is_none_or(|o| o.as_os_str() == "-")
        {
            return Err(usage_error(
                "-C/--continue-at: needs -o FILE (or -O), not stdout: the part already received is kept beside FILE".into(),
            ));
        }
        if cli.curl.upload_file.is_some() {
            return Err(usage_error(
                "-C/--continue-at: resumes downloads; resuming an upload (-T) is not supported"
                    .into(),
            ));
        }
        if cli.http.include || cli.curl.fail_with_body {
            return Err(usage_error(
                "-C/--continue-at: cannot be used with -i, -I or --fail-with-body; only a body is resumed".into(),
            ));
        }
    }
    Ok(())
}

/// curl -O's file name: the URL's last path segment, as written (no decoding).
pub fn remote_name(url: &str) -> Option<String> {
    let url = reqwest::Url::parse(url).ok()?;
    let name = url.path_segments()?.next_back()?;
    (!name.is_empty() && name != "." && name != "..").then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_name_is_the_last_segment() {
        assert_eq!(
            remote_name("http://h/a/b.tar.gz?x=1").as_deref(),
            Some("b.tar.gz")
        );
        assert_eq!(remote_name("http://h/a/"), None);
        assert_eq!(remote_name("http://h"), None);
    }

    #[test]
    fn every_unsupported_name_is_unknown_to_retry() {
        let mut cmd = Cli::command();
        cmd.build();
        for name in UNSUPPORTED.iter().flat_map(|r| r.names) {
            let known = cmd.get_arguments().any(|a| {
                name.strip_prefix("--")
                    .is_some_and(|l| a.get_long() == Some(l))
                    || (name.len() == 2 && a.get_short() == name.chars().nth(1))
            });
            assert!(
                !known,
                "{name} is in the unsupported table but retry takes it"
            );
        }
    }

    use clap::CommandFactory;
}
