//! Signals retry reacts to. SIGINT, SIGTERM, SIGHUP and SIGQUIT stop the run (they
//! are forwarded to a running command's process group first); SIGCHLD wakes the
//! supervisor. Handlers only set a flag and write a byte to a self-pipe, so any
//! wait can be a `poll` on that pipe with a timeout, free of races.
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
//! back ([`for_child`]): a signal that `nohup` or a shell ignored stays ignored, in
//! retry (a stopping signal it inherited ignored gets no handler) and in the command.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::domain::{self, Stop};
use crate::sys;
use nix::libc::{self, c_int};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{
    SaFlags, SigAction, SigHandler, SigSet, SigmaskHow, Signal, pthread_sigmask, sigaction,
};

/// The signals that end a run, in the order they are reported.
pub const STOPPING: [domain::Signal; 4] = [
    domain::Signal::INT,
    domain::Signal::TERM,
    domain::Signal::HUP,
    domain::Signal::QUIT,
];
const SIGCHLD: domain::Signal = domain::Signal::new(Signal::SIGCHLD as i32);

struct State {
    read: OwnedFd,
    /// Another end of the self-pipe, for threads that must wake a waiting one.
    write: OwnedFd,
}

static STATE: OnceLock<State> = OnceLock::new();
/// Set by the handler for each signal number it sees; taken by the functions below.
static RAISED: [AtomicBool; 65] = [const { AtomicBool::new(false) }; 65];
/// The self-pipe's write end, for the handler (-1 until installed).
static WAKE: AtomicI32 = AtomicI32::new(-1);
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
/// Under `--crontab` SIGHUP (and SIGUSR2) asks for the file to be read again, and
/// stops nothing.
static RELOADING: AtomicBool = AtomicBool::new(false);
/// Why a lock the run depends on was lost, and how soon its attempt must be gone; set
/// once per run, by the first to notice.
static LOCK_LOST: Mutex<Option<LostLock>> = Mutex::new(None);

struct LostLock {
    message: String,
    /// The attempt gets SIGKILL at most this long after SIGTERM (a lease's holder must be
    /// gone before the server can hand the lease on).
    kill_within: Option<Duration>,
}

/// The handler: marks the signal and writes a byte to the self-pipe, nothing else.
extern "C" fn on_signal(sig: libc::c_int) {
    // Only atomics, errno and write(2), which are async-signal-safe; errno is kept for
    // the code the signal interrupted.
    let errno = sys::errno();
    if let Some(flag) = RAISED.get(sig as usize) {
        flag.store(true, Ordering::SeqCst);
    }
    let fd = WAKE.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: writes one byte from a live buffer. A full pipe drops the byte
        // (non-blocking): a wake-up is already pending then.
        unsafe { libc::write(fd, [0u8].as_ptr().cast(), 1) };
    }
    sys::set_errno(errno);
}

fn raised(sig: domain::Signal) -> &'static AtomicBool {
    &RAISED[sig.number() as usize]
}

/// Installs the handlers. Safe to call more than once.
pub fn install() -> std::io::Result<()> {
    if STATE.get().is_some() {
        return Ok(());
    }
    let (read, write) = sys::pipe(sys::PipeMode::Nonblocking)?;
    WAKE.store(write.as_raw_fd(), Ordering::SeqCst);
    let action = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    let inherited = inherited();
    // A stopping signal that came ignored (nohup's SIGHUP, SIGINT and SIGQUIT of a
    // background job in a script) stays ignored: catching it would end the command.
    let stopping = STOPPING
        .into_iter()
        .filter(|sig| !inherited.ignores(sig.number()));
    for sig in stopping.chain([SIGCHLD]) {
        let sig = Signal::try_from(sig.number()).map_err(std::io::Error::from)?;
        // SAFETY: `on_signal` is async-signal-safe (see there).
        unsafe { sigaction(sig, &action) }.map_err(std::io::Error::from)?;
    }
    let _ = STATE.set(State { read, write });
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

/// Whether `sig` stops: every stopping signal but SIGHUP while it asks for a reload.
fn stops(sig: domain::Signal) -> bool {
    !(sig == domain::Signal::HUP && RELOADING.load(Ordering::SeqCst))
}

/// From now on SIGHUP and SIGUSR2 ask for a reload ([`take_reload`]) and stop nothing.
pub fn reload_on_hup() -> std::io::Result<()> {
    RELOADING.store(true, Ordering::SeqCst);
    let action = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    // SAFETY: `on_signal` is async-signal-safe (see there).
    unsafe { sigaction(Signal::SIGUSR2, &action) }.map_err(std::io::Error::from)?;
    Ok(())
}

/// Whether a reload was asked for (SIGHUP or SIGUSR2) since the last call.
pub fn take_reload() -> bool {
    let hup = raised(domain::Signal::HUP).swap(false, Ordering::SeqCst);
    let usr2 = raised(domain::Signal::new(Signal::SIGUSR2 as i32)).swap(false, Ordering::SeqCst);
    hup || usr2
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

/// Whether a SIGCHLD arrived since the last call.
pub fn child_changed() -> bool {
    STATE.get().is_some() && raised(SIGCHLD).swap(false, Ordering::SeqCst)
}

/// Sleeps up to `d`, waking early when any handled signal arrives (or a thread calls
/// [`wake`]). Only `wait` blocks on the self-pipe; everything else waits through it.
pub(crate) fn wait(d: Duration) {
    let Some(state) = STATE.get() else {
        std::thread::sleep(d);
        return;
    };
    let mut fds = [PollFd::new(state.read.as_fd(), PollFlags::POLLIN)];
    let ms = d.as_millis().min(i32::MAX as u128) as i32;
    let _ = poll(
        &mut fds,
        PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX),
    );
    drain(state.read.as_fd());
}

/// The self-pipe's read end, for a wait that polls it beside its own descriptor
/// (`None` before the handlers are installed).
pub fn wake_fd() -> Option<BorrowedFd<'static>> {
    STATE.get().map(|state| state.read.as_fd())
}

