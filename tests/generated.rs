//! The committed completions and man page must match what `retry --generate KIND`
//! prints now. `UPDATE_GENERATED=1 cargo test --test tests generated::` rewrites them.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::generated;

const GENERATED: &[(&str, &str)] = &[
    ("bash", "completions/retry.bash"),
    ("zsh", "completions/_retry"),
    ("fish", "completions/retry.fish"),
    ("elvish", "completions/retry.elv"),
    ("powershell", "completions/_retry.ps1"),
    ("man", "man/retry.1"),
];

fn committed(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

#[test]
fn committed_files_are_current() {
    let update = std::env::var_os("UPDATE_GENERATED").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for (kind, path) in GENERATED {
        let fresh = generated(kind);
        let file = committed(path);
        if std::fs::read(&file).ok().as_deref() == Some(fresh.as_slice()) {
            continue;
        }
        if update {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, &fresh).unwrap();
        } else {
            stale.push(*path);
        }
    }
    assert!(
        stale.is_empty(),
        "stale generated files: {}\nregenerate them with: UPDATE_GENERATED=1 cargo test --test tests generated::",
        stale.join(", ")
    );
}

#[test]
fn completions_offer_the_flags() {
    for (kind, _) in &GENERATED[..5] {
        let text = String::from_utf8(generated(kind)).unwrap();
        for flag in ["attempts", "max-delay", "jitter", "retry-on-status", "once"] {
            assert!(text.contains(flag), "{kind} completion lacks --{flag}");
        }
    }
}

/// `man -l` must format the page without warnings; skipped where man is not installed.
#[test]
fn man_page_renders() {
    let probe = Command::new("man").arg("--version").output();
    if !probe.is_ok_and(|o| o.status.success()) {
        crate::support::say_skipped(&format!(
            "{}: man is not installed, so man/retry.1 is not rendered",
            crate::support::current_test()
        ));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("retry.1");
    std::fs::write(&page, generated("man")).unwrap();
    let out = Command::new("man")
        .arg("--warnings")
        .arg("-l")
        .arg(&page)
        .env("MANWIDTH", "80")
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "man failed: {warnings}");
    assert!(warnings.trim().is_empty(), "man warnings: {warnings}");
    for heading in [
        "EXIT STATUS",
        "ENVIRONMENT",
        "EXAMPLES",
        "ATTEMPTS AND TIMING",
    ] {
        assert!(text.contains(heading), "rendered page lacks {heading}");
    }
    // Every line fits 80 columns, the examples' too (a long one continues after ` \`).
    let wide: Vec<&str> = text.lines().filter(|l| l.chars().count() > 80).collect();
    assert!(
        wide.is_empty(),
        "lines past 80 columns:\n{}",
        wide.join("\n")
    );
    // No word is hyphenated across lines, and searching the pager for an option finds
    // every mention of it: as many as the page's source has.
    assert!(
        !text.contains('\u{2010}'),
        "a word is hyphenated across lines"
    );
    let source = String::from_utf8(generated("man"))
        .unwrap()
        .replace("\\-", "-");
    let mut cmd = <retry::Cli as clap::CommandFactory>::command();
    cmd.build();
    for long in cmd.get_arguments().filter_map(|a| a.get_long()) {
        let mention = |text: &str| {
            let name = regex::escape(&format!("--{long}"));
            regex::Regex::new(&format!("(^|[^a-z0-9-]){name}($|[^a-z0-9-])"))
                .unwrap()
                .find_iter(text)
                .count()
        };
        let (written, found) = (mention(&source), mention(&text));
        assert_eq!(
            found, written,
            "--{long}: {found} found in the rendered page, {written} in its source"
        );
    }
}
