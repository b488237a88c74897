//! Writes to retry's own stdout and stderr that a stalled reader cannot hang:
//! every wait for room is a `poll` that a signal (or a cancel pipe) also ends,
//! so SIGTERM takes effect while `… | sleep 20` reads nothing. A pipe is written
//! through [`sys::PipeWriter`], because setting O_NONBLOCK on fd 1 itself would
//! change it for every process sharing it; a socket is sent to with MSG_DONTWAIT;
//! anything else (a file, a terminal, /dev/null) does not stall and is written as
//! it is.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::fs::FileExt;

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::stat::{SFlag, fstat};

use crate::domain::{Interrupted, Signal};
use crate::signals;
use crate::spool::{Held, Spool};
use crate::sys::{self, PipeWriter};
use crate::wait::Bound;

const CHUNK: usize = 64 << 10;

/// What ends a wait for room besides room.
#[derive(Clone, Copy)]
pub enum Until<'a> {
    /// A stopping signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT).
    Signal,
    /// The attempt is over.
    Cancelled(&'a sys::Cancel),
}

#[derive(Debug)]
pub enum WriteError {
    /// EPIPE when the reader went away, or any other error.
    Io(io::Error),
    /// The wait was ended as `Until` says: with `Until::Signal`, [`signals::pending()`](crate::signals::pending())
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
    Pipe(PipeWriter),
    Socket,
    /// The pipe has no reader left.
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
                SFlag::S_IFIFO => pipe_writer(super::std_fd(fd)),
                SFlag::S_IFSOCK => Kind::Socket,
                _ => Kind::Blocking,
            },
            Err(_) => Kind::Blocking,
        };
        Output { fd, kind }
    }

    /// What to wait on for room, and for which events.
    fn room(&self) -> (BorrowedFd<'_>, PollFlags) {
        match &self.kind {
            Kind::Pipe(pipe) => pipe.room(),
            _ => (super::std_fd(self.fd), PollFlags::POLLOUT),
        }
    }

    fn try_write(&self, data: &[u8]) -> Result<usize, Errno> {
        match &self.kind {
            Kind::Pipe(pipe) => pipe.try_write(data),
            Kind::Socket => sys::send_nonblocking(super::std_fd(self.fd), data),
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
        self.settle(until)
    }

    /// Waits until what the pipe's writer took on is written (at once elsewhere).
    fn settle(&self, until: Until<'_>) -> Result<(), WriteError> {
        if let Kind::Pipe(pipe) = &self.kind {
            while pipe.pending()? {
                self.wait_for_room(until)?;
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
        let (fd, events) = self.room();
        match until {
            Until::Signal => crate::wait::ready(fd, events, &Bound::signals_only())
                .map_err(|_| WriteError::Stopped),
            Until::Cancelled(cancel) => {
                let mut fds = [
                    PollFd::new(fd, events),
                    PollFd::new(cancel.fd(), PollFlags::POLLIN),
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

fn pipe_writer(fd: BorrowedFd<'_>) -> Kind {
    match PipeWriter::new(fd) {
        Ok(writer) => Kind::Pipe(writer),
        Err(e) if e.raw_os_error() == Some(Errno::EPIPE as i32) => Kind::Gone,
        // Written as it is: blocking, which a signal still interrupts (no SA_RESTART
        // wait is unbounded for long: the handler's byte wakes nothing here).
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
    use std::os::fd::AsFd;

    #[test]
    fn a_cancelled_wait_on_a_full_pipe_returns_instead_of_blocking() {
        let (_reader, writer) = pipe().unwrap();
        let out = Output {
            fd: writer.as_raw_fd(),
            kind: pipe_writer(writer.as_fd()),
        };
        assert!(matches!(out.kind, Kind::Pipe(_)));
        let cancel = sys::Cancel::new().unwrap();
        cancel.cancel();
        let big = vec![0u8; 4 << 20];
        let result = out.write_all(&big, Until::Cancelled(&cancel));
        assert!(matches!(result, Err(WriteError::Stopped)));
    }

    #[test]
    fn a_pipe_without_a_reader_is_a_broken_pipe() {
        let (reader, writer) = pipe().unwrap();
        drop(reader);
        let out = Output {
            fd: writer.as_raw_fd(),
            kind: pipe_writer(writer.as_fd()),
        };
        let cancel = sys::Cancel::new().unwrap();
        let err = out
            .write_all(b"hello", Until::Cancelled(&cancel))
            .unwrap_err();
        assert!(err.is_broken_pipe());
    }
}
