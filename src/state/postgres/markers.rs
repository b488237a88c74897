//! `--state postgres://…`: `--once` markers and schedule records as rows of
//! `retry_once`, and the lease `once:KEY` that keeps two runs of one key apart. A
//! run's record is written by the statement that releases its key's lease, and only
//! while that lease is still its own: a success is never recorded by a holder that
//! lost its lock.

use std::rc::Rc;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use tokio_postgres::types::Type;

use super::db::{Db, Param};
use super::lease::{self, Held, LeaseName, Taken};
use super::schema::{self, Found, Needs};
use super::url::PgTarget;
use crate::domain::command_line;
use crate::report;
use crate::state::record::{Done, LockLost, Marker, Status, UnreadableRecord};
use crate::state::stores::MarkerStore;
use crate::wait::Bound;

/// The table `--state postgres://…` keeps markers in (in the connection's search_path).
pub const MARKER_TABLE: &str = schema::ONCE_TABLE;

/// `--state postgres://…`: one committed row per key in [`MARKER_TABLE`].
pub struct PgStore {
    db: Rc<Db>,
    target: PgTarget,
    found: Found,
    ttl: Duration,
    /// The lease on the key this run holds, with the key.
    held: Option<(String, Held)>,
}

/// The columns of a record, after the key (`$1`).
const COLUMNS: &str = "succeeded_at, host, pid, command, attempts";

impl PgStore {
    /// Connects (within `bound`) and makes sure the tables exist; `statuses` when the
    /// caller records endings other than success (a scheduler).
    pub fn connect(target: PgTarget, statuses: bool, bound: &Bound) -> anyhow::Result<PgStore> {
        let db = Db::open(&target);
        let needs = Needs {
            leases: true,
            markers: true,
            statuses,
            ..Needs::default()
        };
        let found =
            schema::ensure(&db, needs, bound).with_context(|| format!("--state: {target}"))?;
        Ok(PgStore {
            db,
            ttl: target.lease_ttl.get(),
            target,
            found,
            held: None,
        })
    }

    /// Connects without creating anything (a dry run): a missing table reads as no record.
    pub fn connect_read_only(target: PgTarget, bound: &Bound) -> anyhow::Result<PgStore> {
        let db = Db::open(&target);
        let found = schema::ensure(&db, Needs::default(), bound)
            .with_context(|| format!("--state: {target}"))?;
        Ok(PgStore {
            db,
            ttl: target.lease_ttl.get(),
            target,
            found,
            held: None,
        })
    }

    fn context(&self) -> String {
        format!("--state: {}", self.target)
    }

