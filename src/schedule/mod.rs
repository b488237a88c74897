//! The scheduler behind `--schedule` and `--crontab`: one run per slot, from state
//! rather than the clock. `cron` owns parsing and slot arithmetic. Here each job's
//! [`agenda`] decides which slots are due, caught up, queued or replaced, as a pure
//! function of the times it is handed ([`catch_up`] the missed slots it runs); the
//! [`scheduler`] runs every job on one thread, each slot as a child `retry --run-slot`
//! ([`slot`] on the scheduler's side, [`run_slot`](mod@run_slot) on the slot's), the scheduler's own
//! calls to the state on another ([`records`]), the jobs' labelled output on a third
//! ([`output`]). [`table`] holds the jobs and what a reload makes of them; [`outcome`]
//! says how a slot ended, [`metrics`] serves `--metrics-listen`. Locks are taken per
//! slot, by the slot's run: the scheduler holds no lock, and a connection only while it
//! has statements to send.

mod agenda;
mod catch_up;
pub mod metrics;
mod outcome;
mod output;
mod records;
mod run_slot;
mod scheduler;
mod slot;
mod table;

use std::ffi::OsString;

use jiff::{SignedDuration, Timestamp};

use crate::config::crontab::Crontab;
use crate::config::schedule::Job;
use crate::config::{Config, ScheduleConfig};
use crate::cron::Zone;
use crate::domain::{ExitStatus, parse_rfc3339, rfc3339_seconds};
use crate::report;

pub use catch_up::{plan_catch_up, whole_second};
pub use records::read_only as read_state;

/// A slot: the instant CRON names.
pub type Slot = Timestamp;

/// Most slots one catch-up looks at (the newest kept): a seconds schedule over a long
/// window must not take the scheduler's memory.
pub const MAX_SLOTS: usize = 100_000;
/// How often the records of old slots are pruned.
const PRUNE_EVERY: SignedDuration = SignedDuration::from_hours(1);
/// Records are kept for the catch-up window and this long after it.
const KEEP_PAST_WINDOW: SignedDuration = SignedDuration::from_hours(24);

/// A slot's key: `JOB@SLOT`, SLOT in RFC 3339 UTC.
pub fn slot_key(job: &str, slot: Slot) -> String {
    format!("{job}@{}", rfc3339_seconds(slot))
}

/// The key of an `@reboot` run of a crontab's scheduler started at `start`:
/// `JOB@boot-START`, so no slot's key and no other start's is the same.
pub fn boot_key(job: &str, start: Slot) -> String {
    format!("{job}@boot-{}", rfc3339_seconds(start))
}

/// The slot a key names, if it is one of `job`'s.
pub fn slot_of_key(job: &str, key: &str) -> Option<Slot> {
    let rest = key.strip_prefix(job)?.strip_prefix('@')?;
    parse_rfc3339(rest)
}

/// The key of a job's first-start record. Slot keys are `JOB@SLOT` and job names
/// have no `@`, so no job's slot prefix matches it and pruning never removes it.
pub fn first_start_key(job: &str) -> String {
    format!("{job}#first-start")
}

/// The first slot after `now`; a schedule that never fires (`0 0 30 2 *`) is refused,
/// by the run and the dry run alike.
pub fn first_slot(config: &ScheduleConfig, now: Slot) -> anyhow::Result<Slot> {
    config.cron.next_after(now).ok_or_else(|| {
        anyhow::anyhow!(
            "--schedule: {:?} names no future time; check the day and month fields",
            config.cron.text
        )
    })
}

/// `--catch-up-window` as a span of time (100 years at most, as every duration).
pub fn window(config: &ScheduleConfig) -> SignedDuration {
    SignedDuration::try_from(config.window).unwrap_or(SignedDuration::from_hours(24 * 36_500))
}

/// A slot in the schedule's zone and in UTC.
pub fn show(slot: Slot, zone: &Zone) -> String {
    format!(
        "{} {} ({})",
        zone.local_time(slot).strftime("%Y-%m-%d %H:%M:%S"),
        zone.abbreviation(slot),
        rfc3339_seconds(slot)
    )
}

/// `--run-slot SLOT`: one slot of a job, run by its scheduler; 0, or 128+N when a
/// signal stopped it.
pub fn run_slot(config: &Config, schedule: &ScheduleConfig, slot: Slot) -> ExitStatus {
    run_slot::run(config, schedule, slot)
}

/// `--schedule`: the one job of the command line (`args`, its words after the program's
/// name, each slot's run takes again), until a stopping signal.
pub fn run(schedule: &ScheduleConfig, args: &[OsString]) -> anyhow::Result<ExitStatus> {
    first_slot(schedule, Timestamp::now())?;
    if let Some(dir) = schedule.state.local_dir() {
        report::info(&format!(
            "slots are exactly once on this host only (state directory {}); replicas must share --state postgres://…",
            dir.display()
        ));
    }
    let job = Job {
        schedule: schedule.clone(),
        args: args.to_vec(),
        env: Vec::new(),
        line: None,
    };
    let options = scheduler::Options {
        grace: None,
        labelled: schedule.labelled,
        metrics_listen: schedule.metrics_listen,
        title: None,
    };
    let source = scheduler::Source {
        path: None,
        reload: None,
    };
    scheduler::run(vec![job], source, options)
}

/// How a crontab's scheduler runs, from its command line.
pub struct CrontabOptions {
    pub grace: std::time::Duration,
    /// `--job-output raw`.
    pub raw: bool,
    pub metrics_listen: Option<std::net::SocketAddr>,
}

/// `--crontab`: every job of `tab` until a stopping signal; SIGHUP, SIGUSR2 and a
/// change to the file call `reload`, and a crontab that reads replaces the table.
pub fn run_crontab(
    tab: Crontab,
    reload: &dyn Fn() -> anyhow::Result<Crontab>,
    options: CrontabOptions,
) -> anyhow::Result<ExitStatus> {
    for warning in &tab.warnings {
        report::notice(&format!("warning: {warning}"));
    }
    let title = format!(
        "crontab {}: {} job{}; SIGHUP, SIGUSR2 or a change to the file reads it again",
        tab.path.display(),
        tab.jobs.len(),
        if tab.jobs.len() == 1 { "" } else { "s" }
    );
    let jobs_again = || reload().map(|tab| tab.jobs);
    let source = scheduler::Source {
        path: Some(tab.path.clone()),
        reload: Some(&jobs_again),
    };
    let options = scheduler::Options {
        grace: Some(options.grace),
        labelled: !options.raw,
        metrics_listen: options.metrics_listen,
        title: Some(title),
    };
    scheduler::run(tab.jobs, source, options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_key_names_its_job_and_slot_and_no_other_key_reads_as_a_slot() {
        let slot: Slot = "2026-03-01T02:30:00.400Z".parse().unwrap();
        let key = slot_key("report", slot);
        assert_eq!(key, "report@2026-03-01T02:30:00Z");
        assert_eq!(
            slot_of_key("report", &key).map(|s| s.to_string()),
            Some("2026-03-01T02:30:00Z".into())
        );
        assert_eq!(slot_of_key("rep", &key), None, "another job's prefix");
        assert_eq!(slot_of_key("report", &boot_key("report", slot)), None);
        assert_eq!(slot_of_key("report", &first_start_key("report")), None);
        assert!(
            !first_start_key("report").starts_with("report@"),
            "never pruned"
        );
    }
}
