//! Command mode: hold-stdout.

use super::*;

#[test]
fn hold_stdout_passes_exactly_one_attempt() {
    let (_, r) = run_job(
        "echo run >> \"$D/count\"; n=$(wc -l < \"$D/count\"); echo \"attempt $n\"; [ $n -ge 3 ]",
        &["--hold-stdout"],
    );
    assert_eq!(r.status, 0);
    assert_eq!(r.stdout_text(), "attempt 3\n");
}

#[test]
fn hold_stdout_shows_the_last_failed_attempt() {
    let (_, r) = run_job(
        "echo run >> \"$D/count\"; echo \"attempt $(wc -l < \"$D/count\")\"; exit 1",
        &["-a", "3", "--hold-stdout"],
    );
    assert_eq!(r.status, 1);
    assert_eq!(r.stdout_text(), "attempt 3\n");
}

#[test]
fn hold_stdout_spools_large_output() {
    let (_, r) = run_job(
        "echo run >> \"$D/count\"; head -c 9000000 /dev/zero; [ $(wc -l < \"$D/count\") -ge 2 ]",
        &["--hold-stdout"],
    );
    assert_eq!(r.status, 0);
    assert_eq!(r.stdout.len(), 9_000_000);
    assert!(r.stdout.iter().all(|&b| b == 0));
}
