//! Windows, a family of one system: what it gives in place of POSIX's calls, behind the
//! same names as `posix/`. Processes come from a Toolhelp snapshot (`processes.rs`); every
//! process an attempt starts is held in a Job Object (`job_object.rs`, kept per group by
//! `group.rs`), so ending the job ends the whole tree, and closing it (retry's end,
//! however it comes) does too; console control events (`console.rs`) stand for retry's
//! signals (`signals.rs`); `LockFileEx` makes locks (`lock.rs`). This file holds the rest:
//! a file's identity, times and mode, the machine's and the user's names, where per-user
//! state lives (`%LOCALAPPDATA%`), and what a scheduler's slot run is handed. Windows keeps
//! no mode bits: read-only is all there is, and a file open to others is an ACL's matter,
//! not checked here.

use std::fs::{File, Metadata};
use std::io;
use std::os::windows::fs::FileExt;
use std::os::windows::io::{AsHandle, AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::path::{Path, PathBuf};

use windows_sys::Win32::Foundation::{FALSE, HANDLE, HANDLE_FLAG_INHERIT, SetHandleInformation};
use windows_sys::Win32::Storage::FileSystem::{
    BY_HANDLE_FILE_INFORMATION, FILE_FLAG_BACKUP_SEMANTICS, GetFileInformationByHandle,
};
use windows_sys::Win32::System::SystemInformation::GetTickCount64;

mod cancel;
mod child;
mod console;
mod dir;
mod group;
mod inbox;
mod job_object;
mod lock;
mod output;
mod private;
mod processes;
pub mod signals;
mod spawn;
mod stream;
mod terminal;
mod writer;
pub use cancel::{Cancel, wait_readable, wait_readable_or_reader_gone};
pub use child::{pause_for_child, reap_any, stop_in_turn, try_wait};
#[cfg(test)]
pub use dir::symlink;
pub use dir::{Dir, create_private_dirs, is_link_refusal, owner, user_id};
#[cfg(test)]
pub use group::exit_signal;
pub use group::{
    CONTINUE, GROUP_HOLDS_TREE, passed_on, reap, release_group, signal_group, signal_process,
};
pub use inbox::Inbox;
pub use lock::{Locked, try_lock};
pub use output::StdOutput;
pub use private::{
    describe_kind, make_private_dir, open_nonblocking, open_unfollowed, private_dir_permissions,
};
pub use processes::{children, processes, started};
pub use signals::{SIGNALS_ACCEPTED, Signal, signal_by_name, signal_by_number};
#[cfg(test)]
pub use spawn::own_process_group;
pub use spawn::{SHELL, SHELL_LINES, Started, new_command, start, start_tied};
pub use stream::{
    Fd, Owned, borrow, feed_pipe, is_null_device, open_standard_streams, pipe_pair, position, read,
    seek_to, std_stream, stream_kind, write_or_cancel,
};
pub use terminal::{ignore_sigttou, in_terminal_foreground, reader_gone, reclaim_terminal};

/// The attempt's Job Object ends its processes when retry's handle to it closes, however
/// retry ends: what a parent-death signal does elsewhere.
pub const PARENT_DEATH_SIGNAL: bool = true;

/// Windows has no umask.
pub fn umask() -> u32 {
    0
}

/// Winsock's numbers for `getaddrinfo`'s hints.
pub const SOCK_STREAM: i32 = 1;
pub const AI_ADDRCONFIG: i32 = 0x400;
pub const AI_V4MAPPED: i32 = 0x800;

/// Whether `path` is a file (Windows runs what its extension says it is).
pub fn is_executable(path: &std::path::Path) -> bool {
    path.is_file()
}

/// A command line's limit on Windows: 32,767 UTF-16 units, counted here as bytes.
pub fn arg_max() -> usize {
    32_767
}

pub fn host_name() -> Option<String> {
    std::env::var("COMPUTERNAME").ok().filter(|n| !n.is_empty())
}

pub fn login_name() -> Option<String> {
    std::env::var("USERNAME").ok().filter(|n| !n.is_empty())
}

/// libpq's password file on Windows.
pub fn pgpass_file() -> Option<PathBuf> {
    let appdata = std::env::var_os("APPDATA")?;
    Some(
        PathBuf::from(appdata)
            .join("postgresql")
            .join("pgpass.conf"),
    )
}

/// Where per-user state lives: `%LOCALAPPDATA%`, when absolute.
pub fn user_state_dir() -> Option<PathBuf> {
    std::env::var_os("LOCALAPPDATA")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
}

pub const USER_STATE_DIR_UNSET: &str = "LOCALAPPDATA is not set to an absolute path";

/// The system's own resolver is used as it is set.
pub fn configure_name_lookup() {}

/// `ReadFile` at an offset (it moves the file's position, which no caller relies on).
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    file.seek_read(buf, offset)
}

