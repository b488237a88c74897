//! The file backend: `--lock PATH` as an exclusive `flock(2)`, and `--once` markers
//! as JSON files in the state directory, one per key, named after the key, with the
//! key's lock a `.KEY.lock` beside them. The kernel frees a flock when its holder
//! dies, so no lock is ever left stale; every descriptor is opened close-on-exec, so
//! the command never inherits a lock. Files in the state directory are reached only
//! through [`StateDir`] (checked, never through a link); each acquisition gets its
//! fencing token from [`fencing`].

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::SystemTime;

use anyhow::Context;

use super::dir::{Access, StateDir};
use super::fencing::{self, Counter};
use super::key::{escape_key, key_from_file_name};
use crate::state::record::{Done, Marker, Status, UnreadableRecord};
use crate::state::stores::{Lock, MarkerStore};
use crate::wait::Bound;

/// How often a lock file that keeps being replaced is reopened before giving up.
const REOPENS: usize = 20;
/// Temporary marker files are `.retry.….tmp`.
const MARKER_TEMP: &str = ".retry";

/// Where a lock file is.
enum Place {
    /// `--lock PATH`: the user's file, never removed, its content never touched.
    Path(PathBuf),
    /// A `--once` key's lock in the state directory, removed by its holder on release.
    /// Safe because a taker checks, after locking, that the name still names the file.
    Key {
        dir: Rc<StateDir>,
        name: String,
        key: String,
    },
}

/// An exclusive flock on a file, created if missing, with a fencing token.
pub struct FileLock {
    place: Place,
    held: Option<crate::sys::Locked>,
    /// The state directory that counts a `--lock`'s tokens (`None`: the clock alone);
    /// a key's are counted in the key's own.
    counted_in: Option<PathBuf>,
    token: Option<i64>,
    /// Whether an acquisition gets a fencing token (a job's run lock gets none).
    fenced: bool,
}

impl FileLock {
    /// The `--lock PATH` lock, its tokens counted in `state`'s `fencing/` (the clock
    /// alone without one).
    pub fn new(path: PathBuf, state: Option<PathBuf>) -> FileLock {
        FileLock {
            place: Place::Path(path),
            held: None,
            counted_in: state,
            token: None,
            fenced: true,
        }
    }

    /// The lock on `key` in the state directory `dir`.
    fn key(dir: Rc<StateDir>, key: &str) -> FileLock {
        FileLock {
            counted_in: None,
            place: Place::Key {
                name: format!(".{}.lock", escape_key(key)),
                key: key.to_string(),
                dir,
            },
            held: None,
            token: None,
            fenced: true,
        }
    }

    /// The lock file `name` in the state directory `dir`, with no fencing token.
    fn unfenced(dir: Rc<StateDir>, name: String) -> FileLock {
        FileLock {
            counted_in: None,
            place: Place::Key {
                name,
                key: String::new(),
                dir,
            },
            held: None,
            token: None,
            fenced: false,
        }
    }

    fn open(&self) -> anyhow::Result<File> {
        match &self.place {
            Place::Path(path) => open_lock_file(path),
            Place::Key { dir, name, .. } => Ok(dir
                .open_file(name, Access::Update)?
                .context("a created file is there")?),
        }
    }

    /// Whether the lock's name still names the file whose identity is `ours`.
    fn still_named(&self, ours: fencing::Holder) -> anyhow::Result<bool> {
        let now = match &self.place {
            Place::Path(path) => match crate::sys::path_identity(path) {
                Ok(now) => Some(now),
                Err(e) if e.kind() == ErrorKind::NotFound => None,
                Err(e) => return Err(e).with_context(|| format!("cannot stat {}", path.display())),
            },
            Place::Key { dir, name, .. } => dir.identity(name)?,
        };
        Ok(now == Some(ours))
    }

