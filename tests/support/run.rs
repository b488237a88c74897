//! The one way the tests start a program: an [`Invocation`] (arguments, environment,
//! stdin) that runs to a [`Run`]. `retry()` starts one for the binary under test.

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::SigHandler;
use nix::sys::signal::Signal::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};

/// The binary under test: cargo's build of it, or the one `RETRY_TEST_BIN` names (CI runs
/// the tests that touch name resolution and the network against the statically linked
/// release build this way).
pub fn bin() -> &'static str {
    static BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        std::env::var("RETRY_TEST_BIN")
            .ok()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_retry").to_string())
    })
}

/// Whether the binary under test is an optimized build (a release build named by
/// `RETRY_TEST_BIN`, as CI's static one is), whose memory figures are the product's: a
/// debug build maps and touches much more of itself.
pub fn optimized_build() -> bool {
    let bin = bin();
    !bin.contains("/debug/")
}

/// The binary under test at a path every user may run: [`bin`] itself when every
/// directory on its way lets others through, or else (a build under /root) one copy,
/// mode 755, in a directory of its own under /tmp made once per test process.
pub fn bin_for_anyone() -> &'static str {
    use std::os::unix::fs::PermissionsExt;
    static SHARED: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SHARED.get_or_init(|| {
        let path = std::path::Path::new(bin());
        let others_may = |p: &std::path::Path| {
            std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o001 != 0)
        };
        if path.ancestors().all(others_may) {
            return bin().to_string();
        }
        let dir = tempfile::Builder::new()
            .prefix("retry-bin-")
            .tempdir_in("/tmp")
            .expect("a directory under /tmp")
            .keep();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let copy = dir.join("retry");
        std::fs::copy(path, &copy).expect("copy the binary under test");
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
        copy.to_string_lossy().into_owned()
    })
}

/// Backoff that keeps a test fast: 1 ms growing to at most 5 ms.
pub const FAST: [&str; 4] = ["--delay", "1ms", "--max-delay", "5ms"];

/// Environment that would change where requests go, how many attempts run or
/// what retry prints (nesting, CI annotations, proxies, curl's own settings).
pub const CLEARED_ENV: &[&str] = &[
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "CURL_HOME",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "RETRY_DEPTH",
    "RETRY_ATTEMPT",
    "GITHUB_ACTIONS",
    // Tracing is on only where a test turns it on.
    "TRACEPARENT",
    "TRACESTATE",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_SDK_DISABLED",
    "OTEL_TRACES_EXPORTER",
    "OTEL_TRACES_SAMPLER",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
];

/// `retry` with the environment of [`CLEARED_ENV`] removed and an empty stdin.
pub fn retry() -> Invocation {
    Invocation::of(bin())
}

/// Runs `retry ARGS` to completion.
pub fn run(args: &[&str]) -> Run {
    retry().args(args).run()
}

/// [`FAST`] followed by `extra`: the arguments of a quick run.
pub fn fast<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut v: Vec<&str> = FAST.to_vec();
    v.extend_from_slice(extra);
    v
}

/// A program about to run, built up like `std::process::Command`.
pub struct Invocation {
    command: Command,
    input: Option<Vec<u8>>,
    /// Whether a test chose where stdout and stderr go; `run` captures them otherwise.
    stdout_chosen: bool,
    stderr_chosen: bool,
}

impl Invocation {
    /// `program` with a cleared environment, an empty stdin, and the signals that stop
    /// retry at their default.
    pub fn of(program: impl AsRef<OsStr>) -> Invocation {
        let mut command = Command::new(program);
        for var in CLEARED_ENV {
            command.env_remove(var);
        }
        // State a test does not place itself (fencing counters of a --lock without
        // --state) goes under the tests' own temporary directory, never the user's home.
        command.env("XDG_STATE_HOME", tests_state_home());
        command.stdin(Stdio::null());
        // As from an interactive shell, even when the tests themselves run under nohup
        // or as a background job of a script (SIGHUP, or SIGINT and SIGQUIT, ignored):
        // retry keeps a stopping signal it was started with ignored.
        // SAFETY: signal(2) with SIG_DFL runs no code of ours and allocates nothing, as
        // the child of a fork in a process with other threads must keep to.
        unsafe {
            command.pre_exec(|| {
                for sig in [SIGHUP, SIGINT, SIGQUIT, SIGTERM] {
                    nix::sys::signal::signal(sig, SigHandler::SigDfl)?;
                }
                Ok(())
            });
        }
        Invocation {
            command,
            input: None,
            stdout_chosen: false,
            stderr_chosen: false,
        }
    }

    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Self {
        self.command.arg(arg);
        self
    }

