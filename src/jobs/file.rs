//! The file backend: `--lock PATH` as an exclusive `flock(2)`, and `--once` markers
//! as JSON files in the state directory, one per key, named after the key. The
//! kernel frees a flock when its holder dies, so no lock is ever left stale; every
//! descriptor is opened close-on-exec, so the command never inherits a lock.

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::PathBuf;

use anyhow::Context;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use std::time::SystemTime;

use super::{Done, Lock, Marker, MarkerStore, Status};
use crate::wait::Bound;

/// Longest file name most file systems take (NAME_MAX).
const NAME_MAX: usize = 255;
/// What a key's file names add to the escaped key: `.` + `.lock`.
const NAME_OVERHEAD: usize = 6;
/// How often a lock file that keeps being replaced is reopened before giving up.
const REOPENS: usize = 20;

/// An exclusive flock on a file, created if missing.
pub struct FileLock {
    path: PathBuf,
    held: Option<Flock<File>>,
    /// Key locks are removed on release; `--lock` files never are.
    remove_on_release: bool,
    /// Where the fencing counters live (`STATE/fencing`), for a `--lock` file.
    fencing_dir: Option<PathBuf>,
    token: Option<i64>,
}

impl FileLock {
    /// The `--lock PATH` lock: the file stays when the lock is released.
    pub fn new(path: PathBuf) -> FileLock {
        FileLock {
            path,
            held: None,
            remove_on_release: false,
            fencing_dir: None,
            token: None,
        }
    }

    /// The `--lock PATH` lock with a fencing counter in `dir`, bumped at every acquisition.
    pub fn fenced(path: PathBuf, dir: PathBuf) -> FileLock {
        let mut lock = FileLock::new(path);
        lock.fencing_dir = Some(dir);
        lock
    }

    /// A lock file that its holder removes on release. Safe because a taker checks,
    /// after locking, that the path still names the file it locked.
    fn removable(path: PathBuf) -> FileLock {
        let mut lock = FileLock::new(path);
        lock.remove_on_release = true;
        lock
    }

    fn open(&self) -> anyhow::Result<File> {
        let opened = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&self.path);
        // A lock file created by another user may be read-only to us; flock works on it all the same.
        let opened = match opened {
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem
                ) =>
            {
                File::open(&self.path)
            }
            other => other,
        };
        opened.with_context(|| format!("cannot open lock file {}", self.path.display()))
    }

    /// Whether the path still names the file behind `file`.
    fn still_named(&self, file: &File) -> anyhow::Result<bool> {
        let ours = file.metadata()?;
        match std::fs::metadata(&self.path) {
            Ok(now) => Ok(now.dev() == ours.dev() && now.ino() == ours.ino()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e).with_context(|| format!("cannot stat {}", self.path.display())),
        }
    }
}

impl Lock for FileLock {
    fn describe(&self) -> String {
        self.path.display().to_string()
    }

    fn fencing_token(&self) -> Option<i64> {
        self.token
    }

    fn try_acquire(&mut self, _bound: &Bound) -> anyhow::Result<bool> {
        if self.held.is_some() {
            return Ok(true);
        }
        for _ in 0..REOPENS {
            let file = self.open()?;
            if file.metadata()?.is_dir() {
                anyhow::bail!("{} is a directory, not a lock file", self.path.display());
            }
            match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(locked) => {
                    // The previous holder may have removed the file between our open and our flock.
                    if self.still_named(&locked)? {
                        self.held = Some(locked);
                        self.token = self.next_token()?;
                        return Ok(true);
                    }
                }
                Err((_, Errno::EWOULDBLOCK)) => return Ok(false),
                Err((_, errno)) => {
                    return Err(std::io::Error::from(errno))
                        .with_context(|| format!("cannot flock {}", self.path.display()));
                }
            }
        }
        Ok(false)
    }
}

impl FileLock {
    /// Bumps the fencing counter of this lock file, durably, while holding the lock.
    fn next_token(&self) -> anyhow::Result<Option<i64>> {
        let Some(dir) = &self.fencing_dir else {
            return Ok(None);
        };
        let absolute = std::fs::canonicalize(&self.path)
            .with_context(|| format!("cannot resolve {}", self.path.display()))?;
        let key = absolute.to_string_lossy().into_owned();
        check_key(&key).map_err(|e| anyhow::anyhow!("--lock: fencing counter for {key}: {e}"))?;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("cannot create directory {}", dir.display()))?;
        let counter = dir.join(format!("{}.json", escape_key(&key)));
        let last = match std::fs::read(&counter) {
            Ok(text) => {
                serde_json::from_slice::<Fencing>(&text)
                    .with_context(|| format!("{} is not a fencing counter", counter.display()))?
                    .token
            }
            Err(e) if e.kind() == ErrorKind::NotFound => 0,
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", counter.display())),
        };
        let token = last + 1;
        let mut text = serde_json::to_vec(&Fencing { lock: key, token })?;
        text.push(b'\n');
        crate::report::write_atomically(&counter, &text)?;
        Ok(Some(i64::try_from(token).unwrap_or(i64::MAX)))
    }
}

