//! Fencing tokens of locks kept in files (`--lock PATH`, and a `--once` key's lock in
//! a state directory). A token is max(the realtime clock in microseconds since the
//! epoch, the last token this state directory handed out for the lock + 1): the clock
//! makes tokens grow across users, state directories and hosts, and the counter in
//! `STATE/fencing/` makes them grow within one state directory even when the clock
//! steps back. Counters are read and written only while the lock is held, so no flock
//! of their own is needed; taking the lock is [`lock`](super::lock)'s work. A holder writes through
//! a temporary file named after the counter and the lock file it holds, which no other
//! live holder shares: a killed holder's leftover is found by that name, and a token
//! costs the same however many counters the directory holds.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::dir::StateDir;
use crate::report;

/// The subdirectory of the state directory that holds the counters.
pub const DIR: &str = "fencing";

/// One counter of a lock: a lock file is counted under its path and under its inode
/// (so another path, a hard link and a file made again after a reboot all count on).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counter {
    /// The file name's stem: a digest of what is counted, so any path or key fits.
    stem: String,
    /// What is counted, in words, written into the file for people.
    about: String,
}

impl Counter {
    fn new(identity: &str, about: String) -> Counter {
        let digest = Sha256::digest(identity.as_bytes());
        Counter {
            stem: digest[..16].iter().map(|b| format!("{b:02x}")).collect(),
            about,
        }
    }

    /// The lock file at the absolute path `path`.
    pub fn lock_path(path: &Path) -> Counter {
        let shown = path.display();
        Counter::new(
            &format!("path:{shown}"),
            format!("--lock {shown} (by its path)"),
        )
    }

    /// The lock file with inode `ino` on device `dev` (reached as `path`).
    pub fn lock_inode(dev: u64, ino: u64, path: &Path) -> Counter {
        let (major, minor) = crate::sys::device_numbers(dev);
        Counter::new(
            &format!("inode:{major}:{minor}:{ino}"),
            format!(
                "--lock {} (by its inode {ino} on device {major}:{minor})",
                path.display()
            ),
        )
    }

    /// The lock on `--once` key `key` (or a slot).
    pub fn once_key(key: &str) -> Counter {
        Counter::new(&format!("once:{key}"), format!("--once key {key:?}"))
    }

    fn file(&self) -> String {
        format!("{}.json", self.stem)
    }

    /// The temporary file of the holder of the lock file `holder` (device, inode):
    /// `.STEM.DEV-INO.tmp`. An open lock file's inode is its own, so two live holders
    /// never share one; the next holder of a killed one's lock file meets its leftover.
    fn temp(&self, (dev, ino): Holder) -> String {
        format!(".{}.{dev}-{ino}.tmp", self.stem)
    }
}

/// The lock file a holder holds: its device and inode.
pub type Holder = (u64, u64);

/// What a counter file holds.
#[derive(Serialize, Deserialize)]
struct CounterFile {
    lock: String,
    token: i64,
}

/// What a stored counter says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stored {
    /// The last token handed out: 1 ..= 2^63−2.
    Token(i64),
    /// 2^63−1: no larger token exists.
    Exhausted,
    /// Not a counter (and why): replaced, with a warning.
    Unreadable(String),
}

/// Reads a counter file's contents. Total: every input is one of the three.
pub fn parse_counter(text: &[u8]) -> Stored {
    let value: serde_json::Value = match serde_json::from_slice(text) {
        Ok(value) => value,
        Err(e) => return Stored::Unreadable(format!("not JSON: {e}")),
    };
    let Some(token) = value.get("token") else {
        return Stored::Unreadable("no \"token\"".into());
    };
    match token.as_i64() {
        Some(i64::MAX) => Stored::Exhausted,
        Some(t) if t >= 1 => Stored::Token(t),
        _ => Stored::Unreadable(format!(
            "token {token} is not an integer from 1 to {}",
            i64::MAX - 1
        )),
    }
}

/// The realtime clock in microseconds since the epoch (0 before it).
pub fn clock_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// The token for an acquisition that holds the lock now: the clock alone without a
/// state directory (`state` is `None` with a PostgreSQL `--state`), else counted on
/// in `STATE/fencing/` under every one of `counters`, written durably before it is
/// returned, through the temporary files of `holder` (the lock file held). The clock
/// is read here, after the lock was taken.
pub fn next_token(
    state: Option<&StateDir>,
    counters: &[Counter],
    holder: Holder,
) -> anyhow::Result<i64> {
    let clock = clock_micros();
    let Some(state) = state else {
        return Ok(clock.max(1));
    };
    let dir = state.subdir(DIR)?;
    let mut last = 0;
    for counter in counters {
        last = last.max(stored(&dir, counter)?);
    }
    // `last` is at most 2^63−2 here, so this never wraps.
    let token = clock.max(last + 1);
    if clock <= last {
        report::notice(&format!(
            "warning: the realtime clock ({clock} µs since the epoch) is behind the last fencing \
             token {last} that {} handed out for {}: this token is {token}, but a holder \
             counting elsewhere (another state directory or host) may get a smaller one",
            dir.path().display(),
            counters.first().map_or("the lock", |c| c.about.as_str())
        ));
    }
    for counter in counters {
        let mut text = serde_json::to_vec(&CounterFile {
            lock: counter.about.clone(),
            token,
        })?;
        text.push(b'\n');
        dir.replace_through(&counter.file(), &text, &counter.temp(holder))?;
    }
    Ok(token)
}

