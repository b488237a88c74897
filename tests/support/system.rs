//! What tests that need root get from the host: a check that says loudly when it is
//! skipped, and a user of the tests' own, whose process limit (`ulimit -u`, set with
//! `prlimit --nproc`) a test sets, with the tasks that limit counts read from /proc.

use std::ffi::OsStr;
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use super::run::Invocation;

/// Says that a test, or part of one, did not run and why, straight to stderr: the test
/// harness captures only what `print!` and `eprint!` write, so this line shows in the
/// run's own output (between the `test … ok` lines), not only under `--nocapture`.
pub fn say_skipped(what: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED {what}");
}

/// What the binary under test has to supervise processes with, as it says under `-v`: a
/// build without a child subreaper or a parent-death signal (macOS's ways, or a Linux
/// build with the `portable-paths` feature) says so in one line each.
pub struct Supervision {
    pub subreaper: bool,
    pub parent_death_signal: bool,
}

pub fn supervision() -> &'static Supervision {
    static ASKED: std::sync::OnceLock<Supervision> = std::sync::OnceLock::new();
    ASKED.get_or_init(|| {
        let r = super::run::run(&["-v", "-a", "1", "--", "true"]);
        assert_eq!(r.status, 0, "retry -v -- true: {}", r.stderr);
        Supervision {
            // Only a build without one says this; a subreaper the kernel refused fails.
            subreaper: !r
                .stderr
                .contains("cannot become a child subreaper: the system has none"),
            parent_death_signal: !r.stderr.contains("no parent-death signal on this system"),
        }
    })
}

/// Whether the binary under test adopts orphaned descendants; says SKIPPED with the
/// test's name and `what` when it does not.
pub fn has_subreaper(what: &str) -> bool {
    let has = supervision().subreaper;
    if !has {
        say_skipped(&format!(
            "{}: {what} needs a child subreaper, which this build of retry does not have",
            current_test()
        ));
    }
    has
}

/// Whether the binary under test gives its commands a parent-death signal; says SKIPPED
/// with the test's name and `what` when it does not.
pub fn has_parent_death_signal(what: &str) -> bool {
    let has = supervision().parent_death_signal;
    if !has {
        say_skipped(&format!(
            "{}: {what} needs a parent-death signal, which this build of retry does not have",
            current_test()
        ));
    }
    has
}

/// Tests that need root (mount, unshare, another user) run everywhere CI runs;
/// elsewhere they say loudly that they were skipped.
pub fn privileged(what: &str, ok: bool) -> bool {
    if ok {
        return true;
    }
    if std::env::var_os("RETRY_TEST_REQUIRE_PRIVILEGE").is_some() {
        panic!("{what} is required here (RETRY_TEST_REQUIRE_PRIVILEGE is set)");
    }
    say_skipped(&format!(
        "{}: {what} is not available (not root?); RETRY_TEST_REQUIRE_PRIVILEGE=1 makes this a failure",
        current_test()
    ));
    false
}

/// The tests' own user: nothing else runs as it, so the tasks `ulimit -u` counts
/// for it are the ones a test started.
pub const USER: &str = "retry-test-nproc";

/// A test that runs processes as [`USER`] holds this while it does: the count of the
/// user's tasks must be its own alone.
pub struct TestUser {
    pub uid: u32,
    pub gid: u32,
    _serial: MutexGuard<'static, ()>,
}

static SERIAL: Mutex<()> = Mutex::new(());

/// [`USER`] (made with useradd when missing), held for one test at a time; `None`
/// when this is not root.
pub fn test_user() -> Option<TestUser> {
    let root = nix::unistd::geteuid().is_root();
    if !privileged(&format!("running as the user {USER} (root)"), root) {
        return None;
    }
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if id(USER, "-u").is_none() {
        // Another test run may be making it at the same moment: only the result counts.
        let _ = Command::new("useradd")
            .args(["--system", "--no-create-home", "--home-dir", "/nonexistent"])
            .args(["--shell", "/usr/sbin/nologin", USER])
            .stderr(Stdio::null())
            .status();
    }
    let uid = id(USER, "-u").unwrap_or_else(|| panic!("useradd {USER} failed"));
    let gid = id(USER, "-g").expect("the user's group");
    // What a test that failed left running ends soon; anything else is a leak.
    let alone = super::wait_until(Duration::from_secs(5), || tasks_of(uid) == 0);
    assert!(
        alone,
        "processes of {USER} still run: the tests need it to themselves"
    );
    Some(TestUser {
        uid,
        gid,
        _serial: serial,
    })
}

fn id(user: &str, which: &str) -> Option<u32> {
    let out = Command::new("id").args([which, user]).output().ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// The tasks (processes and their threads) whose real uid is `uid`, from
/// /proc/PID/status: what RLIMIT_NPROC counts.
pub fn tasks_of(uid: u32) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("status")).ok())
        .filter_map(|status| {
            let field = |name: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(name))
                    .and_then(|rest| rest.split_whitespace().next())
                    .and_then(|v| v.parse::<usize>().ok())
            };
            (field("Uid:")? == uid as usize).then(|| field("Threads:").unwrap_or(1))
        })
        .sum()
}

impl TestUser {
    /// `program` run as this user with `ulimit -u` at `limit` tasks when given.
    pub fn run(&self, program: impl AsRef<OsStr>, limit: Option<usize>) -> Invocation {
        let mut invocation = Invocation::of("setpriv");
        invocation
            .arg(format!("--reuid={}", self.uid))
            .arg(format!("--regid={}", self.gid))
            .args(["--clear-groups", "--"]);
        if let Some(limit) = limit {
            invocation
                .arg("prlimit")
                .arg(format!("--nproc={limit}"))
                .arg("--");
        }
        invocation.arg(program);
        invocation
    }

    /// `program` as a path this user can run: itself, or when a directory on its way
    /// is closed to the user (a build under /root), a copy in `dir`.
    pub fn reachable(&self, program: &str, dir: &std::path::Path) -> std::path::PathBuf {
        let runnable = self.run("test", None).args(["-x", program]).run().status == 0;
        if runnable {
            return program.into();
        }
        let copy = dir.join("retry");
        std::fs::copy(program, &copy).expect("copy the binary");
        self.owns(&copy);
        copy
    }

    /// Makes `path` this user's (a directory its runs write in).
    pub fn owns(&self, path: &std::path::Path) {
        nix::unistd::chown(
            path,
            Some(nix::unistd::Uid::from_raw(self.uid)),
            Some(nix::unistd::Gid::from_raw(self.gid)),
        )
        .expect("chown");
    }
}

/// The running test's name, as the harness names its thread.
pub fn current_test() -> String {
    std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string()
}
