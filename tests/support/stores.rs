//! The stores every shared-state test runs on: a state directory, and PostgreSQL reached
//! directly and through PgBouncer. [`each_store!`](crate::each_store) runs one body per
//! store, as `NAME::dir`, `NAME::direct` and `NAME::pooled`; the body gets a [`Store`],
//! which names its targets (`--state`, `--lock`) and reads and writes its records the
//! way that backend keeps them. A new backend is a variant here, its arms in these
//! methods, and a test in the macro; the bodies stay as they are.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::postgres::{self, Postgres, Via};
use super::scratch::Scratch;

/// Runs a test once per store, as `NAME::dir`, `NAME::direct` and `NAME::pooled`: the
/// body gets `store`, a [`Store`]. `fn NAME(store) if READY { … }` first asks `READY()`
/// (a `fn() -> bool` that says SKIPPED itself when it is false), so that no server is
/// started for a test that cannot run.
#[macro_export]
macro_rules! each_store {
    ($(#[$meta:meta])* fn $name:ident($store:ident) $body:block) => {
        $crate::each_store! {
            $(#[$meta])*
            fn $name($store) if $crate::support::stores::always $body
        }
    };
    ($(#[$meta:meta])* fn $name:ident($store:ident) if $ready:path $body:block) => {
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            use $crate::support::postgres::Via;
            use $crate::support::stores::Store;

            fn on($store: Store) $body

            #[test]
            fn dir() {
                Store::run($ready, Store::dir, on);
            }

            #[test]
            fn direct() {
                Store::run($ready, || Store::postgres(stringify!($name), Via::Direct), on);
            }

            #[test]
            fn pooled() {
                Store::run($ready, || Store::postgres(stringify!($name), Via::Pooler), on);
            }
        }
    };
}

/// The `READY` of a test that can always run.
pub fn always() -> bool {
    true
}

/// Where a test's runs share their state.
pub enum Store {
    /// A state directory (`DIR/state`), locks as files beside it.
    Dir(Scratch),
    /// A PostgreSQL server of the test's own, reached directly or through PgBouncer.
    Postgres(Postgres),
}

impl Store {
    /// Runs `body` on the store `make` gives, when `ready()` says the test can run and
    /// `make` has a store to give (a missing server is said SKIPPED).
    pub fn run<S: Into<Option<Store>>>(
        ready: fn() -> bool,
        make: impl FnOnce() -> S,
        body: fn(Store),
    ) {
        if !ready() {
            return;
        }
        if let Some(store) = make().into() {
            body(store);
        }
    }

    /// A fresh state directory.
    pub fn dir() -> Store {
        Store::Dir(Scratch::new())
    }

    /// A PostgreSQL server for `test`, reached `via`; `None` (said SKIPPED) without one.
    pub fn postgres(test: &str, via: Via) -> Option<Store> {
        postgres::start_via(test, via).map(Store::Postgres)
    }

    /// The `--state` target.
    pub fn state(&self) -> String {
        match self {
            Store::Dir(dir) => dir.p("state"),
            Store::Postgres(pg) => pg.url(""),
        }
    }

    /// The `--lock` target of the lock `name`: a file, or a lease.
    pub fn lock(&self, name: &str) -> String {
        match self {
            Store::Dir(dir) => dir.p(&format!("{name}.lock")),
            Store::Postgres(pg) => pg.url(&format!("#{name}")),
        }
    }

    /// The server, for a test that looks at its rows itself.
    pub fn postgres_server(&self) -> Option<&Postgres> {
        match self {
            Store::Postgres(pg) => Some(pg),
            Store::Dir(_) => None,
        }
    }

    /// The directory of the state and the lock files, for a test that looks at them.
    pub fn directory(&self) -> Option<&Scratch> {
        match self {
            Store::Dir(dir) => Some(dir),
            Store::Postgres(_) => None,
        }
    }

    /// The tokens the retry budget `name` holds.
    pub fn budget_tokens(&self, name: &str) -> f64 {
        match self {
            Store::Dir(dir) => {
                let record = super::read_json(&budget_file(dir, name));
                record["tokens"]
                    .as_f64()
                    .unwrap_or_else(|| panic!("no tokens in {record}"))
            }
            Store::Postgres(pg) => pg
                .client()
                .query_one("SELECT tokens FROM retry_budgets WHERE name = $1", &[&name])
                .get(0),
        }
    }

    /// Spends the retry budget `name` (of the default 10 tokens), stamping its last
    /// retry an hour ahead, so that no probe falls due. A run has made its record.
    pub fn spend_budget(&self, name: &str) {
        match self {
            Store::Dir(dir) => {
                let ahead = SystemTime::now() + Duration::from_secs(3600);
                let ms = ahead.duration_since(UNIX_EPOCH).unwrap().as_millis();
                let record = format!(r#"{{"tokens":0,"size":10,"last_retry_ms":{ms}}}"#);
                std::fs::write(budget_file(dir, name), record).unwrap();
            }
            Store::Postgres(pg) => {
                pg.client().execute(
                    "UPDATE retry_budgets SET tokens = 0, last_retry_at = now() + interval '1 hour' \
                     WHERE name = $1",
                    &[&name],
                );
            }
        }
    }

    /// How many slots of the scheduled job `job` are recorded as succeeded.
    pub fn succeeded_slots(&self, job: &str) -> usize {
        match self {
            Store::Dir(dir) => std::fs::read_dir(dir.path("state"))
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with(&format!("{job}@"))
                })
                .filter(|e| super::read_json(&e.path())["status"] == "succeeded")
                .count(),
            Store::Postgres(pg) => pg
                .client()
                .query(
                    "SELECT key FROM retry_once WHERE key LIKE $1 AND status = 'succeeded'",
                    &[&format!("{job}@%")],
                )
                .len(),
        }
    }
}

/// The record of the retry budget `name` in the state directory of `dir`.
fn budget_file(dir: &Scratch, name: &str) -> PathBuf {
    dir.path(&format!("state/budgets/{name}.json"))
}
