//! The options under "Process handling (command mode)": the command's stdin, whether
//! its output is held, and how a timed-out attempt is stopped.

use std::time::Duration;

use super::parsed;
use crate::cli::values::signal_value;
use crate::domain::StdinMode;
use crate::parse;

// Each default, named once: the field's `default_value` and `Default` below read it.
const STDIN: StdinMode = StdinMode::Auto;
const KILL_AFTER: &str = "5s";
const SIGNAL: &str = "TERM";

#[derive(clap::Args, Debug, Clone)]
#[group(skip)]
#[command(next_help_heading = super::PROCESS)]
pub struct ProcessArgs {
    /// Where the command's stdin comes from on each attempt
    #[arg(long, value_name = "MODE", value_enum, default_value_t = STDIN)]
    pub stdin: StdinMode,

    /// Spool each attempt's stdout and write only the final attempt's
    ///
    /// The spool moves to disk past a few MiB. Only the attempt that succeeded, or the last
    /// one, reaches stdout, so a pipeline downstream sees exactly one attempt's output. A
    /// wrapped curl or wget (its profile in force) whose stdout is a pipe or a file is held
    /// without it, so that a failed attempt's partial body never gets there.
    #[arg(long)]
    pub hold_stdout: bool,

    /// Stream a wrapped curl's or wget's stdout live: do not hold it
    ///
    /// A curl or wget (the curl or wget profile) writing to a pipe or a file has its stdout
    /// held as with --hold-stdout; this lets each attempt's output through as it comes,
    /// a failed attempt's partial body included. Accepted for any command.
    #[arg(long, conflicts_with = "hold_stdout")]
    pub no_hold_stdout: bool,

    /// Spool each attempt's stderr and write only the final attempt's, as --hold-stdout
    ///
    /// retry's own lines are not held. E.g. --hold-stdout --hold-stderr: a log sees one
    /// attempt's output, stdout first.
    #[arg(long)]
    pub hold_stderr: bool,

    /// After --timeout's SIGTERM, wait this long before SIGKILL
    ///
    /// An attempt that needed the SIGKILL exits 137, as timeout(1) does (to exit code rules
    /// it is still a timeout, 124); the log says "timed out after 1s, killed 5s later".
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", default_value = KILL_AFTER, value_parser = parse::duration)]
    pub kill_after: Duration,

    /// The signal --timeout sends first, e.g. --signal INT (GNU timeout's -s)
    ///
    /// A name (INT, SIGINT) or number. SIGCONT follows it, and SIGKILL after --kill-after.
    /// The attempt starts with it at its default even if retry inherited it ignored.
    #[arg(long, value_name = "SIG", default_value = SIGNAL, value_parser = signal_value)]
    pub signal: crate::sys::Signal,

    /// A timed-out attempt exits with its own status (128+N for signal N), not 124
    ///
    /// As GNU timeout's --preserve-status. Exit code rules still see 124.
    #[arg(long)]
    pub preserve_status: bool,

    /// Whether --stdin was given, not defaulted (filled in by `parse`).
    #[arg(skip)]
    pub stdin_given: bool,
}

impl Default for ProcessArgs {
    fn default() -> Self {
        ProcessArgs {
            stdin: STDIN,
            hold_stdout: false,
            no_hold_stdout: false,
            hold_stderr: false,
            kill_after: parsed(parse::duration, KILL_AFTER),
            signal: parsed(signal_value, SIGNAL),
            preserve_status: false,
            stdin_given: false,
        }
    }
}
