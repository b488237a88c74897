//! `retry --schedule` in the background: a [`Schedule`] builds the command line from what
//! a test names (the schedule, the job, the catch-up, the state, then the command), and
//! a [`Scheduler`] is that scheduler running, its stderr in a file, stopped by SIGTERM
//! and never left behind by a test that fails midway.

use std::fs;
use std::process::{Child, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::run::{Run, exited_within, retry};
use super::scratch::Scratch;

/// A scheduler's command line, built up: `--schedule CRON`, the options a test names,
/// and, at [`Self::start`] or [`Self::command`], `-- COMMAND`.
#[derive(Clone, Debug)]
pub struct Schedule {
    args: Vec<String>,
}

impl Schedule {
    /// `--schedule CRON`.
    pub fn new(cron: &str) -> Schedule {
        Schedule {
            args: vec!["--schedule".into(), cron.into()],
        }
    }

    /// `--schedule '@every 1s' --job JOB --catch-up none`: slots every second from the
    /// next one on, the scheduler most tests start.
    pub fn every_second(job: &str) -> Schedule {
        Schedule::new("@every 1s").job(job).catch_up("none")
    }

    /// `--job NAME`.
    pub fn job(self, name: &str) -> Schedule {
        self.args(&["--job", name])
    }

    /// `--catch-up POLICY`.
    pub fn catch_up(self, policy: &str) -> Schedule {
        self.args(&["--catch-up", policy])
    }

    /// `--catch-up-window WINDOW`.
    pub fn window(self, window: &str) -> Schedule {
        self.args(&["--catch-up-window", window])
    }

    /// `--state STATE`.
    pub fn state(self, state: &str) -> Schedule {
        self.args(&["--state", state])
    }

    /// Options as written.
    pub fn args(mut self, extra: &[&str]) -> Schedule {
        self.args.extend(extra.iter().map(|a| a.to_string()));
        self
    }

    /// The whole command line: the options, then `-- COMMAND`.
    pub fn command(&self, command: &[&str]) -> Vec<String> {
        let mut all = self.args.clone();
        all.push("--".into());
        all.extend(command.iter().map(|a| a.to_string()));
        all
    }

    /// `retry --dry-run` with these options on `COMMAND`, run to its end.
    pub fn dry_run(&self, command: &[&str]) -> Run {
        retry().arg("--dry-run").args(self.command(command)).run()
    }

    /// Starts the scheduler on `COMMAND`, its stderr in `DIR/LOG.log`.
    pub fn start(&self, dir: &Scratch, log: &str, command: &[&str]) -> Scheduler {
        let args = self.command(command);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Scheduler::start(dir, log, &args)
    }
}

/// A scheduler running in the background, its stderr in a file.
pub struct Scheduler {
    pub child: Child,
    pub log: std::path::PathBuf,
}

impl Scheduler {
    /// `retry ARGS`, its stderr in `DIR/NAME.log`.
    pub fn start(dir: &Scratch, name: &str, args: &[&str]) -> Scheduler {
        let log = dir.path(&format!("{name}.log"));
        let child = retry()
            .args(args)
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).unwrap())
            .spawn();
        Scheduler { child, log }
    }

    /// The log so far.
    pub fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap()
    }

    /// Waits up to `limit` for the log to say `text`; whether it did.
    pub fn logs_within(&self, limit: Duration, text: &str) -> bool {
        super::wait_until(limit, || self.log().contains(text))
    }

    /// SIGTERM, then the exit status and the log.
    pub fn stop(mut self) -> (i32, String) {
        kill(Pid::from_raw(self.child.id() as i32), Signal::SIGTERM).unwrap();
        let status = self.child.wait().unwrap();
        (super::status_of(&status), self.log())
    }

    pub fn child_alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// SIGKILL, then the log.
    pub fn kill9(mut self) -> String {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.log()
    }
}

impl Drop for Scheduler {
    /// A test that failed midway leaves no scheduler behind: SIGTERM, then SIGKILL.
    fn drop(&mut self) {
        end_child(&mut self.child);
    }
}

/// Ends `child` if it still runs: SIGTERM, then SIGKILL after 5 s.
pub fn end_child(child: &mut Child) {
    if child.try_wait().ok().flatten().is_some() {
        return;
    }
    let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
    status_within(child, Duration::from_secs(5));
}

/// Waits for a scheduler to exit, for up to `limit`: its status, or `None` when it
/// was still running and was killed at the limit.
pub fn status_within(child: &mut Child, limit: Duration) -> Option<i32> {
    let status = exited_within(child, limit);
    if status.is_none() {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    status
}
