//! stdin for each attempt. A regular file is rewound to where it started; a pipe
//! or socket is recorded while the first attempt reads it and replayed to later
//! attempts (then read on from where the first attempt stopped); a terminal is
//! inherited. The recorder reads only as fast as the command does, so
//! `yes | retry -- head -1` ends instead of recording forever. Recording keeps 4
//! MiB in memory and spills the rest to `$TMPDIR`; when that fails the attempt is
//! stopped (a `Fault`) with the command's stdin still open, so it never sees an
//! end of file after a part of its input.

use std::io;
use std::sync::Arc;
use std::thread::JoinHandle;

use super::Fault;
use crate::domain::StdinMode;
use crate::spool::Spool;
use crate::sys::{self, Cancel, Owned, StreamKind};

/// What an attempt's stdin is.
pub enum ChildStdin {
    /// retry's own.
    Inherit,
    /// /dev/null.
    Null,
    /// The read end of the pipe the feeder replays the recording into.
    Pipe(Owned),
}

const CHUNK: usize = 64 << 10;

#[derive(Debug)]
pub enum StdinPlan {
    Inherit,
    Null,
    Rewind {
        offset: i64,
    },
    /// `None` only while a feeder thread owns the recorder.
    Replay(Option<Recorder>),
}

#[derive(Debug, Default)]
pub struct Recorder {
    spool: Spool,
    /// The source reached end of file: later attempts need only the spool.
    source_done: bool,
}

/// A running feeder: cancel it when the attempt's command has exited.
pub struct Feeder {
    cancel: Arc<Cancel>,
    handle: JoinHandle<Fed>,
}

/// What a feeder thread hands back: the recording, and after a fault the
/// command's stdin, kept open until the attempt is over.
struct Fed {
    recorder: Recorder,
    _held_open: Option<Owned>,
}

fn stdin_fd() -> sys::Fd<'static> {
    super::std_fd(0)
}

impl StdinPlan {
    /// Resolves `--stdin` against what fd 0 actually is.
    pub fn new(mode: StdinMode) -> Self {
        let kind = sys::stream_kind(stdin_fd());
        match mode {
            StdinMode::Null => StdinPlan::Null,
            StdinMode::Inherit => StdinPlan::Inherit,
            StdinMode::Replay if kind.is_some() => StdinPlan::Replay(Some(Recorder::default())),
            StdinMode::Replay => StdinPlan::Inherit,
            StdinMode::Auto => match kind {
                Some(StreamKind::File) => match sys::position(stdin_fd()) {
                    Ok(offset) => StdinPlan::Rewind { offset },
                    Err(_) => StdinPlan::Replay(Some(Recorder::default())),
                },
                Some(StreamKind::Pipe | StreamKind::Socket) => {
                    StdinPlan::Replay(Some(Recorder::default()))
                }
                _ => StdinPlan::Inherit,
            },
        }
    }

    /// Whether the command reads retry's own stdin (so it may be a terminal).
    pub fn inherits(&self) -> bool {
        matches!(self, StdinPlan::Inherit)
    }

    pub fn describe(&self) -> &'static str {
        match self {
            StdinPlan::Inherit => "inherited",
            StdinPlan::Null => "/dev/null",
            StdinPlan::Rewind { .. } => "regular file, rewound before each attempt",
            StdinPlan::Replay(_) => "recorded on the first attempt and replayed",
        }
    }

    /// The child's stdin for the next attempt, and the feeder thread if one runs.
    pub fn prepare(&mut self, fault: &Arc<Fault>) -> io::Result<(ChildStdin, Option<Feeder>)> {
        match self {
            StdinPlan::Inherit => Ok((ChildStdin::Inherit, None)),
            StdinPlan::Null => Ok((ChildStdin::Null, None)),
            StdinPlan::Rewind { offset } => {
                sys::seek_to(stdin_fd(), *offset)?;
                Ok((ChildStdin::Inherit, None))
            }
            StdinPlan::Replay(slot) => {
                let recorder = slot.take().unwrap_or_default();
                let (child_end, our_end) = sys::feed_pipe()?;
                let cancel = Arc::new(Cancel::new()?);
                let theirs = Arc::clone(&cancel);
                let fault = Arc::clone(fault);
                let handle = std::thread::Builder::new()
                    .name("stdin-replay".into())
                    .spawn(move || feed(recorder, our_end, &theirs, &fault))?;
                Ok((ChildStdin::Pipe(child_end), Some(Feeder { cancel, handle })))
            }
        }
    }

    /// Stops the feeder (the attempt is over) and keeps its recording.
    pub fn finish(&mut self, feeder: Option<Feeder>) {
        let Some(feeder) = feeder else { return };
        feeder.cancel.cancel();
        // A feeder that panicked loses the recording: later attempts would get a part.
        let fed = feeder
            .handle
            .join()
            .expect("the stdin feeder does not panic");
        if let StdinPlan::Replay(slot) = self {
            *slot = Some(fed.recorder);
        }
    }
}

/// Replays the recording, then reads on from the source, recording each chunk
/// before it is passed on, until the source ends, the command stops reading, or
/// the attempt is over. A failure to replay, read or record is a fault: the
/// command's stdin stays open so it cannot take a part for the whole.
fn feed(mut rec: Recorder, child: Owned, cancel: &Cancel, fault: &Fault) -> Fed {
    match pass_on(&mut rec, &child, cancel) {
        Ok(()) => Fed {
            recorder: rec,
            _held_open: None,
        },
        Err(message) => {
            fault.set(message);
            Fed {
                recorder: rec,
                _held_open: Some(child),
            }
        }
    }
}

fn pass_on(rec: &mut Recorder, child: &Owned, cancel: &Cancel) -> Result<(), String> {
    let mut buf = vec![0u8; CHUNK];
    let mut offset = 0;
    while offset < rec.spool.len() {
        let n = match rec.spool.read_at(offset, &mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => return Err(format!("stdin: cannot replay the recorded input: {e}")),
        };
        if !sys::write_or_cancel(child, &buf[..n], cancel) {
            return Ok(());
        }
        offset += n as u64;
    }
    while !rec.source_done {
        match sys::wait_readable(stdin_fd(), cancel) {
            Ok(true) => {}
            _ => return Ok(()),
        }
        let n = match sys::read(stdin_fd(), &mut buf) {
            Ok(0) => {
                rec.source_done = true;
                break;
            }
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                ) =>
            {
                continue;
            }
            Err(e) => return Err(format!("stdin: cannot read retry's standard input: {e}")),
        };
        // Record first: a chunk read for a command that then dies must reach the next attempt.
        rec.spool.append(&buf[..n]).map_err(|e| {
            format!("stdin: cannot record the input for later attempts (4 MiB are kept in memory, the rest on disk): {e}")
        })?;
        if !sys::write_or_cancel(child, &buf[..n], cancel) {
            return Ok(());
        }
    }
    Ok(())
}
