//! Starting a process on Unix: std's `Command` (fork, then exec) in a process group of
//! its own, with what posix_spawn promises and more, done in the child before the exec:
//! every signal disposition retry changed back to what retry inherited (but the signal its
//! timeout sends, which starts at its default), the signal mask
//! retry inherited, the terminal's foreground when asked, and the parent-death signal
//! where the system has one. Every signal is blocked in retry from before the fork until
//! the child has exec'd, so none of retry's handlers can run in the child, and the fork
//! lock is held, so no descriptor half made reaches the child.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

use nix::sys::signal::{Signal, kill};
use nix::unistd::{Pid, getpid, getppid, tcsetpgrp};

use super::signals::{ChildSignals, block_all, for_child};

/// The shell that runs a command line of the user's, and the flag that hands it the line.
pub const SHELL: [&str; 2] = ["/bin/sh", "-c"];

/// A crontab's `SHELL=` chooses the shell of its lines, as cron's does.
pub const SHELL_LINES: bool = true;

/// A process started in a group of its own.
pub struct Started {
    pub child: Child,
}

/// A command that runs `program` with `args`, each handed over as it is.
pub fn new_command(program: &std::ffi::OsStr, args: &[std::ffi::OsString]) -> Command {
    let mut command = Command::new(program);
    command.args(args);
    command
}

/// Starts `command` in a process group of its own, in the terminal's foreground when
/// `foreground` (`tty` is the terminal), with `timeout_signal` (what its timeout
/// sends) at its default; if it cannot start, the terminal is handed back to retry at
/// once.
pub fn start(
    mut command: Command,
    foreground: bool,
    timeout_signal: Signal,
) -> io::Result<Started> {
    command.process_group(0);
    let setup = ChildSetup {
        signals: for_child(timeout_signal),
        foreground,
        parent: getpid(),
    };
    // SAFETY: `ChildSetup::run` only makes system calls through thin wrappers, taking
    // no lock and allocating nothing (see there), which is what a closure run after a
    // fork in a process that may have other threads must keep to.
    unsafe {
        command.pre_exec(move || setup.run());
    }
    let started = {
        let _blocked = block_all()?;
        let _fork = super::fork_guard();
        let started = command.spawn();
        if started.is_err() && foreground {
            // The child may have taken the terminal before it failed: nobody would
            // get a Ctrl-C typed from now on.
            super::reclaim_terminal(crate::sys::std_stream(0));
        }
        started
    };
    Ok(Started { child: started? })
}

/// Starts `command` in a process group of its own with nothing run between fork and
/// exec (so the C library may start it with `posix_spawn`): for a process that ends
/// itself when retry ends, such as a scheduler's slot run, which sets its own
/// catchable parent-death signal.
pub fn start_tied(mut command: Command) -> io::Result<Started> {
    command.process_group(0);
    let _fork = super::fork_guard();
    Ok(Started {
        child: command.spawn()?,
    })
}

/// What the child does between fork and exec, after std has set up its descriptors
/// and its process group (and reset SIGPIPE, which is redone here as inherited).
struct ChildSetup {
    signals: ChildSignals,
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
            let _ = tcsetpgrp(crate::sys::std_stream(0), getpid());
        }
        if crate::sys::PARENT_DEATH_SIGNAL {
            // If retry is SIGKILLed, the kernel ends the command's main process too.
            // One system call: safe between fork and exec.
            crate::sys::os::set_parent_death_signal(Signal::SIGKILL)?;
            if getppid() != self.parent {
                // retry died before the line above took effect.
                let _ = kill(getpid(), Signal::SIGKILL);
            }
        }
        // Last: a signal that arrived meanwhile is delivered as the command will see it.
        self.signals.restore_mask()
    }
}
