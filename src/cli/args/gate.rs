//! The options under "Scheduled jobs": the gate in front of a run (a lock, a `--once`
//! key) and where its state lives; both modes. `--lock` and `--state` stay text: the
//! configuration reads them with the storage layer's grammar.

use std::time::Duration;

use clap::ValueHint;

use super::parsed;
use crate::cli::values::{lease_ttl_value, once_key_value};
use crate::domain::{LeaseTtl, lease_ttl_default_seconds};
use crate::parse;

// Each default, named once: the field's `default_value` and `Default` below read it.
const LOCK_WAIT: &str = "0";
const BUSY_EXIT: u8 = 0;

#[derive(clap::Args, Debug, Clone)]
#[group(skip)]
#[command(next_help_heading = super::JOBS)]
pub struct GateArgs {
    /// Run only while holding a lock: a file PATH (flock) or postgres://...#NAME
    ///
    /// A directory is locked itself, as flock(1) locks one.
    // The text: the configuration reads it with the storage layer's grammar.
    #[arg(long, value_name = "TARGET", value_hint = ValueHint::FilePath)]
    pub lock: Option<String>,

    /// Wait this long for a busy lock before skipping (0 = skip at once)
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", default_value = LOCK_WAIT, value_parser = parse::duration)]
    pub lock_wait: Duration,

    /// Exit status when skipped because the lock is busy
    #[arg(allow_hyphen_values = true, long, value_name = "CODE", default_value_t = BUSY_EXIT, value_parser = clap::value_parser!(u8))]
    pub busy_exit: u8,

    /// Skip if KEY already succeeded; record KEY after success
    ///
    /// A skip exits 0. Otherwise the run holds a lock on KEY, so concurrent runs with the
    /// same key never both run, and a failed run records nothing.
    #[arg(long, value_name = "KEY", value_parser = once_key_value)]
    pub once: Option<String>,

    /// Where markers, schedule records, budgets, circuits and fencing counters live: a
    /// directory or postgres://... [default: $XDG_STATE_HOME/retry or ~/.local/state/retry]
    ///
    /// A directory is created with mode 0700; an existing one must be owned by you or root
    /// and not writable by group or others, and a symbolic link where a state file goes is
    /// refused (exit 125): retry never writes outside it.
    // The text: the configuration reads it with the storage layer's grammar.
    #[arg(long, value_name = "TARGET", value_hint = ValueHint::DirPath)]
    pub state: Option<String>,

    // The default is `domain::LeaseTtl::DEFAULT`'s, named once there.
    #[arg(
        help = concat!("Lifetime of a PostgreSQL lease, 3s to 1h [default: ", lease_ttl_default_seconds!(), "s]"),
        long_help = concat!("Lifetime of a PostgreSQL lease, 3s to 1h [default: ", lease_ttl_default_seconds!(), "s]\n\n\
            A PostgreSQL lock (--lock postgres://...#NAME, a --once key or a slot in --state \
            postgres://...) is a lease renewed every TTL/3; a holder that cannot renew it for \
            2/3 of TTL loses it and its command is killed before TTL runs out. A holder killed by \
            SIGKILL keeps others out for up to TTL: a shorter TTL frees the lock sooner, a \
            longer one rides out longer network trouble."),
        allow_hyphen_values = true, long, value_name = "DUR", value_parser = lease_ttl_value
    )]
    pub lease_ttl: Option<LeaseTtl>,
}

impl Default for GateArgs {
    fn default() -> Self {
        GateArgs {
            lock: None,
            lock_wait: parsed(parse::duration, LOCK_WAIT),
            busy_exit: BUSY_EXIT,
            once: None,
            state: None,
            lease_ttl: None,
        }
    }
}
