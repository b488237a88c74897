//! The options under "Hooks": the commands run after an attempt that will be retried,
//! after giving up and after success, and their time limit; both modes.

use std::time::Duration;

use super::parsed;
use crate::cli::values::hook_value;
use crate::parse;

// Each default, named once: the field's `default_value` and `Default` below read it.
const HOOK_TIMEOUT: &str = "30s";

#[derive(clap::Args, Debug, Clone)]
#[group(skip)]
#[command(next_help_heading = super::HOOKS)]
pub struct HookArgs {
    /// Run CMD with sh -c after a failed attempt that will be retried, during the sleep
    ///
    /// The next attempt starts when the sleep is over or CMD has ended, whichever is later;
    /// both count towards --max-time. CMD gets RETRY_NEXT_DELAY_MS besides the variables
    /// every hook gets (see Environment).
    #[arg(long, value_name = "CMD", value_parser = hook_value)]
    pub on_retry: Option<String>,

    /// Run CMD with sh -c after the last attempt failed, with the report JSON on stdin
    ///
    /// Runs when at least one attempt ran and the run ends without success for any reason
    /// but a signal; never after a skip. How failed work reaches a queue to try later.
    #[arg(long, value_name = "CMD", value_parser = hook_value)]
    pub on_give_up: Option<String>,

    /// Run CMD with sh -c after an attempt succeeded, with the report JSON on stdin
    ///
    /// How a dead-man monitor hears of success, e.g. curl -fsS https://hc-ping.com/UUID.
    // Help text, not rustdoc: brackets and URLs are what the user types.
    #[allow(rustdoc::bare_urls)]
    #[arg(long, value_name = "CMD", value_parser = hook_value)]
    pub on_success: Option<String>,

    /// Limit on each hook: its processes get SIGTERM, then SIGKILL a second later
    ///
    /// Its processes are its group and those that left it; what a hook leaves running
    /// when it ends is ended the same way. A hook's output goes to stderr. A hook that fails or times out is a warning: it never
    /// changes the exit status or a retry decision.
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", default_value = HOOK_TIMEOUT, value_parser = parse::positive_duration)]
    pub hook_timeout: Duration,
}

impl Default for HookArgs {
    fn default() -> Self {
        HookArgs {
            on_retry: None,
            on_give_up: None,
            on_success: None,
            hook_timeout: parsed(parse::positive_duration, HOOK_TIMEOUT),
        }
    }
}
