//! Starting an attempt's process as posix_spawn does: clone(2) with CLONE_VM and
//! CLONE_VFORK, so the child runs in retry's memory, on a stack of its own, until its
//! execve, and retry waits meanwhile. std's `Command` forks instead whenever code must
//! run in the child, and the attempt's process must set its parent-death signal itself;
//! a fork copies retry's page tables and makes every page retry writes afterwards fault
//! once more, ~70 µs of `retry -- true` here.
//!
//! The child only makes async-signal-safe C library calls with what the parent
//! prepared (C strings, pointer arrays, descriptors), never allocates, and reports a
//! failure before the exec through an integer it shares with the parent.

use std::ffi::{CStr, CString, OsStr, OsString, c_char, c_int, c_void};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicI32, Ordering};

use nix::fcntl::{OFlag, open};
use nix::libc;
use nix::sys::stat::Mode;
use nix::unistd::{Pid, pipe2};

/// What one of the child's descriptors 0, 1 and 2 is.
pub(super) enum Stdio {
    /// retry's own.
    Inherit,
    /// /dev/null.
    Null,
    /// This descriptor (retry keeps no copy once the child has started).
    Fd(OwnedFd),
    /// A new pipe; retry gets the other end.
    Piped,
}

/// The attempt's process: what runs, with which environment changes and descriptors.
pub(super) struct Spec<'a> {
    pub argv: &'a [OsString],
    /// Variables set (`Some`) or removed (`None`) on top of retry's environment.
    pub env: Vec<(&'static str, Option<OsString>)>,
    pub stdin: Stdio,
    pub stdout: Stdio,
    pub stderr: Stdio,
    /// Take the terminal's foreground (stdin is retry's controlling terminal).
    pub foreground: bool,
    /// Signals whose disposition the child resets to the default before it execs: those
    /// retry catches or ignores.
    pub reset_signals: &'a [c_int],
}

/// A started process and retry's ends of its piped streams.
pub(super) struct Spawned {
    pub pid: Pid,
    pub stdout: Option<OwnedFd>,
    pub stderr: Option<OwnedFd>,
}

/// What the child reads, laid out by the parent before the clone.
#[repr(C)]
struct ChildArgs {
    program: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    /// For descriptors 0, 1, 2: the descriptor to duplicate onto it, or -1.
    fds: [RawFd; 3],
    foreground: bool,
    parent: libc::pid_t,
    reset: *const c_int,
    reset_len: usize,
    /// errno of the step that failed before the exec; 0 while none has.
    error: *const AtomicI32,
}

fn c_string(text: &OsStr) -> io::Result<CString> {
    CString::new(text.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: contains a NUL byte", text.to_string_lossy()),
        )
    })
}

/// A null-terminated array of pointers to `strings`.
fn pointers(strings: &[CString]) -> Vec<*const c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// The children's stack: an anonymous mapping kept for the next attempt (unmapping it
/// after each would cost a TLB flush), replaced only when an attempt needs more.
struct Stack {
    base: *mut c_void,
    size: usize,
}

// SAFETY: the mapping is only used while the mutex guarding it is held.
unsafe impl Send for Stack {}

static STACK: std::sync::Mutex<Stack> = std::sync::Mutex::new(Stack {
    base: std::ptr::null_mut(),
    size: 0,
});

impl Stack {
    /// This stack, made or grown to at least `size` bytes.
    fn at_least(&mut self, size: usize) -> io::Result<&Stack> {
        if self.size < size {
            // SAFETY: a fresh anonymous private mapping; the old one, if any, is no
            // longer used by any child (CLONE_VFORK returns after the child's exec).
            let base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    size,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                    -1,
                    0,
                )
            };
            if base == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            if !self.base.is_null() {
                // SAFETY: see above.
                unsafe { libc::munmap(self.base, self.size) };
            }
            (self.base, self.size) = (base, size);
        }
        Ok(self)
    }

    /// The address a child's stack starts from (stacks grow down).
    fn top(&self) -> *mut c_void {
        // SAFETY: one past the end of the mapping, which clone(2) expects.
        unsafe { self.base.cast::<u8>().add(self.size).cast() }
    }
}

