//! A crontab in production (SPEC "A crontab in production"): the scheduler's resources
//! stay flat through stalls and reloads, nothing outlives it on `kill -9`, the whole-file
//! check refuses what can never run, a changed schedule replays nothing, `--overlap`
//! holds across replicas, a stop is one line and starts no attempt, and replicas under
//! `-q` log only what went wrong. Real processes, counted through `/proc`; a real
//! PostgreSQL, directly and through PgBouncer.

use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::both_ways;
use crate::crontab::{Crontab, dry_run};
use crate::support::stall::{Proxy, When};
use crate::support::{self as cmd, Scratch, retry};

/// A field of `/proc/PID/status`.
fn status_field(pid: u32, name: &str) -> u64 {
    let text = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /proc/{pid}/status"))
}

/// How many descriptors `pid` holds.
fn descriptors(pid: u32) -> usize {
    fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count()
}

/// The fewest descriptors `pid` held over `d` (a slot's run holds three pipes from half
/// a second before its slot until it ends: the fewest is the scheduler's own).
fn fewest_descriptors(pid: u32, d: Duration) -> usize {
    let end = Instant::now() + d;
    let mut fewest = usize::MAX;
    while Instant::now() < end {
        fewest = fewest.min(descriptors(pid));
        std::thread::sleep(Duration::from_millis(20));
    }
    fewest
}

/// The processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let zombie = fs::read_to_string(entry.path().join("stat"))
            .is_ok_and(|s| s.rsplit(") ").next().is_some_and(|r| r.starts_with('Z')));
        if cmdline.contains(marker) && !zombie {
            found.push(pid);
        }
    }
    found
}

both_ways! {
    fn descriptors_stay_flat_through_a_stall_of_the_state_and_reloads(pg) {
        let dir = Scratch::new();
        let proxy = Proxy::to(pg.port(), When::WhileFileExists(dir.path("stall")));
        let state = proxy.url("?connect_timeout=1");
        let tab = (1..=5)
            .map(|i| format!("@every 3s -a 1 --job j{i} -- true\n"))
            .collect::<String>();
        let c = Crontab::start(&dir, "flat", &tab, &["--state", &state]);
        let pid = c.child.id();
        assert!(cmd::wait_until(Duration::from_secs(15), || c.err().matches("ended: succeeded").count() >= 5), "{}", c.err());
        let before = fewest_descriptors(pid, Duration::from_secs(3));
        // The state goes silent: the slots' runs and the scheduler's own calls (a reload
        // starts a changed job, whose records are read) get no answer for 6 s.
        fs::write(dir.path("stall"), "").unwrap();
        for round in 0..3 {
            let changed = tab.replace("--job j1", &format!("--job j1 --timeout {}s", round + 5));
            fs::write(dir.path("flat.tab"), changed).unwrap();
            c.signal(Signal::SIGHUP);
            std::thread::sleep(Duration::from_secs(2));
        }
        fs::remove_file(dir.path("stall")).unwrap();
        let runs = c.err().matches("ended: succeeded").count();
        assert!(cmd::wait_until(Duration::from_secs(20), || c.err().matches("ended: succeeded").count() >= runs + 5), "{}", c.err());
        let after = fewest_descriptors(pid, Duration::from_secs(3));
        let threads = status_field(pid, "Threads");
        let (status, _, err) = c.stop();
        assert_eq!(status, Some(143), "{err}");
        assert!(err.contains("could not") || err.contains("no answer"), "the stall was met\n{err}");
        assert_eq!(after, before, "descriptors before the stall and after it\n{err}");
        assert!(threads <= 8, "{threads} threads");
    }
}

#[test]
fn a_hundred_idle_jobs_hold_few_threads_and_little_memory_and_a_thousand_as_few_threads() {
    let dir = Scratch::new();
    for jobs in [100, 1000] {
        let tab: String = (1..=jobs)
            .map(|i| format!("@yearly --job idle{i} -- true\n"))
            .collect();
        let name = format!("idle{jobs}");
        let c = Crontab::start(
            &dir,
            &name,
            &tab,
            &["--state", &dir.p(&name), "--catch-up", "none"],
        );
        let last = format!("job idle{jobs}: schedule");
        assert!(
            cmd::wait_until(Duration::from_secs(60), || c.err().contains(&last)),
            "{}",
            c.err()
        );
        std::thread::sleep(Duration::from_millis(500));
        let pid = c.child.id();
        let (threads, rss_kib) = (status_field(pid, "Threads"), status_field(pid, "VmRSS"));
        let (status, _, err) = c.stop();
        assert_eq!(status, Some(143), "{err}");
        assert!(threads <= 8, "{jobs} idle jobs: {threads} threads");
        if jobs == 100 && cmd::optimized_build() {
            assert!(rss_kib < 32 * 1024, "100 idle jobs: {rss_kib} KiB");
        }
    }
}

