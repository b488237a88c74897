//! How a process starts, for attempts and hooks alike: with the signal dispositions
//! and the signal mask `retry` inherited (set by `nohup`, a shell's `trap ''`, or
//! sigprocmask in the program that started `retry`), each read by the process itself
//! from /proc/self/status; and, when it cannot start, with the terminal handed back
//! to `retry` at once (a pseudo-terminal that `retry` controls, Ctrl-C typed on it).

use std::io::Write;
use std::time::Duration;

use nix::sys::signal::Signal::{SIGHUP, SIGINT, SIGUSR1, SIGUSR2, SIGWINCH};
use nix::unistd::tcgetpgrp;

use crate::support::{self, Invocation, Scratch, Terminal, alive, bin, terminal};
use crate::support::{wait_exit, wait_for_file};

/// The signals ignored and blocked (`SigIgn:`, `SigBlk:`) in a /proc/PID/status text,
/// among signals 1 to 31: 32 and 33 are the C library's own (glibc's posix_spawn,
/// which starts the launchers here, leaves them ignored in its child).
fn masks(status: &str) -> (u64, u64) {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
            .unwrap_or_else(|| panic!("no {name} in {status}"))
    };
    let standard = (1 << 31) - 1;
    (field("SigIgn:") & standard, field("SigBlk:") & standard)
}

/// The mask bit of each signal in `sigs`.
fn bits(sigs: &[nix::sys::signal::Signal]) -> u64 {
    sigs.iter().fold(0, |m, s| m | 1 << (*s as u64 - 1))
}

const STATUS_HOOK: &str = "grep -E '^Sig(Ign|Blk):' /proc/self/status >&2";

#[test]
fn signals_ignored_under_nohup_and_trap_stay_ignored_in_the_command_and_hooks() {
    // retry catches SIGHUP and SIGINT, and ignores SIGPIPE, for itself: none of that
    // reaches the command or the hook.
    let out = Invocation::of("sh")
        .args([
            "-c",
            "trap '' USR1 INT; exec nohup \"$0\" --on-success \"$1\" -- cat /proc/self/status",
            bin(),
            STATUS_HOOK,
        ])
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    let ignored = bits(&[SIGHUP, SIGINT, SIGUSR1]);
    let expected = (ignored, 0);
    assert_eq!(masks(&out.stdout_text()), expected, "the command");
    assert_eq!(masks(&out.stderr), expected, "the hook: {}", out.stderr);
}

#[test]
fn the_command_gets_the_signal_mask_retry_inherited() {
    // Python starts retry with SIGUSR2 and SIGWINCH blocked (and SIGPIPE at its default,
    // which Python itself ignores). A hook starts the same way, but its sh (dash) clears
    // its own mask at start: only the hook's ignored signals can be seen, in the test above.
    let launcher = "import os, signal, sys\n\
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)\n\
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)\n\
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2, signal.SIGWINCH})\n\
        os.execv(sys.argv[1], sys.argv[1:])";
    let out = Invocation::of("python3")
        .args(["-c", launcher, bin(), "--", "cat", "/proc/self/status"])
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    let blocked = bits(&[SIGUSR2, SIGWINCH]);
    assert_eq!(masks(&out.stdout_text()), (0, blocked));
}

#[test]
fn a_run_under_nohup_outlives_a_hangup() {
    // retry inherited SIGHUP ignored: a hangup neither stops it nor reaches the command.
    let s = Scratch::new();
    let job = s.job("echo x > \"$D/ready\"; sleep 1; echo x > \"$D/done\"");
    let mut child = Invocation::of("nohup").args([bin(), "--", &job]).start();
    wait_for_file(&s.path("ready"), Duration::from_secs(5));
    support::signal(&child, SIGHUP);
    let (status, _) = wait_exit(&mut child, Duration::from_secs(10));
    assert_eq!(status, 0);
    assert!(s.path("done").exists(), "the command ran to its end");
}

