//! Times as the records, logs and servers the tests make or read write them, through
//! jiff (the one time library of the crate): RFC 3339 and HTTP dates.

use std::time::SystemTime;

use jiff::Timestamp;

fn timestamp(t: SystemTime) -> Timestamp {
    Timestamp::try_from(t).expect("a time jiff can hold")
}

/// `2024-05-01T03:00:00Z`.
pub fn rfc3339_seconds(t: SystemTime) -> String {
    timestamp(t).strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// `2024-05-01T03:00:00.123Z`.
pub fn rfc3339_millis(t: SystemTime) -> String {
    timestamp(t).strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// An RFC 3339 time with its offset, or the panic of a test.
pub fn parse_rfc3339(text: &str) -> Timestamp {
    text.parse()
        .unwrap_or_else(|e| panic!("{text:?} is not RFC 3339: {e}"))
}

/// An IMF-fixdate, as a server writes `Retry-After`: `Sun, 06 Nov 1994 08:49:37 GMT`.
pub fn http_date(t: SystemTime) -> String {
    jiff::fmt::rfc2822::DateTimePrinter::new()
        .timestamp_to_rfc9110_string(&timestamp(t))
        .expect("a date an HTTP-date can hold")
}

/// Sleeps until just after the next whole second, so that a scheduler started now runs
/// its `@every 1s` slot of this second at once and has it done long before the next.
pub fn just_after_a_whole_second() {
    let into = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("a clock after 1970")
        .subsec_millis();
    std::thread::sleep(std::time::Duration::from_millis(u64::from(1050 - into)));
}