/// Starts a scheduler with `args` whose slots leave a `setsid` daemon and a job that
/// ignores SIGTERM (both marked `marker`), `kill -9`s it once they run, and checks that
/// none of them, and no slot's run, is left.
fn nothing_outlives(dir: &Scratch, args: &[&str], marker: &str) {
    let mut child = retry()
        .args(args)
        .env("D", dir.path(""))
        .stderr(fs::File::create(dir.path("err")).unwrap())
        .spawn();
    let running = || processes_with(marker).len() >= 2;
    assert!(
        cmd::wait_until(Duration::from_secs(10), running),
        "{}",
        dir.read("err")
    );
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    let _ = child.wait();
    // The slot's run ends its tree as a stop does: SIGTERM, then SIGKILL after -k 1s.
    let gone = || {
        processes_with(marker).is_empty()
            && processes_with("--run-slot")
                .iter()
                .all(|p| !is_ours(*p, dir))
    };
    assert!(
        cmd::wait_until(Duration::from_secs(6), gone),
        "left: {:?}\n{}",
        processes_with(marker),
        dir.read("err")
    );
}

/// Whether `pid`'s environment is this test's (its `D`).
fn is_ours(pid: i32, dir: &Scratch) -> bool {
    let env = fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    let ours = format!("D={}", dir.path("").display());
    String::from_utf8_lossy(&env).split('\0').any(|v| v == ours)
}

#[test]
fn kill_9_of_a_crontab_scheduler_leaves_no_process_of_any_slot() {
    let dir = Scratch::new();
    let tab = "@every 1s --kill-after 1s --overlap allow --job daemon -- setsid sleep 3601.25 & sleep 3601.25\n\
               @every 1s --kill-after 1s --overlap allow --job stubborn -- trap '' TERM; sleep 3601.25\n";
    let file = dir.write("k.tab", tab.as_bytes());
    let state = dir.p("state");
    nothing_outlives(
        &dir,
        &["--crontab", &file.display().to_string(), "--state", &state],
        "3601.25",
    );
}

#[test]
fn kill_9_of_a_schedule_scheduler_leaves_no_process_of_its_slot() {
    let dir = Scratch::new();
    let state = dir.p("state");
    let script = "setsid sleep 3602.5 & trap '' TERM; sleep 3602.5";
    let args = [
        "--schedule",
        "@every 1s",
        "--kill-after",
        "1s",
        "--state",
        &state,
        "--",
        "sh",
        "-c",
        script,
    ];
    nothing_outlives(&dir, &args, "3602.5");
}

/// Runs `retry --crontab PATH --dry-run`: the exit status, stderr and how long it took.
fn check_file(path: &std::path::Path) -> (i32, String, Duration) {
    let began = Instant::now();
    let out = dry_run(path);
    (out.status, out.stderr, began.elapsed())
}

#[test]
fn files_that_can_never_run_are_refused_at_once_naming_the_file_and_line() {
    let dir = Scratch::new();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "nul",
            b"@daily true\n@daily echo a\0b\n".to_vec(),
            "nul.tab:2: a NUL byte",
        ),
        (
            "utf8",
            b"# caf\xe9 is fine here\n@daily echo caf\xe9\n".to_vec(),
            "utf8.tab:2: not UTF-8",
        ),
        (
            "long",
            format!("@daily echo {}\n", "x".repeat(131_072)).into_bytes(),
            "long.tab:1: the command is 131077 bytes long",
        ),
        (
            "big",
            format!("@daily true\n#{}\n", "x".repeat(1 << 20)).into_bytes(),
            "larger than 1 MiB",
        ),
    ];
    for (name, bytes, said) in cases {
        let path = dir.write(&format!("{name}.tab"), &bytes);
        let (status, err, took) = check_file(&path);
        assert_eq!(status, 125, "{name}: {err}");
        assert!(err.contains(said), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: one line\n{err}");
        assert!(took < Duration::from_secs(1), "{name}: {took:?}");
    }
    let fifo = dir.path("fifo.tab");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
    for (path, kind) in [(fifo, "a FIFO"), ("/dev/zero".into(), "a device")] {
        let (status, err, took) = check_file(&path);
        assert_eq!(status, 125, "{err}");
        assert!(
            err.contains(&format!("not a regular file but {kind}")),
            "{err}"
        );
        assert!(took < Duration::from_secs(1), "{kind}: {took:?}");
    }
    // A link to a regular file is a crontab (a ConfigMap's way).
    let real = dir.write("real.tab", b"@daily true\n");
    let link = dir.path("link.tab");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert_eq!(check_file(&link).0, 0);
}

