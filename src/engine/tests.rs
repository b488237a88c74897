//! The loop against scripted executors, a fake clock and a fake sleeper: attempt
//! counts, delays and stop reasons exactly, without sleeping.

use super::fakes::*;
use super::*;
use crate::domain::{
    Events, Goal, HoldCause, Jitter, JitterKind, Outcome, RetryCap, Schedule, TimeLimit, Verdict,
    WaitHint,
};
use std::time::SystemTime;

/// An `--on-retry` hook that takes `took` of fake time from its start, which
/// runs beside the sleep: waiting for it moves the clock to its end if later.
struct FakeHook {
    clock: FakeClock,
    took: Option<Duration>,
    started: Option<Duration>,
    seen: Vec<(u32, Duration, Option<Duration>)>,
    signal: bool,
}

impl RetryHook for FakeHook {
    fn start(&mut self, facts: &RetryFacts<'_>) {
        if self.took.is_some() {
            self.started = Some(self.clock.now());
            let n = facts.record.number;
            self.seen.push((n, facts.next_delay, facts.time_left));
        }
    }
    fn wait(&mut self) -> Result<(), Stop> {
        let (Some(took), Some(started)) = (self.took, self.started.take()) else {
            return Ok(());
        };
        let end = started + took;
        if end > self.clock.now() {
            self.clock.advance(end - self.clock.now());
        }
        if self.signal {
            return Err(Stop::Signal(Signal::new(2)));
        }
        Ok(())
    }
}

#[derive(Default)]
struct Collect(Vec<String>);

impl Events for Collect {
    fn event(&mut self, event: Event<'_>) {
        self.0.push(match event {
            Event::AttemptStarting { number, .. } => format!("start {number}"),
            Event::AttemptFailed { record, next, .. } => {
                format!("fail {} {:?}", record.number, next)
            }
            Event::Succeeded { record, next, .. } => match next {
                Some((d, progress)) => format!("ok {} again in {d:?} ({progress})", record.number),
                None => format!("ok {}", record.number),
            },
            Event::Held { duration, .. } => format!("held {duration:?}"),
            Event::Stopped { summary } => format!("stop {:?}", summary.stopped_because),
        });
    }
}

fn policy(attempts: u32, jitter: JitterKind) -> Policy {
    Policy {
        attempts,
        schedule: Schedule {
            jitter,
            ..Schedule::default()
        },
        ..Policy::default()
    }
}

struct Harness {
    clock: FakeClock,
    exec: Scripted,
    sleeper: FakeSleeper,
    events: Collect,
    hook: FakeHook,
    budget: Option<CountingBudget>,
    trace: Option<SpanContext>,
}

impl Harness {
    fn new(script: Vec<AttemptReport>) -> Self {
        let clock = FakeClock::default();
        Harness {
            exec: Scripted::new(&clock, script),
            sleeper: FakeSleeper::new(&clock),
            events: Collect::default(),
            hook: FakeHook {
                clock: clock.clone(),
                took: None,
                started: None,
                seen: vec![],
                signal: false,
            },
            budget: None,
            trace: None,
            clock,
        }
    }

    fn run(&mut self, policy: &Policy) -> RunSummary {
        let mut jitter = Jitter::new(1);
        let mut env = Env {
            clock: &self.clock,
            limit: TimeLimit::starting_now(policy.max_time),
            sleeper: &mut self.sleeper,
            jitter: &mut jitter,
            events: &mut self.events,
            retry_hook: &mut self.hook,
            budget: self.budget.as_mut().map(|b| b as &mut dyn RetryBudget),
            trace: self.trace.as_ref(),
        };
        run(&mut self.exec, policy, &mut env).unwrap()
    }
}

#[test]
fn each_attempt_of_a_traced_run_is_a_span_of_its_own_under_the_run() {
    let mut h = Harness::new(vec![fail(1), fail(1), ok()]);
    let s = h.run(&policy(5, JitterKind::None));
    assert!(s.attempts.iter().all(|a| a.span.is_none()));
    assert!(h.exec.seen.iter().all(|ctx| ctx.span.is_none()));
    let run_span = SpanContext::new_trace(true);
    let mut h = Harness::new(vec![fail(1), fail(1), ok()]);
    h.trace = Some(run_span.clone());
    let s = h.run(&policy(5, JitterKind::None));
    let told: Vec<SpanContext> = h.exec.seen.iter().filter_map(|c| c.span.clone()).collect();
    assert_eq!(told.len(), 3);
    for (ctx, record) in told.iter().zip(&s.attempts) {
        assert_eq!(ctx.trace_id, run_span.trace_id);
        assert_ne!(ctx.span_id, run_span.span_id);
        assert_eq!(
            record.span,
            Some(ctx.span_id),
            "the record names the span told"
        );
    }
    assert_ne!(told[0].span_id, told[1].span_id);
    assert_ne!(told[1].span_id, told[2].span_id);
}

