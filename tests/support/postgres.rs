//! A throwaway PostgreSQL server for tests: `initdb` and `pg_ctl` in a temporary
//! directory, listening on 127.0.0.1 only, on a free port, with its socket in the
//! same directory, stopped and removed on drop. Run as `nobody` when the tests run
//! as root (PostgreSQL refuses to run as root), as the current user otherwise.
//!
//! Every PostgreSQL test runs twice (the [`both_ways!`](crate::both_ways) macro): once
//! against the server directly and once through Debian's `pgbouncer` in transaction
//! mode with a pool of two server connections, so that clients share server sessions
//! as they do in production. `url` names whichever the test runs through;
//! `direct_url` and `client` always reach the server itself, for the test's own looks.
//!
//! Without PostgreSQL installed, `start` prints a loud SKIPPED line and returns
//! `None`, unless `RETRY_TEST_REQUIRE_POSTGRES=1`, when it panics instead; likewise
//! for pgbouncer.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The role the tests connect as (trust authentication, loopback only).
pub const USER: &str = "postgres";

/// The roles a test may connect as through the pooler (its auth file lists them).
pub const ROLES: [&str; 4] = [USER, "plain", "limited", "app"];

/// How a test reaches the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    Direct,
    /// PgBouncer in transaction mode, `default_pool_size = 2`.
    Pooler,
}

/// What the server should offer besides plain TCP.
#[derive(Clone, Copy)]
pub struct Options {
    /// TLS with a self-signed certificate for `localhost`, written to `cert_path()`
    /// (and offered by the pooler too).
    pub tls: bool,
    pub via: Via,
    /// The server's `max_connections` (3 of them reserved for superusers).
    pub max_connections: u32,
    /// The pooler's `max_client_conn`.
    pub max_client_conn: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            tls: false,
            via: Via::Direct,
            max_connections: 100,
            max_client_conn: 200,
        }
    }
}

impl Options {
    /// A server that takes 12 connections (9 for roles that are not superusers) and a
    /// pooler that takes 8 clients: a fleet of a few dozen runs outgrows them.
    pub fn small() -> Options {
        Options {
            max_connections: 12,
            max_client_conn: 8,
            ..Options::default()
        }
    }
}

pub struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    run_as: Option<String>,
    /// The server's own port.
    pub port: u16,
    pub via: Via,
    pooler: Option<Pooler>,
}