    pub fn args<S: AsRef<OsStr>>(&mut self, args: impl IntoIterator<Item = S>) -> &mut Self {
        self.command.args(args);
        self
    }

    /// Adds [`FAST`] backoff.
    pub fn fast(&mut self) -> &mut Self {
        self.args(FAST)
    }

    /// Adds `-- sh -c SCRIPT`: the command is a shell script (`.arg` adds its `$0`,
    /// `$1`, …).
    pub fn sh(&mut self, script: &str) -> &mut Self {
        self.args(["--", "sh", "-c", script])
    }

    /// Adds `--report PATH`: retry writes its JSON report there.
    pub fn report(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.arg("--report").arg(path.as_ref())
    }

    pub fn env(&mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Self {
        self.command.env(name, value);
        self
    }

    pub fn env_remove(&mut self, name: impl AsRef<OsStr>) -> &mut Self {
        self.command.env_remove(name);
        self
    }

    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.command.current_dir(dir);
        self
    }

    pub fn stdin(&mut self, stdin: impl Into<Stdio>) -> &mut Self {
        self.command.stdin(stdin);
        self
    }

    pub fn stdout(&mut self, stdout: impl Into<Stdio>) -> &mut Self {
        self.command.stdout(stdout);
        self.stdout_chosen = true;
        self
    }

    pub fn stderr(&mut self, stderr: impl Into<Stdio>) -> &mut Self {
        self.command.stderr(stderr);
        self.stderr_chosen = true;
        self
    }

    /// Bytes for the program's stdin, written from a thread so a large input
    /// cannot block the run.
    pub fn input(&mut self, bytes: impl Into<Vec<u8>>) -> &mut Self {
        self.input = Some(bytes.into());
        self.command.stdin(Stdio::piped());
        self
    }

    /// Starts the program and returns at once; stdin is fed as with [`Self::run`].
    pub fn spawn(&mut self) -> Child {
        let mut child = self.command.spawn().expect("start the program");
        if let Some(bytes) = self.input.clone() {
            let mut pipe = child.stdin.take().expect("piped stdin");
            std::thread::spawn(move || {
                // A program that exits without reading all of it is not an error here.
                let _ = pipe.write_all(&bytes);
            });
        }
        child
    }

    /// Starts the program with stdout and stderr captured, for a test that signals
    /// or waits on it itself (see [`wait_for_run`]).
    pub fn start(&mut self) -> Child {
        self.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()
    }

    /// Runs the program to completion, capturing stdout and stderr unless a test
    /// sent them elsewhere.
    pub fn run(&mut self) -> Run {
        let start = Instant::now();
        if !self.stdout_chosen {
            self.command.stdout(Stdio::piped());
        }
        if !self.stderr_chosen {
            self.command.stderr(Stdio::piped());
        }
        finish(self.spawn(), start)
    }
}

/// How long the output of a program that has exited is read for: a leftover process
/// that holds its pipes must not hold the test (what it wrote by then is kept).
const DRAIN: Duration = Duration::from_secs(5);
/// Longest any run of a test may take: one that hangs is killed and fails its test,
/// rather than holding the whole suite.
const RUN_LIMIT: Duration = Duration::from_secs(240);