/// Empties the self-pipe after a wait saw it readable (the flags keep what happened).
pub fn drain_wakes() {
    if let Some(state) = STATE.get() {
        drain(state.read.as_fd());
    }
}

fn drain(fd: BorrowedFd<'_>) {
    let mut buf = [0u8; 64];
    while let Ok(n) = nix::unistd::read(fd, &mut buf) {
        if n == 0 {
            break;
        }
    }
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

/// The message of a lost lock, if one was lost.
pub fn lock_lost() -> Option<String> {
    lost_lock_slot().as_ref().map(|l| l.message.clone())
}

/// How long after SIGTERM a lost lock's attempt must be killed, when the lock sets a limit.
pub fn lost_lock_kill_within() -> Option<Duration> {
    lost_lock_slot().as_ref().and_then(|l| l.kill_within)
}

/// Forgets a lost lock once its run has ended, so the scheduler's next slot starts clean.
pub fn clear_lost_lock() {
    *lost_lock_slot() = None;
}

fn lost_lock_slot() -> std::sync::MutexGuard<'static, Option<LostLock>> {
    LOCK_LOST.lock().unwrap_or_else(|p| p.into_inner())
}

/// Why the run must stop now, if it must: a stopping signal first, then a lost lock.
pub fn stop() -> Option<Stop> {
    pending()
        .map(Stop::Signal)
        .or_else(|| lock_lost().map(Stop::LockLost))
}

/// Wakes a thread blocked in [`wait`] (from another thread, e.g. one that finished
/// a connection or noticed a lost lock).
pub fn wake() {
    if let Some(state) = STATE.get() {
        // A full pipe already holds a wake-up: nothing is lost when this write fails.
        let _ = nix::unistd::write(&state.write, &[0]);
    }
}

/// Signals 1 to 64: every signal retry may change or inherit ignored (Linux's
/// real-time signals among them; a number a system lacks cannot be queried).
const SIGNALS: std::ops::RangeInclusive<c_int> = 1..=64;

/// What retry inherited: the signals it found ignored (every other one was at its
/// default, since handlers do not survive an exec) and the signal mask.
struct Inherited {
    /// Bit `sig` is set when `sig` came ignored.
    ignored: u128,
    mask: SigSet,
}

impl Inherited {
    fn ignores(&self, sig: c_int) -> bool {
        self.ignored & (1 << sig) != 0
    }
}

static INHERITED: OnceLock<Inherited> = OnceLock::new();

/// Records the signal dispositions and mask retry inherited. `main` calls it before
/// anything changes them; later calls (and code without such a `main`, like unit
/// tests) record what is in force at the first call.
pub fn record_inherited() {
    inherited();
}

fn inherited() -> &'static Inherited {
    INHERITED.get_or_init(|| Inherited {
        ignored: SIGNALS
            .filter(|sig| handler(*sig) == Some(libc::SIG_IGN))
            .fold(0, |bits, sig| bits | 1 << sig),
        mask: SigSet::thread_get_mask().unwrap_or_else(|_| SigSet::empty()),
    })
}

/// The disposition `sig` has now; `None` for a number that cannot be queried (the
/// two real-time signals the C library keeps for itself).
fn handler(sig: c_int) -> Option<libc::sighandler_t> {
    // SAFETY: a plain C struct that sigaction fills; all zeroes is a valid value of it.
    let mut now: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: only reads the disposition (no new action), into `now`.
    let queried = unsafe { libc::sigaction(sig, std::ptr::null(), &mut now) };
    (queried == 0).then_some(now.sa_sigaction)
}

