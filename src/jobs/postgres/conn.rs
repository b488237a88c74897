//! Connections: opening one (bounded as a whole by `connect_timeout`, given up
//! at a stopping signal), closing it without holding up the exit, and the
//! liveness check that tells a lost session lock. What runs over a connection
//! is `lock`'s and `store`'s.

use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, TryRecvError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context;
use postgres::{Client, NoTls};

use super::pgpass::{login_name, pgpass_password};
use super::tls::tls_config;
use super::url::{PgTarget, SslMode};
use crate::jobs::{Interrupted, Liveness};
use crate::signals;

/// Used when the URL sets no `connect_timeout`.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a check of a lock's connection may go unanswered before the lock
/// counts as lost (a network cut must not hang the check).
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// Opens one connection, per the URL's `sslmode`. `flag` names the option in errors.
pub(crate) fn connect(target: &PgTarget, flag: &str, application: &str) -> anyhow::Result<Client> {
    let user = target
        .user
        .clone()
        .or_else(|| std::env::var("PGUSER").ok().filter(|u| !u.is_empty()))
        .or_else(login_name)
        .with_context(|| format!("{flag}: no user in {target} and no PGUSER"))?;
    let host = target.host.clone().unwrap_or_else(|| "localhost".into());
    let port = target.port.unwrap_or(5432);
    let dbname = target.dbname.clone().unwrap_or_else(|| user.clone());
    let mut config = postgres::Config::new();
    if host.starts_with('/') {
        config.host(&host);
    } else {
        // Resolved here, not by tokio-postgres through glibc (see `resolve`); the name
        // still serves TLS verification and ~/.pgpass.
        let addrs =
            crate::resolve::lookup_blocking(&host).map_err(|e| anyhow::anyhow!("{flag}: {e}"))?;
        for addr in addrs {
            config.host(&host).hostaddr(addr);
        }
    }
    config
        .user(&user)
        .port(port)
        .dbname(&dbname)
        .application_name(target.application_name.as_deref().unwrap_or(application))
        .ssl_mode(match target.sslmode {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Prefer => postgres::config::SslMode::Prefer,
            _ => postgres::config::SslMode::Require,
        });
    let bound = match target.connect_timeout {
        Some(t) if t.is_zero() => None,
        other => Some(other.unwrap_or(DEFAULT_CONNECT_TIMEOUT)),
    };
    if let Some(bound) = bound {
        config.connect_timeout(bound);
    }
    let password = target
        .password
        .clone()
        .or_else(|| std::env::var("PGPASSWORD").ok())
        .or_else(|| pgpass_password(&host, port, &dbname, &user));
    if let Some(password) = password {
        config.password(password);
    }
    let tls = match target.sslmode {
        SslMode::Disable => None,
        _ => Some(tls_config(target).with_context(|| format!("{flag}: {target}"))?),
    };
    let (done, connected) = mpsc::channel();
    // The driver's connect_timeout covers only the socket: the thread lets the whole
    // startup be bounded and interrupted; an abandoned one ends with the process.
    std::thread::Builder::new()
        .name("pg-connect".into())
        .spawn(move || {
            let result = match tls {
                None => config.connect(NoTls),
                Some(tls) => config.connect(tokio_postgres_rustls::MakeRustlsConnect::new(tls)),
            };
            let _ = done.send(result);
            signals::wake();
        })
        .context("cannot start a thread to connect to PostgreSQL")?;
    await_connection(&connected, bound).map_err(|e| {
        if e.is::<Interrupted>() {
            e
        } else {
            e.context(format!("{flag}: cannot connect to {target}"))
        }
    })
}

/// Waits for the connecting thread, at most `bound`, and no longer than until a
/// stopping signal ([`Interrupted`]); the thread wakes the signal pipe when done.
fn await_connection(
    connected: &mpsc::Receiver<Result<Client, postgres::Error>>,
    bound: Option<Duration>,
) -> anyhow::Result<Client> {
    let deadline = bound.map(|b| Instant::now() + b);
    loop {
        match connected.try_recv() {
            Ok(result) => return Ok(result?),
            Err(TryRecvError::Disconnected) => {
                anyhow::bail!("the connecting thread ended without an answer")
            }
            Err(TryRecvError::Empty) => {}
        }
        if let Some(sig) = signals::pending() {
            return Err(Interrupted(sig).into());
        }
        let now = Instant::now();
        let left = match (deadline, bound) {
            (Some(d), Some(bound)) if now >= d => anyhow::bail!(
                "no answer within {} (connect_timeout in the URL)",
                crate::parse::human(bound)
            ),
            (Some(d), _) => d - now,
            (None, _) => Duration::from_secs(1),
        };
        signals::wait(left.min(Duration::from_secs(1)));
    }
}

/// `application_name` for a connection: "retry " and what it is for, within
/// PostgreSQL's 63 bytes.
pub(crate) fn application_name(purpose: &str) -> String {
    let mut name = format!("retry {purpose}");
    while name.len() > 63 {
        name.pop();
    }
    name
}

/// A connection shared by its owner and the thread that checks it.
pub(super) type Shared = Arc<Conn>;

/// A connection that never holds up the exit: a broken one is left to the kernel
/// to close, a healthy one gets [`CLOSE_BOUND`] to say goodbye to the server.
pub(super) struct Conn {
    client: Mutex<ManuallyDrop<Client>>,
    /// A check failed: closing it politely could wait on a silent network.
    broken: AtomicBool,
}

/// How long closing a healthy connection may take at exit.
const CLOSE_BOUND: Duration = Duration::from_secs(1);

impl Conn {
    pub(super) fn new(client: Client) -> Shared {
        Arc::new(Conn {
            client: Mutex::new(ManuallyDrop::new(client)),
            broken: AtomicBool::new(false),
        })
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let slot = self
            .client
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        // SAFETY: the client is taken once, here, and the slot is never used again.
        let client = unsafe { ManuallyDrop::take(slot) };
        if self.broken.load(Ordering::SeqCst) {
            // The process is about to exit; the kernel closes the socket.
            std::mem::forget(client);
            return;
        }
        let (done, closed) = mpsc::channel();
        let closing = std::thread::Builder::new().spawn(move || {
            drop(client);
            let _ = done.send(());
        });
        if closing.is_ok() {
            let _ = closed.recv_timeout(CLOSE_BOUND);
        }
    }
}

/// The connection, also when a thread panicked while holding it.
pub(super) fn lock_client(conn: &Conn) -> MutexGuard<'_, ManuallyDrop<Client>> {
    conn.client.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Checks that the connection a session lock lives on is still there: the server
/// frees the lock when the connection ends (restart, `pg_terminate_backend`, a cut).
pub struct PgLiveness(pub(super) Shared);

impl Liveness for PgLiveness {
    fn check(&mut self) -> Result<(), String> {
        lock_client(&self.0).is_valid(CHECK_TIMEOUT).map_err(|e| {
            self.0.broken.store(true, Ordering::SeqCst);
            format!("its connection to the server failed a check: {e}")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn application_names_fit_postgres() {
        assert!(application_name(&"x".repeat(100)).len() <= 63);
    }
}
