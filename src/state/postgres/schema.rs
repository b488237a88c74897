//! The tables `retry` keeps in PostgreSQL, their DDL (exactly what docs/postgres.md shows),
//! and the check at connect that finds them, creates what is missing, upgrades an
//! earlier version's where the role may, and otherwise fails with the DDL to run.

use anyhow::Context;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::Type;

use super::db::Db;
use crate::state::Burst;
use crate::wait::Bound;

/// Leases: one row per lock name (`lock:NAME`, `once:KEY`), never deleted.
pub const LEASE_TABLE: &str = "retry_lease";
/// `--once` markers and schedule records.
pub const ONCE_TABLE: &str = super::url::MARKER_TABLE;
pub const BUDGET_TABLE: &str = "retry_budgets";
pub const CIRCUIT_TABLE: &str = "retry_circuits";
/// Fencing counters of an earlier version (advisory locks): read to seed lease tokens.
pub const FENCING_TABLE: &str = "retry_fencing";

pub const LEASE_DDL: &str = "CREATE TABLE IF NOT EXISTS retry_lease (
    name text PRIMARY KEY,
    holder text NOT NULL,
    token bigint NOT NULL,
    expires_at timestamptz NOT NULL,
    stop_asked timestamptz
);";

/// The upgrade of an earlier `retry_lease`, which had no `stop_asked` (when a newer slot
/// asked the holder of a job's run lease to stop: `--overlap replace`).
pub const LEASE_UPGRADE_DDL: &str =
    "ALTER TABLE retry_lease ADD COLUMN IF NOT EXISTS stop_asked timestamptz;";

pub const ONCE_DDL: &str = "CREATE TABLE IF NOT EXISTS retry_once (
    key text PRIMARY KEY,
    succeeded_at timestamptz NOT NULL,
    host text NOT NULL,
    pid integer NOT NULL,
    command text NOT NULL,
    attempts integer NOT NULL,
    status text NOT NULL DEFAULT 'succeeded'
);";

/// The upgrade of an earlier `retry_once`, which had no `status` (all its rows are successes).
pub const ONCE_UPGRADE_DDL: &str =
    "ALTER TABLE retry_once ADD COLUMN IF NOT EXISTS status text NOT NULL DEFAULT 'succeeded';";

pub const BUDGET_DDL: &str = "CREATE TABLE IF NOT EXISTS retry_budgets (
    name text PRIMARY KEY,
    tokens double precision NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    last_retry_at timestamptz
);";

/// The upgrade of an earlier `retry_budgets`, which had no `last_retry_at` (the time a
/// held run's retry was last let through, for `--throttled wait`'s probe).
pub const BUDGET_UPGRADE_DDL: &str =
    "ALTER TABLE retry_budgets ADD COLUMN IF NOT EXISTS last_retry_at timestamptz;";

pub const CIRCUIT_DDL: &str = "CREATE TABLE IF NOT EXISTS retry_circuits (
    name text PRIMARY KEY,
    failures integer NOT NULL,
    open_until timestamptz,
    probe text,
    updated_at timestamptz NOT NULL DEFAULT now()
);";

/// What a caller needs from the server's tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// Locks (`--lock`, `--once` keys, slots).
    pub leases: bool,
    /// `--once` markers.
    pub markers: bool,
    /// Records of slots that did not succeed (`--schedule`): `retry_once.status`.
    pub statuses: bool,
    /// Budgets and circuits.
    pub fleet: bool,
    /// Runs that hold (`--throttled wait`): `retry_budgets.last_retry_at`.
    pub holds: bool,
    /// Slots that replace a running one (`--overlap replace`): `retry_lease.stop_asked`.
    pub replace: bool,
}

/// What the server has, once the check is done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// `retry_once` is there (a dry run creates nothing, and reads none as no record).
    pub once_table: bool,
    /// `retry_once` has its `status` column (an earlier version's has none).
    pub once_status: bool,
    /// An earlier version's `retry_fencing` is there to seed lease tokens.
    pub fencing: bool,
}

