//! The clap definition: the one source of every flag, its help text, the man page
//! and the shell completions, and the parse that runs before `config`. `Cli` is the
//! target and one group of options per help heading, each in its file of [`args`], with
//! its defaults. Beside it: [`help`] (the prose of `--help` and the man page), [`values`]
//! (retry's value parsers, which return the types the program takes), [`modes`] (which
//! options belong to one mode), [`curl`] (curl's value parsers), [`curl_words`] (curl's
//! refused options and aliases), [`spellings`] (other tools' words for retry's options)
//! and [`plain`] (a command line without options, read without clap). A bad value is
//! refused here, before anything runs; checking the flags against each other is
//! `config`'s work.

mod args;
mod crontab_line;
pub mod curl;
pub mod curl_words;
pub mod help;
mod modes;
mod plain;
pub mod spellings;
pub mod usage;
mod values;

use std::ffi::OsString;

use clap::{Parser, ValueEnum};

pub use args::{
    ClassificationArgs, CurlArgs, FleetArgs, GateArgs, HookArgs, HttpArgs, JobOutput, OutputArgs,
    ProcessArgs, ScheduleArgs, TimingArgs,
};
pub use modes::{Mode, mode_of};
pub use values::{job_name_value, signal_value};

const AFTER_HELP: &str = "Run `retry --help` for details and examples.";

// `Default` is every option at its default, as clap gives it.
#[derive(Parser, Debug, Clone, Default)]
#[command(
    name = "retry",
    // `retry X.Y.Z (COMMIT DATE TARGET)` for -V and --version alike, made by build.rs;
    // the man page and completions carry X.Y.Z alone (src/generate/).
    version = env!("RETRY_VERSION_LINE"),
    about = "Run a command or HTTP request, retrying only failures another attempt could fix",
    long_about = "Run a command or an HTTP request, retrying only the failures that another \
                  attempt could fix: transient failures are retried with jittered exponential \
                  backoff (or as long as the server's Retry-After says), permanent ones stop \
                  at once, and the run ends after the attempt limit or the time limit with \
                  the last failure's exit status.",
    override_usage = "retry [OPTIONS] [--] COMMAND [ARG]...\n       retry [OPTIONS] URL",
    after_help = AFTER_HELP,
    max_term_width = help::MAX_WIDTH,
    group(clap::ArgGroup::new("scheduling").args(["schedule", "crontab"]).multiple(false))
)]
pub struct Cli {
    // First, before any group sets a heading: the target is listed under Arguments.
    /// The command and its arguments, or a URL
    #[arg(
        value_name = "COMMAND|URL",
        trailing_var_arg = true,
        required_unless_present_any = ["generate", "crontab"],
        conflicts_with = "crontab"
    )]
    pub target: Vec<OsString>,

    /// Write a completion script or the man page to stdout
    #[arg(long, value_name = "KIND", value_enum, hide = true)]
    pub generate: Option<GenerateKind>,

    #[command(flatten)]
    pub timing: TimingArgs,
    #[command(flatten)]
    pub classification: ClassificationArgs,
    #[command(flatten)]
    pub process: ProcessArgs,
    #[command(flatten)]
    pub http: HttpArgs,
    #[command(flatten)]
    pub curl: CurlArgs,
    #[command(flatten)]
    pub gate: GateArgs,
    #[command(flatten)]
    pub hooks: HookArgs,
    #[command(flatten)]
    pub scheduling: ScheduleArgs,
    #[command(flatten)]
    pub fleet: FleetArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum GenerateKind {
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
    Man,
}

/// Parses the command line; `Err` carries clap's error, to be printed with exit 125.
pub fn parse<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    if let Some(cli) = plain::without_options(&args) {
        return Ok(cli);
    }
    // A crontab's slot runs take the command line's options, then the line's own,
    // which override them (as the scheduler builds them: `--run-slot` before `--`).
    let slot_run = args
        .iter()
        .take_while(|a| *a != "--")
        .any(|a| a == "--run-slot");
    parse_with(args, slot_run)
}

/// Parses a crontab line's options after the command line's: a later value of an
/// option replaces an earlier one instead of being refused as given twice.
pub fn parse_overriding(args: Vec<OsString>) -> Result<Cli, clap::Error> {
    parse_with(args, true)
}

fn parse_with(args: Vec<OsString>, overriding: bool) -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let mut cmd = Cli::command().args_override_self(overriding);
    // The long epilogue is formatted only when it will be shown: building it costs
    // more than the rest of start-up, and `retry -- true` must start fast.
    if args.iter().any(|a| a == "--help") {
        let width = help::width();
        cmd = cmd
            .term_width(width)
            .after_long_help(help::after_long_help(width));
    } else if args.iter().skip(1).any(asks_short_help) {
        cmd = help::short(cmd).term_width(help::width().min(help::SHORT_WIDTH));
    }
    let args = curl_words::refuse_unknown_options(&mut cmd, args)?;
    // -m and -t are one option to clap; only the words tell which was typed.
    let typed_m = curl_words::typed(&cmd, &args, "-m");
    let mut matches = cmd.try_get_matches_from_mut(args)?;
    curl_words::refuse_other_mode(&cmd, &matches)?;
    crontab_line::refuse_per_job(&cmd, &matches)?;
    // Read before the values are taken out: the body options in command-line order,
    // and whether --stdin was given at all (--schedule refuses it).
    let data_args = curl::data_args(&matches);
    let stdin_given = matches.value_source("stdin") == Some(clap::parser::ValueSource::CommandLine);
    let jitter_given =
        matches.value_source("jitter") == Some(clap::parser::ValueSource::CommandLine);
    // `_mut` takes the values out instead of cloning every match first.
    let mut cli = Cli::from_arg_matches_mut(&mut matches)?;
    cli.http.data_args = data_args;
    cli.process.stdin_given = stdin_given;
    cli.timing.jitter_given = jitter_given;
    curl_words::apply_aliases(&mut cli, typed_m)?;
    // Parsing happens once per process: freeing clap's command and matches one by one
    // would cost more instructions than building them, for memory the exit returns.
    std::mem::forget(cmd);
    std::mem::forget(matches);
    Ok(cli)
}

/// Whether an argument may be `-h`, alone or in a group of short flags (`-vh`); a
/// false yes only trims a help that is not shown.
fn asks_short_help(arg: &OsString) -> bool {
    let arg = arg.to_string_lossy();
    arg.starts_with('-') && !arg.starts_with("--") && arg.contains('h')
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn target_takes_everything_after_it() {
        let cli = parse(["retry", "-a", "3", "ls", "-la", "--attempts", "9"]).unwrap();
        assert_eq!(cli.timing.attempts, 3);
        assert_eq!(cli.target, ["ls", "-la", "--attempts", "9"]);
    }

    #[test]
    fn double_dash_separates() {
        let cli = parse(["retry", "--", "-weird", "x"]).unwrap();
        assert_eq!(cli.target, ["-weird", "x"]);
    }

    #[test]
    fn bad_values_name_the_flag() {
        let err = parse(["retry", "--delay", "soon", "true"]).unwrap_err();
        assert!(err.to_string().contains("--delay"), "{err}");
        let err = parse(["retry", "--attempts", "none", "true"]).unwrap_err();
        assert!(err.to_string().contains("--attempts"), "{err}");
        let err = parse(["retry", "--stop-on-output", "(", "true"]).unwrap_err();
        assert!(err.to_string().contains("--stop-on-output"), "{err}");
    }
}
