//! Runs one hook process: `sh -c CMD` in its own process group, started through
//! the attempts' spawn path ([`exec::command::spawn`](crate::exec::command::spawn), with the same guarantees), its
//! stdout and stderr on retry's stderr (never the command's stdout), the report or
//! nothing on stdin. A hook is supervised as an attempt is: its processes are a
//! [`procs::Tree`](crate::exec::procs::Tree), so what leaves its group is ended with it. A watchdog thread cuts
//! it at its timeout (SIGTERM to the tree, SIGKILL a second later) even while the
//! engine sleeps beside it; waiting for it is command mode's supervisor, which
//! passes retry's stopping signals on and ends it when the run's lock is lost; when
//! its main process is gone, whatever it left is ended too. What a hook is told,
//! and when it runs, is `hooks`' work.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::classify::command::CommandEnd;
use crate::domain::{self, ExitStatus};
use crate::exec::command::{
    spawn, spawn::Spec, spawn::Stdio, supervisor::Supervisor, supervisor::lost_lock_grace,
};
use crate::exec::procs::{Before, Tree};
use crate::signals;
use crate::streams::Fault;

/// After the timeout's SIGTERM, the hook has this long before SIGKILL, and so has
/// what it leaves behind when it ends.
const KILL_AFTER: Duration = Duration::from_secs(1);
/// After retry's own stopping signal, so that retry exits within a second.
const SIGNAL_GRACE: Duration = Duration::from_millis(500);

/// How a hook ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookEnd {
    Exited(ExitStatus),
    Signaled(domain::Signal),
    /// Cut at its timeout.
    TimedOut(Duration),
    /// retry received this stopping signal and passed it to the hook's group.
    Interrupted(domain::Signal),
    /// The run's lock was lost while it ran (this says how), and it was ended.
    LockLost(String),
    /// retry could not start or wait for it.
    Failed(String),
}

/// What a hook runs with.
pub struct HookSpec<'a> {
    pub command: &'a str,
    /// Variables set for the hook (on top of retry's own environment).
    pub env: Vec<(String, OsString)>,
    /// Variables of retry's environment the hook must not see.
    pub remove: &'a [&'a str],
    /// Bytes for its stdin; `None` is /dev/null.
    pub stdin: Option<Vec<u8>>,
    /// `--hook-timeout`, cut to what is left of the run's time limit.
    pub timeout: Duration,
}

/// A hook that was started; [`RunningHook::wait`] ends it.
pub struct RunningHook {
    tree: Arc<Tree>,
    watchdog: Arc<Watchdog>,
    thread: Option<JoinHandle<()>>,
    timeout: Duration,
    /// A lock lost while the hook runs ends it; one lost before it began does not
    /// (the hook may be the one that reports the loss).
    ends_on_lost_lock: bool,
}

/// Starts the hook; `Err` says why it could not be started.
pub fn start(spec: HookSpec<'_>) -> Result<RunningHook, HookEnd> {
    let [shell, flag] = crate::sys::SHELL;
    let cannot = |e: std::io::Error| HookEnd::Failed(format!("cannot start {shell}: {e}"));
    let argv = [OsString::from(shell), flag.into(), spec.command.into()];
    // Its output is about the run, not the command's result: stderr for both.
    let stderr = crate::streams::std_fd(2)
        .try_clone_to_owned()
        .map_err(cannot)?;
    // Every RETRY_* variable of retry's own environment goes first; the hook's are set after.
    let removed = spec.remove.iter().map(|name| (*name, None));
    let set = spec
        .env
        .iter()
        .map(|(name, v)| (name.as_str(), Some(v.clone())));
    let before = Before::now();
    let mut child = spawn::spawn(Spec {
        argv: &argv,
        env: removed.chain(set).collect(),
        stdin: if spec.stdin.is_some() {
            Stdio::Piped
        } else {
            Stdio::Null
        },
        stdout: Stdio::Fd(stderr),
        stderr: Stdio::Inherit,
        foreground: false,
        // A hook's timeout sends SIGTERM.
        timeout_signal: crate::sys::Signal::SIGTERM,
    })
    .map_err(cannot)?;
    if let (Some(stdin), Some(bytes)) = (child.stdin.take(), spec.stdin) {
        feed(stdin, bytes);
    }
    let tree = Arc::new(Tree::new(child.pid, before));
    let watchdog = Arc::new(Watchdog::default());
    let (guard, guarded) = (Arc::clone(&watchdog), Arc::clone(&tree));
    let timeout = spec.timeout;
    let thread = std::thread::Builder::new()
        .name("hook-watchdog".into())
        .spawn(move || guard.guard(&guarded, Instant::now() + timeout));
    match thread {
        Ok(thread) => Ok(RunningHook {
            tree,
            watchdog,
            thread: Some(thread),
            timeout,
            ends_on_lost_lock: signals::lock_lost().is_none(),
        }),
        Err(e) => {
            // A hook nothing would cut at its timeout must not run at all.
            tree.kill_now();
            let _ = child.process.child.wait();
            tree.end(Duration::ZERO);
            Err(HookEnd::Failed(format!("cannot watch its timeout: {e}")))
        }
    }
}

/// Writes the hook's stdin from a thread of its own: a hook that never reads it
/// must not hold retry up (the write fails with EPIPE once the hook is gone).
fn feed(stdin: crate::sys::Owned, bytes: Vec<u8>) {
    let _ = std::thread::Builder::new()
        .name("hook-stdin".into())
        .spawn(move || {
            let _ = File::from(stdin).write_all(&bytes);
        });
}

