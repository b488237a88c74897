//! What every feature module shares: running the binary, scratch directories and
//! counting scripts, the HTTP server, the curl conformance harness, PostgreSQL and
//! the third-party tool daemons.

pub mod curl;
pub mod http_server;
pub mod postgres;
pub mod run;
pub mod scratch;
pub mod socks;
pub mod terminal;
pub mod tools;

pub use run::{Invocation, Run, bin, fast, generated, retry, run, signal, status_of, wait_for_run};
pub use scratch::{
    Scratch, alive, assert_stopped_because, read_json, run_job, wait_for_file, wait_for_pid,
    wait_until,
};
pub use terminal::{Terminal, terminal};
