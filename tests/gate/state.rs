//! Local state without surprises: a state directory that another user owns or may
//! write is refused, a link where a state file should be is refused by name, and
//! nothing outside the directory is ever created, truncated or written; a `--once`
//! record that cannot be read fails closed. The attacker is a real second user
//! (`nobody`, through `runuser`) in a real shared directory.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{Dir, bare_retry};
use crate::both_ways;
use crate::support::users::{self, SharedDir};
use crate::support::{Run, read_json, wait_until};

/// A file that must stay as it is: its path, contents and change time.
struct Victim {
    path: PathBuf,
    text: Vec<u8>,
    changed: i64,
}

impl Victim {
    /// A file of root's (mode 0600) at `path`.
    fn plant(path: PathBuf) -> Victim {
        std::fs::write(&path, b"precious\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let changed = std::fs::metadata(&path).unwrap().ctime_nsec();
        Victim {
            text: std::fs::read(&path).unwrap(),
            path,
            changed,
        }
    }

    #[track_caller]
    fn assert_untouched(&self) {
        assert_eq!(std::fs::read(&self.path).unwrap(), self.text);
        let changed = std::fs::metadata(&self.path).unwrap().ctime_nsec();
        assert_eq!(changed, self.changed, "{} was changed", self.path.display());
    }
}

/// `retry --state STATE ARGS -- touch RAN`: the run, and whether the command ran.
fn state_run(dir: &Dir, state: &Path, args: &[&str]) -> (Run, bool) {
    let ran = dir.path("ran");
    let _ = std::fs::remove_file(&ran);
    let out = bare_retry(dir)
        .arg("--state")
        .arg(state)
        .args(args)
        .arg("--")
        .arg("touch")
        .arg(&ran)
        .run();
    (out, ran.exists())
}

/// The fleet and job flags that make a run use every kind of state file.
const USES: [&[&str]; 3] = [
    &["--retry-budget", "api", "--circuit", "api", "-a", "1"],
    &["--once", "nightly"],
    &["--lock", "LOCK"],
];

/// [`USES`] with the lock file at `lock`.
fn uses(lock: &Path) -> Vec<Vec<String>> {
    let lock = lock.display().to_string();
    USES.iter()
        .map(|args| {
            args.iter()
                .map(|a| {
                    if *a == "LOCK" {
                        lock.clone()
                    } else {
                        a.to_string()
                    }
                })
                .collect()
        })
        .collect()
}

#[track_caller]
fn assert_refused(out: &Run, ran: bool, names: &str, why: &str) {
    assert_eq!(out.status, 125, "{}", out.stderr);
    assert!(!ran, "the command ran: {}", out.stderr);
    out.assert_stderr_has(names);
    out.assert_stderr_has(why);
}

#[test]
fn a_state_directory_another_user_made_is_refused_and_nothing_is_written() {
    if !users::available("a_state_directory_another_user_made_is_refused") {
        return;
    }
    let dir = Dir::new();
    let shared = SharedDir::new();
    let victim = Victim::plant(shared.path("victim"));
    let state = shared.path("state");
    let created = shared.path("created");
    // As the tester did: nobody's directory, with links where root's state would go.
    users::as_other(&format!(
        "mkdir -m 777 {s} {s}/budgets {s}/circuits && ln -s {v} {s}/budgets/api.json \
         && ln -s {v} {s}/circuits/api.json && ln -s {c} {s}/.nightly.lock",
        s = state.display(),
        v = victim.path.display(),
        c = created.display()
    ));
    let uid = users::other_uid();
    for args in uses(&shared.path("job.lock")) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (out, ran) = state_run(&dir, &state, &args);
        let owner = format!("is owned by uid {uid}, not by the user running retry (uid 0)");
        assert_refused(&out, ran, &format!("--state: {}", state.display()), &owner);
    }
    victim.assert_untouched();
    assert!(!created.exists(), "a file was created through the link");
}

