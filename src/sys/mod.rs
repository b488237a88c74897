//! What the operating system gives, in one place: the processes there are, becoming a
//! reaper of orphaned descendants and the parent-death signal, starting a command in a
//! group of its own and ending that group, signals, close-on-exec pipes, writes to a pipe
//! shared with others that never block for long, locks, the host name, device numbers,
//! the umask, a clock that counts a suspended machine, and how the C library looks up
//! host names. Nothing else in the crate names a system. Which guarantee rests on what is
//! the caller's to say: this module imports nothing of the crate.
//!
//! This file is a selection and a contract. The selection, in one place below, takes a
//! *family* of systems, a folder with a file per concern: `posix/` on every Unix,
//! `windows/` on Windows. Within the family it takes the *system*, which says what one
//! system adds to its family or does in its place: `linux.rs`, `freebsd.rs` or `macos.rs`,
//! and `windows/` again on Windows. A system it does not list does not compile. The
//! contract is the rest of the file: the names the crate uses, the same on every system,
//! each taken from the family or the system by name, so that a family that lacks one does
//! not compile; what differs between systems is said in each name's docs.
//!
//! Every family exports, at its root:
//!
//! - starting a command: `Started`, `new_command`, `start`, `start_tied`, `SHELL`,
//!   `SHELL_LINES`, `NO_PROCESSES`, `NO_MEMORY`;
//! - an attempt's group: `GROUP_HOLDS_TREE`, `CONTINUE`, `signal_group`,
//!   `signal_process`, `passed_on`, `release_group`, `reap`;
//! - a child: `try_wait`, `pause_for_child`, `stop_in_turn`, `reap_any`;
//! - signals: `Signal`, `SIGNALS_ACCEPTED`, `signal_by_number`, `signal_by_name`; in its
//!   module `signals`: `catch`, `wait_for_wake`, `wake`, `CHILD_SIGNAL`,
//!   `RELOAD_SIGNALS`, `inherited_ignored`, `record_inherited`;
//! - streams and pipes: `Fd`, `Owned`, `borrow`, `std_stream`, `stream_kind`,
//!   `is_null_device`, `position`, `seek_to`, `read`, `pipe_pair`, `feed_pipe`,
//!   `write_or_cancel`, `open_standard_streams`, `ignore_sigpipe`;
//! - waiting for a pipe: `Cancel`, `wait_readable`, `wait_readable_or_reader_gone`,
//!   `Inbox`;
//! - retry's output: `StdOutput`;
//! - the terminal: `in_terminal_foreground`, `reclaim_terminal`, `ignore_sigttou`,
//!   `reader_gone`;
//! - a scheduler's slot run: `tie_to_parent`, `report_channel`, `reader_left`,
//!   `hang_up_self`, `REPLACE_SIGNAL`, `LogCopy`, `adopt_log`;
//! - directories: `Dir`, `is_link_refusal`, `open_directory`, `create_private_dirs`,
//!   `make_private_dir`, `private_dir_permissions`, `open_unfollowed`,
//!   `open_nonblocking`, `describe_kind`;
//! - files: `read_at`, `write_all_at`, `file_mode`, `set_file_mode`, `sync_dir`,
//!   `check_writable_in_place`, `identity`, `path_identity`, `link_count`,
//!   `stamp_now_ms`, `umask`;
//! - locks: `Locked`, `try_lock`;
//! - the user and the machine: `owner`, `user_id`, `login_name`, `user_state_dir`,
//!   `USER_STATE_DIR_UNSET`, `pgpass_file`, `host_name`, `is_executable`, `arg_max`,
//!   `suspend_aware_now`, `AI_ADDRCONFIG`, `AI_V4MAPPED`, `SOCK_STREAM`;
//! - for tests: `exit_signal`, `own_process_group`, `os_string_from_bytes`, `symlink`.
//!
//! Every system exports `processes`, `started`, `children`, `become_subreaper`,
//! `PARENT_DEATH_SIGNAL`, `device_numbers` and `configure_name_lookup`. For Unix's own
//! tests, `posix/` exports besides `PipeMode`, `pipe` and `make_fifo`. The types every
//! family speaks in are this file's own: `Process`, `ChildState`, `StreamKind`, `Ready`,
//! `Delivery`, `FileAccess`, `Entry` and `EntryKind`, and the flags a caught signal sets
//! (`raised`).
//!
//! The `portable-paths` feature makes a Linux build take `posix/`'s way wherever
//! Linux has both (pipe then fcntl, the writer thread, no subreaper, no parent-death
//! signal), so that CI runs those paths; it is for testing, not for a release.

