//! The options of `Cli`, one group a help heading, each flattened into `Cli` in the
//! order `--help` lists them. A group's file holds its fields (their doc comments are
//! the `--help` and man page text) and names each default once, in a constant that
//! clap's `default_value` and the group's `Default` both read: `Default` is the parse of
//! a command line without options ([`plain`](super::plain)), which skips clap. Which mode
//! a heading belongs to is [`modes`](super::modes)'.
//!
//! Value options take `allow_hyphen_values`, so that `--max-delay -1s` is refused as a
//! bad value of --max-delay rather than as an unknown flag. The groups have no doc
//! comments (clap would take a flattened struct's as `Cli`'s about text) and no
//! `ArgGroup` of their own (`#[group(skip)]`): no rule refers to a heading's options
//! together.

mod classification;
mod curl;
mod fleet;
mod gate;
mod hooks;
mod http;
mod output;
mod process;
mod schedule;
mod timing;

pub use classification::ClassificationArgs;
pub use curl::CurlArgs;
pub use fleet::FleetArgs;
pub use gate::GateArgs;
pub use hooks::HookArgs;
pub use http::HttpArgs;
pub use output::OutputArgs;
pub use process::ProcessArgs;
pub use schedule::{JobOutput, ScheduleArgs};
pub use timing::TimingArgs;

// The help headings, in the order `--help` shows them.
pub const TIMING: &str = "Attempts and timing";
pub const CLASSIFY: &str = "Classification (command mode)";
pub const PROCESS: &str = "Process handling (command mode)";
pub const HTTP: &str = "HTTP mode";
pub const CURL: &str = "curl's options (HTTP mode)";
pub const JOBS: &str = "Scheduled jobs";
pub const HOOKS: &str = "Hooks";
pub const SCHEDULE: &str = "Running on a schedule";
pub const FLEET: &str = "Fleets (state shared through --state)";
pub const OUTPUT: &str = "Output and reporting";

/// A default written as clap shows it (`"5s"`), read by the value parser clap reads it
/// with, so that `Default` and clap's parse cannot differ.
fn parsed<T>(parser: fn(&str) -> Result<T, String>, text: &str) -> T {
    parser(text).unwrap_or_else(|err| panic!("the default {text:?} is refused: {err}"))
}
