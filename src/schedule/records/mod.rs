//! The scheduler's own calls to `--state`, made by one thread of their own so that a
//! state that stalls never holds the scheduler's clock: at a job's start its first-start
//! record (with the schedule it was made for: a changed schedule starts afresh) and
//! which of its slots have a record; later the records again (a pause, a queued run)
//! and the pruning of old ones. Asks wait in a queue, at most one of each kind per job,
//! so a long outage queues no more than the jobs there are; the thread keeps one
//! connection for a run of asks and none while it has nothing to send. A slot's own
//! records are written by its run ([`run_slot`](mod@super::run_slot)).

mod first_start;
mod reads;

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::SystemTime;

use super::Slot;
use crate::config::ScheduleConfig;
use crate::state;

pub use reads::read_only;
use reads::{begin, handled, prune};

/// What the scheduler asks of the state for one job (known by the scheduler's number).
#[derive(Clone, Debug)]
pub enum Ask {
    /// The job starts at `start`: its first start and its records (and its newest
    /// success, for the metrics, when `success`).
    Begin {
        id: u64,
        schedule: ScheduleConfig,
        start: Slot,
        success: bool,
    },
    /// Which slots have a record now.
    Records { id: u64, schedule: ScheduleConfig },
    /// Remove the records of slots before `before`.
    Prune {
        id: u64,
        schedule: ScheduleConfig,
        before: Slot,
    },
}

impl Ask {
    fn same_kind(&self, other: &Ask) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other) && self.id() == other.id()
    }

    fn id(&self) -> u64 {
        match self {
            Ask::Begin { id, .. } | Ask::Records { id, .. } | Ask::Prune { id, .. } => *id,
        }
    }
}

/// What a job's start found in the state.
#[derive(Debug)]
pub struct Begun {
    pub first_start: Slot,
    pub handled: HashSet<Slot>,
    pub last_success: Option<SystemTime>,
}

/// An answer, for the job numbered `id`.
#[derive(Debug)]
pub enum Answer {
    Begun {
        id: u64,
        result: Result<Begun, String>,
    },
    Records {
        id: u64,
        result: Result<HashSet<Slot>, String>,
    },
}

#[derive(Default)]
struct Shared {
    asks: Mutex<VecDeque<Ask>>,
    work: Condvar,
    answers: Mutex<Vec<Answer>>,
}

/// The thread that makes the scheduler's calls to the state.
pub struct Records {
    shared: Arc<Shared>,
}

impl Records {
    pub fn start() -> std::io::Result<Records> {
        let shared = Arc::new(Shared::default());
        let theirs = Arc::clone(&shared);
        // Never joined: a call under way ends within its own bound, and the scheduler's
        // exit ends the thread wherever it is.
        std::thread::Builder::new()
            .name("state".into())
            .spawn(move || serve(&theirs))?;
        Ok(Records { shared })
    }

    /// Queues `ask`, in place of one of the same kind for the same job still waiting.
    pub fn ask(&self, ask: Ask) {
        let mut asks = lock(&self.shared.asks);
        match asks.iter_mut().find(|a| a.same_kind(&ask)) {
            Some(waiting) => *waiting = ask,
            None => asks.push_back(ask),
        }
        self.shared.work.notify_one();
    }

    /// The answers given since the last call.
    pub fn answers(&self) -> Vec<Answer> {
        std::mem::take(&mut *lock(&self.shared.answers))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Answers asks as they come, on one connection while they keep coming.
fn serve(shared: &Shared) {
    loop {
        let mut asks = lock(&shared.asks);
        while asks.is_empty() {
            asks = shared
                .work
                .wait(asks)
                .unwrap_or_else(PoisonError::into_inner);
        }
        drop(asks);
        let _burst = state::Burst::begin();
        while let Some(ask) = lock(&shared.asks).pop_front() {
            if let Some(answer) = answer(ask) {
                lock(&shared.answers).push(answer);
                crate::signals::wake();
            }
        }
    }
}

fn answer(ask: Ask) -> Option<Answer> {
    let shown = |e: anyhow::Error| format!("{e:#}");
    match ask {
        Ask::Begin {
            id,
            schedule,
            start,
            success,
        } => Some(Answer::Begun {
            id,
            result: begin(&schedule, start, success).map_err(shown),
        }),
        Ask::Records { id, schedule } => Some(Answer::Records {
            id,
            result: handled(&schedule).map_err(shown),
        }),
        Ask::Prune {
            schedule, before, ..
        } => {
            prune(&schedule, before);
            None
        }
    }
}

/// A job `paced` on `cron` with its state in `dir`, for the tests of this module.
#[cfg(test)]
fn schedule_in(dir: &std::path::Path, cron: &str) -> ScheduleConfig {
    ScheduleConfig {
        cron: crate::cron::CronSchedule::parse(cron, crate::cron::Zone::utc()).unwrap(),
        job: "paced".into(),
        catch_up: crate::domain::CatchUp::All,
        window: std::time::Duration::from_secs(3600),
        overlap: crate::domain::Overlap::Skip,
        grace: std::time::Duration::from_secs(1),
        state: state::parse_state_target(&dir.display().to_string()).unwrap(),
        metrics_listen: None,
        run_slot: None,
        caught_up: false,
        labelled: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records_without_a_thread() -> Records {
        Records {
            shared: Arc::new(Shared::default()),
        }
    }

    #[test]
    fn a_queue_holds_at_most_one_ask_of_each_kind_per_job_and_the_newest_wins() {
        let records = records_without_a_thread();
        let before = |h: u8| format!("2026-01-01T{h:02}:00:00Z").parse::<Slot>().unwrap();
        for (id, hour) in [(1, 1), (2, 1), (1, 2), (1, 3)] {
            records.ask(Ask::Prune {
                id,
                schedule: schedule_in(std::path::Path::new("/nonexistent"), "@hourly"),
                before: before(hour),
            });
        }
        records.ask(Ask::Records {
            id: 1,
            schedule: schedule_in(std::path::Path::new("/nonexistent"), "@hourly"),
        });
        let asks = lock(&records.shared.asks);
        let kept: Vec<_> = asks
            .iter()
            .map(|ask| match ask {
                Ask::Prune { id, before, .. } => (*id, "prune", Some(*before)),
                Ask::Records { id, .. } => (*id, "records", None),
                Ask::Begin { id, .. } => (*id, "begin", None),
            })
            .collect();
        assert_eq!(
            kept,
            [
                (1, "prune", Some(before(3))),
                (2, "prune", Some(before(1))),
                (1, "records", None)
            ]
        );
    }
}
