//! The Windows build under Wine: `.ci/windows` cross-builds `retry.exe` and names it in
//! `RETRY_WINDOWS_EXE` (with `WINEPREFIX` and a wineserver kept up); each test here runs
//! it through `wine` against Windows' own commands (`cmd /c`, `ping`) and the suite's
//! servers on 127.0.0.1. Without the variable every test says SKIPPED and why. Paths
//! given to the .exe are Linux paths under Wine's `Z:` drive.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::support::http_server::{Reply, Server};
use crate::support::postgres::{self, Options, Via};
use crate::support::{
    Invocation, Run, Scratch, current_test, say_skipped, wait_exit, wait_for_file, wait_for_run,
    wait_until,
};

/// `wine retry.exe`, ready for arguments; `None` (said SKIPPED) without a Windows build.
fn windows_retry() -> Option<Invocation> {
    let Ok(exe) = std::env::var("RETRY_WINDOWS_EXE") else {
        say_skipped(&format!(
            "{}: RETRY_WINDOWS_EXE is not set; .ci/windows builds retry.exe and runs these \
             tests under Wine",
            current_test()
        ));
        return None;
    };
    let mut wine = Invocation::of("wine");
    wine.arg(exe);
    // Wine's own diagnostics would mix with retry's stderr.
    wine.env("WINEDEBUG", "-all");
    Some(wine)
}

/// A Linux path as the .exe sees it: on Wine's `Z:` drive, which maps `/`.
fn win(path: &Path) -> String {
    format!("Z:{}", path.display()).replace('/', "\\")
}

/// The `ping -n COUNT` processes Wine runs: in Linux's process list a Windows process
/// shows its command line as given (`ping -n 31 127.0.0.1`), or with its path
/// (`C:\windows\system32\PING.EXE -n 31 …`); the `cmd /c` and retry around it are not
/// matched.
fn pings(count: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let (bare, path) = (
        format!("ping -n {count} "),
        format!("\\ping.exe -n {count} "),
    );
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let line = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let line = String::from_utf8_lossy(&line)
                .replace('\0', " ")
                .to_lowercase();
            line.starts_with(&bare) || line.contains(&path)
        })
        .collect()
}

/// Starts `retry ARGS -- cmd /c "ping -n COUNT 127.0.0.1"` (a count no other test pings
/// with, to find this tree's ping among Wine's processes) and waits for its ping: the
/// child, and whether the ping was seen.
fn start_ping_tree(retry: &mut Invocation, args: &[&str], count: u32) -> (Child, bool) {
    let child = retry
        .args(args)
        .args(["--", "cmd", "/c"])
        .arg(format!("ping -n {count} 127.0.0.1"))
        .start();
    let seen = wait_until(Duration::from_secs(20), || !pings(count).is_empty());
    (child, seen)
}

