//! The attempts part of the dry run: the policy (each retry's delay range and the
//! worst-case total) and the executor's target, notes and classification rules, each
//! rule as it describes itself.

use std::fmt::Write;
use std::time::Duration;

use crate::config::RunInfo;
use crate::domain::{Policy, human};
use crate::exec::Description;
use crate::{engine, fleet};

/// `splay` is `--splay`: the longest sleep before the first attempt, part of the worst case.
pub fn render(
    policy: &Policy,
    splay: Duration,
    run: &RunInfo,
    is_http: bool,
    described: &Description,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "retry dry run: nothing is run");
    let _ = writeln!(out, "target:      {}", described.target);
    let (notes, rules, nested) = (&described.notes, &described.rules, run.nested);
    for note in notes {
        let _ = writeln!(out, "{note}");
    }
    let nested_note = if nested {
        " (nested inside another retry: one attempt only)"
    } else {
        ""
    };
    let _ = writeln!(out, "attempts:    {}{nested_note}", describe_limit(policy));
    if let Some(goal) = engine::describe_goal(policy.goal, policy.schedule.base) {
        let _ = writeln!(out, "goal:        {goal}");
    }
    let _ = writeln!(out, "backoff:     {}", policy.schedule.describe());
    let _ = writeln!(out, "timeout:     {}", describe_limits(policy));
    if let Some(window) = policy.retry_window {
        let _ = writeln!(
            out,
            "retries:     none starts {} after the first attempt started (--retry-max-time); \
             an attempt in flight is not cut",
            human(window)
        );
    }
    if policy.ignore_wait_hints {
        let asked = if is_http {
            "Retry-After, RateLimit-Reset"
        } else {
            "RETRY_CONTROL's retry-after"
        };
        let _ = writeln!(
            out,
            "retry-after: ignored (--ignore-retry-after): the backoff alone decides, whatever {asked} ask"
        );
    } else if is_http {
        let _ = writeln!(
            out,
            "retry-after: obeyed up to {} (--max-retry-after); {}",
            human(policy.max_wait_hint),
            policy.schedule.describe_after_wait()
        );
    }
    out.push('\n');
    out.push_str(&schedule_table(policy, splay));
    out.push('\n');
    let _ = writeln!(out, "classification (first match wins):");
    for (i, rule) in rules.iter().enumerate() {
        let _ = writeln!(out, "  {:>2}. {rule}", i + 1);
    }
    out
}

/// The limit on each attempt and the whole run's: `--max-time`, or beside curl's retry
/// words curl's meaning of it (each transfer) and `--retry-max-time` alone for the run.
fn describe_limits(policy: &Policy) -> String {
    let per_attempt = policy.timeout.map_or("none".into(), human);
    match policy.max_time_per_transfer {
        None => format!(
            "{per_attempt} per attempt; --max-time {}",
            policy.max_time.map_or("none".into(), human)
        ),
        Some(word) => format!(
            "{per_attempt} per attempt (--max-time beside {word} is curl's limit on each \
             transfer, as -m); the whole run is bounded by --retry-max-time alone ({})",
            policy.retry_window.map_or("none given".into(), human)
        ),
    }
}

/// `5`, or `no limit (-a 0): attempts go on until --max-time`.
fn describe_limit(policy: &Policy) -> String {
    match policy.attempts {
        0 if policy.max_time.is_none() => {
            "no limit (-a 0): attempts go on until --retry-max-time ends the run".into()
        }
        0 => "no limit (-a 0): attempts go on until --max-time ends the run".into(),
        n => n.to_string(),
    }
}

/// The per-attempt delay ranges and the worst case (the `splay` before the first
/// attempt included), as a table.
pub fn schedule_table(policy: &Policy, splay: Duration) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "attempt  sleep before it");
    let first = if splay.is_zero() {
        "-".to_string()
    } else {
        format!("0ms - {} (--splay)", human(splay))
    };
    let _ = writeln!(out, "{:<8} {first}", 1);
    let (rows, backoff) = sleep_rows(policy);
    for row in rows {
        let _ = writeln!(out, "{row}");
    }
    let _ = writeln!(out);
    let splay = fleet::longest_splay(splay, policy.max_time);
    let worst = backoff.saturating_add(splay);
    let sleeping = if splay.is_zero() {
        format!("worst case: {} of sleeping", human(worst))
    } else {
        format!(
            "worst case: {} of sleeping ({} of --splay, {} of backoff)",
            human(worst),
            human(splay),
            human(backoff)
        )
    };
    let line = match (policy.timeout, policy.max_time) {
        (_, Some(max)) if policy.attempts == 0 => format!(
            "worst case: attempts and sleeps go on until the time limit ends them; the whole run \
             ends within {} (--max-time {})",
            human(max),
            human(max)
        ),
        (_, Some(max)) => {
            let attempt_time = policy.timeout.map(|t| t * policy.attempts);
            let total = attempt_time.map_or(max, |a| (a + worst).min(max));
            format!(
                "{sleeping}; the whole run ends within {} (--max-time {})",
                human(total),
                human(max)
            )
        }
        (_, None) if policy.attempts == 0 => format!(
            "worst case: attempts and sleeps go on until --retry-max-time {} has passed since \
             the first attempt started; the attempt then in flight is not cut",
            policy.retry_window.map_or("none".into(), human)
        ),
        (Some(t), None) => {
            let total = t * policy.attempts + worst;
            format!(
                "{sleeping} + {} x {} of attempts = {}",
                policy.attempts,
                human(t),
                human(total)
            )
        }
        (None, None) => {
            format!("{sleeping}; attempts have no --timeout, so the run has no upper bound")
        }
    };
    let _ = writeln!(out, "{line}");
    out
}