pub(super) fn spawn(spec: Spec<'_>) -> io::Result<Spawned> {
    let argv: Vec<CString> = spec
        .argv
        .iter()
        .map(|a| c_string(a))
        .collect::<Result<_, _>>()?;
    let Some(program) = argv.first() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "no command"));
    };
    // retry's environment as it is (its strings, not copies), without the variables the
    // attempt sets or removes, then the ones it sets.
    let mut envp: Vec<*const c_char> = Vec::with_capacity(64);
    // SAFETY: retry never changes its own environment, so `environ` and its strings stay
    // as the C library set them up, valid and NUL-terminated, for the whole process.
    unsafe {
        let mut entry = libc::environ.cast_const();
        while !(*entry).is_null() {
            let bytes = CStr::from_ptr(*entry).to_bytes();
            let name = bytes.split(|b| *b == b'=').next().unwrap_or(bytes);
            if !spec.env.iter().any(|(n, _)| n.as_bytes() == name) {
                envp.push(*entry);
            }
            entry = entry.add(1);
        }
    }
    let set: Vec<CString> = spec
        .env
        .iter()
        .filter_map(|(name, value)| {
            let value = value.as_ref()?;
            let mut entry = name.as_bytes().to_vec();
            entry.push(b'=');
            entry.extend_from_slice(value.as_bytes());
            Some(c_string(OsStr::from_bytes(&entry)))
        })
        .collect::<Result<_, _>>()?;
    envp.extend(set.iter().map(|s| s.as_ptr()));
    envp.push(std::ptr::null());
    let argv_ptrs = pointers(&argv);

    // The child's ends stay open in retry until the child has exec'd (or failed).
    let mut child_ends: Vec<OwnedFd> = Vec::new();
    let mut ours: [Option<OwnedFd>; 3] = [None, None, None];
    let mut fds = [-1; 3];
    for (n, stream) in [spec.stdin, spec.stdout, spec.stderr]
        .into_iter()
        .enumerate()
    {
        let child_end = match stream {
            Stdio::Inherit => continue,
            Stdio::Null => open("/dev/null", OFlag::O_RDWR | OFlag::O_CLOEXEC, Mode::empty())?,
            Stdio::Fd(fd) => fd,
            Stdio::Piped => {
                let (read, write) = pipe2(OFlag::O_CLOEXEC)?;
                let (child_end, our_end) = if n == 0 { (read, write) } else { (write, read) };
                ours[n] = Some(our_end);
                child_end
            }
        };
        fds[n] = child_end.as_raw_fd();
        child_ends.push(child_end);
    }

    let error = AtomicI32::new(0);
    let args = ChildArgs {
        program: program.as_ptr(),
        argv: argv_ptrs.as_ptr(),
        envp: envp.as_ptr(),
        fds,
        foreground: spec.foreground,
        parent: std::process::id() as libc::pid_t,
        reset: spec.reset_signals.as_ptr(),
        reset_len: spec.reset_signals.len(),
        error: &error,
    };
    // Room for execvpe's own work: a path buffer, and an argument vector when it runs a
    // script through /bin/sh.
    let page = 4096;
    let stack_size = (64 * 1024 + argv_ptrs.len() * 8 + 4 * page).next_multiple_of(page);
    let mut stack = STACK.lock().unwrap_or_else(|e| e.into_inner());
    let stack = stack.at_least(stack_size)?;
    let pid = {
        // SAFETY: sigset_t is plain data, filled by sigfillset before use; blocking every
        // signal keeps retry's handlers from running in the child, which shares its memory.
        let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
        let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
        unsafe {
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        }
        // SAFETY: `child` reads only `args`, which outlives the call (the parent is
        // suspended until the child execs or exits), and runs on `stack`'s top.
        let pid = unsafe {
            libc::clone(
                child,
                stack.top(),
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                std::ptr::from_ref(&args).cast_mut().cast::<c_void>(),
            )
        };
        let clone_error = io::Error::last_os_error();
        // SAFETY: restores the mask saved above.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        }
        if pid < 0 {
            return Err(clone_error);
        }
        Pid::from_raw(pid)
    };
    drop(child_ends);
    let failed = error.load(Ordering::SeqCst);
    if failed != 0 {
        // The child has exited with 127 without exec'ing: reap it and say why.
        while let Err(nix::errno::Errno::EINTR) = nix::sys::wait::waitpid(pid, None) {}
        return Err(io::Error::from_raw_os_error(failed));
    }
    let [_, stdout, stderr] = ours;
    Ok(Spawned {
        pid,
        stdout,
        stderr,
    })
}

