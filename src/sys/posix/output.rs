//! retry's fd 1 or 2, written so that a stalled reader cannot hang it: a pipe through
//! the system's [`PipeWriter`], because setting O_NONBLOCK on fd 1 itself would change it
//! for every process sharing the pipe (Linux writes through a second, non-blocking open
//! of it, `/proc/self/fd/N`; other systems, whose `/dev/fd/N` is the same open file, hand
//! each chunk to a thread of the pipe's own that makes the blocking write while the
//! caller waits in `poll`); a socket with MSG_DONTWAIT and no SIGPIPE; anything else (a
//! file, a terminal, /dev/null) does not stall and is written as it is.

use std::io;
use std::os::fd::BorrowedFd;
use std::time::Duration;

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use super::Cancel;
use super::stream::std_stream;
use crate::sys::StreamKind;
use crate::sys::os::{NO_SIGPIPE, PipeWriter};

enum Kind {
    Pipe(PipeWriter),
    Socket,
    /// The pipe has no reader left.
    Gone,
    Blocking,
}

/// retry's fd 1 or 2, ready for writes that never block for long.
pub struct StdOutput<'a> {
    fd: BorrowedFd<'a>,
    kind: Kind,
}

impl StdOutput<'static> {
    pub fn new(fd: i32) -> StdOutput<'static> {
        StdOutput::over(std_stream(fd))
    }
}

impl<'a> StdOutput<'a> {
    /// The writer of `fd`, which need not be a standard stream (a test's pipe).
    pub fn over(fd: BorrowedFd<'a>) -> StdOutput<'a> {
        let kind = match super::stream_kind(fd) {
            Some(StreamKind::Pipe) => pipe_writer(fd),
            Some(StreamKind::Socket) => Kind::Socket,
            _ => Kind::Blocking,
        };
        StdOutput { fd, kind }
    }

    /// What to wait on for room, and for which events.
    fn room(&self) -> (BorrowedFd<'_>, PollFlags) {
        match &self.kind {
            Kind::Pipe(pipe) => pipe.room(),
            _ => (self.fd, PollFlags::POLLOUT),
        }
    }

    /// Writes what fits of `data` now: `WouldBlock` when nothing does (wait for room
    /// then), `Interrupted` at a signal, `BrokenPipe` when the reader is gone.
    pub fn try_write(&self, data: &[u8]) -> io::Result<usize> {
        let written = match &self.kind {
            Kind::Pipe(pipe) => pipe.try_write(data),
            Kind::Socket => send_nonblocking(self.fd, data),
            Kind::Gone => Err(Errno::EPIPE),
            Kind::Blocking => nix::unistd::write(self.fd, data),
        };
        Ok(written?)
    }

    /// Whether bytes taken on earlier are still on their way (wait for room until
    /// they are not); the error of a write that failed since, once.
    pub fn pending(&self) -> io::Result<bool> {
        match &self.kind {
            Kind::Pipe(pipe) => Ok(pipe.pending()?),
            _ => Ok(false),
        }
    }

    /// Waits up to `slice` (at most about a minute) for room, ending early at a caught
    /// signal or a wake-up: whether there may be room.
    pub fn room_within(&self, slice: Duration) -> bool {
        let (fd, events) = self.room();
        super::signals::poll_with_wake(fd, events, slice)
    }

    /// Waits for room until `cancel` comes: false when it came.
    pub fn room_or_cancel(&self, cancel: &Cancel) -> io::Result<bool> {
        let (fd, events) = self.room();
        let mut fds = [
            PollFd::new(fd, events),
            PollFd::new(cancel.fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
        Ok(!fds[1].any().unwrap_or(false))
    }
}

fn pipe_writer(fd: BorrowedFd<'_>) -> Kind {
    match PipeWriter::new(fd) {
        Ok(writer) => Kind::Pipe(writer),
        Err(e) if e.raw_os_error() == Some(Errno::EPIPE as i32) => Kind::Gone,
        // Written as it is: blocking, which a signal still interrupts (no SA_RESTART
        // wait is unbounded for long: the handler's byte wakes nothing here).
        Err(_) => Kind::Blocking,
    }
}

/// Sends what fits of `data` on the socket `fd` now (EAGAIN when nothing does), with
/// EPIPE and no SIGPIPE when the peer is gone; the socket's own mode is untouched.
fn send_nonblocking(fd: BorrowedFd<'_>, data: &[u8]) -> Result<usize, Errno> {
    use std::os::fd::AsRawFd;
    let flags = nix::sys::socket::MsgFlags::MSG_DONTWAIT | NO_SIGPIPE;
    nix::sys::socket::send(fd.as_raw_fd(), data, flags)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::unistd::pipe;
    use std::os::fd::AsFd;

    #[test]
    fn a_cancelled_wait_on_a_full_pipe_returns_instead_of_blocking() {
        let (_reader, writer) = pipe().unwrap();
        let out = StdOutput::over(writer.as_fd());
        assert!(matches!(out.kind, Kind::Pipe(_)));
        let cancel = Cancel::new().unwrap();
        cancel.cancel();
        let big = vec![0u8; 4 << 20];
        let mut data = &big[..];
        loop {
            match out.try_write(data) {
                Ok(n) => data = &data[n..],
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
        }
        assert!(!out.room_or_cancel(&cancel).unwrap());
    }

    #[test]
    fn a_pipe_without_a_reader_is_a_broken_pipe() {
        let (reader, writer) = pipe().unwrap();
        drop(reader);
        let out = StdOutput::over(writer.as_fd());
        let err = out.try_write(b"hello").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }
}
