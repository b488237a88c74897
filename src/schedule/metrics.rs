//! `--metrics-listen`: the scheduler's Prometheus metrics and the HTTP server that
//! answers `GET /metrics`. The metric families and their exposition (Prometheus text,
//! or OpenMetrics when the scraper asks for it) are `prometheus-client`'s; the server
//! is hyper's HTTP/1 on a thread of its own, so a slow or stuck scraper never holds up
//! the scheduler: the scheduler only updates atomics, and its exit ends the thread.
//! What a slot's outcome is, and when the loop counts a catch-up, is decided elsewhere
//! (`outcome`, the loop); this module only keeps the numbers.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use anyhow::Context;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode, header};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::outcome::Outcome;

/// Longest a scraper's connection may take, from accepting it to the last byte.
const CONNECTION_LIMIT: Duration = Duration::from_secs(10);
/// Longest a scraper may take to send its request's header.
const HEADER_LIMIT: Duration = Duration::from_secs(5);
/// Pause after a failed accept (descriptors exhausted, say) before the next one.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// The label every series carries (not `job`, which Prometheus renames on scrape).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Job {
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
    job: Job,
    registry: Arc<Registry>,
    slots: Family<JobOutcome, Counter>,
    attempts: Family<Job, Counter>,
    caught_up: Family<Job, Counter>,
    dropped: Family<Job, Counter>,
    last_start: Family<Job, Seconds>,
    last_end: Family<Job, Seconds>,
    last_success: Family<Job, Seconds>,
    next_slot: Family<Job, Seconds>,
    last_duration: Family<Job, Seconds>,
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
            job: Job {
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
            job: Job {
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

    fn set(&self, family: &Family<Job, Seconds>, value: f64) {
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

/// Binds `addr` (an error is the caller's exit 125) and serves `metrics` at
/// `/metrics` on a thread of its own until the process exits; returns the address
/// bound (the port chosen, for port 0).
pub fn serve(addr: SocketAddr, metrics: Metrics) -> anyhow::Result<SocketAddr> {
    let listener = std::net::TcpListener::bind(addr)
        .with_context(|| format!("--metrics-listen: cannot listen on {addr}"))?;
    listener
        .set_nonblocking(true)
        .context("--metrics-listen: cannot make the socket non-blocking")?;
    let bound = listener.local_addr()?;
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            // Never joined: the scheduler's exit ends this thread wherever it is.
            crate::wait::runtime().block_on(accept(listener, metrics));
        })
        .context("--metrics-listen: cannot start the server's thread")?;
    Ok(bound)
}

async fn accept(listener: std::net::TcpListener, metrics: Metrics) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        crate::report::error("--metrics-listen: the socket cannot be served; no metrics");
        return;
    };
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(answer_connection(stream, metrics.clone()));
            }
            Err(_) => tokio::time::sleep(ACCEPT_PAUSE).await,
        }
    }
}

/// One scraper's connection: one request, answered, within [`CONNECTION_LIMIT`].
async fn answer_connection(stream: tokio::net::TcpStream, metrics: Metrics) {
    let service = hyper::service::service_fn(move |request| {
        let answer = answer(&request, &metrics);
        async move { Ok::<_, Infallible>(answer) }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_LIMIT)
        .keep_alive(false)
        .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
    let _ = tokio::time::timeout(CONNECTION_LIMIT, connection).await;
}

/// `GET /metrics` (or `HEAD`): the exposition; anything else says what is served.
fn answer(request: &Request<Incoming>, metrics: &Metrics) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, content_type: &str, body: String| {
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        if let Ok(value) = header::HeaderValue::from_str(content_type) {
            response.headers_mut().insert(header::CONTENT_TYPE, value);
        }
        response
    };
    if request.uri().path() == "/healthz" {
        return match metrics.is_alive() {
            true => reply(StatusCode::OK, "text/plain; charset=utf-8", "ok\n".into()),
            false => reply(
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain; charset=utf-8",
                "the scheduler's loop has not gone round for 10 s\n".into(),
            ),
        };
    }
    if request.uri().path() != "/metrics" {
        return reply(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "not found: the metrics are at /metrics (and /healthz)\n".into(),
        );
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response = reply(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            "only GET and HEAD\n".into(),
        );
        response
            .headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let openmetrics = request.headers().get_all(header::ACCEPT).iter().any(|v| {
        v.to_str()
            .is_ok_and(|v| v.contains("application/openmetrics-text"))
    });
    let (content_type, body) = metrics.render(openmetrics);
    reply(StatusCode::OK, content_type, body)
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