#[test]
fn fail_fail_succeed_sleeps_twice_exactly() {
    let mut h = Harness::new(vec![fail(1), fail(1), ok()]);
    let s = h.run(&policy(5, JitterKind::None));
    assert_eq!(
        (s.exit_code.code(), s.stopped_because, s.attempts.len()),
        (0, StopReason::Success, 3)
    );
    assert_eq!(
        h.sleeper.slept,
        [Duration::from_secs(1), Duration::from_secs(2)]
    );
    assert_eq!(s.elapsed, Duration::from_millis(3300));
    assert_eq!(h.exec.delivered, 1);
    assert_eq!(
        h.events.0,
        [
            "start 1",
            "fail 1 Some(1s)",
            "start 2",
            "fail 2 Some(2s)",
            "start 3",
            "ok 3",
            "stop Success"
        ]
    );
}

#[test]
fn attempt_limit_returns_last_status() {
    let mut h = Harness::new(vec![fail(3), fail(4), fail(7)]);
    let s = h.run(&policy(3, JitterKind::Full));
    assert_eq!(
        (s.exit_code.code(), s.stopped_because),
        (7, StopReason::Attempts)
    );
    assert_eq!(h.sleeper.slept.len(), 2);
    assert!(
        h.sleeper.slept[0] <= Duration::from_secs(1)
            && h.sleeper.slept[1] <= Duration::from_secs(2)
    );
    assert_eq!(s.attempts[2].delay, None);
}

#[test]
fn permanent_stops_at_once() {
    let code = ExitStatus::new(2);
    let perm = AttemptReport::new(Outcome::Exit { code }, Verdict::permanent("bad"), code);
    let mut h = Harness::new(vec![fail(1), perm]);
    let s = h.run(&policy(5, JitterKind::None));
    assert_eq!(
        (s.exit_code.code(), s.stopped_because, s.attempts.len()),
        (2, StopReason::Permanent, 2)
    );
}

#[test]
fn limited_rule_allows_two_retries_then_stops() {
    let mut r = fail(22);
    r.verdict = r
        .verdict
        .capped(Some(RetryCap::twice(RetryCapKey::Http500)));
    let mut h = Harness::new(vec![r]);
    let s = h.run(&policy(10, JitterKind::None));
    assert_eq!(
        (s.attempts.len(), s.stopped_because),
        (3, StopReason::Permanent)
    );
    assert!(s.attempts[2].reason.contains("already retried 2 times"));
}

#[test]
fn max_time_cuts_timeouts_and_refuses_late_sleeps() {
    let mut p = policy(10, JitterKind::None);
    p.max_time = Some(Duration::from_millis(3500));
    p.timeout = Some(Duration::from_secs(2));
    let mut h = Harness::new(vec![fail(1)]);
    let s = h.run(&p);
    // 0.1 + 1 + 0.1 + 2 = 3.2s used, 0.3s left for attempt 3; no 4s sleep after it.
    assert_eq!(
        (s.stopped_because, s.attempts.len()),
        (StopReason::MaxTime, 3)
    );
    let timeouts: Vec<_> = h
        .exec
        .seen
        .iter()
        .map(|c| c.timeout.unwrap().as_millis())
        .collect();
    assert_eq!(timeouts, [2000, 2000, 300]);
    let by_limit: Vec<_> = h.exec.seen.iter().map(|c| c.cut_by_time_limit).collect();
    assert_eq!(by_limit, [false, false, true]);
    assert_eq!(s.exit_code.code(), 1);
}

#[test]
fn retry_max_time_never_cuts_an_attempt_and_starts_none_past_it() {
    let mut p = policy(10, JitterKind::None);
    p.retry_window = Some(Duration::from_millis(3500));
    let mut h = Harness::new(vec![fail(1)]);
    let s = h.run(&p);
    // Three attempts and two sleeps take 3.3s: the next 4s sleep would end past 3.5s.
    assert_eq!(
        (s.stopped_because, s.attempts.len(), s.exit_code.code()),
        (StopReason::MaxTime, 3, 1)
    );
    assert!(h.exec.seen.iter().all(|c| c.timeout.is_none()));
    assert!(
        s.message.contains("--retry-max-time limit of 3.5s"),
        "{}",
        s.message
    );
}

fn told_to_wait(secs: u64) -> AttemptReport {
    let mut r = fail(22);
    r.wait_hint = Some(WaitHint {
        wait: Duration::from_secs(secs),
        source: format!("Retry-After: {secs}"),
        asked_by: "the server",
    });
    r
}

#[test]
fn wait_hint_without_jitter_waits_exactly() {
    let mut h = Harness::new(vec![told_to_wait(10), ok()]);
    let s = h.run(&policy(3, JitterKind::None));
    assert_eq!(s.stopped_because, StopReason::Success);
    assert_eq!(h.sleeper.slept, [Duration::from_secs(10)]);
}

