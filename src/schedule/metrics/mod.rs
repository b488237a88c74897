//! `--metrics-listen`: the scheduler's Prometheus metrics, served by [`serve()`]. The
//! metric families and their exposition (Prometheus text, or OpenMetrics when the
//! scraper asks for it) are `prometheus-client`'s. The scheduler only updates atomics.
//! What a slot's outcome is, and when the loop counts a catch-up, is decided elsewhere
//! (`outcome`, the loop); this module only keeps the numbers.

mod serve;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::outcome::Outcome;

pub use serve::serve;

/// The label every series carries (not `job`, which Prometheus renames on scrape).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobLabel {
    retry_job: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobOutcome {
    retry_job: String,
    outcome: String,
}

type Seconds = Gauge<f64, AtomicU64>;

/// The scheduler's metrics; clones share the same series.
#[derive(Clone)]
pub struct Metrics {
    job: JobLabel,
    registry: Arc<Registry>,
    slots: Family<JobOutcome, Counter>,
    attempts: Family<JobLabel, Counter>,
    caught_up: Family<JobLabel, Counter>,
    dropped: Family<JobLabel, Counter>,
    last_start: Family<JobLabel, Seconds>,
    last_end: Family<JobLabel, Seconds>,
    last_success: Family<JobLabel, Seconds>,
    next_slot: Family<JobLabel, Seconds>,
    last_duration: Family<JobLabel, Seconds>,
    /// When a crontab's scheduler loop last went round, in Unix milliseconds (0: not
    /// watched): `/healthz` says whether it is alive.
    heartbeat: Arc<AtomicU64>,
}

/// A loop that has not gone round for this long is taken for dead by `/healthz`.
const ALIVE_WITHIN: Duration = Duration::from_secs(10);

/// The outcomes a slot is counted under, each shown from the start (at 0).
const OUTCOMES: [Outcome; 4] = [
    Outcome::Succeeded,
    Outcome::GaveUp,
    Outcome::Skipped,
    Outcome::Refused,
];

impl Metrics {
    pub fn new(job: &str) -> Metrics {
        let mut registry = Registry::default();
        let metrics = Metrics {
            job: JobLabel {
                retry_job: job.to_string(),
            },
            registry: Arc::default(),
            slots: Family::default(),
            attempts: Family::default(),
            caught_up: Family::default(),
            dropped: Family::default(),
            last_start: Family::default(),
            last_end: Family::default(),
            last_success: Family::default(),
            next_slot: Family::default(),
            last_duration: Family::default(),
            heartbeat: Arc::default(),
        };
        // Counters are registered without `_total`: the encoder adds it.
        let m = &metrics;
        registry.register("retry_slots", "Slots handled, by outcome", m.slots.clone());
        registry.register(
            "retry_attempts",
            "Attempts made by the slots' runs",
            m.attempts.clone(),
        );
        registry.register(
            "retry_slots_caught_up",
            "Missed slots run by a catch-up",
            m.caught_up.clone(),
        );
        registry.register(
            "retry_slots_dropped",
            "Missed slots a catch-up did not run",
            m.dropped.clone(),
        );
        let gauges = [
            (
                "retry_last_slot_start_seconds",
                "When the last slot's run started, in Unix seconds",
                &m.last_start,
            ),
            (
                "retry_last_slot_end_seconds",
                "When the last slot's run ended, in Unix seconds",
                &m.last_end,
            ),
            (
                "retry_last_success_seconds",
                "When the last successful slot ended, in Unix seconds (absent until one has)",
                &m.last_success,
            ),
            (
                "retry_next_slot_seconds",
                "When the next slot is due, in Unix seconds",
                &m.next_slot,
            ),
            (
                "retry_last_slot_duration_seconds",
                "How long the last slot's run took, in seconds",
                &m.last_duration,
            ),
        ];
        for (name, help, family) in gauges {
            registry.register(name, help, family.clone());
        }
        m.show_series();
        Metrics {
            registry: Arc::new(registry),
            ..metrics
        }
    }

    /// The same series for another job of a crontab (its label `retry_job`), served
    /// with every other job's.
    pub fn for_job(&self, job: &str) -> Metrics {
        let other = Metrics {
            job: JobLabel {
                retry_job: job.to_string(),
            },
            ..self.clone()
        };
        other.show_series();
        other
    }

    /// The counters, at 0 until something is counted.
    fn show_series(&self) {
        for outcome in OUTCOMES {
            drop(self.slots.get_or_create(&self.labelled(outcome)));
        }
        for counter in [&self.attempts, &self.caught_up, &self.dropped] {
            drop(counter.get_or_create(&self.job));
        }
    }