use std::io;

// The selection: the family, then the system within it. Nothing below names a system.
#[cfg(unix)]
mod posix;
#[cfg(unix)]
use posix as family;
#[cfg(target_os = "linux")]
#[path = "linux.rs"]
mod os;
#[cfg(target_os = "freebsd")]
#[path = "freebsd.rs"]
mod os;
#[cfg(target_os = "macos")]
#[path = "macos.rs"]
mod os;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as family;
#[cfg(windows)]
use windows as os;
#[cfg(not(any(
    target_os = "linux",
    target_os = "freebsd",
    target_os = "macos",
    windows
)))]
compile_error!(
    "retry runs on Linux, FreeBSD, macOS and Windows: src/sys has no way for this system"
);
/// For tests: the signal that ended a process (Windows ends processes by exit code
/// only), a process group of its own, an argument that is no text, a symbolic link (on
/// Windows, the right to make one is needed).
#[cfg(test)]
pub use family::{exit_signal, os_string_from_bytes, own_process_group, symlink};
/// For Unix's own tests: a pipe whose ends are close-on-exec from the start, blocking or
/// not, and a FIFO at a path (mode 0600).
#[cfg(all(test, unix))]
pub use posix::{PipeMode, make_fifo, pipe};

// The processes there are, and what becomes of them when retry dies.

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
/// init, of kind `Unsupported` where the system has no such thing (macOS; Windows, where
/// an attempt's Job Object holds its orphans instead).
pub fn become_subreaper() -> io::Result<()> {
    os::become_subreaper()
}

/// Whether a command ends when retry is killed outright: the parent-death signal
/// (Linux `PR_SET_PDEATHSIG`, FreeBSD `PROC_PDEATHSIG_CTL`; macOS has none), or on
/// Windows the attempt's Job Object, which ends its processes when retry's handle to it
/// closes.
pub const PARENT_DEATH_SIGNAL: bool = os::PARENT_DEATH_SIGNAL;

// Starting a command.

/// A command of a program and its arguments (on Windows, a line for `cmd /c` as it is
/// written), and starting it in a group of its own (on Windows, suspended into a Job
/// Object, then resumed); a scheduler's slot run started so and tied to retry's life (on
/// Unix by the parent-death signal it sets, on Windows by a Job Object).
pub use family::{Started, new_command, start, start_tied};

/// The `raw_os_error`s of a start that ran out of processes (EAGAIN) or memory (ENOMEM).
pub use family::{NO_MEMORY, NO_PROCESSES};

/// The shell that runs a command line of the user's (a hook, a crontab line, as cron
/// runs one) and the flag that hands it the line: `/bin/sh -c`, on Windows `cmd /c`.
pub const SHELL: [&str; 2] = family::SHELL;

/// Whether a crontab's `SHELL=` may choose the shell of its lines (Windows runs each
/// with `cmd /c`).
pub const SHELL_LINES: bool = family::SHELL_LINES;

// An attempt's group.

/// Ending an attempt's processes: its group (on Windows its Job Object), what left the
/// group, the signal passed on for retry's own, and an exited child reaped.
pub use family::{
    CONTINUE, GROUP_HOLDS_TREE, passed_on, reap, release_group, signal_group, signal_process,
};

// A child.

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

/// A look at a child without blocking, and the wait between two looks.
pub use family::{pause_for_child, stop_in_turn, try_wait};

/// A child that has exited, reaped without waiting, whichever it is (orphans adopted by
/// retry too); Windows keeps no zombies, so none there.
pub use family::reap_any;

// Signals.

/// The system's signal, and what `--signal` takes, for its refusal.
pub use family::{SIGNALS_ACCEPTED, Signal};

/// How signals are caught and waited for: a self-pipe on Unix, an event set by the
/// console control handler on Windows.
pub use family::signals::{
    CHILD_SIGNAL, RELOAD_SIGNALS, catch as catch_signals, inherited_ignored,
    record_inherited as record_inherited_signals, wait_for_wake, wake,
};