#[test]
fn wait_hint_spreads_over_the_larger_of_wait_and_backoff() {
    // Base 1s, factor 2: retries 1..4 back off 1s, 2s, 4s, 8s; the server says 2s.
    let mut h = Harness::new(vec![told_to_wait(2)]);
    let s = h.run(&policy(5, JitterKind::Full));
    assert_eq!(s.stopped_because, StopReason::Attempts);
    let secs = Duration::from_secs;
    for (slept, spread) in h.sleeper.slept.iter().zip([2, 2, 4, 8]) {
        assert!(
            *slept >= secs(2) && *slept <= secs(2 + spread),
            "{slept:?} outside 2s..={}s",
            2 + spread
        );
    }
    let mut h = Harness::new(vec![told_to_wait(2)]);
    h.run(&policy(5, JitterKind::Equal));
    for (slept, spread) in h.sleeper.slept.iter().zip([2u64, 2, 4, 8]) {
        let lo = Duration::from_millis(2000 + spread * 500);
        assert!(*slept >= lo && *slept <= secs(2 + spread), "{slept:?}");
    }
}

#[test]
fn max_retry_after_is_compared_with_what_was_asked() {
    // 4m plus up to 4m of spread may sleep past 5m; only the 4m asked counts.
    let mut h = Harness::new(vec![told_to_wait(240), ok()]);
    let s = h.run(&policy(3, JitterKind::Full));
    assert_eq!(s.stopped_because, StopReason::Success);
    assert!(h.sleeper.slept[0] >= Duration::from_secs(240));
    let mut p = policy(3, JitterKind::Full);
    p.max_wait_hint = Duration::from_secs(239);
    let mut h = Harness::new(vec![told_to_wait(240)]);
    let s = h.run(&p);
    assert_eq!(s.stopped_because, StopReason::RetryAfterTooLong);
}

#[test]
fn wait_hint_spread_is_cut_to_the_time_limit() {
    let mut p = policy(3, JitterKind::Equal);
    p.max_time = Some(Duration::from_millis(2600));
    // Equal jitter would sleep at least 3s; 2.5s is left after the first attempt.
    let mut h = Harness::new(vec![told_to_wait(2), ok()]);
    let s = h.run(&p);
    assert_eq!(s.stopped_because, StopReason::Success);
    assert_eq!(h.sleeper.slept, [Duration::from_millis(2499)]);
}

#[test]
fn wait_hint_past_the_cap_ends_the_run() {
    let mut r = fail(22);
    r.wait_hint = Some(WaitHint {
        wait: Duration::from_secs(600),
        source: "Retry-After: 600".into(),
        asked_by: "the server",
    });
    let mut h = Harness::new(vec![r]);
    let s = h.run(&policy(3, JitterKind::None));
    assert_eq!(
        (s.stopped_because, s.attempts.len(), s.exit_code.code()),
        (StopReason::RetryAfterTooLong, 1, 22)
    );
    assert!(s.message.contains("Retry-After: 600"), "{}", s.message);
    assert!(h.sleeper.slept.is_empty());
}

#[test]
fn wait_hint_past_the_time_limit_ends_the_run() {
    let mut p = policy(3, JitterKind::None);
    p.max_time = Some(Duration::from_secs(5));
    let mut r = fail(22);
    r.wait_hint = Some(WaitHint {
        wait: Duration::from_secs(60),
        source: "Retry-After: 60".into(),
        asked_by: "the server",
    });
    let mut h = Harness::new(vec![r]);
    let s = h.run(&p);
    assert_eq!(s.stopped_because, StopReason::RetryAfterTooLong);
    assert!(s.message.contains("left of --max-time"), "{}", s.message);
}

#[test]
fn signal_during_sleep_exits_at_once() {
    let mut h = Harness::new(vec![fail(1)]);
    h.sleeper.signal_on = Some(1);
    let s = h.run(&policy(5, JitterKind::None));
    assert_eq!(
        (s.stopped_because, s.exit_code.code(), s.attempts.len()),
        (StopReason::Signal, 143, 2)
    );
    assert_eq!(h.exec.delivered, 0);
}

#[test]
fn signal_during_attempt_stops() {
    let mut r = fail(130);
    r.interrupted_by = Some(Signal::new(2));
    let mut h = Harness::new(vec![r]);
    let s = h.run(&policy(5, JitterKind::None));
    assert_eq!(
        (s.stopped_because, s.exit_code.code(), s.attempts.len()),
        (StopReason::Signal, 130, 1)
    );
}

#[test]
fn a_lock_lost_during_a_sleep_ends_the_run_with_125() {
    let mut h = Harness::new(vec![fail(1)]);
    h.sleeper.lose_lock_on = Some(0);
    let s = h.run(&policy(5, JitterKind::None));
    assert_eq!(
        (s.stopped_because, s.exit_code.code(), s.attempts.len()),
        (StopReason::LockLost, ExitStatus::USAGE.code(), 1)
    );
    assert_eq!(s.message, "lock L was lost");
    assert_eq!(h.exec.delivered, 0);
}

