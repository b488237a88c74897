//! Copies a command's stdout or stderr from a pipe to where it belongs (retry's
//! own stdout/stderr, live, chunk by chunk, or a spool for `--hold-stdout` and
//! `--hold-stderr`) while
//! scanning its lines for the classification patterns. Used only when something
//! needs to read the stream; otherwise the command writes to retry's fds itself.
//!
//! A pump can always be stopped: reads and writes wait beside a cancel
//! (`sys::Cancel`), so a background process that keeps the pipe open, or a reader that
//! stalls, never holds the run. When retry's own reader goes away the pump closes
//! the command's pipe, so the command meets the broken pipe as it would without
//! retry.

use std::fs::File;
use std::io::{self, Read};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::Fault;
use super::out::{Output, Until, WriteError};
use crate::classify::command::{OutputFacts, OutputWatch, Stream};
use crate::spool::Spool;
use crate::sys::{self, Cancel};

const CHUNK: usize = 64 << 10;
/// Longest line kept for matching; the rest of a longer line is passed on unscanned.
const MAX_LINE: usize = 64 << 10;

pub enum Sink {
    /// Write to retry's own fd 1 or 2 as the bytes arrive.
    Forward(i32),
    /// Keep the bytes; `watching` is retry's own fd (a pipe or socket) whose reader,
    /// should it go, ends the pump as a broken pipe ends a forwarding one.
    Hold { spool: Spool, watching: Option<i32> },
}

pub struct Pump {
    cancel: Arc<Cancel>,
    handle: JoinHandle<io::Result<Option<Spool>>>,
}

/// What a pump shares with the attempt that started it.
#[derive(Clone)]
pub struct Shared {
    pub watch: Option<Arc<OutputWatch>>,
    pub facts: Arc<Mutex<OutputFacts>>,
    pub fault: Arc<Fault>,
}

impl Pump {
    pub fn start(
        source: sys::Owned,
        sink: Sink,
        stream: Stream,
        shared: Shared,
    ) -> io::Result<Pump> {
        let cancel = Arc::new(Cancel::new()?);
        let theirs = Arc::clone(&cancel);
        let handle = std::thread::Builder::new()
            .name(format!("{stream:?}-pump"))
            .spawn(move || {
                let ends = Ends {
                    source: File::from(source),
                    cancel: theirs,
                };
                pump(ends, sink, stream, &shared)
            })?;
        Ok(Pump { cancel, handle })
    }

    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }

    /// Stops reading (what is still unread is left in the pipe) and waits for
    /// the thread; returns the spool for `Sink::Hold`.
    pub fn stop(self) -> io::Result<Option<Spool>> {
        self.cancel.cancel();
        self.handle
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("output thread panicked")))
    }
}

struct Ends {
    source: File,
    cancel: Arc<Cancel>,
}

impl Ends {
    /// Waits for input, for the pump to be cancelled, or for the reader of `watching`
    /// (retry's own fd) to go.
    fn ready(&self, watching: Option<i32>) -> io::Result<sys::Ready> {
        let source = sys::borrow(&self.source);
        match watching {
            Some(fd) => sys::wait_readable_or_reader_gone(source, super::std_fd(fd), &self.cancel),
            None => Ok(if sys::wait_readable(source, &self.cancel)? {
                sys::Ready::Readable
            } else {
                sys::Ready::Cancelled
            }),
        }
    }
}

