//! `--dry-run`: everything a run would do, printed without running anything, in one
//! place: the schedule of a `--schedule` job and what a start now would catch up, the
//! attempts and their sleeps ([`policy`]), the executor's classification rules, the lock
//! and `--once` marker, and the fleet's budget and circuit as they stand (read only).
//! Each rule's text is asked of the code that applies it (`describe`), so that the
//! two cannot drift apart; this module lays them out.

mod policy;

use std::collections::HashSet;
use std::fmt::Write;
use std::time::Duration;

use anyhow::Context;
use jiff::Timestamp;

use crate::config::crontab::Crontab;
use crate::config::fleet::FleetConfig;
use crate::config::{Config, GateOptions, ScheduleConfig, TargetConfig};
use crate::domain::{BudgetConfig, CircuitConfig, human, one_line, rfc3339_seconds};
use crate::state::{self, Backend};
use crate::wait::Bound;
use crate::{exec, fleet, schedule};

/// Writes the dry run of `config` to stdout.
pub fn show(config: &Config) -> anyhow::Result<()> {
    let exec = exec::for_target(config.target.clone(), &config.run)?;
    let mut text = String::new();
    if let Some(plan) = &config.schedule {
        text += &schedule_plan(plan, 5)?;
    }
    let is_http = matches!(config.target, TargetConfig::Http(_));
    text += &policy::render(
        &config.policy,
        config.fleet.splay,
        &config.run,
        is_http,
        &exec.describe(),
    );
    text += &gate(&config.gate);
    let max_time = config.policy.max_time;
    text += &fleet(&config.fleet, config.seed, max_time, config.run.nested);
    if let Some(traces) = &config.traces {
        text += &traces.describe();
    }
    write_out(&text)
}

/// `--dry-run` with `--crontab`: every job, its name, schedule and zone, its own
/// options, its next three slots and what a start now would catch up.
pub fn crontab(tab: &Crontab) -> anyhow::Result<()> {
    let mut text = format!(
        "retry dry run: nothing is run\ncrontab {}: {} job{}\n",
        tab.path.display(),
        tab.jobs.len(),
        if tab.jobs.len() == 1 { "" } else { "s" }
    );
    for job in &tab.jobs {
        let Some(line) = &job.line else {
            continue;
        };
        let _ = write!(
            text,
            "\nline {}: {} {} {:?}\noptions: {}\n",
            line.number,
            line.shell[0],
            line.shell[1],
            line.command,
            if line.own.is_empty() {
                "the command line's".to_string()
            } else {
                format!("{} (over the command line's)", line.own.join(" "))
            }
        );
        for (name, value) in &job.env {
            let _ = writeln!(text, "environment: {name}={value}");
        }
        if let Some(minutes) = line.random_delay {
            let _ = writeln!(
                text,
                "RANDOM_DELAY={minutes}: each slot starts up to {minutes}m after its time (--splay {minutes}m, unless the line or the command line gives one)"
            );
        }
        text += &schedule_plan(&job.schedule, 3)?;
    }
    write_out(&text)
}

/// Writes the dry run's text to stdout, each line's control characters escaped, as in
/// every line retry writes: a value it echoes (a command's word, a URL) cannot break a
/// line or reach the terminal raw.
fn write_out(text: &str) -> anyhow::Result<()> {
    let text: String = text
        .split_inclusive('\n')
        .map(|line| match line.strip_suffix('\n') {
            Some(body) => format!("{}\n", one_line(body)),
            None => one_line(line).into_owned(),
        })
        .collect();
    // A stdout that cannot take the text (a full device, a closed pipe) is retry's
    // own error, with the operating system's reason.
    let mut out = std::io::stdout().lock();
    std::io::Write::write_all(&mut out, text.as_bytes())
        .and_then(|()| std::io::Write::flush(&mut out))
        .context("--dry-run: cannot write to stdout")
}

