//! How retry is to speak on stderr, decided once from the flags and the environment.

#[derive(Clone, Debug, Default)]
pub struct LogConfig {
    /// -2 = -qq, -1 = -q, 0 = default, 1.. = -v count.
    pub level: i8,
    pub json: bool,
    pub color: bool,
    pub github: bool,
    /// Text lines start with the time (RFC 3339 UTC, milliseconds): `--schedule`.
    pub timestamps: bool,
}