#[test]
fn a_line_whose_words_exceed_arg_max_is_refused_naming_it() {
    let dir = Scratch::new();
    // A stack of 2 MiB makes ARG_MAX 512 KiB: a line of 100 KiB below two NAME=VALUE
    // lines of 250 KiB exceeds it.
    let big = "v".repeat(250_000);
    let tab = format!(
        "A={big}\nB={big}\n@daily true\n@daily echo {}\n",
        "w".repeat(100_000)
    );
    let path = dir.write("argmax.tab", tab.as_bytes());
    let out = cmd::Invocation::of("prlimit")
        .args(["--stack=2097152:2097152", cmd::bin(), "--crontab"])
        .arg(&path)
        .arg("--dry-run")
        .run();
    assert_eq!(out.status, 125, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("argmax.tab:4: the line's arguments and environment take"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("over the system's ARG_MAX"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_changed_schedule_replays_no_slot_of_the_old_spacing() {
    let dir = Scratch::new();
    let state = dir.p("state");
    let line = |every: &str| {
        format!("@every {every} --catch-up all --job paced -- echo ran >> \"$D/runs\"\n")
    };
    let c = Crontab::start(&dir, "paced", &line("20s"), &["--state", &state]);
    assert!(
        cmd::wait_until(Duration::from_secs(10), || c
            .err()
            .contains("first start of job paced")),
        "{}",
        c.err()
    );
    std::thread::sleep(Duration::from_secs(3));
    // The old spacing may have run a slot of its own by now (its first start's second,
    // or a multiple of 20 s): only what runs after the change is counted.
    let before = dir.count("runs");
    let changed = Instant::now();
    fs::write(dir.path("paced.tab"), line("1s")).unwrap();
    c.signal(Signal::SIGHUP);
    assert!(
        cmd::wait_until(Duration::from_secs(5), || c
            .err()
            .contains("its schedule changed")),
        "{}",
        c.err()
    );
    std::thread::sleep(Duration::from_millis(2500));
    let runs = dir.count("runs") - before;
    let seconds = changed.elapsed().as_secs_f64().ceil() as usize;
    let (_, _, err) = c.stop();
    // Only the slot in the very second of the change may be caught up (a slot in the
    // first start's second runs), never one of the 20 s before it.
    assert!(err.matches("running missed slot").count() <= 1, "{err}");
    assert!(
        runs <= seconds + 1,
        "{runs} runs of @every 1s in the {seconds} s after the change\n{err}"
    );
    assert!(err.contains("1 changed (paced)"), "{err}");
    // The same for --schedule across a restart of the scheduler.
    let sched = |every: &str| {
        let args = [
            "--schedule",
            every,
            "--catch-up",
            "all",
            "--job",
            "moved",
            "--state",
            &state,
            "--",
            "sh",
            "-c",
            "echo ran >> \"$D/moved\"",
        ];
        retry()
            .args(args)
            .env("D", dir.path(""))
            .stderr(fs::File::create(dir.path(&format!("moved-{every}"))).unwrap())
            .spawn()
    };
    let mut first = sched("@every 30s");
    assert!(cmd::wait_until(Duration::from_secs(10), || dir
        .read("moved-@every 30s")
        .contains("first start of job moved")));
    kill(Pid::from_raw(first.id() as i32), Signal::SIGTERM).unwrap();
    let _ = first.wait();
    std::thread::sleep(Duration::from_secs(3));
    let mut second = sched("@every 1s");
    std::thread::sleep(Duration::from_millis(1500));
    kill(Pid::from_raw(second.id() as i32), Signal::SIGTERM).unwrap();
    let _ = second.wait();
    let log = dir.read("moved-@every 1s");
    assert!(log.contains("its schedule changed"), "{log}");
    assert!(log.matches("running missed slot").count() <= 1, "{log}");
}

/// Each run's start and end, in seconds, from lines `start T` and `end T` of `log`.
fn intervals(log: &str) -> Vec<(f64, f64)> {
    let mut starts = Vec::new();
    let mut out = Vec::new();
    for line in log.lines() {
        let mut words = line.split_whitespace();
        let (Some(what), Some(at)) = (
            words.next(),
            words.next().and_then(|t| t.parse::<f64>().ok()),
        ) else {
            continue;
        };
        match what {
            "start" => starts.push(at),
            "end" => out.push((starts.remove(0), at)),
            _ => {}
        }
    }
    out
}

/// A job longer than its period, logging when each run starts and ends.
const LONG_JOB: &str =
    "echo start $(date +%s.%N) >> \"$D/runs\"; sleep 2.5; echo end $(date +%s.%N) >> \"$D/runs\"";

both_ways! {
    fn overlap_skip_holds_across_two_replicas(pg) {
        let dir = Scratch::new();
        let state = pg.url("");
        let tab = format!("@every 1s --overlap skip --job long -- {LONG_JOB}\n");
        let a = Crontab::start(&dir, "a", &tab, &["--state", &state]);
        let b = Crontab::start(&dir, "b", &tab, &["--state", &state]);
        let skipped = || format!("{}{}", a.err(), b.err()).matches("the job's previous slot still runs").count();
        // Six runs of 2.5 s on the two replicas, and the slots that came meanwhile.
        cmd::wait_until(Duration::from_secs(40), || {
            intervals(&dir.read("runs")).len() >= 6 && skipped() >= 10
        });
        let (_, _, err_a) = a.stop();
        let (_, _, err_b) = b.stop();
        let runs = intervals(&dir.read("runs"));
        assert!(runs.len() >= 5, "{runs:?}\n{err_a}\n{err_b}");
        let mut sorted = runs.clone();
        sorted.sort_by(|x, y| x.0.total_cmp(&y.0));
        for pair in sorted.windows(2) {
            assert!(pair[1].0 >= pair[0].1, "slots overlapped: {pair:?}\n{err_a}\n{err_b}");
        }
        let skipped = format!("{err_a}{err_b}").matches("the job's previous slot still runs").count();
        assert!(skipped >= 10, "20 slots, runs of 2.5 s: most skipped\n{err_a}\n{err_b}");
    }
}

#[test]
fn overlap_allow_runs_slots_together_and_replace_stops_the_running_one() {
    let dir = Scratch::new();
    let state = dir.p("state");
    let tab = format!("@every 1s --overlap allow --job together -- {LONG_JOB}\n");
    let c = Crontab::start(&dir, "allow", &tab, &["--state", &state]);
    let overlapping = |runs: &[(f64, f64)]| runs.windows(2).any(|w| w[1].0 < w[0].1);
    cmd::wait_until(Duration::from_secs(15), || {
        overlapping(&intervals(&dir.read("runs")))
    });
    let (_, _, err) = c.stop();
    let runs = intervals(&dir.read("runs"));
    let together = overlapping(&runs);
    assert!(together, "{runs:?}\n{err}");
    // Replace: each slot stops the one before it, which is recorded as replaced.
    let report = dir.p("report.json");
    let work = "trap 'echo replaced >> \"$D/replaced\"; exit 143' TERM; echo go >> \"$D/go\"; sleep 30 & wait";
    let tab =
        format!("@every 2s --overlap replace -a 1 --report {report} --job newest -- {work}\n");
    let c = Crontab::start(&dir, "replace", &tab, &["--state", &dir.p("state2")]);
    assert!(
        cmd::wait_until(Duration::from_secs(15), || dir.count("go") >= 4),
        "{}",
        c.err()
    );
    let (_, _, err) = c.stop();
    assert!(dir.count("replaced") >= 2, "{err}");
    assert!(err.contains("ended: gave up"), "{err}");
    assert!(err.contains("replaced: "), "{err}");
}

both_ways! {
    fn replace_stops_the_slot_another_replica_runs(pg) {
        let dir = Scratch::new();
        let state = pg.url("");
        let work = "trap 'echo replaced >> \"$D/replaced\"; exit 143' TERM; echo go >> \"$D/go\"; sleep 60 & wait";
        let tab = |who: &str| format!("@every 4s --overlap replace -a 1 --job shared -- echo {who} >> \"$D/who\"; {work}\n");
        let a = Crontab::start(&dir, "a", &tab("a"), &["--state", &state, "--lease-ttl", "3s"]);
        let b = Crontab::start(&dir, "b", &tab("b"), &["--state", &state, "--lease-ttl", "3s"]);
        assert!(cmd::wait_until(Duration::from_secs(30), || dir.count("replaced") >= 2), "{}\n{}", a.err(), b.err());
        let (_, _, err_a) = a.stop();
        let (_, _, err_b) = b.stop();
        assert!(format!("{err_a}{err_b}").contains("another scheduler started a newer slot") || format!("{err_a}{err_b}").contains("its scheduler started a newer slot"), "{err_a}\n{err_b}");
    }
}

#[test]
fn sigterm_is_one_stop_line_and_no_attempt_starts_after_it() {
    let dir = Scratch::new();
    let tab = "@every 1s --delay 5s -a 5 --job flaky -- echo attempt >> \"$D/attempts\"; exit 1\n\
               @every 1s --job quick -- true\n";
    let c = Crontab::start(&dir, "stop", tab, &["--state", &dir.p("state")]);
    assert!(
        cmd::wait_until(Duration::from_secs(10), || dir.count("attempts") >= 1),
        "{}",
        c.err()
    );
    // The first attempt has failed: the slot's run waits its 5 s before the second.
    cmd::wait_until(Duration::from_secs(10), || {
        c.err().contains("attempt 1/5 failed")
    });
    let stopped = Instant::now();
    let (status, _, err) = c.stop();
    assert_eq!(status, Some(143), "{err}");
    assert!(
        stopped.elapsed() < Duration::from_secs(3),
        "{:?}\n{err}",
        stopped.elapsed()
    );
    assert_eq!(dir.count("attempts"), 1, "no attempt after the stop\n{err}");
    assert_eq!(
        err.matches("stopped by SIGTERM; exit status 143").count(),
        1,
        "{err}"
    );
    assert!(
        err.contains("ended: stopped by SIGTERM before attempt 2"),
        "{err}"
    );
    // The slot stopped between attempts has no record: a later start catches it up.
    let records = fs::read_dir(dir.path("state")).unwrap().flatten();
    let gave_up = records
        .filter(|e| e.file_name().to_string_lossy().starts_with("flaky@"))
        .filter(|e| {
            fs::read_to_string(e.path())
                .unwrap_or_default()
                .contains("gave_up")
        })
        .count();
    assert_eq!(gave_up, 0, "{err}");
}

both_ways! {
    fn two_quiet_replicas_log_only_what_went_wrong(pg) {
        let dir = Scratch::new();
        let state = pg.url("");
        let tab = "@every 1s --job fine -- true\n@every 2s -a 1 --job broken -- exit 3\n";
        let a = Crontab::start(&dir, "a", tab, &["--state", &state, "-q"]);
        let b = Crontab::start(&dir, "b", tab, &["--state", &state, "-q"]);
        // Two slots of broken, and those of fine meanwhile.
        cmd::wait_until(Duration::from_secs(15), || {
            format!("{}{}", a.err(), b.err()).matches("[broken@").count() >= 2
        });
        let (_, _, err_a) = a.stop();
        let (_, _, err_b) = b.stop();
        let both = format!("{err_a}{err_b}");
        // Under -q a slot's end line stays when it did not succeed: broken's always (and
        // a slot of fine skipped for its own previous one, at most).
        for line in both.lines() {
            assert!(line.contains("] ended: ") && !line.contains("ended: succeeded"), "only the failures:\n{both}");
        }
        assert!(both.contains("[broken@"), "{both}");
        // Each failed slot is said once, by the replica that ran it.
        let mut keys: Vec<&str> = both.lines().filter_map(|l| l.split(" [").nth(1)?.split(']').next()).collect();
        let all = keys.len();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), all, "{both}");
        assert!(all >= 1, "{both}");
    }
}
