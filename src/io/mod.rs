//! Byte plumbing for command mode: stdin replay, output pumps, spools.

pub mod pump;
pub mod spool;
pub mod stdin;
