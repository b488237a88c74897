//! What a system does without Linux's facilities, in plain POSIX: a pipe made close-on-exec
//! in a second step, under a lock that every spawn takes, a writer thread for a shared
//! pipe (`posix/writer.rs`), the children of a process found in the process list, and no
//! subreaper or parent-death signal.
//!
//! Which system takes what, and so where each item is compiled:
//!
//! | item | Linux | Linux, `portable-paths` | FreeBSD | macOS |
//! |---|---|---|---|---|
//! | the fork lock | yes | yes | yes | yes |
//! | `pipe2` | yes | | yes | |
//! | a pipe in two steps | | yes | | yes |
//! | children from the process list | where `/proc/self/task/*/children` is missing | yes | yes | |
//! | no subreaper, no parent-death signal | | yes | | yes |
//! | the writer thread | | yes | yes | yes |
//!
//! The two-step pipe and the writer thread are compiled for unit tests everywhere.

use std::io;
use std::os::fd::OwnedFd;
use std::sync::{RwLock, RwLockWriteGuard};

mod cancel;
mod child;
mod dir;
mod group;
mod inbox;
mod output;
mod private;
pub mod signals;
mod spawn;
mod stream;
mod terminal;
#[cfg(any(test, not(target_os = "linux"), feature = "portable-paths"))]
mod writer;
pub use cancel::{Cancel, wait_readable, wait_readable_or_reader_gone};
pub use child::{pause_for_child, reap_any, stop_in_turn, try_wait};
pub use dir::{Dir, create_private_dirs, is_link_refusal, owner, user_id};
#[cfg(test)]
pub use group::exit_signal;
pub use group::{
    CONTINUE, GROUP_HOLDS_TREE, passed_on, reap, release_group, signal_group, signal_process,
};
pub use inbox::Inbox;
/// `raw_os_error`s of a process that could not be started for want of resources.
pub use nix::libc::{EAGAIN as NO_PROCESSES, ENOMEM as NO_MEMORY};
pub use output::StdOutput;
pub use private::{
    describe_kind, make_private_dir, open_nonblocking, open_unfollowed, private_dir_permissions,
};
pub use spawn::{SHELL, SHELL_LINES, Started, new_command, start, start_tied};
pub use stream::{
    Fd, Owned, borrow, feed_pipe, is_null_device, open_standard_streams, position, read, seek_to,
    std_stream, stream_kind, write_or_cancel,
};
pub use terminal::{ignore_sigttou, in_terminal_foreground, reader_gone, reclaim_terminal};
#[cfg(any(not(target_os = "linux"), feature = "portable-paths"))]
pub use writer::PipeWriter;

/// `getaddrinfo`'s stream sockets and the flags `getent ahosts` asks with.
pub use nix::libc::{AI_ADDRCONFIG, AI_V4MAPPED, SOCK_STREAM};

/// Taken shared while a descriptor is made in two steps, and exclusively across a
/// spawn: a fork never sees a descriptor that is not yet close-on-exec.
static FORK: RwLock<()> = RwLock::new(());

/// Held across a spawn (see [`fork_guard`]).
pub struct ForkGuard {
    _held: RwLockWriteGuard<'static, ()>,
}

/// Holds off every descriptor that is made in two steps (where there is no `pipe2`)
/// until it is dropped: a process forked meanwhile, as std's `Command` forks, cannot
/// inherit a descriptor before it is close-on-exec. Held across each spawn.
pub fn fork_guard() -> ForkGuard {
    ForkGuard {
        _held: FORK.write().unwrap_or_else(|p| p.into_inner()),
    }
}

/// Whether a new pipe's ends block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipeMode {
    Blocking,
    /// Both ends are O_NONBLOCK.
    Nonblocking,
}

/// A pipe, read end first, both ends close-on-exec from the start: no process retry
/// starts inherits them (in one step where the system has `pipe2`).
pub fn pipe(mode: PipeMode) -> io::Result<(OwnedFd, OwnedFd)> {
    super::os::pipe(mode)
}

/// `pipe2`: both ends made close-on-exec (and non-blocking) with the pipe.
#[cfg(any(
    target_os = "freebsd",
    all(target_os = "linux", not(feature = "portable-paths"))
))]
pub fn pipe_in_one_step(mode: PipeMode) -> io::Result<(OwnedFd, OwnedFd)> {
    use nix::fcntl::OFlag;
    let flags = match mode {
        PipeMode::Blocking => OFlag::O_CLOEXEC,
        PipeMode::Nonblocking => OFlag::O_CLOEXEC | OFlag::O_NONBLOCK,
    };
    Ok(nix::unistd::pipe2(flags)?)
}

