//! Command mode: runs one attempt of a command in its own process group and
//! supervises it — the `--timeout` / `--kill-after` escalation, forwarding of
//! stopping signals, terminal hand-over for interactive commands, stdin replay and
//! output scanning — then classifies how it ended.

use std::ffi::OsString;
use std::io::{self, IsTerminal};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{self, SigHandler, Signal, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, getpgrp, getpid, getppid, setpgid, tcgetpgrp, tcsetpgrp};

use crate::classify::command::{
    CommandEnd, CommandRules, OutputFacts, OutputWatch, Stream, signal_name,
};
use crate::classify::profiles::{self, Profile};
use crate::classify::{Class, Verdict};
use crate::cli::Cli;
use crate::engine::{AttemptContext, AttemptReport, Executor, Outcome};
use crate::exec::RunInfo;
use crate::exec::procs;
use crate::exit::ExitCode;
use crate::io::Fault;
use crate::io::out::{Output, Stop, deliver_result};
use crate::io::pump::{Pump, Shared, Sink};
use crate::io::spool::{self, Spool};
use crate::io::stdin::StdinPlan;
use crate::{report, signals};

/// How long output threads get to drain after the command exits before leftover
/// processes that still hold the pipes are dealt with.
const DRAIN_GRACE: Duration = Duration::from_millis(250);

pub struct CommandExecutor {
    argv: Vec<OsString>,
    rules: CommandRules,
    watch: Option<Arc<OutputWatch>>,
    stdin: StdinPlan,
    hold_stdout: bool,
    held: Option<Held>,
    kill_after: Duration,
    info: RunInfo,
    /// Hand the terminal to the command: stdin is our controlling terminal and
    /// we are in its foreground.
    foreground: bool,
    stop_patterns: Vec<String>,
    retry_patterns: Vec<String>,
}

impl CommandExecutor {
    pub fn new(cli: &Cli, argv: &[OsString], info: &RunInfo) -> anyhow::Result<Self> {
        let program = argv
            .first()
            .ok_or_else(|| anyhow::anyhow!("a COMMAND is required"))?;
        let profile: &'static Profile = profiles::pick(cli.profile, program);
        let watch = OutputWatch::new(&cli.stop_on_output, &cli.retry_on_output, profile)?;
        let needs_watch = watch.reads_stderr();
        let stdin = StdinPlan::new(cli.stdin);
        let foreground = stdin.inherits() && in_terminal_foreground();
        Ok(CommandExecutor {
            argv: argv.to_vec(),
            rules: CommandRules {
                stop_on: cli.stop_on.clone(),
                retry_on: cli.retry_on.clone(),
                success_on: cli.success_on.clone(),
                profile,
            },
            watch: needs_watch.then(|| Arc::new(watch)),
            stdin,
            hold_stdout: cli.hold_stdout,
            held: None,
            kill_after: cli.kill_after,
            info: info.clone(),
            foreground,
            stop_patterns: cli.stop_on_output.clone(),
            retry_patterns: cli.retry_on_output.clone(),
        })
    }

    /// The rules in force, in the order they are checked, for `--dry-run`.
    pub fn rules(&self) -> Vec<String> {
        let mut out = vec![
            "the command cannot be started (not found 127, not executable 126): permanent"
                .to_string(),
        ];
        for p in &self.stop_patterns {
            out.push(format!(
                "a stdout/stderr line matches --stop-on-output {p:?}: permanent"
            ));
        }
        for p in &self.retry_patterns {
            out.push(format!(
                "a stdout/stderr line matches --retry-on-output {p:?}: transient"
            ));
        }
        if let Some(s) = &self.rules.stop_on {
            out.push(format!("exit status in --stop-on {s}: permanent"));
        }
        if let Some(s) = &self.rules.retry_on {
            out.push(format!(
                "exit status in --retry-on {s}: transient; any other non-zero exit: permanent"
            ));
        }
        if let Some(s) = &self.rules.success_on {
            out.push(format!("exit status in --success-on {s}: success"));
        }
        let profile = self.rules.profile;
        for row in profile.rows {
            let limit = row
                .max_retries
                .map(|m| format!(", at most {m} retries"))
                .unwrap_or_default();
            out.push(format!(
                "{} exit {}{}: {}{limit} ({})",
                profile.name,
                code_list(row.codes),
                describe_when(row.when),
                row.class.as_str(),
                row.why
            ));
        }
        if profile.otherwise == profiles::Otherwise::Permanent {
            out.push(format!(
                "{} any other non-zero exit: permanent",
                profile.name
            ));
        }
        for row in profiles::GENERIC_EXITS {
            out.push(format!(
                "exit {}: {} ({})",
                code_list(row.codes),
                row.class.as_str(),
                row.why
            ));
        }
        out.push("stopped by --timeout: transient (exit 124 if it is the last attempt)".into());
        out.push("killed by a signal retry did not send: transient (SIGPIPE with the reader gone: permanent)".into());
        out
    }

