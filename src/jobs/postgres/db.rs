//! The one way to reach PostgreSQL. A [`Conn`] is one connection, opened when a
//! statement first needs it; every call (connecting included) is bounded by the
//! URL's `connect_timeout` and by the caller's [`Bound`] (signals, and `--max-time`
//! before and between attempts). A connection whose call was abandoned is closed at
//! once and never used again: the next call opens a fresh one.
//!
//! No state lives in a server session, so a transaction pooler may hand each
//! statement to another session: statements go through the extended protocol's
//! unnamed statement (`query_typed`, `execute_typed`) or as simple queries, never as
//! named prepared statements; no `SET`, no session advisory lock, no temporary table.
//!
//! [`Db`] is the synchronous face used by the run's thread: one connection per URL
//! and thread, shared by the lock, the markers and the fleet state, on the thread's
//! runtime (`wait::runtime`). The lease renewer drives [`Conn`] directly, on a thread
//! and connection of its own.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, NoTls, Row};

use super::pgpass::{login_name, pgpass_password};
use super::tls::tls_config;
use crate::domain::{Interrupted, Stop};
use crate::target::postgres::{PgTarget, SslMode};
use crate::wait::{self, Bound, Ended};

/// How long closing a healthy connection may take (the goodbye to the server).
const CLOSE_BOUND: Duration = Duration::from_millis(200);

/// A statement's parameter with its type, sent with the unnamed statement.
pub type Param<'a> = (&'a (dyn ToSql + Sync), Type);

/// Why a call gave no answer.
#[derive(Debug)]
pub enum NoAnswer {
    /// `connect_timeout` passed.
    Timeout(Duration),
    /// The caller's deadline (`--max-time`, or a lease's loss deadline) passed first.
    Deadline,
}

impl std::fmt::Display for NoAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoAnswer::Timeout(t) => write!(
                f,
                "no answer within {} (connect_timeout)",
                crate::domain::human(*t)
            ),
            NoAnswer::Deadline => write!(f, "no answer before the run's deadline"),
        }
    }
}

impl std::error::Error for NoAnswer {}

/// One connection to one server, or none yet (or none since the last one broke).
pub struct Conn {
    target: PgTarget,
    application: String,
    live: Option<Live>,
}

struct Live {
    client: Client,
    /// The task that drives the socket, on the runtime that opened it.
    driver: tokio::task::JoinHandle<()>,
}

impl Conn {
    /// A connection to `target`'s server, opened by the first call.
    pub fn new(target: &PgTarget, application: &str) -> Conn {
        Conn {
            target: target.server(),
            application: application_name(target, application),
            live: None,
        }
    }

    pub fn target(&self) -> &PgTarget {
        &self.target
    }

    /// Rows of one statement (the unnamed statement of the extended protocol).
    pub async fn query(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        bound: &Bound,
    ) -> anyhow::Result<Vec<Row>> {
        self.call(bound, async |client: &Client| {
            client.query_typed(sql, params).await
        })
        .await
    }

    /// Rows changed by one statement (the unnamed statement of the extended protocol).
    pub async fn execute(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        bound: &Bound,
    ) -> anyhow::Result<u64> {
        self.call(bound, async |client: &Client| {
            client.execute_typed(sql, params).await
        })
        .await
    }

    /// One or more statements as a simple query (`BEGIN; …; COMMIT` included).
    pub async fn batch(&mut self, sql: &str, bound: &Bound) -> anyhow::Result<()> {
        self.call(bound, async |client: &Client| {
            client.batch_execute(sql).await
        })
        .await
    }

