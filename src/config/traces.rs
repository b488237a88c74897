//! Whether a run is traced and where its trace goes, read as OpenTelemetry's SDKs read
//! their configuration: `--otel URL` as `OTEL_EXPORTER_OTLP_ENDPOINT` is (`/v1/traces`
//! appended) and winning over both endpoint variables, the `TRACES_` variable used as
//! given, a signal's own variable winning over the general one, an empty value unset.
//! Without an endpoint nothing else is read. A value that does not parse is one
//! warning, never 125 (telemetry never changes what a run does); a header's value is
//! never shown. Making and sending the spans is the `traces` module's work.

use std::ffi::OsString;
use std::time::Duration;

use reqwest::Url;
use reqwest::header::{HeaderName, HeaderValue};

use crate::cli::Cli;
use crate::domain::SpanContext;
use crate::parse;

/// The longest an export may take: SPEC's own bound, whatever `--max-time` says.
pub const EXPORT_LIMIT: Duration = Duration::from_secs(1);

/// The service a run's spans are of when nothing names it: what an SDK names a
/// process it was told nothing about.
const UNKNOWN_SERVICE: &str = "unknown_service:retry";

/// A traced run's settings.
#[derive(Clone, Debug)]
pub struct TraceConfig {
    /// Where the spans go: the complete traces URL.
    pub endpoint: Url,
    /// Sent with every export (`OTEL_EXPORTER_OTLP_HEADERS`); never shown.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// How long an export may take: [`EXPORT_LIMIT`], or `OTEL_EXPORTER_OTLP_TIMEOUT`
    /// when shorter.
    pub timeout: Duration,
    /// The resource's attributes, `service.name` first.
    pub resource: Vec<(String, String)>,
    /// The span the run's span is a child of (`TRACEPARENT`, `TRACESTATE`).
    pub parent: Option<SpanContext>,
    /// A scheduled slot's run starts a trace of its own: its scheduler's
    /// `TRACEPARENT` is a link, not its parent.
    pub link: Option<SpanContext>,
    pub sampler: Sampler,
}

impl TraceConfig {
    /// What `--dry-run` says of the trace (never a header's value).
    pub fn describe(&self) -> String {
        let service = self.resource.first().map_or("", |(_, v)| v.as_str());
        let under = match (&self.parent, &self.link) {
            (Some(parent), _) => format!("under TRACEPARENT {}", parent.traceparent()),
            (None, Some(_)) => {
                "a trace of its own per slot, linked to the scheduler's TRACEPARENT".into()
            }
            (None, None) => "a trace of its own".into(),
        };
        let recorded = match self.sampler.samples(self.parent.as_ref()) {
            true => String::new(),
            false => {
                " (not recorded: the sampler or the parent says so; TRACEPARENT is still passed on)"
                    .into()
            }
        };
        format!(
            "trace: spans of service {service:?}, {under}, sent to {} (OTLP/HTTP protobuf{}) after the report, within {}{recorded}\n",
            crate::domain::redact_url(self.endpoint.as_str()),
            match self.headers.len() {
                0 => String::new(),
                n => format!(
                    ", {n} header{} from OTEL_EXPORTER_OTLP_HEADERS",
                    if n == 1 { "" } else { "s" }
                ),
            },
            crate::domain::human(self.timeout),
        )
    }
}

/// `OTEL_TRACES_SAMPLER`, for the samplers that need no argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sampler {
    /// A new trace (no parent) is recorded.
    pub root: bool,
    /// A parent's `sampled` flag decides (the parent-based samplers).
    pub follow_parent: bool,
}

impl Sampler {
    /// Whether a run under `parent` is recorded.
    pub fn samples(self, parent: Option<&SpanContext>) -> bool {
        match parent {
            Some(parent) if self.follow_parent => parent.sampled,
            _ => self.root,
        }
    }
}

/// Each sampler retry has, by its `OTEL_TRACES_SAMPLER` name (the SDK default first).
const SAMPLERS: &[(&str, Sampler)] = &[
    (
        "parentbased_always_on",
        Sampler {
            root: true,
            follow_parent: true,
        },
    ),
    (
        "parentbased_always_off",
        Sampler {
            root: false,
            follow_parent: true,
        },
    ),
    (
        "always_on",
        Sampler {
            root: true,
            follow_parent: false,
        },
    ),
    (
        "always_off",
        Sampler {
            root: false,
            follow_parent: false,
        },
    ),
];

