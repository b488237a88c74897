//! The peers' options in command mode, against real `sh` commands.

use std::time::Duration;

use super::{count_run, counting, delays, ms, run_reported};
use crate::support::{Scratch, retry};

// ---- recur's forever, bounded by time: -a 0 --max-time ----

#[test]
fn no_attempt_limit_stops_within_max_time_with_the_last_failure() {
    let s = Scratch::new();
    let flags = [
        "-a",
        "0",
        "--max-time",
        "3s",
        "--delay",
        "100ms",
        "-j",
        "none",
        "--backoff",
        "constant",
    ];
    let (r, report) = run_reported(&s, &flags, "exit 3");
    assert_eq!(r.status, 3, "{}", r.stderr);
    assert!(
        r.elapsed < Duration::from_millis(3500),
        "retry exited {:?} after the start",
        r.elapsed
    );
    let attempts = report["attempts"].as_array().unwrap().len();
    // One attempt per ~100 ms sleep for 3 s: far more than the default 5, and bounded.
    assert!((10..=31).contains(&attempts), "{attempts} attempts");
    assert_eq!(report["result"]["stopped_because"], "max_time");
    assert!(delays(&report).iter().all(|d| *d == 100), "{report}");
    assert!(r.stderr.contains("--max-time limit of 3s"), "{}", r.stderr);
}

#[test]
fn no_attempt_limit_tells_the_command_0() {
    let s = Scratch::new();
    let script = format!("echo $RETRY_ATTEMPTS > '{}'", s.p("limit"));
    let r = retry()
        .args(["-a", "0", "--max-time", "5s"])
        .sh(&script)
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(s.read("limit"), "0\n");
}

#[test]
fn dry_run_summarises_an_unbounded_schedule() {
    let r = retry()
        .args(["-a", "0", "--max-time", "1h", "--dry-run", "--", "true"])
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    let out = r.stdout_text();
    assert!(out.contains("attempts:    no limit (-a 0)"), "{out}");
    assert!(
        out.contains("(every further attempt, until --max-time: each 30s at most)"),
        "{out}"
    );
    assert!(out.contains("the whole run ends within 1h"), "{out}");
    let table = out.split("classification").next().unwrap();
    assert!(table.lines().count() < 25, "{out}");
}

// ---- Debian's retry -d LIST, recur's Fibonacci ----

#[test]
fn a_list_of_delays_is_slept_in_order_with_the_last_repeating() {
    let s = Scratch::new();
    let flags = ["-a", "5", "--delays", "50ms,150ms,100ms", "-j", "none"];
    let (r, report) = run_reported(&s, &flags, "exit 1");
    assert_eq!(r.status, 1, "{}", r.stderr);
    assert_eq!(delays(&report), [50, 150, 100, 100]);
    assert!(r.elapsed >= Duration::from_millis(400), "{:?}", r.elapsed);
}

#[test]
fn a_list_of_delays_is_jittered_as_any_and_repeats_with_a_seed() {
    let s = Scratch::new();
    let flags = ["-a", "5", "--delays", "40ms,200ms", "--seed", "11"];
    let (_, first) = run_reported(&s, &flags, "exit 1");
    let (_, second) = run_reported(&s, &flags, "exit 1");
    let (first, second) = (delays(&first), delays(&second));
    assert_eq!(first, second, "one seed, one schedule");
    for (slept, most) in first.iter().zip([40, 200, 200, 200]) {
        assert!(*slept <= most, "{first:?}");
    }
    assert!(first.iter().any(|d| *d < 200 && *d > 40), "{first:?}");
}

