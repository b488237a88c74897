//! Command mode, end to end: the real binary against counting `sh` scripts.

#[path = "support/cmd.rs"]
mod cmd;

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use cmd::{Scratch, alive, retry, run, run_cmd, wait_for_file};

const FAST: [&str; 4] = ["--delay", "1ms", "--max-delay", "5ms"];

fn args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut v: Vec<&str> = FAST.to_vec();
    v.extend_from_slice(extra);
    v
}

/// A script that counts its runs and exits with the status listed for that run
/// (the last one repeats).
fn exits(s: &Scratch, statuses: &[i32]) -> String {
    let list: Vec<String> = statuses.iter().map(|c| c.to_string()).collect();
    s.script(
        "job",
        &format!(
            "echo run >> \"$D/count\"\nn=$(wc -l < \"$D/count\")\nset -- {}\nlast=0\ni=0\nfor c in \"$@\"; do i=$((i+1)); last=$c; [ $i -eq $n ] && exit $c; done\nexit $last",
            list.join(" ")
        ),
    )
}

// ---- exit statuses ----

#[test]
fn success_after_transient_failures() {
    let s = Scratch::new();
    let job = exits(&s, &[1, 1, 0]);
    let r = run(&args(&["--", &job]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(s.count("count"), 3);
    assert!(r.stderr.contains("attempt 3/5 succeeded"), "{}", r.stderr);
}

#[test]
fn gives_up_with_the_last_status() {
    let s = Scratch::new();
    let job = exits(&s, &[3, 4, 9]);
    let r = run(&args(&["-a", "3", &job]));
    assert_eq!(r.status, 9);
    assert_eq!(s.count("count"), 3);
    assert!(
        r.stderr.contains("gave up after 3 attempts"),
        "{}",
        r.stderr
    );
}

#[test]
fn death_by_signal_is_128_plus_n_and_retried() {
    let s = Scratch::new();
    let job = s.script("job", "echo run >> \"$D/count\"; kill -KILL $$");
    let r = run(&args(&["-a", "2", &job]));
    assert_eq!(r.status, 137, "{}", r.stderr);
    assert_eq!(s.count("count"), 2);
    assert!(r.stderr.contains("SIGKILL"), "{}", r.stderr);
}

#[test]
fn timeout_is_124_and_transient() {
    let s = Scratch::new();
    let job = s.script("job", "echo run >> \"$D/count\"; exec sleep 10");
    let r = run(&args(&["-a", "2", "-t", "200ms", &job]));
    assert_eq!(r.status, 124, "{}", r.stderr);
    assert_eq!(s.count("count"), 2);
    assert!(r.elapsed < Duration::from_secs(5), "{:?}", r.elapsed);
}

#[test]
fn not_found_is_127_and_not_retried() {
    let r = run(&args(&["/definitely/not/here"]));
    assert_eq!(r.status, 127);
    assert_eq!(
        r.stderr.matches("attempt 1/5 failed").count(),
        1,
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("attempt 2/"), "{}", r.stderr);
}

#[test]
fn not_executable_is_126_and_not_retried() {
    let s = Scratch::new();
    let path = s.write("plain", b"echo hi\n");
    let r = run(&args(&[path.to_str().unwrap()]));
    assert_eq!(r.status, 126, "{}", r.stderr);
    assert!(!r.stderr.contains("attempt 2/"), "{}", r.stderr);
}

#[test]
fn exit_127_from_the_command_is_permanent() {
    let s = Scratch::new();
    let job = exits(&s, &[127]);
    let r = run(&args(&[&job]));
    assert_eq!((r.status, s.count("count")), (127, 1));
}

#[test]
fn usage_errors_are_125_and_name_the_flag() {
    let s = Scratch::new();
    let job = s.script("job", "echo run >> \"$D/count\"");
    for (bad, flag) in [
        (vec!["--attempts", "0", &job], "--attempts"),
        (vec!["--delay", "soon", &job], "--delay"),
        (vec!["--jitter", "wild", &job], "--jitter"),
        (vec!["--factor", "1", &job], "--factor"),
        (vec!["--retry-on", "1-x", &job], "--retry-on"),
        (vec!["--stop-on", "300", &job], "--stop-on"),
        (vec!["--stop-on-output", "(", &job], "--stop-on-output"),
        (vec!["--timeout", "0", &job], "--timeout"),
        (vec!["--no-such-flag", &job], "--no-such-flag"),
    ] {
        let r = run(&bad);
        assert_eq!(r.status, 125, "{bad:?}: {}", r.stderr);
        assert!(r.stderr.contains(flag), "{bad:?}: {}", r.stderr);
    }
    assert_eq!(s.count("count"), 0, "nothing ran");
    let r = run(&[]);
    assert_eq!(r.status, 125, "missing command: {}", r.stderr);
}

#[test]
fn report_path_in_a_missing_directory_is_125_before_running() {
    let s = Scratch::new();
    let job = s.script("job", "echo run >> \"$D/count\"");
    let r = run(&["--report", "/no/such/dir/r.json", &job]);
    assert_eq!(r.status, 125, "{}", r.stderr);
    assert!(r.stderr.contains("--report"), "{}", r.stderr);
    assert_eq!(s.count("count"), 0);
}

#[test]
fn help_and_version_exit_zero() {
    let r = run(&["--help"]);
    assert_eq!(r.status, 0);
    assert!(r.stdout_text().contains("Examples:"));
    let r = run(&["--version"]);
    assert_eq!(r.status, 0);
    assert!(r.stdout_text().starts_with("retry "));
}

// ---- classification ----

#[test]
fn stop_on_list_with_ranges() {
    let s = Scratch::new();
    let job = exits(&s, &[65]);
    let r = run(&args(&["--stop-on", "2,60-70", &job]));
    assert_eq!((r.status, s.count("count")), (65, 1));
    assert!(r.stderr.contains("--stop-on"), "{}", r.stderr);
}

#[test]
fn retry_on_makes_other_codes_permanent() {
    let s = Scratch::new();
    let job = exits(&s, &[3, 4, 1, 0]);
    let r = run(&args(&["--retry-on", "3-4", &job]));
    assert_eq!((r.status, s.count("count")), (1, 3), "{}", r.stderr);
    assert!(r.stderr.contains("not in --retry-on"), "{}", r.stderr);
}

#[test]
fn success_on_accepts_listed_codes() {
    let s = Scratch::new();
    let job = exits(&s, &[1]);
    let r = run(&args(&["--success-on", "0,1", &job]));
    assert_eq!((r.status, s.count("count")), (0, 1), "{}", r.stderr);
}

#[test]
fn sysexits_tempfail_retried_usage_not() {
    let s = Scratch::new();
    let job = exits(&s, &[75, 75, 64]);
    let r = run(&args(&[&job]));
    assert_eq!((r.status, s.count("count")), (64, 3), "{}", r.stderr);
}

#[test]
fn stop_on_output_beats_everything() {
    let s = Scratch::new();
    let job = s.script(
        "job",
        "echo run >> \"$D/count\"; echo 'fine'; echo 'FATAL: disk full' >&2; exit 75",
    );
    let r = run(&args(&[
        "--stop-on-output",
        "FATAL",
        "--retry-on",
        "75",
        &job,
    ]));
    assert_eq!((r.status, s.count("count")), (75, 1), "{}", r.stderr);
    assert_eq!(r.stdout_text(), "fine\n");
    assert!(
        r.stderr.contains("FATAL: disk full\n"),
        "the line still reaches stderr: {}",
        r.stderr
    );
}

#[test]
fn retry_on_output_retries_even_exit_zero_and_never_reports_success() {
    let s = Scratch::new();
    let job = s.script(
        "job",
        "echo run >> \"$D/count\"; echo 'warning: try again later'",
    );
    let r = run(&args(&["-a", "3", "--retry-on-output", "try again", &job]));
    assert_eq!(s.count("count"), 3);
    assert_eq!(r.status, 1, "a failed run must not exit 0: {}", r.stderr);
    let s2 = Scratch::new();
    let ok = s2.script("job", "echo run >> \"$D/count\"; n=$(wc -l < \"$D/count\"); [ $n -ge 2 ] && echo done || echo 'try again'");
    let r = run(&args(&["--retry-on-output", "try again", &ok]));
    assert_eq!((r.status, s2.count("count")), (0, 2));
}

#[test]
fn output_stays_complete_and_in_order_while_scanned() {
    let s = Scratch::new();
    let job = s.script(
        "job",
        "i=0; while [ $i -lt 2000 ]; do echo \"line $i\"; i=$((i+1)); done",
    );
    let r = run(&args(&["--retry-on-output", "never-printed", &job]));
    assert_eq!(r.status, 0);
    let expected: String = (0..2000).map(|i| format!("line {i}\n")).collect();
    assert_eq!(r.stdout_text(), expected);
}

#[test]
fn scanned_output_streams_live() {
    let s = Scratch::new();
    let job = s.script("job", "echo first; sleep 3; echo last");
    let mut child = retry()
        .args(args(&["--stop-on-output", "nothing", &job]))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "first\n");
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "first line came after {:?}",
        start.elapsed()
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// A fake tool named `name` in a fresh PATH directory that prints `stderr` and exits `code`.
fn fake_tool(s: &Scratch, name: &str, stderr: &str, code: i32) -> String {
    std::fs::create_dir_all(s.path("bin")).unwrap();
    s.script(
        &format!("bin/{name}"),
        &format!("echo run >> \"$D/count\"\necho '{stderr}' >&2\nexit {code}"),
    )
}

#[test]
fn curl_profile_reads_the_status_from_stderr() {
    let s = Scratch::new();
    let curl = fake_tool(
        &s,
        "curl",
        "curl: (22) The requested URL returned error: 503",
        22,
    );
    let r = run(&args(&["-a", "3", &curl, "-f", "http://x"]));
    assert_eq!((r.status, s.count("count")), (22, 3), "{}", r.stderr);
    assert!(r.stderr.contains("HTTP 503"), "{}", r.stderr);

    let s = Scratch::new();
    let curl = fake_tool(
        &s,
        "curl",
        "curl: (22) The requested URL returned error: 404",
        22,
    );
    let r = run(&args(&["-a", "3", &curl]));
    assert_eq!((r.status, s.count("count")), (22, 1), "{}", r.stderr);

    let s = Scratch::new();
    let curl = fake_tool(
        &s,
        "curl",
        "curl: (22) The requested URL returned error: 500",
        22,
    );
    let r = run(&args(&["-a", "10", &curl]));
    assert_eq!(
        (r.status, s.count("count")),
        (22, 3),
        "500: at most two retries: {}",
        r.stderr
    );

    let s = Scratch::new();
    let curl = fake_tool(&s, "curl", "curl: (6) Could not resolve host: x", 6);
    let r = run(&args(&["-a", "2", &curl]));
    assert_eq!(s.count("count"), 2);
    assert_eq!(r.status, 6);
}

#[test]
fn profile_override_and_generic_fallback() {
    let s = Scratch::new();
    let tool = fake_tool(
        &s,
        "fetcher",
        "curl: (22) The requested URL returned error: 404",
        22,
    );
    let r = run(&args(&["-a", "3", "--profile", "curl", &tool]));
    assert_eq!(s.count("count"), 1, "{}", r.stderr);
    let s = Scratch::new();
    let curl = fake_tool(
        &s,
        "curl",
        "curl: (22) The requested URL returned error: 404",
        22,
    );
    let r = run(&args(&["-a", "3", "--profile", "generic", &curl]));
    assert_eq!(s.count("count"), 3, "{}", r.stderr);
}

#[test]
fn ssh_wget_git_profiles() {
    let s = Scratch::new();
    let ssh = fake_tool(&s, "ssh", "remote command failed", 1);
    run(&args(&["-a", "3", &ssh]));
    assert_eq!(s.count("count"), 1, "ssh exit 1 is the remote command's");
    let s = Scratch::new();
    let ssh = fake_tool(
        &s,
        "ssh",
        "ssh: connect to host x port 22: Connection refused",
        255,
    );
    run(&args(&["-a", "3", &ssh]));
    assert_eq!(s.count("count"), 3);
    let s = Scratch::new();
    let wget = fake_tool(&s, "wget", "2026-01-01 ERROR 503: Service Unavailable.", 8);
    run(&args(&["-a", "3", &wget]));
    assert_eq!(s.count("count"), 3);
    let s = Scratch::new();
    let git = fake_tool(
        &s,
        "git",
        "fatal: unable to access 'https://x/': Could not resolve host: x",
        128,
    );
    run(&args(&["-a", "3", &git]));
    assert_eq!(s.count("count"), 3);
    let s = Scratch::new();
    let git = fake_tool(&s, "git", "fatal: not a git repository", 128);
    run(&args(&["-a", "3", &git]));
    assert_eq!(s.count("count"), 1);
}

// ---- process supervision ----

#[test]
fn child_runs_in_its_own_process_group() {
    let s = Scratch::new();
    let job = s.script(
        "job",
        "ps -o pgid= -p $$ | tr -d ' ' > \"$D/pgid\"; echo $$ > \"$D/pid\"",
    );
    let r = run(&args(&[&job]));
    assert_eq!(r.status, 0);
    assert_eq!(s.read("pgid").trim(), s.read("pid").trim());
}

#[test]
fn timeout_kills_the_whole_group_with_escalation() {
    let s = Scratch::new();
    let job = s.script(
        "job",
        "sleep 60 & echo $! >> \"$D/kids\"\ntrap '' TERM\necho run >> \"$D/count\"\nwhile :; do sleep 0.05; done",
    );
    let r = run(&args(&[
        "-a",
        "2",
        "-t",
        "300ms",
        "--kill-after",
        "300ms",
        &job,
    ]));
    assert_eq!(r.status, 124, "{}", r.stderr);
    assert_eq!(s.count("count"), 2);
    assert!(
        r.elapsed >= Duration::from_millis(1200),
        "SIGKILL came after --kill-after: {:?}",
        r.elapsed
    );
    assert!(r.elapsed < Duration::from_secs(8), "{:?}", r.elapsed);
    std::thread::sleep(Duration::from_millis(100));
    for pid in s.read("kids").lines() {
        assert!(
            !alive(pid.parse().unwrap()),
            "grandchild {pid} outlived its attempt"
        );
    }
}

#[test]
fn leftovers_of_a_failed_attempt_are_ended() {
    let s = Scratch::new();
    let job = s.script("job", "sleep 60 & echo $! >> \"$D/kids\"; exit 1");
    let r = run(&args(&["-a", "2", &job]));
    assert_eq!(r.status, 1);
    std::thread::sleep(Duration::from_millis(100));
    for pid in s.read("kids").lines() {
        assert!(
            !alive(pid.parse().unwrap()),
            "grandchild {pid} outlived its failed attempt"
        );
    }
}

fn signal_is_forwarded(sig: nix::sys::signal::Signal) {
    let s = Scratch::new();
    let job = s.script(
        "job",
        "sleep 60 & echo $! >> \"$D/kids\"\necho run >> \"$D/count\"\necho $$ > \"$D/ready\"\nwait",
    );
    let mut child = retry()
        .args(args(&["-a", "5", &job]))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&s.path("ready"), Duration::from_secs(5));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap();
    let start = Instant::now();
    let status = child.wait().unwrap();
    assert_eq!(cmd::status_of(&status), 128 + sig as i32, "{sig:?}");
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(s.count("count"), 1, "no further attempt after {sig:?}");
    std::thread::sleep(Duration::from_millis(100));
    for pid in s.read("kids").lines() {
        assert!(!alive(pid.parse().unwrap()), "grandchild outlived {sig:?}");
    }
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
    let job = s.script(
        "job",
        "echo run >> \"$D/count\"; echo x > \"$D/ready\"; exit 1",
    );
    let mut child = retry()
        .args(["--delay", "20s", "--jitter", "none", &job])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&s.path("ready"), Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(200));
    let start = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(cmd::status_of(&status), 143);
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
    let job = s.script("job", "read answer; echo \"got:$answer\" > \"$D/answer\"");
    let inner = format!("{} -- {}", cmd::BIN, job);
    let mut child = std::process::Command::new("script")
        .args(["-qec", &inner, "/dev/null"])
        .env_remove("RETRY_DEPTH")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("script(1) from util-linux");
    std::thread::sleep(Duration::from_millis(500));
    child.stdin.as_mut().unwrap().write_all(b"yes\n").unwrap();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) && s.read("answer").is_empty() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(s.read("answer"), "got:yes\n");
}

