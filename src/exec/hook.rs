//! Runs one hook process: `sh -c CMD` in its own process group, started through
//! the attempts' spawn path (`exec::command::spawn`, with the same guarantees), its
//! stdout and stderr on retry's stderr (never the command's stdout), the report or
//! nothing on stdin. A watchdog thread cuts it at its time limit (SIGTERM to the group,
//! SIGKILL a second later) even while the engine sleeps beside it; waiting for
//! it is command mode's supervisor, which passes retry's stopping signals on.
//! What a hook is told, and when it runs, is `hooks`' job.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::waitpid;
use nix::unistd::Pid;

use crate::classify::command::CommandEnd;
use crate::domain::{self, ExitStatus};
use crate::exec::{
    command::spawn, command::spawn::Spec, command::spawn::Stdio, command::supervisor::Supervisor,
};
use crate::io::Fault;

/// After the time limit's SIGTERM, the group has this long before SIGKILL (SPEC).
const KILL_AFTER: Duration = Duration::from_secs(1);
/// After retry's own stopping signal, so that retry exits within a second.
const SIGNAL_GRACE: Duration = Duration::from_millis(500);

/// How a hook ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookEnd {
    Exited(ExitStatus),
    Signaled(domain::Signal),
    /// Cut at its time limit.
    TimedOut(Duration),
    /// retry received this stopping signal and passed it to the hook's group.
    Interrupted(domain::Signal),
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
    pub limit: Duration,
}

/// A hook that was started; [`RunningHook::wait`] ends it.
pub struct RunningHook {
    pid: Pid,
    watchdog: Arc<Watchdog>,
    thread: Option<JoinHandle<()>>,
    limit: Duration,
}

/// Starts the hook; `Err` says why it could not be started.
pub fn start(spec: HookSpec<'_>) -> Result<RunningHook, HookEnd> {
    let cannot = |e: std::io::Error| HookEnd::Failed(format!("cannot start sh: {e}"));
    let argv = [OsString::from("sh"), "-c".into(), spec.command.into()];
    // Its output is about the run, not the command's result: stderr for both.
    let stderr = crate::io::std_fd(2).try_clone_to_owned().map_err(cannot)?;
    // Every RETRY_* variable of retry's own environment goes first; the hook's are set after.
    let removed = spec.remove.iter().map(|name| (*name, None));
    let set = spec
        .env
        .iter()
        .map(|(name, v)| (name.as_str(), Some(v.clone())));
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
    })
    .map_err(cannot)?;
    if let (Some(stdin), Some(bytes)) = (child.stdin.take(), spec.stdin) {
        feed(stdin, bytes);
    }
    let pid = child.pid;
    let watchdog = Arc::new(Watchdog::default());
    let guard = Arc::clone(&watchdog);
    let limit = spec.limit;
    let thread = std::thread::Builder::new()
        .name("hook-watchdog".into())
        .spawn(move || guard.guard(pid, Instant::now() + limit));
    match thread {
        Ok(thread) => Ok(RunningHook {
            pid,
            watchdog,
            thread: Some(thread),
            limit,
        }),
        Err(e) => {
            // A hook nothing would cut at its limit must not run at all.
            let _ = killpg(pid, Signal::SIGKILL);
            let _ = waitpid(pid, None);
            Err(HookEnd::Failed(format!("cannot watch its time limit: {e}")))
        }
    }
}

/// Writes the hook's stdin from a thread of its own: a hook that never reads it
/// must not hold retry up (the write fails with EPIPE once the hook is gone).
fn feed(stdin: OwnedFd, bytes: Vec<u8>) {
    let _ = std::thread::Builder::new()
        .name("hook-stdin".into())
        .spawn(move || {
            let _ = File::from(stdin).write_all(&bytes);
        });
}

impl RunningHook {
    /// Waits for the hook to end; a stopping signal retry receives meanwhile is
    /// passed to the hook's group, which gets SIGKILL soon after.
    pub fn wait(mut self) -> HookEnd {
        let fault = Fault::default();
        let supervised = Supervisor {
            pid: self.pid,
            kill_after: KILL_AFTER,
            signal_grace: SIGNAL_GRACE,
            foreground: false,
            fault: &fault,
            ends_on_lost_lock: false,
        }
        .run(None);
        let timed_out = self.watchdog.finish();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let supervised = match supervised {
            Ok(s) => s,
            Err(e) => return HookEnd::Failed(format!("{e:#}")),
        };
        if timed_out || supervised.interrupted_by.is_some() {
            // Nothing of a hook that was cut short outlives it.
            let _ = killpg(self.pid, Signal::SIGKILL);
        }
        match (timed_out, supervised.interrupted_by, supervised.end) {
            (true, _, _) => HookEnd::TimedOut(self.limit),
            (false, Some(sig), _) => HookEnd::Interrupted(sig),
            (false, None, CommandEnd::Exited(code)) => HookEnd::Exited(code),
            (false, None, CommandEnd::Signaled(sig)) => HookEnd::Signaled(sig),
            (false, None, other) => HookEnd::Failed(format!("{other:?}")),
        }
    }
}

/// Cuts a hook at its time limit, from a thread, so that the limit holds while
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
    fn guard(&self, pgid: Pid, deadline: Instant) {
        if !self.sleep_until(deadline, |state| state.fired = true) {
            return;
        }
        send(pgid, &[Signal::SIGTERM, Signal::SIGCONT], self);
        if self.sleep_until(Instant::now() + KILL_AFTER, |_| {}) {
            send(pgid, &[Signal::SIGKILL], self);
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

    /// Stops the watchdog; whether it cut the hook at its limit.
    fn finish(&self) -> bool {
        let mut state = self.state.lock().expect("watchdog");
        state.done = true;
        self.wake.notify_all();
        state.fired
    }
}

/// Signals the group unless the watchdog was finished meanwhile.
fn send(pgid: Pid, sigs: &[Signal], watchdog: &Watchdog) {
    let state = watchdog.state.lock().expect("watchdog");
    if !state.done {
        for sig in sigs {
            let _ = killpg(pgid, *sig);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::process::Command;

    fn sleeper() -> (std::process::Child, Pid) {
        let child = Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = Pid::from_raw(child.id() as i32);
        (child, pid)
    }

    #[test]
    fn the_watchdog_sends_sigterm_at_the_limit() {
        let (mut child, pid) = sleeper();
        let watchdog = Arc::new(Watchdog::default());
        let guard = Arc::clone(&watchdog);
        let start = Instant::now();
        let thread = std::thread::spawn(move || {
            guard.guard(pid, Instant::now() + Duration::from_millis(50))
        });
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(Signal::SIGTERM as i32));
        assert!(start.elapsed() >= Duration::from_millis(50));
        assert!(watchdog.finish(), "it fired");
        thread.join().unwrap();
    }

    #[test]
    fn a_finished_watchdog_sends_nothing() {
        let (mut child, pid) = sleeper();
        let watchdog = Arc::new(Watchdog::default());
        let guard = Arc::clone(&watchdog);
        let thread = std::thread::spawn(move || {
            guard.guard(pid, Instant::now() + Duration::from_millis(100))
        });
        assert!(!watchdog.finish());
        thread.join().unwrap();
        std::thread::sleep(Duration::from_millis(150));
        assert!(child.try_wait().unwrap().is_none(), "still running");
        let _ = child.kill();
        let _ = child.wait();
    }
}
