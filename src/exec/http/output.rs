//! Exactly-once output. Each attempt's body is held — in a spool for stdout
//! (memory, then an unnamed temporary file), or in a temporary file beside the
//! `-o` target — and only the final attempt's is delivered: written to stdout, or
//! put in place of the target by the one durable replacement (`report::Replacement`). A failed final attempt delivers nothing (as `curl
//! --fail` does), so stdout stays empty and the `-o` file keeps its old contents.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::io::{out::Output, out::Stop, out::deliver_result, spool::Spool};
use crate::report::{self, Replacement};

/// Writes to an `-o` temporary file are gathered to this size: a decoded body
/// arrives in chunks of a few KiB, and a write for each costs more than the decoding.
const FILE_BUFFER: usize = 256 * 1024;

/// Where a successful body goes.
#[derive(Clone, Debug)]
pub enum Destination {
    Stdout,
    /// An existing device, FIFO or socket (`-o /dev/null`): written in place on
    /// success, never renamed over.
    Special(PathBuf),
    File {
        path: PathBuf,
        /// Mode for a new file: 0666 less the umask, as a shell redirection makes.
        mode: u32,
    },
}

impl Destination {
    /// Checks `-o FILE` up front: its directory must exist and it must not be
    /// a directory itself. `-o -` is stdout, as with curl.
    pub fn new(output: Option<&Path>) -> anyhow::Result<Self> {
        let Some(path) = output.filter(|path| *path != Path::new("-")) else {
            return Ok(Destination::Stdout);
        };
        report::check_file_target("-o/--output", path)?;
        if fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            return Ok(Destination::Special(path.to_path_buf()));
        }
        Ok(Destination::File {
            path: path.to_path_buf(),
            mode: 0o666 & !current_umask(),
        })
    }

    /// A fresh holder for one attempt's body.
    pub fn holder(&self) -> io::Result<Body> {
        Ok(match self {
            Destination::Stdout | Destination::Special(_) => Body::Spool(Spool::new()),
            Destination::File { path, .. } => {
                Body::File(Replacement::new(path, ".part", FILE_BUFFER)?)
            }
        })
    }
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
    fn deliver(self, destination: &Destination) -> anyhow::Result<()> {
        match (self, destination) {
            (Body::Spool(spool), Destination::Special(path)) => write_special(&spool, path),
            (Body::Spool(spool), _) => write_stdout(&spool),
            (Body::File(file), Destination::File { path, mode }) => {
                // An existing target keeps its mode.
                let mode = fs::metadata(path).map_or(*mode, |m| m.permissions().mode() & 0o7777);
                file.commit(Some(mode))
            }
            (Body::File(_), _) => Ok(()),
        }
    }
}

fn write_stdout(spool: &Spool) -> anyhow::Result<()> {
    let written = spool.write_to(&Output::new(1), Stop::Signals);
    deliver_result(written, "the response body")
}

fn write_special(spool: &Spool, path: &Path) -> anyhow::Result<()> {
    let mut file = report::open_in_place(path)?;
    spool
        .copy_to(&mut file)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// The process umask (read by setting and restoring it; done once, before any
/// other thread starts).
fn current_umask() -> u32 {
    use nix::sys::stat::{Mode, umask};
    let old = umask(Mode::from_bits_truncate(0o022));
    umask(old);
    old.bits()
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

    #[test]
    fn output_file_must_be_in_an_existing_directory() {
        assert!(Destination::new(Some(Path::new("/no/such/dir/f"))).is_err());
        assert!(Destination::new(Some(Path::new("/tmp"))).is_err());
        assert!(matches!(
            Destination::new(None).unwrap(),
            Destination::Stdout
        ));
        assert!(matches!(
            Destination::new(Some(Path::new("-"))).unwrap(),
            Destination::Stdout
        ));
    }
}