#[test]
fn a_state_directory_that_is_another_users_link_is_refused() {
    if !users::available("a_state_directory_that_is_another_users_link_is_refused") {
        return;
    }
    let dir = Dir::new();
    let shared = SharedDir::new();
    // Root's own private directory, which nobody points a link at.
    let target = dir.path("private");
    std::fs::create_dir(&target).unwrap();
    let state = shared.path("state");
    users::as_other(&format!("ln -s {} {}", target.display(), state.display()));
    for args in uses(&shared.path("job.lock")) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (out, ran) = state_run(&dir, &state, &args);
        assert_refused(
            &out,
            ran,
            &state.display().to_string(),
            "is a symbolic link owned by uid",
        );
    }
    let written: Vec<_> = std::fs::read_dir(&target).unwrap().collect();
    assert!(written.is_empty(), "written through the link: {written:?}");
}

#[test]
fn a_state_directory_others_may_write_is_refused_naming_it_and_why() {
    let dir = Dir::new();
    let state = dir.path("state");
    std::fs::create_dir(&state).unwrap();
    for (mode, why) in [
        (0o777, "writable by group and others (mode 0777)"),
        (0o1777, "writable by group and others (mode 1777)"),
        (0o770, "writable by its group (mode 0770)"),
    ] {
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(mode)).unwrap();
        for args in uses(&dir.path("job.lock")) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (out, ran) = state_run(&dir, &state, &args);
            assert_refused(&out, ran, &format!("--state: {}", state.display()), why);
            out.assert_stderr_has("chmod go-w");
        }
    }
}

#[test]
fn a_directory_in_the_state_directory_that_another_user_owns_is_refused() {
    if !users::available("a_directory_in_the_state_directory_that_another_user_owns") {
        return;
    }
    let dir = Dir::new();
    let state = dir.path("state");
    let [fleet, _, locked] = <[Vec<String>; 3]>::try_from(uses(&dir.path("job.lock"))).unwrap();
    let nobody = nix::unistd::Uid::from_raw(users::other_uid());
    for (sub, args) in [
        ("budgets", fleet),
        ("circuits", fleet_circuit()),
        ("fencing", locked),
    ] {
        let path = state.join(sub);
        std::fs::create_dir_all(&path).unwrap();
        nix::unistd::chown(&path, Some(nobody), None).unwrap();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (out, ran) = state_run(&dir, &state, &args);
        assert_refused(&out, ran, &path.display().to_string(), "is owned by uid");
        nix::unistd::chown(&path, Some(nix::unistd::Uid::from_raw(0)), None).unwrap();
    }
}

/// A run that uses only a circuit.
fn fleet_circuit() -> Vec<String> {
    ["--circuit", "api", "-a", "1"].map(String::from).to_vec()
}

#[test]
fn a_new_state_directory_and_every_directory_in_it_are_private() {
    let dir = Dir::new();
    let state = dir.path("new/state");
    for args in uses(&dir.path("job.lock")) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (out, ran) = state_run(&dir, &state, &args);
        assert_eq!(out.status, 0, "{}", out.stderr);
        assert!(ran);
    }
    for sub in ["", "budgets", "circuits", "fencing"] {
        let mode = std::fs::metadata(state.join(sub)).unwrap().mode();
        assert_eq!(mode & 0o777, 0o700, "{sub}: {mode:o}");
    }
}

/// Every place a state file goes, as (path in the state directory, the run's args):
/// the run with those args uses that file. `pending` is a key that holds a fencing
/// counter but no record.
fn state_files(state: &Path, lock: &Path) -> Vec<(PathBuf, Vec<String>)> {
    let [fleet, done, locked] = <[Vec<String>; 3]>::try_from(uses(lock)).unwrap();
    let pending = ["--once", "pending"].map(String::from).to_vec();
    let mut files: Vec<(PathBuf, Vec<String>)> = [
        "budgets/api.json",
        "budgets/.api.lock",
        "circuits/api.json",
        "circuits/.api.lock",
    ]
    .iter()
    .map(|f| (state.join(f), fleet.clone()))
    .collect();
    files.push((state.join("nightly.json"), done));
    files.push((state.join(".pending.lock"), pending.clone()));
    for counter in std::fs::read_dir(state.join("fencing")).unwrap() {
        let counter = counter.unwrap().path();
        match counter_of(&counter).as_str() {
            // A key that is done is never locked again: its counter is not read.
            "--once key \"nightly\"" => {}
            "--once key \"pending\"" => files.push((counter, pending.clone())),
            _ => files.push((counter, locked.clone())),
        }
    }
    files
}

