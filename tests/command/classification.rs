//! Command mode: classification.

use super::*;

#[test]
fn stop_on_list_with_ranges() {
    let s = Scratch::new();
    let job = exits(&s, &[65]);
    let r = run(&fast(&["--stop-on", "2,60-70", &job]));
    assert_eq!((r.status, s.count("count")), (65, 1));
    r.assert_stderr_has("--stop-on");
}

#[test]
fn retry_on_makes_other_codes_permanent() {
    let s = Scratch::new();
    let job = exits(&s, &[3, 4, 1, 0]);
    let r = run(&fast(&["--retry-on", "3-4", &job]));
    assert_eq!((r.status, s.count("count")), (1, 3), "{}", r.stderr);
    r.assert_stderr_has("not in --retry-on");
}

#[test]
fn success_on_accepts_listed_codes() {
    let s = Scratch::new();
    let job = exits(&s, &[1]);
    let r = run(&fast(&["--success-on", "0,1", &job]));
    assert_eq!((r.status, s.count("count")), (0, 1), "{}", r.stderr);
}

#[test]
fn sysexits_tempfail_retried_usage_not() {
    let s = Scratch::new();
    let job = exits(&s, &[75, 75, 64]);
    let r = run(&fast(&[&job]));
    assert_eq!((r.status, s.count("count")), (64, 3), "{}", r.stderr);
}

#[test]
fn stop_on_output_beats_everything() {
    let (s, r) = run_job(
        "echo run >> \"$D/count\"; echo 'fine'; echo 'FATAL: disk full' >&2; exit 75",
        &["--stop-on-output", "FATAL", "--retry-on", "75"],
    );
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
    let job = s.job("echo run >> \"$D/count\"; echo 'warning: try again later'");
    let r = run(&fast(&["-a", "3", "--retry-on-output", "try again", &job]));
    assert_eq!(s.count("count"), 3);
    assert_eq!(r.status, 1, "a failed run must not exit 0: {}", r.stderr);
    let s2 = Scratch::new();
    let ok = s2.job("echo run >> \"$D/count\"; n=$(wc -l < \"$D/count\"); [ $n -ge 2 ] && echo done || echo 'try again'");
    let r = run(&fast(&["--retry-on-output", "try again", &ok]));
    assert_eq!((r.status, s2.count("count")), (0, 2));
}

#[test]
fn output_stays_complete_and_in_order_while_scanned() {
    let (_, r) = run_job(
        "i=0; while [ $i -lt 2000 ]; do echo \"line $i\"; i=$((i+1)); done",
        &["--retry-on-output", "never-printed"],
    );
    assert_eq!(r.status, 0);
    let expected: String = (0..2000).map(|i| format!("line {i}\n")).collect();
    assert_eq!(r.stdout_text(), expected);
}

#[test]
fn scanned_output_streams_live() {
    let s = Scratch::new();
    let job = s.job("echo first; sleep 3; echo last");
    let mut child = retry()
        .args(fast(&["--stop-on-output", "nothing", &job]))
        .stdout(Stdio::piped())
        .spawn();
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
    let r = run(&fast(&["-a", "3", &curl, "-f", "http://x"]));
    assert_eq!((r.status, s.count("count")), (22, 3), "{}", r.stderr);
    r.assert_stderr_has("HTTP 503");

    let s = Scratch::new();
    let curl = fake_tool(
        &s,
        "curl",
        "curl: (22) The requested URL returned error: 404",
        22,
    );
    let r = run(&fast(&["-a", "3", &curl]));
    assert_eq!((r.status, s.count("count")), (22, 1), "{}", r.stderr);

    let s = Scratch::new();
    let curl = fake_tool(
        &s,
        "curl",
        "curl: (22) The requested URL returned error: 500",
        22,
    );
    let r = run(&fast(&["-a", "10", &curl]));
    assert_eq!(
        (r.status, s.count("count")),
        (22, 3),
        "500: at most two retries: {}",
        r.stderr
    );

    let s = Scratch::new();
    let curl = fake_tool(&s, "curl", "curl: (6) Could not resolve host: x", 6);
    let r = run(&fast(&["-a", "2", &curl]));
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
    let r = run(&fast(&["-a", "3", "--profile", "curl", &tool]));
    assert_eq!(s.count("count"), 1, "{}", r.stderr);
    let s = Scratch::new();
    let curl = fake_tool(
        &s,
        "curl",
        "curl: (22) The requested URL returned error: 404",
        22,
    );
    let r = run(&fast(&["-a", "3", "--profile", "generic", &curl]));
    assert_eq!(s.count("count"), 3, "{}", r.stderr);
}

#[test]
fn ssh_wget_git_profiles() {
    let s = Scratch::new();
    let ssh = fake_tool(&s, "ssh", "remote command failed", 1);
    run(&fast(&["-a", "3", &ssh]));
    assert_eq!(s.count("count"), 1, "ssh exit 1 is the remote command's");
    let s = Scratch::new();
    let ssh = fake_tool(
        &s,
        "ssh",
        "ssh: connect to host x port 22: Connection refused",
        255,
    );
    run(&fast(&["-a", "3", &ssh]));
    assert_eq!(s.count("count"), 3);
    let s = Scratch::new();
    let wget = fake_tool(&s, "wget", "2026-01-01 ERROR 503: Service Unavailable.", 8);
    run(&fast(&["-a", "3", &wget]));
    assert_eq!(s.count("count"), 3);
    let s = Scratch::new();
    let git = fake_tool(
        &s,
        "git",
        "fatal: unable to access 'https://x/': Could not resolve host: x",
        128,
    );
    run(&fast(&["-a", "3", &git]));
    assert_eq!(s.count("count"), 3);
    let s = Scratch::new();
    let git = fake_tool(&s, "git", "fatal: not a git repository", 128);
    run(&fast(&["-a", "3", &git]));
    assert_eq!(s.count("count"), 1);
}
