//! Where locks and state live, as the user names them (`--lock`, `--state`): the
//! pure, total grammar of a target (a file path, or a `postgres://` URL in
//! [`postgres::url`](crate::state::postgres::url)), the default state directory, and what each kind of target allows
//! and how `--dry-run` describes it. Opening a target is `open`'s.

use std::path::{Path, PathBuf};

use super::postgres::url as postgres;
pub use super::postgres::url::PgTarget;
use super::{file, postgres as pg};
use crate::domain::LeaseTtl;

/// Where a lock or the markers live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backend {
    /// A lock file, or the directory of marker files.
    File(PathBuf),
    /// A PostgreSQL server (`postgres://…`, `#NAME` for a lock).
    Postgres(PgTarget),
}

impl Backend {
    /// Refuses a `--once` key (or a slot's `JOB@SLOT`) that this state cannot keep: a
    /// marker file's name has a length limit.
    pub fn check_key(&self, key: &str) -> Result<(), String> {
        match self {
            Backend::File(_) => file::key::check_key(key),
            Backend::Postgres(_) => Ok(()),
        }
    }

    /// Gives the leases taken here (a lock, or a `--once` key's or a slot's lock) the
    /// lifetime `ttl`; false where a lock is no lease (a file).
    fn take_lease_ttl(&mut self, ttl: LeaseTtl) -> bool {
        match self {
            Backend::File(_) => false,
            Backend::Postgres(target) => {
                target.lease_ttl = ttl;
                true
            }
        }
    }

    /// The directory, when the state lives on this host only.
    pub fn local_dir(&self) -> Option<&Path> {
        match self {
            Backend::File(dir) => Some(dir),
            Backend::Postgres(_) => None,
        }
    }

    /// What a `--lock` here is, for `--dry-run`.
    pub fn describe_lock(&self) -> String {
        match self {
            Backend::File(path) => file::describe_lock(path),
            Backend::Postgres(target) => pg::describe_lock(target),
        }
    }

    /// Where the marker of `--once` key `key` goes here, for `--dry-run`.
    pub fn describe_marker(&self, key: &str) -> String {
        match self {
            Backend::File(dir) => file::describe_marker(dir),
            Backend::Postgres(target) => pg::describe_marker(target, key),
        }
    }
}

/// What `--lock` and `--state` accept, for error messages.
const LOCK_ACCEPTS: &str = "expected a file or directory path or postgres://USER@HOST:PORT/DB#NAME";
const STATE_ACCEPTS: &str = "expected a directory or postgres://USER@HOST:PORT/DB";

/// Parses a lock or state target. Pure and total: every input gives `Ok` or `Err`.
///
/// `postgres://` and `postgresql://` URLs (any case) are PostgreSQL servers; any other
/// `SCHEME://` is refused; everything else is a file path.
pub fn parse_target(text: &str) -> Result<Backend, String> {
    if text.is_empty() {
        return Err("empty target".into());
    }
    if let Some(rest) = postgres::strip_scheme(text) {
        return postgres::parse_url(rest).map(Backend::Postgres);
    }
    if let Some(scheme) = url_scheme(text) {
        return Err(format!(
            "unsupported scheme {scheme}://; the only URL scheme is postgres://"
        ));
    }
    if text.contains('\0') {
        return Err("a path cannot contain a NUL byte".into());
    }
    Ok(Backend::File(PathBuf::from(text)))
}

/// `SCHEME` when `text` starts with `SCHEME://` (RFC 3986 scheme characters).
fn url_scheme(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    let valid = first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then_some(scheme)
}

/// `--lock TARGET`: a file path, or a PostgreSQL URL with `#NAME`; the error names
/// no flag ([`parse_lock_target`] adds it).
fn lock_target(text: &str) -> Result<Backend, String> {
    let target = parse_target(text).map_err(|e| format!("{e}; {LOCK_ACCEPTS}"))?;
    match &target {
        Backend::Postgres(pg) if pg.name.is_none() => Err(format!(
            "{pg} names no lock; add #NAME, e.g. {pg}#nightly-report"
        )),
        Backend::Postgres(pg) => {
            let name = pg.name.as_deref().unwrap_or_default();
            refuse_controls(name, "#NAME").and_then(|()| refuse_long(name, "#NAME"))
        }
        // Control characters nowhere in the path; the length limit on the file's name.
        Backend::File(path) => refuse_controls(text, "path").and_then(|()| {
            refuse_long(
                &path.file_name().unwrap_or_default().to_string_lossy(),
                "file name",
            )
        }),
    }
    .map(|()| target)
}

/// Lock names follow a `--once` key's rules: no control characters (a name is shown in
/// messages and logs), at most [`LOCK_NAME_MAX`] bytes.
fn lock_name_accepts() -> String {
    format!(
        "expected a lock path without control characters, its file name (or #NAME) at most \
         {LOCK_NAME_MAX} bytes"
    )
}

fn refuse_controls(name: &str, what: &str) -> Result<(), String> {
    match name.chars().find(|c| c.is_control()) {
        Some(c) => Err(format!(
            "the lock {what} '{name}' holds {c:?}; {}",
            lock_name_accepts()
        )),
        None => Ok(()),
    }
}