/// Runs a PostgreSQL test twice, as `NAME::direct` and `NAME::pooled`: the body gets
/// `pg`, a server reached directly or through PgBouncer in transaction mode.
/// `fn NAME(pg, OPTIONS)` starts it with other [`Options`] (e.g. `Options::small()`).
#[macro_export]
macro_rules! both_ways {
    ($(#[$meta:meta])* fn $name:ident($pg:ident) $body:block) => {
        $crate::both_ways! {
            $(#[$meta])*
            fn $name($pg, $crate::support::postgres::Options::default()) $body
        }
    };
    ($(#[$meta:meta])* fn $name:ident($pg:ident, $options:expr) $body:block) => {
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            fn body($pg: $crate::support::postgres::Postgres) $body

            fn server_for_this_test(via: $crate::support::postgres::Via) -> Option<$crate::support::postgres::Postgres> {
                let options = $crate::support::postgres::Options { via, ..$options };
                $crate::support::postgres::start_with(stringify!($name), options)
            }

            #[test]
            fn direct() {
                if let Some(pg) = server_for_this_test($crate::support::postgres::Via::Direct) {
                    body(pg);
                }
            }

            #[test]
            fn pooled() {
                if let Some(pg) = server_for_this_test($crate::support::postgres::Via::Pooler) {
                    body(pg);
                }
            }
        }
    };
}

/// Starts a server for `test`, reached directly, or says loudly why not and returns
/// `None`. Only for tests that can run directly alone (they need one particular
/// server session); every other test uses [`both_ways!`](crate::both_ways).
pub fn start(test: &str) -> Option<Postgres> {
    start_with(test, Options::default())
}

/// Starts a server for `test`, reached `via` the pooler or not.
pub fn start_via(test: &str, via: Via) -> Option<Postgres> {
    start_with(
        test,
        Options {
            via,
            ..Options::default()
        },
    )
}

pub fn start_with(test: &str, options: Options) -> Option<Postgres> {
    let Some(bin) = find_bin() else {
        let why =
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb, no initdb on PATH)";
        return skip(test, why, "postgresql");
    };
    if options.via == Via::Pooler && find_pgbouncer().is_none() {
        return skip(test, "pgbouncer is not installed", "pgbouncer");
    }
    check_dev_null();
    Some(Postgres::start(bin, options))
}

/// Says loudly why `test` does not run, or panics when PostgreSQL tests are mandatory.
fn skip(test: &str, why: &str, package: &str) -> Option<Postgres> {
    if std::env::var("RETRY_TEST_REQUIRE_POSTGRES").is_ok_and(|v| v == "1") {
        panic!("{test}: {why}, and RETRY_TEST_REQUIRE_POSTGRES=1 makes PostgreSQL tests mandatory");
    }
    super::system::say_skipped(&format!(
        "{test}: {why}; install {package}, or RETRY_TEST_REQUIRE_POSTGRES=1 makes this a failure"
    ));
    None
}

fn find_pgbouncer() -> Option<PathBuf> {
    ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// initdb and pg_ctl redirect to /dev/null; say so plainly when it is not the device.
fn check_dev_null() {
    use std::os::unix::fs::FileTypeExt;
    let device = std::fs::metadata("/dev/null").is_ok_and(|m| m.file_type().is_char_device());
    assert!(
        device,
        "/dev/null is not the null device (something renamed a file over it); \
         restore it with: rm /dev/null && mknod -m 666 /dev/null c 1 3"
    );
}

/// The newest `/usr/lib/postgresql/<version>/bin` with initdb, else initdb's directory on PATH.
fn find_bin() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .find(|dir| dir.join("initdb").exists() && dir.join("pg_ctl").exists())
}

impl Postgres {
    fn start(bin: PathBuf, options: Options) -> Postgres {
        let dir = tempfile::Builder::new()
            .prefix("retry-pg-")
            .tempdir()
            .expect("temporary directory");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let run_as = nix::unistd::getuid()
            .is_root()
            .then(|| "nobody".to_string());
        let mut pg = Postgres {
            dir,
            bin,
            run_as,
            port: 0,
            via: options.via,
            pooler: None,
        };
        for sub in ["data", "sock"] {
            std::fs::create_dir(pg.path(sub)).unwrap();
            pg.give_to_server_user(&pg.path(sub));
        }
        std::fs::set_permissions(pg.path("data"), std::fs::Permissions::from_mode(0o700)).unwrap();
        pg.initdb();
        if options.tls {
            pg.make_certificate();
        }
        pg.start_on_a_free_port(options);
        if options.via == Via::Pooler {
            pg.pooler = Some(Pooler::start(&pg, options));
        }
        pg
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn give_to_server_user(&self, path: &Path) {
        if let Some(name) = &self.run_as {
            let user = nix::unistd::User::from_name(name)
                .unwrap()
                .unwrap_or_else(|| panic!("no user {name} to run PostgreSQL as"));
            std::os::unix::fs::chown(path, Some(user.uid.as_raw()), Some(user.gid.as_raw()))
                .unwrap();
        }
    }

    /// A command run as the server's user, from the temporary directory.
    fn server_command(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        let mut cmd = match &self.run_as {
            Some(user) => {
                let mut cmd = Command::new("runuser");
                cmd.args(["-u", user, "--"]).arg(program);
                cmd
            }
            None => Command::new(program),
        };
        cmd.current_dir(self.dir.path())
            .env("LC_ALL", "C")
            .env_remove("PGDATA");
        cmd
    }

    fn initdb(&self) {
        let out = self
            .server_command("initdb")
            .arg("-D")
            .arg(self.path("data"))
            .args([
                "-U",
                USER,
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .output()
            .expect("run initdb");
        check("initdb", &out);
    }

    /// A self-signed certificate for `localhost` (ECDSA P-256), readable by the server only.
    fn make_certificate(&self) {
        let config = self.path("openssl.cnf");
        std::fs::write(
            &config,
            "[req]\ndistinguished_name = dn\nx509_extensions = ext\nprompt = no\n\
             [dn]\nCN = localhost\n\
             [ext]\nbasicConstraints = critical,CA:FALSE\nsubjectAltName = DNS:localhost\n\
             keyUsage = critical,digitalSignature\nextendedKeyUsage = serverAuth\n",
        )
        .unwrap();
        let out = Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
            ])
            .args(["-nodes", "-days", "2", "-config"])
            .arg(&config)
            .arg("-keyout")
            .arg(self.path("sock/server.key"))
            .arg("-out")
            .arg(self.cert_path())
            .output()
            .expect("run openssl (needed for the TLS test)");
        check("openssl req", &out);
        let key = self.path("sock/server.key");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        self.give_to_server_user(&key);
    }

    /// The server's certificate, to pass as `sslrootcert`.
    pub fn cert_path(&self) -> PathBuf {
        self.path("server.crt")
    }

    fn start_on_a_free_port(&mut self, options: Options) {
        let mut last = None;
        for _ in 0..5 {
            self.port = super::ports::free_port();
            let mut settings = format!(
                "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off -c max_connections={}",
                self.port,
                self.path("sock").display(),
                options.max_connections
            );
            if options.tls {
                settings.push_str(&format!(
                    " -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
                    self.cert_path().display(),
                    self.path("sock/server.key").display()
                ));
            }
            let out = self.pg_ctl(&["-w", "-t", "60", "-o", &settings, "start"]);
            if out.status.success() {
                return;
            }
            // Another process may have taken the port between our probe and the server's bind.
            last = Some(out);
        }
        let log = std::fs::read_to_string(self.path("sock/server.log")).unwrap_or_default();
        check("pg_ctl start", &last.unwrap());
        panic!("PostgreSQL did not start:\n{log}");
    }

    /// `pg_ctl -D DATA -l LOG ARGS` as the server's user.
    fn pg_ctl(&self, args: &[&str]) -> Output {
        self.server_command("pg_ctl")
            .arg("-D")
            .arg(self.path("data"))
            .arg("-l")
            .arg(self.path("sock/server.log"))
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("run pg_ctl {args:?}: {e}"))
    }

    /// `pg_ctl restart -m fast`: every connection is closed (and every session lock
    /// freed); returns once the server accepts connections again.
    pub fn restart(&self) {
        let out = self.pg_ctl(&["-m", "fast", "-w", "-t", "60", "restart"]);
        check("pg_ctl restart", &out);
    }

    /// Ends every backend of `retry` (`application_name` starting with "retry") with
    /// `pg_terminate_backend`; returns how many there were.
    pub fn terminate_retry_backends(&self) -> i64 {
        self.client()
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                 WHERE application_name LIKE 'retry%' AND pid <> pg_backend_pid()",
                &[],
            )
            .get(0)
    }

    /// The lease row `name` (`lock:NAME`, `once:KEY`): holder, token, and whether it is
    /// held now, by the server's clock.
    pub fn lease(&self, name: &str) -> Option<Lease> {
        self.client()
            .query_opt(
                "SELECT holder, token, expires_at > now(),
                        extract(epoch FROM expires_at)::float8 - extract(epoch FROM now())::float8
                 FROM retry_lease WHERE name = $1",
                &[&name],
            )
            .map(|row| Lease {
                holder: row.get(0),
                token: row.get(1),
                held: row.get(2),
                expires_in: row.get(3),
            })
    }

    /// The port a test connects to: the pooler's, or the server's.
    pub fn port(&self) -> u16 {
        self.pooler.as_ref().map_or(self.port, |p| p.port)
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres` followed by `rest` (e.g. `#lock`),
    /// through the pooler when the test runs through it.
    pub fn url(&self, rest: &str) -> String {
        self.url_as(USER, rest)
    }

    /// [`url`](Self::url) for another role (one of [`ROLES`]).
    pub fn url_as(&self, user: &str, rest: &str) -> String {
        format!("postgres://{user}@127.0.0.1:{}/postgres{rest}", self.port())
    }

    /// The server itself, never through the pooler.
    pub fn direct_url(&self, rest: &str) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/postgres{rest}", self.port)
    }

    /// A plain connection to the server itself, for the test's own queries.
    pub fn client(&self) -> Client {
        Client::connect(&format!(
            "host=127.0.0.1 port={} user={USER} dbname=postgres",
            self.port
        ))
    }
}

