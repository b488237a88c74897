//! Signals on Unix: a handler that only sets a flag and writes a byte to a self-pipe,
//! so that a wait is a `poll` on that pipe with a timeout, free of races; and what
//! retry inherited (ignored signals, the mask), which every process it starts gets back.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use nix::errno::Errno;
use nix::libc::{self, c_int};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{
    SaFlags, SigAction, SigHandler, SigSet, SigmaskHow, Signal, pthread_sigmask, sigaction,
};

use super::PipeMode;
use crate::sys::raised;

/// SIGCHLD's number: a child changed state.
pub const CHILD_SIGNAL: Option<i32> = Some(Signal::SIGCHLD as i32);
/// The signals that ask a crontab to be read again (and stop nothing there).
pub const RELOAD_SIGNALS: &[i32] = &[Signal::SIGHUP as i32, Signal::SIGUSR2 as i32];

struct SelfPipe {
    read: OwnedFd,
    /// Another end of the self-pipe, for threads that must wake a waiting one.
    write: OwnedFd,
}

static PIPE: OnceLock<SelfPipe> = OnceLock::new();
/// The self-pipe's write end, for the handler (-1 until made).
static WAKE: AtomicI32 = AtomicI32::new(-1);

/// The handler: marks the signal and writes a byte to the self-pipe, nothing else.
extern "C" fn on_signal(sig: libc::c_int) {
    // Only atomics, errno and write(2), which are async-signal-safe; errno is kept for
    // the code the signal interrupted.
    let errno = Errno::last_raw();
    if let Some(flag) = raised(sig) {
        flag.store(true, Ordering::SeqCst);
    }
    let fd = WAKE.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: writes one byte from a live buffer. A full pipe drops the byte
        // (non-blocking): a wake-up is already pending then.
        unsafe { libc::write(fd, [0u8].as_ptr().cast(), 1) };
    }
    Errno::set_raw(errno);
}

fn self_pipe() -> std::io::Result<&'static SelfPipe> {
    if let Some(pipe) = PIPE.get() {
        return Ok(pipe);
    }
    let (read, write) = super::pipe(PipeMode::Nonblocking)?;
    let fd = write.as_raw_fd();
    if PIPE.set(SelfPipe { read, write }).is_ok() {
        WAKE.store(fd, Ordering::SeqCst);
    }
    PIPE.get()
        .ok_or_else(|| std::io::Error::other("no self-pipe"))
}

/// Has each of `numbers` set its flag and wake a waiting thread.
pub fn catch(numbers: &[i32]) -> std::io::Result<()> {
    self_pipe()?;
    let action = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for number in numbers {
        let sig = Signal::try_from(*number).map_err(std::io::Error::from)?;
        // SAFETY: `on_signal` is async-signal-safe (see there).
        unsafe { sigaction(sig, &action) }.map_err(std::io::Error::from)?;
    }
    Ok(())
}

/// Sleeps up to `d`, waking early at a caught signal or a [`wake`].
pub fn wait_for_wake(d: Duration) {
    let Some(pipe) = PIPE.get() else {
        std::thread::sleep(d);
        return;
    };
    let mut fds = [PollFd::new(pipe.read.as_fd(), PollFlags::POLLIN)];
    let ms = d.as_millis().min(i32::MAX as u128) as i32;
    let _ = poll(
        &mut fds,
        PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX),
    );
    drain(pipe.read.as_fd());
}

/// The self-pipe's read end, for a wait that polls it beside its own descriptor.
pub fn wake_fd() -> Option<BorrowedFd<'static>> {
    PIPE.get().map(|pipe| pipe.read.as_fd())
}

/// Polls `fd` for `events` for up to `slice` (at most about a minute), ending early at
/// a caught signal or a [`wake`]: whether `fd` is ready (or reports an error or hang-up).
pub fn poll_with_wake(fd: BorrowedFd<'_>, events: PollFlags, slice: Duration) -> bool {
    let ms = u16::try_from(slice.as_millis()).unwrap_or(u16::MAX);
    match wake_fd() {
        Some(wake) => {
            let mut both = [
                PollFd::new(fd, events),
                PollFd::new(wake, PollFlags::POLLIN),
            ];
            let _ = poll(&mut both, PollTimeout::from(ms));
            if both[1].any().unwrap_or(false) {
                drain_wakes();
            }
            both[0].any().unwrap_or(false)
        }
        None => {
            let mut fds = [PollFd::new(fd, events)];
            let _ = poll(&mut fds, PollTimeout::from(ms));
            fds[0].any().unwrap_or(false)
        }
    }
}

/// Empties the self-pipe after a wait saw it readable (the flags keep what happened).
pub fn drain_wakes() {
    if let Some(pipe) = PIPE.get() {
        drain(pipe.read.as_fd());
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

/// Wakes a thread blocked in [`wait_for_wake`].
pub fn wake() {
    if let Some(pipe) = PIPE.get() {
        // A full pipe already holds a wake-up: nothing is lost when this write fails.
        let _ = nix::unistd::write(&pipe.write, &[0]);
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

/// Whether signal `number` came ignored (recorded at the first call of this or
/// [`record_inherited`]).
pub fn inherited_ignored(number: i32) -> bool {
    inherited().ignores(number)
}

/// Records the signal dispositions and mask retry inherited.
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

/// What a process retry starts needs, taken now. `timeout_signal`, the signal its time
/// limit sends, starts at its default even when retry inherited it ignored, as GNU
/// timeout's child does: an ignored signal would never end it.
pub fn for_child(timeout_signal: Signal) -> ChildSignals {
    let inherited = inherited();
    let timeout_signal = timeout_signal as c_int;
    let ignored = |sig| sig != timeout_signal && inherited.ignores(sig);
    let actions = restore_plan(ignored, handler)
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
