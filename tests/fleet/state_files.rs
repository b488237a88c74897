//! Budget and circuit files under faults: a flock on a state file held by another
//! process (util-linux `flock`) ends with `--max-time`, with a signal within a second
//! and after the store's own limit; records that cannot be read (a circuit open
//! past year 9999, negative or NaN tokens, an empty file) count as fresh state with one warning, in
//! files and in PostgreSQL rows.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::{args, retry, run};
use crate::both_ways;
use crate::support::{self as cmd, Run, Scratch};

/// util-linux `flock FILE sleep 30`, in a process group killed on drop.
struct Holder(Child);

impl Holder {
    /// Holds the flock on `file` (created if missing); returns once it is held.
    fn hold(s: &Scratch, file: &Path) -> Holder {
        use std::os::unix::process::CommandExt;
        let ready = s.path("held");
        let _ = std::fs::remove_file(&ready);
        let child = Command::new("flock")
            .arg(file)
            .args([
                "sh",
                "-c",
                &format!("touch '{}'; exec sleep 30", ready.display()),
            ])
            .process_group(0)
            .spawn()
            .expect("run flock(1) from util-linux");
        let holder = Holder(child);
        assert!(cmd::wait_until(Duration::from_secs(10), || ready.exists()));
        holder
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = killpg(Pid::from_raw(self.0.id() as i32), Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

/// A state directory that holds budget `b1` and circuit `c1` (one run made them).
fn state_with_records(s: &Scratch) -> PathBuf {
    let state = s.path("state");
    let made = run(
        s,
        &args(&[
            "--state",
            &s.p("state"),
            "--retry-budget",
            "b1",
            "--circuit",
            "c1",
            "--",
            "true",
        ]),
    );
    assert_eq!(made.status, 0, "{}", made.stderr);
    state
}

/// `retry --state STATE FLAGS -- sh -c 'echo run >> attempts; exit STATUS'`, started.
fn start(s: &Scratch, state: impl AsRef<std::ffi::OsStr>, flags: &[&str], status: i32) -> Child {
    let script = format!("echo run >> '{}'; exit {status}", s.p("attempts"));
    retry(s)
        .arg("--state")
        .arg(state)
        .args(flags)
        .args(["--report", &s.p("r.json"), "--", "sh", "-c", &script])
        .start()
}

/// Waits for `child` to exit: its run and how long it took after `since`.
fn exit_of(child: Child, since: Instant) -> (Run, Duration) {
    let mut child = child;
    assert!(
        cmd::wait_until(Duration::from_secs(40), || child
            .try_wait()
            .unwrap()
            .is_some()),
        "retry did not exit"
    );
    let took = since.elapsed();
    (cmd::wait_for_run(child), took)
}

fn stopped_because(s: &Scratch) -> String {
    cmd::read_json(&s.path("r.json"))["result"]["stopped_because"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn max_time_ends_a_wait_for_a_held_state_flock_before_and_between_attempts() {
    let s = Scratch::new();
    let state = state_with_records(&s);
    // Between attempts: the budget's update after the first one.
    let held = Holder::hold(&s, &state.join("budgets/.b1.lock"));
    let started = Instant::now();
    let child = start(
        &s,
        &state,
        &["--retry-budget", "b1", "--max-time", "3s", "--delay", "1ms"],
        1,
    );
    let (out, took) = exit_of(child, started);
    assert_eq!(out.status, 1, "the attempt's own status: {}", out.stderr);
    assert!(
        took >= Duration::from_millis(2_900) && took < Duration::from_millis(4_500),
        "{took:?}"
    );
    assert_eq!(s.count("attempts"), 1, "no retry after --max-time ran out");
    out.assert_stderr_has("--max-time ran out while waiting for the flock on");
    out.assert_stderr_has(&state.join("budgets/.b1.lock").display().to_string());
    assert_eq!(
        stopped_because(&s),
        "max_time",
        "--max-time, not the budget, ended it"
    );
    drop(held);
    // Before the first attempt: the circuit's admission.
    let _held = Holder::hold(&s, &state.join("circuits/.c1.lock"));
    let started = Instant::now();
    let child = start(&s, &state, &["--circuit", "c1", "--max-time", "2s"], 0);
    let (out, took) = exit_of(child, started);
    assert_eq!(out.status, 125, "{}", out.stderr);
    assert!(
        took >= Duration::from_millis(1_900) && took < Duration::from_millis(3_500),
        "{took:?}"
    );
    assert_eq!(s.count("attempts"), 1, "no attempt ran");
    out.assert_stderr_has("--max-time ran out before the first attempt");
    assert_eq!(stopped_because(&s), "max_time");
}

#[test]
fn a_signal_ends_a_wait_for_a_held_state_flock_within_a_second() {
    let s = Scratch::new();
    let state = state_with_records(&s);
    for (lock, flags, attempts) in [
        ("budgets/.b1.lock", ["--retry-budget", "b1"], 1),
        ("circuits/.c1.lock", ["--circuit", "c1"], 0),
    ] {
        let _held = Holder::hold(&s, &state.join(lock));
        let _ = std::fs::remove_file(s.path("attempts"));
        let child = start(&s, &state, &flags, 1);
        // Waiting on the flock: after the first attempt for the budget, before it for the circuit.
        if attempts == 1 {
            assert!(cmd::wait_until(Duration::from_secs(10), || s
                .count("attempts")
                == 1));
        }
        std::thread::sleep(Duration::from_millis(500));
        let sent = Instant::now();
        cmd::signal(&child, Signal::SIGTERM);
        let (out, took) = exit_of(child, sent);
        assert_eq!(out.status, 143, "{lock}: {}", out.stderr);
        assert!(took < Duration::from_secs(1), "{lock}: {took:?}");
        assert_eq!(s.count("attempts"), attempts, "{lock}");
        assert_eq!(stopped_because(&s), "signal");
    }
}

#[test]
fn a_state_flock_held_past_its_limit_fails_open_with_a_warning() {
    let s = Scratch::new();
    let state = state_with_records(&s);
    let _held = Holder::hold(&s, &state.join("circuits/.c1.lock"));
    let started = Instant::now();
    let (out, took) = exit_of(start(&s, &state, &["--circuit", "c1"], 0), started);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(
        took >= Duration::from_secs(5) && took < Duration::from_secs(8),
        "{took:?}"
    );
    out.assert_stderr_has("another process held the flock on");
    out.assert_stderr_has("going on without the retry budget and circuit breaker");
    assert_eq!(s.count("attempts"), 1);
}

/// How many warnings about an unreadable record `out` has.
fn unreadable_warnings(out: &Run) -> usize {
    out.stderr.matches("cannot be read").count()
}

#[test]
fn records_that_cannot_be_read_count_as_fresh_state_with_one_warning() {
    let s = Scratch::new();
    let state = state_with_records(&s);
    let circuit = state.join("circuits/c1.json");
    let budget = state.join("budgets/b1.json");
    for (file, text) in [
        (
            &circuit,
            r#"{"failures":5,"open_until_ms":253402300800000}"#,
        ),
        (&circuit, r#"{"failures":-1,"open_until_ms":null}"#),
        (
            &circuit,
            r#"{"failures":5,"open_until_ms":18446744073709551615}"#,
        ),
        (&circuit, "{\"fail"),
        (&budget, r#"{"tokens":-5.0,"size":10}"#),
        (&budget, r#"{"tokens":1e300,"size":10}"#),
        (&budget, "[]"),
        // Cut short (a full disk, a crash): read as fresh state, and said so.
        (&circuit, ""),
        (&budget, ""),
    ] {
        std::fs::write(file, text).unwrap();
        let _ = std::fs::remove_file(s.path("attempts"));
        let flags = [
            "--retry-budget",
            "b1",
            "--circuit",
            "c1",
            "-a",
            "3",
            "--delay",
            "1ms",
        ];
        let (out, _) = exit_of(start(&s, &state, &flags, 1), Instant::now());
        assert_eq!(out.status, 1, "{text}: {}", out.stderr);
        assert_eq!(
            s.count("attempts"),
            3,
            "{text}: a fresh budget allows the retries"
        );
        assert_eq!(unreadable_warnings(&out), 1, "{text}: {}", out.stderr);
        out.assert_stderr_has(&file.display().to_string());
        // The run rewrote the record: the next run reads it without a word.
        let (out, _) = exit_of(start(&s, &state, &flags, 0), Instant::now());
        assert_eq!(unreadable_warnings(&out), 0, "{text}: {}", out.stderr);
        std::fs::remove_file(&circuit).unwrap();
        std::fs::remove_file(&budget).unwrap();
    }
}

both_ways! {
    fn rows_that_cannot_be_read_count_as_fresh_state_with_one_warning(pg) {
        let s = Scratch::new();
        let url = pg.url("");
        let flags = ["--retry-budget", "b1", "--circuit", "c1", "-a", "3", "--delay", "1ms"];
        let made = run(&s, &args(&["--state", &url, "--retry-budget", "b1", "--circuit", "c1", "--", "true"]));
        assert_eq!(made.status, 0, "{}", made.stderr);
        let client = pg.client();
        for (sql, what) in [
            ("UPDATE retry_circuits SET failures = 5, open_until = '10000-01-01'", "past 9999"),
            ("UPDATE retry_circuits SET failures = 5, open_until = 'infinity'", "infinity"),
            ("UPDATE retry_circuits SET failures = 5, open_until = '1969-12-31'", "before 1970"),
            ("UPDATE retry_circuits SET failures = -2, open_until = NULL", "negative failures"),
            ("UPDATE retry_budgets SET tokens = 'NaN'", "NaN tokens"),
            ("UPDATE retry_budgets SET tokens = -3", "negative tokens"),
            ("UPDATE retry_budgets SET tokens = 'Infinity'", "infinite tokens"),
        ] {
            // Fresh state first: each round spends tokens and counts a failed run.
            client.execute("UPDATE retry_budgets SET tokens = 10", &[]);
            client.execute("UPDATE retry_circuits SET failures = 0, open_until = NULL", &[]);
            client.execute(sql, &[]);
            let _ = std::fs::remove_file(s.path("attempts"));
            let (out, _) = exit_of(start(&s, &url, &flags, 1), Instant::now());
            assert_eq!(out.status, 1, "{what}: {}", out.stderr);
            assert_eq!(s.count("attempts"), 3, "{what}: a fresh budget allows the retries");
            assert_eq!(unreadable_warnings(&out), 1, "{what}: {}", out.stderr);
            let (out, _) = exit_of(start(&s, &url, &flags, 0), Instant::now());
            assert_eq!(out.status, 0, "{what}: {}", out.stderr);
            assert_eq!(unreadable_warnings(&out), 0, "{what}: rewritten: {}", out.stderr);
        }
    }
}

/// The line that refuses a run on circuit `c1` open until the last millisecond of year 9999.
const OPEN_TO_THE_END: &str = "circuit c1 is open until 9999-12-31T23:59:59.999Z";

#[test]
fn a_circuit_open_until_the_end_of_year_9999_says_so() {
    let s = Scratch::new();
    let state = state_with_records(&s);
    std::fs::write(
        state.join("circuits/c1.json"),
        r#"{"failures":5,"open_until_ms":253402300799999}"#,
    )
    .unwrap();
    let (out, _) = exit_of(start(&s, &state, &["--circuit", "c1"], 0), Instant::now());
    assert_eq!(out.status, 75, "{}", out.stderr);
    out.assert_stderr_has(OPEN_TO_THE_END);
    assert_eq!(unreadable_warnings(&out), 0, "a record that can be read");
}

both_ways! {
    fn a_circuit_row_open_until_the_end_of_year_9999_says_so(pg) {
        let s = Scratch::new();
        let url = pg.url("");
        let made = run(&s, &args(&["--state", &url, "--circuit", "c1", "--", "true"]));
        assert_eq!(made.status, 0, "{}", made.stderr);
        pg.client().execute(
            "UPDATE retry_circuits SET failures = 5, open_until = '9999-12-31 23:59:59.999+00'",
            &[],
        );
        let (out, _) = exit_of(start(&s, &url, &["--circuit", "c1"], 0), Instant::now());
        assert_eq!(out.status, 75, "{}", out.stderr);
        out.assert_stderr_has(OPEN_TO_THE_END);
    }
}
