//! Writes to retry's own stdout and stderr that a stalled reader cannot hang:
//! every wait for room is a `poll` that a signal (or a cancel pipe) also ends,
//! so SIGTERM takes effect while `… | sleep 20` reads nothing. A pipe is written
//! through a second, non-blocking open of it (`/proc/self/fd/N`), because
//! setting O_NONBLOCK on fd 1 itself would change it for every process sharing
//! it; a socket is written with MSG_DONTWAIT; anything else (a file, a
//! terminal, /dev/null) does not stall and is written as it is.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::FileExt;

use nix::errno::Errno;
use nix::fcntl::{OFlag, open};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::socket::{MsgFlags, send};
use nix::sys::stat::{Mode, SFlag, fstat};

use crate::domain::{Interrupted, Signal};
use crate::signals;
use crate::spool::{Held, Spool};
use crate::wait::Bound;

const CHUNK: usize = 64 << 10;

/// What ends a wait for room besides room.
#[derive(Clone, Copy)]
pub enum Until<'a> {
    /// A stopping signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT).
    Signal,
    /// A byte on this pipe: the attempt is over.
    Cancelled(BorrowedFd<'a>),
}

#[derive(Debug)]
pub enum WriteError {
    /// EPIPE when the reader went away, or any other error.
    Io(io::Error),
    /// The wait was ended as `Until` says: with `Until::Signal`, `signals::pending()`
    /// says which signal.
    Stopped,
}

impl WriteError {
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, WriteError::Io(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }
}

impl From<Errno> for WriteError {
    fn from(e: Errno) -> Self {
        WriteError::Io(e.into())
    }
}

enum Kind {
    /// A non-blocking open of the same pipe.
    Pipe(OwnedFd),
    Socket,
    /// The pipe has no reader left (reopening it said ENXIO).
    Gone,
    Blocking,
}

/// retry's fd 1 or 2, ready for writes that never block for long.
pub struct Output {
    fd: i32,
    kind: Kind,
}

impl Output {
    pub fn new(fd: i32) -> Output {
        let kind = match fstat(super::std_fd(fd)) {
            Ok(st) => match SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT {
                SFlag::S_IFIFO => reopen_nonblocking(fd),
                SFlag::S_IFSOCK => Kind::Socket,
                _ => Kind::Blocking,
            },
            Err(_) => Kind::Blocking,
        };
        Output { fd, kind }
    }

    fn fd(&self) -> BorrowedFd<'_> {
        match &self.kind {
            Kind::Pipe(fd) => fd.as_fd(),
            _ => super::std_fd(self.fd),
        }
    }

    fn try_write(&self, data: &[u8]) -> Result<usize, Errno> {
        match &self.kind {
            Kind::Pipe(fd) => nix::unistd::write(fd, data),
            Kind::Socket => send(
                self.fd,
                data,
                MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL,
            ),
            Kind::Gone => Err(Errno::EPIPE),
            Kind::Blocking => nix::unistd::write(super::std_fd(self.fd), data),
        }
    }

    /// Writes all of `data`, unless the reader goes away or `until` comes first.
    pub fn write_all(&self, mut data: &[u8], until: Until<'_>) -> Result<(), WriteError> {
        while !data.is_empty() {
            match self.try_write(data) {
                Ok(n) => data = &data[n..],
                Err(Errno::EINTR) => {}
                Err(Errno::EAGAIN) => self.wait_for_room(until)?,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Writes the first `len` bytes of `file`.
    pub fn write_file(&self, file: &File, len: u64, until: Until<'_>) -> Result<(), WriteError> {
        let mut buf = vec![0u8; CHUNK.min(len.max(1) as usize)];
        let mut offset = 0;
        while offset < len {
            let want = buf.len().min((len - offset) as usize);
            let n = match file.read_at(&mut buf[..want], offset) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(WriteError::Io(e)),
            };
            self.write_all(&buf[..n], until)?;
            offset += n as u64;
        }
        Ok(())
    }

    /// Writes the whole of `spool`.
    pub fn write_spool(&self, spool: &Spool, until: Until<'_>) -> Result<(), WriteError> {
        match spool.held() {
            Held::Memory(bytes) => self.write_all(bytes, until),
            Held::File(file, len) => self.write_file(file, len, until),
        }
    }

    fn wait_for_room(&self, until: Until<'_>) -> Result<(), WriteError> {
        match until {
            Until::Signal => {
                crate::wait::ready(self.fd(), PollFlags::POLLOUT, &Bound::signals_only())
                    .map_err(|_| WriteError::Stopped)
            }
            Until::Cancelled(cancel) => {
                let mut fds = [
                    PollFd::new(self.fd(), PollFlags::POLLOUT),
                    PollFd::new(cancel, PollFlags::POLLIN),
                ];
                match poll(&mut fds, PollTimeout::NONE) {
                    Ok(_) | Err(Errno::EINTR) => {}
                    Err(e) => return Err(e.into()),
                }
                if fds[1].any().unwrap_or(false) {
                    return Err(WriteError::Stopped);
                }
                Ok(())
            }
        }
    }
}

/// Turns a delivery's result into the run's: a reader that went away is not
/// retry's failure (the command's status stands); a signal is `Interrupted`.
pub fn deliver_result(written: Result<(), WriteError>, what: &str) -> anyhow::Result<()> {
    match written {
        Ok(()) => Ok(()),
        Err(e) if e.is_broken_pipe() => Ok(()),
        Err(WriteError::Stopped) => {
            Err(Interrupted(signals::pending().unwrap_or(Signal::new(0))).into())
        }
        Err(WriteError::Io(e)) => {
            Err(anyhow::Error::new(e).context(format!("cannot write {what} to stdout")))
        }
    }
}

fn reopen_nonblocking(fd: i32) -> Kind {
    let path = format!("/proc/self/fd/{fd}");
    let flags = OFlag::O_WRONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    match open(path.as_str(), flags, Mode::empty()) {
        Ok(fd) => Kind::Pipe(fd),
        // Opening a pipe for writing without a reader is ENXIO: writes would be EPIPE.
        Err(Errno::ENXIO) => Kind::Gone,
        Err(_) => Kind::Blocking,
    }
}

/// The raw fd, for callers that must compare (a pump forwarding to fd 1).
impl AsRawFd for Output {
    fn as_raw_fd(&self) -> i32 {
        self.fd
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::unistd::pipe;

    #[test]
    fn a_cancelled_wait_on_a_full_pipe_returns_instead_of_blocking() {
        let (_reader, writer) = pipe().unwrap();
        let out = Output {
            fd: writer.as_raw_fd(),
            kind: reopen_nonblocking(writer.as_raw_fd()),
        };
        assert!(matches!(out.kind, Kind::Pipe(_)));
        let (cancel_read, cancel_write) = pipe().unwrap();
        nix::unistd::write(&cancel_write, b"x").unwrap();
        let big = vec![0u8; 4 << 20];
        let result = out.write_all(&big, Until::Cancelled(cancel_read.as_fd()));
        assert!(matches!(result, Err(WriteError::Stopped)));
    }

    #[test]
    fn a_pipe_without_a_reader_is_a_broken_pipe() {
        let (reader, writer) = pipe().unwrap();
        drop(reader);
        let out = Output {
            fd: writer.as_raw_fd(),
            kind: reopen_nonblocking(writer.as_raw_fd()),
        };
        let (cancel_read, _cancel_write) = pipe().unwrap();
        let err = out
            .write_all(b"hello", Until::Cancelled(cancel_read.as_fd()))
            .unwrap_err();
        assert!(err.is_broken_pipe());
    }
}
