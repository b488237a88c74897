//! The scheduler: every job of a crontab (or the one job of `--schedule`) on one thread.
//! Each job's [`Agenda`](super::agenda::Agenda) says what is due; each slot runs as a
//! child `retry` ([`slot`](super::slot)), whose pipes, and the signals' wake-up, one
//! wait reads ([`sys::Inbox`]). The calls to the state are another thread's
//! ([`records`](super::records)), the jobs' labelled output a third's
//! ([`output`](super::output)), the metrics a fourth's: a constant number of threads
//! however many jobs. SIGINT and SIGTERM stop it: no new slot starts, and each running
//! slot's run is told (it has `--grace` to finish its attempt and starts no other); a
//! second signal is passed on too, and its runs end at once. SIGHUP, SIGUSR2 and a
//! change to a crontab's file read it again.

mod children;
mod stop;

use stop::plural;

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use jiff::Timestamp;

use super::agenda::{Step, Tally};
use super::metrics::Metrics;
use super::output::{Label, Lines, Writer};
use super::records::{Answer, Ask, Records};
use super::slot::{Child, Spawner};
use super::table::{Entry, Fingerprint, Phase, diff};
use super::{KEEP_PAST_WINDOW, PRUNE_EVERY, Slot, window};
use crate::config::schedule::Job;
use crate::domain::{ExitStatus, Signal};
use crate::{report, signals, sys};

/// How often a crontab's file is looked at for a change.
const FILE_EVERY: Duration = Duration::from_secs(2);

/// How the scheduler runs, from its command line.
pub struct Options {
    /// `--grace`, handed to each slot's run (`None`: the job's words carry their own).
    pub grace: Option<Duration>,
    /// The jobs' output is labelled (`--job-output labelled`).
    pub labelled: bool,
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// What the start line says the table is.
    pub title: Option<String>,
}

/// Where the table comes from, and how to read it again (a crontab's file).
pub struct Source<'a> {
    pub path: Option<std::path::PathBuf>,
    pub reload: Option<&'a dyn Fn() -> anyhow::Result<Vec<Job>>>,
}

/// A slot's run under way, with what labels its output.
struct Running {
    entry: u64,
    child: Child,
    label: Label,
    out: Lines,
    err: Lines,
    /// Its run said it ended: its job's agenda and metrics were told then, not when the
    /// process is gone (a traced run still sends its trace).
    told: bool,
}

struct Scheduler<'a> {
    entries: Vec<Entry>,
    children: HashMap<u64, Running>,
    next_id: u64,
    inbox: sys::Inbox,
    spawner: Spawner,
    records: Records,
    writer: Option<Writer>,
    metrics: Option<Metrics>,
    stop: Option<Signal>,
    /// How long a slot's run has to finish once stopped, for the stop's line.
    grace: Option<Duration>,
    source: Source<'a>,
    json: bool,
    /// Whether the slots' traces fail to be sent: one warning per outage.
    traces: crate::traces::Warnings,
}

/// Runs `jobs` until a stopping signal: 128+N then; `Err` (exit 125) when no job can
/// run (the state could not be read at start).
pub fn run(jobs: Vec<Job>, source: Source<'_>, options: Options) -> anyhow::Result<ExitStatus> {
    // Bound first: a port that cannot be had is exit 125 before anything else happens.
    let metrics = match (options.metrics_listen, jobs.first()) {
        (Some(addr), Some(first)) => {
            let metrics = Metrics::new(&first.schedule.job);
            let bound = super::metrics::serve(addr, metrics.clone())?;
            report::info(&format!(
                "metrics at http://{bound}/metrics, health at /healthz"
            ));
            metrics.alive();
            Some(metrics)
        }
        _ => None,
    };
    let spawner = Spawner {
        exe: std::env::current_exe().context("cannot find retry's own executable")?,
        grace: options.grace.map(|g| format!("{}ms", g.as_millis())),
        log: if options.labelled {
            Some(sys::LogCopy::of_stderr().context("cannot copy stderr for the slot runs")?)
        } else {
            None
        },
    };
    let mut scheduler = Scheduler {
        entries: Vec::new(),
        children: HashMap::new(),
        next_id: 0,
        inbox: sys::Inbox::new(),
        spawner,
        records: Records::start().context("cannot start the state's thread")?,
        writer: if options.labelled {
            Some(Writer::start().context("cannot start the output's thread")?)
        } else {
            None
        },
        metrics,
        stop: None,
        grace: options
            .grace
            .or_else(|| jobs.first().map(|j| j.schedule.grace)),
        source,
        json: report::config().json,
        traces: crate::traces::Warnings::default(),
    };
    if let Some(title) = &options.title {
        report::info(title);
    }
    if scheduler.source.reload.is_some() {
        signals::reload_on_request().context("cannot install the SIGUSR2 handler")?;
    }
    let now = Timestamp::now();
    for job in jobs {
        scheduler.add(job, now, true);
    }
    scheduler.run()
}

