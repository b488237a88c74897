//! One job's agenda: when its next slot comes, which of its slots run now, which wait
//! to be caught up, and what a slot that comes while another runs does (`--overlap`).
//! It is a pure function of the times the loop hands it: it says what to do
//! ([`Step`]) and the loop does it (starts a slot's run, stops one that a new slot
//! replaces, reads the records). Nothing here sleeps or reads a clock, so catch-up,
//! pauses and overlap are unit-tested with the times given. Which missed slots a
//! catch-up runs is [`catch_up`](super::catch_up)'s; whether a slot may run across
//! replicas is decided by the slot's own run (its claim and the job's run lock).

use std::collections::{HashSet, VecDeque};

use jiff::SignedDuration;

use super::catch_up::{plan_catch_up, policy_name};
use super::{MAX_SLOTS, Slot, show, slot_key, window};
use crate::config::ScheduleConfig;
use crate::domain::{CatchUp, Overlap};

/// What the loop must do for the job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Start the run of `slot`; `caught_up`: a missed slot, run late.
    Start {
        slot: Slot,
        caught_up: bool,
    },
    /// Stop the run of this slot as replaced: a new slot takes its place.
    Replace(Slot),
    /// Read which of the job's slots have a record, for [`Agenda::records`].
    ReadRecords,
    /// Say something about the job (not about one slot).
    Say(String),
    /// An error about the job, said as one.
    Error(String),
    Tally(Tally),
}

/// What the agenda decided, for the metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tally {
    /// A missed slot is about to run.
    CaughtUp,
    /// Missed slots a catch-up did not run.
    Dropped(usize),
    /// The slot that comes next.
    Next(Slot),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Running {
    slot: Slot,
    caught_up: bool,
}

/// One job's slots, as the loop sees them.
#[derive(Debug)]
pub struct Agenda {
    config: ScheduleConfig,
    /// The second the job first started; `None` until the records were read.
    first_start: Option<Slot>,
    /// Every slot up to this instant is dealt with (started, queued or handed to a catch-up).
    cursor: Slot,
    /// The slot after the cursor, kept: the loop asks for it at every wake-up.
    next: Option<Slot>,
    /// How long before its slot a run is started, to be ready (it waits for the slot
    /// itself): the work of starting a `retry` is then done before the slot, not after.
    lead: SignedDuration,
    /// The slot whose run was started ahead of its time.
    ahead: Option<Slot>,
    running: Vec<Running>,
    /// Missed slots to run, one at a time, oldest first.
    waiting: VecDeque<Slot>,
    /// Slots whose fate waits for a read of the records (a pause, a queued run).
    asked: Option<Vec<Slot>>,
    /// Under `--overlap queue`: slots that came while a run ran.
    queued: Vec<Slot>,
    retired: bool,
}

impl Agenda {
    /// The agenda of a job whose scheduler starts at `start`; nothing is due until
    /// [`begin`](Self::begin) hands it the records.
    pub fn new(config: ScheduleConfig, start: Slot, lead: std::time::Duration) -> Agenda {
        Agenda {
            config,
            first_start: None,
            cursor: start,
            next: None,
            lead: SignedDuration::try_from(lead).unwrap_or(SignedDuration::ZERO),
            ahead: None,
            running: Vec::new(),
            waiting: VecDeque::new(),
            asked: None,
            queued: Vec::new(),
            retired: false,
        }
    }

    #[cfg(test)]
    pub fn config(&self) -> &ScheduleConfig {
        &self.config
    }

    /// The records read at start: catches up the window before the start, from
    /// `handled` (the slots with a record), never before `first_start`.
    pub fn begin(&mut self, handled: &HashSet<Slot>, first_start: Slot) -> Vec<Step> {
        self.first_start = Some(first_start);
        let start = self.cursor;
        self.next = self.config.cron.next_after(start);
        let window = window(&self.config);
        let span = self
            .config
            .cron
            .slots_between(start - window, start, MAX_SLOTS);
        let mut steps = Vec::new();
        if let Some(next) = self.config.cron.next_after(start) {
            steps.push(Step::Say(format!(
                "job {}: schedule {:?} in {}; next slot {}",
                self.config.job,
                self.config.cron.text,
                self.config.cron.zone.name(),
                show(next, &self.config.cron.zone)
            )));
            steps.push(Step::Tally(Tally::Next(next)));
        }
        steps.extend(self.catch_up(&span, handled));
        steps.extend(self.start_waiting());
        steps
    }

