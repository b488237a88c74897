//! A shared circuit breaker (`--circuit`) as a run meets it: asked before the first
//! attempt, where an open circuit ends the run (`--throttled exit`) or holds it until
//! it may be asked again (`--throttled wait`, never past `--max-time`), and told how
//! the run ended. What the record comes to is `state`'s rule.

use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::Stopped;
use super::store::{Halt, Phase, Store};
use crate::domain::{
    CircuitConfig, ExitStatus, Hold, HoldCause, RunSummary, Stop, StopReason, Throttled, TimeLimit,
    human,
};
use crate::engine::{Clock, Sleeper};
use crate::report;
use crate::state::{Admission, ms_since_epoch, show_time};

/// How a run asks its circuit.
pub(super) struct Asking<'a> {
    pub circuit: &'a CircuitConfig,
    pub throttled: Throttled,
    /// The run's seed: the holds draw from a stream of their own.
    pub seed: u64,
    pub limit: &'a TimeLimit,
    /// `--retry-max-time` beside curl's retry words: the holds end within it too.
    pub hold_limit: Option<Duration>,
    pub clock: &'a dyn Clock,
    pub sleeper: &'a mut dyn Sleeper,
}

/// Asks the circuit whether the run may go ahead, as [`admitted`] says; under
/// `--throttled wait` an open circuit holds the run (the holds are returned, and
/// listed in `Stopped` when the run ends) and it asks again, unless the hold would end
/// past `--max-time`: the run then ends as `--throttled exit` would have ended it.
pub(super) fn admit(store: &mut Store, asking: Asking<'_>) -> Result<Vec<Hold>, Stopped> {
    let Asking {
        circuit: c,
        clock,
        sleeper,
        ..
    } = asking;
    let mut holds = Vec::new();
    let mut rng = hold_rng(asking.seed);
    loop {
        let asked = ask(store, c);
        let until_ms = match asked {
            Ok(Admission::Open { until_ms, .. }) if asking.throttled == Throttled::Wait => until_ms,
            _ => return ended(admitted(asked, c), holds),
        };
        let hold = circuit_hold(until_ms, ms_since_epoch(clock.wall()), c.cooldown, &mut rng);
        if let Some(flag) = hold_too_long(asking.limit, asking.hold_limit, clock, hold) {
            let refused = admitted(asked, c).map(|mut stopped| {
                stopped.message += &format!("; {flag} ends before it would be asked again");
                stopped
            });
            return ended(refused, holds);
        }
        report::info(&format!(
            "circuit {} is open until {}: holding the run {}, sending nothing",
            c.name,
            show_time(until_ms),
            human(hold)
        ));
        let (started_at, began) = (clock.wall(), clock.now());
        let slept = sleeper.sleep(hold, 1);
        holds.push(Hold {
            started_at,
            duration: clock.now().saturating_sub(began),
            cause: HoldCause::Circuit,
        });
        if let Err(stop) = slept {
            return ended(Some(stopped_while_held(stop, c)), holds);
        }
    }
}

/// The flag whose limit a hold of `hold` would pass, if any: `--max-time`, or
/// `--retry-max-time` (counted from the run's start, as no attempt has started yet).
fn hold_too_long(
    limit: &TimeLimit,
    hold_limit: Option<Duration>,
    clock: &dyn Clock,
    hold: Duration,
) -> Option<&'static str> {
    let now = clock.now();
    let limits = [
        ("--max-time", limit.left(now)),
        (
            "--retry-max-time",
            hold_limit.map(|l| l.saturating_sub(now)),
        ),
    ];
    limits
        .into_iter()
        .find_map(|(flag, left)| left.filter(|left| hold > *left).map(|_| flag))
}

/// The circuit's answer, claiming the probe when the cooldown has passed; `Err` when
/// `--max-time` or a signal ended the asking first.
fn ask(store: &mut Store, circuit: &CircuitConfig) -> Result<Admission, Halt> {
    Ok(store
        .with(Phase::Before, |s, b| s.admit(circuit, b))?
        .unwrap_or(Admission::Closed))
}

