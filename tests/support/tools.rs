//! Real third-party servers on 127.0.0.1 for the tool-profile tests: an rsync
//! daemon, sshd and git daemon, each with its own configuration in a temporary
//! directory and a port of its own. A daemon is stopped when dropped.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::ports::wait_for_port;

/// Runs `program args`, panicking with its stderr when it fails.
pub fn must_run(program: &str, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A server process the test started; killed and reaped when dropped.
pub struct Daemon {
    pub child: Child,
    pub port: u16,
    /// Where the daemon's own log (or stderr) goes, quoted when a test fails.
    pub log: PathBuf,
}

impl Daemon {
    pub fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn_logged(cmd: &mut Command, log: &Path) -> std::io::Result<Child> {
    let err = fs::File::create(log)?;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
}

fn current_ids() -> (u32, u32) {
    (
        nix::unistd::getuid().as_raw(),
        nix::unistd::getgid().as_raw(),
    )
}

/// The unprivileged user and group a root-run daemon module reads as.
pub const NOBODY: u32 = 65534;

/// An rsync daemon serving `dir/mod` as module `mod`, one connection at a time.
/// Run as root, it also serves `dir/private` as module `private`, read as user
/// nobody (so a file only root may read is refused).
pub fn rsync_daemon(dir: &Path) -> Daemon {
    let port = super::ports::free_port();
    let (uid, gid) = current_ids();
    let module = dir.join("mod");
    fs::create_dir_all(&module).unwrap();
    let conf = dir.join("rsyncd.conf");
    let log = dir.join("rsyncd.log");
    let mut text = format!(
        "use chroot = no\nmax connections = 1\nlock file = {lock}\nlog file = {log}\n\
         [mod]\n  path = {module}\n  read only = yes\n  uid = {uid}\n  gid = {gid}\n",
        lock = dir.join("rsyncd.lock").display(),
        log = log.display(),
        module = module.display(),
    );
    if uid == 0 {
        let private = dir.join("private");
        fs::create_dir_all(&private).unwrap();
        text.push_str(&format!(
            "[private]\n  path = {}\n  read only = yes\n  uid = {NOBODY}\n  gid = {NOBODY}\n",
            private.display()
        ));
    }
    fs::write(&conf, text).unwrap();
    let child = spawn_logged(
        Command::new("rsync").args([
            "--daemon",
            "--no-detach",
            &format!("--config={}", conf.display()),
            "--address=127.0.0.1",
            &format!("--port={port}"),
        ]),
        &dir.join("rsyncd.stderr"),
    )
    .expect("start rsync --daemon");
    let daemon = Daemon { child, port, log };
    assert!(
        wait_for_port(port, Duration::from_secs(10)),
        "rsync daemon did not listen: {}",
        daemon.log_text()
    );
    daemon
}

/// `git daemon` exporting every repository under `base`, on `port`.
pub fn git_daemon(base: &Path, port: u16) -> Daemon {
    let log = base.join("git-daemon.log");
    // `git daemon` runs git-daemon as its child: start that one, so dropping kills it.
    let exec_path = Command::new("git")
        .arg("--exec-path")
        .output()
        .expect("git --exec-path");
    let exec_path = String::from_utf8_lossy(&exec_path.stdout)
        .trim()
        .to_string();
    let child = spawn_logged(
        Command::new(Path::new(&exec_path).join("git-daemon")).args([
            "--export-all",
            "--reuseaddr",
            "--listen=127.0.0.1",
            &format!("--port={port}"),
            &format!("--base-path={}", base.display()),
            &base.display().to_string(),
        ]),
        &log,
    )
    .expect("start git daemon");
    Daemon { child, port, log }
}

/// Why sshd could not be started here (not root, no privilege separation
/// directory, no sshd binary): the tests that need it skip, or fail in CI.
pub struct NoSshd(pub String);

pub const SSHD: &str = "/usr/sbin/sshd";

/// sshd on 127.0.0.1 accepting only public keys listed in `dir/authorized_keys`
/// (left empty), with a host key of its own in `dir/host_key`.
pub fn sshd(dir: &Path) -> Result<Daemon, NoSshd> {
    if !Path::new(SSHD).exists() {
        return Err(NoSshd(format!("{SSHD} is not installed")));
    }
    // sshd refuses to start without its privilege separation directory.
    if let Err(e) = fs::create_dir_all("/run/sshd") {
        return Err(NoSshd(format!("cannot create /run/sshd: {e}")));
    }
    keygen(&dir.join("host_key"));
    fs::write(dir.join("authorized_keys"), "").unwrap();
    let port = super::ports::free_port();
    let conf = dir.join("sshd_config");
    fs::write(
        &conf,
        format!(
            "ListenAddress 127.0.0.1\nPort {port}\nHostKey {host}\nPidFile none\n\
             AuthenticationMethods publickey\nPubkeyAuthentication yes\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
             AuthorizedKeysFile {keys}\nStrictModes no\nPermitRootLogin prohibit-password\n",
            host = dir.join("host_key").display(),
            keys = dir.join("authorized_keys").display(),
        ),
    )
    .unwrap();
    let log = dir.join("sshd.log");
    let conf_arg = conf.display().to_string();
    let mut child = spawn_logged(Command::new(SSHD).args(["-D", "-e", "-f", &conf_arg]), &log)
        .map_err(|e| NoSshd(format!("cannot run {SSHD}: {e}")))?;
    if !wait_for_port(port, Duration::from_secs(10)) {
        let _ = child.kill();
        let _ = child.wait();
        let why = fs::read_to_string(&log).unwrap_or_default();
        return Err(NoSshd(format!("{SSHD} did not listen: {}", why.trim())));
    }
    Ok(Daemon { child, port, log })
}

/// A new ed25519 key pair at `path` and `path.pub`, without a passphrase.
pub fn keygen(path: &Path) {
    must_run(
        "ssh-keygen",
        &[
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-f",
            &path.display().to_string(),
        ],
    );
}

/// Whether a test that needs sshd must fail rather than skip (set in CI).
pub fn sshd_required() -> bool {
    std::env::var_os("RETRY_TEST_REQUIRE_SSHD").is_some_and(|v| v == "1")
}
