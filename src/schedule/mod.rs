//! The scheduler behind `--schedule`: one run per CRON slot, from state rather than
//! the clock. `cron` owns parsing and slot arithmetic; this module owns the loop,
//! with the clock, the sleeper, the state and the run injected through [`World`],
//! and the catch-up (never before the job's first start) and overlap decisions as
//! pure functions. Each slot is one call of [`run::one_run`](crate::run::one_run) with the slot's overrides;
//! locks are taken per slot, so the scheduler holds no lock or connection between
//! slots. [`outcome`] says how a slot ended, [`metrics`] serves `--metrics-listen`.

pub mod crontab;
pub mod metrics;
mod outcome;
mod world;

use std::collections::HashSet;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use crate::config::{Config, ScheduleConfig};
use crate::cron::Zone;
use crate::domain::{CatchUp, ExitStatus, Overlap, Signal, human, parse_rfc3339, rfc3339_seconds};
use crate::report;

use metrics::Metrics;
pub use world::SystemWorld;

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

/// The slot a key names, if it is one of `job`'s.
pub fn slot_of_key(job: &str, key: &str) -> Option<Slot> {
    let rest = key.strip_prefix(job)?.strip_prefix('@')?;
    parse_rfc3339(rest)
}

/// What a catch-up runs, oldest first, and how many missed slots it drops.
#[derive(Debug, PartialEq, Eq)]
pub struct CatchUpPlan {
    pub run: Vec<Slot>,
    pub dropped: usize,
}

/// Decides the catch-up over `slots` (every slot of the span, oldest first); a slot
/// in `handled` has a record and is never run again, and a slot before `first_start`
/// (the second the job's first scheduler started) was never missed: it is neither run
/// nor counted as dropped, as cron never runs a slot from before the job existed.
pub fn plan_catch_up(
    policy: CatchUp,
    slots: &[Slot],
    handled: &HashSet<Slot>,
    first_start: Slot,
) -> CatchUpPlan {
    let slots: Vec<Slot> = slots
        .iter()
        .copied()
        .filter(|s| *s >= first_start)
        .collect();
    let missed: Vec<Slot> = slots
        .iter()
        .copied()
        .filter(|s| !handled.contains(s))
        .collect();
    match policy {
        CatchUp::None => CatchUpPlan {
            run: Vec::new(),
            dropped: missed.len(),
        },
        CatchUp::All => CatchUpPlan {
            run: missed,
            dropped: 0,
        },
        CatchUp::Latest => {
            let newest = slots.last().filter(|s| !handled.contains(s));
            CatchUpPlan {
                run: newest.into_iter().copied().collect(),
                dropped: missed.len() - usize::from(newest.is_some()),
            }
        }
    }
}

/// The second `t` falls in: a first start is recorded to the second, so a slot in
/// that very second still counts as after it.
pub fn whole_second(t: Slot) -> Slot {
    Timestamp::from_second(t.as_second()).unwrap_or(t)
}

/// The key of a job's first-start record. Slot keys are `JOB@SLOT` and job names
/// have no `@`, so no job's slot prefix matches it and pruning never removes it.
pub fn first_start_key(job: &str) -> String {
    format!("{job}#first-start")
}

/// How a slot's run ended, for the loop.
#[derive(Debug, PartialEq, Eq)]
pub enum SlotEnd {
    /// The run ended (whatever its result); the scheduler goes on.
    Ended,
    /// A stopping signal: the scheduler stops with 128+N.
    Stopped(Signal),
}

/// What the loop decided, for the metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tally {
    /// A missed slot is about to run.
    CaughtUp,
    /// Missed slots a catch-up did not run.
    Dropped(usize),
    /// The slot the loop waits for next.
    Next(Slot),
}

/// Everything the loop does to the outside world.
pub trait World {
    fn now(&self) -> Slot;
    /// Sleeps until `t` by the wall clock (re-read at least once a minute, so a clock
    /// step or a suspend is noticed); `Err` is a stopping signal.
    fn sleep_until(&mut self, t: Slot) -> Result<(), Signal>;
    /// The slots with a record in the state.
    fn handled(&mut self) -> anyhow::Result<HashSet<Slot>>;
    /// The second the job first started, from its record in the state; when there is
    /// none, `now` (to the second) is recorded and returned, and so it is, with a
    /// warning, when the record cannot be read.
    fn first_start(&mut self, now: Slot) -> anyhow::Result<Slot>;
    fn run_slot(&mut self, slot: Slot) -> SlotEnd;
    /// Records and logs a slot that did not run because the previous one still ran.
    fn skip_slot(&mut self, slot: Slot);
    /// Removes records of slots before `before`.
    fn prune(&mut self, before: Slot);
    /// Says something about the schedule (not about one slot).
    fn say(&mut self, message: &str);
    /// Counts what the loop decided.
    fn tally(&mut self, tally: Tally);
}

