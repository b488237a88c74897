//! Writes to retry's own stdout and stderr that a stalled reader cannot hang:
//! every wait for room is one that a signal (or a cancel) also ends, so SIGTERM
//! takes effect while `… | sleep 20` reads nothing. How each kind of stream is
//! written without blocking is [`sys::StdOutput`]'s.

use std::fs::File;
use std::io;

use crate::domain::{Interrupted, Signal};
use crate::signals;
use crate::spool::{Held, Spool};
use crate::sys::{self, StdOutput};
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

/// retry's fd 1 or 2, ready for writes that never block for long.
pub struct Output {
    out: StdOutput<'static>,
}

impl Output {
    pub fn new(fd: i32) -> Output {
        Output {
            out: StdOutput::new(fd),
        }
    }

    /// Writes all of `data`, unless the reader goes away or `until` comes first.
    pub fn write_all(&self, mut data: &[u8], until: Until<'_>) -> Result<(), WriteError> {
        while !data.is_empty() {
            match self.out.try_write(data) {
                Ok(n) => data = &data[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.wait_for_room(until)?,
                Err(e) => return Err(WriteError::Io(e)),
            }
        }
        self.settle(until)
    }

    /// Waits until what the pipe's writer took on is written (at once elsewhere).
    fn settle(&self, until: Until<'_>) -> Result<(), WriteError> {
        while self.out.pending().map_err(WriteError::Io)? {
            self.wait_for_room(until)?;
        }
        Ok(())
    }

    /// Writes the first `len` bytes of `file`.
    pub fn write_file(&self, file: &File, len: u64, until: Until<'_>) -> Result<(), WriteError> {
        let mut buf = vec![0u8; CHUNK.min(len.max(1) as usize)];
        let mut offset = 0;
        while offset < len {
            let want = buf.len().min((len - offset) as usize);
            let n = match sys::read_at(file, &mut buf[..want], offset) {
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
        let room = match until {
            Until::Signal => {
                crate::wait::ready(&Bound::signals_only(), |slice| self.out.room_within(slice))
                    .is_ok()
            }
            Until::Cancelled(cancel) => self.out.room_or_cancel(cancel).map_err(WriteError::Io)?,
        };
        match room {
            true => Ok(()),
            false => Err(WriteError::Stopped),
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::fs::File;

    /// An output over a new pipe, and its read end when `keep_reader`.
    fn pipe_output(keep_reader: bool) -> (Output, Option<File>) {
        let (reader, writer) = sys::pipe(sys::PipeMode::Blocking).unwrap();
        // Leaked: the output borrows its stream for good, as it does retry's fd 1.
        let writer: &'static File = Box::leak(Box::new(File::from(writer)));
        let out = Output {
            out: StdOutput::over(sys::borrow(writer)),
        };
        (out, keep_reader.then(|| File::from(reader)))
    }

    #[test]
    fn a_cancelled_wait_on_a_full_pipe_returns_instead_of_blocking() {
        let (out, _reader) = pipe_output(true);
        let cancel = sys::Cancel::new().unwrap();
        cancel.cancel();
        let big = vec![0u8; 4 << 20];
        let result = out.write_all(&big, Until::Cancelled(&cancel));
        assert!(matches!(result, Err(WriteError::Stopped)));
    }

    #[test]
    fn a_pipe_without_a_reader_is_a_broken_pipe() {
        let (out, _reader) = pipe_output(false);
        let cancel = sys::Cancel::new().unwrap();
        let err = out
            .write_all(b"hello", Until::Cancelled(&cancel))
            .unwrap_err();
        assert!(err.is_broken_pipe());
    }
}