#[test]
fn ctrl_c_at_the_terminal_stops_an_interactive_run() {
    let s = Scratch::new();
    let job = s.script(
        "job",
        "echo run >> \"$D/count\"; echo ready > \"$D/ready\"; sleep 30",
    );
    let inner = format!(
        "{} -- {}; echo \"status:$?\" > {}",
        cmd::BIN,
        job,
        s.p("status")
    );
    let mut child = std::process::Command::new("script")
        .args(["-qec", &inner, "/dev/null"])
        .env_remove("RETRY_DEPTH")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("script(1)");
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

// ---- stdin ----

#[test]
fn regular_file_is_rewound_to_its_starting_offset() {
    let s = Scratch::new();
    let input = s.write("input", b"0123456789abcdef");
    let job = s.script("job", "cat >> \"$D/seen\"; echo >> \"$D/seen\"; echo run >> \"$D/count\"; [ $(wc -l < \"$D/count\") -ge 3 ]");
    let mut file = std::fs::File::open(&input).unwrap();
    file.seek(SeekFrom::Start(10)).unwrap();
    let r = run_cmd(retry().args(args(&[&job])).stdin(file));
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(s.read("seen"), "abcdef\nabcdef\nabcdef\n");
}

#[test]
fn pipe_over_ten_mib_is_replayed_to_every_attempt() {
    let s = Scratch::new();
    let data: Vec<u8> = (0..12 * 1024 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let job = s.script(
        "job",
        "cksum >> \"$D/sums\"; echo run >> \"$D/count\"; [ $(wc -l < \"$D/count\") -ge 3 ]",
    );
    let mut child = retry()
        .args(args(&[&job]))
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
        data
    });
    let output = child.wait_with_output().unwrap();
    let data = writer.join().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let expected = {
        let mut c = std::process::Command::new("cksum")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        c.stdin.take().unwrap().write_all(&data).unwrap();
        String::from_utf8(c.wait_with_output().unwrap().stdout).unwrap()
    };
    let sums = s.read("sums");
    assert_eq!(sums.lines().count(), 3);
    for line in sums.lines() {
        assert_eq!(
            format!("{line}\n"),
            expected,
            "every attempt saw the same bytes"
        );
    }
}

