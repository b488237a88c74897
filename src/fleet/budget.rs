//! A shared retry budget (`--retry-budget`) as the engine asks it, through
//! [`RetryBudget`]: each attempt is counted in the store, and a retry is asked for
//! before the backoff sleep (`--throttled exit`) or after it (`--throttled wait`, where
//! the store may make this retry the fleet's probe of a spent budget). What the tokens
//! come to is `state`'s rule; a store that failed lets every retry through.

use std::time::Duration;

use super::store::{Halt, Phase, Store};
use crate::domain::BudgetConfig;
use crate::engine::{Refusal, RetryBudget};
use crate::report;
use crate::state::{Answer, Spent, allows_retry, show_tokens};

/// A retry budget in the fleet's store, as the engine asks it.
pub struct SharedBudget<'a> {
    store: &'a mut Store,
    config: &'a BudgetConfig,
    /// What the last update returned: the decision uses the count this run's own
    /// update produced, read in the same atomic step.
    tokens: Option<f64>,
    /// `--max-time` ran out during the last update (why): no retry follows.
    ran_out: Option<String>,
    /// The retry being made is the fleet's probe of the spent budget.
    probing: bool,
}

impl SharedBudget<'_> {
    fn out_of_time(&self, why: &str) -> Refusal {
        Refusal::OutOfTime(format!(
            "{why}, so retry budget {} could not be asked: not retrying",
            self.config.name
        ))
    }

    fn spent(&self, tokens: f64) -> Refusal {
        Refusal::Spent(format!(
            "retry budget {} is spent ({} of {} tokens)",
            self.config.name,
            show_tokens(tokens),
            self.config.size
        ))
    }

    /// `--throttled wait`: asks the store after the sleep, claiming the probe if it is due.
    fn ask(&mut self, probe_after: Duration) -> Result<(), Refusal> {
        let config = self.config;
        let asked = self
            .store
            .with(Phase::Before, |s, b| s.ask(config, probe_after, b));
        match asked {
            Ok(Some(Answer::Refused(tokens))) => Err(self.spent(tokens)),
            Ok(Some(Answer::Probe)) => {
                self.probing = true;
                report::info(&format!(
                    "retry budget {} is spent and no retry of it was sent for {}: this retry is the probe",
                    config.name,
                    crate::domain::human(probe_after)
                ));
                Ok(())
            }
            // A store that failed is absent: the budget fails open.
            Ok(Some(Answer::Allowed) | None) | Err(Halt::Signal(_)) => Ok(()),
            Err(Halt::OutOfTime(why)) => Err(self.out_of_time(&why)),
        }
    }
}

impl RetryBudget for SharedBudget<'_> {
    fn may_retry(&mut self) -> Result<(), Refusal> {
        let config = self.config;
        if let Some(why) = self.ran_out.take() {
            return Err(self.out_of_time(&why));
        }
        if let Some(probe_after) = config.probe_after {
            return self.ask(probe_after);
        }
        let tokens = match self.tokens {
            Some(t) => Some(t),
            // Before a retry: --max-time bounds the question; a signal stops the sleep before it.
            None => match self.store.with(Phase::Before, |s, b| s.tokens(config, b)) {
                Ok(tokens) => tokens,
                Err(Halt::Signal(_)) => None,
                Err(Halt::OutOfTime(why)) => return Err(self.out_of_time(&why)),
            },
        };
        match tokens {
            Some(t) if !allows_retry(t, config.size) => Err(self.spent(t)),
            _ => Ok(()),
        }
    }

    fn record(&mut self, success: bool) {
        let config = self.config;
        let attempt = Spent {
            success,
            probe: std::mem::take(&mut self.probing),
        };
        // After an attempt: within --max-time while it lasts, then the store's own limits.
        let spent = self
            .store
            .with(Phase::Between, |s, b| s.spend(config, attempt, b));
        (self.tokens, self.ran_out) = match spent {
            Ok(tokens) => (tokens, None),
            Err(Halt::OutOfTime(why)) => (None, Some(why)),
            Err(Halt::Signal(_)) => (None, None),
        };
    }

    fn holds(&self) -> bool {
        self.config.probe_after.is_some()
    }
}

impl<'a> SharedBudget<'a> {
    pub(super) fn new(store: &'a mut Store, config: &'a BudgetConfig) -> SharedBudget<'a> {
        SharedBudget {
            store,
            config,
            tokens: None,
            ran_out: None,
            probing: false,
        }
    }
}
