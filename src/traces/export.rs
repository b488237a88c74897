//! Sending a trace: one POST of the OTLP/HTTP protobuf body to the traces endpoint,
//! with the configured headers, ended by its bound (the configured timeout, at most a
//! second; a quarter of a second once a stopping signal came; at once at a second
//! one). No retry: a trace that cannot be sent now is dropped, since the run's end
//! must not wait. What failed is said in words that name neither a header nor a
//! URL's user information; whether it is said is [`Warnings`]'.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::CONTENT_TYPE;

use crate::config::TraceConfig;
use crate::domain::redact_url;
use crate::wait::{self, Bound, Ended};

/// How long an export may go on after a stopping signal.
pub const AFTER_SIGNAL: Duration = Duration::from_millis(250);

/// Sends `body` where `config` says; `stopping`: a stopping signal came already (a
/// scheduler's held one included). `Err` says why it was not taken.
pub fn send(config: &TraceConfig, body: Vec<u8>, stopping: bool) -> Result<(), String> {
    let limit = match stopping {
        true => config.timeout.min(AFTER_SIGNAL),
        false => config.timeout,
    };
    let bound = Bound::after_run(limit, AFTER_SIGNAL);
    let shown = redact_url(config.endpoint.as_str());
    // reqwest is built without a crypto provider; the trap of an exporter that
    // panicked without one. Another part of retry may have installed it already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = wait::in_runtime(|| {
        reqwest::Client::builder()
            .dns_resolver(Arc::new(crate::resolve::HttpResolver(None)))
            .build()
    })
    .map_err(|e| format!("cannot set up the HTTP client for {shown}: {e}"))?;
    let request = client
        .post(config.endpoint.clone())
        .headers(config.headers.iter().cloned().collect())
        .header(CONTENT_TYPE, "application/x-protobuf")
        .body(body);
    let posted = async move {
        let response = request.send().await.map_err(|e| words(&e))?;
        let status = response.status();
        match status.is_success() {
            true => Ok(()),
            false => Err(format!("the collector answered HTTP {}", status.as_u16())),
        }
    };
    match wait::on_runtime(wait::within(posted, &bound)) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(why)) => Err(format!("{shown}: {why}")),
        Err(Ended::TimedOut) => Err(format!(
            "{shown}: no answer within {}",
            crate::domain::human(limit)
        )),
        Err(Ended::Stopped(_)) => Err(format!("{shown}: stopped by a second signal")),
    }
}

/// A reqwest error in words, without its URL (which may carry user information).
fn words(err: &reqwest::Error) -> String {
    let kind = if err.is_connect() {
        "cannot connect"
    } else if err.is_timeout() {
        "timed out"
    } else {
        "the request failed"
    };
    let mut cause = std::error::Error::source(err);
    let mut deepest = None;
    while let Some(c) = cause {
        deepest = Some(c.to_string());
        cause = c.source();
    }
    match deepest {
        Some(why) => format!("{kind}: {why}"),
        None => kind.to_string(),
    }
}

/// Whether an export's failure is said: the first of an outage is, one warning; the
/// next are not, until an export succeeds again.
#[derive(Debug, Default)]
pub struct Warnings {
    failing: bool,
}

impl Warnings {
    /// Takes an export's result; `Some(line)` is the warning to say.
    pub fn settle(&mut self, result: &Result<(), String>) -> Option<String> {
        match result {
            Ok(()) => {
                self.failing = false;
                None
            }
            Err(_) if self.failing => None,
            Err(why) => {
                self.failing = true;
                Some(format!(
                    "warning: the run's trace was not sent ({why}); the exit status is the run's own"
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_warning_per_outage() {
        let mut warnings = Warnings::default();
        let down = Err("no answer".to_string());
        assert!(warnings.settle(&down).is_some());
        assert!(warnings.settle(&down).is_none());
        assert!(warnings.settle(&Ok(())).is_none());
        assert!(warnings.settle(&down).is_some(), "a new outage is said");
    }
}
