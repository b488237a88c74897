//! The one rule for waiting: anything that can block takes a [`Bound`] (the instant
//! it must end by, if any) and ends within a second of a stopping signal (SIGINT,
//! SIGTERM, SIGHUP, SIGQUIT) and, when the bound says so, of a lost lock. Sleeps,
//! descriptors and non-blocking tries wait on the signal self-pipe; futures run on
//! this thread's runtime beside a watcher of the same flags.
//!
//! Which deadline applies is the caller's choice (a call's own limit such as
//! `connect_timeout`, and `--max-time` before and between attempts, never after the
//! last one); how to wait is this module's.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::domain::{BackoffKind, Jitter, JitterKind, Schedule, Stop, TimeLimit};
use crate::signals;

/// How often an async wait looks at the signal flags (a signal also wakes every
/// sync wait through the self-pipe at once): well within the second a wait has to end
/// after a signal, and seldom enough that a thousand processes waiting on a busy server
/// do not keep its CPUs busy waking up.
const SIGNAL_TICK: Duration = Duration::from_millis(100);
/// Longest pause between two tries of something that is busy.
const TRY_PAUSE_MAX: Duration = Duration::from_millis(200);
/// First pause between two tries.
const TRY_PAUSE_MIN: Duration = Duration::from_millis(5);

/// When a wait must end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    deadline: Option<Instant>,
    /// A lost lock ends the wait too (a wait that belongs to the run's attempts).
    lost_lock_ends: bool,
    /// Signals do not end it: a wait on a helper thread (the lease renewer), whose
    /// owner ends it when the run stops. It must have a deadline.
    background: bool,
    /// A release after the run, begun at this instant: only a second stopping signal
    /// ends it at once; the first one gives it `release_grace`.
    release_from: Option<Instant>,
    release_grace: Duration,
}

/// How long a release may take once a stopping signal came: the signal's sender
/// (systemd, a CI runner, a person at the terminal) is waiting for the exit.
pub const RELEASE_LIMIT: Duration = Duration::from_secs(2);

/// Why a wait ended before what it waited for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ended {
    /// A stopping signal, or (when the bound says so) a lost lock.
    Stopped(Stop),
    /// The deadline passed.
    TimedOut,
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ended::Stopped(Stop::Signal(sig)) => {
                write!(f, "interrupted by {}", sig.name())
            }
            Ended::Stopped(Stop::LockLost(why)) => write!(f, "{why}"),
            Ended::TimedOut => write!(f, "timed out"),
        }
    }
}

impl std::error::Error for Ended {}

impl Bound {
    /// No deadline: only a stopping signal ends the wait.
    pub const fn signals_only() -> Bound {
        Bound {
            deadline: None,
            lost_lock_ends: false,
            background: false,
            release_from: None,
            release_grace: RELEASE_LIMIT,
        }
    }

    /// The release of a lease after the run (the caller's call limit, `connect_timeout`,
    /// applies too): a run stopped by a signal still frees its leases, within
    /// [`RELEASE_LIMIT`] of the release's start, or of a signal that comes during it; a
    /// second stopping signal ends it at once.
    pub fn release() -> Bound {
        let now = Instant::now();
        Bound {
            deadline: signals::pending().and_then(|_| now.checked_add(RELEASE_LIMIT)),
            lost_lock_ends: false,
            background: false,
            release_from: Some(now),
            release_grace: RELEASE_LIMIT,
        }
    }

    /// A call after the run that must not hold its end (sending the run's trace): it ends
    /// `limit` from now, `after_signal` after a first stopping signal (one that came
    /// before it began included), and at once at a second.
    pub fn after_run(limit: Duration, after_signal: Duration) -> Bound {
        let now = Instant::now();
        let limit = match signals::pending() {
            Some(_) => limit.min(after_signal),
            None => limit,
        };
        Bound {
            deadline: now.checked_add(limit),
            lost_lock_ends: false,
            background: false,
            release_from: Some(now),
            release_grace: after_signal,
        }
    }

