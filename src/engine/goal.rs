//! What the run is after, and how far it has got: the loop tells the `Tally` each
//! attempt's class and asks it what follows. A plain run ends at the first success;
//! `--consecutive N` wants N successes in a row (a failure starts the count again);
//! `--until-failure` wants a failure and attempts again after every success. Whether
//! a failure is retried, and how long to sleep, stay the loop's.

use std::time::Duration;

use crate::domain::{Class, ExitStatus, Goal, StopReason, human};

/// What follows an attempt, as the goal sees it.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// The goal is reached: the run ends for this reason, saying this.
    Reached(StopReason, String),
    /// A success the goal wants more of: `pause`, then attempt again.
    Again { pause: Pause, progress: String },
    /// A failure for the usual rules to decide on; if it is retried, the sleep is the
    /// backoff's before retry `retry` (failures in a row).
    Failed { retry: u32 },
}

/// The sleep after a success the goal wants more of.
#[derive(Debug, PartialEq, Eq)]
pub enum Pause {
    /// `--delay` itself, exactly: between successes counted in a row.
    Base,
    /// The backoff's sleep before retry n, jittered as any.
    Backoff(u32),
}

/// What the run is after when that is more than its first success, and the pauses
/// [`Tally::after`] asks for (`delay` is `--delay`), as `--dry-run` shows it.
pub fn describe_goal(goal: Goal, delay: Duration) -> Option<String> {
    match goal {
        Goal::FirstSuccess => None,
        Goal::Consecutive(n) => Some(format!(
            "{n} successes in a row (--consecutive); the sleep after a success is {} \
             (--delay), after a failure the backoff below from its start",
            human(delay)
        )),
        Goal::UntilFailure => Some(
            "the first failure (--until-failure): a success is followed by the backoff below \
             and another attempt; every attempt succeeding exits 0"
                .into(),
        ),
    }
}

pub struct Tally {
    goal: Goal,
    successes_in_a_row: u32,
    most_in_a_row: u32,
    failures_in_a_row: u32,
    last_failure: Option<ExitStatus>,
}

impl Tally {
    pub fn new(goal: Goal) -> Tally {
        Tally {
            goal,
            successes_in_a_row: 0,
            most_in_a_row: 0,
            failures_in_a_row: 0,
            last_failure: None,
        }
    }

    /// Counts attempt `number`, of class `class`, ending with `exit`.
    pub fn after(&mut self, number: u32, class: Class, exit: ExitStatus) -> Step {
        if class != Class::Success {
            self.successes_in_a_row = 0;
            self.failures_in_a_row += 1;
            self.last_failure = Some(exit);
            return match self.goal {
                Goal::UntilFailure => Step::Reached(
                    StopReason::Permanent,
                    format!(
                        "--until-failure: attempt {number} failed, after {} success{}",
                        number - 1,
                        if number == 2 { "" } else { "es" }
                    ),
                ),
                _ => Step::Failed {
                    retry: self.failures_in_a_row,
                },
            };
        }
        self.failures_in_a_row = 0;
        self.successes_in_a_row += 1;
        self.most_in_a_row = self.most_in_a_row.max(self.successes_in_a_row);
        let streak = self.successes_in_a_row;
        match self.goal {
            Goal::FirstSuccess => {
                Step::Reached(StopReason::Success, format!("attempt {number} succeeded"))
            }
            Goal::Consecutive(n) if streak >= n => Step::Reached(
                StopReason::Success,
                format!("attempt {number} succeeded: {n} successes in a row (--consecutive {n})"),
            ),
            Goal::Consecutive(n) => Step::Again {
                pause: Pause::Base,
                progress: format!("{streak} of {n} in a row"),
            },
            Goal::UntilFailure => Step::Again {
                pause: Pause::Backoff(streak),
                progress: "no failure yet, --until-failure".into(),
            },
        }
    }

    /// The exit status of a run that ends on a success short of its goal: 0 when no
    /// failure was the goal, else the last failure's status (1 if none failed).
    pub fn short_exit(&self) -> ExitStatus {
        match self.goal {
            Goal::UntilFailure | Goal::FirstSuccess => ExitStatus::SUCCESS,
            Goal::Consecutive(_) => self.last_failure.unwrap_or(ExitStatus::FAILURE),
        }
    }