    /// Facts about the run shown above the rules by `--dry-run`.
    pub fn notes(&self) -> Vec<String> {
        let profile = self.rules.profile;
        let picked = if profile.name == "generic" {
            "generic rules only"
        } else {
            profile.source
        };
        vec![
            format!("profile:     {} ({picked})", profile.name),
            format!("stdin:       {}", self.stdin.describe()),
        ]
    }

    /// The child's stdout: a temporary file when stdout is held but not scanned,
    /// so the command writes there directly (no copy through retry). Without a
    /// usable `$TMPDIR` the output goes through a pump into a spool instead,
    /// which needs the disk only past 4 MiB.
    fn stdout_file(&self) -> Option<std::fs::File> {
        let watch_out = self.watch.as_ref().is_some_and(|w| w.reads_stdout());
        if !self.hold_stdout || watch_out {
            return None;
        }
        match spool::temp_file() {
            Ok(file) => Some(file),
            Err(e) => {
                report::verbose(
                    1,
                    &format!("--hold-stdout: holding output in memory first: {e}"),
                );
                None
            }
        }
    }

    fn start_pumps(
        &self,
        child: &mut std::process::Child,
        facts: &Arc<Mutex<OutputFacts>>,
        fault: &Arc<Fault>,
    ) -> io::Result<Pumps> {
        let shared = || Shared {
            watch: self.watch.clone(),
            facts: Arc::clone(facts),
            fault: Arc::clone(fault),
        };
        let stdout = match child.stdout.take() {
            Some(out) => {
                let sink = if self.hold_stdout {
                    Sink::Hold(Spool::new())
                } else {
                    Sink::Forward(1)
                };
                Some(Pump::start(
                    OwnedFd::from(out),
                    sink,
                    Stream::Stdout,
                    shared(),
                )?)
            }
            None => None,
        };
        let stderr = match child.stderr.take() {
            Some(err) => Some(Pump::start(
                OwnedFd::from(err),
                Sink::Forward(2),
                Stream::Stderr,
                shared(),
            )?),
            None => None,
        };
        Ok(Pumps { stdout, stderr })
    }

    /// The attempt's report: how it ended, classified.
    fn report(
        &self,
        ctx: &AttemptContext,
        supervised: &Supervised,
        facts: &OutputFacts,
    ) -> AttemptReport {
        let end = &supervised.end;
        let mut verdict = self.rules.classify(end, facts);
        if let Some(sig) = supervised.interrupted_by {
            verdict = Verdict::permanent(format!(
                "retry received {} and passed it to the command",
                signal_name(sig)
            ));
        }
        let (outcome, exit_code) = match end {
            CommandEnd::Exited(code) => (Outcome::Exit { code: *code }, *code),
            CommandEnd::Signaled(sig) => (
                Outcome::Signal {
                    signal: *sig,
                    name: signal_name(*sig),
                },
                ExitCode::signal(*sig),
            ),
            CommandEnd::TimedOut => (
                Outcome::Timeout {
                    after_ms: supervised.ran.as_millis() as u64,
                },
                ExitCode::TIMEOUT,
            ),
            CommandEnd::NotRunnable { code, message } => (
                Outcome::NotRunnable {
                    code: *code,
                    error: message.clone(),
                },
                *code,
            ),
        };
        // A failed attempt never reports success to the caller, even when the command exited 0.
        let exit_code = if exit_code == 0 && verdict.class != Class::Success {
            1
        } else {
            exit_code
        };
        let mut report = AttemptReport::new(outcome, verdict, exit_code);
        report.interrupted_by = supervised.interrupted_by;
        report.budget_expired = supervised.timed_out && ctx.timeout_is_budget;
        report
    }

