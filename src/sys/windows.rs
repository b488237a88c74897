//! Windows: processes from a Toolhelp snapshot and their start from `GetProcessTimes`;
//! a Job Object (`JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`) that holds every process an
//! attempt starts, so ending the job ends the whole tree, and closing it (retry's end,
//! however it comes) does too; console control events (Ctrl-C, Ctrl-Break, the
//! console's close) handed to one function of the caller's; `LockFileEx` for locks;
//! `%LOCALAPPDATA%` for per-user state. Windows keeps no mode bits: read-only is all
//! there is, and a file open to others is an ACL's matter, not checked here.

use std::ffi::c_void;
use std::fs::{File, Metadata};
use std::io;
use std::mem::size_of;
use std::os::windows::fs::FileExt;
use std::os::windows::io::{AsHandle, AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use windows_sys::Win32::Foundation::{
    CloseHandle, ERROR_LOCK_VIOLATION, ERROR_STOPPED_ON_SYMLINK, FALSE, FILETIME, HANDLE,
    HANDLE_FLAG_INHERIT, INVALID_HANDLE_VALUE, SetHandleInformation, TRUE, WAIT_FAILED,
    WAIT_OBJECT_0,
};
use windows_sys::Win32::Storage::FileSystem::{
    BY_HANDLE_FILE_INFORMATION, FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT,
    FILE_TYPE_DISK, FILE_TYPE_PIPE, GetFileInformationByHandle, GetFileType,
    LOCKFILE_EXCLUSIVE_LOCK, LOCKFILE_FAIL_IMMEDIATELY, LockFileEx,
};
use windows_sys::Win32::System::Console::{
    CTRL_BREAK_EVENT, CTRL_C_EVENT, CTRL_CLOSE_EVENT, GenerateConsoleCtrlEvent, GetStdHandle,
    STD_ERROR_HANDLE, STD_INPUT_HANDLE, STD_OUTPUT_HANDLE, SetConsoleCtrlHandler,
};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, PROCESSENTRY32W, Process32FirstW, Process32NextW, TH32CS_SNAPPROCESS,
    TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
};
use windows_sys::Win32::System::IO::OVERLAPPED;
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JobObjectBasicAccountingInformation, JobObjectExtendedLimitInformation,
    QueryInformationJobObject, SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::Pipes::{
    CreatePipe, PIPE_NOWAIT, PeekNamedPipe, SetNamedPipeHandleState,
};
use windows_sys::Win32::System::SystemInformation::GetTickCount64;
use windows_sys::Win32::System::Threading::{
    CREATE_NEW_PROCESS_GROUP, CREATE_SUSPENDED, CreateEventW, GetExitCodeProcess, GetProcessTimes,
    INFINITE, OpenProcess, OpenThread, PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_SYNCHRONIZE,
    ResetEvent, ResumeThread, SetEvent, THREAD_SUSPEND_RESUME, WaitForMultipleObjects,
    WaitForSingleObject,
};

use super::Process;

/// Winsock's numbers for `getaddrinfo`'s hints.
pub const SOCK_STREAM: i32 = 1;
pub const AI_ADDRCONFIG: i32 = 0x400;
pub const AI_V4MAPPED: i32 = 0x800;

/// Every process, with its parent; Windows has no process groups (each is its own) and
/// no zombies.
pub fn processes() -> Option<Vec<Process>> {
    // SAFETY: a snapshot of every process; the handle is owned and closed below.
    let snap = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0) };
    if snap == INVALID_HANDLE_VALUE {
        return None;
    }
    // SAFETY: a handle just returned, owned from here on.
    let snap = unsafe { OwnedHandle::from_raw_handle(snap as RawHandle) };
    // SAFETY: plain data: all zeroes is a valid value.
    let mut entry: PROCESSENTRY32W = unsafe { std::mem::zeroed() };
    entry.dwSize = size_of::<PROCESSENTRY32W>() as u32;
    let mut all = Vec::new();
    let handle = snap.as_raw_handle() as HANDLE;
    // SAFETY: `entry` is a PROCESSENTRY32W with its size set, as both calls require.
    let mut more = unsafe { Process32FirstW(handle, &mut entry) } != FALSE;
    while more {
        let pid = entry.th32ProcessID as i32;
        all.push(Process {
            pid,
            ppid: entry.th32ParentProcessID as i32,
            pgid: pid,
            zombie: false,
            start: started(pid).unwrap_or(0),
        });
        // SAFETY: as above.
        more = unsafe { Process32NextW(handle, &mut entry) } != FALSE;
    }
    Some(all)
}

/// When `pid` started, in 100 ns units since 1601 (a FILETIME).
pub fn started(pid: i32) -> Option<u64> {
    let pid = u32::try_from(pid).ok()?;
    // SAFETY: asks for a handle that can only query; checked and owned below.
    let raw = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid) };
    if raw.is_null() {
        return None;
    }
    // SAFETY: a handle just returned, owned from here on.
    let process = unsafe { OwnedHandle::from_raw_handle(raw as RawHandle) };
    let zero = FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    };
    let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
    // SAFETY: four FILETIMEs to fill, for a process handle that may query.
    let done = unsafe {
        GetProcessTimes(
            process.as_raw_handle() as HANDLE,
            &mut created,
            &mut exited,
            &mut kernel,
            &mut user,
        )
    };
    (done != FALSE)
        .then(|| (u64::from(created.dwHighDateTime) << 32) | u64::from(created.dwLowDateTime))
}

