//! Files retry writes: the one durable, atomic replacement (temporary file in
//! the same directory, fsync, rename, fsync of the directory) used by
//! `--report`, `--once` markers and `-o`, and the up-front checks that a file
//! flag's path can be written. What goes into the files is the callers' work.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::Context;
use tempfile::NamedTempFile;

/// Checks up front that `flag`'s file can be written (its directory exists and
/// it is not a directory itself), so a bad path is a usage error (exit 125)
/// before anything runs, not a surprise at the end.
pub fn check_file_target(flag: &str, path: &Path) -> anyhow::Result<()> {
    if path.as_os_str().is_empty() {
        anyhow::bail!("{flag}: expected a file path");
    }
    if path.is_dir() {
        anyhow::bail!(
            "{flag}: {} is a directory; expected a file path",
            path.display()
        );
    }
    if fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        // A device or FIFO is written in place: opening it is the check (never blocking on a FIFO).
        return crate::sys::check_writable_in_place(path)
            .with_context(|| format!("{flag}: cannot open {} for writing", path.display()));
    }
    let dir = parent_dir(path);
    let meta = fs::metadata(&dir).map_err(|e| {
        anyhow::anyhow!(
            "{flag}: cannot use directory {}: {e}; expected a file in a directory that exists",
            dir.display()
        )
    })?;
    anyhow::ensure!(
        meta.is_dir(),
        "{flag}: {} is not a directory",
        dir.display()
    );
    // The file is written at the end, by rename: a file must be creatable beside it now.
    probe_dir(&dir).with_context(|| format!("{flag}: cannot create a file in {}", dir.display()))
}

/// Creates and removes a file in `dir`: the operating system's own reason if it cannot.
pub fn probe_dir(dir: &Path) -> std::io::Result<()> {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let probe = dir.join(format!(".retry-check-{}-{nanos}", std::process::id()));
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)?;
    fs::remove_file(&probe)
}

/// The directory that holds `path` (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Opens a device or FIFO (`/dev/stderr`, `/dev/null`) to write in place: it is never renamed over.
pub fn open_in_place(path: &Path) -> anyhow::Result<File> {
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))
}

/// The new contents of a file, written beside it through a buffer and put in
/// its place whole by [`Replacement::commit`]; dropped uncommitted, it leaves
/// the old file as it was.
#[derive(Debug)]
pub struct Replacement {
    out: BufWriter<NamedTempFile>,
    path: PathBuf,
}

impl Replacement {
    /// A temporary file (mode 0600) in `path`'s directory, written through a
    /// buffer of `buffer` bytes (a body arriving in small chunks costs a write each otherwise).
    pub fn new(path: &Path, suffix: &str, buffer: usize) -> std::io::Result<Self> {
        let tmp = tempfile::Builder::new()
            .prefix(".retry-")
            .suffix(suffix)
            .tempfile_in(parent_dir(path))?;
        Ok(Replacement {
            out: BufWriter::with_capacity(buffer, tmp),
            path: path.to_path_buf(),
        })
    }

    /// The bytes written so far, buffered ones included.
    pub fn written(&self) -> u64 {
        let on_disk = self
            .out
            .get_ref()
            .as_file()
            .metadata()
            .map_or(0, |m| m.len());
        on_disk + self.out.buffer().len() as u64
    }

    /// Puts the new contents in place durably: flush, fsync, the mode (when
    /// given), rename over the target, fsync the directory. After it returns,
    /// the file survives a crash whole or not at all.
    pub fn commit(self, mode: Option<u32>) -> anyhow::Result<()> {
        let path = self.path;
        let tmp = self
            .out
            .into_inner()
            .map_err(|e| anyhow::Error::new(e.into_error()))
            .with_context(|| format!("cannot write {}", path.display()))?;
        if let Some(mode) = mode {
            crate::sys::set_file_mode(tmp.path(), mode)
                .with_context(|| format!("cannot set the mode of {}", path.display()))?;
        }
        tmp.as_file()
            .sync_all()
            .with_context(|| format!("cannot write {}", path.display()))?;
        tmp.persist(&path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        // The rename itself is durable only once the directory is synced.
        let dir = parent_dir(&path);
        crate::sys::sync_dir(&dir)
            .with_context(|| format!("cannot sync directory {}", dir.display()))
    }
}

impl Write for Replacement {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.out.write(data)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Writes `contents` to `path` atomically and durably (see [`Replacement`]);
/// a device or FIFO is written in place. A new file is private (0600).
pub fn write_atomically(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    if fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return open_in_place(path)?
            .write_all(contents)
            .with_context(|| format!("cannot write {}", path.display()));
    }
    let dir = parent_dir(path);
    let mut new = Replacement::new(path, "", 0)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    new.write_all(contents)
        .with_context(|| format!("cannot write {}", path.display()))?;
    new.commit(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left"
        );
    }

    #[test]
    fn an_uncommitted_replacement_leaves_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        fs::write(&path, b"old").unwrap();
        let mut new = Replacement::new(&path, ".part", 1024).unwrap();
        new.write_all(b"new").unwrap();
        assert_eq!(new.written(), 3);
        drop(new);
        assert_eq!(fs::read(&path).unwrap(), b"old");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    #[cfg(unix)] // Windows keeps only read-only of a mode
    fn a_commit_sets_the_mode_it_is_given() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let mut new = Replacement::new(&path, "", 1024).unwrap();
        new.write_all(b"x").unwrap();
        new.commit(Some(0o640)).unwrap();
        let mode = crate::sys::file_mode(&fs::metadata(&path).unwrap());
        assert_eq!(mode, Some(0o640));
    }

    #[test]
    fn report_path_must_have_a_directory() {
        assert!(check_file_target("--report", Path::new("/no/such/dir/r.json")).is_err());
        assert!(check_file_target("--report", Path::new("r.json")).is_ok());
        assert!(check_file_target("--report", Path::new("")).is_err());
    }

    #[test]
    #[cfg(unix)] // Windows' NUL is no entry of a directory to rename over
    fn devices_are_written_in_place_not_renamed_over() {
        write_atomically(Path::new("/dev/null"), b"{}").unwrap();
        let meta = fs::symlink_metadata("/dev/null").unwrap();
        assert!(
            !meta.is_file() && !meta.is_dir() && !meta.is_symlink(),
            "/dev/null must stay a device"
        );
    }
}
