//! What every feature module shares: running the binary, scratch directories and
//! counting scripts, the HTTP server, the curl conformance harness, PostgreSQL and
//! the third-party tool daemons.

pub mod cmd;
pub mod curl;
pub mod http_server;
pub mod postgres;
pub mod tools;
