//! A release as its users meet it: the artifacts `dist/build` wrote into the folder
//! `RETRY_TEST_DIST` names (CI packs its quick build, the x86_64 debug one, into
//! `dist/out/VERSION-debug/` and runs these on every run; its release step packs both
//! release builds and runs them again). Without the variable every test says SKIPPED,
//! unless `RETRY_TEST_REQUIRE_RELEASE=1` makes that a failure.
//!
//! Here: `SHA256SUMS`, the tarballs (layout, static-pie, `--version`, the embedded
//! dependency list, the README's first example, the README's first block run in order
//! with Debian's `retry` first on `PATH` and no cargo), and the aarch64 binary under
//! qemu; `deb.rs` the `.deb` in a throwaway root, `image.rs` the OCI image,
//! `action.rs` the GitHub Action under `act`.

mod action;
mod deb;
mod image;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::readme::blocks;
use crate::support::http_server::{Reply, Server};
use crate::support::{Invocation, current_test, say_skipped};

const X86_64: &str = "x86_64-unknown-linux-gnu";
const AARCH64: &str = "aarch64-unknown-linux-gnu";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Says the current test is skipped and why, unless the variable `required` is set,
/// which makes it a failure (as CI sets them).
fn skip(why: &str, required: &str) {
    let why = format!("{}: {why}", current_test());
    assert!(
        std::env::var_os(required).is_none(),
        "{why} ({required} is set)"
    );
    say_skipped(&why);
}

/// The release folder under test, or None (said SKIPPED) without one.
fn dist() -> Option<PathBuf> {
    let Some(dir) = std::env::var_os("RETRY_TEST_DIST") else {
        skip(
            "RETRY_TEST_DIST names no release folder; `DIST_QUICK=1 dist/build` writes \
             dist/out/VERSION-debug/",
            "RETRY_TEST_REQUIRE_RELEASE",
        );
        return None;
    };
    let dir = root().join(dir);
    assert!(
        dir.join("SHA256SUMS").is_file(),
        "{}: no SHA256SUMS",
        dir.display()
    );
    Some(dir)
}

fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The tarball for `target` in the release folder, if it was built.
fn tarball(dist: &Path, target: &str) -> Option<PathBuf> {
    let path = dist.join(format!("retry-{}-{target}.tar.gz", version()));
    path.is_file().then_some(path)
}

/// Runs a program to its end, asserting it succeeded; its stdout.
fn ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Unpacks `tarball` into `into`; the folder it made (`retry-VERSION-TARGET`).
fn unpack(tarball: &Path, into: &Path) -> PathBuf {
    ok(Command::new("tar")
        .arg("-xzf")
        .arg(tarball)
        .arg("-C")
        .arg(into));
    let name = tarball.file_name().unwrap().to_str().unwrap();
    into.join(name.strip_suffix(".tar.gz").unwrap())
}

/// Writes an executable file.
fn executable(path: &Path, body: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The README's first `retry …` example that runs something (not `--version`).
fn readme_first_example() -> String {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    blocks(&readme)
        .into_iter()
        .filter(|b| b.lang == "sh")
        .flat_map(|b| b.lines)
        .find(|l| l.starts_with("retry -") && l.trim() != "retry --version")
        .expect("the README has a retry example")
}

/// The `--version` line of a build of `target` at this version.
fn assert_names_itself(line: &str, target: &str) {
    let form = regex::Regex::new(&format!(
        r"^retry {} \([0-9a-f]{{9}}(-dirty)? \d{{4}}-\d{{2}}-\d{{2}} {target}\)\n$",
        regex::escape(version())
    ))
    .unwrap();
    assert!(form.is_match(line), "--version printed {line:?}");
}

#[test]
fn sha256sums_lists_every_artifact_and_each_matches() {
    let Some(dist) = dist() else { return };
    let sums = std::fs::read_to_string(dist.join("SHA256SUMS")).unwrap();
    let mut listed: Vec<&str> = sums
        .lines()
        .map(|l| l.split_once("  ").expect(l).1)
        .collect();
    listed.sort();
    let mut present: Vec<String> = std::fs::read_dir(&dist)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "SHA256SUMS")
        .collect();
    present.sort();
    assert_eq!(listed, present);
    ok(Command::new("sha256sum")
        .args(["-c", "--quiet", "SHA256SUMS"])
        .current_dir(&dist));
    // Every artifact the release promises is there.
    let v = version();
    for name in [
        format!("retry-{v}-{X86_64}.tar.gz"),
        format!("retry-rs_{v}_amd64.deb"),
        format!("retry-{v}-{X86_64}.oci.tar"),
    ] {
        assert!(present.contains(&name), "{name} is missing: {present:?}");
    }
}

