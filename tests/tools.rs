//! Tool profiles against the real tools and real servers on 127.0.0.1: rsync and
//! an rsync daemon at its connection limit, wget against a 503, ssh refused by a
//! local sshd, git against a git daemon that starts late. Each test checks how
//! many attempts `retry` made, which is what the profile decides.

use crate::support;
use crate::support::http_server;
use crate::support::tools;
use crate::support::wait_until;

use std::fs;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::ports::{free_port, wait_for_port};
use http_server::{Reply, Server};
use support::{Run, Scratch, retry};
use tools::{Daemon, NoSshd, keygen, must_run};

/// How many attempts the run made, from retry's own "attempt N/M" lines.
fn attempts(r: &Run) -> usize {
    r.stderr
        .lines()
        .filter(|l| l.starts_with("retry: attempt "))
        .count()
}

// ---- rsync ----

/// An rsync client in its own process group, copying `src` from the daemon slowly.
fn slow_rsync(daemon: &Daemon, src: &str, dest: &std::path::Path) -> Child {
    use std::os::unix::process::CommandExt;
    Command::new("rsync")
        .args(["--bwlimit=1", "--inplace"])
        .arg(format!("rsync://127.0.0.1:{}/mod/{src}", daemon.port))
        .arg(dest)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start rsync")
}