    /// A helper thread's wait, ended by `deadline` alone (its owner stops the thread).
    pub const fn background(deadline: Instant) -> Bound {
        Bound {
            deadline: Some(deadline),
            lost_lock_ends: false,
            background: true,
            release_from: None,
            release_grace: RELEASE_LIMIT,
        }
    }

    /// Ends `limit` from now (or at a stopping signal).
    #[cfg(test)]
    pub fn within(limit: Duration) -> Bound {
        Bound::until(Instant::now().checked_add(limit))
    }

    /// Ends with the run's time limit, if it has one (or at a stopping signal): the
    /// bound of a call before or between attempts.
    pub fn ending_with(limit: &TimeLimit) -> Bound {
        Bound::until(limit.end())
    }

    /// Ends at `deadline` when there is one (or at a stopping signal).
    pub const fn until(deadline: Option<Instant>) -> Bound {
        Bound {
            deadline,
            lost_lock_ends: false,
            background: false,
            release_from: None,
            release_grace: RELEASE_LIMIT,
        }
    }

    /// The same bound, ending at `deadline` instead when that is earlier.
    #[must_use]
    pub fn earlier(self, deadline: Option<Instant>) -> Bound {
        let deadline = match (self.deadline, deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Bound { deadline, ..self }
    }

    /// The same bound, ended by a lost lock too.
    #[must_use]
    pub const fn or_lost_lock(self) -> Bound {
        Bound {
            lost_lock_ends: true,
            ..self
        }
    }

    pub const fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// What is left before the deadline (`None`: no deadline).
    pub fn left(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// Why the wait must end now, if it must.
    pub fn check(&self) -> Result<(), Ended> {
        if let Some(stop) = self.stop() {
            return Err(Ended::Stopped(stop));
        }
        match self.deadline {
            Some(d) if Instant::now() >= d => Err(Ended::TimedOut),
            _ => Ok(()),
        }
    }

    fn stop(&self) -> Option<Stop> {
        if self.background {
            None
        } else if let Some(from) = self.release_from {
            release_stop(from, self.release_grace)
        } else if self.lost_lock_ends {
            signals::stop()
        } else {
            signals::pending().map(Stop::Signal)
        }
    }

    /// How long one poll may block: until the deadline, and never more than a second,
    /// so a flag set without a wake-up is still seen in time.
    fn slice(&self, at_most: Duration) -> Duration {
        let cap = at_most.min(Duration::from_secs(1));
        self.left().map_or(cap, |left| left.min(cap))
    }
}

/// Why a release begun at `from` must end now: a second stopping signal, or `grace`
/// passed since a first one that came during it.
fn release_stop(from: Instant, grace: Duration) -> Option<Stop> {
    let first = signals::pending()?;
    if let Some(again) = signals::repeated() {
        return Some(Stop::Signal(again));
    }
    let seen = signals::first_seen()?;
    (seen > from && seen.elapsed() >= grace).then_some(Stop::Signal(first))
}

/// Sleeps `d`; `Err` when the bound ends first (its deadline passing before `d` has is
/// [`Ended::TimedOut`]).
pub fn sleep(d: Duration, bound: &Bound) -> Result<(), Ended> {
    let end = Instant::now().checked_add(d);
    loop {
        bound.check()?;
        let left = end.map_or(Duration::MAX, |e| {
            e.saturating_duration_since(Instant::now())
        });
        if left.is_zero() {
            return Ok(());
        }
        signals::wait(bound.slice(left));
    }
}

/// Waits up to `d` or until something wakes the run (a signal, a child that changed,
/// another thread's [`signals::wake`]), for a loop that looks again at what it waits for
/// (a supervised process, the processes of a finished attempt). Never longer than `d`.
pub fn pause(d: Duration) {
    signals::wait(d);
}

/// Sleeps `d` unless the run must stop: a stopping signal or a lost lock (the backoff
/// sleep, the splay).
pub fn sleep_or_stop(d: Duration) -> Result<(), Stop> {
    match sleep(d, &Bound::signals_only().or_lost_lock()) {
        Ok(()) => Ok(()),
        Err(Ended::Stopped(stop)) => Err(stop),
        // No deadline: only a stop ends it early.
        Err(Ended::TimedOut) => Ok(()),
    }
}

/// Waits until `ready_within` says something is ready (a descriptor, for the events it
/// polls); it is handed the slice it may block for, and should end early at a wake-up.
pub fn ready(bound: &Bound, mut ready_within: impl FnMut(Duration) -> bool) -> Result<(), Ended> {
    loop {
        bound.check()?;
        // A short slice bounds the time a flag set without a wake-up goes unnoticed,
        // and the flags are checked at the loop's top.
        if ready_within(bound.slice(Duration::from_secs(1))) {
            return Ok(());
        }
    }
}

/// Calls `attempt` until it gives `Some` (or an error), pausing between tries from
/// 5 ms up to 200 ms; `Err(Ended)` when the bound ends first. The first try is made
/// whatever the bound says (a lock with no wait is still tried once).
pub fn retry_until<T, E>(
    bound: &Bound,
    mut attempt: impl FnMut() -> Result<Option<T>, E>,
) -> Result<Result<T, E>, Ended> {
    let mut pause = TRY_PAUSE_MIN;
    loop {
        match attempt() {
            Ok(Some(value)) => return Ok(Ok(value)),
            Err(e) => return Ok(Err(e)),
            Ok(None) => {}
        }
        sleep(pause, bound)?;
        pause = (pause * 2).min(TRY_PAUSE_MAX);
    }
}

/// Full-jitter pauses between tries of something busy or refused: the n-th pause (from
/// 0) is a uniform draw from 0 to min(`cap`, `first`·2ⁿ), so a crowd that was turned
/// away together comes back spread out, and no two tries are more than `cap` apart,
/// unless the pauses are [`stretched`](Pauses::stretched) by slow tries.
pub struct Pauses {
    schedule: Schedule,
    tries: u32,
    jitter: Jitter,
    /// Each pause lasts at least this many times as long as the try before it.
    stretch: u32,
    last_try: Duration,
}

impl Pauses {
    /// Pauses from a fresh random seed.
    pub fn new(first: Duration, cap: Duration) -> Pauses {
        Pauses::seeded(first, cap, crate::domain::random_seed())
    }

    /// Pauses from `seed`: the same seed gives the same pauses.
    pub fn seeded(first: Duration, cap: Duration, seed: u64) -> Pauses {
        Pauses {
            schedule: Schedule {
                kind: BackoffKind::Exponential,
                base: first,
                cap,
                factor: 2.0,
                jitter: JitterKind::Full,
                list: Vec::new(),
            },
            tries: 0,
            jitter: Jitter::new(seed),
            stretch: 0,
            last_try: Duration::ZERO,
        }
    }

    /// The same pauses, each at least `factor` times as long as the try before it (and
    /// at most `factor` times the cap): a crowd polling a server that answers slowly
    /// (it is busy) asks less often, so it takes at most 1/(`factor` + 1) of its time.
    #[must_use]
    pub fn stretched(self, factor: u32) -> Pauses {
        Pauses {
            stretch: factor,
            ..self
        }
    }

    /// Says how long the try before the next pause took.
    pub fn tried_for(&mut self, took: Duration) {
        self.last_try = took;
    }

    /// The next pause.
    pub fn next(&mut self) -> Duration {
        self.tries = self.tries.saturating_add(1);
        let drawn = self.schedule.delay(self.tries, None, self.jitter.rng());
        let stretched = self.last_try.min(self.schedule.cap);
        drawn.max(stretched.saturating_mul(self.stretch))
    }

    /// The next pause of a poll that must end by the bound: cut to what is left, so the
    /// last try falls on the deadline; `None` once the deadline has come.
    pub fn before_next_try(&mut self, left: Option<Duration>) -> Option<Duration> {
        match left {
            Some(left) if left.is_zero() => None,
            Some(left) => Some(self.next().min(left)),
            None => Some(self.next()),
        }
    }
}

/// Calls `attempt` until it gives `Some` (or an error), pausing between tries as
/// `pauses` says (told how long each try after the first took: the first may have
/// waited for reasons of its own) through `pause` (which sleeps, or waits in some other
/// bounded way); the last try is made at the bound's deadline. `Err(Ended)` when the
/// bound ends first. The first try is made whatever the bound says.
pub fn poll_until<T, E>(
    bound: &Bound,
    pauses: &mut Pauses,
    mut pause: impl FnMut(Duration) -> Result<(), Ended>,
    mut attempt: impl FnMut() -> Result<Option<T>, E>,
) -> Result<Result<T, E>, Ended> {
    let mut first = true;
    loop {
        let began = Instant::now();
        let tried = attempt();
        if !std::mem::take(&mut first) {
            pauses.tried_for(began.elapsed());
        }
        match tried {
            Ok(Some(value)) => return Ok(Ok(value)),
            Err(e) => return Ok(Err(e)),
            Ok(None) => {}
        }
        bound.check()?;
        let Some(d) = pauses.before_next_try(bound.left()) else {
            return Err(Ended::TimedOut);
        };
        match pause(d) {
            // A pause cut to the deadline ends with it: the last try is still made.
            Ok(()) | Err(Ended::TimedOut) => {}
            Err(stopped) => return Err(stopped),
        }
    }
}

/// Runs `fut` to completion on this thread's runtime (current-thread, with timers and
/// I/O): the PostgreSQL connections, name lookups and HTTP attempts of a thread all run
/// on it. The runtime is made at the thread's first use and dropped with the thread, so
/// a thread that ends leaves no descriptor behind (its epoll and eventfd, and the
/// socket of a call it abandoned). `fut` must bound itself ([`within`]).
pub fn on_runtime<F: Future>(fut: F) -> F::Output {
    let mut fut = Some(fut);
    let mut run = |rt: &tokio::runtime::Runtime| rt.block_on(fut.take().expect("run once"));
    if let Ok(out) = RUNTIME.try_with(&mut run) {
        return out;
    }
    // The thread is ending and its runtime is gone already (a connection closed by a
    // thread-local's destructor): a runtime for this call alone.
    run(&new_runtime())
}

fn new_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime needs only an epoll and a timer")
}

/// Calls `f` inside this thread's runtime, for what must be made on one (an HTTP client).
pub fn in_runtime<T>(f: impl FnOnce() -> T) -> T {
    RUNTIME.with(|rt| {
        let _inside = rt.enter();
        f()
    })
}

/// Lets this thread's runtime finish what was cancelled (the drivers of connections
/// dropped after a call was abandoned), so their sockets close now, not at the next call.
pub fn settle_runtime() {
    on_runtime(tokio::task::yield_now());
}

thread_local! {
    static RUNTIME: tokio::runtime::Runtime = new_runtime();
}

/// Runs `fut` on this thread's runtime until it completes or the bound ends. Dropping
/// the future is how an abandoned call is cancelled: its caller must not use what it
/// was talking to again (a connection that timed out is closed, never reused).
#[cfg(test)]
pub fn block_on<F: Future>(fut: F, bound: &Bound) -> Result<F::Output, Ended> {
    on_runtime(within(fut, bound))
}

/// The same rule for code already on a runtime.
pub async fn within<F: Future>(fut: F, bound: &Bound) -> Result<F::Output, Ended> {
    let deadline = async {
        match bound.deadline {
            Some(d) => tokio::time::sleep_until(d.into()).await,
            None => std::future::pending().await,
        }
    };
    let stopped = async {
        if bound.background {
            // A helper thread's wait ends at its deadline alone: nothing to look at.
            return std::future::pending().await;
        }
        loop {
            if let Some(stop) = bound.stop() {
                return stop;
            }
            tokio::time::sleep(SIGNAL_TICK).await;
        }
    };
    tokio::select! {
        biased;
        stop = stopped => Err(Ended::Stopped(stop)),
        out = fut => Ok(out),
        () = deadline => Err(Ended::TimedOut),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_take_the_earlier_deadline() {
        let now = Instant::now();
        let a = Bound::until(Some(now + Duration::from_secs(5)));
        assert_eq!(
            a.earlier(Some(now + Duration::from_secs(1))).deadline(),
            Some(now + Duration::from_secs(1))
        );
        assert_eq!(
            a.earlier(Some(now + Duration::from_secs(9))).deadline(),
            a.deadline()
        );
        assert_eq!(a.earlier(None).deadline(), a.deadline());
        assert_eq!(
            Bound::signals_only().earlier(Some(now)).deadline(),
            Some(now)
        );
    }

    #[test]
    fn a_passed_deadline_ends_every_kind_of_wait_at_once() {
        let past = Bound::until(Some(Instant::now()));
        assert_eq!(past.check(), Err(Ended::TimedOut));
        assert_eq!(sleep(Duration::from_secs(60), &past), Err(Ended::TimedOut));
        let mut tries = 0;
        let tried = retry_until(&past, || {
            tries += 1;
            Ok::<Option<()>, ()>(None)
        });
        assert_eq!((tried, tries), (Err(Ended::TimedOut), 1), "tried once");
        let never = block_on(std::future::pending::<()>(), &past);
        assert_eq!(never, Err(Ended::TimedOut));
    }

    #[test]
    fn a_deadline_ends_a_sleep_and_a_future_on_time() {
        let start = Instant::now();
        let bound = Bound::within(Duration::from_millis(50));
        assert_eq!(sleep(Duration::from_secs(10), &bound), Err(Ended::TimedOut));
        assert!(start.elapsed() < Duration::from_secs(2));
        let bound = Bound::within(Duration::from_millis(50));
        assert_eq!(
            block_on(std::future::pending::<()>(), &bound),
            Err(Ended::TimedOut)
        );
        assert_eq!(block_on(async { 7 }, &bound), Ok(7));
        assert_eq!(
            sleep(Duration::from_millis(1), &Bound::signals_only()),
            Ok(())
        );
    }

    #[test]
    fn pauses_are_full_jitter_draws_under_a_doubling_cap() {
        let (first, cap) = (Duration::from_millis(50), Duration::from_secs(1));
        let mut pauses = Pauses::seeded(first, cap, 7);
        let drawn: Vec<Duration> = (0..200).map(|_| pauses.next()).collect();
        for (n, d) in drawn.iter().enumerate() {
            let ceiling = cap.min(first * 2u32.pow(n.min(20) as u32));
            assert!(*d <= ceiling, "pause {n}: {d:?} > {ceiling:?}");
        }
        let mut again = Pauses::seeded(first, cap, 7);
        assert!(
            drawn.iter().all(|d| *d == again.next()),
            "one seed, one schedule"
        );
        let mut other = Pauses::seeded(first, cap, 8);
        assert!(drawn.iter().any(|d| *d != other.next()));
        // At the cap, a pause is 0.5 s on average: about two tries a second.
        let tail = &drawn[10..];
        let mean = tail.iter().sum::<Duration>() / tail.len() as u32;
        assert!(
            (Duration::from_millis(400)..Duration::from_millis(600)).contains(&mean),
            "{mean:?}"
        );
    }

    /// The tries of a poll that finds the thing busy until `wait` ends, on a clock that
    /// only the pauses move: when each try is made.
    fn poll_times(wait: Duration, seed: u64) -> Vec<Duration> {
        let mut pauses = Pauses::seeded(Duration::from_millis(50), Duration::from_secs(1), seed);
        let mut now = Duration::ZERO;
        let mut tries = vec![now];
        while let Some(pause) = pauses.before_next_try(Some(wait - now)) {
            now += pause;
            tries.push(now);
        }
        tries
    }

    #[test]
    fn a_poll_ends_on_its_deadline_with_tries_at_most_a_second_apart() {
        for seed in 0..50 {
            let wait = Duration::from_secs(60);
            let tries = poll_times(wait, seed);
            assert_eq!(
                *tries.last().unwrap(),
                wait,
                "the last try is at the deadline"
            );
            assert!(
                tries
                    .windows(2)
                    .all(|w| w[1] - w[0] <= Duration::from_secs(1))
            );
            // About two tries a second once at the cap, never a busy loop.
            assert!((80..=200).contains(&tries.len()), "{} tries", tries.len());
        }
        assert_eq!(
            poll_times(Duration::ZERO, 1),
            [Duration::ZERO],
            "no wait: one try"
        );
        let short = poll_times(Duration::from_millis(120), 1);
        assert_eq!(*short.last().unwrap(), Duration::from_millis(120));
    }

    #[test]
    fn a_slow_try_stretches_the_pause_after_it_but_never_past_the_deadline() {
        let (first, cap) = (Duration::from_millis(50), Duration::from_secs(1));
        let mut pauses = Pauses::seeded(first, cap, 5).stretched(10);
        pauses.tried_for(Duration::from_millis(300));
        assert!(pauses.next() >= Duration::from_secs(3), "ten times the try");
        let left = Some(Duration::from_secs(2));
        assert_eq!(pauses.before_next_try(left), left, "cut to the deadline");
        pauses.tried_for(Duration::from_millis(2));
        assert!(
            pauses.next() <= cap,
            "a quick try leaves the schedule as it is"
        );
        pauses.tried_for(Duration::from_secs(60));
        assert_eq!(pauses.next(), cap * 10, "at most ten times the cap");
        let mut plain = Pauses::seeded(first, cap, 5);
        plain.tried_for(Duration::from_secs(5));
        assert!(plain.next() <= cap, "unstretched pauses ignore the tries");
    }

    #[test]
    fn a_poll_pauses_as_told_and_stops_at_what_it_waited_for() {
        let mut pauses = Pauses::seeded(Duration::from_millis(10), Duration::from_secs(1), 3);
        let mut slept = Vec::new();
        let mut n = 0;
        let got = poll_until(
            &Bound::signals_only(),
            &mut pauses,
            |d| {
                slept.push(d);
                Ok(())
            },
            || {
                n += 1;
                Ok::<_, ()>((n == 5).then_some(n))
            },
        );
        assert_eq!(got, Ok(Ok(5)));
        assert_eq!(
            slept.len(),
            4,
            "a pause between two tries, none after the last"
        );
        let past = Bound::until(Some(Instant::now()));
        let mut tries = 0;
        let ended = poll_until(
            &past,
            &mut pauses,
            |_| Ok(()),
            || {
                tries += 1;
                Ok::<Option<()>, ()>(None)
            },
        );
        assert_eq!((ended, tries), (Err(Ended::TimedOut), 1), "tried once");
    }

    #[test]
    fn tries_go_on_until_something_is_given() {
        let mut n = 0;
        let got = retry_until(&Bound::within(Duration::from_secs(5)), || {
            n += 1;
            Ok::<_, ()>((n == 3).then_some(n))
        });
        assert_eq!(got, Ok(Ok(3)));
        let failed = retry_until(&Bound::signals_only(), || Err::<Option<()>, _>("no"));
        assert_eq!(failed, Ok(Err("no")));
    }
}
