//! Copies a command's stdout or stderr from a pipe to where it belongs (retry's
//! own stdout/stderr, live, chunk by chunk, or a spool for `--hold-stdout`) while
//! scanning its lines for the classification patterns. Used only when something
//! needs to read the stream; otherwise the command writes to retry's fds itself.

use std::fs::File;
use std::io::{self, Read, Write};
use std::mem::ManuallyDrop;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::spool::Spool;
use crate::classify::command::{OutputFacts, OutputWatch, Stream};

const CHUNK: usize = 64 << 10;
/// Longest line kept for matching; the rest of a longer line is passed on unscanned.
const MAX_LINE: usize = 64 << 10;

pub enum Sink {
    /// Write to retry's own fd 1 or 2 as the bytes arrive.
    Forward(i32),
    Hold(Spool),
}

pub struct Pump {
    handle: JoinHandle<io::Result<Option<Spool>>>,
}

impl Pump {
    pub fn start(
        source: OwnedFd,
        sink: Sink,
        stream: Stream,
        watch: Option<Arc<OutputWatch>>,
        facts: Arc<Mutex<OutputFacts>>,
    ) -> io::Result<Pump> {
        let handle = std::thread::Builder::new()
            .name(format!("{stream:?}-pump"))
            .spawn(move || pump(File::from(source), sink, stream, watch.as_deref(), &facts))?;
        Ok(Pump { handle })
    }

    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }

    /// Waits for the end of the stream; returns the spool for `Sink::Hold`.
    pub fn join(self) -> io::Result<Option<Spool>> {
        self.handle
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("output thread panicked")))
    }
}

fn pump(
    mut source: File,
    mut sink: Sink,
    stream: Stream,
    watch: Option<&OutputWatch>,
    facts: &Mutex<OutputFacts>,
) -> io::Result<Option<Spool>> {
    let mut buf = vec![0u8; CHUNK];
    let mut line = Vec::new();
    let mut overlong = false;
    let mut out_ok = true;
    loop {
        let n = match source.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buf[..n];
        match &mut sink {
            // A reader that went away stops the forwarding, not the scan.
            Sink::Forward(fd) if out_ok => out_ok = write_fd(*fd, chunk).is_ok(),
            Sink::Forward(_) => {}
            Sink::Hold(spool) => spool.append(chunk)?,
        }
        if let Some(watch) = watch {
            scan(chunk, &mut line, &mut overlong, |l| {
                watch.observe(l, stream, &mut facts.lock().expect("facts lock"));
            });
        }
    }
    if let (Some(watch), false) = (watch, line.is_empty()) {
        watch.observe(&line, stream, &mut facts.lock().expect("facts lock"));
    }
    Ok(match sink {
        Sink::Hold(spool) => Some(spool),
        Sink::Forward(_) => None,
    })
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

fn write_fd(fd: i32, data: &[u8]) -> io::Result<()> {
    // retry's fd 1 or 2: borrowed, never closed here.
    let mut file = ManuallyDrop::new(unsafe { File::from_raw_fd(fd) });
    file.write_all(data)
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
