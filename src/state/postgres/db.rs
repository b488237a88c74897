//! The one way to reach PostgreSQL, and the connection economy of a fleet. A
//! connection is open only while a run has statements to send: a [`Burst`](crate::state::Burst) keeps this
//! thread's connections open until it ends, and a statement made outside any burst is a
//! burst of its own, so nothing stays open while a command, a hook, a sleep, a hold or a
//! lock wait's pause runs ([`idle`](crate::state::idle)). A process has at most two connections per server:
//! its thread's ([`Db`]) and its lease renewer's ([`Shared`]).
//!
//! Every call (connecting included) is bounded by the URL's `connect_timeout` and by
//! the caller's [`Bound`] (signals, and `--max-time` before and between attempts). A
//! server that refuses a connection for want of capacity (`capacity`) is tried again
//! with full-jitter backoff until the call's [`Patience`] runs out: `connect_timeout`
//! after the call began, or later when the burst says so (a lock's `--lock-wait`, a
//! renewal's loss deadline). A connection whose call failed or was abandoned is closed
//! at once and never used again: the next call opens a fresh one.
//!
//! No state lives in a server session, so a transaction pooler may hand each
//! statement to another session: statements go through the extended protocol's
//! unnamed statement (`query_typed`, `execute_typed`) or as simple queries, never as
//! named prepared statements; no `SET`, no session advisory lock, no temporary table.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, NoTls, Row};

use super::capacity::{self, Refusal};
use super::pgpass::{login_name, pgpass_password};
use super::tls::tls_config;
use super::url::{PgTarget, SslMode};
use crate::domain::{Interrupted, Stop, human};
use crate::report;
use crate::state::burst::{self, KeptOpen, Patience};
use crate::state::{NoAnswer, Refused};
use crate::wait::{self, Bound, Ended, Pauses};

/// How long closing a healthy connection may take (the goodbye to the server).
const CLOSE_BOUND: Duration = Duration::from_millis(200);
/// How long a TCP handshake may go unanswered before the try counts as refused: a
/// server whose listen queue is full drops the opening silently, and the kernel would
/// send it again only after 1 s, 3 s, 7 s, past most of `connect_timeout`.
pub const HANDSHAKE_LIMIT: Duration = Duration::from_secs(1);
/// The first pause after a refusal for capacity, and the longest.
const REFUSED_FIRST: Duration = Duration::from_millis(10);
const REFUSED_CAP: Duration = Duration::from_secs(1);

/// A statement's parameter with its type, sent with the unnamed statement.
pub type Param<'a> = (&'a (dyn ToSql + Sync), Type);

/// One connection to one server, or none (none since the last burst, or since the last
/// one failed).
struct Conn {
    target: PgTarget,
    application: String,
    live: Option<Live>,
    /// A call is under way, or was abandoned midway (its future dropped): the next
    /// call discards the connection first.
    in_flight: bool,
}

struct Live {
    client: Client,
    /// The task that drives the socket, on the runtime that opened it.
    driver: tokio::task::JoinHandle<()>,
}

/// How one try of a call failed.
enum Failed {
    /// Refused for capacity: tried again after a pause.
    Refused(Refusal),
    Error(anyhow::Error),
}

impl Conn {
    fn new(target: &PgTarget, application: &str) -> Conn {
        Conn {
            target: target.server(),
            application: application_name(target, application),
            live: None,
            in_flight: false,
        }
    }

    /// Runs `call` on the connection, opening it first if needed. Each try is bounded by
    /// `bound` and `connect_timeout`; a refusal for capacity is tried again after a
    /// full-jitter pause as long as `patience` says.
    async fn call<T>(
        &mut self,
        bound: &Bound,
        patience: Patience,
        call: impl AsyncFn(&Client) -> Result<T, tokio_postgres::Error>,
    ) -> anyhow::Result<T> {
        if std::mem::replace(&mut self.in_flight, true) {
            self.discard();
        }
        let result = self.call_until(bound, patience, call).await;
        self.in_flight = false;
        result
    }

