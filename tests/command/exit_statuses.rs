//! Command mode: exit statuses.

use super::*;

#[test]
fn success_after_transient_failures() {
    let s = Scratch::new();
    let job = exits(&s, &[1, 1, 0]);
    let r = run(&fast(&["--", &job]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(s.count("count"), 3);
    r.assert_stderr_has("attempt 3/5 succeeded");
}

#[test]
fn gives_up_with_the_last_status() {
    let s = Scratch::new();
    let job = exits(&s, &[3, 4, 9]);
    let r = run(&fast(&["-a", "3", &job]));
    assert_eq!(r.status, 9);
    assert_eq!(s.count("count"), 3);
    r.assert_stderr_has("gave up after 3 attempts");
}

#[test]
fn death_by_signal_is_128_plus_n_and_retried() {
    let (s, r) = run_job("echo run >> \"$D/count\"; kill -KILL $$", &["-a", "2"]);
    assert_eq!(r.status, 137, "{}", r.stderr);
    assert_eq!(s.count("count"), 2);
    r.assert_stderr_has("SIGKILL");
}

#[test]
fn timeout_is_124_and_transient() {
    let (s, r) = run_job(
        "echo run >> \"$D/count\"; exec sleep 10",
        &["-a", "2", "-t", "200ms"],
    );
    assert_eq!(r.status, 124, "{}", r.stderr);
    assert_eq!(s.count("count"), 2);
    assert!(r.elapsed < Duration::from_secs(5), "{:?}", r.elapsed);
}

#[test]
fn not_found_is_127_and_not_retried() {
    let r = run(&fast(&["/definitely/not/here"]));
    assert_eq!(r.status, 127);
    assert_eq!(
        r.stderr.matches("attempt 1/5 failed").count(),
        1,
        "{}",
        r.stderr
    );
    r.assert_stderr_lacks("attempt 2/");
}

#[test]
fn not_executable_is_126_and_not_retried() {
    let s = Scratch::new();
    let path = s.write("plain", b"echo hi\n");
    let r = run(&fast(&[path.to_str().unwrap()]));
    assert_eq!(r.status, 126, "{}", r.stderr);
    r.assert_stderr_lacks("attempt 2/");
}

#[test]
fn exit_127_from_the_command_is_permanent() {
    let s = Scratch::new();
    let job = exits(&s, &[127]);
    let r = run(&fast(&[&job]));
    assert_eq!((r.status, s.count("count")), (127, 1));
}

#[test]
fn usage_errors_are_125_and_name_the_flag() {
    let s = Scratch::new();
    let job = s.job("echo run >> \"$D/count\"");
    for (bad, flag) in [
        (vec!["--attempts", "0", &job], "--attempts"),
        (vec!["--delay", "soon", &job], "--delay"),
        (vec!["--jitter", "wild", &job], "--jitter"),
        (vec!["--factor", "1", &job], "--factor"),
        (vec!["--retry-on", "1-x", &job], "--retry-on"),
        (vec!["--stop-on", "300", &job], "--stop-on"),
        (vec!["--stop-on-output", "(", &job], "--stop-on-output"),
        (vec!["--timeout", "-1", &job], "--timeout"),
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
    let job = s.job("echo run >> \"$D/count\"");
    let r = run(&["--report", "/no/such/dir/r.json", &job]);
    assert_eq!(r.status, 125, "{}", r.stderr);
    r.assert_stderr_has("--report");
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
