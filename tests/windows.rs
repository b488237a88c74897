//! The Windows build under Wine: `.ci/windows` cross-builds `retry.exe` and names it in
//! `RETRY_WINDOWS_EXE` (with `WINEPREFIX` and a wineserver kept up); each test here runs
//! it through `wine` against Windows' own commands (`cmd /c`, `ping`, `find`) and the
//! suite's servers on 127.0.0.1. Without the variable every test says SKIPPED and why. Paths
//! given to the .exe are Linux paths under Wine's `Z:` drive, each under the test's own
//! temporary directory, and the .exe runs in one of the tests' own directories: a
//! test writes nothing into the checkout (a `Z:\tmp\…` path once reached a shell that
//! took its backslashes as escapes and wrote a relative `Z:tmp…` file there).

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::each_store;
use crate::support::http_server::{Reply, Server};
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
    // Never the checkout: a path the .exe or a shell takes as relative lands here.
    wine.current_dir(wine_dir());
    Some(wine)
}

/// Whether there is a Windows build to run; says SKIPPED when there is none.
fn windows_build() -> bool {
    windows_retry().is_some()
}

/// `wine retry.exe -a ATTEMPTS --delay 10ms`: retries that come at once.
fn attempts(attempts: u32) -> Invocation {
    let mut retry = windows_retry().expect("a Windows build");
    retry.args(["-a", &attempts.to_string(), "--delay", "10ms"]);
    retry
}

/// `-- cmd /c LINE`: the command is a line of Windows' shell.
fn cmd(line: impl Into<String>) -> [String; 4] {
    ["--".into(), "cmd".into(), "/c".into(), line.into()]
}

/// The directory the .exe runs in: one of the tests' own, made once per test process.
fn wine_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        tempfile::Builder::new()
            .prefix("retry-windows-cwd-")
            .tempdir()
            .expect("a temporary directory")
    })
    .path()
}

/// A Linux path as the .exe sees it: on Wine's `Z:` drive, which maps `/`.
fn win(path: &Path) -> String {
    format!("Z:{}", path.display()).replace('/', "\\")
}

/// The .exe as a `cmd /c` line names it (a path on Wine's `Z:` drive).
fn exe_in_cmd() -> String {
    let exe = std::env::var("RETRY_WINDOWS_EXE").expect("a Windows build");
    win(Path::new(&exe))
}

/// The sleepers of [`start_tree`] marked `N` that Wine runs: in Linux's process list a
/// Windows process shows its command line as `cmd` gave it (`Z:\…\retry.exe
/// --allow-nested --job sleeper31 …`); the `cmd /c` and the retry around it, whose lines
/// hold the mark too, start otherwise and are not matched.
fn sleepers(n: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let start = format!("{} --allow-nested --job sleeper{n} ", exe_in_cmd()).to_lowercase();
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let line = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let line = String::from_utf8_lossy(&line)
                .replace('\0', " ")
                .to_lowercase();
            line.starts_with(&start)
        })
        .collect()
}

/// Starts `retry ARGS -- cmd /c "RETRY --allow-nested --job sleeperN --schedule '@every
/// 1h' -- cmd /c exit 0"` (an N no other test uses, to find this tree's sleeper among
/// Wine's processes): a second retry.exe that waits for the next hour and starts nothing
/// meanwhile. Waits for it: the child, and whether the sleeper was seen.
///
/// Not `ping -n 30 127.0.0.1`, as the tree's sleeper once was: a ping ended while its
/// ICMP echo is outstanding can deadlock Wine 8's nsiproxy.sys (winedbg shows the device
/// loop in IoCancelIrp -> icmp_echo_cancel waiting on nsiproxy's lock while its listener,
/// in IoCompleteRequest, waits on ntoskrnl's), and with it winedevice.exe, whose
/// mountmgr.sys every later file query of the prefix then waits on forever. Nor a
/// `find` reading an open pipe: beside another test it ended at once (exit 1).
fn start_tree(retry: &mut Invocation, args: &[&str], n: u32) -> (Child, bool) {
    let child = retry
        .args(args)
        .args(cmd(format!(
            "{} --allow-nested --job sleeper{n} --schedule \"@every 1h\" -- cmd /c exit 0",
            exe_in_cmd()
        )))
        .start();
    let seen = wait_until(Duration::from_secs(20), || !sleepers(n).is_empty());
    (child, seen)
}

