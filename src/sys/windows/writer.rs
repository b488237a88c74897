//! A pipe's writer thread, for retry's stdout or stderr when it is a pipe: see
//! [`StdOutput`](super::StdOutput), which hands it each write and waits on its `idle`
//! event.

use std::fs::File;
use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};

use windows_sys::Win32::Foundation::{HANDLE, TRUE};
use windows_sys::Win32::System::Threading::{CreateEventW, ResetEvent, SetEvent};

use super::stream::Fd;

/// Writes to a pipe on a thread of its own. Windows' anonymous pipes have no wait for
/// room, and making retry's end non-blocking (`PIPE_NOWAIT`) would change it for every
/// process that shares it. So a write is handed to the thread, and the caller waits on
/// the `idle` event with its own end (a deadline, a signal, a cancel). A thread that a
/// reader stalls for good is left blocked; retry's exit ends it.
pub(super) struct PipeWriter {
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
    pub(super) fn new(handle: Fd<'_>) -> io::Result<PipeWriter> {
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

    pub(super) fn idle_handle(&self) -> RawHandle {
        self.shared.idle.as_raw_handle()
    }

    pub(super) fn take_on(&self, data: &[u8]) -> io::Result<usize> {
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

    pub(super) fn pending(&self) -> io::Result<bool> {
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
