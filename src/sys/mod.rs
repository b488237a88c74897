//! What the operating system gives, in one place: the processes there are, becoming a
//! reaper of orphaned descendants and the parent-death signal, errno, close-on-exec
//! pipes and the fork lock that keeps them so, sends that raise no SIGPIPE, writes to
//! a pipe shared with others that never block for long, the host name, device numbers,
//! the umask, a clock that counts a suspended machine, and how the C library looks up
//! host names. This file is the face; each system's way is in its own file (`linux.rs`,
//! `freebsd.rs`, `macos.rs`), and what systems without a Linux facility do instead is
//! in `posix/`. Nothing else in the crate names a system. Which guarantee rests on
//! what is the caller's to say: this module imports nothing of the crate.
//!
//! Windows (`windows.rs`) has its own face for what it gives instead: the processes there
//! are, a Job Object that holds an attempt's whole tree, console control events as
//! retry's signals, `LockFileEx`, and where per-user state lives. The POSIX face below is
//! compiled for Unix systems only.
//!
//! The `portable-paths` feature makes a Linux build take `posix/`'s way wherever
//! Linux has both (pipe then fcntl, the writer thread, no subreaper, no parent-death
//! signal), so that CI runs those paths; it is for testing, not for a release.

#[cfg(unix)]
use std::io;
#[cfg(unix)]
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

#[cfg(unix)]
use nix::errno::Errno;
#[cfg(unix)]
use nix::poll::PollFlags;
#[cfg(unix)]
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
pub use family::{
    Dir, Locked, LogCopy, SIGNALS_ACCEPTED, Signal, USER_STATE_DIR_UNSET, user_state_dir,
};
/// The calls one family of systems shares: `posix/` on every Unix, `windows.rs` on Windows.
#[cfg(windows)]
use os as family;
#[cfg(unix)]
use posix as family;
#[cfg(windows)]
#[path = "windows.rs"]
mod os;
#[cfg(unix)]
mod posix;

pub use catching::{
    CHILD_SIGNAL, RELOAD_SIGNALS, catch as catch_signals, inherited_ignored,
    record_inherited as record_inherited_signals, wait_for_wake, wake,
};
/// A cancel for a thread blocked on a pipe, and the wait for a pipe's bytes it ends.
pub use family::{Cancel, wait_readable};
/// How signals are caught and waited for: a self-pipe on Unix, an event set by the
/// console control handler on Windows.
#[cfg(windows)]
use os as catching;
/// A descriptor (a handle on Windows) borrowed for a call, and one owned.
#[cfg(windows)]
pub use os::{Fd, Owned, borrow};
#[cfg(unix)]
use posix::signals as catching;
#[cfg(unix)]
pub use std::os::fd::{BorrowedFd as Fd, OwnedFd as Owned};

/// What a standard stream is, as far as how to read or write it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamKind {
    /// A regular file: it can be rewound.
    File,
    Pipe,
    #[cfg_attr(windows, allow(dead_code))] // Windows reports a socket as a pipe
    Socket,
    /// A terminal, a device, /dev/null.
    Other,
}

/// Ending an attempt's processes: its group (on Windows its Job Object), what left the
/// group, the signal passed on for retry's own, and an exited child reaped.
pub use family::{
    CONTINUE, GROUP_HOLDS_TREE, passed_on, reap, release_group, signal_group, signal_process,
};

#[cfg(test)]
/// The signal that ended a process, if one did (Windows ends processes by exit code only).
pub fn exit_signal(status: &std::process::ExitStatus) -> Option<i32> {
    family::exit_signal(status)
}

/// A private directory for `RETRY_CONTROL` (mode 0700; refused on Windows, which keeps
/// an ACL instead), and what the command left there opened without blocking or
/// following a link.
pub use family::{describe_kind, make_private_dir, open_unfollowed, private_dir_permissions};

