//! Signals retry reacts to. SIGINT, SIGTERM, SIGHUP and SIGQUIT stop the run (they
//! are forwarded to a running command's process group first); SIGCHLD wakes the
//! supervisor. Handlers only set a flag and wake `sys`'s waker (a self-pipe on Unix; on
//! Windows an event that the console's Ctrl-C, Ctrl-Break and close set, standing for
//! SIGINT, SIGQUIT and SIGHUP), so any wait is one on the waker with a timeout, free
//! of races.
//!
//! A scheduler holds SIGINT and SIGTERM back from a running slot ([`hold_stops`]) for
//! its graceful stop, and lets them through when the grace ends ([`let_through`]).
//!
//! A lost lock is the other reason a run must stop early: whoever notices it (a
//! lease's renewer) records it with [`lose_lock_within`], which wakes the same self-pipe,
//! so every wait that notices signals notices it too ([`stop`]).
//!
//! What retry inherited (which signals were ignored, the signal mask) is recorded
//! before retry changes anything, and every process retry starts gets exactly that
//! back (through [`sys`]): a signal that `nohup` or a shell ignored stays ignored, in
//! retry (a stopping signal it inherited ignored gets no handler) and in the command.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::domain::{self, Stop};
use crate::sys;

/// The signals that end a run, in the order they are reported.
pub const STOPPING: [domain::Signal; 4] = [
    domain::Signal::INT,
    domain::Signal::TERM,
    domain::Signal::HUP,
    domain::Signal::QUIT,
];

/// Set once the handlers are installed.
static STATE: OnceLock<()> = OnceLock::new();
/// The first stopping signal seen; 0 while none.
static FIRST: AtomicI32 = AtomicI32::new(0);
/// When [`pending`] first saw it.
static FIRST_SEEN: OnceLock<Instant> = OnceLock::new();
/// While set, SIGINT and SIGTERM are held back for a scheduler's graceful stop
/// ([`hold_stops`]): a run sees them only once the scheduler lets them through.
static HOLDING: AtomicBool = AtomicBool::new(false);
/// The first SIGINT or SIGTERM held back; 0 while none.
static HELD: AtomicI32 = AtomicI32::new(0);
/// Another stopping signal came after the first (held or passed on), not yet taken.
static AGAIN: AtomicBool = AtomicBool::new(false);
/// The scheduler let the held signal through to end the runs at once.
static AT_ONCE: AtomicBool = AtomicBool::new(false);
/// Under `--crontab` SIGHUP and SIGUSR2 ask for the file to be read again, and stop
/// nothing.
static RELOADING: AtomicBool = AtomicBool::new(false);
/// A newer slot replaced this slot's run (`--overlap replace`).
static REPLACED: AtomicBool = AtomicBool::new(false);
/// Why a lock the run depends on was lost, and how soon its attempt must be gone; set
/// once per run, by the first to notice.
static LOCK_LOST: Mutex<Option<LostLock>> = Mutex::new(None);

struct LostLock {
    message: String,
    /// The attempt gets SIGKILL at most this long after SIGTERM (a lease's holder must be
    /// gone before the server can hand the lease on).
    kill_within: Option<Duration>,
}

/// The flag the handler sets for `sig` (a spare one for a number out of range, never set).
fn raised(sig: domain::Signal) -> &'static AtomicBool {
    static NEVER: AtomicBool = AtomicBool::new(false);
    sys::raised(sig.number()).unwrap_or(&NEVER)
}

/// Installs the handlers. Safe to call more than once.
pub fn install() -> std::io::Result<()> {
    if STATE.get().is_some() {
        return Ok(());
    }
    // A stopping signal that came ignored (nohup's SIGHUP, SIGINT and SIGQUIT of a
    // background job in a script) stays ignored: catching it would end the command.
    let caught: Vec<i32> = STOPPING
        .into_iter()
        .map(domain::Signal::number)
        .filter(|sig| !sys::inherited_ignored(*sig))
        .chain(sys::CHILD_SIGNAL)
        .collect();
    sys::catch_signals(&caught)?;
    let _ = STATE.set(());
    Ok(())
}

/// The stopping signal received so far, if any (the first one wins). While stops are
/// held, a SIGINT or SIGTERM counts only once the scheduler lets it through.
pub fn pending() -> Option<domain::Signal> {
    STATE.get()?;
    if HOLDING.load(Ordering::SeqCst) {
        take_held();
    } else if FIRST.load(Ordering::SeqCst) == 0 {
        for sig in STOPPING.into_iter().filter(|sig| stops(*sig)) {
            if raised(sig).swap(false, Ordering::SeqCst) {
                let number = sig.number();
                if FIRST
                    .compare_exchange(0, number, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
                {
                    let _ = FIRST_SEEN.set(Instant::now());
                }
            }
        }
    }
    match FIRST.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(domain::Signal::new(sig)),
    }
}