#[test]
fn a_lock_lost_during_an_attempt_wins_over_its_success() {
    let mut r = ok();
    r.lock_lost = Some("lock L was lost".into());
    let mut h = Harness::new(vec![r]);
    let s = h.run(&policy(5, JitterKind::None));
    assert_eq!(
        (s.stopped_because, s.exit_code.code(), s.attempts.len()),
        (StopReason::LockLost, ExitStatus::USAGE.code(), 1)
    );
    assert_eq!(
        h.exec.delivered, 0,
        "the output of a run without its lock is not delivered"
    );
    assert!(h.sleeper.slept.is_empty());
}

#[test]
fn the_time_limit_counts_from_the_start_of_the_run_not_of_the_loop() {
    let mut p = policy(5, JitterKind::None);
    p.max_time = Some(Duration::from_secs(3));
    let mut h = Harness::new(vec![fail(1)]);
    // Two seconds went on waiting for a lock before the loop began.
    h.clock.advance(Duration::from_secs(2));
    let s = h.run(&p);
    assert_eq!(h.exec.seen[0].time_left, Some(Duration::from_secs(1)));
    assert_eq!(s.stopped_because, StopReason::MaxTime);
    assert_eq!(
        s.attempts.len(),
        1,
        "a 1s sleep does not fit in the 900ms left"
    );
}

#[test]
fn a_retry_hook_shorter_than_the_sleep_changes_nothing() {
    let mut h = Harness::new(vec![fail(1), fail(1), ok()]);
    h.hook.took = Some(Duration::from_millis(300));
    let s = h.run(&policy(5, JitterKind::None));
    assert_eq!(s.stopped_because, StopReason::Success);
    // 0.1 + 1 + 0.1 + 2 + 0.1: the hooks ran inside the sleeps.
    assert_eq!(s.elapsed, Duration::from_millis(3300));
    let seen: Vec<_> = h.hook.seen.iter().map(|(n, d, _)| (*n, *d)).collect();
    assert_eq!(
        seen,
        [(1, Duration::from_secs(1)), (2, Duration::from_secs(2))]
    );
}

#[test]
fn a_retry_hook_longer_than_the_sleep_delays_the_next_attempt() {
    let mut h = Harness::new(vec![fail(1), ok()]);
    h.hook.took = Some(Duration::from_millis(2500));
    let s = h.run(&policy(5, JitterKind::None));
    assert_eq!(s.stopped_because, StopReason::Success);
    // The second attempt starts when the hook ends (2.5s after the first ended), not after the 1s sleep.
    assert_eq!(
        s.attempts[1].started_at,
        SystemTime::UNIX_EPOCH + Duration::from_millis(2600)
    );
    assert_eq!(s.attempts[0].delay, Some(Duration::from_secs(1)));
}

#[test]
fn a_retry_hook_counts_towards_max_time() {
    let mut p = policy(5, JitterKind::None);
    p.max_time = Some(Duration::from_secs(2));
    let mut h = Harness::new(vec![fail(4), ok()]);
    h.hook.took = Some(Duration::from_secs(5));
    let s = h.run(&p);
    assert_eq!(
        (s.stopped_because, s.exit_code.code(), s.attempts.len()),
        (StopReason::MaxTime, 4, 1)
    );
    assert!(s.message.contains("--on-retry hook"), "{}", s.message);
    assert_eq!(
        h.hook.seen[0].2,
        Some(Duration::from_millis(1900)),
        "the hook is told what is left of the time limit"
    );
}

#[test]
fn a_signal_during_a_retry_hook_stops_the_run() {
    let mut h = Harness::new(vec![fail(1), ok()]);
    h.hook.took = Some(Duration::from_millis(10));
    h.hook.signal = true;
    let s = h.run(&policy(5, JitterKind::None));
    assert_eq!(
        (s.stopped_because, s.exit_code.code(), s.attempts.len()),
        (StopReason::Signal, 130, 1)
    );
}

#[test]
fn one_attempt_means_no_retry() {
    let mut h = Harness::new(vec![fail(1)]);
    let s = h.run(&policy(1, JitterKind::Full));
    assert_eq!(
        (s.attempts.len(), s.stopped_because),
        (1, StopReason::Attempts)
    );
    assert!(h.sleeper.slept.is_empty());
}

#[test]
fn same_seed_same_sleeps() {
    let sleeps = || {
        let mut h = Harness::new(vec![fail(1)]);
        h.run(&policy(6, JitterKind::Decorrelated));
        h.sleeper.slept
    };
    assert_eq!(sleeps(), sleeps());
}