    /// A crontab's `@reboot` job: it needs no records (it writes none), and runs once,
    /// now, when its scheduler starts (`run`), never when a reload adds it.
    pub fn begin_boot(&mut self, run: bool) -> Vec<Step> {
        let start = self.cursor;
        self.first_start = Some(start);
        let mut steps = vec![Step::Say(format!(
            "job {}: @reboot, once at each start of the scheduler{}",
            self.config.job,
            if run {
                ""
            } else {
                " (a reload adds it: it runs at the next start)"
            }
        ))];
        if run {
            steps.push(self.start(start, false));
        }
        steps
    }

    /// When the loop must call [`tick`](Self::tick) next: the next slot's time, or the
    /// lead before it when its run may start ahead.
    pub fn wake_at(&self) -> Option<Slot> {
        if self.retired {
            return None;
        }
        let next = self.next?;
        if self.ahead == Some(next) || self.lead.is_zero() {
            return Some(next);
        }
        Some(next - self.lead)
    }

    /// The time is `now`: the slots due since the last call. One due slot runs on
    /// time; more than one means the loop did not run for a while (a suspended host,
    /// a clock step, a starved machine), and they are caught up from the records.
    pub fn tick(&mut self, now: Slot) -> Vec<Step> {
        if self.retired || self.first_start.is_none() || now <= self.cursor {
            return Vec::new();
        }
        if let Some(next) = self.next.filter(|next| now < *next) {
            return self.start_ahead(next, now);
        }
        let due = self.config.cron.slots_between(self.cursor, now, MAX_SLOTS);
        self.cursor = now;
        self.next = self.config.cron.next_after(now);
        let mut steps = match due.as_slice() {
            [] => Vec::new(),
            [slot] => self.on_time(*slot),
            [oldest, ..] => {
                let late = now.duration_since(*oldest);
                // A run started ahead is under way: the catch-up is of the others.
                let due: Vec<Slot> = due
                    .iter()
                    .copied()
                    .filter(|s| self.ahead.take_if(|a| *a == *s).is_none())
                    .collect();
                let mut steps = vec![Step::Say(format!(
                    "{} slots came due at once, the oldest {} ago (the host was suspended, \
                     the clock stepped, or the scheduler could not run); catching up from state",
                    due.len(),
                    shown(late)
                ))];
                steps.extend(self.ask(due));
                steps
            }
        };
        if let Some(next) = self.next {
            steps.push(Step::Tally(Tally::Next(next)));
        }
        steps
    }

    /// The run of `slot` ended (however it ended).
    pub fn ended(&mut self, slot: Slot) -> Vec<Step> {
        if let Some(at) = self.running.iter().position(|r| r.slot == slot) {
            self.running.remove(at);
        }
        if !self.running.is_empty() || self.retired {
            return Vec::new();
        }
        if !self.queued.is_empty() {
            let queued = std::mem::take(&mut self.queued);
            return self.ask(queued);
        }
        self.start_waiting()
    }

    /// The answer to [`Step::ReadRecords`]: the slots with a record, or why they
    /// could not be read (then the slots in question do not run).
    pub fn records(&mut self, handled: Result<HashSet<Slot>, String>) -> Vec<Step> {
        let Some(slots) = self.asked.take() else {
            return Vec::new();
        };
        if self.retired {
            return Vec::new();
        }
        let mut steps = match handled {
            Ok(handled) => self.catch_up(&slots, &handled),
            Err(why) => vec![Step::Error(format!(
                "{why}; {} due slot{} of job {} do not run",
                slots.len(),
                plural(slots.len()),
                self.config.job
            ))],
        };
        steps.extend(self.start_waiting());
        steps
    }

    /// A reload removed or changed the job: no slot starts any more; running ones finish.
    pub fn retire(&mut self) {
        self.retired = true;
        self.ahead = None;
        self.waiting.clear();
        self.queued.clear();
        self.asked = None;
    }

