//! Every value-taking flag refuses a bad value before anything runs: exit 125, a
//! message that names the flag, and the command (which would create a marker file)
//! never started.

use clap::CommandFactory;

use crate::support::http_server::{self, Reply, Server};
use crate::support::retry;

/// (flag, bad value).
const BAD_VALUES: &[(&str, &str)] = &[
    ("--attempts", "0"),
    ("-a", "many"),
    ("--delay", "soon"),
    ("--max-delay", "-1s"),
    ("--backoff", "sideways"),
    ("--factor", "1"),
    ("--jitter", "lots"),
    ("-j", "half"),
    ("--timeout", "-1"),
    ("-t", "5 parsecs"),
    ("--signal", "SIGFOO"),
    ("--signal", "99"),
    ("--max-time", "1e400"),
    ("--seed", "abc"),
    ("--profile", "svn"),
    ("--stop-on", "256"),
    ("--retry-on", "1,,2"),
    ("--success-on", "5-2"),
    ("--stop-on-output", "("),
    ("--retry-on-output", "[unclosed"),
    ("--stdin", "tty"),
    ("--kill-after", "forever"),
    ("--request", "GE T"),
    ("-X", ""),
    ("--connect-timeout", "0"),
    ("--max-redirs", "-1"),
    ("--idempotency-key", "has space"),
    ("--idempotency-header", "Bad Name"),
    ("--retry-on-status", "99"),
    ("--stop-on-status", "600"),
    ("--max-retry-after", "1000000000000"),
    ("--lock", "ftp://example.com/lock"),
    ("--lock", "postgres://db.example/jobs"),
    ("--lock-wait", "later"),
    ("--busy-exit", "256"),
    ("--once", ""),
    ("--state", "postgres://db.example/jobs#name"),
    ("--lease-ttl", "2s"),
    ("--lease-ttl", "later"),
    ("--budget-size", "0"),
    ("--budget-ratio", "1.5"),
    ("--circuit-failures", "0"),
    ("--circuit-cooldown", "0"),
    ("--circuit-exit", "256"),
    ("--splay", "soon"),
    ("--log-format", "xml"),
    ("--report", "/nonexistent-dir/report.json"),
    ("--otel", "collector:4318"),
    ("--otel", "ftp://collector/"),
    ("--on-retry", ""),
    ("--on-give-up", " "),
    ("--hook-timeout", "0"),
    ("--metrics-listen", "localhost:9746"),
    ("--schedule", "61 * * * *"),
    ("--schedule", "1,,2 * * * *"),
    ("--schedule", "0 0\n* * *"),
    ("--schedule", "@reboot"),
    ("--grace", "soon"),
    ("--retry", "-1"),
    ("--retry-delay", "soon"),
    ("--retry-max-time", "later"),
    ("-C", "5"),
    ("--continue-at", "100"),
    ("--proto", "=htps"),
    ("--proto-redir", "gopherx"),
    ("--schedule", "*/5 * * * * *"),
    ("--schedule", "@every 10ms"),
    ("--delays", "1s,,2s"),
    ("--delays", "soon"),
    ("--consecutive", "1"),
    ("--consecutive", "x"),
];

struct Refusal {
    status: i32,
    stderr: String,
    ran: bool,
}

/// `retry ARGS -- <marker command>`: what it exits with and whether the command ran.
fn run_with(args: &[&str]) -> Refusal {
    run_in(Mode::Command, args, None)
}

/// The long name clap uses in its message for a short flag.
fn long_name(flag: &str) -> &str {
    match flag {
        "-a" => "--attempts",
        "-j" => "--jitter",
        "-t" => "--timeout",
        "-X" => "--request",
        "-C" => "--continue-at",
        other => other,
    }
}

#[test]
fn the_marker_command_runs_when_values_are_good() {
    let ok = run_with(&["-a", "1"]);
    assert_eq!(ok.status, 0, "{}", ok.stderr);
    assert!(ok.ran, "the probe command did not run");
}

