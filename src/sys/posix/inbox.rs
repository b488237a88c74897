//! Many pipes read by one thread: one `poll(2)` over every pipe and the self-pipe, so a
//! scheduler reads the output of all its slots' runs without a thread per pipe, and
//! wakes at once for a signal or another thread's wake-up.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use super::signals::{drain_wakes, wake_fd};
use crate::sys::Delivery;

/// Most bytes taken from one pipe per wait, so one busy writer cannot starve the rest.
const CHUNK: usize = 64 << 10;

/// Pipes to read, each known by the caller's number.
#[derive(Default)]
pub struct Inbox {
    pipes: HashMap<u64, OwnedFd>,
}

impl Inbox {
    pub fn new() -> Inbox {
        Inbox::default()
    }

    /// Reads `pipe` from now on as `id`.
    pub fn add(&mut self, id: u64, pipe: OwnedFd) -> io::Result<()> {
        let flags = OFlag::from_bits_truncate(fcntl(&pipe, FcntlArg::F_GETFL)?);
        fcntl(&pipe, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
        self.pipes.insert(id, pipe);
        Ok(())
    }

    /// Stops reading `id` and closes it.
    pub fn remove(&mut self, id: u64) {
        self.pipes.remove(&id);
    }

    /// Waits up to `timeout` for bytes on any pipe `wanted` takes, a signal or a
    /// wake-up; returns what the pipes sent (nothing when the wait ended otherwise).
    pub fn wait(
        &mut self,
        timeout: Duration,
        wanted: impl Fn(u64) -> bool,
    ) -> Vec<(u64, Delivery)> {
        let ready = self.ready(timeout, wanted);
        let mut out = Vec::new();
        for id in ready {
            let Some(pipe) = self.pipes.get(&id) else {
                continue;
            };
            let mut buf = vec![0u8; CHUNK];
            match nix::unistd::read(pipe.as_fd(), &mut buf) {
                Ok(0) | Err(Errno::EIO | Errno::EBADF) => {
                    self.pipes.remove(&id);
                    out.push((id, Delivery::End));
                }
                Ok(n) => {
                    buf.truncate(n);
                    out.push((id, Delivery::Bytes(buf)));
                }
                Err(_) => {}
            }
        }
        out
    }

    /// The pipes that have bytes (or reached their end) within `timeout`.
    fn ready(&self, timeout: Duration, wanted: impl Fn(u64) -> bool) -> Vec<u64> {
        let ids: Vec<u64> = self
            .pipes
            .keys()
            .copied()
            .filter(|id| wanted(*id))
            .collect();
        let mut fds: Vec<PollFd<'_>> = ids
            .iter()
            .map(|id| PollFd::new(self.pipes[id].as_fd(), PollFlags::POLLIN))
            .collect();
        let wake = wake_fd();
        if let Some(wake) = wake {
            fds.push(PollFd::new(wake, PollFlags::POLLIN));
        }
        let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        let timeout = PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX);
        if poll(&mut fds, timeout).is_err() {
            return Vec::new();
        }
        if wake.is_some() && fds.pop().is_some_and(|w| w.any().unwrap_or(false)) {
            drain_wakes();
        }
        ids.into_iter()
            .zip(fds.iter())
            .filter(|(_, fd)| fd.any().unwrap_or(false))
            .map(|(id, _)| id)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_and_ends_of_several_pipes_are_delivered_by_one_wait() {
        let mut inbox = Inbox::new();
        let (r1, w1) = crate::sys::pipe(crate::sys::PipeMode::Blocking).unwrap();
        let (r2, w2) = crate::sys::pipe(crate::sys::PipeMode::Blocking).unwrap();
        inbox.add(1, r1).unwrap();
        inbox.add(2, r2).unwrap();
        nix::unistd::write(&w1, b"one\n").unwrap();
        drop(w2);
        let all = |_| true;
        let mut got = inbox.wait(Duration::from_secs(5), all);
        got.sort_by_key(|(id, _)| *id);
        assert_eq!(
            got,
            [(1, Delivery::Bytes(b"one\n".to_vec())), (2, Delivery::End)]
        );
        assert!(inbox.wait(Duration::from_millis(10), all).is_empty());
        drop(w1);
        assert!(
            inbox
                .wait(Duration::from_millis(10), |id| id != 1)
                .is_empty(),
            "not wanted"
        );
        assert_eq!(
            inbox.wait(Duration::from_secs(5), all),
            [(1, Delivery::End)]
        );
        assert!(
            inbox.pipes.is_empty(),
            "a pipe that ended is closed and forgotten"
        );
    }
}
