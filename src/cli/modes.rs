//! The two modes a target selects, and which options belong to one mode only (by
//! their help heading), for refusing an option of the other mode.

use super::args::{CLASSIFY, CURL, HTTP, PROCESS};

/// The two modes a target selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Command,
    Http,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Command => "command mode",
            Mode::Http => "HTTP mode",
        }
    }
}

/// Options of both modes that sit under a heading of one mode (docs/internals.md,
/// "Options that belong to one mode"): in HTTP mode the output rules match the body, in
/// command mode the status lists judge the status curl -f prints.
const BOTH_MODES: &[&str] = &[
    "idempotency_key",
    "max_retry_after",
    "stop_on_output",
    "retry_on_output",
    "success_on_output",
    "retry_on_status",
    "stop_on_status",
];

/// The one mode an option belongs to, from its help heading; `None` for both.
pub fn mode_of(arg: &clap::Arg) -> Option<Mode> {
    if BOTH_MODES.contains(&arg.get_id().as_str()) {
        return None;
    }
    match arg.get_help_heading() {
        Some(CLASSIFY | PROCESS) => Some(Mode::Command),
        Some(HTTP | CURL) => Some(Mode::Http),
        _ => None,
    }
}
