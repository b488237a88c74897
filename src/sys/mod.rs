//! What the operating system gives, in one place: the processes there are, becoming a
//! reaper of orphaned descendants and the parent-death signal, errno, close-on-exec
//! pipes and the fork lock that keeps them so, sends that raise no SIGPIPE, writes to
//! a pipe shared with others that never block for long, the host name, device numbers,
//! the umask, a clock that counts a suspended machine, and how the C library looks up
//! host names. This file is the face; each system's way is in its own file (`linux.rs`,
//! `freebsd.rs`, `macos.rs`), and what systems without a Linux facility do instead is
//! in `posix.rs`. Nothing else in the crate names a system. Which guarantee rests on
//! what is the caller's to say: this module imports nothing of the crate.
//!
//! The `portable-paths` feature makes a Linux build take `posix.rs`'s way wherever
//! Linux has both (pipe then fcntl, the writer thread, no subreaper, no parent-death
//! signal), so that CI runs those paths; it is for testing, not for a release.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::poll::PollFlags;
use nix::sys::signal::Signal;
use nix::sys::socket::MsgFlags;

#[cfg(target_os = "freebsd")]
#[path = "freebsd.rs"]
mod os;
#[cfg(target_os = "linux")]
#[path = "linux.rs"]
mod os;
#[cfg(target_os = "macos")]
#[path = "macos.rs"]
mod os;
mod posix;

pub use posix::ForkGuard;

/// One process, as the system lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Process {
    pub pid: i32,
    pub ppid: i32,
    /// Its process group.
    pub pgid: i32,
    /// It has exited and waits to be reaped.
    pub zombie: bool,
    /// When it started, in the system's own unit: comparable between processes of
    /// one listing and stable for one process (0 where the system does not say).
    pub start: u64,
}

/// Every process on the system; `None` where they cannot be listed (Linux without
/// `/proc` mounted).
pub fn processes() -> Option<Vec<Process>> {
    os::processes()
}

/// When `pid` started (see [`Process::start`]); `None` when it is gone.
pub fn started(pid: i32) -> Option<u64> {
    os::started(pid)
}

/// The process IDs of retry's own children, living or not.
pub fn children() -> Vec<i32> {
    os::children()
}

/// Makes retry the parent of every orphaned descendant from now on (Linux
/// `PR_SET_CHILD_SUBREAPER`, FreeBSD `PROC_REAP_ACQUIRE`); `Err` leaves orphans to
/// init, of kind `Unsupported` where the system has no such thing (macOS).
pub fn become_subreaper() -> io::Result<()> {
    os::become_subreaper()
}

/// Whether this system can signal a process when its parent dies (Linux
/// `PR_SET_PDEATHSIG`, FreeBSD `PROC_PDEATHSIG_CTL`; macOS has none).
pub const PARENT_DEATH_SIGNAL: bool = os::PARENT_DEATH_SIGNAL;

/// Has the calling process receive `sig` when its parent dies (a no-op where
/// [`PARENT_DEATH_SIGNAL`] is false). One system call: safe between fork and exec.
pub fn set_parent_death_signal(sig: Signal) -> io::Result<()> {
    os::set_parent_death_signal(sig)
}

/// A monotonic time (from an arbitrary start) that goes on while this process is
/// stopped (SIGSTOP) and, where the system has such a clock (Linux `CLOCK_BOOTTIME`),
/// while the machine is suspended, which `Instant` does not count on Linux.
pub fn suspend_aware_now() -> std::time::Duration {
    let mut ts = nix::libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into a live one; it cannot fail for a
    // clock the system defines.
    unsafe { nix::libc::clock_gettime(os::SUSPEND_CLOCK, &mut ts) };
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u32::try_from(ts.tv_nsec).unwrap_or(0);
    std::time::Duration::new(secs, nanos)
}

/// This thread's errno (async-signal-safe, for a handler that must keep it).
pub fn errno() -> i32 {
    Errno::last_raw()
}

