//! The PostgreSQL backend, for jobs that run on several machines: `--lock
//! postgres://…#NAME` as a session advisory lock, and `--state postgres://…` as rows
//! in a table. A session lock belongs to one connection, held open for the whole
//! run; the server frees it when that connection ends, however the process dies.
//! A lost connection is a lost lock: [`PgLiveness`] lets the gate check it while
//! the run goes on. Connecting is bounded as a whole (TCP, TLS, authentication) by
//! `connect_timeout` and gives way to a stopping signal. Also the pure parser for
//! `postgres://` targets.

use std::fmt;
use std::mem::ManuallyDrop;
use std::net::Ipv6Addr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, TryRecvError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context;
use postgres::{Client, NoTls};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use super::{Done, Interrupted, Liveness, Lock, Marker, MarkerStore, command_line};
use crate::signals;

/// The table `--state postgres://…` keeps markers in (in the connection's search_path).
pub const MARKER_TABLE: &str = "retry_once";

/// How the advisory lock key of a `--once` key is named: this prefix, then the key.
pub const ONCE_LOCK_PREFIX: &str = "retry-once:";

/// Taken while creating the marker table, so concurrent first runs do not race.
const TABLE_LOCK_NAME: &str = "retry-once-table";

/// Used when the URL sets no `connect_timeout`.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a check of a lock's connection may go unanswered before the lock
/// counts as lost (a network cut must not hang the check).
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// The URL parameters accepted after `?`.
const PARAMETERS: &str =
    "sslmode, sslrootcert, connect_timeout, application_name, host, port, user, password, dbname";

/// TLS use, as libpq's `sslmode` names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SslMode {
    /// Plain TCP.
    Disable,
    /// TLS when the server offers it, without checking its certificate.
    #[default]
    Prefer,
    /// TLS or fail, without checking the certificate.
    Require,
    /// TLS, certificate signed by `sslrootcert`; any host name.
    VerifyCa,
    /// TLS, certificate signed by `sslrootcert` and naming the host.
    VerifyFull,
}

impl SslMode {
    fn parse(text: &str) -> Result<SslMode, String> {
        match text {
            "disable" => Ok(SslMode::Disable),
            "prefer" => Ok(SslMode::Prefer),
            "require" => Ok(SslMode::Require),
            "verify-ca" => Ok(SslMode::VerifyCa),
            "verify-full" => Ok(SslMode::VerifyFull),
            other => Err(format!(
                "sslmode={other} is not supported; expected disable, prefer, require, verify-ca or verify-full"
            )),
        }
    }
}

/// A parsed `postgres://` target. Unset fields take libpq-like defaults when connecting.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PgTarget {
    pub user: Option<String>,
    pub password: Option<String>,
    /// A host name or address, or a directory holding the server's Unix socket.
    pub host: Option<String>,
    pub port: Option<u16>,
    pub dbname: Option<String>,
    pub sslmode: SslMode,
    pub sslrootcert: Option<PathBuf>,
    /// `Some(ZERO)`: no limit.
    pub connect_timeout: Option<Duration>,
    pub application_name: Option<String>,
    /// The lock name after `#`.
    pub name: Option<String>,
}

/// Never shows the password.
impl fmt::Display for PgTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("postgres://")?;
        if let Some(user) = &self.user {
            write!(f, "{user}@")?;
        }
        match self.host.as_deref() {
            Some(host) if host.contains(':') => write!(f, "[{host}]")?,
            Some(host) if host.starts_with('/') => write!(f, "{}", host.replace('/', "%2F"))?,
            Some(host) => f.write_str(host)?,
            None => {}
        }
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        if let Some(db) = &self.dbname {
            write!(f, "/{db}")?;
        }
        if let Some(name) = &self.name {
            write!(f, "#{name}")?;
        }
        Ok(())
    }
}