fn counter_of(path: &Path) -> String {
    read_json(path)["lock"].as_str().unwrap().to_string()
}

#[test]
fn a_link_where_a_state_file_goes_is_refused_by_name_and_never_followed() {
    let dir = Dir::new();
    let state = dir.path("state");
    let lock = dir.path("job.lock");
    // One run of each kind makes every state file there is.
    let mut setup = uses(&lock);
    setup.push(["--once", "pending"].map(String::from).to_vec());
    for args in setup {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (out, _) = state_run(&dir, &state, &args);
        assert_eq!(out.status, 0, "{}", out.stderr);
    }
    std::fs::remove_file(state.join("pending.json")).unwrap();
    let files = state_files(&state, &lock);
    let shown: Vec<_> = files.iter().map(|f| &f.0).collect();
    assert_eq!(files.len(), 6 + 3, "{shown:?}");
    for (file, args) in files {
        let victim = Victim::plant(dir.path("victim"));
        let kept = std::fs::read(&file).ok();
        let _ = std::fs::remove_file(&file);
        std::os::unix::fs::symlink(&victim.path, &file).unwrap();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (out, ran) = state_run(&dir, &state, &args);
        assert_refused(&out, ran, &file.display().to_string(), "is a symbolic link");
        victim.assert_untouched();
        // A dangling link is never made into a file either.
        std::fs::remove_file(&victim.path).unwrap();
        let (out, ran) = state_run(&dir, &state, &args);
        assert_refused(&out, ran, &file.display().to_string(), "is a symbolic link");
        assert!(
            !victim.path.exists(),
            "{} was created through the link",
            file.display()
        );
        std::fs::remove_file(&file).unwrap();
        if let Some(kept) = kept {
            std::fs::write(&file, kept).unwrap();
        }
    }
    // A folder of the state directory that is a link to another directory.
    let elsewhere = dir.path("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::remove_dir_all(state.join("budgets")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, state.join("budgets")).unwrap();
    let (out, ran) = state_run(&dir, &state, USES[0]);
    let budgets = state.join("budgets").display().to_string();
    assert_refused(&out, ran, &budgets, "is a symbolic link");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[test]
fn a_hard_link_where_a_budget_or_circuit_goes_leaves_its_target_untouched() {
    let dir = Dir::new();
    let state = dir.path("state");
    let (out, _) = state_run(&dir, &state, USES[0]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    for record in ["budgets/api.json", "circuits/api.json"] {
        let file = state.join(record);
        let victim = dir.path("victim");
        std::fs::write(&victim, b"precious\n").unwrap();
        std::fs::remove_file(&file).unwrap();
        std::fs::hard_link(&victim, &file).unwrap();
        let modified = std::fs::metadata(&victim).unwrap().mtime_nsec();
        let (out, ran) = state_run(&dir, &state, USES[0]);
        assert_eq!(out.status, 0, "{record}: {}", out.stderr);
        assert!(ran, "{record}");
        out.assert_stderr_has(&format!(
            "{} had another name (a hard link)",
            file.display()
        ));
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious\n", "{record}");
        let after = std::fs::metadata(&victim).unwrap();
        assert_eq!(
            after.mtime_nsec(),
            modified,
            "{record}: its time was changed"
        );
        assert_eq!(
            after.nlink(),
            1,
            "{record}: the record is no longer a name of it"
        );
        let record_meta = std::fs::metadata(&file).unwrap();
        assert_eq!(record_meta.nlink(), 1, "{record}");
        assert_ne!(record_meta.ino(), after.ino(), "{record}");
        std::fs::remove_file(&victim).unwrap();
        let (out, _) = state_run(&dir, &state, USES[0]);
        assert_eq!(out.status, 0, "{record}: {}", out.stderr);
        assert!(
            !out.stderr.contains("hard link"),
            "{record}: {}",
            out.stderr
        );
    }
}

/// `pg`'s URL as `--state`, once a first run has made the tables there.
fn state_with_tables(dir: &Dir, pg: &crate::support::postgres::Postgres) -> String {
    let url = pg.url("");
    let out = bare_retry(dir)
        .args(["--once", "made", "--state", &url, "--", "true"])
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    url
}

/// The marker of `--once nightly` that says the run gave up.
const GAVE_UP: &str = r#"{"key":"nightly","status":"gave_up","succeeded_at":"2024-05-01T03:00:00.000Z","host":"h","pid":1,"command":["x"],"attempts":3}"#;

/// `--once nightly` with `state`, whose record says the key gave up: the run runs, then
/// `status` says what the record says now, and a second run is skipped.
fn gave_up_runs_again(dir: &Dir, state: &Path, status: impl Fn() -> String) {
    let (out, ran) = state_run(dir, state, &["--once", "nightly"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(
        ran,
        "a key whose last run gave up runs again: {}",
        out.stderr
    );
    assert_eq!(status(), "succeeded");
    let (out, ran) = state_run(dir, state, &["--once", "nightly"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(!ran, "a success skips it");
}

#[test]
fn a_once_key_that_gave_up_runs_again_and_only_a_success_skips_it() {
    let dir = Dir::new();
    let state = dir.path("state");
    std::fs::create_dir(&state).unwrap();
    let marker = state.join("nightly.json");
    std::fs::write(&marker, GAVE_UP).unwrap();
    gave_up_runs_again(&dir, &state, || {
        read_json(&marker)["status"].as_str().unwrap().to_string()
    });
}

both_ways! {
    fn a_once_row_that_gave_up_runs_again_and_only_a_success_skips_it(pg) {
        let dir = Dir::new();
        let url = state_with_tables(&dir, &pg);
        pg.client().execute(
            "INSERT INTO retry_once (key, succeeded_at, host, pid, command, attempts, status)
             VALUES ('nightly', now(), 'h', 1, 'x', 3, 'gave_up')",
            &[],
        );
        gave_up_runs_again(&dir, &PathBuf::from(&url), || {
            pg.client()
                .query_one("SELECT status FROM retry_once WHERE key = 'nightly'", &[])
                .get(0)
        });
    }
}

#[test]
fn an_unreadable_marker_is_125_before_any_attempt_saying_how_to_remove_it() {
    let dir = Dir::new();
    let state = dir.path("state");
    std::fs::create_dir(&state).unwrap();
    let marker = state.join("nightly.json");
    let good = r#"{"key":"nightly","succeeded_at":"2024-05-01T03:00:00.000Z","host":"h","pid":1,"command":["x"],"attempts":1}"#;
    for text in [
        "{\"key\": \"nightly\", \"succ".to_string(),
        String::new(),
        good.replace("2024-05-01", "10000-05-01"),
        good.replace("\"nightly\"", "\"weekly\""),
        good.replace("\"host\"", "\"status\":\"maybe\",\"host\""),
    ] {
        std::fs::write(&marker, &text).unwrap();
        let (out, ran) = state_run(&dir, &state, &["--once", "nightly"]);
        assert_refused(&out, ran, &marker.display().to_string(), "cannot be read");
        out.assert_stderr_has(&format!("rm -- '{}'", marker.display()));
        assert_eq!(
            std::fs::read_to_string(&marker).unwrap(),
            text,
            "the record stays"
        );
    }
    std::fs::write(&marker, good).unwrap();
    let (out, ran) = state_run(&dir, &state, &["--once", "nightly"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(!ran, "a readable record is a success: skipped");
}

both_ways! {
    fn an_unreadable_once_row_is_125_before_any_attempt_saying_how_to_remove_it(pg) {
        let dir = Dir::new();
        let url = state_with_tables(&dir, &pg);
        for (key, time, status) in [
            ("infinite", "infinity", "succeeded"),
            ("late", "10000-01-01", "succeeded"),
            ("unknown", "2024-05-01", "maybe"),
        ] {
            pg.client().execute(
                "INSERT INTO retry_once (key, succeeded_at, host, pid, command, attempts, status)
                 VALUES ($1, $2::text::timestamptz, 'h', 1, 'x', 1, $3)",
                &[&key, &time, &status],
            );
            let ran = dir.path("ran");
            let out = bare_retry(&dir)
                .args(["--once", key, "--state", &url, "--", "touch"])
                .arg(&ran)
                .run();
            assert_refused(&out, ran.exists(), &format!("--once key {key:?}"), "cannot be read");
            out.assert_stderr_has(&format!("DELETE FROM retry_once WHERE key = '{key}'"));
        }
    }
}

/// The newest slot of an hourly schedule (`0 0 * * * *`), as its key names it.
fn this_hours_slot() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let hour = UNIX_EPOCH + Duration::from_secs(now / 3600 * 3600);
    crate::support::time::rfc3339_seconds(hour)
}

/// A scheduler of job `nightly` on an hourly schedule that catches up the latest
/// slot of the last two hours, with `state`; stopped by SIGTERM once its log says
/// `decided` (within 10 s). Returns its exit status, its log, and whether its command ran.
fn schedule_for(dir: &Dir, state: &str, decided: &str) -> (i32, String, bool) {
    let ran = dir.path("ran");
    let log = dir.path("scheduler.log");
    let child = bare_retry(dir)
        .args(["--schedule", "0 0 * * * * *", "--job", "nightly"])
        .args([
            "--catch-up",
            "latest",
            "--catch-up-window",
            "2h",
            "--state",
            state,
        ])
        .args(["--", "touch"])
        .arg(&ran)
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn();
    wait_until(Duration::from_secs(10), || {
        std::fs::read_to_string(&log).is_ok_and(|log| log.contains(decided))
    });
    crate::support::signal(&child, nix::sys::signal::Signal::SIGTERM);
    let out = crate::support::wait_for_run(child);
    (
        out.status,
        std::fs::read_to_string(&log).unwrap(),
        ran.exists(),
    )
}

#[test]
fn an_unreadable_slot_record_counts_as_handled_with_an_error_line() {
    let dir = Dir::new();
    let state = dir.path("state");
    std::fs::create_dir(&state).unwrap();
    let key = format!("nightly@{}", this_hours_slot());
    let record = state.join(format!("{key}.json"));
    std::fs::write(&record, "{\"key\": \"nightly@").unwrap();
    let (status, log, ran) = schedule_for(
        &dir,
        &state.display().to_string(),
        "counts its slot as handled",
    );
    assert_eq!(status, 143, "{log}");
    assert!(
        !ran,
        "catch-up ran the slot whose record cannot be read: {log}"
    );
    assert!(log.contains(&record.display().to_string()), "{log}");
    assert!(log.contains("cannot be read"), "{log}");
    assert!(log.contains("counts its slot as handled"), "{log}");
}

both_ways! {
    fn an_unreadable_slot_row_counts_as_handled_with_an_error_line(pg) {
        let dir = Dir::new();
        let url = state_with_tables(&dir, &pg);
        let key = format!("nightly@{}", this_hours_slot());
        pg.client().execute(
            "INSERT INTO retry_once (key, succeeded_at, host, pid, command, attempts, status)
             VALUES ($1, now(), 'h', 1, 'x', 1, 'maybe')",
            &[&key],
        );
        let (status, log, ran) = schedule_for(&dir, &url, "counts its slot as handled");
        assert_eq!(status, 143, "{log}");
        assert!(!ran, "catch-up ran the slot whose record cannot be read: {log}");
        assert!(log.contains(&format!("--once key {key:?}")), "{log}");
        assert!(log.contains("counts its slot as handled"), "{log}");
    }
}
