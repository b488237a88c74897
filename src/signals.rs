//! Signals retry reacts to. SIGINT, SIGTERM, SIGHUP and SIGQUIT stop the run (they
//! are forwarded to a running command's process group first); SIGCHLD wakes the
//! supervisor. Handlers only set a flag and write a byte to a self-pipe, so any
//! wait can be a `poll` on that pipe with a timeout, free of races.
//!
//! A lost lock is the other reason a run must stop early: whoever notices it (a
//! lease's renewer) records it with [`lose_lock_within`], which wakes the same self-pipe,
//! so every wait that notices signals notices it too ([`stop`]).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use nix::libc;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

/// The signals that end a run, in the order they are reported.
pub const STOPPING: [i32; 4] = [
    Signal::SIGINT as i32,
    Signal::SIGTERM as i32,
    Signal::SIGHUP as i32,
    Signal::SIGQUIT as i32,
];
const SIGCHLD: i32 = Signal::SIGCHLD as i32;

/// Every signal whose disposition retry changes (handlers for the stopping signals and
/// SIGCHLD; SIGPIPE and, in the terminal's foreground, SIGTTOU ignored): an attempt's
/// process resets them to the default before it execs.
pub const CHANGED: [i32; 7] = [
    Signal::SIGINT as i32,
    Signal::SIGTERM as i32,
    Signal::SIGHUP as i32,
    Signal::SIGQUIT as i32,
    SIGCHLD,
    Signal::SIGPIPE as i32,
    Signal::SIGTTOU as i32,
];

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
    // SAFETY: only atomics and write(2), which are async-signal-safe; errno is kept
    // for the code the signal interrupted. A full pipe drops the byte (non-blocking):
    // a wake-up is already pending then.
    unsafe {
        let errno = *libc::__errno_location();
        if let Some(flag) = RAISED.get(sig as usize) {
            flag.store(true, Ordering::SeqCst);
        }
        let fd = WAKE.load(Ordering::SeqCst);
        if fd >= 0 {
            libc::write(fd, [0u8].as_ptr().cast(), 1);
        }
        *libc::__errno_location() = errno;
    }
}

fn raised(sig: i32) -> &'static AtomicBool {
    &RAISED[sig as usize]
}

/// Why a run must stop before its policy says so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// retry received this stopping signal.
    Signal(i32),
    /// A lock the run holds is gone; the message names it and says how.
    LockLost(String),
}

/// Installs the handlers. Safe to call more than once.
pub fn install() -> std::io::Result<()> {
    if STATE.get().is_some() {
        return Ok(());
    }
    let (read, write) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC | nix::fcntl::OFlag::O_NONBLOCK)?;
    WAKE.store(write.as_raw_fd(), Ordering::SeqCst);
    let action = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for sig in STOPPING.iter().copied().chain([SIGCHLD]) {
        let sig = Signal::try_from(sig).map_err(std::io::Error::from)?;
        // SAFETY: `on_signal` is async-signal-safe (see there).
        unsafe { sigaction(sig, &action) }.map_err(std::io::Error::from)?;
    }
    let _ = STATE.set(State { read, write });
    Ok(())
}

/// The stopping signal received so far, if any (the first one wins).
pub fn pending() -> Option<i32> {
    STATE.get()?;
    if FIRST.load(Ordering::SeqCst) == 0 {
        for sig in STOPPING {
            if raised(sig).swap(false, Ordering::SeqCst) {
                let _ = FIRST.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
            }
        }
    }
    match FIRST.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}

/// A stopping signal that arrived after `pending` first reported one (a second
/// Ctrl-C): taken once.
pub fn take_repeat() -> Option<i32> {
    STATE.get()?;
    STOPPING
        .into_iter()
        .find(|sig| raised(*sig).swap(false, Ordering::SeqCst))
}

/// Whether the handlers are installed (without them no SIGCHLD is noticed).
pub fn installed() -> bool {
    STATE.get().is_some()
}

/// Whether a SIGCHLD arrived since the last call.
pub fn child_changed() -> bool {
    STATE.get().is_some() && raised(SIGCHLD).swap(false, Ordering::SeqCst)
}

/// Sleeps up to `d`, waking early when any handled signal arrives.
pub fn wait(d: Duration) {
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

/// Sleeps `d` unless a stopping signal arrives; returns it if one did.
pub fn sleep(d: Duration) -> Result<(), i32> {
    sleep_unless(d, pending)
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

/// Sleeps `d` unless the run must stop ([`stop`]); returns why if it must.
pub fn sleep_or_stop(d: Duration) -> Result<(), Stop> {
    sleep_unless(d, stop)
}

/// Sleeps `d`, waking for every signal to ask `why_stop`; returns its answer if it has one.
fn sleep_unless<T>(d: Duration, why_stop: impl Fn() -> Option<T>) -> Result<(), T> {
    let end = Instant::now() + d;
    loop {
        if let Some(why) = why_stop() {
            return Err(why);
        }
        let now = Instant::now();
        if now >= end {
            return Ok(());
        }
        wait(end - now);
    }
}
