//! Terminal hand-over for interactive commands: whether retry is in the
//! terminal's foreground, and giving the terminal back to retry after an
//! attempt. The child's side (its own group in the foreground), and the hand-back
//! when it cannot start, are `spawn`'s.

use std::io::IsTerminal;
use std::os::fd::BorrowedFd;

use nix::sys::signal::{self, SigHandler, Signal};
use nix::unistd::{getpgrp, tcgetpgrp, tcsetpgrp};

pub(super) fn stdin_tty() -> BorrowedFd<'static> {
    crate::streams::std_fd(0)
}

pub(super) fn in_terminal_foreground() -> bool {
    // Not io::stdin(): its first use allocates a buffer that start-up does not need.
    stdin_tty().is_terminal() && tcgetpgrp(stdin_tty()).is_ok_and(|fg| fg == getpgrp())
}

/// retry must be able to take the terminal back from the background.
pub(super) fn ignore_sigttou() {
    // SAFETY: SIG_IGN installs no handler code, so no async-signal-safety rule can be broken.
    unsafe {
        let _ = signal::signal(Signal::SIGTTOU, SigHandler::SigIgn);
    }
}

pub(super) fn reclaim_terminal() {
    let _ = tcsetpgrp(stdin_tty(), getpgrp());
}