/// The last token stored under `counter` (0 when none or unreadable).
fn stored(dir: &StateDir, counter: &Counter) -> anyhow::Result<i64> {
    let name = counter.file();
    let Some(text) = dir.read(&name)? else {
        return Ok(0);
    };
    match parse_counter(&text) {
        Stored::Token(t) => Ok(t),
        Stored::Exhausted => anyhow::bail!(
            "the fencing counter {} of {} holds {}, the largest token there is, and retry \
             never wraps it: make the lock's users accept a fresh start, then remove the file",
            dir.join(&name).display(),
            counter.about,
            i64::MAX
        ),
        Stored::Unreadable(why) => {
            report::notice(&format!(
                "warning: the fencing counter {} of {} cannot be read ({why}); replacing it \
                 (the clock gives a larger token)",
                dir.join(&name).display(),
                counter.about
            ));
            Ok(0)
        }
    }
}

/// Removes the counter of a `--once` key whose record was pruned (a slot's key is
/// never locked again).
pub fn forget_key(state: &StateDir, key: &str) -> anyhow::Result<()> {
    let Some(dir) = state.existing_subdir(DIR)? else {
        return Ok(());
    };
    match dir.remove(&Counter::once_key(key).file()) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot remove the fencing counter of {key:?}"))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lock file a test's holder holds.
    const HOLDER: Holder = (1, 2);

    /// A token counted in the state directory `state`.
    fn token(state: &Path, counters: &[Counter], holder: Holder) -> anyhow::Result<i64> {
        next_token(Some(&StateDir::open(state)?), counters, holder)
    }

    #[test]
    fn counters_parse_only_tokens_in_range() {
        assert_eq!(
            parse_counter(br#"{"lock":"x","token":42}"#),
            Stored::Token(42)
        );
        assert_eq!(
            parse_counter(br#"{"lock":"x","token":9223372036854775807}"#),
            Stored::Exhausted
        );
        for bad in [
            &br#"{"token":0}"#[..],
            br#"{"token":-5}"#,
            br#"{"token":18446744073709551615}"#,
            br#"{"token":1.5}"#,
            br#"{"token":"7"}"#,
            br#"[1]"#,
            b"garbage",
            b"",
        ] {
            assert!(
                matches!(parse_counter(bad), Stored::Unreadable(_)),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn tokens_follow_the_clock_and_never_go_back() {
        let tmp = tempfile::tempdir().unwrap();
        let key = [Counter::once_key("k")];
        let first = token(tmp.path(), &key, HOLDER).unwrap();
        let now = clock_micros();
        assert!(first <= now && first > now - 60_000_000, "{first} vs {now}");
        // A counter ahead of the clock (the clock stepped back): it counts on.
        let ahead = now + 3_600_000_000;
        let file = tmp.path().join(DIR).join(key[0].file());
        std::fs::write(&file, format!("{{\"lock\":\"k\",\"token\":{ahead}}}")).unwrap();
        assert_eq!(token(tmp.path(), &key, HOLDER).unwrap(), ahead + 1);
        assert_eq!(token(tmp.path(), &key, HOLDER).unwrap(), ahead + 2);
    }

    #[test]
    fn the_largest_counter_of_several_wins_and_all_are_written() {
        let tmp = tempfile::tempdir().unwrap();
        let both = [
            Counter::lock_path(Path::new("/l")),
            Counter::lock_inode(1, 2, Path::new("/l")),
        ];
        let ahead = clock_micros() + 3_600_000_000;
        let dir = tmp.path().join(DIR);
        std::fs::create_dir(&dir).unwrap();
        let file = dir.join(both[1].file());
        std::fs::write(&file, format!("{{\"lock\":\"l\",\"token\":{ahead}}}")).unwrap();
        assert_eq!(token(tmp.path(), &both, HOLDER).unwrap(), ahead + 1);
        let path_file = std::fs::read(dir.join(both[0].file())).unwrap();
        assert_eq!(parse_counter(&path_file), Stored::Token(ahead + 1));
    }

    #[test]
    fn an_exhausted_counter_is_an_error_and_stays() {
        let tmp = tempfile::tempdir().unwrap();
        let key = [Counter::once_key("k")];
        let dir = tmp.path().join(DIR);
        std::fs::create_dir(&dir).unwrap();
        let file = dir.join(key[0].file());
        let text = format!("{{\"lock\":\"k\",\"token\":{}}}", i64::MAX);
        std::fs::write(&file, &text).unwrap();
        let err = token(tmp.path(), &key, HOLDER).unwrap_err().to_string();
        assert!(err.contains("9223372036854775807"), "{err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    }

    #[test]
    fn a_killed_holders_temporary_file_goes_and_other_holders_stay() {
        let tmp = tempfile::tempdir().unwrap();
        let mine = Counter::once_key("a");
        let dir = tmp.path().join(DIR);
        std::fs::create_dir(&dir).unwrap();
        // Left by a killed holder of the same lock file, then a live holder of another
        // (the lock file made again) and a holder of another key: only the first goes.
        let left = dir.join(mine.temp(HOLDER));
        let live = dir.join(mine.temp((1, 3)));
        let other = dir.join(Counter::once_key("b").temp(HOLDER));
        for file in [&left, &live, &other] {
            std::fs::write(file, "").unwrap();
        }
        token(tmp.path(), std::slice::from_ref(&mine), HOLDER).unwrap();
        assert!(!left.exists());
        assert!(live.exists() && other.exists());
        let written = std::fs::read(dir.join(mine.file())).unwrap();
        assert!(matches!(parse_counter(&written), Stored::Token(_)));
    }

    #[test]
    fn without_a_state_directory_the_token_is_the_clock() {
        let before = clock_micros();
        let token = next_token(None, &[Counter::once_key("k")], HOLDER).unwrap();
        assert!(token >= before && token <= clock_micros());
    }
}
