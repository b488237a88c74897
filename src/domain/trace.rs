//! What a trace is, as W3C Trace Context says it: the IDs of a trace and of a span, a
//! span's context (`SpanContext`: its IDs, whether it is sampled, the vendors'
//! `tracestate`) written and read as a `traceparent` value, and the record of a hook
//! that ran (`HookRun`), which its span is made from. Making the spans of a run and
//! sending them is the `traces` module's work; this module only names them.

use std::time::{Duration, SystemTime};

/// A trace's ID: 16 bytes, never all zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceId(pub [u8; 16]);

/// A span's ID: 8 bytes, never all zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SpanId(pub [u8; 8]);

impl TraceId {
    pub fn random() -> TraceId {
        loop {
            let id = rand::random::<u128>();
            if id != 0 {
                return TraceId(id.to_be_bytes());
            }
        }
    }
}

impl SpanId {
    pub fn random() -> SpanId {
        loop {
            let id = rand::random::<u64>();
            if id != 0 {
                return SpanId(id.to_be_bytes());
            }
        }
    }
}

impl std::fmt::Display for TraceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl std::fmt::Display for SpanId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// A span as another process or service is told of it: `TRACEPARENT` and
/// `TRACESTATE` in a command's environment, `traceparent` on a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanContext {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    /// The trace is recorded (the `sampled` flag): a span of a trace that is not is
    /// passed on, never exported.
    pub sampled: bool,
    /// `tracestate`, passed on as it came.
    pub state: Option<String>,
}

impl SpanContext {
    /// The first span of a new trace.
    pub fn new_trace(sampled: bool) -> SpanContext {
        SpanContext {
            trace_id: TraceId::random(),
            span_id: SpanId::random(),
            sampled,
            state: None,
        }
    }

    /// A new span under this one: the same trace, flags and state.
    pub fn child(&self) -> SpanContext {
        SpanContext {
            span_id: SpanId::random(),
            ..self.clone()
        }
    }

    /// The `traceparent` value naming this span: `00-TRACE-SPAN-FLAGS`.
    pub fn traceparent(&self) -> String {
        let flags = u8::from(self.sampled);
        format!("00-{}-{}-{flags:02x}", self.trace_id, self.span_id)
    }

    /// Reads a `traceparent` value (and its `tracestate`), as W3C Trace Context
    /// level 1 says: version 00 exactly, a later version by its first four fields;
    /// lowercase hex; IDs that are not all zero. `None` for anything else.
    pub fn parse(traceparent: &str, state: Option<&str>) -> Option<SpanContext> {
        let value = traceparent.trim_matches([' ', '\t']);
        let mut fields = value.split('-');
        let version = fields.next().filter(|v| is_hex(v, 2) && *v != "ff")?;
        let trace = fields.next().filter(|t| is_hex(t, 32))?;
        let span = fields.next().filter(|s| is_hex(s, 16))?;
        let flags = fields.next()?;
        let flags = (flags.len() == 2)
            .then(|| u8::from_str_radix(flags, 16).ok())
            .flatten()?;
        // Version 00 has four fields; a later one may add more after a dash.
        if version == "00" && fields.next().is_some() {
            return None;
        }
        let trace_id = TraceId(hex_bytes(trace)?);
        let span_id = SpanId(hex_bytes(span)?);
        if trace_id.0 == [0; 16] || span_id.0 == [0; 8] {
            return None;
        }
        Some(SpanContext {
            trace_id,
            span_id,
            sampled: flags & 1 == 1,
            state: state
                .map(|s| s.trim_matches([' ', '\t']).to_string())
                .filter(|s| is_tracestate(s)),
        })
    }
}

/// A `tracestate` that can be passed on: not empty, at most 512 characters (W3C's
/// limit), printable ASCII (it becomes a header value).
fn is_tracestate(text: &str) -> bool {
    !text.is_empty() && text.len() <= 512 && text.bytes().all(|b| (0x20..0x7f).contains(&b))
}

fn is_hex(text: &str, len: usize) -> bool {
    text.len() == len
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn hex_bytes<const N: usize>(text: &str) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// One hook that ran (`--on-retry`, `--on-success`, `--on-give-up`), for its span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookRun {
    /// The hook's flag: `--on-retry`.
    pub flag: &'static str,
    /// Its span, which its `TRACEPARENT` named.
    pub span: SpanId,
    pub started_at: SystemTime,
    pub duration: Duration,
    /// Its exit status, when it exited.
    pub exit_code: Option<i32>,
    /// How it failed, when it did (`failed with exit status 3`, `ran out of time`).
    pub failure: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIVEN: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_traceparent_reads_back_as_it_was_written() {
        let ctx = SpanContext::parse(GIVEN, Some(" vendor=value ")).unwrap();
        assert_eq!(ctx.traceparent(), GIVEN);
        assert!(ctx.sampled);
        assert_eq!(ctx.state.as_deref(), Some("vendor=value"));
        let child = ctx.child();
        assert_eq!(child.trace_id, ctx.trace_id);
        assert_ne!(child.span_id, ctx.span_id);
        let fresh = SpanContext::new_trace(false);
        assert!(fresh.traceparent().ends_with("-00"));
        assert_eq!(
            SpanContext::parse(&fresh.traceparent(), None),
            Some(fresh.clone())
        );
    }

    #[test]
    fn what_trace_context_refuses_is_refused() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",
        ] {
            assert_eq!(SpanContext::parse(bad, None), None, "{bad}");
        }
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-more";
        let ctx = SpanContext::parse(later, Some("")).unwrap();
        assert!(!ctx.sampled);
        assert_eq!(ctx.state, None);
    }
}
