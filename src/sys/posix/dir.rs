//! A directory held open by its descriptor, each entry reached through it (`openat`,
//! `renameat`, `unlinkat`, `fstatat`) and never through a symbolic link (`O_NOFOLLOW`):
//! a path swapped after a check changes nothing.

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::SystemTime;

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, openat, renameat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstatat, mkdirat};
use nix::unistd::{UnlinkatFlags, unlinkat};

use crate::sys::{Entry, EntryKind, FileAccess};

/// A directory, held open.
#[derive(Debug)]
pub struct Dir(OwnedFd);

const DIR_FLAGS: OFlag = OFlag::O_DIRECTORY
    .union(OFlag::O_RDONLY)
    .union(OFlag::O_CLOEXEC);

impl Dir {
    /// Opens the directory `path`; a link there is followed only when `follow`.
    pub fn open(path: &Path, follow: bool) -> io::Result<Dir> {
        let flags = match follow {
            true => DIR_FLAGS,
            false => DIR_FLAGS | OFlag::O_NOFOLLOW,
        };
        Ok(Dir(nix::fcntl::open(path, flags, Mode::empty())?))
    }

    /// The directory `name` in this one, not through a link.
    pub fn open_dir(&self, name: &str) -> io::Result<Dir> {
        Ok(Dir(openat(
            &self.0,
            name,
            DIR_FLAGS | OFlag::O_NOFOLLOW,
            Mode::empty(),
        )?))
    }

    /// Makes the directory `name` (mode 0700).
    pub fn make_dir(&self, name: &str) -> io::Result<()> {
        Ok(mkdirat(&self.0, name, Mode::from_bits_truncate(0o700))?)
    }

    /// Opens the file `name`, not through a link, without blocking on a FIFO; a new one
    /// has mode 0600.
    pub fn open_file(&self, name: &str, access: FileAccess) -> io::Result<File> {
        let flags = OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let flags = flags
            | match access {
                FileAccess::Read => OFlag::O_RDONLY | OFlag::O_NONBLOCK,
                FileAccess::Update => OFlag::O_RDWR | OFlag::O_CREAT | OFlag::O_NONBLOCK,
                FileAccess::New => {
                    OFlag::O_RDWR | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NONBLOCK
                }
                FileAccess::NewWriteOnly => OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL,
            };
        let fd = openat(&self.0, name, flags, Mode::from_bits_truncate(0o600))?;
        Ok(File::from(fd))
    }

    /// What `name` itself is (a link is not followed).
    pub fn entry(&self, name: &str) -> io::Result<Entry> {
        let st = fstatat(&self.0, name, AtFlags::AT_SYMLINK_NOFOLLOW)?;
        Ok(entry_of(&st))
    }

    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        Ok(renameat(&self.0, from, &self.0, to)?)
    }

    /// Removes the file `name` (a link itself, never its target).
    pub fn remove(&self, name: &str) -> io::Result<()> {
        Ok(unlinkat(&self.0, name, UnlinkatFlags::NoRemoveDir)?)
    }

    /// Makes renames and removals in it durable.
    pub fn sync(&self) -> io::Result<()> {
        Ok(nix::unistd::fsync(&self.0)?)
    }

    /// The names in it (`.` and `..` left out, and names that are not UTF-8).
    pub fn names(&self) -> io::Result<Vec<String>> {
        let mut dir = nix::dir::Dir::openat(&self.0, ".", DIR_FLAGS, Mode::empty())?;
        let mut names = Vec::new();
        for entry in dir.iter() {
            if let Ok(name) = entry?.file_name().to_str() {
                if name != "." && name != ".." {
                    names.push(name.to_string());
                }
            }
        }
        Ok(names)
    }

    /// Its owner's uid and its mode.
    pub fn owner_and_mode(&self) -> io::Result<Option<(u32, u32)>> {
        let meta = File::from(self.0.try_clone()?).metadata()?;
        Ok(Some((meta.uid(), meta.mode())))
    }
}

fn entry_of(st: &FileStat) -> Entry {
    let kind = match SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT {
        SFlag::S_IFREG => EntryKind::File,
        SFlag::S_IFLNK => EntryKind::Link,
        SFlag::S_IFDIR => EntryKind::Dir,
        _ => EntryKind::Other,
    };
    let modified = u64::try_from(st.st_mtime)
        .ok()
        .zip(u32::try_from(st.st_mtime_nsec).ok());
    #[allow(clippy::unnecessary_cast)] // the types differ between systems
    Entry {
        kind,
        identity: (st.st_dev as u64, st.st_ino as u64),
        modified: modified.and_then(|(secs, nanos)| {
            SystemTime::UNIX_EPOCH.checked_add(std::time::Duration::new(secs, nanos))
        }),
    }
}

/// An open that met a link where none is followed (ELOOP, or ENOTDIR for a directory).
pub fn is_link_refusal(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error().map(Errno::from_raw),
        Some(Errno::ELOOP | Errno::ENOTDIR)
    )
}

/// The owner of a file, as the system keeps it.
pub fn owner(meta: &std::fs::Metadata) -> Option<u32> {
    Some(meta.uid())
}

/// The user running retry (its effective uid).
pub fn user_id() -> Option<u32> {
    Some(nix::unistd::geteuid().as_raw())
}

/// Makes `path` and its missing parents, each new one with mode 0700.
pub fn create_private_dirs(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
}
