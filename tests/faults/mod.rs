//! The promises under real faults: a missing or full `$TMPDIR`, a reader that
//! goes away or stalls, background processes that hold the pipes, `kill -9` of
//! retry, processes that leave the group, retry as PID 1, secrets in URLs,
//! unwritable report targets; and in their own files, how a process starts
//! (`spawn`: the terminal, signal dispositions and mask it inherits) and an attempt
//! that cannot start for lack of resources (`resources`). Every test measures when
//! `retry` itself exited (polling the child), never when a pipe that a leftover
//! holds reached EOF, and checks processes through `/proc`.

mod resources;
mod spawn;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::http_server;
use crate::support::{
    self, Scratch, alive, fast, privileged, retry, wait_exit, wait_for_file, wait_for_pid,
    wait_until,
};
use http_server::{Reply, Server};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// A small tmpfs, unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(options: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().expect("tempdir");
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(dir.path())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        privileged(&format!("mount -t tmpfs -o {options}"), ok).then_some(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// Every live process whose environment holds `token`, found through /proc.
fn processes_with(token: &str) -> Vec<i32> {
    let needle = format!("RETRY_TEST_TOKEN={token}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| alive(*pid))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == needle.as_bytes()))
        })
        .collect()
}

/// Waits up to a second for the processes tagged `token` to be gone.
fn assert_none_left(token: &str) {
    let gone = wait_until(Duration::from_secs(1), || processes_with(token).is_empty());
    assert!(gone, "processes left behind: {:?}", processes_with(token));
}

fn token() -> String {
    format!("{}-{:?}", std::process::id(), Instant::now())
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect()
}

// ---- stdin recording and spools without a usable $TMPDIR ----

fn pipe_into_retry(input: Vec<u8>, tmpdir: &Path, extra: &[&str]) -> support::Run {
    retry().args(extra).env("TMPDIR", tmpdir).input(input).run()
}

#[test]
fn small_stdin_needs_no_disk_at_all() {
    let r = pipe_into_retry(
        vec![0; 3_000_000],
        Path::new("/nonexistent"),
        &["--", "wc", "-c"],
    );
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.stdout_text().trim(), "3000000");
}

#[test]
fn stdin_that_cannot_spill_stops_the_attempt_instead_of_truncating_it() {
    let r = pipe_into_retry(
        vec![0; 5_000_000],
        Path::new("/nonexistent"),
        &["--", "wc", "-c"],
    );
    assert_eq!(r.status, 125, "{}", r.stderr);
    assert!(
        r.stdout.is_empty(),
        "the command saw a truncated stdin: {:?}",
        r.stdout_text()
    );
    r.assert_stderr_has("/nonexistent");
    r.assert_stderr_has("No such file or directory");
}

#[test]
fn later_attempts_get_the_whole_stdin_without_a_temporary_directory() {
    let r = pipe_into_retry(
        b"hello\n".to_vec(),
        Path::new("/nonexistent"),
        &[
            "-a",
            "3",
            "--delay",
            "0",
            "--",
            "sh",
            "-c",
            "echo \"[$(cat)]\"; exit $((RETRY_ATTEMPT<3))",
        ],
    );
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), "[hello]\n[hello]\n[hello]\n");
}

#[test]
fn a_full_temporary_directory_stops_the_attempt_with_the_os_reason() {
    let Some(fs) = Tmpfs::mount("size=1m") else {
        return;
    };
    let r = pipe_into_retry(vec![7; 8_000_000], fs.path(), &["--", "wc", "-c"]);
    assert_eq!(r.status, 125, "{}", r.stderr);
    assert!(
        r.stdout.is_empty(),
        "the command saw a truncated stdin: {:?}",
        r.stdout_text()
    );
    r.assert_stderr_has("No space left on device");
    r.assert_stderr_has(&fs.path().display().to_string());
}

