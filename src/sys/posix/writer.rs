//! A pipe's writer thread, for systems whose `/dev/fd/N` is the same open file as fd N
//! (no second, non-blocking open of a shared pipe): see `output.rs`, which writes retry's
//! stdout or stderr through it.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex, OnceLock, mpsc};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::unistd::{read, write};

use super::PipeMode;

/// A pipe's writer thread: it makes each blocking write while its callers wait in
/// `poll` on a token pipe, which holds one byte exactly while no write is in flight.
/// Taking the byte is the right to hand the thread one chunk; the thread puts it back
/// when the chunk is written (or failed). A caller that stops waiting leaves its chunk
/// to the thread: the next one is written after it, and whatever is still in flight
/// when retry exits is lost with it. retry's stdout and stderr have one writer each for
/// the life of the process, so chunks written to one go out in order.
pub struct PipeWriter(Arc<Writer>);

struct Writer {
    token: OwnedFd,
    chunks: mpsc::Sender<Vec<u8>>,
    shared: Arc<Shared>,
}

/// What the thread and the callers share.
struct Shared {
    /// The token pipe's write end.
    token: OwnedFd,
    /// The first error of a write since a caller last looked.
    error: Mutex<Option<Errno>>,
}

impl Shared {
    fn put_token_back(&self) {
        // Never full: it holds at most the one byte.
        let _ = write(&self.token, &[0]);
    }

    fn take_error(&self) -> Option<Errno> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// The writers of the standard descriptors, made on first use.
static STANDARD: [OnceLock<Arc<Writer>>; 3] = [const { OnceLock::new() }; 3];

impl PipeWriter {
    /// The writer of `fd`: the one of a standard descriptor, or a new one.
    pub fn new(fd: BorrowedFd<'_>) -> io::Result<PipeWriter> {
        let Some(slot) = usize::try_from(fd.as_raw_fd())
            .ok()
            .and_then(|i| STANDARD.get(i))
        else {
            return Writer::new(fd).map(|w| PipeWriter(Arc::new(w)));
        };
        if let Some(writer) = slot.get() {
            return Ok(PipeWriter(Arc::clone(writer)));
        }
        let writer = Arc::new(Writer::new(fd)?);
        // Two threads that race here get the first one made; the other's ends unused.
        Ok(PipeWriter(Arc::clone(slot.get_or_init(|| writer))))
    }

    pub fn try_write(&self, data: &[u8]) -> Result<usize, Errno> {
        self.0.try_write(data)
    }

    pub fn room(&self) -> (BorrowedFd<'_>, PollFlags) {
        self.0.room()
    }

    pub fn pending(&self) -> Result<bool, Errno> {
        self.0.pending()
    }
}

impl Writer {
    /// A writer of its own for `fd` (a copy of it: the same open pipe), with a thread
    /// that lives until the writer is dropped and its last chunk written.
    fn new(fd: BorrowedFd<'_>) -> io::Result<Writer> {
        let target = fd.try_clone_to_owned()?;
        let (token, token_write) = super::pipe(PipeMode::Nonblocking)?;
        write(&token_write, &[0])?;
        let shared = Arc::new(Shared {
            token: token_write,
            error: Mutex::new(None),
        });
        let (chunks, queue) = mpsc::channel::<Vec<u8>>();
        let theirs = Arc::clone(&shared);
        std::thread::Builder::new()
            .name(format!("fd{}-writer", fd.as_raw_fd()))
            .spawn(move || {
                for chunk in queue {
                    if let Err(e) = write_blocking(target.as_fd(), &chunk) {
                        let mut error = theirs.error.lock().unwrap_or_else(|p| p.into_inner());
                        error.get_or_insert(e);
                    }
                    theirs.put_token_back();
                }
            })?;
        Ok(Writer {
            token,
            chunks,
            shared,
        })
    }

    /// Hands all of `data` to the thread when no chunk is in flight; EAGAIN otherwise.
    /// The error of an earlier chunk comes first.
    fn try_write(&self, data: &[u8]) -> Result<usize, Errno> {
        match read(self.token.as_fd(), &mut [0u8]) {
            Ok(1) => {}
            Ok(_) => return Err(Errno::EIO),
            Err(e) => return Err(e),
        }
        if let Some(e) = self.shared.take_error() {
            self.shared.put_token_back();
            return Err(e);
        }
        if self.chunks.send(data.to_vec()).is_err() {
            // The thread is gone (it cannot panic: only a failed spawn ends it early).
            self.shared.put_token_back();
            return Err(Errno::EIO);
        }
        Ok(data.len())
    }