    /// The status of a record, as SQL (an earlier table holds successes only).
    fn status_column(&self) -> &'static str {
        if self.found.once_status {
            "status"
        } else {
            "'succeeded'"
        }
    }

    /// The error for a record of `key` that cannot be read (`why`).
    fn unreadable(&self, key: &str, why: &str) -> UnreadableRecord {
        UnreadableRecord {
            key: key.to_string(),
            place: format!("table {MARKER_TABLE} at {}", self.target),
            why: why.to_string(),
            remove: format!(
                "DELETE FROM {MARKER_TABLE} WHERE key = '{}'",
                key.replace('\'', "''")
            ),
        }
    }

    /// The INSERT of a record: `$1` the key, `$2`–`$5` host, pid, command and
    /// attempts, `status` the status's parameter, from `VALUES` or (`from`) a CTE. Only
    /// a success replaces an existing record, so a late "skipped" never hides how a
    /// slot ended.
    fn insert(&self, status: &str, from: Option<&str>) -> String {
        let (status_column, status_value, only_success) = if self.found.once_status {
            (
                ", status",
                format!(", {status}"),
                "WHERE EXCLUDED.status = 'succeeded'",
            )
        } else {
            // An earlier table without statuses holds successes only.
            ("", String::new(), "")
        };
        let row = format!("$1, now(), $2, $3, $4, $5{status_value}");
        let source = match from {
            Some(cte) => format!("SELECT {row} FROM {cte}"),
            None => format!("VALUES ({row})"),
        };
        format!(
            "INSERT INTO {MARKER_TABLE} (key, {COLUMNS}{status_column}) {source}
             ON CONFLICT (key) DO UPDATE SET succeeded_at = EXCLUDED.succeeded_at,
                 host = EXCLUDED.host, pid = EXCLUDED.pid, command = EXCLUDED.command,
                 attempts = EXCLUDED.attempts{status_column_set} {only_success}",
            status_column_set = if self.found.once_status {
                ", status = EXCLUDED.status"
            } else {
                ""
            }
        )
    }

    /// Records the run of the key whose lease this store holds and releases the lease,
    /// in one statement that finds the lease still its own, or records nothing.
    fn record_and_release(
        &self,
        record: &[Param<'_>],
        status: &str,
        held: &Held,
        bound: &Bound,
    ) -> anyhow::Result<()> {
        if held.is_lost() {
            return Err(LockLost(format!(
                "the lease {} in {} was lost before the record",
                held.name, self.target
            ))
            .into());
        }
        let mut params = record.to_vec();
        params.extend(held.identity());
        if self.found.once_status {
            params.push((&status, Type::TEXT));
        }
        let insert = self.insert("$9", Some("released"));
        let sql = format!(
            "WITH released AS (
                 UPDATE retry_lease SET expires_at = '-infinity'
                 WHERE name = $6 AND holder = $7 AND token = $8 AND expires_at > now()
                 RETURNING name
             ), recorded AS ({insert} RETURNING key)
             SELECT count(*) FROM released"
        );
        let rows = self
            .db
            .query(&sql, &params, bound)
            .with_context(|| self.context())?;
        let released: i64 = rows.first().map_or(0, |r| r.get(0));
        if released == 0 {
            return Err(LockLost(format!(
                "the lease {} in {} was lost: it expired or another holder took it",
                held.name, self.target
            ))
            .into());
        }
        Ok(())
    }
}

impl MarkerStore for PgStore {
    fn describe(&self) -> String {
        format!("table {MARKER_TABLE} at {}", self.target)
    }

    fn find(&mut self, key: &str, bound: &Bound) -> anyhow::Result<Option<Done>> {
        if !self.found.once_table {
            return Ok(None);
        }
        let status = self.status_column();
        let sql = format!(
            "SELECT to_char(succeeded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'),
                    host, {status}, {}, attempts, command
             FROM {MARKER_TABLE} WHERE key = $1",
            unreadable_because(status)
        );
        let rows = self
            .db
            .query(&sql, &[(&key, Type::TEXT)], bound)
            .with_context(|| self.context())?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        if let Some(why) = row.get::<_, Option<String>>(3) {
            return Err(self.unreadable(key, &why).into());
        }
        Ok(Some(Done {
            status: Status::from_name(row.get(2)),
            succeeded_at: row.get::<_, Option<String>>(0).unwrap_or_default(),
            host: row.get(1),
            place: self.describe(),
            attempts: u32::try_from(row.get::<_, Option<i32>>(4).unwrap_or(0)).unwrap_or(0),
            command: row.get::<_, Option<String>>(5).unwrap_or_default(),
        }))
    }

    fn try_lock_key(&mut self, key: &str, bound: &Bound) -> anyhow::Result<bool> {
        if self.held.as_ref().is_some_and(|(k, _)| k == key) {
            return Ok(true);
        }
        let name = LeaseName::once(key);
        let taken = lease::try_take(&self.db, &name, self.ttl, None, bound)
            .with_context(|| self.context())?;
        Ok(match taken {
            Taken::Held(held) => {
                self.held = Some((key.to_string(), held));
                true
            }
            Taken::Busy => false,
        })
    }

    fn key_token(&self) -> Option<i64> {
        self.held.as_ref().map(|(_, h)| h.token)
    }

