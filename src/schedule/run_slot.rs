//! `--run-slot SLOT`: one slot's run, in a process of its own that its scheduler
//! started ([`slot`](super::slot)). It is tied to the scheduler: SIGHUP, whatever was
//! inherited, is its parent-death signal (and where the system has none, the end of its
//! report pipe tells it), and it ends its tree then as any stop does, its attempt's
//! group and what it adopted as a subreaper. A first SIGINT or SIGTERM, which its
//! scheduler passes on, is held back: no new attempt starts and no wait goes on, but
//! the attempt under way has `--grace` to finish; a second ends it at once. The slot's
//! key is its claim: a slot another scheduler has is left without a word (but at
//! `-v`). Its start line comes when its attempts begin, its end line when it ends, and
//! both go to its scheduler as [`Report`]s on its stdin. A traced slot's trace is sent
//! after its end is told (the scheduler moves on at once), and how that went is told too.

use std::io::Write;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant, SystemTime};

use serde_json::json;

use super::outcome::Ended;
use super::slot::Report;
use super::{Slot, slot_key};
use crate::config::{Config, ScheduleConfig, SlotGate};
use crate::domain::{ExitStatus, Signal, human};
use crate::gate::SkipWhy;
use crate::run::{self, SlotRun};
use crate::{report, signals, sys};

/// How often the watcher looks at the grace and at the scheduler.
const WATCH_EVERY: Duration = Duration::from_millis(200);
/// A command that starts later than this after its slot (and its splay) says so.
const LATE: Duration = Duration::from_secs(1);

/// Runs `slot` of the job `schedule` describes; 0, or 128+N when a signal stopped it.
pub fn run(config: &Config, schedule: &ScheduleConfig, slot: Slot) -> ExitStatus {
    let scheduler = sys::report_channel();
    if let Err(e) = sys::tie_to_parent() {
        report::verbose(1, &format!("cannot set the parent-death signal: {e}"));
    }
    if scheduler.as_ref().is_some_and(sys::reader_left) {
        // The scheduler died before the signal was set: nothing of the slot starts.
        return ExitStatus::of_signal(Signal::HUP);
    }
    signals::hold_stops(true);
    // A crontab's @reboot line: this scheduler's start is its slot, and it claims nothing.
    let boot = schedule.cron.is_reboot();
    let key = match boot {
        true => super::boot_key(&schedule.job, slot),
        false => slot_key(&schedule.job, slot),
    };
    report::set_slot(Some(key.clone()));
    let channel = scheduler.as_ref();
    let started = |splayed: Duration| start_line(config, slot, splayed, channel);
    let slot_run = SlotRun {
        key: key.clone(),
        state: schedule.state.clone(),
        gate: SlotGate {
            job: schedule.job.clone(),
            overlap: schedule.overlap,
            queue_wait: schedule.window,
            claim_wait: claim_wait(config, schedule),
        },
        started: &started,
        claim: !boot,
    };
    // Made before the slot's time, so that less stands between it and the command.
    let prepared = run::prepare(config, Some(&slot_run));
    // Started ahead (`table::LEAD`): the slot's time is its own to wait for.
    if wait_for(slot).is_err() {
        tell(channel, &Report::Withdrawn);
        return signals::stopping().map_or(ExitStatus::SUCCESS, ExitStatus::of_signal);
    }
    let (done, watching) = std::sync::mpsc::channel::<()>();
    let grace = schedule.grace;
    let (end, took) = std::thread::scope(|scope| {
        scope.spawn(move || watch(grace, channel, &watching));
        let began = Instant::now();
        let end = prepared.and_then(|prepared| prepared.make(config, Some(&slot_run)));
        drop(done);
        (end, began.elapsed())
    });
    let status = match signals::stopping() {
        Some(sig) => ExitStatus::of_signal(sig),
        None => ExitStatus::SUCCESS,
    };
    let mut end = end;
    let trace = end.as_mut().ok().and_then(|end| end.trace.take());
    let ended = match end {
        Ok(end) if matches!(end.skipped, Some(SkipWhy::Done | SkipWhy::KeyBusy)) => {
            report::verbose(
                1,
                "another scheduler has this slot (its record, or its run under way): nothing of it is this scheduler's",
            );
            tell(channel, &Report::Elsewhere);
            return status;
        }
        Ok(end) => Ended::of_run(&end.summary, took),
        Err(err) => {
            // Never run unguarded: no record either, so catch-up sees it as missed.
            let why = format!("{err:#}; the slot did not run");
            report::error(&why);
            Ended::not_run(&why, took)
        }
    };
    ended.log();
    tell(
        channel,
        &Report::Ended {
            outcome: ended.outcome.label().to_string(),
            attempts: ended.attempts,
        },
    );
    if let Some(trace) = trace {
        // A signal from now on limits the export; one held back already did.
        signals::hold_stops(false);
        let sent = trace.send(signals::stopping().is_some());
        tell(channel, &Report::Traced { failed: sent.err() });
    }
    status
}

