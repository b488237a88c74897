//! The command line of `retry --crontab FILE`: its options apply to every job of the
//! file, so an option every job would refuse is refused here, as the command line's,
//! never blamed on the file's first job line. (Options of HTTP mode are refused with
//! the other mode's, in [`curl_words::refuse_other_mode`](super::curl_words::refuse_other_mode):
//! a crontab's jobs are commands.)

use clap::parser::ValueSource;
use clap::{ArgMatches, Command};

use super::curl_words::{label, usage_error};
use crate::domain::StdinMode;

/// Options of one run or one job that a crontab's command line cannot hold, and why.
const PER_JOB: [(&str, &str); 4] = [
    (
        "once",
        "each slot of each job runs once already (its key is JOB@SLOT)",
    ),
    (
        "busy_exit",
        "a busy lock skips the slot, as under --schedule",
    ),
    (
        "until_failure",
        "a slot is one run to success, as under --schedule",
    ),
    (
        "job",
        "it names one job, and each line is a job: give --job NAME on the line",
    ),
];

fn given(matches: &ArgMatches, id: &str) -> bool {
    matches.value_source(id) == Some(ValueSource::CommandLine)
}

/// Refuses what no job of a crontab takes, when `--crontab` is on the command line.
pub fn refuse_per_job(cmd: &Command, matches: &ArgMatches) -> Result<(), clap::Error> {
    if !given(matches, "crontab") {
        return Ok(());
    }
    if let Some((id, why)) = PER_JOB.iter().find(|(id, _)| given(matches, id)) {
        let arg = cmd.get_arguments().find(|a| a.get_id() == id);
        let name = arg.map_or_else(|| format!("--{id}"), label);
        return Err(usage_error(format!(
            "{name}: cannot be used with --crontab; {why}"
        )));
    }
    let stdin = matches.get_one::<StdinMode>("stdin");
    if given(matches, "stdin") && stdin != Some(&StdinMode::Null) {
        return Err(usage_error(
            "--stdin: only null goes with --crontab (each slot's stdin is empty)".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    fn refusal(args: &[&str]) -> Option<String> {
        let mut all = vec!["retry", "--crontab", "jobs.crontab"];
        all.extend_from_slice(args);
        crate::cli::parse(all).err().map(|e| {
            let words: Vec<std::ffi::OsString> = Vec::new();
            crate::cli::usage::line(&e, &words)
        })
    }

    #[test]
    fn what_every_job_would_refuse_is_the_command_line_s() {
        let cases = [
            (
                &["--once", "k"][..],
                "--once: cannot be used with --crontab",
            ),
            (
                &["--busy-exit", "3"],
                "--busy-exit: cannot be used with --crontab",
            ),
            (
                &["--until-failure"],
                "--until-failure: cannot be used with --crontab",
            ),
            (&["--job", "x"], "--job: cannot be used with --crontab"),
            (
                &["--stdin", "replay"],
                "--stdin: only null goes with --crontab",
            ),
            (
                &["-H", "X: y"],
                "-H/--header: an option of HTTP mode, but each job of a crontab selects command mode",
            ),
        ];
        for (args, want) in cases {
            let line = refusal(args).unwrap_or_else(|| panic!("{args:?} was taken"));
            assert!(line.starts_with(want), "{args:?}: {line}");
        }
        for fine in [
            &["--stdin", "null"][..],
            &["-a", "3"],
            &["--lock", "/tmp/l"],
        ] {
            assert_eq!(refusal(fine), None, "{fine:?}");
        }
    }
}
