//! `--lock postgres://…#NAME`: the lease `lock:NAME` (see `lease`).

use std::rc::Rc;
use std::time::Duration;

use anyhow::Context;

use super::db::Db;
use super::lease::{self, Held, LeaseName, Taken};
use super::schema::{self, Needs};
use super::url::PgTarget;
use crate::report;
use crate::state::stores::Lock;
use crate::wait::Bound;

/// `--lock postgres://…#NAME`: a lease on `lock:NAME`.
pub struct PgLock {
    db: Rc<Db>,
    target: PgTarget,
    name: LeaseName,
    ttl: Duration,
    /// An earlier version counted this lock's fencing tokens in `retry_fencing`.
    seed_from_fencing: bool,
    held: Option<Held>,
}

impl PgLock {
    /// Connects (within `bound` and `connect_timeout`) and makes sure the lease table exists.
    pub fn connect(target: PgTarget, bound: &Bound) -> anyhow::Result<PgLock> {
        let db = Db::open(&target);
        let needs = Needs {
            leases: true,
            ..Needs::default()
        };
        let found =
            schema::ensure(&db, needs, bound).with_context(|| format!("--lock: {target}"))?;
        let name = LeaseName::lock(target.name.as_deref().unwrap_or_default());
        Ok(PgLock {
            db,
            name,
            ttl: target.lease_ttl.get(),
            target,
            seed_from_fencing: found.fencing,
            held: None,
        })
    }
}

impl Lock for PgLock {
    fn describe(&self) -> String {
        format!("{} (lease {})", self.target, self.name)
    }

    fn try_acquire(&mut self, bound: &Bound) -> anyhow::Result<bool> {
        if self.held.is_some() {
            return Ok(true);
        }
        let seed_from = self
            .seed_from_fencing
            .then(|| self.target.name.as_deref().unwrap_or_default());
        let taken = lease::try_take(&self.db, &self.name, self.ttl, seed_from, bound)
            .with_context(|| format!("--lock: {}", self.target))?;
        match taken {
            Taken::Held(held) => {
                self.held = Some(held);
                Ok(true)
            }
            Taken::Busy => Ok(false),
        }
    }

    fn fencing_token(&self) -> Option<i64> {
        self.held.as_ref().map(|h| h.token)
    }

    fn poll_pauses(&self) -> crate::wait::Pauses {
        lease::poll_pauses()
    }

    fn confirm(&mut self, bound: &Bound) -> Result<(), String> {
        let Some(held) = &self.held else {
            return Ok(());
        };
        match held.confirm(&self.db, bound) {
            Ok(true) => Ok(()),
            Ok(false) => Err(format!(
                "lock {} was lost: it expired or another holder took it",
                self.describe()
            )),
            Err(e) => Err(format!(
                "lock {} could not be confirmed: {e:#}",
                self.describe()
            )),
        }
    }
}

impl Drop for PgLock {
    fn drop(&mut self) {
        if let Some(mut held) = self.held.take() {
            // After the last attempt, and after a signal too: bounded by
            // connect_timeout, and by 2 s once a signal came (`Bound::release`).
            if let Err(e) = held.release(&self.db, &Bound::release()) {
                report::notice(&format!(
                    "warning: could not release the lease {} ({e:#}); it expires within {}",
                    self.name,
                    crate::domain::human(self.ttl)
                ));
            }
        }
    }
}

/// A scheduled job's run lease, `run:JOB` (`--overlap`), held while one of its slots
/// runs; under `--overlap replace` a newer slot asks its holder to stop through the row,
/// and the holder's renewals watch for that ask.
pub struct PgRunLock {
    db: Rc<Db>,
    target: PgTarget,
    name: LeaseName,
    ttl: Duration,
    replace: bool,
    held: Option<Held>,
}

impl PgRunLock {
    /// Connects (within `bound` and `connect_timeout`) and makes sure the lease table
    /// exists, with its `stop_asked` column when `replace`.
    pub fn connect(
        target: PgTarget,
        job: &str,
        replace: bool,
        bound: &Bound,
    ) -> anyhow::Result<PgRunLock> {
        let db = Db::open(&target);
        let needs = Needs {
            leases: true,
            replace,
            ..Needs::default()
        };
        schema::ensure(&db, needs, bound).with_context(|| format!("--state: {target}"))?;
        Ok(PgRunLock {
            db,
            name: LeaseName::run(job),
            ttl: target.lease_ttl.get(),
            target,
            replace,
            held: None,
        })
    }
}

impl Lock for PgRunLock {
    fn describe(&self) -> String {
        format!("{} (lease {})", self.target, self.name)
    }

    fn try_acquire(&mut self, bound: &Bound) -> anyhow::Result<bool> {
        if self.held.is_some() {
            return Ok(true);
        }
        let taken = if self.replace {
            lease::try_take_watching(&self.db, &self.name, self.ttl, bound)
        } else {
            lease::try_take(&self.db, &self.name, self.ttl, None, bound)
        };
        match taken.with_context(|| format!("--state: {}", self.target))? {
            Taken::Held(held) => {
                self.held = Some(held);
                Ok(true)
            }
            Taken::Busy => Ok(false),
        }
    }

    fn poll_pauses(&self) -> crate::wait::Pauses {
        lease::poll_pauses()
    }
}

impl crate::state::stores::RunLock for PgRunLock {
    fn ask_holder_to_stop(&mut self, bound: &Bound) -> anyhow::Result<()> {
        let name = self.name.to_string();
        self.db
            .execute(
                lease::ASK_STOP_SQL,
                &[(&name, tokio_postgres::types::Type::TEXT)],
                bound,
            )
            .with_context(|| format!("--state: {}", self.target))?;
        Ok(())
    }

    /// The holder sees the ask at its next renewal (TTL/3) and is gone before its lease
    /// could expire: a TTL covers both.
    fn replace_wait(&self) -> Duration {
        self.ttl
    }
}

impl Drop for PgRunLock {
    fn drop(&mut self) {
        if let Some(mut held) = self.held.take() {
            if let Err(e) = held.release(&self.db, &Bound::release()) {
                report::notice(&format!(
                    "warning: could not release the lease {} ({e:#}); it expires within {}",
                    self.name,
                    crate::domain::human(self.ttl)
                ));
            }
        }
    }
}