#[test]
fn rsync_daemon_at_max_connections_is_retried_until_the_slot_frees() {
    let s = Scratch::new();
    let daemon = tools::rsync_daemon(s.dir.path());
    let module = s.path("mod");
    fs::File::create(module.join("big"))
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    fs::write(module.join("small"), "hello\n").unwrap();
    let mut holder = slow_rsync(&daemon, "big", &s.path("big.copy"));
    // The daemon logs each module connection; the holder owns the one slot after it.
    assert!(
        wait_until(Duration::from_secs(10), || daemon
            .log_text()
            .contains("rsync on mod/big")),
        "the slow transfer never reached the daemon: {}",
        daemon.log_text()
    );
    let dest = s.p("small.copy");
    let url = format!("rsync://127.0.0.1:{}/mod/small", daemon.port);
    let child = retry()
        .args([
            "-a",
            "20",
            "--delay",
            "200ms",
            "--backoff",
            "constant",
            "-j",
            "none",
        ])
        .args(["--", "rsync", &url, &dest])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let start = Instant::now();
    std::thread::sleep(Duration::from_millis(1000));
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(holder.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    holder.wait().unwrap();
    let r = crate::support::run::finish(child, start);
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(attempts(&r) >= 3, "{}", r.stderr);
    r.assert_stderr_has("max connections (1) reached");
    r.assert_stderr_has("transient");
    assert_eq!(fs::read_to_string(&dest).unwrap(), "hello\n");
}

#[test]
fn rsync_23_for_a_missing_source_is_not_retried() {
    let s = Scratch::new();
    let r = retry()
        .args(["--delay", "10ms", "--", "rsync"])
        .args([&s.p("missing/file"), &s.p("copy")])
        .run();
    assert_eq!((r.status, attempts(&r)), (23, 1), "{}", r.stderr);
    r.assert_stderr_has("No such file or directory");
    r.assert_stderr_has("permanent");
}

#[test]
fn rsync_23_from_the_daemon_for_a_missing_file_is_not_retried() {
    let s = Scratch::new();
    let daemon = tools::rsync_daemon(s.dir.path());
    let url = format!("rsync://127.0.0.1:{}/mod/nothing-here", daemon.port);
    let r = retry()
        .args(["--delay", "10ms", "--", "rsync", &url, &s.p("copy")])
        .run();
    assert_eq!((r.status, attempts(&r)), (23, 1), "{}", r.stderr);
}

#[test]
fn rsync_23_for_an_unreadable_source_is_not_retried() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scratch::new();
    let daemon = tools::rsync_daemon(s.dir.path());
    // Run as root, the daemon's `private` module reads as nobody; otherwise rsync
    // itself runs unprivileged and a local file with mode 000 is enough.
    let root = nix::unistd::getuid().is_root();
    let dir = s.path(if root { "private" } else { "mod" });
    let secret = dir.join("secret");
    fs::write(&secret, "no\n").unwrap();
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o000)).unwrap();
    // nobody must be able to reach the module's directory to be refused the file.
    for d in [s.dir.path(), dir.as_path()] {
        fs::set_permissions(d, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let source = if root {
        format!("rsync://127.0.0.1:{}/private/secret", daemon.port)
    } else {
        secret.display().to_string()
    };
    let r = retry()
        .args(["--delay", "10ms", "--", "rsync", &source, &s.p("copy")])
        .run();
    assert_eq!(
        (r.status, attempts(&r)),
        (23, 1),
        "{}\n{}",
        r.stderr,
        daemon.log_text()
    );
    r.assert_stderr_has("Permission denied");
}

// ---- wget ----

#[test]
fn wget_quiet_503_gets_two_retries() {
    let server = Server::handler(|_, _| Reply::status(503)).expect_hits(3);
    let s = Scratch::new();
    let r = retry()
        .current_dir(s.dir.path())
        .args(["--delay", "10ms", "--", "wget", "-q", &server.url("/x")])
        .run();
    assert_eq!((r.status, attempts(&r)), (8, 3), "{}", r.stderr);
    r.assert_stderr_has("retried at most twice");
}

#[test]
fn wget_shows_the_status_without_quiet() {
    let server = Server::handler(|_, _| Reply::status(503)).expect_hits(4);
    let s = Scratch::new();
    let r = retry()
        .current_dir(s.dir.path())
        .args([
            "-a",
            "4",
            "--delay",
            "10ms",
            "--",
            "wget",
            &server.url("/x"),
        ])
        .run();
    assert_eq!((r.status, attempts(&r)), (8, 4), "{}", r.stderr);
    r.assert_stderr_has("stderr shows HTTP 503");
    let gone = Server::handler(|_, _| Reply::status(404)).expect_hits(1);
    let r = retry()
        .current_dir(s.dir.path())
        .args(["--delay", "10ms", "--", "wget", &gone.url("/x")])
        .run();
    assert_eq!((r.status, attempts(&r)), (8, 1), "{}", r.stderr);
}

// ---- ssh ----

/// sshd for the test, or None after saying loudly why it is skipped (never in CI).
fn sshd_or_skip(dir: &std::path::Path, test: &str) -> Option<Daemon> {
    match tools::sshd(dir) {
        Ok(d) => Some(d),
        Err(NoSshd(why)) if !tools::sshd_required() => {
            crate::support::say_skipped(&format!(
                "{test}: sshd cannot start here: {why}; RETRY_TEST_REQUIRE_SSHD=1 makes this a failure"
            ));
            None
        }
        Err(NoSshd(why)) => panic!("sshd cannot start ({why}) and RETRY_TEST_REQUIRE_SSHD=1"),
    }
}

/// `retry -a 3 -- ssh ... 127.0.0.1 true` with the given key and known-hosts options.
fn ssh_through_retry(port: u16, key: &str, host_keys: &[&str]) -> Run {
    let user = nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map_or("root".to_string(), |u| u.name);
    let port = port.to_string();
    let mut cmd = retry();
    cmd.args(["-a", "3", "--delay", "10ms", "--", "ssh", "-F", "/dev/null"])
        .args([
            "-o",
            "BatchMode=yes",
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "ConnectTimeout=10",
        ])
        .args(["-i", key, "-p", &port])
        .args(host_keys)
        .args([&format!("{user}@127.0.0.1"), "true"]);
    cmd.run()
}

#[test]
fn ssh_with_a_refused_key_is_not_retried() {
    let s = Scratch::new();
    let Some(sshd) = sshd_or_skip(s.dir.path(), "ssh_with_a_refused_key_is_not_retried") else {
        return;
    };
    keygen(&s.path("client_key"));
    let known = format!("UserKnownHostsFile={}", s.p("known_hosts"));
    let r = ssh_through_retry(
        sshd.port,
        &s.p("client_key"),
        &["-o", "StrictHostKeyChecking=no", "-o", &known],
    );
    assert_eq!(
        (r.status, attempts(&r)),
        (255, 1),
        "{}\nsshd: {}",
        r.stderr,
        sshd.log_text()
    );
    r.assert_stderr_has("Permission denied");
    r.assert_stderr_has("permanent");
}

#[test]
fn ssh_to_a_changed_host_key_is_not_retried() {
    let s = Scratch::new();
    let Some(sshd) = sshd_or_skip(s.dir.path(), "ssh_to_a_changed_host_key_is_not_retried") else {
        return;
    };
    keygen(&s.path("client_key"));
    keygen(&s.path("other_host_key"));
    // known_hosts pins a different key for this host and port.
    let other = fs::read_to_string(s.path("other_host_key.pub")).unwrap();
    let pinned = other
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    fs::write(
        s.path("known_hosts"),
        format!("[127.0.0.1]:{} {pinned}\n", sshd.port),
    )
    .unwrap();
    let known = format!("UserKnownHostsFile={}", s.p("known_hosts"));
    let r = ssh_through_retry(
        sshd.port,
        &s.p("client_key"),
        &["-o", "StrictHostKeyChecking=yes", "-o", &known],
    );
    assert_eq!((r.status, attempts(&r)), (255, 1), "{}", r.stderr);
    r.assert_stderr_has("REMOTE HOST IDENTIFICATION HAS CHANGED");
}

#[test]
fn ssh_to_a_closed_port_is_retried() {
    let s = Scratch::new();
    keygen(&s.path("client_key"));
    let known = format!("UserKnownHostsFile={}", s.p("known_hosts"));
    let r = ssh_through_retry(
        free_port(),
        &s.p("client_key"),
        &["-o", "StrictHostKeyChecking=no", "-o", &known],
    );
    assert_eq!((r.status, attempts(&r)), (255, 3), "{}", r.stderr);
    r.assert_stderr_has("Connection refused");
}

// ---- git ----

#[test]
fn git_against_a_daemon_that_starts_late_succeeds() {
    let s = Scratch::new();
    let home = s.path("home");
    fs::create_dir(&home).unwrap();
    must_run("git", &["init", "-q", "--bare", &s.p("repo.git")]);
    let port = free_port();
    let url = format!("git://127.0.0.1:{port}/repo.git");
    let start = Instant::now();
    let child = retry()
        .env("HOME", &home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args([
            "-a",
            "20",
            "--delay",
            "200ms",
            "--backoff",
            "constant",
            "-j",
            "none",
        ])
        .args(["--", "git", "ls-remote", &url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    std::thread::sleep(Duration::from_secs(1));
    let daemon = tools::git_daemon(s.dir.path(), port);
    assert!(
        wait_for_port(port, Duration::from_secs(10)),
        "git daemon did not listen: {}",
        daemon.log_text()
    );
    let r = crate::support::run::finish(child, start);
    assert_eq!(
        r.status,
        0,
        "{}\ngit daemon: {}",
        r.stderr,
        daemon.log_text()
    );
    assert!(attempts(&r) >= 3, "{}", r.stderr);
    r.assert_stderr_has("Connection refused");
    r.assert_stderr_has("git: network failure");
}
