//! The real clock and the real sleeper. A sleep wakes at once on SIGINT, SIGTERM,
//! SIGHUP or SIGQUIT or when a lock is lost, and on a terminal it shows a live
//! countdown on stderr.

use std::io::Write;
use std::time::{Duration, Instant, SystemTime};

use crate::domain::{Stop, human, of_attempts};
use crate::engine::{Clock, Sleeper};
use crate::wait;

pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    pub fn new() -> Self {
        SystemClock {
            origin: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }
}

pub struct SignalSleeper {
    /// Show a countdown: only when stderr is a terminal.
    pub countdown: bool,
    pub attempts: u32,
}

impl Sleeper for SignalSleeper {
    fn sleep(&mut self, d: Duration, upcoming: u32) -> Result<(), Stop> {
        if !self.countdown || d < Duration::from_secs(1) {
            return wait::sleep_or_stop(d);
        }
        let end = Instant::now() + d;
        let result = loop {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break Ok(());
            }
            let shown = Duration::from_secs(left.as_secs_f64().ceil() as u64);
            let _ = write!(
                std::io::stderr(),
                "\rretry: attempt {} in {}\x1b[K",
                of_attempts(upcoming, self.attempts),
                human(shown)
            );
            let tick = left.min(Duration::from_millis(
                (left.as_millis() % 1000).max(1) as u64 + 1,
            ));
            if let Err(stop) = wait::sleep_or_stop(tick.min(Duration::from_secs(1))) {
                break Err(stop);
            }
        };
        let _ = write!(std::io::stderr(), "\r\x1b[K");
        result
    }
}
