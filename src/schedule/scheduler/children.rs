//! The slots' runs as the scheduler keeps them: starting one, telling it it is
//! replaced, reaping it, reading its pipes (its reports, its command's labelled output),
//! and ending it (its last lines, its metrics, its job's agenda told).

use std::time::{Duration, Instant, SystemTime};

use jiff::Timestamp;

use super::{FILE_EVERY, Running, Scheduler};
use crate::domain::{Signal, rfc3339_seconds};
use crate::schedule::Slot;
use crate::schedule::outcome::Outcome;
use crate::schedule::output::{Label, Lines, Stream};
use crate::schedule::slot::{Pipe, Report, of_pipe_id, pipe_id};
use crate::{report, sys};

/// How long the output of a slot whose run has ended is still read: a background
/// process of the job that keeps a pipe open never holds the scheduler.
const DRAIN_FOR: Duration = Duration::from_secs(1);
/// Longest wait: the wall clock is compared at least this often, so a clock step or a
/// suspended host is noticed.
const WAKE_EVERY: Duration = Duration::from_secs(60);

impl Scheduler<'_> {
    /// Starts the run of `slot`; one that cannot start is an error line, and ended.
    pub(super) fn start(&mut self, id: u64, slot: Slot, caught_up: bool) {
        let Some(entry) = self.entries.iter().find(|e| e.id == id) else {
            return;
        };
        let slot_id = self.next_id;
        self.next_id += 1;
        match self
            .spawner
            .start(&entry.job, (slot, caught_up), slot_id, &mut self.inbox)
        {
            Ok(child) => {
                let label = Label {
                    job: entry.job.schedule.job.clone(),
                    key: child.key.clone(),
                    slot: rfc3339_seconds(slot),
                    json: self.json,
                };
                let running = Running {
                    entry: id,
                    child,
                    label,
                    out: Lines::default(),
                    err: Lines::default(),
                    told: false,
                };
                self.children.insert(slot_id, running);
            }
            Err(err) => {
                let key = crate::schedule::slot_key(&entry.job.schedule.job, slot);
                report::with_slot(Some(key), || {
                    report::error(&format!("{err:#}; the slot did not run"))
                });
                self.ended_slot(id, slot);
            }
        }
    }

    /// Tells the run of `slot` of job `id` that a new slot replaces it.
    pub(super) fn replace(&self, id: u64, slot: Slot) {
        let found = self
            .children
            .values()
            .find(|r| r.entry == id && r.child.slot == slot);
        let Some(pid) = found.and_then(|r| i32::try_from(r.child.pid).ok()) else {
            return;
        };
        match sys::REPLACE_SIGNAL.and_then(sys::signal_by_number) {
            Some(sig) => sys::signal_process(pid, sig),
            // No signal says "replaced" (Windows): the run is stopped as a stop stops it.
            None => {
                sys::signal_group(pid, sys::passed_on(Signal::TERM.number()));
            }
        }
    }

    /// Reaps the runs that exited (and any orphan adopted, as PID 1).
    pub(super) fn reap(&mut self) {
        while let Some((pid, state)) = sys::reap_any() {
            if let Some(running) = self
                .children
                .values_mut()
                .find(|r| i32::try_from(r.child.pid) == Ok(pid))
            {
                running.child.exit = Some(state);
            }
        }
        for running in self.children.values_mut() {
            let child = &mut running.child;
            if child.done && child.exit.is_none() {
                if let Ok(Some(state)) = sys::try_wait(child.pid as i32) {
                    child.exit = Some(state);
                }
            }
        }
    }

    /// Ends the runs that are over: their output's last lines, their metrics, their agenda.
    pub(super) fn finish(&mut self) {
        let now = Instant::now();
        let over: Vec<u64> = self
            .children
            .iter_mut()
            .filter_map(|(id, r)| {
                let drained = r.child.drain_until.is_some_and(|until| now >= until);
                if drained {
                    r.child.pipes = 0;
                }
                r.child.finished().then_some(*id)
            })
            .collect();
        for slot_id in over {
            let Some(mut running) = self.children.remove(&slot_id) else {
                continue;
            };
            for pipe in [Pipe::Report, Pipe::Stdout, Pipe::Stderr] {
                self.inbox.remove(pipe_id(slot_id, pipe));
            }
            self.flush_partial(&mut running);
            if !running.told {
                self.count(&running);
                self.ended_slot(running.entry, running.child.slot);
            }
        }
    }

    /// A slot's run said it ended: its metrics and its job's agenda are told now, so
    /// that what the process does after (sending its trace) delays no slot.
    fn run_ended(&mut self, slot_id: u64) {
        let Some(running) = self.children.get_mut(&slot_id) else {
            return;
        };
        if std::mem::replace(&mut running.told, true) {
            return;
        }
        let (entry, slot) = (running.entry, running.child.slot);
        if let Some(running) = self.children.get(&slot_id) {
            self.count(running);
        }
        self.ended_slot(entry, slot);
    }

    /// A slot's trace was sent, or not: the first failure of an outage is one warning.
    fn traced(&mut self, slot_id: u64, failed: Option<String>) {
        let key = self.children.get(&slot_id).map(|r| r.child.key.clone());
        let sent = failed.map_or(Ok(()), Err);
        if let Some(warning) = self.traces.settle(&sent) {
            report::with_slot(key, || report::notice(&warning));
        }
    }

    pub(super) fn ended_slot(&mut self, id: u64, slot: Slot) {
        let Some(entry) = self.entries.iter_mut().find(|e| e.id == id) else {
            return;
        };
        let steps = entry.agenda.ended(slot);
        // Once stopping, nothing more starts.
        if self.stop.is_none() {
            self.steps(id, steps);
        }
    }

    /// The slot's end in the metrics, as its run reported it (nothing for a slot
    /// another replica has, or one a stop interrupted).
    pub(super) fn count(&self, running: &Running) {
        let child = &running.child;
        let Some(metrics) = self
            .entries
            .iter()
            .find(|e| e.id == running.entry)
            .and_then(|e| e.metrics.as_ref())
        else {
            return;
        };
        if child.elsewhere() {
            return;
        }
        match child.ended() {
            Some(("skipped", 0)) => metrics.slot_skipped(),
            Some((label, attempts)) => {
                metrics.slot_ended(
                    Outcome::from_label(label),
                    attempts,
                    child.started.elapsed(),
                );
            }
            None => {
                report::with_slot(Some(child.key.clone()), || {
                    report::error(&format!(
                        "the slot's run of retry ended without saying how ({}); the slot has no record and counts as missed",
                        describe_exit(child.exit)
                    ))
                });
                metrics.slot_ended(None, 0, child.started.elapsed());
            }
        }
    }

    /// Waits for the next slot, a pipe, a signal or an answer, and takes what the pipes sent.
    pub(super) fn wait(&mut self) {
        let timeout = self.timeout();
        let held = self.writer.as_mut().is_some_and(|w| !w.flush());
        // While the output's thread cannot take more, the jobs' output waits in their pipes.
        let wanted = |id: u64| !held || of_pipe_id(id).1 == Pipe::Report;
        for (id, delivery) in self.inbox.wait(timeout, wanted) {
            self.deliver(id, delivery);
        }
    }

    pub(super) fn timeout(&self) -> Duration {
        let now = Timestamp::now();
        let next_slot = self
            .entries
            .iter()
            .filter_map(|e| e.agenda.wake_at())
            .min()
            .map(|at| Duration::try_from(at.duration_since(now)).unwrap_or(Duration::ZERO));
        let drain = self
            .children
            .values()
            .filter_map(|r| r.child.drain_until)
            .min()
            .map(|until| until.saturating_duration_since(Instant::now()));
        let file = self.source.reload.map(|_| FILE_EVERY);
        next_wait(next_slot, drain, file)
    }

    pub(super) fn deliver(&mut self, id: u64, delivery: sys::Delivery) {
        let (slot_id, pipe) = of_pipe_id(id);
        let Some(running) = self.children.get_mut(&slot_id) else {
            return;
        };
        match (pipe, delivery) {
            (Pipe::Report, sys::Delivery::Bytes(bytes)) => {
                let before = running.child.reports.len();
                running.child.take_report_bytes(&bytes);
                let new = running.child.reports[before..].to_vec();
                for report in new {
                    match report {
                        Report::Started => self.started(slot_id),
                        Report::Ended { .. } => self.run_ended(slot_id),
                        Report::Traced { failed } => self.traced(slot_id, failed),
                        Report::Elsewhere | Report::Withdrawn => {}
                    }
                }
            }
            (Pipe::Report, sys::Delivery::End) => {
                running.child.done = true;
                running.child.drain_until = Some(Instant::now() + DRAIN_FOR);
            }
            (pipe, sys::Delivery::Bytes(bytes)) => {
                let lines = match pipe {
                    Pipe::Stdout => running.out.take(&bytes),
                    _ => running.err.take(&bytes),
                };
                let stream = stream_of(pipe);
                for line in lines {
                    let text = running.label.line(&line, stream);
                    if let Some(writer) = &mut self.writer {
                        writer.write(stream, text);
                    }
                }
            }
            (pipe, sys::Delivery::End) => {
                running.child.pipes = running.child.pipes.saturating_sub(1);
                let last = match pipe {
                    Pipe::Stdout => running.out.end(),
                    _ => running.err.end(),
                };
                if let (Some(line), Some(writer)) = (last, &mut self.writer) {
                    writer.write(stream_of(pipe), running.label.line(&line, stream_of(pipe)));
                }
            }
        }
    }

    /// The run of a slot said the slot is this replica's: its start in the metrics.
    pub(super) fn started(&self, slot_id: u64) {
        let Some(running) = self.children.get(&slot_id) else {
            return;
        };
        let metrics = self
            .entries
            .iter()
            .find(|e| e.id == running.entry)
            .and_then(|e| e.metrics.as_ref());
        if let Some(metrics) = metrics {
            metrics.slot_started(SystemTime::now());
        }
    }

    /// The last line of a pipe whose reading stopped without its end.
    pub(super) fn flush_partial(&mut self, running: &mut Running) {
        for (lines, stream) in [
            (&mut running.out, Stream::Stdout),
            (&mut running.err, Stream::Stderr),
        ] {
            if let (Some(line), Some(writer)) = (lines.end(), &mut self.writer) {
                writer.write(stream, running.label.line(&line, stream));
            }
        }
    }
}

