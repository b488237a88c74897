//! Command mode: the time limit, seed, dry run, report, logging.

use super::*;

#[test]
fn max_time_cuts_the_attempt_and_stops_the_run() {
    let (s, r) = run_job(
        "echo run >> \"$D/count\"; exec sleep 20",
        &["--max-time", "600ms"],
    );
    assert_eq!(r.status, 124, "{}", r.stderr);
    assert_eq!(s.count("count"), 1);
    assert!(r.elapsed < Duration::from_secs(6), "{:?}", r.elapsed);
    r.assert_stderr_has("--max-time");
}

#[test]
fn max_time_refuses_a_sleep_that_would_end_past_it() {
    let s = Scratch::new();
    let job = exits(&s, &[1]);
    let r = run(&[
        "--delay",
        "5s",
        "--jitter",
        "none",
        "--max-time",
        "1s",
        &job,
    ]);
    assert_eq!((r.status, s.count("count")), (1, 1));
    assert!(r.elapsed < Duration::from_secs(1), "{:?}", r.elapsed);
    r.assert_stderr_has("--max-time");
}

#[test]
fn same_seed_same_delays() {
    let delays = |seed: &str| {
        let s = Scratch::new();
        let job = exits(&s, &[1]);
        let report = s.p("r.json");
        run(&[
            "--delay",
            "10ms",
            "--max-delay",
            "40ms",
            "--seed",
            seed,
            "-a",
            "5",
            "--report",
            &report,
            &job,
        ]);
        let v: serde_json::Value = serde_json::from_str(&s.read("r.json")).unwrap();
        v["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["delay_ms"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(delays("7"), delays("7"));
}

#[test]
fn dry_run_prints_the_schedule_and_runs_nothing() {
    let s = Scratch::new();
    let job = s.job("echo run >> \"$D/count\"");
    let r = run(&[
        "--dry-run",
        "-a",
        "4",
        "--delay",
        "1s",
        "--jitter",
        "none",
        "--stop-on",
        "2",
        &job,
    ]);
    assert_eq!(r.status, 0);
    assert_eq!(s.count("count"), 0);
    let out = r.stdout_text();
    for want in [
        "2        1s",
        "3        2s",
        "4        4s",
        "worst case: 7s",
        "--stop-on 2",
        "profile:     generic",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
    let r = run(&["--dry-run", "curl", "-fsS", "http://127.0.0.1:9/"]);
    r.assert_stdout_has("profile:     curl");
}

#[test]
fn report_records_every_attempt() {
    let s = Scratch::new();
    let job = exits(&s, &[75, 0]);
    let report = s.p("report.json");
    let r = run(&fast(&["--report", &report, &job]));
    assert_eq!(r.status, 0);
    let v: serde_json::Value = serde_json::from_str(&s.read("report.json")).unwrap();
    assert_eq!(v["version"], 1);
    assert_eq!(v["mode"], "command");
    assert_eq!(v["target"][0], job.as_str());
    assert!(uuid::Uuid::parse_str(v["idempotency_key"].as_str().unwrap()).is_ok());
    let attempts = v["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0]["n"], 1);
    assert_eq!(attempts[0]["outcome"]["code"], 75);
    assert_eq!(attempts[0]["class"], "transient");
    assert!(attempts[0]["delay_ms"].is_u64());
    assert!(attempts[0]["started_at"].as_str().unwrap().ends_with('Z'));
    assert!(attempts[1].get("delay_ms").is_none());
    assert_eq!(attempts[1]["class"], "success");
    assert_eq!(v["result"]["exit_code"], 0);
    assert_eq!(v["result"]["attempts"], 2);
    assert_eq!(v["result"]["stopped_because"], "success");
}

#[test]
fn report_is_written_on_failure_and_on_signals() {
    let s = Scratch::new();
    let job = exits(&s, &[2]);
    let report = s.p("fail.json");
    run(&fast(&["-a", "2", "--report", &report, &job]));
    let v: serde_json::Value = serde_json::from_str(&s.read("fail.json")).unwrap();
    assert_eq!(v["result"]["stopped_because"], "attempts");
    assert_eq!(v["result"]["exit_code"], 2);

    let job = s.script("sleeper", "echo $$ > \"$D/ready\"; exec sleep 30");
    let report = s.p("sig.json");
    let mut child = retry()
        .args(["--report", &report, &job])
        .stderr(Stdio::piped())
        .spawn();
    // The command is the sleep it execs.
    let pid = support::wait_for_pid(&s.path("ready"), Duration::from_secs(5));
    wait_until(Duration::from_secs(5), || support::runs(pid, "sleep"));
    support::signal(&child, nix::sys::signal::Signal::SIGTERM);
    assert_eq!(support::status_of(&child.wait().unwrap()), 143);
    let v: serde_json::Value = serde_json::from_str(&s.read("sig.json")).unwrap();
    assert_eq!(v["result"]["stopped_because"], "signal");
    assert_eq!(v["result"]["exit_code"], 143);
}

#[test]
fn quiet_and_verbose() {
    let s = Scratch::new();
    let job = exits(&s, &[1]);
    let r = run(&fast(&["-a", "2", "-q", &job]));
    r.assert_stderr_lacks("attempt 1/2");
    assert!(
        r.stderr.contains("gave up"),
        "-q keeps the last word: {}",
        r.stderr
    );
    let r = run(&fast(&["-a", "2", "-qq", &job]));
    assert_eq!(r.stderr, "");
    let r = run(&fast(&["-a", "1", "-v", &job]));
    r.assert_stderr_has("profile generic");
    r.assert_stderr_has("idempotency key");
}

#[test]
fn json_log_lines() {
    let s = Scratch::new();
    let job = exits(&s, &[1, 0]);
    let r = run(&fast(&["--log-format", "json", &job]));
    assert_eq!(r.status, 0);
    let events: Vec<serde_json::Value> = r
        .stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    assert_eq!(events[0]["event"], "attempt_failed");
    assert_eq!(events[0]["class"], "transient");
    assert!(events.iter().any(|e| e["event"] == "attempt_succeeded"));
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "stopped" && e["stopped_because"] == "success")
    );
}

#[test]
fn github_actions_annotations() {
    let s = Scratch::new();
    let job = exits(&s, &[1]);
    let r = retry()
        .args(fast(&["-a", "2", &job]))
        .env("GITHUB_ACTIONS", "true")
        .run();
    assert_eq!(
        r.stderr
            .matches("::warning title=retry::attempt 1/2 failed")
            .count(),
        1,
        "{}",
        r.stderr
    );
    assert_eq!(
        r.stderr
            .matches("::error title=retry::gave up after 2 attempts")
            .count(),
        1,
        "{}",
        r.stderr
    );
    let r = run(&fast(&["-a", "2", &job]));
    r.assert_stderr_lacks("::warning");
}

#[test]
fn no_countdown_or_colour_when_stderr_is_not_a_terminal() {
    let s = Scratch::new();
    let job = exits(&s, &[1, 0]);
    let r = run(&["--delay", "1200ms", "--jitter", "none", &job]);
    assert_eq!(r.status, 0);
    assert!(
        !r.stderr.contains('\r') && !r.stderr.contains('\x1b'),
        "{:?}",
        r.stderr
    );
}

#[test]
fn countdown_on_a_terminal() {
    let s = Scratch::new();
    let job = exits(&s, &[1, 0]);
    let inner = format!(
        "{} --delay 1500ms --jitter none -- {} 2> /dev/tty",
        support::bin(),
        job
    );
    let mut child = std::process::Command::new("script")
        .args(["-qec", &inner, "/dev/null"])
        .env_remove("RETRY_DEPTH")
        .env_remove("NO_COLOR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("script(1)");
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    let _ = child.wait();
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("\rretry: attempt 2/5 in 2s"), "{text:?}");
}

#[test]
fn hold_stdout_with_output_rules_still_passes_one_attempt() {
    let (_, r) = run_job(
        "echo run >> \"$D/count\"; n=$(wc -l < \"$D/count\"); [ $n -lt 3 ] && echo \"busy, try later $n\" || echo \"done $n\"",
        &["--hold-stdout", "--retry-on-output", "try later"],
    );
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), "done 3\n");
}

