//! What a request carries as its body: bytes built once (`-d`, `--json`, `-F`), or
//! curl's `-T FILE` upload, which is opened again and streamed from its start on
//! every attempt (and after a 307/308 redirect), never held whole in memory. `-T -`
//! and a FILE that cannot be read twice (a FIFO, a terminal) are recorded once, in
//! memory up to a few MiB and then in an unnamed temporary file, and replayed.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use bytes::Bytes;

use crate::spool::Spool;

/// How much of the upload one read takes.
const CHUNK: usize = 64 << 10;

/// A request body.
#[derive(Clone)]
pub enum Payload {
    /// The same bytes on every attempt.
    Bytes(Bytes),
    /// `-T`: streamed on every attempt.
    Upload(Upload),
}

impl Payload {
    /// For `-v`: `body 12 bytes`, `body from FILE`.
    pub fn describe(&self) -> String {
        match self {
            Payload::Bytes(bytes) => format!("body {} bytes", bytes.len()),
            Payload::Upload(upload) => format!("body from {}", upload.describe()),
        }
    }
}

/// `-T FILE`.
#[derive(Clone)]
pub struct Upload {
    source: Source,
}

#[derive(Clone)]
enum Source {
    /// A regular file, opened again for every request.
    File(PathBuf),
    /// stdin (`-T -`) or a FILE that can be read only once, as recorded.
    Recorded { name: String, spool: Arc<Spool> },
}

/// What one request reads from.
enum Reader {
    File(File),
    Spool(Arc<Spool>),
}

impl Reader {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Reader::File(file) => crate::sys::read_at(file, buf, offset),
            Reader::Spool(spool) => spool.read_at(offset, buf),
        }
    }
}

impl Upload {
    /// `-T FILE`, checked now so that an unreadable FILE is refused before anything
    /// is sent. `dry_run`: stdin is not read.
    pub fn new(file: &str, dry_run: bool) -> anyhow::Result<Upload> {
        let flag = "-T/--upload-file";
        if file == "-" {
            let spool = if dry_run {
                Spool::new()
            } else {
                record(&mut io::stdin().lock())
                    .with_context(|| format!("{flag} -: cannot read stdin"))?
            };
            return Ok(Upload {
                source: Source::Recorded {
                    name: "stdin".into(),
                    spool: Arc::new(spool),
                },
            });
        }
        let mut opened = File::open(file).with_context(|| format!("{flag}: cannot read {file}"))?;
        let meta = opened
            .metadata()
            .with_context(|| format!("{flag}: cannot read {file}"))?;
        anyhow::ensure!(
            !meta.is_dir(),
            "{flag}: {file} is a directory; expected a file"
        );
        if meta.is_file() {
            return Ok(Upload {
                source: Source::File(PathBuf::from(file)),
            });
        }
        // A FIFO or a device gives its bytes once: they are kept for every attempt.
        let spool = if dry_run {
            Spool::new()
        } else {
            record(&mut opened).with_context(|| format!("{flag}: cannot read {file}"))?
        };
        Ok(Upload {
            source: Source::Recorded {
                name: file.to_string(),
                spool: Arc::new(spool),
            },
        })
    }

    /// The file whose name curl appends to a URL ending in `/`; `None` for stdin.
    pub fn file_name(&self) -> Option<&Path> {
        match &self.source {
            Source::File(path) => Some(path),
            Source::Recorded { name, .. } if name != "stdin" => Some(Path::new(name)),
            Source::Recorded { .. } => None,
        }
    }

    fn describe(&self) -> String {
        match &self.source {
            Source::File(path) => path.display().to_string(),
            Source::Recorded { name, spool } => format!("{name} ({} bytes, recorded)", spool.len()),
        }
    }

    /// Opens the upload for one request: its length, and a body that streams it
    /// from the start. Reads happen on the blocking pool, so a slow disk never
    /// holds up the attempt's timers and signals.
    pub fn open(&self) -> io::Result<(u64, reqwest::Body)> {
        let (reader, len) = match &self.source {
            Source::File(path) => {
                let file = File::open(path)?;
                let len = file.metadata()?.len();
                (Reader::File(file), len)
            }
            Source::Recorded { spool, .. } => (Reader::Spool(Arc::clone(spool)), spool.len()),
        };
        let reader = Arc::new(reader);
        let chunks = futures_util::stream::unfold(0u64, move |offset| {
            let reader = Arc::clone(&reader);
            async move {
                if offset >= len {
                    return None;
                }
                let want = CHUNK.min((len - offset) as usize);
                let read = tokio::task::spawn_blocking(move || {
                    let mut buf = vec![0; want];
                    let n = reader.read_at(offset, &mut buf)?;
                    buf.truncate(n);
                    Ok::<_, io::Error>(buf)
                })
                .await
                .map_err(io::Error::other)
                .and_then(|read| read);
                Some(match read {
                    // Sent as declared or not at all: a file that shrank ends the request.
                    Ok(buf) if buf.is_empty() => (Err(shrank()), len),
                    Ok(buf) => {
                        let next = offset + buf.len() as u64;
                        (Ok(Bytes::from(buf)), next)
                    }
                    Err(e) => (Err(e), len),
                })
            }
        });
        Ok((len, reqwest::Body::wrap_stream(chunks)))
    }
}

fn shrank() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the file to upload got shorter while it was sent",
    )
}

/// Everything `input` gives until its end, kept in a spool.
fn record(input: &mut dyn Read) -> io::Result<Spool> {
    let mut spool = Spool::new();
    let mut buf = vec![0; CHUNK];
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => return Ok(spool),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        spool.append(&buf[..n]).map_err(io::Error::from)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(upload: &Upload) -> Vec<u8> {
        use futures_util::StreamExt;
        use http_body_util::BodyExt;
        let (len, body) = upload.open().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let bytes = runtime.block_on(async {
            let mut stream = body.into_data_stream();
            let mut out = Vec::new();
            while let Some(chunk) = stream.next().await {
                out.extend_from_slice(&chunk.unwrap());
            }
            out
        });
        assert_eq!(bytes.len() as u64, len);
        bytes
    }

    #[test]
    fn a_file_is_read_again_from_its_start_for_every_request() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let upload = Upload::new(path.to_str().unwrap(), false).unwrap();
        assert_eq!(drain(&upload), data);
        assert_eq!(drain(&upload), data);
        assert_eq!(upload.file_name(), Some(path.as_path()));
    }

    #[test]
    fn a_missing_file_or_a_directory_is_refused() {
        let err = Upload::new("/no/such/file", false).err().unwrap();
        assert!(format!("{err:#}").contains("-T/--upload-file"), "{err:#}");
        assert!(Upload::new("/tmp", false).is_err());
    }

    #[test]
    fn recorded_input_is_replayed() {
        let spool = record(&mut &b"piped bytes"[..]).unwrap();
        let upload = Upload {
            source: Source::Recorded {
                name: "stdin".into(),
                spool: Arc::new(spool),
            },
        };
        assert_eq!(drain(&upload), b"piped bytes");
        assert_eq!(drain(&upload), b"piped bytes");
        assert_eq!(upload.file_name(), None);
    }
}
