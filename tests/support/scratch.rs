//! Scratch directories with small `sh` scripts that count their runs, and waits
//! on the processes and files those scripts leave.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::run::{Run, retry};

/// A temporary directory with helpers for counting scripts.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Self {
        Scratch {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn p(&self, name: &str) -> String {
        self.path(name).to_string_lossy().into_owned()
    }

    /// Writes an executable `sh` script; `$D` in the body is this directory.
    pub fn script(&self, name: &str, body: &str) -> String {
        let path = self.path(name);
        let text = format!("#!/bin/sh\nD='{}'\n{body}\n", self.dir.path().display());
        fs::write(&path, text).expect("write script");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
        path.to_string_lossy().into_owned()
    }

    /// The script `job`, the command most tests retry.
    pub fn job(&self, body: &str) -> String {
        self.script("job", body)
    }

    /// How many lines the file `name` has (0 if missing): one per run.
    pub fn count(&self, name: &str) -> usize {
        fs::read_to_string(self.path(name))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    pub fn read(&self, name: &str) -> String {
        fs::read_to_string(self.path(name)).unwrap_or_default()
    }

    pub fn write(&self, name: &str, contents: &[u8]) -> PathBuf {
        let path = self.path(name);
        let mut f = fs::File::create(&path).expect("create");
        f.write_all(contents).expect("write");
        path
    }
}

/// Runs `retry` with fast backoff and `flags` on a fresh `job` script with `body`;
/// returns the scratch directory (for its counts and files) and the run.
pub fn run_job(body: &str, flags: &[&str]) -> (Scratch, Run) {
    let s = Scratch::new();
    let job = s.job(body);
    let r = retry().fast().args(flags).arg(&job).run();
    (s, r)
}

/// The JSON document in the file at `path` (a report, a marker).
pub fn read_json(path: &Path) -> serde_json::Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}: {text}", path.display()))
}

/// Fails, quoting the report, unless the report at `path` says the run stopped
/// `because`.
#[track_caller]
pub fn assert_stopped_because(path: &Path, because: &str) -> serde_json::Value {
    let report = read_json(path);
    assert_eq!(report["result"]["stopped_because"], because, "{report}");
    report
}

/// Whether process `pid` still exists and is not a zombie (or dead, state X).
pub fn alive(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat.rsplit_once(')')?.1.trim_start().chars().next()?;
            Some(state != 'Z' && state != 'X')
        })
        .unwrap_or(false)
}

/// Whether process `pid` runs `program` (its name in /proc, as `ps -o comm` shows it).
pub fn runs(pid: i32, program: &str) -> bool {
    fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|comm| comm.trim_end() == program)
}

/// Polls `done` until it holds, for up to `limit`; whether it came to hold.
pub fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while !done() {
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Waits for the pid a process writes to `path` (see [`wait_for_file`]).
pub fn wait_for_pid(path: &Path, limit: Duration) -> i32 {
    let text = wait_for_file(path, limit);
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("not a pid: {text:?}"))
}

/// Waits until `path` exists and holds a line, for up to `limit`.
pub fn wait_for_file(path: &Path, limit: Duration) -> String {
    let mut text = None;
    wait_until(limit, || {
        text = fs::read_to_string(path)
            .ok()
            .filter(|text| text.ends_with('\n'));
        text.is_some()
    });
    text.unwrap_or_else(|| panic!("{} did not appear within {limit:?}", path.display()))
}

/// How many TCP connections process `pid` has open to `127.0.0.1:port` (its socket
/// descriptors matched with /proc/net/tcp).
pub fn tcp_connections_to(pid: i32, port: u16) -> usize {
    tcp_connections_of(&[pid], port)
}

/// How many TCP connections the processes `pids` have open to `127.0.0.1:port`, in all.
pub fn tcp_connections_of(pids: &[i32], port: u16) -> usize {
    let inodes: std::collections::HashSet<String> = pids
        .iter()
        .flat_map(|pid| {
            std::fs::read_dir(format!("/proc/{pid}/fd"))
                .into_iter()
                .flatten()
        })
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|target| {
            let target = target.to_string_lossy().into_owned();
            let inode = target.strip_prefix("socket:[")?.strip_suffix(']')?;
            Some(inode.to_string())
        })
        .collect();
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    let remote = format!(":{port:04X}");
    table
        .lines()
        .skip(1)
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|fields| fields.len() > 9)
        // Established (01) connections whose remote end is the port.
        .filter(|f| f[2].ends_with(&remote) && f[3] == "01" && inodes.contains(f[9]))
        .count()
}
