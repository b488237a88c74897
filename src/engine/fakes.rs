//! Fakes of what the loop is given, for the tests of the loop and of a run's phases: a
//! clock that only moves when told to, a sleeper that moves it (or is stopped), and an
//! executor that plays back a script of reports.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, SystemTime};

use super::{Clock, Sleeper};
use crate::domain::{ExitStatus, Outcome, Signal, Stop, Verdict};
use crate::exec::{AttemptContext, AttemptReport, Executor};

/// A clock that only moves when told to.
#[derive(Clone, Default)]
pub struct FakeClock(Rc<Cell<Duration>>);

impl FakeClock {
    pub fn advance(&self, d: Duration) {
        self.0.set(self.0.get() + d);
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Duration {
        self.0.get()
    }
    fn wall(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH + self.0.get()
    }
}

/// Sleeps by moving the clock; a signal or a lost lock at the sleep numbered so.
pub struct FakeSleeper {
    pub clock: FakeClock,
    pub slept: Vec<Duration>,
    pub signal_on: Option<usize>,
    pub lose_lock_on: Option<usize>,
}

impl Sleeper for FakeSleeper {
    fn sleep(&mut self, d: Duration, _upcoming: u32) -> Result<(), Stop> {
        if self.signal_on == Some(self.slept.len()) {
            return Err(Stop::Signal(Signal::new(15)));
        }
        if self.lose_lock_on == Some(self.slept.len()) {
            return Err(Stop::LockLost("lock L was lost".into()));
        }
        self.slept.push(d);
        self.clock.advance(d);
        Ok(())
    }
}

impl FakeSleeper {
    pub fn new(clock: &FakeClock) -> FakeSleeper {
        FakeSleeper {
            clock: clock.clone(),
            slept: Vec::new(),
            signal_on: None,
            lose_lock_on: None,
        }
    }
}

/// Plays back a script of reports, each taking `took` of fake time.
pub struct Scripted {
    pub clock: FakeClock,
    pub script: Vec<AttemptReport>,
    pub took: Duration,
    pub seen: Vec<AttemptContext>,
    pub delivered: u32,
}

impl Executor for Scripted {
    fn attempt(&mut self, ctx: &AttemptContext) -> anyhow::Result<AttemptReport> {
        self.seen.push(ctx.clone());
        self.clock.advance(self.took);
        let i = (ctx.number as usize - 1).min(self.script.len() - 1);
        Ok(self.script[i].clone())
    }
    fn deliver(&mut self) -> anyhow::Result<()> {
        self.delivered += 1;
        Ok(())
    }
    fn describe(&self) -> crate::exec::Description {
        crate::exec::Description {
            target: "scripted".into(),
            notes: Vec::new(),
            rules: Vec::new(),
        }
    }
}

impl Scripted {
    /// Plays `script` back, 100 ms an attempt.
    pub fn new(clock: &FakeClock, script: Vec<AttemptReport>) -> Scripted {
        Scripted {
            clock: clock.clone(),
            script,
            took: Duration::from_millis(100),
            seen: Vec::new(),
            delivered: 0,
        }
    }
}

/// A transient failure with exit status `code`.
pub fn fail(code: u8) -> AttemptReport {
    let code = ExitStatus::new(code);
    AttemptReport::new(Outcome::Exit { code }, Verdict::transient("non-zero"), code)
}

/// A success.
pub fn ok() -> AttemptReport {
    let code = ExitStatus::SUCCESS;
    AttemptReport::new(Outcome::Exit { code }, Verdict::success("exit 0"), code)
}
