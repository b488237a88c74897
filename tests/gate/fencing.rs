//! Fencing tokens of file locks, end to end: real flocks taken by two real users,
//! several state directories and a hard link; counters that are garbage, ahead of
//! the clock or at 2^63−1; a `--once` key's own token; the clock alone with a
//! PostgreSQL `--state`.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use super::{Dir, bare_retry};
use crate::both_ways;
use crate::support::users::{self, SharedDir};
use crate::support::{Invocation, Run};

/// The realtime clock in microseconds, as retry reads it.
fn clock_micros() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    i64::try_from(since.as_micros()).unwrap()
}

/// `cmd ARGS -- sh -c 'echo $RETRY_FENCING_TOKEN'`: the run and its token.
fn token_of(cmd: &mut Invocation, args: &[&str]) -> (Run, i64) {
    let out = cmd
        .args(args)
        .args(["--", "sh", "-c", "echo $RETRY_FENCING_TOKEN"])
        .run();
    assert_eq!(out.status, 0, "{args:?}: {}", out.stderr);
    let token = out
        .stdout_text()
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{args:?}: no token in {:?}", out.stdout_text()));
    (out, token)
}

/// The token of `--lock LOCK --state STATE` as root.
fn locked(dir: &Dir, lock: &Path, state: &Path) -> i64 {
    let lock = lock.display().to_string();
    let state = state.display().to_string();
    token_of(&mut bare_retry(dir), &["--lock", &lock, "--state", &state]).1
}

#[track_caller]
fn assert_grows(tokens: &[i64]) {
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
}

#[test]
fn tokens_of_one_lock_file_grow_across_users_state_directories_and_hard_links() {
    if !users::available("tokens_of_one_lock_file_grow_across_users") {
        return;
    }
    let dir = Dir::new();
    let shared = SharedDir::new();
    let lock = shared.path("shared.lock");
    let mut tokens: Vec<i64> = (0..3)
        .map(|_| locked(&dir, &lock, &dir.path("state")))
        .collect();
    let before = clock_micros();
    assert!(
        tokens[0] <= before && tokens[0] > before - 60_000_000,
        "the clock: {tokens:?}"
    );
    // Another user, with a state directory of its own.
    let (shown, state) = (lock.display().to_string(), shared.p("nobody-state"));
    tokens.push(
        token_of(
            &mut users::retry_as_other(),
            &["--lock", &shown, "--state", &state],
        )
        .1,
    );
    // Root with another state directory, and through a hard link to the same file.
    tokens.push(locked(&dir, &lock, &dir.path("other-state")));
    let link = dir.path("hard.lock");
    std::fs::hard_link(&lock, &link).unwrap();
    tokens.push(locked(&dir, &link, &dir.path("third-state")));
    tokens.push(locked(&dir, &link, &dir.path("state")));
    assert_grows(&tokens);
    assert_eq!(
        std::fs::read(&lock).unwrap(),
        b"",
        "the lock file's content is never touched"
    );
}