/// How a child was last seen by [`try_wait`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChildState {
    /// It exited with this code.
    Exited(i32),
    /// This signal ended it.
    #[cfg_attr(windows, allow(dead_code))] // Windows ends a process with a code only
    Signaled(i32),
    /// It was stopped (Ctrl-Z at the terminal).
    #[cfg_attr(windows, allow(dead_code))] // Windows has no job control
    Stopped,
}

/// retry's stdout or stderr, written so that a stalled reader cannot hang it.
pub use family::StdOutput;
/// The terminal's foreground (a console has none), and a reader gone from retry's output;
/// the `raw_os_error`s of a spawn that ran out of processes (EAGAIN) or memory (ENOMEM).
pub use family::{
    NO_MEMORY, NO_PROCESSES, ignore_sigttou, in_terminal_foreground, reader_gone, reclaim_terminal,
};
/// A command of a program and its arguments (on Windows, a line for `cmd /c` as it is
/// written), and starting it in a group of its own (on Windows, suspended into a Job
/// Object, then resumed).
pub use family::{Started, new_command, start};
/// What a stream is, where a file stands, reads, and the pipe a command's stdin is fed
/// through, with the writes to it that a cancel ends.
pub use family::{feed_pipe, position, read, seek_to, stream_kind, write_or_cancel};
/// A look at a child without blocking, and the wait between two looks.
pub use family::{pause_for_child, stop_in_turn, try_wait};

/// retry's own stdin, stdout or stderr (0, 1 or 2), borrowed for the process's life.
#[cfg(unix)]
pub fn std_stream(fd: i32) -> Fd<'static> {
    assert!((0..=2).contains(&fd), "fd {fd} is not a standard stream");
    // SAFETY: fds 0, 1 and 2 stay open for the whole process: retry never closes them.
    unsafe { Fd::borrow_raw(fd) }
}
#[cfg(windows)]
pub use os::std_stream;

/// `file`'s descriptor, borrowed.
#[cfg(unix)]
pub fn borrow(file: &std::fs::File) -> Fd<'_> {
    std::os::fd::AsFd::as_fd(file)
}

/// Set for each signal number (1 to 64) caught since its flag was last taken.
static RAISED: [std::sync::atomic::AtomicBool; 65] =
    [const { std::sync::atomic::AtomicBool::new(false) }; 65];

/// The flag a caught signal numbered `number` sets (async-signal-safe: an atomic).
pub fn raised(number: i32) -> Option<&'static std::sync::atomic::AtomicBool> {
    usize::try_from(number).ok().and_then(|n| RAISED.get(n))
}

#[cfg(unix)]
pub use posix::ForkGuard;

/// The shell that runs a command line of the user's (a hook, a crontab line, as cron
/// runs one) and the flag that hands it the line: `/bin/sh -c`, on Windows `cmd /c`.
#[cfg(unix)]
pub const SHELL: [&str; 2] = ["/bin/sh", "-c"];
#[cfg(windows)]
pub const SHELL: [&str; 2] = ["cmd", "/c"];

/// `getaddrinfo`'s stream sockets and the flags `getent ahosts` asks with, as the
/// system numbers them.
#[cfg(unix)]
pub use nix::libc::{AI_ADDRCONFIG, AI_V4MAPPED, SOCK_STREAM};
#[cfg(windows)]
pub use os::{AI_ADDRCONFIG, AI_V4MAPPED, SOCK_STREAM};

/// Whether a command ends when retry is killed outright: the parent-death signal
/// (Linux `PR_SET_PDEATHSIG`, FreeBSD `PROC_PDEATHSIG_CTL`; macOS has none), or on
/// Windows the attempt's Job Object, which ends its processes when retry's handle to it
/// closes.
#[cfg(windows)]
pub const PARENT_DEATH_SIGNAL: bool = true;

/// The process umask (Windows has none: 0).
#[cfg(windows)]
pub fn umask() -> u32 {
    0
}

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

