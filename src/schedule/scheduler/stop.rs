//! How the scheduler stops: the first SIGINT or SIGTERM is one line naming the running
//! slots and is passed on to each slot's run (which has `--grace` for its attempt); a
//! second one is passed on too, and its runs end at once.

use std::time::Duration;

use jiff::Timestamp;

use super::Scheduler;
use crate::domain::Signal;
use crate::{report, signals, sys};

impl Scheduler<'_> {
    /// The first stopping signal is passed on to every slot's run (each has `--grace` for
    /// its attempt); a second one too (each ends at once).
    pub(super) fn signals(&mut self) {
        let Some(sig) = signals::pending() else {
            return;
        };
        if self.stop.is_none() {
            self.stop = Some(sig);
            self.announce_stop(sig);
            self.tell_all(sig);
        } else if let Some(again) = signals::take_repeat() {
            let n = self.children.len();
            report::info(&format!(
                "a second stopping signal ({again}): ending the running slot{} at once",
                plural(n)
            ));
            self.tell_all(again);
        }
    }

    /// The scheduler's one line about a stop, naming the slots still running.
    fn announce_stop(&self, sig: Signal) {
        let now = Timestamp::now();
        // A run started ahead of a slot still to come withdraws without a word.
        let running = self.children.values().filter(|r| r.child.slot <= now);
        let mut keys: Vec<&str> = running.map(|r| r.child.key.as_str()).collect();
        keys.sort_unstable();
        if let Some(line) = stop_line(sig, &keys, self.grace) {
            report::info(&line);
        }
    }

    /// Stops the runs of retired jobs that were started ahead of a slot still to come:
    /// they withdraw without a word.
    pub(super) fn withdraw_ahead(&self, retired: &[u64]) {
        let now = Timestamp::now();
        let ahead = self
            .children
            .values()
            .filter(|r| retired.contains(&r.entry) && r.child.slot > now);
        for running in ahead {
            if let Ok(pgid) = i32::try_from(running.child.pid) {
                sys::signal_group(pgid, sys::passed_on(Signal::TERM.number()));
            }
        }
    }

    fn tell_all(&self, sig: Signal) {
        for running in self.children.values() {
            if let Ok(pgid) = i32::try_from(running.child.pid) {
                sys::signal_group(pgid, sys::passed_on(sig.number()));
            }
        }
    }
}

/// The stop's one line, naming the slots still running (none: no line, the exit's says it).
fn stop_line(sig: Signal, keys: &[&str], grace: Option<Duration>) -> Option<String> {
    let n = keys.len();
    if n == 0 {
        return None;
    }
    let (them, have, ends) = if n == 1 {
        ("it", "has", "ends")
    } else {
        ("them", "have", "end")
    };
    let finish = match grace {
        Some(grace) if grace.is_zero() => format!("{ends} now (--grace 0)"),
        Some(grace) => format!(
            "{have} up to --grace {} to finish the attempt under way (a second {sig} ends {them} at once)",
            crate::domain::human(grace)
        ),
        None => format!("{have} --grace to finish the attempt under way"),
    };
    Some(format!(
        "{sig}: stopping; no new slot starts or retries, and the running slot{} ({}) {finish}",
        plural(n),
        keys.join(", "),
    ))
}

pub(super) fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_is_one_line_naming_the_running_slots_and_what_they_have_left() {
        let keys = ["a@2026-01-01T00:00:00Z", "b@2026-01-01T00:00:00Z"];
        let line = stop_line(Signal::TERM, &keys, Some(Duration::from_secs(20))).unwrap();
        assert_eq!(
            line,
            "SIGTERM: stopping; no new slot starts or retries, and the running slots \
             (a@2026-01-01T00:00:00Z, b@2026-01-01T00:00:00Z) have up to --grace 20s to finish \
             the attempt under way (a second SIGTERM ends them at once)"
        );
        let none = stop_line(Signal::INT, &keys[..1], Some(Duration::ZERO)).unwrap();
        assert!(
            none.ends_with("(a@2026-01-01T00:00:00Z) ends now (--grace 0)"),
            "{none}"
        );
        assert_eq!(
            stop_line(Signal::TERM, &[], None),
            None,
            "nothing runs: the exit line says it"
        );
    }
}
