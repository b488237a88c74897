//! `--crontab FILE`: every job of the file in one process, each on a thread of its
//! own running the one scheduler loop ([`Scheduler`]) through a [`CrontabWorld`]. A
//! slot is a `retry --run-slot` process of its own (the job's options, its command
//! by `/bin/sh -c`, its environment), so jobs share no run state (signals, locks,
//! children to reap); its output comes back here to be written whole and labelled.
//! SIGINT and SIGTERM stop every job at once: no new slot starts, running slots get
//! `--grace`, then SIGTERM (a second signal: at once).

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use serde_json::json;
use sha2::Digest;

use super::metrics::Metrics;
use super::outcome::Outcome;
use super::world::{SystemWorld, Watch};
use super::{Scheduler, Slot, SlotEnd, Tally, World, slot_key};
use crate::config::crontab::{Crontab, CrontabJob};
use crate::domain::{ExitStatus, Signal, rfc3339_millis, rfc3339_seconds};
use crate::state::Status;
use crate::{report, signals, sys};

/// What ends a job's loop when a reload removed it (never reported as a signal).
const RETIRED: Signal = Signal::HUP;
/// Longest sleep of a job's thread: the wall clock is compared at least this often.
const WAKE_EVERY: Duration = Duration::from_secs(60);
/// Between the two SIGTERMs that end a slot run at once (its second signal is SIGKILL
/// to the command): long enough for the run to have taken the first.
const SECOND_SIGNAL_AFTER: Duration = Duration::from_millis(100);

/// What every job's thread shares.
struct Shared {
    /// The signal that stops the scheduler, once one came.
    stop: Mutex<Option<Signal>>,
    wake: Condvar,
    /// The slot runs under way: pid and slot key.
    running: Mutex<HashMap<u32, String>>,
    /// Held while one whole labelled line is written.
    out: Mutex<()>,
    /// Where slot runs write their own lines (`--slot-log-fd`): a copy of stderr that
    /// every slot run inherits; none under `--job-output raw`.
    log: Option<sys::LogCopy>,
    json: bool,
}

