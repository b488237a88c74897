//! The file behind `RETRY_CONTROL`: an empty file, made for one attempt, in a private
//! directory (mode 0700) under `$XDG_RUNTIME_DIR` when set, else `$TMPDIR`, else `/tmp`;
//! read once the attempt's process has ended, then removed.
//!
//! The directory is this user's `retry-control-UID`, kept between runs and used only
//! after checking that it is a real directory, owned by this user, closed to others:
//! making and removing a directory per attempt cost ~120 µs on ext4, a twentieth of
//! retry's start-up. When it cannot be used, a fresh private directory is made and
//! removed with the file. What a directive means is [`classify::control`](crate::classify::control)'s.
//!
//! The command may have put anything at the path: it is opened without blocking and
//! without following a link, and read only if it is a regular file, so a FIFO (whose
//! open would wait for a writer), a device or a link is a warning, never a hang.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::classify::control::{self, Directive};
use crate::{report, sys};

pub(super) struct ControlFile {
    path: PathBuf,
    /// The fresh directory made when this user's own could not be used.
    fresh: Option<tempfile::TempDir>,
}

/// Where the private directory goes: the first of the variables that is set.
fn base() -> PathBuf {
    ["XDG_RUNTIME_DIR", "TMPDIR"]
        .iter()
        .filter_map(std::env::var_os)
        .find(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from)
}

/// This user's directory under `base`, made if missing; `None` unless it is a directory
/// (not a symbolic link) owned by this user with no access for group or others.
fn own_dir(base: &Path) -> Option<PathBuf> {
    let uid = sys::user_id()?;
    let dir = base.join(format!("retry-control-{uid}"));
    match sys::make_private_dir(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return None,
    }
    let meta = std::fs::symlink_metadata(&dir).ok()?;
    let private = sys::file_mode(&meta).is_some_and(|mode| mode & 0o077 == 0);
    (meta.is_dir() && sys::owner(&meta) == Some(uid) && private).then_some(dir)
}

/// A new empty file (mode 0600) with a name of its own in `dir`.
fn new_file(dir: &Path) -> std::io::Result<PathBuf> {
    let file = tempfile::Builder::new()
        .prefix("directive-")
        .tempfile_in(dir)?;
    let (_, path) = file.keep().map_err(|e| e.error)?;
    Ok(path)
}

impl ControlFile {
    /// An empty file in a private directory; `Err` says why there is none.
    pub fn new() -> Result<ControlFile, String> {
        let base = base();
        if let Some(path) = own_dir(&base).and_then(|dir| new_file(&dir).ok()) {
            return Ok(ControlFile { path, fresh: None });
        }
        let made = sys::private_dir_permissions()
            .and_then(|mode| {
                tempfile::Builder::new()
                    .prefix("retry-control-")
                    .permissions(mode)
                    .tempdir_in(&base)
            })
            .and_then(|dir| new_file(dir.path()).map(|path| (dir, path)));
        made.map(|(dir, path)| ControlFile {
            path,
            fresh: Some(dir),
        })
        .map_err(|e| {
            format!(
                "cannot make a private directory for RETRY_CONTROL under {}: {e}; the command runs without it",
                base.display()
            )
        })
    }

    pub fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// What the command wrote; anything that is not a directive is a warning and is ignored.
    pub fn read(self) -> Option<Directive> {
        let text = match read_limited(&self.path()) {
            Ok(text) => text,
            Err(why) => {
                warn(&why);
                return None;
            }
        };
        match Directive::parse(&text) {
            Ok(directive) => directive,
            Err(why) => {
                warn(&why);
                None
            }
        }
    }
}

impl Drop for ControlFile {
    /// The file goes with the attempt (a fresh directory goes with it, as a `TempDir`).
    fn drop(&mut self) {
        if self.fresh.is_none() && std::fs::remove_file(&self.path).is_err() {
            // The command may have put a directory there.
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// The file's text, refused when it is not a regular file, longer than a directive
/// can be or not UTF-8.
fn read_limited(path: &Path) -> Result<String, String> {
    let file = match sys::open_unfollowed(path) {
        Ok(Ok(file)) => file,
        Ok(Err(())) => return Err("it is a symbolic link, not a regular file".into()),
        // Removed by the command: it said nothing.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(e) => return Err(format!("cannot read it: {e}")),
    };
    let kind = file
        .metadata()
        .map_err(|e| format!("cannot read it: {e}"))?
        .file_type();
    if !kind.is_file() {
        return Err(format!("it is {}, not a regular file", describe(kind)));
    }
    let mut bytes = Vec::new();
    file.take(control::MAX_LEN as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() > control::MAX_LEN {
        return Err(format!("it holds more than {} bytes", control::MAX_LEN));
    }
    String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())
}

/// What a file that is not a regular one is, for the warning.
fn describe(kind: std::fs::FileType) -> &'static str {
    sys::describe_kind(kind)
}

fn warn(why: &str) {
    report::notice(&format!(
        "warning: RETRY_CONTROL ignored: {why}; expected {}",
        control::EXPECTED
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_read_and_a_missing_one_said_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("directive");
        assert_eq!(read_limited(&path), Ok(String::new()));
        std::fs::write(&path, "stop\n").unwrap();
        assert_eq!(read_limited(&path), Ok("stop\n".into()));
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_a_device_or_a_link_is_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        sys::make_fifo(&fifo).unwrap();
        // No writer ever opens it: a blocking open would never return.
        assert_eq!(
            read_limited(&fifo),
            Err("it is a FIFO, not a regular file".into())
        );
        assert_eq!(
            read_limited(Path::new("/dev/null")),
            Err("it is a device, not a regular file".into())
        );
        let link = dir.path().join("link");
        sys::symlink(Path::new("/dev/zero"), &link).unwrap();
        assert_eq!(
            read_limited(&link),
            Err("it is a symbolic link, not a regular file".into())
        );
        assert_eq!(
            read_limited(dir.path()),
            Err("it is a directory, not a regular file".into())
        );
    }
}
