//! State shared between every `retry` that names the same retry budget or circuit
//! breaker through the same `--state`, as a run uses it: [`Fleet`], which fails open
//! once the store fails mid-run, the budget the engine asks, the circuit's holds and
//! the splay. The records, their rules and the stores are `state`'s.
//! When to consult them is the caller's: the engine asks the budget before each
//! retry, `run` asks the circuit before the first attempt.

use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::fleet::FleetConfig;
use crate::domain::{BudgetConfig, CircuitConfig, Signal};
use crate::engine::{Refusal, RetryBudget};
use crate::report;
use crate::state::{self, Admission, Answer, Backend, FleetStore, Spent, allows_retry, show_time};
use crate::wait::Bound;

/// `5` or `4.3`: tokens as a person reads them.
pub fn show_tokens(tokens: f64) -> String {
    if (tokens - tokens.round()).abs() < 1e-9 {
        format!("{}", tokens.round())
    } else {
        format!("{tokens:.1}")
    }
}

/// The `--splay` sleep: U(0, window), from its own stream of the run's seed so
/// the jitter that follows is the same with or without it.
pub fn splay_delay(window: Duration, seed: u64) -> Duration {
    if window.is_zero() {
        return Duration::ZERO;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(1);
    let span = u64::try_from(window.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(rng.random_range(0..=span))
}

/// How long a run held by an open circuit (`--throttled wait`) waits before asking
/// again: until the open-until time plus a splay of U(0, cooldown/10), so that the held
/// runs do not ask in one wave, and never longer than a tenth of the cooldown (the
/// circuit may close sooner: a probe of another run's). Never under 10 ms.
pub fn circuit_hold(
    until_ms: u64,
    now_ms: u64,
    cooldown: Duration,
    rng: &mut ChaCha8Rng,
) -> Duration {
    let tenth = cooldown / 10;
    let span = u64::try_from(tenth.as_nanos()).unwrap_or(u64::MAX);
    let splay = Duration::from_nanos(rng.random_range(0..=span));
    let until_open_ends = Duration::from_millis(until_ms.saturating_sub(now_ms));
    (until_open_ends + splay)
        .min(tenth)
        .max(Duration::from_millis(10))
}

/// The random stream of a run's circuit holds: its own stream of the run's seed, so the
/// jitter of the attempts is the same with or without holds.
pub fn hold_rng(seed: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(2);
    rng
}

/// Opens the store of `config` at `target` (creating directories or tables) and
/// checks its records within `bound`: an error is exit 125.
pub fn open(
    config: &FleetConfig,
    target: &Backend,
    bound: &Bound,
) -> anyhow::Result<Box<dyn FleetStore>> {
    let holds = config
        .budget
        .as_ref()
        .is_some_and(|b| b.probe_after.is_some());
    let mut store = state::open_fleet(target, holds, bound)?;
    store.check(config.budget.as_ref(), config.circuit.as_ref())?;
    Ok(store)
}

/// The store as a run uses it: after its first failure, a warning, then nothing
/// (budgets and circuits fail open). Calls before and between attempts end with
/// `--max-time` too; those after it (and after the last attempt) only with the
/// store's limits.
pub struct Fleet {
    store: Option<Box<dyn FleetStore>>,
    run_deadline: Option<Instant>,
}

/// When in the run a store call is made.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before the first attempt or a retry: `--max-time` bounds it.
    Before,
    /// After an attempt: `--max-time` bounds it while it lasts (a later attempt may
    /// follow), the store's own limits once it has passed (none will).
    Between,
    /// After the last attempt: the store's own limits.
    After,
}

/// Why a store call before the first attempt (or a retry) ended the run.
#[derive(Debug)]
pub enum Halt {
    /// `--max-time` ran out during the call (what the store said).
    OutOfTime(String),
    /// A stopping signal arrived during the call.
    Signal(Signal),
}

impl Fleet {
    pub fn new(store: Box<dyn FleetStore>, run_deadline: Option<Instant>) -> Fleet {
        Fleet {
            store: Some(store),
            run_deadline,
        }
    }

    fn deadline_passed(&self) -> bool {
        self.run_deadline.is_some_and(|d| Instant::now() >= d)
    }

    fn bound(&self, phase: Phase) -> Bound {
        match phase {
            Phase::Before => Bound::until(self.run_deadline),
            Phase::Between if !self.deadline_passed() => Bound::until(self.run_deadline),
            Phase::Between | Phase::After => Bound::signals_only(),
        }
    }

    /// Runs `op` on the store, unless it already failed; a failure warns once. `Err`
    /// when `--max-time` ended the call (the store stays for the calls after it), or
    /// a signal ended one made before an attempt.
    fn with<T>(
        &mut self,
        phase: Phase,
        op: impl FnOnce(&mut dyn FleetStore, &Bound) -> anyhow::Result<T>,
    ) -> Result<Option<T>, Halt> {
        let bound = self.bound(phase);
        let Some(store) = self.store.as_mut() else {
            return Ok(None);
        };
        let err = match op(store.as_mut(), &bound) {
            Ok(value) => return Ok(Some(value)),
            Err(err) => err,
        };
        // A signal stops the run; it is no failure of the store to warn about.
        if let Some(crate::domain::Interrupted(sig)) = err.downcast_ref() {
            let sig = *sig;
            self.store = None;
            return match phase {
                Phase::Before => Err(Halt::Signal(sig)),
                Phase::Between | Phase::After => Ok(None),
            };
        }
        let described = store.describe();
        if phase != Phase::After && self.deadline_passed() {
            return Err(Halt::OutOfTime(format!("{err:#}")));
        }
        report::notice(&format!(
            "warning: the fleet state in {described} failed ({err:#}); going on without the retry budget and circuit breaker"
        ));
        self.store = None;
        Ok(None)
    }

    /// Before the first attempt; `Err` when `--max-time` or a signal ended it first.
    pub fn admit(&mut self, circuit: &CircuitConfig) -> Result<Admission, Halt> {
        Ok(self
            .with(Phase::Before, |s, b| s.admit(circuit, b))?
            .unwrap_or(Admission::Closed))
    }

    /// After the last attempt.
    pub fn record_run(&mut self, circuit: &CircuitConfig, success: bool) {
        let recorded = self.with(Phase::After, |s, b| s.record_run(circuit, success, b));
        if let Ok(Some(state)) = recorded {
            let shown = match state
                .open_until_ms
                .filter(|_| state.failures >= circuit.failures)
            {
                Some(until) => format!("open until {}", show_time(until)),
                None => "closed".into(),
            };
            report::verbose(
                1,
                &format!(
                    "circuit {}: {} failed run{} in a row, {shown}",
                    circuit.name,
                    state.failures,
                    if state.failures == 1 { "" } else { "s" }
                ),
            );
        }
    }

    /// The engine's view of `budget`.
    pub fn budget<'a>(&'a mut self, budget: &'a BudgetConfig) -> SharedBudget<'a> {
        SharedBudget {
            fleet: self,
            config: budget,
            tokens: None,
            ran_out: None,
            probing: false,
        }
    }
}

/// A retry budget in a [`Fleet`], for the engine.
pub struct SharedBudget<'a> {
    fleet: &'a mut Fleet,
    config: &'a BudgetConfig,
    /// What the last update returned: the decision uses the count this run's own
    /// update produced, read in the same atomic step.
    tokens: Option<f64>,
    /// `--max-time` ran out during the last update (why): no retry follows.
    ran_out: Option<String>,
    /// The retry being made is the fleet's probe of the spent budget.
    probing: bool,
}