/// Like `Display`: the password is never printed.
impl fmt::Debug for PgTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgTarget")
            .field("url", &self.to_string())
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("sslmode", &self.sslmode)
            .field("sslrootcert", &self.sslrootcert)
            .field("connect_timeout", &self.connect_timeout)
            .field("application_name", &self.application_name)
            .finish()
    }
}

/// What follows `postgres://` or `postgresql://` (scheme in any case).
pub(super) fn strip_scheme(text: &str) -> Option<&str> {
    ["postgres://", "postgresql://"].iter().find_map(|scheme| {
        let head = text.get(..scheme.len())?;
        head.eq_ignore_ascii_case(scheme)
            .then(|| &text[scheme.len()..])
    })
}

/// Parses `[USER[:PASSWORD]@][HOST][:PORT][/DB][?K=V&…][#NAME]`, percent-decoding each part.
pub(super) fn parse_url(rest: &str) -> Result<PgTarget, String> {
    let (rest, fragment) = split(rest, '#');
    let (rest, query) = split(rest, '?');
    let (authority, path) = split(rest, '/');
    let (userinfo, hostport) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    let mut target = PgTarget::default();
    if let Some(userinfo) = userinfo {
        let (user, password) = split(userinfo, ':');
        target.user = non_empty(decode(user, "user")?);
        target.password = password.map(|p| decode(p, "password")).transpose()?;
    }
    (target.host, target.port) = parse_host_port(hostport)?;
    if let Some(path) = path {
        target.dbname = non_empty(decode(path, "database name")?);
    }
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("URL parameter {pair:?} has no =VALUE"))?;
        apply_parameter(&mut target, &decode(key, "parameter")?, decode(value, key)?)?;
    }
    if let Some(fragment) = fragment {
        let name = decode(fragment, "lock name")?;
        if name.is_empty() {
            return Err("empty lock name after #".into());
        }
        target.name = Some(name);
    }
    Ok(target)
}

/// Splits at the first `sep`; the separator is dropped.
fn split(text: &str, sep: char) -> (&str, Option<&str>) {
    match text.split_once(sep) {
        Some((head, tail)) => (head, Some(tail)),
        None => (text, None),
    }
}

fn non_empty(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

/// Percent-decodes `text` (a URL part called `what` in errors) to UTF-8.
fn decode(text: &str, what: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad percent escape in the {what}; expected %XX"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("the {what} is not valid UTF-8 once decoded"))
}

fn parse_host_port(text: &str) -> Result<(Option<String>, Option<u16>), String> {
    if text.contains(',') {
        return Err("several hosts are not supported; give one HOST[:PORT]".into());
    }
    if let Some(rest) = text.strip_prefix('[') {
        let (addr, after) = rest
            .split_once(']')
            .ok_or("an IPv6 address opened with [ is not closed with ]")?;
        addr.parse::<Ipv6Addr>()
            .map_err(|_| format!("[{addr}] is not an IPv6 address"))?;
        let port = match after {
            "" => None,
            _ => Some(parse_port(after.strip_prefix(':').ok_or_else(|| {
                format!("unexpected {after:?} after [{addr}]; expected :PORT")
            })?)?),
        };
        return Ok((Some(addr.to_string()), port));
    }
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) => (host, Some(parse_port(port)?)),
        None => (text, None),
    };
    if host.contains(':') {
        return Err("an IPv6 address goes in brackets: postgres://[::1]:5432/db".into());
    }
    let host = decode(host, "host")?;
    check_host(&host)?;
    Ok((non_empty(host), port))
}

/// A host name or address, or an absolute socket directory (percent-encoded `/`).
fn check_host(host: &str) -> Result<(), String> {
    let name_chars = host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    if host.starts_with('/') || name_chars {
        Ok(())
    } else {
        // The value is not echoed: a misplaced password can end up here.
        Err("the host is not a host name, an address or a socket directory".into())
    }
}

