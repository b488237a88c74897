//! The controlling terminal: whether retry's group is in its foreground and taking it
//! back, and whether a reader of retry's output is gone.

use std::io::IsTerminal;
use std::os::fd::BorrowedFd;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{self, SigHandler, Signal};
use nix::unistd::{getpgrp, tcgetpgrp, tcsetpgrp};

/// Whether `tty` is a terminal whose foreground process group is retry's.
pub fn in_terminal_foreground(tty: BorrowedFd<'_>) -> bool {
    tty.is_terminal() && tcgetpgrp(tty).is_ok_and(|fg| fg == getpgrp())
}

/// Has SIGTTOU ignored, so that retry can take the terminal back from the background.
pub fn ignore_sigttou() {
    // SAFETY: SIG_IGN installs no handler code, so no async-signal-safety rule can be broken.
    unsafe {
        let _ = signal::signal(Signal::SIGTTOU, SigHandler::SigIgn);
    }
}

/// Puts retry's own process group back in the terminal's foreground.
pub fn reclaim_terminal(tty: BorrowedFd<'_>) {
    let _ = tcsetpgrp(tty, getpgrp());
}

/// Whether `fd` is a pipe whose reader has gone (it polls POLLERR).
pub fn reader_gone(fd: BorrowedFd<'_>) -> bool {
    let mut fds = [PollFd::new(fd, PollFlags::empty())];
    poll(&mut fds, PollTimeout::ZERO).is_ok()
        && fds[0]
            .revents()
            .is_some_and(|r| r.contains(PollFlags::POLLERR))
}
