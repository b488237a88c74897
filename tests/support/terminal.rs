//! A pseudo-terminal whose two ends are close-on-exec, so that a child another test
//! starts at the same moment cannot inherit them and keep the terminal open.

use std::fs::{File, OpenOptions};
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;

use nix::fcntl::OFlag;
use nix::pty::{PtyMaster, grantpt, posix_openpt, unlockpt};

pub struct Terminal {
    /// The side the test reads and types on.
    pub master: File,
    /// The side a child gets as its stdin, stdout or stderr.
    pub slave: File,
}

/// Opens a new pseudo-terminal.
pub fn terminal() -> Terminal {
    let master = posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC)
        .expect("open a pseudo-terminal");
    grantpt(&master).expect("grantpt");
    unlockpt(&master).expect("unlockpt");
    let name = slave_name(&master);
    // std opens files close-on-exec.
    let slave = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(nix::libc::O_NOCTTY)
        .open(&name)
        .expect("open the terminal's slave side");
    Terminal {
        master: File::from(OwnedFd::from(master)),
        slave,
    }
}

/// The path of the terminal's slave side.
#[cfg(target_os = "linux")]
fn slave_name(master: &PtyMaster) -> String {
    nix::pty::ptsname_r(master).expect("ptsname")
}

/// The path of the terminal's slave side: `ptsname`, whose answer lives in a buffer of
/// the C library's, one test at a time (nix has `ptsname_r` for Linux alone).
#[cfg(not(target_os = "linux"))]
fn slave_name(master: &PtyMaster) -> String {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: no other thread of the tests calls ptsname while the lock is held.
    unsafe { nix::pty::ptsname(master) }.expect("ptsname")
}