/// The tarball holds the static-pie binary, its man page, completions, README,
/// CHANGELOG and licenses; the binary names itself and carries its dependency list; and
/// it runs the README's first example.
#[test]
fn the_tarball_s_static_binary_runs_the_readme_s_first_example() {
    let Some(dist) = dist() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = unpack(
        &tarball(&dist, X86_64).expect("the x86_64 tarball"),
        tmp.path(),
    );
    for file in [
        "retry",
        "man/retry.1",
        "completions/retry.bash",
        "completions/_retry",
        "completions/retry.fish",
        "completions/retry.elv",
        "completions/_retry.ps1",
        "README.md",
        "CHANGELOG.md",
        "LICENSE-MIT",
        "LICENSE-APACHE",
    ] {
        assert!(dir.join(file).is_file(), "the tarball has no {file}");
    }
    let bin = dir.join("retry");
    let kind = ok(Command::new("file").arg("-L").arg(&bin));
    assert!(kind.contains("static-pie linked"), "{kind}");
    assert_names_itself(&ok(Command::new(&bin).arg("--version")), X86_64);
    assert_dependency_list(&bin);

    let example = readme_first_example();
    let r = Invocation::of("sh")
        .args(["-c", &example])
        .env("PATH", format!("{}:/usr/bin:/bin", dir.display()))
        .run();
    assert_eq!(r.status, 0, "{example}\n{}", r.stderr);
    assert!(
        r.stdout_text().contains("ok on attempt 3"),
        "{}",
        r.stdout_text()
    );
    assert!(
        r.stderr.contains("retry: attempt 3/5 succeeded"),
        "{}",
        r.stderr
    );
}

/// The `.dep-v0` section cargo auditable writes: zlib-compressed JSON naming every crate.
/// Read from the ELF section table by python3, for either target.
fn assert_dependency_list(bin: &Path) {
    const READ: &str = r#"
import json, struct, sys, zlib
elf = open(sys.argv[1], "rb").read()
shoff, = struct.unpack_from("<Q", elf, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
def section(i):
    name, _, _, _, offset, size = struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize)
    return name, offset, size
_, names_at, _ = section(shstrndx)
for i in range(shnum):
    name, offset, size = section(i)
    if elf[names_at + name:].split(b"\0", 1)[0] == b".dep-v0":
        doc = json.loads(zlib.decompress(elf[offset:offset + size]))
        print("\n".join(p["name"] for p in doc["packages"]))
"#;
    let names = ok(Command::new("python3").args(["-c", READ]).arg(bin));
    let names: Vec<&str> = names.lines().collect();
    for krate in ["retry", "clap", "tokio", "reqwest", "rustls", "jiff"] {
        assert!(
            names.contains(&krate),
            "{krate} is not in the dependency list: {names:?}"
        );
    }
    assert!(names.len() > 100, "only {} crates listed", names.len());
}

/// A PATH that holds every program of the system's folders but cargo, rustc and
/// rustup: a machine without Rust.
fn path_without_rust(under: &Path) -> PathBuf {
    let bin = under.join("system-bin");
    std::fs::create_dir_all(&bin).unwrap();
    for dir in ["/usr/local/bin", "/usr/bin", "/bin"] {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let text = name.to_string_lossy();
            let rust = ["cargo", "rustc", "rustup", "rustdoc"]
                .iter()
                .any(|p| text.starts_with(p));
            if !rust && !bin.join(&name).exists() {
                std::os::unix::fs::symlink(entry.path(), bin.join(&name)).unwrap();
            }
        }
    }
    bin
}

/// A stand-in for Debian's `retry` (another program): its version line, and its refusal
/// of our options; with its man page beside it, where man looks for a `bin` on PATH.
fn fake_debian_retry(under: &Path) -> PathBuf {
    let prefix = under.join("debian");
    executable(
        &prefix.join("bin/retry"),
        "#!/bin/sh\n\
         if [ \"$1\" = --version ]; then echo 'retry 1.0.5'; exit 0; fi\n\
         echo 'Delay(s) must be bigger or equal to 0.' >&2\n\
         exit 1\n",
    );
    let man = prefix.join("share/man/man1");
    std::fs::create_dir_all(&man).unwrap();
    std::fs::write(
        man.join("retry.1"),
        ".TH RETRY 1\n.SH NAME\nretry \\- Debian's other retry\n",
    )
    .unwrap();
    prefix.join("bin")
}

/// The README's first block, run in order by sh in a folder holding the downloaded
/// tarball and SHA256SUMS, with HOME and PATH as given, up to and including its first
/// line that runs retry; what sh printed. The release folder stands for a release's
/// assets.
fn run_first_block(dist: &Path, home: &Path, path: &str) -> crate::support::Run {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let first = blocks(&readme)
        .into_iter()
        .next()
        .expect("the README has a block");
    let runs_retry = |l: &String| l.split_whitespace().next() == Some("retry");
    let upto = first
        .lines
        .iter()
        .position(runs_retry)
        .expect("the first block runs retry");
    let script = first.lines[..=upto].join("\n");
    let downloads = home.join("Downloads");
    std::fs::create_dir_all(&downloads).unwrap();
    for name in [
        "SHA256SUMS".to_string(),
        format!("retry-{}-{X86_64}.tar.gz", version()),
    ] {
        std::fs::copy(dist.join(&name), downloads.join(&name)).unwrap();
    }
    Invocation::of("sh")
        .args(["-ec", &script])
        .env("HOME", home)
        .env("PATH", path)
        .current_dir(&downloads)
        .run()
}

