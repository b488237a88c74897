//! retry's standard streams and the pipes it feeds, on Windows: handles borrowed and
//! owned, what a stream is (a disk file, a pipe, or something else), where a file
//! stands, reads that take a broken pipe as the end, anonymous pipes that no process
//! inherits, and writes to a `PIPE_NOWAIT` pipe that a cancel ends.

use std::fs::File;
use std::io;
use std::os::windows::io::{AsHandle, AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};

use windows_sys::Win32::Foundation::{FALSE, HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::Storage::FileSystem::{
    FILE_TYPE_CHAR, FILE_TYPE_DISK, FILE_TYPE_PIPE, GetFileType,
};
use windows_sys::Win32::System::Console::{
    GetStdHandle, STD_ERROR_HANDLE, STD_INPUT_HANDLE, STD_OUTPUT_HANDLE,
};
use windows_sys::Win32::System::Pipes::{CreatePipe, PIPE_NOWAIT, SetNamedPipeHandleState};

use super::cancel::{Cancel, PEEK_EVERY};

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

/// Whether `handle` is the null device (`>NUL`): a character device that is not a console.
pub fn is_null_device(handle: Fd<'_>) -> bool {
    use std::io::IsTerminal;
    // SAFETY: the handle is open for the call.
    let char_device = unsafe { GetFileType(handle.as_raw_handle() as HANDLE) } == FILE_TYPE_CHAR;
    char_device && !handle.is_terminal()
}

/// The borrowed handle as a `File` that is never closed here.
pub(super) fn as_file(handle: Fd<'_>) -> std::mem::ManuallyDrop<File> {
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

/// An anonymous pipe, read end first, neither end inheritable.
pub fn pipe_pair() -> io::Result<(OwnedHandle, OwnedHandle)> {
    let mut read_end: HANDLE = std::ptr::null_mut();
    let mut write_end: HANDLE = std::ptr::null_mut();
    // SAFETY: two handles to fill; no attributes (not inheritable), the default size.
    if unsafe { CreatePipe(&mut read_end, &mut write_end, std::ptr::null(), 0) } == FALSE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both handles were just made, owned from here on.
    Ok(unsafe {
        (
            OwnedHandle::from_raw_handle(read_end as RawHandle),
            OwnedHandle::from_raw_handle(write_end as RawHandle),
        )
    })
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

/// Whether stdout is missing (no handle); Windows has no lowest-free-descriptor rule to
/// guard against, and std writes nothing to a missing handle.
pub fn open_standard_streams() -> bool {
    // SAFETY: no arguments but the stream's number.
    let out = unsafe { GetStdHandle(STD_OUTPUT_HANDLE) };
    out.is_null() || out == INVALID_HANDLE_VALUE
}
