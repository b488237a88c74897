//! Backoff schedules and jitter as pure functions of (retry number, previous sleep,
//! rng). Nothing here sleeps or reads a clock; the engine decides when to use them.

use std::time::Duration;

use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::human;

/// `--max-delay`'s default in seconds, as a literal (it rises to `--delay` when that is
/// longer): [`DEFAULT_MAX_DELAY`] and the help's `[default: …]` are both made of it.
macro_rules! max_delay_default_seconds {
    () => {
        30
    };
}
pub(crate) use max_delay_default_seconds;

/// `--max-delay` when not given.
pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(max_delay_default_seconds!());

/// `--backoff`: how the delay grows from one retry to the next.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackoffKind {
    /// delay * factor^(n-1), capped by --max-delay
    Exponential,
    /// delay * n, capped by --max-delay
    Linear,
    /// delay every time
    Constant,
    /// delay * F(n), the Fibonacci numbers 1, 1, 2, 3, 5, 8 ..., capped by --max-delay
    Fibonacci,
}

/// `--jitter`: how each sleep is randomised.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum JitterKind {
    /// A uniform draw from 0 to d: spreads a crowd of clients the most
    Full,
    /// d/2 plus a uniform draw from 0 to d/2
    Equal,
    /// min(--max-delay, a uniform draw from --delay to 3 * the previous sleep)
    Decorrelated,
    /// Exactly d: clients that failed together come back together
    None,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    pub kind: BackoffKind,
    pub base: Duration,
    pub cap: Duration,
    pub factor: f64,
    pub jitter: JitterKind,
    /// `--delays`: when not empty, the delay before retry n is the nth of these (the
    /// last one repeating), and `kind` and `factor` play no part.
    pub list: Vec<Duration>,
}

/// The flags' defaults: exponential from 1s, factor 2, capped at 30s, full jitter.
impl Default for Schedule {
    fn default() -> Self {
        Schedule {
            kind: BackoffKind::Exponential,
            base: Duration::from_secs(1),
            cap: Duration::from_secs(30),
            factor: 2.0,
            jitter: JitterKind::Full,
            list: Vec::new(),
        }
    }
}

impl Schedule {
    /// The delay before retry `n` (1 = the sleep after the first attempt), before
    /// jitter and after the cap.
    pub fn nominal(&self, n: u32) -> Duration {
        let n = n.max(1);
        if let Some(last) = self.list.last() {
            let listed = self.list.get(n as usize - 1).unwrap_or(last);
            return (*listed).min(self.cap);
        }
        let base = self.base.as_secs_f64();
        let raw = match self.kind {
            BackoffKind::Exponential => {
                base * self.factor.powi(n.saturating_sub(1).min(4096) as i32)
            }
            BackoffKind::Linear => base * f64::from(n),
            BackoffKind::Constant => base,
            BackoffKind::Fibonacci => base * fibonacci(n),
        };
        clamp_secs(raw, self.cap)
    }

    /// Whether every retry from `n` on gets the same delay range as retry `n`: the
    /// cap is reached, or the list of `--delays` is used up.
    pub fn steady_from(&self, n: u32) -> bool {
        if self.jitter == JitterKind::Decorrelated {
            return self.bounds(n).1 >= self.cap;
        }
        if !self.list.is_empty() {
            return n as usize >= self.list.len();
        }
        self.kind == BackoffKind::Constant || self.nominal(n) >= self.cap
    }

    /// The sleep before retry `n`, jittered. `previous` is the sleep before retry
    /// `n - 1` (decorrelated jitter grows from it; the others ignore it).
    pub fn delay<R: Rng + ?Sized>(
        &self,
        n: u32,
        previous: Option<Duration>,
        rng: &mut R,
    ) -> Duration {
        match self.jitter {
            JitterKind::None => self.nominal(n),
            JitterKind::Full => uniform(rng, Duration::ZERO, self.nominal(n)),
            JitterKind::Equal => {
                let d = self.nominal(n);
                d / 2 + uniform(rng, Duration::ZERO, d / 2)
            }
            JitterKind::Decorrelated => {
                let prev = previous.unwrap_or(self.base).max(self.base);
                let hi = clamp_secs(prev.as_secs_f64() * 3.0, self.cap);
                let lo = self.base.min(self.cap);
                uniform(rng, lo, hi.max(lo))
            }
        }
    }

