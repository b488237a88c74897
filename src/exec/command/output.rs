//! One attempt's output on its way through retry: the pumps that scan and
//! forward (or hold) the command's stdout and stderr, the held output and its
//! delivery, and whether retry's own reader has gone. What the scan means is
//! [`classify::command`](crate::classify::command)'s.

use std::io;
use std::time::{Duration, Instant};

use crate::classify::command::Stream;
use crate::domain::{Interrupted, Signal};
use crate::signals;
use crate::spool::Spool;
use crate::streams::{
    out::Output, out::Until, out::WriteError, out::deliver_result, pump::Pump, pump::Shared,
    pump::Sink,
};
use crate::sys;

/// One attempt's stdout or stderr, held until the engine says whether it is the final one.
pub(super) enum Held {
    /// Scanned on its way in: memory, then a temporary file past 4 MiB.
    Spool(Spool),
    /// Written by the command straight into an unnamed temporary file.
    File(std::fs::File),
}

impl Held {
    fn write_to(&self, out: &Output) -> Result<(), WriteError> {
        match self {
            Held::Spool(spool) => out.write_spool(spool, Until::Signal),
            Held::File(file) => {
                let len = file.metadata().map_or(0, |m| m.len());
                out.write_file(file, len, Until::Signal)
            }
        }
    }
}

/// What one attempt held of its output (`--hold-stdout`, `--hold-stderr`).
#[derive(Default)]
pub(super) struct HeldOutput {
    pub stdout: Option<Held>,
    pub stderr: Option<Held>,
}

impl HeldOutput {
    /// Writes what was held to retry's own stdout, then to its stderr.
    pub fn deliver(self) -> anyhow::Result<()> {
        if let Some(held) = &self.stdout {
            deliver_result(held.write_to(&Output::new(1)), "the held stdout")?;
        }
        let Some(held) = &self.stderr else {
            return Ok(());
        };
        // As for stdout, but the message names stderr.
        match held.write_to(&Output::new(2)) {
            Ok(()) => Ok(()),
            Err(e) if e.is_broken_pipe() => Ok(()),
            Err(WriteError::Stopped) => {
                Err(Interrupted(signals::pending().unwrap_or(Signal::new(0))).into())
            }
            Err(WriteError::Io(e)) => {
                Err(anyhow::Error::new(e).context("cannot write the held stderr to stderr"))
            }
        }
    }
}

/// Which streams are held until the attempt is known to be the final one.
#[derive(Clone, Copy)]
pub(super) struct Holding {
    pub stdout: bool,
    pub stderr: bool,
}

/// The attempt's output pumps, if anything reads its output.
pub(super) struct Pumps {
    stdout: Option<Pump>,
    stderr: Option<Pump>,
}

impl Pumps {
    /// Starts a pump on each stream retry reads, holding or forwarding it.
    pub fn start(
        stdout: Option<sys::Owned>,
        stderr: Option<sys::Owned>,
        holding: Holding,
        shared: &Shared,
    ) -> io::Result<Pumps> {
        let start = |source: Option<sys::Owned>, hold: bool, stream: Stream, fd: i32| {
            let sink = if hold {
                Sink::Hold {
                    spool: Spool::new(),
                    watching: reader_may_go(fd).then_some(fd),
                }
            } else {
                Sink::Forward(fd)
            };
            source
                .map(|source| Pump::start(source, sink, stream, shared.clone()))
                .transpose()
        };
        Ok(Pumps {
            stdout: start(stdout, holding.stdout, Stream::Stdout, 1)?,
            stderr: start(stderr, holding.stderr, Stream::Stderr, 2)?,
        })
    }

    /// Waits until both streams have ended, or `until`.
    pub fn wait(&self, until: Instant) {
        let running = || {
            [&self.stdout, &self.stderr]
                .iter()
                .any(|p| p.as_ref().is_some_and(|p| !p.is_finished()))
        };
        while running() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Stops both pumps: each stream's spool when it is held, stderr's first.
    pub fn stop(self) -> (io::Result<Option<Spool>>, io::Result<Option<Spool>>) {
        let stderr = self.stderr.map(Pump::stop).transpose().map(Option::flatten);
        let stdout = self.stdout.map(Pump::stop).transpose().map(Option::flatten);
        (stderr, stdout)
    }
}

/// Whether retry's own `fd` has a reader that may go away: a pipe or a socket.
fn reader_may_go(fd: i32) -> bool {
    matches!(
        sys::stream_kind(crate::streams::std_fd(fd)),
        Some(sys::StreamKind::Pipe | sys::StreamKind::Socket)
    )
}

/// Whether retry's stdout or stderr is a pipe whose reader has gone.
pub(super) fn output_reader_gone() -> bool {
    [1, 2]
        .into_iter()
        .any(|fd| sys::reader_gone(crate::streams::std_fd(fd)))
}