/// Takes the raised stopping signals while stops are held: the first SIGINT or SIGTERM
/// is held back, SIGHUP and SIGQUIT stop at once as ever, and any later one is a repeat.
fn take_held() {
    for sig in STOPPING.into_iter().filter(|sig| stops(*sig)) {
        if !raised(sig).swap(false, Ordering::SeqCst) {
            continue;
        }
        let number = sig.number();
        let first_seen = if matches!(sig, domain::Signal::INT | domain::Signal::TERM) {
            FIRST.load(Ordering::SeqCst) == 0
                && HELD
                    .compare_exchange(0, number, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
        } else {
            HELD.load(Ordering::SeqCst) == 0
                && FIRST
                    .compare_exchange(0, number, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
        };
        if !first_seen {
            AGAIN.store(true, Ordering::SeqCst);
        }
    }
}

/// A stopping signal that arrived after `pending` first reported one (a second
/// Ctrl-C): taken once. Once the scheduler let a held signal through at once, every
/// call says so.
pub fn take_repeat() -> Option<domain::Signal> {
    STATE.get()?;
    if HOLDING.load(Ordering::SeqCst) {
        take_held();
        let again = AT_ONCE.load(Ordering::SeqCst) || AGAIN.swap(false, Ordering::SeqCst);
        return pending().filter(|_| again);
    }
    STOPPING
        .into_iter()
        .filter(|sig| stops(*sig))
        .find(|sig| raised(*sig).swap(false, Ordering::SeqCst))
}

/// A stopping signal that arrived after `pending` first reported one, left in place
/// for [`take_repeat`] (a release after the run ends at once on a second signal).
pub fn repeated() -> Option<domain::Signal> {
    pending()?;
    STOPPING
        .into_iter()
        .find(|sig| raised(*sig).load(Ordering::SeqCst))
}

/// When [`pending`] first saw the stopping signal, if one came.
pub fn first_seen() -> Option<Instant> {
    FIRST_SEEN.get().copied()
}

/// Installs the handlers of a scheduler's slot run: as [`install`], and SIGHUP whatever
/// was inherited (it is the slot run's parent-death signal: its scheduler is gone), and
/// the signal that says a newer slot replaces this one.
pub fn install_for_slot() -> std::io::Result<()> {
    install()?;
    let more: Vec<i32> = std::iter::once(domain::Signal::HUP.number())
        .chain(sys::REPLACE_SIGNAL)
        .collect();
    sys::catch_signals(&more)
}

/// A stopping signal held back for a graceful stop ([`hold_stops`]), if one came: the
/// attempt under way may finish, but nothing new starts (no retry, no wait for a lock).
pub fn held() -> Option<domain::Signal> {
    if STATE.get().is_some() && HOLDING.load(Ordering::SeqCst) {
        take_held();
    }
    match HELD.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(domain::Signal::new(sig)),
    }
}

/// Whether `sig` stops: every stopping signal but one that asks for a reload.
fn stops(sig: domain::Signal) -> bool {
    !(RELOADING.load(Ordering::SeqCst) && sys::RELOAD_SIGNALS.contains(&sig.number()))
}

/// From now on the system's reload signals (SIGHUP and SIGUSR2; none on Windows) ask for
/// a reload ([`take_reload`]) and stop nothing.
pub fn reload_on_request() -> std::io::Result<()> {
    RELOADING.store(true, Ordering::SeqCst);
    // A stopping one (SIGHUP) is caught already, unless it came ignored.
    let more: Vec<i32> = sys::RELOAD_SIGNALS
        .iter()
        .copied()
        .filter(|n| !STOPPING.iter().any(|s| s.number() == *n))
        .collect();
    sys::catch_signals(&more)
}

/// Whether a reload was asked for (SIGHUP or SIGUSR2) since the last call.
pub fn take_reload() -> bool {
    // Every flag is taken, not only the first found set.
    let mut asked = false;
    for n in sys::RELOAD_SIGNALS {
        asked |= raised(domain::Signal::new(*n)).swap(false, Ordering::SeqCst);
    }
    asked
}

/// While `held` is true, SIGINT and SIGTERM are held back from runs until
/// [`let_through`]: a scheduler's graceful stop, where the running slot may finish.
/// A signal held back stays the scheduler's ([`stopping`]) once the hold ends.
pub fn hold_stops(held: bool) {
    if STATE.get().is_some() && HOLDING.load(Ordering::SeqCst) {
        take_held();
    }
    HOLDING.store(held, Ordering::SeqCst);
}

/// The signal that stops the scheduler, held back or not.
pub fn stopping() -> Option<domain::Signal> {
    let passed = pending();
    match HELD.load(Ordering::SeqCst) {
        0 => passed,
        sig => Some(domain::Signal::new(sig)),
    }
}

/// Whether another stopping signal came after the held one (taken once).
pub fn stopping_again() -> bool {
    if STATE.get().is_some() && HOLDING.load(Ordering::SeqCst) {
        take_held();
    }
    AGAIN.swap(false, Ordering::SeqCst)
}

/// Lets the held signal through to the runs as SIGTERM (then --kill-after), or ends
/// them at once (`at_once`: SIGKILL right after the SIGTERM).
pub fn let_through(at_once: bool) {
    let _ = FIRST.compare_exchange(
        0,
        domain::Signal::TERM.number(),
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    if at_once {
        AT_ONCE.store(true, Ordering::SeqCst);
    }
    wake();
}

/// Whether the handlers are installed (without them no SIGCHLD is noticed).
pub fn installed() -> bool {
    STATE.get().is_some()
}

/// Whether a SIGCHLD arrived since the last call; never where the system sends none
/// (Windows: a supervisor waits on the process itself, and no orphan needs reaping).
pub fn child_changed() -> bool {
    sys::CHILD_SIGNAL.is_some_and(|sig| {
        STATE.get().is_some() && raised(domain::Signal::new(sig)).swap(false, Ordering::SeqCst)
    })
}

/// Sleeps up to `d`, waking early when any handled signal arrives (or a thread calls
/// [`wake`]). Only `wait` blocks on the self-pipe; everything else waits through it.
pub(crate) fn wait(d: Duration) {
    sys::wait_for_wake(d);
}

/// Records that a lock the run holds was lost, and wakes any waiting thread; the
/// attempt is killed at most `kill_within` after its SIGTERM when that is set (a
/// PostgreSQL lease's holder must be gone before the lease can pass on). The first
/// message wins.
pub fn lose_lock_within(message: String, kill_within: Option<Duration>) {
    lost_lock_slot().get_or_insert(LostLock {
        message,
        kill_within,
    });
    wake();
}

/// The message of a lost lock, if one was lost (a slot run told that a newer slot
/// replaces it has lost its job's run to it).
pub fn lock_lost() -> Option<String> {
    let asked = sys::REPLACE_SIGNAL
        .is_some_and(|sig| raised(domain::Signal::new(sig)).swap(false, Ordering::SeqCst));
    if asked {
        replace_now(
            "its scheduler started a newer slot of the job in its place (--overlap replace)",
        );
    }
    lost_lock_slot().as_ref().map(|l| l.message.clone())
}

/// A newer slot of the job replaces this slot's run (`--overlap replace`): the run stops
/// as for a lost lock (SIGTERM to the attempt, then SIGKILL after `--kill-after`), and
/// its end is recorded as replaced.
pub fn replace_now(why: &str) {
    REPLACED.store(true, Ordering::SeqCst);
    lose_lock_within(format!("replaced: {why}"), None);
}

/// Whether a newer slot replaced this slot's run.
pub fn replaced() -> bool {
    REPLACED.load(Ordering::SeqCst)
}

/// How long after SIGTERM a lost lock's attempt must be killed, when the lock sets a limit.
pub fn lost_lock_kill_within() -> Option<Duration> {
    lost_lock_slot().as_ref().and_then(|l| l.kill_within)
}

fn lost_lock_slot() -> std::sync::MutexGuard<'static, Option<LostLock>> {
    LOCK_LOST.lock().unwrap_or_else(|p| p.into_inner())
}

/// Why the run must stop now, if it must: a stopping signal first (one held back for a
/// graceful stop too: no new attempt starts, no wait goes on), then a lost lock.
pub fn stop() -> Option<Stop> {
    pending()
        .or_else(held)
        .map(Stop::Signal)
        .or_else(|| lock_lost().map(Stop::LockLost))
}

/// Wakes a thread blocked in [`wait`] (from another thread, e.g. one that finished
/// a connection or noticed a lost lock).
pub fn wake() {
    sys::wake();
}

/// Records the signal dispositions and mask retry inherited. `main` calls it before
/// anything changes them; later calls (and code without such a `main`, like unit
/// tests) record what is in force at the first call.
pub fn record_inherited() {
    sys::record_inherited_signals();
}
