//! A byte spool that stays in memory up to a few MiB and spills to an unnamed
//! temporary file past that, so recording stdin or holding stdout costs bounded
//! memory whatever the size. A spill that fails is an error that names the
//! temporary directory and the operating system's reason: callers stop the
//! attempt rather than pass on a part as if it were the whole.

use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;

/// Bytes kept in memory before the spool moves to disk.
pub const MEMORY_LIMIT: usize = 4 << 20;
/// Chunk size for copying out of a spool.
const CHUNK: usize = 64 << 10;

#[derive(Debug)]
pub struct Spool {
    memory: Vec<u8>,
    file: Option<File>,
    len: u64,
    limit: usize,
}

impl Default for Spool {
    fn default() -> Self {
        Self::new()
    }
}

/// Where a spool's bytes are: in memory, or the first `len` bytes of its file.
pub enum Held<'a> {
    Memory(&'a [u8]),
    File(&'a File, u64),
}

/// A spool could not move to (or grow on) disk.
#[derive(Debug)]
pub struct SpillError {
    /// The directory the temporary file was made in (`$TMPDIR`, else /tmp).
    pub dir: PathBuf,
    pub source: io::Error,
}

impl std::fmt::Display for SpillError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot write a temporary file in {} (set TMPDIR to a writable directory): {}",
            self.dir.display(),
            self.source
        )
    }
}

impl std::error::Error for SpillError {}

impl SpillError {
    pub fn new(source: io::Error) -> Self {
        SpillError {
            dir: std::env::temp_dir(),
            source,
        }
    }
}

impl From<SpillError> for io::Error {
    fn from(e: SpillError) -> io::Error {
        io::Error::new(e.source.kind(), e)
    }
}

/// An unnamed temporary file in `$TMPDIR`, its failure naming the directory.
pub fn temp_file() -> Result<File, SpillError> {
    tempfile::tempfile().map_err(SpillError::new)
}

impl Spool {
    pub fn new() -> Self {
        Self::with_limit(MEMORY_LIMIT)
    }

    pub fn with_limit(limit: usize) -> Self {
        Spool {
            memory: Vec::new(),
            file: None,
            len: 0,
            limit,
        }
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    #[cfg(test)]
    pub fn is_on_disk(&self) -> bool {
        self.file.is_some()
    }

    /// Appends `buf`; on error nothing of `buf` is kept and the spool is as before.
    pub fn append(&mut self, buf: &[u8]) -> Result<(), SpillError> {
        if self.file.is_none() && self.memory.len() + buf.len() > self.limit {
            let mut file = temp_file()?;
            file.write_all(&self.memory).map_err(SpillError::new)?;
            self.memory = Vec::new();
            self.file = Some(file);
        }
        match &self.file {
            Some(file) => crate::sys::write_all_at(file, buf, self.len).map_err(SpillError::new)?,
            None => self.memory.extend_from_slice(buf),
        }
        self.len += buf.len() as u64;
        Ok(())
    }

    /// Reads up to `buf.len()` bytes at `offset`; 0 at the end.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        if offset >= self.len {
            return Ok(0);
        }
        let want = buf.len().min((self.len - offset) as usize);
        match &self.file {
            Some(file) => crate::sys::read_at(file, &mut buf[..want], offset),
            None => {
                let start = offset as usize;
                buf[..want].copy_from_slice(&self.memory[start..start + want]);
                Ok(want)
            }
        }
    }

    /// Where the bytes are, for a writer that copies them out as they lie.
    pub fn held(&self) -> Held<'_> {
        match &self.file {
            Some(file) => Held::File(file, self.len),
            None => Held::Memory(&self.memory),
        }
    }

    /// Writes the whole spool to `out`.
    pub fn copy_to(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut buf = vec![0u8; CHUNK.min(self.len.max(1) as usize)];
        let mut offset = 0;
        while offset < self.len {
            let n = self.read_at(offset, &mut buf)?;
            if n == 0 {
                break;
            }
            out.write_all(&buf[..n])?;
            offset += n as u64;
        }
        out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_spool_keeps_four_mib_in_memory() {
        let mut spool = Spool::default();
        spool.append(&vec![7u8; MEMORY_LIMIT]).unwrap();
        assert!(!spool.is_on_disk());
        spool.append(b"x").unwrap();
        assert!(spool.is_on_disk());
    }

    #[test]
    fn spills_past_the_limit_and_reads_back_everything() {
        let mut spool = Spool::with_limit(10);
        spool.append(b"hello ").unwrap();
        assert!(!spool.is_on_disk());
        spool.append(b"spooled world").unwrap();
        assert!(spool.is_on_disk());
        let mut out = Vec::new();
        spool.copy_to(&mut out).unwrap();
        assert_eq!(out, b"hello spooled world");
        let mut buf = [0u8; 5];
        assert_eq!(spool.read_at(6, &mut buf).unwrap(), 5);
        assert_eq!(&buf, b"spool");
        assert_eq!(spool.read_at(19, &mut buf).unwrap(), 0);
    }
}
