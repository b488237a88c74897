//! A private directory for a file a command writes to retry (`RETRY_CONTROL`), which
//! Windows refuses (privacy there is an ACL's, which retry does not set), and opening
//! what a command left without following a link.

use std::fs::File;
use std::io;
use std::path::Path;

/// Why a private directory for `RETRY_CONTROL` cannot be had on Windows.
const NO_PRIVATE_DIR: &str = "RETRY_CONTROL is not available on Windows: its directory \
     must be private to this user, which Windows decides by an ACL that retry does not set";

/// See [`NO_PRIVATE_DIR`].
pub fn make_private_dir(_path: &Path) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, NO_PRIVATE_DIR))
}

/// See [`NO_PRIVATE_DIR`].
pub fn private_dir_permissions() -> io::Result<std::fs::Permissions> {
    Err(io::Error::new(io::ErrorKind::Unsupported, NO_PRIVATE_DIR))
}

/// Opens `path` to read, refusing a link (`Ok(Err(()))`).
pub fn open_unfollowed(path: &Path) -> io::Result<Result<File, ()>> {
    if std::fs::symlink_metadata(path)?.file_type().is_symlink() {
        return Ok(Err(()));
    }
    File::open(path).map(Ok)
}

/// Opens `path` to read (nothing an open blocks on has a path on Windows); a link is followed.
pub fn open_nonblocking(path: &Path) -> io::Result<File> {
    File::open(path)
}

/// What a file that is not a regular one is, for a warning.
pub fn describe_kind(kind: std::fs::FileType) -> &'static str {
    match kind.is_dir() {
        true => "a directory",
        false => "something else",
    }
}