/// The holds so far, and the run's end if it ends here.
fn ended(refused: Option<Stopped>, holds: Vec<Hold>) -> Result<Vec<Hold>, Stopped> {
    match refused {
        None => Ok(holds),
        Some(stopped) => Err(Stopped { holds, ..stopped }),
    }
}

/// A run held by an open circuit that a signal or a lost lock ended.
fn stopped_while_held(stop: Stop, c: &CircuitConfig) -> Stopped {
    match stop {
        Stop::Signal(sig) => {
            let exit_code = ExitStatus::of_signal(sig);
            let message = format!(
                "stopped by {sig} while held by circuit {}; exit status {exit_code}",
                c.name
            );
            Stopped::new(exit_code, StopReason::Signal, message)
        }
        Stop::LockLost(message) => Stopped::new(ExitStatus::USAGE, StopReason::LockLost, message),
    }
}

/// What the circuit's answer means for the run: `Some` when it is open, or when
/// `--max-time` or a signal ended the asking. Claiming the probe is said aloud.
fn admitted(asked: Result<Admission, Halt>, c: &CircuitConfig) -> Option<Stopped> {
    match asked {
        Ok(Admission::Closed) => None,
        Ok(Admission::Probe) => {
            report::info(&format!(
                "circuit {} was open and its cooldown is over: this run is the probe",
                c.name
            ));
            None
        }
        Ok(Admission::Open { until_ms, failures }) => Some(Stopped::new(
            c.exit,
            StopReason::CircuitOpen,
            format!(
                "circuit {} is open until {} after {failures} failed run{} in a row: not running; exit status {}",
                c.name,
                show_time(until_ms),
                if failures == 1 { "" } else { "s" },
                c.exit
            ),
        )),
        Err(Halt::OutOfTime(why)) => Some(Stopped::new(
            ExitStatus::USAGE,
            StopReason::MaxTime,
            format!(
                "{why}: --max-time ran out before the first attempt; exit status {}",
                ExitStatus::USAGE
            ),
        )),
        Err(Halt::Signal(sig)) => Some(Stopped::new(
            ExitStatus::of_signal(sig),
            StopReason::Signal,
            format!(
                "stopped by {sig} while asking circuit {}; exit status {}",
                c.name,
                ExitStatus::of_signal(sig)
            ),
        )),
    }
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

/// Counts a finished run in the circuit (after the last attempt): every ending counts
/// (success closes it, any other is a failed run) but a signal's and one on an attempt
/// retry could not start for lack of resources, which says nothing of the service.
pub(super) fn record(store: &mut Store, circuit: &CircuitConfig, summary: &RunSummary) {
    if !counts_for_circuit(summary) {
        return;
    }
    let success = summary.succeeded();
    let recorded = store.with(Phase::After, |s, b| s.record_run(circuit, success, b));
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

/// Whether a run counts for its circuit.
fn counts_for_circuit(summary: &RunSummary) -> bool {
    let unstarted = summary
        .attempts
        .last()
        .is_some_and(|last| last.outcome.lacked_resources());
    // A slot another replaced says nothing of the service: the newer slot runs on.
    !matches!(
        summary.stopped_because,
        StopReason::Signal | StopReason::Replaced
    ) && !unstarted
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_hold_past_max_time_or_retry_max_time_names_the_limit() {
        let s = Duration::from_secs;
        let clock = crate::engine::fakes::FakeClock::default();
        clock.advance(s(3));
        let none = TimeLimit::starting_now(None);
        assert_eq!(hold_too_long(&none, None, &clock, s(60)), None);
        // Beside curl's retry words: --retry-max-time 5 has 2 s left at 3 s.
        assert_eq!(
            hold_too_long(&none, Some(s(5)), &clock, s(3)),
            Some("--retry-max-time")
        );
        assert_eq!(hold_too_long(&none, Some(s(5)), &clock, s(1)), None);
        let limit = TimeLimit::starting_now(Some(s(2)));
        assert_eq!(
            hold_too_long(&limit, None, &clock, s(1)),
            Some("--max-time")
        );
    }
}
