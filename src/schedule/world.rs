//! The real [`World`]: the wall clock, a sleeper that wakes on signals and at least
//! once a minute, the `--state` records (the slots' and the job's first start), one
//! [`run::one_run`] per slot with its start and end lines, and the metrics.

use std::collections::HashSet;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use jiff::Timestamp;
use serde_json::json;

use super::metrics::Metrics;
use super::outcome::{Ended, Outcome};
use super::{Slot, SlotEnd, Tally, World, first_start_key, slot_key, slot_of_key, whole_second};
use crate::config::{Config, ScheduleConfig};
use crate::domain::{Overlap, Signal, parse_rfc3339, rfc3339_seconds};
use crate::gate;
use crate::run::{self, SlotRun};
use crate::state::{self, Marker, MarkerStore, Status, UnreadableRecord};
use crate::wait::{self, Bound};
use crate::{report, signals};

/// Longest single sleep: the wall clock is compared at least this often, so a clock
/// step or a suspended host is noticed.
const WAKE_EVERY: Duration = Duration::from_secs(60);
/// Longest wait of the watcher beside a running slot between looks at the clock and
/// the stopping signals.
const WATCH_EVERY: Duration = Duration::from_millis(200);
/// Most slot records read at start for the newest success (`retry_last_success_seconds`).
const SUCCESS_LOOKUPS: usize = 1000;

pub struct SystemWorld<'a> {
    config: Option<&'a Config>,
    schedule: &'a ScheduleConfig,
    metrics: Option<Metrics>,
    /// The newest slot skipped at its own time while a run ran: the loop's own skip
    /// of it, once the run has ended, is already done.
    skipped_through: Option<Slot>,
    /// Whether a thread watches beside each run (the grace, the overlapping slots); a
    /// crontab's slot run has its scheduler do that instead.
    watch: bool,
}

impl<'a> SystemWorld<'a> {
    pub fn new(config: &'a Config, schedule: &'a ScheduleConfig, metrics: Option<Metrics>) -> Self {
        SystemWorld {
            config: Some(config),
            schedule,
            metrics,
            skipped_through: None,
            watch: true,
        }
    }

    /// A world that only reads the state (for `--dry-run`).
    pub fn for_state(schedule: &'a ScheduleConfig) -> Self {
        SystemWorld {
            config: None,
            schedule,
            metrics: None,
            skipped_through: None,
            watch: true,
        }
    }

    /// A world for one slot's run, with nothing watching beside it.
    pub fn unwatched(mut self) -> Self {
        self.watch = false;
        self
    }

    /// The job's first-start record, read only: `Ok(None)` when there is none, and
    /// when it cannot be read (a start replaces it).
    pub fn recorded_first_start(&mut self) -> anyhow::Result<Option<Slot>> {
        let bound = Bound::signals_only();
        let mut store = self.store(&bound)?;
        let found = store.find(&first_start_key(&self.schedule.job), &bound)?;
        Ok(found.and_then(|done| parse_rfc3339(&done.succeeded_at).map(whole_second)))
    }

    /// Starts `retry_last_success_seconds` from the newest success recorded in the
    /// state (the newest slot records first, at most [`SUCCESS_LOOKUPS`] of them); a
    /// state that cannot be read leaves it absent, with a warning.
    pub fn seed_last_success(&mut self) {
        let Some(metrics) = self.metrics.clone() else {
            return;
        };
        match self.newest_success() {
            Ok(Some(at)) => metrics.succeeded_at(at),
            Ok(None) => {}
            Err(err) => report::notice(&format!(
                "warning: cannot read the last success from the state ({err:#}); retry_last_success_seconds starts with the next one"
            )),
        }
    }

    fn newest_success(&mut self) -> anyhow::Result<Option<SystemTime>> {
        let bound = Bound::signals_only();
        let mut store = self.store(&bound)?;
        let mut slots: Vec<(Slot, String)> = store
            .keys_with_prefix(&self.prefix(), &bound)?
            .into_iter()
            .filter_map(|key| slot_of_key(&self.schedule.job, &key).map(|slot| (slot, key)))
            .collect();
        slots.sort_by_key(|(slot, _)| std::cmp::Reverse(*slot));
        for (slot, key) in slots.into_iter().take(SUCCESS_LOOKUPS) {
            let Some(done) = store.find(&key, &bound)? else {
                continue;
            };
            if done.status == Status::Succeeded {
                // When it was recorded, which is when the slot's run ended.
                let at = parse_rfc3339(&done.succeeded_at).unwrap_or(slot);
                return Ok(Some(SystemTime::from(at)));
            }
        }
        Ok(None)
    }