    /// The token pipe: readable once no chunk is in flight.
    fn room(&self) -> (BorrowedFd<'_>, PollFlags) {
        (self.token.as_fd(), PollFlags::POLLIN)
    }

    fn pending(&self) -> Result<bool, Errno> {
        let mut fds = [PollFd::new(self.token.as_fd(), PollFlags::POLLIN)];
        let free = poll(&mut fds, PollTimeout::ZERO)? > 0;
        match (free, self.shared.take_error()) {
            (false, _) => Ok(true),
            (true, Some(e)) => Err(e),
            (true, None) => Ok(false),
        }
    }
}

/// Writes all of `data` to `fd`, waiting as long as it takes (on this thread alone). A
/// pipe someone else made non-blocking is waited for in `poll`.
fn write_blocking(fd: BorrowedFd<'_>, mut data: &[u8]) -> Result<(), Errno> {
    while !data.is_empty() {
        match write(fd, data) {
            Ok(n) => data = &data[n..],
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) => {
                let mut fds = [PollFd::new(fd, PollFlags::POLLOUT)];
                match poll(&mut fds, PollTimeout::NONE) {
                    Ok(_) | Err(Errno::EINTR) => {}
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    use std::time::{Duration, Instant};

    fn wait_until_settled(writer: &PipeWriter, within: Duration) -> Result<bool, Errno> {
        let end = Instant::now() + within;
        loop {
            match writer.pending() {
                Ok(true) if Instant::now() < end => {
                    let (fd, events) = writer.room();
                    let _ = poll(&mut [PollFd::new(fd, events)], PollTimeout::from(10u8));
                }
                other => return other,
            }
        }
    }

    #[test]
    fn the_writer_thread_writes_in_order_and_takes_one_chunk_at_a_time() {
        let (reader, target) = nix::unistd::pipe().unwrap();
        let writer = PipeWriter::new(target.as_fd()).unwrap();
        // Larger than a pipe holds: the thread blocks until it is read.
        let big = vec![b'a'; 1 << 20];
        assert_eq!(writer.try_write(&big), Ok(big.len()));
        assert_eq!(writer.try_write(b"b"), Err(Errno::EAGAIN), "one in flight");
        assert_eq!(writer.pending(), Ok(true));
        let reading = std::thread::spawn(move || {
            let mut all = Vec::new();
            std::io::Read::read_to_end(&mut std::fs::File::from(reader), &mut all).unwrap();
            all
        });
        assert_eq!(
            wait_until_settled(&writer, Duration::from_secs(10)),
            Ok(false)
        );
        assert_eq!(writer.try_write(b"end"), Ok(3));
        assert_eq!(
            wait_until_settled(&writer, Duration::from_secs(10)),
            Ok(false)
        );
        drop((writer, target));
        let all = reading.join().unwrap();
        assert_eq!(all.len(), big.len() + 3);
        assert!(all.ends_with(b"aend"));
    }

    #[test]
    fn the_writer_thread_leaves_the_pipe_blocking_and_says_when_the_reader_is_gone() {
        let (reader, target) = nix::unistd::pipe().unwrap();
        let writer = PipeWriter::new(target.as_fd()).unwrap();
        let fl = OFlag::from_bits_truncate(fcntl(&target, FcntlArg::F_GETFL).unwrap());
        assert!(!fl.contains(OFlag::O_NONBLOCK), "{}", target.as_raw_fd());
        drop(reader);
        assert_eq!(writer.try_write(b"lost"), Ok(4));
        assert_eq!(
            wait_until_settled(&writer, Duration::from_secs(10)),
            Err(Errno::EPIPE)
        );
        // Once: the next write meets the closed pipe for itself.
        assert_eq!(writer.try_write(b"again"), Ok(5));
        assert_eq!(
            wait_until_settled(&writer, Duration::from_secs(10)),
            Err(Errno::EPIPE)
        );
    }
}
