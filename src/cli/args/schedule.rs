//! The options under "Running on a schedule": `--schedule` and `--crontab`, the job's
//! name, missed and overlapping slots, the stop's grace and the metrics; both modes.
//! `--run-slot` and `--slot-log-fd` are hidden: the scheduler gives them to each slot's
//! run.

use std::time::Duration;

use clap::{ValueEnum, ValueHint};

use super::parsed;
use crate::cli::values::{job_name_value, metrics_listen_value, run_slot_value};
use crate::cron;
use crate::domain::{CatchUp, Overlap};
use crate::parse;

// Each default, named once: the field's `default_value` and `Default` below read it.
const CATCH_UP: CatchUp = CatchUp::Latest;
const CATCH_UP_WINDOW: &str = "24h";
const OVERLAP: Overlap = Overlap::Skip;
const GRACE: &str = "20s";

#[derive(clap::Args, Debug, Clone)]
#[group(skip)]
#[command(next_help_heading = super::SCHEDULE)]
pub struct ScheduleArgs {
    /// Run in the foreground, one run at each time CRON names
    ///
    /// Five fields (minute hour day month weekday), or seven (second minute hour day month
    /// weekday year, as supercronic reads them); names, ranges, lists, steps, @hourly,
    /// @daily (@midnight), @weekly, @monthly, @yearly (@annually), or @every DUR (slots at
    /// whole multiples of DUR since the Unix epoch). Six fields are refused: tools read
    /// them as seconds first or as year last; @reboot only in a crontab (alone, run the
    /// command before the scheduler starts). With both day fields restricted a day matching either runs,
    /// and one that begins with * is unrestricted (cronie's rule); weekdays take # and L
    /// (MON#2, FRIL). Or one to four words of a systemd calendar expression (OnCalendar=):
    /// weekdays (Mon..Fri, Sat,Sun), a date (2026-12-24, *-*-01, *-02~03: the third last
    /// day), a time (09:00, *:0/15, 8..18/2:00), or minutely, hourly, daily, weekly,
    /// monthly, quarterly, semiannually, yearly; a zone last (UTC, Europe/Berlin) wins over
    /// --tz. Across daylight-saving changes CRON follows cron, a calendar expression
    /// systemd. Each slot runs once across schedulers sharing --state (key JOB@SLOT); stop
    /// with SIGINT or SIGTERM.
    #[arg(long, value_name = "CRON", conflicts_with_all = ["once", "busy_exit"], value_parser = cron::Expression::parse)]
    pub schedule: Option<cron::Expression>,

    /// Run every job of a crontab file in this one process
    ///
    /// One job a line: CRON COMMAND (COMMAND run by /bin/sh -c, on Windows cmd /c), NAME=VALUE and
    /// CRON_TZ=ZONE lines for the jobs below them, # comments; a line's own retry options
    /// before -- when the text after CRON starts with -. Options given here apply to every
    /// job; a line's own override them. The whole file is checked first (FILE:LINE).
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub crontab: Option<std::path::PathBuf>,

    /// How the jobs' output is written: each line labelled with its job and slot, or raw
    /// [default: labelled under --crontab, raw under --schedule]
    #[arg(long, value_name = "HOW", value_enum, requires = "scheduling")]
    pub job_output: Option<JobOutput>,

    /// Run one slot of the schedule and exit (a crontab's scheduler runs each slot so)
    #[arg(long, value_name = "SLOT", hide = true, requires = "schedule", value_parser = run_slot_value)]
    pub run_slot: Option<jiff::Timestamp>,

    /// The descriptor a slot run writes its own lines to (the crontab scheduler's stderr)
    #[arg(long, value_name = "FD", hide = true, requires = "run_slot", value_parser = clap::value_parser!(i32).range(3..))]
    pub slot_log_fd: Option<i32>,

    /// The slot is a missed one the scheduler catches up (a busy key is waited for a while)
    #[arg(long, hide = true, requires = "run_slot")]
    pub caught_up: bool,

    /// The job's name in slot keys, locks and logs
    /// [default: the command's base name (or the URL's host) and 8 hex digits of its SHA-256]
    #[arg(long, value_name = "NAME", requires = "scheduling", value_parser = job_name_value)]
    pub job: Option<String>,

    /// What to do with missed slots (no record in --state)
    #[arg(long, value_name = "WHICH", value_enum, default_value_t = CATCH_UP, requires = "scheduling")]
    pub catch_up: CatchUp,

    /// How far back missed slots are looked for
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", default_value = CATCH_UP_WINDOW, value_parser = parse::duration, requires = "scheduling")]
    pub catch_up_window: Duration,

    /// A slot that comes while the job's previous slot still runs (on any scheduler sharing --state)
    ///
    /// skip: not run, recorded as skipped; queue: run once the other ends; allow: run beside
    /// it; replace: the running one is stopped, then this one runs.
    #[arg(long, value_name = "WHAT", value_enum, default_value_t = OVERLAP, requires = "scheduling")]
    pub overlap: Overlap,

    /// How long a running slot may go on after SIGINT or SIGTERM stops the scheduler
    ///
    /// No new slot and no new attempt starts; the attempt under way gets this long to
    /// finish, then SIGTERM and --kill-after. 0 ends it at once; a second SIGINT or SIGTERM
    /// ends it at once too.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", default_value = GRACE, value_parser = parse::duration, requires = "scheduling")]
    pub grace: Duration,

    /// The zone CRON is read in (IANA name, from TZDIR or /usr/share/zoneinfo; a zone named in a calendar expression wins) [default: TZ, else local]
    #[arg(long, value_name = "ZONE", requires = "scheduling")]
    pub tz: Option<String>,

    /// Serve the scheduler's Prometheus metrics over HTTP at http://ADDR:PORT/metrics
    ///
    /// ADDR is an IP address (127.0.0.1, 0.0.0.0, [::]); names are not looked up. Port 0
    /// takes a free port, which the start-up line names. Every series has the label
    /// retry_job: slots by outcome, attempts, caught-up and dropped slots, and the times of
    /// the last slot, the last success and the next slot. A port that cannot be bound is
    /// exit 125 at start.
    // Help text, not rustdoc: brackets and URLs are what the user types.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long, value_name = "ADDR:PORT", value_parser = metrics_listen_value)]
    pub metrics_listen: Option<std::net::SocketAddr>,
}

impl Default for ScheduleArgs {
    fn default() -> Self {
        ScheduleArgs {
            schedule: None,
            crontab: None,
            job_output: None,
            run_slot: None,
            slot_log_fd: None,
            caught_up: false,
            job: None,
            catch_up: CATCH_UP,
            catch_up_window: parsed(parse::duration, CATCH_UP_WINDOW),
            overlap: OVERLAP,
            grace: parsed(parse::duration, GRACE),
            tz: None,
            metrics_listen: None,
        }
    }
}

/// `--job-output`: how a crontab's jobs' output lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum JobOutput {
    /// `TIMESTAMP [JOB@SLOT] line` (JSON under --log-format json), each line whole.
    Labelled,
    /// Unchanged.
    Raw,
}