/// Writes `text` into every counter of the state directory `state`.
fn set_counters(state: &Path, text: &str) -> Vec<std::path::PathBuf> {
    let files: Vec<_> = std::fs::read_dir(state.join("fencing"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(!files.is_empty());
    for file in &files {
        std::fs::write(file, text).unwrap();
    }
    files
}

#[test]
fn within_one_state_directory_tokens_grow_past_a_clock_that_stepped_back() {
    let dir = Dir::new();
    let (lock, state) = (dir.path("job.lock"), dir.path("state"));
    locked(&dir, &lock, &state);
    // As if the clock had stood an hour ahead when the last token was handed out.
    let ahead = clock_micros() + 3_600_000_000;
    set_counters(&state, &format!("{{\"lock\":\"x\",\"token\":{ahead}}}"));
    let (shown, state_arg) = (lock.display().to_string(), state.display().to_string());
    let (out, token) = token_of(
        &mut bare_retry(&dir),
        &["--lock", &shown, "--state", &state_arg],
    );
    assert_eq!(token, ahead + 1);
    out.assert_stderr_has("warning: the realtime clock");
    out.assert_stderr_has("is behind the last fencing token");
    assert_eq!(locked(&dir, &lock, &state), ahead + 2);
}

#[test]
fn a_counter_that_cannot_be_read_is_replaced_with_a_warning() {
    let dir = Dir::new();
    let (lock, state) = (dir.path("job.lock"), dir.path("state"));
    locked(&dir, &lock, &state);
    let (shown, state_arg) = (lock.display().to_string(), state.display().to_string());
    for garbage in [
        "garbage".to_string(),
        format!("{{\"lock\":\"x\",\"token\":{}}}", u64::MAX),
        "{\"lock\":\"x\",\"token\":-3}".to_string(),
        "{\"lock\":\"x\",\"token\":0}".to_string(),
    ] {
        set_counters(&state, &garbage);
        let before = clock_micros();
        let (out, token) = token_of(
            &mut bare_retry(&dir),
            &["--lock", &shown, "--state", &state_arg],
        );
        assert!(
            token >= before && token <= clock_micros(),
            "{garbage}: {token}"
        );
        out.assert_stderr_has("warning: the fencing counter");
        out.assert_stderr_has("cannot be read");
    }
}

#[test]
fn a_counter_at_the_largest_token_is_125_naming_it_and_never_wraps() {
    let dir = Dir::new();
    let (lock, state) = (dir.path("job.lock"), dir.path("state"));
    locked(&dir, &lock, &state);
    let full = format!("{{\"lock\":\"x\",\"token\":{}}}", i64::MAX);
    let files = set_counters(&state, &full);
    let ran = dir.path("ran");
    let out = bare_retry(&dir)
        .args(["--lock"])
        .arg(&lock)
        .arg("--state")
        .arg(&state)
        .args(["--", "touch"])
        .arg(&ran)
        .run();
    assert_eq!(out.status, 125, "{}", out.stderr);
    assert!(!ran.exists(), "the command ran");
    out.assert_stderr_has("9223372036854775807");
    assert!(
        files
            .iter()
            .any(|f| out.stderr.contains(&f.display().to_string())),
        "names the counter: {}",
        out.stderr
    );
    for file in files {
        assert_eq!(
            std::fs::read_to_string(file).unwrap(),
            full,
            "the counter stays"
        );
    }
}

#[test]
fn a_once_key_gets_a_token_of_its_own_and_the_lock_token_wins() {
    let dir = Dir::new();
    let state = dir.path("state").display().to_string();
    let before = clock_micros();
    let first = token_of(&mut bare_retry(&dir), &["--once", "a", "--state", &state]).1;
    let second = token_of(&mut bare_retry(&dir), &["--once", "b", "--state", &state]).1;
    assert!(
        before <= first && first < second,
        "{before} {first} {second}"
    );
    // With --lock too, the lock's token is the one the command sees.
    let lock = dir.path("job.lock").display().to_string();
    let args = ["--once", "c", "--state", &state, "--lock", &lock];
    let (out, token) = token_of(bare_retry(&dir).arg("-v"), &args);
    out.assert_stderr_has(&format!("fencing token {token}"));
}

both_ways! {
    fn with_a_postgres_state_a_file_locks_token_is_the_clock_alone(pg) {
        let dir = Dir::new();
        let lock = dir.path("job.lock").display().to_string();
        let url = pg.url("");
        let before = clock_micros();
        let first = token_of(&mut bare_retry(&dir), &["--lock", &lock, "--state", &url]).1;
        let second = token_of(&mut bare_retry(&dir), &["--lock", &lock, "--state", &url]).1;
        assert!(before <= first && first < second && second <= clock_micros());
        assert!(!dir.path("xdg").exists(), "no counter in a state directory");
    }
}
