//! What users of other retry tools bring (recur, curl --retry, urllib3, the CI retry
//! actions, Debian's retry), each against a real command or a real local HTTP server:
//! exit statuses, attempt and request counts, and the sleeps, measured from the
//! report's `delay_ms` (exact with `-j none`, repeatable with `--seed`) and from when
//! the requests arrived.

use std::time::Duration;

use crate::support::{Run, Scratch, read_json, retry};

mod command;
mod http;
mod refusals;

/// The report's `delay_ms` of each attempt that was followed by a sleep.
fn delays(report: &serde_json::Value) -> Vec<u64> {
    report["attempts"]
        .as_array()
        .expect("a list of attempts")
        .iter()
        .filter_map(|a| a["delay_ms"].as_u64())
        .collect()
}

/// `retry ARGS -- sh -c SCRIPT` with a report; the run and the report.
fn run_reported(s: &Scratch, args: &[&str], script: &str) -> (Run, serde_json::Value) {
    let report = s.path("report.json");
    let r = retry().args(args).report(&report).sh(script).run();
    let json = read_json(&report);
    (r, json)
}

/// The start of a script that counts its runs in `$D/count`; `$n` is this run's number.
fn count_run(s: &Scratch) -> String {
    format!(
        "D='{}'; echo run >> \"$D/count\"; n=$(wc -l < \"$D/count\")",
        s.dir.path().display()
    )
}

/// A script that counts its runs and exits with the status listed for that run (the
/// last one repeating).
fn counting(s: &Scratch, statuses: &[i32]) -> String {
    let list: Vec<String> = statuses.iter().map(|c| c.to_string()).collect();
    format!(
        "{}; set -- {}; i=0; for c in \"$@\"; do i=$((i+1)); last=$c; [ $i -eq $n ] && exit $c; done; exit $last",
        count_run(s),
        list.join(" ")
    )
}

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}