/// Variables an SDK reads that retry does not act on, and what it does instead.
const NOT_ACTED_ON: &[(&str, &str)] = &[
    (
        "CERTIFICATE",
        "the system's roots verify an https collector",
    ),
    ("CLIENT_CERTIFICATE", "no client certificate is sent"),
    ("CLIENT_KEY", "no client certificate is sent"),
];

/// Where environment variables come from: the process's, or a test's.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<OsString>;

/// The trace settings of this invocation (`None` when it is not traced), and the
/// warnings to [`say`]. A slot's run has none to say: its scheduler said them once, at
/// its start.
pub fn from_cli(cli: &Cli) -> (Option<TraceConfig>, Vec<String>) {
    let slot = cli.scheduling.run_slot.is_some();
    let mut warnings = Vec::new();
    let config = read(
        cli.output.otel.as_ref(),
        slot,
        &|name| std::env::var_os(name),
        &mut warnings,
    );
    if slot {
        warnings.clear();
    }
    (config, warnings)
}

/// Says each warning of the reading, one line each.
pub fn say(warnings: Vec<String>) {
    for warning in warnings {
        crate::report::notice(&format!("warning: {warning}"));
    }
}

/// The settings from `--otel` (`otel`) and `env`; what does not parse is added to
/// `warnings`, one line each. `slot`: a scheduled slot's run.
pub fn read(
    otel: Option<&Url>,
    slot: bool,
    env: Env<'_>,
    warnings: &mut Vec<String>,
) -> Option<TraceConfig> {
    let mut vars = Vars { env, warnings };
    let endpoint = vars.endpoint(otel)?;
    if vars.disabled() || !vars.exports_otlp() || !vars.protobuf() {
        return None;
    }
    vars.not_acted_on();
    let inherited = vars.parent();
    let (parent, link) = match slot {
        true => (None, inherited),
        false => (inherited, None),
    };
    Some(TraceConfig {
        endpoint,
        headers: vars.headers(),
        timeout: vars.timeout(),
        resource: vars.resource(),
        parent,
        link,
        sampler: vars.sampler(),
    })
}

/// The environment as the reading goes, and what it found wrong.
struct Vars<'a, 'w> {
    env: Env<'a>,
    warnings: &'w mut Vec<String>,
}

impl Vars<'_, '_> {
    /// A variable's value: unset when empty, a warning when not UTF-8.
    fn get(&mut self, name: &str) -> Option<String> {
        let value = (self.env)(name).filter(|v| !v.is_empty())?;
        match value.into_string() {
            Ok(text) => Some(text),
            Err(_) => {
                self.warn(name, "is not UTF-8; it is left out");
                None
            }
        }
    }

    /// The traces variable when set, else the general one: `(name, value)`.
    fn signal(&mut self, suffix: &str) -> Option<(String, String)> {
        [
            format!("OTEL_EXPORTER_OTLP_TRACES_{suffix}"),
            format!("OTEL_EXPORTER_OTLP_{suffix}"),
        ]
        .into_iter()
        .find_map(|name| self.get(&name).map(|value| (name, value)))
    }

    fn warn(&mut self, name: &str, what: &str) {
        self.warnings.push(format!("{name}: {what}"));
    }