impl RunningHook {
    /// Waits for the hook to end; a stopping signal retry receives meanwhile is
    /// passed to the hook's processes, which get SIGKILL soon after. Whatever the
    /// hook leaves behind is ended before this returns.
    pub fn wait(mut self) -> HookEnd {
        let fault = Fault::default();
        let supervised = Supervisor {
            tree: &self.tree,
            timeout_signal: crate::sys::Signal::SIGTERM,
            kill_after: KILL_AFTER,
            signal_grace: SIGNAL_GRACE,
            foreground: false,
            fault: &fault,
            ends_on_lost_lock: self.ends_on_lost_lock,
        }
        .run(None);
        let timed_out = self.watchdog.finish();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        // Nothing the hook started outlives it, in its group or out of it.
        let lost = self.ends_on_lost_lock && signals::lock_lost().is_some();
        let grace = if lost {
            lost_lock_grace(KILL_AFTER)
        } else {
            KILL_AFTER
        };
        self.tree.end(grace);
        let supervised = match supervised {
            Ok(s) => s,
            Err(e) => return HookEnd::Failed(format!("{e:#}")),
        };
        // A signal that came while what the hook left was being ended counts too.
        let interrupted = supervised.interrupted_by.or(self.tree.passed_on());
        let lock_lost = signals::lock_lost().filter(|_| supervised.lock_lost);
        match (timed_out, interrupted, lock_lost, supervised.end) {
            (_, Some(sig), _, _) => HookEnd::Interrupted(sig),
            (_, None, Some(lost), _) => HookEnd::LockLost(lost),
            (true, None, None, _) => HookEnd::TimedOut(self.timeout),
            (false, None, None, CommandEnd::Exited(code)) => HookEnd::Exited(code),
            (false, None, None, CommandEnd::Signaled(sig)) => HookEnd::Signaled(sig),
            (false, None, None, other) => HookEnd::Failed(format!("{other:?}")),
        }
    }
}

/// Cuts a hook at its timeout, from a thread, so that the timeout holds while
/// the engine sleeps. `wait` finishes it right after reaping the hook, before
/// retry starts anything that could be given the hook's process ID.
#[derive(Default)]
struct Watchdog {
    state: Mutex<WatchState>,
    wake: Condvar,
}

#[derive(Default)]
struct WatchState {
    done: bool,
    fired: bool,
}

impl Watchdog {
    fn guard(&self, tree: &Tree, deadline: Instant) {
        if !self.sleep_until(deadline, |state| state.fired = true) {
            return;
        }
        let kill_at = Instant::now() + KILL_AFTER;
        self.while_running(|| tree.terminate(kill_at));
        if self.sleep_until(kill_at, |_| {}) {
            self.while_running(|| tree.escalate(Instant::now()));
        }
    }

    /// Waits until `until` unless finished first; true (after `mark`) if the time came.
    fn sleep_until(&self, until: Instant, mark: impl FnOnce(&mut WatchState)) -> bool {
        let mut state = self.state.lock().expect("watchdog");
        loop {
            if state.done {
                return false;
            }
            let now = Instant::now();
            if now >= until {
                mark(&mut state);
                return true;
            }
            state = self
                .wake
                .wait_timeout(state, until - now)
                .expect("watchdog")
                .0;
        }
    }

    /// Runs `act` unless the watchdog was finished meanwhile (the hook was reaped, so
    /// its process ID may name another process).
    fn while_running(&self, act: impl FnOnce()) {
        let state = self.state.lock().expect("watchdog");
        if !state.done {
            act();
        }
    }

    /// Stops the watchdog; whether it cut the hook at its timeout.
    fn finish(&self) -> bool {
        let mut state = self.state.lock().expect("watchdog");
        state.done = true;
        self.wake.notify_all();
        state.fired
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn sleeper() -> (std::process::Child, Arc<Tree>) {
        let mut command = Command::new("sleep");
        command.arg("30");
        crate::sys::own_process_group(&mut command);
        let child = command.spawn().unwrap();
        let tree = Tree::new(child.id() as i32, Before::now());
        (child, Arc::new(tree))
    }

    #[test]
    fn the_watchdog_sends_sigterm_at_the_timeout() {
        let (mut child, tree) = sleeper();
        let watchdog = Arc::new(Watchdog::default());
        let guard = Arc::clone(&watchdog);
        let start = Instant::now();
        let thread = std::thread::spawn(move || {
            guard.guard(&tree, Instant::now() + Duration::from_millis(50))
        });
        let status = child.wait().unwrap();
        assert_eq!(
            crate::sys::exit_signal(&status),
            Some(crate::sys::Signal::SIGTERM as i32)
        );
        assert!(start.elapsed() >= Duration::from_millis(50));
        assert!(watchdog.finish(), "it fired");
        thread.join().unwrap();
    }

    #[test]
    fn a_finished_watchdog_sends_nothing() {
        let (mut child, tree) = sleeper();
        let watchdog = Arc::new(Watchdog::default());
        let guard = Arc::clone(&watchdog);
        let thread = std::thread::spawn(move || {
            guard.guard(&tree, Instant::now() + Duration::from_millis(100))
        });
        assert!(!watchdog.finish());
        thread.join().unwrap();
        std::thread::sleep(Duration::from_millis(150));
        assert!(child.try_wait().unwrap().is_none(), "still running");
        let _ = child.kill();
        let _ = child.wait();
    }
}