impl Shared {
    fn stopping(&self) -> Option<Signal> {
        *self.stop.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn stop(&self, sig: Signal) {
        *self.stop.lock().unwrap_or_else(|p| p.into_inner()) = Some(sig);
        self.wake.notify_all();
    }

    /// SIGTERM to every slot run under way.
    fn terminate_runs(&self) {
        let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        for pid in running.keys() {
            let _ = sys::ask_to_end(*pid);
        }
    }

    fn runs(&self) -> usize {
        self.running.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// Runs every job of `tab` until a stopping signal; 128+N then, 125 if every job
/// stopped on an error (state that cannot be reached at start). SIGHUP, SIGUSR2 and a
/// change to the file call `reload`: a crontab that reads replaces the table, one that
/// does not leaves it as it is.
pub fn run(
    tab: Crontab,
    reload: &dyn Fn() -> anyhow::Result<Crontab>,
    options: Options,
) -> anyhow::Result<ExitStatus> {
    let Options {
        grace,
        raw,
        metrics_listen,
    } = options;
    // Bound first: a port that cannot be had is exit 125 before anything else happens.
    let metrics = match (metrics_listen, tab.jobs.first()) {
        (Some(addr), Some(first)) => {
            let metrics = Metrics::new(&first.schedule().job);
            let bound = super::metrics::serve(addr, metrics.clone())?;
            report::info(&format!(
                "metrics at http://{bound}/metrics, health at /healthz"
            ));
            metrics.alive();
            Some(metrics)
        }
        _ => None,
    };
    let shared = Shared {
        stop: Mutex::new(None),
        wake: Condvar::new(),
        running: Mutex::new(HashMap::new()),
        out: Mutex::new(()),
        log: if raw {
            None
        } else {
            Some(sys::LogCopy::of_stderr().context("cannot copy stderr for the slot runs")?)
        },
        json: report::config().json,
    };
    signals::reload_on_request().context("cannot install the SIGUSR2 handler")?;
    report::info(&format!(
        "crontab {}: {} job{}; SIGHUP, SIGUSR2 or a change to the file reads it again",
        tab.path.display(),
        tab.jobs.len(),
        if tab.jobs.len() == 1 { "" } else { "s" }
    ));
    let path = tab.path.clone();
    let failed = std::thread::scope(|scope| {
        let start = |job: Arc<CrontabJob>| {
            let retired = Arc::new(AtomicBool::new(false));
            let thread = {
                let (job, retired, shared) = (job.clone(), retired.clone(), &shared);
                let metrics = metrics.as_ref().map(|m| m.for_job(&job.schedule().job));
                scope.spawn(move || run_job(&job, &retired, shared, metrics))
            };
            Job {
                job,
                retired,
                thread,
            }
        };
        let mut jobs: Vec<Job<'_>> = tab.jobs.into_iter().map(Arc::new).map(start).collect();
        let mut failed = 0;
        let mut seen = Fingerprint::of(&path);
        let mut looked = Instant::now();
        let sig = loop {
            if let Some(metrics) = &metrics {
                metrics.alive();
            }
            if let Some(sig) = signals::pending() {
                break Some(sig);
            }
            let asked = signals::take_reload();
            let changed = looked.elapsed() >= FILE_EVERY && {
                looked = Instant::now();
                let now = Fingerprint::of(&path);
                std::mem::replace(&mut seen, now) != seen
            };
            if asked || changed {
                jobs = replace_table(jobs, reload(), &shared, &start);
            }
            // Removed jobs whose last slot has ended.
            let (done, left): (Vec<_>, Vec<_>) = jobs
                .into_iter()
                .partition(|j| j.retired.load(Ordering::SeqCst) && j.thread.is_finished());
            jobs = left;
            for finished in done {
                let _ = finished.thread.join();
            }
            if jobs.iter().all(|j| j.thread.is_finished()) {
                break None;
            }
            signals::wait(FILE_EVERY);
        };
        if let Some(sig) = sig {
            shared.stop(sig);
            stop_gracefully(&shared, sig, grace, || {
                jobs.iter().all(|j| j.thread.is_finished())
            });
        }
        for job in jobs {
            let retired = job.retired.load(Ordering::SeqCst);
            if !matches!(job.thread.join(), Ok(true)) && !retired {
                failed += 1;
            }
        }
        failed
    });
    match shared.stopping() {
        Some(sig) => {
            let status = ExitStatus::of_signal(sig);
            report::info(&format!("stopped by {sig}; exit status {status}"));
            Ok(status)
        }
        None => anyhow::bail!(
            "--crontab {}: {failed} job{} stopped on an error",
            path.display(),
            if failed == 1 { "" } else { "s" }
        ),
    }
}

/// How the crontab's scheduler runs, from its command line.
pub struct Options {
    pub grace: Duration,
    /// `--job-output raw`.
    pub raw: bool,
    pub metrics_listen: Option<std::net::SocketAddr>,
}

/// How often the file is looked at for a change.
const FILE_EVERY: Duration = Duration::from_secs(2);

/// A job of the table, on its thread.
struct Job<'scope> {
    job: Arc<CrontabJob>,
    /// Set when a reload removed or changed the job: no new slot starts.
    retired: Arc<AtomicBool>,
    thread: std::thread::ScopedJoinHandle<'scope, bool>,
}

/// The file as last looked at: its modification time, size and content's SHA-256.
#[derive(PartialEq, Eq)]
struct Fingerprint(Option<(SystemTime, u64, Vec<u8>)>);

impl Fingerprint {
    fn of(path: &std::path::Path) -> Fingerprint {
        let seen = std::fs::metadata(path).and_then(|meta| {
            let content = std::fs::read(path)?;
            let digest = sha2::Sha256::digest(&content).to_vec();
            Ok((meta.modified()?, meta.len(), digest))
        });
        Fingerprint(seen.ok())
    }
}

/// The table after a reload: unchanged jobs go on, removed and changed ones are
/// retired (a running slot finishes), new and changed ones start. A crontab that
/// does not read keeps the table, with its error line.
fn replace_table<'scope>(
    jobs: Vec<Job<'scope>>,
    read: anyhow::Result<Crontab>,
    shared: &Shared,
    start: &dyn Fn(Arc<CrontabJob>) -> Job<'scope>,
) -> Vec<Job<'scope>> {
    let tab = match read {
        Ok(tab) => tab,
        Err(err) => {
            report::error(&format!("{err:#}; the jobs go on as they were"));
            return jobs;
        }
    };
    let (mut kept, mut gone) = (Vec::new(), 0);
    let mut new: Vec<Option<CrontabJob>> = tab.jobs.into_iter().map(Some).collect();
    for job in jobs {
        let same = new
            .iter_mut()
            .find(|n| n.as_ref().is_some_and(|n| same_job(n, &job.job)));
        match same {
            Some(slot) if !job.retired.load(Ordering::SeqCst) => {
                *slot = None;
                kept.push(job);
            }
            _ => {
                if !job.retired.swap(true, Ordering::SeqCst) {
                    gone += 1;
                }
                kept.push(job);
            }
        }
    }
    shared.wake.notify_all();
    let added: Vec<CrontabJob> = new.into_iter().flatten().collect();
    let count = added.len();
    kept.extend(added.into_iter().map(Arc::new).map(start));
    report::info(&format!(
        "crontab {}: read again; {count} job{} started, {gone} stopped (their running slots finish)",
        tab.path.display(),
        if count == 1 { "" } else { "s" }
    ));
    kept
}

