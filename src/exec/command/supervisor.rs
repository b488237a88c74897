//! Waits for one attempt's process group: enforces `--timeout` and the
//! `--kill-after` escalation, passes retry's stopping signals on, stops the
//! attempt when retry's own plumbing fails or its lock is lost, and follows a
//! Ctrl-Z from the terminal. Starting the command, its output and how the
//! ending is classified belong to the executor in `mod.rs`; hooks are waited
//! for the same way (`exec::hook`).

use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{self, Signal, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, tcsetpgrp};

use super::terminal::{reclaim_terminal, stdin_tty};
use crate::classify::command::CommandEnd;
use crate::domain::{self, ExitStatus};
use crate::exec::procs;
use crate::io::Fault;
use crate::signals;

pub(crate) struct Supervised {
    pub end: CommandEnd,
    pub timed_out: bool,
    pub interrupted_by: Option<domain::Signal>,
    pub ran: Duration,
}

/// Waits for one attempt's process, enforcing its time limit, passing on
/// stopping signals to its process group, and stopping it when retry's own
/// plumbing fails (`fault`).
pub(crate) struct Supervisor<'a> {
    pub pid: Pid,
    pub kill_after: Duration,
    /// How long a process that got retry's stopping signal has before SIGKILL.
    pub signal_grace: Duration,
    pub foreground: bool,
    pub fault: &'a Fault,
    /// Stop the process when the run's lock is lost (an attempt must not go on
    /// without it; a hook that reports the loss must).
    pub ends_on_lost_lock: bool,
}

