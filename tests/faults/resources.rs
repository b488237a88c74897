//! An attempt that cannot be started for lack of resources: the test's own user
//! under `ulimit -u` (prlimit --nproc) at exactly what `retry` itself needs, so that
//! every fork it makes is refused with EAGAIN while the user has no task to spare.
//! What `retry` needs is read from /proc: the user's tasks when the run starts, and
//! `retry`'s own threads, from its /proc/PID/status in a first run with the same flags.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::support::system::{TestUser, tasks_of, test_user};
use crate::support::{bin, read_json, wait_until};

/// A directory the test user writes its state and report in.
fn user_dir(user: &TestUser) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    user.owns(dir.path());
    dir
}

/// `flags` for a run in `dir`: its state and its report there.
fn flags(dir: &Path, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = ["--state", "--report"]
        .iter()
        .zip(["state", "report.json"])
        .flat_map(|(flag, name)| [flag.to_string(), dir.join(name).display().to_string()])
        .collect();
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

/// The threads `retry` runs with under `extra`, read by its command from
/// /proc/PPID/status (a run of its own in a scratch directory).
fn retry_threads(user: &TestUser, extra: &[&str]) -> usize {
    let scratch = user_dir(user);
    let out = user
        .run(user.reachable(bin(), scratch.path()), None)
        .args(flags(scratch.path(), extra))
        .args(["--", "sh", "-c", "grep '^Threads:' /proc/$PPID/status"])
        .env("TMPDIR", scratch.path())
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    let text = out.stdout_text();
    let threads = text.split_whitespace().nth(1).and_then(|n| n.parse().ok());
    threads.unwrap_or_else(|| panic!("no thread count in {text:?}"))
}

/// `retry FLAGS -- /bin/echo hi` as the test user, with `ulimit -u` at the user's
/// tasks now plus `retry`'s own threads: nothing more can start until a task ends.
fn starved(user: &TestUser, dir: &Path, extra: &[&str]) -> crate::support::Run {
    let limit = tasks_of(user.uid) + retry_threads(user, extra);
    user.run(user.reachable(bin(), dir), Some(limit))
        .args(flags(dir, extra))
        .args(["--", "/bin/echo", "hi"])
        .env("TMPDIR", dir)
        .run()
}

fn outcomes(report: &Value) -> Vec<String> {
    report["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| a["outcome"]["type"].as_str().unwrap_or("?").to_string())
        .collect()
}

#[test]
fn an_attempt_refused_a_process_is_retried_with_the_backoff() {
    let Some(user) = test_user() else { return };
    let dir = user_dir(&user);
    // One task of the user's holds the last slot for a second, then ends.
    let mut holder = user
        .run("sleep", None)
        .arg("1")
        .stdout(Stdio::null())
        .spawn();
    let reaper = std::thread::spawn(move || holder.wait());
    let held = wait_until(Duration::from_secs(5), || tasks_of(user.uid) == 1);
    assert!(held, "the holder runs as {}", user.uid);
    let extra = ["-a", "40", "--delay", "100ms", "--max-delay", "200ms"];
    let out = starved(
        &user,
        dir.path(),
        &[&extra[..], &["--jitter", "none"]].concat(),
    );
    reaper.join().unwrap().unwrap();
    assert_eq!(out.status, 0, "{}", out.stderr);
    out.assert_stdout_has("hi");
    out.assert_stderr_has("retry could not start the command for lack of resources");
    let report = read_json(&dir.path().join("report.json"));
    let seen = outcomes(&report);
    assert_eq!(
        seen.first().map(String::as_str),
        Some("no_resources"),
        "{seen:?}"
    );
    assert_eq!(seen.last().map(String::as_str), Some("exit"), "{seen:?}");
    let first = &report["attempts"][0];
    assert_eq!(first["class"], "transient");
    assert!(first["delay_ms"].as_u64().unwrap() >= 100, "{first}");
}

#[test]
fn a_run_that_ends_on_it_exits_125_and_spends_no_budget_and_no_circuit() {
    let Some(user) = test_user() else { return };
    let dir = user_dir(&user);
    let fleet = [
        "--retry-budget",
        "b",
        "--circuit",
        "c",
        "--circuit-failures",
        "1",
    ];
    let extra = [&["-a", "3", "--delay", "1ms"], &fleet[..]].concat();
    let out = starved(&user, dir.path(), &extra);
    assert_eq!(out.status, 125, "{}", out.stderr);
    out.assert_stderr_has("cannot start /bin/echo: no process can be created now");
    out.assert_stderr_has("exit status 125");
    let report = read_json(&dir.path().join("report.json"));
    assert_eq!(outcomes(&report), ["no_resources"; 3]);
    assert_eq!(report["result"]["exit_code"], 125);
    assert_eq!(report["result"]["stopped_because"], "attempts");
    // The circuit, one failed run from open, lets the next run in; that run's success
    // earns 0.1 token, up to the 10 the budget holds: it stays full only if no token
    // was taken.
    let next = user
        .run(user.reachable(bin(), dir.path()), None)
        .args(flags(dir.path(), &fleet))
        .args(["--", "true"])
        .env("TMPDIR", dir.path())
        .run();
    assert_eq!(next.status, 0, "{}", next.stderr);
    next.assert_stderr_lacks("is open");
    let budget = std::fs::read_to_string(dir.path().join("state/budgets/b.json")).unwrap();
    let budget: Value = serde_json::from_str(budget.trim()).unwrap();
    assert_eq!(budget["tokens"].as_f64(), Some(10.0), "{budget}");
}

#[test]
fn the_limit_is_what_retry_needs_and_no_more() {
    // The fixture itself: with the limit one task higher the same run succeeds at once.
    let Some(user) = test_user() else { return };
    let dir = user_dir(&user);
    let limit = tasks_of(user.uid) + retry_threads(&user, &[]) + 1;
    let out = user
        .run(user.reachable(bin(), dir.path()), Some(limit))
        .args(["-a", "1", "--", "/bin/echo", "hi"])
        .env("TMPDIR", dir.path())
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    out.assert_stdout_has("hi");
}