/// `pipe`, then FD_CLOEXEC (and O_NONBLOCK) on each end, with no fork in between.
#[cfg(any(test, target_os = "macos", feature = "portable-paths"))]
pub fn pipe_in_two_steps(mode: PipeMode) -> io::Result<(OwnedFd, OwnedFd)> {
    use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
    let _two_steps = FORK.read().unwrap_or_else(|p| p.into_inner());
    let (read_end, write_end) = nix::unistd::pipe()?;
    for end in [&read_end, &write_end] {
        fcntl(end, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
        if mode == PipeMode::Nonblocking {
            let flags = OFlag::from_bits_truncate(fcntl(end, FcntlArg::F_GETFL)?);
            fcntl(end, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
        }
    }
    Ok((read_end, write_end))
}

/// retry's children, from the list of every process.
#[cfg(not(target_os = "macos"))]
pub fn children() -> Vec<i32> {
    let me = nix::unistd::getpid().as_raw();
    let all = super::processes().unwrap_or_default();
    all.iter().filter(|p| p.ppid == me).map(|p| p.pid).collect()
}

/// Where there is no subreaper and no parent-death signal.
#[cfg(any(target_os = "macos", feature = "portable-paths"))]
mod orphans {
    use std::io;

    use nix::sys::signal::Signal;

    pub fn become_subreaper() -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "the system has none",
        ))
    }

    /// No parent-death signal here.
    pub const PARENT_DEATH_SIGNAL: bool = false;

    pub fn set_parent_death_signal(_sig: Signal) -> io::Result<()> {
        Ok(())
    }
}
#[cfg(any(target_os = "macos", feature = "portable-paths"))]
pub use orphans::{PARENT_DEATH_SIGNAL, become_subreaper, set_parent_death_signal};

/// `pread`: the file's position is left alone.
pub fn read_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

/// `pwrite` until all of `buf` is written.
pub fn write_all_at(file: &std::fs::File, buf: &[u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, buf, offset)
}

/// The process umask, read by setting it and setting it back.
#[allow(clippy::useless_conversion)] // mode_t is 16 bits on the BSDs
pub fn umask() -> u32 {
    use nix::sys::stat::{Mode, umask};
    let old = umask(Mode::from_bits_truncate(0o022));
    umask(old);
    u32::from(old.bits())
}

pub fn file_mode(meta: &std::fs::Metadata) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    Some(meta.permissions().mode() & 0o7777)
}

/// SIGHUP when the parent dies (a no-op where the system has no parent-death signal).
pub fn tie_to_parent() -> io::Result<()> {
    super::os::set_parent_death_signal(Signal::SIGHUP)
}

/// A copy of stdin, when it is a pipe.
pub fn report_channel() -> Option<std::fs::File> {
    use std::os::fd::AsFd;
    let stdin = crate::sys::std_stream(0);
    if stream::stream_kind(stdin) != Some(crate::sys::StreamKind::Pipe) {
        return None;
    }
    stdin
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .map(std::fs::File::from)
}

/// Whether the pipe `channel` writes to has no reader left (POLLERR).
pub fn reader_left(channel: &std::fs::File) -> bool {
    use std::os::fd::AsFd;
    terminal::reader_gone(channel.as_fd())
}

/// SIGHUP to this process.
pub fn hang_up_self() {
    let _ = nix::sys::signal::raise(Signal::SIGHUP);
}

/// The signal (its number) a scheduler sends a slot's run that a new slot replaces.
pub const REPLACE_SIGNAL: Option<i32> = Some(nix::libc::SIGUSR1);

/// A blocking pipe, both ends close-on-exec from the start.
pub fn pipe_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    pipe(PipeMode::Blocking)
}

/// Whether `path` is a regular file this user may execute (`access(2)` with `X_OK`).
pub fn is_executable(path: &std::path::Path) -> bool {
    path.is_file() && nix::unistd::access(path, nix::unistd::AccessFlags::X_OK).is_ok()
}

/// `sysconf(_SC_ARG_MAX)`, or POSIX's smallest allowed value when it says nothing.
pub fn arg_max() -> usize {
    let known = nix::unistd::sysconf(nix::unistd::SysconfVar::ARG_MAX)
        .ok()
        .flatten();
    known.and_then(|n| usize::try_from(n).ok()).unwrap_or(4096)
}

