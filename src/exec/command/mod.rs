//! Command mode: starts one attempt of a command in its own process group, with
//! stdin replay, and classifies how it ended (the rules are [`classify::command`](crate::classify::command)).
//! Starting the process is [`spawn`]'s (the one spawn path, hooks' too); waiting
//! for it, its timeout and signals are [`supervisor`]'s; the
//! pumps and the held stdout are [`output`]'s; the terminal hand-over is
//! [`terminal`]'s.

mod control;
mod output;
pub(crate) mod spawn;
pub(crate) mod supervisor;
mod terminal;

use std::ffi::OsString;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use regex::bytes::Regex;

use crate::classify::{
    command::CommandEnd, command::CommandRules, command::OutputFacts, command::OutputRules,
    command::OutputWatch, control::DIRECTIVES, endings, profiles, profiles::Profile,
};
use crate::config::{CommandConfig, RunInfo, StdoutRule};
use crate::domain::{Class, ExitStatus, Outcome, url_hint};
use crate::exec::{AttemptContext, AttemptReport, Description, Executor, procs};
use crate::spool;
use crate::streams::{Fault, pump::Shared, stdin::ChildStdin, stdin::StdinPlan};
use crate::{report, signals};
use control::ControlFile;
use output::{Held, HeldOutput, Holding, Pumps, output_reader_gone};
use supervisor::{Supervised, Supervisor};
use terminal::{ignore_sigttou, in_terminal_foreground, reclaim_terminal};

/// How long output threads get to drain after the command exits before leftover
/// processes that still hold the pipes are dealt with.
const DRAIN_GRACE: Duration = Duration::from_millis(250);

pub struct CommandExecutor {
    argv: Vec<OsString>,
    rules: CommandRules,
    watch: Option<Arc<OutputWatch>>,
    stdin: StdinPlan,
    holding: Holding,
    /// Why stdout is held or not, for the dry run.
    stdout_rule: StdoutRule,
    held: HeldOutput,
    kill_after: Duration,
    /// `--signal`: what the timeout sends first.
    timeout_signal: crate::sys::Signal,
    preserve_status: bool,
    info: RunInfo,
    /// Hand the terminal to the command: stdin is our controlling terminal and
    /// we are in its foreground.
    foreground: bool,
    stop_patterns: Vec<String>,
    retry_patterns: Vec<String>,
    success_patterns: Vec<String>,
    /// Why RETRY_CONTROL could not be given, once said.
    control_missing_said: bool,
    /// The next attempt's RETRY_CONTROL file, made ahead ([`Executor::prepare`]).
    control_ahead: Option<ControlFile>,
    /// `RETRY_FENCING_TOKEN`, when the run holds a lock.
    fencing_token: Option<i64>,
}

impl CommandExecutor {
    /// Builds the rule tables from the settings: the profile (picked by the command's
    /// name for `auto`) and the output patterns with the profile's stderr phrases.
    pub fn new(config: CommandConfig, info: &RunInfo) -> anyhow::Result<Self> {
        let inputs = config.rules;
        let profile: &'static Profile = profiles::pick(inputs.profile, &config.argv[0]);
        let pattern_text = |res: &[Regex]| res.iter().map(|r| r.as_str().to_string()).collect();
        let stop_patterns = pattern_text(&inputs.stop_on_output);
        let retry_patterns = pattern_text(&inputs.retry_on_output);
        let success_patterns = pattern_text(&inputs.success_on_output);
        let output_rules = OutputRules {
            stop: inputs.stop_on_output,
            retry: inputs.retry_on_output,
            success: inputs.success_on_output,
        };
        let watch = OutputWatch::new(output_rules, profile)?;
        let stdin = StdinPlan::new(config.stdin);
        let foreground = stdin.inherits() && in_terminal_foreground();
        let needs_watch = watch.reads_stderr();
        Ok(CommandExecutor {
            fencing_token: None,
            argv: config.argv,
            rules: CommandRules {
                stop_on: inputs.stop_on,
                retry_on: inputs.retry_on,
                success_on: inputs.success_on,
                stop_on_status: inputs.stop_on_status,
                retry_on_status: inputs.retry_on_status,
                profile,
            },
            watch: needs_watch.then(|| Arc::new(watch)),
            stdin,
            holding: Holding {
                stdout: config.stdout.holds(),
                stderr: config.hold_stderr,
            },
            stdout_rule: config.stdout,
            held: HeldOutput::default(),
            kill_after: config.kill_after,
            timeout_signal: config.timeout_signal,
            preserve_status: config.preserve_status,
            info: info.clone(),
            foreground,
            stop_patterns,
            retry_patterns,
            success_patterns,
            control_missing_said: false,
            control_ahead: None,
        })
    }