    /// How the delay grows ([`Schedule::nominal`]), is capped and jittered
    /// ([`Schedule::delay`]), as `--dry-run` shows it.
    pub fn describe(&self) -> String {
        let growth = match (self.jitter, self.kind) {
            (JitterKind::Decorrelated, _) => format!("decorrelated from {}", human(self.base)),
            _ if !self.list.is_empty() => {
                let list: Vec<String> = self.list.iter().map(|d| human(*d)).collect();
                format!(
                    "the list {} (--delays), the last repeating",
                    list.join(", ")
                )
            }
            (_, BackoffKind::Exponential) => {
                format!(
                    "exponential from {}, factor {}",
                    human(self.base),
                    self.factor
                )
            }
            (_, BackoffKind::Linear) => format!("linear, {} per retry", human(self.base)),
            (_, BackoffKind::Constant) => format!("constant {}", human(self.base)),
            (_, BackoffKind::Fibonacci) => {
                format!("fibonacci, {} x 1, 1, 2, 3, 5, 8 ...", human(self.base))
            }
        };
        let jitter = match self.jitter {
            JitterKind::Full => "full jitter U(0,d)",
            JitterKind::Equal => "equal jitter d/2+U(0,d/2)",
            JitterKind::Decorrelated => "decorrelated jitter min(cap,U(base,3*prev))",
            JitterKind::None => "no jitter",
        };
        format!("{growth}, capped at {}; {jitter}", human(self.cap))
    }

    /// The smallest and largest sleep that retry `n` can get.
    pub fn bounds(&self, n: u32) -> (Duration, Duration) {
        match self.jitter {
            JitterKind::None => (self.nominal(n), self.nominal(n)),
            JitterKind::Full => (Duration::ZERO, self.nominal(n)),
            JitterKind::Equal => {
                let d = self.nominal(n);
                (d / 2, d / 2 + d / 2)
            }
            JitterKind::Decorrelated => {
                let lo = self.base.min(self.cap);
                let grown = self.base.as_secs_f64() * 3f64.powi(n.min(4096) as i32);
                (lo, clamp_secs(grown, self.cap).max(lo))
            }
        }
    }
}

impl Schedule {
    /// The sleep before retry `n` when the other side asked to wait `wait`: the
    /// wait plus this jitter applied to max(wait, nominal delay), so that clients
    /// told the same time spread over at least as long again (docs/internals.md, "A
    /// server's wait").
    pub fn after_wait<R: Rng + ?Sized>(&self, wait: Duration, n: u32, rng: &mut R) -> Duration {
        let s = wait.max(self.nominal(n));
        wait + match self.jitter {
            JitterKind::None => Duration::ZERO,
            JitterKind::Full | JitterKind::Decorrelated => uniform(rng, Duration::ZERO, s),
            JitterKind::Equal => s / 2 + uniform(rng, Duration::ZERO, s / 2),
        }
    }

    /// What [`Schedule::after_wait`] adds to a server's wait W, as `--dry-run` shows it.
    pub fn describe_after_wait(&self) -> &'static str {
        match self.jitter {
            JitterKind::None => "waits exactly W (no jitter)",
            JitterKind::Full | JitterKind::Decorrelated => {
                "waits W + U(0,s), s = max(W, backoff delay)"
            }
            JitterKind::Equal => "waits W + s/2 + U(0,s/2), s = max(W, backoff delay)",
        }
    }
}

/// F(n) of 1, 1, 2, 3, 5, 8 …, as a float; past F(200) any delay is over any cap.
fn fibonacci(n: u32) -> f64 {
    let (mut previous, mut current) = (0.0, 1.0);
    for _ in 1..n.min(200) {
        (previous, current) = (current, previous + current);
    }
    current
}

/// Seconds as a Duration, never above `cap` and never negative or NaN.
fn clamp_secs(secs: f64, cap: Duration) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        return Duration::ZERO;
    }
    if secs >= cap.as_secs_f64() {
        return cap;
    }
    Duration::try_from_secs_f64(secs).unwrap_or(cap).min(cap)
}

/// The jitter's random numbers: a ChaCha8 stream from the run's seed, made at the first
/// draw. A run whose first attempt succeeds never draws, and making the generator
/// probes the CPU's features, which is slow in a virtual machine.
pub struct Jitter {
    seed: u64,
    rng: Option<ChaCha8Rng>,
}

impl Jitter {
    pub fn new(seed: u64) -> Jitter {
        Jitter { seed, rng: None }
    }

    pub fn rng(&mut self) -> &mut ChaCha8Rng {
        let seed = self.seed;
        self.rng
            .get_or_insert_with(|| ChaCha8Rng::seed_from_u64(seed))
    }
}

/// A seed for a run without `--seed`, from the keys std draws from the kernel's
/// getrandom(2) for its hash maps (the getrandom crate, in a statically linked build,
/// would first try /dev/random and /dev/urandom).
pub fn random_seed() -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one(std::process::id())
}