/// retry started with SIGINT ignored (as `cmd &` in a script starts it) gets SIGINT,
/// and so does the hook's group, while `flag`'s hook runs: the hook runs to its end and
/// the run ends as it would have (`status`), not with 130.
fn sigint_ignored_during_a_hook(flag: &str, command: &str, status: i32) {
    let s = Scratch::new();
    let hook = format!(
        "echo $$ > '{}'; sleep 0.5; touch '{}'",
        s.p("hook"),
        s.p("done")
    );
    let mut child = Invocation::of("sh")
        .args([
            "-c",
            "trap '' INT; exec \"$0\" -a 2 --delay 1ms \"$1\" \"$2\" -- sh -c \"$3\"",
            bin(),
            flag,
            &hook,
            command,
        ])
        .start();
    let hook_pid: i32 = wait_for_file(&s.path("hook"), Duration::from_secs(5))
        .trim()
        .parse()
        .unwrap();
    support::signal(&child, SIGINT);
    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(hook_pid), SIGINT);
    let (exit, _) = wait_exit(&mut child, Duration::from_secs(10));
    let out = support::wait_for_run(child);
    assert_eq!(exit, status, "{flag}: {}", out.stderr);
    assert!(s.path("done").exists(), "{flag}: the hook was cut short");
    assert!(!out.stderr.contains("SIGINT"), "{flag}: {}", out.stderr);
}

#[test]
fn a_sigint_retry_was_started_ignoring_stops_no_hook() {
    sigint_ignored_during_a_hook("--on-retry", "exit 1", 1);
    sigint_ignored_during_a_hook("--on-give-up", "exit 1", 1);
    sigint_ignored_during_a_hook("--on-success", "exit 0", 0);
}

#[test]
fn a_command_that_cannot_start_gives_the_terminal_back_at_once() {
    // retry on a pseudo-terminal of its own (setsid -c makes it the controlling
    // terminal), in the foreground: the attempt takes the terminal and fails to exec.
    let Terminal { mut master, slave } = terminal();
    let s = Scratch::new();
    let hook = format!("echo $$ > {}; sleep 30", s.p("hook"));
    let mut child = Invocation::of("setsid")
        .args(["-c", bin(), "--on-give-up", &hook, "--"])
        .arg("retry-test-no-such-command")
        .stdin(slave.try_clone().unwrap())
        .stdout(slave.try_clone().unwrap())
        .stderr(slave)
        .spawn();
    let hook_pid: i32 = wait_for_file(&s.path("hook"), Duration::from_secs(5))
        .trim()
        .parse()
        .unwrap();
    let foreground = tcgetpgrp(&master).map(|pgid| pgid.as_raw());
    // Ctrl-C: the terminal sends SIGINT to its foreground group, which must be retry's.
    master.write_all(b"\x03").unwrap();
    let (status, took) = wait_exit(&mut child, Duration::from_secs(10));
    assert_eq!(
        foreground,
        Ok(child.id() as i32),
        "the terminal's foreground"
    );
    assert_eq!(status, 130);
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert!(
        support::wait_until(Duration::from_secs(2), || !alive(hook_pid)),
        "the hook {hook_pid} outlived the Ctrl-C"
    );
}

/// `--signal INT` reaches a command started under an inherited SIGINT ignore (a `retry
/// … &` in a script): the attempt gets SIGINT's default back, as GNU timeout's child
/// does, so its own trap runs within a second of the timeout (not at --kill-after's
/// SIGKILL); SIGHUP, ignored too, stays ignored.
#[test]
fn the_timeout_signal_reaches_the_command_s_trap_through_an_inherited_ignore() {
    let s = Scratch::new();
    let job = s.job(
        "trap 'echo trapped > \"$D/trapped\"; exit 3' INT\n\
         grep -E '^Sig(Ign|Blk):' /proc/self/status > \"$D/status\"\n\
         echo go > \"$D/go\"\n\
         while :; do sleep 0.05; done",
    );
    let mut child = Invocation::of("sh")
        .args([
            "-c",
            "trap '' INT HUP; exec \"$0\" -a 1 -t 1s --signal INT --kill-after 5s -- \"$1\"",
            bin(),
            &job,
        ])
        .start();
    wait_for_file(&s.path("go"), Duration::from_secs(5));
    let went = std::time::Instant::now();
    wait_for_file(&s.path("trapped"), Duration::from_secs(8));
    let trapped = went.elapsed();
    let (status, _) = wait_exit(&mut child, Duration::from_secs(10));
    let out = support::wait_for_run(child);
    assert!(
        trapped < Duration::from_secs(2),
        "the trap ran {trapped:?} after the attempt began, 1s limit: {}",
        out.stderr
    );
    assert_eq!(status, 124, "{}", out.stderr);
    let (ignored, _) = masks(&s.read("status"));
    assert_eq!(ignored, bits(&[SIGHUP]), "only SIGHUP stays ignored");
}
