//! The PostgreSQL backend, for jobs that run on several machines, reached through
//! one module ([`db`]): a connection per server and thread, every statement bounded
//! and interruptible, nothing kept in a server session (so transaction poolers such
//! as PgBouncer work). `--lock postgres://…#NAME` is a lease ([`lease`], [`lock`]),
//! `--state postgres://…` keeps `--once` markers and schedule records ([`markers`])
//! and the fleet's budgets and circuits ([`throttle_rows`]), [`schema`] owns the tables and
//! their DDL, [`capacity`] tells a refusal for want of capacity from an answer,
//! [`pgpass`] finds the password libpq would, [`tls`] builds the certificate checks
//! `sslmode` asks for, and [`url`] parses a `postgres://` target. Deciding when to lock and record is
//! [`gate`](crate::gate)'s and [`fleet`](crate::fleet)'s.

mod capacity;
pub mod db;
pub mod lease;
mod lock;
mod markers;
mod pgpass;
pub mod schema;
pub mod throttle_rows;
mod tls;
pub mod url;

use std::time::Duration;

use crate::domain::human;
pub use lock::{PgLock, PgRunLock};
pub use markers::PgStore;
use url::{MARKER_TABLE, PgTarget};

/// A lease named `name`, as `--dry-run` describes it.
fn describe_lease(name: &str, ttl: Duration) -> String {
    format!(
        "a lease {name} for {}, renewed every {}, lost 2/3 of it after the last answered renewal",
        human(ttl),
        human(ttl / 3)
    )
}

/// What `--lock postgres://…#NAME` is, for `--dry-run`.
pub fn describe_lock(target: &PgTarget) -> String {
    let name = format!("lock:{}", target.name.as_deref().unwrap_or_default());
    format!(
        "{}: {}",
        target.server(),
        describe_lease(&name, target.lease_ttl.get())
    )
}

/// Where a `--once` key's marker goes on the server, for `--dry-run`.
pub fn describe_marker(target: &PgTarget, key: &str) -> String {
    let ttl = target.lease_ttl.get();
    format!(
        "a row of {MARKER_TABLE} at {target}, written as {} is released",
        describe_lease(&format!("once:{key}"), ttl)
    )
}
