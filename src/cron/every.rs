//! `@every DUR`: slots at whole multiples of DUR since the Unix epoch, whatever the
//! zone, so that replicas started at different times agree on the slots; counted, not
//! stepped, when a span of them is asked for.

use std::time::Duration;

use jiff::Timestamp;

/// `@every DUR`'s DUR: a whole number of seconds, at least one.
pub fn parse(text: &str, duration: &str) -> Result<Duration, String> {
    let d = crate::parse::duration(duration).map_err(|e| format!("'{}': {e}", text.trim()))?;
    if d < Duration::from_secs(1) || d.subsec_nanos() != 0 {
        return Err(format!(
            "'{}': @every takes a whole number of seconds, at least 1s (slots are keyed to the second)",
            text.trim()
        ));
    }
    Ok(d)
}

/// The slots in (`from`, `to`], oldest first, at most `limit` of them (the newest
/// kept), counted instead of stepped one slot at a time (a day's catch-up window of
/// `@every 1s` is 86,400 steps at every start).
pub fn between(from: Timestamp, to: Timestamp, every: Duration, limit: usize) -> Vec<Timestamp> {
    let (Some(first), Ok(step)) = (next_after(from, every), i128::try_from(every.as_nanos()))
    else {
        return Vec::new();
    };
    if first > to {
        return Vec::new();
    }
    let count = (to.as_nanosecond() - first.as_nanosecond()) / step + 1;
    let kept = count.min(i128::try_from(limit).unwrap_or(i128::MAX));
    let (Ok(start), Ok(step)) = (
        Timestamp::from_nanosecond(first.as_nanosecond() + (count - kept) * step),
        jiff::SignedDuration::try_from(every),
    ) else {
        return Vec::new();
    };
    // Added, not divided: each slot from the one before it.
    std::iter::successors(Some(start), |t| t.checked_add(step).ok())
        .take(usize::try_from(kept).unwrap_or(usize::MAX))
        .collect()
}

/// The first whole multiple of `every` since the Unix epoch strictly after `t`.
pub fn next_after(t: Timestamp, every: Duration) -> Option<Timestamp> {
    let step = i128::try_from(every.as_nanos()).ok()?;
    let next = (t.as_nanosecond().div_euclid(step) + 1).checked_mul(step)?;
    Timestamp::from_nanosecond(next).ok()
}

#[cfg(test)]
mod tests {
    use super::super::tests::{berlin, slots, utc};
    use super::super::{CronSchedule, Zone};
    use jiff::Timestamp;

    #[test]
    fn every_counted_is_every_stepped() {
        let stepped = |s: &CronSchedule, from: Timestamp, to: Timestamp, limit: usize| {
            let mut out = std::collections::VecDeque::new();
            let mut t = from;
            while let Some(next) = s.next_after(t).filter(|n| *n <= to) {
                if out.len() == limit {
                    out.pop_front();
                }
                out.push_back(next);
                t = next;
            }
            Vec::from(out)
        };
        for every in ["@every 1s", "@every 7m", "@every 90m"] {
            let s = CronSchedule::parse(every, Zone::utc()).unwrap();
            for (from, to) in [
                ("2026-03-29T00:59:53Z", "2026-03-29T01:00:21Z"),
                ("2026-03-29T01:00:00Z", "2026-03-30T01:00:00Z"),
                ("2026-03-29T01:00:00.5Z", "2026-03-29T01:00:00.7Z"),
                ("2026-03-29T01:00:00Z", "2026-03-29T01:00:00Z"),
                ("2026-03-29T01:00:01Z", "2026-03-29T01:00:00Z"),
            ] {
                for limit in [1, 3, 100_000] {
                    let (from, to) = (utc(from), utc(to));
                    assert_eq!(
                        s.slots_between(from, to, limit),
                        stepped(&s, from, to, limit),
                        "{every} {from}..{to} limit {limit}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_is_whole_multiples_of_the_duration_since_the_epoch() {
        let got = slots(
            "@every 10s",
            berlin(),
            "2026-03-29T00:59:53Z",
            "2026-03-29T01:00:21Z",
        );
        assert_eq!(
            got,
            [
                "2026-03-29T01:00:00Z",
                "2026-03-29T01:00:10Z",
                "2026-03-29T01:00:20Z"
            ]
        );
        // 7 minutes do not divide an hour: the slots follow the epoch, not the clock.
        let s = CronSchedule::parse("@every 7m", Zone::utc()).unwrap();
        let next = s.next_after(utc("2026-01-01T00:00:00Z")).unwrap();
        assert_eq!(next.as_second() % 420, 0);
        assert!(next > utc("2026-01-01T00:00:00Z"));
        assert_eq!(
            s.next_after(next),
            Some(next + jiff::SignedDuration::from_secs(420))
        );
        for bad in [
            "@every",
            "@every 500ms",
            "@every 1.5",
            "@every soon",
            "@every 0s",
        ] {
            let err = CronSchedule::parse(bad, Zone::utc()).unwrap_err();
            assert!(!err.is_empty(), "{bad}");
        }
    }
}
