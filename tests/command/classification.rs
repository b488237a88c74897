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

/// Runs `retry FAST FLAGS TOOL ARGS` on a fresh [`fake_tool`]; returns the run and how
/// many times the tool ran.
fn run_fake_tool(tool: (&str, &str, i32), flags: &[&str], args: &[&str]) -> (Run, usize) {
    let s = Scratch::new();
    let (name, stderr, code) = tool;
    let path = fake_tool(&s, name, stderr, code);
    let r = retry().fast().args(flags).arg(path).args(args).run();
    let runs = s.count("count");
    (r, runs)
}

/// A fake curl that failed with `-f` on HTTP `status`.
fn curl_error(status: u16) -> String {
    format!("curl: (22) The requested URL returned error: {status}")
}

#[test]
fn curl_profile_reads_the_status_from_stderr() {
    let e503 = curl_error(503);
    let (r, runs) = run_fake_tool(("curl", &e503, 22), &["-a", "3"], &["-f", "http://x"]);
    assert_eq!((r.status, runs), (22, 3), "{}", r.stderr);
    r.assert_stderr_has("HTTP 503");

    let (r, runs) = run_fake_tool(("curl", &curl_error(404), 22), &["-a", "3"], &[]);
    assert_eq!((r.status, runs), (22, 1), "{}", r.stderr);

    let (r, runs) = run_fake_tool(("curl", &curl_error(500), 22), &["-a", "10"], &[]);
    assert_eq!(
        (r.status, runs),
        (22, 3),
        "500: at most two retries: {}",
        r.stderr
    );

    let unresolved = ("curl", "curl: (6) Could not resolve host: x", 6);
    let (r, runs) = run_fake_tool(unresolved, &["-a", "2"], &[]);
    assert_eq!(runs, 2);
    assert_eq!(r.status, 6);
}

#[test]
fn profile_override_and_generic_fallback() {
    let e404 = curl_error(404);
    let (r, runs) = run_fake_tool(
        ("fetcher", &e404, 22),
        &["-a", "3", "--profile", "curl"],
        &[],
    );
    assert_eq!(runs, 1, "{}", r.stderr);
    let (r, runs) = run_fake_tool(
        ("curl", &e404, 22),
        &["-a", "3", "--profile", "generic"],
        &[],
    );
    assert_eq!(runs, 3, "{}", r.stderr);
}

#[test]
fn ssh_wget_git_profiles() {
    let ssh_refused = "ssh: connect to host x port 22: Connection refused";
    let git_unresolved = "fatal: unable to access 'https://x/': Could not resolve host: x";
    // Columns: the tool, what it prints, its exit status, how many times it runs of 3.
    for (name, stderr, code, runs) in [
        // ssh's exit 1 is the remote command's.
        ("ssh", "remote command failed", 1, 1),
        ("ssh", ssh_refused, 255, 3),
        ("wget", "2026-01-01 ERROR 503: Service Unavailable.", 8, 3),
        ("git", git_unresolved, 128, 3),
        ("git", "fatal: not a git repository", 128, 1),
    ] {
        let (r, ran) = run_fake_tool((name, stderr, code), &["-a", "3"], &[]);
        assert_eq!(ran, runs, "{name} printing {stderr:?}: {}", r.stderr);
    }
}