/// Finds the tables `needs` asks for and creates what is missing, in one transaction
/// under a transaction-scoped advisory lock (two first runs would collide in the
/// catalog), on one connection. A role that may not create them gets the DDL to run in
/// the error.
pub fn ensure(db: &Db, needs: Needs, bound: &Bound) -> anyhow::Result<Found> {
    let _burst = Burst::begin();
    let tables = [
        LEASE_TABLE,
        ONCE_TABLE,
        BUDGET_TABLE,
        CIRCUIT_TABLE,
        FENCING_TABLE,
    ];
    let row = db
        .query(
            // pg_attribute, not information_schema.columns: that view costs milliseconds.
            "SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL,
                    to_regclass($3) IS NOT NULL, to_regclass($4) IS NOT NULL,
                    to_regclass($5) IS NOT NULL,
                    EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($2)
                            AND attname = 'status' AND NOT attisdropped),
                    EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($3)
                            AND attname = 'last_retry_at' AND NOT attisdropped),
                    EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1)
                            AND attname = 'stop_asked' AND NOT attisdropped)",
            &tables
                .each_ref()
                .map(|t| (t as &(dyn tokio_postgres::types::ToSql + Sync), Type::TEXT)),
            bound,
        )
        .with_context(|| format!("cannot read the tables of {}", db.target()))?
        .pop()
        .context("no row")?;
    let has = |i: usize| row.get::<_, bool>(i);
    let (lease, once, budgets, circuits) = (has(0), has(1), has(2), has(3));
    let mut found = Found {
        once_table: once,
        once_status: has(5),
        fencing: has(4),
    };
    let mut missing = Vec::new();
    if needs.leases && !lease {
        missing.push(LEASE_DDL);
    }
    if (needs.markers || needs.statuses) && !once {
        missing.push(ONCE_DDL);
        found.once_status = true;
        found.once_table = true;
    }
    if needs.fleet && !budgets {
        missing.push(BUDGET_DDL);
    }
    if needs.fleet && !circuits {
        missing.push(CIRCUIT_DDL);
    }
    if !missing.is_empty() {
        create(db, &missing, bound)?;
    }
    if once && !found.once_status && (needs.markers || needs.statuses) {
        found.once_status = upgrade_once(db, needs, bound)?;
    }
    if lease && !has(7) && needs.replace {
        create(db, &[LEASE_UPGRADE_DDL], bound).context(
            "--overlap replace asks a running slot to stop through retry_lease.stop_asked",
        )?;
    }
    if budgets && !has(6) && needs.holds {
        create(db, &[BUDGET_UPGRADE_DDL], bound)
            .context("--throttled wait keeps the time of a budget's last retry in retry_budgets.last_retry_at")?;
    }
    Ok(found)
}

/// Runs `ddl` in one transaction; a role without CREATE is told what to run. A failed
/// transaction needs no ROLLBACK: its connection is closed, and the server rolls back.
fn create(db: &Db, ddl: &[&str], bound: &Bound) -> anyhow::Result<()> {
    let sql = format!(
        "BEGIN; SELECT pg_advisory_xact_lock(8007001); {} COMMIT;",
        ddl.join("\n")
    );
    db.batch(&sql, bound)
        .map_err(|e| refused(e, db, &ddl.join("\n")))
}

/// Adds `status` to an earlier `retry_once`. Where the role may not, markers still work
/// (they are all successes) unless the caller records other endings.
fn upgrade_once(db: &Db, needs: Needs, bound: &Bound) -> anyhow::Result<bool> {
    match create(db, &[ONCE_UPGRADE_DDL], bound) {
        Ok(()) => Ok(true),
        Err(_) if !needs.statuses => Ok(false),
        Err(e) => {
            Err(e.context("--schedule records slots that did not succeed in retry_once.status"))
        }
    }
}

/// A failed DDL: when the role lacks the privilege, the message carries the exact DDL.
fn refused(err: anyhow::Error, db: &Db, ddl: &str) -> anyhow::Error {
    let denied = err
        .downcast_ref::<tokio_postgres::Error>()
        .and_then(tokio_postgres::Error::code)
        .is_some_and(|c| *c == SqlState::INSUFFICIENT_PRIVILEGE);
    if denied {
        anyhow::anyhow!(
            "the role may not create retry's tables in {}; have an administrator run once:\n{ddl}",
            db.target()
        )
    } else {
        err.context(format!("cannot create retry's tables in {}", db.target()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_docs_show_exactly_the_ddl_retry_runs() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/postgres.md"))
            .expect("docs/postgres.md");
        let marked = doc
            .split("<!-- ddl -->\n```sql\n")
            .nth(1)
            .expect("the DDL mark");
        let shown = marked.split("```").next().unwrap();
        let ours = [LEASE_DDL, ONCE_DDL, BUDGET_DDL, CIRCUIT_DDL].join("\n") + "\n";
        assert_eq!(shown, ours);
        assert!(doc.contains(ONCE_UPGRADE_DDL), "the upgrade statement");
        assert!(
            doc.contains(BUDGET_UPGRADE_DDL),
            "the budgets' upgrade statement"
        );
        assert!(
            doc.contains(LEASE_UPGRADE_DDL),
            "the leases' upgrade statement"
        );
    }
}
