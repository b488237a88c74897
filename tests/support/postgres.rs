//! A throwaway PostgreSQL server for tests: `initdb` and `pg_ctl` in a temporary
//! directory, listening on 127.0.0.1 only, on a free port, with its socket in the
//! same directory, stopped and removed on drop. Run as `nobody` when the tests run
//! as root (PostgreSQL refuses to run as root), as the current user otherwise.
//!
//! Without PostgreSQL installed, `start` prints a loud SKIPPED line and returns
//! `None`, unless `RETRY_TEST_REQUIRE_POSTGRES=1`, when it panics instead.

#![allow(dead_code)]

use std::io::Write;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The role the tests connect as (trust authentication, loopback only).
pub const USER: &str = "postgres";

/// What the server should offer besides plain TCP.
#[derive(Clone, Copy, Default)]
pub struct Options {
    /// TLS with a self-signed certificate for `localhost`, written to `cert_path()`.
    pub tls: bool,
}

pub struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    run_as: Option<String>,
    pub port: u16,
}

/// Starts a server for `test`, or says loudly why not and returns `None`.
pub fn start(test: &str) -> Option<Postgres> {
    start_with(test, Options::default())
}

pub fn start_with(test: &str, options: Options) -> Option<Postgres> {
    let Some(bin) = find_bin() else {
        let why =
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb, no initdb on PATH)";
        if std::env::var("RETRY_TEST_REQUIRE_POSTGRES").is_ok_and(|v| v == "1") {
            panic!(
                "{test}: {why}, and RETRY_TEST_REQUIRE_POSTGRES=1 makes PostgreSQL tests mandatory"
            );
        }
        // Straight to stderr, past the test harness's capture, so a skip is never silent.
        let _ = writeln!(
            std::io::stderr(),
            "\n*** SKIPPED {test}: {why}; install postgresql or set RETRY_TEST_REQUIRE_POSTGRES=1 to fail instead ***\n"
        );
        return None;
    };
    check_dev_null();
    Some(Postgres::start(bin, options))
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
            self.port = free_port();
            let mut settings = format!(
                "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off -c max_connections=100",
                self.port,
                self.path("sock").display()
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

    /// Ends the backends whose `application_name` is `name` with
    /// `pg_terminate_backend`; returns how many there were.
    pub fn terminate(&self, name: &str) -> i64 {
        self.client()
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                 WHERE application_name = $1",
                &[&name],
            )
            .expect("terminate backends")
            .get(0)
    }

    /// Whether a backend named `name` holds an advisory lock (granted, not waiting).
    pub fn holds_advisory_lock(&self, name: &str) -> bool {
        self.client()
            .query_one(
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                 WHERE a.application_name = $1 AND l.locktype = 'advisory' AND l.granted",
                &[&name],
            )
            .expect("look at pg_locks")
            .get::<_, i64>(0)
            > 0
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres` followed by `rest` (e.g. `#lock`).
    pub fn url(&self, rest: &str) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/postgres{rest}", self.port)
    }

    /// A plain connection for the test's own queries.
    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(
            &format!(
                "host=127.0.0.1 port={} user={USER} dbname=postgres",
                self.port
            ),
            postgres::NoTls,
        )
        .expect("connect to the test server")
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = self
            .server_command("pg_ctl")
            .arg("-D")
            .arg(self.path("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    listener.local_addr().unwrap().port()
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
