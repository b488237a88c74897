//! The fleet's shared records and the rules every store applies to them: a retry
//! budget's tokens (gRPC's retry throttling, with a probe for held runs) and a circuit
//! breaker's failed runs and open-until time, as pure functions of the record, the
//! settings and the store's clock, and [`FleetStore`], the trait a store implements.
//! Files apply the rules in Rust ([`file::throttle_files`](crate::state::file::throttle_files)), PostgreSQL in SQL that mirrors them
//! ([`postgres::throttle_rows`](crate::state::postgres::throttle_rows)). When a run consults them is `fleet`'s.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::domain::{BudgetConfig, CircuitConfig, human};
use crate::wait::Bound;

/// Tokens after one attempt: a failure takes one (never below 0), a success adds
/// `ratio` (never above `size`); a budget holding more than `size` is cut to it.
pub fn tokens_after(tokens: f64, size: u32, ratio: f64, success: bool) -> f64 {
    let size = f64::from(size);
    let tokens = tokens.min(size);
    if success {
        (tokens + ratio).min(size)
    } else {
        (tokens - 1.0).max(0.0)
    }
}

/// Why a stored token count cannot be used, if it cannot: it must be a number from 0
/// to the largest budget size there is (a count above this run's size is cut to it).
pub fn check_tokens(tokens: f64) -> Result<(), String> {
    if tokens.is_finite() && (0.0..=f64::from(u32::MAX)).contains(&tokens) {
        Ok(())
    } else {
        Err(format!(
            "tokens {tokens} is not a number from 0 to {}",
            u32::MAX
        ))
    }
}

/// The last millisecond of year 9999: the latest time a record may name (RFC 3339
/// and the report write four-digit years).
pub const LATEST_MS: u64 = 253_402_300_799_999;

/// A retry is made only while the budget holds more than half its size.
pub fn allows_retry(tokens: f64, size: u32) -> bool {
    tokens > retry_threshold(size)
}

/// What a budget must hold more than to let a retry through: half its size.
fn retry_threshold(size: u32) -> f64 {
    f64::from(size) / 2.0
}

/// A budget holding `tokens`, with the rules it is asked by ([`allows_retry`],
/// [`tokens_after`]), as `--dry-run` shows it.
pub fn describe_budget(tokens: f64, budget: &BudgetConfig) -> String {
    format!(
        "{} holds {} of {} tokens (retries while more than {}; a success earns {})",
        budget.name,
        show_tokens(tokens),
        budget.size,
        show_tokens(retry_threshold(budget.size)),
        budget.ratio
    )
}

/// `5` or `4.3`: tokens as a person reads them.
pub fn show_tokens(tokens: f64) -> String {
    if (tokens - tokens.round()).abs() < 1e-9 {
        format!("{}", tokens.round())
    } else {
        format!("{tokens:.1}")
    }
}

/// Tokens after a probe's attempt (`--throttled wait`): a failed probe takes none (the
/// service is known to be down); a successful one sets the budget to the larger of
/// T + R and N/2 + R, so that the held runs go on.
pub fn tokens_after_probe(tokens: f64, size: u32, ratio: f64, success: bool) -> f64 {
    let (threshold, size) = (retry_threshold(size), f64::from(size));
    let tokens = tokens.min(size);
    if success {
        (tokens + ratio).max(threshold + ratio).min(size)
    } else {
        tokens
    }
}

/// What a budget says to a held run that asks to retry (`--throttled wait`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Answer {
    /// More than half the tokens are left: retry.
    Allowed,
    /// The budget is spent, but no retry of it was sent for the probe interval: this
    /// run's retry is the fleet's probe.
    Probe,
    /// Spent: hold (the tokens left).
    Refused(f64),
}