/// Whether every `ping -n COUNT` is gone within `limit`; any left are killed, so that a
/// failing test leaves nothing behind, and named.
fn pings_gone_within(count: u32, limit: Duration) -> Result<(), Vec<u32>> {
    if wait_until(limit, || pings(count).is_empty()) {
        return Ok(());
    }
    let left = pings(count);
    for pid in &left {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    Err(left)
}

/// A second retry that finds `lock` busy exits 75 (`--busy-exit`); a free one runs `exit 0`.
fn contend(lock: &str) -> Run {
    windows_retry()
        .expect("a Windows build")
        .args([
            "--lock",
            lock,
            "--busy-exit",
            "75",
            "--",
            "cmd",
            "/c",
            "exit 0",
        ])
        .run()
}

fn assert_status(r: &Run, status: i32, what: &str) {
    assert_eq!(r.status, status, "{what}\nstderr:\n{}", r.stderr);
}

#[test]
fn exit_codes_and_classification() {
    let Some(mut retry) = windows_retry() else {
        return;
    };
    let r = retry
        .args(["-a", "3", "--delay", "10ms", "--", "cmd", "/c"])
        .arg("if %RETRY_ATTEMPT% lss 3 (exit 75) else (echo ok on attempt %RETRY_ATTEMPT%)")
        .run();
    assert_status(&r, 0, "succeeds on the third attempt");
    assert_eq!(r.stdout_text().trim(), "ok on attempt 3");

    let r = windows_retry()
        .unwrap()
        .args(["-a", "3", "--delay", "10ms", "--", "cmd", "/c", "exit 75"])
        .run();
    assert_status(
        &r,
        75,
        "a transient failure, retried until the attempts run out",
    );
    r.assert_stderr_has("gave up after 3 attempts");

    let r = windows_retry()
        .unwrap()
        .args([
            "-a",
            "3",
            "--delay",
            "10ms",
            "--stop-on",
            "2",
            "--",
            "cmd",
            "/c",
            "exit 2",
        ])
        .run();
    assert_status(&r, 2, "--stop-on makes exit 2 permanent: one attempt");
    r.assert_stderr_lacks("attempt 2");

    let r = windows_retry()
        .unwrap()
        .args(["-a", "3", "--", "no-such-program-here"])
        .run();
    assert_status(
        &r,
        127,
        "a command that is not there is permanent, as in a shell",
    );
}

#[test]
fn backoff_and_max_time() {
    let Some(mut retry) = windows_retry() else {
        return;
    };
    let r = retry
        .args([
            "-a",
            "3",
            "--delay",
            "700ms",
            "--backoff",
            "constant",
            "-j",
            "none",
        ])
        .args(["--", "cmd", "/c", "exit 75"])
        .run();
    assert_status(&r, 75, "three attempts");
    assert!(
        r.elapsed >= Duration::from_millis(1400),
        "two sleeps of 700 ms, took {:?}",
        r.elapsed
    );

    let r = windows_retry()
        .unwrap()
        .args([
            "-a",
            "0",
            "--max-time",
            "3s",
            "--delay",
            "300ms",
            "-j",
            "none",
        ])
        .args(["--backoff", "constant", "--", "cmd", "/c", "exit 75"])
        .run();
    assert_status(
        &r,
        75,
        "the time limit ends the run with the last failure's status",
    );
    assert!(
        r.elapsed >= Duration::from_millis(1500) && r.elapsed < Duration::from_secs(15),
        "--max-time 3s, took {:?}",
        r.elapsed
    );
}

#[test]
fn timeout_ends_the_tree() {
    let Some(mut retry) = windows_retry() else {
        return;
    };
    let (child, seen) = start_ping_tree(&mut retry, &["-a", "1", "-t", "3s"], 31);
    let r = wait_for_run(child);
    assert!(seen, "ping never started\nstderr:\n{}", r.stderr);
    assert_status(&r, 124, "-t 3s ends the attempt: exit 124");
    assert!(
        r.elapsed < Duration::from_secs(15),
        "ended within a few seconds, took {:?}",
        r.elapsed
    );
    let gone = pings_gone_within(31, Duration::from_secs(3));
    assert_eq!(
        gone,
        Ok(()),
        "ping outlived retry: the Job Object did not end the tree"
    );
}

#[test]
fn ctrl_c_ends_the_run_and_its_tree() {
    let Some(mut retry) = windows_retry() else {
        return;
    };
    // Wine turns SIGINT into the console's Ctrl-C event, the way Windows delivers it.
    let (child, seen) = start_ping_tree(&mut retry, &["-a", "1"], 32);
    crate::support::signal(&child, nix::sys::signal::Signal::SIGINT);
    let r = wait_for_run(child);
    assert!(seen, "ping never started\nstderr:\n{}", r.stderr);
    assert_status(&r, 130, "Ctrl-C: exit 130, as shells report it");
    assert!(r.elapsed < Duration::from_secs(20), "took {:?}", r.elapsed);
    let gone = pings_gone_within(32, Duration::from_secs(3));
    assert_eq!(gone, Ok(()), "ping outlived retry after Ctrl-C");
}

#[test]
fn kill_9_of_retry_ends_its_tree_through_the_job() {
    let Some(mut retry) = windows_retry() else {
        return;
    };
    // As `taskkill /f`: retry gets no word, and only its Job Object's close
    // (KILL_ON_JOB_CLOSE, when Wine closes a dead process's handles) can end the tree.
    let (mut child, seen) = start_ping_tree(&mut retry, &["-a", "1"], 34);
    crate::support::signal(&child, nix::sys::signal::Signal::SIGKILL);
    let _ = child.wait();
    let gone = pings_gone_within(34, Duration::from_secs(5));
    assert!(seen, "ping never started");
    assert_eq!(
        gone,
        Ok(()),
        "ping outlived a killed retry: its Job Object stayed open"
    );
}

#[test]
fn ctrl_c_ends_the_run_while_its_held_output_waits_for_a_stalled_reader() {
    let Some(mut retry) = windows_retry() else {
        return;
    };
    let dir = Scratch::new();
    let done = win(&dir.path("done"));
    // About 300 KB held until the attempt ends, for a reader that never reads: the pipe
    // fills and retry's delivery has to wait, on its writer thread, not its own.
    let mut child = retry
        .args(["--hold-stdout", "--", "cmd", "/c"])
        .arg(format!(
            "(for /L %i in (1,1,5000) do @echo line %i of the output held for a reader) \
             & echo done>{done}"
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    wait_for_file(&dir.path("done"), Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        child.try_wait().unwrap().is_none(),
        "retry should be waiting for its reader"
    );
    crate::support::signal(&child, nix::sys::signal::Signal::SIGINT);
    let (status, took) = wait_exit(&mut child, Duration::from_secs(10));
    assert_eq!(status, 130, "Ctrl-C: exit 130");
    assert!(took < Duration::from_secs(3), "took {took:?}");
}

#[test]
fn stdin_is_replayed() {
    let Some(mut retry) = windows_retry() else {
        return;
    };
    // Windows' find prints the lines of its stdin that hold the word; two successes in a
    // row are asked for, so both attempts read it.
    let r = retry
        .args(["--consecutive", "2", "--delay", "10ms", "--stdin", "replay"])
        .args(["--", "find", "line"])
        .input("line one\nline two\n")
        .run();
    assert_status(&r, 0, "two attempts");
    let text = r.stdout_text().replace('\r', "");
    assert_eq!(
        text.matches("line one\nline two\n").count(),
        2,
        "each attempt read the same input: {text:?}"
    );
}

#[test]
fn output_is_replaced_atomically() {
    let Some(mut retry) = windows_retry() else {
        return;
    };
    let dir = Scratch::new();
    let out = dir.write("out.txt", b"old\n");
    let server = Server::script(vec![Reply::status(503)]);
    let r = retry
        .args([
            "-a",
            "2",
            "--delay",
            "10ms",
            "-o",
            &win(&out),
            &server.url("/"),
        ])
        .run();
    assert_ne!(r.status, 0, "every answer is 503\nstderr:\n{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "old\n",
        "kept on failure"
    );

    let server = Server::script(vec![Reply::status(503), Reply::ok("new\n")]);
    let r = windows_retry()
        .unwrap()
        .args([
            "-a",
            "3",
            "--delay",
            "10ms",
            "-o",
            &win(&out),
            &server.url("/"),
        ])
        .run();
    assert_status(&r, 0, "the second answer is 200");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "new\n");
    let left: Vec<_> = std::fs::read_dir(dir.dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, ["out.txt"], "no temporary file left beside it");
}

#[test]
fn http_and_https_against_local_servers() {
    let Some(mut retry) = windows_retry() else {
        return;
    };
    let server = Server::script(vec![
        Reply::status(503),
        Reply::status(503),
        Reply::ok("hello from 127.0.0.1\n"),
    ])
    .expect_hits(3);
    let r = retry
        .args(["-a", "5", "--delay", "10ms", &server.url("/x")])
        .run();
    assert_status(&r, 0, "503, 503, then 200");
    assert_eq!(r.stdout_text(), "hello from 127.0.0.1\n");

    // rustls with ring, the TLS the Windows build ships, over Windows' sockets.
    let tls = Server::tls_script(vec![Reply::status(502), Reply::ok("over TLS\n")]).expect_hits(2);
    let r = windows_retry()
        .unwrap()
        .args(["-k", "-a", "3", "--delay", "10ms", &tls.https_url("/")])
        .run();
    assert_status(&r, 0, "502, then 200 over TLS");
    assert_eq!(r.stdout_text(), "over TLS\n");

    let r = windows_retry()
        .unwrap()
        .args(["-a", "2", "--delay", "10ms", "--stop-on-status", "404"])
        .arg(
            Server::script(vec![Reply::status(404)])
                .expect_hits(1)
                .url("/"),
        )
        .run();
    assert_ne!(
        r.status, 0,
        "404 is permanent: one request\nstderr:\n{}",
        r.stderr
    );
}

#[test]
fn a_lock_held_by_another_retry_skips() {
    let Some(mut holder) = windows_retry() else {
        return;
    };
    let dir = Scratch::new();
    let lock = win(&dir.path("job.lock"));
    // The command runs only once the lock is held.
    let (holding, held) = start_ping_tree(&mut holder, &["--lock", &lock], 6);
    let busy = contend(&lock);
    let first = wait_for_run(holding);
    assert!(held, "the holder never ran\nstderr:\n{}", first.stderr);
    assert_status(&busy, 75, "the lock is busy: --busy-exit");
    assert_status(&first, 0, "the holder's command");
    assert_status(&contend(&lock), 0, "released with the holder's end");
}

/// A PostgreSQL lease taken over Windows' sockets: held while the command runs, busy for
/// a second retry, released at the end. Directly and through PgBouncer, as every
/// PostgreSQL test runs; the server starts only when there is a Windows build to run.
fn a_postgres_lease_is_held_for_the_run_and_released(via: Via) {
    let Some(mut holder) = windows_retry() else {
        return;
    };
    let options = Options {
        via,
        ..Options::default()
    };
    let Some(pg) = postgres::start_with("windows_postgres_lease", options) else {
        return;
    };
    let lock = pg.url("#windows");
    let holding = holder
        .args(["--lock", &lock, "--", "cmd", "/c", "ping -n 7 127.0.0.1"])
        .start();
    let held = wait_until(Duration::from_secs(30), || {
        pg.lease("lock:windows").is_some_and(|l| l.held)
    });
    let busy = contend(&lock);
    let first = wait_for_run(holding);
    assert!(held, "the lease was never taken\nstderr:\n{}", first.stderr);
    assert_status(&busy, 75, "the lease is held: --busy-exit");
    assert_status(&first, 0, "the holder's command");
    assert!(
        !pg.lease("lock:windows").is_some_and(|l| l.held),
        "released at the run's end"
    );
}

mod a_postgres_lease_is_held_for_the_run_and_released {
    use crate::support::postgres::Via;

    #[test]
    fn direct() {
        super::a_postgres_lease_is_held_for_the_run_and_released(Via::Direct);
    }

    #[test]
    fn pooled() {
        super::a_postgres_lease_is_held_for_the_run_and_released(Via::Pooler);
    }
}

#[test]
fn schedule_every_second_runs_its_slots() {
    let Some(mut retry) = windows_retry() else {
        return;
    };
    let dir = Scratch::new();
    let slots = win(&dir.path("slots"));
    let child = retry
        .args(["--schedule", "@every 1s", "--", "cmd", "/c"])
        .arg(format!("echo slot>>{slots}"))
        .start();
    let three = wait_until(Duration::from_secs(20), || dir.count("slots") >= 3);
    crate::support::signal(&child, nix::sys::signal::Signal::SIGINT);
    let r = wait_for_run(child);
    assert!(
        three,
        "3 slots of @every 1s within 20 s\nstderr:\n{}",
        r.stderr
    );
    assert_status(&r, 130, "Ctrl-C stops the scheduler");
}

#[test]
fn a_crontab_line_and_a_hook_run_with_cmd_as_written() {
    let Some(mut retry) = windows_retry() else {
        return;
    };
    let dir = Scratch::new();
    let (slots, hooks) = (win(&dir.path("slots")), win(&dir.path("hooks")));
    // Quotes inside the line reach cmd as written (a C program's quoting would give it
    // \"slot\"), and cmd expands %RETRY_ATTEMPT% in the hook.
    let crontab = dir.write(
        "jobs.crontab",
        format!("@every 1s -a 2 --delay 10ms -- echo \"slot\">>{slots} & exit 75\n").as_bytes(),
    );
    let child = retry
        .args(["--crontab", &win(&crontab), "--on-retry"])
        .arg(format!("echo hook %RETRY_ATTEMPT%>>{hooks}"))
        .start();
    let two = wait_until(Duration::from_secs(20), || dir.count("slots") >= 4);
    crate::support::signal(&child, nix::sys::signal::Signal::SIGINT);
    let r = wait_for_run(child);
    assert!(
        two,
        "two slots of two attempts within 20 s\nstderr:\n{}",
        r.stderr
    );
    let slots = std::fs::read_to_string(dir.path("slots")).unwrap();
    assert!(
        slots.lines().all(|l| l.trim_end() == "\"slot\""),
        "the line's quotes reached cmd as written: {slots:?}"
    );
    let hooks = std::fs::read_to_string(dir.path("hooks")).unwrap();
    assert!(
        hooks.lines().any(|l| l.trim_end() == "hook 1"),
        "the --on-retry hook ran with cmd: {hooks:?}\nstderr:\n{}",
        r.stderr
    );
}

#[test]
fn powershell_completion_loads() {
    if windows_retry().is_none() {
        return;
    }
    let pwsh = std::process::Command::new("pwsh")
        .args(["-NoProfile", "-NonInteractive", "-Command"])
        .arg(format!(
            ". '{}'; (TabExpansion2 -inputScript 'retry --max-d' -cursorColumn 13)\
             .CompletionMatches.CompletionText",
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("completions/_retry.ps1")
                .display()
        ))
        .output();
    let Ok(out) = pwsh else {
        say_skipped(&format!(
            "{}: no PowerShell here: Debian ships none, PyPI's and npm's pwsh packages fetch \
             it from GitHub at install, which is out of reach, and Wine runs no Windows \
             PowerShell",
            current_test()
        ));
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "pwsh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.lines().any(|l| l == "--max-delay"), "offered: {text}");
}
