//! The state directory (`--state DIR`) as retry may trust it. DIR, and every directory
//! retry makes in it, must be owned by the user running retry (or root) and writable
//! by nobody else, as OpenSSH asks of `~/.ssh`; a missing one is created with mode
//! 0700. Every file in them is reached through the directory's descriptor, never
//! through a symbolic link (`O_NOFOLLOW`), so nothing outside DIR is ever created,
//! truncated or written, and a path swapped after the check changes nothing. Markers,
//! key locks, budgets, circuits and fencing counters all go through here; what their
//! files hold is their owners' business.

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::Context;

use crate::sys::{self, Dir, EntryKind, FileAccess};

/// Mode bits that let someone other than the owner change a directory's entries.
const OTHERS_WRITE: u32 = 0o022;
/// How often a temporary name that is taken already is drawn again.
const TEMP_TRIES: u32 = 16;

/// A checked directory of state files, held open.
#[derive(Debug)]
pub struct StateDir {
    dir: Dir,
    path: PathBuf,
}

/// How a state file is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    /// Read and write, created (mode 0600) if missing.
    Update,
    /// Read and write, a new file (mode 0600) that must not exist yet.
    New,
}

impl StateDir {
    /// Opens `--state DIR`, creating it (and missing parents) with mode 0700.
    pub fn open(path: &Path) -> anyhow::Result<StateDir> {
        refuse_foreign_link(path)?;
        sys::create_private_dirs(path)
            .with_context(|| format!("--state: cannot create directory {}", path.display()))?;
        Self::open_existing(path)?
            .with_context(|| format!("--state: {} vanished as it was made", path.display()))
    }