/// `--dry-run` with `--schedule`: the next five slots, the job's first start, and the
/// missed slots a start now would catch up. Nothing is written.
fn schedule_plan(schedule: &ScheduleConfig, slots: usize) -> anyhow::Result<String> {
    let now = Timestamp::now();
    if schedule.cron.is_reboot() {
        return Ok(format!(
            "schedule: @reboot, job {}: runs once at each start of the scheduler, on every replica (key {}), never caught up\n\n",
            schedule.job,
            schedule::boot_key(&schedule.job, now).replace(&rfc3339_seconds(now), "START")
        ));
    }
    schedule::first_slot(schedule, now)?;
    let zone = &schedule.cron.zone;
    let mut out = format!(
        "schedule: {:?} in {}, job {}\nnext slots:\n",
        schedule.cron.text,
        zone.name(),
        schedule.job
    );
    for slot in schedule.cron.upcoming(now, slots) {
        out += &format!("  {}\n", schedule::show(slot, zone));
    }
    let (handled, recorded) = match read_state(schedule) {
        Ok(read) => read,
        // As the fleet's dry run does: say so, and show the rest.
        Err(err) => {
            out += &format!("catch-up: the state cannot be read ({err:#})\n");
            return Ok(out + "\n");
        }
    };
    let first_start = match recorded {
        Some(first) => {
            out += &format!(
                "first start: {} (slots before it are never caught up)\n",
                rfc3339_seconds(first)
            );
            first
        }
        None => {
            out += "first start: none recorded; a start now records it, and slots before it are never caught up\n";
            schedule::whole_second(now)
        }
    };
    let from = now - schedule::window(schedule);
    let span = schedule.cron.slots_between(from, now, schedule::MAX_SLOTS);
    let plan = schedule::plan_catch_up(schedule.catch_up, &span, &handled, first_start);
    if plan.run.is_empty() {
        out += "catch-up: no missed slot would run\n";
    } else {
        out += "catch-up would run:\n";
        for slot in &plan.run {
            out += &format!("  {}\n", schedule::show(*slot, zone));
        }
    }
    if plan.dropped > 0 {
        out += &format!(
            "catch-up would drop {} missed slot{}\n",
            plan.dropped,
            if plan.dropped == 1 { "" } else { "s" }
        );
    }
    if let Some(addr) = schedule.metrics_listen {
        out += &format!("metrics: served at http://{addr}/metrics\n");
    }
    Ok(out + "\n")
}

/// The slot records and the first start, for the dry run.
fn read_state(
    schedule: &ScheduleConfig,
) -> anyhow::Result<(HashSet<schedule::Slot>, Option<schedule::Slot>)> {
    schedule::read_state(schedule)
}

/// The fleet part of the dry run: the splay (never past `max_time`, `--max-time`), and
/// the budget's and circuit's current state, read without changing it.
pub fn fleet(
    config: &FleetConfig,
    seed: Option<u64>,
    max_time: Option<Duration>,
    nested: bool,
) -> String {
    let mut out = String::new();
    if !config.splay.is_zero() {
        let splay = fleet::describe_splay(config.splay, seed, max_time);
        let _ = writeln!(out, "splay:       {splay}");
    }
    let Some(state) = &config.state else {
        return if out.is_empty() {
            out
        } else {
            format!("\n{out}")
        };
    };
    if nested {
        let _ = writeln!(
            out,
            "fleet:       nested inside another retry: the outer one counts budget and circuit"
        );
    }
    for line in fleet_state(state, config.budget.as_ref(), config.circuit.as_ref()) {
        let _ = writeln!(out, "{line}");
    }
    let probe = config.budget.as_ref().and_then(|b| b.probe_after);
    let _ = writeln!(out, "throttled:   {}", config.throttled.describe(probe));
    format!("\n{out}")
}

/// The scheduled-job part of the dry run: the lock, the `--once` key and where its
/// marker goes, and how long a PostgreSQL lease lives. Nothing is locked or read.
pub fn gate(gate: &GateOptions) -> String {
    let mut out = String::new();
    if let Some(lock) = &gate.lock {
        let _ = writeln!(out, "lock:        {}", lock.describe_lock());
        let _ = writeln!(
            out,
            "busy lock:   wait up to {}, then skip with exit status {}",
            human(gate.lock_wait),
            gate.busy_exit
        );
    }
    if let (Some(key), Some(state)) = (&gate.once, &gate.state) {
        let place = state.describe_marker(key);
        let _ = writeln!(
            out,
            "once:        key {key:?}: skip if it succeeded; else {place}"
        );
    }
    if out.is_empty() {
        out
    } else {
        format!("\n{out}")
    }
}

/// The `--dry-run` lines: the budget's and circuit's current state, read only.
fn fleet_state(
    target: &Backend,
    budget: Option<&BudgetConfig>,
    circuit: Option<&CircuitConfig>,
) -> Vec<String> {
    let bound = Bound::signals_only();
    let mut store = match state::open_fleet_read_only(target, &bound) {
        Ok(store) => store,
        Err(err) => return vec![format!("fleet:       state unreadable: {err:#}")],
    };
    let mut lines = Vec::new();
    if let Some(b) = budget {
        let line = match store.tokens(b, &bound) {
            Ok(t) => format!(
                "budget:      {} in {}",
                state::describe_budget(t, b),
                store.describe()
            ),
            Err(err) => format!("budget:      {}: unreadable: {err:#}", b.name),
        };
        lines.push(line);
    }
    if let Some(c) = circuit {
        let line = match store.circuit(c, &bound) {
            Ok(record) => format!("circuit:     {}", record.describe(c, state::now_ms())),
            Err(err) => format!("circuit:     {}: unreadable: {err:#}", c.name),
        };
        lines.push(line);
    }
    lines
}
