//! The integration tests: one crate, built once, that runs the real `retry` binary.

mod support;

mod command;
mod completion;
mod curl_output;
mod curl_request;
mod faults;
mod flags;
mod generated;
mod help;
mod http;
mod jobs;
mod props;
mod tools;
