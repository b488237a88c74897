//! macOS: processes from libproc (`proc_listallpids`, `proc_pidinfo`). It has no child
//! subreaper and no parent-death signal, no `pipe2` (a pipe is made close-on-exec in a
//! second step, under the fork lock), and its `/dev/fd/N` is the same open file as fd
//! N: all of that is `posix/`'s. `MSG_NOSIGNAL` it has, though nix does not name it.

use std::mem::size_of;

use nix::libc::{self, c_int};
use nix::sys::socket::MsgFlags;

use super::Process;

pub use super::posix::{
    PARENT_DEATH_SIGNAL, PipeWriter, become_subreaper, pipe_in_two_steps as pipe,
    set_parent_death_signal,
};

/// Every process ID on the system.
fn all_pids() -> Option<Vec<i32>> {
    // SAFETY: a null buffer asks only how many there are.
    let count = unsafe { libc::proc_listallpids(std::ptr::null_mut(), 0) };
    // Processes may start between the two calls: room for some more.
    let mut pids = vec![0; usize::try_from(count).ok()? + 64];
    let bytes = c_int::try_from(pids.len() * size_of::<libc::pid_t>()).ok()?;
    // SAFETY: `pids` has room for `bytes` bytes; the count written is returned.
    let got = unsafe { libc::proc_listallpids(pids.as_mut_ptr().cast(), bytes) };
    pids.truncate(usize::try_from(got).ok()?);
    Some(pids)
}

/// `pid`'s record: the full one for retry's own user's processes, the short one (no
/// start time) for others'. `None` when it is gone.
fn process(pid: i32) -> Option<Process> {
    // SAFETY: plain data: all zeroes is a valid value.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    if pid_info(pid, libc::PROC_PIDTBSDINFO, &mut info) {
        return Some(Process {
            pid,
            ppid: info.pbi_ppid as i32,
            pgid: info.pbi_pgid as i32,
            zombie: info.pbi_status == libc::SZOMB,
            start: info.pbi_start_tvsec * 1_000_000 + info.pbi_start_tvusec,
        });
    }
    // SAFETY: as above.
    let mut short: libc::proc_bsdshortinfo = unsafe { std::mem::zeroed() };
    if !pid_info(pid, libc::PROC_PIDT_SHORTBSDINFO, &mut short) {
        return None;
    }
    Some(Process {
        pid,
        ppid: short.pbsi_ppid as i32,
        pgid: short.pbsi_pgid as i32,
        zombie: short.pbsi_status == libc::SZOMB,
        start: 0,
    })
}

/// Fills `record` with `pid`'s information of kind `flavor`; false when it cannot.
fn pid_info<T>(pid: i32, flavor: c_int, record: &mut T) -> bool {
    let Ok(size) = c_int::try_from(size_of::<T>()) else {
        return false;
    };
    // SAFETY: `record` is `size` bytes of plain data, the record `flavor` names.
    let got = unsafe { libc::proc_pidinfo(pid, flavor, 0, (record as *mut T).cast(), size) };
    got == size
}

pub fn processes() -> Option<Vec<Process>> {
    Some(all_pids()?.into_iter().filter_map(process).collect())
}

pub fn started(pid: i32) -> Option<u64> {
    process(pid).map(|p| p.start)
}

/// retry's children, from the kernel's own list of them.
pub fn children() -> Vec<i32> {
    let me = nix::unistd::getpid().as_raw();
    let mut pids = vec![0; 256];
    loop {
        let Ok(bytes) = c_int::try_from(pids.len() * size_of::<libc::pid_t>()) else {
            return Vec::new();
        };
        // SAFETY: `pids` has room for `bytes` bytes; the count written is returned.
        let got = unsafe { libc::proc_listchildpids(me, pids.as_mut_ptr().cast(), bytes) };
        let Ok(got) = usize::try_from(got) else {
            return Vec::new();
        };
        if got < pids.len() {
            pids.truncate(got);
            return pids;
        }
        pids.resize(pids.len() * 2, 0);
    }
}

/// The clock for `sys::suspend_aware_now`: macOS's monotonic clock goes on while the machine sleeps.
pub const SUSPEND_CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC;

/// Keeps SIGPIPE from a send to a socket whose peer is gone.
pub const NO_SIGPIPE: MsgFlags = MsgFlags::from_bits_retain(libc::MSG_NOSIGNAL);

pub fn device_numbers(dev: u64) -> (u64, u64) {
    // `dev` came from a 32-bit dev_t, and each part is smaller.
    let dev = dev as libc::dev_t;
    let number = |n: i32| u64::from(n as u32);
    (number(libc::major(dev)), number(libc::minor(dev)))
}

/// macOS's resolver is used as the system sets it.
pub fn configure_name_lookup() {}
