//! The PostgreSQL backend, for jobs that run on several machines: `--lock
//! postgres://…#NAME` as a session advisory lock (`lock`), and `--state
//! postgres://…` as rows in a table (`store`). A session lock belongs to one
//! connection, held open for the whole run; the server frees it when that
//! connection ends, however the process dies. `conn` opens connections (bounded
//! by `connect_timeout`, giving way to a stopping signal) and checks them, so a
//! lost connection is a lost lock; `url` parses `postgres://` targets, `pgpass`
//! finds the password libpq would, and `tls` builds the certificate checks
//! `sslmode` asks for. Deciding when to lock and record is `jobs`' job.

mod conn;
mod lock;
mod pgpass;
mod store;
mod tls;
mod url;

pub(crate) use conn::{application_name, connect};
pub use lock::{ADVISORY_KEY_SQL, PgLock};
pub use store::{MARKER_TABLE, PgStore};
pub use url::PgTarget;
pub(crate) use url::{parse_url, strip_scheme};