#[test]
fn stdin_replay_forced_on_a_regular_file_keeps_what_was_read() {
    // The first attempt empties the file; rewinding would give the second nothing,
    // a replay gives it what the first attempt read.
    let s = Scratch::new();
    let input = s.write("input", b"payload\n");
    let job = s.script(
        "job",
        &format!(
            "echo run >> \"$D/count\"\nif [ $(wc -l < \"$D/count\") -eq 1 ]; then cat > /dev/null; : > '{}'; exit 1; fi\ncat > \"$D/seen\"",
            input.display()
        ),
    );
    let file = std::fs::File::open(&input).unwrap();
    let r = retry()
        .args(fast(&["--stdin", "replay", &job]))
        .stdin(file)
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(s.read("seen"), "payload\n");
}

#[test]
fn colour_on_a_terminal_and_never_with_no_color() {
    let s = Scratch::new();
    let job = exits(&s, &[1, 0]);
    let through_pty = |no_color: bool| {
        let inner = format!("{} --delay 1ms -- {}", support::bin(), job);
        let mut c = std::process::Command::new("script");
        c.args(["-qec", &inner, "/dev/null"])
            .env_remove("RETRY_DEPTH")
            .env("TERM", "xterm")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        if no_color {
            c.env("NO_COLOR", "1");
        } else {
            c.env_remove("NO_COLOR");
        }
        let out = c.output().expect("script(1)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let coloured = through_pty(false);
    assert!(
        coloured.contains("attempt 1/5 failed") && coloured.contains('\x1b'),
        "{coloured:?}"
    );
    std::fs::remove_file(s.path("count")).unwrap();
    let plain = through_pty(true);
    assert!(plain.contains("attempt 1/5 failed"), "{plain:?}");
    assert!(!plain.contains('\x1b'), "{plain:?}");
}

#[test]
fn sigpipe_from_a_vanished_reader_is_not_retried() {
    let s = Scratch::new();
    let job = s.job("echo run >> \"$D/count\"; exec yes");
    let line = format!(
        "{{ {} --delay 1ms -- {job}; echo $? > {}; }} | head -n 1",
        support::bin(),
        s.p("status")
    );
    let r = support::Invocation::of("sh")
        .arg("-c")
        .arg(line)
        .env_remove("RETRY_DEPTH")
        .run();
    assert_eq!(r.stdout_text(), "y\n");
    assert_eq!(s.read("status").trim(), "141", "{}", r.stderr);
    assert_eq!(s.count("count"), 1, "{}", r.stderr);
    r.assert_stderr_has("reader of its output went away");
}