/// Which dispositions a new process must change before its exec so that it starts
/// with what retry inherited: `(signal, SIG_DFL or SIG_IGN)` for every signal whose
/// disposition `now` differs from that. A handler is never left in place: it is
/// retry's code, and a signal must not run it between the fork and the exec.
fn restore_plan(
    ignored_at_start: impl Fn(c_int) -> bool,
    now: impl Fn(c_int) -> Option<libc::sighandler_t>,
) -> Vec<(c_int, libc::sighandler_t)> {
    let unchangeable = [Signal::SIGKILL as c_int, Signal::SIGSTOP as c_int];
    SIGNALS
        .filter(|sig| !unchangeable.contains(sig))
        .filter_map(|sig| {
            let wanted = if ignored_at_start(sig) {
                libc::SIG_IGN
            } else {
                libc::SIG_DFL
            };
            now(sig).filter(|now| *now != wanted).map(|_| (sig, wanted))
        })
        .collect()
}

/// The signal state a process retry starts must get, prepared in retry and applied
/// in the child between fork and exec, where only async-signal-safe calls may be
/// made: [`ChildSignals::restore_dispositions`] first, while every signal is still
/// blocked ([`block_all`]), then [`ChildSignals::restore_mask`] last.
pub struct ChildSignals {
    actions: Vec<(c_int, libc::sigaction)>,
    mask: SigSet,
}

/// What a process retry starts needs, taken now.
pub fn for_child() -> ChildSignals {
    let inherited = inherited();
    let actions = restore_plan(|sig| inherited.ignores(sig), handler)
        .into_iter()
        .map(|(sig, wanted)| {
            // SAFETY: a plain C struct; all zeroes is an empty mask and no flags.
            let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
            action.sa_sigaction = wanted;
            (sig, action)
        })
        .collect();
    ChildSignals {
        actions,
        mask: inherited.mask,
    }
}

impl ChildSignals {
    /// Puts back every disposition retry changed. Async-signal-safe: sigaction only.
    pub fn restore_dispositions(&self) -> std::io::Result<()> {
        for (sig, action) in &self.actions {
            // SAFETY: installs SIG_DFL or SIG_IGN, which run no code of retry's.
            if unsafe { libc::sigaction(*sig, action, std::ptr::null_mut()) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// Sets the mask retry inherited. Async-signal-safe: one sigprocmask.
    pub fn restore_mask(&self) -> std::io::Result<()> {
        pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&self.mask), None)
            .map_err(std::io::Error::from)
    }
}

/// Every signal blocked on this thread until the guard is dropped, so that a
/// process forked meanwhile starts with none of retry's handlers able to run.
pub struct Blocked(SigSet);

pub fn block_all() -> std::io::Result<Blocked> {
    let mut old = SigSet::empty();
    pthread_sigmask(
        SigmaskHow::SIG_SETMASK,
        Some(&SigSet::all()),
        Some(&mut old),
    )?;
    Ok(Blocked(old))
}

impl Drop for Blocked {
    fn drop(&mut self) {
        // Cannot fail: the mask came from the same call.
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&self.0), None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HANDLER: libc::sighandler_t = 0x1234;

    #[test]
    fn a_child_gets_back_exactly_what_retry_inherited() {
        let hup = Signal::SIGHUP as c_int;
        let int = Signal::SIGINT as c_int;
        let pipe = Signal::SIGPIPE as c_int;
        let ttou = Signal::SIGTTOU as c_int;
        let usr1 = Signal::SIGUSR1 as c_int;
        // nohup ignored SIGHUP and a script ignored SIGUSR1; retry caught SIGHUP and
        // SIGINT, ignored SIGPIPE and SIGTTOU, and left SIGUSR1 as it found it.
        let ignored_at_start = |sig| sig == hup || sig == usr1;
        let now = |sig| match sig {
            32 | 33 => None,
            s if s == hup || s == int => Some(HANDLER),
            s if s == pipe || s == ttou || s == usr1 => Some(libc::SIG_IGN),
            _ => Some(libc::SIG_DFL),
        };
        let plan = restore_plan(ignored_at_start, now);
        assert_eq!(
            plan,
            [
                (hup, libc::SIG_IGN),
                (int, libc::SIG_DFL),
                (pipe, libc::SIG_DFL),
                (ttou, libc::SIG_DFL),
            ]
        );
    }

    #[test]
    fn a_handler_is_never_left_and_kill_and_stop_are_never_touched() {
        let plan = restore_plan(|_| true, |_| Some(HANDLER));
        assert!(plan.iter().all(|(_, wanted)| *wanted == libc::SIG_IGN));
        let sigs: Vec<c_int> = plan.iter().map(|(sig, _)| *sig).collect();
        assert!(!sigs.contains(&(Signal::SIGKILL as c_int)));
        assert!(!sigs.contains(&(Signal::SIGSTOP as c_int)));
        assert_eq!(sigs.len(), 62);
        assert!(restore_plan(|_| false, |_| Some(libc::SIG_DFL)).is_empty());
    }
}