    fn poll_pauses(&self) -> crate::wait::Pauses {
        lease::poll_pauses()
    }

    fn record(&mut self, marker: &Marker, bound: &Bound) -> anyhow::Result<()> {
        let pid = i32::try_from(marker.pid).unwrap_or(i32::MAX);
        let attempts = i32::try_from(marker.attempts).unwrap_or(i32::MAX);
        let command = command_line(&marker.command);
        let status = marker.status.as_str();
        let record: [Param<'_>; 5] = [
            (&marker.key, Type::TEXT),
            (&marker.host, Type::TEXT),
            (&pid, Type::INT4),
            (&command, Type::TEXT),
            (&attempts, Type::INT4),
        ];
        match self.held.take() {
            Some((key, mut held)) if key == marker.key => {
                held.stop_renewals();
                self.record_and_release(&record, status, &held, bound)
            }
            other => {
                self.held = other;
                let mut params = record.to_vec();
                if self.found.once_status {
                    params.push((&status, Type::TEXT));
                }
                self.db
                    .execute(&self.insert("$6", None), &params, bound)
                    .with_context(|| self.context())?;
                Ok(())
            }
        }
    }

    fn keys_with_prefix(&mut self, prefix: &str, bound: &Bound) -> anyhow::Result<Vec<String>> {
        if !self.found.once_table {
            return Ok(Vec::new());
        }
        let sql = format!("SELECT key FROM {MARKER_TABLE} WHERE starts_with(key, $1)");
        let rows = self
            .db
            .query(&sql, &[(&prefix, Type::TEXT)], bound)
            .with_context(|| self.context())?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    fn unreadable_with_prefix(
        &mut self,
        prefix: &str,
        bound: &Bound,
    ) -> anyhow::Result<Vec<String>> {
        let why = unreadable_because(self.status_column());
        let sql = format!(
            "SELECT key, {why} FROM {MARKER_TABLE} WHERE starts_with(key, $1) AND {why} IS NOT NULL"
        );
        let rows = self
            .db
            .query(&sql, &[(&prefix, Type::TEXT)], bound)
            .with_context(|| self.context())?;
        Ok(rows
            .iter()
            .map(|r| {
                self.unreadable(r.get(0), &r.get::<_, String>(1))
                    .to_string()
            })
            .collect())
    }

    fn prune(&mut self, prefix: &str, before: SystemTime, bound: &Bound) -> anyhow::Result<usize> {
        let sql = format!(
            "DELETE FROM {MARKER_TABLE} WHERE starts_with(key, $1)
             AND succeeded_at < to_timestamp($2)"
        );
        let secs = before
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let n = self
            .db
            .execute(&sql, &[(&prefix, Type::TEXT), (&secs, Type::FLOAT8)], bound)
            .with_context(|| self.context())?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }
}

/// SQL that says why a record with this `status` cannot be read, or NULL when it can:
/// a time that is not finite or past year 9999, or a status retry does not know.
fn unreadable_because(status: &str) -> String {
    format!(
        "CASE WHEN NOT isfinite(succeeded_at) OR succeeded_at >= '10000-01-01 00:00:00+00'
                  THEN 'succeeded_at ' || succeeded_at::text
              WHEN {status} NOT IN ({})
                  THEN 'status ' || quote_literal({status}) END",
        Status::ALL
            .iter()
            .map(|s| format!("'{}'", s.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

impl Drop for PgStore {
    fn drop(&mut self) {
        if let Some((_, mut held)) = self.held.take() {
            // A run that recorded nothing (or was stopped by a signal) frees its key,
            // bounded by connect_timeout, and by 2 s once a signal came.
            if let Err(e) = held.release(&self.db, &Bound::release()) {
                report::notice(&format!(
                    "warning: could not release the lease {} ({e:#}); it expires within {}",
                    held.name,
                    crate::domain::human(held.ttl)
                ));
            }
        }
    }
}
