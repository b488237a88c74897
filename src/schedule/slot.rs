//! One slot's run as its scheduler sees it: a child `retry --run-slot SLOT` with the
//! job's words, in a process group of its own (a terminal's Ctrl-C is the scheduler's
//! to pass on), tied to the scheduler (it ends its own tree when the scheduler dies:
//! [`run_slot`](mod@super::run_slot)). Its stdin is the write end of a pipe on which it
//! tells how it went ([`Report`]); its stdout and stderr are pipes when the scheduler
//! labels its command's output, else the scheduler's own. The scheduler reads every
//! pipe of every slot on one thread ([`sys::Inbox`]).

use std::ffi::OsString;
use std::process::Stdio;
use std::time::Instant;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::{Slot, slot_key};
use crate::config::schedule::Job;
use crate::domain::rfc3339_seconds;
use crate::sys;

/// What a slot's run tells its scheduler, one JSON line each.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "event")]
pub enum Report {
    /// The slot is this replica's (its claim was won) and its run begins.
    Started,
    /// How it ended: an outcome's label (`succeeded`, `gave_up`, `skipped`, `refused`,
    /// `stopped`), and the attempts it made.
    Ended { outcome: String, attempts: usize },
    /// Another replica has the slot, or had it: nothing of it is this replica's.
    Elsewhere,
    /// Stopped while it waited for its slot's time (started ahead): it did nothing.
    Withdrawn,
    /// The slot's trace was sent after its end, or failed to be (why): the scheduler
    /// says one warning per outage, not one per slot.
    Traced { failed: Option<String> },
}

/// Which of a slot's pipes a delivery came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pipe {
    Report,
    Stdout,
    Stderr,
}

/// The inbox numbers of a slot's pipes: the slot's own number times four, plus the pipe.
pub fn pipe_id(slot_id: u64, pipe: Pipe) -> u64 {
    slot_id * 4
        + match pipe {
            Pipe::Report => 0,
            Pipe::Stdout => 1,
            Pipe::Stderr => 2,
        }
}

/// Which slot and pipe an inbox number is.
pub fn of_pipe_id(id: u64) -> (u64, Pipe) {
    let pipe = match id % 4 {
        1 => Pipe::Stdout,
        2 => Pipe::Stderr,
        _ => Pipe::Report,
    };
    (id / 4, pipe)
}

/// How the scheduler runs its slots, the same for every job.
pub struct Spawner {
    /// This program, run again for each slot.
    pub exe: std::path::PathBuf,
    /// `--grace` for the slots' runs (a `--schedule` job's command line has its own).
    pub grace: Option<String>,
    /// The copy of the scheduler's stderr slot runs write their own lines to, when
    /// their command's output is labelled.
    pub log: Option<sys::LogCopy>,
}

/// A slot's run under way.
pub struct Child {
    pub slot: Slot,
    pub key: String,
    pub pid: u32,
    pub started: Instant,
    /// What it has reported so far.
    pub reports: Vec<Report>,
    /// Bytes of the report pipe not yet a whole line.
    pub partial: Vec<u8>,
    /// Its report pipe reached its end: the run is over (or gone).
    pub done: bool,
    /// How it exited, once reaped.
    pub exit: Option<sys::ChildState>,
    /// Its output pipes still open.
    pub pipes: usize,
    /// When the scheduler stops reading its output (a background process of the job
    /// that keeps a pipe open never holds the scheduler).
    pub drain_until: Option<Instant>,
}

