//! A cancel that a thread blocked on a pipe sees at once: a pipe of its own, polled
//! beside the descriptor the thread waits on, that [`Cancel::cancel`] writes a byte to.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use super::PipeMode;

pub struct Cancel {
    read: OwnedFd,
    write: OwnedFd,
}

impl Cancel {
    pub fn new() -> io::Result<Cancel> {
        let (read, write) = super::pipe(PipeMode::Blocking)?;
        Ok(Cancel { read, write })
    }

    /// Ends every wait on this cancel, now and later.
    pub fn cancel(&self) {
        let _ = nix::unistd::write(&self.write, b"x");
    }

    /// What a poll watches to see the cancel (readable once cancelled).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.read.as_fd()
    }
}

/// Waits until `fd` is readable (true) or `cancel` is cancelled (false).
pub fn wait_readable(fd: BorrowedFd<'_>, cancel: &Cancel) -> io::Result<bool> {
    loop {
        let mut fds = [
            PollFd::new(fd, PollFlags::POLLIN),
            PollFd::new(cancel.fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
            Ok(_) => {}
        }
        if fds[1].any().unwrap_or(false) {
            return Ok(false);
        }
        if fds[0].any().unwrap_or(false) {
            return Ok(true);
        }
    }
}

/// Waits as [`wait_readable`] does, and also until the reader of `out` (a pipe or a
/// socket retry writes to) has gone: a held stdout still notices its reader leave.
pub fn wait_readable_or_reader_gone(
    fd: BorrowedFd<'_>,
    out: BorrowedFd<'_>,
    cancel: &Cancel,
) -> io::Result<crate::sys::Ready> {
    use crate::sys::Ready;
    loop {
        let mut fds = [
            PollFd::new(fd, PollFlags::POLLIN),
            PollFd::new(cancel.fd(), PollFlags::POLLIN),
            // No event asked: a write end reports its reader's close as POLLERR (POLLHUP
            // on some systems and for sockets).
            PollFd::new(out, PollFlags::empty()),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
            Ok(_) => {}
        }
        let gone = PollFlags::POLLERR | PollFlags::POLLHUP;
        if fds[1].any().unwrap_or(false) {
            return Ok(Ready::Cancelled);
        }
        if fds[2].revents().is_some_and(|r| r.intersects(gone)) {
            return Ok(Ready::ReaderGone);
        }
        if fds[0].any().unwrap_or(false) {
            return Ok(Ready::Readable);
        }
    }
}