    /// Why the run ended after its last allowed attempt, `attempts`.
    pub fn out_of_attempts(&self, attempts: u32) -> String {
        let s = if attempts == 1 { "" } else { "s" };
        match self.goal {
            Goal::UntilFailure => format!("--until-failure: no failure in {attempts} attempt{s}"),
            _ => format!("gave up after {attempts} attempt{s}{}", self.shortfall()),
        }
    }

    /// What the goal still lacks, to add to a message: `, without 3 successes in a
    /// row (at most 2)`; empty when a success would have ended the run.
    pub fn shortfall(&self) -> String {
        match self.goal {
            Goal::FirstSuccess => String::new(),
            Goal::Consecutive(n) => format!(
                ", without {n} successes in a row (at most {})",
                self.most_in_a_row
            ),
            Goal::UntilFailure => ", with no failure seen (--until-failure)".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: Class = Class::Success;
    const FAIL: Class = Class::Transient;

    fn steps(goal: Goal, classes: &[Class]) -> (Tally, Vec<Step>) {
        let mut tally = Tally::new(goal);
        let steps = classes
            .iter()
            .enumerate()
            .map(|(i, class)| {
                let exit = if *class == OK { 0 } else { 7 };
                tally.after(i as u32 + 1, *class, ExitStatus::new(exit))
            })
            .collect();
        (tally, steps)
    }

    #[test]
    fn a_plain_run_ends_at_the_first_success_and_counts_failures_in_a_row() {
        let (_, got) = steps(Goal::FirstSuccess, &[FAIL, FAIL, OK]);
        assert_eq!(got[0], Step::Failed { retry: 1 });
        assert_eq!(got[1], Step::Failed { retry: 2 });
        assert!(matches!(got[2], Step::Reached(StopReason::Success, _)));
    }

    #[test]
    fn consecutive_needs_n_in_a_row_and_a_failure_starts_again() {
        let (tally, got) = steps(Goal::Consecutive(3), &[OK, OK, FAIL, OK, OK, OK]);
        assert_eq!(
            got[1],
            Step::Again {
                pause: Pause::Base,
                progress: "2 of 3 in a row".into()
            }
        );
        // The backoff starts from the first retry again after a success.
        assert_eq!(got[2], Step::Failed { retry: 1 });
        assert!(matches!(got[4], Step::Again { .. }));
        assert!(matches!(got[5], Step::Reached(StopReason::Success, _)));
        assert_eq!(tally.short_exit(), ExitStatus::new(7));
    }

    #[test]
    fn consecutive_short_of_its_goal_ends_with_the_last_failure() {
        let (tally, _) = steps(Goal::Consecutive(3), &[OK, FAIL, OK, FAIL, OK]);
        assert_eq!(tally.short_exit(), ExitStatus::new(7));
        assert_eq!(
            tally.out_of_attempts(5),
            "gave up after 5 attempts, without 3 successes in a row (at most 1)"
        );
        let (never_failed, _) = steps(Goal::Consecutive(3), &[OK, OK]);
        assert_eq!(never_failed.short_exit(), ExitStatus::FAILURE);
    }

    #[test]
    fn until_failure_backs_off_after_each_success_and_stops_at_the_failure() {
        let (_, got) = steps(Goal::UntilFailure, &[OK, OK, FAIL]);
        assert!(matches!(
            got[0],
            Step::Again {
                pause: Pause::Backoff(1),
                ..
            }
        ));
        assert!(matches!(
            got[1],
            Step::Again {
                pause: Pause::Backoff(2),
                ..
            }
        ));
        assert_eq!(
            got[2],
            Step::Reached(
                StopReason::Permanent,
                "--until-failure: attempt 3 failed, after 2 successes".into()
            )
        );
        let (tally, _) = steps(Goal::UntilFailure, &[OK, OK]);
        assert_eq!(tally.short_exit(), ExitStatus::SUCCESS);
        assert_eq!(
            tally.out_of_attempts(2),
            "--until-failure: no failure in 2 attempts"
        );
    }
}