    /// Where this lock's tokens are counted: a key's own state directory (open
    /// already), or `--lock`'s, opened now; `None`: the clock alone.
    fn counting_dir(&self) -> anyhow::Result<Option<Rc<StateDir>>> {
        match (&self.place, &self.counted_in) {
            (Place::Key { dir, .. }, _) => Ok(Some(dir.clone())),
            (Place::Path(_), Some(path)) => Ok(Some(Rc::new(StateDir::open(path)?))),
            (Place::Path(_), None) => Ok(None),
        }
    }

    /// The counters this lock's tokens are kept under; `(dev, ino)` is the lock file's.
    fn counters(&self, (dev, ino): fencing::Holder) -> anyhow::Result<Vec<Counter>> {
        Ok(match &self.place {
            Place::Path(path) => {
                let absolute = std::fs::canonicalize(path)
                    .with_context(|| format!("cannot resolve {}", path.display()))?;
                vec![
                    Counter::lock_path(&absolute),
                    Counter::lock_inode(dev, ino, &absolute),
                ]
            }
            Place::Key { key, .. } => vec![Counter::once_key(key)],
        })
    }
}

/// Opens (creating) a `--lock` file. One created by another user may be read-only to
/// us; flock works on it all the same. A directory is opened read-only, as flock(1)
/// opens one, and locked itself.
fn open_lock_file(path: &Path) -> anyhow::Result<File> {
    let opened = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path);
    let opened = match opened {
        Err(e) if e.kind() == ErrorKind::IsADirectory => crate::sys::open_directory(path),
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem
            ) =>
        {
            File::open(path)
        }
        other => other,
    };
    opened.with_context(|| format!("cannot open lock file {}", path.display()))
}

impl Lock for FileLock {
    fn describe(&self) -> String {
        match &self.place {
            Place::Path(path) => path.display().to_string(),
            Place::Key { dir, name, .. } => dir.join(name).display().to_string(),
        }
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
            match crate::sys::try_lock(file, true) {
                Ok(Ok(locked)) => {
                    // The previous holder may have removed the file between our open and our flock.
                    let holder = crate::sys::identity(&locked)?;
                    if self.still_named(holder)? {
                        if self.fenced {
                            let counters = self.counters(holder)?;
                            let state = self.counting_dir()?;
                            let token = fencing::next_token(state.as_deref(), &counters, holder)?;
                            self.token = Some(token);
                        }
                        self.held = Some(locked);
                        return Ok(true);
                    }
                }
                Ok(Err(_)) => return Ok(false),
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot flock {}", self.describe()));
                }
            }
        }
        Ok(false)
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        if let (Place::Key { dir, name, .. }, Some(_)) = (&self.place, &self.held) {
            // Removed while still locked, so nobody can lock this file afterwards and believe it current.
            let _ = dir.remove(name);
        }
        self.held = None;
    }
}

/// How long a slot that replaces a running one waits for it to end: its attempt has
/// `--kill-after` to go, and its hooks their `--hook-timeout`.
const REPLACE_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// A scheduled job's run lock in the state directory: `.JOB.running`, holding its
/// holder's process id, so that a slot that replaces the running one can tell it.
pub struct FileRunLock {
    lock: FileLock,
    dir: Rc<StateDir>,
    name: String,
}

impl FileRunLock {
    pub fn open(path: PathBuf, job: &str) -> anyhow::Result<FileRunLock> {
        let dir = Rc::new(StateDir::open(&path)?);
        let name = format!(".{}.running", escape_key(job));
        Ok(FileRunLock {
            lock: FileLock::unfenced(dir.clone(), name.clone()),
            dir,
            name,
        })
    }
}

impl Lock for FileRunLock {
    fn describe(&self) -> String {
        self.lock.describe()
    }

    fn try_acquire(&mut self, bound: &Bound) -> anyhow::Result<bool> {
        if !self.lock.try_acquire(bound)? {
            return Ok(false);
        }
        if let Some(file) = &self.lock.held {
            let pid = std::process::id().to_string();
            file.set_len(0)
                .and_then(|()| crate::sys::write_all_at(file, pid.as_bytes(), 0))
                .with_context(|| format!("cannot write {}", self.describe()))?;
        }
        Ok(true)
    }
}

