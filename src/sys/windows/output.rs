//! retry's stdout or stderr on Windows, written so that a stalled reader cannot hang
//! it: a pipe through a writer thread of its own (`writer.rs`), waited for with the
//! caller's own end (a deadline, a console event, a cancel); a file, a console or NUL
//! does not stall and is written as it is.

use std::io;
use std::os::windows::io::AsRawHandle;

use windows_sys::Win32::Foundation::{FALSE, HANDLE, WAIT_FAILED, WAIT_OBJECT_0};
use windows_sys::Win32::System::Threading::WaitForMultipleObjects;

use super::cancel::Cancel;
use super::signals::{wait_any, wait_ms};
use super::stream::{Fd, as_file, std_stream, stream_kind};
use super::writer::PipeWriter;

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
    /// console event or a [`wake`](super::signals::wake): whether there may be room.
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