/// The scheduler's settings.
pub struct Scheduler<'a> {
    pub config: &'a ScheduleConfig,
}

impl Scheduler<'_> {
    /// Runs until a stopping signal; returns its exit status (128+N). `Err` when the
    /// state cannot be reached at start or CRON names no future slot.
    pub fn run(&self, world: &mut dyn World) -> anyhow::Result<ExitStatus> {
        let start = world.now();
        let first = first_slot(self.config, start)?;
        let handled = world.handled()?;
        let first_start = world.first_start(start)?;
        let running = Running {
            config: self.config,
            first_start,
        };
        world.prune(start - running.window() - KEEP_PAST_WINDOW);
        world.say(&format!(
            "job {}: schedule {:?} in {}; next slot {}",
            self.config.job,
            self.config.cron.text,
            self.config.cron.zone.name(),
            show(first, &self.config.cron.zone)
        ));
        world.tally(Tally::Next(first));
        match running.run(world, start, &handled) {
            Ok(never) => match never {},
            Err(Halt::Signal(sig)) => {
                let status = ExitStatus::of_signal(sig);
                world.say(&format!("stopped by {sig}; exit status {status}"));
                Ok(status)
            }
            Err(Halt::Error(err)) => Err(err),
        }
    }
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

/// Why the loop ended.
enum Halt {
    Signal(Signal),
    Error(anyhow::Error),
}

impl From<Signal> for Halt {
    fn from(sig: Signal) -> Halt {
        Halt::Signal(sig)
    }
}

/// The loop, once the job's first start is known.
struct Running<'a> {
    config: &'a ScheduleConfig,
    first_start: Slot,
}

