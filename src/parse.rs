//! Parsers for values that come from outside: durations, exit-code lists,
//! attempt counts, and OpenTelemetry's endpoint URLs and `key=value` lists. Each returns a message that says what is accepted, so clap can
//! name the flag and exit 125 before anything runs. HTTP header values have their
//! own parsers in `headers`.

use std::ops::RangeInclusive;
use std::time::Duration;

/// `exit codes`, `HTTP statuses`.
fn plural(what: &str) -> String {
    if what.ends_with('s') {
        format!("{what}es")
    } else {
        format!("{what}s")
    }
}

/// Longest duration accepted anywhere (100 years): keeps arithmetic far from overflow.
const MAX_DURATION: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// A humantime duration (`250ms`, `1m30s`) or a bare number of seconds (`1.5`).
pub fn duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let accepts = "a duration such as 250ms, 2s, 1m30s or a number of seconds such as 1.5";
    let examples = "250ms, 2s, 1m30s or a number of seconds such as 1.5";
    if text.is_empty() {
        return Err(format!("empty value; expected {accepts}"));
    }
    let parsed = if text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        seconds(text)
    } else {
        humantime::parse_duration(text).ok()
    };
    match parsed {
        Some(d) if d <= MAX_DURATION => Ok(d),
        Some(_) => Err(format!("'{text}' is too long; the limit is 100 years")),
        None => Err(format!("'{text}' is not a duration; expected {examples}")),
    }
}

/// Like [`duration`], but zero is refused: a zero timeout would fail every attempt.
pub fn positive_duration(text: &str) -> Result<Duration, String> {
    let d = duration(text)?;
    if d.is_zero() {
        return Err(format!(
            "'{}' is zero; expected a duration above zero",
            text.trim()
        ));
    }
    Ok(d)
}

/// An OTLP endpoint (`--otel`, `OTEL_EXPORTER_OTLP_ENDPOINT`): an http or https URL
/// with a host.
pub fn otlp_endpoint(text: &str) -> Result<reqwest::Url, String> {
    let accepts = "expected an http:// or https:// URL such as http://localhost:4318";
    let url = reqwest::Url::parse(text.trim()).map_err(|e| {
        format!(
            "'{}' is not a URL ({e}); {accepts}",
            crate::domain::redact_url(text)
        )
    })?;
    if !matches!(url.scheme(), "http" | "https") || !url.has_host() {
        return Err(format!(
            "'{}' is not an http or https URL with a host; {accepts}",
            crate::domain::redact_url(text)
        ));
    }
    Ok(url)
}

/// OpenTelemetry's `key=value` list (`OTEL_RESOURCE_ATTRIBUTES`,
/// `OTEL_EXPORTER_OTLP_HEADERS`): pairs separated by commas, each key and value
/// trimmed, values percent-decoded. The message names an entry by its place, never
/// its value (a header's value is a secret).
pub fn key_value_list(text: &str) -> Result<Vec<(String, String)>, String> {
    let accepts = "expected key=value pairs separated by commas, values percent-encoded";
    let mut pairs = Vec::new();
    for (n, entry) in text.split(',').enumerate() {
        if entry.trim().is_empty() {
            continue;
        }
        let Some((key, value)) = entry.split_once('=') else {
            return Err(format!("entry {} has no '='; {accepts}", n + 1));
        };
        let key = key.trim();
        if key.is_empty() {
            return Err(format!("entry {} has no key; {accepts}", n + 1));
        }
        let value = percent_encoding::percent_decode_str(value.trim())
            .decode_utf8()
            .map_err(|_| format!("entry {} is not UTF-8 once decoded; {accepts}", n + 1))?;
        pairs.push((key.to_string(), value.into_owned()));
    }
    Ok(pairs)
}

fn seconds(text: &str) -> Option<Duration> {
    let value: f64 = text.parse().ok()?;
    if !value.is_finite() || value < 0.0 {
        return None;
    }
    Duration::try_from_secs_f64(value).ok()
}

