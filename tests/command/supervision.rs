//! Command mode: process supervision.

use super::*;

/// Fails unless every grandchild listed in `DIR/kids` is gone within 100 ms of retry's
/// exit (they are ended before it exits; the kernel takes a moment to show it).
#[track_caller]
fn assert_kids_gone(s: &Scratch, outlived: &str) {
    let kids: Vec<i32> = s.read("kids").lines().map(|p| p.parse().unwrap()).collect();
    wait_until(Duration::from_millis(100), || {
        kids.iter().all(|pid| !alive(*pid))
    });
    for pid in kids {
        assert!(!alive(pid), "grandchild {pid} outlived {outlived}");
    }
}

#[test]
fn child_runs_in_its_own_process_group() {
    let (s, r) = run_job(
        "ps -o pgid= -p $$ | tr -d ' ' > \"$D/pgid\"; echo $$ > \"$D/pid\"",
        &[],
    );
    assert_eq!(r.status, 0);
    assert_eq!(s.read("pgid").trim(), s.read("pid").trim());
}

#[test]
fn timeout_kills_the_whole_group_with_escalation() {
    let (s, r) = run_job(
        "sleep 60 & echo $! >> \"$D/kids\"\ntrap '' TERM\necho run >> \"$D/count\"\nwhile :; do sleep 0.05; done",
        &["-a", "2", "-t", "300ms", "--kill-after", "300ms"],
    );
    // SIGKILL was needed: 137, as timeout(1) exits.
    assert_eq!(r.status, 137, "{}", r.stderr);
    assert_eq!(s.count("count"), 2);
    assert!(
        r.elapsed >= Duration::from_millis(1200),
        "SIGKILL came after --kill-after: {:?}",
        r.elapsed
    );
    assert!(r.elapsed < Duration::from_secs(8), "{:?}", r.elapsed);
    assert_kids_gone(&s, "its attempt");
}

#[test]
fn leftovers_of_a_failed_attempt_are_ended() {
    let (s, r) = run_job("sleep 60 & echo $! >> \"$D/kids\"; exit 1", &["-a", "2"]);
    assert_eq!(r.status, 1);
    assert_kids_gone(&s, "its failed attempt");
}

fn signal_is_forwarded(sig: nix::sys::signal::Signal) {
    let s = Scratch::new();
    let job = s.job(
        "sleep 60 & echo $! >> \"$D/kids\"\necho run >> \"$D/count\"\necho $$ > \"$D/ready\"\nwait",
    );
    let mut child = retry()
        .args(fast(&["-a", "5", &job]))
        .stderr(Stdio::piped())
        .spawn();
    wait_for_file(&s.path("ready"), Duration::from_secs(5));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap();
    let start = Instant::now();
    let status = child.wait().unwrap();
    assert_eq!(support::status_of(&status), 128 + sig as i32, "{sig:?}");
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(s.count("count"), 1, "no further attempt after {sig:?}");
    assert_kids_gone(&s, &format!("{sig:?}"));
}

#[test]
fn sigint_is_forwarded() {
    signal_is_forwarded(nix::sys::signal::Signal::SIGINT);
}

#[test]
fn sigterm_is_forwarded() {
    signal_is_forwarded(nix::sys::signal::Signal::SIGTERM);
}

#[test]
fn sighup_is_forwarded() {
    signal_is_forwarded(nix::sys::signal::Signal::SIGHUP);
}

#[test]
fn sigquit_is_forwarded() {
    signal_is_forwarded(nix::sys::signal::Signal::SIGQUIT);
}

#[test]
fn signal_during_backoff_exits_at_once() {
    let s = Scratch::new();
    let job = s.job("echo run >> \"$D/count\"; exit 1");
    let mut child = retry()
        .args(["--delay", "20s", "--jitter", "none", &job])
        .stderr(std::fs::File::create(s.path("err")).unwrap())
        .spawn();
    // The attempt has failed, and the 20 s backoff begun.
    let waiting = wait_until(Duration::from_secs(5), || {
        s.read("err").contains("next attempt in 20s")
    });
    assert!(waiting, "{}", s.read("err"));
    let start = Instant::now();
    support::signal(&child, nix::sys::signal::Signal::SIGTERM);
    let status = child.wait().unwrap();
    assert_eq!(support::status_of(&status), 143);
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(s.count("count"), 1);
}

#[test]
fn interactive_command_reads_the_terminal() {
    // `script` gives retry a real pseudo-terminal as its controlling terminal.
    let s = Scratch::new();
    let job = s.job("echo x > \"$D/ready\"; read answer; echo \"got:$answer\" > \"$D/answer\"");
    let inner = format!("{} -- {}", support::bin(), job);
    let mut child = std::process::Command::new("script")
        .args(["-qec", &inner, "/dev/null"])
        .env_remove("RETRY_DEPTH")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("script(1) from util-linux");
    // Typed once the command reads the terminal.
    wait_for_file(&s.path("ready"), Duration::from_secs(5));
    child.stdin.as_mut().unwrap().write_all(b"yes\n").unwrap();
    wait_until(Duration::from_secs(5), || !s.read("answer").is_empty());
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(s.read("answer"), "got:yes\n");
}

#[test]
fn ctrl_c_at_the_terminal_stops_an_interactive_run() {
    let s = Scratch::new();
    let job = s.job("echo run >> \"$D/count\"; echo ready > \"$D/ready\"; sleep 30");
    let inner = format!(
        "{} -- {}; echo \"status:$?\" > {}",
        support::bin(),
        job,
        s.p("status")
    );
    let mut child = support::Invocation::of("script")
        .args(["-qec", &inner, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn();
    wait_for_file(&s.path("ready"), Duration::from_secs(5));
    // script(1) can drop a keystroke that comes while it is still starting up
    // (seen on a loaded machine, the job already in the foreground): press Ctrl-C
    // again, as a person would, until the run ends.
    let end = Instant::now() + Duration::from_secs(10);
    while !s.path("status").exists() && Instant::now() < end {
        child.stdin.as_mut().unwrap().write_all(b"\x03").unwrap();
        std::thread::sleep(Duration::from_millis(500));
    }
    let text = wait_for_file(&s.path("status"), Duration::from_secs(5));
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(text.trim(), "status:130");
    assert_eq!(s.count("count"), 1);
}