/// A budget in memory with the shared budget's arithmetic. With `hold` it is
/// `--throttled wait`'s; `refill_after` refusals later another run's probe succeeds
/// and the budget is full again.
#[derive(Default)]
struct CountingBudget {
    tokens: f64,
    size: u32,
    recorded: Vec<bool>,
    hold: bool,
    refill_after: Option<u32>,
    refused: u32,
    /// `--max-time` runs out while the budget is asked.
    out_of_time: bool,
}

impl RetryBudget for CountingBudget {
    fn may_retry(&mut self) -> Result<(), Refusal> {
        if self.out_of_time {
            return Err(Refusal::OutOfTime("no answer in time".into()));
        }
        if self.refill_after == Some(self.refused) {
            self.tokens = f64::from(self.size);
        }
        if self.tokens > f64::from(self.size) / 2.0 {
            Ok(())
        } else {
            self.refused += 1;
            Err(Refusal::Spent(format!(
                "spent ({} of {})",
                self.tokens, self.size
            )))
        }
    }
    fn holds(&self) -> bool {
        self.hold
    }
    fn record(&mut self, success: bool) {
        self.recorded.push(success);
        self.tokens = if success {
            (self.tokens + 0.1).min(f64::from(self.size))
        } else {
            (self.tokens - 1.0).max(0.0)
        };
    }
}

#[test]
fn a_spent_budget_stops_the_run_with_the_last_status() {
    let mut h = Harness::new(vec![fail(3)]);
    h.budget = Some(CountingBudget {
        tokens: 7.0,
        size: 10,
        recorded: vec![],
        ..Default::default()
    });
    let s = h.run(&policy(5, JitterKind::None));
    // 7 → 6 (retry), 6 → 5 (refused: not more than half).
    assert_eq!(s.attempts.len(), 2);
    assert_eq!(s.stopped_because, StopReason::Budget);
    assert_eq!(s.exit_code.code(), 3);
    assert_eq!(s.message, "spent (5 of 10): not retrying");
    assert_eq!(h.budget.unwrap().recorded, vec![false, false]);
}

#[test]
fn a_first_attempt_is_never_held_back_and_a_success_earns() {
    let mut h = Harness::new(vec![ok()]);
    h.budget = Some(CountingBudget {
        tokens: 0.0,
        size: 10,
        recorded: vec![],
        ..Default::default()
    });
    let s = h.run(&policy(5, JitterKind::None));
    assert_eq!(s.stopped_because, StopReason::Success);
    let b = h.budget.unwrap();
    assert_eq!(b.recorded, vec![true]);
    assert!((b.tokens - 0.1).abs() < 1e-9);
}

#[test]
fn an_attempt_that_lacked_resources_is_retried_and_takes_no_token() {
    let unstarted = AttemptReport::new(
        Outcome::NoResources {
            error: "cannot start echo: out of processes".into(),
        },
        Verdict::transient("lack of resources"),
        ExitStatus::USAGE,
    );
    let mut h = Harness::new(vec![unstarted.clone(), ok()]);
    h.budget = Some(CountingBudget {
        tokens: 5.0,
        size: 10,
        recorded: vec![],
        ..Default::default()
    });
    let s = h.run(&policy(5, JitterKind::None));
    assert_eq!(s.stopped_because, StopReason::Success);
    assert_eq!(
        h.sleeper.slept,
        [Duration::from_secs(1)],
        "with the backoff"
    );
    let budget = h.budget.unwrap();
    assert_eq!(budget.recorded, [true], "only the attempt that ran counts");
    let mut h = Harness::new(vec![unstarted]);
    let s = h.run(&policy(3, JitterKind::None));
    assert_eq!(
        (s.stopped_because, s.exit_code.code(), s.attempts.len()),
        (StopReason::Attempts, ExitStatus::USAGE.code(), 3)
    );
    assert!(s.attempts[2].outcome.lacked_resources());
}

#[test]
fn a_permanent_failure_takes_a_token_and_a_signal_takes_none() {
    let code = ExitStatus::new(2);
    let mut h = Harness::new(vec![AttemptReport::new(
        Outcome::Exit { code },
        Verdict::permanent("usage"),
        code,
    )]);
    h.budget = Some(CountingBudget {
        tokens: 10.0,
        size: 10,
        recorded: vec![],
        ..Default::default()
    });
    h.run(&policy(5, JitterKind::None));
    assert_eq!(h.budget.unwrap().recorded, vec![false]);
    let mut interrupted = fail(1);
    interrupted.interrupted_by = Some(Signal::new(15));
    let mut h = Harness::new(vec![interrupted]);
    h.budget = Some(CountingBudget {
        tokens: 10.0,
        size: 10,
        recorded: vec![],
        ..Default::default()
    });
    h.run(&policy(5, JitterKind::None));
    assert!(h.budget.unwrap().recorded.is_empty());
}

/// 20 failures in a row and then successes: the service of a held run.
fn outage(failures: usize) -> Vec<AttemptReport> {
    let mut script: Vec<AttemptReport> = (0..failures).map(|_| fail(7)).collect();
    script.push(ok());
    script
}