#[cfg(windows)]
pub use os::become_subreaper;
#[cfg(unix)]
/// Makes retry the parent of every orphaned descendant from now on (Linux
/// `PR_SET_CHILD_SUBREAPER`, FreeBSD `PROC_REAP_ACQUIRE`); `Err` leaves orphans to
/// init, of kind `Unsupported` where the system has no such thing (macOS).
pub fn become_subreaper() -> io::Result<()> {
    os::become_subreaper()
}

#[cfg(unix)]
/// Whether this system can signal a process when its parent dies (Linux
/// `PR_SET_PDEATHSIG`, FreeBSD `PROC_PDEATHSIG_CTL`; macOS has none).
pub const PARENT_DEATH_SIGNAL: bool = os::PARENT_DEATH_SIGNAL;

#[cfg(unix)]
/// Has the calling process receive `sig` when its parent dies (a no-op where
/// [`PARENT_DEATH_SIGNAL`] is false). One system call: safe between fork and exec.
pub fn set_parent_death_signal(sig: Signal) -> io::Result<()> {
    os::set_parent_death_signal(sig)
}

/// A monotonic time (from an arbitrary start) that goes on while this process is
/// stopped (SIGSTOP) and, where the system has such a clock (Linux `CLOCK_BOOTTIME`),
/// while the machine is suspended, which `Instant` does not count on Linux.
/// (Windows: `GetTickCount64`, which counts a suspended machine, in milliseconds.)
pub fn suspend_aware_now() -> std::time::Duration {
    family::suspend_aware_now()
}

#[cfg(unix)]
/// This thread's errno (async-signal-safe, for a handler that must keep it).
pub fn errno() -> i32 {
    Errno::last_raw()
}

#[cfg(unix)]
/// Sets this thread's errno (async-signal-safe).
pub fn set_errno(value: i32) {
    Errno::set_raw(value);
}

#[cfg(unix)]
/// Whether a new pipe's ends block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipeMode {
    Blocking,
    /// Both ends are O_NONBLOCK.
    Nonblocking,
}

#[cfg(unix)]
/// A pipe, read end first, both ends close-on-exec from the start: no process retry
/// starts inherits them.
pub fn pipe(mode: PipeMode) -> io::Result<(OwnedFd, OwnedFd)> {
    os::pipe(mode)
}

#[cfg(unix)]
/// Holds off every descriptor that is made in two steps (where there is no `pipe2`)
/// until it is dropped: a process forked meanwhile, as std's `Command` forks, cannot
/// inherit a descriptor before it is close-on-exec. Held across each spawn.
pub fn fork_guard() -> ForkGuard {
    posix::fork_guard()
}

#[cfg(unix)]
/// Sends what fits of `data` on the socket `fd` now (EAGAIN when nothing does), with
/// EPIPE and no SIGPIPE when the peer is gone; the socket's own mode is untouched.
pub fn send_nonblocking(fd: BorrowedFd<'_>, data: &[u8]) -> Result<usize, Errno> {
    let flags = MsgFlags::MSG_DONTWAIT | os::NO_SIGPIPE;
    nix::sys::socket::send(fd.as_raw_fd(), data, flags)
}

#[cfg(unix)]
/// Writes to a pipe that retry shares with others (its stdout or stderr) without
/// setting O_NONBLOCK on it, which would change it for every process sharing the
/// pipe, and without ever blocking for long: Linux writes through a second,
/// non-blocking open of the pipe (`/proc/self/fd/N`); other systems, whose
/// `/dev/fd/N` is the same open file, hand each chunk to a thread of the pipe's own
/// that makes the blocking write while the caller waits in `poll`.
pub struct PipeWriter(os::PipeWriter);

#[cfg(unix)]
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
    family::host_name()
}