/// retry's children, from the process list.
pub fn children() -> Vec<i32> {
    let me = std::process::id() as i32;
    let all = processes().unwrap_or_default();
    all.iter().filter(|p| p.ppid == me).map(|p| p.pid).collect()
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

/// A Job Object whose processes all end when it is ended or closed: every process an
/// attempt starts is put in one, and its children are in it from birth.
pub struct Job(OwnedHandle);

impl Job {
    /// A new, unnamed job that kills its processes when its last handle closes.
    pub fn new() -> io::Result<Job> {
        // SAFETY: no attributes, no name: a private job, checked and owned below.
        let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if raw.is_null() {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a handle just returned, owned from here on.
        let job = Job(unsafe { OwnedHandle::from_raw_handle(raw as RawHandle) });
        // SAFETY: plain data: all zeroes is a valid value.
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: the record the information class names, with its size.
        let set = unsafe {
            SetInformationJobObject(
                job.handle(),
                JobObjectExtendedLimitInformation,
                (&limits as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast::<c_void>(),
                size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        if set == FALSE {
            return Err(io::Error::last_os_error());
        }
        Ok(job)
    }

    fn handle(&self) -> HANDLE {
        self.0.as_raw_handle() as HANDLE
    }

    /// Puts the process (a handle from `std::process::Child`) in the job.
    pub fn assign(&self, process: RawHandle) -> io::Result<()> {
        // SAFETY: both handles are open for the length of the call.
        let done = unsafe { AssignProcessToJobObject(self.handle(), process as HANDLE) };
        if done == FALSE {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Ends every process in the job, each with `exit_code`.
    pub fn terminate(&self, exit_code: u32) -> io::Result<()> {
        // SAFETY: the job's handle is open.
        if unsafe { TerminateJobObject(self.handle(), exit_code) } == FALSE {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// How many processes of the job are still running.
    pub fn active(&self) -> io::Result<u32> {
        // SAFETY: plain data: all zeroes is a valid value.
        let mut info: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = unsafe { std::mem::zeroed() };
        // SAFETY: the record the information class names, with its size.
        let done = unsafe {
            QueryInformationJobObject(
                self.handle(),
                JobObjectBasicAccountingInformation,
                (&mut info as *mut JOBOBJECT_BASIC_ACCOUNTING_INFORMATION).cast::<c_void>(),
                size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
                std::ptr::null_mut(),
            )
        };
        if done == FALSE {
            return Err(io::Error::last_os_error());
        }
        Ok(info.ActiveProcesses)
    }
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

/// A `LockFileEx` lock held on a file until it is dropped (closing the handle ends it).
pub struct Locked(File);

/// `LockFileEx` without waiting: the file back when another handle holds a conflicting lock.
pub fn try_lock(file: File, exclusive: bool) -> io::Result<Result<Locked, File>> {
    let mode = match exclusive {
        true => LockMode::Exclusive,
        false => LockMode::Shared,
    };
    match lock_file(&file, mode)? {
        true => Ok(Ok(Locked(file))),
        false => Ok(Err(file)),
    }
}

impl std::ops::Deref for Locked {
    type Target = File;

    fn deref(&self) -> &File {
        &self.0
    }
}

/// Which lock `lock_file` takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockMode {
    Shared,
    Exclusive,
}

/// `LockFileEx` on the whole file, without waiting: `Ok(false)` when another handle
/// holds a lock that conflicts. The lock ends when the handle is closed.
pub fn lock_file(file: &File, mode: LockMode) -> io::Result<bool> {
    let mut flags = LOCKFILE_FAIL_IMMEDIATELY;
    if mode == LockMode::Exclusive {
        flags |= LOCKFILE_EXCLUSIVE_LOCK;
    }
    // SAFETY: plain data: all zeroes (offset 0, no event) is a valid value.
    let mut at: OVERLAPPED = unsafe { std::mem::zeroed() };
    // SAFETY: the file's handle is open; `at` outlives the call, which does not pend
    // (FAIL_IMMEDIATELY on a handle not opened for overlapped I/O).
    let done = unsafe {
        LockFileEx(
            file.as_raw_handle() as HANDLE,
            flags,
            0,
            u32::MAX,
            u32::MAX,
            &mut at,
        )
    };
    if done != FALSE {
        return Ok(true);
    }
    let error = io::Error::last_os_error();
    if error.raw_os_error() == Some(ERROR_LOCK_VIOLATION as i32) {
        return Ok(false);
    }
    Err(error)
}

/// The console events retry takes as signals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsoleEvent {
    /// Ctrl-C: SIGINT's part (exit 130, as shells report it).
    Interrupt,
    /// Ctrl-Break: SIGQUIT's part.
    Break,
    /// The console is closing: SIGHUP's part.
    Close,
}

/// The caller's function for console events (0 until `console_events` is called).
static ON_EVENT: AtomicUsize = AtomicUsize::new(0);

unsafe extern "system" fn on_console(kind: u32) -> i32 {
    let event = match kind {
        CTRL_C_EVENT => ConsoleEvent::Interrupt,
        CTRL_BREAK_EVENT => ConsoleEvent::Break,
        CTRL_CLOSE_EVENT => ConsoleEvent::Close,
        _ => return FALSE,
    };
    let f = ON_EVENT.load(Ordering::SeqCst);
    if f == 0 {
        return FALSE;
    }
    // SAFETY: only `console_events` stores here, and it stores a `fn(ConsoleEvent)`.
    let f: fn(ConsoleEvent) = unsafe { std::mem::transmute::<usize, fn(ConsoleEvent)>(f) };
    f(event);
    if event == ConsoleEvent::Close {
        // Windows ends the process when this returns: give the run its grace to end the
        // attempt's job and write its last lines (the system allows about 5 s).
        std::thread::sleep(std::time::Duration::from_secs(4));
    }
    TRUE
}

/// Has `on_event` called (on a thread of the system's) for each console event, instead
/// of the default, which ends retry at once.
pub fn console_events(on_event: fn(ConsoleEvent)) -> io::Result<()> {
    ON_EVENT.store(on_event as usize, Ordering::SeqCst);
    // SAFETY: a handler with the signature the call requires, for the process's life.
    if unsafe { SetConsoleCtrlHandler(Some(on_console), TRUE) } == FALSE {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// What `--signal` may name on Windows, which sends no signals: TERM is Ctrl-Break to the
/// attempt's process group (and the end of its Job Object after `--kill-after`), KILL the
/// Job Object's end at once.
#[allow(clippy::upper_case_acronyms)] // the names the systems with signals give them
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Signal {
    SIGKILL = 9,
    SIGTERM = 15,
}

impl Signal {
    pub const fn as_str(self) -> &'static str {
        match self {
            Signal::SIGKILL => "SIGKILL",
            Signal::SIGTERM => "SIGTERM",
        }
    }
}

/// What `--signal` takes, for its refusal.
pub const SIGNALS_ACCEPTED: &str = "TERM or KILL (with or without SIG), or 15 or 9: Windows \
     ends an attempt through Ctrl-Break and its Job Object, and can send no other signal";

const SIGNALS: [Signal; 2] = [Signal::SIGKILL, Signal::SIGTERM];

pub fn signal_by_number(number: i32) -> Option<Signal> {
    SIGNALS.into_iter().find(|s| *s as i32 == number)
}

pub fn signal_by_name(name: &str) -> Option<Signal> {
    SIGNALS.into_iter().find(|s| s.as_str() == name)
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

/// Starts the command in a process group of its own, which Ctrl-Break can be sent to.
pub fn own_process_group(command: &mut std::process::Command) {
    use std::os::windows::process::CommandExt;
    command.creation_flags(CREATE_NEW_PROCESS_GROUP);
}

/// Asks the process `pid`, started in a group of its own, to end: Ctrl-Break to its
/// group, which retry takes as a signal.
pub fn ask_to_end(pid: u32) -> io::Result<()> {
    // SAFETY: no memory is passed; a group that is gone fails.
    if unsafe { GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, pid) } == FALSE {
        return Err(io::Error::last_os_error());
    }
    Ok(())
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

/// Milliseconds since boot, suspended time included (`GetTickCount64`).
pub fn suspend_aware_now() -> std::time::Duration {
    // SAFETY: no arguments; it cannot fail.
    std::time::Duration::from_millis(unsafe { GetTickCount64() })
}

/// A directory, by its path: Windows opens entries by name, and a link (a reparse
/// point) is refused where one would be followed, then opened as itself
/// (`FILE_FLAG_OPEN_REPARSE_POINT`), so that a link swapped in after the check is not
/// followed either.
#[derive(Debug)]
pub struct Dir(PathBuf);

/// The error of an open that met a link it does not follow.
fn link_met() -> io::Error {
    io::Error::from_raw_os_error(ERROR_STOPPED_ON_SYMLINK as i32)
}

impl Dir {
    pub fn open(path: &Path, follow: bool) -> io::Result<Dir> {
        let meta = match follow {
            true => std::fs::metadata(path)?,
            false => std::fs::symlink_metadata(path)?,
        };
        if meta.file_type().is_symlink() {
            return Err(link_met());
        }
        if !meta.is_dir() {
            return Err(io::ErrorKind::NotADirectory.into());
        }
        Ok(Dir(path.to_path_buf()))
    }

    pub fn open_dir(&self, name: &str) -> io::Result<Dir> {
        Dir::open(&self.0.join(name), false)
    }

    pub fn make_dir(&self, name: &str) -> io::Result<()> {
        std::fs::create_dir(self.0.join(name))
    }

    pub fn open_file(&self, name: &str, access: crate::sys::FileAccess) -> io::Result<File> {
        use crate::sys::FileAccess;
        use std::os::windows::fs::OpenOptionsExt;
        let path = self.0.join(name);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(link_met());
        }
        let mut options = std::fs::OpenOptions::new();
        options.custom_flags(FILE_FLAG_OPEN_REPARSE_POINT);
        match access {
            FileAccess::Read => options.read(true),
            FileAccess::Update => options.read(true).write(true).create(true),
            FileAccess::New => options.read(true).write(true).create_new(true),
            FileAccess::NewWriteOnly => options.write(true).create_new(true),
        };
        let file = options.open(&path)?;
        if file.metadata()?.file_type().is_symlink() {
            return Err(link_met());
        }
        Ok(file)
    }

    pub fn entry(&self, name: &str) -> io::Result<crate::sys::Entry> {
        use crate::sys::{Entry, EntryKind};
        use std::os::windows::fs::OpenOptionsExt;
        let path = self.0.join(name);
        let meta = std::fs::symlink_metadata(&path)?;
        let kind = match meta.file_type() {
            t if t.is_symlink() => EntryKind::Link,
            t if t.is_file() => EntryKind::File,
            t if t.is_dir() => EntryKind::Dir,
            _ => EntryKind::Other,
        };
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS)
            .open(&path)?;
        Ok(Entry {
            kind,
            identity: identity(&opened)?,
            modified: meta.modified().ok(),
        })
    }

    /// `MoveFileExW` with `MOVEFILE_REPLACE_EXISTING`, atomic on NTFS for files.
    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        std::fs::rename(self.0.join(from), self.0.join(to))
    }

    pub fn remove(&self, name: &str) -> io::Result<()> {
        std::fs::remove_file(self.0.join(name))
    }

    /// NTFS journals a rename; std cannot open a directory to flush it.
    pub fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    pub fn names(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&self.0)? {
            if let Some(name) = entry?.file_name().to_str() {
                names.push(name.to_string());
            }
        }
        Ok(names)
    }

    /// Windows keeps an ACL, not an owner's uid and a mode.
    pub fn owner_and_mode(&self) -> io::Result<Option<(u32, u32)>> {
        Ok(None)
    }
}

pub fn is_link_refusal(error: &io::Error) -> bool {
    error.raw_os_error() == Some(ERROR_STOPPED_ON_SYMLINK as i32)
}

/// Windows keeps an ACL, no uid.
pub fn owner(_meta: &Metadata) -> Option<u32> {
    None
}

pub fn user_id() -> Option<u32> {
    None
}

/// New directories take the ACL their parent passes on (under `%LOCALAPPDATA%`, the user's).
pub fn create_private_dirs(path: &Path) -> io::Result<()> {
    std::fs::create_dir_all(path)
}

/// A link to a directory or a file, as `target` is (the right to make links is needed).
#[cfg(test)]
pub fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    match target.is_dir() {
        true => std::os::windows::fs::symlink_dir(target, link),
        false => std::os::windows::fs::symlink_file(target, link),
    }
}

/// Whether stdout is missing (no handle); Windows has no lowest-free-descriptor rule to
/// guard against, and std writes nothing to a missing handle.
pub fn open_standard_streams() -> bool {
    // SAFETY: no arguments but the stream's number.
    let out = unsafe { GetStdHandle(STD_OUTPUT_HANDLE) };
    out.is_null() || out == INVALID_HANDLE_VALUE
}

/// Windows has no SIGPIPE: a write to a closed pipe fails with `ERROR_NO_DATA` already.
pub fn ignore_sigpipe() {}

/// Windows sends no SIGCHLD: a child's end is seen by waiting on its process handle
/// ([`pause_for_child`]), and there are no orphans to reap.
pub const CHILD_SIGNAL: Option<i32> = None;
/// Nothing asks a crontab to be read again but its file's change: SIGHUP's part, the
/// console's close, is a hang-up that stops retry (Windows ends the process 5 s later),
/// and there is no SIGUSR2.
pub const RELOAD_SIGNALS: &[i32] = &[];

/// The manual-reset event a console event or [`wake`] sets, and every wait watches
/// (0 until made).
static WAKE_EVENT: AtomicUsize = AtomicUsize::new(0);
/// Bit `n` is set when signal number `n`'s console event was asked for.
static CAUGHT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The signal number each console event stands for (SIGINT, SIGQUIT, SIGHUP).
fn event_number(event: ConsoleEvent) -> i32 {
    match event {
        ConsoleEvent::Interrupt => 2,
        ConsoleEvent::Break => 3,
        ConsoleEvent::Close => 1,
    }
}

fn on_event(event: ConsoleEvent) {
    let number = event_number(event);
    if CAUGHT.load(Ordering::SeqCst) & (1 << number) == 0 {
        return;
    }
    if let Some(flag) = super::raised(number) {
        flag.store(true, Ordering::SeqCst);
    }
    wake();
}

fn wake_event() -> io::Result<HANDLE> {
    let made = WAKE_EVENT.load(Ordering::SeqCst);
    if made != 0 {
        return Ok(made as HANDLE);
    }
    // SAFETY: no attributes or name; manual reset, not set. Kept for the process's life.
    let raw = unsafe { CreateEventW(std::ptr::null(), TRUE, FALSE, std::ptr::null()) };
    if raw.is_null() {
        return Err(io::Error::last_os_error());
    }
    match WAKE_EVENT.compare_exchange(0, raw as usize, Ordering::SeqCst, Ordering::SeqCst) {
        Ok(_) => Ok(raw),
        Err(other) => {
            // SAFETY: the event just made, which no one else saw.
            unsafe { CloseHandle(raw) };
            Ok(other as HANDLE)
        }
    }
}

/// Has the console events standing for `numbers` (2 Ctrl-C, 3 Ctrl-Break, 1 the
/// console's close) set their flags and wake a waiting thread; other numbers have no
/// console event and are never raised.
pub fn catch(numbers: &[i32]) -> io::Result<()> {
    wake_event()?;
    let bits = numbers
        .iter()
        .filter(|n| (0..64).contains(*n))
        .fold(0u64, |bits, n| bits | 1 << n);
    CAUGHT.fetch_or(bits, Ordering::SeqCst);
    // One handler for the process: a second call (the crontab's reload) only adds numbers.
    static HANDLER: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    if HANDLER.get().is_none() {
        console_events(on_event)?;
        let _ = HANDLER.set(());
    }
    Ok(())
}

/// The event that says a console event came or a thread called [`wake`], for a wait on
/// other handles too (`None` before [`catch`]).
pub fn wake_handle() -> Option<RawHandle> {
    match WAKE_EVENT.load(Ordering::SeqCst) {
        0 => None,
        raw => Some(raw as RawHandle),
    }
}

/// Milliseconds to wait for `d`, below `INFINITE`: every wait has an end.
fn wait_ms(d: std::time::Duration) -> u32 {
    d.as_millis().min(u128::from(INFINITE - 1)) as u32
}

/// Sleeps up to `d`, waking early at a console event or a [`wake`].
pub fn wait_for_wake(d: std::time::Duration) {
    let Some(event) = wake_handle() else {
        std::thread::sleep(d);
        return;
    };
    // SAFETY: the event stays open for the process's life.
    unsafe { WaitForSingleObject(event as HANDLE, wait_ms(d)) };
    drain_wakes();
}

/// Waits up to `d` for any of `handles` or the wake event: the index of a handle that is
/// signalled, `None` when the time passed or the wake event was set.
pub fn wait_any(handles: &[RawHandle], d: std::time::Duration) -> io::Result<Option<usize>> {
    let mut all: Vec<HANDLE> = handles.iter().map(|h| *h as HANDLE).collect();
    all.extend(wake_handle().map(|h| h as HANDLE));
    // SAFETY: the handles are open for the length of the call (the caller's and ours).
    let got = unsafe { WaitForMultipleObjects(all.len() as u32, all.as_ptr(), FALSE, wait_ms(d)) };
    if got == WAIT_FAILED {
        return Err(io::Error::last_os_error());
    }
    let index = got.wrapping_sub(WAIT_OBJECT_0) as usize;
    if index >= handles.len() {
        drain_wakes();
        return Ok(None);
    }
    Ok(Some(index))
}

/// Clears the wake event after a wait saw it (the flags keep what happened).
pub fn drain_wakes() {
    if let Some(event) = wake_handle() {
        // SAFETY: the event stays open for the process's life.
        unsafe { ResetEvent(event as HANDLE) };
    }
}

/// Wakes a thread blocked in [`wait_for_wake`] or [`wait_any`].
pub fn wake() {
    if let Some(event) = wake_handle() {
        // SAFETY: the event stays open for the process's life.
        unsafe { SetEvent(event as HANDLE) };
    }
}

/// Windows keeps no ignored signals across a process start.
pub fn inherited_ignored(_number: i32) -> bool {
    false
}

/// Nothing to record: see [`inherited_ignored`].
pub fn record_inherited() {}

/// A cancel that a thread reading a pipe sees within [`PEEK_EVERY`]: a manual-reset
/// event, set once.
pub struct Cancel(OwnedHandle);

/// How often a wait for a pipe's bytes looks at the pipe (anonymous pipes cannot be
/// waited on): the cancel event is waited on in between.
const PEEK_EVERY: std::time::Duration = std::time::Duration::from_millis(10);

impl Cancel {
    pub fn new() -> io::Result<Cancel> {
        // SAFETY: no attributes or name; manual reset, not set; owned below.
        let raw = unsafe { CreateEventW(std::ptr::null(), TRUE, FALSE, std::ptr::null()) };
        if raw.is_null() {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a handle just returned, owned from here on.
        Ok(Cancel(unsafe {
            OwnedHandle::from_raw_handle(raw as RawHandle)
        }))
    }

    /// Ends every wait on this cancel, now and later.
    pub fn cancel(&self) {
        // SAFETY: the event is open while `self` lives.
        unsafe { SetEvent(self.0.as_raw_handle() as HANDLE) };
    }

    fn cancelled_within(&self, d: std::time::Duration) -> bool {
        // SAFETY: the event is open while `self` lives.
        let got = unsafe { WaitForSingleObject(self.0.as_raw_handle() as HANDLE, wait_ms(d)) };
        got == WAIT_OBJECT_0
    }
}

/// Waits until the pipe `handle` has bytes or is broken (true: a read will not block)
/// or `cancel` is cancelled (false).
pub fn wait_readable(handle: Fd<'_>, cancel: &Cancel) -> io::Result<bool> {
    loop {
        let mut available = 0u32;
        // SAFETY: the handle is open for the call; only the count is asked for.
        let peeked = unsafe {
            PeekNamedPipe(
                handle.as_raw_handle() as HANDLE,
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
                &mut available,
                std::ptr::null_mut(),
            )
        };
        if peeked == FALSE || available > 0 {
            return Ok(true);
        }
        if cancel.cancelled_within(PEEK_EVERY) {
            return Ok(false);
        }
    }
}

/// A handle borrowed for a call.
pub type Fd<'a> = std::os::windows::io::BorrowedHandle<'a>;
/// A handle owned.
pub type Owned = OwnedHandle;

/// `file`'s handle, borrowed.
pub fn borrow(file: &File) -> Fd<'_> {
    file.as_handle()
}

/// retry's own stdin, stdout or stderr (0, 1 or 2), borrowed for the process's life.
pub fn std_stream(fd: i32) -> Fd<'static> {
    let which = match fd {
        0 => STD_INPUT_HANDLE,
        1 => STD_OUTPUT_HANDLE,
        2 => STD_ERROR_HANDLE,
        _ => panic!("fd {fd} is not a standard stream"),
    };
    // SAFETY: asks for a handle the process holds; nothing is passed.
    let raw = unsafe { GetStdHandle(which) };
    // SAFETY: the standard handles stay open for the whole process: retry never closes
    // them (a missing one is null, which a borrowed handle may be).
    unsafe { Fd::borrow_raw(raw as RawHandle) }
}

/// What the open handle is: a disk file, a pipe (sockets read as pipes), or something
/// else (a console, NUL); `None` for a missing handle.
pub fn stream_kind(handle: Fd<'_>) -> Option<crate::sys::StreamKind> {
    use crate::sys::StreamKind;
    let raw = handle.as_raw_handle() as HANDLE;
    if raw.is_null() || raw == INVALID_HANDLE_VALUE {
        return None;
    }
    // SAFETY: the handle is open for the call.
    Some(match unsafe { GetFileType(raw) } {
        FILE_TYPE_DISK => StreamKind::File,
        FILE_TYPE_PIPE => StreamKind::Pipe,
        _ => StreamKind::Other,
    })
}

/// The borrowed handle as a `File` that is never closed here.
fn as_file(handle: Fd<'_>) -> std::mem::ManuallyDrop<File> {
    // SAFETY: the handle is open while borrowed; `ManuallyDrop` never closes it.
    std::mem::ManuallyDrop::new(unsafe { File::from_raw_handle(handle.as_raw_handle()) })
}

/// Where the file stands (its offset).
pub fn position(handle: Fd<'_>) -> io::Result<i64> {
    use std::io::Seek;
    let offset = as_file(handle).stream_position()?;
    i64::try_from(offset).map_err(|_| io::Error::other("offset out of range"))
}

/// Moves the file to `offset`.
pub fn seek_to(handle: Fd<'_>, offset: i64) -> io::Result<()> {
    use std::io::Seek;
    let offset = u64::try_from(offset).map_err(|_| io::Error::other("negative offset"))?;
    as_file(handle).seek(io::SeekFrom::Start(offset))?;
    Ok(())
}

/// Reads what the handle has; a pipe whose writer is gone reads as its end (0).
pub fn read(handle: Fd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    use std::io::Read;
    match as_file(handle).read(buf) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(0),
        other => other,
    }
}

/// A pipe to feed a command's stdin through: the command's end, and retry's, in
/// `PIPE_NOWAIT` mode, so that [`write_or_cancel`] never blocks. Neither is inherited
/// (std hands the command a copy of its end).
pub fn feed_pipe() -> io::Result<(OwnedHandle, OwnedHandle)> {
    let mut read_end: HANDLE = std::ptr::null_mut();
    let mut write_end: HANDLE = std::ptr::null_mut();
    // SAFETY: two handles to fill; no attributes (not inheritable), the default size.
    if unsafe { CreatePipe(&mut read_end, &mut write_end, std::ptr::null(), 0) } == FALSE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both handles were just made, owned from here on.
    let ends = unsafe {
        (
            OwnedHandle::from_raw_handle(read_end as RawHandle),
            OwnedHandle::from_raw_handle(write_end as RawHandle),
        )
    };
    let mode = PIPE_NOWAIT;
    // SAFETY: the write end is open; only the wait mode is set.
    let set = unsafe {
        SetNamedPipeHandleState(
            ends.1.as_raw_handle() as HANDLE,
            &mode,
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    if set == FALSE {
        return Err(io::Error::last_os_error());
    }
    Ok(ends)
}

/// Writes all of `data` to retry's end of a [`feed_pipe`]; false if `cancel` came or
/// the command stopped reading first. A full pipe takes nothing: the cancel is
/// waited on for [`PEEK_EVERY`] before the next try.
pub fn write_or_cancel(to: &OwnedHandle, mut data: &[u8], cancel: &Cancel) -> bool {
    use std::io::Write;
    let mut file = as_file(to.as_handle());
    while !data.is_empty() {
        match file.write(data) {
            Ok(0) => {
                if cancel.cancelled_within(PEEK_EVERY) {
                    return false;
                }
            }
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}

/// retry's stdout or stderr. A pipe is written by a thread of its own ([`PipeWriter`]),
/// so that a reader that stalls holds that thread and never retry's; a file, a console
/// or NUL does not stall and is written as it is.
pub struct StdOutput<'a> {
    handle: Fd<'a>,
    pipe: Option<PipeWriter>,
}

impl StdOutput<'static> {
    pub fn new(fd: i32) -> StdOutput<'static> {
        StdOutput::over(std_stream(fd))
    }
}

impl<'a> StdOutput<'a> {
    /// The writer of `handle`, which need not be a standard stream.
    pub fn over(handle: Fd<'a>) -> StdOutput<'a> {
        let pipe = match stream_kind(handle) {
            // Without a thread (none could be made) the pipe is written as it is.
            Some(crate::sys::StreamKind::Pipe) => PipeWriter::new(handle).ok(),
            _ => None,
        };
        StdOutput { handle, pipe }
    }

    /// Writes what fits of `data` now: `WouldBlock` while the pipe's thread is still
    /// writing what it took on (wait for room then), `BrokenPipe` when the reader is gone.
    pub fn try_write(&self, data: &[u8]) -> io::Result<usize> {
        use std::io::Write;
        if let Some(pipe) = &self.pipe {
            return pipe.take_on(data);
        }
        if stream_kind(self.handle).is_none() {
            // No handle (a GUI parent's): what would be written is lost, as std's own is.
            return Ok(data.len());
        }
        as_file(self.handle).write(data)
    }

    /// Whether bytes taken on earlier are still on their way (wait for room until
    /// they are not); the error of a write that failed since, once.
    pub fn pending(&self) -> io::Result<bool> {
        self.pipe.as_ref().map_or(Ok(false), PipeWriter::pending)
    }

    /// Waits up to `slice` for the pipe's thread to finish its write, ending early at a
    /// console event or a [`wake`]: whether there may be room.
    pub fn room_within(&self, slice: std::time::Duration) -> bool {
        let Some(pipe) = &self.pipe else {
            return true;
        };
        matches!(wait_any(&[pipe.idle_handle()], slice), Ok(Some(_)) | Err(_))
    }

    /// Waits for room until `cancel` comes: false when it came.
    pub fn room_or_cancel(&self, cancel: &Cancel) -> io::Result<bool> {
        let Some(pipe) = &self.pipe else {
            return Ok(true);
        };
        let handles = [
            pipe.idle_handle() as HANDLE,
            cancel.0.as_raw_handle() as HANDLE,
        ];
        loop {
            // SAFETY: both events are open for the call (the writer's and the cancel's).
            let got = unsafe {
                WaitForMultipleObjects(
                    2,
                    handles.as_ptr(),
                    FALSE,
                    wait_ms(std::time::Duration::MAX),
                )
            };
            match got.wrapping_sub(WAIT_OBJECT_0) {
                0 => return Ok(true),
                1 => return Ok(false),
                _ if got == WAIT_FAILED => return Err(io::Error::last_os_error()),
                _ => {}
            }
        }
    }
}

/// Writes to a pipe on a thread of its own. Windows' anonymous pipes have no wait for
/// room, and making retry's end non-blocking (`PIPE_NOWAIT`) would change it for every
/// process that shares it. So a write is handed to the thread, and the caller waits on
/// the `idle` event with its own end (a deadline, a signal, a cancel). A thread that a
/// reader stalls for good is left blocked; retry's exit ends it.
struct PipeWriter {
    shared: std::sync::Arc<Shared>,
}

struct Shared {
    state: std::sync::Mutex<Writing>,
    work: std::sync::Condvar,
    /// Set while no write is under way (a manual-reset event).
    idle: OwnedHandle,
}

#[derive(Default)]
struct Writing {
    data: Vec<u8>,
    busy: bool,
    error: Option<io::Error>,
    /// The writer was dropped: the thread ends after its write.
    closed: bool,
}

/// The most one write hands over.
const HAND_OVER: usize = 64 * 1024;

impl PipeWriter {
    fn new(handle: Fd<'_>) -> io::Result<PipeWriter> {
        // The thread's own handle to the pipe, which it may hold after retry's is gone.
        let file = File::from(handle.try_clone_to_owned()?);
        // SAFETY: no attributes or name; manual reset, set (idle); owned below.
        let raw = unsafe { CreateEventW(std::ptr::null(), TRUE, TRUE, std::ptr::null()) };
        if raw.is_null() {
            return Err(io::Error::last_os_error());
        }
        let shared = std::sync::Arc::new(Shared {
            state: std::sync::Mutex::new(Writing::default()),
            work: std::sync::Condvar::new(),
            // SAFETY: a handle just returned, owned from here on.
            idle: unsafe { OwnedHandle::from_raw_handle(raw as RawHandle) },
        });
        let theirs = std::sync::Arc::clone(&shared);
        std::thread::Builder::new()
            .name("output".into())
            .spawn(move || write_handed_over(file, &theirs))?;
        Ok(PipeWriter { shared })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Writing> {
        self.shared.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn idle_handle(&self) -> RawHandle {
        self.shared.idle.as_raw_handle()
    }

    fn take_on(&self, data: &[u8]) -> io::Result<usize> {
        let mut state = self.lock();
        if let Some(error) = state.error.take() {
            return Err(error);
        }
        if state.busy {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = data.len().min(HAND_OVER);
        state.data.clear();
        state.data.extend_from_slice(&data[..n]);
        state.busy = true;
        // SAFETY: the event is open while `shared` lives.
        unsafe { ResetEvent(self.idle_handle() as HANDLE) };
        self.shared.work.notify_one();
        Ok(n)
    }

    fn pending(&self) -> io::Result<bool> {
        let mut state = self.lock();
        match state.error.take() {
            Some(error) => Err(error),
            None => Ok(state.busy),
        }
    }
}

impl Drop for PipeWriter {
    fn drop(&mut self) {
        self.lock().closed = true;
        self.shared.work.notify_one();
    }
}

/// The writer's thread: writes each piece handed over, keeps a failure for the
/// caller, and sets `idle` after each.
fn write_handed_over(mut file: File, shared: &Shared) {
    use std::io::Write;
    let mut data = Vec::new();
    loop {
        {
            let mut state = shared.state.lock().unwrap_or_else(|p| p.into_inner());
            while !state.busy && !state.closed {
                state = shared.work.wait(state).unwrap_or_else(|p| p.into_inner());
            }
            if !state.busy {
                return;
            }
            std::mem::swap(&mut data, &mut state.data);
        }
        let written = file.write_all(&data);
        let mut state = shared.state.lock().unwrap_or_else(|p| p.into_inner());
        state.busy = false;
        if let Err(error) = written {
            state.error = Some(error);
        }
        std::mem::swap(&mut data, &mut state.data);
        drop(state);
        // SAFETY: the event is open while `shared` lives.
        unsafe { SetEvent(shared.idle.as_raw_handle() as HANDLE) };
    }
}

/// A console has no foreground process group: every process attached to it reads it
/// and gets its Ctrl-C, so there is nothing to hand over or take back.
pub fn in_terminal_foreground(_tty: Fd<'_>) -> bool {
    false
}

/// No SIGTTOU on Windows (see [`in_terminal_foreground`]).
pub fn ignore_sigttou() {}

/// Nothing to take back (see [`in_terminal_foreground`]).
pub fn reclaim_terminal(_tty: Fd<'_>) {}

/// Whether a reader of `handle` is gone: not known before a write to an anonymous
/// pipe fails with `BrokenPipe`, which the writer reports.
pub fn reader_gone(_handle: Fd<'_>) -> bool {
    false
}

/// `raw_os_error`s of a process that could not be started for want of resources.
pub const NO_PROCESSES: i32 = windows_sys::Win32::Foundation::ERROR_NO_SYSTEM_RESOURCES as i32;
pub const NO_MEMORY: i32 = windows_sys::Win32::Foundation::ERROR_NOT_ENOUGH_MEMORY as i32;

/// A process started in a group of its own, held with everything it starts in a Job
/// Object kept for the group ([`signal_group`], [`release_group`]): ending the job ends
/// the tree, and retry's end (its handle closing) does too.
pub struct Started {
    pub child: std::process::Child,
}

/// A command that runs `program` with `args`. A program reads its command line as the C
/// runtime splits it, and std quotes each argument for that; cmd.exe reads its own way,
/// where a `\"` is no escape. So a line handed to `cmd /c` as one argument goes to it as
/// written, as it would be typed at cmd's prompt.
pub fn new_command(
    program: &std::ffi::OsStr,
    args: &[std::ffi::OsString],
) -> std::process::Command {
    use std::os::windows::process::CommandExt;
    let mut command = std::process::Command::new(program);
    match args {
        [flag, line] if is_cmd(program) && flag.eq_ignore_ascii_case("/c") => {
            command.arg(flag).raw_arg(line);
        }
        _ => {
            command.args(args);
        }
    }
    command
}

/// Whether `program` names cmd.exe (`cmd`, `cmd.exe`, or a path to it).
fn is_cmd(program: &std::ffi::OsStr) -> bool {
    Path::new(program).file_name().is_some_and(|name| {
        name.eq_ignore_ascii_case("cmd") || name.eq_ignore_ascii_case("cmd.exe")
    })
}

/// Starts `command` suspended in a process group of its own, puts it in a new Job
/// Object, then lets it run: nothing it starts can leave the job first. A console has
/// no foreground to hand over (`_foreground`).
pub fn start(mut command: std::process::Command, _foreground: bool) -> io::Result<Started> {
    use std::os::windows::process::CommandExt;
    let job = Job::new()?;
    command.creation_flags(CREATE_NEW_PROCESS_GROUP | CREATE_SUSPENDED);
    let mut child = command.spawn()?;
    let held = job
        .assign(child.as_raw_handle())
        .and_then(|()| resume_threads(child.id()));
    if let Err(e) = held {
        // Never left suspended or outside the job: it has not run a single instruction.
        let _ = child.kill();
        let _ = child.wait();
        return Err(e);
    }
    let leader = match child.as_handle().try_clone_to_owned() {
        Ok(leader) => leader,
        Err(e) => {
            let _ = job.terminate(1);
            let _ = child.wait();
            return Err(e);
        }
    };
    hold_group(child.id() as i32, job, leader);
    Ok(Started { child })
}

/// Resumes every thread of the process `pid` (one, the main thread, after
/// `CREATE_SUSPENDED`): std keeps no handle to it, so it is found in a snapshot.
fn resume_threads(pid: u32) -> io::Result<()> {
    // SAFETY: a snapshot of the system's threads, owned and closed below.
    let raw = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if raw == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a handle just returned, owned from here on.
    let snapshot = unsafe { OwnedHandle::from_raw_handle(raw as RawHandle) };
    // SAFETY: plain data: all zeroes is a valid value; the size is set as the call needs.
    let mut entry: THREADENTRY32 = unsafe { std::mem::zeroed() };
    entry.dwSize = size_of::<THREADENTRY32>() as u32;
    let handle = snapshot.as_raw_handle() as HANDLE;
    let mut resumed = 0;
    // SAFETY: the snapshot is open; `entry` is the record the calls fill.
    let mut more = unsafe { Thread32First(handle, &mut entry) } != FALSE;
    while more {
        if entry.th32OwnerProcessID == pid {
            resume_thread(entry.th32ThreadID)?;
            resumed += 1;
        }
        // SAFETY: as above.
        more = unsafe { Thread32Next(handle, &mut entry) } != FALSE;
    }
    match resumed {
        0 => Err(io::Error::other("the new process has no thread to resume")),
        _ => Ok(()),
    }
}

fn resume_thread(tid: u32) -> io::Result<()> {
    // SAFETY: opens a thread by id for resuming only; checked and closed below.
    let raw = unsafe { OpenThread(THREAD_SUSPEND_RESUME, FALSE, tid) };
    if raw.is_null() {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a handle just returned, owned from here on.
    let thread = unsafe { OwnedHandle::from_raw_handle(raw as RawHandle) };
    // SAFETY: the thread's handle is open.
    if unsafe { ResumeThread(thread.as_raw_handle() as HANDLE) } == u32::MAX {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The process `pid` to wait for and read the exit code of: the leader's handle [`start`]
/// kept, or else the process opened by its pid.
fn open_child(pid: i32) -> io::Result<OwnedHandle> {
    if let Some(kept) = with_group(pid, |g| g.leader.try_clone()) {
        return kept;
    }
    let pid = u32::try_from(pid).map_err(|_| io::Error::other("no such process"))?;
    // SAFETY: opens a process by id with the rights named; checked and owned below.
    let raw = unsafe {
        OpenProcess(
            PROCESS_SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION,
            FALSE,
            pid,
        )
    };
    if raw.is_null() {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a handle just returned, owned from here on.
    Ok(unsafe { OwnedHandle::from_raw_handle(raw as RawHandle) })
}

/// What became of the child `pid`: its exit code once it ended (a process ended through
/// its job gets the code the job was ended with); `None` while it runs.
pub fn try_wait(pid: i32) -> io::Result<Option<crate::sys::ChildState>> {
    let process = open_child(pid)?;
    let handle = process.as_raw_handle() as HANDLE;
    // SAFETY: the handle is open; a zero wait only looks.
    if unsafe { WaitForSingleObject(handle, 0) } != WAIT_OBJECT_0 {
        return Ok(None);
    }
    let mut code = 0u32;
    // SAFETY: the handle is open; `code` is the value the call fills.
    if unsafe { GetExitCodeProcess(handle, &mut code) } == FALSE {
        return Err(io::Error::last_os_error());
    }
    Ok(Some(crate::sys::ChildState::Exited(code as i32)))
}

/// Waits up to `d` for the child `pid` to end, or a console event or [`wake`].
pub fn pause_for_child(pid: i32, d: std::time::Duration) {
    match open_child(pid) {
        Ok(process) => {
            let _ = wait_any(&[process.as_raw_handle()], d);
        }
        Err(_) => wait_for_wake(d),
    }
}

/// Windows has no job control: a child is never reported stopped, so there is nothing
/// to pass on.
pub fn stop_in_turn(_tty: Fd<'_>, _pgid: i32) {}

/// An attempt's Job Object holds every process it starts: no search for the rest.
pub const GROUP_HOLDS_TREE: bool = true;

/// Windows stops no process to be continued.
pub const CONTINUE: Option<Signal> = None;

/// What [`start`] keeps of each group it began, by its leader's pid, until
/// [`release_group`]: the Job Object that ends its tree, and a handle to the leader,
/// which keeps its pid and exit code while retry waits for it.
struct Group {
    pgid: i32,
    job: Job,
    leader: OwnedHandle,
}

static GROUPS: std::sync::Mutex<Vec<Group>> = std::sync::Mutex::new(Vec::new());

fn with_group<T>(pgid: i32, f: impl FnOnce(&Group) -> T) -> Option<T> {
    let groups = GROUPS.lock().unwrap_or_else(|p| p.into_inner());
    groups.iter().find(|g| g.pgid == pgid).map(f)
}

fn with_job<T>(pgid: i32, f: impl FnOnce(&Job) -> T) -> Option<T> {
    with_group(pgid, |g| f(&g.job))
}

/// Keeps `job` and a handle to its leader as the group `pgid`'s.
fn hold_group(pgid: i32, job: Job, leader: OwnedHandle) {
    GROUPS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Group { pgid, job, leader });
}

/// Closes the group's Job Object, which ends whatever of it is still running.
pub fn release_group(pgid: i32) {
    GROUPS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|g| g.pgid != pgid);
}

/// Asks the group `pgid` to end (TERM: Ctrl-Break to it, or its job's end when retry
/// has no console to send it through) or ends its whole job (KILL, exit code 137 as a
/// shell reports SIGKILL); `None` only asks whether any of it runs.
/// Whether it was sent.
pub fn signal_group(pgid: i32, sig: Option<Signal>) -> bool {
    match sig {
        None => with_job(pgid, |job| job.active().is_ok_and(|n| n > 0)).unwrap_or(false),
        // Ctrl-Break reaches only processes that share retry's console. Without one (a
        // service, some CI agents, Wine) the job's end is the only ask left: at once,
        // with the 128+15 a shell reports for SIGTERM.
        Some(Signal::SIGTERM) => {
            u32::try_from(pgid).is_ok_and(|id| ask_to_end(id).is_ok())
                || with_job(pgid, |job| job.terminate(143).is_ok()).unwrap_or(false)
        }
        Some(Signal::SIGKILL) => with_job(pgid, |job| job.terminate(137).is_ok()).unwrap_or(false),
    }
}

/// No process leaves its job: nothing is ever signalled alone.
pub fn signal_process(_pid: i32, _sig: Signal) {}

/// Every stopping signal is passed on as the one ask Windows has: Ctrl-Break (TERM).
pub fn passed_on(_number: i32) -> Option<Signal> {
    Some(Signal::SIGTERM)
}

/// Windows keeps no zombies to reap.
pub fn reap(_pid: i32) {}

#[cfg(test)]
/// Windows ends processes with an exit code only, never a signal.
pub fn exit_signal(_status: &std::process::ExitStatus) -> Option<i32> {
    None
}

/// Windows has no subreaper: an attempt's Job Object holds every process it starts
/// instead, orphans too.
pub fn become_subreaper() -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "Windows has no subreaper; each attempt's Job Object holds its orphans",
    ))
}

/// Why a private directory for `RETRY_CONTROL` cannot be had on Windows.
const NO_PRIVATE_DIR: &str = "RETRY_CONTROL is not available on Windows: its directory \
     must be private to this user, which Windows decides by an ACL that retry does not set";

/// See [`NO_PRIVATE_DIR`].
pub fn make_private_dir(_path: &Path) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, NO_PRIVATE_DIR))
}

/// See [`NO_PRIVATE_DIR`].
pub fn private_dir_permissions() -> io::Result<std::fs::Permissions> {
    Err(io::Error::new(io::ErrorKind::Unsupported, NO_PRIVATE_DIR))
}

/// Opens `path` to read, refusing a link (`Ok(Err(()))`).
pub fn open_unfollowed(path: &Path) -> io::Result<Result<File, ()>> {
    if std::fs::symlink_metadata(path)?.file_type().is_symlink() {
        return Ok(Err(()));
    }
    File::open(path).map(Ok)
}

/// What a file that is not a regular one is, for a warning.
pub fn describe_kind(kind: std::fs::FileType) -> &'static str {
    match kind.is_dir() {
        true => "a directory",
        false => "something else",
    }
}