fn holding(tokens: f64, refill_after: Option<u32>) -> CountingBudget {
    CountingBudget {
        tokens,
        size: 10,
        hold: true,
        refill_after,
        ..Default::default()
    }
}

#[test]
fn a_held_run_sends_nothing_until_the_budget_lets_it_and_holds_do_not_count_in_attempts() {
    let mut h = Harness::new(outage(1));
    // 6 → 5 after the first failure: spent; three refusals, then another run's probe refills it.
    h.budget = Some(holding(6.0, Some(3)));
    let mut p = policy(2, JitterKind::None);
    p.max_time = Some(Duration::from_secs(60));
    let s = h.run(&p);
    assert_eq!(s.stopped_because, StopReason::Success, "{}", s.message);
    assert_eq!(
        s.attempts.len(),
        2,
        "two attempts sent with -a 2, three holds between"
    );
    assert_eq!(s.holds.len(), 3);
    assert!(s.holds.iter().all(|hold| hold.cause == HoldCause::Budget));
    // The backoff sleep (1s), then holds that back off as the retries would have (2s,
    // 4s, 8s without jitter), each listed with what it lasted on the clock.
    let secs = |list: &[u64]| {
        list.iter()
            .map(|s| Duration::from_secs(*s))
            .collect::<Vec<_>>()
    };
    assert_eq!(h.sleeper.slept, secs(&[1, 2, 4, 8]));
    let held: Vec<Duration> = s.holds.iter().map(|hold| hold.duration).collect();
    assert_eq!(held, secs(&[2, 4, 8]));
    assert_eq!(
        s.holds[0].started_at,
        SystemTime::UNIX_EPOCH + Duration::from_millis(1100)
    );
    assert_eq!(h.budget.unwrap().recorded, [false, true]);
}

#[test]
fn a_hold_is_a_fresh_jittered_draw_that_backs_off_and_is_never_under_a_tenth_of_the_delay() {
    let mut h = Harness::new(outage(1));
    h.budget = Some(holding(6.0, Some(40)));
    let mut p = policy(2, JitterKind::Full);
    p.max_time = Some(Duration::from_secs(3600));
    let s = h.run(&p);
    assert_eq!(s.stopped_because, StopReason::Success);
    let holds = &h.sleeper.slept[1..];
    assert_eq!(holds.len(), 40);
    // The k-th hold after attempt 1 is drawn as retry 1 + k's delay: U(0, min(2^k s, 30s)).
    for (k, hold) in (1..).zip(holds) {
        let ceiling = p.schedule.nominal(1 + k);
        assert!(
            *hold >= Duration::from_millis(100) && *hold <= ceiling,
            "hold {k}: {hold:?} not within 100ms..{ceiling:?}"
        );
    }
    let distinct: std::collections::HashSet<_> = holds.iter().collect();
    assert!(distinct.len() > 30, "each hold is drawn afresh: {holds:?}");
    assert!(
        holds[10..].iter().any(|d| *d > Duration::from_secs(15)),
        "they reach the cap's range"
    );
}

#[test]
fn a_hold_that_would_end_past_max_time_is_not_started_and_the_run_ends_as_exit_would() {
    let mut h = Harness::new(outage(1));
    h.budget = Some(holding(6.0, None));
    let mut p = policy(8, JitterKind::None);
    p.max_time = Some(Duration::from_millis(4500));
    let s = h.run(&p);
    // 0.1s attempt, 1s sleep, a hold of 2s at 1.1: the next, of 4s at 3.1, would end at 7.1.
    assert_eq!(
        (
            s.stopped_because,
            s.exit_code.code(),
            s.attempts.len(),
            s.holds.len()
        ),
        (StopReason::Budget, 7, 1, 1)
    );
    assert_eq!(
        s.message,
        "spent (5 of 10): not retrying; --max-time has 1.4s left, less than the next 4s hold"
    );
    assert!(h.clock.now() <= Duration::from_millis(4500));
}

/// Beside curl's retry words `--max-time` limits each transfer, and `--retry-max-time`
/// (from the first attempt's start) alone bounds the holds of `--throttled wait`.
#[test]
fn a_hold_that_would_end_past_retry_max_time_is_not_started_either() {
    let mut h = Harness::new(outage(1));
    h.budget = Some(holding(6.0, None));
    let mut p = policy(8, JitterKind::None);
    p.timeout = Some(Duration::from_secs(10));
    p.max_time_per_transfer = Some("--retry");
    p.retry_window = Some(Duration::from_millis(4500));
    let s = h.run(&p);
    assert_eq!(
        (s.stopped_because, s.attempts.len(), s.holds.len()),
        (StopReason::Budget, 1, 1)
    );
    assert_eq!(
        s.message,
        "spent (5 of 10): not retrying; --retry-max-time has 1.4s left, less than the next 4s hold"
    );
}