/// The major and minor numbers of the device `dev` (as [`identity`] gives it; on
/// Windows the volume's serial number and 0).
pub fn device_numbers(dev: u64) -> (u64, u64) {
    os::device_numbers(dev)
}

#[cfg(unix)]
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

/// Reads into `buf` from `offset` of `file`, leaving the file's own position as it is
/// where the system can (`pread`; Windows moves it, which no caller relies on).
pub fn read_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    family::read_at(file, buf, offset)
}

/// Writes all of `buf` at `offset` of `file`.
pub fn write_all_at(file: &std::fs::File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    family::write_all_at(file, buf, offset)
}

/// A file's permission bits (`mode & 0o7777`); `None` where the system has none
/// (Windows: an ACL, not a mode).
pub fn file_mode(meta: &std::fs::Metadata) -> Option<u32> {
    family::file_mode(meta)
}

/// Whether a file readable by others than its owner is what it looks like: true when
/// the system keeps a mode and it gives group or others any access.
pub fn open_to_others(meta: &std::fs::Metadata) -> bool {
    file_mode(meta).is_some_and(|mode| mode & 0o077 != 0)
}

/// The user's login name as the system keeps it (`/etc/passwd` for this uid on Unix,
/// `USERNAME` on Windows); `None` when it cannot be found.
pub fn login_name() -> Option<String> {
    family::login_name()
}

/// libpq's password file when `PGPASSFILE` is unset (`~/.pgpass`;
/// `%APPDATA%\postgresql\pgpass.conf` on Windows).
pub fn pgpass_file() -> Option<std::path::PathBuf> {
    family::pgpass_file()
}

/// Sets a file's permission bits (Windows keeps only whether it is read-only: a mode
/// without any write bit makes it so).
pub fn set_file_mode(path: &std::path::Path, mode: u32) -> std::io::Result<()> {
    family::set_file_mode(path, mode)
}

/// Makes a rename in `dir` durable (fsync of the directory; Windows has no such call
/// through std, and its renames are journaled by NTFS: a no-op there).
pub fn sync_dir(dir: &std::path::Path) -> std::io::Result<()> {
    family::sync_dir(dir)
}

/// Checks that a device or FIFO at `path` can be written in place, without blocking.
pub fn check_writable_in_place(path: &std::path::Path) -> std::io::Result<()> {
    family::check_writable_in_place(path)
}

/// What names a file for good: its device and inode (a volume's serial number and the
/// file's index on Windows).
pub fn identity(file: &std::fs::File) -> std::io::Result<(u64, u64)> {
    family::identity(file)
}

/// [`identity`] of the file `path` names.
pub fn path_identity(path: &std::path::Path) -> std::io::Result<(u64, u64)> {
    family::path_identity(path)
}

/// How many names (hard links) the file has.
pub fn link_count(file: &std::fs::File) -> std::io::Result<u64> {
    family::link_count(file)
}

/// Stamps the file's modification time now and reads it back, in milliseconds since
/// the epoch: the clock of the machine that holds the file where the system can do that
/// (`futimens` with `UTIME_NOW`), this machine's on Windows.
pub fn stamp_now_ms(file: &std::fs::File) -> std::io::Result<u64> {
    family::stamp_now_ms(file)
}

/// An advisory lock on the whole file without waiting (`flock`; `LockFileEx` on
/// Windows): the file back when another open file holds one that conflicts. It is
/// released when the [`Locked`] is dropped, or when the process dies.
pub fn try_lock(
    file: std::fs::File,
    exclusive: bool,
) -> std::io::Result<Result<Locked, std::fs::File>> {
    family::try_lock(file, exclusive)
}

/// The signal `text` names, as kill(1) and timeout(1) take it (`TERM`, `SIGTERM`, `term`,
/// or a number); `None` when this system has no such signal to send.
pub fn parse_signal(text: &str) -> Option<Signal> {
    let trimmed = text.trim();
    if let Ok(number) = trimmed.parse::<i32>() {
        return family::signal_by_number(number);
    }
    let upper = trimmed.to_ascii_uppercase();
    match upper.starts_with("SIG") {
        true => family::signal_by_name(&upper),
        false => family::signal_by_name(&format!("SIG{upper}")),
    }
}