/// Set for each signal number (1 to 64) caught since its flag was last taken.
static RAISED: [std::sync::atomic::AtomicBool; 65] =
    [const { std::sync::atomic::AtomicBool::new(false) }; 65];

/// The flag a caught signal numbered `number` sets (async-signal-safe: an atomic).
pub fn raised(number: i32) -> Option<&'static std::sync::atomic::AtomicBool> {
    usize::try_from(number).ok().and_then(|n| RAISED.get(n))
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

/// The signal numbered `number` on this system, if it has one.
pub fn signal_by_number(number: i32) -> Option<Signal> {
    family::signal_by_number(number)
}

/// The system's name for the signal numbered `number` (`SIGTERM`), if it has one.
pub fn signal_name(number: i32) -> Option<&'static str> {
    family::signal_by_number(number).map(Signal::as_str)
}

// Streams and pipes.

/// A descriptor (a handle on Windows) borrowed for a call, and one owned; a file's,
/// borrowed; retry's own stdin, stdout or stderr (0, 1 or 2), borrowed for the process's
/// life.
pub use family::{Fd, Owned, borrow, std_stream};

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

/// What a stream is (and whether it is the null device), where a file stands, reads,
/// and the pipe a command's stdin is fed through, with the writes to it that a cancel
/// ends.
pub use family::{
    feed_pipe, is_null_device, position, read, seek_to, stream_kind, write_or_cancel,
};

/// A blocking pipe, read end first, that no process started later inherits: a child
/// gets an end only as its stdin, stdout or stderr.
pub fn pipe_pair() -> io::Result<(Owned, Owned)> {
    family::pipe_pair()
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

// Waiting for a pipe.

/// What a wait for a pipe's bytes ended on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ready {
    Readable,
    Cancelled,
    /// The reader of the output watched beside it has gone.
    #[cfg_attr(windows, allow(dead_code))] // Windows sees no reader go (`reader_gone`)
    ReaderGone,
}

/// A cancel for a thread blocked on a pipe, and the wait for a pipe's bytes it ends
/// (watching, if asked, for the reader of retry's own output to go).
pub use family::{Cancel, wait_readable, wait_readable_or_reader_gone};

/// Many pipes read by one thread, with the wake-up (a signal, another thread's
/// [`wake`]): one `poll` on Unix, a reader thread per pipe on Windows.
pub use family::Inbox;

/// What a pipe sent: bytes, or its end (the pipe is closed and forgotten then).
#[derive(Debug, PartialEq, Eq)]
pub enum Delivery {
    Bytes(Vec<u8>),
    End,
}

// retry's output.

/// retry's stdout or stderr, written so that a stalled reader cannot hang it.
pub use family::StdOutput;

// The terminal.

/// The terminal's foreground (a console has none), and a reader gone from retry's output.
pub use family::{ignore_sigttou, in_terminal_foreground, reader_gone, reclaim_terminal};

// A scheduler's slot run.

/// A scheduler's slot run, tied to its scheduler: SIGHUP when the scheduler dies, where
/// the system can (on Windows the scheduler's Job Object ends the slot run instead).
pub fn tie_to_parent() -> io::Result<()> {
    family::tie_to_parent()
}

/// The pipe a scheduler's slot run was handed as its stdin to report on (`None` when
/// stdin is no pipe: a slot run started by hand).
pub fn report_channel() -> Option<std::fs::File> {
    family::report_channel()
}

/// Whether the reader of `channel` has gone (its scheduler died): where the system
/// has no parent-death signal, the slot run's way to know.
pub fn reader_left(channel: &std::fs::File) -> bool {
    family::reader_left(channel)
}

/// Stops this process as its scheduler's death would (SIGHUP; nothing on Windows,
/// whose Job Object has ended it already).
pub fn hang_up_self() {
    family::hang_up_self();
}

/// The signal (its number) a scheduler sends a slot's run that a new slot replaces;
/// none on Windows, where the store tells it.
pub use family::REPLACE_SIGNAL;

/// The copy of retry's stderr that a crontab's slot runs write their own lines to.
pub use family::LogCopy;