    /// Opens `--state DIR` when it exists (`None` when it does not), creating nothing.
    pub fn open_existing(path: &Path) -> anyhow::Result<Option<StateDir>> {
        // Not through a link first; a link is followed only when its owner is trusted.
        let opened = match Dir::open(path, false) {
            Err(e) if sys::is_link_refusal(&e) && refuse_foreign_link(path)? => {
                Dir::open(path, true)
            }
            other => other,
        };
        let dir = match opened {
            Ok(dir) => dir,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) if e.kind() == ErrorKind::NotADirectory => {
                anyhow::bail!("--state: {} is not a directory", path.display())
            }
            Err(e) => {
                return Err(e).with_context(|| format!("--state: cannot open {}", path.display()));
            }
        };
        let dir = StateDir {
            dir,
            path: path.to_path_buf(),
        };
        dir.check()?;
        Ok(Some(dir))
    }

    /// The directory `name` inside this one, created with mode 0700 if missing.
    pub fn subdir(&self, name: &str) -> anyhow::Result<StateDir> {
        match self.dir.make_dir(name) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(e).with_context(|| {
                    format!(
                        "--state: cannot create directory {}",
                        self.join(name).display()
                    )
                });
            }
        }
        self.existing_subdir(name)?.with_context(|| {
            format!(
                "--state: {} vanished as it was made",
                self.join(name).display()
            )
        })
    }

    /// The directory `name` inside this one, if it exists (`None` when it does not).
    pub fn existing_subdir(&self, name: &str) -> anyhow::Result<Option<StateDir>> {
        let path = self.join(name);
        let dir = match self.dir.open_dir(name) {
            Ok(dir) => dir,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.refusal(name, e)),
        };
        let dir = StateDir { dir, path };
        dir.check()?;
        Ok(Some(dir))
    }

    /// Refuses a directory that someone other than this user (or root) could change.
    fn check(&self) -> anyhow::Result<()> {
        match self.dir.owner_and_mode()? {
            Some((uid, mode)) => check_trusted(&self.path, uid, mode),
            // Windows: an ACL, which the directory inherits from where the user put it.
            None => Ok(()),
        }
    }

    /// Where `name` is, for messages.
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the regular file `name`; `Ok(None)` when it is missing and `access` does
    /// not create it. A symbolic link, a FIFO or a device there is an error.
    pub fn open_file(&self, name: &str, access: Access) -> anyhow::Result<Option<File>> {
        let how = match access {
            Access::Read => FileAccess::Read,
            Access::Update => FileAccess::Update,
            Access::New => FileAccess::New,
        };
        let file = match self.dir.open_file(name, how) {
            Ok(file) => file,
            Err(e) if e.kind() == ErrorKind::NotFound && access == Access::Read => return Ok(None),
            Err(e) => return Err(self.refusal(name, e)),
        };
        let meta = file
            .metadata()
            .with_context(|| format!("cannot stat {}", self.join(name).display()))?;
        if !meta.is_file() {
            anyhow::bail!(
                "{} is not a regular file; retry keeps only regular files in its state directory (remove it)",
                self.join(name).display()
            );
        }
        Ok(Some(file))
    }

    /// The whole of the file `name`, if it exists.
    pub fn read(&self, name: &str) -> anyhow::Result<Option<Vec<u8>>> {
        let Some(mut file) = self.open_file(name, Access::Read)? else {
            return Ok(None);
        };
        let mut text = Vec::new();
        file.read_to_end(&mut text)
            .with_context(|| format!("cannot read {}", self.join(name).display()))?;
        Ok(Some(text))
    }

    /// The device and inode of `name` itself (a link is not followed), if it exists.
    pub fn identity(&self, name: &str) -> anyhow::Result<Option<(u64, u64)>> {
        match self.dir.entry(name) {
            Ok(entry) => Ok(Some(entry.identity)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("cannot stat {}", self.join(name).display())),
        }
    }

    /// Refuses a link, a directory or anything else but a regular file at `name`.
    pub fn refuse_odd_entry(&self, name: &str) -> anyhow::Result<()> {
        let entry = match self.dir.entry(name) {
            Ok(entry) => entry,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot stat {}", self.join(name).display()));
            }
        };
        if entry.kind == EntryKind::Link {
            return Err(self.link_refusal(name));
        }
        anyhow::ensure!(
            entry.kind == EntryKind::File,
            "{} is not a regular file; retry keeps only regular files in its state directory (remove it)",
            self.join(name).display()
        );
        Ok(())
    }

    /// Replaces `name` with `contents` whole and durably: a new file named
    /// `PREFIX.RANDOM.tmp` (mode 0600), fsync, rename over `name`, fsync of the
    /// directory. After it returns, the file survives a crash whole or not at all.
    pub fn replace(&self, name: &str, contents: &[u8], prefix: &str) -> anyhow::Result<()> {
        self.refuse_odd_entry(name)?;
        let (temp, file) = self.create_temp(prefix)?;
        self.put(name, contents, &temp, file)
    }

    /// Replaces `name` as [`replace`](Self::replace) does, through the temporary file
    /// `temp`, a name only this caller writes: one that a killed writer left there is
    /// removed first, found by its name, so no listing of the directory is needed.
    pub fn replace_through(&self, name: &str, contents: &[u8], temp: &str) -> anyhow::Result<()> {
        self.refuse_odd_entry(name)?;
        match self.remove(temp) {
            Err(e) if e.kind() != ErrorKind::NotFound => {
                return Err(e)
                    .with_context(|| format!("cannot remove {}", self.join(temp).display()));
            }
            _ => {}
        }
        let file = self
            .dir
            .open_file(temp, FileAccess::NewWriteOnly)
            .with_context(|| format!("cannot create {}", self.join(temp).display()))?;
        self.put(name, contents, temp, file)
    }

    /// Writes `contents` to the new file `temp`, syncs it, renames it over `name` and
    /// syncs the directory; a failure removes `temp`.
    fn put(&self, name: &str, contents: &[u8], temp: &str, mut file: File) -> anyhow::Result<()> {
        let written = file
            .write_all(contents)
            .and_then(|()| file.sync_all())
            .with_context(|| format!("--state: cannot write {}", self.join(temp).display()))
            .and_then(|()| {
                drop(file);
                self.dir
                    .rename(temp, name)
                    .with_context(|| format!("cannot rename into {}", self.join(name).display()))
            });
        if written.is_err() {
            let _ = self.remove(temp);
        }
        written?;
        self.sync()
    }

    /// A new file `PREFIX.RANDOM.tmp` (created, never opened through a link).
    fn create_temp(&self, prefix: &str) -> anyhow::Result<(String, File)> {
        let mut last = std::io::Error::from(ErrorKind::AlreadyExists);
        for n in 0..TEMP_TRIES {
            let temp = format!("{prefix}.{}.tmp", temp_suffix(n));
            match self.dir.open_file(&temp, FileAccess::NewWriteOnly) {
                Ok(file) => return Ok((temp, file)),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => last = e,
                Err(e) => {
                    last = e;
                    break;
                }
            }
        }
        Err(last)
            .with_context(|| format!("cannot create a temporary file in {}", self.path.display()))
    }

    /// Makes renames and removals in this directory durable.
    pub fn sync(&self) -> anyhow::Result<()> {
        self.dir
            .sync()
            .with_context(|| format!("cannot sync directory {}", self.path.display()))
    }

    /// Removes the file `name` (a link itself, never its target).
    pub fn remove(&self, name: &str) -> std::io::Result<()> {
        self.dir.remove(name)
    }

    /// The names in this directory (`.` and `..` left out); names that are not UTF-8
    /// are none of retry's.
    pub fn names(&self) -> anyhow::Result<Vec<String>> {
        self.dir
            .names()
            .with_context(|| format!("cannot list {}", self.path.display()))
    }

    /// When `name` was last changed, if it exists.
    pub fn modified(&self, name: &str) -> Option<SystemTime> {
        self.dir.entry(name).ok()?.modified
    }

    /// Creates and removes a file here: the operating system's own reason if it cannot.
    pub fn probe(&self) -> anyhow::Result<()> {
        let (temp, file) = self.create_temp(".retry-check")?;
        drop(file);
        self.remove(&temp)
            .with_context(|| format!("cannot remove {}", self.join(&temp).display()))
    }

    fn link_refusal(&self, name: &str) -> anyhow::Error {
        anyhow::anyhow!(
            "{} is a symbolic link; retry never follows one in its state directory, \
             so nothing outside it is written (remove the link)",
            self.join(name).display()
        )
    }

    /// The error for a file or directory `name` that could not be opened.
    fn refusal(&self, name: &str, error: std::io::Error) -> anyhow::Error {
        // O_NOFOLLOW meets a link with ELOOP, or with ENOTDIR under O_DIRECTORY.
        let link = sys::is_link_refusal(&error)
            && self
                .dir
                .entry(name)
                .is_ok_and(|entry| entry.kind == EntryKind::Link);
        if link {
            return self.link_refusal(name);
        }
        match error.kind() {
            ErrorKind::NotADirectory => anyhow::anyhow!(
                "{} is not a directory (remove what is in its place)",
                self.join(name).display()
            ),
            _ => anyhow::Error::new(error)
                .context(format!("cannot open {}", self.join(name).display())),
        }
    }
}

