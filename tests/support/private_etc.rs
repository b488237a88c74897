//! A private /etc for name resolution: the test's /etc/hosts and /etc/resolv.conf, an
//! /etc/nsswitch.conf saying `hosts: files dns` and an empty /etc/gai.conf,
//! bind-mounted over the real ones in a mount namespace of the program's own
//! (`unshare --mount`), with nscd's socket directory hidden, so that retry and
//! `getent` see the same files and nothing else. Nothing outside the namespace
//! changes.
//!
//! Without mount namespaces (not root), [`PrivateEtc::new`] says SKIPPED and gives
//! `None`, unless `RETRY_TEST_REQUIRE_PRIVILEGE` is set, when it panics instead.

use std::net::IpAddr;
use std::process::{Command, Stdio};

use super::run::{Invocation, bin};

/// Bind-mounts the files of the directory `$1` over /etc's, hides nscd, then runs the
/// rest of the arguments. A missing /etc/gai.conf already means glibc's defaults.
const ENTER: &str = r#"d=$1; shift
for f in hosts resolv.conf nsswitch.conf gai.conf; do
    if [ "$f" = gai.conf ] && [ ! -e /etc/gai.conf ]; then continue; fi
    mount --bind "$d/$f" "/etc/$f" || { echo "private /etc: cannot mount over /etc/$f" >&2; exit 97; }
done
for n in /run/nscd /var/run/nscd; do
    if [ -d "$n" ]; then mount -t tmpfs tmpfs "$n" || exit 97; fi
done
exec "$@""#;

pub struct PrivateEtc {
    dir: tempfile::TempDir,
}

impl PrivateEtc {
    /// An /etc with `hosts` and `resolv_conf` as given; `None` (said loudly) when
    /// this machine has no mount namespaces for the test.
    pub fn new(test: &str, hosts: &str, resolv_conf: &str) -> Option<PrivateEtc> {
        if !namespaces_available(test) {
            return None;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |name: &str, text: &str| {
            std::fs::write(dir.path().join(name), text).expect("write a private /etc file");
        };
        write("hosts", hosts);
        write("resolv.conf", resolv_conf);
        write("nsswitch.conf", "hosts: files dns\n");
        write("gai.conf", "");
        Some(PrivateEtc { dir })
    }

    /// The same /etc with another nsswitch.conf (the resolver under test must not care).
    pub fn nsswitch(self, text: &str) -> PrivateEtc {
        std::fs::write(self.dir.path().join("nsswitch.conf"), text).expect("write nsswitch.conf");
        self
    }

    /// `program` run under this /etc.
    pub fn invocation(&self, program: &str) -> Invocation {
        let mut inv = Invocation::of("unshare");
        inv.args(["--mount", "sh", "-c", ENTER, "sh"])
            .arg(self.dir.path())
            .arg(program);
        inv
    }

    /// The binary under test, run under this /etc.
    pub fn retry(&self) -> Invocation {
        self.invocation(bin())
    }

    /// What `getent ahosts NAME` gives under this /etc: the addresses in its order,
    /// each once; empty when it finds none.
    pub fn getent(&self, name: &str) -> Vec<IpAddr> {
        let run = self.invocation("getent").args(["ahosts", name]).run();
        assert!(
            run.status == 0 || run.status == 2,
            "getent ahosts {name}: {run:?}"
        );
        let mut addrs: Vec<IpAddr> = Vec::new();
        for line in run.stdout_text().lines() {
            let first = line.split_whitespace().next().unwrap_or_default();
            let ip: IpAddr = first
                .parse()
                .unwrap_or_else(|_| panic!("getent ahosts {name}: {line:?}"));
            if !addrs.contains(&ip) {
                addrs.push(ip);
            }
        }
        addrs
    }
}

/// Whether `unshare --mount` works here; panics when it must
/// (RETRY_TEST_REQUIRE_PRIVILEGE), says SKIPPED otherwise.
fn namespaces_available(test: &str) -> bool {
    let ok = Command::new("unshare")
        .args(["--mount", "true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return true;
    }
    if std::env::var_os("RETRY_TEST_REQUIRE_PRIVILEGE").is_some() {
        panic!("{test}: unshare --mount is required here (RETRY_TEST_REQUIRE_PRIVILEGE is set)");
    }
    super::system::say_skipped(&format!(
        "{test}: unshare --mount is not available (not root?); RETRY_TEST_REQUIRE_PRIVILEGE=1 makes this a failure"
    ));
    false
}
