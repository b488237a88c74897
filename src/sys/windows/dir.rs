//! A directory on Windows, by its path: entries opened by name, a link (a reparse point)
//! refused where one would be followed and opened as itself otherwise, so that a link
//! swapped in after a check is not followed either. Windows keeps an ACL, not an owner's
//! uid and a mode.

use std::fs::{File, Metadata};
use std::io;
use std::path::{Path, PathBuf};

use windows_sys::Win32::Foundation::ERROR_STOPPED_ON_SYMLINK;
use windows_sys::Win32::Storage::FileSystem::{
    FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT,
};

use super::identity;

/// A directory, by its path: Windows opens entries by name, and a link (a reparse
/// point) is refused where one would be followed, then opened as itself
/// (`FILE_FLAG_OPEN_REPARSE_POINT`), so that a link swapped in after the check is not
/// followed either.
#[derive(Debug)]
pub struct Dir(PathBuf);

/// The error of an open that met a link it does not follow.
fn link_met() -> io::Error {
    io::Error::from_raw_os_error(ERROR_STOPPED_ON_SYMLINK as i32)
}

impl Dir {
    pub fn open(path: &Path, follow: bool) -> io::Result<Dir> {
        let meta = match follow {
            true => std::fs::metadata(path)?,
            false => std::fs::symlink_metadata(path)?,
        };
        if meta.file_type().is_symlink() {
            return Err(link_met());
        }
        if !meta.is_dir() {
            return Err(io::ErrorKind::NotADirectory.into());
        }
        Ok(Dir(path.to_path_buf()))
    }

    pub fn open_dir(&self, name: &str) -> io::Result<Dir> {
        Dir::open(&self.0.join(name), false)
    }

    pub fn make_dir(&self, name: &str) -> io::Result<()> {
        std::fs::create_dir(self.0.join(name))
    }

    pub fn open_file(&self, name: &str, access: crate::sys::FileAccess) -> io::Result<File> {
        use crate::sys::FileAccess;
        use std::os::windows::fs::OpenOptionsExt;
        let path = self.0.join(name);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(link_met());
        }
        let mut options = std::fs::OpenOptions::new();
        options.custom_flags(FILE_FLAG_OPEN_REPARSE_POINT);
        match access {
            FileAccess::Read => options.read(true),
            FileAccess::Update => options.read(true).write(true).create(true),
            FileAccess::New => options.read(true).write(true).create_new(true),
            FileAccess::NewWriteOnly => options.write(true).create_new(true),
        };
        let file = options.open(&path)?;
        if file.metadata()?.file_type().is_symlink() {
            return Err(link_met());
        }
        Ok(file)
    }

    pub fn entry(&self, name: &str) -> io::Result<crate::sys::Entry> {
        use crate::sys::{Entry, EntryKind};
        use std::os::windows::fs::OpenOptionsExt;
        let path = self.0.join(name);
        let meta = std::fs::symlink_metadata(&path)?;
        let kind = match meta.file_type() {
            t if t.is_symlink() => EntryKind::Link,
            t if t.is_file() => EntryKind::File,
            t if t.is_dir() => EntryKind::Dir,
            _ => EntryKind::Other,
        };
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS)
            .open(&path)?;
        Ok(Entry {
            kind,
            identity: identity(&opened)?,
            modified: meta.modified().ok(),
        })
    }

    /// `MoveFileExW` with `MOVEFILE_REPLACE_EXISTING`, atomic on NTFS for files.
    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        std::fs::rename(self.0.join(from), self.0.join(to))
    }

    pub fn remove(&self, name: &str) -> io::Result<()> {
        std::fs::remove_file(self.0.join(name))
    }

    /// NTFS journals a rename; std cannot open a directory to flush it.
    pub fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    pub fn names(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&self.0)? {
            if let Some(name) = entry?.file_name().to_str() {
                names.push(name.to_string());
            }
        }
        Ok(names)
    }

    /// Windows keeps an ACL, not an owner's uid and a mode.
    pub fn owner_and_mode(&self) -> io::Result<Option<(u32, u32)>> {
        Ok(None)
    }
}

pub fn is_link_refusal(error: &io::Error) -> bool {
    error.raw_os_error() == Some(ERROR_STOPPED_ON_SYMLINK as i32)
}

/// Windows keeps an ACL, no uid.
pub fn owner(_meta: &Metadata) -> Option<u32> {
    None
}

pub fn user_id() -> Option<u32> {
    None
}

/// New directories take the ACL their parent passes on (under `%LOCALAPPDATA%`, the user's).
pub fn create_private_dirs(path: &Path) -> io::Result<()> {
    std::fs::create_dir_all(path)
}

/// A link to a directory or a file, as `target` is (the right to make links is needed).
#[cfg(test)]
pub fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    match target.is_dir() {
        true => std::os::windows::fs::symlink_dir(target, link),
        false => std::os::windows::fs::symlink_file(target, link),
    }
}
