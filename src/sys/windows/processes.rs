//! The processes there are on Windows: every process and its parent from a Toolhelp
//! snapshot, when each started (`GetProcessTimes`), and retry's own children among them.
//! Windows has no process groups (each process is its own) and keeps no zombies.

use std::mem::size_of;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};

use windows_sys::Win32::Foundation::{FALSE, FILETIME, HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, PROCESSENTRY32W, Process32FirstW, Process32NextW, TH32CS_SNAPPROCESS,
};
use windows_sys::Win32::System::Threading::{
    GetProcessTimes, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
};

use crate::sys::Process;

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