/// A lock holder: `retry ARGS -- cmd /c LINE` whose line says it has started (the
/// file `started` in `dir`), then waits, a second at a time, until the test writes
/// `release` (five minutes at most), and exits 0 (its last ping's status); the child,
/// and whether it started.
///
/// A holder of a fixed few seconds would let go before a contender arrives whenever
/// Wine is slow to start one (on a loaded machine that has taken over ten seconds). Its
/// pings end by themselves: none is ever ended by a kill (see [`start_tree`]).
fn start_holder(retry: &mut Invocation, args: &[&str], dir: &Scratch) -> (Child, bool) {
    let (started, release) = (win(&dir.path("started")), win(&dir.path("release")));
    // No parentheses around the loop: Wine's cmd does not parse `(for ...) & exit 0`.
    let line = format!(
        "echo held>{started} & for /l %i in (1,1,300) do @if not exist {release} ping -n 2 \
         127.0.0.1 >nul"
    );
    let child = retry.args(args).args(cmd(line)).start();
    let seen = wait_until(Duration::from_secs(30), || dir.path("started").exists());
    (child, seen)
}

/// Lets [`start_holder`]'s holder go: it exits 0 within about a second.
fn release_holder(dir: &Scratch) {
    dir.write("release", b"");
}

/// Whether every sleeper marked `N` is gone within `limit`; any left are killed, so that
/// a failing test leaves nothing behind, and named.
fn sleepers_gone_within(n: u32, limit: Duration) -> Result<(), Vec<u32>> {
    if wait_until(limit, || sleepers(n).is_empty()) {
        return Ok(());
    }
    let left = sleepers(n);
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
        .args(["--lock", lock, "--busy-exit", "75"])
        .args(cmd("exit 0"))
        .run()
}

fn assert_status(r: &Run, status: i32, what: &str) {
    assert_eq!(r.status, status, "{what}\nstderr:\n{}", r.stderr);
}