    fn command(
        &self,
        ctx: &AttemptContext,
        stdin: Stdio,
        stdout_file: Option<&std::fs::File>,
    ) -> io::Result<Command> {
        let mut cmd = Command::new(&self.argv[0]);
        cmd.args(&self.argv[1..]);
        cmd.env("RETRY_ATTEMPT", ctx.number.to_string())
            .env("RETRY_ATTEMPTS", ctx.limit.to_string())
            .env("RETRY_IDEMPOTENCY_KEY", &self.info.idempotency_key)
            .env("RETRY_DEPTH", (self.info.depth + 1).to_string());
        match ctx.budget_left {
            Some(left) => cmd.env("RETRY_DEADLINE_MS", left.as_millis().to_string()),
            None => cmd.env_remove("RETRY_DEADLINE_MS"),
        };
        cmd.stdin(stdin);
        let watch_out = self.watch.as_ref().is_some_and(|w| w.reads_stdout());
        cmd.stdout(match stdout_file {
            Some(file) => Stdio::from(file.try_clone()?),
            None if self.hold_stdout || watch_out => Stdio::piped(),
            None => Stdio::inherit(),
        });
        cmd.stderr(if self.watch.is_some() {
            Stdio::piped()
        } else {
            Stdio::inherit()
        });
        let parent = getpid();
        let foreground = self.foreground;
        // SAFETY: the closure runs in the forked child before exec and only makes
        // async-signal-safe calls (setpgid, tcsetpgrp, signal, prctl, getppid, kill).
        unsafe {
            cmd.pre_exec(move || {
                if foreground {
                    // Own group and the terminal's foreground: the command can read the terminal and Ctrl-C reaches it.
                    setpgid(Pid::from_raw(0), Pid::from_raw(0))?;
                    let tty = BorrowedFd::borrow_raw(0);
                    let _ = tcsetpgrp(tty, getpid());
                    signal::signal(Signal::SIGTTOU, SigHandler::SigDfl)?;
                }
                // If retry is SIGKILLed, the kernel ends the attempt's main process too.
                nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
                if getppid() != parent {
                    // retry died before the line above took effect.
                    let _ = signal::kill(getpid(), Signal::SIGKILL);
                }
                Ok(())
            });
        }
        if !foreground {
            cmd.process_group(0);
        }
        Ok(cmd)
    }

    fn spawn_failure(&self, err: &io::Error) -> AttemptReport {
        let name = self.argv[0].to_string_lossy();
        let (code, message) = match err.kind() {
            io::ErrorKind::NotFound => (127, format!("{name}: command not found")),
            io::ErrorKind::PermissionDenied => {
                (126, format!("{name}: permission denied (not executable)"))
            }
            _ => (126, format!("{name}: cannot run: {err}")),
        };
        let end = CommandEnd::NotRunnable {
            code,
            message: message.clone(),
        };
        let verdict = self.rules.classify(&end, &OutputFacts::default());
        AttemptReport::new(
            Outcome::NotRunnable {
                code,
                error: message,
            },
            verdict,
            code,
        )
    }
}