pub fn host_name() -> Option<String> {
    let name = nix::unistd::gethostname().ok()?;
    Some(name.to_string_lossy().into_owned())
}

/// The name /etc/passwd gives this uid, read from the file rather than through the C
/// library, so users that only LDAP or sssd know have none here.
pub fn login_name() -> Option<String> {
    let uid = nix::unistd::getuid().as_raw().to_string();
    let text = std::fs::read_to_string("/etc/passwd").ok()?;
    text.lines()
        .map(|line| line.split(':').collect::<Vec<_>>())
        .find(|fields| fields.len() >= 3 && fields[2] == uid)
        .map(|fields| fields[0].to_string())
}

pub fn set_file_mode(path: &std::path::Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// fsync of the directory, which makes a rename in it durable.
pub fn sync_dir(dir: &std::path::Path) -> io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// Opens a device or FIFO for writing without blocking; a FIFO that nobody reads yet
/// (ENXIO) passes: its reader may come by the end of the run.
pub fn check_writable_in_place(path: &std::path::Path) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path);
    match opened {
        Err(e) if e.raw_os_error() == Some(nix::libc::ENXIO) => Ok(()),
        opened => opened.map(drop),
    }
}

/// A file's device and inode.
pub fn identity(file: &std::fs::File) -> io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata()?;
    Ok((meta.dev(), meta.ino()))
}

/// The device and inode of the file `path` names (followed if a link).
pub fn path_identity(path: &std::path::Path) -> io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path)?;
    Ok((meta.dev(), meta.ino()))
}

/// How many names the file has.
pub fn link_count(file: &std::fs::File) -> io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    Ok(file.metadata()?.nlink())
}

/// Has the file system stamp the file's modification time now (`futimens` with
/// `UTIME_NOW`: the clock of the machine that holds the file) and reads it back, in
/// milliseconds since the epoch.
pub fn stamp_now_ms(file: &std::fs::File) -> io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let now = nix::sys::time::TimeSpec::UTIME_NOW;
    nix::sys::stat::futimens(file, &now, &now)?;
    let meta = file.metadata()?;
    let secs = u64::try_from(meta.mtime()).unwrap_or(0);
    let millis = u64::try_from(meta.mtime_nsec()).unwrap_or(0) / 1_000_000;
    Ok(secs.saturating_mul(1000).saturating_add(millis))
}

/// An flock held on a file until it is dropped.
pub struct Locked(nix::fcntl::Flock<std::fs::File>);

/// `flock` without waiting: the file back when another open file holds a conflicting lock.
pub fn try_lock(file: std::fs::File, exclusive: bool) -> io::Result<Result<Locked, std::fs::File>> {
    use nix::fcntl::{Flock, FlockArg};
    let arg = match exclusive {
        true => FlockArg::LockExclusiveNonblock,
        false => FlockArg::LockSharedNonblock,
    };
    match Flock::lock(file, arg) {
        Ok(held) => Ok(Ok(Locked(held))),
        Err((file, nix::errno::Errno::EWOULDBLOCK)) => Ok(Err(file)),
        Err((_, errno)) => Err(errno.into()),
    }
}

impl std::ops::Deref for Locked {
    type Target = std::fs::File;

    fn deref(&self) -> &std::fs::File {
        &self.0
    }
}

/// The user's state directory: `$XDG_STATE_HOME`, else `~/.local/state`, each only
/// when absolute.
pub fn user_state_dir() -> Option<std::path::PathBuf> {
    let absolute = |var: &str| {
        std::env::var_os(var)
            .map(std::path::PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    absolute("XDG_STATE_HOME").or_else(|| absolute("HOME").map(|h| h.join(".local/state")))
}

pub const USER_STATE_DIR_UNSET: &str = "neither XDG_STATE_HOME nor HOME is set to an absolute path";

/// libpq's password file when `PGPASSFILE` is unset: `~/.pgpass`.
pub fn pgpass_file() -> Option<std::path::PathBuf> {
    std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".pgpass"))
}

/// The system's signal, as nix names it.
pub use nix::sys::signal::Signal;

/// What `--signal` takes, for its refusal.
pub const SIGNALS_ACCEPTED: &str =
    "a name such as TERM, INT, HUP or KILL (with or without SIG) or a number such as 15";

