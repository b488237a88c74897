//! Waiting for a child on Unix: `waitpid` without blocking (stopped children too), the
//! wait between two looks (SIGCHLD wakes it), and a Ctrl-Z passed on in turn.

use std::io;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{self, Signal, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, tcsetpgrp};

use crate::sys::ChildState;

/// What became of the child `pid` since the last look; `None` while it runs.
pub fn try_wait(pid: i32) -> io::Result<Option<ChildState>> {
    let flags = WaitPidFlag::WNOHANG | WaitPidFlag::WUNTRACED;
    loop {
        return match waitpid(Pid::from_raw(pid), Some(flags)) {
            Ok(WaitStatus::Exited(_, code)) => Ok(Some(ChildState::Exited(code))),
            Ok(WaitStatus::Signaled(_, sig, _)) => Ok(Some(ChildState::Signaled(sig as i32))),
            Ok(WaitStatus::Stopped(_, _)) => Ok(Some(ChildState::Stopped)),
            Ok(_) => Ok(None),
            Err(Errno::EINTR) => continue,
            Err(e) => Err(e.into()),
        };
    }
}

/// A child that has exited, reaped without waiting: any child, so that an orphan adopted
/// by retry (as PID 1, or as a subreaper) is reaped too; `None` when none has exited.
pub fn reap_any() -> Option<(i32, ChildState)> {
    loop {
        return match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) => Some((pid.as_raw(), ChildState::Exited(code))),
            Ok(WaitStatus::Signaled(pid, sig, _)) => {
                Some((pid.as_raw(), ChildState::Signaled(sig as i32)))
            }
            Err(Errno::EINTR) => continue,
            Ok(WaitStatus::StillAlive) | Err(_) => None,
            // A stop or a continue is no exit: look again.
            Ok(_) => continue,
        };
    }
}

/// Waits up to `d` for the child `pid` to change, or anything else to wake the run
/// (SIGCHLD wakes the self-pipe).
pub fn pause_for_child(_pid: i32, d: Duration) {
    super::signals::wait_for_wake(d);
}

/// The command in the group `pgid` was stopped from the terminal (Ctrl-Z): stop retry
/// too, so the shell gets its job back, and give the terminal back to the group and
/// continue it when retry is continued.
pub fn stop_in_turn(tty: std::os::fd::BorrowedFd<'_>, pgid: i32) {
    super::reclaim_terminal(tty);
    let _ = signal::raise(Signal::SIGSTOP);
    let _ = tcsetpgrp(tty, Pid::from_raw(pgid));
    let _ = killpg(Pid::from_raw(pgid), Signal::SIGCONT);
}