impl SharedBudget<'_> {
    fn out_of_time(&self, why: &str) -> Refusal {
        Refusal::OutOfTime(format!(
            "{why}, so retry budget {} could not be asked: not retrying",
            self.config.name
        ))
    }

    fn spent(&self, tokens: f64) -> Refusal {
        Refusal::Spent(format!(
            "retry budget {} is spent ({} of {} tokens)",
            self.config.name,
            show_tokens(tokens),
            self.config.size
        ))
    }

    /// `--throttled wait`: asks the store after the sleep, claiming the probe if it is due.
    fn ask(&mut self, probe_after: Duration) -> Result<(), Refusal> {
        let config = self.config;
        let asked = self
            .fleet
            .with(Phase::Before, |s, b| s.ask(config, probe_after, b));
        match asked {
            Ok(Some(Answer::Refused(tokens))) => Err(self.spent(tokens)),
            Ok(Some(Answer::Probe)) => {
                self.probing = true;
                report::info(&format!(
                    "retry budget {} is spent and no retry of it was sent for {}: this retry is the probe",
                    config.name,
                    crate::domain::human(probe_after)
                ));
                Ok(())
            }
            // A store that failed is absent: the budget fails open.
            Ok(Some(Answer::Allowed) | None) | Err(Halt::Signal(_)) => Ok(()),
            Err(Halt::OutOfTime(why)) => Err(self.out_of_time(&why)),
        }
    }
}

