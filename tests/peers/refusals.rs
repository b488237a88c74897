//! The peers' options refused where they would clash or mean nothing: exit 125, a
//! message naming the flags, and nothing run.

use crate::support::{Scratch, retry};

/// `retry ARGS -- touch MARKER`: exit status, stderr, whether the command ran.
fn refused(args: &[&str]) -> (i32, String, bool) {
    let s = Scratch::new();
    let marker = s.path("ran");
    let r = retry().args(args).args(["--", "touch"]).arg(&marker).run();
    (r.status, r.stderr, marker.exists())
}

#[test]
fn each_clash_is_125_naming_both_flags_and_runs_nothing() {
    let cases: &[(&[&str], &[&str])] = &[
        (&["-a", "0"], &["--attempts", "--max-time"]),
        (
            &["--delays", "1s", "--delay", "2s"],
            &["--delays", "--delay"],
        ),
        (
            &["--delays", "1s", "--backoff", "linear"],
            &["--delays", "--backoff"],
        ),
        (
            &["--delays", "1s", "--factor", "3"],
            &["--delays", "--factor"],
        ),
        (
            &["--delays", "1s", "--max-delay", "9s"],
            &["--delays", "--max-delay"],
        ),
        (
            &["--delays", "1s", "--retry-delay", "1"],
            &["--delays", "--retry-delay"],
        ),
        (
            &["--delays", "1s", "-j", "decorrelated"],
            &["--delays", "decorrelated"],
        ),
        (
            &["--until-failure", "--consecutive", "2"],
            &["--until-failure", "--consecutive"],
        ),
        (
            &["--until-failure", "--success-on", "0,1"],
            &["--until-failure", "--success-on"],
        ),
        (
            &["--until-failure", "--once", "k"],
            &["--until-failure", "--once"],
        ),
        (
            &["--until-failure", "--schedule", "@daily"],
            &["--until-failure", "--schedule"],
        ),
        (&["--consecutive", "6"], &["--consecutive 6", "-a 5"]),
        (&["--consecutive", "1"], &["--consecutive"]),
        (
            &["--ignore-retry-after", "--max-retry-after", "1m"],
            &["--ignore-retry-after", "--max-retry-after"],
        ),
        (
            &["--report", "-", "--schedule", "@daily"],
            &["--report -", "--schedule"],
        ),
    ];
    let mut failures = Vec::new();
    for (args, named) in cases {
        let (status, stderr, ran) = refused(args);
        let says_all = named.iter().all(|n| stderr.contains(n));
        if status != 125 || ran || !says_all {
            failures.push(format!(
                "{args:?}: exit {status}, ran {ran}: {}",
                stderr.trim()
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}
