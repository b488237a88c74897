//! The fixed choices a user makes among named options: which tool's exit codes to
//! read, what a scheduler does with missed and overlapping slots, where a command's
//! stdin comes from, the log format and an address family. clap offers them as the
//! flags' possible values (their doc comments are the help text); the code that acts
//! on them never sees clap's definition.

use std::net::IpAddr;
use std::time::Duration;

use super::human;

/// `--profile`: whose exit-code vocabulary classifies a command.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProfileName {
    /// Pick from the command's base name (curl, wget, ssh/scp/sftp, rsync, git), else generic
    Auto,
    /// Exit codes only: 0 success; 126, 127 and most sysexits permanent; the rest transient
    Generic,
    /// curl's exit codes, and for exit 22 the HTTP status it prints on stderr
    Curl,
    /// wget's exit codes, and for exit 8 the HTTP status it prints on stderr
    Wget,
    /// ssh, scp, sftp: 255 (connection failure) is transient, other codes are the remote's
    Ssh,
    /// rsync's network and partial-transfer codes are transient
    Rsync,
    /// git: 128 is transient only when stderr shows a network failure
    Git,
}

/// `--catch-up`: what a scheduler does with slots that have no record.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CatchUp {
    /// Run none; say how many were dropped
    None,
    /// Run the most recent missed slot of the window
    Latest,
    /// Run every missed slot of the window, oldest first
    All,
}

/// `--overlap`: a slot that comes while the job's previous slot still runs, on this
/// scheduler or any other sharing `--state`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlap {
    /// Do not run it; record and log it as skipped
    Skip,
    /// Run it after the running one ends
    Queue,
    /// Run it beside the running one (supercronic's -overlapping)
    Allow,
    /// Stop the running one, then run it once that has let go (Kubernetes' Replace)
    Replace,
}

/// `--stdin`: where a command's stdin comes from on each attempt.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum StdinMode {
    /// Regular file: rewind; pipe or socket: record and replay; terminal: inherit
    Auto,
    /// Record what the first attempt reads and replay it to later attempts
    Replay,
    /// Pass retry's stdin through untouched
    Inherit,
    /// Give every attempt /dev/null
    Null,
}

/// `--log-format`: how stderr event lines are written.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// Lines starting with "retry: "
    Text,
    /// JSON Lines, one event per line
    Json,
}

/// `--throttled`: what a spent retry budget or an open circuit does to a run.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Throttled {
    /// End the run: a refused retry exits with the last attempt's status, an open circuit with --circuit-exit
    #[default]
    Exit,
    /// Hold the run, sending nothing, and ask again later (needs --max-time, which bounds it)
    Wait,
}

impl Throttled {
    /// What this does to a run, for `--dry-run`; `probe` is how often a spent budget
    /// lets one held retry through fleet-wide (`--throttled wait`).
    pub fn describe(self, probe: Option<Duration>) -> String {
        match self {
            Throttled::Exit => "exit: a refused retry ends the run with the last attempt's \
                                status; an open circuit ends it with --circuit-exit"
                .into(),
            Throttled::Wait => {
                let probe = probe
                    .map(|p| {
                        format!(
                            "; while the budget is spent, one held retry per {} fleet-wide is \
                             the probe",
                            human(p)
                        )
                    })
                    .unwrap_or_default();
                format!(
                    "wait: a refused retry or an open circuit holds the run (sending nothing, \
                     not counted in -a) until --max-time{probe}"
                )
            }
        }
    }
}

/// Which addresses a name may resolve to (`-4` / `-6`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    /// Whether `ip` is of this family.
    pub fn admits(self, ip: &IpAddr) -> bool {
        match self {
            Family::V4 => ip.is_ipv4(),
            Family::V6 => ip.is_ipv6(),
        }
    }
}
