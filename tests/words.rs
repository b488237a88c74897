//! What a mistaken command line is told (SPEC, "What users still trip on (round 4)"):
//! another tool's spelling gets retry's word from the one table of spellings, a
//! misspelt option the nearest real one, a refusal the flag that was meant; each is
//! one line, exit 125, with nothing run.

use retry::{SPELLINGS, Spelling, When};

use crate::support::{Run, Scratch, retry};

/// Runs `args` before `-- sh -c 'echo ran'`, checking the refusal's shape.
fn refused(args: &[&str]) -> String {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--", "sh", "-c", "echo ran"]);
    let out: Run = retry().args(&all).env("NO_COLOR", "1").run();
    let stderr = out.stderr.trim_end().to_string();
    assert_eq!(out.status, 125, "{args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "{args:?} ran the command");
    assert!(
        stderr.starts_with("retry: ") && !stderr.contains('\n'),
        "{args:?}: not one line: {stderr}"
    );
    stderr
}

/// The words a row's option is typed with, where its tool would type it.
fn typed(row: &Spelling, lock: &str) -> Vec<String> {
    let mut args = Vec::new();
    if row.when == When::Lock {
        args.extend(["--lock".to_string(), lock.to_string()]);
    }
    args.push(row.typed.to_string());
    if !row.sample.is_empty() {
        args.push(row.sample.to_string());
    }
    args
}

#[test]
fn every_spelling_of_another_tool_gets_retry_s_word() {
    let scratch = Scratch::new();
    let lock = scratch.path("lock");
    let lock = lock.to_str().unwrap();
    for row in SPELLINGS {
        let args = typed(row, lock);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let stderr = refused(&args);
        assert!(
            stderr.starts_with(&format!("retry: {}", row.typed)),
            "{args:?}: {stderr}"
        );
        assert!(
            stderr.contains(row.shown) && stderr.contains(row.retry),
            "{args:?} does not name {} for {}: {stderr}",
            row.retry,
            row.shown
        );
    }
}

#[test]
fn letters_of_curl_are_curl_s_where_another_tool_s_do_not_apply() {
    // Without --lock, -w is curl's --write-out, refused in command mode as before.
    let stderr = refused(&["-w", "5"]);
    assert!(
        stderr.starts_with("retry: -w/--write-out: an option of HTTP mode"),
        "{stderr}"
    );
    assert!(!stderr.contains("--lock-wait"), "{stderr}");
    // Before a URL, -n and -r are curl's (unsupported) options, not flock's or recur's.
    for (flag, curl) in [("-n", "--netrc"), ("-r", "--range")] {
        let out = retry()
            .args(["--lock", "/tmp/x", flag, "http://127.0.0.1:9/"])
            .run();
        assert_eq!(out.status, 125);
        assert!(out.stderr.contains(curl), "{flag}: {}", out.stderr);
    }
    // Before a URL, -w next to --lock is curl's --write-out, taken as such.
    let scratch = Scratch::new();
    let lock = scratch.path("lock");
    let out = retry()
        .args(["--dry-run", "--lock", lock.to_str().unwrap()])
        .args(["-w", "%{http_code}", "http://127.0.0.1:9/"])
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    // retry's own -j KIND is not recur's.
    let stderr = refused(&["-j", "sideways"]);
    assert!(!stderr.contains("recur"), "{stderr}");
}

#[test]
fn misspelt_options_get_the_nearest_real_one() {
    const MISSPELT: &[(&str, &str)] = &[
        ("--atempts", "--attempts"),
        ("--dealy", "--delay"),
        ("--timout", "--timeout"),
        ("--max-dealy", "--max-delay"),
        ("--max-tme", "--max-time"),
        ("--jiter", "--jitter"),
        ("--backof", "--backoff"),
        ("--lock-wiat", "--lock-wait"),
        ("--retry-on-stauts", "--retry-on-status"),
        ("--hold-stout", "--hold-stdout"),
    ];
    for (typed, meant) in MISSPELT {
        let stderr = refused(&[typed, "1"]);
        assert_eq!(
            stderr,
            format!("retry: {typed}: unknown option; did you mean {meant}?"),
        );
    }
}

#[test]
fn refusals_name_the_flag_that_was_meant() {
    let stderr = refused(&["--retry", "3"]);
    assert!(stderr.starts_with("retry: --retry: "), "{stderr}");
    assert!(stderr.contains("-a 4"), "{stderr}");
    let stderr = refused(&["-d", "2s"]);
    assert!(stderr.starts_with("retry: -d/--data: "), "{stderr}");
    assert!(stderr.contains("--delay"), "{stderr}");
    let stderr = refused(&["--retry-on", "503"]);
    assert!(stderr.starts_with("retry: --retry-on: "), "{stderr}");
    assert!(stderr.contains("--retry-on-status"), "{stderr}");
}

#[test]
fn misleading_suggestions_give_way_to_the_help() {
    // Far from every option (or another tool's word): no "did you mean".
    for typed in [
        "--frobnicate",
        "--on-calendr",
        "--retry-intervals",
        "--persistently",
    ] {
        let stderr = refused(&[typed, "1"]);
        assert_eq!(
            stderr,
            format!("retry: {typed}: unknown option; retry --help lists the options")
        );
    }
    // Other tools' words that clap took for retry's own: the word to use instead.
    for (typed, instead) in [
        ("--persistent", "--catch-up latest"),
        ("--on-calendar", "--schedule EXPR"),
        ("--random-delay", "--splay DUR"),
        ("--randomized-delay-sec", "--splay Ns"),
        ("--starting-deadline-seconds", "--catch-up-window Ns"),
        ("--concurrency-policy", "--overlap"),
    ] {
        let stderr = refused(&[typed, "1"]);
        assert!(!stderr.contains("did you mean"), "{typed}: {stderr}");
        assert!(stderr.contains(instead), "{typed}: {stderr}");
    }
    let stderr = refused(&["--retry-interval", "5"]);
    assert!(!stderr.contains("--retry-on"), "{stderr}");
    assert!(
        stderr.ends_with("retry --help lists the options"),
        "{stderr}"
    );
}

#[test]
fn supercronic_s_flags_are_whole_words_before_the_target_in_both_modes() {
    let rows = SPELLINGS.iter().filter(|r| r.when == When::Word);
    for row in rows {
        // Before a URL (HTTP mode), and in Go's double-dash spelling.
        let out = retry().args([row.typed, "http://127.0.0.1:9/"]).run();
        assert_eq!(out.status, 125, "{}: {}", row.typed, out.stderr);
        assert!(
            out.stderr.contains(row.retry),
            "{}: {}",
            row.typed,
            out.stderr
        );
        let doubled = format!("-{}", row.typed);
        if !["--json", "--quiet"].contains(&doubled.as_str()) {
            let stderr = refused(&[&doubled]);
            assert!(stderr.contains(row.retry), "{doubled}: {stderr}");
        }
    }
    // retry's own --json and --quiet stay retry's.
    let stderr = refused(&["--json", "{}"]);
    assert!(!stderr.contains("supercronic"), "{stderr}");
    // With its value attached, Go's way.
    let stderr = refused(&["-prometheus-listen-address=0.0.0.0:9746"]);
    assert!(stderr.contains("--metrics-listen"), "{stderr}");
    // After a URL, letters are curl's: -debug is -d ebug (a body), as curl reads it.
    let out = retry()
        .args(["--dry-run", "http://127.0.0.1:9/", "-debug"])
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
}

#[test]
fn an_option_on_the_command_line_is_never_blamed_on_a_crontab_line() {
    let scratch = Scratch::new();
    let tab = scratch.path("crontab");
    std::fs::write(&tab, "*/5 * * * * echo ran\n0 3 * * * echo night\n").unwrap();
    let tab = tab.to_str().unwrap();
    let cases: [(&[&str], &str); 9] = [
        (
            &["--crontab", tab, "-overlapping"],
            "for supercronic's -overlapping",
        ),
        (
            &["-overlapping", "--crontab", tab],
            "for supercronic's -overlapping",
        ),
        (
            &["--crontab", tab, "-debug", "--dry-run"],
            "for supercronic's -debug",
        ),
        (&["--crontab", tab, "-test"], "for supercronic's -test"),
        (
            &["--crontab", tab, "-H", "X: y"],
            "each job of a crontab selects command mode",
        ),
        (
            &["--crontab", tab, "-o", "out"],
            "each job of a crontab selects command mode",
        ),
        (
            &["--crontab", tab, "--once", "k"],
            "--once: cannot be used with --crontab",
        ),
        (
            &["--crontab", tab, "--job", "x"],
            "--job: cannot be used with --crontab",
        ),
        (
            &["--crontab", tab, "--stdin", "replay"],
            "--stdin: only null goes with --crontab",
        ),
    ];
    for (args, says) in cases {
        let out = retry().args(args).run();
        assert_eq!(out.status, 125, "{args:?}: {}", out.stderr);
        let line = out.stderr.trim_end();
        assert!(!line.contains('\n'), "{args:?}: {line}");
        assert!(!line.contains("crontab:"), "{args:?} blamed a line: {line}");
        assert!(line.contains(says), "{args:?}: {line}");
    }
}

// ---- A target that reads as a URL retry does not take as one ----

#[test]
fn an_address_without_its_scheme_is_told_of_http() {
    for target in [
        "example.com",
        "example.com/x",
        "localhost:8080",
        "127.0.0.1:8080/ok",
    ] {
        let out = retry().args(["-a", "1", target]).run();
        assert_eq!(out.status, 127, "{target}: {}", out.stderr);
        let said = format!(
            "{target}: command not found; did you mean http://{target}? only http:// and https:// select HTTP mode"
        );
        assert!(out.stderr.contains(&said), "{target}: {}", out.stderr);
        // With an HTTP option the refusal says it too, before anything runs.
        let out = retry().args(["-o", "out", target]).run();
        assert_eq!(out.status, 125, "{target}: {}", out.stderr);
        assert!(
            out.stderr
                .starts_with("retry: -o/--output: an option of HTTP mode")
                && out
                    .stderr
                    .contains(&format!("did you mean http://{target}?"))
                && out.stderr.trim_end().lines().count() == 1,
            "{target}: {}",
            out.stderr
        );
    }
}

#[test]
fn other_schemes_are_told_http_mode_speaks_only_http() {
    for target in [
        "ftp://127.0.0.1/x",
        "file:///etc/hosts",
        "ws://127.0.0.1:9/",
    ] {
        let out = retry().args(["-a", "1", target]).run();
        assert_eq!(out.status, 127, "{target}: {}", out.stderr);
        assert!(
            out.stderr.contains("HTTP mode speaks only HTTP"),
            "{target}: {}",
            out.stderr
        );
        let out = retry().args(["-H", "X-A: 1", target]).run();
        assert_eq!(out.status, 125, "{target}: {}", out.stderr);
        assert!(
            out.stderr.contains("HTTP mode speaks only HTTP"),
            "{target}: {}",
            out.stderr
        );
    }
}

#[test]
fn a_command_that_exists_or_a_script_gets_no_url_hint() {
    // A script name is not an address, and a command on PATH is run as one.
    let out = retry().args(["-a", "1", "deploy.sh"]).run();
    assert_eq!(out.status, 127);
    assert!(!out.stderr.contains("http://"), "{}", out.stderr);
    let out = retry().args(["-o", "out", "true"]).run();
    assert_eq!(out.status, 125);
    assert!(!out.stderr.contains("http://"), "{}", out.stderr);
}
