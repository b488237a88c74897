//! One attempt's output on its way through retry: the pumps that scan and
//! forward (or hold) the command's stdout and stderr, the held stdout and its
//! delivery, and whether retry's own reader has gone. What the scan means is
//! `classify::command`'s.

use std::io;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::classify::command::Stream;
use crate::io::{
    out::Output, out::Until, out::deliver_result, pump::Pump, pump::Shared, pump::Sink,
};
use crate::spool::Spool;

/// One attempt's stdout, held until the engine says whether it is the final one.
pub(super) enum HeldStdout {
    /// Scanned on its way in: memory, then a temporary file past 4 MiB.
    Spool(Spool),
    /// Written by the command straight into an unnamed temporary file.
    File(std::fs::File),
}

impl HeldStdout {
    /// Writes the held stdout to retry's own.
    pub fn deliver(self) -> anyhow::Result<()> {
        let out = Output::new(1);
        let written = match &self {
            HeldStdout::Spool(spool) => out.write_spool(spool, Until::Signal),
            HeldStdout::File(file) => {
                let len = file.metadata().map_or(0, |m| m.len());
                out.write_file(file, len, Until::Signal)
            }
        };
        deliver_result(written, "the held stdout")
    }
}

/// The attempt's output pumps, if anything reads its output.
pub(super) struct Pumps {
    stdout: Option<Pump>,
    stderr: Option<Pump>,
}

impl Pumps {
    /// Starts a pump on each stream retry reads: stdout held or forwarded, stderr forwarded.
    pub fn start(
        stdout: Option<OwnedFd>,
        stderr: Option<OwnedFd>,
        hold_stdout: bool,
        shared: &Shared,
    ) -> io::Result<Pumps> {
        let stdout = match stdout {
            Some(out) => {
                let sink = if hold_stdout {
                    Sink::Hold(Spool::new())
                } else {
                    Sink::Forward(1)
                };
                Some(Pump::start(out, sink, Stream::Stdout, shared.clone())?)
            }
            None => None,
        };
        let stderr = match stderr {
            Some(err) => Some(Pump::start(
                err,
                Sink::Forward(2),
                Stream::Stderr,
                shared.clone(),
            )?),
            None => None,
        };
        Ok(Pumps { stdout, stderr })
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

    /// Stops both pumps: stderr's result, and stdout's spool when it is held.
    pub fn stop(self) -> (io::Result<()>, io::Result<Option<Spool>>) {
        let stderr = self.stderr.map(Pump::stop).transpose().map(|_| ());
        let stdout = self.stdout.map(Pump::stop).transpose().map(Option::flatten);
        (stderr, stdout)
    }
}

/// Whether retry's stdout or stderr is a pipe whose reader has gone.
pub(super) fn output_reader_gone() -> bool {
    [1, 2].into_iter().any(|fd| {
        let mut fds = [PollFd::new(crate::io::std_fd(fd), PollFlags::empty())];
        poll(&mut fds, PollTimeout::ZERO).is_ok()
            && fds[0]
                .revents()
                .is_some_and(|r| r.contains(PollFlags::POLLERR))
    })
}
