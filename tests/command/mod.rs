//! Command mode, end to end: the real binary against counting `sh` scripts.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{
    self, Run, Scratch, alive, fast, retry, run, run_job, wait_for_file, wait_until,
};

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

mod budget_and_reporting;
mod classification;
mod environment;
mod exit_statuses;
mod hold_stdout;
mod stdin;
mod supervision;