#[test]
fn partial_reads_are_continued_on_replay() {
    let s = Scratch::new();
    // The first attempt reads one line and fails; the second must see all three.
    let job = s.script(
        "job",
        "echo run >> \"$D/count\"\nif [ $(wc -l < \"$D/count\") -eq 1 ]; then head -n 1 > /dev/null; exit 1; fi\ncat > \"$D/seen\"",
    );
    let mut child = retry()
        .args(args(&[&job]))
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"one\ntwo\nthree\n")
        .unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(s.read("seen"), "one\ntwo\nthree\n");
}

#[test]
fn endless_input_does_not_hang() {
    let s = Scratch::new();
    let r = run_cmd(
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("yes | {} --delay 1ms -- head -n 1", cmd::BIN))
            .env_remove("RETRY_DEPTH"),
    );
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), "y\n");
    drop(s);
}

#[test]
fn stdin_null_and_inherit_overrides() {
    let s = Scratch::new();
    let job = s.script("job", "cat > \"$D/seen\"");
    let mut child = retry()
        .args(["--stdin", "null", &job])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    // retry may be gone before the write: it never reads this pipe.
    let _ = child.stdin.take().unwrap().write_all(b"hidden\n");
    assert!(child.wait().unwrap().success());
    assert_eq!(s.read("seen"), "");

    let job = s.script(
        "job2",
        "echo run >> \"$D/count2\"; cat >> \"$D/seen2\"; [ $(wc -l < \"$D/count2\") -ge 2 ]",
    );
    let mut child = retry()
        .args(args(&["--stdin", "inherit", &job]))
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"once\n").unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(s.read("seen2"), "once\n", "inherited stdin is not replayed");
}

