//! The fleet's settings: what a shared retry budget and a shared circuit breaker are
//! (`--retry-budget`, `--circuit` and their options), and the lifetime a lease may be
//! given (`--lease-ttl`). The stores keep their records and leases, `fleet` decides
//! when a run consults them.

use std::time::Duration;

use super::{ExitStatus, human};

/// `--lease-ttl`'s default in seconds, as a literal: `LeaseTtl::DEFAULT` and the help's
/// `[default: …]` are both made of it.
macro_rules! lease_ttl_default_seconds {
    () => {
        15
    };
}
pub(crate) use lease_ttl_default_seconds;

/// `--lease-ttl`: the lifetime of a lease on a server, from 3s to 1h (15s unless set).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseTtl(Duration);

impl LeaseTtl {
    /// `--lease-ttl`'s default.
    pub const DEFAULT: LeaseTtl = LeaseTtl(Duration::from_secs(lease_ttl_default_seconds!()));
    /// The shortest and the longest lifetime.
    const RANGE: (Duration, Duration) = (Duration::from_secs(3), Duration::from_secs(3600));

    /// `ttl`, or why it is out of range (saying what is accepted).
    pub fn new(ttl: Duration) -> Result<LeaseTtl, String> {
        let (min, max) = Self::RANGE;
        if (min..=max).contains(&ttl) {
            Ok(LeaseTtl(ttl))
        } else {
            Err(format!(
                "{} is out of range; expected a duration from {} to {}",
                human(ttl),
                human(min),
                human(max)
            ))
        }
    }

    /// The lifetime.
    pub fn get(self) -> Duration {
        self.0
    }
}

impl Default for LeaseTtl {
    fn default() -> LeaseTtl {
        LeaseTtl::DEFAULT
    }
}

/// A shared retry budget: gRPC's retry throttling.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetConfig {
    pub name: String,
    /// N: tokens the budget holds.
    pub size: u32,
    /// R: tokens a successful attempt earns.
    pub ratio: f64,
    /// `--throttled wait`: a refused retry holds the run, and a held run may probe the
    /// spent budget when no retry of it was sent for this long (`--delay`). `None`:
    /// `--throttled exit`, a refusal ends the run.
    pub probe_after: Option<Duration>,
}

/// A shared circuit breaker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CircuitConfig {
    pub name: String,
    /// Failed runs in a row that open it.
    pub failures: u32,
    pub cooldown: Duration,
    /// Exit status of a refused run.
    pub exit: ExitStatus,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_ttls_outside_3s_to_1h_are_refused() {
        let err = LeaseTtl::new(Duration::from_secs(2)).unwrap_err();
        assert_eq!(err, "2s is out of range; expected a duration from 3s to 1h");
        assert!(LeaseTtl::new(Duration::from_secs(3601)).is_err());
        assert!(LeaseTtl::new(Duration::from_secs(3)).is_ok());
        assert_eq!(LeaseTtl::default().get(), Duration::from_secs(15));
    }
}