/// A uniform pick from [lo, hi], at nanosecond resolution.
pub fn uniform<R: Rng + ?Sized>(rng: &mut R, lo: Duration, hi: Duration) -> Duration {
    if hi <= lo {
        return lo;
    }
    let span = (hi - lo).as_nanos().min(u128::from(u64::MAX)) as u64;
    lo + Duration::from_nanos(rng.random_range(0..=span))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn schedule(kind: BackoffKind, jitter: JitterKind) -> Schedule {
        Schedule {
            kind,
            base: Duration::from_millis(100),
            cap: Duration::from_secs(5),
            factor: 2.0,
            jitter,
            list: Vec::new(),
        }
    }

    fn millis(list: &[u64]) -> Vec<Duration> {
        list.iter().map(|ms| Duration::from_millis(*ms)).collect()
    }

    #[test]
    fn a_schedule_describes_the_growth_and_jitter_it_applies() {
        let s = schedule(BackoffKind::Linear, JitterKind::Equal);
        assert_eq!(
            s.describe(),
            "linear, 100ms per retry, capped at 5s; equal jitter d/2+U(0,d/2)"
        );
        assert_eq!(
            s.bounds(3),
            (Duration::from_millis(150), Duration::from_millis(300))
        );
        let listed = Schedule {
            list: millis(&[200, 1000]),
            ..schedule(BackoffKind::Exponential, JitterKind::None)
        };
        assert!(
            listed
                .describe()
                .starts_with("the list 200ms, 1s (--delays)")
        );
        assert_eq!(listed.describe_after_wait(), "waits exactly W (no jitter)");
    }

    #[test]
    fn exponential_doubles_then_caps() {
        let s = schedule(BackoffKind::Exponential, JitterKind::None);
        let got: Vec<u128> = (1..=8).map(|n| s.nominal(n).as_millis()).collect();
        assert_eq!(got, [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        assert_eq!(s.nominal(u32::MAX), Duration::from_secs(5));
    }

    #[test]
    fn linear_and_constant() {
        let s = schedule(BackoffKind::Linear, JitterKind::None);
        assert_eq!(s.nominal(3), Duration::from_millis(300));
        assert_eq!(s.nominal(1000), Duration::from_secs(5));
        let s = schedule(BackoffKind::Constant, JitterKind::None);
        assert_eq!(s.nominal(7), Duration::from_millis(100));
    }

    #[test]
    fn fibonacci_multiplies_the_delay_then_caps() {
        let s = schedule(BackoffKind::Fibonacci, JitterKind::None);
        let got: Vec<u128> = (1..=10).map(|n| s.nominal(n).as_millis()).collect();
        assert_eq!(got, [100, 100, 200, 300, 500, 800, 1300, 2100, 3400, 5000]);
        assert_eq!(s.nominal(u32::MAX), Duration::from_secs(5));
        assert!(!s.steady_from(9) && s.steady_from(10));
    }

    #[test]
    fn a_list_of_delays_is_used_in_order_and_its_last_repeats() {
        let s = Schedule {
            list: millis(&[1000, 5000, 30000]),
            base: Duration::from_secs(1),
            cap: Duration::from_secs(30),
            ..schedule(BackoffKind::Exponential, JitterKind::None)
        };
        let got: Vec<u128> = (1..=5).map(|n| s.nominal(n).as_millis()).collect();
        assert_eq!(got, [1000, 5000, 30000, 30000, 30000]);
        assert!(!s.steady_from(2) && s.steady_from(3));
        // A list that shrinks settles at its last entry, below the longest.
        let shrinking = Schedule {
            list: millis(&[300, 100]),
            cap: Duration::from_millis(300),
            ..s
        };
        assert_eq!(shrinking.nominal(9), Duration::from_millis(100));
        assert!(shrinking.steady_from(2));
    }

    #[test]
    fn jitter_spreads_a_list_as_it_spreads_any_delay() {
        let s = Schedule {
            list: millis(&[100, 400]),
            cap: Duration::from_millis(400),
            ..schedule(BackoffKind::Exponential, JitterKind::Full)
        };
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        for n in 1..=20 {
            let d = s.delay(n, None, &mut rng);
            assert!(d <= s.nominal(n), "retry {n}: {d:?}");
        }
        let exact = Schedule {
            jitter: JitterKind::None,
            ..s
        };
        assert_eq!(exact.delay(1, None, &mut rng), Duration::from_millis(100));
        assert_eq!(exact.delay(7, None, &mut rng), Duration::from_millis(400));
    }

    #[test]
    fn every_jitter_stays_within_its_bounds() {
        for jitter in [
            JitterKind::Full,
            JitterKind::Equal,
            JitterKind::Decorrelated,
            JitterKind::None,
        ] {
            for kind in [
                BackoffKind::Exponential,
                BackoffKind::Linear,
                BackoffKind::Constant,
                BackoffKind::Fibonacci,
            ] {
                let s = schedule(kind, jitter);
                let mut rng = ChaCha8Rng::seed_from_u64(7);
                let mut prev = None;
                for n in 1..=40 {
                    let d = s.delay(n, prev, &mut rng);
                    let (lo, hi) = s.bounds(n);
                    assert!(
                        lo <= d && d <= hi,
                        "{jitter:?} {kind:?} n={n}: {d:?} not in {lo:?}..={hi:?}"
                    );
                    assert!(d <= s.cap);
                    prev = Some(d);
                }
            }
        }
    }

    #[test]
    fn full_jitter_bound_is_min_of_cap_and_growth() {
        let s = schedule(BackoffKind::Exponential, JitterKind::Full);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for n in 1..=20u32 {
            let bound = Duration::from_millis(100 * 2u64.pow(n.min(30) - 1)).min(s.cap);
            for _ in 0..50 {
                assert!(s.delay(n, None, &mut rng) <= bound);
            }
        }
    }

    #[test]
    fn equal_jitter_keeps_half() {
        let s = schedule(BackoffKind::Constant, JitterKind::Equal);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for _ in 0..200 {
            let d = s.delay(1, None, &mut rng);
            assert!(d >= Duration::from_millis(50) && d <= Duration::from_millis(100));
        }
    }

    #[test]
    fn decorrelated_grows_from_previous() {
        let s = schedule(BackoffKind::Exponential, JitterKind::Decorrelated);
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let prev = Duration::from_millis(400);
        for _ in 0..200 {
            let d = s.delay(5, Some(prev), &mut rng);
            assert!(
                d >= Duration::from_millis(100) && d <= Duration::from_millis(1200),
                "{d:?}"
            );
        }
    }

    #[test]
    fn same_seed_same_schedule() {
        let s = schedule(BackoffKind::Exponential, JitterKind::Full);
        let run = |seed| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            (1..=10)
                .map(|n| s.delay(n, None, &mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(42), run(42));
        assert_ne!(run(42), run(43));
    }

    #[test]
    fn full_jitter_spreads_out() {
        let s = schedule(BackoffKind::Constant, JitterKind::Full);
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let picks: Vec<Duration> = (0..1000).map(|_| s.delay(1, None, &mut rng)).collect();
        let low = picks
            .iter()
            .filter(|d| **d < Duration::from_millis(50))
            .count();
        assert!(
            (350..650).contains(&low),
            "{low} of 1000 below the midpoint"
        );
    }

    #[test]
    fn zero_base_means_no_sleep() {
        let mut s = schedule(BackoffKind::Exponential, JitterKind::Decorrelated);
        s.base = Duration::ZERO;
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        assert_eq!(s.delay(3, None, &mut rng), Duration::ZERO);
    }

    #[test]
    fn after_wait_spreads_over_the_larger_of_wait_and_delay() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let wait = Duration::from_secs(2);
        for jitter in [
            JitterKind::Full,
            JitterKind::Equal,
            JitterKind::Decorrelated,
            JitterKind::None,
        ] {
            let mut s = schedule(BackoffKind::Exponential, jitter);
            s.base = Duration::from_secs(1);
            s.cap = Duration::from_secs(30);
            for n in 1..=6 {
                let spread = wait.max(s.nominal(n));
                let (lo, hi) = match jitter {
                    JitterKind::None => (wait, wait),
                    JitterKind::Equal => (wait + spread / 2, wait + spread),
                    _ => (wait, wait + spread),
                };
                for _ in 0..200 {
                    let d = s.after_wait(wait, n, &mut rng);
                    assert!(lo <= d && d <= hi, "{jitter:?} n={n}: {d:?}");
                }
            }
        }
    }

    #[test]
    fn after_wait_full_jitter_uses_the_whole_spread() {
        // Twenty clients told to wait 2s must not come back within 250ms of each other.
        let s = schedule(BackoffKind::Exponential, JitterKind::Full);
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let wait = Duration::from_secs(2);
        let picks: Vec<Duration> = (0..1000).map(|_| s.after_wait(wait, 1, &mut rng)).collect();
        let late = picks
            .iter()
            .filter(|d| **d > Duration::from_secs(3))
            .count();
        assert!((400..600).contains(&late), "{late} of 1000 past wait + 1s");
        assert!(picks.iter().all(|d| *d >= wait && *d <= wait * 2));
    }
}
