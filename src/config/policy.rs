//! The attempts part of the configuration: the limit, the timing flags turned into
//! one backoff `Schedule` (`--delays` or `--delay`/`--backoff`/`--factor`/
//! `--max-delay`), and what the run is after (`--consecutive`, `--until-failure`),
//! checked together. Applying it is the engine's work.

use std::time::Duration;

use crate::cli::Cli;
use crate::domain::{Goal, JitterKind, Policy, Schedule};

/// The policy of the run; `nested` (inside another retry) makes one attempt only.
pub fn from_cli(cli: &Cli, nested: bool) -> anyhow::Result<Policy> {
    // curl's 0 is no limit.
    let retry_window = cli.curl.retry_max_time.filter(|d| !d.is_zero());
    if cli.timing.attempts == 0 && cli.timing.max_time.is_none() && retry_window.is_none() {
        anyhow::bail!(
            "-a/--attempts 0: no attempt limit needs --max-time DUR (beside curl's --retry \
             words, --retry-max-time S), so that the run still stops (e.g. -a 0 --max-time 10m)"
        );
    }
    let goal = goal(cli)?;
    Ok(Policy {
        // Only one layer retries: inside another retry, make one attempt and let it decide.
        attempts: if nested { 1 } else { cli.timing.attempts },
        // 0 is no limit, as `timeout 0` and curl's -m 0.
        timeout: cli.timing.timeout.filter(|d| !d.is_zero()),
        max_time: cli.timing.max_time,
        max_time_per_transfer: cli.timing.max_time_per_transfer,
        retry_window,
        schedule: schedule(cli)?,
        max_wait_hint: cli.http.max_retry_after,
        ignore_wait_hints: cli.timing.ignore_retry_after,
        // A nested run makes one attempt and leaves the goal to the outer retry.
        goal: if nested { Goal::FirstSuccess } else { goal },
    })
}

fn schedule(cli: &Cli) -> anyhow::Result<Schedule> {
    let mut schedule = Schedule {
        kind: cli.timing.backoff,
        base: cli.timing.delay,
        cap: max_delay(cli.timing.delay, cli.timing.max_delay)?,
        factor: cli.timing.factor,
        jitter: cli.timing.jitter,
        list: Vec::new(),
    };
    let Some(list) = &cli.timing.delays else {
        return Ok(schedule);
    };
    if cli.timing.jitter == JitterKind::Decorrelated {
        anyhow::bail!(
            "--delays: -j decorrelated grows each sleep from the one before, not from a list; \
             use -j full, equal or none with --delays"
        );
    }
    // The list is the schedule: its first entry is the base, its longest the cap.
    schedule.base = list.0[0];
    schedule.cap = list.0.iter().copied().max().unwrap_or_default();
    schedule.list = list.0.clone();
    Ok(schedule)
}

/// The cap is never below `--delay`: the default rises to it, and a shorter
/// `--max-delay` is refused rather than silently cutting every sleep.
fn max_delay(delay: Duration, given: Option<Duration>) -> anyhow::Result<Duration> {
    match given {
        None => Ok(crate::domain::DEFAULT_MAX_DELAY.max(delay)),
        Some(cap) if cap < delay => anyhow::bail!(
            "--max-delay: {} is shorter than --delay {}, which would cut every sleep; give a --max-delay of at least {}, or a shorter --delay",
            crate::domain::human(cap),
            crate::domain::human(delay),
            crate::domain::human(delay)
        ),
        Some(cap) => Ok(cap),
    }
}

