//! The integration tests: one crate, built once, that drives the real `retry` binary.
//!
//! Adding a feature's tests: write `tests/FEATURE.rs` (or `tests/FEATURE/mod.rs` with
//! one file per section once it grows past a few hundred lines) and declare it below
//! as `mod FEATURE;`. Cargo does not discover files in `tests/` on its own
//! (`autotests = false`): a file not declared here is not built.
//!
//! Use `crate::support` instead of writing helpers again:
//! - `retry()` starts an [`Invocation`](support::Invocation) of the binary with a clean
//!   environment (no nesting, CI or proxy variables) and an empty stdin; chain `.args`,
//!   `.fast()` (1 ms backoff), `.sh(script)` (`-- sh -c SCRIPT`), `.report(path)`,
//!   `.env`, `.input(bytes)`, `.current_dir`, then `.run()`
//!   for a [`Run`](support::Run) (`status` is the exit code or 128+signal, `stdout`,
//!   `stderr`, `elapsed`), or `.start()` and `wait_for_run(child)` for a run the test
//!   signals or watches, and `exited_within(child, limit)` or `wait_exit` for its exit.
//!   `run(args)` and `fast(args)` are the short forms; `Invocation::of(program)` runs
//!   another program the same way.
//! - `Scratch` holds counting `sh` scripts (`script`, `count`, `read`); `run_job(body,
//!   flags)` runs one with fast backoff; `alive(pid)`, `runs(pid, program)`,
//!   `wait_until`, `wait_for_file` and `wait_for_pid` watch what they leave behind (a
//!   test waits for a thing, never for a while it guesses); `read_json` and
//!   `assert_stopped_because` read a report.
//! - `scheduler::Schedule` builds a `retry --schedule` command line (`every_second(job)`,
//!   `.state`, `.catch_up`, …) and starts a `Scheduler` in the background, or dry-runs it.
//! - `each_store!` runs a test of shared state once per store (a state directory,
//!   PostgreSQL directly and through PgBouncer), with a `stores::Store` that names its
//!   targets and reads its records; `both_ways!` runs a PostgreSQL test both ways.
//! - `http_server::Server` answers on 127.0.0.1 from a script and counts its hits;
//!   `curl::Case` runs curl and retry side by side against it; `socks` has a real
//!   SOCKS5 proxy (microsocks), a scripted SOCKS4/4a/5 one and a nameserver that
//!   knows no name.
//! - `dns::Nameserver` answers on 127.53.x.y port 53 from a table of records (or refuses,
//!   or never answers) and records the questions; `private_etc::PrivateEtc` runs a
//!   program with the test's /etc/hosts and /etc/resolv.conf in a mount namespace.
//! - `postgres::start(test)` gives a private PostgreSQL server (or skips, unless
//!   RETRY_TEST_REQUIRE_POSTGRES=1); `tools` has rsync, git and ssh daemons, and
//!   `ports::wait_for_port` waits for a server to listen.
//! - `time` writes and reads RFC 3339 times and HTTP dates (jiff, as the crate does).
//!
//! Tests in this crate run in parallel threads of one process: a test must not change
//! process-wide state (the current directory, environment variables, signal handlers);
//! give the child what it needs through the `Invocation` instead.

// Cargo's root of the test crate sits beside its modules in tests/; clippy 1.85 takes
// that for a self-named module file (later clippy does not).
#![allow(clippy::self_named_module_files)]
// The suite runs on a Unix host and drives retry from there; the Windows build is driven
// from Linux too, under Wine (`windows.rs`), so on Windows this crate is empty.
#![cfg(unix)]

mod support;

mod body_rules;
mod command;
mod completion;
mod crontab;
mod crontab_production;
mod curl_corpus;
mod curl_edges;
mod curl_output;
mod curl_request;
mod curl_socks;
mod dist;
mod faults;
mod final_lines;
mod flags;
mod fleet;
mod gate;
mod generated;
mod help;
mod hooks;
mod http;
mod layers;
mod names;
mod peers;
mod props;
mod readme;
mod schedule;
mod schedule_ops;
mod side_by_side;
mod tools;
mod traces;
mod windows;
mod words;