/// The system's name for the signal numbered `number` (`SIGTERM`), if it has one.
pub fn signal_name(number: i32) -> Option<&'static str> {
    family::signal_by_number(number).map(Signal::as_str)
}

/// The log stream a crontab's slot run was handed (`--slot-log-fd`), kept from the
/// run's command; `None` when it is not open.
pub fn adopt_log(token: i64) -> Option<std::fs::File> {
    family::adopt_log(token)
}

/// Starts `command` in a process group of its own (see [`ask_to_end`]).
pub fn own_process_group(command: &mut std::process::Command) {
    family::own_process_group(command);
}

/// Asks a process started with [`own_process_group`] to end: SIGTERM, or Ctrl-Break to
/// its group on Windows.
pub fn ask_to_end(pid: u32) -> std::io::Result<()> {
    family::ask_to_end(pid)
}

/// Opens a directory read-only, to lock it.
pub fn open_directory(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    family::open_directory(path)
}

#[cfg(test)]
/// An argument made of `bytes`, which need not be text (as a test gives one).
pub fn os_string_from_bytes(bytes: &[u8]) -> std::ffi::OsString {
    family::os_string_from_bytes(bytes)
}

/// How a file in a [`Dir`] is opened: never through a link, and (but for
/// `NewWriteOnly`) without blocking on a FIFO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileAccess {
    Read,
    /// Read and write, created (mode 0600) if missing.
    Update,
    /// Read and write, a new file (mode 0600) that must not exist yet.
    New,
    /// Write only, a new file (mode 0600) that must not exist yet.
    NewWriteOnly,
}

/// What an entry of a [`Dir`] is, a link not followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub kind: EntryKind,
    /// Its device and inode (see [`identity`]).
    pub identity: (u64, u64),
    pub modified: Option<std::time::SystemTime>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Link,
    Other,
}

/// Whether an open through a [`Dir`] failed because it met a link it does not follow.
pub fn is_link_refusal(error: &std::io::Error) -> bool {
    family::is_link_refusal(error)
}

/// A file's owner (its uid); `None` where the system keeps an ACL instead (Windows).
pub fn owner(meta: &std::fs::Metadata) -> Option<u32> {
    family::owner(meta)
}

/// The user running retry (its effective uid); `None` on Windows.
pub fn user_id() -> Option<u32> {
    family::user_id()
}

/// Makes `path` and its missing parents, each new one private to this user (mode 0700;
/// on Windows, the parent's inherited ACL).
pub fn create_private_dirs(path: &std::path::Path) -> std::io::Result<()> {
    family::create_private_dirs(path)
}

/// Makes `link` a symbolic link to `target` (a test's planted link; Windows asks for
/// the right to make one).
#[cfg(test)]
pub fn symlink(target: &std::path::Path, link: &std::path::Path) -> std::io::Result<()> {
    family::symlink(target, link)
}

/// Makes a FIFO at `path` (mode 0600).
#[cfg(all(test, unix))]
pub fn make_fifo(path: &std::path::Path) -> std::io::Result<()> {
    family::make_fifo(path)
}

/// Opens the null device on any of the standard streams that is closed (the lowest free
/// descriptor is the closed one, inherited by commands as their own); whether stdout
/// was closed. Windows leaves a missing handle missing (std writes nothing there).
pub fn open_standard_streams() -> bool {
    family::open_standard_streams()
}

/// Has a write to a closed pipe fail with EPIPE rather than kill retry (SIGPIPE
/// ignored; Windows has no SIGPIPE). Call it before other threads exist.
pub fn ignore_sigpipe() {
    family::ignore_sigpipe();
}