#[test]
fn fibonacci_multiplies_the_delay_up_to_the_cap() {
    let s = Scratch::new();
    let flags = [
        "-a",
        "7",
        "--backoff",
        "fibonacci",
        "--delay",
        "20ms",
        "--max-delay",
        "90ms",
        "-j",
        "none",
    ];
    let (r, report) = run_reported(&s, &flags, "exit 1");
    assert_eq!(r.status, 1, "{}", r.stderr);
    assert_eq!(delays(&report), [20, 20, 40, 60, 90, 90]);
    let dry = retry()
        .args(["--backoff", "fibonacci", "--dry-run", "--", "true"])
        .run();
    assert!(
        dry.stdout_text()
            .contains("backoff:     fibonacci, 1s x 1, 1, 2, 3, 5, 8"),
        "{}",
        dry.stdout_text()
    );
}

// ---- N successes in a row; until the first failure ----

#[test]
fn consecutive_succeeds_after_exactly_n_successes_in_a_row() {
    let s = Scratch::new();
    let flags = [
        "--consecutive",
        "3",
        "-a",
        "10",
        "--delay",
        "30ms",
        "-j",
        "none",
    ];
    let (r, report) = run_reported(&s, &flags, &counting(&s, &[1, 1, 0, 1, 0]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    // Runs 1, 2 and 4 fail, 3 succeeds alone, then 5, 6 and 7 succeed in a row.
    assert_eq!(s.count("count"), 7);
    assert_eq!(report["result"]["stopped_because"], "success");
    // The backoff doubles over failures in a row and starts again after a success;
    // after a success the sleep is --delay.
    assert_eq!(delays(&report), [30, 60, 30, 30, 30, 30]);
    assert!(r.stderr.contains("(2 of 3 in a row)"), "{}", r.stderr);
}

#[test]
fn consecutive_that_never_gets_there_exits_with_the_last_failure() {
    let s = Scratch::new();
    let flags = ["--consecutive", "2", "-a", "5", "--delay", "1ms"];
    let (r, report) = run_reported(&s, &flags, &counting(&s, &[0, 4]));
    // 0 4 4 4 4: the last failure's status.
    assert_eq!(r.status, 4, "{}", r.stderr);
    assert_eq!(report["result"]["stopped_because"], "attempts");
    assert!(
        r.stderr
            .contains("gave up after 5 attempts, without 2 successes in a row (at most 1)"),
        "{}",
        r.stderr
    );
}

#[test]
fn until_failure_exits_with_the_first_failure() {
    let s = Scratch::new();
    let flags = [
        "--until-failure",
        "-a",
        "50",
        "--delays",
        "5ms,10ms",
        "-j",
        "none",
    ];
    let (r, report) = run_reported(&s, &flags, "test $RETRY_ATTEMPT -lt 7");
    assert_eq!(r.status, 1, "{}", r.stderr);
    assert_eq!(report["attempts"].as_array().unwrap().len(), 7);
    assert_eq!(delays(&report), [5, 10, 10, 10, 10, 10]);
    assert_eq!(report["result"]["stopped_because"], "permanent");
    assert!(
        r.stderr
            .contains("--until-failure: attempt 7 failed, after 6 successes: exit status 1"),
        "{}",
        r.stderr
    );
}

#[test]
fn until_failure_with_the_issues_own_line() {
    let r = retry()
        .fast()
        .args(["--until-failure", "-a", "50", "--", "sh", "-c"])
        .arg("test $RETRY_ATTEMPT -lt 7")
        .run();
    assert_eq!(r.status, 1, "{}", r.stderr);
    assert!(r.stderr.contains("attempt 7/50 failed"), "{}", r.stderr);
    assert!(!r.stderr.contains("attempt 8/50"), "{}", r.stderr);
}

#[test]
fn until_failure_that_sees_none_exits_0_saying_so() {
    let s = Scratch::new();
    let hook = format!("echo success > '{}'", s.p("hook"));
    let (r, report) = run_reported(
        &s,
        &[
            "--until-failure",
            "-a",
            "3",
            "--delay",
            "1ms",
            "--on-success",
            &hook,
        ],
        "true",
    );
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(report["attempts"].as_array().unwrap().len(), 3);
    assert_eq!(report["result"]["stopped_because"], "attempts");
    assert!(
        r.stderr
            .contains("retry: --until-failure: no failure in 3 attempts: exit status 0"),
        "{}",
        r.stderr
    );
    assert_eq!(
        s.read("hook"),
        "success\n",
        "exit 0 is a success for the hooks"
    );
}

#[test]
fn until_failure_annotates_no_error_when_it_found_none() {
    let r = retry()
        .fast()
        .env("GITHUB_ACTIONS", "true")
        .args(["--until-failure", "-a", "2", "--", "true"])
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("::error"), "{}", r.stderr);
}

// ---- recur's success by output, and held stderr ----

#[test]
fn success_on_output_makes_a_failing_exit_a_success() {
    let s = Scratch::new();
    let script = format!("{}; echo 'Already up to date.'; exit 5", count_run(&s));
    let r = retry()
        .fast()
        .args(["--success-on-output", "^Already up to date"])
        .sh(&script)
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(s.count("count"), 1);
    assert_eq!(
        r.stdout_text(),
        "Already up to date.\n",
        "the output still streams"
    );
}

#[test]
fn retry_on_output_comes_before_success_on_output() {
    let s = Scratch::new();
    let script = format!("{}; echo done; echo 'try again' >&2; exit 0", count_run(&s));
    let r = retry()
        .fast()
        .args([
            "-a",
            "3",
            "--success-on-output",
            "^done",
            "--retry-on-output",
            "again",
        ])
        .sh(&script)
        .run();
    // Rule 2 (transient) matched before rule 2a (success): every attempt is retried.
    assert_eq!(r.status, 1, "{}", r.stderr);
    assert_eq!(s.count("count"), 3);
    let dry = retry()
        .args(["--success-on-output", "^done", "--dry-run", "--", "true"])
        .run();
    assert!(
        dry.stdout_text()
            .contains("a stdout/stderr line matches --success-on-output \"^done\": success"),
        "{}",
        dry.stdout_text()
    );
}

#[test]
fn hold_stderr_shows_only_the_last_attempts_stderr() {
    for watched in [false, true] {
        let s = Scratch::new();
        // With an output rule retry reads stderr itself; without, the command writes to a file.
        let mut args = vec!["-a", "3", "--delay", "1ms", "--hold-stderr"];
        if watched {
            args.extend(["--stop-on-output", "never matches"]);
        }
        let script = format!(
            "{}; echo \"err $n\" >&2; echo \"out $n\"; exit 1",
            count_run(&s)
        );
        let r = retry().args(&args).sh(&script).run();
        assert_eq!(r.status, 1, "{}", r.stderr);
        assert_eq!(
            r.stdout_text(),
            "out 1\nout 2\nout 3\n",
            "stdout is not held"
        );
        let theirs: Vec<&str> = r.stderr.lines().filter(|l| l.starts_with("err")).collect();
        assert_eq!(theirs, ["err 3"], "watched: {watched}; {}", r.stderr);
        // retry's own lines are never held: its attempt lines come before the held output.
        let held_at = r.stderr.find("err 3").unwrap();
        assert!(
            r.stderr[..held_at].contains("attempt 2/3 failed"),
            "{}",
            r.stderr
        );
        assert!(
            r.stderr[held_at..].contains("gave up after 3 attempts"),
            "{}",
            r.stderr
        );
    }
}

#[test]
fn hold_stdout_and_stderr_deliver_one_attempt_stdout_first() {
    let s = Scratch::new();
    let script = format!(
        "{}; echo \"err $n\" >&2; echo \"out $n\"; test $n -ge 2",
        count_run(&s)
    );
    let r = retry()
        .fast()
        .args(["-q", "--hold-stdout", "--hold-stderr"])
        .sh(&script)
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), "out 2\n");
    assert_eq!(r.stderr, "err 2\n");
}

