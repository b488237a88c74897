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

/// The table of fencing counters, one row per lock name.
pub const FENCING_TABLE: &str = "retry_fencing";

/// The fencing table, as a role without CREATE would ask an administrator to make it.
pub const FENCING_SQL: &str =
    "CREATE TABLE IF NOT EXISTS retry_fencing (name text PRIMARY KEY, token bigint NOT NULL)";

/// Taken while creating the table, so concurrent first runs do not race.
const TABLE_LOCK_NAME: &str = "retry-fencing-table";

/// Creates the fencing table if it is missing; the error carries the SQL to run.
fn ensure_fencing_table(client: &mut Client, target: &PgTarget) -> anyhow::Result<()> {
    let exists: bool = client
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&FENCING_TABLE])?
        .get(0);
    if exists {
        return Ok(());
    }
    let created = (|| -> Result<(), postgres::Error> {
        let mut tx = client.transaction()?;
        tx.execute(
            &format!("SELECT pg_advisory_xact_lock({ADVISORY_KEY_SQL})"),
            &[&TABLE_LOCK_NAME],
        )?;
        tx.batch_execute(FENCING_SQL)?;
        tx.commit()
    })();
    created.with_context(|| {
        format!(
            "--lock: cannot create table {FENCING_TABLE} for fencing tokens in {target}; \
             a role without CREATE needs it made once: {FENCING_SQL}"
        )
    })
}

/// Tries the session advisory lock on `key` and, when it is taken, bumps the
/// fencing counter of `name`, in one transaction: the token is committed before it
/// is handed out, and the row lock orders acquisitions from every host. A failure
/// after the lock was taken drops the connection, which frees the lock.
fn try_advisory_lock(client: &mut Client, key: i64, name: &str) -> anyhow::Result<Option<u64>> {
    let mut tx = client.transaction()?;
    let held: bool = tx
        .query_one("SELECT pg_try_advisory_lock($1)", &[&key])?
        .get(0);
    if !held {
        return Ok(None);
    }
    let token: i64 = tx
        .query_one(
            &format!(
                "INSERT INTO {FENCING_TABLE} AS f (name, token) VALUES ($1, 1)
                 ON CONFLICT (name) DO UPDATE SET token = f.token + 1 RETURNING token"
            ),
            &[&name],
        )?
        .get(0);
    tx.commit()?;
    Ok(Some(u64::try_from(token).unwrap_or(0)))
}

/// `--lock postgres://…#NAME`: a session advisory lock on `advisory_key(NAME)`.
pub struct PgLock {
    client: Shared,
    target: PgTarget,
    key: i64,
    token: Option<u64>,
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
        ensure_fencing_table(&mut client, &target)?;
        Ok(PgLock {
            client: Conn::new(client),
            key,
            target,
            token: None,
        })
    }
}

impl Lock for PgLock {
    fn describe(&self) -> String {
        format!("{} (advisory lock key {})", self.target, self.key)
    }

    fn try_acquire(&mut self) -> anyhow::Result<bool> {
        if self.token.is_some() {
            return Ok(true);
        }
        let name = self.target.name.clone().unwrap_or_default();
        self.token = try_advisory_lock(&mut lock_client(&self.client), self.key, &name)
            .with_context(|| format!("--lock: {}", self.target))?;
        Ok(self.token.is_some())
    }

    fn fencing_token(&self) -> Option<u64> {
        self.token
    }

    fn liveness(&self) -> Option<Box<dyn Liveness>> {
        Some(Box::new(PgLiveness(Arc::clone(&self.client))))
    }
}