// ---- --hold-stdout ----

#[test]
fn hold_stdout_passes_exactly_one_attempt() {
    let s = Scratch::new();
    let job = s.script(
        "job",
        "echo run >> \"$D/count\"; n=$(wc -l < \"$D/count\"); echo \"attempt $n\"; [ $n -ge 3 ]",
    );
    let r = run(&args(&["--hold-stdout", &job]));
    assert_eq!(r.status, 0);
    assert_eq!(r.stdout_text(), "attempt 3\n");
}

#[test]
fn hold_stdout_shows_the_last_failed_attempt() {
    let s = Scratch::new();
    let job = s.script(
        "job",
        "echo run >> \"$D/count\"; echo \"attempt $(wc -l < \"$D/count\")\"; exit 1",
    );
    let r = run(&args(&["-a", "3", "--hold-stdout", &job]));
    assert_eq!(r.status, 1);
    assert_eq!(r.stdout_text(), "attempt 3\n");
}

#[test]
fn hold_stdout_spools_large_output() {
    let s = Scratch::new();
    let job = s.script(
        "job",
        "echo run >> \"$D/count\"; head -c 9000000 /dev/zero; [ $(wc -l < \"$D/count\") -ge 2 ]",
    );
    let r = run(&args(&["--hold-stdout", &job]));
    assert_eq!(r.status, 0);
    assert_eq!(r.stdout.len(), 9_000_000);
    assert!(r.stdout.iter().all(|&b| b == 0));
}

