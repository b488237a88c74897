//! The PostgreSQL backend, for jobs that run on several machines, reached through
//! one module ([`db`]): a connection per server and thread, every statement bounded
//! and interruptible, nothing kept in a server session (so transaction poolers such
//! as PgBouncer work). `--lock postgres://…#NAME` is a lease (`lease`, `lock`),
//! `--state postgres://…` keeps `--once` markers and schedule records (`store`), and
//! `schema` owns the tables and their DDL. `url` parses `postgres://` targets,
//! `pgpass` finds the password libpq would, and `tls` builds the certificate checks
//! `sslmode` asks for. Deciding when to lock and record is `jobs`' job.

pub mod db;
pub mod lease;
mod lock;
mod pgpass;
pub mod schema;
mod store;
mod tls;
mod url;

pub use lock::PgLock;
pub use store::{MARKER_TABLE, PgStore};
pub use url::PgTarget;
pub(crate) use url::{parse_url, strip_scheme};
