//! Ending an attempt's processes on Windows: each group [`start`](super::start) began is
//! kept here, by its leader's pid, with the Job Object that holds its whole tree and a
//! handle to the leader, until it is released; asking a group to end (Ctrl-Break, else
//! its job's end) and ending it outright (its job's end). No process leaves its job, so
//! nothing is signalled alone, and there are no zombies to reap.

use std::io;
use std::os::windows::io::OwnedHandle;

use super::console::ask_to_end;
use super::job_object::JobObject;
use super::signals::Signal;

/// An attempt's Job Object holds every process it starts: no search for the rest.
pub const GROUP_HOLDS_TREE: bool = true;

/// Windows stops no process to be continued.
pub const CONTINUE: Option<Signal> = None;

/// What [`start`](super::start) keeps of each group it began, by its leader's pid, until
/// [`release_group`]: the Job Object that ends its tree, and a handle to the leader,
/// which keeps its pid and exit code while retry waits for it.
struct Group {
    pgid: i32,
    job: JobObject,
    leader: OwnedHandle,
}

static GROUPS: std::sync::Mutex<Vec<Group>> = std::sync::Mutex::new(Vec::new());

fn with_group<T>(pgid: i32, f: impl FnOnce(&Group) -> T) -> Option<T> {
    let groups = GROUPS.lock().unwrap_or_else(|p| p.into_inner());
    groups.iter().find(|g| g.pgid == pgid).map(f)
}

fn with_job<T>(pgid: i32, f: impl FnOnce(&JobObject) -> T) -> Option<T> {
    with_group(pgid, |g| f(&g.job))
}

/// A copy of the handle to the group `pgid`'s leader that [`start`](super::start) kept;
/// `None` for a process that began no group here.
pub(super) fn leader(pgid: i32) -> Option<io::Result<OwnedHandle>> {
    with_group(pgid, |g| g.leader.try_clone())
}

/// Keeps `job` and a handle to its leader as the group `pgid`'s.
pub(super) fn hold_group(pgid: i32, job: JobObject, leader: OwnedHandle) {
    GROUPS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Group { pgid, job, leader });
}

/// Closes the group's Job Object, which ends whatever of it is still running.
pub fn release_group(pgid: i32) {
    GROUPS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|g| g.pgid != pgid);
}

/// Asks the group `pgid` to end (TERM: Ctrl-Break to it, or its job's end when retry
/// has no console to send it through) or ends its whole job (KILL, exit code 137 as a
/// shell reports SIGKILL); `None` only asks whether any of it runs.
/// Whether it was sent.
pub fn signal_group(pgid: i32, sig: Option<Signal>) -> bool {
    match sig {
        None => with_job(pgid, |job| job.active().is_ok_and(|n| n > 0)).unwrap_or(false),
        // Ctrl-Break reaches only processes that share retry's console. Without one (a
        // service, some CI agents, Wine) the job's end is the only ask left: at once,
        // with the 128+15 a shell reports for SIGTERM.
        Some(Signal::SIGTERM) => {
            u32::try_from(pgid).is_ok_and(|id| ask_to_end(id).is_ok())
                || with_job(pgid, |job| job.terminate(143).is_ok()).unwrap_or(false)
        }
        Some(Signal::SIGKILL) => with_job(pgid, |job| job.terminate(137).is_ok()).unwrap_or(false),
    }
}

/// No process leaves its job: nothing is ever signalled alone.
pub fn signal_process(_pid: i32, _sig: Signal) {}

/// Every stopping signal is passed on as the one ask Windows has: Ctrl-Break (TERM).
pub fn passed_on(_number: i32) -> Option<Signal> {
    Some(Signal::SIGTERM)
}

/// Windows keeps no zombies to reap.
pub fn reap(_pid: i32) {}

#[cfg(test)]
/// Windows ends processes with an exit code only, never a signal.
pub fn exit_signal(_status: &std::process::ExitStatus) -> Option<i32> {
    None
}