impl Spawner {
    /// Starts the run of `slot` of `job`; its pipes go to `inbox` under `id`.
    pub fn start(
        &self,
        job: &Job,
        (slot, caught_up): (Slot, bool),
        id: u64,
        inbox: &mut sys::Inbox,
    ) -> anyhow::Result<Child> {
        let mut command = std::process::Command::new(&self.exe);
        command.args(self.args(slot, caught_up));
        let (report_read, report_write) =
            sys::pipe_pair().context("cannot make the slot's report pipe")?;
        command.stdin(Stdio::from(report_write));
        let labelled = self.log.is_some();
        if labelled {
            command.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        command
            .args(&job.args)
            .envs(job.env.iter().map(|(k, v)| (k, v)));
        let started = sys::start_tied(command).context("cannot start the slot's run of retry")?;
        let mut child = started.child;
        inbox
            .add(pipe_id(id, Pipe::Report), report_read)
            .context("cannot read the slot's report pipe")?;
        let mut pipes = 0;
        if let Some(out) = child.stdout.take() {
            inbox.add(pipe_id(id, Pipe::Stdout), out.into())?;
            pipes += 1;
        }
        if let Some(err) = child.stderr.take() {
            inbox.add(pipe_id(id, Pipe::Stderr), err.into())?;
            pipes += 1;
        }
        let key = match job.schedule.cron.is_reboot() {
            true => super::boot_key(&job.schedule.job, slot),
            false => slot_key(&job.schedule.job, slot),
        };
        Ok(Child {
            slot,
            key,
            pid: child.id(),
            started: Instant::now(),
            reports: Vec::new(),
            partial: Vec::new(),
            done: false,
            exit: None,
            pipes,
            drain_until: None,
        })
    }

    /// The slot run's own flags, before the job's words.
    fn args(&self, slot: Slot, caught_up: bool) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["--run-slot".into(), rfc3339_seconds(slot).into()];
        if caught_up {
            args.push("--caught-up".into());
        }
        if let Some(grace) = &self.grace {
            args.extend(["--grace".into(), grace.into()]);
        }
        if let Some(log) = &self.log {
            args.extend(["--slot-log-fd".into(), log.token().to_string().into()]);
        }
        args
    }
}

impl Child {
    /// Takes bytes of the report pipe; whole lines become reports (a line that is no
    /// report is left out: the run writes nothing else there).
    pub fn take_report_bytes(&mut self, bytes: &[u8]) {
        self.partial.extend_from_slice(bytes);
        while let Some(end) = self.partial.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            if let Ok(report) = serde_json::from_slice::<Report>(&line) {
                self.reports.push(report);
            }
        }
    }

    /// How the run ended, as it reported it.
    pub fn ended(&self) -> Option<(&str, usize)> {
        self.reports.iter().find_map(|r| match r {
            Report::Ended { outcome, attempts } => Some((outcome.as_str(), *attempts)),
            _ => None,
        })
    }

    /// Whether nothing of the slot was this scheduler's: another has it, or the run
    /// was stopped before the slot's time.
    pub fn elsewhere(&self) -> bool {
        self.reports
            .iter()
            .any(|r| matches!(r, Report::Elsewhere | Report::Withdrawn))
    }

    /// Whether everything of it is over: reported, reaped, and its output read.
    pub fn finished(&self) -> bool {
        self.done && self.exit.is_some() && self.pipes == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_are_read_line_by_line_whatever_the_chunks() {
        let slot: Slot = "2026-01-01T00:00:00Z".parse().unwrap();
        let mut child = Child {
            slot,
            key: "j@x".into(),
            pid: 1,
            started: Instant::now(),
            reports: Vec::new(),
            partial: Vec::new(),
            done: false,
            exit: None,
            pipes: 0,
            drain_until: None,
        };
        child.take_report_bytes(b"{\"event\":\"started\"}\n{\"event\":\"ended\",\"out");
        assert_eq!(child.reports, [Report::Started]);
        child.take_report_bytes(b"come\":\"gave_up\",\"attempts\":3}\n");
        assert_eq!(child.ended(), Some(("gave_up", 3)));
        assert!(!child.elsewhere());
        for id in [0, 7, 42] {
            for pipe in [Pipe::Report, Pipe::Stdout, Pipe::Stderr] {
                assert_eq!(of_pipe_id(pipe_id(id, pipe)), (id, pipe));
            }
        }
    }
}
