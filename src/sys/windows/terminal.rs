//! The console, where a terminal would be: it has no foreground process group to hand
//! over or take back, and a reader gone from retry's output is not known before a write
//! fails.

use super::stream::Fd;

/// A console has no foreground process group: every process attached to it reads it
/// and gets its Ctrl-C, so there is nothing to hand over or take back.
pub fn in_terminal_foreground(_tty: Fd<'_>) -> bool {
    false
}

/// No SIGTTOU on Windows (see [`in_terminal_foreground`]).
pub fn ignore_sigttou() {}

/// Nothing to take back (see [`in_terminal_foreground`]).
pub fn reclaim_terminal(_tty: Fd<'_>) {}

/// Whether a reader of `handle` is gone: not known before a write to an anonymous
/// pipe fails with `BrokenPipe`, which the writer reports.
pub fn reader_gone(_handle: Fd<'_>) -> bool {
    false
}