/// The child, between clone and execve.
extern "C" fn child(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` points at the parent's `ChildArgs`, alive while the parent is
    // suspended; every call below is async-signal-safe and allocates nothing.
    unsafe {
        let args = &*(arg as *const ChildArgs);
        let fail = |args: &ChildArgs| -> c_int {
            let errno = *libc::__errno_location();
            (*args.error).store(if errno == 0 { libc::EIO } else { errno }, Ordering::SeqCst);
            libc::_exit(127)
        };
        // Handlers retry installed are retry's code and must not run here; ignored
        // signals (SIGPIPE, SIGTTOU) are reset as any program expects to find them.
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        for sig in std::slice::from_raw_parts(args.reset, args.reset_len) {
            libc::sigaction(*sig, &default, std::ptr::null_mut());
        }
        // Its own process group; in the foreground, the terminal's too (SIGTTOU is
        // still blocked, so the hand-over cannot stop it).
        if libc::setpgid(0, 0) != 0 {
            return fail(args);
        }
        if args.foreground {
            libc::tcsetpgrp(0, libc::getpid());
        }
        for (target, fd) in args.fds.iter().enumerate() {
            if *fd >= 0 && libc::dup2(*fd, target as c_int) < 0 {
                return fail(args);
            }
        }
        // If retry is SIGKILLed, the kernel ends the attempt's main process too.
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
            return fail(args);
        }
        if libc::getppid() != args.parent {
            // retry died before the line above took effect.
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::execvpe(args.program, args.argv, args.envp);
        fail(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::wait::{WaitStatus, waitpid};
    use std::io::Read;

    fn argv(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    fn spec(argv: &[OsString]) -> Spec<'_> {
        Spec {
            argv,
            env: vec![],
            stdin: Stdio::Null,
            stdout: Stdio::Piped,
            stderr: Stdio::Null,
            foreground: false,
            reset_signals: &[libc::SIGPIPE],
        }
    }

    fn output(mut spawned: Spawned) -> (String, WaitStatus) {
        let mut text = String::new();
        std::fs::File::from(spawned.stdout.take().unwrap())
            .read_to_string(&mut text)
            .unwrap();
        (text, waitpid(spawned.pid, None).unwrap())
    }

    #[test]
    fn runs_a_command_found_on_path_with_the_environment_changed() {
        let words = argv(&[
            "sh",
            "-c",
            "echo \"$RETRY_TEST_SET/${HOME+home}/$(ps -o pgid= -p $$)/$$\"",
        ]);
        let mut s = spec(&words);
        s.env = vec![("RETRY_TEST_SET", Some("set".into())), ("HOME", None)];
        let spawned = spawn(s).unwrap();
        let pid = spawned.pid;
        let (text, status) = output(spawned);
        assert_eq!(status, WaitStatus::Exited(pid, 0));
        let fields: Vec<&str> = text.trim().split('/').collect();
        assert_eq!(fields[..2], ["set", ""], "{text}");
        // Its own process group.
        assert_eq!(fields[2].trim(), fields[3], "{text}");
    }

    #[test]
    fn a_missing_or_unexecutable_command_is_an_error() {
        let words = argv(&["retry-test-no-such-command"]);
        let err = spawn(spec(&words)).err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        let err = spawn(spec(&argv(&["/etc/passwd"]))).err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
    }

    #[test]
    fn a_nul_byte_is_refused_before_anything_starts() {
        let words = vec![OsString::from("echo"), OsString::from("a\0b")];
        assert_eq!(
            spawn(spec(&words)).err().unwrap().kind(),
            io::ErrorKind::InvalidInput
        );
    }
}
