//! PostgreSQL state, for fleets on several machines: tables `retry_budgets` and
//! `retry_circuits`, created if missing, each update one statement that the
//! server applies atomically (the row lock orders concurrent updates, and each
//! re-reads the row it changes). Times are the server's, so hosts whose clocks
//! disagree still agree on when a circuit opens. Every call goes through the one
//! bounded connection of [`db`](super::db). A row that cannot be read as valid
//! (tokens that are NaN, infinite, negative or beyond any budget's size; failures
//! below zero; an open-until time before 1970 or past year 9999) counts as fresh
//! state, with one warning, and the statement that updates it starts it afresh.

use std::collections::HashSet;
use std::rc::Rc;

use anyhow::Context;
use tokio_postgres::Row;
use tokio_postgres::types::{ToSql, Type};

use std::time::Duration;

use super::db::{Db, Param};
use super::schema::{self, Needs};
use super::url::PgTarget;
use crate::domain::{BudgetConfig, CircuitConfig};
use crate::report;
use crate::state::Burst;
use crate::state::rules::{Admission, Answer, CircuitState, FleetStore, Spent, allows_retry};
use crate::wait::Bound;

pub use super::schema::{BUDGET_TABLE, CIRCUIT_TABLE};

/// Milliseconds since the epoch of a timestamptz column.
const MS: &str = "(extract(epoch FROM open_until) * 1000)::bigint";

/// A budget row's tokens that can be used (NaN is larger than every number in SQL).
const TOKENS_VALID: &str = "tokens BETWEEN 0 AND 4294967295";

/// A circuit row that can be used, with its columns qualified by `{t}`.
fn circuit_valid(t: &str) -> String {
    format!(
        "({t}failures >= 0 AND ({t}open_until IS NULL OR ({t}open_until >= 'epoch' \
         AND {t}open_until < '10000-01-01 00:00:00+00')))"
    )
}

/// What a circuit row held before a statement, for the warning when it was unreadable.
fn old_circuit() -> String {
    format!(
        "old AS (SELECT NOT {} AS bad, 'failures ' || failures || ', open_until ' || \
         coalesce(open_until::text, 'NULL') AS held FROM {CIRCUIT_TABLE} WHERE name = $1::text)",
        circuit_valid("")
    )
}

pub struct PgFleet {
    db: Rc<Db>,
    target: PgTarget,
    /// Missing tables read as fresh state (for `--dry-run`).
    tables: bool,
    /// Rows already warned about: one warning per row and run.
    warned: HashSet<String>,
}