impl Executor for CommandExecutor {
    fn attempt(&mut self, ctx: &AttemptContext) -> anyhow::Result<AttemptReport> {
        if ctx.number == 1 && report::shows(1) {
            report::verbose(
                1,
                &format!(
                    "profile {} ({})",
                    self.rules.profile.name, self.rules.profile.source
                ),
            );
        }
        let started = Instant::now();
        self.held = None;
        let fault = Arc::new(Fault::default());
        let stdout_file = self.stdout_file();
        let (stdin, feeder) = self.stdin.prepare(&fault)?;
        let mut cmd = self.command(ctx, stdin, stdout_file.as_ref())?;
        if self.foreground {
            ignore_sigttou();
        }
        let spawned = cmd.spawn();
        drop(cmd);
        let mut child = match spawned {
            Ok(child) => child,
            Err(err) => {
                self.stdin.finish(feeder);
                return Ok(self.spawn_failure(&err));
            }
        };
        let pid = Pid::from_raw(child.id() as i32);
        if self.foreground {
            // Both sides set the group and the foreground, whichever runs first.
            let _ = setpgid(pid, pid);
            let _ = tcsetpgrp(stdin_tty(), pid);
        }
        let facts = Arc::new(Mutex::new(OutputFacts::default()));
        let pumps = self.start_pumps(&mut child, &facts, &fault)?;
        let supervised = Supervisor {
            pid,
            kill_after: self.kill_after,
            foreground: self.foreground,
            fault: &fault,
        }
        .run(ctx.timeout);
        if self.foreground {
            reclaim_terminal();
        }
        // Output still in the pipes is read for at most --kill-after, and never past --max-time.
        let mut drain_until = Instant::now() + self.kill_after;
        if let Some(left) = ctx.budget_left {
            drain_until = drain_until.min(started + left);
        }
        pumps.wait(drain_until.min(Instant::now() + DRAIN_GRACE));
        let preliminary = match &supervised {
            Ok(s) => {
                self.rules
                    .classify(&s.end, &facts.lock().expect("facts").clone())
                    .class
            }
            Err(_) => Class::Permanent,
        };
        let lock_lost = signals::lock_lost();
        let failed = preliminary != Class::Success
            || fault.get().is_some()
            || lock_lost.is_some()
            || supervised
                .as_ref()
                .map_or(true, |s| s.timed_out || s.interrupted_by.is_some());
        if failed {
            // No process of a failed attempt outlives it, not even one that left the group.
            procs::end_attempt(pid, self.kill_after);
        }
        pumps.wait(drain_until);
        self.stdin.finish(feeder);
        let (stderr_done, stdout_held) = pumps.stop();
        if let Some(message) = fault.get() {
            anyhow::bail!("{message}");
        }
        let supervised = supervised?;
        stderr_done?;
        self.held = match stdout_file {
            Some(file) => Some(Held::File(file)),
            None => stdout_held?.map(Held::Spool),
        };
        let mut facts = facts.lock().expect("facts").clone();
        facts.output_closed |= output_reader_gone();
        let mut report = self.report(ctx, &supervised, &facts);
        if let Some(lost) = lock_lost {
            report.verdict = Verdict::permanent(format!("retry stopped the command: {lost}"));
            report.lock_lost = Some(lost);
        }
        Ok(report)
    }

    fn deliver(&mut self) -> anyhow::Result<()> {
        let Some(held) = self.held.take() else {
            return Ok(());
        };
        let out = Output::new(1);
        let written = match &held {
            Held::Spool(spool) => spool.write_to(&out, Stop::Signals),
            Held::File(file) => {
                let len = file.metadata().map_or(0, |m| m.len());
                out.write_file(file, len, Stop::Signals)
            }
        };
        deliver_result(written, "the held stdout")
    }

    fn discard(&mut self) {
        self.held = None;
    }
}

/// `2,64-78` for a list of inclusive ranges.
fn code_list<T: std::fmt::Display + PartialEq>(codes: &[(T, T)]) -> String {
    let parts: Vec<String> = codes
        .iter()
        .map(|(lo, hi)| {
            if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}-{hi}")
            }
        })
        .collect();
    parts.join(",")
}

fn describe_when(when: profiles::When) -> String {
    use profiles::When;
    match when {
        When::Always => String::new(),
        When::StatusIn(ranges) => format!(" with stderr showing HTTP {}", code_list(ranges)),
        When::AnyStatus => " with stderr showing any other HTTP status".into(),
        When::NoStatus => " with no HTTP status on stderr".into(),
        When::Shows(phrases) => format!(" with stderr showing {}", phrases.what),
    }
}

/// One attempt's stdout, held until the engine says whether it is the final one.
enum Held {
    /// Scanned on its way in: memory, then a temporary file past 4 MiB.
    Spool(Spool),
    /// Written by the command straight into an unnamed temporary file.
    File(std::fs::File),
}

/// The attempt's output pumps, if anything reads its output.
struct Pumps {
    stdout: Option<Pump>,
    stderr: Option<Pump>,
}

impl Pumps {
    /// Waits until both streams have ended, or `until`.
    fn wait(&self, until: Instant) {
        let running = || {
            [&self.stdout, &self.stderr]
                .iter()
                .any(|p| p.as_ref().is_some_and(|p| !p.is_finished()))
        };
        while running() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Stops both pumps: stderr's result, and stdout's spool when it is held.
    fn stop(self) -> (io::Result<()>, io::Result<Option<Spool>>) {
        let stderr = self.stderr.map(Pump::stop).transpose().map(|_| ());
        let stdout = self.stdout.map(Pump::stop).transpose().map(Option::flatten);
        (stderr, stdout)
    }
}

struct Supervised {
    end: CommandEnd,
    timed_out: bool,
    interrupted_by: Option<i32>,
    ran: Duration,
}

/// Waits for one attempt's process, enforcing its time limit, passing on
/// stopping signals to its process group, and stopping it when retry's own
/// plumbing fails (`fault`).
struct Supervisor<'a> {
    pid: Pid,
    kill_after: Duration,
    foreground: bool,
    fault: &'a Fault,
}

