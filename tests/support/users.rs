//! A second user for the tests where one user attacks another's state: `nobody`,
//! reached with util-linux `runuser`, which needs root. Without root the tests say
//! loudly that they were skipped, unless `RETRY_TEST_REQUIRE_PRIVILEGE` is set, when
//! they fail instead. [`SharedDir`] is a directory like `/tmp`, where both users may
//! create files.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

use super::run::{Invocation, bin_for_anyone};

/// The other user.
pub const OTHER: &str = "nobody";

/// Whether the other user can be used here; says loudly why not.
pub fn available(test: &str) -> bool {
    let root = nix::unistd::geteuid().is_root();
    let runuser = Command::new("runuser")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if root && runuser {
        return true;
    }
    if std::env::var_os("RETRY_TEST_REQUIRE_PRIVILEGE").is_some() {
        panic!("{test}: root and runuser are required here (RETRY_TEST_REQUIRE_PRIVILEGE is set)");
    }
    super::system::say_skipped(&format!(
        "{test}: a second user needs root and runuser; RETRY_TEST_REQUIRE_PRIVILEGE=1 makes this a failure"
    ));
    false
}

/// The other user's uid.
pub fn other_uid() -> u32 {
    nix::unistd::User::from_name(OTHER)
        .unwrap()
        .unwrap_or_else(|| panic!("no user {OTHER}"))
        .uid
        .as_raw()
}

/// Runs `sh -c script` as the other user; panics unless it succeeds.
pub fn as_other(script: &str) {
    let out = Command::new("runuser")
        .args(["-u", OTHER, "--", "sh", "-c", script])
        .output()
        .expect("run runuser");
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `retry` run as the other user.
pub fn retry_as_other() -> Invocation {
    let mut cmd = Invocation::of("runuser");
    cmd.args(["-u", OTHER, "--", bin_for_anyone()]);
    cmd
}

/// A world-writable directory with the sticky bit under /tmp (every user can reach
/// it), removed on drop.
pub struct SharedDir {
    dir: tempfile::TempDir,
}

impl SharedDir {
    pub fn new() -> SharedDir {
        let dir = tempfile::Builder::new()
            .prefix("retry-shared-")
            .tempdir_in("/tmp")
            .expect("a directory under /tmp");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
        SharedDir { dir }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn p(&self, name: &str) -> String {
        self.path(name).to_string_lossy().into_owned()
    }
}