fn pump(
    mut ends: Ends,
    mut sink: Sink,
    stream: Stream,
    shared: &Shared,
) -> io::Result<Option<Spool>> {
    let (output, watching) = match sink {
        Sink::Forward(fd) => (Some(Output::new(fd)), None),
        Sink::Hold { watching, .. } => (None, watching),
    };
    let mut buf = vec![0u8; CHUNK];
    let mut line = Vec::new();
    let mut overlong = false;
    loop {
        match ends.ready(watching)? {
            sys::Ready::Readable => {}
            sys::Ready::Cancelled => break,
            // As a forwarding pump's broken pipe: returning closes the command's pipe.
            sys::Ready::ReaderGone => {
                shared.facts.lock().expect("facts lock").output_closed = true;
                break;
            }
        }
        let n = match ends.source.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buf[..n];
        if let Some(watch) = shared.watch.as_deref() {
            scan(chunk, &mut line, &mut overlong, |l| {
                watch.observe(l, stream, &mut shared.facts.lock().expect("facts lock"));
            });
        }
        match (&mut sink, &output) {
            (Sink::Forward(_), Some(out)) => {
                match out.write_all(chunk, Until::Cancelled(&ends.cancel)) {
                    Ok(()) => {}
                    Err(WriteError::Stopped) => break,
                    // The reader went away: returning closes the command's pipe, so it sees the broken pipe too.
                    Err(e) if e.is_broken_pipe() => {
                        shared.facts.lock().expect("facts lock").output_closed = true;
                        break;
                    }
                    Err(WriteError::Io(e)) => return Err(e),
                }
            }
            (Sink::Hold { spool, .. }, _) => {
                if let Err(e) = spool.append(chunk) {
                    let message = match stream {
                        Stream::Stdout => format!(
                            "--hold-stdout: cannot hold the command's output: {e}; give \
                             --no-hold-stdout to stream it live, or have the command write \
                             to a file (curl -o FILE)"
                        ),
                        Stream::Stderr => {
                            format!("--hold-stderr: cannot hold the command's output: {e}")
                        }
                    };
                    shared.fault.set(message.clone());
                    return Err(io::Error::other(message));
                }
            }
            (Sink::Forward(_), None) => unreachable!("a forwarding pump has an output"),
        }
    }
    if let (Some(watch), false) = (shared.watch.as_deref(), line.is_empty()) {
        watch.observe(&line, stream, &mut shared.facts.lock().expect("facts lock"));
    }
    Ok(match sink {
        Sink::Hold { spool, .. } => Some(spool),
        Sink::Forward(_) => None,
    })
}

/// Lines of a stream that arrives in chunks, split as a command's output is (on `\n` or
/// `\r`, the first 64 KiB of a line): HTTP mode scans a response body with it.
#[derive(Default)]
pub struct Lines {
    line: Vec<u8>,
    overlong: bool,
}

impl Lines {
    /// Hands `each` every line `chunk` completes.
    pub fn feed(&mut self, chunk: &[u8], each: impl FnMut(&[u8])) {
        scan(chunk, &mut self.line, &mut self.overlong, each);
    }

    /// Hands `each` the last line, if the stream did not end with a line break.
    pub fn finish(&mut self, mut each: impl FnMut(&[u8])) {
        if !self.line.is_empty() {
            each(&self.line);
        }
        self.line.clear();
    }
}

/// Splits `chunk` into lines (on `\n` or `\r`), carrying a partial line over.
fn scan(chunk: &[u8], line: &mut Vec<u8>, overlong: &mut bool, mut each: impl FnMut(&[u8])) {
    for piece in chunk.split_inclusive(|&b| b == b'\n' || b == b'\r') {
        let ended = matches!(piece.last(), Some(b'\n' | b'\r'));
        let body = if ended {
            &piece[..piece.len() - 1]
        } else {
            piece
        };
        let room = MAX_LINE.saturating_sub(line.len());
        line.extend_from_slice(&body[..body.len().min(room)]);
        *overlong |= body.len() > room;
        if ended {
            if !line.is_empty() || !*overlong {
                each(line);
            }
            line.clear();
            *overlong = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_across_chunks() {
        let mut seen = Vec::new();
        let mut line = Vec::new();
        let mut overlong = false;
        for chunk in [&b"abc"[..], b"def\nxy", b"z\r\n", b"tail"] {
            scan(chunk, &mut line, &mut overlong, |l| {
                seen.push(String::from_utf8_lossy(l).into_owned())
            });
        }
        assert_eq!(seen, ["abcdef", "xyz", ""]);
        assert_eq!(line, b"tail");
    }
}