    /// The command line as the start line shows it (a URL's user information hidden).
    fn command_line(&self) -> String {
        let argv = self
            .config
            .map(|c| c.gate.command.as_slice())
            .unwrap_or_default();
        crate::domain::redact_url(&crate::domain::command_line(argv))
    }

    fn prefix(&self) -> String {
        format!("{}@", self.schedule.job)
    }

    /// The slot records, opened for one call (no connection is held between slots).
    fn store(&self, bound: &Bound) -> anyhow::Result<Box<dyn MarkerStore>> {
        match self.config {
            Some(_) => state::open_markers(&self.schedule.state, true, bound),
            // A dry run reads the state and creates nothing.
            None => state::open_markers_read_only(&self.schedule.state, bound),
        }
    }

    fn slot_run(&self, slot: Slot) -> SlotRun {
        SlotRun {
            key: slot_key(&self.schedule.job, slot),
            state: self.schedule.state.clone(),
        }
    }
}

impl World for SystemWorld<'_> {
    fn now(&self) -> Slot {
        Timestamp::now()
    }

    fn sleep_until(&mut self, t: Slot) -> Result<(), Signal> {
        loop {
            if let Some(sig) = signals::stopping() {
                return Err(sig);
            }
            let left =
                Duration::try_from(t.duration_since(Timestamp::now())).unwrap_or(Duration::ZERO);
            if left.is_zero() {
                return Ok(());
            }
            // Polls count whole milliseconds: round up, so the wake-up is never early.
            wait::pause((left + Duration::from_micros(999)).min(WAKE_EVERY));
        }
    }

    fn handled(&mut self) -> anyhow::Result<HashSet<Slot>> {
        let bound = Bound::signals_only();
        let mut store = self.store(&bound)?;
        let keys = store.keys_with_prefix(&self.prefix(), &bound)?;
        // A record that cannot be read still counts as handled: catch-up never runs its slot.
        for line in store.unreadable_with_prefix(&self.prefix(), &bound)? {
            report::error(&format!("{line}; catch-up counts its slot as handled"));
        }
        Ok(keys
            .iter()
            .filter_map(|k| slot_of_key(&self.schedule.job, k))
            .collect())
    }

    fn first_start(&mut self, now: Slot) -> anyhow::Result<Slot> {
        let job = &self.schedule.job;
        let bound = Bound::signals_only();
        let mut store = self.store(&bound)?;
        let key = first_start_key(job);
        let second = whole_second(now);
        let shown = rfc3339_seconds(second);
        let found = match store.find(&key, &bound) {
            // A first-start record that cannot be read is replaced (docs/internals.md,
            // "Records of a scheduler").
            Err(err) => match err.downcast::<UnreadableRecord>() {
                Ok(unreadable) => Err(format!("{}: {}", unreadable.place, unreadable.why)),
                Err(err) => return Err(err),
            },
            Ok(found) => Ok(found),
        };
        // Said once the record is written (a write that fails is the error instead).
        let (warning, written) = match found {
            Ok(Some(done)) => match parse_rfc3339(&done.succeeded_at) {
                Some(first) => return Ok(whole_second(first)),
                None => (
                    true,
                    format!(
                        "warning: the first-start record of job {job} ({}) could not be read ({}); replaced it with {shown}",
                        done.place, done.succeeded_at
                    ),
                ),
            },
            Err(why) => (
                true,
                format!(
                    "warning: the first-start record of job {job} could not be read ({why}); replaced it with {shown}"
                ),
            ),
            Ok(None) => (
                false,
                format!(
                    "first start of job {job}: recorded as {shown}; slots before it are never caught up"
                ),
            ),
        };
        let marker = Marker {
            key,
            // Only a success replaces a record, and an unreadable one must be replaced.
            status: Status::Succeeded,
            succeeded_at: crate::domain::rfc3339_millis(SystemTime::from(second)),
            host: state::host_name(),
            pid: std::process::id(),
            command: self
                .config
                .map(|c| c.gate.command.clone())
                .unwrap_or_default(),
            attempts: 0,
        };
        store.record(&marker, &bound).with_context(|| {
            format!(
                "cannot record the first start of job {job} in {}",
                store.describe()
            )
        })?;
        if warning {
            report::notice(&written);
        } else {
            report::info(&written);
        }
        Ok(second)
    }

    fn run_slot(&mut self, slot: Slot) -> SlotEnd {
        let Some(config) = self.config else {
            return SlotEnd::Ended;
        };
        let slot_run = self.slot_run(slot);
        report::set_slot(Some(slot_run.key.clone()));
        let command = self.command_line();
        report::slot_event(
            false,
            &format!("started: {command}"),
            "slot_started",
            json!({ "command": command }),
        );
        if let Some(metrics) = &self.metrics {
            metrics.slot_started(SystemTime::now());
        }
        let began = Instant::now();
        let watch = Watch {
            schedule: self.schedule,
            metrics: self.metrics.as_ref(),
            command: &config.gate.command,
            graceful: true,
        };
        let (end, skipped) = if self.watch {
            watch.beside(|| run::one_run(config, Some(&slot_run)))
        } else {
            (run::one_run(config, Some(&slot_run)), None)
        };
        if skipped.is_some() {
            self.skipped_through = skipped;
        }
        let ended = match &end {
            Ok(end) => {
                if end.skipped == Some(gate::SkipWhy::LockBusy) {
                    record(&slot_run, Status::Skipped, &config.gate.command);
                }
                Ended::of_run(&end.summary, began.elapsed())
            }
            Err(err) => {
                // Never run unguarded: no record either, so catch-up sees it as missed.
                let why = format!("{err:#}; the slot did not run");
                report::error(&why);
                Ended::not_run(&why, began.elapsed())
            }
        };
        ended.log();
        if let Some(metrics) = &self.metrics {
            let counted = match ended.outcome {
                Outcome::Stopped(_) => None,
                outcome => Some(outcome),
            };
            metrics.slot_ended(counted, ended.attempts, ended.took);
        }
        report::set_slot(None);
        signals::clear_lost_lock();
        match signals::stopping() {
            Some(sig) => SlotEnd::Stopped(sig),
            None => SlotEnd::Ended,
        }
    }

    fn skip_slot(&mut self, slot: Slot) {
        if self.skipped_through.is_some_and(|through| slot <= through) {
            return;
        }
        let command = self.config.map(|c| c.gate.command.as_slice());
        skip(
            self.schedule,
            self.metrics.as_ref(),
            command.unwrap_or_default(),
            slot,
        );
    }

    fn prune(&mut self, before: Slot) {
        let before = std::time::SystemTime::from(before);
        let bound = Bound::signals_only();
        let pruned = self
            .store(&bound)
            .and_then(|mut store| store.prune(&self.prefix(), before, &bound));
        match pruned {
            Ok(0) => {}
            Ok(n) => report::verbose(1, &format!("pruned {n} old slot records")),
            Err(err) => report::verbose(1, &format!("cannot prune old slot records: {err:#}")),
        }
    }

    fn say(&mut self, message: &str) {
        report::info(message);
    }

    fn tally(&mut self, tally: Tally) {
        let Some(metrics) = &self.metrics else {
            return;
        };
        match tally {
            Tally::CaughtUp => metrics.caught_up(),
            Tally::Dropped(n) => metrics.dropped(n),
            Tally::Next(slot) => metrics.next_slot(SystemTime::from(slot)),
        }
    }
}

