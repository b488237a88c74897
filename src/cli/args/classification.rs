//! The options under "Classification (command mode)": which exit codes and output lines
//! make an attempt a success, a transient or a permanent failure. The output rules
//! apply in HTTP mode too (to the body), so they are in `BOTH_MODES`.

use crate::cli::values::{exit_codes_value, regex_value};
use crate::domain::ProfileName;
use crate::parse::{self, CodeSet};

// Each default, named once: the field's `default_value` and `Default` below read it.
const PROFILE: ProfileName = ProfileName::Auto;

#[derive(clap::Args, Debug, Clone)]
#[group(skip)]
#[command(next_help_heading = super::CLASSIFY)]
pub struct ClassificationArgs {
    /// Exit-code vocabulary of a known tool; auto picks one from the command's name
    #[arg(long, value_name = "NAME", value_enum, default_value_t = PROFILE)]
    pub profile: ProfileName,

    /// Exit codes that are permanent failures, e.g. 2,64-78
    ///
    /// An attempt stopped by --timeout counts as exit 124: --stop-on 124 makes timeouts
    /// permanent.
    #[arg(allow_hyphen_values = true, long, value_name = "LIST", value_parser = exit_codes_value("--stop-on"))]
    pub stop_on: Option<CodeSet>,

    /// Exit codes that are retried; every other non-zero exit becomes permanent, e.g. 75
    ///
    /// An attempt stopped by --timeout counts as exit 124: it is retried only when LIST
    /// names 124.
    #[arg(allow_hyphen_values = true, long, value_name = "LIST", value_parser = exit_codes_value("--retry-on"))]
    pub retry_on: Option<CodeSet>,

    /// Exit codes that count as success, e.g. 0,1 for grep
    #[arg(allow_hyphen_values = true, long, value_name = "LIST", value_parser = parse::exit_codes)]
    pub success_on: Option<CodeSet>,

    /// An output line matching REGEX makes the attempt a permanent failure (repeatable)
    ///
    /// Lines of stdout and stderr are checked; this rule comes first. Output still streams
    /// live and in order. In HTTP mode the response body's lines (its first MiB, decoded)
    /// are checked, and a body a rule made a failure is never written.
    #[arg(long, value_name = "REGEX", value_parser = regex_value)]
    pub stop_on_output: Vec<regex::bytes::Regex>,

    /// An output line matching REGEX makes the attempt transient, even on exit 0 (repeatable)
    ///
    /// Lines of stdout and stderr are checked after --stop-on-output and before the exit
    /// code rules. In HTTP mode the response body's lines, before the status rules, e.g.
    /// --retry-on-output ThrottlingException.
    #[arg(long, value_name = "REGEX", value_parser = regex_value)]
    pub retry_on_output: Vec<regex::bytes::Regex>,

    /// An output line matching REGEX makes the attempt a success, whatever its exit (repeatable)
    ///
    /// Checked after --retry-on-output and before the exit code rules, e.g.
    /// --success-on-output '^Already up to date'. In HTTP mode the response body's lines.
    #[arg(long, value_name = "REGEX", value_parser = regex_value)]
    pub success_on_output: Vec<regex::bytes::Regex>,
}

impl Default for ClassificationArgs {
    fn default() -> Self {
        ClassificationArgs {
            profile: PROFILE,
            stop_on: None,
            retry_on: None,
            success_on: None,
            stop_on_output: Vec::new(),
            retry_on_output: Vec::new(),
            success_on_output: Vec::new(),
        }
    }
}