/// Whether a reload leaves a job as it was: its name, options, command and environment.
fn same_job(a: &CrontabJob, b: &CrontabJob) -> bool {
    a.schedule().job == b.schedule().job
        && a.options == b.options
        && a.command == b.command
        && a.env == b.env
}

/// Waits for the running slots: up to `grace`, then SIGTERM; a second stopping
/// signal ends them at once.
fn stop_gracefully(shared: &Shared, sig: Signal, grace: Duration, done: impl Fn() -> bool) {
    let runs = shared.runs();
    if runs > 0 {
        report::info(&format!(
            "{sig}: stopping; no new slot starts, and {runs} running slot{} {} up to --grace {} to finish (a second {sig} ends them at once)",
            if runs == 1 { "" } else { "s" },
            if runs == 1 { "has" } else { "have" },
            crate::domain::human(grace)
        ));
    }
    let deadline = Instant::now() + grace;
    let mut ended = false;
    while !done() {
        if signals::take_repeat().is_some() {
            report::info("a second stopping signal: ending the running slots at once");
            shared.terminate_runs();
            std::thread::sleep(SECOND_SIGNAL_AFTER);
            shared.terminate_runs();
            ended = true;
        } else if !ended && Instant::now() >= deadline {
            if shared.runs() > 0 {
                report::info(&format!(
                    "--grace {} is over: ending the running slots (SIGTERM, then --kill-after)",
                    crate::domain::human(grace)
                ));
            }
            shared.terminate_runs();
            ended = true;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        signals::wait(left.clamp(Duration::from_millis(10), Duration::from_millis(100)));
    }
}

/// One job's scheduler; whether it ended on a signal or a reload (not an error).
fn run_job(
    job: &CrontabJob,
    retired: &AtomicBool,
    shared: &Shared,
    metrics: Option<Metrics>,
) -> bool {
    let schedule = job.schedule();
    let mut inner = SystemWorld::new(&job.config, schedule, metrics.clone());
    inner.seed_last_success();
    let mut world = CrontabWorld {
        job,
        retired,
        shared,
        metrics,
        inner,
    };
    match (Scheduler { config: schedule }).run(&mut world) {
        Ok(_) => true,
        Err(err) => {
            report::error(&format!(
                "job {} (line {}): {err:#}; it does not run",
                schedule.job, job.line
            ));
            false
        }
    }
}

/// A crontab job's world: the state as `--schedule` keeps it, a sleep that the
/// scheduler's stop ends, and each slot a process of its own.
struct CrontabWorld<'a> {
    job: &'a CrontabJob,
    retired: &'a AtomicBool,
    metrics: Option<Metrics>,
    shared: &'a Shared,
    inner: SystemWorld<'a>,
}

