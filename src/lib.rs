//! `retry`: run a command or an HTTP request, retrying only the failures that
//! another attempt could fix. `run` is the whole program; `main.rs` only calls it.

pub mod backoff;
pub mod classify;
pub mod cli;
pub mod engine;
pub mod parse;
