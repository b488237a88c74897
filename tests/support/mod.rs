//! What every feature module shares: running the binary, scratch directories and
//! counting scripts, the HTTP server, the curl conformance harness, the nameserver and
//! private /etc of the name-resolution tests, PostgreSQL (and proxies that stall it or
//! refuse connections as a full server does), the third-party tool daemons, what tests
//! that need root get from the host, times as text (RFC 3339, HTTP dates), and an
//! OTLP trace receiver.

pub mod curl;
pub mod dns;
pub mod http_server;
pub mod otlp;
pub mod ports;
pub mod postgres;
pub mod private_etc;
pub mod refuse;
pub mod run;
pub mod scheduler;
pub mod scratch;
pub mod socks;
pub mod stall;
pub mod stores;
pub mod system;
pub mod terminal;
pub mod time;
pub mod tools;
pub mod users;

pub use run::{
    Invocation, Run, bin, exited_within, fast, generated, optimized_build, retry, run, signal,
    status_of, wait_exit, wait_for_run,
};
pub use scratch::{
    Scratch, alive, assert_stopped_because, read_json, run_job, runs, tcp_connections_of,
    tcp_connections_to, wait_for_file, wait_for_pid, wait_until,
};
pub use system::{
    current_test, has_parent_death_signal, has_subreaper, privileged, say_skipped, supervision,
};
pub use terminal::{Terminal, terminal};
