//! `--splay`: a sleep of U(0, window) before the first attempt, so that runs a
//! scheduler starts together do not reach the service together.

use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::Stopped;
use crate::domain::{ExitStatus, Signal, Stop, StopReason, human};
use crate::engine::Sleeper;
use crate::report;

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

/// The longest `--splay` sleep: the window, cut to `cap` (what is left of the time
/// limit; at the start of a run, the whole `--max-time`) when that is shorter.
pub fn longest(window: Duration, cap: Option<Duration>) -> Duration {
    cap.map_or(window, |cap| window.min(cap))
}

/// The splay of `window` that the run of `seed` sleeps (never past `cap`).
fn delay(window: Duration, seed: u64, cap: Option<Duration>) -> Duration {
    splay_delay(window, seed).min(longest(window, cap))
}

/// What `--splay` does, for `--dry-run`: the draw and, with `--seed`, this run's sleep.
pub fn describe(window: Duration, seed: Option<u64>, max_time: Option<Duration>) -> String {
    let this_run = seed
        .map(|seed| {
            let sleep = delay(window, seed, max_time);
            format!("; with --seed {seed}: {}", human(sleep))
        })
        .unwrap_or_default();
    format!("U(0, {}) before the first attempt{this_run}", human(window))
}

/// Sleeps the splay of `window` (never past what is `left` of the time limit); a
/// stopping signal ends it at once, and the run with it.
pub(super) fn sleep(
    window: Duration,
    seed: u64,
    left: Option<Duration>,
    sleeper: &mut dyn Sleeper,
) -> Result<(), Stopped> {
    let delay = delay(window, seed, left);
    if delay.is_zero() {
        return Ok(());
    }
    report::verbose(
        1,
        &format!(
            "splay: sleeping {} before the first attempt (up to {}, --seed {seed})",
            human(delay),
            human(window)
        ),
    );
    sleeper.sleep(delay, 1).map_err(|stop| {
        let sig = match stop {
            Stop::Signal(sig) => sig,
            Stop::LockLost(_) => Signal::new(0),
        };
        let exit_code = ExitStatus::of_signal(sig);
        let message = format!("stopped by {sig} during the --splay sleep; exit status {exit_code}");
        Stopped::new(exit_code, StopReason::Signal, message)
    })
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
    fn the_description_shows_the_sleep_cut_to_max_time() {
        let (window, max) = (Duration::from_secs(20), Duration::from_millis(1));
        assert_eq!(longest(window, Some(max)), max);
        assert_eq!(longest(window, None), window);
        let cut = describe(window, Some(7), Some(max));
        assert_eq!(
            cut,
            "U(0, 20s) before the first attempt; with --seed 7: 1ms"
        );
        let uncut = describe(window, Some(7), None);
        let expected = human(splay_delay(window, 7));
        assert!(uncut.ends_with(&format!("--seed 7: {expected}")), "{uncut}");
    }
}