/// `--budget-size`: a whole number of tokens, 1 to 1,000,000.
pub fn budget_size(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(n) if (1..=1_000_000).contains(&n) => Ok(n),
        _ => Err(format!(
            "'{}' is out of range; expected a whole number from 1 to 1000000",
            text.trim()
        )),
    }
}

/// `--budget-ratio`: tokens a success earns, 0 < R <= 1.
pub fn budget_ratio(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(r) if r > 0.0 && r <= 1.0 => Ok(r),
        _ => Err(format!(
            "'{}' is out of range; expected a number above 0 and at most 1",
            text.trim()
        )),
    }
}

/// Attempt counts: a whole number of at least 1.
pub fn attempts(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(0) => Err("0 attempts would run nothing; expected a whole number of at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!(
            "'{text}' is not a whole number; expected 1 or more (up to {})",
            u32::MAX
        )),
    }
}

/// `-a`: a whole number of attempts; 0 is no limit, which needs `--max-time` (checked
/// with the other flags).
pub fn attempt_limit(text: &str) -> Result<u32, String> {
    text.trim().parse::<u32>().map_err(|_| {
        format!(
            "'{text}' is not a whole number of attempts (up to {}), or 0 for no limit within --max-time",
            u32::MAX
        )
    })
}

/// `--consecutive`: successes in a row, at least 2 (1 is what every run asks for).
pub fn in_a_row(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(n) if n >= 2 => Ok(n),
        Ok(_) => Err(format!(
            "'{text}': one success already ends a run; expected a whole number of at least 2"
        )),
        Err(_) => Err(format!("'{text}' is not a whole number of at least 2")),
    }
}

/// `--delays`: the sleeps before retry 1, 2, 3 …, written `1s,5s,30s`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DelayList(pub Vec<Duration>);

/// Most delays a list may hold; more would be a schedule, not a list.
const MAX_DELAYS: usize = 1000;

pub fn delay_list(text: &str) -> Result<DelayList, String> {
    let accepts = "a comma-separated list of durations, such as 1s,5s,30s";
    let delays = text
        .split(',')
        .map(|item| match item.trim() {
            "" => Err(format!("an empty item in '{text}'; expected {accepts}")),
            item => duration(item).map_err(|e| format!("{e}; expected {accepts}")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if delays.len() > MAX_DELAYS {
        return Err(format!(
            "{} delays; at most {MAX_DELAYS} are taken (the last one repeats)",
            delays.len()
        ));
    }
    Ok(DelayList(delays))
}

/// curl's `--retry N`: a whole number of retries, so that N + 1 attempts fit.
pub fn retries(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(n) if n < u32::MAX => Ok(n),
        _ => Err(format!(
            "'{text}' is not a number of retries; expected a whole number from 0 (up to {})",
            u32::MAX - 1
        )),
    }
}

/// Exponential growth factor: a finite number above 1.
pub fn factor(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(f) if f.is_finite() && f > 1.0 && f <= 1000.0 => Ok(f),
        _ => Err(format!(
            "'{text}' is out of range; expected a number above 1 (and at most 1000), such as 2 or 1.5"
        )),
    }
}

/// A set of integer codes written as a comma-separated list of values and ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeSet {
    ranges: Vec<RangeInclusive<u32>>,
}

impl CodeSet {
    pub fn contains(&self, code: u32) -> bool {
        self.ranges.iter().any(|r| r.contains(&code))
    }

    /// Parses `2,64-78` where every value lies in `limits`.
    pub fn parse(text: &str, limits: RangeInclusive<u32>, what: &str) -> Result<Self, String> {
        let accepts = format!(
            "a comma-separated list of {} and ranges from {} to {}, such as {}",
            plural(what),
            limits.start(),
            limits.end(),
            if *limits.end() > 255 {
                "429,502-504"
            } else {
                "2,64-78"
            }
        );
        let mut ranges = Vec::new();
        for item in text.split(',') {
            let item = item.trim();
            let (lo, hi) = match item.split_once('-') {
                Some((lo, hi)) => (lo.trim(), hi.trim()),
                None => (item, item),
            };
            let (Ok(lo), Ok(hi)) = (lo.parse::<u32>(), hi.parse::<u32>()) else {
                return Err(format!(
                    "'{item}' in '{text}' is not a {what}; expected {accepts}"
                ));
            };
            if !limits.contains(&lo) || !limits.contains(&hi) || lo > hi {
                return Err(format!(
                    "'{item}' in '{text}' is out of range; expected {accepts}"
                ));
            }
            ranges.push(lo..=hi);
        }
        Ok(CodeSet { ranges })
    }
}