fn parse_port(text: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(port) if port > 0 => Ok(port),
        _ => Err("the port is not a number from 1 to 65535".into()),
    }
}

fn apply_parameter(target: &mut PgTarget, key: &str, value: String) -> Result<(), String> {
    match key {
        "sslmode" => target.sslmode = SslMode::parse(&value)?,
        "sslrootcert" => target.sslrootcert = Some(PathBuf::from(value)),
        "connect_timeout" => {
            let secs = value.parse::<u32>().map_err(|_| {
                format!("connect_timeout={value:?} is not a whole number of seconds")
            })?;
            target.connect_timeout = Some(Duration::from_secs(u64::from(secs)));
        }
        "application_name" => target.application_name = Some(value),
        "host" => {
            check_host(&value)?;
            target.host = non_empty(value);
        }
        "port" => target.port = Some(parse_port(&value)?),
        "user" => target.user = non_empty(value),
        "password" => target.password = Some(value),
        "dbname" => target.dbname = non_empty(value),
        other => {
            return Err(format!(
                "unknown URL parameter {other:?}; accepted: {PARAMETERS}"
            ));
        }
    }
    Ok(())
}

/// The advisory lock key for the name in `$1`: the first 8 bytes of SHA-256 of its
/// UTF-8 bytes, big-endian, as a signed 64-bit integer. Computed by the server, so
/// an operator can run this same expression to find a lock in `pg_locks`.
pub const ADVISORY_KEY_SQL: &str =
    "('x' || left(encode(sha256(convert_to($1::text, 'UTF8')), 'hex'), 16))::bit(64)::bigint";

/// The advisory lock key of `name`, as the server computes it.
fn advisory_key(client: &mut Client, name: &str) -> anyhow::Result<i64> {
    let row = client.query_one(&format!("SELECT {ADVISORY_KEY_SQL}"), &[&name])?;
    Ok(row.get(0))
}

/// Opens one connection, per the URL's `sslmode`. `flag` names the option in errors.
fn connect(target: &PgTarget, flag: &str, application: &str) -> anyhow::Result<Client> {
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
    config
        .user(&user)
        .host(&host)
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

/// The user's login name, libpq's default user.
fn login_name() -> Option<String> {
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|u| u.name)
}

/// The password for this connection from `$PGPASSFILE` or `~/.pgpass`, as libpq reads
/// it: `host:port:db:user:password` lines, `*` matching anything, `\` escaping.
fn pgpass_password(host: &str, port: u16, dbname: &str, user: &str) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pgpass")))?;
    let meta = std::fs::metadata(&path).ok()?;
    if meta.permissions().mode() & 0o077 != 0 {
        crate::report::notice(&format!(
            "ignoring {}: it is readable by group or others; chmod 0600 it",
            path.display()
        ));
        return None;
    }
    let text = std::fs::read_to_string(&path).ok()?;
    let wanted = [
        host.to_string(),
        port.to_string(),
        dbname.into(),
        user.into(),
    ];
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .map(pgpass_fields)
        .find(|fields| {
            fields.len() == 5
                && fields
                    .iter()
                    .zip(&wanted)
                    .all(|(field, want)| field == "*" || field == want)
        })
        .and_then(|mut fields| fields.pop())
}

fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().expect("never empty").extend(chars.next()),
            ':' => fields.push(String::new()),
            c => fields.last_mut().expect("never empty").push(c),
        }
    }
    fields
}

/// rustls with the ring provider; certificate checks as `sslmode` asks.
fn tls_config(target: &PgTarget) -> anyhow::Result<ClientConfig> {
    // Another part of the program may have installed it already; either way one is in place.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()?;
    let config = match target.sslmode {
        SslMode::VerifyFull | SslMode::VerifyCa => {
            let roots = Arc::new(root_certificates(target)?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider).build()?;
            let verifier: Arc<dyn ServerCertVerifier> = if target.sslmode == SslMode::VerifyFull {
                webpki
            } else {
                Arc::new(AnyName(webpki))
            };
            builder
                .dangerous()
                .with_custom_certificate_verifier(verifier)
                .with_no_client_auth()
        }
        _ => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(
                provider.signature_verification_algorithms,
            )))
            .with_no_client_auth(),
    };
    Ok(config)
}