#[test]
fn a_signal_while_held_ends_the_run_with_128_plus_n() {
    let mut h = Harness::new(outage(1));
    h.budget = Some(holding(6.0, None));
    h.sleeper.signal_on = Some(2);
    let mut p = policy(8, JitterKind::None);
    p.max_time = Some(Duration::from_secs(60));
    let s = h.run(&p);
    assert_eq!(
        (
            s.stopped_because,
            s.exit_code.code(),
            s.attempts.len(),
            s.holds.len()
        ),
        (StopReason::Signal, 143, 1, 2)
    );
}

#[test]
fn max_time_running_out_while_the_budget_is_asked_is_max_time_not_budget() {
    for hold in [false, true] {
        let mut h = Harness::new(outage(1));
        h.budget = Some(CountingBudget {
            out_of_time: true,
            hold,
            ..holding(10.0, None)
        });
        let mut p = policy(8, JitterKind::None);
        p.max_time = Some(Duration::from_secs(60));
        let s = h.run(&p);
        assert_eq!(
            (s.stopped_because, s.exit_code.code(), s.message.as_str()),
            (StopReason::MaxTime, 7, "no answer in time"),
            "hold {hold}"
        );
    }
}

#[test]
fn attempts_still_bound_what_a_held_run_sends() {
    let mut h = Harness::new(outage(50));
    // Spent after the first failure and refilled by another run's probe a hold later.
    h.budget = Some(holding(6.0, Some(1)));
    let mut p = policy(4, JitterKind::None);
    p.max_time = Some(Duration::from_secs(3600));
    let s = h.run(&p);
    assert_eq!(
        (s.stopped_because, s.attempts.len()),
        (StopReason::Attempts, 4)
    );
    assert_eq!(s.holds.len(), 1);
}

// ---- What the run is after: N in a row, the first failure; no attempt limit ----

fn goal(attempts: u32, goal: Goal) -> Policy {
    Policy {
        goal,
        ..policy(attempts, JitterKind::None)
    }
}

fn alternating(n: usize) -> Vec<AttemptReport> {
    (0..n)
        .map(|i| if i % 2 == 0 { ok() } else { fail(22) })
        .collect()
}

#[test]
fn consecutive_never_succeeds_against_alternating_answers() {
    let mut h = Harness::new(alternating(10));
    let s = h.run(&goal(10, Goal::Consecutive(3)));
    assert_eq!(
        (s.stopped_because, s.exit_code.code(), s.attempts.len()),
        (StopReason::Attempts, 22, 10)
    );
    assert_eq!(
        s.message,
        "gave up after 10 attempts, without 3 successes in a row (at most 1)"
    );
    // After a success the sleep is --delay; after a failure the backoff from its start.
    assert!(h.sleeper.slept.iter().all(|d| *d == Duration::from_secs(1)));
    assert_eq!(
        h.exec.delivered, 1,
        "only the last attempt's held output is shown"
    );
}

#[test]
fn consecutive_succeeds_after_exactly_n_in_a_row_once_healthy() {
    let mut h = Harness::new(vec![fail(22), fail(22), ok(), fail(22), ok(), ok(), ok()]);
    let s = h.run(&goal(10, Goal::Consecutive(3)));
    assert_eq!(
        (s.stopped_because, s.exit_code.code(), s.attempts.len()),
        (StopReason::Success, 0, 7)
    );
    let secs = |v: &[u64]| {
        v.iter()
            .map(|s| Duration::from_secs(*s))
            .collect::<Vec<_>>()
    };
    // fail, fail (backoff 1s, 2s), ok (1s), fail (backoff from 1s again), ok, ok (1s each).
    assert_eq!(h.sleeper.slept, secs(&[1, 2, 1, 1, 1, 1]));
    assert_eq!(h.exec.delivered, 1);
    assert!(
        h.events
            .0
            .contains(&"ok 5 again in 1s (1 of 3 in a row)".to_string())
    );
    assert_eq!(h.events.0.last().unwrap(), "stop Success");
}

#[test]
fn consecutive_short_of_its_goal_when_the_limit_ends_on_a_success() {
    let mut h = Harness::new(vec![fail(9), ok(), ok()]);
    let s = h.run(&goal(3, Goal::Consecutive(3)));
    assert_eq!(
        (s.stopped_because, s.exit_code.code()),
        (StopReason::Attempts, 9),
        "the last failure's status, never 0"
    );
    assert_eq!(h.events.0[h.events.0.len() - 2], "ok 3");
    assert_eq!(
        h.exec.delivered, 0,
        "a failed run delivers no success's output"
    );
}