// ---- A timeout is exit 124 to every exit-code rule ----

#[test]
fn stop_on_124_makes_a_timeout_permanent() {
    let s = Scratch::new();
    let flags = [
        "-t",
        "200ms",
        "--stop-on",
        "124",
        "-a",
        "3",
        "--delay",
        "1ms",
    ];
    let (r, report) = run_reported(&s, &flags, "sleep 5");
    assert_eq!(r.status, 124, "{}", r.stderr);
    assert_eq!(report["attempts"].as_array().unwrap().len(), 1);
    assert_eq!(report["attempts"][0]["class"], "permanent");
    assert!(r.elapsed < Duration::from_secs(3), "{:?}", r.elapsed);
}

#[test]
fn retry_on_without_124_makes_a_timeout_permanent_and_with_it_transient() {
    for (list, attempts, class) in [("2", 1, "permanent"), ("2,124", 2, "transient")] {
        let s = Scratch::new();
        let flags = [
            "-t",
            "200ms",
            "--retry-on",
            list,
            "-a",
            "2",
            "--delay",
            "1ms",
        ];
        let (r, report) = run_reported(&s, &flags, "sleep 5");
        assert_eq!(r.status, 124, "{list}: {}", r.stderr);
        assert_eq!(
            report["attempts"].as_array().unwrap().len(),
            attempts,
            "{list}"
        );
        assert_eq!(report["attempts"][0]["class"], class, "{list}");
    }
}

