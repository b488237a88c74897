//! The gate, end to end: the real binary, real `flock`s, real marker files and
//! a real PostgreSQL server. The "work" is a shell command that appends a line to a
//! counter file, so "done exactly once" is a line count.

use crate::each_store;
use crate::support::postgres;
use crate::support::{
    Invocation, Run, alive, assert_stopped_because, exited_within, read_json, retry, wait_for_run,
    wait_until,
};

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// How many runs compete in the concurrency tests.
const CROWD: usize = 12;

struct Dir {
    tmp: tempfile::TempDir,
}

impl Dir {
    fn new() -> Dir {
        Dir {
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    /// The counter file the work appends to.
    fn counter(&self) -> PathBuf {
        self.path("counter")
    }

    fn count(&self) -> usize {
        std::fs::read_to_string(self.counter())
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    /// `retry` with fast retries, its state under this directory and no outer retry.
    fn retry(&self) -> Invocation {
        let mut cmd = bare_retry(self);
        cmd.fast();
        cmd
    }

    /// `retry --lock LOCK` with fast retries.
    fn locked(&self, lock: impl AsRef<OsStr>) -> Invocation {
        let mut cmd = self.retry();
        cmd.arg("--lock").arg(lock);
        cmd
    }

    /// `retry --once KEY --state STATE` with fast retries.
    fn once(&self, key: &str, state: impl AsRef<OsStr>) -> Invocation {
        let mut cmd = self.retry();
        cmd.args(["--once", key, "--state"]).arg(state);
        cmd
    }

    /// Where a run given `.report(dir.report())` writes its report.
    fn report(&self) -> PathBuf {
        self.path("report.json")
    }

    /// Runs `cmd` on the counting work (no time spent) and checks that it did the
    /// work, leaving `runs` in the counter.
    #[track_caller]
    fn assert_does_the_work(&self, cmd: &mut Invocation, runs: usize, why: &str) {
        let out = cmd.args(self.work(0.0)).run();
        assert_eq!(out.status, 0, "{why}: {}", out.stderr);
        assert_eq!(self.count(), runs, "{why}");
    }

    /// Arguments for work that counts itself, then takes `secs` seconds.
    fn work(&self, secs: f64) -> Vec<String> {
        vec![
            "--".into(),
            "sh".into(),
            "-c".into(),
            format!("echo run >> \"$1\"; sleep {secs}"),
            "sh".into(),
            self.counter().display().to_string(),
        ]
    }

    /// Arguments for work that counts itself, touches `ready`, then takes `secs`
    /// seconds.
    fn ready_work(&self, secs: f64) -> Vec<String> {
        vec![
            "--".into(),
            "sh".into(),
            "-c".into(),
            format!("echo run >> \"$1\"; touch \"$2\"; sleep {secs}"),
            "sh".into(),
            self.counter().display().to_string(),
            self.path("ready").display().to_string(),
        ]
    }

    /// Waits until `name` exists (a command's "I am running now" signal).
    fn wait_for(&self, name: &str) {
        let appeared = wait_until(Duration::from_secs(20), || self.path(name).exists());
        assert!(appeared, "{name} never appeared");
    }
}

/// A process group that is killed when dropped (lock holders, orphaned commands).
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        let _ = killpg(Pid::from_raw(self.0.id() as i32), Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

impl Dir {
    /// util-linux `flock` holding `job.lock` while it runs `script`; returns the
    /// lock's path once it holds it.
    fn hold_lock(&self, script: &str) -> (PathBuf, Group) {
        let lock = self.path("job.lock");
        let holder = flock_holding(self, &lock, script);
        (lock, holder)
    }

    /// `retry --lock LOCK FLAGS` on the counting work (no time spent).
    fn locked_work(&self, lock: impl AsRef<OsStr>, flags: &[&str]) -> Invocation {
        let mut cmd = self.locked(lock);
        cmd.args(flags).args(self.work(0.0));
        cmd
    }
}

/// util-linux `flock` holding `lock` while it runs `script`; returns once it holds it.
fn flock_holding(dir: &Dir, lock: &Path, script: &str) -> Group {
    use std::os::unix::process::CommandExt;
    let ready = dir.path("holder-ready");
    let child = Command::new("flock")
        .arg(lock)
        .args([
            "sh",
            "-c",
            &format!("touch '{}'; {script}", ready.display()),
        ])
        .process_group(0)
        .spawn()
        .expect("run flock(1) from util-linux");
    let group = Group(child);
    dir.wait_for("holder-ready");
    group
}

impl Dir {
    /// Starts `CROWD` copies of `make()` on work that takes `secs` seconds, waits for
    /// them all and checks that all succeeded and exactly one did the work.
    #[track_caller]
    fn crowd(&self, make: impl Fn() -> Invocation, secs: f64) -> Vec<Run> {
        let children: Vec<Child> = (0..CROWD)
            .map(|_| make().args(self.work(secs)).start())
            .collect();
        let outs: Vec<Run> = children.into_iter().map(wait_for_run).collect();
        for out in &outs {
            assert_eq!(out.status, 0, "{}", out.stderr);
        }
        assert_eq!(self.count(), 1, "exactly one run did the work");
        outs
    }
}

/// Sends `signal` to `child` after `after`; returns its run and how long it took to
/// exit after the signal (at most 10 s).
fn signal_after(child: Child, after: Duration, signal: Signal) -> (Run, Duration) {
    std::thread::sleep(after);
    kill(Pid::from_raw(child.id() as i32), signal).unwrap();
    exit_within(child, Duration::from_secs(10))
}

#[test]
fn a_lock_is_held_for_the_run_and_its_file_is_kept() {
    let dir = Dir::new();
    let lock = dir.path("job.lock");
    dir.assert_does_the_work(&mut dir.locked(&lock), 1, "a free lock");
    assert!(lock.exists(), "the lock file is never removed");
}

each_store! {
    fn a_crowd_on_one_lock_does_the_work_once(store) {
        let dir = Dir::new();
        let lock = store.lock("crowd");
        let outs = dir.crowd(|| dir.locked(&lock), 3.0);
        let busy = outs.iter().filter(|o| o.stderr.contains("is busy")).count();
        assert_eq!(busy, CROWD - 1);
        for out in &outs {
            out.assert_stderr_lacks("prepared statement");
        }
    }
}

#[test]
fn concurrent_runs_with_one_once_key_do_the_work_once() {
    let dir = Dir::new();
    let state = dir.path("state");
    dir.crowd(|| dir.once("nightly", &state), 0.5);
    let again = dir.once("nightly", &state).args(dir.work(0.0)).run();
    assert_eq!(again.status, 0);
    assert_eq!(dir.count(), 1);
    again.assert_stderr_has("already succeeded at");
}

#[test]
fn runs_waiting_on_a_once_key_find_the_winners_marker() {
    let dir = Dir::new();
    let state = dir.path("state");
    let outs = dir.crowd(
        || {
            let mut cmd = dir.once("k", &state);
            cmd.args(["--lock-wait", "30s"]);
            cmd
        },
        0.5,
    );
    let done = outs
        .iter()
        .filter(|o| o.stderr.contains("already succeeded"))
        .count();
    assert_eq!(done, CROWD - 1, "the others waited, then saw the marker");
}

#[test]
fn a_lock_held_by_flock_makes_retry_skip_with_the_busy_exit() {
    let dir = Dir::new();
    let (lock, _holder) = dir.hold_lock("exec sleep 60");
    let out = dir.locked_work(&lock, &["--busy-exit", "75"]).run();
    assert_eq!(out.status, 75, "{}", out.stderr);
    assert_eq!(dir.count(), 0, "no attempt runs");
    out.assert_stderr_has("skipped");
    out.assert_stderr_has(&lock.display().to_string());
}

#[test]
fn the_busy_exit_defaults_to_zero_and_the_report_says_skipped() {
    let dir = Dir::new();
    let (lock, _holder) = dir.hold_lock("exec sleep 60");
    let out = dir
        .locked(&lock)
        .report(dir.report())
        .args(dir.work(0.0))
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    let report = assert_stopped_because(&dir.report(), "skipped");
    assert_eq!(report["attempts"].as_array().unwrap().len(), 0);
}

#[test]
fn lock_wait_waits_for_the_holder_then_runs() {
    let dir = Dir::new();
    let (lock, _holder) = dir.hold_lock("sleep 1");
    let started = Instant::now();
    let out = dir.locked_work(&lock, &["--lock-wait", "30s"]).run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(dir.count(), 1);
    assert!(started.elapsed() >= Duration::from_millis(500), "it waited");
    out.assert_stderr_has("waiting up to 30s");
}

#[test]
fn lock_wait_gives_up_when_the_lock_stays_busy() {
    let dir = Dir::new();
    let (lock, _holder) = dir.hold_lock("exec sleep 60");
    let out = dir
        .locked_work(&lock, &["--lock-wait", "300ms", "--busy-exit", "3"])
        .run();
    let waited = out.elapsed;
    assert_eq!(out.status, 3, "{}", out.stderr);
    assert_eq!(dir.count(), 0);
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    assert!(waited < Duration::from_secs(10), "{waited:?}");
    out.assert_stderr_has("after waiting 300ms");
}

#[test]
fn a_signal_while_waiting_for_a_lock_stops_retry_at_once() {
    let dir = Dir::new();
    let (lock, _holder) = dir.hold_lock("exec sleep 60");
    let child = dir.locked_work(&lock, &["--lock-wait", "60s"]).start();
    let (out, took) = signal_after(child, Duration::from_millis(300), Signal::SIGINT);
    assert_eq!(out.status, 130, "{}", out.stderr);
    assert!(took < Duration::from_secs(3));
    assert_eq!(dir.count(), 0);
}

#[test]
fn sigkill_of_the_holder_frees_the_lock_even_with_its_command_still_running() {
    let dir = Dir::new();
    let lock = dir.path("job.lock");
    let _reaper = start_watched(&dir, &mut dir.locked(&lock), long_command(&dir)).kill_retry();
    // The command still runs in its own process group; it must not keep the lock.
    let free = Command::new("flock")
        .arg("-n")
        .arg(&lock)
        .arg("true")
        .status()
        .unwrap();
    assert!(free.success(), "the lock is free once its holder is gone");
    dir.assert_does_the_work(&mut dir.locked(&lock), 1, "the freed lock");
}

/// Arguments for a command that says it is running (`ready`), records its process
/// group in `command.pid`, and then sleeps for a minute.
fn long_command(dir: &Dir) -> Vec<String> {
    vec![
        "--".into(),
        "sh".into(),
        "-c".into(),
        format!(
            "echo $$ > '{}'; touch '{}'; sleep 60",
            dir.path("command.pid").display(),
            dir.path("ready").display()
        ),
    ]
}

/// Kills the process group named in `command.pid` when dropped: retry's command runs
/// in a group of its own, which outlives a SIGKILLed retry.
struct Reaper(PathBuf);

impl Drop for Reaper {
    fn drop(&mut self) {
        if let Some(pid) = std::fs::read_to_string(&self.0)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
        {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// A retry whose command is running and has written its pid to `command.pid`; the
/// command's group is killed when this is dropped.
struct Watched {
    retry: Child,
    pid: i32,
    reaper: Reaper,
}

/// Starts `cmd` on `command` (which writes `command.pid`, then touches `ready`) and
/// returns once the command says it is ready.
fn start_watched(dir: &Dir, cmd: &mut Invocation, command: Vec<String>) -> Watched {
    let reaper = Reaper(dir.path("command.pid"));
    let retry = cmd.args(command).start();
    dir.wait_for("ready");
    Watched {
        retry,
        pid: command_pid(dir),
        reaper,
    }
}

impl Watched {
    /// SIGKILLs retry and waits for it to exit, leaving its command orphaned.
    fn kill_retry(mut self) -> Reaper {
        self.retry.kill().unwrap();
        // Only wait for the exit: the orphaned command keeps the pipes open.
        self.retry.wait().unwrap();
        self.reaper
    }
}

#[test]
fn a_failed_run_records_nothing_and_the_next_run_tries_again() {
    let dir = Dir::new();
    let state = dir.path("state");
    let failing = |dir: &Dir| {
        let mut cmd = dir.once("k", &state);
        cmd.args(["-a", "2"])
            .sh("echo run >> \"$1\"; exit 3")
            .arg("sh")
            .arg(dir.counter());
        cmd
    };
    let out = failing(&dir).run();
    assert_eq!(out.status, 3, "{}", out.stderr);
    assert_eq!(dir.count(), 2);
    // Only the key lock's fencing counter, in `fencing/`, stays.
    let left: Vec<_> = std::fs::read_dir(&state)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name() != "fencing")
        .collect();
    assert!(left.is_empty(), "no marker and no lock file left: {left:?}");
    let out = failing(&dir).run();
    assert_eq!(out.status, 3);
    assert_eq!(dir.count(), 4, "the key was not recorded, so it ran again");
}

#[test]
fn a_killed_run_records_nothing() {
    let dir = Dir::new();
    let state = dir.path("state");
    let _reaper = start_watched(&dir, &mut dir.once("k", &state), long_command(&dir)).kill_retry();
    assert!(!state.join("k.json").exists());
    dir.assert_does_the_work(
        &mut dir.once("k", &state),
        1,
        "the killed run's key was free to run again",
    );
    assert!(state.join("k.json").exists());
}

#[test]
fn a_marker_is_json_named_after_its_key() {
    let dir = Dir::new();
    let key = "report/2024-05-01 eu";
    let once = || {
        let mut cmd = dir.retry();
        cmd.args(["--once", key]).args(dir.work(0.0));
        cmd
    };
    let out = once().run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    // Default state directory: $XDG_STATE_HOME/retry.
    let marker = read_json(&dir.path("xdg/retry/report%2F2024-05-01%20eu.json"));
    assert_eq!(marker["key"], key);
    assert_eq!(marker["attempts"], 1);
    assert_eq!(marker["command"][0], "sh");
    assert!(marker["pid"].as_u64().unwrap() > 0);
    assert!(!marker["host"].as_str().unwrap().is_empty());
    let at = marker["succeeded_at"].as_str().unwrap();
    crate::support::time::parse_rfc3339(at);

    let again = once().run();
    assert_eq!(again.status, 0);
    again.assert_stderr_has(&format!("already succeeded at {at}"));
    assert_eq!(dir.count(), 1);
}

#[test]
fn without_xdg_state_home_markers_go_under_home() {
    let dir = Dir::new();
    let out = dir
        .retry()
        .env_remove("XDG_STATE_HOME")
        .env("HOME", dir.path("home"))
        .args(["--once", "k"])
        .args(dir.work(0.0))
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(dir.path("home/.local/state/retry/k.json").exists());
}

#[test]
fn bad_targets_are_refused_before_anything_runs() {
    let dir = Dir::new();
    for (args, flag) in [
        (vec!["--lock", ""], "--lock"),
        (vec!["--lock", "postgres://u@127.0.0.1/db"], "--lock"),
        (vec!["--lock", "redis://localhost/0"], "--lock"),
        (
            vec!["--lock", "postgres://u@127.0.0.1/db?sslmode=bogus#x"],
            "--lock",
        ),
        (
            vec!["--once", "k", "--state", "postgres://u@h/db#name"],
            "--state",
        ),
        (vec!["--once", "k", "--state", "ftp://h/x"], "--state"),
    ] {
        let out = dir.retry().args(&args).args(dir.work(0.0)).run();
        assert_eq!(out.status, 125, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(flag), "{args:?}: {}", out.stderr);
    }
    assert_eq!(dir.count(), 0);
}

#[test]
fn a_state_path_that_is_a_file_is_a_usage_error() {
    let dir = Dir::new();
    std::fs::write(dir.path("file"), "").unwrap();
    let out = dir.once("k", dir.path("file")).args(dir.work(0.0)).run();
    assert_eq!(out.status, 125, "{}", out.stderr);
    assert_eq!(dir.count(), 0);
}

/// The two ways a run names a PostgreSQL server at `url`: as its `--lock` and as the
/// `--state` of a `--once` key.
fn lock_and_state(url: &str) -> [Vec<String>; 2] {
    [
        vec!["--lock".into(), format!("{url}#x")],
        vec!["--once".into(), "k".into(), "--state".into(), url.into()],
    ]
}

#[test]
fn an_unreachable_server_is_exit_125_and_the_command_does_not_run() {
    let dir = Dir::new();
    let url = format!(
        "postgres://app:hunter2@127.0.0.1:{}/jobs?connect_timeout=1",
        crate::support::ports::free_port()
    );
    for args in lock_and_state(&url) {
        let out = dir.retry().args(&args).args(dir.work(0.0)).run();
        assert_eq!(out.status, 125, "{}", out.stderr);
        out.assert_stderr_has("cannot connect to postgres://app@127.0.0.1");
        // A refused port may be a server that restarts: tried again for connect_timeout.
        out.assert_stderr_has("the server refused the connection: connection refused");
        assert!(
            out.elapsed >= Duration::from_millis(800),
            "{:?}",
            out.elapsed
        );
        assert!(
            !out.stderr.contains("hunter2"),
            "the password is never printed: {}",
            out.stderr
        );
    }
    assert_eq!(dir.count(), 0);
}

// Faults: a lock lost while held, a server that never answers, and the time limit.

/// `retry` without the fast-retry defaults of `Dir::retry`, for runs that set their own.
fn bare_retry(dir: &Dir) -> Invocation {
    let mut cmd = retry();
    cmd.env("XDG_STATE_HOME", dir.path("xdg"))
        .env("NO_COLOR", "1");
    cmd
}

/// A command that counts itself, records its pid in `command.pid` (the `exec`ed
/// sleep keeps it), says `ready`, then sleeps 30 s with its output closed.
fn watched_command(dir: &Dir) -> Vec<String> {
    vec![
        "--".into(),
        "sh".into(),
        "-c".into(),
        format!(
            "echo run >> '{}'; echo $$ > '{}'; touch '{}'; exec sleep 30 >/dev/null 2>&1",
            dir.counter().display(),
            dir.path("command.pid").display(),
            dir.path("ready").display()
        ),
    ]
}

fn command_pid(dir: &Dir) -> i32 {
    std::fs::read_to_string(dir.path("command.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Waits for `child` to exit within `limit` (killing it and failing otherwise);
/// returns its output and how long the wait took.
fn exit_within(mut child: Child, limit: Duration) -> (Run, Duration) {
    let start = Instant::now();
    if exited_within(&mut child, limit).is_none() {
        let _ = child.kill();
        let out = wait_for_run(child);
        panic!(
            "retry still running after {limit:?}; stderr:\n{}",
            out.stderr
        );
    }
    let took = start.elapsed();
    (wait_for_run(child), took)
}

/// How many `--once` keys the PostgreSQL state records.
fn once_markers(pg: &postgres::Postgres) -> i64 {
    pg.client()
        .query_one("SELECT count(*) FROM retry_once", &[])
        .get(0)
}

/// Exit 125 with a line saying the lock was lost.
#[track_caller]
fn assert_lost(out: &Run) {
    assert_eq!(out.status, 125, "{}", out.stderr);
    out.assert_stderr_has("was lost");
}

/// A loopback listener that accepts connections and never says a word.
fn silent_listener() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    port
}

#[test]
fn lease_and_timeout_values_that_would_mean_nothing_are_refused() {
    let dir = Dir::new();
    for args in [
        vec!["--lock", "postgres://u@127.0.0.1/db?connect_timeout=0#x"],
        vec![
            "--once",
            "k",
            "--state",
            "postgres://u@127.0.0.1/db?connect_timeout=0",
        ],
        vec!["--lease-ttl", "10s"],
        vec!["--lease-ttl", "10s", "--lock", "job.lock"],
        vec!["--lease-ttl", "2s", "--lock", "postgres://u@127.0.0.1/db#x"],
        vec!["--lease-ttl", "2h", "--lock", "postgres://u@127.0.0.1/db#x"],
    ] {
        let out = dir.retry().args(&args).args(dir.work(0.0)).run();
        assert_eq!(out.status, 125, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("--lease-ttl") || out.stderr.contains("connect_timeout=0"),
            "{args:?}: {}",
            out.stderr
        );
    }
    assert_eq!(dir.count(), 0);
}

#[test]
fn connect_timeout_bounds_the_whole_startup() {
    let dir = Dir::new();
    let port = silent_listener();
    let url = format!("postgres://u@127.0.0.1:{port}/db?connect_timeout=1");
    for args in lock_and_state(&url) {
        let child = bare_retry(&dir).args(&args).args(dir.work(0.0)).start();
        let (out, took) = exit_within(child, Duration::from_secs(15));
        assert_eq!(out.status, 125, "{}", out.stderr);
        assert!(
            took >= Duration::from_millis(900) && took < Duration::from_secs(4),
            "{took:?}"
        );
        out.assert_stderr_has(&format!(
            "cannot connect to postgres://u@127.0.0.1:{port}/db"
        ));
        out.assert_stderr_has("no answer within 1s");
    }
    assert_eq!(dir.count(), 0);
}

#[test]
fn a_signal_while_connecting_stops_retry_within_a_second() {
    let dir = Dir::new();
    let port = silent_listener();
    let url = format!("postgres://u@127.0.0.1:{port}/db?connect_timeout=30");
    let [lock, state] = lock_and_state(&url);
    for (args, signal, status) in [(lock, Signal::SIGTERM, 143), (state, Signal::SIGINT, 130)] {
        let child = bare_retry(&dir)
            .args(&args)
            .report(dir.report())
            .args(dir.work(0.0))
            .start();
        let (out, took) = signal_after(child, Duration::from_millis(500), signal);
        assert_eq!(out.status, status, "{}", out.stderr);
        assert!(took < Duration::from_secs(1), "{took:?}");
        out.assert_stderr_has("while connecting");
        assert_stopped_because(&dir.report(), "signal");
    }
    assert_eq!(dir.count(), 0);
}

#[test]
fn a_signal_while_waiting_for_a_lock_is_reported_as_a_signal() {
    let dir = Dir::new();
    let (lock, _holder) = dir.hold_lock("exec sleep 60");
    let child = dir
        .locked(&lock)
        .args(["--lock-wait", "60s"])
        .report(dir.report())
        .args(dir.work(0.0))
        .start();
    let (out, took) = signal_after(child, Duration::from_millis(300), Signal::SIGTERM);
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_eq!(out.status, 143, "{}", out.stderr);
    let report = assert_stopped_because(&dir.report(), "signal");
    assert_eq!(report["result"]["exit_code"], 143);
}

#[test]
fn lock_wait_is_spent_from_the_time_limit() {
    let dir = Dir::new();
    // Busy for good: the wait ends with the time limit, not with --lock-wait.
    let (lock, holder) = dir.hold_lock("exec sleep 60");
    let out = dir
        .locked_work(&lock, &["--lock-wait", "20s", "--max-time", "1s"])
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(out.elapsed < Duration::from_secs(3), "{:?}", out.elapsed);
    out.assert_stderr_has("--max-time");
    assert_eq!(dir.count(), 0);
    drop(holder);

    // Busy for a while: the attempt gets only what the wait left of the time limit.
    std::fs::remove_file(dir.path("holder-ready")).unwrap();
    let (_, _holder) = dir.hold_lock("sleep 1");
    let out = dir
        .locked(&lock)
        .args(["--lock-wait", "20s", "--max-time", "3s"])
        .args(["--", "sh", "-c", "echo $RETRY_DEADLINE_MS"])
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    let left: u64 = out.stdout_text().trim().parse().unwrap();
    assert!(
        left <= 2_300,
        "about 1s of the 3s time limit went on the wait: {left}ms left"
    );
}

#[test]
fn once_keys_are_limited_in_characters_as_the_message_says() {
    let dir = Dir::new();
    let state = "postgres://u@127.0.0.1:1/db";
    let dry_run = |key: &str, state: Option<&str>| {
        let mut cmd = bare_retry(&dir);
        cmd.args(["--dry-run", "--once", key]);
        if let Some(state) = state {
            cmd.args(["--state", state]);
        }
        cmd.args(["--", "true"]).run()
    };
    let accented = "é".repeat(200);
    let out = dry_run(&accented, Some(state));
    assert_eq!(
        out.status, 0,
        "200 characters (400 bytes) is within the limit: {}",
        out.stderr
    );
    let out = dry_run(&"é".repeat(201), Some(state));
    assert_eq!(out.status, 125);
    out.assert_stderr_has("200 characters");
    // A file marker's name is limited in bytes, and says so.
    let out = dry_run(&accented, None);
    assert_eq!(out.status, 125);
    out.assert_stderr_has("bytes after escaping");
}

#[test]
fn lock_names_follow_the_rules_of_once_keys_and_are_refused_before_anything_runs() {
    let dir = Dir::new();
    let long = "n".repeat(201);
    let pg = "postgres://u@127.0.0.1:1/db";
    let cases = [
        (dir.path("a\nb.lock").display().to_string(), r"a\nb.lock"),
        (
            dir.path("a\x1b[2Jb.lock").display().to_string(),
            r"\u{1b}[2J",
        ),
        (dir.path(&long).display().to_string(), "201 bytes"),
        (format!("{pg}#nightly%0Areport"), r"nightly\nreport"),
        (format!("{pg}#%1B[2J"), r"\u{1b}[2J"),
        (format!("{pg}#{long}"), "201 bytes"),
    ];
    for (lock, shown) in cases {
        let out = dir.locked(&lock).args(dir.work(0.0)).run();
        assert_eq!(out.status, 125, "{lock:?}: {}", out.stderr);
        let line = out.stderr.trim_end();
        assert!(line.starts_with("retry: --lock: "), "{lock:?}: {line}");
        assert!(
            !line.contains(['\n', '\x1b']),
            "one line, escaped: {line:?}"
        );
        assert!(line.contains(shown), "{lock:?}: {line}");
        assert_eq!(dir.count(), 0, "{lock:?}: nothing ran");
    }
    let made: Vec<_> = std::fs::read_dir(dir.tmp.path()).unwrap().collect();
    assert!(made.is_empty(), "no lock file was made: {made:?}");
    // 200 bytes is within the limit.
    let fits = dir.path(&"n".repeat(200));
    dir.assert_does_the_work(&mut dir.locked(&fits), 1, "a 200-byte lock file name");
}

mod capacity;
mod fencing;
mod leases;
mod release;
mod stalls;
mod state;
