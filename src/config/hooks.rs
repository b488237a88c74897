//! The hooks' settings: which shell commands run after a failed attempt that
//! will be retried, after giving up and after success, and their timeout.
//! Running them is `hooks`' work.

use std::time::Duration;

use crate::cli::Cli;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HookConfig {
    /// `--on-retry`: runs inside the backoff sleep.
    pub on_retry: Option<String>,
    /// `--on-give-up`: runs after the last attempt failed, the report on stdin.
    pub on_give_up: Option<String>,
    /// `--on-success`: runs after an attempt succeeded, the report on stdin.
    pub on_success: Option<String>,
    /// `--hook-timeout`: limit on each hook.
    pub timeout: Duration,
}

impl HookConfig {
    pub fn from_cli(cli: &Cli) -> HookConfig {
        HookConfig {
            on_retry: cli.hooks.on_retry.clone(),
            on_give_up: cli.hooks.on_give_up.clone(),
            on_success: cli.hooks.on_success.clone(),
            timeout: cli.hooks.hook_timeout,
        }
    }

    /// Whether any hook may run (each starts processes retry must be able to end).
    pub fn any(&self) -> bool {
        self.on_retry.is_some() || self.on_give_up.is_some() || self.on_success.is_some()
    }
}
