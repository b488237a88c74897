//! FreeBSD: processes from the `kern.proc` sysctl (`kinfo_proc`), `procctl` for the
//! reaper (`PROC_REAP_ACQUIRE`) and the parent-death signal (`PROC_PDEATHSIG_CTL`),
//! `pipe2`, MSG_NOSIGNAL. Its `/dev/fd/N` is the same open file as fd N, so a shared pipe is written
//! by `posix/`'s writer thread.
//!
//! Ending an attempt's processes lists them and signals each (the same code as on
//! Linux), rather than `PROC_REAP_KILL`: that signals every descendant of the reaper
//! or of one of its children, while an attempt's processes leave out what earlier
//! attempts left running, and the list is needed anyway to know when they are gone.

use std::io;
use std::mem::size_of;

use nix::errno::Errno;
use nix::libc::{self, c_int};
use nix::sys::signal::Signal;
use nix::sys::socket::MsgFlags;

use super::Process;

pub use super::posix::{PipeWriter, children, pipe_in_one_step as pipe};

/// The records of `kern.proc.<mib>`; `None` when the kernel's record is not the
/// size this build knows.
fn kinfo(mib: &[c_int]) -> Option<Vec<libc::kinfo_proc>> {
    let size = size_of::<libc::kinfo_proc>();
    let namelen = libc::c_uint::try_from(mib.len()).ok()?;
    // Processes may start between asking the size and reading: room for some more,
    // and again when that was not enough.
    for _ in 0..5 {
        let mut bytes = 0;
        // SAFETY: a null buffer asks only for the size, written to `bytes`.
        let asked = unsafe {
            libc::sysctl(
                mib.as_ptr(),
                namelen,
                std::ptr::null_mut(),
                &mut bytes,
                std::ptr::null(),
                0,
            )
        };
        if asked != 0 {
            return None;
        }
        // SAFETY: kinfo_proc is plain data: all zeroes is a valid value.
        let blank: libc::kinfo_proc = unsafe { std::mem::zeroed() };
        let mut records = vec![blank; bytes / size + 16];
        bytes = records.len() * size;
        // SAFETY: `records` has room for `bytes` bytes, which the kernel fills with
        // whole records and then says how many it wrote.
        let read = unsafe {
            libc::sysctl(
                mib.as_ptr(),
                namelen,
                records.as_mut_ptr().cast(),
                &mut bytes,
                std::ptr::null(),
                0,
            )
        };
        if read != 0 {
            if Errno::last() == Errno::ENOMEM {
                continue;
            }
            return None;
        }
        records.truncate(bytes / size);
        let known = records
            .iter()
            .all(|k| usize::try_from(k.ki_structsize) == Ok(size));
        return known.then_some(records);
    }
    None
}

fn process(k: &libc::kinfo_proc) -> Process {
    let micros = k.ki_start.tv_sec * 1_000_000 + k.ki_start.tv_usec;
    Process {
        pid: k.ki_pid,
        ppid: k.ki_ppid,
        pgid: k.ki_pgid,
        zombie: k.ki_stat == libc::SZOMB,
        start: u64::try_from(micros).unwrap_or(0),
    }
}

pub fn processes() -> Option<Vec<Process>> {
    let all = kinfo(&[libc::CTL_KERN, libc::KERN_PROC, libc::KERN_PROC_PROC])?;
    Some(all.iter().map(process).collect())
}

pub fn started(pid: i32) -> Option<u64> {
    let one = kinfo(&[libc::CTL_KERN, libc::KERN_PROC, libc::KERN_PROC_PID, pid])?;
    one.first().map(|k| process(k).start)
}

pub fn become_subreaper() -> io::Result<()> {
    let me = libc::id_t::from(nix::unistd::getpid().as_raw());
    // SAFETY: PROC_REAP_ACQUIRE reads no data.
    let done = unsafe {
        libc::procctl(
            libc::P_PID,
            me,
            libc::PROC_REAP_ACQUIRE,
            std::ptr::null_mut(),
        )
    };
    if done == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

pub const PARENT_DEATH_SIGNAL: bool = true;

pub fn set_parent_death_signal(sig: Signal) -> io::Result<()> {
    let mut sig = sig as c_int;
    // SAFETY: PROC_PDEATHSIG_CTL reads one int, the signal, for the calling process (id 0).
    let done = unsafe {
        libc::procctl(
            libc::P_PID,
            0,
            libc::PROC_PDEATHSIG_CTL,
            (&mut sig as *mut c_int).cast(),
        )
    };
    if done == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The clock for `sys::suspend_aware_now`: FreeBSD has no clock that surely counts a suspend: the monotonic one counts a stopped process.
pub const SUSPEND_CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC;

/// Keeps SIGPIPE from a send to a socket whose peer is gone.
pub const NO_SIGPIPE: MsgFlags = MsgFlags::MSG_NOSIGNAL;

pub fn device_numbers(dev: u64) -> (u64, u64) {
    // Both are 32 bits wide, as `dev` packs them.
    let number = |n: c_int| u64::from(n as u32);
    (number(libc::major(dev)), number(libc::minor(dev)))
}

/// FreeBSD's resolver is used as nsswitch.conf sets it.
pub fn configure_name_lookup() {}
