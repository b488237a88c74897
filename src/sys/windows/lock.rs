//! Advisory locks on Windows: `LockFileEx` on a whole file, shared or exclusive, taken
//! without waiting and held until its handle closes.

use std::fs::File;
use std::io;
use std::os::windows::io::AsRawHandle;

use windows_sys::Win32::Foundation::{ERROR_LOCK_VIOLATION, FALSE, HANDLE};
use windows_sys::Win32::Storage::FileSystem::{
    LOCKFILE_EXCLUSIVE_LOCK, LOCKFILE_FAIL_IMMEDIATELY, LockFileEx,
};
use windows_sys::Win32::System::IO::OVERLAPPED;

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
