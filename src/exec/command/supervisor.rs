//! Waits for one attempt's main process: enforces `--timeout` and the
//! `--kill-after` escalation, passes retry's stopping signals on, stops the
//! attempt when retry's own plumbing fails or its lock is lost, and follows a
//! Ctrl-Z from the terminal. Every one of those ends the attempt's whole process
//! tree ([`procs::Tree`]), not only its group. Starting the command, its output and
//! how the ending is classified belong to the executor in `mod.rs`; hooks are
//! waited for the same way ([`exec::hook`](crate::exec::hook)).

use std::time::{Duration, Instant};

use super::terminal::stdin_tty;
use crate::classify::command::CommandEnd;
use crate::domain::{self, ExitStatus};
use crate::exec::procs::{self, Tree};
use crate::signals;
use crate::streams::Fault;
use crate::sys::{self, ChildState, Signal};

pub(crate) struct Supervised {
    pub end: CommandEnd,
    pub timed_out: bool,
    pub interrupted_by: Option<domain::Signal>,
    /// The run's lock was lost while the process ran, and it was ended for that.
    pub lock_lost: bool,
    pub ran: Duration,
    /// A timed-out process's own status (its exit code, or 128+N for signal N), which
    /// `--preserve-status` exits with.
    pub own_status: Option<ExitStatus>,
    /// How long after the timeout's signal the SIGKILL of `--kill-after` ended it.
    pub killed_later: Option<Duration>,
}

/// Waits for one attempt's (or hook's) main process, enforcing its timeout,
/// passing on stopping signals, and ending its whole [`Tree`] when retry's own
/// plumbing fails (`fault`) or the run's lock is lost. Every ending goes through
/// the tree, so the group and what left it get each signal together and SIGKILL at
/// one deadline: the earliest that any cause set.
pub(crate) struct Supervisor<'a> {
    pub tree: &'a Tree,
    /// What the timeout sends first (`--signal`, SIGTERM unless given).
    pub timeout_signal: Signal,
    pub kill_after: Duration,
    /// How long a process that got retry's stopping signal has before SIGKILL.
    pub signal_grace: Duration,
    pub foreground: bool,
    pub fault: &'a Fault,
    /// Stop the process when the run's lock is lost (an attempt must not go on
    /// without it; a hook that reports the loss must).
    pub ends_on_lost_lock: bool,
}

/// How soon after its SIGTERM a process ended for a lost lock gets SIGKILL: within
/// the lock's own limit (a lease must be free of it before the server can hand the
/// lease on), and never later than `kill_after`.
pub(crate) fn lost_lock_grace(kill_after: Duration) -> Duration {
    signals::lost_lock_kill_within().map_or(kill_after, |w| w.min(kill_after))
}

/// What the supervisor has done so far.
#[derive(Default)]
struct Seen {
    timed_out: bool,
    /// When the timeout's signal went, and the SIGKILL it set was due.
    timed_out_at: Option<(Instant, Option<Instant>)>,
    forwarded: Option<domain::Signal>,
    faulted: bool,
    lock_lost: bool,
}