/// The README's install works as written from a tarball on a machine without Rust.
#[test]
fn the_readme_s_install_works_from_a_tarball_with_no_cargo_on_path() {
    let Some(dist) = dist() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let system = path_without_rust(tmp.path());
    let path = system.display().to_string();
    let cargo = Invocation::of("sh")
        .args(["-c", "command -v cargo"])
        .env("PATH", &path)
        .run();
    assert_ne!(
        cargo.status,
        0,
        "cargo is on the PATH: {}",
        cargo.stdout_text()
    );
    let home = tmp.path().join("home");
    let r = run_first_block(&dist, &home, &path);
    assert_eq!(r.status, 0, "{}\n{}", r.stdout_text(), r.stderr);
    assert_names_itself(&last_line(&r.stdout_text()), X86_64);
    // What the README says it prints, but for the build's own commit and date.
    assert!(
        std::fs::read_to_string(root().join("README.md"))
            .unwrap()
            .contains(&format!("retry {} (", version())),
        "the README does not show this version's --version line"
    );
}

fn last_line(text: &str) -> String {
    format!("{}\n", text.lines().last().unwrap_or(""))
}

/// The README's first block, typed in order on a machine where Debian's `retry` comes
/// first on PATH, runs ours at its first `retry` line; and `man retry` finds our page
/// before Debian's.
#[test]
fn the_readme_s_first_block_runs_ours_with_debian_s_retry_first_on_path() {
    let Some(dist) = dist() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let debian = fake_debian_retry(tmp.path());
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", debian.display());
    let before = Invocation::of("sh")
        .args(["-c", "retry --version"])
        .env("PATH", &path)
        .run();
    assert_eq!(
        before.stdout_text(),
        "retry 1.0.5\n",
        "the stand-in is not first"
    );
    let home = tmp.path().join("home");
    let r = run_first_block(&dist, &home, &path);
    assert_eq!(r.status, 0, "{}\n{}", r.stdout_text(), r.stderr);
    assert_names_itself(&last_line(&r.stdout_text()), X86_64);

    // The same PATH as after the block: ours first, Debian's next.
    let after = format!("{}/.local/bin:{path}", home.display());
    let man = Invocation::of("man")
        .args(["-w", "retry"])
        .env("HOME", &home)
        .env_remove("MANPATH")
        .env("PATH", &after)
        .run();
    assert_eq!(man.status, 0, "man -w retry: {}", man.stderr);
    let found = man.stdout_text();
    assert_eq!(
        found.trim(),
        home.join(".local/share/man/man1/retry.1")
            .display()
            .to_string(),
        "man retry finds another page first"
    );
}

/// The aarch64 build, under qemu: a retried command, and an HTTP request retried after
/// a 503 from a server on 127.0.0.1.
#[test]
fn the_aarch64_binary_retries_a_command_and_a_request_under_qemu() {
    let Some(dist) = dist() else { return };
    let Some(tarball) = tarball(&dist, AARCH64) else {
        // Not required even in CI: the quick build is x86_64 only.
        say_skipped(&format!(
            "{}: {} holds no aarch64 tarball (the quick build is x86_64 only; \
             RETRY_CI_RELEASE=1 .ci/run builds it)",
            current_test(),
            dist.display()
        ));
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let bin = unpack(&tarball, tmp.path()).join("retry");
    let kind = ok(Command::new("file").arg("-L").arg(&bin));
    assert!(
        kind.contains("ARM aarch64") && kind.contains("static-pie linked"),
        "{kind}"
    );
    let qemu = || {
        let mut q = Invocation::of("qemu-aarch64-static");
        q.arg(&bin);
        q
    };
    assert_names_itself(&qemu().arg("--version").run().stdout_text(), AARCH64);
    assert_dependency_list(&bin);

    let r = qemu()
        .args(["-a", "4", "--delay", "10ms", "--", "sh", "-c"])
        .arg(r#"test "$RETRY_ATTEMPT" -ge 3 || exit 75; echo "ok on $RETRY_ATTEMPT""#)
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), "ok on 3\n");

    let server = Server::script(vec![Reply::status(503), Reply::ok("{\"status\": \"ok\"}")]);
    let r = qemu()
        .args(["--delay", "10ms", "-fsS"])
        .arg(server.url("/health"))
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), "{\"status\": \"ok\"}");
    assert_eq!(server.hits(), 2);
}