/// Sets this thread's errno (async-signal-safe).
pub fn set_errno(value: i32) {
    Errno::set_raw(value);
}

/// Whether a new pipe's ends block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipeMode {
    Blocking,
    /// Both ends are O_NONBLOCK.
    Nonblocking,
}

/// A pipe, read end first, both ends close-on-exec from the start: no process retry
/// starts inherits them.
pub fn pipe(mode: PipeMode) -> io::Result<(OwnedFd, OwnedFd)> {
    os::pipe(mode)
}

/// Holds off every descriptor that is made in two steps (where there is no `pipe2`)
/// until it is dropped: a process forked meanwhile, as std's `Command` forks, cannot
/// inherit a descriptor before it is close-on-exec. Held across each spawn.
pub fn fork_guard() -> ForkGuard {
    posix::fork_guard()
}

/// Sends what fits of `data` on the socket `fd` now (EAGAIN when nothing does), with
/// EPIPE and no SIGPIPE when the peer is gone; the socket's own mode is untouched.
pub fn send_nonblocking(fd: BorrowedFd<'_>, data: &[u8]) -> Result<usize, Errno> {
    let flags = MsgFlags::MSG_DONTWAIT | os::NO_SIGPIPE;
    nix::sys::socket::send(fd.as_raw_fd(), data, flags)
}

/// Writes to a pipe that retry shares with others (its stdout or stderr) without
/// setting O_NONBLOCK on it, which would change it for every process sharing the
/// pipe, and without ever blocking for long: Linux writes through a second,
/// non-blocking open of the pipe (`/proc/self/fd/N`); other systems, whose
/// `/dev/fd/N` is the same open file, hand each chunk to a thread of the pipe's own
/// that makes the blocking write while the caller waits in `poll`.
pub struct PipeWriter(os::PipeWriter);

impl PipeWriter {
    /// The writer of `fd`, a pipe; EPIPE when the pipe has no reader left.
    pub fn new(fd: BorrowedFd<'_>) -> io::Result<PipeWriter> {
        os::PipeWriter::new(fd).map(PipeWriter)
    }

    /// Writes or takes on what fits of `data` now; EAGAIN when nothing does, then
    /// poll [`room`](Self::room) and try again.
    pub fn try_write(&self, data: &[u8]) -> Result<usize, Errno> {
        self.0.try_write(data)
    }

    /// The descriptor and events that say a write may go on.
    pub fn room(&self) -> (BorrowedFd<'_>, PollFlags) {
        self.0.room()
    }

    /// Whether bytes taken on earlier are still on their way (wait on `room` until
    /// they are not); the error of a write that failed since, once.
    pub fn pending(&self) -> Result<bool, Errno> {
        self.0.pending()
    }
}

/// This machine's name.
pub fn host_name() -> Option<String> {
    let name = nix::unistd::gethostname().ok()?;
    Some(name.to_string_lossy().into_owned())
}

/// The major and minor numbers of the device `dev` (as `MetadataExt::dev` gives it).
pub fn device_numbers(dev: u64) -> (u64, u64) {
    os::device_numbers(dev)
}

/// A file's device and inode, as `MetadataExt::dev` and `ino` give them.
#[allow(clippy::unnecessary_cast)] // the types differ between systems
pub fn file_identity(st: &nix::sys::stat::FileStat) -> (u64, u64) {
    (st.st_dev as u64, st.st_ino as u64)
}

/// The process umask, read by setting it and setting it back: call it before other
/// threads create files.
#[allow(clippy::useless_conversion)] // mode_t is 16 bits on the BSDs
pub fn umask() -> u32 {
    use nix::sys::stat::{Mode, umask};
    let old = umask(Mode::from_bits_truncate(0o022));
    umask(old);
    u32::from(old.bits())
}

/// Has the C library answer host names from /etc/hosts and then DNS, whatever its
/// configuration names (glibc's NSS `hosts` database: no module is loaded, which a
/// static glibc cannot do); elsewhere the system's own resolver is used as it is set.
pub fn configure_name_lookup() {
    os::configure_name_lookup();
}