/// Asks a budget holding `tokens`, whose last retry was sent at `last_retry_ms`, at
/// `now_ms` on the store's clock: returns the answer and the last retry time to store
/// (a retry let through, probe or not, is sent now).
pub fn ask(
    tokens: f64,
    size: u32,
    last_retry_ms: Option<u64>,
    now_ms: u64,
    probe_after: Duration,
) -> (Answer, Option<u64>) {
    if allows_retry(tokens.min(f64::from(size)), size) {
        return (Answer::Allowed, Some(now_ms));
    }
    let quiet = last_retry_ms.is_none_or(|last| now_ms.saturating_sub(last) >= millis(probe_after));
    if quiet {
        (Answer::Probe, Some(now_ms))
    } else {
        (Answer::Refused(tokens), last_retry_ms)
    }
}

/// A circuit breaker's shared state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CircuitState {
    /// Failed runs in a row.
    pub failures: u32,
    /// Milliseconds since the Unix epoch until which the circuit is open.
    pub open_until_ms: Option<u64>,
}

/// What the circuit says to a run about to start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    Closed,
    /// The cooldown has passed and this run is the probe.
    Probe,
    Open {
        until_ms: u64,
        failures: u32,
    },
}

impl CircuitState {
    /// Why a stored state cannot be used, if it cannot.
    pub fn validate(&self) -> Result<(), String> {
        match self.open_until_ms {
            Some(ms) if ms > LATEST_MS => Err(format!("open_until_ms {ms} is past year 9999")),
            _ => Ok(()),
        }
    }

    fn is_open(&self, limit: u32) -> bool {
        self.failures >= limit && self.open_until_ms.is_some()
    }

    /// Admits a run at `now_ms`; claiming the probe pushes the open-until time one
    /// cooldown further, so the next run is refused.
    pub fn admit(&mut self, now_ms: u64, config: &CircuitConfig) -> Admission {
        if !self.is_open(config.failures) {
            return Admission::Closed;
        }
        let until = self.open_until_ms.unwrap_or(0);
        if now_ms < until {
            return Admission::Open {
                until_ms: until,
                failures: self.failures,
            };
        }
        self.open_until_ms = Some(open_until(now_ms, config));
        Admission::Probe
    }

    /// This record under `config` at `now_ms`, as [`CircuitState::admit`] would find
    /// it, for `--dry-run`.
    pub fn describe(&self, config: &CircuitConfig, now_ms: u64) -> String {
        let open = self.open_until_ms.filter(|_| self.is_open(config.failures));
        let status = match open {
            Some(until) if now_ms < until => format!("open until {}", show_time(until)),
            Some(_) => "open, cooldown over: the next run is the probe".into(),
            None => "closed".into(),
        };
        // The count goes on past the threshold while runs keep failing: "15 of 5" read as nonsense.
        format!(
            "{} is {status}; {} failed run{} in a row (it opens at {}); cooldown {}; refused runs exit {}",
            config.name,
            self.failures,
            if self.failures == 1 { "" } else { "s" },
            config.failures,
            human(config.cooldown),
            config.exit
        )
    }

    /// Counts a run that ended at `now_ms`: a success closes the circuit, a failure
    /// adds one and, at the limit, opens it for a cooldown from now.
    pub fn record(&mut self, success: bool, now_ms: u64, config: &CircuitConfig) {
        if success {
            *self = CircuitState::default();
            return;
        }
        self.failures = self.failures.saturating_add(1);
        if self.failures >= config.failures {
            self.open_until_ms = Some(open_until(now_ms, config));
        }
    }
}

/// When a circuit opened at `now_ms` closes again: one cooldown later, and never past
/// the last millisecond of year 9999, so the record stays one that can be read.
fn open_until(now_ms: u64, config: &CircuitConfig) -> u64 {
    now_ms
        .saturating_add(millis(config.cooldown))
        .min(LATEST_MS)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX / 2)
}

/// Now, in milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    ms_since_epoch(SystemTime::now())
}

/// `t` in milliseconds since the Unix epoch (0 before it).
pub fn ms_since_epoch(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, millis)
}