impl RetryBudget for SharedBudget<'_> {
    fn may_retry(&mut self) -> Result<(), Refusal> {
        let config = self.config;
        if let Some(why) = self.ran_out.take() {
            return Err(self.out_of_time(&why));
        }
        if let Some(probe_after) = config.probe_after {
            return self.ask(probe_after);
        }
        let tokens = match self.tokens {
            Some(t) => Some(t),
            // Before a retry: --max-time bounds the question; a signal stops the sleep before it.
            None => match self.fleet.with(Phase::Before, |s, b| s.tokens(config, b)) {
                Ok(tokens) => tokens,
                Err(Halt::Signal(_)) => None,
                Err(Halt::OutOfTime(why)) => return Err(self.out_of_time(&why)),
            },
        };
        match tokens {
            Some(t) if !allows_retry(t, config.size) => Err(self.spent(t)),
            _ => Ok(()),
        }
    }

    fn record(&mut self, success: bool) {
        let config = self.config;
        let attempt = Spent {
            success,
            probe: std::mem::take(&mut self.probing),
        };
        // After an attempt: within --max-time while it lasts, then the store's own limits.
        let spent = self
            .fleet
            .with(Phase::Between, |s, b| s.spend(config, attempt, b));
        (self.tokens, self.ran_out) = match spent {
            Ok(tokens) => (tokens, None),
            Err(Halt::OutOfTime(why)) => (None, Some(why)),
            Err(Halt::Signal(_)) => (None, None),
        };
    }

    fn holds(&self) -> bool {
        self.config.probe_after.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seeded_splay_is_repeatable_and_within_its_window() {
        let window = Duration::from_secs(2);
        assert_eq!(splay_delay(window, 7), splay_delay(window, 7));
        assert_ne!(splay_delay(window, 7), splay_delay(window, 8));
        assert!((0..100).all(|seed| splay_delay(window, seed) <= window));
        assert_eq!(splay_delay(Duration::ZERO, 7), Duration::ZERO);
    }

    #[test]
    fn a_circuit_hold_ends_at_open_until_plus_a_splay_and_at_most_a_tenth_of_the_cooldown() {
        let cooldown = Duration::from_secs(60);
        let mut rng = hold_rng(1);
        // Far from the end of the cooldown: ask again in a tenth of it.
        assert_eq!(
            circuit_hold(60_000, 0, cooldown, &mut rng),
            Duration::from_secs(6)
        );
        // 1 s before it: 1 s plus up to 6 s of splay, capped at 6 s.
        let holds: Vec<Duration> = (0..200)
            .map(|_| circuit_hold(10_000, 9_000, cooldown, &mut rng))
            .collect();
        assert!(
            holds
                .iter()
                .all(|h| *h >= Duration::from_secs(1) && *h <= Duration::from_secs(6))
        );
        assert!(
            holds.iter().any(|h| *h < Duration::from_secs(3))
                && holds.iter().any(|h| *h > Duration::from_secs(4))
        );
        // Past it: only the splay, never under 10 ms.
        let short = circuit_hold(0, 5_000, Duration::from_millis(50), &mut rng);
        assert_eq!(
            short,
            Duration::from_millis(10),
            "a tenth of 50 ms is under the floor"
        );
        assert_eq!(
            hold_rng(4).random_range(0..u64::MAX),
            hold_rng(4).random_range(0..u64::MAX)
        );
    }

    #[test]
    fn tokens_read_as_people_write_them() {
        assert_eq!(show_tokens(5.0), "5");
        assert_eq!(show_tokens(4.3), "4.3");
    }
}
