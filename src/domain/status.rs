//! retry's exit statuses that are not the command's own, and signal names: one
//! place for the numbers that scripts read.

pub struct ExitCode;

impl ExitCode {
    /// retry's own failure: bad usage or value, state unreachable, lock lost.
    pub const USAGE: i32 = 125;
    /// The last attempt was stopped by `--timeout` (as GNU timeout says).
    pub const TIMEOUT: i32 = 124;

    /// Death by signal `sig`, as a shell reports it.
    pub const fn signal(sig: i32) -> i32 {
        128 + sig
    }
}

/// `SIGTERM` for 15, or `signal N` for numbers without a name.
pub fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {sig}"))
}