impl Scheduler<'_> {
    fn run(&mut self) -> anyhow::Result<ExitStatus> {
        let mut seen = self.source.path.as_deref().map(Fingerprint::of);
        let mut looked = Instant::now();
        loop {
            if let Some(metrics) = &self.metrics {
                metrics.alive();
            }
            self.signals();
            if self.stop.is_none() {
                self.reload_if_asked(&mut seen, &mut looked);
            }
            for answer in self.records.answers() {
                self.answer(answer);
            }
            if self.stop.is_none() {
                self.ticks();
            }
            self.reap();
            self.finish();
            self.entries.retain(|e| !(e.retired && e.agenda.idle()));
            if let Some(status) = self.ended()? {
                return Ok(status);
            }
            self.wait();
        }
    }

    /// Adds `job` to the table; its records are read before anything of it is due. An
    /// `@reboot` job needs none, and runs now when the scheduler starts (`at_start`).
    fn add(&mut self, job: Job, now: Slot, at_start: bool) {
        let mut entry = Entry::new(self.next_id, job, now, self.metrics.as_ref());
        self.next_id += 1;
        let id = entry.id;
        if entry.job.schedule.cron.is_reboot() {
            entry.phase = Phase::Running;
            let steps = entry.agenda.begin_boot(at_start);
            self.entries.push(entry);
            return self.steps(id, steps);
        }
        self.records.ask(entry.begin(now));
        self.entries.push(entry);
    }

    /// A reload asked for (SIGHUP, SIGUSR2) or a change to the file.
    fn reload_if_asked(&mut self, seen: &mut Option<Fingerprint>, looked: &mut Instant) {
        let Some(reload) = self.source.reload else {
            return;
        };
        let asked = signals::take_reload();
        let changed = looked.elapsed() >= FILE_EVERY && {
            *looked = Instant::now();
            let now = self.source.path.as_deref().map(Fingerprint::of);
            std::mem::replace(seen, now) != *seen
        };
        if !(asked || changed) {
            return;
        }
        // A SIGHUP for an edit: the file's change is read now, not again at the next look.
        *seen = self.source.path.as_deref().map(Fingerprint::of);
        let path = self.source.path.as_deref().map(|p| p.display().to_string());
        let path = path.unwrap_or_default();
        let jobs = match reload() {
            Ok(jobs) => jobs,
            Err(err) => {
                report::error(&format!("{err:#}; the jobs go on as they were"));
                return;
            }
        };
        let (reloaded, retire) = diff(&self.entries, jobs);
        for entry in self.entries.iter_mut().filter(|e| retire.contains(&e.id)) {
            entry.retired = true;
            entry.agenda.retire();
        }
        self.withdraw_ahead(&retire);
        let now = Timestamp::now();
        let started = reloaded.started.len() - reloaded.changed.len();
        for job in reloaded.started {
            self.add(job, now, false);
        }
        report::info(&reread_line(
            &path,
            started,
            &reloaded.changed,
            &reloaded.stopped,
        ));
    }

    fn answer(&mut self, answer: Answer) {
        let (id, steps) = match answer {
            Answer::Begun { id, result } => {
                let Some(entry) = self.entries.iter_mut().find(|e| e.id == id) else {
                    return;
                };
                match result {
                    Ok(begun) if !entry.retired => {
                        entry.phase = Phase::Running;
                        if let (Some(metrics), Some(at)) = (&entry.metrics, begun.last_success) {
                            metrics.succeeded_at(at);
                        }
                        (id, entry.agenda.begin(&begun.handled, begun.first_start))
                    }
                    Ok(_) => return,
                    Err(why) => {
                        entry.phase = Phase::Failed;
                        report::error(&format!("{}: {why}; it does not run", entry.job.describe()));
                        return;
                    }
                }
            }
            Answer::Records { id, result } => {
                let Some(entry) = self.entries.iter_mut().find(|e| e.id == id) else {
                    return;
                };
                (id, entry.agenda.records(result))
            }
        };
        self.steps(id, steps);
    }

    /// Each job whose next slot has come.
    fn ticks(&mut self) {
        let now = Timestamp::now();
        let due: Vec<u64> = self
            .entries
            .iter()
            .filter(|e| e.agenda.wake_at().is_some_and(|at| at <= now))
            .map(|e| e.id)
            .collect();
        for id in due {
            let Some(entry) = self.entries.iter_mut().find(|e| e.id == id) else {
                continue;
            };
            let steps = entry.agenda.tick(now);
            if now.duration_since(entry.pruned) > PRUNE_EVERY {
                entry.pruned = now;
                self.records.ask(Ask::Prune {
                    id,
                    schedule: entry.job.schedule.clone(),
                    before: now - window(&entry.job.schedule) - KEEP_PAST_WINDOW,
                });
            }
            self.steps(id, steps);
        }
    }

    /// Does what a job's agenda said.
    fn steps(&mut self, id: u64, steps: Vec<Step>) {
        for step in steps {
            let Some(entry) = self.entries.iter().find(|e| e.id == id) else {
                return;
            };
            match step {
                Step::Start { slot, caught_up } => self.start(id, slot, caught_up),
                Step::Replace(slot) => self.replace(id, slot),
                Step::ReadRecords => self.records.ask(Ask::Records {
                    id,
                    schedule: entry.job.schedule.clone(),
                }),
                Step::Say(text) => report::info(&text),
                Step::Error(text) => report::error(&text),
                Step::Tally(tally) => tally_into(entry.metrics.as_ref(), tally),
            }
        }
    }

    /// Whether the scheduler is done: stopped with nothing running, or no job left.
    fn ended(&self) -> anyhow::Result<Option<ExitStatus>> {
        if let Some(sig) = self.stop {
            if self.children.is_empty() {
                let status = ExitStatus::of_signal(sig);
                report::info(&format!("stopped by {sig}; exit status {status}"));
                return Ok(Some(status));
            }
            return Ok(None);
        }
        let failed = self
            .entries
            .iter()
            .filter(|e| e.phase == Phase::Failed)
            .count();
        if failed > 0 && failed == self.entries.len() && self.children.is_empty() {
            anyhow::bail!(
                "{failed} job{} stopped on an error: nothing to run",
                plural(failed)
            );
        }
        Ok(None)
    }
}