impl Running<'_> {
    fn window(&self) -> SignedDuration {
        window(self.config)
    }

    /// Catches up from `handled`, then runs each slot on time until a signal.
    fn run(
        &self,
        world: &mut dyn World,
        start: Slot,
        handled: &HashSet<Slot>,
    ) -> Result<std::convert::Infallible, Halt> {
        let span = self
            .config
            .cron
            .slots_between(start - self.window(), start, MAX_SLOTS);
        self.catch_up(world, &span, handled)?;
        let mut pruned_at = start;
        let mut cursor = start;
        loop {
            cursor = self.settle(world, cursor)?;
            if world.now().duration_since(pruned_at) > PRUNE_EVERY {
                pruned_at = world.now();
                world.prune(pruned_at - self.window() - KEEP_PAST_WINDOW);
            }
            let Some(next) = self.config.cron.next_after(cursor) else {
                return Err(Halt::Error(anyhow::anyhow!(
                    "--schedule: {:?} names no further time",
                    self.config.cron.text
                )));
            };
            world.tally(Tally::Next(next));
            // Past `next` already: the scheduler's own call (a prune) stalled that long.
            let stalled = world.now().duration_since(next);
            world.sleep_until(next)?;
            // The slots up to the wake-up are dealt with; settle handles those that came since.
            cursor = self.on_time(world, cursor, stalled)?;
        }
    }

    /// After a wake-up: one slot due runs; more than one means a pause (a suspended
    /// host, a clock step, or, when `stalled` is positive, the scheduler's own call
    /// that ran that long past the slot), and they are caught up from state.
    /// Returns the time of the wake-up, up to which every slot is dealt with.
    fn on_time(
        &self,
        world: &mut dyn World,
        cursor: Slot,
        stalled: SignedDuration,
    ) -> Result<Slot, Signal> {
        let now = world.now();
        let due = self.config.cron.slots_between(cursor, now, MAX_SLOTS);
        self.run_due(world, &due, stalled)?;
        Ok(now.max(cursor))
    }

    fn run_due(
        &self,
        world: &mut dyn World,
        due: &[Slot],
        stalled: SignedDuration,
    ) -> Result<(), Signal> {
        match due {
            [] => Ok(()),
            [slot] => stop_on(world.run_slot(*slot)),
            _ => {
                let why = match Duration::try_from(stalled) {
                    Ok(late) if !late.is_zero() => format!(
                        "this scheduler's own call to the state stalled, ending {} after the \
                         first of them",
                        human(late)
                    ),
                    _ => "the host was suspended or the clock stepped".into(),
                };
                world.say(&format!(
                    "{} slots came due at once ({why}); catching up from state",
                    due.len()
                ));
                match world.handled() {
                    Ok(handled) => self.catch_up(world, due, &handled),
                    Err(err) => {
                        report::error(&format!("{err:#}; the due slots do not run"));
                        Ok(())
                    }
                }
            }
        }
    }

    /// Deals with the slots that came while runs ran, until none has; returns the new cursor.
    fn settle(&self, world: &mut dyn World, from: Slot) -> Result<Slot, Signal> {
        let mut from = from;
        loop {
            let now = world.now();
            let came = self.config.cron.slots_between(from, now, MAX_SLOTS);
            if came.is_empty() {
                return Ok(now.max(from));
            }
            match self.config.overlap {
                Overlap::Skip => {
                    for slot in came {
                        world.skip_slot(slot);
                    }
                    return Ok(now);
                }
                Overlap::Queue => {
                    let handled = world.handled().unwrap_or_else(|err| {
                        report::error(&format!("{err:#}"));
                        came.iter().copied().collect()
                    });
                    self.catch_up(world, &came, &handled)?;
                }
            }
            from = now;
        }
    }

    /// Runs what the catch-up policy picks among `slots` and says what it dropped.
    fn catch_up(
        &self,
        world: &mut dyn World,
        slots: &[Slot],
        handled: &HashSet<Slot>,
    ) -> Result<(), Signal> {
        let plan = plan_catch_up(self.config.catch_up, slots, handled, self.first_start);
        let policy = match self.config.catch_up {
            CatchUp::None => "none",
            CatchUp::Latest => "latest",
            CatchUp::All => "all",
        };
        if plan.dropped > 0 {
            let older = if self.config.catch_up == CatchUp::Latest {
                " older"
            } else {
                ""
            };
            world.tally(Tally::Dropped(plan.dropped));
            world.say(&format!(
                "catch-up: dropped {}{older} missed slot{} (--catch-up {policy})",
                plan.dropped,
                plural(plan.dropped)
            ));
        }
        for slot in plan.run {
            world.tally(Tally::CaughtUp);
            world.say(&format!(
                "catch-up: running missed slot {} (--catch-up {policy})",
                slot_key(&self.config.job, slot)
            ));
            stop_on(world.run_slot(slot))?;
        }
        Ok(())
    }
}

fn stop_on(end: SlotEnd) -> Result<(), Signal> {
    match end {
        SlotEnd::Ended => Ok(()),
        SlotEnd::Stopped(sig) => Err(sig),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
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

/// `--run-slot`: runs one slot of a crontab's job (its scheduler watches it) and
/// returns 0, or 128+N when a signal stopped it.
pub fn run_one(config: &Config, schedule: &ScheduleConfig, slot: Slot) -> ExitStatus {
    let mut world = SystemWorld::new(config, schedule, None).unwatched();
    match world.run_slot(slot) {
        SlotEnd::Ended => ExitStatus::SUCCESS,
        SlotEnd::Stopped(sig) => ExitStatus::of_signal(sig),
    }
}

/// Runs the scheduler for `config` until a stopping signal.
pub fn run(config: &Config, schedule: &ScheduleConfig) -> anyhow::Result<ExitStatus> {
    // Bound first: a port that cannot be had is exit 125 before anything else happens.
    let metrics = match schedule.metrics_listen {
        Some(addr) => {
            let metrics = Metrics::new(&schedule.job);
            let bound = metrics::serve(addr, metrics.clone())?;
            report::info(&format!("metrics at http://{bound}/metrics"));
            Some(metrics)
        }
        None => None,
    };
    if let Some(dir) = schedule.state.local_dir() {
        report::info(&format!(
            "slots are exactly once on this host only (state directory {}); replicas must share --state postgres://…",
            dir.display()
        ));
    }
    let mut world = SystemWorld::new(config, schedule, metrics);
    world.seed_last_success();
    Scheduler { config: schedule }.run(&mut world)
}

#[cfg(test)]
mod tests;