// ---- environment and nesting ----

#[test]
fn child_environment() {
    let s = Scratch::new();
    let job = s.script(
        "job",
        "echo \"$RETRY_ATTEMPT $RETRY_ATTEMPTS $RETRY_IDEMPOTENCY_KEY $RETRY_DEPTH ${RETRY_DEADLINE_MS:-none}\" >> \"$D/env\"; [ $RETRY_ATTEMPT -ge 3 ]",
    );
    let r = run(&args(&["-a", "4", &job]));
    assert_eq!(r.status, 0);
    let lines: Vec<Vec<String>> = s
        .read("env")
        .lines()
        .map(|l| l.split(' ').map(String::from).collect())
        .collect();
    assert_eq!(lines.len(), 3);
    for (i, fields) in lines.iter().enumerate() {
        assert_eq!(fields[0], (i + 1).to_string());
        assert_eq!(fields[1], "4");
        assert_eq!(fields[2], lines[0][2], "one key for the run");
        assert_eq!(fields[3], "1");
        assert_eq!(fields[4], "none");
    }
    let key = uuid::Uuid::parse_str(&lines[0][2]).expect("a UUID");
    assert_eq!(key.get_version_num(), 4);
}

#[test]
fn deadline_and_given_key_reach_the_child() {
    let s = Scratch::new();
    let job = s.script(
        "job",
        "echo \"$RETRY_DEADLINE_MS $RETRY_IDEMPOTENCY_KEY\" > \"$D/env\"",
    );
    let r = run(&args(&[
        "--max-time",
        "10s",
        "--idempotency-key",
        "order-42",
        &job,
    ]));
    assert_eq!(r.status, 0);
    let text = s.read("env");
    let (ms, key) = text.trim().split_once(' ').unwrap();
    let ms: u64 = ms.parse().unwrap();
    assert!(ms > 5_000 && ms <= 10_000, "{ms}");
    assert_eq!(key, "order-42");
}

