//! A run's trace (docs/traces.md): its span and the spans under it, made from what the
//! run recorded ([`spans`]), encoded as OTLP's protobuf ([`otlp`]) and sent after the
//! report within its own bound ([`export`]). A run that is traced starts a
//! [`RunTrace`] at its start; the loop, the executors and the hooks only ever see the
//! span they are under (`Env::trace`, `AttemptContext::span`, `Hooks::set_trace`) and
//! record their span's ID beside what they already record. Reading the configuration
//! is `config::traces`'; without it nothing of this module runs.

mod export;
mod otlp;
mod spans;

use std::time::{Duration, SystemTime};

pub use export::Warnings;

use crate::config::{TargetConfig, TraceConfig};
use crate::domain::{HookRun, RunSummary, SpanContext};
use spans::{RunRecord, Target, Wait};

/// A traced run, from its start.
pub struct RunTrace {
    config: TraceConfig,
    /// The run's span: its trace, and whether it is recorded.
    span: SpanContext,
    started_at: SystemTime,
    target: Target,
    slot: Option<String>,
    waits: Vec<Wait>,
}

impl RunTrace {
    /// The run's span starts now: under `TRACEPARENT` when there is one (a slot's run
    /// starts a trace of its own), recorded as the sampler says.
    pub fn start(config: &TraceConfig, target: &TargetConfig, slot: Option<&str>) -> RunTrace {
        let sampled = config.sampler.samples(config.parent.as_ref());
        let span = match &config.parent {
            Some(parent) => SpanContext {
                sampled,
                ..parent.child()
            },
            None => SpanContext::new_trace(sampled),
        };
        RunTrace {
            config: config.clone(),
            span,
            started_at: SystemTime::now(),
            target: target_of(target),
            slot: slot.map(str::to_string),
            waits: Vec::new(),
        }
    }

    /// The run's span, which the attempts and hooks are under.
    pub fn span(&self) -> &SpanContext {
        &self.span
    }

    /// The run waited `duration` up to now, outside the retry loop (`lock`, `splay`).
    pub fn waited(&mut self, cause: &'static str, duration: Duration) {
        let now = SystemTime::now();
        self.waits.push(Wait {
            cause,
            started_at: now.checked_sub(duration).unwrap_or(now),
            duration,
        });
    }

    /// The run ended as `summary` says, its hooks as `hooks` say: its trace, ready to
    /// send (`None` when the trace is not recorded).
    pub fn finish(self, summary: &RunSummary, hooks: &[HookRun]) -> Option<Finished> {
        if !self.span.sampled {
            return None;
        }
        let record = RunRecord {
            span: &self.span,
            parent: self.config.parent.as_ref(),
            link: self.config.link.as_ref(),
            target: &self.target,
            slot: self.slot.as_deref(),
            started_at: self.started_at,
            ended_at: SystemTime::now(),
            summary,
            waits: &self.waits,
            hooks,
        };
        let spans = spans::of_run(&record);
        let body = otlp::encode(&self.span, &self.config.resource, &spans);
        Some(Finished {
            config: self.config,
            body,
        })
    }
}

/// A finished run's trace, encoded.
pub struct Finished {
    config: TraceConfig,
    body: Vec<u8>,
}

impl Finished {
    /// Sends it; `stopping`: a stopping signal came (the export gets a quarter of a
    /// second). `Err` says why it was not taken.
    pub fn send(self, stopping: bool) -> Result<(), String> {
        export::send(&self.config, self.body, stopping)
    }
}

/// What the run's span says of the target: a command's program by its file name (no
/// argument), a request's method and URL (its user information `***`).
fn target_of(target: &TargetConfig) -> Target {
    match target {
        TargetConfig::Command(c) => Target::Command {
            program: c
                .argv
                .first()
                .map(|p| {
                    let path = std::path::Path::new(p);
                    path.file_name()
                        .unwrap_or(p.as_os_str())
                        .to_string_lossy()
                        .into_owned()
                })
                .unwrap_or_default(),
        },
        TargetConfig::Http(h) => Target::Http {
            method: h.request.method.to_string(),
            url: crate::domain::redact_url(&h.url),
        },
    }
}