impl World for CrontabWorld<'_> {
    fn now(&self) -> Slot {
        jiff::Timestamp::now()
    }

    fn sleep_until(&mut self, t: Slot) -> Result<(), Signal> {
        let mut stop = self.shared.stop.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(sig) = *stop {
                return Err(sig);
            }
            if self.retired.load(Ordering::SeqCst) {
                return Err(RETIRED);
            }
            let left = Duration::try_from(t.duration_since(jiff::Timestamp::now()))
                .unwrap_or(Duration::ZERO);
            if left.is_zero() {
                return Ok(());
            }
            let step = (left + Duration::from_micros(999)).min(WAKE_EVERY);
            stop = match self.shared.wake.wait_timeout(stop, step) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    fn handled(&mut self) -> anyhow::Result<HashSet<Slot>> {
        self.inner.handled()
    }

    fn first_start(&mut self, now: Slot) -> anyhow::Result<Slot> {
        self.inner.first_start(now)
    }

    fn run_slot(&mut self, slot: Slot) -> SlotEnd {
        if let Some(sig) = self.shared.stopping() {
            return SlotEnd::Stopped(sig);
        }
        if self.retired.load(Ordering::SeqCst) {
            return SlotEnd::Stopped(RETIRED);
        }
        let watch = Watch {
            schedule: self.job.schedule(),
            metrics: self.metrics.as_ref(),
            command: &self.job.config.gate.command,
            graceful: false,
        };
        if let Some(metrics) = &self.metrics {
            metrics.slot_started(SystemTime::now());
        }
        let began = Instant::now();
        let (ran, skipped) = watch.beside(|| self.slot_process(slot));
        if let Some(metrics) = &self.metrics {
            self.count(metrics, slot, began.elapsed());
        }
        if let Some(skipped) = skipped {
            self.inner.skipped_at_own_time(skipped);
        }
        if let Err(err) = ran {
            // Never run unguarded or unrecorded: no record, so catch-up sees it as missed.
            let key = slot_key(&self.job.schedule().job, slot);
            report::with_slot(Some(key), || {
                report::error(&format!("{err:#}; the slot did not run"))
            });
        }
        match self.shared.stopping() {
            Some(sig) => SlotEnd::Stopped(sig),
            None if self.retired.load(Ordering::SeqCst) => SlotEnd::Stopped(RETIRED),
            None => SlotEnd::Ended,
        }
    }

    fn skip_slot(&mut self, slot: Slot) {
        self.inner.skip_slot(slot);
    }

    fn prune(&mut self, before: Slot) {
        self.inner.prune(before);
    }

    fn say(&mut self, message: &str) {
        if self.retired.load(Ordering::SeqCst) && self.shared.stopping().is_none() {
            // The scheduler's "stopped by" line: a reload removed the job instead.
            report::info(&format!(
                "job {} (line {}) is no longer in the crontab: no new slot starts",
                self.job.schedule().job,
                self.job.line
            ));
            return;
        }
        self.inner.say(message);
    }

    fn tally(&mut self, tally: Tally) {
        self.inner.tally(tally);
    }
}