/// Rows shown before the rest are summarised.
const SHOWN_ROWS: u32 = 50;
/// Delays summed exactly; past this each further sleep counts as the cap (an upper bound).
const EXACT_ROWS: u32 = 100_000;

/// The table's rows and the worst-case total of sleeping. Once the delay stops
/// changing (the cap is reached) the repeats are one line, so the output and
/// the time it takes are bounded for any `-a`.
fn sleep_rows(policy: &Policy) -> (Vec<String>, Duration) {
    let range = |(lo, hi): (Duration, Duration)| {
        if lo == hi {
            human(lo)
        } else {
            format!("{} - {}", human(lo), human(hi))
        }
    };
    // -a 0: the rows go on until the delay settles, then one line says the rest.
    let last = (policy.attempts != 0).then_some(policy.attempts);
    let until_max_time = |each: Duration| {
        format!(
            "...      (every further attempt, until --max-time: each {} at most)",
            human(each)
        )
    };
    let mut rows = Vec::new();
    let mut worst = Duration::ZERO;
    let mut previous = None;
    let mut n = 2;
    while last.is_none_or(|last| n <= last) {
        let bounds = policy.schedule.bounds(n - 1);
        let settled = previous == Some(bounds) && policy.schedule.steady_from(n - 1);
        let Some(last) = last else {
            if settled || n > SHOWN_ROWS {
                rows.push(until_max_time(policy.schedule.bounds(u32::MAX).1));
                return (rows, worst);
            }
            rows.push(format!("{n:<8} {}", range(bounds)));
            previous = Some(bounds);
            n += 1;
            continue;
        };
        if settled || n > EXACT_ROWS {
            let rest = last - n + 1;
            let each = if settled {
                bounds.1
            } else {
                policy.schedule.cap
            };
            worst = worst.saturating_add(each.saturating_mul(rest));
            if rest > 1 {
                rows.push(format!(
                    "...      ({rest} more attempts, each {} at most)",
                    human(each)
                ));
            } else {
                rows.push(format!("{last:<8} {}", range(bounds)));
            }
            return (rows, worst);
        }
        worst = worst.saturating_add(bounds.1);
        if n <= SHOWN_ROWS || n == last {
            rows.push(format!("{n:<8} {}", range(bounds)));
        } else if n == SHOWN_ROWS + 1 {
            rows.push("...".to_string());
        }
        previous = Some(bounds);
        n += 1;
    }
    (rows, worst)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn four_attempts_of_ten_seconds() -> Policy {
        Policy {
            attempts: 4,
            timeout: Some(Duration::from_secs(10)),
            ..Policy::default()
        }
    }

    #[test]
    fn table_lists_every_attempt_and_the_worst_case() {
        let policy = four_attempts_of_ten_seconds();
        let table = schedule_table(&policy, Duration::ZERO);
        assert!(table.contains("2        0ms - 1s"), "{table}");
        assert!(table.contains("4        0ms - 4s"), "{table}");
        assert!(
            table.contains("worst case: 7s of sleeping + 4 x 10s of attempts = 47s"),
            "{table}"
        );
    }

    #[test]
    fn the_worst_case_includes_the_splay_cut_to_the_time_limit() {
        let policy = four_attempts_of_ten_seconds();
        let table = schedule_table(&policy, Duration::from_secs(30));
        assert!(table.contains("1        0ms - 30s (--splay)"), "{table}");
        assert!(
            table.contains(
                "worst case: 37s of sleeping (30s of --splay, 7s of backoff) + 4 x 10s of attempts = 1m17s"
            ),
            "{table}"
        );
        let limited = Policy {
            max_time: Some(Duration::from_secs(20)),
            ..policy
        };
        let table = schedule_table(&limited, Duration::from_secs(30));
        assert!(
            table.contains("27s of sleeping (20s of --splay, 7s of backoff)"),
            "{table}"
        );
        assert!(table.contains("the whole run ends within 20s"), "{table}");
    }

    #[test]
    fn a_huge_attempt_limit_gives_a_short_table_with_an_exact_worst_case() {
        let policy = Policy {
            attempts: u32::MAX,
            ..Policy::default()
        };
        let table = schedule_table(&policy, Duration::ZERO);
        assert!(table.lines().count() < 20, "{table}");
        assert!(table.contains("2        0ms - 1s"), "{table}");
        assert!(table.contains("more attempts, each 30s at most"), "{table}");
        // 1+2+4+8+16 before the cap, then 30s for each of the other 4294967290 sleeps.
        let worst = 31 + 30 * (u32::MAX as u64 - 6);
        let expected = format!(
            "worst case: {} of sleeping",
            human(Duration::from_secs(worst))
        );
        assert!(table.contains(&expected), "{table}");
    }
}
