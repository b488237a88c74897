//! The OCI image: its layout as skopeo and umoci read it (from scratch: the binary, a
//! static /bin/sh, CA certificates, the zone database; entrypoint retry), then, under
//! podman with runc, `retry --crontab` as PID 1 running a line through that /bin/sh and
//! stopping with 143 on SIGTERM. Podman's store is the test's own folder.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::{X86_64, dist, ok, skip, version};
use crate::support::wait_until;

fn image(dist: &Path) -> PathBuf {
    dist.join(format!("retry-{}-{X86_64}.oci.tar", version()))
}

#[test]
fn the_image_s_layout_reads_with_skopeo_and_umoci() {
    let Some(dist) = dist() else { return };
    let image = image(&dist);
    let inspect = ok(Command::new("skopeo")
        .arg("inspect")
        .arg(format!("oci-archive:{}", image.display())));
    let doc: serde_json::Value = serde_json::from_str(&inspect).unwrap();
    assert_eq!(doc["Architecture"], "amd64", "{inspect}");
    assert_eq!(doc["Labels"]["org.opencontainers.image.version"], version());

    let tmp = tempfile::tempdir().unwrap();
    let layout = tmp.path().join("layout");
    std::fs::create_dir(&layout).unwrap();
    ok(Command::new("tar")
        .arg("-xf")
        .arg(&image)
        .arg("-C")
        .arg(&layout));
    let bundle = tmp.path().join("bundle");
    ok(Command::new("umoci")
        .args(["unpack", "--rootless", "--image"])
        .arg(format!("{}:{}", layout.display(), version()))
        .arg(&bundle));
    let rootfs = bundle.join("rootfs");
    let mut files = ok(Command::new("find")
        .arg(".")
        .args(["-maxdepth", "4", "-not", "-path", "./usr/share/zoneinfo/*"])
        .current_dir(&rootfs))
    .lines()
    .map(str::to_string)
    .collect::<Vec<_>>();
    files.sort();
    assert_eq!(
        files,
        [
            ".",
            "./bin",
            "./bin/sh",
            "./etc",
            "./etc/ssl",
            "./etc/ssl/certs",
            "./etc/ssl/certs/ca-certificates.crt",
            "./tmp",
            "./usr",
            "./usr/bin",
            "./usr/bin/retry",
            "./usr/share",
            "./usr/share/zoneinfo",
        ]
    );
    assert!(rootfs.join("usr/share/zoneinfo/Europe/Berlin").is_file());
    let sh = ok(Command::new("file").arg(rootfs.join("bin/sh")));
    assert!(sh.contains("statically linked"), "{sh}");
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(bundle.join("config.json")).unwrap())
            .unwrap();
    assert_eq!(config["process"]["args"][0], "/usr/bin/retry", "{config}");
}

/// `podman` with the test's own store, and runc (crun cannot set up this host's
/// cgroups); the limits are given below the host's, which a sandbox may not let runc
/// raise.
fn podman(store: &Path) -> Command {
    let mut cmd = Command::new("podman");
    cmd.arg("--root")
        .arg(store.join("storage"))
        .arg("--runroot")
        .arg(store.join("run"))
        .args(["--storage-driver", "vfs", "--runtime", "runc"]);
    cmd
}

#[test]
fn the_image_runs_a_crontab_as_pid_1_and_stops_with_143_on_sigterm() {
    let Some(dist) = dist() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let jobs = tmp.path().join("jobs");
    std::fs::create_dir(&jobs).unwrap();
    // The line runs through the image's /bin/sh; PID 1's name is read from /proc.
    std::fs::write(
        jobs.join("jobs.crontab"),
        "@every 1s read name < /proc/1/comm; echo \"tick from $name as pid 1\"\n",
    )
    .unwrap();
    let name = format!("retry-test-{}", std::process::id());
    let started = podman(tmp.path())
        .args(["run", "-d", "--name", &name, "--network", "none"])
        .args([
            "--ulimit",
            "nofile=1024:1024",
            "--ulimit",
            "nproc=1024:1024",
        ])
        .arg("-v")
        .arg(format!("{}:/jobs:ro", jobs.display()))
        .arg(format!("oci-archive:{}", image(&dist).display()))
        .args(["--crontab", "/jobs/jobs.crontab"])
        .output()
        .expect("podman");
    if !started.status.success() {
        let why = format!(
            "podman cannot run a container here ({}); the image's layout is checked with \
             umoci only (image::the_image_s_layout_reads_with_skopeo_and_umoci)",
            String::from_utf8_lossy(&started.stderr).trim()
        );
        skip(&why, "RETRY_TEST_REQUIRE_PRIVILEGE");
        return;
    }
    let logs = || {
        let out = podman(tmp.path()).args(["logs", &name]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    let ticked = wait_until(Duration::from_secs(30), || {
        logs().contains("tick from retry as pid 1")
    });
    assert!(ticked, "no tick from the crontab:\n{}", logs());
    ok(podman(tmp.path()).args(["kill", "--signal", "TERM", &name]));
    let status = ok(podman(tmp.path()).args(["wait", &name]));
    let _ = podman(tmp.path()).args(["rm", "-f", &name]).output();
    let _ = podman(tmp.path())
        .args(["system", "reset", "--force"])
        .output();
    assert_eq!(status.trim(), "143", "{}", logs());
}
