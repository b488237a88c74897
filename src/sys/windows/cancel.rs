//! A cancel that a thread blocked on a pipe sees within [`PEEK_EVERY`]: a manual-reset
//! event, waited on between looks at the pipe, since an anonymous pipe cannot be waited
//! on; and the wait for a pipe's bytes that it ends.

use std::io;
use std::os::windows::io::{AsRawHandle, BorrowedHandle, FromRawHandle, OwnedHandle, RawHandle};

use windows_sys::Win32::Foundation::{FALSE, HANDLE, TRUE, WAIT_OBJECT_0};
use windows_sys::Win32::System::Pipes::PeekNamedPipe;
use windows_sys::Win32::System::Threading::{CreateEventW, SetEvent, WaitForSingleObject};

use super::signals::wait_ms;

/// A cancel that a thread reading a pipe sees within [`PEEK_EVERY`]: a manual-reset
/// event, set once.
pub struct Cancel(pub(super) OwnedHandle);

/// How often a wait for a pipe's bytes looks at the pipe (anonymous pipes cannot be
/// waited on): the cancel event is waited on in between.
pub(super) const PEEK_EVERY: std::time::Duration = std::time::Duration::from_millis(10);

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

    pub(super) fn cancelled_within(&self, d: std::time::Duration) -> bool {
        // SAFETY: the event is open while `self` lives.
        let got = unsafe { WaitForSingleObject(self.0.as_raw_handle() as HANDLE, wait_ms(d)) };
        got == WAIT_OBJECT_0
    }
}

/// Waits until the pipe `handle` has bytes or is broken (true: a read will not block)
/// or `cancel` is cancelled (false).
pub fn wait_readable(handle: BorrowedHandle<'_>, cancel: &Cancel) -> io::Result<bool> {
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

/// As [`wait_readable`]: a reader gone from retry's output is not seen here (see
/// [`reader_gone`](super::reader_gone)), so `_out` is not watched.
pub fn wait_readable_or_reader_gone(
    handle: BorrowedHandle<'_>,
    _out: BorrowedHandle<'_>,
    cancel: &Cancel,
) -> io::Result<crate::sys::Ready> {
    Ok(if wait_readable(handle, cancel)? {
        crate::sys::Ready::Readable
    } else {
        crate::sys::Ready::Cancelled
    })
}