/// The slot's start line, once its attempts begin, and its start told to the scheduler;
/// a command that starts more than [`LATE`] after its slot (and splay) says how late.
fn start_line(config: &Config, slot: Slot, splayed: Duration, channel: Option<&std::fs::File>) {
    let command = crate::domain::redact_url(&crate::domain::command_line(&config.gate.command));
    let late = lateness(slot, SystemTime::now(), splayed);
    let late_by = if late > LATE {
        format!(" ({} after its slot)", human(late))
    } else {
        String::new()
    };
    report::slot_event(
        false,
        &format!("started{late_by}: {command}"),
        "slot_started",
        json!({ "command": command, "late_ms": u64::try_from(late.as_millis()).unwrap_or(u64::MAX) }),
    );
    tell(channel, &Report::Started);
}

/// Tells the scheduler `report`, one JSON line; a scheduler gone hears nothing.
fn tell(channel: Option<&std::fs::File>, report: &Report) {
    if let (Some(mut channel), Ok(mut line)) = (channel, serde_json::to_vec(report)) {
        line.push(b'\n');
        let _ = channel.write_all(&line);
    }
}

/// Beside the run: the grace of a held stop (then the stop goes through to the attempt;
/// a second stop at once), and the scheduler's end where no parent-death signal tells it.
fn watch(grace: Duration, scheduler: Option<&std::fs::File>, done: &Receiver<()>) {
    let mut grace_ends: Option<Instant> = None;
    loop {
        if scheduler.is_some_and(sys::reader_left) {
            // As the parent-death signal would: a stop, at once.
            sys::hang_up_self();
            return;
        }
        match grace_ends {
            None if signals::held().is_some() && grace.is_zero() => {
                signals::let_through(false);
                return;
            }
            None if signals::held().is_some() => grace_ends = Some(Instant::now() + grace),
            Some(_) if signals::stopping_again() => {
                signals::let_through(true);
                return;
            }
            Some(end) if Instant::now() >= end => {
                report::info(&format!(
                    "--grace {} is over: ending the attempt (SIGTERM, then --kill-after)",
                    human(grace)
                ));
                signals::let_through(false);
                return;
            }
            _ => {}
        }
        let wait = grace_ends.map_or(WATCH_EVERY, |end| {
            end.saturating_duration_since(Instant::now())
                .min(WATCH_EVERY)
        });
        if done.recv_timeout(wait) != Err(RecvTimeoutError::Timeout) {
            return;
        }
    }
}

/// Waits until `slot`'s time; `Err` when a stop (or its scheduler's end) comes first.
fn wait_for(slot: Slot) -> Result<(), crate::domain::Stop> {
    let left = SystemTime::from(slot)
        .duration_since(SystemTime::now())
        .unwrap_or_default();
    crate::wait::sleep_or_stop(left)?;
    match signals::stop() {
        Some(stop) => Err(stop),
        None => Ok(()),
    }
}

/// How long a caught-up slot waits for its key held by another run. Its holder may be a
/// run whose scheduler was killed (a restart catches the slot up at once): the death
/// reaches that run within a second (the parent-death signal, or its report pipe looked
/// at every [`WATCH_EVERY`]), and its attempt ends within `--kill-after` of the SIGTERM.
fn claim_wait(config: &Config, schedule: &ScheduleConfig) -> Duration {
    if !schedule.caught_up {
        return Duration::ZERO;
    }
    let kill_after = match &config.target {
        crate::config::TargetConfig::Command(command) => command.kill_after,
        crate::config::TargetConfig::Http(_) => Duration::ZERO,
    };
    kill_after + Duration::from_secs(1)
}

/// How late a command starts `now`: after its slot, less the splay its run slept.
fn lateness(slot: Slot, now: SystemTime, splayed: Duration) -> Duration {
    now.duration_since(SystemTime::from(slot))
        .unwrap_or_default()
        .saturating_sub(splayed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lateness_counts_from_the_slot_less_the_splay() {
        let slot: Slot = "2026-01-01T00:00:00Z".parse().unwrap();
        let at = |ms: u64| SystemTime::from(slot) + Duration::from_millis(ms);
        assert_eq!(
            lateness(slot, at(1500), Duration::ZERO),
            Duration::from_millis(1500)
        );
        assert_eq!(
            lateness(slot, at(1500), Duration::from_secs(1)),
            Duration::from_millis(500)
        );
        assert_eq!(
            lateness(
                slot,
                SystemTime::from(slot) - Duration::from_secs(1),
                Duration::ZERO
            ),
            Duration::ZERO
        );
    }
}
