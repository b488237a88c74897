//! The options under "Attempts and timing": how many attempts, the backoff between them
//! and the limits on one attempt and on the run; both modes.

use std::time::Duration;

use super::parsed;
use crate::domain::{BackoffKind, JitterKind, max_delay_default_seconds};
use crate::parse;

// Each default, named once: the field's `default_value` and `Default` below read it.
const ATTEMPTS: u32 = 5;
const DELAY: &str = "1s";
const BACKOFF: BackoffKind = BackoffKind::Exponential;
const FACTOR: f64 = 2.0;
const JITTER: JitterKind = JitterKind::Full;

#[derive(clap::Args, Debug, Clone)]
#[group(skip)]
#[command(next_help_heading = super::TIMING)]
pub struct TimingArgs {
    /// Total attempts, the first included (1 = never retry; 0 = no limit, with --max-time)
    ///
    /// -a 0 --max-time 10m keeps attempting until the time limit runs out (RETRY_ATTEMPTS is
    /// then 0).
    #[arg(allow_hyphen_values = true, short = 'a', long, value_name = "N", default_value_t = ATTEMPTS, value_parser = parse::attempt_limit)]
    pub attempts: u32,

    /// Base delay before the first retry
    ///
    /// Later delays grow as --backoff says. DUR is 250ms, 2s, 1m30s or a number of
    /// seconds such as 1.5.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", default_value = DELAY, value_parser = parse::duration)]
    pub delay: Duration,

    // The default is the configuration's (it rises to --delay), named once in `domain`.
    #[arg(
        help = concat!("Cap on any one backoff sleep, applied before jitter [default: ", max_delay_default_seconds!(), "s, or --delay when longer]"),
        long_help = concat!("Cap on any one backoff sleep, applied before jitter [default: ", max_delay_default_seconds!(), "s, or --delay when longer]\n\nNever below --delay: a --max-delay shorter than --delay is refused."),
        allow_hyphen_values = true, long, value_name = "DUR", value_parser = parse::duration
    )]
    pub max_delay: Option<Duration>,

    /// How the delay grows from one retry to the next
    #[arg(long, value_name = "KIND", value_enum, default_value_t = BACKOFF)]
    pub backoff: BackoffKind,

    /// Exponential growth factor, above 1 (at most 1000)
    #[arg(allow_hyphen_values = true, long, value_name = "F", default_value_t = FACTOR, value_parser = parse::factor)]
    pub factor: f64,

    /// How each sleep d is randomised, so clients that failed together return apart
    #[arg(short = 'j', long, value_name = "KIND", value_enum, default_value_t = JITTER)]
    pub jitter: JitterKind,

    /// The sleeps before retry 1, 2, 3 ..., the last one repeating, e.g. 1s,5s,30s
    ///
    /// Instead of --delay, --backoff, --factor and --max-delay. Jitter applies as usual:
    /// -j none sleeps exactly these.
    #[arg(long, value_name = "LIST", value_parser = parse::delay_list, conflicts_with_all = ["delay", "backoff", "factor", "max_delay", "retry_delay"])]
    pub delays: Option<parse::DelayList>,

    /// Succeed only after N successful attempts in a row, e.g. --consecutive 3
    ///
    /// A failure starts the count again; -a and --max-time count every attempt. The sleep
    /// after a success is --delay; after a failure, the backoff from its start.
    #[arg(allow_hyphen_values = true, long, value_name = "N", value_parser = parse::in_a_row)]
    pub consecutive: Option<u32>,

    /// Attempt again after every success, until an attempt fails (hunting a flaky test)
    ///
    /// The first failure ends the run with its status; if every attempt succeeds, retry
    /// exits 0 saying no failure was seen. E.g. --until-failure -a 100 -- cargo test flaky.
    #[arg(long, conflicts_with_all = ["consecutive", "success_on", "once", "schedule"])]
    pub until_failure: bool,

    /// Let the backoff alone decide: ignore Retry-After, RateLimit-Reset and RETRY_CONTROL waits
    ///
    /// As urllib3's respect_retry_after_header=False, e.g. --ignore-retry-after --delay 5s.
    /// What was asked is still logged and reported; --max-retry-after no longer applies.
    #[arg(long, conflicts_with = "max_retry_after")]
    pub ignore_retry_after: bool,

    /// Limit on one attempt; an attempt that runs out is a transient failure
    ///
    /// In command mode the process group, and the processes that left it, get SIGTERM, then
    /// SIGKILL after --kill-after; if it was the last attempt, retry exits 124.
    ///
    /// -m is curl's spelling of the same limit (curl's per-transfer --max-time); -m with
    /// --max-time is refused. 0 means no limit, as `timeout 0` and curl's -m 0.
    #[arg(allow_hyphen_values = true, short = 't', visible_short_alias = 'm', long, value_name = "DUR", value_parser = parse::duration)]
    pub timeout: Option<Duration>,

    /// Wall-clock time limit for the attempts and the waits before and between them
    ///
    /// No sleep or attempt starts that would end past it, each attempt's --timeout is
    /// cut to what is left, and --on-retry ends with it. What follows the last attempt
    /// has its own limits: --on-give-up and --on-success still run, under --hook-timeout.
    /// Beside curl's --retry, --retry-max-time, --retry-delay, --retry-all-errors or
    /// --retry-connrefused it keeps curl's meaning: the limit on each transfer (-m), and
    /// --retry-max-time alone bounds the run.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", value_parser = parse::positive_duration)]
    pub max_time: Option<Duration>,

    /// Seed the jitter, for reproducible schedules
    #[arg(allow_hyphen_values = true, long, value_name = "N")]
    pub seed: Option<u64>,

    /// Retry even when running inside another retry (RETRY_DEPTH >= 1)
    #[arg(long)]
    pub allow_nested: bool,

    /// Whether -j was given, not defaulted (filled in by `parse`).
    #[arg(skip)]
    pub jitter_given: bool,

    /// The curl retry word that made --max-time curl's per-transfer limit, now in
    /// `timeout` (filled in by `parse`).
    #[arg(skip)]
    pub max_time_per_transfer: Option<&'static str>,
}

impl Default for TimingArgs {
    fn default() -> Self {
        TimingArgs {
            attempts: ATTEMPTS,
            delay: parsed(parse::duration, DELAY),
            max_delay: None,
            backoff: BACKOFF,
            factor: FACTOR,
            jitter: JITTER,
            delays: None,
            consecutive: None,
            until_failure: false,
            ignore_retry_after: false,
            timeout: None,
            max_time: None,
            seed: None,
            allow_nested: false,
            jitter_given: false,
            max_time_per_transfer: None,
        }
    }
}
