//! Hooks and the command's own word, end to end: `--on-retry`, `--on-give-up`,
//! `--on-success` and `--hook-timeout` with real `sh` hooks (a dead-letter spool
//! directory, a dead-man ping to a local HTTP server, hooks that hang, fail or
//! are interrupted), and the `RETRY_CONTROL` directives a command writes.
//! Processes are checked through `/proc`.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::http_server::{Reply, Server};
use crate::support::{
    Scratch, alive, exited_within, fast, retry, run, wait_exit, wait_for_file, wait_until,
};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

/// `NAME=value` lines of a file written by `env`, as a map.
fn env_file(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Process IDs written one a line by a hook.
fn pids(text: &str) -> Vec<i32> {
    text.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// Waits until none of `pids` is alive, for up to `limit`.
fn all_gone(pids: &[i32], limit: Duration) -> bool {
    wait_until(limit, || pids.iter().all(|p| !alive(*p)))
}

// ---- hooks ----

#[test]
fn a_give_up_hook_puts_the_report_in_a_dead_letter_directory() {
    let s = Scratch::new();
    std::fs::create_dir(s.path("spool")).unwrap();
    let hook = format!("cat > '{}'/$(date +%s%N).json", s.p("spool"));
    for _ in 0..2 {
        let r = run(&fast(&[
            "-a",
            "2",
            "--on-give-up",
            &hook,
            "--",
            "sh",
            "-c",
            "exit 3",
        ]));
        assert_eq!(r.status, 3, "the hook never changes the exit status");
    }
    let mut letters: Vec<_> = std::fs::read_dir(s.path("spool"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    letters.sort();
    assert_eq!(letters.len(), 2, "one letter per run that gave up");
    for letter in letters {
        let report = json(&std::fs::read_to_string(&letter).unwrap());
        assert_eq!(report["result"]["stopped_because"], "attempts");
        assert_eq!(report["result"]["exit_code"], 3);
        assert_eq!(report["attempts"].as_array().unwrap().len(), 2);
        assert_eq!(report["target"], serde_json::json!(["sh", "-c", "exit 3"]));
    }
}

#[test]
fn a_success_hook_pings_a_dead_man_monitor() {
    let server = Server::script(vec![Reply::ok("OK")]).expect_hits(1);
    let ping = format!("curl -fsS {}", server.url("/ping/abc"));
    let s = Scratch::new();
    let job = s.script(
        "job",
        "echo run >> \"$D/count\"\n[ $(wc -l < \"$D/count\") -ge 2 ]",
    );
    let r = run(&fast(&[
        "--on-success",
        &ping,
        "--on-give-up",
        "exit 9",
        "--",
        &job,
    ]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.stdout, b"", "the hook's output never reaches stdout");
    assert!(
        r.stderr.contains("OK"),
        "curl's output goes to stderr: {}",
        r.stderr
    );
    let requests = server.requests();
    assert_eq!(requests[0].method, "GET");
    assert_eq!(requests[0].target, "/ping/abc");
}

#[test]
fn no_success_hook_after_a_failure_and_no_give_up_hook_after_a_success() {
    let s = Scratch::new();
    let success = format!("echo s >> '{}'", s.p("success"));
    let give_up = format!("echo g >> '{}'", s.p("give-up"));
    let hooks = ["--on-success", &success, "--on-give-up", &give_up];
    run(&fast(&[&hooks[..], &["--", "true"]].concat()));
    run(&fast(&[&hooks[..], &["-a", "2", "--", "false"]].concat()));
    run(&fast(
        &[&hooks[..], &["--stop-on", "4", "--", "sh", "-c", "exit 4"]].concat(),
    ));
    assert_eq!((s.count("success"), s.count("give-up")), (1, 2));
}

#[test]
fn no_hook_after_a_skip() {
    let s = Scratch::new();
    let state = s.p("state");
    let marker = format!("echo hook >> '{}'", s.p("hooks"));
    let once = |cmd: &str| {
        run(&fast(&[
            "--state",
            &state,
            "--once",
            "k",
            "--on-success",
            &marker,
            "--on-give-up",
            &marker,
            "--",
            cmd,
        ]))
    };
    assert_eq!(once("true").status, 0);
    assert_eq!(s.count("hooks"), 1);
    let skipped = once("false");
    assert_eq!(skipped.status, 0, "{}", skipped.stderr);
    assert_eq!(s.count("hooks"), 1, "a skipped run runs no hook");
}

#[test]
fn a_hook_that_hangs_is_cut_at_the_timeout_with_all_its_processes() {
    let s = Scratch::new();
    // The hook and its child ignore SIGTERM: only the SIGKILL a second later ends them.
    let hook = format!(
        "trap '' TERM; echo $$ > '{p}'; sleep 30 & echo $! >> '{p}'; wait",
        p = s.p("pids")
    );
    let r = run(&fast(&[
        "--hook-timeout",
        "200ms",
        "-a",
        "1",
        "--on-give-up",
        &hook,
        "--",
        "sh",
        "-c",
        "exit 6",
    ]));
    assert_eq!(r.status, 6, "{}", r.stderr);
    assert!(r.elapsed >= Duration::from_millis(1100), "{:?}", r.elapsed);
    assert!(r.elapsed < Duration::from_secs(5), "{:?}", r.elapsed);
    r.assert_stderr_has("--on-give-up hook ran out of time after 200ms");
    let pids = pids(&s.read("pids"));
    assert_eq!(pids.len(), 2);
    assert!(
        all_gone(&pids, Duration::from_secs(1)),
        "{pids:?} outlived the hook"
    );
}

#[test]
fn a_hook_that_obeys_sigterm_ends_at_the_timeout() {
    let s = Scratch::new();
    let hook = format!("echo $$ > '{}'; sleep 30", s.p("pids"));
    let r = run(&fast(&[
        "--hook-timeout",
        "300ms",
        "--on-success",
        &hook,
        "--",
        "true",
    ]));
    assert_eq!(r.status, 0);
    assert!(r.elapsed < Duration::from_millis(1500), "{:?}", r.elapsed);
    r.assert_stderr_has("ran out of time");
    assert!(all_gone(&pids(&s.read("pids")), Duration::from_secs(1)));
}

#[test]
fn a_hook_that_fails_is_only_a_warning() {
    let r = run(&fast(&["--on-success", "exit 7", "--", "true"]));
    assert_eq!(r.status, 0);
    r.assert_stderr_has("warning: the --on-success hook failed with exit status 7");
    let r = run(&fast(&[
        "-a",
        "2",
        "--on-give-up",
        "exit 7",
        "--",
        "sh",
        "-c",
        "exit 3",
    ]));
    assert_eq!(r.status, 3);
    r.assert_stderr_has("--on-give-up hook failed");
    let s = Scratch::new();
    let job = s.script("job", "echo run >> \"$D/count\"\nexit 1");
    let r = run(&fast(&["-a", "3", "--on-retry", "exit 1", "--", &job]));
    assert_eq!(
        (r.status, s.count("count")),
        (1, 3),
        "a failed hook decides nothing"
    );
}

#[test]
fn hooks_get_the_commands_environment_and_the_ending() {
    let s = Scratch::new();
    let job = s.script(
        "job",
        "env | grep '^RETRY_' > \"$D/command.$RETRY_ATTEMPT\"\nexit 3",
    );
    let on_retry = format!("env > '{}'", s.p("on-retry"));
    let on_give_up = format!("env > '{}'", s.p("on-give-up"));
    let mut cmd = retry();
    cmd.args(fast(&[
        "-a",
        "2",
        "--max-time",
        "30s",
        "--on-retry",
        &on_retry,
        "--on-give-up",
        &on_give_up,
        "--",
        &job,
    ]))
    .env("RETRY_HTTP_STATUS", "999")
    .env("RETRY_CONTROL", "/inherited");
    let r = cmd.run();
    assert_eq!(r.status, 3, "{}", r.stderr);
    let command = env_file(&s.read("command.1"));
    let retry_env = env_file(&s.read("on-retry"));
    let give_up = env_file(&s.read("on-give-up"));
    assert_eq!(retry_env["RETRY_ATTEMPT"], "1");
    assert_eq!(give_up["RETRY_ATTEMPT"], "2");
    for env in [&retry_env, &give_up] {
        assert_eq!(env["RETRY_ATTEMPTS"], "2");
        assert_eq!(
            env["RETRY_IDEMPOTENCY_KEY"],
            command["RETRY_IDEMPOTENCY_KEY"]
        );
        assert_eq!(
            env["RETRY_DEPTH"], "0",
            "retry's own depth, not the command's 1"
        );
        assert_eq!(env["RETRY_EXIT_CODE"], "3");
        assert_eq!(env["RETRY_OUTCOME"], "exit status 3");
        assert_eq!(env["RETRY_CLASS"], "transient");
        assert_eq!(env["RETRY_REASON"], "non-zero exit status");
        assert!(env["RETRY_DEADLINE_MS"].parse::<u64>().unwrap() <= 30_000);
        assert!(
            !env.contains_key("RETRY_HTTP_STATUS"),
            "no response, no status"
        );
        assert!(
            !env.contains_key("RETRY_CONTROL"),
            "hooks have no RETRY_CONTROL"
        );
    }
    assert_eq!(command["RETRY_DEPTH"], "1");
    let delay: u64 = retry_env["RETRY_NEXT_DELAY_MS"].parse().unwrap();
    assert!(delay <= 5, "{delay}");
    assert!(!give_up.contains_key("RETRY_NEXT_DELAY_MS"));
}

#[test]
fn hooks_in_http_mode_get_the_status_and_curls_exit_code() {
    let server = Server::script(vec![Reply::status(503)]).expect_hits(2);
    let s = Scratch::new();
    let on_give_up = format!("env > '{}'", s.p("env"));
    let r = retry()
        .fast()
        .args(["-a", "2", "--idempotency-key", "key-1"])
        .args(["--on-give-up", &on_give_up])
        .arg(server.url("/x"))
        .run();
    assert_eq!(r.status, 22, "{}", r.stderr);
    let env = env_file(&s.read("env"));
    assert_eq!(env["RETRY_HTTP_STATUS"], "503");
    assert_eq!(env["RETRY_EXIT_CODE"], "22");
    assert_eq!(env["RETRY_OUTCOME"], "HTTP 503");
    assert_eq!(env["RETRY_ATTEMPT"], "2");
    assert_eq!(env["RETRY_IDEMPOTENCY_KEY"], "key-1");
}

#[test]
fn the_report_on_stdin_is_the_report_file() {
    let s = Scratch::new();
    let hook = format!("cat > '{}'", s.p("stdin.json"));
    let r = run(&fast(&[
        "--report",
        &s.p("report.json"),
        "--on-success",
        &hook,
        "--",
        "true",
    ]));
    assert_eq!(r.status, 0);
    let from_stdin = json(&s.read("stdin.json"));
    assert_eq!(from_stdin, json(&s.read("report.json")));
    assert_eq!(from_stdin["result"]["stopped_because"], "success");
}

#[test]
fn hook_output_goes_to_stderr_only() {
    let r = retry()
        .fast()
        .args(["--hold-stdout", "-a", "2"])
        .args(["--on-retry", "echo retry-out; echo retry-err >&2"])
        .args(["--on-success", "echo success-out; echo success-err >&2"])
        .sh("echo command-out; [ \"$RETRY_ATTEMPT\" = 2 ]")
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), "command-out\n");
    for line in ["retry-out", "retry-err", "success-out", "success-err"] {
        assert!(r.stderr.contains(line), "{line} missing: {}", r.stderr);
    }
}

/// A hook that starts a `setsid` process ignoring SIGTERM (its pid in `escaped`),
/// records its own pid in `hook`, then runs `rest`.
/// The escaped process is waited for until it runs `sleep`, so its SIGTERM trap is set
/// before the hook can end (a busy machine could otherwise end it with the hook).
fn escaping_hook(s: &Scratch, rest: &str) -> String {
    format!(
        "setsid sh -c \"trap '' TERM; exec sleep 30\" </dev/null >/dev/null 2>&1 & \
         e=$!; n=0; while [ \"$(cat /proc/$e/comm 2>/dev/null)\" != sleep ] && [ $n -lt 500 ]; \
         do n=$((n+1)); sleep 0.01; done; \
         echo $e > '{escaped}'; echo $$ > '{hook}'; {rest}",
        escaped = s.p("escaped"),
        hook = s.p("hook")
    )
}

/// The hook's pid and its escaped process's, once the hook has written both.
fn hook_pids(s: &Scratch) -> [i32; 2] {
    let hook: i32 = wait_for_file(&s.path("hook"), Duration::from_secs(5))
        .trim()
        .parse()
        .unwrap();
    [hook, pids(&s.read("escaped"))[0]]
}

/// Waits until the hook's descendant has left the hook's group (`setsid` runs in the
/// child after `$!` is known).
fn assert_left_group([hook, escaped]: [i32; 2]) {
    let group_of = || {
        let stat = std::fs::read_to_string(format!("/proc/{escaped}/stat")).ok()?;
        stat.rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(2)?
            .parse::<i32>()
            .ok()
    };
    let left = wait_until(Duration::from_secs(5), || {
        group_of().is_some_and(|g| g != hook)
    });
    assert!(left, "the hook's descendant never left its group");
}

/// Starts retry with a hook whose `setsid` descendant ignores SIGTERM, and sends
/// SIGTERM to retry once the hook runs: 143 within a second, nothing of the hook left.
fn sigterm_during_hook(flag: &str, command: &[&str]) {
    let s = Scratch::new();
    let hook = escaping_hook(&s, "sleep 30");
    let mut child = retry()
        .args(fast(&["-a", "2", flag, &hook, "--"]))
        .args(command)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let pids = hook_pids(&s);
    assert_left_group(pids);
    let sent = Instant::now();
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let status = exited_within(&mut child, Duration::from_secs(3)).expect("retry did not exit");
    let took = sent.elapsed();
    assert_eq!(status, 143, "{flag}");
    assert!(
        took < Duration::from_secs(1),
        "{flag}: exited {took:?} after SIGTERM"
    );
    assert!(
        all_gone(&pids, Duration::from_millis(100)),
        "{flag}: the hook or its setsid descendant {pids:?} outlived retry"
    );
}

#[test]
fn sigterm_during_a_hook_exits_143_within_a_second() {
    sigterm_during_hook("--on-give-up", &["false"]);
    sigterm_during_hook("--on-success", &["true"]);
    sigterm_during_hook("--on-retry", &["false"]);
}

/// Runs retry with a hook whose `setsid` descendant ignores SIGTERM and a 300 ms
/// `--hook-timeout`: the hook is cut, its descendant gets SIGKILL a second later, and
/// the run goes on with its own status.
fn hook_timeout_with_an_escaped_descendant(flag: &str, command: &[&str], status: i32) {
    let s = Scratch::new();
    let hook = escaping_hook(&s, "sleep 30");
    let r = retry()
        .args(fast(&[
            "-a",
            "2",
            "--hook-timeout",
            "300ms",
            flag,
            &hook,
            "--",
        ]))
        .args(command)
        .run();
    assert_eq!(r.status, status, "{flag}: {}", r.stderr);
    r.assert_stderr_has(&format!("the {flag} hook ran out of time after 300ms"));
    let pids = hook_pids(&s);
    assert!(
        all_gone(&pids, Duration::from_millis(100)),
        "{flag}: the hook or its setsid descendant {pids:?} outlived its time limit"
    );
    assert!(r.elapsed >= Duration::from_millis(1300), "{:?}", r.elapsed);
    assert!(
        r.elapsed < Duration::from_secs(4),
        "{flag}: {:?}",
        r.elapsed
    );
}

#[test]
fn a_hooks_escaped_descendant_is_ended_at_the_hook_timeout() {
    hook_timeout_with_an_escaped_descendant("--on-retry", &["false"], 1);
    hook_timeout_with_an_escaped_descendant("--on-give-up", &["false"], 1);
    hook_timeout_with_an_escaped_descendant("--on-success", &["true"], 0);
}

#[test]
fn what_a_hook_leaves_behind_is_ended_when_it_ends() {
    if !crate::support::has_subreaper("ending what a hook that exits at once orphaned") {
        return;
    }
    let s = Scratch::new();
    // The hook exits at once; what it started in its group and out of it does not.
    let hook = escaping_hook(&s, "sleep 30 & echo $! >> '{kids}'");
    let hook = hook.replace("{kids}", &s.p("escaped"));
    let r = run(&fast(&["--on-success", &hook, "--", "true"]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    let left: Vec<i32> = pids(&s.read("escaped"));
    assert_eq!(left.len(), 2);
    assert!(
        all_gone(&left, Duration::from_millis(100)),
        "{left:?} outlived the hook"
    );
    // The escaped one ignores SIGTERM: it got SIGKILL a second after the hook ended.
    assert!(r.elapsed >= Duration::from_secs(1), "{:?}", r.elapsed);
    assert!(r.elapsed < Duration::from_secs(3), "{:?}", r.elapsed);
}

#[test]
fn a_hook_leaves_alone_what_a_successful_attempt_left_in_the_background() {
    let s = Scratch::new();
    // The attempt starts a daemon and exits 0: the daemon is adopted by retry, and it is
    // no part of the hook that follows, which is cut at its time limit.
    let daemon = format!(
        "setsid sleep 30 </dev/null >/dev/null 2>&1 & echo $! > '{}'",
        s.p("daemon")
    );
    let hook = escaping_hook(&s, "sleep 30");
    let r = run(&fast(&[
        "--hook-timeout",
        "200ms",
        "--on-success",
        &hook,
        "--",
        "sh",
        "-c",
        &daemon,
    ]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    let daemon: i32 = s.read("daemon").trim().parse().unwrap();
    let kept = alive(daemon);
    let _ = kill(Pid::from_raw(daemon), Signal::SIGKILL);
    assert!(kept, "the attempt's daemon was ended with the hook");
    assert!(all_gone(&hook_pids(&s), Duration::from_millis(100)));
}

#[test]
fn a_retry_hook_that_outlasts_the_sleep_delays_the_next_attempt() {
    let s = Scratch::new();
    let job = s.script("job", "date +%s%N >> \"$D/starts\"\nexit 1");
    let r = run(&fast(&["-a", "2", "--on-retry", "sleep 0.6", "--", &job]));
    assert_eq!(r.status, 1);
    let starts: Vec<u128> = s
        .read("starts")
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    let gap = Duration::from_nanos((starts[1] - starts[0]) as u64);
    assert!(gap >= Duration::from_millis(600), "{gap:?}");
    assert!(gap < Duration::from_secs(3), "{gap:?}");
}

#[test]
fn a_retry_hook_counts_towards_max_time() {
    let r = run(&fast(&[
        "-a",
        "5",
        "--max-time",
        "500ms",
        "--on-retry",
        "sleep 5",
        "--",
        "false",
    ]));
    assert_eq!(r.status, 1, "{}", r.stderr);
    assert!(r.elapsed < Duration::from_secs(3), "{:?}", r.elapsed);
    r.assert_stderr_has("--max-time");
}

#[test]
fn a_give_up_hook_runs_after_max_time_under_its_own_limit() {
    // --max-time ends the attempts; the hook that follows still runs, and
    // --hook-timeout alone bounds it: the run ends near max-time + hook-timeout.
    let s = Scratch::new();
    let hook = format!("echo $$ > '{}'; sleep 100", s.p("hook"));
    let report = s.p("report.json");
    let mut child = retry()
        .args(["--max-time", "1s", "--delay", "100ms", "--jitter", "none"])
        .args([
            "--hook-timeout",
            "1s",
            "--on-give-up",
            &hook,
            "--report",
            &report,
        ])
        .args(["--", "sh", "-c", "sleep 0.2; exit 3"])
        .start();
    let (status, took) = wait_exit(&mut child, Duration::from_secs(10));
    let stderr = crate::support::wait_for_run(child).stderr;
    assert_eq!(status, 3, "{stderr}");
    assert!(
        stderr.contains("--on-give-up hook ran out of time after 1s"),
        "{stderr}"
    );
    assert!(took >= Duration::from_millis(1800), "{took:?}");
    assert!(took < Duration::from_secs(4), "{took:?}");
    let report = json(&s.read("report.json"));
    assert_eq!(report["result"]["stopped_because"], "max_time");
    assert!(all_gone(&pids(&s.read("hook")), Duration::from_secs(1)));
}

#[test]
fn hook_flags_refuse_bad_values_naming_the_flag() {
    for (flag, value) in [
        ("--hook-timeout", "0"),
        ("--hook-timeout", "soon"),
        ("--on-retry", " "),
    ] {
        let r = run(&[flag, value, "--", "true"]);
        assert_eq!(r.status, 125, "{flag} {value:?}");
        r.assert_stderr_has(flag);
    }
}

// ---- RETRY_CONTROL ----

/// A command that writes `directive` to RETRY_CONTROL, counts its runs and exits `code`.
fn says(s: &Scratch, directive: &str, code: i32) -> String {
    s.script(
        "job",
        &format!(
            "date +%s%N >> \"$D/count\"\nprintf '%s\\n' '{directive}' > \"$RETRY_CONTROL\"\nexit {code}"
        ),
    )
}

#[test]
fn control_retry_makes_a_success_transient_and_the_status_1() {
    let s = Scratch::new();
    let r = run(&fast(&["-a", "3", "--", &says(&s, "retry", 0)]));
    assert_eq!((r.status, s.count("count")), (1, 3), "{}", r.stderr);
    r.assert_stderr_has("wrote \"retry\" to RETRY_CONTROL");
}

#[test]
fn control_retry_comes_before_stop_on() {
    let s = Scratch::new();
    let r = run(&fast(&[
        "-a",
        "2",
        "--stop-on",
        "4",
        "--",
        &says(&s, "retry", 4),
    ]));
    assert_eq!((r.status, s.count("count")), (4, 2));
}

#[test]
fn control_stop_ends_the_run_with_the_commands_status() {
    let s = Scratch::new();
    let r = run(&fast(&["--", &says(&s, "stop", 75)]));
    assert_eq!(
        (r.status, s.count("count")),
        (75, 1),
        "75 would be retried otherwise"
    );
    let s = Scratch::new();
    let r = run(&fast(&["--", &says(&s, "stop", 0)]));
    assert_eq!(
        (r.status, s.count("count")),
        (1, 1),
        "a failed attempt never exits 0"
    );
}

#[test]
fn control_success_exits_0_whatever_the_status() {
    let s = Scratch::new();
    let report = s.p("report.json");
    let r = run(&fast(&["--report", &report, "--", &says(&s, "success", 3)]));
    assert_eq!((r.status, s.count("count")), (0, 1), "{}", r.stderr);
    let report = json(&s.read("report.json"));
    assert_eq!(report["attempts"][0]["class"], "success");
    assert_eq!(report["attempts"][0]["outcome"]["code"], 3);
}

#[test]
fn control_retry_after_waits_at_least_that_long() {
    let s = Scratch::new();
    let r = run(&fast(&[
        "-a",
        "2",
        "--jitter",
        "none",
        "--",
        &says(&s, "retry-after 400ms", 1),
    ]));
    assert_eq!(r.status, 1);
    let starts: Vec<u128> = s
        .read("count")
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    let gap = Duration::from_nanos((starts[1] - starts[0]) as u64);
    assert!(gap >= Duration::from_millis(400), "{gap:?}");
    assert!(gap < Duration::from_secs(2), "{gap:?}");
}

#[test]
fn control_retry_after_past_the_cap_ends_the_run() {
    let s = Scratch::new();
    let report = s.p("report.json");
    let r = run(&fast(&[
        "--max-retry-after",
        "1s",
        "--report",
        &report,
        "--",
        &says(&s, "retry-after 1m", 0),
    ]));
    assert_eq!((r.status, s.count("count")), (1, 1), "{}", r.stderr);
    r.assert_stderr_has("the command asked to wait 1m");
    let report = json(&s.read("report.json"));
    assert_eq!(report["result"]["stopped_because"], "retry_after_too_long");
}

#[test]
fn control_garbage_is_a_warning_and_ignored() {
    let s = Scratch::new();
    let r = run(&fast(&["--", &says(&s, "please retry", 0)]));
    assert_eq!((r.status, s.count("count")), (0, 1));
    r.assert_stderr_has("warning: RETRY_CONTROL ignored: \"please retry\" is not a directive");
}

#[test]
fn a_fifo_in_place_of_the_control_file_is_a_warning_not_a_hang() {
    // No writer ever opens the FIFO: a blocking open of it would never return.
    let s = Scratch::new();
    let job = s.job(
        "echo run >> \"$D/count\"\nrm \"$RETRY_CONTROL\" && mkfifo \"$RETRY_CONTROL\" || exit 64\nexit 1",
    );
    let mut child = retry().args(fast(&["-a", "2", &job])).start();
    let (status, took) = wait_exit(&mut child, Duration::from_secs(10));
    let stderr = crate::support::wait_for_run(child).stderr;
    assert_eq!(status, 1, "{stderr}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_eq!(s.count("count"), 2, "{stderr}");
    assert!(
        stderr.contains("RETRY_CONTROL ignored: it is a FIFO, not a regular file"),
        "{stderr}"
    );
}

#[test]
fn control_file_is_empty_private_and_removed_after_the_attempt() {
    let s = Scratch::new();
    std::fs::create_dir(s.path("runtime")).unwrap();
    let job = s.script(
        "job",
        "echo \"$RETRY_CONTROL\" >> \"$D/paths\"\n[ -f \"$RETRY_CONTROL\" ] && [ ! -s \"$RETRY_CONTROL\" ] || exit 64\nstat -c %a \"$(dirname \"$RETRY_CONTROL\")\" >> \"$D/modes\"\nexit 1",
    );
    let mut cmd = retry();
    cmd.args(fast(&["-a", "2", "--", &job]))
        .env("XDG_RUNTIME_DIR", s.path("runtime"));
    let r = cmd.run();
    assert_eq!(r.status, 1, "{}", r.stderr);
    let paths: Vec<String> = s.read("paths").lines().map(str::to_string).collect();
    assert_eq!(paths.len(), 2);
    for path in &paths {
        assert!(path.starts_with(&s.p("runtime")), "{path}");
        assert!(
            !std::path::Path::new(path).exists(),
            "{path} was left behind"
        );
    }
    assert_eq!(s.read("modes"), "700\n700\n");
    // The private directory is this user's, kept for the next run; nothing is left in it.
    let dirs: Vec<_> = std::fs::read_dir(s.path("runtime"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let uid = std::fs::metadata(s.path("runtime")).unwrap().uid();
    assert!(
        dirs[0].ends_with(format!("retry-control-{uid}")),
        "{dirs:?}"
    );
    assert!(
        paths
            .iter()
            .all(|p| std::path::Path::new(p).parent() == Some(&dirs[0]))
    );
    assert_eq!(std::fs::read_dir(&dirs[0]).unwrap().count(), 0);
}

/// A `retry-control-UID` that is open to others or is a symbolic link is not used: the
/// attempt gets a fresh private directory, removed after it.
#[test]
fn an_unsafe_control_directory_is_not_used() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scratch::new();
    let job = s.script(
        "job",
        "echo \"$RETRY_CONTROL\" >> \"$D/paths\"\nstat -c %a \"$(dirname \"$RETRY_CONTROL\")\" >> \"$D/modes\"",
    );
    let uid = std::fs::metadata(s.dir.path()).unwrap().uid();
    for case in ["open", "link"] {
        let runtime = s.path(case);
        std::fs::create_dir(&runtime).unwrap();
        let own = runtime.join(format!("retry-control-{uid}"));
        if case == "open" {
            std::fs::create_dir(&own).unwrap();
            std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o777)).unwrap();
        } else {
            std::fs::create_dir(s.path("elsewhere")).unwrap();
            std::os::unix::fs::symlink(s.path("elsewhere"), &own).unwrap();
        }
        let r = retry()
            .args(["--", &job])
            .env("XDG_RUNTIME_DIR", &runtime)
            .run();
        assert_eq!(r.status, 0, "{}", r.stderr);
        let path = s.read("paths").lines().last().unwrap().to_string();
        // Component-wise: a fresh directory's random name may begin with the uid too.
        assert!(
            !std::path::Path::new(&path).starts_with(&own),
            "{case}: {path}"
        );
        assert!(
            path.starts_with(runtime.to_str().unwrap()),
            "{case}: {path}"
        );
        assert!(
            !std::path::Path::new(&path).parent().unwrap().exists(),
            "{case}: {path}"
        );
        assert_eq!(s.read("modes").lines().last(), Some("700"));
    }
    assert_eq!(std::fs::read_dir(s.path("elsewhere")).unwrap().count(), 0);
}

#[test]
fn control_falls_back_to_tmpdir() {
    let s = Scratch::new();
    let job = s.script("job", "echo \"$RETRY_CONTROL\" > \"$D/path\"");
    let mut cmd = retry();
    cmd.args(["--", &job])
        .env_remove("XDG_RUNTIME_DIR")
        .env("TMPDIR", s.dir.path());
    assert_eq!(cmd.run().status, 0);
    assert!(
        s.read("path").starts_with(&s.p("retry-control-")),
        "{}",
        s.read("path")
    );
}

#[test]
fn without_a_private_directory_the_attempt_runs_without_control() {
    let s = Scratch::new();
    let job = s.script(
        "job",
        "echo \"${RETRY_CONTROL-unset}\" > \"$D/seen\"\nexit 0",
    );
    let mut cmd = retry();
    cmd.args(["-v", "--", &job])
        .env("XDG_RUNTIME_DIR", s.path("missing"))
        .env("RETRY_CONTROL", "/an/outer/retry's/file");
    let r = cmd.run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(s.read("seen"), "unset\n");
    r.assert_stderr_has("cannot make a private directory for RETRY_CONTROL under");
    let quiet = retry()
        .args(["--", &job])
        .env("XDG_RUNTIME_DIR", s.path("missing"))
        .run();
    assert!(
        !quiet.stderr.contains("RETRY_CONTROL"),
        "-v only: {}",
        quiet.stderr
    );
}