#[test]
fn held_stdout_without_a_temporary_directory_stays_in_memory_until_4_mib() {
    let mut small = retry();
    small
        .env("TMPDIR", "/nonexistent")
        .args(["--hold-stdout", "--", "sh", "-c", "echo small"]);
    let r = small.run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), "small\n");

    let mut big = retry();
    big.env("TMPDIR", "/nonexistent").args([
        "-a",
        "3",
        "--hold-stdout",
        "--",
        "head",
        "-c",
        "6000000",
        "/dev/zero",
    ]);
    let r = big.run();
    assert_eq!(r.status, 125, "{}", r.stderr);
    assert!(r.stdout.is_empty());
    r.assert_stderr_has("--hold-stdout");
    r.assert_stderr_has("/nonexistent");
    assert_eq!(
        r.stderr.matches("attempt 2").count(),
        0,
        "retried: {}",
        r.stderr
    );
}

#[test]
fn an_http_body_that_cannot_spill_is_retrys_own_error() {
    let body = vec![b'x'; 6 << 20];
    let server = Server::script(vec![Reply::status(200).body(&body)]).expect_hits(1);
    let mut cmd = retry();
    cmd.env("TMPDIR", "/nonexistent").arg(server.url("/big"));
    let r = cmd.run();
    assert_eq!(r.status, 125, "{}", r.stderr);
    assert!(r.stdout.is_empty());
    r.assert_stderr_has("/nonexistent");
}

// ---- readers that go away or stall; pipes held by background processes ----

/// `-o FILE` on a device that fills up mid-body is curl's 23, as with curl, and
/// permanent; FILE never appears, whole or in part.
#[test]
fn an_output_file_on_a_full_device_is_exit_23_like_curl() {
    let Some(fs) = Tmpfs::mount("size=64k") else {
        return;
    };
    let server = Server::script(vec![Reply::ok("").body(&vec![b'x'; 1 << 20])]);
    let curl_out = fs.path().join("curl.out");
    let curl = support::Invocation::of("curl")
        .args(["-sS", "-o"])
        .arg(&curl_out)
        .arg(server.url("/big"))
        .run();
    assert_eq!(curl.status, 23, "curl: {}", curl.stderr);
    std::fs::remove_file(&curl_out).unwrap();
    let hits = server.hits();
    let out_file = fs.path().join("retry.out");
    let out = retry()
        .args(fast(&["-sS", "-o", out_file.to_str().unwrap()]))
        .arg(server.url("/big"))
        .run();
    assert_eq!(out.status, 23, "{}", out.stderr);
    assert_eq!(server.hits() - hits, 1, "23 is permanent");
    assert!(!out_file.exists(), "a partial -o file was left");
}