/// Whether `--state DIR` is a symbolic link, refusing one that another user made
/// (following it would write wherever that user chose).
fn refuse_foreign_link(path: &Path) -> anyhow::Result<bool> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(false);
    };
    let owner = sys::owner(&meta);
    if meta.file_type().is_symlink() && !owner.is_none_or(trusted_owner) {
        anyhow::bail!(
            "--state: {} is a symbolic link owned by uid {}, not by the user running retry \
             (uid {}) or root; give the directory itself",
            path.display(),
            owner.unwrap_or_default(),
            sys::user_id().unwrap_or_default()
        );
    }
    Ok(meta.file_type().is_symlink())
}

fn trusted_owner(uid: u32) -> bool {
    uid == 0 || Some(uid) == sys::user_id()
}

/// The rule for a state directory: owned by this user or root, and not writable by
/// group or others.
pub fn check_trusted(path: &Path, uid: u32, mode: u32) -> anyhow::Result<()> {
    if !trusted_owner(uid) {
        anyhow::bail!(
            "--state: {} is owned by uid {uid}, not by the user running retry (uid {}) or root; \
             another user could plant files or links there (use a directory of your own)",
            path.display(),
            sys::user_id().unwrap_or_default()
        );
    }
    if mode & OTHERS_WRITE != 0 {
        anyhow::bail!(
            "--state: {} is writable by {} (mode {:04o}); another user could plant files or \
             links there (run chmod go-w {})",
            path.display(),
            match (mode & 0o020 != 0, mode & 0o002 != 0) {
                (true, true) => "group and others",
                (true, false) => "its group",
                _ => "others",
            },
            mode & 0o7777,
            path.display()
        );
    }
    Ok(())
}