fn tally_into(metrics: Option<&Metrics>, tally: Tally) {
    let Some(metrics) = metrics else {
        return;
    };
    match tally {
        Tally::CaughtUp => metrics.caught_up(),
        Tally::Dropped(n) => metrics.dropped(n),
        Tally::Next(slot) => metrics.next_slot(SystemTime::from(slot)),
    }
}

/// What a crontab read again changed, in one line.
fn reread_line(path: &str, started: usize, changed: &[String], stopped: &[String]) -> String {
    let named = |names: &[String]| {
        if names.is_empty() {
            String::new()
        } else {
            format!(" ({})", names.join(", "))
        }
    };
    format!(
        "crontab {path}: read again; {started} job{} started, {} changed{}, {} stopped{} (running slots of changed and stopped jobs finish)",
        plural(started),
        changed.len(),
        named(changed),
        stopped.len(),
        named(stopped),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crontab_read_again_is_one_line_naming_what_changed() {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            reread_line("/etc/crontab", 1, &names(&["report"]), &[]),
            "crontab /etc/crontab: read again; 1 job started, 1 changed (report), 0 stopped \
             (running slots of changed and stopped jobs finish)"
        );
        assert_eq!(
            reread_line("c", 0, &[], &names(&["a", "b"])),
            "crontab c: read again; 0 jobs started, 0 changed, 2 stopped (a, b) \
             (running slots of changed and stopped jobs finish)"
        );
    }
}
