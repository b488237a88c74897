//! Starting a process on Windows: a command line as the program reads it (a line for
//! `cmd /c` as it is written), and the start itself, suspended in a process group of its
//! own, put in a new Job Object, then resumed, so that nothing it starts can leave the
//! job first. The shell that runs a user's command line is `cmd /c`.

use std::io;
use std::mem::size_of;
use std::os::windows::io::{AsHandle, AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::path::Path;

use windows_sys::Win32::Foundation::{FALSE, HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
};
use windows_sys::Win32::System::Threading::{
    CREATE_NEW_PROCESS_GROUP, CREATE_SUSPENDED, OpenThread, ResumeThread, THREAD_SUSPEND_RESUME,
};

use super::group::hold_group;
use super::job_object::JobObject;
use super::signals::Signal;

/// The shell that runs a command line of the user's, and the flag that hands it the line.
pub const SHELL: [&str; 2] = ["cmd", "/c"];

/// `cmd /c` runs every crontab line: a crontab's `SHELL=` does not choose it.
pub const SHELL_LINES: bool = false;

/// A process started in a group of its own, held with everything it starts in a Job
/// Object kept for the group ([`signal_group`](super::signal_group),
/// [`release_group`](super::release_group)): ending the job ends the tree, and retry's
/// end (its handle closing) does too.
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
/// no foreground to hand over (`_foreground`), and no signal disposition to give back
/// (`_timeout_signal`: a timeout ends the job).
pub fn start(
    mut command: std::process::Command,
    _foreground: bool,
    _timeout_signal: Signal,
) -> io::Result<Started> {
    use std::os::windows::process::CommandExt;
    let job = JobObject::new()?;
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

/// Starts a process that must not outlive retry (a scheduler's slot run) as [`start`]
/// does: its Job Object ends with retry, whatever ends retry.
pub fn start_tied(command: std::process::Command) -> io::Result<Started> {
    start(command, false, Signal::SIGTERM)
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

#[cfg(test)]
/// Starts the command in a process group of its own, which Ctrl-Break can be sent to.
pub fn own_process_group(command: &mut std::process::Command) {
    use std::os::windows::process::CommandExt;
    command.creation_flags(CREATE_NEW_PROCESS_GROUP);
}