impl Supervisor<'_> {
    fn run(&self, timeout: Option<Duration>) -> anyhow::Result<Supervised> {
        let start = Instant::now();
        let deadline = timeout.map(|t| start + t);
        let mut timed_out = false;
        let mut forwarded: Option<i32> = None;
        let mut faulted = false;
        let mut escalate_at: Option<Instant> = None;
        let mut lock_lost = false;
        loop {
            match waitpid(
                self.pid,
                Some(WaitPidFlag::WNOHANG | WaitPidFlag::WUNTRACED),
            ) {
                Ok(WaitStatus::Exited(_, code)) => {
                    return Ok(self.ended(CommandEnd::Exited(code), timed_out, forwarded, start));
                }
                Ok(WaitStatus::Signaled(_, sig, _)) => {
                    let sig = sig as i32;
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
                    send(self.pid, Signal::SIGKILL as i32);
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
                send(self.pid, Signal::SIGTERM as i32);
                send(self.pid, Signal::SIGCONT as i32);
                escalate_at.get_or_insert(now + self.kill_after);
            }
            if let Some(sig) = signals::pending() {
                if forwarded.is_none() {
                    forwarded = Some(sig);
                    send(self.pid, sig);
                    escalate_at.get_or_insert(now + self.kill_after);
                } else if signals::take_repeat().is_some() {
                    // A second signal: stop waiting politely.
                    send(self.pid, Signal::SIGKILL as i32);
                }
            }
            if !lock_lost && forwarded.is_none() && signals::lock_lost().is_some() {
                // Without its lock the attempt must not go on: end it like a timeout.
                lock_lost = true;
                send(self.pid, Signal::SIGTERM as i32);
                escalate_at.get_or_insert(now + self.kill_after);
            }
            if !timed_out && !lock_lost && forwarded.is_none() && deadline.is_some_and(|d| now >= d)
            {
                timed_out = true;
                send(self.pid, Signal::SIGTERM as i32);
                // As GNU timeout does: a stopped command acts on SIGTERM only once continued.
                send(self.pid, Signal::SIGCONT as i32);
                escalate_at = Some(now + self.kill_after);
            }
            if escalate_at.is_some_and(|t| now >= t) {
                send(self.pid, Signal::SIGKILL as i32);
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
                signals::wait(next);
            }
        }
    }

    fn ended(
        &self,
        end: CommandEnd,
        timed_out: bool,
        forwarded: Option<i32>,
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

fn is_keyboard_signal(sig: i32) -> bool {
    sig == Signal::SIGINT as i32 || sig == Signal::SIGQUIT as i32
}

fn send(pgid: Pid, sig: i32) {
    if let Ok(sig) = Signal::try_from(sig) {
        let _ = killpg(pgid, sig);
    }
}

fn stdin_tty() -> BorrowedFd<'static> {
    // fd 0 lives as long as the process.
    unsafe { BorrowedFd::borrow_raw(0) }
}

fn in_terminal_foreground() -> bool {
    // Not io::stdin(): its first use allocates an 8 KiB buffer that start-up does not need.
    stdin_tty().is_terminal() && tcgetpgrp(stdin_tty()).is_ok_and(|fg| fg == getpgrp())
}

/// retry must be able to take the terminal back from the background.
fn ignore_sigttou() {
    unsafe {
        let _ = signal::signal(Signal::SIGTTOU, SigHandler::SigIgn);
    }
}

fn reclaim_terminal() {
    let _ = tcsetpgrp(stdin_tty(), getpgrp());
}

/// Whether retry's stdout or stderr is a pipe whose reader has gone.
fn output_reader_gone() -> bool {
    [1, 2].into_iter().any(|fd| {
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        let mut fds = [PollFd::new(fd.as_fd(), PollFlags::empty())];
        poll(&mut fds, PollTimeout::ZERO).is_ok()
            && fds[0]
                .revents()
                .is_some_and(|r| r.contains(PollFlags::POLLERR))
    })
}
