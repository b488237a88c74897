//! retry's standard streams and the pipes it feeds: what a stream is, where a file
//! stands, reads that report EINTR and EAGAIN as `io::ErrorKind`s, and writes to a
//! non-blocking pipe that a cancel ends.

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::stat::{SFlag, fstat};
use nix::unistd::{Whence, lseek};

use super::Cancel;
use crate::sys::{PipeMode, StreamKind};

/// What the open file `fd` is; `None` when it cannot be told (a closed descriptor).
pub fn stream_kind(fd: BorrowedFd<'_>) -> Option<StreamKind> {
    let st = fstat(fd).ok()?;
    Some(
        match SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT {
            SFlag::S_IFREG => StreamKind::File,
            SFlag::S_IFIFO => StreamKind::Pipe,
            SFlag::S_IFSOCK => StreamKind::Socket,
            _ => StreamKind::Other,
        },
    )
}

/// Where the file `fd` stands (its offset).
pub fn position(fd: BorrowedFd<'_>) -> io::Result<i64> {
    Ok(lseek(fd, 0, Whence::SeekCur)?)
}

/// Moves the file `fd` to `offset`.
pub fn seek_to(fd: BorrowedFd<'_>, offset: i64) -> io::Result<()> {
    lseek(fd, offset, Whence::SeekSet)?;
    Ok(())
}

/// Reads what `fd` has (EINTR is `Interrupted`, EAGAIN `WouldBlock`).
pub fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    Ok(nix::unistd::read(fd, buf)?)
}

/// A pipe to feed a command's stdin through: the command's end, blocking, and
/// retry's, non-blocking, so that [`write_or_cancel`] never blocks.
pub fn feed_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (child_end, our_end) = crate::sys::pipe(PipeMode::Blocking)?;
    let flags = OFlag::from_bits_truncate(fcntl(&our_end, FcntlArg::F_GETFL)?);
    fcntl(&our_end, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok((child_end, our_end))
}

/// Writes all of `data` to retry's end of a [`feed_pipe`]; false if `cancel` came or
/// the command stopped reading first.
pub fn write_or_cancel(to: &OwnedFd, mut data: &[u8], cancel: &Cancel) -> bool {
    while !data.is_empty() {
        match nix::unistd::write(to, data) {
            Ok(n) => data = &data[n..],
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) => {
                let mut fds = [
                    PollFd::new(std::os::fd::AsFd::as_fd(to), PollFlags::POLLOUT),
                    PollFd::new(cancel.fd(), PollFlags::POLLIN),
                ];
                let _ = poll(&mut fds, PollTimeout::NONE);
                if fds[1].any().unwrap_or(false) {
                    return false;
                }
            }
            Err(_) => return false,
        }
    }
    true
}