#[test]
fn nested_retry_makes_one_attempt_and_says_so_once() {
    let s = Scratch::new();
    let job = exits(&s, &[1]);
    let r = run_cmd(retry().args(args(&[&job])).env("RETRY_DEPTH", "1"));
    assert_eq!((r.status, s.count("count")), (1, 1));
    assert_eq!(
        r.stderr.matches("inside another retry").count(),
        1,
        "{}",
        r.stderr
    );

    let s = Scratch::new();
    let job = exits(&s, &[1]);
    let r = run_cmd(
        retry()
            .args(args(&["-a", "3", "--allow-nested", &job]))
            .env("RETRY_DEPTH", "1"),
    );
    assert_eq!(s.count("count"), 3, "{}", r.stderr);

    let s = Scratch::new();
    let job = exits(&s, &[1]);
    let r = run_cmd(retry().args(args(&["-q", &job])).env("RETRY_DEPTH", "2"));
    assert!(!r.stderr.contains("inside another retry"), "{}", r.stderr);
}

#[test]
fn retry_inside_retry_does_not_multiply_attempts() {
    let s = Scratch::new();
    let job = exits(&s, &[1]);
    let r = run(&args(&[
        "-a",
        "3",
        cmd::BIN,
        "--delay",
        "1ms",
        "-a",
        "3",
        &job,
    ]));
    assert_eq!(s.count("count"), 3, "3 attempts, not 9: {}", r.stderr);
}

// ---- budget, seed, dry run, report, logging ----

#[test]
fn max_time_cuts_the_attempt_and_stops_the_run() {
    let s = Scratch::new();
    let job = s.script("job", "echo run >> \"$D/count\"; exec sleep 20");
    let r = run(&args(&["--max-time", "600ms", &job]));
    assert_eq!(r.status, 124, "{}", r.stderr);
    assert_eq!(s.count("count"), 1);
    assert!(r.elapsed < Duration::from_secs(6), "{:?}", r.elapsed);
    assert!(r.stderr.contains("--max-time"), "{}", r.stderr);
}

#[test]
fn max_time_refuses_a_sleep_that_would_end_past_it() {
    let s = Scratch::new();
    let job = exits(&s, &[1]);
    let r = run(&[
        "--delay",
        "5s",
        "--jitter",
        "none",
        "--max-time",
        "1s",
        &job,
    ]);
    assert_eq!((r.status, s.count("count")), (1, 1));
    assert!(r.elapsed < Duration::from_secs(1), "{:?}", r.elapsed);
    assert!(r.stderr.contains("--max-time"), "{}", r.stderr);
}