    /// Runs `call` on the connection, opening it first if needed, within `bound` and
    /// `connect_timeout`. A call that gives no answer closes the connection. One that
    /// finds a connection kept from an earlier call dead (the server restarted, or ended
    /// the session while it was idle) is made once more on a fresh one: no statement of
    /// retry's does harm when repeated after its connection failed.
    async fn call<T>(
        &mut self,
        bound: &Bound,
        call: impl AsyncFn(&Client) -> Result<T, tokio_postgres::Error>,
    ) -> anyhow::Result<T> {
        let timeout = self.target.call_timeout();
        let limit = Instant::now() + timeout;
        let bounded = bound.earlier(Some(limit));
        if self.live.as_ref().is_some_and(|l| l.client.is_closed()) {
            self.discard();
        }
        let mut kept = self.live.is_some();
        loop {
            if self.live.is_none() {
                let opened = wait::within(open(&self.target, &self.application), &bounded).await;
                let opened = answered(opened, bounded, limit, timeout).and_then(|live| live);
                self.live = Some(opened.map_err(|e| {
                    if e.is::<Interrupted>() {
                        e
                    } else {
                        e.context(format!("cannot connect to {}", self.target))
                    }
                })?);
            }
            let client = &self.live.as_ref().expect("just opened").client;
            let result = match wait::within(call(client), &bounded).await {
                Ok(result) => result,
                Err(ended) => {
                    self.discard();
                    return Err(no_answer(ended, bounded, limit, timeout));
                }
            };
            match result {
                Ok(value) => return Ok(value),
                Err(e) if connection_failed(&e) => {
                    // The next call starts afresh; this one does once, if its connection was old.
                    self.discard();
                    if !std::mem::take(&mut kept) {
                        return Err(e.into());
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Drops a connection that may be stalled: the socket is closed without a goodbye,
    /// and nothing more is sent on it.
    pub fn discard(&mut self) {
        if let Some(live) = self.live.take() {
            live.driver.abort();
            drop(live.client);
        }
    }

    /// Closes a healthy connection politely, within [`CLOSE_BOUND`].
    pub async fn close(&mut self) {
        if let Some(live) = self.live.take() {
            drop(live.client);
            let mut driver = live.driver;
            if tokio::time::timeout(CLOSE_BOUND, &mut driver)
                .await
                .is_err()
            {
                driver.abort();
            }
        }
    }
}

/// Whether `e` ended the connection (not just the statement): a closed socket, an I/O
/// error, or the server's FATAL (a restart, `pg_terminate_backend`).
fn connection_failed(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    match e.as_db_error() {
        Some(db) => matches!(
            db.parsed_severity(),
            Some(tokio_postgres::error::Severity::Fatal | tokio_postgres::error::Severity::Panic)
        ),
        None => true,
    }
}

/// What an opened connection's answer means: the value, or why there was none.
fn answered<T>(
    result: Result<T, Ended>,
    bound: Bound,
    limit: Instant,
    timeout: Duration,
) -> anyhow::Result<T> {
    result.map_err(|ended| no_answer(ended, bound, limit, timeout))
}

/// The error for a call that ended without an answer: a signal ([`Interrupted`]), a
/// lost lock, or a deadline ([`NoAnswer`]).
fn no_answer(ended: Ended, bound: Bound, limit: Instant, timeout: Duration) -> anyhow::Error {
    match ended {
        Ended::Stopped(Stop::Signal(sig)) => Interrupted(sig).into(),
        Ended::Stopped(Stop::LockLost(why)) => anyhow::anyhow!(why),
        Ended::TimedOut if bound.deadline().is_some_and(|d| d < limit) => NoAnswer::Deadline.into(),
        Ended::TimedOut => NoAnswer::Timeout(timeout).into(),
    }
}

/// `application_name`: the URL's, else "retry" and what the connection is for,
/// within PostgreSQL's 63 bytes.
fn application_name(target: &PgTarget, purpose: &str) -> String {
    if let Some(name) = &target.application_name {
        return name.clone();
    }
    let mut name = format!(
        "retry{}{purpose}",
        if purpose.is_empty() { "" } else { " " }
    );
    while name.len() > 63 {
        name.pop();
    }
    name
}

/// Opens one connection: the name resolved by `resolve` (never through glibc), TLS as
/// `sslmode` asks, the password from the URL, PGPASSWORD or ~/.pgpass. The socket's
/// driver is spawned on the current runtime.
async fn open(target: &PgTarget, application: &str) -> anyhow::Result<Live> {
    use anyhow::Context;
    let user = target
        .user
        .clone()
        .or_else(|| std::env::var("PGUSER").ok().filter(|u| !u.is_empty()))
        .or_else(login_name)
        .with_context(|| format!("no user in {target} and no PGUSER"))?;
    let host = target.host.clone().unwrap_or_else(|| "localhost".into());
    let port = target.port.unwrap_or(5432);
    let dbname = target.dbname.clone().unwrap_or_else(|| user.clone());
    let mut config = tokio_postgres::Config::new();
    if host.starts_with('/') {
        config.host_path(&host);
    } else {
        // The name still serves TLS verification and ~/.pgpass.
        let addrs = crate::resolve::lookup(&host, None)
            .await
            .map_err(anyhow::Error::msg)?;
        for addr in addrs {
            config.host(&host).hostaddr(addr);
        }
    }
    config
        .user(&user)
        .port(port)
        .dbname(&dbname)
        .application_name(application)
        .connect_timeout(target.call_timeout())
        .ssl_mode(match target.sslmode {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            _ => tokio_postgres::config::SslMode::Require,
        });
    let password = target
        .password
        .clone()
        .or_else(|| std::env::var("PGPASSWORD").ok())
        .or_else(|| pgpass_password(&host, port, &dbname, &user));
    if let Some(password) = password {
        config.password(password);
    }
    let live = match target.sslmode {
        SslMode::Disable => {
            let (client, connection) = config.connect(NoTls).await?;
            let driver = tokio::spawn(async move {
                let _ = connection.await;
            });
            Live { client, driver }
        }
        _ => {
            let tls = tokio_postgres_rustls::MakeRustlsConnect::new(tls_config(target)?);
            let (client, connection) = config.connect(tls).await?;
            let driver = tokio::spawn(async move {
                let _ = connection.await;
            });
            Live { client, driver }
        }
    };
    Ok(live)
}

/// The synchronous face of a [`Conn`] for the run's thread: one per URL and thread,
/// shared by whoever opens the same server, and closed when the last user drops it
/// (a scheduler holds no connection between slots).
pub struct Db {
    conn: RefCell<Conn>,
    key: String,
}

thread_local! {
    /// The connections this thread has open, by server.
    static OPEN: RefCell<HashMap<String, Weak<Db>>> = RefCell::new(HashMap::new());
}

impl Db {
    /// This thread's connection to `target`'s server (opened by the first call).
    pub fn open(target: &PgTarget) -> Rc<Db> {
        let key = server_key(target);
        OPEN.with(|open| {
            let mut open = open.borrow_mut();
            if let Some(db) = open.get(&key).and_then(Weak::upgrade) {
                return db;
            }
            let db = Rc::new(Db {
                conn: RefCell::new(Conn::new(target, "")),
                key: key.clone(),
            });
            open.insert(key, Rc::downgrade(&db));
            db
        })
    }

    /// The server, for messages (never with a password).
    pub fn target(&self) -> PgTarget {
        self.conn.borrow().target().clone()
    }

    pub fn query(
        &self,
        sql: &str,
        params: &[Param<'_>],
        bound: &Bound,
    ) -> anyhow::Result<Vec<Row>> {
        self.run(async |conn| conn.query(sql, params, bound).await)
    }

    pub fn execute(&self, sql: &str, params: &[Param<'_>], bound: &Bound) -> anyhow::Result<u64> {
        self.run(async |conn| conn.execute(sql, params, bound).await)
    }

    pub fn batch(&self, sql: &str, bound: &Bound) -> anyhow::Result<()> {
        self.run(async |conn| conn.batch(sql, bound).await)
    }

    /// Runs one call on the thread's runtime (the call bounds itself).
    fn run<T>(&self, call: impl AsyncFnOnce(&mut Conn) -> anyhow::Result<T>) -> anyhow::Result<T> {
        let mut conn = self.conn.borrow_mut();
        wait::runtime().block_on(call(&mut conn))
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        OPEN.with(|open| {
            let mut open = open.borrow_mut();
            if open.get(&self.key).is_some_and(|w| w.strong_count() == 0) {
                open.remove(&self.key);
            }
        });
        let conn = self.conn.get_mut();
        wait::runtime().block_on(conn.close());
    }
}

/// Which connections may be shared: the same server, database, user, password and
/// connection parameters.
pub(super) fn server_key(target: &PgTarget) -> String {
    let t = target.server();
    format!(
        "{:?}\0{:?}\0{:?}\0{:?}\0{:?}\0{:?}\0{:?}\0{:?}\0{:?}",
        t.user,
        t.password,
        t.host,
        t.port,
        t.dbname,
        t.sslmode,
        t.sslrootcert,
        t.connect_timeout,
        t.application_name
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn application_names_fit_postgres() {
        let target = PgTarget::default();
        assert!(application_name(&target, &"x".repeat(100)).len() <= 63);
        assert_eq!(application_name(&target, ""), "retry");
        assert_eq!(
            application_name(&target, "lease renewal"),
            "retry lease renewal"
        );
    }

    #[test]
    fn one_connection_per_server_and_thread() {
        let parse = |u: &str| crate::target::postgres::parse_url(u).unwrap();
        let lock = Db::open(&parse("u@h/db#a"));
        let other_lock = Db::open(&parse("u@h/db#b"));
        assert!(Rc::ptr_eq(&lock, &other_lock), "the name is not the server");
        let other_db = Db::open(&parse("u@h/db2"));
        assert!(!Rc::ptr_eq(&lock, &other_db));
    }

    #[test]
    fn a_server_that_never_answers_is_given_up_at_connect_timeout() {
        // A listener that accepts (the kernel's backlog) and never speaks.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let target =
            crate::target::postgres::parse_url(&format!("u@127.0.0.1:{port}/db?connect_timeout=1"))
                .unwrap();
        let db = Db::open(&target);
        let start = Instant::now();
        let err = db
            .query("SELECT 1", &[], &Bound::signals_only())
            .unwrap_err();
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{:?}",
            start.elapsed()
        );
        assert!(err.downcast_ref::<NoAnswer>().is_some(), "{err:#}");
        let deadline = Bound::within(Duration::from_millis(100));
        let err = db.query("SELECT 1", &[], &deadline).unwrap_err();
        assert!(
            matches!(err.downcast_ref::<NoAnswer>(), Some(NoAnswer::Deadline)),
            "{err:#}"
        );
    }
}