    /// The rules in force, in the order they are checked, for `--dry-run`.
    fn rules(&self) -> Vec<String> {
        let mut out: Vec<String> = endings::COMMAND_FIRST
            .iter()
            .map(|rule| rule.describe())
            .collect();
        out.extend(DIRECTIVES.iter().map(|row| row.describe()));
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
        for p in &self.success_patterns {
            out.push(format!(
                "a stdout/stderr line matches --success-on-output {p:?}: success"
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
        if let Some(s) = &self.rules.stop_on_status {
            out.push(format!(
                "{}'s failure showing an HTTP status in --stop-on-status {s}: permanent",
                self.rules.profile.name
            ));
        }
        if let Some(s) = &self.rules.retry_on_status {
            out.push(format!(
                "{}'s failure showing an HTTP status in --retry-on-status {s}: transient; any other status >= 400: permanent",
                self.rules.profile.name
            ));
        }
        if let Some(s) = &self.rules.success_on {
            out.push(format!("exit status in --success-on {s}: success"));
        }
        if let Some(line) = self.timeout_rule() {
            out.push(line);
        }
        let profile = self.rules.profile;
        for row in profile.rows {
            out.extend(row.describe(profile.name));
        }
        if profile.otherwise == profiles::Otherwise::Permanent {
            out.push(format!(
                "{} any other non-zero exit: permanent",
                profile.name
            ));
        }
        out.extend(profiles::describe_generic());
        out.extend(endings::COMMAND_LAST.iter().map(|rule| rule.describe()));
        out
    }

    /// What the exit code lists make of a `--timeout` (exit 124), when one of them names it.
    fn timeout_rule(&self) -> Option<String> {
        let verdict = self
            .rules
            .classify(&CommandEnd::TimedOut, &OutputFacts::default());
        let listed = [
            &self.rules.stop_on,
            &self.rules.retry_on,
            &self.rules.success_on,
        ]
        .iter()
        .any(|set| set.is_some());
        listed.then(|| {
            format!(
                "an attempt stopped by --timeout counts as exit 124 in these lists: {} ({})",
                verdict.class.as_str(),
                verdict.reason
            )
        })
    }

    /// Facts about the run shown above the rules by `--dry-run`.
    fn notes(&self) -> Vec<String> {
        let profile = self.rules.profile;
        let picked = if profile.name == "generic" {
            "generic rules only"
        } else {
            profile.source
        };
        let mut notes = vec![
            format!("profile:     {} ({picked})", profile.name),
            format!("stdin:       {}", self.stdin.describe()),
        ];
        notes.extend(
            self.stdout_rule
                .describe()
                .map(|rule| format!("stdout:      {rule}")),
        );
        if self.timeout_signal != crate::sys::Signal::SIGTERM || self.preserve_status {
            let status = if self.preserve_status {
                "its own status (--preserve-status)"
            } else {
                "124"
            };
            notes.push(format!(
                "on timeout:  {} (--signal), SIGKILL {} later; a timed-out attempt exits {status}, 137 if the SIGKILL was needed",
                self.timeout_signal.as_str(),
                crate::domain::human(self.kill_after)
            ));
        }
        notes
    }

    /// The child's stderr: an unnamed temporary file when it is held but not scanned, so the
    /// command writes there directly (no copy through retry). Without a usable `$TMPDIR`
    /// it goes through a pump into a spool instead, which needs the disk only past
    /// 4 MiB. A held stdout always goes through a pump: retry must see a spool it cannot
    /// write (an error of its own, exit 125, never the command's) and its own reader
    /// leave while it holds.
    fn held_stderr_file(&self) -> Option<std::fs::File> {
        // A watch always reads stderr.
        if !self.holding.stderr || self.watch.is_some() {
            return None;
        }
        match spool::temp_file() {
            Ok(file) => Some(file),
            Err(e) => {
                report::verbose(
                    1,
                    &format!("--hold-stderr: holding output in memory first: {e}"),
                );
                None
            }
        }
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
            verdict = endings::INTERRUPTED_COMMAND.verdict(&[("signal", &sig.name())]);
        }
        let (outcome, exit_code) = match (end, ctx.timeout) {
            (CommandEnd::TimedOut, Some(limit)) => self.timed_out(limit, supervised),
            _ => outcome(end, supervised.ran),
        };
        // A failed attempt never reports success to the caller, even when the command exited 0.
        let exit_code = if exit_code.is_success() && verdict.class != Class::Success {
            ExitStatus::FAILURE
        } else {
            exit_code
        };
        let wait_hint = match (&facts.control, verdict.class) {
            (Some(directive), Class::Transient) => directive.wait_hint(),
            _ => None,
        };
        let mut report = AttemptReport::new(outcome, verdict, exit_code);
        report.wait_hint = wait_hint;
        report.interrupted_by = supervised.interrupted_by;
        report.out_of_time = supervised.timed_out && ctx.cut_by_time_limit;
        report
    }

    /// An attempt its timeout `limit` stopped: 124 as timeout(1) exits, its own status
    /// under `--preserve-status`, and 137 when `--kill-after`'s SIGKILL was needed.
    fn timed_out(&self, limit: Duration, supervised: &Supervised) -> (Outcome, ExitStatus) {
        let own = supervised.own_status.unwrap_or(ExitStatus::TIMEOUT);
        let killed = own.signal()
            == Some(crate::domain::Signal::new(
                crate::sys::Signal::SIGKILL as i32,
            ));
        let status = if self.preserve_status || killed {
            own
        } else {
            ExitStatus::TIMEOUT
        };
        let outcome = Outcome::Timeout {
            after_ms: limit.as_millis() as u64,
            killed_after_ms: supervised.killed_later.map(|d| d.as_millis() as u64),
        };
        (outcome, status)
    }

    /// The attempt's process: argv, the RETRY_* variables, and its descriptors.
    fn spec(
        &self,
        ctx: &AttemptContext,
        stdin: ChildStdin,
        stderr_file: Option<&std::fs::File>,
        control: Option<&ControlFile>,
    ) -> io::Result<spawn::Spec<'_>> {
        let mut env: Vec<(&'static str, Option<OsString>)> = vec![
            ("RETRY_ATTEMPT", Some(ctx.number.to_string().into())),
            ("RETRY_ATTEMPTS", Some(ctx.attempts.to_string().into())),
            (
                "RETRY_IDEMPOTENCY_KEY",
                Some(self.info.idempotency_key.clone().into()),
            ),
            (
                "RETRY_DEPTH",
                Some((self.info.depth + 1).to_string().into()),
            ),
            (
                "RETRY_DEADLINE_MS",
                ctx.time_left
                    .map(|left| left.as_millis().to_string().into()),
            ),
            // Never an outer retry's file: the directive would reach the wrong run.
            ("RETRY_CONTROL", control.map(|file| file.path().into())),
        ];
        if let Some(token) = self.fencing_token {
            env.push(("RETRY_FENCING_TOKEN", Some(token.to_string().into())));
        }
        // Traced, the attempt is the command's parent; untraced, what was inherited stays.
        if let Some(span) = &ctx.span {
            env.push(("TRACEPARENT", Some(span.traceparent().into())));
            env.push(("TRACESTATE", span.state.clone().map(Into::into)));
        }
        let watch_out = self.watch.as_ref().is_some_and(|w| w.reads_stdout());
        Ok(spawn::Spec {
            argv: &self.argv,
            env,
            stdin: match stdin {
                ChildStdin::Inherit => spawn::Stdio::Inherit,
                ChildStdin::Null => spawn::Stdio::Null,
                ChildStdin::Pipe(fd) => spawn::Stdio::Fd(fd),
            },
            stdout: if self.holding.stdout || watch_out {
                spawn::Stdio::Piped
            } else {
                spawn::Stdio::Inherit
            },
            stderr: match stderr_file {
                Some(file) => spawn::Stdio::Fd(file.try_clone()?.into()),
                None if self.holding.stderr || self.watch.is_some() => spawn::Stdio::Piped,
                None => spawn::Stdio::Inherit,
            },
            foreground: self.foreground,
            timeout_signal: self.timeout_signal,
        })
    }

    /// This attempt's RETRY_CONTROL file; without one, -v says why (once).
    fn control_file(&mut self) -> Option<ControlFile> {
        match ControlFile::new() {
            Ok(file) => Some(file),
            Err(why) => {
                if !self.control_missing_said {
                    self.control_missing_said = true;
                    report::verbose(1, &why);
                }
                None
            }
        }
    }

    /// The attempt that could not be started: out of processes or memory is retry's
    /// own transient failure; anything else is the command's (not found, not executable).
    fn spawn_failure(&self, err: &io::Error) -> AttemptReport {
        let name = self.argv[0].to_string_lossy();
        let end = match (err.raw_os_error(), err.kind()) {
            (Some(crate::sys::NO_PROCESSES), _) => CommandEnd::NoResources {
                message: format!(
                    "cannot start {name}: no process can be created now \
                     (EAGAIN: ulimit -u or a cgroup's pids.max reached)"
                ),
            },
            (Some(crate::sys::NO_MEMORY), _) => CommandEnd::NoResources {
                message: format!("cannot start {name}: out of memory (ENOMEM)"),
            },
            (_, io::ErrorKind::NotFound) => CommandEnd::NotRunnable {
                code: ExitStatus::NOT_FOUND,
                message: match url_hint(&name) {
                    Some(hint) => format!("{name}: command not found; {hint}"),
                    None => format!("{name}: command not found"),
                },
            },
            (_, io::ErrorKind::PermissionDenied) => CommandEnd::NotRunnable {
                code: ExitStatus::NOT_EXECUTABLE,
                message: format!("{name}: permission denied (not executable)"),
            },
            _ => CommandEnd::NotRunnable {
                code: ExitStatus::NOT_EXECUTABLE,
                message: format!("{name}: cannot run: {err}"),
            },
        };
        let verdict = self.rules.classify(&end, &OutputFacts::default());
        let (outcome, exit_code) = outcome(&end, Duration::ZERO);
        AttemptReport::new(outcome, verdict, exit_code)
    }
}

/// How an attempt that ended as `end` after running for `ran` is recorded, and the
/// status retry exits with if it is the last.
fn outcome(end: &CommandEnd, ran: Duration) -> (Outcome, ExitStatus) {
    match end {
        CommandEnd::Exited(code) => (Outcome::Exit { code: *code }, *code),
        CommandEnd::Signaled(sig) => (Outcome::signaled(*sig), ExitStatus::of_signal(*sig)),
        CommandEnd::TimedOut => (
            Outcome::Timeout {
                after_ms: ran.as_millis() as u64,
                killed_after_ms: None,
            },
            ExitStatus::TIMEOUT,
        ),
        CommandEnd::NotRunnable { code, message } => (
            Outcome::NotRunnable {
                code: *code,
                error: message.clone(),
            },
            *code,
        ),
        // retry's own failure: the command never ran.
        CommandEnd::NoResources { message } => (
            Outcome::NoResources {
                error: message.clone(),
            },
            ExitStatus::USAGE,
        ),
    }
}

impl Executor for CommandExecutor {
    fn set_fencing_token(&mut self, token: i64) {
        self.fencing_token = Some(token);
    }

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
        self.held = HeldOutput::default();
        let fault = Arc::new(Fault::default());
        let stderr_file = self.held_stderr_file();
        let (stdin, feeder) = self.stdin.prepare(&fault)?;
        let control = self.control_ahead.take().or_else(|| self.control_file());
        let spec = self.spec(ctx, stdin, stderr_file.as_ref(), control.as_ref())?;
        if self.foreground {
            ignore_sigttou();
        }
        let before = procs::Before::now();
        let mut child = match spawn::spawn(spec) {
            Ok(child) => child,
            Err(err) => {
                self.stdin.finish(feeder);
                return Ok(self.spawn_failure(&err));
            }
        };
        let pid = child.pid;
        let facts = Arc::new(Mutex::new(OutputFacts::default()));
        let shared = Shared {
            watch: self.watch.clone(),
            facts: Arc::clone(&facts),
            fault: Arc::clone(&fault),
        };
        let pumps = Pumps::start(
            child.stdout.take(),
            child.stderr.take(),
            self.holding,
            &shared,
        )?;
        let tree = procs::Tree::new(pid, before);
        let supervised = Supervisor {
            tree: &tree,
            timeout_signal: self.timeout_signal,
            kill_after: self.kill_after,
            signal_grace: self.kill_after,
            foreground: self.foreground,
            fault: &fault,
            ends_on_lost_lock: true,
        }
        .run(ctx.timeout);
        if self.foreground {
            reclaim_terminal();
        }
        // Output still in the pipes is read for at most --kill-after, and never past the run's time limit.
        let mut drain_until = Instant::now() + self.kill_after;
        if let Some(left) = ctx.time_left {
            drain_until = drain_until.min(started + left);
        }
        // Never past a SIGKILL already due: what is left of the attempt gets it on time.
        let first_drain = [Some(Instant::now() + DRAIN_GRACE), tree.kill_at()];
        let first_drain = first_drain.into_iter().flatten().min();
        pumps.wait(drain_until.min(first_drain.unwrap_or(drain_until)));
        facts.lock().expect("facts").control = control.and_then(ControlFile::read);
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
            // No process of a failed attempt outlives it, not even one that left the group;
            // an ending already begun keeps its deadline.
            tree.end(supervisor::lost_lock_grace(self.kill_after));
        }
        pumps.wait(drain_until);
        self.stdin.finish(feeder);
        let (stderr_held, stdout_held) = pumps.stop();
        if let Some(message) = fault.get() {
            anyhow::bail!("{message}");
        }
        let supervised = supervised?;
        let held = |file: Option<std::fs::File>, spool: io::Result<Option<crate::spool::Spool>>| {
            io::Result::Ok(match file {
                Some(file) => Some(Held::File(file)),
                None => spool?.map(Held::Spool),
            })
        };
        let stderr = held(stderr_file, stderr_held)?;
        self.held = HeldOutput {
            stdout: stdout_held?.map(Held::Spool),
            stderr,
        };
        let mut facts = facts.lock().expect("facts").clone();
        facts.output_closed |= output_reader_gone();
        let mut report = self.report(ctx, &supervised, &facts);
        if let Some(lost) = lock_lost {
            report.verdict = endings::LOCK_LOST_COMMAND.verdict(&[("lost", &lost)]);
            report.lock_lost = Some(lost);
        }
        Ok(report)
    }

    /// The control file: a create on the disk of `/tmp` is a slot's costliest call.
    fn prepare(&mut self) {
        if self.control_ahead.is_none() {
            self.control_ahead = self.control_file();
        }
    }

    fn deliver(&mut self) -> anyhow::Result<()> {
        std::mem::take(&mut self.held).deliver()
    }

    fn discard(&mut self) {
        self.held = HeldOutput::default();
    }

    fn describe(&self) -> Description {
        Description {
            target: format!("command {}", crate::config::display_argv(&self.argv)),
            notes: self.notes(),
            rules: self.rules(),
        }
    }
}
