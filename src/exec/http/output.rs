//! Exactly-once output, or exit 23. Each attempt's body is held — in a spool for stdout
//! (memory, then an unnamed temporary file), or in a temporary file beside the
//! `-o` target — and only the final attempt's is delivered: written to stdout, or
//! put in place of the target by the one durable replacement ([`files::Replacement`](crate::files::Replacement)). A failed final attempt delivers nothing (as `curl
//! --fail` does), so stdout stays empty and the `-o` file keeps its old contents.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use anyhow::Context;

use crate::classify::http::{Transport, transport_row};
use crate::config::http::Destination;
use crate::domain::{Interrupted, OutputLost, Signal};
use crate::files::Replacement;
use crate::spool::Spool;
use crate::streams::out::{Output, Until, WriteError};
use crate::{report, signals};

/// Writes to an `-o` temporary file are gathered to this size: a decoded body
/// arrives in chunks of a few KiB, and a write for each costs more than the decoding.
const FILE_BUFFER: usize = 256 * 1024;

/// A fresh holder for one attempt's body, by where it goes.
pub fn holder(destination: &Destination) -> io::Result<Body> {
    Ok(match destination {
        Destination::Stdout | Destination::Special(_) => Body::Spool(Spool::new()),
        Destination::File { path, .. } => Body::File(Replacement::new(path, ".part", FILE_BUFFER)?),
    })
}

/// One attempt's body while it arrives.
pub enum Body {
    Spool(Spool),
    File(Replacement),
}

impl Body {
    pub fn write(&mut self, chunk: &[u8]) -> io::Result<()> {
        match self {
            Body::Spool(spool) => spool.append(chunk).map_err(io::Error::from),
            Body::File(file) => file.write_all(chunk),
        }
    }

    pub fn len(&self) -> u64 {
        match self {
            Body::Spool(spool) => spool.len(),
            Body::File(file) => file.written(),
        }
    }
}

/// What the last attempt left to deliver.
#[derive(Default)]
pub enum HeldResponse {
    #[default]
    Nothing,
    /// A complete successful body (with the head first, for -i).
    Body(Body),
    /// The attempt failed with this status; the start of its body, for stderr.
    Failed { status: u16, excerpt: String },
    /// The attempt failed with this status; its whole body, for --fail-with-body.
    FailedBody(Body),
}

impl HeldResponse {
    pub fn deliver(self, destination: &Destination) -> anyhow::Result<()> {
        match self {
            HeldResponse::Body(body) | HeldResponse::FailedBody(body) => body.deliver(destination),
            HeldResponse::Failed { status, excerpt } => {
                if !excerpt.is_empty() {
                    report::info(&format!("the server's HTTP {status} reply said: {excerpt}"));
                }
                Ok(())
            }
            HeldResponse::Nothing => Ok(()),
        }
    }
}

impl Body {
    /// Delivers the body; a body that cannot be written is `OutputLost` (curl's 23).
    fn deliver(self, destination: &Destination) -> anyhow::Result<()> {
        let written = match (self, destination) {
            (Body::Spool(spool), Destination::Special(path)) => write_special(&spool, path),
            (Body::Spool(spool), _) => write_stdout(&spool),
            (Body::File(file), Destination::File { path, mode }) => {
                // An existing target keeps its mode.
                let mode = fs::metadata(path)
                    .ok()
                    .and_then(|m| crate::sys::file_mode(&m))
                    .unwrap_or(*mode);
                file.commit(Some(mode))
            }
            (Body::File(_), _) => Ok(()),
        };
        written.map_err(|err| {
            if err.is::<Interrupted>() {
                return err;
            }
            OutputLost {
                status: transport_row(Transport::LocalWrite).exit_code,
                message: format!("the body could not be written: {err:#}"),
            }
            .into()
        })
    }
}

fn write_stdout(spool: &Spool) -> anyhow::Result<()> {
    if spool.len() > 0 && crate::streams::stdout_was_closed() {
        anyhow::bail!("stdout is closed");
    }
    match Output::new(1).write_spool(spool, Until::Signal) {
        Ok(()) => Ok(()),
        Err(WriteError::Stopped) => {
            Err(Interrupted(signals::pending().unwrap_or(Signal::new(0))).into())
        }
        Err(WriteError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => {
            anyhow::bail!("the reader of stdout went away (broken pipe)")
        }
        Err(WriteError::Io(e)) => Err(anyhow::Error::new(e).context("cannot write to stdout")),
    }
}

fn write_special(spool: &Spool, path: &Path) -> anyhow::Result<()> {
    let mut file = crate::files::open_in_place(path)?;
    spool
        .copy_to(&mut file)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// The first bytes of an error body as one line of text, for stderr.
pub fn excerpt(bytes: &[u8], max_chars: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if out.chars().count() > max_chars {
        out = out.chars().take(max_chars).collect();
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_are_one_short_line() {
        assert_eq!(excerpt(b"  not\r\nfound\t\x07here ", 100), "not found here");
        assert_eq!(excerpt("ünïcode text".as_bytes(), 5), "ünïco…");
        assert_eq!(excerpt(&[0xff, b'a'], 10), "\u{fffd}a");
    }
}