/// Waits for `child` itself to exit and reads its captured output; `elapsed` is from
/// `start` to the exit, not to the end of the pipes, which a leftover process may hold.
pub fn finish(mut child: Child, start: Instant) -> Run {
    use std::io::Read;
    use std::sync::{Arc, Mutex};
    let reader = |pipe: Option<Box<dyn Read + Send>>| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let done = pipe.map(|mut pipe| {
            let buffer = Arc::clone(&buffer);
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let mut chunk = [0u8; 8192];
                while let Ok(n) = pipe.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    buffer.lock().unwrap().extend_from_slice(&chunk[..n]);
                }
                let _ = tx.send(());
            });
            rx
        });
        (buffer, done)
    };
    let (stdout, stdout_done) = reader(child.stdout.take().map(|p| Box::new(p) as _));
    let (stderr, stderr_done) = reader(child.stderr.take().map(|p| Box::new(p) as _));
    let (exited, watching) = std::sync::mpsc::channel::<()>();
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let watchdog = std::thread::spawn(move || {
        let hung = watching.recv_timeout(RUN_LIMIT).is_err();
        if hung {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        }
        hung
    });
    let status = child.wait().expect("wait for the program");
    let elapsed = start.elapsed();
    let _ = exited.send(());
    assert!(
        !watchdog.join().unwrap_or(false),
        "the program did not exit within {RUN_LIMIT:?}: killed"
    );
    let drained = Instant::now() + DRAIN;
    for done in [stdout_done, stderr_done].into_iter().flatten() {
        let _ = done.recv_timeout(drained.saturating_duration_since(Instant::now()));
    }
    let taken = |b: &Arc<Mutex<Vec<u8>>>| std::mem::take(&mut *b.lock().unwrap());
    Run {
        status: status_of(&status),
        stdout: taken(&stdout),
        stderr: String::from_utf8_lossy(&taken(&stderr)).into_owned(),
        elapsed,
    }
}

/// One state directory for the whole test process, removed with it by the OS's
/// temporary-file cleaning (it lives under the temporary directory).
fn tests_state_home() -> &'static std::path::Path {
    static HOME: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        tempfile::Builder::new()
            .prefix("retry-tests-state-")
            .tempdir()
            .expect("a temporary directory")
    })
    .path()
}

/// A finished run.
#[derive(Debug)]
pub struct Run {
    /// Exit code, or 128+N for death by signal N.
    pub status: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Run {
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Fails, quoting stdout, unless stdout contains `text`.
    #[track_caller]
    pub fn assert_stdout_has(&self, text: &str) {
        let stdout = self.stdout_text();
        assert!(stdout.contains(text), "{stdout}");
    }

    /// Fails, quoting stdout, if stdout contains `text`.
    #[track_caller]
    pub fn assert_stdout_lacks(&self, text: &str) {
        let stdout = self.stdout_text();
        assert!(!stdout.contains(text), "{stdout}");
    }

    /// Fails, quoting stderr, unless stderr contains `text`.
    #[track_caller]
    pub fn assert_stderr_has(&self, text: &str) {
        assert!(self.stderr.contains(text), "{}", self.stderr);
    }

    /// Fails, quoting stderr, if stderr contains `text`.
    #[track_caller]
    pub fn assert_stderr_lacks(&self, text: &str) {
        assert!(!self.stderr.contains(text), "{}", self.stderr);
    }
}

/// Waits for a child from [`Invocation::start`]; `elapsed` is the time spent waiting
/// for the program itself to exit.
pub fn wait_for_run(child: Child) -> Run {
    finish(child, Instant::now())
}

/// Exit code, or 128+N for death by signal N (the shell's convention).
pub fn status_of(status: &ExitStatus) -> i32 {
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// What the hidden `retry --generate KIND` prints (a completion script, the man page).
pub fn generated(kind: &str) -> Vec<u8> {
    let out = retry().args(["--generate", kind]).run();
    assert_eq!(out.status, 0, "retry --generate {kind}: {}", out.stderr);
    assert!(
        !out.stdout.is_empty(),
        "retry --generate {kind} printed nothing"
    );
    out.stdout
}

/// Sends `sig` to a program the test started.
pub fn signal(child: &Child, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig)
        .expect("signal the program");
}

/// Waits up to `limit` for a started program itself to exit (polling it, not its pipes,
/// which a leftover process may hold): its status, or `None` while it still runs.
pub fn exited_within(child: &mut Child, limit: Duration) -> Option<i32> {
    let mut status = None;
    super::wait_until(limit, || {
        status = child.try_wait().expect("try_wait").map(|s| status_of(&s));
        status.is_some()
    });
    status
}

/// Waits for a started program itself to exit, for at most `limit`: its status and
/// when. Past the limit it is killed and the test fails.
pub fn wait_exit(child: &mut Child, limit: Duration) -> (i32, Duration) {
    let start = Instant::now();
    let Some(status) = exited_within(child, limit) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the program did not exit within {limit:?}");
    };
    (status, start.elapsed())
}