impl Supervisor<'_> {
    pub fn run(&self, timeout: Option<Duration>) -> anyhow::Result<Supervised> {
        let start = Instant::now();
        let deadline = timeout.map(|t| start + t);
        let pid = self.tree.leader();
        let mut seen = Seen::default();
        loop {
            match sys::try_wait(pid) {
                Ok(Some(ChildState::Exited(code))) => {
                    let code = ExitStatus::from_wait(code);
                    // Stopped by the timeout however it ended: exit 124 to every rule.
                    let end = if seen.timed_out {
                        CommandEnd::TimedOut
                    } else {
                        CommandEnd::Exited(code)
                    };
                    return Ok(self.ended(end, &seen, start, (code, false)));
                }
                Ok(Some(ChildState::Signaled(sig))) => {
                    let killed = sig == Signal::SIGKILL as i32;
                    let sig = domain::Signal::new(sig);
                    let end = if seen.timed_out {
                        CommandEnd::TimedOut
                    } else {
                        CommandEnd::Signaled(sig)
                    };
                    let typed = self.foreground
                        && seen.forwarded.is_none()
                        && !seen.timed_out
                        && is_keyboard_signal(sig);
                    // Ctrl-C typed at the terminal reaches the command, not retry: it still means stop.
                    if typed {
                        seen.forwarded = Some(sig);
                    }
                    let own = (ExitStatus::of_signal(sig), killed);
                    return Ok(self.ended(end, &seen, start, own));
                }
                Ok(Some(ChildState::Stopped)) if self.foreground => self.suspend(),
                Ok(_) => {}
                // retry's own failure: never passed off as the command's exit status.
                Err(e) => {
                    self.tree.kill_now();
                    return Err(anyhow::anyhow!(
                        "cannot wait for the command (process {pid}): {e}"
                    ));
                }
            }
            // Adopted orphans that exited are reaped at once, so none lingers as a zombie; only
            // a SIGCHLD says one may have, and the /proc scan costs more than the rest of start-up.
            let child_changed = signals::child_changed();
            if child_changed || !signals::installed() {
                procs::reap_adopted(Some(pid));
            }
            let next = self.watch(Instant::now(), deadline, &mut seen);
            if !child_changed {
                sys::pause_for_child(pid, next);
            }
        }
    }

    /// Acts on whatever happened since the last look (a fault, a signal, a lost lock,
    /// the timeout, a SIGKILL that is due); returns how long to wait before the next.
    fn watch(&self, now: Instant, deadline: Option<Instant>, seen: &mut Seen) -> Duration {
        if !seen.faulted && self.fault.get().is_some() {
            seen.faulted = true;
            self.tree.terminate(now + self.kill_after);
        }
        if let Some(sig) = self.tree.pass_on_signals(now, self.signal_grace) {
            seen.forwarded = Some(sig);
        }
        if self.ends_on_lost_lock && !seen.lock_lost && signals::lock_lost().is_some() {
            // Without its lock the attempt must not go on: end it within the lock's limit,
            // whatever else began ending it.
            seen.lock_lost = true;
            self.tree.terminate(now + lost_lock_grace(self.kill_after));
        }
        let stopping = seen.lock_lost || seen.forwarded.is_some();
        if !seen.timed_out && !stopping && deadline.is_some_and(|d| now >= d) {
            seen.timed_out = true;
            self.tree
                .terminate_with(self.timeout_signal, now + self.kill_after);
            seen.timed_out_at = Some((now, self.tree.kill_at()));
        }
        self.tree.escalate(now);
        [deadline.filter(|_| !seen.timed_out), self.tree.kill_at()]
            .into_iter()
            .flatten()
            .map(|t| t.saturating_duration_since(now))
            .min()
            .unwrap_or(Duration::from_secs(1))
            .clamp(Duration::from_millis(1), Duration::from_secs(1))
    }

    /// `own` is the process's status as a shell sees it, and whether SIGKILL ended it.
    fn ended(
        &self,
        end: CommandEnd,
        seen: &Seen,
        start: Instant,
        (own, killed): (ExitStatus, bool),
    ) -> Supervised {
        // A SIGKILL the timeout's escalation sent, not one --signal KILL sent at once.
        let killed_later = match seen.timed_out_at {
            Some((at, Some(kill_at))) if killed && self.timeout_signal != Signal::SIGKILL => {
                Some(kill_at.saturating_duration_since(at))
            }
            _ => None,
        };
        Supervised {
            end,
            timed_out: seen.timed_out,
            interrupted_by: seen.forwarded,
            lock_lost: seen.lock_lost,
            ran: start.elapsed(),
            own_status: seen.timed_out.then_some(own),
            killed_later,
        }
    }

    /// The command was stopped from the terminal (Ctrl-Z): stop retry too, so the
    /// shell gets its job back, and resume the command when retry is continued.
    fn suspend(&self) {
        sys::stop_in_turn(stdin_tty(), self.tree.leader());
    }
}

fn is_keyboard_signal(sig: domain::Signal) -> bool {
    sig == domain::Signal::INT || sig == domain::Signal::QUIT
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
        let tree = Tree::new(pid, procs::Before::now());
        let supervised = Supervisor {
            tree: &tree,
            timeout_signal: Signal::SIGTERM,
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
