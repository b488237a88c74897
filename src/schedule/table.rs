//! The scheduler's table of jobs: each job with its agenda and where its start stands,
//! and what a reload makes of it (unchanged jobs go on, changed and removed ones retire
//! once their running slots end, new and changed ones start). The file a crontab is read
//! from is looked at for a change by its metadata, and read again only when that moved.

use std::time::SystemTime;

use super::agenda::Agenda;
use super::{Slot, records};
use crate::config::schedule::Job;

/// How long before its slot a slot's run is started: enough for a `retry` to start and
/// read its options on a busy machine, so that at the slot only its claim, its locks and
/// its command are left to do. The run waits for its slot itself.
pub const LEAD: std::time::Duration = std::time::Duration::from_millis(500);

/// Where a job's start stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Its records are being read.
    Starting,
    Running,
    /// Its state could not be read at start: it does not run.
    Failed,
}

/// A job of the table.
pub struct Entry {
    /// The scheduler's number for it (a job changed by a reload is a new entry).
    pub id: u64,
    pub job: Job,
    pub agenda: Agenda,
    pub phase: Phase,
    /// A reload removed or changed it: it goes once its running slots end.
    pub retired: bool,
    /// When its old records were last pruned.
    pub pruned: Slot,
    pub metrics: Option<super::metrics::Metrics>,
}

impl Entry {
    pub fn new(id: u64, job: Job, start: Slot, metrics: Option<&super::metrics::Metrics>) -> Entry {
        let metrics = metrics.map(|m| m.for_job(&job.schedule.job));
        Entry {
            id,
            agenda: Agenda::new(job.schedule.clone(), start, LEAD),
            job,
            phase: Phase::Starting,
            retired: false,
            pruned: start,
            metrics,
        }
    }

    /// The ask that reads its records at start.
    pub fn begin(&self, start: Slot) -> records::Ask {
        records::Ask::Begin {
            id: self.id,
            schedule: self.job.schedule.clone(),
            start,
            success: self.metrics.is_some(),
        }
    }
}

/// What a reload did, for its line.
#[derive(Debug, Default)]
pub struct Reloaded {
    pub started: Vec<Job>,
    pub changed: Vec<String>,
    pub stopped: Vec<String>,
}

/// Compares the table's jobs with a file read again: which of `new` start, and which
/// entries retire (by number). A job whose name stays but whose line changed is both.
pub fn diff(entries: &[Entry], new: Vec<Job>) -> (Reloaded, Vec<u64>) {
    let live: Vec<&Entry> = entries.iter().filter(|e| !e.retired).collect();
    let mut reloaded = Reloaded::default();
    let mut retire = Vec::new();
    for entry in &live {
        match new
            .iter()
            .find(|j| j.schedule.job == entry.job.schedule.job)
        {
            Some(job) if job.same_as(&entry.job) => {}
            Some(_) => {
                reloaded.changed.push(entry.job.schedule.job.clone());
                retire.push(entry.id);
            }
            None => {
                reloaded.stopped.push(entry.job.schedule.job.clone());
                retire.push(entry.id);
            }
        }
    }
    for job in new {
        let kept = live
            .iter()
            .any(|e| e.job.schedule.job == job.schedule.job && job.same_as(&e.job));
        if !kept {
            reloaded.started.push(job);
        }
    }
    (reloaded, retire)
}

/// The file as last looked at: where it leads (a link followed), its size and times.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint(Option<(u64, u64, u64, Option<SystemTime>)>);

impl Fingerprint {
    pub fn of(path: &std::path::Path) -> Fingerprint {
        let seen = std::fs::metadata(path).ok().map(|meta| {
            let (dev, ino) = crate::sys::path_identity(path).unwrap_or((0, 0));
            (dev, ino, meta.len(), meta.modified().ok())
        });
        Fingerprint(seen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::schedule::Line;
    use crate::cron::CronSchedule;

    fn job(name: &str, cron: &str, command: &str) -> Job {
        let schedule = crate::config::ScheduleConfig {
            cron: CronSchedule::parse(cron, crate::cron::Zone::utc()).unwrap(),
            job: name.into(),
            catch_up: crate::domain::CatchUp::Latest,
            window: std::time::Duration::from_secs(60),
            overlap: crate::domain::Overlap::Skip,
            grace: std::time::Duration::from_secs(1),
            state: crate::state::parse_state_target("/nonexistent").unwrap(),
            metrics_listen: None,
            run_slot: None,
            caught_up: false,
            labelled: false,
        };
        Job {
            schedule,
            args: vec![command.into()],
            env: Vec::new(),
            line: Some(Line {
                number: 1,
                own: Vec::new(),
                command: command.into(),
                shell: ["/bin/sh".into(), "-c".into()],
                random_delay: None,
            }),
        }
    }

    #[test]
    fn a_reload_keeps_unchanged_jobs_and_tells_changed_from_removed_and_new() {
        let start: Slot = "2026-01-01T00:00:00Z".parse().unwrap();
        let entries: Vec<Entry> = [
            job("keep", "@every 10s", "a"),
            job("edit", "@every 10s", "b"),
            job("drop", "@every 10s", "c"),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, j)| Entry::new(i as u64, j, start, None))
        .collect();
        let new = vec![
            job("keep", "@every 10s", "a"),
            job("edit", "@every 1s", "b"),
            job("add", "@every 10s", "d"),
        ];
        let (reloaded, retire) = diff(&entries, new);
        assert_eq!(retire, [1, 2]);
        assert_eq!(reloaded.changed, ["edit"]);
        assert_eq!(reloaded.stopped, ["drop"]);
        let started: Vec<&str> = reloaded
            .started
            .iter()
            .map(|j| j.schedule.job.as_str())
            .collect();
        assert_eq!(started, ["edit", "add"]);
    }
}