#[test]
fn same_seed_same_delays() {
    let delays = |seed: &str| {
        let s = Scratch::new();
        let job = exits(&s, &[1]);
        let report = s.p("r.json");
        run(&[
            "--delay",
            "10ms",
            "--max-delay",
            "40ms",
            "--seed",
            seed,
            "-a",
            "5",
            "--report",
            &report,
            &job,
        ]);
        let v: serde_json::Value = serde_json::from_str(&s.read("r.json")).unwrap();
        v["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["delay_ms"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(delays("7"), delays("7"));
}

#[test]
fn dry_run_prints_the_schedule_and_runs_nothing() {
    let s = Scratch::new();
    let job = s.script("job", "echo run >> \"$D/count\"");
    let r = run(&[
        "--dry-run",
        "-a",
        "4",
        "--delay",
        "1s",
        "--jitter",
        "none",
        "--stop-on",
        "2",
        &job,
    ]);
    assert_eq!(r.status, 0);
    assert_eq!(s.count("count"), 0);
    let out = r.stdout_text();
    for want in [
        "2        1s",
        "3        2s",
        "4        4s",
        "worst case: 7s",
        "--stop-on 2",
        "profile:     generic",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
    let r = run(&["--dry-run", "curl", "-fsS", "http://127.0.0.1:9/"]);
    assert!(
        r.stdout_text().contains("profile:     curl"),
        "{}",
        r.stdout_text()
    );
}

#[test]
fn report_records_every_attempt() {
    let s = Scratch::new();
    let job = exits(&s, &[75, 0]);
    let report = s.p("report.json");
    let r = run(&args(&["--report", &report, &job]));
    assert_eq!(r.status, 0);
    let v: serde_json::Value = serde_json::from_str(&s.read("report.json")).unwrap();
    assert_eq!(v["version"], 1);
    assert_eq!(v["mode"], "command");
    assert_eq!(v["target"][0], job.as_str());
    assert!(uuid::Uuid::parse_str(v["idempotency_key"].as_str().unwrap()).is_ok());
    let attempts = v["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0]["n"], 1);
    assert_eq!(attempts[0]["outcome"]["code"], 75);
    assert_eq!(attempts[0]["class"], "transient");
    assert!(attempts[0]["delay_ms"].is_u64());
    assert!(attempts[0]["started_at"].as_str().unwrap().ends_with('Z'));
    assert!(attempts[1].get("delay_ms").is_none());
    assert_eq!(attempts[1]["class"], "success");
    assert_eq!(v["result"]["exit_code"], 0);
    assert_eq!(v["result"]["attempts"], 2);
    assert_eq!(v["result"]["stopped_because"], "success");
}

#[test]
fn report_is_written_on_failure_and_on_signals() {
    let s = Scratch::new();
    let job = exits(&s, &[2]);
    let report = s.p("fail.json");
    run(&args(&["-a", "2", "--report", &report, &job]));
    let v: serde_json::Value = serde_json::from_str(&s.read("fail.json")).unwrap();
    assert_eq!(v["result"]["stopped_because"], "attempts");
    assert_eq!(v["result"]["exit_code"], 2);

    let job = s.script("sleeper", "echo x > \"$D/ready\"; exec sleep 30");
    let report = s.p("sig.json");
    let mut child = retry()
        .args(["--report", &report, &job])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&s.path("ready"), Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(100));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(cmd::status_of(&child.wait().unwrap()), 143);
    let v: serde_json::Value = serde_json::from_str(&s.read("sig.json")).unwrap();
    assert_eq!(v["result"]["stopped_because"], "signal");
    assert_eq!(v["result"]["exit_code"], 143);
}

#[test]
fn quiet_and_verbose() {
    let s = Scratch::new();
    let job = exits(&s, &[1]);
    let r = run(&args(&["-a", "2", "-q", &job]));
    assert!(!r.stderr.contains("attempt 1/2"), "{}", r.stderr);
    assert!(
        r.stderr.contains("gave up"),
        "-q keeps the last word: {}",
        r.stderr
    );
    let r = run(&args(&["-a", "2", "-qq", &job]));
    assert_eq!(r.stderr, "");
    let r = run(&args(&["-a", "1", "-v", &job]));
    assert!(r.stderr.contains("profile generic"), "{}", r.stderr);
    assert!(r.stderr.contains("idempotency key"), "{}", r.stderr);
}

#[test]
fn json_log_lines() {
    let s = Scratch::new();
    let job = exits(&s, &[1, 0]);
    let r = run(&args(&["--log-format", "json", &job]));
    assert_eq!(r.status, 0);
    let events: Vec<serde_json::Value> = r
        .stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    assert_eq!(events[0]["event"], "attempt_failed");
    assert_eq!(events[0]["class"], "transient");
    assert!(events.iter().any(|e| e["event"] == "attempt_succeeded"));
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "stopped" && e["stopped_because"] == "success")
    );
}

#[test]
fn github_actions_annotations() {
    let s = Scratch::new();
    let job = exits(&s, &[1]);
    let r = run_cmd(
        retry()
            .args(args(&["-a", "2", &job]))
            .env("GITHUB_ACTIONS", "true"),
    );
    assert_eq!(
        r.stderr
            .matches("::warning title=retry::attempt 1/2 failed")
            .count(),
        1,
        "{}",
        r.stderr
    );
    assert_eq!(
        r.stderr
            .matches("::error title=retry::gave up after 2 attempts")
            .count(),
        1,
        "{}",
        r.stderr
    );
    let r = run(&args(&["-a", "2", &job]));
    assert!(!r.stderr.contains("::warning"), "{}", r.stderr);
}

#[test]
fn no_countdown_or_colour_when_stderr_is_not_a_terminal() {
    let s = Scratch::new();
    let job = exits(&s, &[1, 0]);
    let r = run(&["--delay", "1200ms", "--jitter", "none", &job]);
    assert_eq!(r.status, 0);
    assert!(
        !r.stderr.contains('\r') && !r.stderr.contains('\x1b'),
        "{:?}",
        r.stderr
    );
}

#[test]
fn countdown_on_a_terminal() {
    let s = Scratch::new();
    let job = exits(&s, &[1, 0]);
    let inner = format!(
        "{} --delay 1500ms --jitter none -- {} 2> /dev/tty",
        cmd::BIN,
        job
    );
    let mut child = std::process::Command::new("script")
        .args(["-qec", &inner, "/dev/null"])
        .env_remove("RETRY_DEPTH")
        .env_remove("NO_COLOR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("script(1)");
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    let _ = child.wait();
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("\rretry: attempt 2/5 in 2s"), "{text:?}");
}

#[test]
fn hold_stdout_with_output_rules_still_passes_one_attempt() {
    let s = Scratch::new();
    let job = s.script(
        "job",
        "echo run >> \"$D/count\"; n=$(wc -l < \"$D/count\"); [ $n -lt 3 ] && echo \"busy, try later $n\" || echo \"done $n\"",
    );
    let r = run(&args(&[
        "--hold-stdout",
        "--retry-on-output",
        "try later",
        &job,
    ]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), "done 3\n");
}

#[test]
fn stdin_replay_forced_on_a_regular_file_keeps_what_was_read() {
    // The first attempt empties the file; rewinding would give the second nothing,
    // a replay gives it what the first attempt read.
    let s = Scratch::new();
    let input = s.write("input", b"payload\n");
    let job = s.script(
        "job",
        &format!(
            "echo run >> \"$D/count\"\nif [ $(wc -l < \"$D/count\") -eq 1 ]; then cat > /dev/null; : > '{}'; exit 1; fi\ncat > \"$D/seen\"",
            input.display()
        ),
    );
    let file = std::fs::File::open(&input).unwrap();
    let r = run_cmd(retry().args(args(&["--stdin", "replay", &job])).stdin(file));
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(s.read("seen"), "payload\n");
}

#[test]
fn colour_on_a_terminal_and_never_with_no_color() {
    let s = Scratch::new();
    let job = exits(&s, &[1, 0]);
    let through_pty = |no_color: bool| {
        let inner = format!("{} --delay 1ms -- {}", cmd::BIN, job);
        let mut c = std::process::Command::new("script");
        c.args(["-qec", &inner, "/dev/null"])
            .env_remove("RETRY_DEPTH")
            .env("TERM", "xterm")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        if no_color {
            c.env("NO_COLOR", "1");
        } else {
            c.env_remove("NO_COLOR");
        }
        let out = c.output().expect("script(1)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let coloured = through_pty(false);
    assert!(
        coloured.contains("attempt 1/5 failed") && coloured.contains('\x1b'),
        "{coloured:?}"
    );
    std::fs::remove_file(s.path("count")).unwrap();
    let plain = through_pty(true);
    assert!(plain.contains("attempt 1/5 failed"), "{plain:?}");
    assert!(!plain.contains('\x1b'), "{plain:?}");
}

#[test]
fn sigpipe_from_a_vanished_reader_is_not_retried() {
    let s = Scratch::new();
    let job = s.script("job", "echo run >> \"$D/count\"; exec yes");
    let line = format!(
        "{{ {} --delay 1ms -- {job}; echo $? > {}; }} | head -n 1",
        cmd::BIN,
        s.p("status")
    );
    let r = run_cmd(
        std::process::Command::new("sh")
            .arg("-c")
            .arg(line)
            .env_remove("RETRY_DEPTH"),
    );
    assert_eq!(r.stdout_text(), "y\n");
    assert_eq!(s.read("status").trim(), "141", "{}", r.stderr);
    assert_eq!(s.count("count"), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("reader of its output went away"),
        "{}",
        r.stderr
    );
}
