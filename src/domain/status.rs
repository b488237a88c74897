//! Exit statuses and signals, the numbers scripts read: one type for each, so that a
//! status is never mistaken for a signal or a count. The statuses that are retry's own
//! follow GNU timeout's table (124 timed out, 125 retry itself failed, 126 not
//! executable, 127 not found, 128+N died of signal N), kept in one place as fd keeps
//! its exit codes.

use std::fmt;

use serde::Serialize;

/// An exit status as a shell sees it, 0 to 255.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct ExitStatus(u8);

impl ExitStatus {
    pub const SUCCESS: ExitStatus = ExitStatus(0);
    /// A failed run never exits 0: the status of an attempt that failed by a rule
    /// although the command exited 0.
    pub const FAILURE: ExitStatus = ExitStatus(1);
    /// The last attempt was stopped by `--timeout` (as GNU timeout says).
    pub const TIMEOUT: ExitStatus = ExitStatus(124);
    /// retry's own failure: bad usage or value, state unreachable, lock lost.
    pub const USAGE: ExitStatus = ExitStatus(125);
    /// The command was found but cannot be run.
    pub const NOT_EXECUTABLE: ExitStatus = ExitStatus(126);
    /// The command was not found.
    pub const NOT_FOUND: ExitStatus = ExitStatus(127);

    pub const fn new(code: u8) -> ExitStatus {
        ExitStatus(code)
    }

    /// Death by signal `sig`, as a shell reports it: 128+N.
    pub fn of_signal(sig: Signal) -> ExitStatus {
        ExitStatus(u8::try_from(128 + sig.number()).unwrap_or(u8::MAX))
    }

    /// The status `waitpid` reports for a process that exited (WEXITSTATUS: its low
    /// 8 bits).
    pub fn from_wait(code: i32) -> ExitStatus {
        ExitStatus(code as u8)
    }

    pub const fn code(self) -> u8 {
        self.0
    }

    pub const fn is_success(self) -> bool {
        self.0 == 0
    }

    /// The signal a 128+N status stands for, if it is one.
    pub fn signal(self) -> Option<Signal> {
        (self.0 > 128).then(|| Signal::new(i32::from(self.0) - 128))
    }
}

impl fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A signal by its number; shown by its name (`SIGTERM`, or `signal N` for a number
/// without one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Signal(i32);

impl Signal {
    // The same numbers on every system retry runs on (Windows' C runtime included).
    pub const INT: Signal = Signal(2);
    pub const TERM: Signal = Signal(15);
    pub const HUP: Signal = Signal(1);
    pub const QUIT: Signal = Signal(3);
    pub const PIPE: Signal = Signal(13);

    pub const fn new(number: i32) -> Signal {
        Signal(number)
    }

    pub const fn number(self) -> i32 {
        self.0
    }

    /// `SIGTERM` for 15, or `signal N` for numbers without a name.
    pub fn name(self) -> String {
        signal_name(self.0).unwrap_or_else(|| format!("signal {}", self.0))
    }
}

/// The system's name for a signal number; on Windows, which has none, the names of the
/// console events retry takes as signals (Ctrl-C, the console's close, Ctrl-Break) and of
/// the statuses retry builds from them.
fn signal_name(number: i32) -> Option<String> {
    let taken = [
        (1, "SIGHUP"),
        (2, "SIGINT"),
        (3, "SIGQUIT"),
        (13, "SIGPIPE"),
        (15, "SIGTERM"),
    ];
    let name = crate::sys::signal_name(number).or_else(|| {
        taken
            .iter()
            .find(|(n, _)| *n == number)
            .map(|(_, name)| *name)
    })?;
    Some(name.to_string())
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_is_128_plus_n_and_back() {
        let status = ExitStatus::of_signal(Signal::TERM);
        assert_eq!(status.code(), 143);
        assert_eq!(status.signal(), Some(Signal::TERM));
        assert_eq!(ExitStatus::USAGE.signal(), None);
        assert_eq!(Signal::TERM.to_string(), "SIGTERM");
        assert_eq!(Signal::new(99).to_string(), "signal 99");
    }
}