/// A lock file's fencing counter: the last token handed out.
#[derive(serde::Serialize, serde::Deserialize)]
struct Fencing {
    lock: String,
    token: u64,
}

impl Drop for FileLock {
    fn drop(&mut self) {
        if self.remove_on_release && self.held.is_some() {
            // Removed while still locked, so nobody can lock this file afterwards and believe it current.
            let _ = std::fs::remove_file(&self.path);
        }
        self.held = None;
    }
}

/// `--once` markers in a directory: `KEY.json`, with `.KEY.lock` beside it while a
/// run of KEY is in progress.
pub struct FileStore {
    dir: PathBuf,
    key_lock: Option<FileLock>,
}

impl FileStore {
    /// Opens the state directory, creating it (mode 0700) if missing.
    pub fn open(dir: PathBuf) -> anyhow::Result<FileStore> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("--state: cannot create directory {}", dir.display()))?;
        anyhow::ensure!(
            dir.is_dir(),
            "--state: {} is not a directory",
            dir.display()
        );
        // Markers are written after a success: the directory must take a new file now.
        crate::report::probe_dir(&dir)
            .with_context(|| format!("--state: cannot create a file in {}", dir.display()))?;
        Ok(FileStore {
            dir,
            key_lock: None,
        })
    }

    /// The marker file for `key`.
    pub fn marker_path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{}.json", escape_key(key)))
    }

    /// The markers whose keys start with `prefix`, with their files.
    fn entries(&self, prefix: &str) -> anyhow::Result<Vec<(String, PathBuf)>> {
        let listing = std::fs::read_dir(&self.dir)
            .with_context(|| format!("--state: cannot list {}", self.dir.display()))?;
        let mut out = Vec::new();
        for entry in listing {
            let entry = entry?;
            let name = entry.file_name();
            let key = name.to_str().and_then(key_from_file_name);
            if let Some(key) = key.filter(|k| k.starts_with(prefix)) {
                out.push((key, entry.path()));
            }
        }
        Ok(out)
    }

    fn key_lock_path(&self, key: &str) -> PathBuf {
        self.dir.join(format!(".{}.lock", escape_key(key)))
    }
}

impl MarkerStore for FileStore {
    fn describe(&self) -> String {
        format!("state directory {}", self.dir.display())
    }