impl SystemWorld<'_> {
    /// How the slot's run ended, from its record (`None`: no record, or none readable).
    pub fn recorded(&self, slot: Slot) -> Option<(Status, usize)> {
        let bound = Bound::signals_only();
        let mut store = self.store(&bound).ok()?;
        let done = store
            .find(&slot_key(&self.schedule.job, slot), &bound)
            .ok()??;
        Some((done.status, done.attempts as usize))
    }

    /// `slot` and those before it were skipped at their own time already.
    pub fn skipped_at_own_time(&mut self, slot: Slot) {
        self.skipped_through = Some(slot);
    }
}

/// Logs, counts and records a slot skipped because the previous run still ran.
fn skip(schedule: &ScheduleConfig, metrics: Option<&Metrics>, command: &[String], slot: Slot) {
    let slot_run = SlotRun {
        key: slot_key(&schedule.job, slot),
        state: schedule.state.clone(),
    };
    report::with_slot(Some(slot_run.key.clone()), || Ended::overlapped().log());
    if let Some(metrics) = metrics {
        metrics.slot_skipped();
    }
    record(&slot_run, Status::Skipped, command);
}

/// What watches beside a running slot: the stopping signals (the grace, then the
/// run's end) and, under `--overlap skip`, the slots that come meanwhile, each skipped
/// at its own time.
pub struct Watch<'a> {
    pub schedule: &'a ScheduleConfig,
    pub metrics: Option<&'a Metrics>,
    pub command: &'a [String],
    /// Whether SIGINT and SIGTERM are held back from the run for `--grace` (a
    /// crontab's scheduler ends its slot runs itself).
    pub graceful: bool,
}

