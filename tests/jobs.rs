//! Scheduled jobs, end to end: the real binary, real `flock`s, real marker files and
//! a real PostgreSQL server. The "work" is a shell command that appends a line to a
//! counter file, so "done exactly once" is a line count.

use crate::support::postgres;
use crate::support::{Invocation, Run, alive, retry, wait_for_run};

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

    /// Waits until `name` exists (a command's "I am running now" signal).
    fn wait_for(&self, name: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.path(name).exists() {
            assert!(Instant::now() < deadline, "{name} never appeared");
            std::thread::sleep(Duration::from_millis(10));
        }
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

/// Starts `CROWD` copies of `cmd` at once and waits for them all.
fn crowd(make: impl Fn() -> Invocation) -> Vec<Run> {
    let children: Vec<Child> = (0..CROWD).map(|_| make().start()).collect();
    children.into_iter().map(wait_for_run).collect()
}

#[test]
fn a_lock_is_held_for_the_run_and_its_file_is_kept() {
    let dir = Dir::new();
    let lock = dir.path("job.lock");
    let out = dir
        .retry()
        .arg("--lock")
        .arg(&lock)
        .args(dir.work(0.0))
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(dir.count(), 1);
    assert!(lock.exists(), "the lock file is never removed");
}

#[test]
fn concurrent_runs_with_one_lock_do_the_work_once() {
    let dir = Dir::new();
    let lock = dir.path("job.lock");
    let outs = crowd(|| {
        let mut cmd = dir.retry();
        cmd.arg("--lock").arg(&lock).args(dir.work(3.0));
        cmd
    });
    assert_eq!(dir.count(), 1, "exactly one run did the work");
    for out in &outs {
        assert_eq!(out.status, 0, "{}", out.stderr);
    }
    let skipped = outs.iter().filter(|o| o.stderr.contains("is busy")).count();
    assert_eq!(skipped, CROWD - 1);
}

#[test]
fn concurrent_runs_with_one_once_key_do_the_work_once() {
    let dir = Dir::new();
    let state = dir.path("state");
    let outs = crowd(|| {
        let mut cmd = dir.retry();
        cmd.args(["--once", "nightly"])
            .arg("--state")
            .arg(&state)
            .args(dir.work(0.5));
        cmd
    });
    assert_eq!(dir.count(), 1, "exactly one run did the work");
    for out in &outs {
        assert_eq!(out.status, 0, "{}", out.stderr);
    }
    let again = dir
        .retry()
        .args(["--once", "nightly"])
        .arg("--state")
        .arg(&state)
        .args(dir.work(0.0))
        .run();
    assert_eq!(again.status, 0);
    assert_eq!(dir.count(), 1);
    again.assert_stderr_has("already succeeded at");
}

#[test]
fn runs_waiting_on_a_once_key_find_the_winners_marker() {
    let dir = Dir::new();
    let state = dir.path("state");
    let outs = crowd(|| {
        let mut cmd = dir.retry();
        cmd.args(["--once", "k", "--lock-wait", "30s"])
            .arg("--state")
            .arg(&state)
            .args(dir.work(0.5));
        cmd
    });
    assert_eq!(dir.count(), 1);
    let done = outs
        .iter()
        .filter(|o| o.status == 0 && o.stderr.contains("already succeeded"))
        .count();
    assert_eq!(done, CROWD - 1, "the others waited, then saw the marker");
}

#[test]
fn a_lock_held_by_flock_makes_retry_skip_with_the_busy_exit() {
    let dir = Dir::new();
    let lock = dir.path("job.lock");
    let _holder = flock_holding(&dir, &lock, "exec sleep 60");
    let out = dir
        .retry()
        .arg("--lock")
        .arg(&lock)
        .args(["--busy-exit", "75"])
        .args(dir.work(0.0))
        .run();
    assert_eq!(out.status, 75, "{}", out.stderr);
    assert_eq!(dir.count(), 0, "no attempt runs");
    let text = out.stderr;
    assert!(
        text.contains("skipped") && text.contains(&lock.display().to_string()),
        "{text}"
    );
}

#[test]
fn the_busy_exit_defaults_to_zero_and_the_report_says_skipped() {
    let dir = Dir::new();
    let lock = dir.path("job.lock");
    let report = dir.path("report.json");
    let _holder = flock_holding(&dir, &lock, "exec sleep 60");
    let out = dir
        .retry()
        .arg("--lock")
        .arg(&lock)
        .arg("--report")
        .arg(&report)
        .args(dir.work(0.0))
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(report["result"]["stopped_because"], "skipped");
    assert_eq!(report["attempts"].as_array().unwrap().len(), 0);
}

#[test]
fn lock_wait_waits_for_the_holder_then_runs() {
    let dir = Dir::new();
    let lock = dir.path("job.lock");
    let _holder = flock_holding(&dir, &lock, "sleep 1");
    let started = Instant::now();
    let out = dir
        .retry()
        .arg("--lock")
        .arg(&lock)
        .args(["--lock-wait", "30s"])
        .args(dir.work(0.0))
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(dir.count(), 1);
    assert!(started.elapsed() >= Duration::from_millis(500), "it waited");
    out.assert_stderr_has("waiting up to 30s");
}

#[test]
fn lock_wait_gives_up_when_the_lock_stays_busy() {
    let dir = Dir::new();
    let lock = dir.path("job.lock");
    let _holder = flock_holding(&dir, &lock, "exec sleep 60");
    let started = Instant::now();
    let out = dir
        .retry()
        .arg("--lock")
        .arg(&lock)
        .args(["--lock-wait", "300ms", "--busy-exit", "3"])
        .args(dir.work(0.0))
        .run();
    let waited = started.elapsed();
    assert_eq!(out.status, 3, "{}", out.stderr);
    assert_eq!(dir.count(), 0);
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    assert!(waited < Duration::from_secs(10), "{waited:?}");
    out.assert_stderr_has("after waiting 300ms");
}

#[test]
fn a_signal_while_waiting_for_a_lock_stops_retry_at_once() {
    let dir = Dir::new();
    let lock = dir.path("job.lock");
    let _holder = flock_holding(&dir, &lock, "exec sleep 60");
    let child = dir
        .retry()
        .arg("--lock")
        .arg(&lock)
        .args(["--lock-wait", "60s"])
        .args(dir.work(0.0))
        .start();
    std::thread::sleep(Duration::from_millis(300));
    let sent = Instant::now();
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let out = wait_for_run(child);
    assert_eq!(out.status, 130, "{}", out.stderr);
    assert!(sent.elapsed() < Duration::from_secs(3));
    assert_eq!(dir.count(), 0);
}

#[test]
fn sigkill_of_the_holder_frees_the_lock_even_with_its_command_still_running() {
    let dir = Dir::new();
    let lock = dir.path("job.lock");
    let _reap = reap_command(&dir);
    let mut holder = dir
        .retry()
        .arg("--lock")
        .arg(&lock)
        .args(long_command(&dir))
        .start();
    dir.wait_for("ready");
    // Only wait for the exit: the orphaned command keeps the pipes open.
    holder.kill().unwrap();
    holder.wait().unwrap();
    // The command still runs in its own process group; it must not keep the lock.
    let free = Command::new("flock")
        .arg("-n")
        .arg(&lock)
        .arg("true")
        .status()
        .unwrap();
    assert!(free.success(), "the lock is free once its holder is gone");
    let out = dir
        .retry()
        .arg("--lock")
        .arg(&lock)
        .args(dir.work(0.0))
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(dir.count(), 1);
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

/// Kills the process group of `long_command` when dropped: retry's command runs in a
/// group of its own, which outlives a SIGKILLed retry.
fn reap_command(dir: &Dir) -> impl Drop {
    let pid_file = dir.path("command.pid");
    scopeguard(move || {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
        {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
    })
}

/// Runs `f` when dropped.
fn scopeguard(f: impl FnOnce()) -> impl Drop {
    struct Guard<F: FnOnce()>(Option<F>);
    impl<F: FnOnce()> Drop for Guard<F> {
        fn drop(&mut self) {
            if let Some(f) = self.0.take() {
                f();
            }
        }
    }
    Guard(Some(f))
}

#[test]
fn a_failed_run_records_nothing_and_the_next_run_tries_again() {
    let dir = Dir::new();
    let state = dir.path("state");
    let failing = |dir: &Dir| {
        let mut cmd = dir.retry();
        cmd.args(["--once", "k", "-a", "2"])
            .arg("--state")
            .arg(&state)
            .args(["--", "sh", "-c", "echo run >> \"$1\"; exit 3", "sh"])
            .arg(dir.counter());
        cmd
    };
    let out = failing(&dir).run();
    assert_eq!(out.status, 3, "{}", out.stderr);
    assert_eq!(dir.count(), 2);
    let left: Vec<_> = std::fs::read_dir(&state).unwrap().flatten().collect();
    assert!(left.is_empty(), "no marker and no lock file left: {left:?}");
    let out = failing(&dir).run();
    assert_eq!(out.status, 3);
    assert_eq!(dir.count(), 4, "the key was not recorded, so it ran again");
}

#[test]
fn a_killed_run_records_nothing() {
    let dir = Dir::new();
    let state = dir.path("state");
    let _reap = reap_command(&dir);
    let mut child = dir
        .retry()
        .args(["--once", "k"])
        .arg("--state")
        .arg(&state)
        .args(long_command(&dir))
        .start();
    dir.wait_for("ready");
    // Only wait for the exit: the orphaned command keeps the pipes open.
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!state.join("k.json").exists());
    let out = dir
        .retry()
        .args(["--once", "k"])
        .arg("--state")
        .arg(&state)
        .args(dir.work(0.0))
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(dir.count(), 1, "the killed run's key was free to run again");
    assert!(state.join("k.json").exists());
}

#[test]
fn a_marker_is_json_named_after_its_key() {
    let dir = Dir::new();
    let out = dir
        .retry()
        .args(["--once", "report/2024-05-01 eu"])
        .args(dir.work(0.0))
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    // Default state directory: $XDG_STATE_HOME/retry.
    let path = dir.path("xdg/retry/report%2F2024-05-01%20eu.json");
    let marker: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(marker["key"], "report/2024-05-01 eu");
    assert_eq!(marker["attempts"], 1);
    assert_eq!(marker["command"][0], "sh");
    assert!(marker["pid"].as_u64().unwrap() > 0);
    assert!(!marker["host"].as_str().unwrap().is_empty());
    let at = marker["succeeded_at"].as_str().unwrap();
    assert!(humantime::parse_rfc3339(at).is_ok(), "{at}");

    let again = dir
        .retry()
        .args(["--once", "report/2024-05-01 eu"])
        .args(dir.work(0.0))
        .run();
    assert_eq!(again.status, 0);
    let text = again.stderr;
    assert!(
        text.contains(&format!("already succeeded at {at}")),
        "{text}"
    );
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
    let out = dir
        .retry()
        .args(["--once", "k", "--state"])
        .arg(dir.path("file"))
        .args(dir.work(0.0))
        .run();
    assert_eq!(out.status, 125, "{}", out.stderr);
    assert_eq!(dir.count(), 0);
}

// PostgreSQL: a real server per test, started by the fixture.

/// A loopback port with nothing listening on it.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn an_unreachable_server_is_exit_125_and_the_command_does_not_run() {
    let dir = Dir::new();
    let url = format!("postgres://app:hunter2@127.0.0.1:{}/jobs", closed_port());
    for args in [
        vec!["--lock".to_string(), format!("{url}#nightly")],
        vec!["--once".into(), "k".into(), "--state".into(), url.clone()],
    ] {
        let out = dir.retry().args(&args).args(dir.work(0.0)).run();
        assert_eq!(out.status, 125, "{}", out.stderr);
        let text = out.stderr;
        assert!(
            text.contains("cannot connect to postgres://app@127.0.0.1"),
            "{text}"
        );
        assert!(
            !text.contains("hunter2"),
            "the password is never printed: {text}"
        );
    }
    assert_eq!(dir.count(), 0);
}

#[test]
fn two_runs_compete_for_one_advisory_lock() {
    let Some(pg) = postgres::start("two_runs_compete_for_one_advisory_lock") else {
        return;
    };
    let dir = Dir::new();
    let lock = pg.url("#nightly-report");
    let ready = dir.path("ready");
    let first = dir
        .retry()
        .arg("--lock")
        .arg(&lock)
        .args([
            "--",
            "sh",
            "-c",
            &format!(
                "echo run >> '{}'; touch '{}'; sleep 2",
                dir.counter().display(),
                ready.display()
            ),
        ])
        .start();
    dir.wait_for("ready");

    // The lock is findable in pg_locks with the key expression the README gives.
    let mut client = pg.client();
    let holders: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
             WHERE l.locktype = 'advisory' AND l.objsubid = 1
               AND ((l.classid::bigint << 32) | l.objid::bigint) =
                   ('x' || left(encode(sha256(convert_to('nightly-report', 'UTF8')), 'hex'), 16))::bit(64)::bigint
               AND a.application_name = 'retry --lock nightly-report'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(holders, 1);

    let second = dir
        .retry()
        .arg("--lock")
        .arg(&lock)
        .args(["--busy-exit", "9"])
        .args(dir.work(0.0))
        .run();
    assert_eq!(second.status, 9, "{}", second.stderr);
    assert!(second.stderr.contains("nightly-report") && second.stderr.contains("busy"));

    let first = wait_for_run(first);
    assert_eq!(first.status, 0, "{}", first.stderr);
    assert_eq!(dir.count(), 1, "only the holder ran");

    let third = dir
        .retry()
        .arg("--lock")
        .arg(&lock)
        .args(dir.work(0.0))
        .run();
    assert_eq!(third.status, 0, "released at exit: {}", third.stderr);
    assert_eq!(dir.count(), 2);
}

#[test]
fn a_crowd_on_one_advisory_lock_does_the_work_once() {
    let Some(pg) = postgres::start("a_crowd_on_one_advisory_lock_does_the_work_once") else {
        return;
    };
    let dir = Dir::new();
    let lock = pg.url("#crowd");
    let outs = crowd(|| {
        let mut cmd = dir.retry();
        cmd.arg("--lock").arg(&lock).args(dir.work(3.0));
        cmd
    });
    for out in &outs {
        assert_eq!(out.status, 0, "{}", out.stderr);
    }
    assert_eq!(dir.count(), 1);
}

#[test]
fn sigkill_of_the_holder_frees_the_advisory_lock() {
    let Some(pg) = postgres::start("sigkill_of_the_holder_frees_the_advisory_lock") else {
        return;
    };
    let dir = Dir::new();
    let lock = pg.url("#killed");
    let _reap = reap_command(&dir);
    let mut holder = dir
        .retry()
        .arg("--lock")
        .arg(&lock)
        .args(long_command(&dir))
        .start();
    dir.wait_for("ready");
    // Only wait for the exit: the orphaned command keeps the pipes open.
    holder.kill().unwrap();
    holder.wait().unwrap();
    // The server frees a session lock when it sees the connection close.
    let out = dir
        .retry()
        .arg("--lock")
        .arg(&lock)
        .args(["--lock-wait", "10s"])
        .args(dir.work(0.0))
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(dir.count(), 1);
}

#[test]
fn once_with_postgres_state_records_a_row_and_skips_the_second_run() {
    let Some(pg) =
        postgres::start("once_with_postgres_state_records_a_row_and_skips_the_second_run")
    else {
        return;
    };
    let dir = Dir::new();
    let state = pg.url("");
    let once = |key: &str| {
        let mut cmd = dir.retry();
        cmd.args(["--once", key, "--state", &state]);
        cmd
    };
    let failed = once("broken").args(["-a", "1", "--", "false"]).run();
    assert_eq!(failed.status, 1, "{}", failed.stderr);

    let outs = crowd(|| {
        let mut cmd = once("nightly");
        cmd.args(dir.work(0.5));
        cmd
    });
    for out in &outs {
        assert_eq!(out.status, 0, "{}", out.stderr);
    }
    assert_eq!(dir.count(), 1, "exactly one of the crowd ran");

    let mut client = pg.client();
    let rows = client
        .query(
            "SELECT key, host, pid, command, attempts FROM retry_once",
            &[],
        )
        .unwrap();
    assert_eq!(rows.len(), 1, "a failed run records nothing");
    let row = &rows[0];
    assert_eq!(row.get::<_, String>("key"), "nightly");
    assert!(!row.get::<_, String>("host").is_empty());
    assert!(row.get::<_, i32>("pid") > 0);
    assert!(row.get::<_, String>("command").starts_with("sh -c"));
    assert_eq!(row.get::<_, i32>("attempts"), 1);

    let again = once("nightly").args(dir.work(0.0)).run();
    assert_eq!(again.status, 0);
    again.assert_stderr_has("already succeeded at");
    assert_eq!(dir.count(), 1);

    client
        .execute("DELETE FROM retry_once WHERE key = 'nightly'", &[])
        .unwrap();
    let after_delete = once("nightly").args(dir.work(0.0)).run();
    assert_eq!(after_delete.status, 0);
    assert_eq!(dir.count(), 2, "deleting the row lets the job run again");
}

#[test]
fn tls_follows_the_sslmode_in_the_url() {
    let Some(pg) = postgres::start_with(
        "tls_follows_the_sslmode_in_the_url",
        postgres::Options { tls: true },
    ) else {
        return;
    };
    let dir = Dir::new();
    let cert = pg.cert_path().display().to_string();
    let localhost = format!(
        "postgres://{}@localhost:{}/postgres",
        postgres::USER,
        pg.port
    );
    let cases = [
        (pg.url("?sslmode=disable#a"), Some(false)),
        (pg.url("?sslmode=prefer#a"), Some(true)),
        (pg.url("?sslmode=require#a"), Some(true)),
        (
            format!("{localhost}?sslmode=verify-full&sslrootcert={cert}#a"),
            Some(true),
        ),
        (
            pg.url(&format!("?sslmode=verify-ca&sslrootcert={cert}#a")),
            Some(true),
        ),
        // The certificate names localhost, not 127.0.0.1.
        (
            pg.url(&format!("?sslmode=verify-full&sslrootcert={cert}#a")),
            None,
        ),
    ];
    for (url, tls) in cases {
        let out = dir
            .retry()
            .arg("--lock")
            .arg(&url)
            .args(["--", "sh", "-c", "touch \"$1\"; sleep 0.5", "sh"])
            .arg(dir.path("ready"))
            .run();
        match tls {
            Some(_) => assert_eq!(out.status, 0, "{url}: {}", out.stderr),
            None => {
                assert_eq!(out.status, 125, "{url}: {}", out.stderr);
                out.assert_stderr_has("cannot connect");
            }
        }
        let _ = std::fs::remove_file(dir.path("ready"));
    }

    // While a run holds the lock, the server shows whether its connection uses TLS.
    let ssl_of = |url: &str| {
        let child = dir
            .retry()
            .arg("--lock")
            .arg(url)
            .args(["--", "sh", "-c", "touch \"$1\"; sleep 1", "sh"])
            .arg(dir.path("ready"))
            .start();
        dir.wait_for("ready");
        let ssl: bool = pg
            .client()
            .query_one(
                "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
                 WHERE a.application_name = 'retry --lock a'",
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(wait_for_run(child).status, 0);
        let _ = std::fs::remove_file(dir.path("ready"));
        ssl
    };
    assert!(ssl_of(&pg.url("?sslmode=require#a")));
    assert!(!ssl_of(&pg.url("?sslmode=disable#a")));
}

#[test]
fn sslmode_require_fails_against_a_server_without_tls() {
    let Some(pg) = postgres::start("sslmode_require_fails_against_a_server_without_tls") else {
        return;
    };
    let dir = Dir::new();
    let out = dir
        .retry()
        .arg("--lock")
        .arg(pg.url("?sslmode=require#a"))
        .args(dir.work(0.0))
        .run();
    assert_eq!(out.status, 125, "{}", out.stderr);
    assert_eq!(dir.count(), 0);
    let out = dir
        .retry()
        .arg("--lock")
        .arg(pg.url("?sslmode=prefer#a"))
        .args(dir.work(0.0))
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
}

// Faults: a lock lost while held, a server that never answers, and the budget.

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
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = wait_for_run(child);
            panic!(
                "retry still running after {limit:?}; stderr:\n{}",
                out.stderr
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let took = start.elapsed();
    (wait_for_run(child), took)
}

fn read_report(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// What every lost lock must lead to: exit 125 with a line saying so, the command
/// ended, the report saying `lock_lost`.
fn assert_lock_lost(out: &Run, pid: i32, report: &Path) {
    let text = &out.stderr;
    assert_eq!(out.status, 125, "{text}");
    assert!(text.contains("was lost"), "{text}");
    assert!(!alive(pid), "the command (pid {pid}) was stopped");
    let report = read_report(report);
    assert_eq!(report["result"]["stopped_because"], "lock_lost", "{report}");
    assert_eq!(report["result"]["exit_code"], 125);
}

#[test]
fn a_server_restart_loses_the_advisory_lock_and_stops_the_run() {
    let Some(pg) = postgres::start("a_server_restart_loses_the_advisory_lock_and_stops_the_run")
    else {
        return;
    };
    let dir = Dir::new();
    let lock = pg.url("#restarted");
    let report = dir.path("report.json");
    let _reap = reap_command(&dir);
    let holder = dir
        .retry()
        .arg("--lock")
        .arg(&lock)
        .arg("--report")
        .arg(&report)
        .args(watched_command(&dir))
        .start();
    dir.wait_for("ready");
    let pid = command_pid(&dir);
    assert!(alive(pid));
    pg.restart();
    let (out, _) = exit_within(holder, Duration::from_secs(10));
    assert_lock_lost(&out, pid, &report);
    let second = dir
        .retry()
        .arg("--lock")
        .arg(&lock)
        .args(["--lock-wait", "5s"])
        .args(dir.work(0.0))
        .run();
    assert_eq!(second.status, 0, "{}", second.stderr);
    assert_eq!(dir.count(), 2, "the second locker got in");
}

#[test]
fn a_terminated_lock_backend_stops_the_run_and_records_no_marker() {
    let Some(pg) = postgres::start("a_terminated_lock_backend_stops_the_run_and_records_no_marker")
    else {
        return;
    };
    let dir = Dir::new();
    let lock = pg.url("#terminated");
    let state = pg.url("");
    let report = dir.path("report.json");
    let _reap = reap_command(&dir);
    let holder = dir
        .retry()
        .arg("--lock")
        .arg(&lock)
        .args(["--once", "k", "--state", &state])
        .arg("--report")
        .arg(&report)
        .args(["--kill-after", "1s"])
        .args(watched_command(&dir))
        .start();
    dir.wait_for("ready");
    let pid = command_pid(&dir);
    assert_eq!(pg.terminate("retry --lock terminated"), 1);
    let terminated = Instant::now();
    let (out, _) = exit_within(holder, Duration::from_secs(10));
    assert!(
        terminated.elapsed() < Duration::from_secs(4),
        "noticed within a check or two: {:?}",
        terminated.elapsed()
    );
    assert_lock_lost(&out, pid, &report);
    let text = out.stderr;
    assert!(
        text.contains("lock postgres://postgres@127.0.0.1"),
        "{text}"
    );
    let markers: i64 = pg
        .client()
        .query_one("SELECT count(*) FROM retry_once WHERE key = 'k'", &[])
        .unwrap()
        .get(0);
    assert_eq!(markers, 0, "a run that lost its lock records nothing");
    let second = dir
        .retry()
        .arg("--lock")
        .arg(&lock)
        .args(["--once", "k", "--state", &state])
        .args(dir.work(0.0))
        .run();
    assert_eq!(second.status, 0, "{}", second.stderr);
    assert_eq!(dir.count(), 2, "the second locker got in and did the work");
}

#[test]
fn a_terminated_once_key_backend_stops_the_run() {
    let Some(pg) = postgres::start("a_terminated_once_key_backend_stops_the_run") else {
        return;
    };
    let dir = Dir::new();
    let report = dir.path("report.json");
    let _reap = reap_command(&dir);
    let holder = dir
        .retry()
        .args(["--once", "nightly", "--state", &pg.url("")])
        .arg("--report")
        .arg(&report)
        .args(watched_command(&dir))
        .start();
    dir.wait_for("ready");
    let pid = command_pid(&dir);
    assert_eq!(pg.terminate("retry --once"), 1);
    let (out, _) = exit_within(holder, Duration::from_secs(10));
    assert_lock_lost(&out, pid, &report);
    out.assert_stderr_has("the lock on --once key \"nightly\"");
}

#[test]
fn a_lock_lost_during_a_backoff_sleep_ends_the_run_at_once() {
    let Some(pg) = postgres::start("a_lock_lost_during_a_backoff_sleep_ends_the_run_at_once")
    else {
        return;
    };
    let dir = Dir::new();
    let report = dir.path("report.json");
    let holder = bare_retry(&dir)
        .arg("--lock")
        .arg(pg.url("#sleeper"))
        .args(["-a", "5", "--delay", "30s", "--jitter", "none"])
        .arg("--report")
        .arg(&report)
        .args([
            "--",
            "sh",
            "-c",
            &format!(
                "echo run >> '{}'; touch '{}'; exit 1",
                dir.counter().display(),
                dir.path("ready").display()
            ),
        ])
        .start();
    dir.wait_for("ready");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(pg.terminate("retry --lock sleeper"), 1);
    let (out, took) = exit_within(holder, Duration::from_secs(10));
    assert!(took < Duration::from_secs(4), "{took:?}");
    assert_eq!(out.status, 125, "{}", out.stderr);
    let report = read_report(&report);
    assert_eq!(report["result"]["stopped_because"], "lock_lost");
    assert_eq!(report["attempts"].as_array().unwrap().len(), 1);
    assert_eq!(dir.count(), 1, "no further attempt");
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
fn an_in_flight_request_is_abandoned_when_the_lock_is_lost() {
    let Some(pg) = postgres::start("an_in_flight_request_is_abandoned_when_the_lock_is_lost")
    else {
        return;
    };
    let dir = Dir::new();
    let report = dir.path("report.json");
    let port = silent_listener();
    let holder = bare_retry(&dir)
        .arg("--lock")
        .arg(pg.url("#http"))
        .arg("--report")
        .arg(&report)
        .arg(format!("http://127.0.0.1:{port}/slow"))
        .start();
    // The request is in flight once the lock's connection shows up.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pg.holds_advisory_lock("retry --lock http") {
        assert!(Instant::now() < deadline, "retry never took the lock");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(pg.terminate("retry --lock http"), 1);
    let (out, took) = exit_within(holder, Duration::from_secs(10));
    assert!(took < Duration::from_secs(4), "{took:?}");
    assert_eq!(out.status, 125, "{}", out.stderr);
    out.assert_stderr_has("was lost");
    assert_eq!(
        read_report(&report)["result"]["stopped_because"],
        "lock_lost"
    );
}

#[test]
fn connect_timeout_bounds_the_whole_startup() {
    let dir = Dir::new();
    let port = silent_listener();
    let url = format!("postgres://u@127.0.0.1:{port}/db?connect_timeout=1");
    for args in [
        vec!["--lock".to_string(), format!("{url}#x")],
        vec!["--once".into(), "k".into(), "--state".into(), url.clone()],
    ] {
        let child = bare_retry(&dir).args(&args).args(dir.work(0.0)).start();
        let (out, took) = exit_within(child, Duration::from_secs(15));
        let text = out.stderr;
        assert_eq!(out.status, 125, "{text}");
        assert!(
            took >= Duration::from_millis(900) && took < Duration::from_secs(4),
            "{took:?}"
        );
        assert!(
            text.contains(&format!(
                "cannot connect to postgres://u@127.0.0.1:{port}/db"
            )),
            "{text}"
        );
        assert!(text.contains("no answer within 1s"), "{text}");
    }
    assert_eq!(dir.count(), 0);
}

#[test]
fn a_signal_while_connecting_stops_retry_within_a_second() {
    let dir = Dir::new();
    let port = silent_listener();
    let url = format!("postgres://u@127.0.0.1:{port}/db?connect_timeout=30");
    for (args, signal, status) in [
        (
            vec!["--lock".to_string(), format!("{url}#x")],
            Signal::SIGTERM,
            143,
        ),
        (
            vec!["--once".into(), "k".into(), "--state".into(), url.clone()],
            Signal::SIGINT,
            130,
        ),
    ] {
        let report = dir.path("report.json");
        let child = bare_retry(&dir)
            .args(&args)
            .arg("--report")
            .arg(&report)
            .args(dir.work(0.0))
            .start();
        std::thread::sleep(Duration::from_millis(500));
        kill(Pid::from_raw(child.id() as i32), signal).unwrap();
        let (out, took) = exit_within(child, Duration::from_secs(10));
        assert_eq!(out.status, status, "{}", out.stderr);
        assert!(took < Duration::from_secs(1), "{took:?}");
        out.assert_stderr_has("while connecting");
        assert_eq!(read_report(&report)["result"]["stopped_because"], "signal");
    }
    assert_eq!(dir.count(), 0);
}

#[test]
fn a_signal_while_waiting_for_a_lock_is_reported_as_a_signal() {
    let dir = Dir::new();
    let lock = dir.path("job.lock");
    let report = dir.path("report.json");
    let _holder = flock_holding(&dir, &lock, "exec sleep 60");
    let child = dir
        .retry()
        .arg("--lock")
        .arg(&lock)
        .args(["--lock-wait", "60s"])
        .arg("--report")
        .arg(&report)
        .args(dir.work(0.0))
        .start();
    std::thread::sleep(Duration::from_millis(300));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let (out, _) = exit_within(child, Duration::from_secs(3));
    assert_eq!(out.status, 143, "{}", out.stderr);
    let report = read_report(&report);
    assert_eq!(report["result"]["stopped_because"], "signal", "{report}");
    assert_eq!(report["result"]["exit_code"], 143);
}

#[test]
fn lock_wait_is_spent_from_the_max_time_budget() {
    let dir = Dir::new();
    let lock = dir.path("job.lock");
    // Busy for good: the wait ends with the budget, not with --lock-wait.
    let holder = flock_holding(&dir, &lock, "exec sleep 60");
    let started = Instant::now();
    let out = dir
        .retry()
        .arg("--lock")
        .arg(&lock)
        .args(["--lock-wait", "20s", "--max-time", "1s"])
        .args(dir.work(0.0))
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    out.assert_stderr_has("--max-time");
    assert_eq!(dir.count(), 0);
    drop(holder);

    // Busy for a while: the attempt gets only what the wait left of the budget.
    std::fs::remove_file(dir.path("holder-ready")).unwrap();
    let _holder = flock_holding(&dir, &lock, "sleep 1");
    let out = dir
        .retry()
        .arg("--lock")
        .arg(&lock)
        .args(["--lock-wait", "20s", "--max-time", "3s"])
        .args(["--", "sh", "-c", "echo $RETRY_DEADLINE_MS"])
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    let left: u64 = out.stdout_text().trim().parse().unwrap();
    assert!(
        left <= 2_300,
        "about 1s of the 3s budget went on the wait: {left}ms left"
    );
}

#[test]
fn once_keys_are_limited_in_characters_as_the_message_says() {
    let dir = Dir::new();
    let state = "postgres://u@127.0.0.1:1/db";
    let accented = "é".repeat(200);
    let out = bare_retry(&dir)
        .args(["--dry-run", "--once", &accented, "--state", state])
        .args(["--", "true"])
        .run();
    assert_eq!(
        out.status, 0,
        "200 characters (400 bytes) is within the limit: {}",
        out.stderr
    );
    let out = bare_retry(&dir)
        .args(["--dry-run", "--once", &"é".repeat(201), "--state", state])
        .args(["--", "true"])
        .run();
    assert_eq!(out.status, 125);
    out.assert_stderr_has("200 characters");
    // A file marker's name is limited in bytes, and says so.
    let out = bare_retry(&dir)
        .args(["--dry-run", "--once", &accented])
        .args(["--", "true"])
        .run();
    assert_eq!(out.status, 125);
    out.assert_stderr_has("bytes after escaping");
}

/// A TCP relay to `port` on loopback that can be made to stop passing bytes in
/// either direction, as a network cut does (no FIN, no RST: silence).
struct Relay {
    port: u16,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Relay {
    fn to(port: u16) -> Relay {
        use std::sync::Arc;
        use std::sync::atomic::AtomicBool;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let relay = Relay {
            port: listener.local_addr().unwrap().port(),
            cut: Arc::new(AtomicBool::new(false)),
        };
        let cut = Arc::clone(&relay.cut);
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let server = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
                for (from, to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    let cut = Arc::clone(&cut);
                    std::thread::spawn(move || pass(from, to, &cut));
                }
            }
        });
        relay
    }

    fn cut(&self) {
        self.cut.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Copies `from` to `to` until the relay is cut; then holds both ends open in silence.
fn pass(
    mut from: std::net::TcpStream,
    mut to: std::net::TcpStream,
    cut: &std::sync::atomic::AtomicBool,
) {
    use std::io::{Read, Write};
    let mut buf = [0u8; 8192];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        while cut.load(std::sync::atomic::Ordering::SeqCst) {
            std::thread::sleep(Duration::from_secs(1));
        }
        if to.write_all(&buf[..n]).is_err() {
            return;
        }
    }
}

#[test]
fn a_network_cut_loses_the_lock_within_the_check_bound() {
    let Some(pg) = postgres::start("a_network_cut_loses_the_lock_within_the_check_bound") else {
        return;
    };
    let dir = Dir::new();
    let relay = Relay::to(pg.port);
    let lock = format!(
        "postgres://{}@127.0.0.1:{}/postgres#cut",
        postgres::USER,
        relay.port
    );
    let report = dir.path("report.json");
    let _reap = reap_command(&dir);
    let holder = dir
        .retry()
        .arg("--lock")
        .arg(&lock)
        .arg("--report")
        .arg(&report)
        .args(watched_command(&dir))
        .start();
    dir.wait_for("ready");
    let pid = command_pid(&dir);
    relay.cut();
    let (out, took) = exit_within(holder, Duration::from_secs(15));
    assert!(
        took < Duration::from_secs(5),
        "a check gets 2s to answer, and one runs every second: {took:?}"
    );
    assert_lock_lost(&out, pid, &report);
}

#[test]
fn a_lock_lost_as_the_command_succeeds_records_no_marker() {
    let Some(pg) = postgres::start("a_lock_lost_as_the_command_succeeds_records_no_marker") else {
        return;
    };
    let dir = Dir::new();
    let report = dir.path("report.json");
    let holder = dir
        .retry()
        .arg("--lock")
        .arg(pg.url("#close-call"))
        .args(["--once", "k", "--state", &pg.url("")])
        .arg("--report")
        .arg(&report)
        .args([
            "--",
            "sh",
            "-c",
            &format!(
                "touch '{}'; while [ ! -e '{}' ]; do sleep 0.01; done",
                dir.path("ready").display(),
                dir.path("go").display()
            ),
        ])
        .start();
    dir.wait_for("ready");
    assert_eq!(pg.terminate("retry --lock close-call"), 1);
    let deadline = Instant::now() + Duration::from_secs(5);
    while pg.terminate("retry --lock close-call") > 0 {
        assert!(Instant::now() < deadline, "the backend never ended");
        std::thread::sleep(Duration::from_millis(5));
    }
    // The command succeeds at once, most likely before the next periodic check.
    std::fs::write(dir.path("go"), "").unwrap();
    let (out, _) = exit_within(holder, Duration::from_secs(10));
    assert_eq!(out.status, 125, "{}", out.stderr);
    out.assert_stderr_has("was lost");
    assert_eq!(
        read_report(&report)["result"]["stopped_because"],
        "lock_lost"
    );
    let markers: i64 = pg
        .client()
        .query_one("SELECT count(*) FROM retry_once", &[])
        .unwrap()
        .get(0);
    assert_eq!(markers, 0, "a success without its lock is not recorded");
}

#[test]
fn a_command_that_ignores_sigterm_is_killed_after_kill_after_when_the_lock_is_lost() {
    let Some(pg) = postgres::start(
        "a_command_that_ignores_sigterm_is_killed_after_kill_after_when_the_lock_is_lost",
    ) else {
        return;
    };
    let dir = Dir::new();
    let report = dir.path("report.json");
    let _reap = reap_command(&dir);
    let holder = dir
        .retry()
        .arg("--lock")
        .arg(pg.url("#stubborn"))
        .args(["--kill-after", "1s"])
        .arg("--report")
        .arg(&report)
        .args([
            "--",
            "sh",
            "-c",
            &format!(
                "trap '' TERM; echo $$ > '{}'; touch '{}'; exec >/dev/null 2>&1; \
                     while :; do sleep 0.1; done",
                dir.path("command.pid").display(),
                dir.path("ready").display()
            ),
        ])
        .start();
    dir.wait_for("ready");
    let pid = command_pid(&dir);
    assert_eq!(pg.terminate("retry --lock stubborn"), 1);
    let (out, took) = exit_within(holder, Duration::from_secs(10));
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(5),
        "SIGTERM is ignored, SIGKILL follows --kill-after later: {took:?}"
    );
    assert_lock_lost(&out, pid, &report);
}

#[test]
fn a_lock_lost_while_waiting_for_a_once_key_ends_the_wait() {
    let Some(pg) = postgres::start("a_lock_lost_while_waiting_for_a_once_key_ends_the_wait") else {
        return;
    };
    let dir = Dir::new();
    let state = pg.url("");
    let _reap = reap_command(&dir);
    let mut first = dir
        .retry()
        .arg("--lock")
        .arg(pg.url("#first"))
        .args(["--once", "k", "--state", &state])
        .args(watched_command(&dir))
        .start();
    dir.wait_for("ready");
    let report = dir.path("report.json");
    let waiting = dir
        .retry()
        .arg("--lock")
        .arg(pg.url("#second"))
        .args(["--once", "k", "--state", &state, "--lock-wait", "30s"])
        .arg("--report")
        .arg(&report)
        .args(dir.work(0.0))
        .start();
    // Only once the second run holds its own lock is it waiting for the key's.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pg.holds_advisory_lock("retry --lock second") {
        assert!(
            Instant::now() < deadline,
            "the second run never took its lock"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(pg.terminate("retry --lock second"), 1);
    let (out, took) = exit_within(waiting, Duration::from_secs(10));
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(out.status, 125, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("while waiting for the lock on --once key"),
        "{}",
        out.stderr
    );
    assert_eq!(
        read_report(&report)["result"]["stopped_because"],
        "lock_lost"
    );
    assert_eq!(dir.count(), 1, "only the first run worked");
    first.kill().unwrap();
    first.wait().unwrap();
}