    /// Whether no slot of the job runs.
    pub fn idle(&self) -> bool {
        self.running.is_empty()
    }

    /// Starts the run of the next slot `lead` ahead of it, when `--overlap` lets it start
    /// now: under `queue`, not while another of the job's runs is under way.
    fn start_ahead(&mut self, next: Slot, now: Slot) -> Vec<Step> {
        let started = self.ahead == Some(next);
        let queued = self.config.overlap == Overlap::Queue && !self.running.is_empty();
        if started || queued || now < next - self.lead {
            return Vec::new();
        }
        self.ahead = Some(next);
        vec![self.start(next, false)]
    }

    /// A slot that came on time: it starts, unless another of the job's runs is under way
    /// and `--overlap` says otherwise. One started ahead runs already: a run it replaces
    /// is told now.
    fn on_time(&mut self, slot: Slot) -> Vec<Step> {
        let mut steps = Vec::new();
        if self.ahead.take_if(|a| *a == slot).is_some() {
            if self.config.overlap == Overlap::Replace {
                let others = self.running.iter().filter(|r| r.slot != slot);
                steps.extend(others.map(|r| Step::Replace(r.slot)));
            }
            return steps;
        }
        if !self.running.is_empty() {
            match self.config.overlap {
                // Its run finds the job's run lock held and records the skip, on whichever
                // replica claims the slot.
                Overlap::Skip | Overlap::Allow => {}
                Overlap::Queue => {
                    self.queued.push(slot);
                    return steps;
                }
                Overlap::Replace => {
                    steps.extend(self.running.iter().map(|r| Step::Replace(r.slot)));
                }
            }
        }
        steps.push(self.start(slot, false));
        steps
    }

    fn start(&mut self, slot: Slot, caught_up: bool) -> Step {
        self.running.push(Running { slot, caught_up });
        Step::Start { slot, caught_up }
    }

    /// Asks for the records before deciding on `slots`.
    fn ask(&mut self, slots: Vec<Slot>) -> Vec<Step> {
        match &mut self.asked {
            // A read is under way: its answer decides these too.
            Some(asked) => {
                asked.extend(slots);
                Vec::new()
            }
            None => {
                self.asked = Some(slots);
                vec![Step::ReadRecords]
            }
        }
    }

    /// Plans the catch-up of `slots` and queues what it runs.
    fn catch_up(&mut self, slots: &[Slot], handled: &HashSet<Slot>) -> Vec<Step> {
        let Some(first_start) = self.first_start else {
            return Vec::new();
        };
        let policy = self.config.catch_up;
        let plan = plan_catch_up(policy, slots, handled, first_start);
        let mut steps = Vec::new();
        if plan.dropped > 0 {
            let older = if policy == CatchUp::Latest {
                " older"
            } else {
                ""
            };
            steps.push(Step::Tally(Tally::Dropped(plan.dropped)));
            steps.push(Step::Say(format!(
                "catch-up: dropped {}{older} missed slot{} of job {} (--catch-up {})",
                plan.dropped,
                plural(plan.dropped),
                self.config.job,
                policy_name(policy)
            )));
        }
        for slot in plan.run {
            if !self.waiting.contains(&slot) && !self.running.iter().any(|r| r.slot == slot) {
                self.waiting.push_back(slot);
            }
        }
        steps
    }

    /// Starts the oldest missed slot when none of the job's runs is under way.
    fn start_waiting(&mut self) -> Vec<Step> {
        if !self.running.is_empty() || self.retired {
            return Vec::new();
        }
        let Some(slot) = self.waiting.pop_front() else {
            return Vec::new();
        };
        vec![
            Step::Tally(Tally::CaughtUp),
            Step::Say(format!(
                "catch-up: running missed slot {} (--catch-up {})",
                slot_key(&self.config.job, slot),
                policy_name(self.config.catch_up)
            )),
            self.start(slot, true),
        ]
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn shown(d: SignedDuration) -> String {
    crate::domain::human(std::time::Duration::try_from(d).unwrap_or_default())
}

#[cfg(test)]
mod tests;