    /// [`call`](Self::call) once the connection is known to be fit for it.
    async fn call_until<T>(
        &mut self,
        bound: &Bound,
        patience: Patience,
        call: impl AsyncFn(&Client) -> Result<T, tokio_postgres::Error>,
    ) -> anyhow::Result<T> {
        let began = Instant::now();
        let timeout = self.target.call_timeout();
        let asks_until = patience.deadline(began, timeout);
        let mut pauses = None;
        loop {
            let refusal = match self.try_once(bound, timeout, &call).await {
                Ok(value) => return Ok(value),
                Err(Failed::Error(e)) => return Err(e),
                Err(Failed::Refused(refusal)) => refusal,
            };
            // The last try is made when the patience runs out.
            let pauses = pauses.get_or_insert_with(|| Pauses::new(REFUSED_FIRST, REFUSED_CAP));
            let pause = asks_until.and_then(|until| {
                pauses.before_next_try(Some(until.saturating_duration_since(Instant::now())))
            });
            let Some(pause) = pause else {
                let tried = began.elapsed();
                let refused = Refused {
                    refusal: refusal.to_string(),
                    tried,
                };
                return Err(anyhow::Error::new(refused).context(self.cannot_connect()));
            };
            report::verbose(
                2,
                &format!(
                    "{}: {refusal} [{}]; trying again in {}",
                    self.target,
                    refusal.source,
                    human(pause)
                ),
            );
            if let Err(ended) = wait::within(tokio::time::sleep(pause), bound).await {
                let limit = Instant::now() + pause;
                let e = no_answer(ended, *bound, limit, timeout);
                return Err(e.context(refusal.to_string()));
            }
        }
    }

    /// One try: opens the connection if needed and makes the call. A connection kept
    /// from an earlier call of the burst that turns out dead (the server restarted, or
    /// ended the session while it was idle) is replaced once: no statement of retry's
    /// does harm when repeated after its connection failed.
    async fn try_once<T>(
        &mut self,
        bound: &Bound,
        timeout: Duration,
        call: &impl AsyncFn(&Client) -> Result<T, tokio_postgres::Error>,
    ) -> Result<T, Failed> {
        if self.live.as_ref().is_some_and(|l| l.client.is_closed()) {
            self.discard();
        }
        let mut kept = self.live.is_some();
        loop {
            let limit = Instant::now() + timeout;
            let bounded = bound.earlier(Some(limit));
            if self.live.is_none() {
                self.live = Some(self.connect(&bounded, limit, timeout).await?);
            }
            let client = &self.live.as_ref().expect("just opened").client;
            let result = match wait::within(call(client), &bounded).await {
                Ok(result) => result,
                Err(ended) => {
                    self.discard();
                    return Err(Failed::Error(no_answer(ended, bounded, limit, timeout)));
                }
            };
            let e = match result {
                Ok(value) => return Ok(value),
                Err(e) => e,
            };
            // Whatever the call left open on the server (an aborted transaction) goes
            // with its connection.
            self.close().await;
            if let Some(refusal) = capacity::refusal(&e, false) {
                return Err(Failed::Refused(refusal));
            }
            if !connection_failed(&e) {
                return Err(Failed::Error(e.into()));
            }
            if std::mem::take(&mut kept) {
                continue;
            }
            // A fresh connection the server or the pooler ended under the call (a
            // restart): a passing state like a refusal; any other failure is an answer.
            if closed_by_server(&e) {
                return Err(Failed::Refused(capacity::closed_under_call(&e)));
            }
            return Err(Failed::Error(e.into()));
        }
    }

    /// Opens the connection within `bounded`; a refusal for capacity is told apart.
    async fn connect(
        &self,
        bounded: &Bound,
        limit: Instant,
        timeout: Duration,
    ) -> Result<Live, Failed> {
        let opened = wait::within(open(&self.target, &self.application), bounded).await;
        let opened = opened.map_err(|ended| no_answer(ended, *bounded, limit, timeout));
        let refused = |e: &anyhow::Error| {
            e.downcast_ref::<tokio_postgres::Error>()
                .and_then(|e| capacity::refusal(e, true))
        };
        match opened {
            Ok(Ok(live)) => Ok(live),
            Ok(Err(e)) => match refused(&e) {
                Some(refusal) => Err(Failed::Refused(refusal)),
                None => Err(Failed::Error(e.context(self.cannot_connect()))),
            },
            Err(e) if e.is::<Interrupted>() => Err(Failed::Error(e)),
            Err(e) => Err(Failed::Error(e.context(self.cannot_connect()))),
        }
    }

