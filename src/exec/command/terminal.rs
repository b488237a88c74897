//! Terminal hand-over for interactive commands: whether retry is in the
//! terminal's foreground, and giving the terminal back to retry after an
//! attempt. The child's side (its own group in the foreground), and the hand-back
//! when it cannot start, are `spawn`'s.

use crate::sys;

pub(super) fn stdin_tty() -> sys::Fd<'static> {
    crate::streams::std_fd(0)
}

pub(super) fn in_terminal_foreground() -> bool {
    // Not io::stdin(): its first use allocates a buffer that start-up does not need.
    sys::in_terminal_foreground(stdin_tty())
}

/// retry must be able to take the terminal back from the background.
pub(super) fn ignore_sigttou() {
    sys::ignore_sigttou();
}

pub(super) fn reclaim_terminal() {
    sys::reclaim_terminal(stdin_tty());
}