/// The signal numbered `number` on this system.
pub fn signal_by_number(number: i32) -> Option<Signal> {
    Signal::try_from(number).ok()
}

/// The signal named `name` (`SIGTERM`) on this system.
pub fn signal_by_name(name: &str) -> Option<Signal> {
    name.parse().ok()
}

/// The stream retry's own lines go to in a crontab's slot run: a copy of the scheduler's
/// stderr above the standard descriptors, left open across exec for the slot runs.
pub struct LogCopy(OwnedFd);

impl LogCopy {
    /// Copies stderr.
    pub fn of_stderr() -> io::Result<LogCopy> {
        use std::os::fd::FromRawFd;
        // SAFETY: F_DUPFD returns a new descriptor this process then owns.
        let fd = unsafe { nix::libc::fcntl(2, nix::libc::F_DUPFD, 10) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just made and nothing else owns it.
        Ok(LogCopy(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// How a slot run is told of it (`--slot-log-fd`): the descriptor's number.
    pub fn token(&self) -> i64 {
        use std::os::fd::AsRawFd;
        i64::from(self.0.as_raw_fd())
    }
}

/// The log stream a slot run was handed (`--slot-log-fd`), made close-on-exec at once so
/// that its command does not get it; `None` when it is not open.
pub fn adopt_log(token: i64) -> Option<std::fs::File> {
    use nix::fcntl::{FcntlArg, FdFlag, fcntl};
    use std::os::fd::{BorrowedFd, FromRawFd};
    let raw = i32::try_from(token).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: only asked about and marked close-on-exec before it is taken over.
    let fd = unsafe { BorrowedFd::borrow_raw(raw) };
    fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).ok()?;
    // SAFETY: the descriptor was handed over for this process to write to for its life.
    Some(unsafe { std::fs::File::from_raw_fd(raw) })
}

#[cfg(test)]
/// Starts the command in a process group of its own.
pub fn own_process_group(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    command.process_group(0);
}

/// Opens a directory to lock it, read-only, as flock(1) does.
pub fn open_directory(path: &std::path::Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_DIRECTORY)
        .open(path)
}

#[cfg(test)]
/// An argument of these bytes, which need not be text.
pub fn os_string_from_bytes(bytes: &[u8]) -> std::ffi::OsString {
    use std::os::unix::ffi::OsStringExt;
    std::ffi::OsString::from_vec(bytes.to_vec())
}

/// See [`sys::suspend_aware_now`](crate::sys::suspend_aware_now).
pub fn suspend_aware_now() -> std::time::Duration {
    let mut ts = nix::libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into a live one; it cannot fail for a
    // clock the system defines.
    unsafe { nix::libc::clock_gettime(super::os::SUSPEND_CLOCK, &mut ts) };
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u32::try_from(ts.tv_nsec).unwrap_or(0);
    std::time::Duration::new(secs, nanos)
}

/// See [`sys::ignore_sigpipe`](crate::sys::ignore_sigpipe).
pub fn ignore_sigpipe() {
    use nix::sys::signal::{SigHandler, signal};
    // SAFETY: called before other threads exist, and SIG_IGN runs no code.
    let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigIgn) };
}

/// Makes `link` a symbolic link to `target` (a test's planted link).
#[cfg(test)]
pub fn symlink(target: &std::path::Path, link: &std::path::Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

/// Makes a FIFO at `path` (mode 0600).
#[cfg(test)]
pub fn make_fifo(path: &std::path::Path) -> io::Result<()> {
    Ok(nix::unistd::mkfifo(
        path,
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};

    #[test]
    fn a_two_step_pipe_is_close_on_exec_and_non_blocking_when_asked() {
        let (r, w) = pipe_in_two_steps(PipeMode::Nonblocking).unwrap();
        for end in [&r, &w] {
            let fd_flags = FdFlag::from_bits_truncate(fcntl(end, FcntlArg::F_GETFD).unwrap());
            assert!(fd_flags.contains(FdFlag::FD_CLOEXEC));
            let fl = OFlag::from_bits_truncate(fcntl(end, FcntlArg::F_GETFL).unwrap());
            assert!(fl.contains(OFlag::O_NONBLOCK));
        }
        let (r, _w) = pipe_in_two_steps(PipeMode::Blocking).unwrap();
        let fl = OFlag::from_bits_truncate(fcntl(&r, FcntlArg::F_GETFL).unwrap());
        assert!(!fl.contains(OFlag::O_NONBLOCK));
    }
}
