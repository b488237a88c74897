//! A private directory for a file a command writes to retry (`RETRY_CONTROL`), and
//! opening what the command left there without blocking or following a link.

use std::fs::{File, FileType, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use nix::libc;

/// Makes the directory `path` (not its parents) with mode 0700.
pub fn make_private_dir(path: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new().mode(0o700).create(path)
}

/// Mode 0700, for a private directory made another way (a temporary one).
pub fn private_dir_permissions() -> io::Result<Permissions> {
    Ok(Permissions::from_mode(0o700))
}

/// Opens `path` to read without blocking (a FIFO), without following a link and
/// without taking a terminal; `Ok(Err(()))` when it is a symbolic link.
pub fn open_unfollowed(path: &Path) -> io::Result<Result<File, ()>> {
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY)
        .open(path);
    match opened {
        Ok(file) => Ok(Ok(file)),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => Ok(Err(())),
        Err(e) => Err(e),
    }
}

/// Opens `path` to read without blocking on what an open can block on (a FIFO with no
/// writer) and without taking a terminal as the controlling one; a link is followed.
pub fn open_nonblocking(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
}

/// What a file that is not a regular one is, for a warning.
pub fn describe_kind(kind: FileType) -> &'static str {
    if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_dir() {
        "a directory"
    } else {
        "something else"
    }
}