fn goal(cli: &Cli) -> anyhow::Result<Goal> {
    if cli.timing.until_failure {
        return Ok(Goal::UntilFailure);
    }
    let Some(n) = cli.timing.consecutive else {
        return Ok(Goal::FirstSuccess);
    };
    if cli.timing.attempts != 0 && cli.timing.attempts < n {
        anyhow::bail!(
            "--consecutive {n}: -a {} allows fewer attempts than the {n} successes in a row it \
             asks for; give -a {n} or more (or -a 0 with --max-time)",
            cli.timing.attempts
        );
    }
    Ok(Goal::Consecutive(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn policy(args: &[&str]) -> anyhow::Result<Policy> {
        let mut argv = vec!["retry"];
        argv.extend_from_slice(args);
        argv.push("true");
        let cli = crate::cli::parse(argv).expect("the flags parse");
        from_cli(&cli, false)
    }

    fn refusal(args: &[&str]) -> String {
        format!("{:#}", policy(args).expect_err("refused"))
    }

    #[test]
    fn no_attempt_limit_needs_a_time_limit() {
        assert!(refusal(&["-a", "0"]).contains("--max-time"));
        let p = policy(&["-a", "0", "--max-time", "3s"]).unwrap();
        assert_eq!(p.attempts, 0);
        assert!(!p.is_last(u32::MAX));
    }

    fn url_policy(args: &[&str]) -> anyhow::Result<Policy> {
        let mut argv = vec!["retry"];
        argv.extend_from_slice(args);
        argv.push("http://127.0.0.1:9/");
        from_cli(
            &crate::cli::parse(argv).map_err(anyhow::Error::from)?,
            false,
        )
    }

    #[test]
    fn max_time_keeps_curl_s_meaning_beside_curl_s_retry_words() {
        let s = Duration::from_secs;
        let words: [&[&str]; 5] = [
            &["--retry", "5"],
            &["--retry-max-time", "40"],
            &["--retry-delay", "2"],
            &["--retry-all-errors"],
            &["--retry-connrefused"],
        ];
        for word in words {
            let mut args = word.to_vec();
            args.extend(["--max-time", "10"]);
            let p = url_policy(&args).unwrap();
            assert_eq!((p.timeout, p.max_time), (Some(s(10)), None), "{args:?}");
            assert_eq!(p.max_time_per_transfer, Some(word[0]), "{args:?}");
        }
        let p = url_policy(&["--max-time", "10", "--retry", "5", "--retry-max-time", "40"]);
        let p = p.unwrap();
        assert_eq!((p.timeout, p.retry_window), (Some(s(10)), Some(s(40))));
        // Without a curl retry word, and in command mode, it is the whole run's limit.
        let p = url_policy(&["--max-time", "10", "-a", "3"]).unwrap();
        assert_eq!((p.timeout, p.max_time), (None, Some(s(10))));
        let p = policy(&["--max-time", "10", "-t", "2"]).unwrap();
        assert_eq!((p.timeout, p.max_time), (Some(s(2)), Some(s(10))));
        let refused = |args: &[&str]| format!("{:#}", url_policy(args).expect_err("refused"));
        assert!(
            refused(&["-m", "5", "--max-time", "10"])
                .contains("-m: cannot be used with --max-time")
        );
        assert!(
            refused(&["--retry", "3", "-t", "5", "--max-time", "10"])
                .contains("--max-time: beside --retry")
        );
        // No attempt limit: --retry-max-time bounds the run beside curl's words.
        assert!(url_policy(&["-a", "0", "--retry-max-time", "40", "--max-time", "5"]).is_ok());
    }

    #[test]
    fn a_list_of_delays_is_the_schedule() {
        let p = policy(&["--delays", "2s,500ms,1s"]).unwrap();
        assert_eq!(p.schedule.base, Duration::from_secs(2));
        assert_eq!(p.schedule.cap, Duration::from_secs(2));
        assert_eq!(p.schedule.nominal(2), Duration::from_millis(500));
        assert!(refusal(&["--delays", "1s", "-j", "decorrelated"]).contains("decorrelated"));
    }

    #[test]
    fn goals_come_from_their_flags() {
        assert_eq!(policy(&[]).unwrap().goal, Goal::FirstSuccess);
        assert_eq!(
            policy(&["--until-failure"]).unwrap().goal,
            Goal::UntilFailure
        );
        assert_eq!(
            policy(&["--consecutive", "3"]).unwrap().goal,
            Goal::Consecutive(3)
        );
        assert!(refusal(&["--consecutive", "6"]).contains("-a 5"));
        assert!(policy(&["--consecutive", "6", "-a", "0", "--max-time", "1m"]).is_ok());
    }

    #[test]
    fn max_delay_is_never_below_delay() {
        let s = Duration::from_secs;
        assert_eq!(max_delay(s(1), None).unwrap(), s(30));
        assert_eq!(max_delay(s(120), None).unwrap(), s(120));
        assert_eq!(max_delay(s(1), Some(s(5))).unwrap(), s(5));
        assert_eq!(max_delay(s(5), Some(s(5))).unwrap(), s(5));
        let err = max_delay(s(120), Some(s(60))).unwrap_err().to_string();
        assert!(
            err.starts_with("--max-delay: 1m is shorter than --delay 2m"),
            "{err}"
        );
    }
}