impl CrontabWorld<'_> {
    /// Counts the slot's end as its record says (the run was another process); a slot
    /// with no record did not run (state that could not be reached): skipped, as under
    /// `--schedule`; one a stop ended is not counted.
    fn count(&self, metrics: &Metrics, slot: Slot, took: Duration) {
        let outcome = match self.inner.recorded(slot) {
            _ if self.shared.stopping().is_some() => None,
            Some((status, attempts)) => Some((outcome_of(status), attempts)),
            None => Some((Outcome::Skipped, 0)),
        };
        match outcome {
            Some((outcome, attempts)) => metrics.slot_ended(Some(outcome), attempts, took),
            None => metrics.slot_ended(None, 0, took),
        }
    }

    /// Runs the slot as `retry --run-slot SLOT` with the job's options and command, and
    /// waits for it; its output is written labelled, line by line.
    fn slot_process(&self, slot: Slot) -> anyhow::Result<()> {
        let job = self.job;
        let key = slot_key(&job.schedule().job, slot);
        let exe = std::env::current_exe().context("cannot find retry's own executable")?;
        let mut command = Command::new(exe);
        command
            .args(&job.options)
            .args(["--grace", "0", "--run-slot", &rfc3339_seconds(slot)]);
        // No pre_exec: the child is then started by posix_spawn (vfork), not by a fork
        // that copies this many-threaded process's memory map for every slot.
        if let Some(log) = &self.shared.log {
            let fd = log.token().to_string();
            command.args(["--slot-log-fd", &fd]);
            command.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        command
            .args(job.target())
            .envs(job.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        // Its own group: a terminal's Ctrl-C is the scheduler's to pass on.
        sys::own_process_group(&mut command);
        let mut child = command
            .spawn()
            .context("cannot start the slot's run of retry")?;
        let pid = child.id();
        self.shared
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(pid, key.clone());
        let slot_shown = rfc3339_seconds(slot);
        let label = Label {
            job: &job.schedule().job,
            key: &key,
            slot: &slot_shown,
        };
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let waited = std::thread::scope(|scope| {
            if let Some(out) = stdout {
                scope.spawn(|| self.pump(out, "stdout", &label));
            }
            if let Some(err) = stderr {
                scope.spawn(|| self.pump(err, "stderr", &label));
            }
            child.wait()
        });
        self.shared
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&pid);
        waited.context("cannot wait for the slot's run")?;
        Ok(())
    }

    /// Writes each line of `from` whole and labelled to the scheduler's own stream.
    fn pump(&self, from: impl Read, stream: &str, label: &Label<'_>) {
        let mut reader = BufReader::new(from);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            let text = label.line(&String::from_utf8_lossy(&line), stream, self.shared.json);
            let _whole = self.shared.out.lock().unwrap_or_else(|p| p.into_inner());
            // Nobody is left to tell when the scheduler's own stream fails.
            let _ = if stream == "stdout" {
                let mut out = std::io::stdout().lock();
                out.write_all(text.as_bytes()).and_then(|()| out.flush())
            } else {
                std::io::stderr().lock().write_all(text.as_bytes())
            };
        }
    }
}

/// How a job's output line is labelled.
struct Label<'a> {
    job: &'a str,
    key: &'a str,
    slot: &'a str,
}

impl Label<'_> {
    /// `TIMESTAMP [JOB@SLOT] line`, or one JSON object with time, job, slot, stream, line.
    fn line(&self, text: &str, stream: &str, json: bool) -> String {
        if json {
            let value = json!({
                "job": self.job,
                "slot": self.slot,
                "stream": stream,
                "line": text,
            });
            format!("{}\n", report::with_time(&value))
        } else {
            format!(
                "{} [{}] {text}\n",
                rfc3339_millis(SystemTime::now()),
                self.key
            )
        }
    }
}

fn outcome_of(status: Status) -> Outcome {
    match status {
        Status::Succeeded => Outcome::Succeeded,
        Status::GaveUp => Outcome::GaveUp,
        Status::Skipped => Outcome::Skipped,
        Status::Refused => Outcome::Refused,
    }
}
