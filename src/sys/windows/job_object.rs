//! The Job Object that holds an attempt's whole tree (`JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`):
//! made, given a process, ended, and asked how many of its processes still run. Which
//! group owns which job is `group.rs`'s.

use std::ffi::c_void;
use std::io;
use std::mem::size_of;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};

use windows_sys::Win32::Foundation::{FALSE, HANDLE};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JobObjectBasicAccountingInformation, JobObjectExtendedLimitInformation,
    QueryInformationJobObject, SetInformationJobObject, TerminateJobObject,
};

/// A Job Object whose processes all end when it is ended or closed: every process an
/// attempt starts is put in one, and its children are in it from birth.
pub struct JobObject(OwnedHandle);

impl JobObject {
    /// A new, unnamed job that kills its processes when its last handle closes.
    pub fn new() -> io::Result<JobObject> {
        // SAFETY: no attributes, no name: a private job, checked and owned below.
        let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if raw.is_null() {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a handle just returned, owned from here on.
        let job = JobObject(unsafe { OwnedHandle::from_raw_handle(raw as RawHandle) });
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
