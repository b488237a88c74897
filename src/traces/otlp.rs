//! A run's spans as OTLP's protobuf message (`ExportTraceServiceRequest`), in the
//! messages opentelemetry-rust generates from OpenTelemetry's own `.proto` files: one
//! resource (the service), one instrumentation scope (`retry`), the spans.

use std::time::SystemTime;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{
    ResourceSpans, ScopeSpans, Span as OtlpSpan, Status, span, status,
};
use prost::Message;

use super::spans::{Kind, Span, Value};
use crate::domain::SpanContext;

/// Bits 8 and 9 of a span's flags: whether its parent is remote is known, and it is.
const PARENT_REMOTE_KNOWN: u32 = 0x100;
const PARENT_REMOTE: u32 = 0x200;

/// The body of an export: `spans` of one trace (`trace`), of the service `resource`.
pub fn encode(trace: &SpanContext, resource: &[(String, String)], spans: &[Span]) -> Vec<u8> {
    let run = spans.first().map(|s| s.id);
    let request = ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: resource
                    .iter()
                    .map(|(k, v)| key_value(k, &Value::Text(v.clone())))
                    .collect(),
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "retry".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..Default::default()
                }),
                spans: spans
                    .iter()
                    .map(|s| otlp_span(trace, s, Some(s.id) == run))
                    .collect(),
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    };
    request.encode_to_vec()
}

/// One span; the run's (`is_run`) has a parent in another process, if any.
fn otlp_span(trace: &SpanContext, s: &Span, is_run: bool) -> OtlpSpan {
    let remote = match (is_run, s.parent) {
        (_, None) => 0,
        (true, Some(_)) => PARENT_REMOTE_KNOWN | PARENT_REMOTE,
        (false, Some(_)) => PARENT_REMOTE_KNOWN,
    };
    OtlpSpan {
        trace_id: trace.trace_id.0.to_vec(),
        span_id: s.id.0.to_vec(),
        trace_state: trace.state.clone().unwrap_or_default(),
        parent_span_id: s.parent.map(|p| p.0.to_vec()).unwrap_or_default(),
        flags: u32::from(trace.sampled) | remote,
        name: s.name.into(),
        kind: match s.kind {
            Kind::Internal => span::SpanKind::Internal,
            Kind::Client => span::SpanKind::Client,
        } as i32,
        start_time_unix_nano: nanos(s.start),
        end_time_unix_nano: nanos(s.end),
        attributes: s.attributes.iter().map(|(k, v)| key_value(k, v)).collect(),
        links: s.link.iter().map(link).collect(),
        status: Some(Status {
            message: s.error.clone().unwrap_or_default(),
            code: match s.error {
                Some(_) => status::StatusCode::Error,
                None => status::StatusCode::Unset,
            } as i32,
        }),
        ..Default::default()
    }
}

fn link(to: &SpanContext) -> span::Link {
    span::Link {
        trace_id: to.trace_id.0.to_vec(),
        span_id: to.span_id.0.to_vec(),
        trace_state: to.state.clone().unwrap_or_default(),
        flags: u32::from(to.sampled) | PARENT_REMOTE_KNOWN | PARENT_REMOTE,
        ..Default::default()
    }
}

fn key_value(key: &str, value: &Value) -> KeyValue {
    let value = match value {
        Value::Text(text) => any_value::Value::StringValue(text.clone()),
        Value::Int(n) => any_value::Value::IntValue(*n),
    };
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

fn nanos(at: SystemTime) -> u64 {
    at.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::SpanId;
    use std::time::Duration;

    #[test]
    fn spans_encode_and_decode_back() {
        let trace = SpanContext::new_trace(true);
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1);
        let run = Span {
            name: "retry.run",
            id: trace.span_id,
            parent: Some(SpanId::random()),
            kind: Kind::Internal,
            start,
            end: start + Duration::from_millis(5),
            attributes: vec![("retry.attempts", Value::Int(1))],
            error: Some("gave up".into()),
            link: None,
        };
        let resource = [("service.name".to_string(), "svc".to_string())];
        let body = encode(&trace, &resource, &[run]);
        let back = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        let spans = &back.resource_spans[0].scope_spans[0].spans;
        assert_eq!(spans[0].name, "retry.run");
        assert_eq!(spans[0].trace_id, trace.trace_id.0);
        assert_eq!(spans[0].start_time_unix_nano, 1_000_000_000);
        assert_eq!(spans[0].flags, 0x301);
        assert_eq!(spans[0].status.as_ref().unwrap().code, 2);
        assert_eq!(
            back.resource_spans[0].resource.as_ref().unwrap().attributes[0].key,
            "service.name"
        );
    }
}