fn stream_of(pipe: Pipe) -> Stream {
    match pipe {
        Pipe::Stdout => Stream::Stdout,
        _ => Stream::Stderr,
    }
}

fn describe_exit(exit: Option<sys::ChildState>) -> String {
    match exit {
        Some(sys::ChildState::Exited(code)) => format!("exit status {code}"),
        Some(sys::ChildState::Signaled(sig)) => format!("killed by {}", Signal::new(sig)),
        _ => "it is gone".into(),
    }
}

/// How long the loop may wait: until the next slot (rounded up: polls count whole
/// milliseconds, and a wake-up is never early), the end of a draining run's output,
/// the next look at the file, and never more than [`WAKE_EVERY`].
fn next_wait(slot: Option<Duration>, drain: Option<Duration>, file: Option<Duration>) -> Duration {
    let ceil = |d: Duration| Duration::from_millis(d.as_nanos().div_ceil(1_000_000) as u64);
    [slot.map(ceil), drain, file]
        .into_iter()
        .flatten()
        .fold(WAKE_EVERY, Duration::min)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loop_waits_for_what_comes_first_and_never_wakes_before_a_slot() {
        let ms = Duration::from_millis;
        assert_eq!(next_wait(None, None, None), WAKE_EVERY);
        assert_eq!(next_wait(Some(ms(250)), None, Some(ms(2000))), ms(250));
        assert_eq!(
            next_wait(Some(Duration::from_micros(250_100)), None, None),
            ms(251)
        );
        assert_eq!(next_wait(Some(ms(900)), Some(ms(40)), None), ms(40));
        assert_eq!(
            next_wait(Some(Duration::from_secs(3600)), None, None),
            WAKE_EVERY
        );
        assert!(
            next_wait(Some(Duration::from_nanos(1)), None, None) >= ms(1),
            "a poll never ends early"
        );
    }

    #[test]
    fn an_exit_is_told_by_its_status_or_its_signal() {
        assert_eq!(
            describe_exit(Some(sys::ChildState::Exited(3))),
            "exit status 3"
        );
        assert_eq!(
            describe_exit(Some(sys::ChildState::Signaled(9))),
            "killed by SIGKILL"
        );
        assert_eq!(describe_exit(None), "it is gone");
    }
}