    /// `--otel`, then the traces endpoint as given, then the general one with
    /// `/v1/traces` appended; one that does not parse is left out with a warning.
    fn endpoint(&mut self, otel: Option<&Url>) -> Option<Url> {
        if let Some(base) = otel {
            return Some(traces_url(base));
        }
        let sources = [
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", false),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", true),
        ];
        for (name, append) in sources {
            let Some(text) = self.get(name) else {
                continue;
            };
            match parse::otlp_endpoint(&text) {
                Ok(url) if append => return Some(traces_url(&url)),
                Ok(url) => return Some(url),
                Err(why) => self.warn(name, &format!("{why}; it is left out")),
            }
        }
        None
    }

    /// `OTEL_SDK_DISABLED=true` (any case) turns tracing off.
    fn disabled(&mut self) -> bool {
        let Some(text) = self.get("OTEL_SDK_DISABLED") else {
            return false;
        };
        match text.trim().to_ascii_lowercase().as_str() {
            "true" => true,
            "false" => false,
            _ => {
                self.warn(
                    "OTEL_SDK_DISABLED",
                    &format!("'{text}' is not true or false; read as false"),
                );
                false
            }
        }
    }

    /// `OTEL_TRACES_EXPORTER`: `otlp` (the default) exports, `none` does not; any other
    /// exporter is one warning.
    fn exports_otlp(&mut self) -> bool {
        let Some(text) = self.get("OTEL_TRACES_EXPORTER") else {
            return true;
        };
        let names: Vec<String> = text
            .split(',')
            .map(|n| n.trim().to_ascii_lowercase())
            .filter(|n| !n.is_empty())
            .collect();
        if names.iter().any(|n| n == "none") {
            return false;
        }
        let others: Vec<&str> = names
            .iter()
            .map(String::as_str)
            .filter(|n| *n != "otlp")
            .collect();
        let otlp = others.len() < names.len() || names.is_empty();
        if !others.is_empty() {
            let then = if otlp {
                "only otlp is sent"
            } else {
                "nothing is exported"
            };
            self.warn(
                "OTEL_TRACES_EXPORTER",
                &format!(
                    "retry has no exporter '{}' (it has otlp and none); {then}",
                    others.join(",")
                ),
            );
        }
        otlp
    }

    /// The protocol: http/protobuf is what retry sends; another is one warning and
    /// nothing is exported.
    fn protobuf(&mut self) -> bool {
        let Some((name, text)) = self.signal("PROTOCOL") else {
            return true;
        };
        if text.trim() == "http/protobuf" {
            return true;
        }
        self.warn(
            &name,
            &format!("retry sends http/protobuf only, not '{text}'; nothing is exported"),
        );
        false
    }

    /// Says once which variables set retry does not act on, and compression.
    fn not_acted_on(&mut self) {
        for (suffix, instead) in NOT_ACTED_ON {
            if let Some((name, _)) = self.signal(suffix) {
                self.warn(&name, &format!("is not supported; {instead}"));
            }
        }
        if let Some((name, text)) = self.signal("COMPRESSION") {
            if text.trim() != "none" {
                self.warn(
                    &name,
                    &format!("'{text}' is not supported; spans are sent uncompressed"),
                );
            }
        }
    }

    /// The general headers, then the traces ones over them (a name in both: the
    /// traces value). A variable that does not parse is left out whole.
    fn headers(&mut self) -> Vec<(HeaderName, HeaderValue)> {
        let mut headers: Vec<(HeaderName, HeaderValue)> = Vec::new();
        for name in [
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        ] {
            let Some(text) = self.get(name) else {
                continue;
            };
            match header_pairs(&text) {
                Ok(pairs) => {
                    for (key, value) in pairs {
                        headers.retain(|(k, _)| *k != key);
                        headers.push((key, value));
                    }
                }
                Err(why) => self.warn(name, &format!("{why}; no header of it is sent")),
            }
        }
        headers
    }

    /// `OTEL_EXPORTER_OTLP_TIMEOUT` in milliseconds, within [`EXPORT_LIMIT`].
    fn timeout(&mut self) -> Duration {
        let Some((name, text)) = self.signal("TIMEOUT") else {
            return EXPORT_LIMIT;
        };
        match text.trim().parse::<u64>() {
            Ok(0) => EXPORT_LIMIT,
            Ok(ms) => Duration::from_millis(ms).min(EXPORT_LIMIT),
            Err(_) => {
                self.warn(
                    &name,
                    &format!("'{text}' is not a number of milliseconds; 1s is the limit"),
                );
                EXPORT_LIMIT
            }
        }
    }

    /// `OTEL_RESOURCE_ATTRIBUTES`, with `OTEL_SERVICE_NAME` over its `service.name`.
    fn resource(&mut self) -> Vec<(String, String)> {
        let mut attributes = match self.get("OTEL_RESOURCE_ATTRIBUTES") {
            Some(text) => parse::key_value_list(&text).unwrap_or_else(|why| {
                self.warn(
                    "OTEL_RESOURCE_ATTRIBUTES",
                    &format!("{why}; it is left out"),
                );
                Vec::new()
            }),
            None => Vec::new(),
        };
        let given = attributes
            .iter()
            .rposition(|(k, _)| k == "service.name")
            .map(|i| attributes.remove(i).1);
        let service = self
            .get("OTEL_SERVICE_NAME")
            .or(given)
            .unwrap_or_else(|| UNKNOWN_SERVICE.to_string());
        attributes.retain(|(k, _)| k != "service.name");
        attributes.insert(0, ("service.name".to_string(), service));
        attributes
    }

    fn sampler(&mut self) -> Sampler {
        let default = SAMPLERS[0].1;
        let Some(text) = self.get("OTEL_TRACES_SAMPLER") else {
            return default;
        };
        let name = text.trim().to_ascii_lowercase();
        match SAMPLERS.iter().find(|(n, _)| *n == name) {
            Some((_, sampler)) => *sampler,
            None => {
                let names: Vec<&str> = SAMPLERS.iter().map(|(n, _)| *n).collect();
                self.warn(
                    "OTEL_TRACES_SAMPLER",
                    &format!(
                        "retry has no sampler '{text}' (it has {}); parentbased_always_on is used",
                        names.join(", ")
                    ),
                );
                default
            }
        }
    }

    /// `TRACEPARENT` (with `TRACESTATE`) from the environment.
    fn parent(&mut self) -> Option<SpanContext> {
        let text = self.get("TRACEPARENT")?;
        let state = self.get("TRACESTATE");
        let parent = SpanContext::parse(&text, state.as_deref());
        if parent.is_none() {
            self.warn(
                "TRACEPARENT",
                &format!(
                    "'{}' is not a W3C traceparent (00-TRACE_ID-SPAN_ID-FLAGS); the run starts a trace of its own",
                    crate::domain::one_line(&text)
                ),
            );
        }
        parent
    }
}