/// Where a graceful stop stands.
enum Grace {
    /// No stopping signal yet.
    Running,
    /// A signal came; the run may go on until then.
    Until(Instant),
    /// The signal went through to the run.
    Over,
}

impl Watch<'_> {
    /// Runs `run` on this thread while a thread beside it watches; returns what `run`
    /// returned and the newest slot skipped meanwhile.
    pub fn beside<T>(&self, run: impl FnOnce() -> T) -> (T, Option<Slot>) {
        // The run's end reaches the watcher by a channel of its own: a wake-up through the
        // signals' pipe may be taken by another waiting thread.
        let (ended, done) = std::sync::mpsc::channel::<()>();
        // SIGINT and SIGTERM stop gracefully while a slot runs: it gets --grace to finish.
        signals::hold_stops(self.graceful);
        let out = std::thread::scope(|scope| {
            let watcher = scope.spawn(move || report::with_slot(None, || self.watch(&done)));
            let out = run();
            drop(ended);
            let skipped = watcher.join().unwrap_or(None);
            (out, skipped)
        });
        signals::hold_stops(false);
        out
    }

    fn watch(&self, done: &std::sync::mpsc::Receiver<()>) -> Option<Slot> {
        let mut skipped = None;
        let mut cursor = Timestamp::now();
        let mut grace = Grace::Running;
        loop {
            // A skip's record may take long: a run that ended meanwhile skips no more.
            if done.try_recv() != Err(std::sync::mpsc::TryRecvError::Empty) {
                return skipped;
            }
            grace = self.grace(grace);
            let next = self.schedule.cron.next_after(cursor);
            let now = Timestamp::now();
            if let (Grace::Running, Overlap::Skip, Some(due)) =
                (&grace, self.schedule.overlap, next)
            {
                if due <= now {
                    skip(self.schedule, self.metrics, self.command, due);
                    skipped = Some(due);
                    cursor = due;
                    continue;
                }
            }
            let until_next = next.map_or(WATCH_EVERY, |at| {
                Duration::try_from(at.duration_since(now)).unwrap_or(Duration::ZERO)
            });
            let until_end = match grace {
                Grace::Until(end) => end.saturating_duration_since(Instant::now()),
                _ => WATCH_EVERY,
            };
            let wait = (until_next + Duration::from_micros(999))
                .min(until_end)
                .min(WATCH_EVERY);
            if done.recv_timeout(wait) != Err(RecvTimeoutError::Timeout) {
                return skipped;
            }
        }
    }

    /// The graceful stop's next step: a signal starts the grace, its end or a second
    /// signal lets the stop through to the run.
    fn grace(&self, grace: Grace) -> Grace {
        if !self.graceful {
            return match signals::pending() {
                Some(_) => Grace::Over,
                None => grace,
            };
        }
        match grace {
            Grace::Running => match signals::stopping() {
                None => Grace::Running,
                // SIGHUP or SIGQUIT: not held, the run has it already.
                Some(_) if signals::pending().is_some() => Grace::Over,
                Some(sig) if self.schedule.grace.is_zero() => {
                    report::info(&format!(
                        "{sig}: stopping; no new slot starts, and the running slot is ended (--grace 0)"
                    ));
                    signals::let_through(false);
                    Grace::Over
                }
                Some(sig) => {
                    report::info(&format!(
                        "{sig}: stopping; no new slot starts, and the running slot has up to --grace {} to finish (a second {sig} ends it at once)",
                        crate::domain::human(self.schedule.grace)
                    ));
                    Grace::Until(Instant::now() + self.schedule.grace)
                }
            },
            Grace::Until(end) => {
                if signals::stopping_again() {
                    report::info("a second stopping signal: ending the running slot at once");
                    signals::let_through(true);
                    Grace::Over
                } else if Instant::now() >= end {
                    report::info(&format!(
                        "--grace {} is over: ending the running slot (SIGTERM, then --kill-after)",
                        crate::domain::human(self.schedule.grace)
                    ));
                    signals::let_through(false);
                    Grace::Over
                } else {
                    Grace::Until(end)
                }
            }
            Grace::Over => Grace::Over,
        }
    }
}

fn record(slot: &SlotRun, status: Status, command: &[String]) {
    gate::record_slot(&slot.state, &slot.key, status, command);
}