/// A name part no other process uses at the same time: the pid, the time and `n`.
fn temp_suffix(n: u32) -> String {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{}-{nanos:09}-{n}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)] // Windows keeps an ACL, no mode bits
    fn mode(path: &Path) -> Option<u32> {
        sys::file_mode(&std::fs::metadata(path).unwrap())
    }

    #[test]
    #[cfg(unix)] // Windows keeps an ACL, no mode bits
    fn a_missing_directory_is_made_private() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = StateDir::open(&tmp.path().join("a/state")).unwrap();
        assert_eq!(mode(dir.path()).unwrap() & 0o777, 0o700);
        let sub = dir.subdir("budgets").unwrap();
        assert_eq!(mode(sub.path()).unwrap() & 0o777, 0o700);
    }

    #[test]
    #[cfg(unix)] // Windows keeps an ACL, no mode bits
    fn a_directory_others_may_write_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("state");
        std::fs::create_dir(&path).unwrap();
        sys::set_file_mode(&path, 0o777).unwrap();
        let err = StateDir::open(&path).unwrap_err().to_string();
        assert!(
            err.contains("writable by group and others (mode 0777)"),
            "{err}"
        );
        sys::set_file_mode(&path, 0o1770).unwrap();
        let err = StateDir::open(&path).unwrap_err().to_string();
        assert!(err.contains("writable by its group (mode 1770)"), "{err}");
    }

    #[test]
    #[cfg(unix)] // Windows has no uid
    fn the_owner_rule_takes_this_user_or_root() {
        let me = sys::user_id().unwrap();
        let path = Path::new("/state");
        assert!(check_trusted(path, me, 0o40700).is_ok());
        assert!(check_trusted(path, 0, 0o40755).is_ok());
        let other = if me == 12345 { 12346 } else { 12345 };
        let err = check_trusted(path, other, 0o40700).unwrap_err().to_string();
        assert!(err.contains("owned by uid"), "{err}");
    }

    #[test]
    fn links_are_never_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = StateDir::open(&tmp.path().join("state")).unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        sys::symlink(&victim, &dir.join("x.json")).unwrap();
        let err = dir
            .open_file("x.json", Access::Update)
            .unwrap_err()
            .to_string();
        assert!(err.contains("is a symbolic link"), "{err}");
        let err = dir.replace("x.json", b"new", ".x").unwrap_err().to_string();
        assert!(err.contains("is a symbolic link"), "{err}");
        assert!(dir.read("x.json").is_err());
        sys::symlink(tmp.path(), &dir.join("budgets")).unwrap();
        let err = dir.subdir("budgets").unwrap_err().to_string();
        assert!(err.contains("is a symbolic link"), "{err}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    }

    #[test]
    fn a_replacement_is_whole_and_leaves_no_temporary_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = StateDir::open(tmp.path()).unwrap();
        dir.replace("r.json", b"one", ".r").unwrap();
        dir.replace("r.json", b"two", ".r").unwrap();
        assert_eq!(dir.read("r.json").unwrap().unwrap(), b"two");
        assert_eq!(dir.names().unwrap(), vec!["r.json".to_string()]);
        dir.probe().unwrap();
        assert_eq!(dir.names().unwrap().len(), 1);
    }

    #[test]
    #[cfg(unix)] // Windows has no FIFO in a directory
    fn a_fifo_is_refused_without_blocking() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = StateDir::open(tmp.path()).unwrap();
        sys::make_fifo(&dir.join("f.json")).unwrap();
        let err = dir.read("f.json").unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");
    }
}