#[test]
fn exit_codes_and_classification() {
    if !windows_build() {
        return;
    }
    let r = attempts(3)
        .args(cmd(
            "if %RETRY_ATTEMPT% lss 3 (exit 75) else (echo ok on attempt %RETRY_ATTEMPT%)",
        ))
        .run();
    assert_status(&r, 0, "succeeds on the third attempt");
    assert_eq!(r.stdout_text().trim(), "ok on attempt 3");

    let r = attempts(3).args(cmd("exit 75")).run();
    assert_status(
        &r,
        75,
        "a transient failure, retried until the attempts run out",
    );
    r.assert_stderr_has("gave up after 3 attempts");

    let r = attempts(3)
        .args(["--stop-on", "2"])
        .args(cmd("exit 2"))
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
        .args(cmd("exit 75"))
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
        .args(["--backoff", "constant"])
        .args(cmd("exit 75"))
        .run();
    // The limit ends the run between attempts (a sleep that would end past it is not
    // started: the last failure's 75), or it cuts the attempt in flight (124, as
    // docs/exit-status.md says). Under Wine a `cmd /c` takes 100 ms to seconds, so the
    // last attempt may well start with a few milliseconds left: either ending is right,
    // each with its own line.
    let ended: &[&str] = match r.status {
        124 => &["ran out during the last attempt"],
        _ => &[
            "less than the next 300ms sleep",
            "ran out while waiting to retry",
        ],
    };
    assert!(
        [75, 124].contains(&r.status) && ended.iter().any(|line| r.stderr.contains(line)),
        "the time limit ends the run with the last failure's status, or 124 if it cut \
         the last attempt: exit {}\nstderr:\n{}",
        r.status,
        r.stderr
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
    let (child, seen) = start_tree(&mut retry, &["-a", "1", "-t", "3s"], 31);
    let r = wait_for_run(child);
    assert!(seen, "the sleeper never started\nstderr:\n{}", r.stderr);
    assert_status(&r, 124, "-t 3s ends the attempt: exit 124");
    assert!(
        r.elapsed < Duration::from_secs(15),
        "ended within a few seconds, took {:?}",
        r.elapsed
    );
    let gone = sleepers_gone_within(31, Duration::from_secs(3));
    assert_eq!(
        gone,
        Ok(()),
        "the sleeper outlived retry: the Job Object did not end the tree"
    );
}

#[test]
fn ctrl_c_ends_the_run_and_its_tree() {
    let Some(mut retry) = windows_retry() else {
        return;
    };
    // Wine turns SIGINT into the console's Ctrl-C event, the way Windows delivers it.
    let (child, seen) = start_tree(&mut retry, &["-a", "1"], 32);
    crate::support::signal(&child, nix::sys::signal::Signal::SIGINT);
    let r = wait_for_run(child);
    assert!(seen, "the sleeper never started\nstderr:\n{}", r.stderr);
    assert_status(&r, 130, "Ctrl-C: exit 130, as shells report it");
    assert!(r.elapsed < Duration::from_secs(20), "took {:?}", r.elapsed);
    let gone = sleepers_gone_within(32, Duration::from_secs(3));
    assert_eq!(gone, Ok(()), "the sleeper outlived retry after Ctrl-C");
}

#[test]
fn kill_9_of_retry_ends_its_tree_through_the_job() {
    let Some(mut retry) = windows_retry() else {
        return;
    };
    // As `taskkill /f`: retry gets no word, and only its Job Object's close
    // (KILL_ON_JOB_CLOSE, when Wine closes a dead process's handles) can end the tree.
    let (mut child, seen) = start_tree(&mut retry, &["-a", "1"], 34);
    crate::support::signal(&child, nix::sys::signal::Signal::SIGKILL);
    let _ = child.wait();
    let gone = sleepers_gone_within(34, Duration::from_secs(5));
    assert!(seen, "the sleeper never started");
    assert_eq!(
        gone,
        Ok(()),
        "the sleeper outlived a killed retry: its Job Object stayed open"
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
        .arg("--hold-stdout")
        .args(cmd(format!(
            "(for /L %i in (1,1,5000) do @echo line %i of the output held for a reader) \
             & echo done>{done}"
        )))
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
    if !windows_build() {
        return;
    }
    let dir = Scratch::new();
    let out = dir.write("out.txt", b"old\n");
    let server = Server::script(vec![Reply::status(503)]);
    let r = attempts(2).args(["-o", &win(&out), &server.url("/")]).run();
    assert_ne!(r.status, 0, "every answer is 503\nstderr:\n{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "old\n",
        "kept on failure"
    );

    let server = Server::script(vec![Reply::status(503), Reply::ok("new\n")]);
    let r = attempts(3).args(["-o", &win(&out), &server.url("/")]).run();
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
    if !windows_build() {
        return;
    }
    let server = Server::script(vec![
        Reply::status(503),
        Reply::status(503),
        Reply::ok("hello from 127.0.0.1\n"),
    ])
    .expect_hits(3);
    let r = attempts(5).arg(server.url("/x")).run();
    assert_status(&r, 0, "503, 503, then 200");
    assert_eq!(r.stdout_text(), "hello from 127.0.0.1\n");

    // rustls with ring, the TLS the Windows build ships, over Windows' sockets.
    let tls = Server::tls_script(vec![Reply::status(502), Reply::ok("over TLS\n")]).expect_hits(2);
    let r = attempts(3).args(["-k", &tls.https_url("/")]).run();
    assert_status(&r, 0, "502, then 200 over TLS");
    assert_eq!(r.stdout_text(), "over TLS\n");

    let r = attempts(2)
        .args(["--stop-on-status", "404"])
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

each_store! {
    /// A lock held by one retry.exe: busy for a second, released at the holder's end; a
    /// PostgreSQL lease, taken over Windows' sockets, is held while the command runs.
    /// No server starts without a Windows build to run.
    fn a_lock_held_by_another_retry_skips(store) if windows_build {
        let dir = Scratch::new();
        // A lock file as the .exe names it, on Wine's `Z:` drive.
        let lock = match store.directory() {
            Some(files) => win(&files.path("windows.lock")),
            None => store.lock("windows"),
        };
        let held = || {
            let pg = store.postgres_server()?;
            Some(pg.lease("lock:windows").is_some_and(|l| l.held))
        };
        // The command runs only once the lock is held, and until the contender is done.
        let mut holder = windows_retry().expect("a Windows build");
        let (holding, ran) = start_holder(&mut holder, &["--lock", &lock], &dir);
        let leased = held();
        let busy = contend(&lock);
        release_holder(&dir);
        let first = wait_for_run(holding);
        assert!(ran, "the holder never ran\nstderr:\n{}", first.stderr);
        assert_ne!(leased, Some(false), "the lease was never taken\nstderr:\n{}", first.stderr);
        assert_status(&busy, 75, "the lock is busy: --busy-exit");
        assert_status(&first, 0, "the holder's command");
        assert_ne!(held(), Some(true), "released at the run's end");
        assert_status(&contend(&lock), 0, "released with the holder's end");
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
        .args(["--schedule", "@every 1s"])
        .args(cmd(format!("echo slot>>{slots}")))
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