#[test]
fn a_reader_that_goes_away_ends_the_run_under_output_rules() {
    let mut child = retry()
        .args(fast(&["--retry-on-output", "X", "--", "yes"]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut lines = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    for _ in 0..2 {
        line.clear();
        lines.read_line(&mut line).unwrap();
        assert_eq!(line, "y\n");
    }
    drop(lines);
    let (status, _) = wait_exit(&mut child, Duration::from_secs(10));
    assert_eq!(status, 141);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(stderr.contains("permanent"), "{stderr}");
    assert!(!stderr.contains("attempt 2"), "{stderr}");
}

#[test]
fn a_background_process_holding_the_pipe_cannot_hold_the_run_past_max_time() {
    let s = Scratch::new();
    let out = std::fs::File::create(s.path("out")).unwrap();
    let mut child = retry()
        .args(["-t", "2s", "--max-time", "3s", "--retry-on-output", "NOPE"])
        .sh("sleep 8 & echo hi")
        .stdout(out)
        .stderr(Stdio::null())
        .spawn();
    let (status, took) = wait_exit(&mut child, Duration::from_secs(7));
    assert_eq!(status, 0);
    assert!(took < Duration::from_millis(3600), "took {took:?}");
    assert_eq!(s.read("out"), "hi\n");
}

#[test]
fn leftover_output_is_read_for_at_most_kill_after() {
    let mut child = retry()
        .args(["--kill-after", "300ms", "--retry-on-output", "NOPE"])
        .sh("sleep 8 & echo hi")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let (status, took) = wait_exit(&mut child, Duration::from_secs(7));
    assert_eq!(status, 0);
    assert!(took < Duration::from_secs(2), "took {took:?}");
}

#[test]
fn a_signal_ends_the_run_while_the_held_output_waits_for_a_stalled_reader() {
    let s = Scratch::new();
    // A reader that never reads: the pipe fills and retry's delivery has to wait.
    let mut child = retry()
        .args(["--hold-stdout"])
        .sh("seq 2000000; echo done > \"$0\"")
        .arg(s.p("done"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    wait_for_file(&s.path("done"), Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "retry should be waiting for its reader"
    );
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let (status, took) = wait_exit(&mut child, Duration::from_secs(5));
    assert_eq!(status, 143);
    assert!(took < Duration::from_secs(1), "took {took:?}");
}

// ---- processes: kill -9, escapes from the group, zombies ----

#[test]
fn kill_9_of_retry_ends_the_attempt_and_frees_the_lock() {
    let s = Scratch::new();
    let lock = s.p("job.lock");
    let mut child = retry()
        .args(["--lock", &lock])
        .sh("echo $$ > \"$0\"; exec sleep 30")
        .arg(s.p("pid"))
        .stderr(Stdio::null())
        .spawn();
    let pid = wait_for_pid(&s.path("pid"), Duration::from_secs(5));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    if support::has_parent_death_signal("ending the attempt when retry is SIGKILLed") {
        let gone = wait_until(Duration::from_secs(2), || !alive(pid));
        assert!(gone, "the attempt outlived a SIGKILLed retry");
    } else {
        // What the README says of such a system: the command goes on, the lock is free.
        assert!(
            alive(pid),
            "the attempt ended without a parent-death signal"
        );
    }
    let r = retry()
        .args(["--lock", &lock, "--", "echo", "second"])
        .run();
    let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), "second\n");
}

#[test]
fn a_process_that_left_the_group_is_ended_with_its_failed_attempt() {
    let t = token();
    let mut cmd = retry();
    cmd.env("RETRY_TEST_TOKEN", &t)
        .args(["-a", "1", "-t", "1s", "--kill-after", "500ms"])
        .sh("setsid sleep 1051 & sleep 1052");
    let r = cmd.run();
    assert_eq!(r.status, 124, "{}", r.stderr);
    assert_none_left(&t);
}

#[test]
fn a_double_fork_that_escapes_is_ended_when_the_attempt_fails() {
    if !support::has_subreaper("ending a process orphaned by a double fork") {
        return;
    }
    let t = token();
    let mut cmd = retry();
    cmd.env("RETRY_TEST_TOKEN", &t)
        .fast()
        .args(["-a", "2"])
        .sh("(setsid sh -c 'sleep 1053' &) ; exit 3");
    let r = cmd.run();
    assert_eq!(r.status, 3, "{}", r.stderr);
    assert_none_left(&t);
}

#[test]
fn zombies_are_reaped_and_never_waited_on_as_pid_1() {
    let probe = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !privileged("unshare --pid --fork --mount-proc", probe) {
        return;
    }
    let mut child = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", support::bin()])
        .args(["-a", "2", "--delay", "0", "-j", "none"])
        .args(["--", "sh", "-c", "sleep 0.1 & exit 1"])
        .env_remove("RETRY_DEPTH")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (status, took) = wait_exit(&mut child, Duration::from_secs(20));
    assert_eq!(status, 1);
    assert!(took < Duration::from_secs(3), "took {took:?}");
}

#[test]
fn an_orphan_that_exits_mid_attempt_is_reaped_while_the_attempt_runs() {
    if !support::has_subreaper("reaping an orphan that retry adopted") {
        return;
    }
    let s = Scratch::new();
    // The subshell exits at once, so `sleep 0.2` is orphaned to retry (the subreaper).
    let mut child = retry()
        .args(["-a", "1"])
        .sh("(sleep 0.2 & echo $! > \"$0\"); sleep 3")
        .arg(s.p("orphan"))
        .stderr(Stdio::null())
        .spawn();
    let orphan = wait_for_pid(&s.path("orphan"), Duration::from_secs(5));
    let gone = wait_until(Duration::from_secs(2), || {
        !Path::new(&format!("/proc/{orphan}")).exists()
    });
    let still_running = child.try_wait().unwrap().is_none();
    let (status, _) = wait_exit(&mut child, Duration::from_secs(10));
    assert!(still_running, "the attempt ended before the check");
    assert!(
        gone,
        "the exited orphan {orphan} was left a zombie during the attempt"
    );
    assert_eq!(status, 0);
}

#[test]
fn a_stopped_attempt_ends_at_its_timeout_not_at_kill_after() {
    let mut cmd = retry();
    cmd.args(["-a", "1", "-t", "500ms", "--kill-after", "20s"])
        .sh("kill -STOP $$; sleep 30");
    let r = cmd.run();
    assert_eq!(r.status, 124, "{}", r.stderr);
    assert!(r.elapsed < Duration::from_secs(5), "took {:?}", r.elapsed);
}

// ---- secrets and files retry writes ----

#[test]
fn a_url_password_is_never_written_anywhere() {
    let s = Scratch::new();
    let server = Server::script(vec![Reply::status(503)]);
    let url = server.url("/x").replace("http://", "http://user:SECRETPW@");
    let report = s.p("r.json");
    let mut cmd = retry();
    cmd.env("GITHUB_ACTIONS", "true").args(fast(&[
        "-a",
        "2",
        "-vv",
        "--log-format",
        "json",
        "--report",
        &report,
        &url,
    ]));
    let r = cmd.run();
    assert_eq!(r.status, 22, "{}", r.stderr);
    r.assert_stderr_lacks("SECRETPW");
    let written = s.read("r.json");
    assert!(written.contains("***@127.0.0.1"), "{written}");
    assert!(!written.contains("SECRETPW"), "{written}");
    let mut text = retry();
    text.args(fast(&["-a", "2", "-vv", &url]));
    let r = text.run();
    r.assert_stderr_lacks("SECRETPW");
    let dry = retry().args(["--dry-run", &url]).run();
    dry.assert_stdout_lacks("SECRETPW");
    dry.assert_stdout_has("***@");
}

fn refuses_before_running(flag: &str, target: &Path, reason: &str) {
    let s = Scratch::new();
    let marker = s.p("ran");
    let target = target.to_string_lossy().into_owned();
    let mut cmd = retry();
    match flag {
        "-o" => cmd.args(["-o", &target, "http://127.0.0.1:9/"]),
        "--state" => cmd.args(["--once", "k", "--state", &target, "--", "touch", &marker]),
        _ => cmd.args([flag, &target, "--", "touch", &marker]),
    };
    let r = cmd.run();
    assert_eq!(r.status, 125, "{}", r.stderr);
    r.assert_stderr_has(flag);
    r.assert_stderr_has(reason);
    assert!(!PathBuf::from(&marker).exists(), "the command ran");
}

#[test]
fn unwritable_report_output_and_state_targets_are_refused_before_anything_runs() {
    refuses_before_running(
        "--report",
        Path::new("/nonexistent/r.json"),
        "No such file or directory",
    );
    let Some(ro) = Tmpfs::mount("ro,size=64k") else {
        return;
    };
    let reason = "Read-only file system";
    refuses_before_running("--report", &ro.path().join("r.json"), reason);
    refuses_before_running("-o", &ro.path().join("out"), reason);
    refuses_before_running("--state", &ro.path().join("state"), reason);
}

/// `sh -c` words that fill the device `file` is on (then succeed).
fn fill(file: &Path) -> Vec<String> {
    let script = "cat /dev/zero > \"$1\" 2>/dev/null; true";
    ["sh", "-c", script, "sh"]
        .map(String::from)
        .into_iter()
        .chain([file.display().to_string()])
        .collect()
}

/// The one line of a write refused for want of space: the flag whose file it is first,
/// the system's reason after.
#[track_caller]
fn assert_full_device_line(r: &support::Run, flag: &str) {
    let line = r
        .stderr
        .lines()
        .find(|l| l.contains("No space left on device"));
    let line = line.unwrap_or_else(|| panic!("no line gives the reason: {}", r.stderr));
    assert!(
        line.contains(&format!("{flag}: cannot write")),
        "{flag} named: {line}"
    );
}

#[test]
fn a_write_that_fails_for_want_of_space_names_the_flag_whose_file_it_is() {
    let Some(fs) = Tmpfs::mount("size=64k") else {
        return;
    };
    let s = Scratch::new();
    let (state, filler) = (fs.path().join("state"), fs.path().join("fill"));
    let state_arg = state.to_str().unwrap();

    // The fencing counter of a lock, written before the command would run.
    std::fs::create_dir(&state).unwrap();
    let full = support::Invocation::of("sh")
        .args(&fill(&filler)[1..])
        .run();
    assert_eq!(full.status, 0, "{}", full.stderr);
    let marker = s.p("ran");
    let lock = s.p("job.lock");
    let r = retry()
        .args([
            "--lock", &lock, "--state", state_arg, "--", "touch", &marker,
        ])
        .run();
    assert_eq!(r.status, 125, "{}", r.stderr);
    assert_full_device_line(&r, "--state");
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        !PathBuf::from(&marker).exists(),
        "the command ran without its fencing token"
    );
    std::fs::remove_file(&filler).unwrap();

    // A --once marker, after a command that filled the device.
    let r = retry()
        .args(["--once", "k", "--state", state_arg, "--"])
        .args(fill(&filler))
        .run();
    assert_eq!(r.status, 125, "{}", r.stderr);
    assert_full_device_line(&r, "--state");
    let markers: Vec<_> = std::fs::read_dir(&state)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(
        !markers.iter().any(|n| n.to_string_lossy().starts_with('k')),
        "{markers:?}"
    );
    std::fs::remove_file(&filler).unwrap();

    // The --report file, after a command that filled the device.
    let report = fs.path().join("r.json");
    let r = retry()
        .args(["--report", report.to_str().unwrap(), "--"])
        .args(fill(&filler))
        .run();
    assert_eq!(r.status, 125, "{}", r.stderr);
    assert_full_device_line(&r, "--report");
    assert!(!report.exists(), "a partial report was left");
}

/// The scheduler says the job's first start was recorded only once it was: on a full
/// device it says why it could not be, naming --state, and nothing runs.
#[test]
fn a_first_start_that_cannot_be_written_is_never_said_to_be_recorded() {
    let Some(fs) = Tmpfs::mount("size=64k") else {
        return;
    };
    let s = Scratch::new();
    let state = fs.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let full = support::Invocation::of("sh")
        .args(&fill(&fs.path().join("fill"))[1..])
        .run();
    assert_eq!(full.status, 0, "{}", full.stderr);
    let marker = s.p("ran");
    let r = retry()
        .args(["--schedule", "* * * * *", "--job", "j", "--state"])
        .arg(&state)
        .args(["--", "touch", &marker])
        .run();
    assert_eq!(r.status, 125, "{}", r.stderr);
    r.assert_stderr_has("cannot record the first start of job j");
    assert_full_device_line(&r, "--state");
    r.assert_stderr_lacks("recorded as");
    assert!(!PathBuf::from(&marker).exists(), "a slot ran");
}

#[test]
fn a_huge_attempt_limit_makes_a_short_dry_run() {
    let mut cmd = retry();
    cmd.args(["--dry-run", "-a", "4294967295", "--", "true"]);
    let r = cmd.run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(r.stdout_text().lines().count() < 80, "{}", r.stdout_text());
    assert!(r.elapsed < Duration::from_secs(2), "took {:?}", r.elapsed);
}

// ---- stress: random signals and readers that leave early ----

#[derive(Clone, Copy, Debug)]
enum Reader {
    All,
    LeavesAfter(usize),
}

/// One run of the stress test: what it did and the status the README allows.
fn stress_run(rng: &mut impl rand::Rng, n: usize) {
    use rand::RngExt;
    let t = token() + &n.to_string();
    let mode = ["", "--retry-on-output=NOPE", "--hold-stdout"][rng.random_range(0..3)];
    let term_after = rng
        .random_bool(0.5)
        .then(|| Duration::from_millis(rng.random_range(0..400)));
    let reader = if rng.random_bool(0.5) {
        Reader::LeavesAfter(rng.random_range(0..65536))
    } else {
        Reader::All
    };
    let mut cmd = retry();
    cmd.env("RETRY_TEST_TOKEN", &t)
        .args(["-a", "2", "--delay", "1ms", "--kill-after", "1s"])
        .args((!mode.is_empty()).then_some(mode))
        .sh("setsid sleep 37 & seq 1 100000; sleep 0.3; exit 1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn();
    let mut out = child.stdout.take().unwrap();
    let read = std::thread::spawn(move || {
        let mut buf = vec![0u8; 4096];
        let mut total = 0;
        loop {
            if matches!(reader, Reader::LeavesAfter(limit) if total >= limit) {
                return;
            }
            match out.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(k) => total += k,
            }
        }
    });
    if let Some(after) = term_after {
        std::thread::sleep(after);
        let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
    }
    let (status, _) = wait_exit(&mut child, Duration::from_secs(15));
    if !support::supervision().subreaper {
        // Said once, by the test: the `setsid sleep` orphaned when `sh` exits is init's,
        // and it holds the reader's pipe open.
        for pid in processes_with(&t) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
    read.join().unwrap();
    let allowed: &[i32] = match (term_after, reader) {
        (Some(_), Reader::All) => &[143],
        // The reader may leave first (the command's own 1, never retried) or the signal may come first.
        (Some(_), Reader::LeavesAfter(_)) => &[1, 143],
        (None, _) => &[1],
    };
    assert!(
        allowed.contains(&status),
        "run {n} ({mode:?}, TERM after {term_after:?}, reader {reader:?}) exited {status}, expected one of {allowed:?}"
    );
    assert_none_left(&t);
}

#[test]
fn stress_random_signals_and_early_readers_leave_no_orphans_and_no_hangs() {
    use rand::SeedableRng;
    let seed: u64 = std::env::var("RETRY_STRESS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!("stress seed {seed} (RETRY_STRESS_SEED={seed} repeats it)");
    // Without one, the statuses and the time to exit are still checked.
    support::has_subreaper("the check that no orphan is left");
    let threads: Vec<_> = (0..8)
        .map(|lane| {
            std::thread::spawn(move || {
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed + lane);
                for i in 0..25 {
                    stress_run(&mut rng, lane as usize * 100 + i);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a stress run failed");
    }
}

/// glibc's name service switch is never asked for a host or a user: the statically
/// linked build would crash loading a module such as `systemd` or `myhostname`. Under an
/// nsswitch.conf naming such modules (bind-mounted in a private mount namespace), a
/// `*.localhost` URL (RFC 6761) is fetched, and a PostgreSQL lock for a uid that /etc/passwd does not
/// know is refused with a clear error, not a crash.
#[test]
fn hosts_and_users_resolve_whatever_nsswitch_conf_names() {
    let probe = Command::new("unshare")
        .args(["--mount", "true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !privileged("unshare --mount", probe) {
        return;
    }
    let s = Scratch::new();
    std::fs::write(
        s.path("nsswitch.conf"),
        "passwd: files systemd\ngroup: files systemd\nshadow: files systemd\n\
         hosts: files myhostname mdns4_minimal [NOTFOUND=return] dns\n",
    )
    .unwrap();
    let server = Server::script(vec![Reply::ok("fetched")]).expect_hits(1);
    // Not in /etc/hosts: glibc would ask the next module (myhostname) for it.
    let url = format!("http://retry-test.localhost:{}/x", server.port());
    let conf = s.p("nsswitch.conf");
    let under_conf = |prefix: &[&str], args: &[&str]| {
        let mut inv = support::Invocation::of("unshare");
        inv.args([
            "--mount",
            "sh",
            "-c",
            "mount --bind \"$0\" /etc/nsswitch.conf && exec \"$@\"",
            &conf,
        ])
        .args(prefix)
        // The second run is another user's: the binary must be reachable by it.
        .arg(support::run::bin_for_anyone())
        .args(args);
        inv.run()
    };
    let r = under_conf(&[], &[url.as_str()]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), "fetched");
    let r = under_conf(
        &[
            "setpriv",
            "--reuid=54321",
            "--regid=54321",
            "--clear-groups",
        ],
        &["--lock", "postgres://localhost:1/db#nss", "--", "true"],
    );
    assert_eq!(r.status, 125, "{}", r.stderr);
    r.assert_stderr_has("no PGUSER");
}

// ---- state files: a killed writer, a panic ----

/// The temporary files in `dir` (what a killed writer leaves).
fn temporary_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

/// The first child of process `pid`, once it has one.
fn child_of(pid: u32) -> i32 {
    let path = format!("/proc/{pid}/task/{pid}/children");
    let mut found = None;
    let appeared = wait_until(Duration::from_secs(10), || {
        found = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| t.split_whitespace().next()?.parse().ok());
        found.is_some()
    });
    assert!(appeared, "process {pid} started nothing");
    found.unwrap()
}

#[test]
fn kill_9_while_a_fencing_counter_is_written_leaves_a_temporary_file_the_next_holder_removes() {
    let ok = Command::new("strace")
        .args(["-qq", "-o", "/dev/null", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !privileged("strace (ptrace)", ok) {
        return;
    }
    let s = Scratch::new();
    let (lock, state) = (s.p("job.lock"), s.p("state"));
    let fencing = s.path("state/fencing");
    // strace holds retry in fsync(2) of the counter's temporary file: kill -9 lands there.
    // On a loaded machine the run can be gone by the time the kill is sent (ESRCH): then
    // it finished cleanly, left nothing, and the kill is tried on a new run.
    let killed = (0..5).any(|_| {
        let mut strace = Command::new("strace")
            .args(["-qq", "-o", "/dev/null", "-e", "trace=fsync"])
            .args(["-e", "inject=fsync:delay_enter=10000000"])
            .arg(support::bin())
            .args(["--lock", &lock, "--state", &state, "--", "true"])
            .env("XDG_STATE_HOME", s.path("xdg"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run strace");
        let retry_pid = child_of(strace.id());
        let left = wait_until(Duration::from_secs(10), || {
            !temporary_files(&fencing).is_empty()
        });
        assert!(left, "no temporary file appeared in {}", fencing.display());
        let sent = kill(Pid::from_raw(retry_pid), Signal::SIGKILL);
        strace.wait().unwrap();
        match sent {
            Ok(()) => true,
            Err(nix::errno::Errno::ESRCH) => false,
            Err(e) => panic!("kill -9 {retry_pid}: {e}"),
        }
    });
    assert!(killed, "no run was still there to kill in five tries");
    assert!(
        !temporary_files(&fencing).is_empty(),
        "the kill left its temporary file"
    );
    let r = retry()
        .args(["--lock", &lock, "--state", &state, "--", "true"])
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(temporary_files(&fencing), Vec::<String>::new());
}

#[test]
fn a_dry_run_into_a_full_device_is_125_with_the_reason_never_an_abort() {
    let full = std::fs::File::create("/dev/full").expect("/dev/full");
    let r = retry().args(["--dry-run", "--", "true"]).stdout(full).run();
    assert_eq!(r.status, 125, "{}", r.stderr);
    r.assert_stderr_has("No space left on device");
}