fn refuse_long(name: &str, what: &str) -> Result<(), String> {
    if name.len() > LOCK_NAME_MAX {
        return Err(format!(
            "the lock {what} is {} bytes long; {}",
            name.len(),
            lock_name_accepts()
        ));
    }
    Ok(())
}

/// The longest lock name, as for a `--once` key.
const LOCK_NAME_MAX: usize = 200;

/// `--state TARGET`: a directory, or a PostgreSQL URL without `#NAME`; the error
/// names no flag ([`parse_state_target`] adds it).
fn state_target(text: &str) -> Result<Backend, String> {
    let target = parse_target(text).map_err(|e| format!("{e}; {STATE_ACCEPTS}"))?;
    match &target {
        Backend::Postgres(pg) if pg.name.is_some() => Err(format!(
            "{pg} has a #NAME, which --state does not use (markers live in table {}); \
             {STATE_ACCEPTS}",
            postgres::MARKER_TABLE
        )),
        _ => Ok(target),
    }
}

/// Parses `--lock TARGET`, the error starting with the flag.
pub fn parse_lock_target(text: &str) -> Result<Backend, String> {
    lock_target(text).map_err(|e| format!("--lock: {e}"))
}

/// Parses `--state TARGET`, the error starting with the flag.
pub fn parse_state_target(text: &str) -> Result<Backend, String> {
    state_target(text).map_err(|e| format!("--state: {e}"))
}

/// `--lease-ttl TTL`: given to the `--lock` and `--state` targets that lease; refused
/// (the error starting with the flag) when neither does, as it would change nothing.
pub fn give_lease_ttl(ttl: LeaseTtl, targets: [Option<&mut Backend>; 2]) -> Result<(), String> {
    let taken = targets
        .into_iter()
        .flatten()
        .fold(false, |taken, target| target.take_lease_ttl(ttl) | taken);
    if taken {
        Ok(())
    } else {
        Err(
            "--lease-ttl: it sets the lifetime of a PostgreSQL lease, and there is none \
             without --lock postgres://…#NAME or --state postgres://…"
                .into(),
        )
    }
}

/// The default state: the state directory.
pub fn default_state() -> anyhow::Result<Backend> {
    default_state_dir().map(Backend::File)
}

/// `retry` in the user's state directory: `$XDG_STATE_HOME/retry`, else
/// `~/.local/state/retry` (`%LOCALAPPDATA%\retry` on Windows).
pub fn default_state_dir() -> anyhow::Result<PathBuf> {
    match crate::sys::user_state_dir() {
        Some(dir) => Ok(dir.join("retry")),
        None => anyhow::bail!(
            "--once: no state directory: {}; give --state DIR",
            crate::sys::USER_STATE_DIR_UNSET
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_paths_are_file_targets() {
        assert_eq!(
            parse_target("/run/lock/report.lock"),
            Ok(Backend::File("/run/lock/report.lock".into()))
        );
        assert_eq!(
            parse_target("rel.lock"),
            Ok(Backend::File("rel.lock".into()))
        );
        assert_eq!(
            parse_target("dir:with:colons"),
            Ok(Backend::File("dir:with:colons".into()))
        );
    }

    #[test]
    fn other_schemes_and_empty_targets_are_refused() {
        assert!(parse_target("").is_err());
        assert!(
            parse_target("redis://localhost/0")
                .unwrap_err()
                .contains("redis://")
        );
        assert!(parse_target("a\0b").is_err());
    }

    /// `result` is an error starting with `start` and holding each of `words`.
    fn assert_refused(result: Result<Backend, String>, start: &str, words: &[&str]) {
        let err = result.expect_err("a refusal");
        assert!(err.starts_with(start), "{err}");
        for word in words {
            assert!(err.contains(word), "{word}: {err}");
        }
    }

    #[test]
    fn lock_urls_need_a_name_and_state_urls_refuse_one() {
        assert_refused(parse_lock_target("postgres://u@h/db"), "--lock", &["#NAME"]);
        assert!(parse_lock_target("postgres://u@h/db#job").is_ok());
        assert_refused(parse_state_target("postgres://u@h/db#job"), "--state", &[]);
        assert!(parse_state_target("postgres://u@h/db").is_ok());
        assert!(
            parse_lock_target("/tmp/dir/").is_ok(),
            "a directory is locked, as by flock(1)"
        );
    }

    #[test]
    fn a_lease_ttl_goes_to_the_targets_that_lease_and_is_refused_without_one() {
        let ttl = LeaseTtl::new(std::time::Duration::from_secs(6)).unwrap();
        let mut lock = parse_lock_target("/run/lock/x.lock").unwrap();
        let mut state = parse_state_target("postgres://u@h/db").unwrap();
        give_lease_ttl(ttl, [Some(&mut lock), Some(&mut state)]).unwrap();
        assert_eq!(lock, parse_lock_target("/run/lock/x.lock").unwrap());
        let Backend::Postgres(pg) = &state else {
            panic!("{state:?}")
        };
        assert_eq!(pg.lease_ttl, ttl);
        let err = give_lease_ttl(ttl, [Some(&mut lock), None]).unwrap_err();
        assert!(err.starts_with("--lease-ttl: "), "{err}");
    }

    #[test]
    fn errors_name_the_flag_and_what_it_accepts() {
        assert_refused(parse_lock_target(""), "--lock:", &["postgres://"]);
        assert_refused(parse_state_target("ftp://x"), "--state:", &["directory"]);
    }
}
