//! PostgreSQL state, for fleets on several machines: tables `retry_budgets` and
//! `retry_circuits`, created if missing, each update one statement that the
//! server applies atomically (the row lock orders concurrent updates, and each
//! re-reads the row it changes). Times are the server's, so hosts whose clocks
//! disagree still agree on when a circuit opens. Every call goes through the one
//! bounded connection of `jobs::postgres::db`.

use std::rc::Rc;

use anyhow::Context;
use tokio_postgres::Row;
use tokio_postgres::types::Type;

use super::{Admission, CircuitState, FleetStore};
use crate::config::fleet::{BudgetConfig, CircuitConfig};
use crate::jobs::postgres::PgTarget;
use crate::jobs::postgres::db::Db;
use crate::jobs::postgres::schema::{self, Needs};
use crate::wait::Bound;

pub use crate::jobs::postgres::schema::{BUDGET_TABLE, CIRCUIT_TABLE};

/// Milliseconds since the epoch of a timestamptz column.
const MS: &str = "(extract(epoch FROM open_until) * 1000)::bigint";

pub struct PgFleet {
    db: Rc<Db>,
    target: PgTarget,
    /// Missing tables read as fresh state (for `--dry-run`).
    tables: bool,
}

impl PgFleet {
    /// Connects (within `bound`) and creates the tables if missing.
    pub fn connect(target: PgTarget, bound: &Bound) -> anyhow::Result<PgFleet> {
        let db = Db::open(&target);
        let needs = Needs {
            fleet: true,
            ..Needs::default()
        };
        schema::ensure(&db, needs, bound).with_context(|| format!("--state: {target}"))?;
        Ok(PgFleet {
            db,
            target,
            tables: true,
        })
    }

    /// Connects without creating anything.
    pub fn connect_read_only(target: PgTarget, bound: &Bound) -> anyhow::Result<PgFleet> {
        let db = Db::open(&target);
        let tables = db
            .query(
                "SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL",
                &[(&BUDGET_TABLE, Type::TEXT), (&CIRCUIT_TABLE, Type::TEXT)],
                bound,
            )?
            .first()
            .is_some_and(|r| r.get(0));
        Ok(PgFleet { db, target, tables })
    }

    fn context(&self) -> String {
        format!("--state: {}", self.target)
    }
}

fn cooldown_secs(c: &CircuitConfig) -> f64 {
    c.cooldown.as_secs_f64()
}

fn state_of(row: &Row) -> CircuitState {
    let failures: i32 = row.get(0);
    let until: Option<i64> = row.get(1);
    CircuitState {
        failures: u32::try_from(failures).unwrap_or(0),
        open_until_ms: until.and_then(|u| u64::try_from(u).ok()),
    }
}

impl FleetStore for PgFleet {
    fn describe(&self) -> String {
        format!(
            "tables {BUDGET_TABLE} and {CIRCUIT_TABLE} at {}",
            self.target
        )
    }

    fn spend(
        &mut self,
        budget: &BudgetConfig,
        success: bool,
        bound: &Bound,
    ) -> anyhow::Result<f64> {
        let sql = format!(
            "INSERT INTO {BUDGET_TABLE} AS b (name, tokens) VALUES ($1::text, greatest(least($2::float8 + $3::float8, $2::float8), 0))
             ON CONFLICT (name) DO UPDATE
                 SET tokens = greatest(least(least(b.tokens, $2::float8) + $3::float8, $2::float8), 0),
                     updated_at = now()
             RETURNING tokens"
        );
        let delta = if success { budget.ratio } else { -1.0 };
        let size = f64::from(budget.size);
        let rows = self
            .db
            .query(
                &sql,
                &[
                    (&budget.name, Type::TEXT),
                    (&size, Type::FLOAT8),
                    (&delta, Type::FLOAT8),
                ],
                bound,
            )
            .with_context(|| self.context())?;
        Ok(rows.first().context("no row")?.get(0))
    }

