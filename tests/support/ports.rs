//! Ports for servers that bind them themselves (PostgreSQL, PgBouncer, sshd, the rsync
//! and git daemons) and for "nothing listens here". A port bound to 0 and released is
//! from the kernel's ephemeral range, which the kernel hands out again to the next
//! `bind(0)` or outgoing connection of any test running beside this one; a port below
//! that range is never handed out by the kernel, so once a bind shows it unused it stays
//! free for whoever it is given to. Each is given once per test process. And the wait
//! for a server to listen on its port.

use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The lowest port tried: above the well-known and the usual service ports.
const LOWEST: u32 = 20_000;

/// A loopback port that nothing listens on and that the kernel will not hand out to
/// anyone: the server a test starts on it gets it, and a client sent to it before that is
/// refused.
pub fn free_port() -> u16 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let highest = ephemeral_start().saturating_sub(1);
    assert!(
        highest > LOWEST + 1_000,
        "no room below the ephemeral ports"
    );
    let span = highest - LOWEST;
    // Test processes side by side (a suite and a second build's) start apart.
    let offset = std::process::id().wrapping_mul(7_919) % span;
    for _ in 0..span {
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let port = LOWEST + (offset + n) % span;
        if TcpListener::bind(("127.0.0.1", port as u16)).is_ok() {
            return port as u16;
        }
    }
    panic!("no free port between {LOWEST} and {highest}");
}

/// The first port of the kernel's ephemeral range (32768 when it cannot be read).
fn ephemeral_start() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

/// Whether something accepts connections on 127.0.0.1:`port` within `limit`.
pub fn wait_for_port(port: u16, limit: Duration) -> bool {
    super::wait_until(limit, || TcpStream::connect(("127.0.0.1", port)).is_ok())
}