impl std::fmt::Display for CodeSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .ranges
            .iter()
            .map(|r| {
                if r.start() == r.end() {
                    r.start().to_string()
                } else {
                    format!("{}-{}", r.start(), r.end())
                }
            })
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// Exit-code lists for `--retry-on`, `--stop-on` and `--success-on`.
pub fn exit_codes(text: &str) -> Result<CodeSet, String> {
    CodeSet::parse(text, 0..=255, "exit code")
}

/// HTTP status lists for `--retry-on-status` and `--stop-on-status`.
pub fn statuses(text: &str) -> Result<CodeSet, String> {
    CodeSet::parse(text, 100..=599, "HTTP status")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempt_limits_take_zero_for_none() {
        assert_eq!(attempt_limit("0"), Ok(0));
        assert_eq!(attempt_limit(" 7"), Ok(7));
        assert!(attempt_limit("-1").unwrap_err().contains("0 for no limit"));
        assert_eq!(in_a_row("3"), Ok(3));
        assert!(in_a_row("1").is_err() && in_a_row("x").is_err());
    }

    #[test]
    fn delay_lists_are_durations_in_order() {
        let ms = |v: u64| Duration::from_millis(v);
        assert_eq!(
            delay_list("1s, 500ms,2"),
            Ok(DelayList(vec![ms(1000), ms(500), ms(2000)]))
        );
        assert_eq!(delay_list("0"), Ok(DelayList(vec![Duration::ZERO])));
        for bad in ["", "1s,,2s", "1s,soon", "1s,"] {
            assert!(delay_list(bad).is_err(), "{bad:?}");
        }
        assert!(delay_list(&vec!["1ms"; 1001].join(",")).is_err());
    }

    #[test]
    fn durations_accept_humantime_and_seconds() {
        assert_eq!(duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(duration("0"), Ok(Duration::ZERO));
        assert_eq!(duration(" 2 "), Ok(Duration::from_secs(2)));
    }

    #[test]
    fn durations_refuse_garbage_with_a_message() {
        for bad in ["", "abc", "-1", "1.2.3", "5 parsecs", "1e400", "nan", "."] {
            let err = duration(bad).unwrap_err();
            assert!(
                err.contains("duration") || err.contains("too long"),
                "{bad}: {err}"
            );
        }
        assert!(positive_duration("0").is_err());
        assert!(duration("1000000000000").is_err());
    }

    #[test]
    fn code_sets_take_values_and_ranges() {
        let set = exit_codes("2, 64-78,255").unwrap();
        assert!(set.contains(2) && set.contains(64) && set.contains(78) && set.contains(255));
        assert!(!set.contains(1) && !set.contains(79));
        assert_eq!(set.to_string(), "2,64-78,255");
    }

    #[test]
    fn code_sets_refuse_bad_items() {
        for bad in ["", "a", "1,", "5-2", "256", "1-300", "-", "1--2"] {
            assert!(exit_codes(bad).is_err(), "{bad}");
        }
        assert!(statuses("99").is_err());
        assert!(statuses("429,500-504").is_ok());
    }

    #[test]
    fn attempts_and_factor_bounds() {
        assert!(attempts("0").is_err());
        assert_eq!(attempts("3"), Ok(3));
        assert!(attempts("-1").is_err());
        assert!(factor("1").is_err());
        assert!(factor("inf").is_err());
        assert_eq!(factor("1.5"), Ok(1.5));
    }
}