/// An RFC 3339 time for a millisecond timestamp (the last one of year 9999 at most).
pub fn show_time(ms: u64) -> String {
    crate::domain::rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms.min(LATEST_MS)))
}

/// One finished attempt, as a budget counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spent {
    pub success: bool,
    /// The attempt was the fleet's probe of a spent budget.
    pub probe: bool,
}

impl Spent {
    /// The tokens after this attempt.
    pub fn tokens_after(self, tokens: f64, budget: &BudgetConfig) -> f64 {
        if self.probe {
            tokens_after_probe(tokens, budget.size, budget.ratio, self.success)
        } else {
            tokens_after(tokens, budget.size, budget.ratio, self.success)
        }
    }
}

/// Where budgets and circuits live. Every update is atomic across processes, and
/// every call ends within its `bound` (and the store's own limits).
pub trait FleetStore {
    /// How messages name the store (never with a password).
    fn describe(&self) -> String;
    /// Checks, before the first attempt, that the records of `budget` and `circuit`
    /// can be used (a link where a state file should be is an error).
    fn check(
        &mut self,
        _budget: Option<&BudgetConfig>,
        _circuit: Option<&CircuitConfig>,
    ) -> anyhow::Result<()> {
        Ok(())
    }
    /// Applies one attempt's result to the budget (a probe's as [`tokens_after_probe`]
    /// says); returns the tokens left.
    fn spend(
        &mut self,
        budget: &BudgetConfig,
        attempt: Spent,
        bound: &Bound,
    ) -> anyhow::Result<f64>;
    /// Asks, on the store's clock and atomically with claiming a probe, whether a held
    /// run may retry now (`--throttled wait`): [`ask`] applied to the stored budget.
    fn ask(
        &mut self,
        budget: &BudgetConfig,
        probe_after: Duration,
        bound: &Bound,
    ) -> anyhow::Result<Answer>;
    /// The budget's tokens, unchanged.
    fn tokens(&mut self, budget: &BudgetConfig, bound: &Bound) -> anyhow::Result<f64>;
    /// Admits a run, claiming the probe when the cooldown has passed.
    fn admit(&mut self, circuit: &CircuitConfig, bound: &Bound) -> anyhow::Result<Admission>;
    /// Counts a finished run; returns the state after.
    fn record_run(
        &mut self,
        circuit: &CircuitConfig,
        success: bool,
        bound: &Bound,
    ) -> anyhow::Result<CircuitState>;
    /// The circuit's state, unchanged.
    fn circuit(&mut self, circuit: &CircuitConfig, bound: &Bound) -> anyhow::Result<CircuitState>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ExitStatus;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn tokens_read_as_people_write_them() {
        assert_eq!(show_tokens(5.0), "5");
        assert_eq!(show_tokens(4.3), "4.3");
    }

    #[test]
    fn a_circuit_describes_itself_as_it_admits() {
        let config = circuit(2, 10);
        let mut record = CircuitState::default();
        assert!(
            record
                .describe(&config, 0)
                .starts_with("c is closed; 0 failed runs")
        );
        record.record(false, 0, &config);
        assert!(
            record
                .describe(&config, 0)
                .contains("closed; 1 failed run in a row (it opens at 2)")
        );
        record.record(false, 0, &config);
        let until = show_time(10_000);
        assert!(
            record
                .describe(&config, 9_999)
                .contains(&format!("open until {until}"))
        );
        assert_eq!(
            record.admit(9_999, &config),
            Admission::Open {
                until_ms: 10_000,
                failures: 2
            }
        );
        assert!(
            record
                .describe(&config, 10_000)
                .contains("cooldown over: the next run is the probe")
        );
        assert_eq!(record.admit(10_000, &config), Admission::Probe);
    }

    fn circuit(failures: u32, cooldown_s: u64) -> CircuitConfig {
        CircuitConfig {
            name: "c".into(),
            failures,
            cooldown: Duration::from_secs(cooldown_s),
            exit: ExitStatus::new(75),
        }
    }

