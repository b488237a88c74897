//! Waiting for a child on Windows: a look at its process handle without blocking, its
//! exit code once it ended, and the wait between two looks (a console event or a
//! [`wake`](super::signals::wake) ends it early). No job control, no zombies.

use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};

use windows_sys::Win32::Foundation::{FALSE, HANDLE, WAIT_OBJECT_0};
use windows_sys::Win32::System::Threading::{
    GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_SYNCHRONIZE,
    WaitForSingleObject,
};

use super::group::leader;
use super::signals::{wait_any, wait_for_wake};
use super::stream::Fd;

/// The process `pid` to wait for and read the exit code of: the leader's handle
/// [`start`](super::start) kept, or else the process opened by its pid.
fn open_child(pid: i32) -> io::Result<OwnedHandle> {
    if let Some(kept) = leader(pid) {
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

/// Waits up to `d` for the child `pid` to end, or a console event or
/// [`wake`](super::signals::wake).
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

/// Windows keeps no zombies: each child is looked at with [`try_wait`].
pub fn reap_any() -> Option<(i32, crate::sys::ChildState)> {
    None
}