impl crate::state::stores::RunLock for FileRunLock {
    /// Sends the holder the signal a scheduler sends a replaced slot (none on Windows).
    fn ask_holder_to_stop(&mut self, _bound: &Bound) -> anyhow::Result<()> {
        let Some(text) = self.dir.read(&self.name)? else {
            return Ok(());
        };
        let pid = String::from_utf8_lossy(&text).trim().parse::<i32>().ok();
        let sig = crate::sys::REPLACE_SIGNAL.and_then(crate::sys::signal_by_number);
        if let (Some(pid), Some(sig)) = (pid.filter(|p| *p > 0), sig) {
            crate::sys::signal_process(pid, sig);
        }
        Ok(())
    }

    fn replace_wait(&self) -> std::time::Duration {
        REPLACE_WAIT
    }
}

/// `--once` markers in a directory: `KEY.json`, with `.KEY.lock` beside it while a
/// run of KEY is in progress.
pub struct FileStore {
    dir: Rc<StateDir>,
    key_lock: Option<FileLock>,
}

impl FileStore {
    /// Opens the state directory, creating it (mode 0700) if missing, and checks it.
    pub fn open(path: PathBuf) -> anyhow::Result<FileStore> {
        let dir = StateDir::open(&path)?;
        // Markers are written after a success: the directory must take a new file now.
        dir.probe()
            .with_context(|| format!("--state: cannot create a file in {}", path.display()))?;
        Ok(FileStore {
            dir: Rc::new(dir),
            key_lock: None,
        })
    }

    /// The marker file's name for `key`.
    fn marker_name(key: &str) -> String {
        format!("{}.json", escape_key(key))
    }

    /// The markers whose keys start with `prefix`, with their file names.
    fn entries(&self, prefix: &str) -> anyhow::Result<Vec<(String, String)>> {
        let names = self
            .dir
            .names()
            .with_context(|| format!("--state: cannot list {}", self.dir.path().display()))?;
        Ok(names
            .into_iter()
            .filter_map(|name| Some((key_from_file_name(&name)?, name)))
            .filter(|(key, _)| key.starts_with(prefix))
            .collect())
    }

    /// The error for a record that exists but cannot be read as one.
    fn unreadable(&self, key: &str, name: &str, why: &str) -> anyhow::Error {
        let path = self.dir.join(name);
        UnreadableRecord {
            key: key.to_string(),
            place: path.display().to_string(),
            why: why.to_string(),
            remove: format!("rm -- '{}'", path.display()),
        }
        .into()
    }
}

impl MarkerStore for FileStore {
    fn describe(&self) -> String {
        format!("state directory {}", self.dir.path().display())
    }

    fn find(&mut self, key: &str, _bound: &Bound) -> anyhow::Result<Option<Done>> {
        let name = Self::marker_name(key);
        let Some(text) = self.dir.read(&name)? else {
            return Ok(None);
        };
        let marker = parse_marker(key, &text).map_err(|why| self.unreadable(key, &name, &why))?;
        Ok(Some(Done {
            status: marker.status,
            succeeded_at: marker.succeeded_at,
            host: marker.host,
            place: self.dir.join(&name).display().to_string(),
            attempts: marker.attempts,
            command: crate::domain::command_line(&marker.command),
        }))
    }

    fn try_lock_key(&mut self, key: &str, bound: &Bound) -> anyhow::Result<bool> {
        let dir = &self.dir;
        self.key_lock
            .get_or_insert_with(|| FileLock::key(dir.clone(), key))
            .try_acquire(bound)
    }

    fn key_token(&self) -> Option<i64> {
        self.key_lock.as_ref().and_then(FileLock::fencing_token)
    }