impl PgFleet {
    /// Connects (within `bound`) and creates the tables if missing; `holds` when a run
    /// may hold (`--throttled wait`), which needs `retry_budgets.last_retry_at`.
    pub fn connect(target: PgTarget, holds: bool, bound: &Bound) -> anyhow::Result<PgFleet> {
        let db = Db::open(&target);
        let needs = Needs {
            fleet: true,
            holds,
            ..Needs::default()
        };
        schema::ensure(&db, needs, bound).with_context(|| format!("--state: {target}"))?;
        Ok(PgFleet {
            db,
            target,
            tables: true,
            warned: HashSet::new(),
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
        Ok(PgFleet {
            db,
            target,
            tables,
            warned: HashSet::new(),
        })
    }

    fn context(&self) -> String {
        format!("--state: {}", self.target)
    }

    /// Warns, once per row, that the row `name` of `table` (holding `held`) cannot be
    /// read and counts as `fresh`.
    fn unreadable(&mut self, table: &str, name: &str, held: &str, fresh: &str) {
        let row = format!("{table}:{name}");
        if self.warned.insert(row) {
            report::notice(&format!(
                "warning: the row {name:?} of table {table} at {} cannot be read ({held}); \
                 counting it as {fresh} until it is rewritten",
                self.target
            ));
        }
    }

    /// The row's state, after the warning when the statement found it unreadable
    /// (`bad` and `held` at `at`).
    /// Runs a circuit's statement: its parameters are the name ($1), the failures that
    /// open it ($2), the cooldown in seconds ($3) and `fourth` ($4).
    fn circuit_statement(
        &mut self,
        sql: &str,
        circuit: &CircuitConfig,
        fourth: Param<'_>,
        bound: &Bound,
    ) -> anyhow::Result<Vec<Row>> {
        let limit = i32::try_from(circuit.failures).unwrap_or(i32::MAX);
        let cooldown = cooldown_secs(circuit);
        let params = [
            (&circuit.name as &(dyn ToSql + Sync), Type::TEXT),
            (&limit, Type::INT4),
            (&cooldown, Type::FLOAT8),
            fourth,
        ];
        self.db
            .query(sql, &params, bound)
            .with_context(|| self.context())
    }

    fn checked_circuit(&mut self, name: &str, row: &Row, at: usize) {
        if row.get::<_, Option<bool>>(at) == Some(true) {
            let held: String = row.get::<_, Option<String>>(at + 1).unwrap_or_default();
            self.unreadable(CIRCUIT_TABLE, name, &held, "a closed circuit");
        }
    }
}

/// The tokens after an attempt, from the tokens `t` held before: $3 is what the attempt
/// adds (R or -1), $4 whether it was a probe ([`rules::Spent::tokens_after`](crate::state::rules::Spent::tokens_after) in SQL).
fn tokens_after_sql(t: &str) -> String {
    format!(
        "CASE WHEN NOT $4::bool THEN greatest(least({t} + $3::float8, $2::float8), 0)
              WHEN $3::float8 > 0 THEN least(greatest({t} + $3::float8, $2::float8 / 2 + $3::float8), $2::float8)
              ELSE {t} END"
    )
}

/// A budget row's tokens as the rules read them: capped at the size ($2), and the full
/// size when the stored value is out of range (fresh state).
fn stored_tokens_sql() -> String {
    format!("CASE WHEN b.{TOKENS_VALID} THEN least(b.tokens, $2::float8) ELSE $2::float8 END")
}

fn cooldown_secs(c: &CircuitConfig) -> f64 {
    c.cooldown.as_secs_f64()
}

/// A valid circuit row's state: failures and open-until milliseconds at 0 and 1.
fn state_of(row: &Row) -> CircuitState {
    let failures: Option<i32> = row.get(0);
    let until: Option<i64> = row.get(1);
    let state = CircuitState {
        failures: failures.and_then(|f| u32::try_from(f).ok()).unwrap_or(0),
        open_until_ms: until.and_then(|u| u64::try_from(u).ok()),
    };
    // The statements compute nothing out of range; should one ever, it is fresh state.
    if state.validate().is_ok() {
        state
    } else {
        CircuitState::default()
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
        attempt: Spent,
        bound: &Bound,
    ) -> anyhow::Result<f64> {
        let sql = format!(
            "WITH old AS (SELECT tokens FROM {BUDGET_TABLE} WHERE name = $1::text),
             spent AS (
                 INSERT INTO {BUDGET_TABLE} AS b (name, tokens)
                 VALUES ($1::text, {fresh})
                 ON CONFLICT (name) DO UPDATE SET tokens = {stored}, updated_at = now()
                 RETURNING tokens)
             SELECT spent.tokens, (SELECT tokens FROM old) FROM spent",
            fresh = tokens_after_sql("$2::float8"),
            stored = tokens_after_sql(&stored_tokens_sql()),
        );
        let delta = if attempt.success { budget.ratio } else { -1.0 };
        let size = f64::from(budget.size);
        let rows = self
            .db
            .query(
                &sql,
                &[
                    (&budget.name, Type::TEXT),
                    (&size, Type::FLOAT8),
                    (&delta, Type::FLOAT8),
                    (&attempt.probe, Type::BOOL),
                ],
                bound,
            )
            .with_context(|| self.context())?;
        let row = rows.first().context("no row")?;
        if let Some(Err(why)) = row
            .get::<_, Option<f64>>(1)
            .map(crate::state::rules::check_tokens)
        {
            self.unreadable(BUDGET_TABLE, &budget.name, &why, "a full budget");
        }
        Ok(row.get(0))
    }

    fn ask(
        &mut self,
        budget: &BudgetConfig,
        probe_after: Duration,
        bound: &Bound,
    ) -> anyhow::Result<Answer> {
        // The claim is made and timed after the row lock is taken (clock_timestamp(), not
        // the statement's start, now()): runs queued on the row claim at least
        // `probe_after` apart, however long each waited for it. A run that does not claim
        // changes nothing and gets no row back; it reads the tokens in a statement of its
        // own, whose snapshot sees the claim it waited behind.
        let _burst = Burst::begin();
        let tokens = stored_tokens_sql();
        let claim = format!(
            "INSERT INTO {BUDGET_TABLE} AS b (name, tokens, last_retry_at)
             VALUES ($1::text, $2::float8, clock_timestamp())
             ON CONFLICT (name) DO UPDATE SET last_retry_at = clock_timestamp(), updated_at = now()
                 WHERE {tokens} > $2::float8 / 2 OR b.last_retry_at IS NULL
                     OR b.last_retry_at <= clock_timestamp() - make_interval(secs => $3::float8)
             RETURNING {tokens}"
        );
        let size = f64::from(budget.size);
        let interval = probe_after.as_secs_f64();
        let claimed = self
            .db
            .query(
                &claim,
                &[
                    (&budget.name, Type::TEXT),
                    (&size, Type::FLOAT8),
                    (&interval, Type::FLOAT8),
                ],
                bound,
            )
            .with_context(|| self.context())?;
        if let Some(row) = claimed.first() {
            let tokens: f64 = row.get(0);
            return Ok(if allows_retry(tokens, budget.size) {
                Answer::Allowed
            } else {
                Answer::Probe
            });
        }
        let read = format!("SELECT {tokens} FROM {BUDGET_TABLE} AS b WHERE name = $1::text");
        let rows = self
            .db
            .query(
                &read,
                &[(&budget.name, Type::TEXT), (&size, Type::FLOAT8)],
                bound,
            )
            .with_context(|| self.context())?;
        let tokens: f64 = rows.first().context("no row")?.get(0);
        // Spent tokens may have come back between the two statements.
        Ok(if allows_retry(tokens, budget.size) {
            Answer::Allowed
        } else {
            Answer::Refused(tokens)
        })
    }

    fn tokens(&mut self, budget: &BudgetConfig, bound: &Bound) -> anyhow::Result<f64> {
        let size = f64::from(budget.size);
        if !self.tables {
            return Ok(size);
        }
        let sql = format!("SELECT tokens FROM {BUDGET_TABLE} WHERE name = $1");
        let rows = self
            .db
            .query(&sql, &[(&budget.name, Type::TEXT)], bound)
            .with_context(|| self.context())?;
        let Some(tokens) = rows.first().map(|r| r.get::<_, f64>(0)) else {
            return Ok(size);
        };
        match crate::state::rules::check_tokens(tokens) {
            Ok(()) => Ok(tokens.min(size)),
            Err(why) => {
                self.unreadable(BUDGET_TABLE, &budget.name, &why, "a full budget");
                Ok(size)
            }
        }
    }

    fn admit(&mut self, circuit: &CircuitConfig, bound: &Bound) -> anyhow::Result<Admission> {
        // One statement: the row lock makes a second claimant re-read the pushed time.
        let run = uuid::Uuid::new_v4().to_string();
        let sql = format!(
            "WITH {old}, claimed AS (
                 UPDATE {CIRCUIT_TABLE} SET
                     probe = CASE WHEN open_until <= clock_timestamp() THEN $4::text ELSE probe END,
                     open_until = CASE WHEN open_until <= clock_timestamp()
                         THEN clock_timestamp() + make_interval(secs => $3::float8) ELSE open_until END,
                     updated_at = now()
                 WHERE name = $1::text AND {valid} AND failures >= $2::int4 AND open_until IS NOT NULL
                 RETURNING failures, {MS} AS ms, coalesce(probe = $4::text, false) AS probe)
             SELECT claimed.failures, claimed.ms, claimed.probe, old.bad, old.held
             FROM old LEFT JOIN claimed ON true",
            old = old_circuit(),
            valid = circuit_valid(""),
        );
        let rows = self.circuit_statement(&sql, circuit, (&run, Type::TEXT), bound)?;
        let Some(row) = rows.first() else {
            return Ok(Admission::Closed);
        };
        self.checked_circuit(&circuit.name, row, 3);
        match row.get::<_, Option<bool>>(2) {
            None => Ok(Admission::Closed),
            Some(true) => Ok(Admission::Probe),
            Some(false) => {
                let state = state_of(row);
                Ok(Admission::Open {
                    until_ms: state.open_until_ms.unwrap_or(0),
                    failures: state.failures,
                })
            }
        }
    }

    fn record_run(
        &mut self,
        circuit: &CircuitConfig,
        success: bool,
        bound: &Bound,
    ) -> anyhow::Result<CircuitState> {
        // An unreadable row counts as a closed circuit with no failures.
        let sql = format!(
            "WITH {old}, counted AS (
                 INSERT INTO {CIRCUIT_TABLE} AS c (name, failures, open_until)
                 VALUES ($1::text, CASE WHEN $4::bool THEN 0 ELSE 1 END,
                         CASE WHEN NOT $4 AND 1 >= $2::int4 THEN clock_timestamp() + make_interval(secs => $3::float8) END)
                 ON CONFLICT (name) DO UPDATE SET
                     failures = CASE WHEN $4 THEN 0 WHEN {valid} THEN least(c.failures, 2147483646) + 1 ELSE 1 END,
                     open_until = CASE WHEN $4 THEN NULL
                         WHEN (CASE WHEN {valid} THEN least(c.failures, 2147483646) ELSE 0 END) + 1 >= $2::int4
                             THEN clock_timestamp() + make_interval(secs => $3::float8)
                         WHEN {valid} THEN c.open_until END,
                     probe = CASE WHEN $4 OR NOT {valid} THEN NULL ELSE c.probe END,
                     updated_at = now()
                 RETURNING failures, {MS} AS ms)
             SELECT counted.failures, counted.ms, (SELECT bad FROM old), (SELECT held FROM old)
             FROM counted",
            old = old_circuit(),
            valid = circuit_valid("c."),
        );
        let rows = self.circuit_statement(&sql, circuit, (&success, Type::BOOL), bound)?;
        let row = rows.first().context("no row")?;
        self.checked_circuit(&circuit.name, row, 2);
        Ok(state_of(row))
    }

    fn circuit(&mut self, circuit: &CircuitConfig, bound: &Bound) -> anyhow::Result<CircuitState> {
        if !self.tables {
            return Ok(CircuitState::default());
        }
        let sql = format!(
            "WITH {old} SELECT c.failures, CASE WHEN {valid} THEN {MS} END, old.bad, old.held
             FROM {CIRCUIT_TABLE} c, old WHERE c.name = $1",
            old = old_circuit(),
            valid = circuit_valid("c."),
        );
        let rows = self
            .db
            .query(&sql, &[(&circuit.name, Type::TEXT)], bound)
            .with_context(|| self.context())?;
        let Some(row) = rows.first() else {
            return Ok(CircuitState::default());
        };
        self.checked_circuit(&circuit.name, row, 2);
        if row.get::<_, Option<bool>>(2) == Some(true) {
            return Ok(CircuitState::default());
        }
        Ok(state_of(row))
    }
}