#[test]
fn dry_run_says_what_a_timeout_is() {
    for (flags, says) in [
        (
            ["--stop-on", "124"],
            "counts as exit 124 in these lists: permanent",
        ),
        (
            ["--retry-on", "75"],
            "counts as exit 124 in these lists: permanent",
        ),
        (
            ["--retry-on", "75,124"],
            "counts as exit 124 in these lists: transient",
        ),
    ] {
        let r = retry()
            .args(["-t", "1s", "--dry-run"])
            .args(flags)
            .args(["--", "true"])
            .run();
        assert!(
            r.stdout_text().contains(says),
            "{flags:?}: {}",
            r.stdout_text()
        );
    }
}

// ---- urllib3's respect_retry_after_header=False, for RETRY_CONTROL ----

#[test]
fn ignore_retry_after_lets_the_backoff_decide_over_retry_control() {
    let s = Scratch::new();
    let script = "echo 'retry-after 30s' > \"$RETRY_CONTROL\"; exit 1";
    let flags = [
        "--ignore-retry-after",
        "-a",
        "3",
        "--delay",
        "20ms",
        "-j",
        "none",
    ];
    let (r, report) = run_reported(&s, &flags, script);
    assert_eq!(r.status, 1, "{}", r.stderr);
    assert_eq!(delays(&report), [20, 40]);
    assert!(r.elapsed < Duration::from_secs(5), "{:?}", r.elapsed);
    assert_eq!(
        report["attempts"][0]["retry_after_ms"], 30000,
        "still reported"
    );
}

// ---- recur's --report - ----

#[test]
fn report_dash_goes_to_stderr_and_never_to_a_file() {
    let s = Scratch::new();
    let r = retry()
        .current_dir(s.dir.path())
        .args(["-qq", "-a", "2", "--delay", "1ms", "--report", "-"])
        .sh("exit 3")
        .run();
    assert_eq!(r.status, 3, "{}", r.stderr);
    assert!(!s.path("-").exists(), "a file named - was written");
    assert_eq!(
        r.stderr.lines().count(),
        1,
        "one line of JSON: {}",
        r.stderr
    );
    let report: serde_json::Value = serde_json::from_str(&r.stderr).expect("the report JSON");
    assert_eq!(report["result"]["exit_code"], 3);
    assert_eq!(report["attempts"].as_array().unwrap().len(), 2);
    assert!(ms(r.elapsed) < 5000);
}
