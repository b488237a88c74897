//! Many pipes read for one thread: Windows has no `poll` for anonymous pipes, so each
//! pipe is read by a thread of its own that hands its bytes over and wakes the waiting
//! one, which a console event or another thread's wake-up wakes too.

use std::fs::File;
use std::io;
use std::os::windows::io::{AsHandle, OwnedHandle};

use super::cancel::{Cancel, wait_readable};
use super::signals::{wait_for_wake, wake};
use crate::sys::Delivery;

/// Pipes to read, each known by the caller's number: on Windows, which has no `poll`
/// for anonymous pipes, each is read by a thread of its own that hands its bytes over
/// and wakes the waiting one.
#[derive(Default)]
pub struct Inbox {
    readers: std::collections::HashMap<u64, std::sync::Arc<Cancel>>,
    delivered: std::sync::Arc<std::sync::Mutex<Vec<(u64, Delivery)>>>,
}

impl Inbox {
    pub fn new() -> Inbox {
        Inbox::default()
    }

    /// Reads `pipe` from now on as `id`, on a thread of its own.
    pub fn add(&mut self, id: u64, pipe: OwnedHandle) -> io::Result<()> {
        let cancel = std::sync::Arc::new(Cancel::new()?);
        let theirs = std::sync::Arc::clone(&cancel);
        let delivered = std::sync::Arc::clone(&self.delivered);
        std::thread::Builder::new()
            .name("inbox".into())
            .spawn(move || read_into(id, File::from(pipe), &theirs, &delivered))?;
        self.readers.insert(id, cancel);
        Ok(())
    }

    /// Stops reading `id` (its thread ends at its next look at the cancel).
    pub fn remove(&mut self, id: u64) {
        if let Some(cancel) = self.readers.remove(&id) {
            cancel.cancel();
        }
    }

    /// Waits up to `timeout` for bytes on any pipe, a console event or a wake-up. Each
    /// pipe's thread reads on its own, so what is not `_wanted` now is delivered too.
    pub fn wait(
        &mut self,
        timeout: std::time::Duration,
        _wanted: impl Fn(u64) -> bool,
    ) -> Vec<(u64, Delivery)> {
        let empty = || lock(&self.delivered).is_empty();
        if empty() {
            wait_for_wake(timeout);
        }
        let out = std::mem::take(&mut *lock(&self.delivered));
        for (id, delivery) in &out {
            if *delivery == Delivery::End {
                self.readers.remove(id);
            }
        }
        out
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An [`Inbox`] reader: hands over what `file` sends until its end or the cancel.
fn read_into(
    id: u64,
    file: File,
    cancel: &Cancel,
    delivered: &std::sync::Mutex<Vec<(u64, Delivery)>>,
) {
    use std::io::Read;
    loop {
        if !matches!(wait_readable(file.as_handle(), cancel), Ok(true)) {
            return;
        }
        let mut buf = vec![0u8; 64 << 10];
        let delivery = match (&file).read(&mut buf) {
            Ok(0) | Err(_) => Delivery::End,
            Ok(n) => {
                buf.truncate(n);
                Delivery::Bytes(buf)
            }
        };
        let end = delivery == Delivery::End;
        lock(delivered).push((id, delivery));
        wake();
        if end {
            return;
        }
    }
}
