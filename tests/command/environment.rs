//! Command mode: environment and nesting.

use super::*;

#[test]
fn child_environment() {
    let (s, r) = run_job(
        "echo \"$RETRY_ATTEMPT $RETRY_ATTEMPTS $RETRY_IDEMPOTENCY_KEY $RETRY_DEPTH ${RETRY_DEADLINE_MS:-none}\" >> \"$D/env\"; [ $RETRY_ATTEMPT -ge 3 ]",
        &["-a", "4"],
    );
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
    let (s, r) = run_job(
        "echo \"$RETRY_DEADLINE_MS $RETRY_IDEMPOTENCY_KEY\" > \"$D/env\"",
        &["--max-time", "10s", "--idempotency-key", "order-42"],
    );
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
    let r = retry().args(fast(&[&job])).env("RETRY_DEPTH", "1").run();
    assert_eq!((r.status, s.count("count")), (1, 1));
    assert_eq!(
        r.stderr.matches("inside another retry").count(),
        1,
        "{}",
        r.stderr
    );

    let s = Scratch::new();
    let job = exits(&s, &[1]);
    let r = retry()
        .args(fast(&["-a", "3", "--allow-nested", &job]))
        .env("RETRY_DEPTH", "1")
        .run();
    assert_eq!(s.count("count"), 3, "{}", r.stderr);

    let s = Scratch::new();
    let job = exits(&s, &[1]);
    let r = retry()
        .args(fast(&["-q", &job]))
        .env("RETRY_DEPTH", "2")
        .run();
    r.assert_stderr_lacks("inside another retry");
}

#[test]
fn a_retry_depth_that_is_no_nesting_level_is_one_warning_and_counts_as_the_top() {
    for given in ["x", "-1", "1.5", "4294967296", "1\n\x1b[2J", ""] {
        let s = Scratch::new();
        let job = exits(&s, &[1, 1, 0]);
        let r = retry()
            .args(fast(&["-a", "3", &job]))
            .env("RETRY_DEPTH", given)
            .run();
        assert_eq!(
            (r.status, s.count("count")),
            (0, 3),
            "{given:?}: {}",
            r.stderr
        );
        let warnings: Vec<&str> = r
            .stderr
            .lines()
            .filter(|l| l.contains("RETRY_DEPTH"))
            .collect();
        assert_eq!(warnings.len(), 1, "{given:?}: {}", r.stderr);
        assert!(warnings[0].contains("counting it as 0"), "{}", r.stderr);
        assert!(!r.stderr.contains('\x1b'), "escaped: {}", r.stderr);
        r.assert_stderr_lacks("inside another retry");
    }
}

#[test]
fn retry_inside_retry_does_not_multiply_attempts() {
    let s = Scratch::new();
    let job = exits(&s, &[1]);
    let r = run(&fast(&[
        "-a",
        "3",
        support::bin(),
        "--delay",
        "1ms",
        "-a",
        "3",
        &job,
    ]));
    assert_eq!(s.count("count"), 3, "3 attempts, not 9: {}", r.stderr);
}
