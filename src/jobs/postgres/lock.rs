//! `--lock postgres://…#NAME`: a session advisory lock on a key the server
//! computes from NAME, so an operator can find it in `pg_locks`.

use std::sync::Arc;

use anyhow::Context;
use postgres::Client;

use super::conn::{Conn, PgLiveness, Shared, application_name, connect, lock_client};
use super::url::PgTarget;
use crate::jobs::{Liveness, Lock};

/// The advisory lock key for the name in `$1`: the first 8 bytes of SHA-256 of its
/// UTF-8 bytes, big-endian, as a signed 64-bit integer. Computed by the server, so
/// an operator can run this same expression to find a lock in `pg_locks`.
pub const ADVISORY_KEY_SQL: &str =
    "('x' || left(encode(sha256(convert_to($1::text, 'UTF8')), 'hex'), 16))::bit(64)::bigint";

/// The advisory lock key of `name`, as the server computes it.
fn advisory_key(client: &mut Client, name: &str) -> anyhow::Result<i64> {
    let row = client.query_one(&format!("SELECT {ADVISORY_KEY_SQL}"), &[&name])?;
    Ok(row.get(0))
}

/// Tries `pg_try_advisory_lock` on one key over `client`.
fn try_advisory_lock(client: &mut Client, key: i64) -> anyhow::Result<bool> {
    let row = client.query_one("SELECT pg_try_advisory_lock($1)", &[&key])?;
    Ok(row.get(0))
}

/// `--lock postgres://…#NAME`: a session advisory lock on `advisory_key(NAME)`.
pub struct PgLock {
    client: Shared,
    target: PgTarget,
    key: i64,
}

impl PgLock {
    pub fn connect(target: PgTarget) -> anyhow::Result<PgLock> {
        let name = target.name.clone().unwrap_or_default();
        let mut client = connect(
            &target,
            "--lock",
            &application_name(&format!("--lock {name}")),
        )?;
        let key = advisory_key(&mut client, &name).with_context(|| format!("--lock: {target}"))?;
        Ok(PgLock {
            client: Conn::new(client),
            key,
            target,
        })
    }
}

impl Lock for PgLock {
    fn describe(&self) -> String {
        format!("{} (advisory lock key {})", self.target, self.key)
    }

    fn try_acquire(&mut self) -> anyhow::Result<bool> {
        try_advisory_lock(&mut lock_client(&self.client), self.key)
            .with_context(|| format!("--lock: {}", self.target))
    }

    fn liveness(&self) -> Option<Box<dyn Liveness>> {
        Some(Box::new(PgLiveness(Arc::clone(&self.client))))
    }
}
