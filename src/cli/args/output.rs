//! The options under "Output and reporting": how much retry says on stderr and in which
//! format, the report file, the trace's collector and the dry run; both modes.

use std::path::PathBuf;

use clap::{ArgAction, ValueHint};

use crate::domain::LogFormat;
use crate::parse;

// Each default, named once: the field's `default_value` and `Default` below read it.
const LOG_FORMAT: LogFormat = LogFormat::Text;

#[derive(clap::Args, Debug, Clone)]
#[group(skip)]
#[command(next_help_heading = super::OUTPUT)]
pub struct OutputArgs {
    /// Less on stderr: no per-attempt lines (-qq: nothing but retry's own errors)
    #[arg(short = 'q', long, action = ArgAction::Count, conflicts_with = "verbose")]
    pub quiet: u8,

    /// More on stderr (repeatable)
    #[arg(short = 'v', long, action = ArgAction::Count)]
    pub verbose: u8,

    /// Format of stderr event lines
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LOG_FORMAT)]
    pub log_format: LogFormat,

    /// Write a JSON record of every attempt and the result to FILE (- for stderr)
    ///
    /// FILE is written atomically when the run ends, also on failure and on signals;
    /// --report - writes the same JSON to stderr on one line, never to a file named -.
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub report: Option<PathBuf>,

    /// Send the run's trace to the OpenTelemetry collector at URL (OTLP/HTTP)
    ///
    /// URL is read as OTEL_EXPORTER_OTLP_ENDPOINT is (/v1/traces appended) and wins over
    /// it and over OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; either variable alone turns tracing
    /// on too, and the other OTEL_* variables apply. The run is a span, each attempt,
    /// wait and hook one under it; each attempt's command gets TRACEPARENT naming its
    /// span, each request a traceparent header. Sent after the report, within 1s.
    #[arg(long, value_name = "URL", value_parser = parse::otlp_endpoint)]
    pub otel: Option<reqwest::Url>,

    /// Print the schedule and classification rules, run nothing, exit 0
    #[arg(long)]
    pub dry_run: bool,
}

impl Default for OutputArgs {
    fn default() -> Self {
        OutputArgs {
            quiet: 0,
            verbose: 0,
            log_format: LOG_FORMAT,
            report: None,
            otel: None,
            dry_run: false,
        }
    }
}
