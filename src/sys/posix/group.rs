//! Signalling an attempt's processes on Unix: its process group, a process that left
//! it, and reaping an exited child.

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

/// A process group does not hold every descendant (`setsid` leaves it): the process
/// list is searched for the rest.
pub const GROUP_HOLDS_TREE: bool = false;

/// SIGCONT: sent after an ending signal, as a stopped process acts on it only once
/// continued.
pub const CONTINUE: Option<Signal> = Some(Signal::SIGCONT);

/// Sends `sig` to the group `pgid` (`None`: only whether it has a member); whether it
/// was sent.
pub fn signal_group(pgid: i32, sig: Option<Signal>) -> bool {
    killpg(Pid::from_raw(pgid), sig).is_ok()
}

/// Sends `sig` to the process `pid`.
pub fn signal_process(pid: i32, sig: Signal) {
    let _ = kill(Pid::from_raw(pid), sig);
}

/// The signal retry passes on to an attempt for its own stopping signal `number`: the
/// same one.
pub fn passed_on(number: i32) -> Option<Signal> {
    Signal::try_from(number).ok()
}

/// Reaps the exited child `pid` (without waiting: it has exited).
pub fn reap(pid: i32) {
    while let Err(Errno::EINTR) = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)) {}
}

/// Nothing is held for a group on Unix.
pub fn release_group(_pgid: i32) {}

#[cfg(test)]
/// The signal that ended a process, if one did.
pub fn exit_signal(status: &std::process::ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(status)
}