#[test]
fn until_failure_backs_off_after_each_success_and_ends_with_the_failure() {
    let mut script = vec![ok(); 6];
    script.push(fail(1));
    let mut h = Harness::new(script);
    let s = h.run(&goal(50, Goal::UntilFailure));
    assert_eq!(
        (s.stopped_because, s.exit_code.code(), s.attempts.len()),
        (StopReason::Permanent, 1, 7)
    );
    let secs = |v: &[u64]| {
        v.iter()
            .map(|s| Duration::from_secs(*s))
            .collect::<Vec<_>>()
    };
    assert_eq!(h.sleeper.slept, secs(&[1, 2, 4, 8, 16, 30]));
    assert_eq!(
        s.message,
        "--until-failure: attempt 7 failed, after 6 successes"
    );
}

#[test]
fn until_failure_that_sees_none_exits_0_saying_so() {
    let mut h = Harness::new(vec![ok()]);
    let s = h.run(&goal(4, Goal::UntilFailure));
    assert_eq!(
        (s.stopped_because, s.exit_code.code(), s.attempts.len()),
        (StopReason::Attempts, 0, 4)
    );
    assert_eq!(s.message, "--until-failure: no failure in 4 attempts");
    assert!(s.succeeded());
    assert_eq!(
        h.exec.delivered, 1,
        "the last attempt's held output is shown"
    );
}

#[test]
fn no_attempt_limit_goes_on_until_max_time_and_ends_with_the_last_failure() {
    let mut p = policy(0, JitterKind::None);
    p.max_time = Some(Duration::from_secs(20));
    let mut h = Harness::new(vec![fail(3), fail(4), fail(5), fail(6), fail(7)]);
    let s = h.run(&p);
    // 0.1 + 1 + 0.1 + 2 + 0.1 + 4 + 0.1 + 8 + 0.1 = 15.5s; 4.5s left, less than 16s.
    assert_eq!(
        (s.stopped_because, s.exit_code.code(), s.attempts.len()),
        (StopReason::MaxTime, 7, 5)
    );
    assert!(
        s.message.contains("less than the next 16s sleep"),
        "{}",
        s.message
    );
    assert!(h.exec.seen.iter().all(|c| c.attempts == 0));
}

#[test]
fn until_failure_within_max_time_exits_0_when_time_runs_out() {
    let mut p = goal(0, Goal::UntilFailure);
    p.max_time = Some(Duration::from_secs(5));
    let mut h = Harness::new(vec![ok()]);
    let s = h.run(&p);
    // Successes at 0.1s and 1.2s (after 1s); the 4s sleep after the third would pass 5s.
    assert_eq!(
        (s.stopped_because, s.exit_code.code(), s.attempts.len()),
        (StopReason::MaxTime, 0, 3)
    );
    assert!(
        s.message
            .ends_with("with no failure seen (--until-failure)"),
        "{}",
        s.message
    );
}

#[test]
fn ignoring_wait_hints_leaves_the_backoff_alone() {
    let mut p = policy(3, JitterKind::None);
    p.ignore_wait_hints = true;
    // Asked for 600s, past --max-retry-after: ignored, not an end.
    let mut h = Harness::new(vec![told_to_wait(600), told_to_wait(600), ok()]);
    let s = h.run(&p);
    assert_eq!(s.stopped_because, StopReason::Success);
    assert_eq!(
        h.sleeper.slept,
        [Duration::from_secs(1), Duration::from_secs(2)]
    );
    assert_eq!(
        s.attempts[0].wait_hint.as_ref().unwrap().wait,
        Duration::from_secs(600)
    );
}

#[test]
fn a_list_of_delays_and_fibonacci_are_slept_as_scheduled() {
    let ms = |v: &[u64]| {
        v.iter()
            .map(|m| Duration::from_millis(*m))
            .collect::<Vec<_>>()
    };
    let mut listed = policy(6, JitterKind::None);
    listed.schedule.list = ms(&[100, 500, 3000]);
    listed.schedule.cap = Duration::from_secs(3);
    let mut h = Harness::new(vec![fail(1)]);
    h.run(&listed);
    assert_eq!(h.sleeper.slept, ms(&[100, 500, 3000, 3000, 3000]));

    let mut fib = policy(8, JitterKind::None);
    fib.schedule.kind = crate::domain::BackoffKind::Fibonacci;
    fib.schedule.base = Duration::from_millis(100);
    fib.schedule.cap = Duration::from_millis(1000);
    let mut h = Harness::new(vec![fail(1)]);
    h.run(&fib);
    assert_eq!(h.sleeper.slept, ms(&[100, 100, 200, 300, 500, 800, 1000]));

    // Seeded full jitter stays under each listed delay, the same on every run.
    listed.schedule.jitter = JitterKind::Full;
    let run = || {
        let mut h = Harness::new(vec![fail(1)]);
        h.run(&listed);
        h.sleeper.slept
    };
    let (first, second) = (run(), run());
    assert_eq!(first, second);
    for (slept, most) in first.iter().zip(ms(&[100, 500, 3000, 3000, 3000])) {
        assert!(*slept <= most, "{slept:?} > {most:?}");
    }
}
