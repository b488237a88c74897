//! `--state postgres://…`: `--once` markers as committed rows of one table,
//! created on first use, and the per-key advisory lock that keeps two runs of
//! one key apart.

use std::sync::Arc;

use anyhow::Context;

use super::conn::{Conn, PgLiveness, Shared, application_name, connect, lock_client};
use super::lock::ADVISORY_KEY_SQL;
use super::url::PgTarget;
use std::time::SystemTime;

use crate::jobs::{Done, Liveness, Marker, MarkerStore, Status, command_line};

/// The table `--state postgres://…` keeps markers in (in the connection's search_path).
pub const MARKER_TABLE: &str = "retry_once";

/// How the advisory lock key of a `--once` key is named: this prefix, then the key.
pub const ONCE_LOCK_PREFIX: &str = "retry-once:";

/// Taken while creating the marker table, so concurrent first runs do not race.
const TABLE_LOCK_NAME: &str = "retry-once-table";

/// `--state postgres://…`: one committed row per key in [`MARKER_TABLE`].
pub struct PgStore {
    client: Shared,
    target: PgTarget,
}

impl PgStore {
    /// Connects and creates the marker table if it is missing.
    pub fn connect(target: PgTarget) -> anyhow::Result<PgStore> {
        let client = connect(&target, "--state", &application_name("--once"))?;
        let mut store = PgStore {
            client: Conn::new(client),
            target,
        };
        store.ensure_table().with_context(|| {
            format!(
                "--state: cannot create table {MARKER_TABLE} in {}",
                store.target
            )
        })?;
        Ok(store)
    }

    fn ensure_table(&mut self) -> anyhow::Result<()> {
        let mut client = lock_client(&self.client);
        let exists: bool = client
            .query_one("SELECT to_regclass($1) IS NOT NULL", &[&MARKER_TABLE])?
            .get(0);
        let has_status: bool = client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM information_schema.columns
                 WHERE table_name = $1 AND column_name = 'status'
                 AND table_schema = ANY (current_schemas(false)))",
                &[&MARKER_TABLE],
            )?
            .get(0);
        if exists && has_status {
            return Ok(());
        }
        // Two first runs creating the table at once can collide in the catalog; the lock orders them.
        let mut tx = client.transaction()?;
        tx.execute(
            &format!("SELECT pg_advisory_xact_lock({ADVISORY_KEY_SQL})"),
            &[&TABLE_LOCK_NAME],
        )?;
        tx.batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {MARKER_TABLE} (
                 key text PRIMARY KEY,
                 succeeded_at timestamptz NOT NULL,
                 host text NOT NULL,
                 pid integer NOT NULL,
                 command text NOT NULL,
                 attempts integer NOT NULL
             );
             ALTER TABLE {MARKER_TABLE} ADD COLUMN IF NOT EXISTS
                 status text NOT NULL DEFAULT 'succeeded'"
        ))?;
        tx.commit()?;
        Ok(())
    }
}

impl MarkerStore for PgStore {
    fn describe(&self) -> String {
        format!("table {MARKER_TABLE} at {}", self.target)
    }

    fn find(&mut self, key: &str) -> anyhow::Result<Option<Done>> {
        let sql = format!(
            "SELECT to_char(succeeded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), host, status
             FROM {MARKER_TABLE} WHERE key = $1"
        );
        let row = lock_client(&self.client)
            .query_opt(&sql, &[&key])
            .with_context(|| format!("--state: {}", self.target))?;
        Ok(row.map(|row| Done {
            status: Status::from_name(row.get(2)),
            succeeded_at: row.get(0),
            host: row.get(1),
            place: self.describe(),
        }))
    }

    fn try_lock_key(&mut self, key: &str) -> anyhow::Result<bool> {
        let name = format!("{ONCE_LOCK_PREFIX}{key}");
        let sql = format!("SELECT pg_try_advisory_lock({ADVISORY_KEY_SQL})");
        let row = lock_client(&self.client)
            .query_one(&sql, &[&name])
            .with_context(|| format!("--state: {}", self.target))?;
        Ok(row.get(0))
    }

    fn key_lock_liveness(&self) -> Option<Box<dyn Liveness>> {
        Some(Box::new(PgLiveness(Arc::clone(&self.client))))
    }

    fn record(&mut self, marker: &Marker) -> anyhow::Result<()> {
        // Only a success replaces a record: a late "skipped" never hides how a slot ended.
        let on_conflict = if marker.status == Status::Succeeded {
            "DO UPDATE SET succeeded_at = EXCLUDED.succeeded_at, host = EXCLUDED.host,
                 pid = EXCLUDED.pid, command = EXCLUDED.command,
                 attempts = EXCLUDED.attempts, status = EXCLUDED.status"
        } else {
            "DO NOTHING"
        };
        let sql = format!(
            "INSERT INTO {MARKER_TABLE} (key, succeeded_at, host, pid, command, attempts, status)
             VALUES ($1, now(), $2, $3, $4, $5, $6)
             ON CONFLICT (key) {on_conflict}"
        );
        let pid = i32::try_from(marker.pid).unwrap_or(i32::MAX);
        let attempts = i32::try_from(marker.attempts).unwrap_or(i32::MAX);
        // Outside a transaction the statement commits before execute returns.
        lock_client(&self.client).execute(
            &sql,
            &[
                &marker.key,
                &marker.host,
                &pid,
                &command_line(&marker.command),
                &attempts,
                &marker.status.as_str(),
            ],
        )?;
        Ok(())
    }

    fn keys_with_prefix(&mut self, prefix: &str) -> anyhow::Result<Vec<String>> {
        let sql = format!("SELECT key FROM {MARKER_TABLE} WHERE starts_with(key, $1)");
        let rows = lock_client(&self.client)
            .query(&sql, &[&prefix])
            .with_context(|| format!("--state: {}", self.target))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    fn prune(&mut self, prefix: &str, before: SystemTime) -> anyhow::Result<usize> {
        let sql = format!(
            "DELETE FROM {MARKER_TABLE} WHERE starts_with(key, $1)
             AND succeeded_at < to_timestamp($2)"
        );
        let secs = before
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let n = lock_client(&self.client)
            .execute(&sql, &[&prefix, &secs])
            .with_context(|| format!("--state: {}", self.target))?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }
}
