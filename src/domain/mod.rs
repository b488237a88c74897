//! The bottom layer: the vocabulary every other module speaks, importing nothing of
//! the crate. What an attempt and a run come to ([`attempt`]), the events of a run
//! ([`events`]), the policy and its backoff schedule ([`policy`], [`backoff`]), exit statuses
//! and signals ([`status`]), why a run stops early ([`stop`]), the user's fixed choices
//! ([`choices`]), what a shared retry budget and circuit are ([`throttles`]), how retry is to speak ([`log`]), how values are shown ([`text`]), the run's time limit ([`time_limit`]) and what a trace and its spans are ([`trace`]).

mod attempt;
mod backoff;
mod choices;
mod events;
mod log;
mod policy;
mod protocols;
mod status;
mod stop;
mod text;
mod throttles;
mod time_limit;
mod trace;

pub use attempt::{
    AttemptRecord, Class, Hold, HoldCause, Outcome, RetryCap, RetryCapKey, RunSummary, StopReason,
    Verdict, WaitHint,
};
pub(crate) use backoff::max_delay_default_seconds;
pub use backoff::{BackoffKind, DEFAULT_MAX_DELAY, Jitter, JitterKind, Schedule, random_seed};
pub use choices::{CatchUp, Family, LogFormat, Overlap, ProfileName, StdinMode, Throttled};
pub use events::{Event, Events};
pub use log::LogConfig;
pub use policy::{Goal, Policy, of_attempts};
pub use protocols::{Protocols, url_hint};
pub use status::{ExitStatus, Signal};
pub use stop::{Interrupted, OutputLost, Stop};
pub use text::{
    command_line, human, one_line, parse_rfc3339, redact_url, rfc3339_millis, rfc3339_seconds,
};
pub(crate) use throttles::lease_ttl_default_seconds;
pub use throttles::{BudgetConfig, CircuitConfig, LeaseTtl};
pub use time_limit::TimeLimit;
pub use trace::{HookRun, SpanContext, SpanId};