    fn find(&mut self, key: &str, _bound: &Bound) -> anyhow::Result<Option<Done>> {
        let path = self.marker_path(key);
        let text = match std::fs::read(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let place = path.display().to_string();
        // The marker's existence is the record; its contents only say when and where.
        Ok(Some(match serde_json::from_slice::<Marker>(&text) {
            Ok(marker) => Done {
                status: marker.status,
                succeeded_at: marker.succeeded_at,
                host: marker.host,
                place,
            },
            Err(e) => Done {
                status: Status::Succeeded,
                succeeded_at: format!("an unknown time (unreadable marker: {e})"),
                host: "unknown".into(),
                place,
            },
        }))
    }

    fn try_lock_key(&mut self, key: &str, bound: &Bound) -> anyhow::Result<bool> {
        let path = self.key_lock_path(key);
        self.key_lock
            .get_or_insert_with(|| FileLock::removable(path))
            .try_acquire(bound)
    }

    fn record(&mut self, marker: &Marker, _bound: &Bound) -> anyhow::Result<()> {
        let path = self.marker_path(&marker.key);
        // Only a success replaces a record: a late "skipped" never hides how a slot ended.
        if marker.status != Status::Succeeded && path.exists() {
            return Ok(());
        }
        let mut text = serde_json::to_vec_pretty(marker)?;
        text.push(b'\n');
        crate::report::write_atomically(&path, &text)
    }

    fn keys_with_prefix(&mut self, prefix: &str, _bound: &Bound) -> anyhow::Result<Vec<String>> {
        Ok(self
            .entries(prefix)?
            .into_iter()
            .map(|(key, _)| key)
            .collect())
    }

    fn prune(&mut self, prefix: &str, before: SystemTime, _bound: &Bound) -> anyhow::Result<usize> {
        let mut removed = 0;
        for (_, path) in self.entries(prefix)? {
            let old = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .is_ok_and(|t| t < before);
            if old && std::fs::remove_file(&path).is_ok() {
                removed += 1;
            }
        }
        Ok(removed)
    }
}

/// Whether a character may stand for itself in a marker's file name.
fn plain(c: char, first: bool) -> bool {
    let special = matches!(c, '/' | '%' | '\\' | '*' | '?' | '"' | '<' | '>' | '|');
    !(special || c.is_control() || c.is_whitespace() || (first && c == '.'))
}

/// The file-name form of a key: reversible percent-encoding of `/`, `%`, whitespace,
/// control and shell-glob characters and a leading `.`; everything else kept as is.
pub fn escape_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for (i, c) in key.chars().enumerate() {
        if plain(c, i == 0) {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// The key a marker file name stands for (`KEY.json` → KEY), if it is one.
pub fn key_from_file_name(name: &str) -> Option<String> {
    let escaped = name.strip_suffix(".json")?;
    let bytes = escaped.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = escaped.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Refuses a key whose marker file name would be too long.
pub fn check_key(key: &str) -> Result<(), String> {
    let len = escape_key(key).len();
    if len + NAME_OVERHEAD > NAME_MAX {
        return Err(format!(
            "key {key:?} makes a file name of {len} bytes after escaping; file markers allow at most {} bytes (--state postgres://… takes any key up to 200 characters)",
            NAME_MAX - NAME_OVERHEAD
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_readable_characters() {
        assert_eq!(escape_key("report-2024-05-01"), "report-2024-05-01");
        assert_eq!(escape_key("backup:db1@host"), "backup:db1@host");
        assert_eq!(escape_key("café"), "café");
    }

    #[test]
    fn unsafe_characters_are_percent_encoded() {
        assert_eq!(escape_key("a/b"), "a%2Fb");
        assert_eq!(escape_key("50%"), "50%25");
        assert_eq!(escape_key(".."), "%2E.");
        assert_eq!(escape_key("two words"), "two%20words");
        assert_eq!(escape_key("*"), "%2A");
    }

    #[test]
    fn escaping_is_reversible() {
        for key in [
            "a/b",
            "50%",
            "..",
            ".hidden",
            "x y\tz",
            "café/☃",
            "%2F",
            "plain",
        ] {
            let name = format!("{}.json", escape_key(key));
            assert_eq!(key_from_file_name(&name).as_deref(), Some(key), "{name}");
        }
    }

    #[test]
    fn long_keys_are_refused_before_they_reach_the_file_system() {
        assert!(check_key(&"k".repeat(200)).is_ok());
        assert!(check_key(&"/".repeat(100)).is_err());
    }

    #[test]
    fn a_lock_is_exclusive_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.lock");
        let mut first = FileLock::new(path.clone());
        let mut second = FileLock::new(path.clone());
        assert!(first.try_acquire(&Bound::signals_only()).unwrap());
        assert!(!second.try_acquire(&Bound::signals_only()).unwrap());
        drop(first);
        assert!(second.try_acquire(&Bound::signals_only()).unwrap());
        drop(second);
        assert!(path.exists(), "a --lock file is never removed");
    }

    #[test]
    fn a_key_lock_file_is_removed_on_release() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = FileStore::open(dir.path().join("state")).unwrap();
        assert!(store.try_lock_key("k", &Bound::signals_only()).unwrap());
        let mut other = FileStore::open(dir.path().join("state")).unwrap();
        assert!(!other.try_lock_key("k", &Bound::signals_only()).unwrap());
        let lock_path = store.key_lock_path("k");
        assert!(lock_path.exists());
        drop(store);
        assert!(!lock_path.exists());
        assert!(other.try_lock_key("k", &Bound::signals_only()).unwrap());
    }

    #[test]
    fn markers_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = FileStore::open(dir.path().to_path_buf()).unwrap();
        assert_eq!(store.find("a/b", &Bound::signals_only()).unwrap(), None);
        let marker = Marker {
            status: Status::Succeeded,
            key: "a/b".into(),
            succeeded_at: "2024-05-01T03:00:00.000Z".into(),
            host: "web1".into(),
            pid: 42,
            command: vec!["make-report".into()],
            attempts: 2,
        };
        store.record(&marker, &Bound::signals_only()).unwrap();
        let done = store.find("a/b", &Bound::signals_only()).unwrap().unwrap();
        assert_eq!(done.succeeded_at, marker.succeeded_at);
        assert_eq!(done.host, "web1");
        assert!(dir.path().join("a%2Fb.json").exists());
    }
}
