//! The PostgreSQL backend, for jobs that run on several machines, reached through
//! one module ([`db`]): a connection per server and thread, every statement bounded
//! and interruptible, nothing kept in a server session (so transaction poolers such
//! as PgBouncer work). `--lock postgres://…#NAME` is a lease (`lease`, `lock`),
//! `--state postgres://…` keeps `--once` markers and schedule records (`store`),
//! `schema` owns the tables and their DDL, `pgpass` finds the password libpq would,
//! and `tls` builds the certificate checks `sslmode` asks for. Parsing a
//! `postgres://` target is `target::postgres`'; deciding when to lock and record is
//! `jobs`'.

mod capacity;
pub mod db;
pub mod fleet;
pub mod lease;
mod lock;
mod markers;
mod pgpass;
pub mod schema;
mod tls;
pub mod url;

pub use lock::PgLock;
pub use markers::PgStore;