    fn record(&mut self, marker: &Marker, _bound: &Bound) -> anyhow::Result<()> {
        let name = Self::marker_name(&marker.key);
        // Only a success replaces a record: a late "skipped" never hides how a slot ended.
        if marker.status != Status::Succeeded && self.dir.identity(&name)?.is_some() {
            return Ok(());
        }
        let mut text = serde_json::to_vec_pretty(marker)?;
        text.push(b'\n');
        self.dir.replace(&name, &text, MARKER_TEMP)
    }

    fn keys_with_prefix(&mut self, prefix: &str, _bound: &Bound) -> anyhow::Result<Vec<String>> {
        Ok(self
            .entries(prefix)?
            .into_iter()
            .map(|(key, _)| key)
            .collect())
    }

    fn unreadable_with_prefix(
        &mut self,
        prefix: &str,
        _bound: &Bound,
    ) -> anyhow::Result<Vec<String>> {
        let mut out = Vec::new();
        for (key, name) in self.entries(prefix)? {
            let read = self
                .dir
                .read(&name)
                .map_err(|e| format!("{e:#}"))
                .and_then(|text| parse_marker(&key, &text.unwrap_or_default()));
            if let Err(why) = read {
                out.push(format!("{:#}", self.unreadable(&key, &name, &why)));
            }
        }
        Ok(out)
    }

    fn prune(&mut self, prefix: &str, before: SystemTime, _bound: &Bound) -> anyhow::Result<usize> {
        let mut removed = 0;
        for (key, name) in self.entries(prefix)? {
            let old = self.dir.modified(&name).is_some_and(|t| t < before);
            if old && self.dir.remove(&name).is_ok() {
                removed += 1;
                // The key is never locked again: its fencing counter goes with it.
                fencing::forget_key(&self.dir, &key)?;
            }
        }
        Ok(removed)
    }
}

/// Reads a marker file of `key`. Total: a record that is not a marker of this key
/// with an RFC 3339 time is `Err` saying why.
pub fn parse_marker(key: &str, text: &[u8]) -> Result<Marker, String> {
    let marker: Marker = serde_json::from_slice(text).map_err(|e| format!("not a marker: {e}"))?;
    if marker.key != key {
        return Err(format!("it is the record of key {:?}", marker.key));
    }
    if crate::domain::parse_rfc3339(&marker.succeeded_at).is_none() {
        return Err(format!(
            "succeeded_at {:?} is not an RFC 3339 time from year 0 to 9999",
            marker.succeeded_at
        ));
    }
    Ok(marker)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_of_another_key_or_without_a_time_cannot_be_read() {
        let good = r#"{"key":"k","succeeded_at":"2024-05-01T03:00:00.000Z","host":"h","pid":1,"command":[],"attempts":1}"#;
        assert!(parse_marker("k", good.as_bytes()).is_ok());
        assert!(parse_marker("other", good.as_bytes()).is_err());
        let late = good.replace("2024-05-01", "10000-05-01");
        assert!(parse_marker("k", late.as_bytes()).is_err());
        assert!(parse_marker("k", b"").is_err());
        let refused = good.replace("\"host\"", "\"status\":\"maybe\",\"host\"");
        assert!(parse_marker("k", refused.as_bytes()).is_err());
    }

    #[test]
    fn a_lock_is_exclusive_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.lock");
        let mut first = FileLock::new(path.clone(), None);
        let mut second = FileLock::new(path.clone(), None);
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
        let lock_path = dir.path().join("state/.k.lock");
        assert!(lock_path.exists());
        drop(store);
        assert!(!lock_path.exists());
        assert!(other.try_lock_key("k", &Bound::signals_only()).unwrap());
        let first = store_token(&other);
        drop(other);
        let mut again = FileStore::open(dir.path().join("state")).unwrap();
        assert!(again.try_lock_key("k", &Bound::signals_only()).unwrap());
        assert!(store_token(&again) > first, "the key's tokens only grow");
    }

    fn store_token(store: &FileStore) -> i64 {
        store.key_token().expect("a held key lock has a token")
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