impl Postgres {
    /// Stops (SIGSTOP) the postmaster: the server accepts no new connection (the kernel
    /// still completes the TCP handshake, and nothing answers the startup), while the
    /// sessions already open go on. It is continued when the guard drops.
    pub fn stop_server(&self) -> Stopped {
        let pid_file = std::fs::read_to_string(self.path("data/postmaster.pid")).unwrap();
        let pid: i32 = pid_file.lines().next().unwrap().trim().parse().unwrap();
        let pid = nix::unistd::Pid::from_raw(pid);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
        Stopped(pid)
    }

    /// Checks, sampling for `during`, that none of the runs `pids` has a connection
    /// open to the server (or the pooler) and, directly, that the server sees no
    /// session of retry's: what a fleet of runs whose commands are running costs it.
    #[track_caller]
    pub fn assert_no_connection_of(&self, pids: &[u32], during: std::time::Duration) {
        let pids: Vec<i32> = pids.iter().map(|p| *p as i32).collect();
        let client = self.client();
        let start = std::time::Instant::now();
        let mut samples = 0;
        while start.elapsed() < during || samples < 3 {
            let open = super::tcp_connections_of(&pids, self.port());
            assert_eq!(
                open, 0,
                "connections of the runs open while their commands run"
            );
            if self.via == Via::Direct {
                let sessions: i64 = client.query_one(RETRY_SESSIONS, &[]).get(0);
                assert_eq!(sessions, 0, "sessions of retry open on the server");
            }
            samples += 1;
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// A role that may log in and create tables in `public`, but is no superuser: it
    /// gets the connections that `superuser_reserved_connections` leaves, and the
    /// test's own client (a superuser) always finds a slot.
    pub fn add_role(&self, name: &str) {
        self.client().batch_execute(&format!(
            "CREATE ROLE {name} LOGIN; GRANT CREATE ON SCHEMA public TO {name};"
        ));
    }

    /// The server's log and, through the pooler, the pooler's.
    pub fn logs(&self) -> String {
        let read = |name: &str| std::fs::read_to_string(self.path(name)).unwrap_or_default();
        read("sock/server.log") + &read("sock/pgbouncer.log")
    }
}

/// How many sessions of retry's the server has open.
const RETRY_SESSIONS: &str =
    "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'retry%'";

/// The server stopped with SIGSTOP; continued on drop.
pub struct Stopped(nix::unistd::Pid);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(self.0, nix::sys::signal::Signal::SIGCONT);
    }
}