impl Supervisor<'_> {
    pub fn run(&self, timeout: Option<Duration>) -> anyhow::Result<Supervised> {
        let start = Instant::now();
        let deadline = timeout.map(|t| start + t);
        let mut timed_out = false;
        let mut forwarded: Option<domain::Signal> = None;
        let mut faulted = false;
        let mut escalate_at: Option<Instant> = None;
        let mut lock_lost = false;
        loop {
            match waitpid(
                self.pid,
                Some(WaitPidFlag::WNOHANG | WaitPidFlag::WUNTRACED),
            ) {
                Ok(WaitStatus::Exited(_, code)) => {
                    let end = CommandEnd::Exited(ExitStatus::from_wait(code));
                    return Ok(self.ended(end, timed_out, forwarded, start));
                }
                Ok(WaitStatus::Signaled(_, sig, _)) => {
                    let sig = domain::Signal::new(sig as i32);
                    let end = if timed_out {
                        CommandEnd::TimedOut
                    } else {
                        CommandEnd::Signaled(sig)
                    };
                    let typed = self.foreground
                        && forwarded.is_none()
                        && !timed_out
                        && is_keyboard_signal(sig);
                    // Ctrl-C typed at the terminal reaches the command, not retry: it still means stop.
                    let forwarded = if typed { Some(sig) } else { forwarded };
                    return Ok(self.ended(end, timed_out, forwarded, start));
                }
                Ok(WaitStatus::Stopped(_, _)) if self.foreground => self.suspend(),
                Ok(_) => {}
                Err(Errno::EINTR) => continue,
                // retry's own failure: never passed off as the command's exit status.
                Err(e) => {
                    send(self.pid, domain::Signal::KILL);
                    return Err(anyhow::anyhow!(
                        "cannot wait for the command (process {}): {e}",
                        self.pid
                    ));
                }
            }
            // Adopted orphans that exited are reaped at once, so none lingers as a zombie; only
            // a SIGCHLD says one may have, and the /proc scan costs more than the rest of start-up.
            let child_changed = signals::child_changed();
            if child_changed || !signals::installed() {
                procs::reap_adopted(Some(self.pid));
            }
            let now = Instant::now();
            if !faulted && self.fault.get().is_some() {
                faulted = true;
                self.terminate(now, &mut escalate_at);
            }
            if let Some(sig) = signals::pending() {
                if forwarded.is_none() {
                    forwarded = Some(sig);
                    send(self.pid, sig);
                    escalate_at.get_or_insert(now + self.signal_grace);
                } else if signals::take_repeat().is_some() {
                    // A second signal: stop waiting politely.
                    send(self.pid, domain::Signal::KILL);
                }
            }
            if self.ends_on_lost_lock
                && !lock_lost
                && forwarded.is_none()
                && signals::lock_lost().is_some()
            {
                // Without its lock the attempt must not go on: end it like a timeout, and
                // within the lease's limit, before the server can hand the lease on.
                lock_lost = true;
                if let Some(within) = signals::lost_lock_kill_within() {
                    escalate_at = Some(now + within.min(self.kill_after));
                }
                self.terminate(now, &mut escalate_at);
            }
            if !timed_out && !lock_lost && forwarded.is_none() && deadline.is_some_and(|d| now >= d)
            {
                timed_out = true;
                self.terminate(now, &mut escalate_at);
            }
            if escalate_at.is_some_and(|t| now >= t) {
                send(self.pid, domain::Signal::KILL);
                escalate_at = None;
            }
            let next = [deadline.filter(|_| !timed_out), escalate_at]
                .into_iter()
                .flatten()
                .map(|t| t.saturating_duration_since(now))
                .min()
                .unwrap_or(Duration::from_secs(1))
                .clamp(Duration::from_millis(1), Duration::from_secs(1));
            if !child_changed {
                crate::wait::pause(next);
            }
        }
    }

    /// Ends the attempt as a timeout does: SIGTERM, SIGKILL after `--kill-after`.
    fn terminate(&self, now: Instant, escalate_at: &mut Option<Instant>) {
        send(self.pid, domain::Signal::TERM);
        // As GNU timeout does: a stopped command acts on SIGTERM only once continued.
        send(self.pid, domain::Signal::CONT);
        escalate_at.get_or_insert(now + self.kill_after);
    }

    fn ended(
        &self,
        end: CommandEnd,
        timed_out: bool,
        forwarded: Option<domain::Signal>,
        start: Instant,
    ) -> Supervised {
        Supervised {
            end,
            timed_out,
            interrupted_by: forwarded,
            ran: start.elapsed(),
        }
    }

    /// The command was stopped from the terminal (Ctrl-Z): stop retry too, so the
    /// shell gets its job back, and resume the command when retry is continued.
    fn suspend(&self) {
        reclaim_terminal();
        let _ = signal::raise(Signal::SIGSTOP);
        let _ = tcsetpgrp(stdin_tty(), self.pid);
        let _ = killpg(self.pid, Signal::SIGCONT);
    }
}

fn is_keyboard_signal(sig: domain::Signal) -> bool {
    sig == domain::Signal::INT || sig == domain::Signal::QUIT
}

fn send(pgid: Pid, sig: domain::Signal) {
    if let Ok(sig) = Signal::try_from(sig.number()) {
        let _ = killpg(pgid, sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_that_fails_is_retrys_own_error_not_an_exit_status() {
        // A process in a group of its own that is not our child (its parent, sh, has
        // exited): waitpid fails with ECHILD, and the supervisor ends that group only.
        let out = std::process::Command::new("sh")
            .args(["-c", "setsid sleep 30 </dev/null >/dev/null 2>&1 & echo $!"])
            .output()
            .unwrap();
        let pid: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        let fault = Fault::default();
        let supervised = Supervisor {
            pid: Pid::from_raw(pid),
            kill_after: Duration::from_millis(10),
            signal_grace: Duration::from_millis(10),
            foreground: false,
            fault: &fault,
            ends_on_lost_lock: true,
        }
        .run(None);
        let err = supervised.err().expect("an error, not an exit status");
        assert!(
            err.to_string().contains("cannot wait for the command"),
            "{err}"
        );
    }
}
