//! The file behind `RETRY_CONTROL`: an empty file in a private directory made
//! for one attempt (under `$XDG_RUNTIME_DIR` when set, else `$TMPDIR`, else
//! `/tmp`), read once the attempt's process has ended and removed with its
//! directory. What a directive means is `classify::control`'s.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::classify::control::{self, Directive};
use crate::report;

pub(super) struct ControlFile {
    dir: tempfile::TempDir,
}

const NAME: &str = "directive";

/// Where the private directory goes: the first of the variables that is set.
fn base() -> PathBuf {
    ["XDG_RUNTIME_DIR", "TMPDIR"]
        .iter()
        .filter_map(std::env::var_os)
        .find(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from)
}

impl ControlFile {
    /// A fresh private directory (mode 0700) holding an empty file; `Err` says why not.
    pub fn new() -> Result<ControlFile, String> {
        let base = base();
        let made = tempfile::Builder::new()
            .prefix("retry-control-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(&base)
            .and_then(|dir| std::fs::File::create_new(dir.path().join(NAME)).map(|_| dir));
        made.map(|dir| ControlFile { dir }).map_err(|e| {
            format!(
                "cannot make a private directory for RETRY_CONTROL under {}: {e}; the command runs without it",
                base.display()
            )
        })
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().join(NAME)
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

/// The file's text, refused when it is longer than a directive can be or not UTF-8.
fn read_limited(path: &Path) -> Result<String, String> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        // Removed by the command: it said nothing.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(e) => return Err(format!("cannot read it: {e}")),
    };
    let mut bytes = Vec::new();
    file.take(control::MAX_LEN as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() > control::MAX_LEN {
        return Err(format!("it holds more than {} bytes", control::MAX_LEN));
    }
    String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())
}

fn warn(why: &str) {
    report::notice(&format!(
        "warning: RETRY_CONTROL ignored: {why}; expected {}",
        control::EXPECTED
    ));
}
