//! Linux: processes from `/proc`, `PR_SET_CHILD_SUBREAPER` and `PR_SET_PDEATHSIG`,
//! `pipe2`, MSG_NOSIGNAL, and a shared pipe written through a second, non-blocking open of it
//! (`/proc/self/fd/N`: a new open file description, so its O_NONBLOCK is retry's
//! alone). With the `portable-paths` feature the last four are `posix/`'s instead.

use nix::sys::socket::MsgFlags;
use std::fs;

use super::Process;

#[cfg(feature = "portable-paths")]
pub use super::posix::{
    PARENT_DEATH_SIGNAL, PipeWriter, become_subreaper, children, pipe_in_two_steps as pipe,
    set_parent_death_signal,
};
#[cfg(not(feature = "portable-paths"))]
pub use {
    super::posix::pipe_in_one_step as pipe,
    native::{
        PARENT_DEATH_SIGNAL, PipeWriter, become_subreaper, children, set_parent_death_signal,
    },
};

/// Parses `/proc/PID/stat`; the command name may hold spaces and parentheses, so the
/// fields are read after the last `)`.
fn parse_stat(text: &str) -> Option<Process> {
    let pid = text.split_once(' ')?.0.parse().ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Fields 3 (state), 4 (ppid), 5 (pgrp) and 22 (starttime, clock ticks since boot) of proc(5).
    let state = *fields.first()?;
    Some(Process {
        pid,
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        zombie: state == "Z" || state == "X",
        start: fields.get(19)?.parse().ok()?,
    })
}

pub fn processes() -> Option<Vec<Process>> {
    let dir = fs::read_dir("/proc").ok()?;
    let all = dir
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|text| parse_stat(&text))
        .collect();
    Some(all)
}

pub fn started(pid: i32) -> Option<u64> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text).map(|p| p.start)
}

/// The clock that goes on while the machine is suspended (a suspended VM's
/// `CLOCK_MONOTONIC` stands still).
pub const SUSPEND_CLOCK: nix::libc::clockid_t = nix::libc::CLOCK_BOOTTIME;

/// Keeps SIGPIPE from a send to a socket whose peer is gone.
pub const NO_SIGPIPE: MsgFlags = MsgFlags::MSG_NOSIGNAL;

pub fn device_numbers(dev: u64) -> (u64, u64) {
    (nix::sys::stat::major(dev), nix::sys::stat::minor(dev))
}

/// glibc's NSS `hosts` database set to `files dns`, once, before the first lookup.
pub fn configure_name_lookup() {
    #[cfg(target_env = "gnu")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            unsafe extern "C" {
                fn __nss_configure_lookup(
                    dbname: *const std::ffi::c_char,
                    service_line: *const std::ffi::c_char,
                ) -> std::ffi::c_int;
            }
            // SAFETY: two NUL-terminated static strings; called once, before the first
            // lookup thread starts, so no hosts lookup reads the entry it replaces.
            let status =
                unsafe { __nss_configure_lookup(c"hosts".as_ptr(), c"files dns".as_ptr()) };
            debug_assert_eq!(status, 0, "glibc knows the hosts database");
        });
    }
}

#[cfg(not(feature = "portable-paths"))]
mod native {
    use std::fs;
    use std::io;
    use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

    use nix::errno::Errno;
    use nix::fcntl::{OFlag, open};
    use nix::poll::PollFlags;
    use nix::sys::signal::Signal;
    use nix::sys::stat::Mode;

    /// retry's children, from each thread's `children` (a few bytes), or from every
    /// process where the kernel lacks those files.
    pub fn children() -> Vec<i32> {
        let threads = fs::read_dir("/proc/self/task").ok();
        let listed: Option<Vec<i32>> = threads.and_then(|dir| {
            let mut pids = Vec::new();
            for task in dir.flatten() {
                let text = fs::read_to_string(task.path().join("children")).ok()?;
                pids.extend(
                    text.split_whitespace()
                        .filter_map(|p| p.parse::<i32>().ok()),
                );
            }
            Some(pids)
        });
        listed.unwrap_or_else(super::super::posix::children)
    }

    pub fn become_subreaper() -> io::Result<()> {
        nix::sys::prctl::set_child_subreaper(true)?;
        Ok(())
    }

    pub const PARENT_DEATH_SIGNAL: bool = true;

    pub fn set_parent_death_signal(sig: Signal) -> io::Result<()> {
        nix::sys::prctl::set_pdeathsig(sig)?;
        Ok(())
    }

    /// A second, non-blocking open of the pipe.
    pub struct PipeWriter(OwnedFd);

    impl PipeWriter {
        pub fn new(fd: BorrowedFd<'_>) -> io::Result<PipeWriter> {
            let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
            let flags = OFlag::O_WRONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
            match open(path.as_str(), flags, Mode::empty()) {
                Ok(fd) => Ok(PipeWriter(fd)),
                // Opening a pipe for writing without a reader is ENXIO: writes would be EPIPE.
                Err(Errno::ENXIO) => Err(Errno::EPIPE.into()),
                Err(e) => Err(e.into()),
            }
        }

        pub fn try_write(&self, data: &[u8]) -> Result<usize, Errno> {
            nix::unistd::write(&self.0, data)
        }

        pub fn room(&self) -> (BorrowedFd<'_>, PollFlags) {
            (self.0.as_fd(), PollFlags::POLLOUT)
        }

        pub fn pending(&self) -> Result<bool, Errno> {
            Ok(false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_awkward_command_names() {
        let line = "4242 (a b) c)) S 1 4242 4242 0 -1 4194560 0 0 0 0 1 2 0 0 20 0 1 0 987 0";
        assert_eq!(
            parse_stat(line).unwrap(),
            Process {
                pid: 4242,
                ppid: 1,
                pgid: 4242,
                zombie: false,
                start: 987,
            }
        );
        let zombie = "7 (sh) Z 3 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0";
        assert!(parse_stat(zombie).unwrap().zombie);
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(
            parse_stat("7 (sh) S 3 7"),
            None,
            "too short to have a start"
        );
    }

    #[test]
    fn this_process_is_listed_with_its_parent_and_group() {
        let me = std::process::id() as i32;
        let all = processes().expect("/proc");
        let mine = all.iter().find(|p| p.pid == me).expect("listed");
        assert_eq!(mine.ppid, nix::unistd::getppid().as_raw());
        assert_eq!(mine.pgid, nix::unistd::getpgrp().as_raw());
        assert_eq!(started(me), Some(mine.start));
    }
}
