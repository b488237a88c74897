//! The one way retry starts a process, for attempts and hooks alike: std's `Command`
//! (fork, then exec), in a process group of its own, with what posix_spawn promises
//! and more, done in the child before the exec: every signal disposition retry
//! changed back to what retry inherited, the signal mask retry inherited, the
//! terminal's foreground when the attempt gets the terminal, and the parent-death
//! signal where the system has one. Every signal is blocked in retry from before the
//! fork until the child has exec'd, so none of retry's handlers can run in the child,
//! and the fork lock is held, so no descriptor half made reaches the child.
//!
//! If the process cannot be started, the terminal is handed back to retry at once,
//! before the error goes anywhere. What the error means (not found, not executable,
//! out of processes or memory) is the caller's to say.

use std::ffi::OsString;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::Command;

use nix::sys::signal::{Signal, kill};
use nix::unistd::{Pid, getpid, getppid, tcsetpgrp};

use super::terminal::{reclaim_terminal, stdin_tty};
use crate::sys;

/// What one of the child's descriptors 0, 1 and 2 is.
pub(crate) enum Stdio {
    /// retry's own.
    Inherit,
    /// /dev/null.
    Null,
    /// This descriptor (retry keeps no copy once the child has started).
    Fd(OwnedFd),
    /// A new pipe; retry gets the other end.
    Piped,
}

impl From<Stdio> for std::process::Stdio {
    fn from(stdio: Stdio) -> Self {
        match stdio {
            Stdio::Inherit => std::process::Stdio::inherit(),
            Stdio::Null => std::process::Stdio::null(),
            Stdio::Fd(fd) => std::process::Stdio::from(fd),
            Stdio::Piped => std::process::Stdio::piped(),
        }
    }
}

/// The process to start: what runs, with which environment changes and descriptors.
pub(crate) struct Spec<'a> {
    /// The program (looked up in PATH unless it holds a `/`) and its arguments.
    pub argv: &'a [OsString],
    /// Variables set (`Some`) or removed (`None`) on top of retry's environment, in
    /// order: a later entry for the same name wins.
    pub env: Vec<(&'a str, Option<OsString>)>,
    pub stdin: Stdio,
    pub stdout: Stdio,
    pub stderr: Stdio,
    /// Take the terminal's foreground (stdin is retry's controlling terminal and
    /// retry is in its foreground).
    pub foreground: bool,
}

/// A started process and retry's ends of its piped streams.
pub(crate) struct Spawned {
    pub pid: Pid,
    pub stdin: Option<OwnedFd>,
    pub stdout: Option<OwnedFd>,
    pub stderr: Option<OwnedFd>,
}

/// Starts `spec`'s process; `Err` is why it could not be started (the OS error of the
/// fork, the exec or a step between them).
pub(crate) fn spawn(spec: Spec<'_>) -> io::Result<Spawned> {
    let Some((program, args)) = spec.argv.split_first() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "no command"));
    };
    let mut command = Command::new(program);
    command.args(args);
    for (name, value) in spec.env {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    command
        .stdin(spec.stdin)
        .stdout(spec.stdout)
        .stderr(spec.stderr)
        .process_group(0);
    let setup = ChildSetup {
        signals: sys::child_signals(),
        foreground: spec.foreground,
        parent: getpid(),
    };
    // SAFETY: `ChildSetup::run` only makes system calls through thin wrappers, taking
    // no lock and allocating nothing (see there), which is what a closure run after a
    // fork in a process that may have other threads must keep to.
    unsafe {
        command.pre_exec(move || setup.run());
    }
    let started = {
        let _blocked = sys::block_all_signals()?;
        let _fork = sys::fork_guard();
        let started = command.spawn();
        if started.is_err() && spec.foreground {
            // The child may have taken the terminal before it failed: nobody would
            // get a Ctrl-C typed from now on.
            reclaim_terminal();
        }
        started
    };
    let mut child = started?;
    Ok(Spawned {
        pid: Pid::from_raw(child.id() as i32),
        stdin: child.stdin.take().map(OwnedFd::from),
        stdout: child.stdout.take().map(OwnedFd::from),
        stderr: child.stderr.take().map(OwnedFd::from),
    })
}

/// What the child does between fork and exec, after std has set up its descriptors
/// and its process group (and reset SIGPIPE, which is redone here as inherited).
struct ChildSetup {
    signals: sys::ChildSignals,
    foreground: bool,
    parent: Pid,
}

impl ChildSetup {
    /// Runs in the forked child with every signal blocked. Each call here is a thin
    /// wrapper of one system call (sigaction, tcsetpgrp, getpid, prctl or procctl,
    /// getppid, kill, sigprocmask), none takes a lock or allocates, and errors are OS
    /// error numbers.
    fn run(&self) -> io::Result<()> {
        self.signals.restore_dispositions()?;
        if self.foreground {
            // SIGTTOU is blocked, so taking the terminal from the background cannot stop
            // the child; should it fail, the command runs in the background, as a job
            // started with `&` does.
            let _ = tcsetpgrp(stdin_tty(), getpid());
        }
        if sys::PARENT_DEATH_SIGNAL {
            // If retry is SIGKILLed, the kernel ends the command's main process too.
            sys::set_parent_death_signal(Signal::SIGKILL)?;
            if getppid() != self.parent {
                // retry died before the line above took effect.
                let _ = kill(getpid(), Signal::SIGKILL);
            }
        }
        // Last: a signal that arrived meanwhile is delivered as the command will see it.
        self.signals.restore_mask()
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
        s.env = vec![
            ("RETRY_TEST_SET", Some("first".into())),
            ("HOME", None),
            ("RETRY_TEST_SET", Some("set".into())),
        ];
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

    #[test]
    fn piped_stdin_reaches_the_child() {
        let words = argv(&["cat"]);
        let mut s = spec(&words);
        s.stdin = Stdio::Piped;
        let mut spawned = spawn(s).unwrap();
        let stdin = spawned.stdin.take().unwrap();
        std::io::Write::write_all(&mut std::fs::File::from(stdin), b"fed").unwrap();
        let (text, _) = output(spawned);
        assert_eq!(text, "fed");
    }
}
