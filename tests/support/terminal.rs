//! A pseudo-terminal whose two ends are close-on-exec, so that a child another test
//! starts at the same moment cannot inherit them and keep the terminal open.

use std::fs::{File, OpenOptions};
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;

use nix::fcntl::OFlag;
use nix::pty::{grantpt, posix_openpt, ptsname_r, unlockpt};

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
    let name = ptsname_r(&master).expect("ptsname");
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