    fn tokens(&mut self, budget: &BudgetConfig, bound: &Bound) -> anyhow::Result<f64> {
        let size = f64::from(budget.size);
        if !self.tables {
            return Ok(size);
        }
        let sql = format!("SELECT least(tokens, $2::float8) FROM {BUDGET_TABLE} WHERE name = $1");
        let rows = self
            .db
            .query(
                &sql,
                &[(&budget.name, Type::TEXT), (&size, Type::FLOAT8)],
                bound,
            )
            .with_context(|| self.context())?;
        Ok(rows.first().map_or(size, |r| r.get(0)))
    }

    fn admit(&mut self, circuit: &CircuitConfig, bound: &Bound) -> anyhow::Result<Admission> {
        // One statement: the row lock makes a second claimant re-read the pushed time.
        let run = uuid::Uuid::new_v4().to_string();
        let sql = format!(
            "UPDATE {CIRCUIT_TABLE} SET
                 probe = CASE WHEN open_until <= clock_timestamp() THEN $4::text ELSE probe END,
                 open_until = CASE WHEN open_until <= clock_timestamp()
                     THEN clock_timestamp() + make_interval(secs => $3::float8) ELSE open_until END,
                 updated_at = now()
             WHERE name = $1::text AND failures >= $2::int4 AND open_until IS NOT NULL
             RETURNING failures, {MS}, coalesce(probe = $4::text, false)"
        );
        let limit = i32::try_from(circuit.failures).unwrap_or(i32::MAX);
        let cooldown = cooldown_secs(circuit);
        let rows = self
            .db
            .query(
                &sql,
                &[
                    (&circuit.name, Type::TEXT),
                    (&limit, Type::INT4),
                    (&cooldown, Type::FLOAT8),
                    (&run, Type::TEXT),
                ],
                bound,
            )
            .with_context(|| self.context())?;
        let Some(row) = rows.first() else {
            return Ok(Admission::Closed);
        };
        if row.get::<_, bool>(2) {
            return Ok(Admission::Probe);
        }
        let state = state_of(row);
        Ok(Admission::Open {
            until_ms: state.open_until_ms.unwrap_or(0),
            failures: state.failures,
        })
    }

    fn record_run(
        &mut self,
        circuit: &CircuitConfig,
        success: bool,
        bound: &Bound,
    ) -> anyhow::Result<CircuitState> {
        let sql = format!(
            "INSERT INTO {CIRCUIT_TABLE} AS c (name, failures, open_until)
             VALUES ($1::text, CASE WHEN $2::bool THEN 0 ELSE 1 END,
                     CASE WHEN NOT $2 AND 1 >= $3::int4 THEN clock_timestamp() + make_interval(secs => $4::float8) END)
             ON CONFLICT (name) DO UPDATE SET
                 failures = CASE WHEN $2 THEN 0 ELSE c.failures + 1 END,
                 open_until = CASE WHEN $2 THEN NULL
                     WHEN c.failures + 1 >= $3::int4 THEN clock_timestamp() + make_interval(secs => $4::float8)
                     ELSE c.open_until END,
                 probe = CASE WHEN $2 THEN NULL ELSE c.probe END,
                 updated_at = now()
             RETURNING failures, {MS}"
        );
        let limit = i32::try_from(circuit.failures).unwrap_or(i32::MAX);
        let cooldown = cooldown_secs(circuit);
        let rows = self
            .db
            .query(
                &sql,
                &[
                    (&circuit.name, Type::TEXT),
                    (&success, Type::BOOL),
                    (&limit, Type::INT4),
                    (&cooldown, Type::FLOAT8),
                ],
                bound,
            )
            .with_context(|| self.context())?;
        Ok(state_of(rows.first().context("no row")?))
    }

    fn circuit(&mut self, circuit: &CircuitConfig, bound: &Bound) -> anyhow::Result<CircuitState> {
        if !self.tables {
            return Ok(CircuitState::default());
        }
        let sql = format!("SELECT failures, {MS} FROM {CIRCUIT_TABLE} WHERE name = $1");
        let rows = self
            .db
            .query(&sql, &[(&circuit.name, Type::TEXT)], bound)
            .with_context(|| self.context())?;
        Ok(rows.first().map(state_of).unwrap_or_default())
    }
}