/// `sslrootcert`, else `~/.postgresql/root.crt` (libpq's default).
fn root_certificates(target: &PgTarget) -> anyhow::Result<RootCertStore> {
    let path = target
        .sslrootcert
        .clone()
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".postgresql/root.crt")))
        .context("sslmode=verify-ca/verify-full needs sslrootcert=FILE")?;
    let pem = std::fs::read(&path)
        .with_context(|| format!("cannot read the root certificates {}", path.display()))?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.with_context(|| format!("bad PEM in {}", path.display()))?;
        roots.add(cert)?;
    }
    anyhow::ensure!(!roots.is_empty(), "no certificates in {}", path.display());
    Ok(roots)
}

/// `sslmode=prefer/require`: encryption without authentication, as in libpq.
#[derive(Debug)]
struct AnyCertificate(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// `sslmode=verify-ca`: the chain must verify; the name in it may differ from the host.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// Tries `pg_try_advisory_lock` on one key over `client`.
fn try_advisory_lock(client: &mut Client, key: i64) -> anyhow::Result<bool> {
    let row = client.query_one("SELECT pg_try_advisory_lock($1)", &[&key])?;
    Ok(row.get(0))
}

/// `application_name` for a connection: "retry " and what it is for, within
/// PostgreSQL's 63 bytes.
fn application_name(purpose: &str) -> String {
    let mut name = format!("retry {purpose}");
    while name.len() > 63 {
        name.pop();
    }
    name
}

/// A connection shared by its owner and the thread that checks it.
type Shared = Arc<Conn>;

/// A connection that never holds up the exit: a broken one is left to the kernel
/// to close, a healthy one gets [`CLOSE_BOUND`] to say goodbye to the server.
struct Conn {
    client: Mutex<ManuallyDrop<Client>>,
    /// A check failed: closing it politely could wait on a silent network.
    broken: AtomicBool,
}

/// How long closing a healthy connection may take at exit.
const CLOSE_BOUND: Duration = Duration::from_secs(1);

impl Conn {
    fn new(client: Client) -> Shared {
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
fn lock_client(conn: &Conn) -> MutexGuard<'_, ManuallyDrop<Client>> {
    conn.client.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Checks that the connection a session lock lives on is still there: the server
/// frees the lock when the connection ends (restart, `pg_terminate_backend`, a cut).
pub struct PgLiveness(Shared);

impl Liveness for PgLiveness {
    fn check(&mut self) -> Result<(), String> {
        lock_client(&self.0).is_valid(CHECK_TIMEOUT).map_err(|e| {
            self.0.broken.store(true, Ordering::SeqCst);
            format!("its connection to the server failed a check: {e}")
        })
    }
}

/// `--lock postgres://…#NAME`: a session advisory lock on `advisory_key(NAME)`.
pub struct PgLock {
    client: Shared,
    target: PgTarget,
    key: i64,
}

impl PgLock {
    pub fn connect(target: PgTarget) -> anyhow::Result<PgLock> {
        let name = target.name.clone().unwrap_or_default();
        let mut client = connect(
            &target,
            "--lock",
            &application_name(&format!("--lock {name}")),
        )?;
        let key = advisory_key(&mut client, &name).with_context(|| format!("--lock: {target}"))?;
        Ok(PgLock {
            client: Conn::new(client),
            key,
            target,
        })
    }
}

impl Lock for PgLock {
    fn describe(&self) -> String {
        format!("{} (advisory lock key {})", self.target, self.key)
    }

    fn try_acquire(&mut self) -> anyhow::Result<bool> {
        try_advisory_lock(&mut lock_client(&self.client), self.key)
            .with_context(|| format!("--lock: {}", self.target))
    }

    fn liveness(&self) -> Option<Box<dyn Liveness>> {
        Some(Box::new(PgLiveness(Arc::clone(&self.client))))
    }
}

/// `--state postgres://…`: one committed row per key in [`MARKER_TABLE`].
pub struct PgStore {
    client: Shared,
    target: PgTarget,
}

impl PgStore {
    /// Connects and creates the marker table if it is missing.
    pub fn connect(target: PgTarget) -> anyhow::Result<PgStore> {
        let client = connect(&target, "--state", &application_name("--once"))?;
        let mut store = PgStore {
            client: Conn::new(client),
            target,
        };
        store.ensure_table().with_context(|| {
            format!(
                "--state: cannot create table {MARKER_TABLE} in {}",
                store.target
            )
        })?;
        Ok(store)
    }

    fn ensure_table(&mut self) -> anyhow::Result<()> {
        let mut client = lock_client(&self.client);
        let exists: bool = client
            .query_one("SELECT to_regclass($1) IS NOT NULL", &[&MARKER_TABLE])?
            .get(0);
        if exists {
            return Ok(());
        }
        // Two first runs creating the table at once can collide in the catalog; the lock orders them.
        let mut tx = client.transaction()?;
        tx.execute(
            &format!("SELECT pg_advisory_xact_lock({ADVISORY_KEY_SQL})"),
            &[&TABLE_LOCK_NAME],
        )?;
        tx.batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {MARKER_TABLE} (
                 key text PRIMARY KEY,
                 succeeded_at timestamptz NOT NULL,
                 host text NOT NULL,
                 pid integer NOT NULL,
                 command text NOT NULL,
                 attempts integer NOT NULL
             )"
        ))?;
        tx.commit()?;
        Ok(())
    }
}

impl MarkerStore for PgStore {
    fn describe(&self) -> String {
        format!("table {MARKER_TABLE} at {}", self.target)
    }

    fn find(&mut self, key: &str) -> anyhow::Result<Option<Done>> {
        let sql = format!(
            "SELECT to_char(succeeded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), host
             FROM {MARKER_TABLE} WHERE key = $1"
        );
        let row = lock_client(&self.client)
            .query_opt(&sql, &[&key])
            .with_context(|| format!("--state: {}", self.target))?;
        Ok(row.map(|row| Done {
            succeeded_at: row.get(0),
            host: row.get(1),
            place: self.describe(),
        }))
    }

    fn try_lock_key(&mut self, key: &str) -> anyhow::Result<bool> {
        let name = format!("{ONCE_LOCK_PREFIX}{key}");
        let sql = format!("SELECT pg_try_advisory_lock({ADVISORY_KEY_SQL})");
        let row = lock_client(&self.client)
            .query_one(&sql, &[&name])
            .with_context(|| format!("--state: {}", self.target))?;
        Ok(row.get(0))
    }

    fn key_lock_liveness(&self) -> Option<Box<dyn Liveness>> {
        Some(Box::new(PgLiveness(Arc::clone(&self.client))))
    }

    fn record(&mut self, marker: &Marker) -> anyhow::Result<()> {
        let sql = format!(
            "INSERT INTO {MARKER_TABLE} (key, succeeded_at, host, pid, command, attempts)
             VALUES ($1, now(), $2, $3, $4, $5)
             ON CONFLICT (key) DO UPDATE SET succeeded_at = EXCLUDED.succeeded_at,
                 host = EXCLUDED.host, pid = EXCLUDED.pid, command = EXCLUDED.command,
                 attempts = EXCLUDED.attempts"
        );
        let pid = i32::try_from(marker.pid).unwrap_or(i32::MAX);
        let attempts = i32::try_from(marker.attempts).unwrap_or(i32::MAX);
        // Outside a transaction the statement commits before execute returns.
        lock_client(&self.client).execute(
            &sql,
            &[
                &marker.key,
                &marker.host,
                &pid,
                &command_line(&marker.command),
                &attempts,
            ],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<PgTarget, String> {
        parse_url(strip_scheme(text).expect("a postgres URL"))
    }

    #[test]
    fn a_full_url_is_split_into_its_parts() {
        let t =
            parse("postgres://app:s%40cret@db.example:6543/jobs?sslmode=require#nightly%20report")
                .unwrap();
        assert_eq!(t.user.as_deref(), Some("app"));
        assert_eq!(t.password.as_deref(), Some("s@cret"));
        assert_eq!(t.host.as_deref(), Some("db.example"));
        assert_eq!(t.port, Some(6543));
        assert_eq!(t.dbname.as_deref(), Some("jobs"));
        assert_eq!(t.sslmode, SslMode::Require);
        assert_eq!(t.name.as_deref(), Some("nightly report"));
    }

    #[test]
    fn the_scheme_is_case_insensitive_and_has_two_spellings() {
        assert!(strip_scheme("POSTGRES://h/db").is_some());
        assert!(strip_scheme("postgresql://h/db").is_some());
        assert!(strip_scheme("postgre://h/db").is_none());
        assert!(strip_scheme("pö").is_none());
    }

    #[test]
    fn ipv6_hosts_and_socket_directories() {
        let t = parse("postgres://u@[::1]:5433/db").unwrap();
        assert_eq!((t.host.as_deref(), t.port), (Some("::1"), Some(5433)));
        let t = parse("postgres://u@%2Fvar%2Frun%2Fpostgresql/db").unwrap();
        assert_eq!(t.host.as_deref(), Some("/var/run/postgresql"));
        assert!(parse("postgres://u@::1/db").is_err());
        assert!(parse("postgres://u@[::1/db").is_err());
    }

    #[test]
    fn bad_parts_are_refused_with_a_reason() {
        for (url, says) in [
            ("postgres://u@h:0/db", "port"),
            ("postgres://u@h:99999/db", "port"),
            ("postgres://u@h1,h2/db", "several hosts"),
            ("postgres://u@h/db?sslmode=allow", "sslmode"),
            ("postgres://u@h/db?sslcert=x", "unknown URL parameter"),
            ("postgres://u@h/db?sslmode", "=VALUE"),
            ("postgres://u@h/db#", "empty lock name"),
            ("postgres://u@h/db%zz", "percent"),
            ("postgres://u@h/db%ff", "UTF-8"),
            ("postgres://u@h o/db", "host"),
        ] {
            let err = parse(url).unwrap_err();
            assert!(err.contains(says), "{url}: {err}");
        }
    }

    #[test]
    fn errors_never_echo_what_may_be_a_password() {
        // An unescaped '/' in the password makes it look like a host and port.
        for url in [
            "postgres://app:hunter2/x@h/db",
            "postgres://app:x@h:hunter2/db",
            "postgres://u@hunter2 x/db",
        ] {
            let err = parse(url).unwrap_err();
            assert!(!err.contains("hunter2"), "{url}: {err}");
        }
    }

    #[test]
    fn the_password_is_never_displayed() {
        let t = parse("postgres://app:hunter2@h:5432/db?password=hunter3#job").unwrap();
        assert_eq!(t.to_string(), "postgres://app@h:5432/db#job");
        assert!(!format!("{t:?}").contains("hunter"));
    }

    #[test]
    fn pgpass_lines_are_split_with_escapes() {
        assert_eq!(
            pgpass_fields(r"db\:1:*:jobs:app:pa\\ss:x"),
            ["db:1", "*", "jobs", "app", r"pa\ss", "x"]
        );
    }

    #[test]
    fn application_names_fit_postgres() {
        assert!(application_name(&"x".repeat(100)).len() <= 63);
    }
}