/// The log stream a crontab's slot run was handed (`--slot-log-fd`), kept from the
/// run's command; `None` when it is not open.
pub fn adopt_log(token: i64) -> Option<std::fs::File> {
    family::adopt_log(token)
}

// Directories.

/// A directory held open (on Windows, by its path), each entry reached through it and
/// never through a symbolic link.
pub use family::Dir;

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

/// Opens a directory read-only, to lock it.
pub fn open_directory(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    family::open_directory(path)
}

/// Makes `path` and its missing parents, each new one private to this user (mode 0700;
/// on Windows, the parent's inherited ACL).
pub fn create_private_dirs(path: &std::path::Path) -> std::io::Result<()> {
    family::create_private_dirs(path)
}

/// A private directory for `RETRY_CONTROL` (mode 0700; refused on Windows, which keeps
/// an ACL instead), and what the command left there opened without blocking or
/// following a link.
pub use family::{
    describe_kind, make_private_dir, open_nonblocking, open_unfollowed, private_dir_permissions,
};

// Files.

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

/// The major and minor numbers of the device `dev` (as [`identity`] gives it; on
/// Windows the volume's serial number and 0).
pub fn device_numbers(dev: u64) -> (u64, u64) {
    os::device_numbers(dev)
}

/// The process umask, read by setting it and setting it back: call it before other
/// threads create files (Windows has none: 0).
pub fn umask() -> u32 {
    family::umask()
}

// Locks.

/// An advisory lock held on a file until it is dropped.
pub use family::Locked;

/// An advisory lock on the whole file without waiting (`flock`; `LockFileEx` on
/// Windows): the file back when another open file holds one that conflicts. It is
/// released when the [`Locked`] is dropped, or when the process dies.
pub fn try_lock(
    file: std::fs::File,
    exclusive: bool,
) -> std::io::Result<Result<Locked, std::fs::File>> {
    family::try_lock(file, exclusive)
}

// The user and the machine.

/// A file's owner (its uid); `None` where the system keeps an ACL instead (Windows).
pub fn owner(meta: &std::fs::Metadata) -> Option<u32> {
    family::owner(meta)
}

/// The user running retry (its effective uid); `None` on Windows.
pub fn user_id() -> Option<u32> {
    family::user_id()
}

/// The user's login name as the system keeps it (`/etc/passwd` for this uid on Unix,
/// `USERNAME` on Windows); `None` when it cannot be found.
pub fn login_name() -> Option<String> {
    family::login_name()
}

/// Where per-user state lives (`$XDG_STATE_HOME`, else `~/.local/state`; on Windows
/// `%LOCALAPPDATA%`), and what is wrong when it cannot be told.
pub use family::{USER_STATE_DIR_UNSET, user_state_dir};

/// libpq's password file when `PGPASSFILE` is unset (`~/.pgpass`;
/// `%APPDATA%\postgresql\pgpass.conf` on Windows).
pub fn pgpass_file() -> Option<std::path::PathBuf> {
    family::pgpass_file()
}

/// This machine's name.
pub fn host_name() -> Option<String> {
    family::host_name()
}

/// Whether `path` is a file this user may run.
pub fn is_executable(path: &std::path::Path) -> bool {
    family::is_executable(path)
}

/// How many bytes of arguments and environment a program may be started with.
pub fn arg_max() -> usize {
    family::arg_max()
}

/// A monotonic time (from an arbitrary start) that goes on while this process is
/// stopped (SIGSTOP) and, where the system has such a clock (Linux `CLOCK_BOOTTIME`),
/// while the machine is suspended, which `Instant` does not count on Linux.
/// (Windows: `GetTickCount64`, which counts a suspended machine, in milliseconds.)
pub fn suspend_aware_now() -> std::time::Duration {
    family::suspend_aware_now()
}

/// `getaddrinfo`'s stream sockets and the flags `getent ahosts` asks with, as the
/// system numbers them.
pub use family::{AI_ADDRCONFIG, AI_V4MAPPED, SOCK_STREAM};

/// Has the C library answer host names from /etc/hosts and then DNS, whatever its
/// configuration names (glibc's NSS `hosts` database: no module is loaded, which a
/// static glibc cannot do); elsewhere the system's own resolver is used as it is set.
pub fn configure_name_lookup() {
    os::configure_name_lookup();
}
