//! The `retry-rs` package, installed with dpkg into a throwaway root (never the
//! machine's own /usr, whose Debian `retry` the start-up benchmark compares with): it
//! replaces a Debian `retry` installed there before it, `man retry` and bash completion
//! work from it, lintian finds no error, and it is removed without a trace.

use std::path::Path;
use std::process::Command;

use super::{X86_64, assert_names_itself, dist, executable, ok, version};
use crate::support::Invocation;

/// An empty dpkg database under `root`.
fn dpkg_root(root: &Path) {
    let admin = root.join("var/lib/dpkg");
    for dir in ["info", "updates", "triggers"] {
        std::fs::create_dir_all(admin.join(dir)).unwrap();
    }
    std::fs::write(admin.join("status"), "").unwrap();
    std::fs::write(admin.join("available"), "").unwrap();
}

fn dpkg(root: &Path) -> Command {
    let mut cmd = Command::new("dpkg");
    cmd.arg(format!("--root={}", root.display()))
        .arg("--log=/dev/null")
        .arg("--force-not-root");
    cmd
}

/// A package named `retry` that ships /usr/bin/retry, as Debian's does.
fn debian_retry_package(under: &Path) -> std::path::PathBuf {
    let tree = under.join("debian-retry");
    executable(
        &tree.join("usr/bin/retry"),
        "#!/bin/sh\necho 'retry 1.0.5'\n",
    );
    std::fs::create_dir_all(tree.join("DEBIAN")).unwrap();
    std::fs::write(
        tree.join("DEBIAN/control"),
        "Package: retry\nVersion: 1.0.5-3\nArchitecture: all\n\
         Maintainer: Stand In <stand-in@example.org>\nDescription: Debian's other retry\n \
         a stand-in for the test\n",
    )
    .unwrap();
    let deb = under.join("retry_1.0.5-3_all.deb");
    ok(Command::new("dpkg-deb")
        .args(["--root-owner-group", "--build"])
        .arg(&tree)
        .arg(&deb));
    deb
}

#[test]
fn the_deb_replaces_debian_s_retry_in_a_throwaway_root_and_is_removed_cleanly() {
    let Some(dist) = dist() else { return };
    let deb = dist.join(format!("retry-rs_{}_amd64.deb", version()));
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    dpkg_root(&root);
    ok(dpkg(&root).arg("-i").arg(debian_retry_package(tmp.path())));
    ok(dpkg(&root).arg("-i").arg(&deb));
    let status = ok(dpkg(&root).args(["-l", "retry", "retry-rs"]));
    assert!(
        status.lines().any(|l| l.starts_with("ii  retry-rs")),
        "{status}"
    );
    assert!(
        !status.lines().any(|l| l.starts_with("ii  retry ")),
        "Debian's retry is still installed:\n{status}"
    );
    let bin = root.join("usr/bin/retry");
    assert_names_itself(&ok(Command::new(&bin).arg("--version")), X86_64);

    man_page_reads(&root);
    bash_completes(&root);

    ok(dpkg(&root).args(["-r", "retry-rs"]));
    let left = ok(Command::new("find").arg(&root).args([
        "-type",
        "f",
        "-not",
        "-path",
        "*/var/lib/dpkg/*",
    ]));
    assert_eq!(left, "", "files left after dpkg -r");
    // Forgotten whole: no files and no conffiles, so dpkg knows the package no more.
    let known = dpkg(&root).args(["-s", "retry-rs"]).output().unwrap();
    assert!(
        !known.status.success(),
        "{}",
        String::from_utf8_lossy(&known.stdout)
    );
}

/// `man retry` finds the installed page (MANPATH as the root's) and renders it.
fn man_page_reads(root: &Path) {
    let man = |args: &[&str]| {
        Invocation::of("man")
            .args(args)
            .env("MANPATH", root.join("usr/share/man"))
            .env("MANWIDTH", "80")
            .run()
    };
    let r = man(&["-w", "retry"]);
    assert_eq!(
        r.stdout_text().trim(),
        root.join("usr/share/man/man1/retry.1.gz")
            .display()
            .to_string(),
        "{}",
        r.stderr
    );
    let r = man(&["-P", "cat", "retry"]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    let page = r.stdout_text();
    assert!(
        page.contains("SYNOPSIS") && page.contains("--max-time"),
        "{page}"
    );
}

/// bash-completion loads the package's completion (XDG_DATA_DIRS as the root's) and it
/// completes an option.
fn bash_completes(root: &Path) {
    let script = r#"
        . /usr/share/bash-completion/bash_completion
        __load_completion retry || _comp_load retry || exit 3
        COMP_WORDS=(retry --max-d); COMP_CWORD=1; COMP_LINE='retry --max-d'; COMP_POINT=${#COMP_LINE}
        f=$(complete -p retry | sed -n 's/.*-F \([^ ]*\).*/\1/p')
        "$f" retry --max-d retry
        printf '%s\n' "${COMPREPLY[@]}"
    "#;
    let r = Invocation::of("bash")
        .args(["-c", script])
        .env("XDG_DATA_DIRS", root.join("usr/share"))
        .env("BASH_COMPLETION_USER_DIR", root.join("nowhere"))
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(
        r.stdout_text().lines().any(|l| l.trim() == "--max-delay"),
        "bash completed `retry --max-d` to {:?}",
        r.stdout_text()
    );
}

#[test]
fn lintian_finds_no_error_in_either_deb() {
    let Some(dist) = dist() else { return };
    let debs: Vec<_> = std::fs::read_dir(&dist)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "deb"))
        .collect();
    assert!(!debs.is_empty(), "no .deb in {}", dist.display());
    let out = Command::new("lintian")
        .args(&debs)
        .output()
        .expect("lintian");
    let text = String::from_utf8_lossy(&out.stdout);
    let errors: Vec<_> = text.lines().filter(|l| l.starts_with("E: ")).collect();
    assert!(errors.is_empty(), "lintian:\n{text}");
}
