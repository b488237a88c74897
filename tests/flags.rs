//! Every value-taking flag refuses a bad value before anything runs: exit 125, a
//! message that names the flag, and the command (which would create a marker file)
//! never started.

use std::process::Command;

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
    ("--timeout", "0"),
    ("-t", "5 parsecs"),
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
    ("--log-format", "xml"),
    ("--report", "/nonexistent-dir/report.json"),
];

struct Refusal {
    status: Option<i32>,
    stderr: String,
    ran: bool,
}

fn run_with(args: &[&str]) -> Refusal {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let touch = format!("touch '{}'", marker.display());
    let out = Command::new(env!("CARGO_BIN_EXE_retry"))
        .args(args)
        .args(["--", "sh", "-c", &touch])
        .env("NO_COLOR", "1")
        .env_remove("RETRY_DEPTH")
        .output()
        .unwrap();
    Refusal {
        status: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        ran: marker.exists(),
    }
}

/// The long name clap uses in its message for a short flag.
fn long_name(flag: &str) -> &str {
    match flag {
        "-a" => "--attempts",
        "-j" => "--jitter",
        "-t" => "--timeout",
        "-X" => "--request",
        other => other,
    }
}

#[test]
fn the_marker_command_runs_when_values_are_good() {
    let ok = run_with(&["-a", "1"]);
    assert_eq!(ok.status, Some(0), "{}", ok.stderr);
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
            if r.status != Some(125) || !named || r.ran || r.stderr.trim().is_empty() {
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
        assert_eq!(r.status, Some(125), "{args:?}: {}", r.stderr);
        assert!(!r.ran, "{args:?} ran the command");
        assert!(r.stderr.contains("error"), "{args:?}: {}", r.stderr);
    }
}