/// An OTLP base URL with the traces path appended, as SDKs append it.
fn traces_url(base: &Url) -> Url {
    let mut url = base.clone();
    let path = base.path().trim_end_matches('/');
    url.set_path(&format!("{path}/v1/traces"));
    url
}

/// A headers variable as HTTP headers; the message names an entry, never its value.
fn header_pairs(text: &str) -> Result<Vec<(HeaderName, HeaderValue)>, String> {
    let pairs = parse::key_value_list(text)?;
    pairs
        .into_iter()
        .map(|(key, value)| {
            let name = HeaderName::from_bytes(key.as_bytes())
                .map_err(|_| format!("'{key}' is not a header name"))?;
            let mut value = HeaderValue::from_str(&value)
                .map_err(|_| format!("the value of '{key}' is not a header value"))?;
            value.set_sensitive(true);
            Ok((name, value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with(
        vars: &[(&str, &str)],
        otel: Option<&str>,
        slot: bool,
    ) -> (Option<TraceConfig>, Vec<String>) {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        let otel = otel.map(|u| Url::parse(u).unwrap());
        let mut warnings = Vec::new();
        let config = read(
            otel.as_ref(),
            slot,
            &|name| map.get(name).cloned(),
            &mut warnings,
        );
        (config, warnings)
    }

    fn endpoint(vars: &[(&str, &str)], otel: Option<&str>) -> Option<String> {
        with(vars, otel, false).0.map(|c| c.endpoint.to_string())
    }

    #[test]
    fn endpoints_are_read_as_the_sdks_read_them() {
        assert_eq!(endpoint(&[], None), None, "no endpoint, no tracing");
        let general = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318");
        let traces = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:9/custom");
        assert_eq!(
            endpoint(&[general], None).as_deref(),
            Some("http://c:4318/v1/traces")
        );
        let slash = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/otlp/");
        assert_eq!(
            endpoint(&[slash], None).as_deref(),
            Some("http://c:4318/otlp/v1/traces")
        );
        assert_eq!(
            endpoint(&[general, traces], None).as_deref(),
            Some("http://t:9/custom")
        );
        assert_eq!(
            endpoint(&[general, traces], Some("https://o:1")).as_deref(),
            Some("https://o:1/v1/traces"),
            "--otel wins"
        );
        let empty = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "");
        assert_eq!(
            endpoint(&[general, empty], None).as_deref(),
            Some("http://c:4318/v1/traces")
        );
        let (config, warnings) = with(
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")],
            None,
            false,
        );
        assert!(config.is_none());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with("OTEL_EXPORTER_OTLP_ENDPOINT: "),
            "{warnings:?}"
        );
    }

    #[test]
    fn tracing_is_turned_off_as_the_sdks_turn_it_off() {
        let general = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318");
        for (off, warned) in [
            (("OTEL_SDK_DISABLED", "TRUE"), 0),
            (("OTEL_TRACES_EXPORTER", "none"), 0),
            (("OTEL_TRACES_EXPORTER", "zipkin"), 1),
            (("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"), 1),
            (("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"), 1),
        ] {
            let (config, warnings) = with(&[general, off], None, false);
            assert!(config.is_none(), "{off:?}");
            assert_eq!(warnings.len(), warned, "{off:?}: {warnings:?}");
        }
        for on in [
            ("OTEL_SDK_DISABLED", "false"),
            ("OTEL_TRACES_EXPORTER", "otlp"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ] {
            let (config, warnings) = with(&[general, on], None, false);
            assert!(config.is_some(), "{on:?}");
            assert!(warnings.is_empty(), "{on:?}: {warnings:?}");
        }
        let (config, warnings) = with(&[general, ("OTEL_SDK_DISABLED", "yes")], None, false);
        assert!(config.is_some());
        assert_eq!(warnings.len(), 1);
    }

    #[test]
    fn headers_are_merged_and_never_shown() {
        let (config, warnings) = with(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=s%20ecret, x-a = 1"),
                ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "X-A=2"),
            ],
            None,
            false,
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        let headers = config.unwrap().headers;
        let shown: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_string()))
            .collect();
        assert_eq!(
            shown,
            [
                ("api-key".into(), "s ecret".into()),
                ("x-a".into(), "2".into())
            ]
        );
        assert!(headers.iter().all(|(_, v)| v.is_sensitive()));
        let (config, warnings) = with(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=topsecret,broken"),
            ],
            None,
            false,
        );
        assert!(config.unwrap().headers.is_empty());
        assert_eq!(warnings.len(), 1);
        assert!(!warnings[0].contains("topsecret"), "{warnings:?}");
    }

    #[test]
    fn the_resource_the_timeout_and_the_sampler() {
        let general = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318");
        let (config, _) = with(&[general], None, false);
        let config = config.unwrap();
        assert_eq!(
            config.resource,
            [("service.name".into(), UNKNOWN_SERVICE.into())]
        );
        assert_eq!(config.timeout, EXPORT_LIMIT);
        assert_eq!(config.sampler, SAMPLERS[0].1);
        let (config, warnings) = with(
            &[
                general,
                (
                    "OTEL_RESOURCE_ATTRIBUTES",
                    "service.name=a,deployment.environment=prod",
                ),
                ("OTEL_SERVICE_NAME", "deploys"),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "250"),
                ("OTEL_TRACES_SAMPLER", "always_off"),
            ],
            None,
            false,
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        let config = config.unwrap();
        let resource: Vec<(&str, &str)> = config
            .resource
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            resource,
            [
                ("service.name", "deploys"),
                ("deployment.environment", "prod")
            ]
        );
        assert_eq!(config.timeout, Duration::from_millis(250));
        assert!(!config.sampler.samples(None));
        let (config, warnings) = with(
            &[
                general,
                ("OTEL_RESOURCE_ATTRIBUTES", "novalue"),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "5s"),
                ("OTEL_TRACES_SAMPLER", "traceidratio"),
                ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
                ("OTEL_EXPORTER_OTLP_CERTIFICATE", "/ca.pem"),
            ],
            None,
            false,
        );
        assert_eq!(warnings.len(), 5, "{warnings:?}");
        assert_eq!(config.unwrap().timeout, EXPORT_LIMIT);
    }

    #[test]
    fn the_parent_is_traceparent_but_for_a_slot_which_links_it() {
        let general = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318");
        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
        let vars = [general, ("TRACEPARENT", parent), ("TRACESTATE", "k=v")];
        let config = with(&vars, None, false).0.unwrap();
        let got = config.parent.clone().unwrap();
        assert_eq!(got.traceparent(), parent);
        assert_eq!(got.state.as_deref(), Some("k=v"));
        assert!(config.link.is_none());
        assert!(
            !config.sampler.samples(config.parent.as_ref()),
            "an unsampled parent"
        );
        let slot = with(&vars, None, true).0.unwrap();
        assert!(slot.parent.is_none());
        assert_eq!(slot.link.map(|l| l.traceparent()).as_deref(), Some(parent));
        let (config, warnings) = with(&[general, ("TRACEPARENT", "garbage")], None, false);
        assert!(config.unwrap().parent.is_none());
        assert_eq!(warnings.len(), 1);
    }
}