pub fn write_all_at(file: &File, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match file.seek_write(buf, offset) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                buf = &buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// No mode bits on Windows.
pub fn file_mode(_meta: &Metadata) -> Option<u32> {
    None
}

/// The one part of a mode Windows keeps: no write bit makes the file read-only.
pub fn set_file_mode(path: &Path, mode: u32) -> io::Result<()> {
    let mut permissions = std::fs::metadata(path)?.permissions();
    permissions.set_readonly(mode & 0o222 == 0);
    std::fs::set_permissions(path, permissions)
}

/// NTFS journals a rename; std cannot open a directory to flush it.
pub fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// A device (`NUL`, `CON`) is opened for writing to check it.
pub fn check_writable_in_place(path: &Path) -> io::Result<()> {
    std::fs::OpenOptions::new().write(true).open(path).map(drop)
}

/// The file's record: its volume, index and link count.
fn file_information(file: &File) -> io::Result<BY_HANDLE_FILE_INFORMATION> {
    // SAFETY: plain data: all zeroes is a valid value.
    let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
    // SAFETY: the file's handle is open; `info` is the record the call fills.
    if unsafe { GetFileInformationByHandle(file.as_raw_handle() as HANDLE, &mut info) } == FALSE {
        return Err(io::Error::last_os_error());
    }
    Ok(info)
}

/// A file's volume serial number and file index: what dev and inode are on Unix.
pub fn identity(file: &File) -> io::Result<(u64, u64)> {
    let info = file_information(file)?;
    let index = (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow);
    Ok((u64::from(info.dwVolumeSerialNumber), index))
}

/// A volume's serial number has no major and minor parts: all of it is the major.
pub fn device_numbers(dev: u64) -> (u64, u64) {
    (dev, 0)
}

/// Opened to be asked: std's metadata of a path carries no file index.
pub fn path_identity(path: &Path) -> io::Result<(u64, u64)> {
    identity(&File::open(path)?)
}

pub fn link_count(file: &File) -> io::Result<u64> {
    Ok(u64::from(file_information(file)?.nNumberOfLinks))
}

/// Sets the file's modification time to this machine's clock (Windows has no
/// "stamp it now" of the file system's own) and reads it back, in milliseconds.
pub fn stamp_now_ms(file: &File) -> io::Result<u64> {
    file.set_modified(std::time::SystemTime::now())?;
    let modified = file.metadata()?.modified()?;
    let since = modified
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Ok(u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
}

/// Opens a directory to lock it (`FILE_FLAG_BACKUP_SEMANTICS`, without which Windows
/// opens no directory).
pub fn open_directory(path: &Path) -> io::Result<File> {
    use std::os::windows::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS)
        .open(path)
}

/// A copy of retry's stderr that slot runs inherit (an inheritable handle), to write
/// their own lines to.
pub struct LogCopy(OwnedHandle);

impl LogCopy {
    pub fn of_stderr() -> io::Result<LogCopy> {
        let stderr = io::stderr();
        let copy = stderr.as_handle().try_clone_to_owned()?;
        // SAFETY: the handle is open and owned by `copy`.
        let done = unsafe {
            SetHandleInformation(
                copy.as_raw_handle() as HANDLE,
                HANDLE_FLAG_INHERIT,
                HANDLE_FLAG_INHERIT,
            )
        };
        if done == FALSE {
            return Err(io::Error::last_os_error());
        }
        Ok(LogCopy(copy))
    }

    /// The handle's value, which is the same in a child that inherits it.
    pub fn token(&self) -> i64 {
        self.0.as_raw_handle() as i64
    }
}

/// The log handle a slot run was handed (`--slot-log-fd`), made uninheritable at once
/// so that its command does not get it; `None` when it is not an open handle.
pub fn adopt_log(token: i64) -> Option<File> {
    let raw = usize::try_from(token).ok().filter(|h| *h != 0)? as HANDLE;
    // SAFETY: a handle value is only asked to change a flag; a bad one fails.
    if unsafe { SetHandleInformation(raw, HANDLE_FLAG_INHERIT, 0) } == FALSE {
        return None;
    }
    // SAFETY: the handle was handed over for this process to write to for its life.
    Some(unsafe { File::from_raw_handle(raw as RawHandle) })
}

/// Nothing to set: the scheduler's Job Object ends the slot run with the scheduler.
pub fn tie_to_parent() -> io::Result<()> {
    Ok(())
}

/// A copy of the stdin handle, when it is a pipe.
pub fn report_channel() -> Option<File> {
    let stdin = io::stdin();
    if stream_kind(stdin.as_handle()) != Some(crate::sys::StreamKind::Pipe) {
        return None;
    }
    stdin.as_handle().try_clone_to_owned().ok().map(File::from)
}

/// Not known on Windows before a write fails; the Job Object ends the slot run instead.
pub fn reader_left(_channel: &File) -> bool {
    false
}

/// Nothing: the Job Object ended this process with its scheduler.
pub fn hang_up_self() {}

/// Windows has no signal to tell a slot's run it is replaced: the store tells it.
pub const REPLACE_SIGNAL: Option<i32> = None;

/// Milliseconds since boot, suspended time included (`GetTickCount64`).
pub fn suspend_aware_now() -> std::time::Duration {
    // SAFETY: no arguments; it cannot fail.
    std::time::Duration::from_millis(unsafe { GetTickCount64() })
}

/// Windows has no SIGPIPE: a write to a closed pipe fails with `ERROR_NO_DATA` already.
pub fn ignore_sigpipe() {}

/// Windows has no subreaper: an attempt's Job Object holds every process it starts
/// instead, orphans too.
pub fn become_subreaper() -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "Windows has no subreaper; each attempt's Job Object holds its orphans",
    ))
}

/// `raw_os_error`s of a process that could not be started for want of resources.
pub const NO_PROCESSES: i32 = windows_sys::Win32::Foundation::ERROR_NO_SYSTEM_RESOURCES as i32;
pub const NO_MEMORY: i32 = windows_sys::Win32::Foundation::ERROR_NOT_ENOUGH_MEMORY as i32;

#[cfg(test)]
/// An argument of these bytes: what is UTF-8 is kept, each other byte becomes an
/// unpaired surrogate (as Python's `surrogateescape`), so that it is not text.
pub fn os_string_from_bytes(bytes: &[u8]) -> std::ffi::OsString {
    use std::os::windows::ffi::OsStringExt;
    let mut wide = Vec::new();
    for chunk in bytes.utf8_chunks() {
        wide.extend(chunk.valid().encode_utf16());
        wide.extend(chunk.invalid().iter().map(|b| 0xDC00 | u16::from(*b)));
    }
    std::ffi::OsString::from_wide(&wide)
}
