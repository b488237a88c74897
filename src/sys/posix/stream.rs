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
use super::PipeMode;
use crate::sys::StreamKind;

/// A descriptor borrowed for a call, and one owned.
pub use std::os::fd::{BorrowedFd as Fd, OwnedFd as Owned};

/// retry's own stdin, stdout or stderr (0, 1 or 2), borrowed for the process's life.
pub fn std_stream(fd: i32) -> Fd<'static> {
    assert!((0..=2).contains(&fd), "fd {fd} is not a standard stream");
    // SAFETY: fds 0, 1 and 2 stay open for the whole process: retry never closes them.
    unsafe { Fd::borrow_raw(fd) }
}

/// `file`'s descriptor, borrowed.
pub fn borrow(file: &std::fs::File) -> Fd<'_> {
    std::os::fd::AsFd::as_fd(file)
}

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

/// Whether `fd` is the null device (`>/dev/null`): a character device with /dev/null's
/// device number.
pub fn is_null_device(fd: BorrowedFd<'_>) -> bool {
    let is_char = |st: &nix::sys::stat::FileStat| {
        SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFCHR
    };
    match (fstat(fd), nix::sys::stat::stat("/dev/null")) {
        (Ok(st), Ok(null)) => is_char(&st) && is_char(&null) && st.st_rdev == null.st_rdev,
        _ => false,
    }
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
    let (child_end, our_end) = super::pipe(PipeMode::Blocking)?;
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

/// Opens the null device on any of the standard streams that is closed (the lowest free
/// descriptor is the closed one, inherited by commands as their own); whether stdout
/// was closed.
pub fn open_standard_streams() -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::BorrowedFd;
    // SAFETY: 0, 1 and 2 are only polled; a closed one reports POLLNVAL.
    let fds = [0, 1, 2].map(|fd| unsafe { BorrowedFd::borrow_raw(fd) });
    let mut polled = fds.map(|fd| PollFd::new(fd, PollFlags::empty()));
    if poll(&mut polled, PollTimeout::ZERO).is_err() {
        return false;
    }
    let mut stdout_closed = false;
    for (fd, p) in polled.iter().enumerate() {
        if p.revents().is_some_and(|r| r.contains(PollFlags::POLLNVAL)) {
            use nix::fcntl::{OFlag, open};
            stdout_closed |= fd == 1;
            // The lowest free descriptor is the closed one, checked in order; without
            // O_CLOEXEC, since the command inherits it as its own.
            match open("/dev/null", OFlag::O_RDWR, nix::sys::stat::Mode::empty()) {
                Ok(file) => {
                    use std::os::fd::IntoRawFd;
                    let got = file.into_raw_fd();
                    if got != fd as i32 {
                        let _ = nix::unistd::close(got);
                    }
                }
                Err(_) => std::process::abort(),
            }
        }
    }
    stdout_closed
}