    #[test]
    fn failures_take_a_token_down_to_zero_and_successes_earn_up_to_the_size() {
        assert_eq!(tokens_after(10.0, 10, 0.1, false), 9.0);
        assert_eq!(tokens_after(0.0, 10, 0.1, false), 0.0);
        assert!((tokens_after(4.0, 10, 0.1, true) - 4.1).abs() < 1e-9);
        assert_eq!(tokens_after(9.95, 10, 0.1, true), 10.0);
        assert_eq!(
            tokens_after(50.0, 10, 0.1, true),
            10.0,
            "a smaller size cuts"
        );
    }

    #[test]
    fn retries_stop_at_half_the_budget_after_about_half_the_size_in_failures() {
        let mut tokens = 10.0;
        let mut retries = 0;
        for _ in 0..100 {
            tokens = tokens_after(tokens, 10, 0.1, false);
            if allows_retry(tokens, 10) {
                retries += 1;
            }
        }
        assert_eq!(retries, 4, "9, 8, 7 and 6 are more than 5");
        assert!(!allows_retry(5.0, 10));
        // Successes refill it: ten of them earn one token.
        for _ in 0..11 {
            tokens = tokens_after(tokens, 10, 0.1, true);
        }
        assert!((tokens - 1.1).abs() < 1e-9);
        let refilled = (0..60).fold(tokens, |t, _| tokens_after(t, 10, 0.1, true));
        assert!(allows_retry(refilled, 10));
    }

    #[test]
    fn a_circuit_opens_after_n_failed_runs_and_a_success_closes_it() {
        let c = circuit(3, 60);
        let mut s = CircuitState::default();
        for t in 0..2 {
            s.record(false, t, &c);
            assert_eq!(s.admit(t, &c), Admission::Closed);
        }
        s.record(false, 1_000, &c);
        assert_eq!(
            s.admit(1_000, &c),
            Admission::Open {
                until_ms: 61_000,
                failures: 3
            }
        );
        assert!(matches!(s.admit(60_999, &c), Admission::Open { .. }));
        s.record(true, 2_000, &c);
        assert_eq!(s, CircuitState::default());
        assert_eq!(s.admit(2_000, &c), Admission::Closed);
    }

    #[test]
    fn after_the_cooldown_one_probe_is_claimed_and_the_rest_refused() {
        let c = circuit(1, 60);
        let mut s = CircuitState::default();
        s.record(false, 0, &c);
        assert_eq!(s.admit(60_000, &c), Admission::Probe);
        assert_eq!(
            s.admit(60_001, &c),
            Admission::Open {
                until_ms: 120_000,
                failures: 1
            },
            "the probe pushed the open-until time one cooldown further"
        );
        // The probe fails: open for a cooldown from its end.
        s.record(false, 65_000, &c);
        assert_eq!(s.open_until_ms, Some(125_000));
        assert_eq!(s.failures, 2);
        assert_eq!(s.admit(125_000, &c), Admission::Probe);
        s.record(true, 126_000, &c);
        assert_eq!(s.admit(126_000, &c), Admission::Closed);
    }

    #[test]
    fn a_cooldown_past_year_9999_opens_the_circuit_to_its_last_millisecond() {
        let c = circuit(1, 400_000_000_000);
        let mut s = CircuitState::default();
        s.record(false, 1_700_000_000_000, &c);
        assert_eq!(s.open_until_ms, Some(LATEST_MS));
        assert_eq!(s.validate(), Ok(()), "a record that can be read back");
        assert_eq!(show_time(LATEST_MS), "9999-12-31T23:59:59.999Z");
        assert_eq!(show_time(u64::MAX), "9999-12-31T23:59:59.999Z");
    }