#[test]
fn bad_values_exit_125_name_the_flag_and_run_nothing() {
    let mut failures = Vec::new();
    for (flag, value) in BAD_VALUES {
        let arg = format!("{flag}={value}");
        let joined = [arg.as_str()];
        let split = [*flag, *value];
        // Short flags take the value as the next word; long ones both ways (a
        // value word starting with '-', such as -1s, is still the flag's value).
        let forms: Vec<&[&str]> = if flag.starts_with("--") {
            vec![&joined, &split]
        } else {
            vec![&split]
        };
        for form in forms {
            let r = run_with(form);
            let named = r.stderr.contains(long_name(flag));
            if r.status != 125 || !named || r.ran || r.stderr.trim().is_empty() {
                failures.push(format!(
                    "{form:?}: exit {:?}, ran: {}, stderr: {}",
                    r.status,
                    r.ran,
                    r.stderr.trim()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn usage_errors_are_125_too() {
    for args in [
        &["--no-such-flag"][..],
        &["-d", "x", "--json", "{}"],
        &["-q", "-v"],
        &["--attempts"],
    ] {
        let r = run_with(args);
        assert_eq!(r.status, 125, "{args:?}: {}", r.stderr);
        assert!(!r.ran, "{args:?} ran the command");
        assert!(r.stderr.starts_with("retry: "), "{args:?}: {}", r.stderr);
    }
}

/// Usage errors of every origin (clap's own, curl's vocabulary, the modes, the
/// configuration) and the flag each must name first.
const REFUSALS: &[(&[&str], &str)] = &[
    (&["--delay", "soon", "true"], "--delay"),
    (&["--jitter", "lots", "true"], "-j/--jitter"),
    (&["-a"], "-a/--attempts"),
    (&["-q", "-v", "true"], "-q/--quiet"),
    (&["--delay", "1s", "--delay", "2s", "true"], "--delay"),
    (&["--key", "k.pem", "http://127.0.0.1:9/"], "-E/--cert"),
    (&["--no-such-flag", "true"], "--no-such-flag"),
    (&["--trace", "t", "http://127.0.0.1:9/"], "--trace"),
    (&["-fsSLZ", "http://127.0.0.1:9/"], "-Z (in -fsSLZ)"),
    (&["-o", "x", "true"], "-o/--output"),
    (&["--retry-on-status", "503", "true"], "--retry-on-status"),
    (&["http://127.0.0.1:9/", "-o"], "-o/--output"),
    (
        &["http://127.0.0.1:9/", "http://127.0.0.1:9/b"],
        "http://127.0.0.1:9/b",
    ),
    (&["-u", "nopassword", "http://127.0.0.1:9/"], "-u/--user"),
    (
        &["--max-delay", "1s", "--delay", "2s", "true"],
        "--max-delay",
    ),
    (&["--schedule", "* * * * * *", "true"], "--schedule"),
    (&["--proto", "=htps", "http://127.0.0.1:9/"], "--proto"),
    (&[], "COMMAND|URL"),
    (&["-m", "abc", "true"], "-m"),
    (&["-mabc", "true"], "-m"),
    (&["-m", "5", "--max-time", "10s", "true"], "-m"),
    (
        &[
            "--retry",
            "2",
            "-t",
            "5",
            "--max-time",
            "10",
            "http://127.0.0.1:9/",
        ],
        "--max-time",
    ),
    (
        &["--hold-stdout", "--no-hold-stdout", "true"],
        "--hold-stdout",
    ),
];

/// One style for every refusal: `retry: FLAG: what is wrong; what instead`, one line,
/// exit 125, never clap's `error:` block with its usage and "For more information".
#[test]
fn every_refusal_is_one_line_naming_the_flag_first() {
    let mut failures = Vec::new();
    for (args, flag) in REFUSALS {
        let out = retry().args(*args).env("NO_COLOR", "1").run();
        let stderr = out.stderr.trim_end();
        let styled = stderr.starts_with(&format!("retry: {flag}: "))
            && stderr.contains("; ")
            && !stderr.contains('\n')
            && !stderr.contains("error:");
        if out.status != 125 || !styled {
            failures.push(format!("{args:?}: exit {}: {stderr}", out.status));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// A value with invalid UTF-8 is refused naming the option it was given to, or its
/// position; a value with control characters is echoed escaped, on one line.
#[test]
fn refusals_name_the_argument_as_typed_and_echo_values_escaped() {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;
    let bad = || OsString::from_vec(b"\xffsoon".to_vec());
    let joined = || OsString::from_vec(b"--delay=\xff".to_vec());
    let server = Server::script(vec![Reply::ok("sent")]).expect_hits(0);
    let url = server.url("/");
    let cases: Vec<(Vec<OsString>, &str)> = vec![
        (
            vec!["--delay".into(), bad(), "--".into()],
            "retry: --delay: the value is not valid UTF-8",
        ),
        (
            vec![joined(), "--".into()],
            "retry: --delay: the value is not valid UTF-8",
        ),
        (
            vec!["-t".into(), bad(), "--".into()],
            "retry: -t: the value is not valid UTF-8",
        ),
        (
            vec!["-d".into(), bad(), url.clone().into()],
            "retry: -d: the value is not valid UTF-8",
        ),
        (
            vec!["--jitter".into(), "a\nb\x1b[2J".into(), "--".into()],
            r"retry: -j/--jitter: 'a\nb\u{1b}[2J' is not",
        ),
        (
            vec!["-g".into(), "no-such\x1b[2J\ncommand".into()],
            r"retry: -g/--globoff: an option of HTTP mode, but the command 'no-such\u{1b}[2J\ncommand'",
        ),
    ];
    for (args, says) in cases {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let mut cmd = retry();
        cmd.args(&args).env("NO_COLOR", "1");
        if args.last().is_some_and(|a| a == "--") {
            cmd.arg("touch").arg(&marker);
        }
        let out = cmd.run();
        assert_eq!(out.status, 125, "{args:?}: {}", out.stderr);
        assert!(out.stderr.starts_with(says), "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(
            !out.stderr.trim_end().contains(['\n', '\x1b']),
            "{args:?}: {}",
            out.stderr
        );
        assert!(!marker.exists(), "{args:?}: the command ran");
    }
}

// ---- Options that belong to one mode, and curl options retry does not take ----

/// The command-mode options (docs/internals.md, "Options that belong to one mode").
const COMMAND_ONLY: &[&str] = &[
    "profile",
    "stop-on",
    "retry-on",
    "success-on",
    "stdin",
    "hold-stdout",
    "no-hold-stdout",
    "hold-stderr",
    "kill-after",
    "signal",
    "preserve-status",
];

/// Options of both modes; every other option is a request option (HTTP mode).
const BOTH: &[&str] = &[
    "lease-ttl",
    "on-retry",
    "on-give-up",
    "on-success",
    "hook-timeout",
    "schedule",
    "job",
    "catch-up",
    "catch-up-window",
    "overlap",
    "grace",
    "crontab",
    "job-output",
    "tz",
    "metrics-listen",
    "attempts",
    "delay",
    "max-delay",
    "backoff",
    "factor",
    "jitter",
    "delays",
    "consecutive",
    "until-failure",
    "ignore-retry-after",
    "timeout",
    "max-time",
    "seed",
    "allow-nested",
    "lock",
    "lock-wait",
    "busy-exit",
    "once",
    "state",
    "retry-budget",
    "budget-size",
    "budget-ratio",
    "circuit",
    "circuit-failures",
    "circuit-cooldown",
    "circuit-exit",
    "throttled",
    "splay",
    "quiet",
    "verbose",
    "log-format",
    "report",
    "otel",
    "dry-run",
    "idempotency-key",
    "max-retry-after",
    "stop-on-output",
    "retry-on-output",
    "success-on-output",
    "retry-on-status",
    "stop-on-status",
];

/// A valid use of each option, by long name; `{dir}` is the run's own directory.
const SAMPLES: &[(&str, &[&str])] = &[
    ("attempts", &["-a", "1"]),
    ("delay", &["--delay", "1ms"]),
    ("max-delay", &["--max-delay", "1s"]),
    ("backoff", &["--backoff", "linear"]),
    ("factor", &["--factor", "3"]),
    ("jitter", &["-j", "none"]),
    ("delays", &["--delays", "1ms,2ms"]),
    ("consecutive", &["--consecutive", "2"]),
    ("until-failure", &["--until-failure", "-a", "3"]),
    ("ignore-retry-after", &["--ignore-retry-after"]),
    ("timeout", &["-t", "20s"]),
    ("max-time", &["--max-time", "30s"]),
    ("seed", &["--seed", "7"]),
    ("allow-nested", &["--allow-nested"]),
    ("profile", &["--profile", "generic"]),
    ("stop-on", &["--stop-on", "2"]),
    ("retry-on", &["--retry-on", "75"]),
    ("success-on", &["--success-on", "0,1"]),
    ("stop-on-output", &["--stop-on-output", "fatal"]),
    ("retry-on-output", &["--retry-on-output", "again"]),
    ("success-on-output", &["--success-on-output", "done"]),
    ("stdin", &["--stdin", "null"]),
    ("hold-stdout", &["--hold-stdout"]),
    ("no-hold-stdout", &["--no-hold-stdout"]),
    ("hold-stderr", &["--hold-stderr"]),
    ("kill-after", &["--kill-after", "1s"]),
    ("signal", &["--signal", "INT"]),
    ("preserve-status", &["--preserve-status"]),
    ("request", &["-X", "GET"]),
    ("header", &["-H", "X-Test: 1"]),
    ("data", &["-d", "a=b"]),
    ("json", &["--json", "{}"]),
    ("output", &["-o", "{dir}/out"]),
    ("include", &["-i"]),
    ("connect-timeout", &["--connect-timeout", "5s"]),
    ("insecure", &["-k"]),
    ("max-redirs", &["--max-redirs", "3"]),
    ("idempotency-key", &["--idempotency-key", "auto"]),
    ("idempotency-header", &["--idempotency-header", "X-Key"]),
    ("retry-unsafe", &["--retry-unsafe"]),
    ("retry-on-status", &["--retry-on-status", "503"]),
    ("stop-on-status", &["--stop-on-status", "404"]),
    ("max-retry-after", &["--max-retry-after", "1m"]),
    ("fail", &["-f"]),
    ("fail-with-body", &["--fail-with-body"]),
    ("silent", &["-s"]),
    ("show-error", &["-S"]),
    ("location", &["-L"]),
    ("head", &["-I"]),
    ("write-out", &["-w", "%{http_code}"]),
    ("dump-header", &["-D", "{dir}/headers"]),
    ("remote-name", &["-O"]),
    ("retry", &["--retry", "2"]),
    ("retry-delay", &["--retry-delay", "1"]),
    ("retry-max-time", &["--retry-max-time", "30"]),
    ("retry-connrefused", &["--retry-connrefused"]),
    ("retry-all-errors", &["--retry-all-errors"]),
    ("continue-at", &["-C", "-", "-o", "{dir}/resumed"]),
    ("user", &["-u", "a:b"]),
    ("basic", &["--basic", "-u", "a:b"]),
    ("proto", &["--proto", "=http"]),
    ("proto-redir", &["--proto-redir", "-all,+http"]),
    ("user-agent", &["-A", "probe/1"]),
    ("referer", &["-e", "http://r.test/"]),
    ("cookie", &["-b", "a=1"]),
    ("data-binary", &["--data-binary", "x"]),
    ("data-raw", &["--data-raw", "@x"]),
    ("data-urlencode", &["--data-urlencode", "a=b c"]),
    ("get", &["-G"]),
    ("form", &["-F", "a=1"]),
    ("upload-file", &["-T", "{dir}/cert.pem"]),
    ("globoff", &["-g"]),
    ("compressed", &["--compressed"]),
    ("proxy", &["-x", "http://127.0.0.1:1"]),
    ("noproxy", &["--noproxy", "*"]),
    ("cacert", &["--cacert", "{dir}/cert.pem"]),
    (
        "cert",
        &["--cert", "{dir}/cert.pem", "--key", "{dir}/key.pem"],
    ),
    (
        "key",
        &["--key", "{dir}/key.pem", "--cert", "{dir}/cert.pem"],
    ),
    ("http1.1", &["--http1.1"]),
    ("http2", &["--http2"]),
    ("resolve", &["--resolve", "example.test:80:127.0.0.1"]),
    ("ipv4", &["-4"]),
    ("ipv6", &["-6"]),
    ("unix-socket", &["--unix-socket", "{dir}/sock"]),
    ("lock", &["--lock", "{dir}/lock"]),
    ("lock-wait", &["--lock-wait", "1s"]),
    ("busy-exit", &["--busy-exit", "3"]),
    ("once", &["--once", "key", "--state", "{dir}/state"]),
    ("state", &["--state", "{dir}/state"]),
    (
        "lease-ttl",
        &[
            "--lease-ttl",
            "5s",
            "--lock",
            "postgres://u@127.0.0.1:1/db#x",
            "--dry-run",
        ],
    ),
    (
        "retry-budget",
        &["--retry-budget", "b", "--state", "{dir}/state"],
    ),
    ("budget-size", &["--budget-size", "4"]),
    ("budget-ratio", &["--budget-ratio", "0.5"]),
    ("circuit", &["--circuit", "c", "--state", "{dir}/state"]),
    ("circuit-failures", &["--circuit-failures", "3"]),
    ("circuit-cooldown", &["--circuit-cooldown", "5s"]),
    ("circuit-exit", &["--circuit-exit", "70"]),
    (
        "throttled",
        &[
            "--throttled",
            "wait",
            "--max-time",
            "5s",
            "--retry-budget",
            "b",
            "--state",
            "{dir}/state",
        ],
    ),
    ("splay", &["--splay", "10ms"]),
    ("quiet", &["-q"]),
    ("verbose", &["-v"]),
    ("log-format", &["--log-format", "json"]),
    ("report", &["--report", "{dir}/report.json"]),
    // Nothing listens there: the export fails at once, with one warning.
    ("otel", &["--otel", "http://127.0.0.1:9"]),
    ("dry-run", &["--dry-run"]),
    ("on-retry", &["--on-retry", "true"]),
    ("on-give-up", &["--on-give-up", "true"]),
    ("on-success", &["--on-success", "true"]),
    ("hook-timeout", &["--hook-timeout", "5s"]),
    // A scheduler runs until stopped: its samples are dry runs.
    (
        "schedule",
        &[
            "--schedule",
            "@daily",
            "--state",
            "{dir}/state",
            "--dry-run",
        ],
    ),
    (
        "job",
        &[
            "--schedule",
            "@daily",
            "--job",
            "j",
            "--state",
            "{dir}/state",
            "--dry-run",
        ],
    ),
    (
        "catch-up",
        &[
            "--schedule",
            "@daily",
            "--catch-up",
            "all",
            "--state",
            "{dir}/state",
            "--dry-run",
        ],
    ),
    (
        "catch-up-window",
        &[
            "--schedule",
            "@daily",
            "--catch-up-window",
            "1h",
            "--state",
            "{dir}/state",
            "--dry-run",
        ],
    ),
    (
        "overlap",
        &[
            "--schedule",
            "@daily",
            "--overlap",
            "queue",
            "--state",
            "{dir}/state",
            "--dry-run",
        ],
    ),
    (
        "crontab",
        &[
            "--crontab",
            "{dir}/tab",
            "--state",
            "{dir}/state",
            "--dry-run",
        ],
    ),
    (
        "job-output",
        &[
            "--crontab",
            "{dir}/tab",
            "--job-output",
            "raw",
            "--state",
            "{dir}/state",
            "--dry-run",
        ],
    ),
    (
        "grace",
        &[
            "--schedule",
            "@daily",
            "--grace",
            "5s",
            "--state",
            "{dir}/state",
            "--dry-run",
        ],
    ),
    (
        "tz",
        &[
            "--schedule",
            "@daily",
            "--tz",
            "Europe/Berlin",
            "--state",
            "{dir}/state",
            "--dry-run",
        ],
    ),
    (
        "metrics-listen",
        &[
            "--schedule",
            "@daily",
            "--metrics-listen",
            "127.0.0.1:0",
            "--state",
            "{dir}/state",
            "--dry-run",
        ],
    ),
];

/// Flags that clash with the quick backoff of `fast()` (`--delay`, `--max-delay`).
const SCHEDULE_FLAGS: &[&str] = &["--delay", "--max-delay", "--delays", "--retry-delay"];

#[derive(Clone, Copy, PartialEq, Debug)]
enum Mode {
    Command,
    Http,
}

/// Runs `retry ARGS TARGET` in its own directory (`{dir}` in ARGS): TARGET is the
/// marker command, or a GET of the server's /file.txt.
fn run_in(mode: Mode, args: &[&str], server: Option<&Server>) -> Refusal {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    // PEM files for the samples of --cacert, --cert and --key.
    std::fs::write(dir.path().join("cert.pem"), http_server::TEST_CERT).unwrap();
    std::fs::write(dir.path().join("key.pem"), http_server::TEST_KEY).unwrap();
    let touch = format!("touch '{}'", marker.display());
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace("{dir}", &dir.path().to_string_lossy()))
        .collect();
    let hits = server.map_or(0, Server::hits);
    let mut cmd = retry();
    // Quick backoff, unless the sample sets the schedule itself.
    let sets_schedule = |a: &String| SCHEDULE_FLAGS.contains(&a.split('=').next().unwrap_or(a));
    if !args.iter().any(sets_schedule) {
        cmd.fast();
    }
    cmd.args(&args).current_dir(dir.path()).env("NO_COLOR", "1");
    match mode {
        Mode::Command => cmd.args(["--", "sh", "-c", &touch]),
        Mode::Http => cmd.arg(server.expect("a server for HTTP mode").url("/file.txt")),
    };
    let out = cmd.run();
    let ran = match mode {
        Mode::Command => marker.exists(),
        Mode::Http => server.is_some_and(|s| s.hits() > hits),
    };
    Refusal {
        status: out.status,
        stderr: out.stderr,
        ran,
    }
}

/// Samples of options of both modes that command mode takes only with more: a status
/// list judges the status a tool prints, so it needs a profile that reads one.
const IN_COMMAND_MODE: &[(&str, &[&str])] = &[
    (
        "retry-on-status",
        &["--retry-on-status", "503", "--profile", "curl"],
    ),
    (
        "stop-on-status",
        &["--stop-on-status", "404", "--profile", "curl"],
    ),
];

fn check_option(long: &str, sample: &[&str], server: &Server) -> Vec<String> {
    let own = if COMMAND_ONLY.contains(&long) {
        vec![Mode::Command]
    } else if BOTH.contains(&long) {
        vec![Mode::Command, Mode::Http]
    } else {
        vec![Mode::Http]
    };
    let mut failures = Vec::new();
    for mode in [Mode::Command, Mode::Http] {
        let sample = match IN_COMMAND_MODE.iter().find(|(name, _)| *name == long) {
            Some((_, own)) if mode == Mode::Command => own,
            _ => sample,
        };
        let Refusal {
            status,
            stderr,
            ran,
        } = run_in(mode, sample, Some(server));
        let stderr = stderr.trim();
        if own.contains(&mode) {
            if status == 125 {
                failures.push(format!("{sample:?} refused in {mode:?} mode: {stderr}"));
            }
            continue;
        }
        let mode_name = match mode {
            Mode::Command => "command mode",
            Mode::Http => "HTTP mode",
        };
        let named = stderr.contains(&format!("--{long}")) && stderr.contains(mode_name);
        if status != 125 || !named || ran {
            failures.push(format!(
                "{sample:?} in {mode:?} mode: exit {status:?}, ran: {ran}, stderr: {stderr}"
            ));
        }
    }
    failures
}

/// Options of `retry --crontab FILE`, which takes no COMMAND or URL (the jobs' are in
/// the file): their samples run as they are, `{dir}/tab` a crontab of one job.
const NO_TARGET: &[&str] = &["crontab", "job-output"];

fn check_without_target(sample: &[&str]) -> Vec<String> {
    let dir = crate::support::Scratch::new();
    dir.write("tab", b"@daily true\n");
    let root = dir.p("");
    let args: Vec<String> = sample
        .iter()
        .map(|a| a.replace("{dir}/", &root).replace("{dir}", &root))
        .collect();
    let out = retry().args(&args).run();
    if out.status == 0 {
        Vec::new()
    } else {
        vec![format!(
            "{sample:?}: exit {}: {}",
            out.status,
            out.stderr.trim()
        )]
    }
}

#[test]
fn every_option_is_accepted_in_its_mode_and_refused_in_the_other() {
    let server = Server::script(vec![Reply::ok("ok")]);
    let mut failures = Vec::new();
    let cmd = retry::Cli::command();
    for arg in cmd.get_arguments() {
        let Some(long) = arg.get_long() else {
            continue;
        };
        if arg.is_hide_set() {
            continue;
        }
        match SAMPLES.iter().find(|(name, _)| *name == long) {
            Some((_, sample)) if NO_TARGET.contains(&long) => {
                failures.extend(check_without_target(sample))
            }
            Some((_, sample)) => failures.extend(check_option(long, sample, &server)),
            None => failures.push(format!("--{long} has no sample in SAMPLES: add one")),
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn output_in_command_mode_is_refused_not_ignored() {
    let r = run_with(&["-o", "x"]);
    assert_eq!(r.status, 125, "{}", r.stderr);
    assert!(!r.ran);
    assert!(
        r.stderr.contains("-o/--output") && r.stderr.contains("HTTP mode"),
        "{}",
        r.stderr
    );
}

/// Unsupported curl options as people type them, and a word the message must hold.
const UNSUPPORTED: &[(&[&str], &str)] = &[
    (&["--trace", "t.log"], "-vv"),
    (&["--trace-ascii=-"], "-vv"),
    (&["-K", "curlrc"], "config file"),
    (&["-c", "jar.txt"], "--cookie-jar"),
    (&["--cookie-jar", "jar.txt"], "no equivalent"),
    (&["--limit-rate", "1M"], "no equivalent"),
    (&["--socks5", "127.0.0.1:1080"], "-x socks5://"),
    (&["-Z"], "one retry per URL"),
    (&["--url", "http://127.0.0.1:9/"], "operand"),
    (&["--connect-to", "a:1:b:2"], "--resolve"),
    (&["--create-dirs"], "existing directory"),
    (&["-fsSLZ"], "-Z"),
    (&["-sN"], "-N"),
    // Like no option's name (clap would suggest --no-hold-stdout for `--no-such-option`).
    (&["--xyzzy"], "retry --help"),
];

#[test]
fn unsupported_curl_options_exit_125_naming_them_without_the_double_dash_tip() {
    let server = Server::script(vec![Reply::ok("ok")]).expect_hits(0);
    let mut failures = Vec::new();
    for (args, says) in UNSUPPORTED {
        for mode in [Mode::Http, Mode::Command] {
            let Refusal {
                status,
                stderr,
                ran,
            } = run_in(mode, args, Some(&server));
            let name = args[0].split('=').next().unwrap();
            let named = stderr.contains(name) || (name.len() > 2 && !name.starts_with("--"));
            if status != 125
                || !named
                || !stderr.contains(says)
                || ran
                || stderr.contains("to pass")
                || stderr.contains("'--") && stderr.contains("tip")
            {
                failures.push(format!(
                    "{args:?} ({mode:?}): exit {status:?}, ran: {ran}, stderr: {}",
                    stderr.trim()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn grouped_curl_short_flags_work() {
    let server = Server::script(vec![Reply::ok("fine")]).expect_hits(1);
    let out = retry().args(["-fsSL", &server.url("/")]).run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(out.stdout, b"fine");
}
