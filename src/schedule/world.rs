//! The real [`World`]: the wall clock, a sleeper that wakes on signals and at least
//! once a minute, the `--state` records, and one `run::one_run` per slot.

use std::collections::HashSet;
use std::time::Duration;

use chrono::Utc;

use super::{Slot, SlotEnd, World, slot_key, slot_of_key};
use crate::config::{Config, ScheduleConfig};
use crate::jobs::{self, Status};
use crate::run::{self, SlotRun};
use crate::wait::Bound;
use crate::{report, signals};

/// Longest single sleep: the wall clock is compared at least this often, so a clock
/// step or a suspended host is noticed.
const WAKE_EVERY: Duration = Duration::from_secs(60);

pub struct SystemWorld<'a> {
    config: Option<&'a Config>,
    schedule: &'a ScheduleConfig,
}

impl<'a> SystemWorld<'a> {
    pub fn new(config: &'a Config, schedule: &'a ScheduleConfig) -> Self {
        SystemWorld {
            config: Some(config),
            schedule,
        }
    }

    /// A world that only reads the state (for `--dry-run`).
    pub fn for_state(schedule: &'a ScheduleConfig) -> Self {
        SystemWorld {
            config: None,
            schedule,
        }
    }

    fn prefix(&self) -> String {
        format!("{}@", self.schedule.job)
    }

    /// The slot records, opened for one call (no connection is held between slots).
    fn store(&self, bound: &Bound) -> anyhow::Result<Box<dyn jobs::MarkerStore>> {
        let ttl = self
            .config
            .map_or(jobs::postgres::lease::DEFAULT_TTL, |c| c.jobs.lease_ttl);
        jobs::open_store(self.schedule.state.clone(), true, ttl, bound)
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
        Utc::now()
    }

    fn sleep_until(&mut self, t: Slot) -> Result<(), i32> {
        loop {
            let left = (t - Utc::now()).to_std().unwrap_or(Duration::ZERO);
            if left.is_zero() {
                return signals::pending().map_or(Ok(()), Err);
            }
            // Polls count whole milliseconds: round up, so the wake-up is never early.
            let step = (left + Duration::from_micros(999)).min(WAKE_EVERY);
            signals::sleep(step)?;
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

    fn run_slot(&mut self, slot: Slot) -> SlotEnd {
        let Some(config) = self.config else {
            return SlotEnd::Ended;
        };
        let slot_run = self.slot_run(slot);
        report::set_slot(Some(slot_run.key.clone()));
        report::verbose(1, "slot due");
        let end = run::one_run(config, Some(&slot_run));
        match &end {
            Ok(end) => {
                if end.skipped == Some(jobs::SkipWhy::LockBusy) {
                    record(&slot_run, Status::Skipped, &config.jobs.command);
                }
            }
            Err(err) => report::error(&format!("{err:#}; the slot did not run")),
        }
        report::set_slot(None);
        signals::clear_lost_lock();
        match signals::pending() {
            Some(sig) => SlotEnd::Stopped(sig),
            None => SlotEnd::Ended,
        }
    }

    fn skip_slot(&mut self, slot: Slot) {
        let slot_run = self.slot_run(slot);
        report::set_slot(Some(slot_run.key.clone()));
        report::notice("skipped: the previous run was still running (--overlap skip)");
        report::set_slot(None);
        let command = self
            .config
            .map(|c| c.jobs.command.clone())
            .unwrap_or_default();
        record(&slot_run, Status::Skipped, &command);
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
}

fn record(slot: &SlotRun, status: Status, command: &[String]) {
    if let Err(err) = jobs::record_status(&slot.state, &slot.key, status, command) {
        report::error(&format!("{err:#}"));
    }
}