    #[test]
    fn a_failed_probe_takes_no_token_and_a_successful_one_reopens_the_budget() {
        assert_eq!(tokens_after_probe(2.0, 10, 0.1, false), 2.0);
        assert!((tokens_after_probe(2.0, 10, 0.1, true) - 5.1).abs() < 1e-9);
        assert!(allows_retry(tokens_after_probe(0.0, 10, 0.1, true), 10));
        assert!((tokens_after_probe(7.0, 10, 0.1, true) - 7.1).abs() < 1e-9);
        assert_eq!(tokens_after_probe(9.95, 10, 0.1, true), 10.0);
        assert!((tokens_after_probe(0.0, 3, 1.0, true) - 2.5).abs() < 1e-9);
    }

    #[test]
    fn a_spent_budget_lets_one_probe_through_per_interval_on_the_stores_clock() {
        let every = Duration::from_millis(500);
        // Full: allowed, and the retry is marked as sent now.
        assert_eq!(
            ask(6.0, 10, None, 1_000, every),
            (Answer::Allowed, Some(1_000))
        );
        // Spent, with a retry 499 ms ago: refused, the time kept.
        assert_eq!(
            ask(5.0, 10, Some(1_000), 1_499, every),
            (Answer::Refused(5.0), Some(1_000))
        );
        // 500 ms without a retry: this asker is the probe, and the next must wait again.
        assert_eq!(
            ask(5.0, 10, Some(1_000), 1_500, every),
            (Answer::Probe, Some(1_500))
        );
        assert_eq!(
            ask(5.0, 10, Some(1_500), 1_501, every),
            (Answer::Refused(5.0), Some(1_500))
        );
        // Never a retry recorded: the first asker probes.
        assert_eq!(ask(0.0, 10, None, 7, every), (Answer::Probe, Some(7)));
        // A clock that stepped back keeps the probe closed until it passes the mark.
        assert_eq!(
            ask(0.0, 10, Some(9_000), 8_000, every).0,
            Answer::Refused(0.0)
        );
    }

    /// 200 held runs of one spent budget ask at their own jittered times through a 2 s
    /// outage (--delay 500ms): the store lets at most one retry through per 500 ms, and
    /// the first probe after the service is back reopens the budget for everyone.
    #[test]
    fn a_fleet_of_held_runs_sends_one_probe_per_interval_and_recovers_after_the_outage() {
        let every = Duration::from_millis(500);
        let (size, ratio) = (10, 0.1);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let (mut tokens, mut last) = (0.0, Some(0));
        // Each run's next ask, in ms; the service answers from 2000 ms on.
        let mut next: Vec<u64> = (0..200).map(|_| rng.random_range(0..1000)).collect();
        let mut sent: Vec<u64> = Vec::new();
        let mut done = [false; 200];
        for now in 0..10_000u64 {
            for run in 0..200 {
                if done[run] || next[run] != now {
                    continue;
                }
                let (answer, stored) = ask(tokens, size, last, now, every);
                last = stored;
                let mut hold = || rng.random_range(50..=1000);
                match answer {
                    Answer::Refused(_) => next[run] = now + hold(),
                    Answer::Allowed | Answer::Probe => {
                        sent.push(now);
                        let up = now >= 2000;
                        tokens = if answer == Answer::Probe {
                            tokens_after_probe(tokens, size, ratio, up)
                        } else {
                            tokens_after(tokens, size, ratio, up)
                        };
                        if up {
                            done[run] = true;
                        } else {
                            next[run] = now + hold();
                        }
                    }
                }
            }
        }
        let in_outage: Vec<u64> = sent.iter().copied().filter(|t| *t < 2000).collect();
        assert!(
            in_outage.len() <= 4,
            "one probe per 500 ms in 2 s: {in_outage:?}"
        );
        assert!(
            in_outage.windows(2).all(|w| w[1] - w[0] >= 500),
            "{in_outage:?}"
        );
        assert!(
            done.iter().all(|d| *d),
            "every held run succeeded after the outage"
        );
    }
}