/// A lease row, as the test sees it.
#[derive(Debug)]
pub struct Lease {
    pub holder: String,
    pub token: i64,
    pub held: bool,
    /// Seconds until it expires by the server's clock (negative: expired).
    pub expires_in: f64,
}

/// A synchronous client for the tests' own queries, on tokio-postgres (the one
/// PostgreSQL client crate of the project).
pub struct Client {
    runtime: tokio::runtime::Runtime,
    client: tokio_postgres::Client,
}

type Params<'a> = &'a [&'a (dyn tokio_postgres::types::ToSql + Sync)];

impl Client {
    pub fn connect(config: &str) -> Client {
        Client::try_connect(config).expect("connect to the test server")
    }

    pub fn try_connect(config: &str) -> Result<Client, tokio_postgres::Error> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = runtime.block_on(async {
            let (client, connection) =
                tokio_postgres::connect(config, tokio_postgres::NoTls).await?;
            tokio::spawn(async move {
                let _ = connection.await;
            });
            Ok::<_, tokio_postgres::Error>(client)
        })?;
        Ok(Client { runtime, client })
    }

    pub fn query(&self, sql: &str, params: Params<'_>) -> Vec<tokio_postgres::Row> {
        self.try_query(sql, params)
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    pub fn try_query(
        &self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Vec<tokio_postgres::Row>, tokio_postgres::Error> {
        self.runtime.block_on(self.client.query(sql, params))
    }

    pub fn query_one(&self, sql: &str, params: Params<'_>) -> tokio_postgres::Row {
        let mut rows = self.query(sql, params);
        assert_eq!(rows.len(), 1, "{sql}: one row expected");
        rows.pop().unwrap()
    }

    pub fn query_opt(&self, sql: &str, params: Params<'_>) -> Option<tokio_postgres::Row> {
        self.try_query(sql, params).ok()?.pop()
    }

    pub fn execute(&self, sql: &str, params: Params<'_>) -> u64 {
        self.runtime
            .block_on(self.client.execute(sql, params))
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    pub fn batch_execute(&self, sql: &str) {
        self.runtime
            .block_on(self.client.batch_execute(sql))
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }
}

/// PgBouncer in front of the server, as production runs it: transaction
/// mode, two server connections per pool, 200 clients, the startup parameters that
/// clients send and PgBouncer does not track ignored.
struct Pooler {
    child: std::process::Child,
    port: u16,
}

/// `pgbouncer INI` as the server's user.
fn pooler_command(pg: &Postgres, ini: &Path) -> Command {
    let mut cmd = match &pg.run_as {
        Some(user) => {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", user, "--", "pgbouncer"]);
            cmd
        }
        None => Command::new("pgbouncer"),
    };
    cmd.arg(ini)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    cmd
}

/// Waits (up to 10 s) until `child` listens on `port`; `false` when it exited first
/// or never did.
fn pooler_listens(child: &mut std::process::Child, port: u16) -> bool {
    let mut exited = false;
    let listens = super::wait_until(std::time::Duration::from_secs(10), || {
        exited = matches!(child.try_wait(), Ok(Some(_)));
        exited || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    listens && !exited
}

impl Pooler {
    fn start(pg: &Postgres, options: Options) -> Pooler {
        let sock = pg.path("sock");
        let users: String = ROLES.iter().map(|r| format!("\"{r}\" \"\"\n")).collect();
        std::fs::write(sock.join("userlist.txt"), users).unwrap();
        let mut last = String::new();
        for _ in 0..5 {
            let port = super::ports::free_port();
            let mut config = format!(
                "[databases]\n* = host=127.0.0.1 port={server}\n\
                 [pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\n\
                 unix_socket_dir =\nauth_type = trust\nauth_file = {auth}\n\
                 pool_mode = transaction\ndefault_pool_size = 2\nmax_client_conn = {clients}\n\
                 ignore_startup_parameters = extra_float_digits,options,application_name\n\
                 logfile = {log}\npidfile = {pid}\n",
                server = pg.port,
                clients = options.max_client_conn,
                auth = sock.join("userlist.txt").display(),
                log = sock.join("pgbouncer.log").display(),
                pid = sock.join("pgbouncer.pid").display(),
            );
            if options.tls {
                config.push_str(&format!(
                    "client_tls_sslmode = allow\nclient_tls_key_file = {}\nclient_tls_cert_file = {}\n",
                    sock.join("server.key").display(),
                    pg.cert_path().display()
                ));
            }
            let ini = sock.join("pgbouncer.ini");
            std::fs::write(&ini, config).unwrap();
            pg.give_to_server_user(&ini);
            let mut child = pooler_command(pg, &ini).spawn().expect("start pgbouncer");
            if pooler_listens(&mut child, port) {
                return Pooler { child, port };
            }
            let _ = child.kill();
            let _ = child.wait();
            last = std::fs::read_to_string(sock.join("pgbouncer.log")).unwrap_or_default();
        }
        panic!("pgbouncer did not start:\n{last}");
    }
}

impl Pooler {
    /// Stops pgbouncer (SIGTERM: it closes every client's connection at once) and
    /// waits for it to exit.
    fn stop(&mut self) {
        // runuser passes SIGTERM on to pgbouncer.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.child.wait();
    }
}

impl Drop for Pooler {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Postgres {
    /// Restarts what the test connects through: pgbouncer (stopped, every client's
    /// connection closed under it, and started again on the same port), or the server
    /// itself ([`restart`](Self::restart)). Returns once it accepts connections again.
    pub fn restart_the_way_in(&mut self) {
        let Some(mut pooler) = self.pooler.take() else {
            self.restart();
            return;
        };
        pooler.stop();
        let ini = self.path("sock/pgbouncer.ini");
        let mut child = pooler_command(self, &ini)
            .spawn()
            .expect("restart pgbouncer");
        let listens = pooler_listens(&mut child, pooler.port);
        let log = std::fs::read_to_string(self.path("sock/pgbouncer.log")).unwrap_or_default();
        pooler.child = child;
        self.pooler = Some(pooler);
        assert!(listens, "pgbouncer did not start again:\n{log}");
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        drop(self.pooler.take());
        let _ = self
            .server_command("pg_ctl")
            .arg("-D")
            .arg(self.path("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }
}

fn check(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