    /// The scheduler's loop went round now.
    pub fn alive(&self) {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(1, |d| d.as_millis().max(1));
        self.heartbeat
            .store(u64::try_from(now).unwrap_or(u64::MAX), Ordering::SeqCst);
    }

    /// Whether the loop went round lately (or is not watched).
    fn is_alive(&self) -> bool {
        let beat = self.heartbeat.load(Ordering::SeqCst);
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        beat == 0 || now.saturating_sub(u128::from(beat)) < ALIVE_WITHIN.as_millis()
    }

    fn labelled(&self, outcome: Outcome) -> JobOutcome {
        JobOutcome {
            retry_job: self.job.retry_job.clone(),
            outcome: outcome.label().to_string(),
        }
    }

    fn set(&self, family: &Family<JobLabel, Seconds>, value: f64) {
        family.get_or_create(&self.job).set(value);
    }

    pub fn slot_started(&self, at: SystemTime) {
        self.set(&self.last_start, unix_seconds(at));
    }

    /// A slot's run ended; `outcome` is `None` for one a stopping signal interrupted,
    /// which counts under no outcome (it has no record and will be caught up).
    pub fn slot_ended(&self, outcome: Option<Outcome>, attempts: usize, took: Duration) {
        let now = SystemTime::now();
        self.set(&self.last_end, unix_seconds(now));
        self.set(&self.last_duration, took.as_secs_f64());
        self.attempts
            .get_or_create(&self.job)
            .inc_by(u64::try_from(attempts).unwrap_or(u64::MAX));
        if let Some(outcome) = outcome {
            self.slots.get_or_create(&self.labelled(outcome)).inc();
            if outcome == Outcome::Succeeded {
                self.succeeded_at(now);
            }
        }
    }

    /// A slot that was not run (an overlap): counted, without touching the run times.
    pub fn slot_skipped(&self) {
        self.slots
            .get_or_create(&self.labelled(Outcome::Skipped))
            .inc();
    }

    pub fn succeeded_at(&self, at: SystemTime) {
        self.set(&self.last_success, unix_seconds(at));
    }

    pub fn caught_up(&self) {
        self.caught_up.get_or_create(&self.job).inc();
    }

    pub fn dropped(&self, n: usize) {
        self.dropped
            .get_or_create(&self.job)
            .inc_by(u64::try_from(n).unwrap_or(u64::MAX));
    }

    pub fn next_slot(&self, at: SystemTime) {
        self.set(&self.next_slot, unix_seconds(at));
    }

    /// The exposition: OpenMetrics when `openmetrics`, else Prometheus text 0.0.4;
    /// with its content type.
    fn render(&self, openmetrics: bool) -> (&'static str, String) {
        let mut body = String::new();
        // Writing to a String cannot fail.
        if openmetrics {
            let _ = prometheus_client::encoding::text::encode(&mut body, &self.registry);
            (
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                body,
            )
        } else {
            let _ = prometheus_client::encoding::prometheus_text::encode(&mut body, &self.registry);
            (
                prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
                body,
            )
        }
    }
}

fn unix_seconds(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_carry_the_job_label_and_the_fixed_names() {
        let m = Metrics::new("backup");
        let (_, text) = m.render(false);
        assert!(
            text.contains(r#"retry_slots_total{retry_job="backup",outcome="gave_up"} 0"#),
            "{text}"
        );
        assert!(
            text.contains(r#"retry_attempts_total{retry_job="backup"} 0"#),
            "{text}"
        );
        assert!(!text.contains("retry_last_success_seconds{"), "{text}");
        m.slot_started(SystemTime::UNIX_EPOCH + Duration::from_secs(100));
        m.slot_ended(Some(Outcome::Succeeded), 2, Duration::from_millis(1500));
        m.caught_up();
        m.dropped(3);
        let (_, text) = m.render(false);
        for series in [
            r#"retry_slots_total{retry_job="backup",outcome="succeeded"} 1"#,
            r#"retry_attempts_total{retry_job="backup"} 2"#,
            r#"retry_slots_caught_up_total{retry_job="backup"} 1"#,
            r#"retry_slots_dropped_total{retry_job="backup"} 3"#,
            r#"retry_last_slot_start_seconds{retry_job="backup"} 100"#,
            r#"retry_last_slot_duration_seconds{retry_job="backup"} 1.5"#,
            r#"retry_last_success_seconds{retry_job="backup"} "#,
        ] {
            assert!(text.contains(series), "{series}\n{text}");
        }
        let (content_type, open) = m.render(true);
        assert!(content_type.starts_with("application/openmetrics-text"));
        assert!(open.ends_with("# EOF\n"), "{open}");
    }
}