    fn cannot_connect(&self) -> String {
        format!("cannot connect to {}", self.target)
    }

    /// Drops a connection that may be stalled: the socket is closed without a goodbye,
    /// and nothing more is sent on it.
    fn discard(&mut self) {
        if let Some(live) = self.live.take() {
            live.driver.abort();
            drop(live.client);
        }
    }

    /// Closes a connection politely, within [`CLOSE_BOUND`].
    async fn close(&mut self) {
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

    async fn query(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        bound: &Bound,
        patience: Patience,
    ) -> anyhow::Result<Vec<Row>> {
        self.call(bound, patience, async |client: &Client| {
            client.query_typed(sql, params).await
        })
        .await
    }

    async fn execute(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        bound: &Bound,
        patience: Patience,
    ) -> anyhow::Result<u64> {
        self.call(bound, patience, async |client: &Client| {
            client.execute_typed(sql, params).await
        })
        .await
    }

    async fn batch(&mut self, sql: &str, bound: &Bound, patience: Patience) -> anyhow::Result<()> {
        self.call(bound, patience, async |client: &Client| {
            client.batch_execute(sql).await
        })
        .await
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

/// Whether the server or the pooler ended the connection: a closed or failed socket, or
/// its FATAL message (a restart, an administrator's shutdown, `pg_terminate_backend`).
fn closed_by_server(e: &tokio_postgres::Error) -> bool {
    let io = std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>());
    let fatal = e.as_db_error().is_some_and(|db| {
        matches!(
            db.parsed_severity(),
            Some(tokio_postgres::error::Severity::Fatal | tokio_postgres::error::Severity::Panic)
        )
    });
    e.is_closed() || io || fatal
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
        unix_socket(&mut config, &host)?;
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
        .connect_timeout(HANDSHAKE_LIMIT.min(target.call_timeout()))
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

/// A connection shared by the tasks of one thread (the lease renewer's leases on one
/// server): open while one of them has a call to make, closed once no call waits.
pub struct Shared {
    conn: tokio::sync::Mutex<Conn>,
    waiting: AtomicUsize,
}

impl Shared {
    pub fn new(target: &PgTarget, application: &str) -> Shared {
        Shared {
            conn: tokio::sync::Mutex::new(Conn::new(target, application)),
            waiting: AtomicUsize::new(0),
        }
    }

    /// Rows changed by one statement, tried until `bound`, refusals for capacity as
    /// `patience` says.
    pub async fn execute(
        &self,
        sql: &str,
        params: &[Param<'_>],
        bound: &Bound,
        patience: Patience,
    ) -> anyhow::Result<u64> {
        let _turn = Turn::take(&self.waiting);
        let mut conn = self.conn.lock().await;
        let result = conn.execute(sql, params, bound, patience).await;
        if self.waiting.load(Ordering::SeqCst) == 1 {
            conn.close().await;
        }
        result
    }

    /// The rows of one statement, as [`execute`](Self::execute) makes it.
    pub async fn query(
        &self,
        sql: &str,
        params: &[Param<'_>],
        bound: &Bound,
        patience: Patience,
    ) -> anyhow::Result<Vec<Row>> {
        let _turn = Turn::take(&self.waiting);
        let mut conn = self.conn.lock().await;
        let result = conn.query(sql, params, bound, patience).await;
        if self.waiting.load(Ordering::SeqCst) == 1 {
            conn.close().await;
        }
        result
    }
}

/// A call's place among those waiting for a [`Shared`] connection, given up when
/// dropped (also when the call is abandoned).
struct Turn<'a>(&'a AtomicUsize);

impl<'a> Turn<'a> {
    fn take(waiting: &'a AtomicUsize) -> Turn<'a> {
        waiting.fetch_add(1, Ordering::SeqCst);
        Turn(waiting)
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The synchronous face of a connection for the run's thread: one per server and
/// thread, shared by the lock, the markers and the fleet state, on the thread's runtime
/// ([`wait::on_runtime`]). It is open only during a burst (see [`Burst`](crate::state::Burst)).
pub struct Db {
    conn: RefCell<Conn>,
    key: String,
}

thread_local! {
    /// This thread's connections, by server.
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
            burst::keep_open(Rc::<Db>::downgrade(&db));
            db
        })
    }

    /// The server, for messages (never with a password).
    pub fn target(&self) -> PgTarget {
        self.conn.borrow().target.clone()
    }

    pub fn query(
        &self,
        sql: &str,
        params: &[Param<'_>],
        bound: &Bound,
    ) -> anyhow::Result<Vec<Row>> {
        self.run(async |conn, patience| conn.query(sql, params, bound, patience).await)
    }

    pub fn execute(&self, sql: &str, params: &[Param<'_>], bound: &Bound) -> anyhow::Result<u64> {
        self.run(async |conn, patience| conn.execute(sql, params, bound, patience).await)
    }

    pub fn batch(&self, sql: &str, bound: &Bound) -> anyhow::Result<()> {
        self.run(async |conn, patience| conn.batch(sql, bound, patience).await)
    }

    /// Runs one call on the thread's runtime (the call bounds itself), within the
    /// bursts under way, or as a burst of its own.
    fn run<T>(
        &self,
        call: impl AsyncFnOnce(&mut Conn, Patience) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let bursts = burst::current();
        let mut conn = self.conn.borrow_mut();
        let result = wait::on_runtime(call(&mut conn, bursts.patience));
        if bursts.depth == 0 {
            wait::on_runtime(conn.close());
        }
        if result.is_err() {
            // A call given up aborted its connection's driver: its socket closes now.
            wait::settle_runtime();
        }
        result
    }

    /// Whether a connection is open now.
    #[cfg(test)]
    fn is_open(&self) -> bool {
        self.conn.try_borrow().map_or(true, |c| c.live.is_some())
    }
}

impl KeptOpen for Db {
    fn close(&self) {
        if let Ok(mut conn) = self.conn.try_borrow_mut() {
            wait::on_runtime(conn.close());
        }
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
        wait::on_runtime(conn.close());
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

/// A host that is a directory: the server's Unix-domain socket in it.
#[cfg(unix)]
fn unix_socket(config: &mut tokio_postgres::Config, dir: &str) -> anyhow::Result<()> {
    config.host_path(dir);
    Ok(())
}

/// tokio-postgres reaches a server through a Unix-domain socket on Unix only.
#[cfg(not(unix))]
fn unix_socket(_config: &mut tokio_postgres::Config, dir: &str) -> anyhow::Result<()> {
    anyhow::bail!(
        "host {dir}: a Unix-domain socket directory; on this system give a host name or address"
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
        let parse = |u: &str| crate::state::postgres::url::parse_url(u).unwrap();
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
        let target = crate::state::postgres::url::parse_url(&format!(
            "u@127.0.0.1:{port}/db?connect_timeout=1"
        ))
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

    #[test]
    fn a_refused_connection_is_tried_again_until_connect_timeout_and_named() {
        // A port nothing listens on: refused, as while a server restarts.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("u@127.0.0.1:{port}/db?connect_timeout=1");
        let db = Db::open(&crate::state::postgres::url::parse_url(&url).unwrap());
        let start = Instant::now();
        let err = db
            .query("SELECT 1", &[], &Bound::signals_only())
            .unwrap_err();
        let took = start.elapsed();
        assert!(took > Duration::from_millis(500), "tried again: {took:?}");
        assert!(took < Duration::from_secs(3), "{took:?}");
        let refused = err.downcast_ref::<Refused>().expect("a refusal");
        assert!(
            refused.refusal.contains(": connection refused"),
            "{refused}"
        );
        let text = format!("{err:#}");
        assert!(
            text.starts_with(&format!(
                "cannot connect to postgres://u@127.0.0.1:{port}/db"
            )),
            "{text}"
        );
        assert!(
            text.contains("the server refused the connection: connection refused"),
            "{text}"
        );
        assert!(!db.is_open());
        // The run's deadline ends the tries first, naming the refusal too (a deadline
        // long enough for a first refusal on a loaded machine, short of connect_timeout).
        let url = format!("u@127.0.0.1:{port}/db?connect_timeout=10");
        let db = Db::open(&crate::state::postgres::url::parse_url(&url).unwrap());
        let err = db
            .query("SELECT 1", &[], &Bound::within(Duration::from_millis(1500)))
            .unwrap_err();
        assert!(
            matches!(err.downcast_ref::<NoAnswer>(), Some(NoAnswer::Deadline)),
            "{err:#}"
        );
        assert!(format!("{err:#}").contains("connection refused"), "{err:#}");
    }
}
