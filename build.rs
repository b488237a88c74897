//! The line `retry --version` prints, made once at build time so that a start pays
//! nothing for it: `X.Y.Z (COMMIT DATE TARGET)`, COMMIT the first 9 hex digits of the
//! checkout's commit (`-dirty` when a tracked file differs from it), DATE the commit's
//! date in UTC; `X.Y.Z (unknown commit, TARGET)` where there is no git metadata (a
//! source tarball, a crate from crates.io) or no git to read it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let version = std::env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    let target = std::env::var("TARGET").expect("cargo sets TARGET");
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let line = match commit(&root) {
        Some((hash, date)) => format!("{version} ({hash} {date} {target})"),
        None => format!("{version} (unknown commit, {target})"),
    };
    println!("cargo:rustc-env=RETRY_VERSION_LINE={line}");
    watch_git(&root);
}

/// The commit's short hash (with `-dirty`) and its date, or None without a repository.
fn commit(root: &Path) -> Option<(String, String)> {
    let hash = git(root, &["rev-parse", "--short=9", "HEAD"])?;
    // UTC, whatever the builder's zone: the same commit names the same day everywhere.
    let date = git(
        root,
        &[
            "show",
            "-s",
            "--format=%cd",
            "--date=format-local:%Y-%m-%d",
            "HEAD",
        ],
    )?;
    // Tracked files only, as `git describe --dirty`: an untracked file is not a change
    // to what was built.
    let dirty = Command::new("git")
        .args(["diff-index", "--quiet", "HEAD", "--"])
        .current_dir(root)
        .env("TZ", "UTC")
        .status()
        .map(|s| !s.success())
        .unwrap_or(false);
    let suffix = if dirty { "-dirty" } else { "" };
    Some((format!("{hash}{suffix}"), date))
}

/// What a git command prints, trimmed; None when git is missing or fails.
fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(root)
        .env("TZ", "UTC")
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

/// Runs again when HEAD moves, a branch is committed to, the index changes (a file
/// staged), or a file the binary is built from changes (so that `-dirty` follows an edit
/// to the code at no cost: the crate is rebuilt then anyway). An edit elsewhere (a doc)
/// is seen at the next of these; dist/build checks the line against the tree. A
/// worktree's own HEAD and index live apart from the shared refs, so both git
/// directories are watched.
fn watch_git(root: &Path) {
    let dirs = ["--git-dir", "--git-common-dir"]
        .iter()
        .filter_map(|flag| git(root, &["rev-parse", flag]))
        .map(|dir| root.join(dir));
    for dir in dirs {
        for name in ["HEAD", "index", "packed-refs", "refs/heads"] {
            let path = dir.join(name);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    for name in ["build.rs", "Cargo.toml", "Cargo.lock", "src"] {
        println!("cargo:rerun-if-changed={name}");
    }
}
