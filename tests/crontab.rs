//! `retry --crontab FILE` end to end (SPEC "A crontab of jobs"): the real binary on a
//! crontab of seconds-field and `@every` jobs, real state directories and a real
//! PostgreSQL server, directly and through PgBouncer.

use std::collections::HashSet;
use std::fs;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::both_ways;
use crate::support::{self as cmd, Scratch, retry};

/// A crontab scheduler in the background, its stdout and stderr in files.
pub struct Crontab {
    pub child: Child,
    out: std::path::PathBuf,
    err: std::path::PathBuf,
}

impl Crontab {
    pub fn start(dir: &Scratch, name: &str, tab: &str, args: &[&str]) -> Crontab {
        let file = dir.write(&format!("{name}.tab"), tab.as_bytes());
        let out = dir.path(&format!("{name}.out"));
        let err = dir.path(&format!("{name}.err"));
        let child = retry()
            .arg("--crontab")
            .arg(&file)
            .args(args)
            .env("D", dir.path(""))
            .stdout(fs::File::create(&out).unwrap())
            .stderr(fs::File::create(&err).unwrap())
            .spawn();
        Crontab { child, out, err }
    }

    /// [`Self::start`] with `extra` options and the state in `DIR/state`.
    pub fn local(dir: &Scratch, name: &str, tab: &str, extra: &[&str]) -> Crontab {
        let state = dir.p("state");
        let mut args = extra.to_vec();
        args.extend(["--state", &state]);
        Crontab::start(dir, name, tab, &args)
    }

    pub fn signal(&self, sig: Signal) {
        kill(Pid::from_raw(self.child.id() as i32), sig).unwrap();
    }

    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    pub fn err(&self) -> String {
        fs::read_to_string(&self.err).unwrap()
    }

    /// Its stdout so far.
    pub fn out(&self) -> String {
        fs::read_to_string(&self.out).unwrap()
    }

    /// Waits up to `limit` for the exit: the status (`None`: killed at the limit), stdout, stderr.
    pub fn exited_within(mut self, limit: Duration) -> (Option<i32>, String, String) {
        let status = crate::support::scheduler::status_within(&mut self.child, limit);
        let out = fs::read_to_string(&self.out).unwrap();
        (status, out, self.err())
    }

    pub fn stop(self) -> (Option<i32>, String, String) {
        self.signal(Signal::SIGTERM);
        self.exited_within(Duration::from_secs(30))
    }
}

/// `retry --crontab FILE --dry-run`, run to its end.
pub fn dry_run(file: &std::path::Path) -> crate::support::Run {
    retry().arg("--crontab").arg(file).arg("--dry-run").run()
}

impl Drop for Crontab {
    /// A test that failed midway leaves no scheduler behind.
    fn drop(&mut self) {
        crate::support::scheduler::end_child(&mut self.child);
    }
}

/// The slot keys (`JOB@SLOT`) of the labelled lines of `job` that say `text`.
fn labelled(out: &str, job: &str, text: &str) -> Vec<String> {
    out.lines()
        .filter(|l| l.ends_with(text))
        .filter_map(|l| l.split(" [").nth(1))
        .filter_map(|l| l.split("] ").next())
        .filter(|key| key.starts_with(&format!("{job}@")))
        .map(str::to_string)
        .collect()
}

#[test]
fn three_jobs_run_at_their_slots_with_whole_labelled_lines() {
    let dir = Scratch::new();
    let long = "x".repeat(3000);
    let tab = format!(
        "# env lines, per-line options, a failing job retried, a slow one skipping\n\
         GREETING=\"hello there\"\n\
         \n\
         */1 * * * * * * --job greet -- echo \"$GREETING\"; echo {long}; echo {long} >&2\n\
         @every 2s -a 3 --delay 50ms --max-delay 50ms --job flaky -- echo try; echo \"$RETRY_ATTEMPT\" >> \"$D/flaky\"; exit 1\n\
         @every 1s --job slow --overlap skip -- sleep 2.5; echo slow done; echo {long}\n"
    );
    let mut c = Crontab::local(&dir, "three", &tab, &[]);
    // Four slots of greet, three attempts of a slot of flaky, a slow run done and a slot
    // of slow skipped meanwhile.
    cmd::wait_until(Duration::from_secs(20), || {
        let (out, err) = (c.out(), c.err());
        labelled(&out, "greet", "hello there").len() >= 4
            && err.contains("ended: gave up, 3 attempts")
            && !labelled(&out, "slow", "slow done").is_empty()
            && err.contains("(--overlap skip)")
    });
    assert!(c.alive(), "{}", c.err());
    let (status, out, err) = c.stop();
    assert_eq!(status, Some(143), "{err}");
    // Every stdout line is one whole labelled line: TIMESTAMP [JOB@SLOT] line.
    for line in out.lines() {
        let (time, rest) = line.split_once(' ').unwrap();
        assert!(time.ends_with('Z') && time.len() == 24, "{line:.80}");
        assert!(rest.starts_with('['), "{line:.80}");
        let text = rest.split_once("] ").unwrap().1;
        assert!(
            text == "hello there" || text == long || text == "try" || text == "slow done",
            "an interleaved or cut line: {line:.120}"
        );
    }
    let greets = labelled(&out, "greet", "hello there");
    assert!(greets.len() >= 4, "{out:.2000}\n{err}");
    assert_eq!(
        greets.iter().collect::<HashSet<_>>().len(),
        greets.len(),
        "{greets:?}"
    );
    // stderr of the command: labelled the same way, on stderr.
    let long_err = err
        .lines()
        .filter(|l| l.contains("[greet@") && l.ends_with(&long))
        .count();
    assert!(long_err >= 4, "{err:.3000}");
    // The failing job: three attempts a slot, each slot on its own.
    let attempts = dir.read("flaky");
    assert!(attempts.starts_with("1\n2\n3\n"), "{attempts}");
    assert!(
        err.contains("[flaky@") && err.contains("ended: gave up, 3 attempts"),
        "{err}"
    );
    // The slow job: one run at a time, the slots meanwhile skipped.
    assert!(
        !labelled(&out, "slow", "slow done").is_empty(),
        "{out:.3000}"
    );
    assert!(
        err.contains("[slow@") && err.contains("(--overlap skip)"),
        "{err}"
    );
}

#[test]
fn json_output_lines_name_the_job_slot_and_stream() {
    let dir = Scratch::new();
    let tab = "@every 1s --job j -- echo out; echo err >&2\n";
    let c = Crontab::local(&dir, "json", tab, &["--log-format", "json"]);
    assert!(cmd::wait_until(Duration::from_secs(10), || {
        c.out().lines().count() >= 2
    }));
    let (status, out, err) = c.stop();
    assert_eq!(status, Some(143), "{err}");
    let first: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert!(out.starts_with("{\"time\":"), "{out}");
    assert_eq!(first["job"], "j");
    assert_eq!(first["stream"], "stdout");
    assert_eq!(first["line"], "out");
    assert!(first["slot"].as_str().unwrap().ends_with('Z'));
    let errs: Vec<serde_json::Value> = err
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|v: &serde_json::Value| v["stream"] == "stderr")
        .collect();
    assert!(errs.iter().any(|v| v["line"] == "err"), "{err}");
}

#[test]
fn raw_job_output_passes_unchanged() {
    let dir = Scratch::new();
    let tab = "@every 1s --job j -- echo plain\n";
    let c = Crontab::local(&dir, "raw", tab, &["--job-output", "raw"]);
    assert!(cmd::wait_until(Duration::from_secs(10), || {
        c.out().contains("plain")
    }));
    let (_, out, _) = c.stop();
    assert!(out.lines().all(|l| l == "plain"), "{out}");
}

/// A crontab of one job of `@every 1s` that traps SIGTERM and runs `secs`, once its
/// first slot has started.
fn slow_crontab(secs: u32, grace: &str) -> (Scratch, Crontab) {
    let dir = Scratch::new();
    let tab = format!(
        "@every 1s --job slow -- {}\n",
        crate::schedule::slow_job(&dir, secs)
    );
    let c = Crontab::local(&dir, "slow", &tab, &["--grace", grace]);
    crate::schedule::wait_lines(&dir, "started", 1, Duration::from_secs(10));
    (dir, c)
}

#[test]
fn sigterm_lets_running_slots_finish_within_the_grace_and_a_second_ends_them_at_once() {
    let (dir, c) = slow_crontab(2, "10s");
    let stopped = Instant::now();
    c.signal(Signal::SIGTERM);
    let (status, _, err) = c.exited_within(Duration::from_secs(10));
    assert_eq!(status, Some(143), "{err}");
    assert!(
        stopped.elapsed() < Duration::from_secs(4),
        "{:?}",
        stopped.elapsed()
    );
    assert_eq!(dir.read("done"), "done\n", "{err}");
    assert_eq!(dir.read("got"), "", "{err}");
    assert_eq!(dir.count("started"), 1, "no new slot started\n{err}");

    let (dir, mut c) = slow_crontab(30, "30s");
    c.signal(Signal::SIGTERM);
    std::thread::sleep(Duration::from_millis(700));
    assert!(
        c.alive(),
        "the first SIGTERM waits for the slot\n{}",
        c.err()
    );
    assert_eq!(dir.read("got"), "");
    let again = Instant::now();
    c.signal(Signal::SIGTERM);
    let (status, _, err) = c.exited_within(Duration::from_secs(10));
    assert_eq!(status, Some(143), "{err}");
    assert!(
        again.elapsed() < Duration::from_secs(2),
        "{:?}\n{err}",
        again.elapsed()
    );
    assert!(err.contains("at once"), "{err}");
}

/// (crontab text, what the one error line must say after `FILE:LINE: `).
const REFUSALS: &[(&str, usize, &str)] = &[
    ("61 * * * * true\n", 1, "'61' in the minute field: 0-59"),
    ("# c\n\n0 0 1,,2 * * true\n", 3, "an empty list element"),
    ("*/5 * * * * * true\n", 1, "six fields"),
    ("@daily\n", 1, "no command"),
    ("@daily -a 3 true\n", 1, "must end with --"),
    ("@daily -a '3 -- true\n", 1, "quote"),
    ("@daily --schedule @hourly -- true\n", 1, "--schedule"),
    ("@daily --once k -- true\n", 1, "--once"),
    ("@daily --grace=1s -- true\n", 1, "--grace"),
    (
        "@daily --metrics-listen 127.0.0.1:0 -- true\n",
        1,
        "--metrics-listen",
    ),
    ("@daily --crontab f -- true\n", 1, "--crontab"),
    ("@daily --attempts many -- true\n", 1, "--attempts"),
    ("@daily --no-such-option -- true\n", 1, "--no-such-option"),
    ("CRON_TZ=Mars/Olympus\n@daily true\n", 1, "CRON_TZ"),
    (
        "@daily --job a -- true\n@hourly --job a -- false\n",
        2,
        "line 1",
    ),
    ("0 0 30 2 * true\n", 1, "names no future time"),
];

#[test]
fn every_refusal_is_one_line_naming_file_and_line_and_nothing_runs() {
    let dir = Scratch::new();
    let mut failures = Vec::new();
    for (tab, line, want) in REFUSALS {
        let file = dir.write(
            "bad.tab",
            format!("{tab}@every 1s touch \"$D/ran\"\n").as_bytes(),
        );
        for extra in [&["--dry-run"][..], &[]] {
            let out = retry()
                .arg("--crontab")
                .arg(&file)
                .args(extra)
                .args(["--state", &dir.p("state")])
                .env("D", dir.path(""))
                .env("NO_COLOR", "1")
                .run();
            let stderr = out.stderr.trim_end();
            // The scheduler's lines start with the time, as under --schedule.
            let message = stderr.split_once(' ').map_or(stderr, |(_, m)| m);
            let prefix = format!("retry: {}:{line}: ", file.display());
            let ok = out.status == 125
                && message.starts_with(&prefix)
                && stderr.contains(want)
                && !stderr.contains('\n')
                && !dir.path("ran").exists();
            if !ok {
                failures.push(format!("{tab:?} {extra:?}: exit {}: {stderr}", out.status));
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn schedule_and_a_command_do_not_go_with_crontab() {
    let dir = Scratch::new();
    let file = dir.write("t.tab", b"@daily true\n");
    let file = file.to_string_lossy().into_owned();
    for args in [
        &["--crontab", &file, "--schedule", "@daily", "--", "true"][..],
        &["--crontab", &file, "true"],
    ] {
        let out = retry().args(args).run();
        assert_eq!(out.status, 125, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("retry: "), "{}", out.stderr);
        assert_eq!(out.stderr.trim_end().lines().count(), 1, "{}", out.stderr);
    }
}

#[test]
fn dry_run_lists_every_job_with_its_options_and_next_three_slots() {
    let dir = Scratch::new();
    let file = dir.write(
        "t.tab",
        b"CRON_TZ=Europe/Berlin\nA=1\n0 3 * * * -a 3 --job nightly -- ./report.sh\n@every 10s ./poll.sh\n",
    );
    let out = retry()
        .arg("--crontab")
        .arg(&file)
        .args(["--dry-run", "--state", &dir.p("state")])
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    let text = out.stdout_text();
    assert!(text.contains("2 jobs"), "{text}");
    assert!(
        text.contains("job nightly") && text.contains("Europe/Berlin"),
        "{text}"
    );
    assert!(
        text.contains("-a 3 --job nightly (over the command line's)"),
        "{text}"
    );
    assert!(text.contains("environment: A=1"), "{text}");
    assert!(text.contains("job poll.sh-"), "{text}");
    assert_eq!(text.matches("next slots:").count(), 2, "{text}");
}

/// `curl -sS URL`: the status code and the body.
fn get(url: &str) -> (String, String) {
    let out = crate::support::Invocation::of("curl")
        .args(["-sS", "--max-time", "5", "-w", "\n%{http_code}", url])
        .run();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", ""));
    (code.to_string(), body.trim_end().to_string())
}

#[test]
fn metrics_serve_every_job_s_series_and_healthz_says_the_loop_is_alive() {
    let dir = Scratch::new();
    let tab = "@every 1s -a 2 --delay 10ms --job bad -- exit 1\n@every 1s --job good -- true\n";
    let c = Crontab::local(&dir, "metrics", tab, &["--metrics-listen", "127.0.0.1:0"]);
    let mut url = String::new();
    assert!(
        cmd::wait_until(Duration::from_secs(10), || {
            url = c
                .err()
                .lines()
                .find_map(|l| l.split("metrics at ").nth(1))
                .and_then(|rest| rest.split(',').next())
                .unwrap_or_default()
                .to_string();
            !url.is_empty()
        }),
        "{}",
        c.err()
    );
    let series = |text: &str, name: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse().ok()))
            .unwrap_or(-1.0)
    };
    let mut text = String::new();
    assert!(
        cmd::wait_until(Duration::from_secs(15), || {
            text = get(&url).1;
            series(
                &text,
                r#"retry_slots_total{retry_job="bad",outcome="gave_up"}"#,
            ) >= 2.0
                && series(
                    &text,
                    r#"retry_slots_total{retry_job="good",outcome="succeeded"}"#,
                ) >= 2.0
        }),
        "{text}\n{}",
        c.err()
    );
    // Two attempts a slot of the failing job, read back from the slot's record.
    let attempts = series(&text, r#"retry_attempts_total{retry_job="bad"}"#);
    let gave_up = series(
        &text,
        r#"retry_slots_total{retry_job="bad",outcome="gave_up"}"#,
    );
    assert!(attempts >= 2.0 * gave_up, "{text}");
    assert!(
        series(&text, r#"retry_next_slot_seconds{retry_job="good"}"#) > 0.0,
        "{text}"
    );
    let (code, body) = get(&url.replace("/metrics", "/healthz"));
    assert_eq!((code.as_str(), body.as_str()), ("200", "ok"), "{}", c.err());
    let (status, _, err) = c.stop();
    assert_eq!(status, Some(143), "{err}");
}

fn count_keys(file: &str) -> Vec<String> {
    fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

both_ways! {
    fn two_replicas_run_each_slot_of_each_job_once(pg) {
        let dir = Scratch::new();
        let state = pg.url("");
        let tab = "@every 1s --job a -- echo \"$RETRY_IDEMPOTENCY_KEY\" >> \"$D/a\"\n\
                   @every 1s --job b -- echo \"$RETRY_IDEMPOTENCY_KEY\" >> \"$D/b\"\n";
        let args = ["--catch-up", "none", "--state", &state];
        let one = Crontab::start(&dir, "one", tab, &args);
        let two = Crontab::start(&dir, "two", tab, &args);
        assert!(cmd::wait_until(Duration::from_secs(30), || {
            dir.count("a") >= 11 && dir.count("b") >= 11
        }), "{}\n{}", one.err(), two.err());
        let (s1, _, e1) = one.stop();
        let (s2, _, e2) = two.stop();
        assert_eq!((s1, s2), (Some(143), Some(143)), "{e1}\n{e2}");
        for job in ["a", "b"] {
            let keys = count_keys(&dir.p(job));
            let unique: HashSet<&String> = keys.iter().collect();
            assert!(keys.len() >= 11, "{job}: {keys:?}");
            assert_eq!(unique.len(), keys.len(), "a slot of {job} ran twice: {keys:?}\n{e1}\n{e2}");
        }
        // Both replicas took part, and each says which slots it ran.
        let ran = |e: &str| e.matches("ended: succeeded").count();
        assert!(ran(&e1) + ran(&e2) >= 22, "{e1}\n{e2}");
    }
}

#[test]
fn a_slot_s_command_reads_an_empty_stdin() {
    // A slot's command reads an empty stdin, as under --schedule.
    let dir = Scratch::new();
    let tab = "@every 1s --job s -- wc -c > \"$D/stdin\"\n";
    let c = Crontab::local(&dir, "stdin", tab, &[]);
    assert!(cmd::wait_until(Duration::from_secs(10), || dir
        .read("stdin")
        .trim()
        == "0"));
    drop(c.stop());
}

#[test]
fn sighup_with_a_new_line_starts_that_job_and_a_broken_line_keeps_the_old_table() {
    let dir = Scratch::new();
    let a = "@every 1s --job a -- echo a >> \"$D/a\"\n";
    let c = Crontab::local(&dir, "hup", a, &[]);
    crate::schedule::wait_lines(&dir, "a", 1, Duration::from_secs(10));
    let file = dir.path("hup.tab");
    // A broken line: the old table goes on, and the error names FILE:LINE.
    fs::write(
        &file,
        format!("{a}@every 1s --job b -- echo b >> \"$D/b\"\n61 * * * * true\n"),
    )
    .unwrap();
    c.signal(Signal::SIGHUP);
    let named = format!("{}:3: CRON: '61' in the minute field", file.display());
    assert!(
        cmd::wait_until(Duration::from_secs(5), || c.err().contains(&named)),
        "{}",
        c.err()
    );
    let a_then = dir.count("a");
    // A window as long as the one in which job b of the broken file would have run.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(dir.count("a") > a_then, "job a goes on\n{}", c.err());
    assert_eq!(
        dir.count("b"),
        0,
        "nothing of the broken file runs\n{}",
        c.err()
    );
    // A valid file with a new line: job b starts, job a goes on, the scheduler too.
    fs::write(
        &file,
        format!("{a}@every 1s --job b -- echo b >> \"$D/b\"\n"),
    )
    .unwrap();
    c.signal(Signal::SIGHUP);
    crate::schedule::wait_lines(&dir, "b", 2, Duration::from_secs(10));
    let a_then = dir.count("a");
    let goes_on = cmd::wait_until(Duration::from_millis(1500), || dir.count("a") > a_then);
    assert!(goes_on, "{}", c.err());
    // A change to the file alone is noticed within 5 s: job a removed.
    fs::write(&file, "@every 1s --job b -- echo b >> \"$D/b\"\n").unwrap();
    assert!(
        cmd::wait_until(Duration::from_secs(6), || c
            .err()
            .contains("0 changed, 1 stopped (a)")),
        "{}",
        c.err()
    );
    std::thread::sleep(Duration::from_millis(300));
    let a_then = dir.count("a");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(dir.count("a"), a_then, "{}", c.err());
    let (status, _, err) = c.stop();
    assert_eq!(status, Some(143), "SIGHUP never stopped it\n{err}");
}

/// Whether strace can trace here (ptrace allowed).
fn strace_works() -> bool {
    std::process::Command::new("strace")
        .args(["-qq", "-o", "/dev/null", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_slot_s_state_work_lists_no_directory_however_many_records_and_counters() {
    if !cmd::privileged("strace (ptrace)", strace_works()) {
        return;
    }
    let dir = Scratch::new();
    let state = dir.path("state");
    // What 20 s of 100 jobs of `@every 1s` leave: 2,000 records and fencing counters.
    fs::create_dir_all(state.join("fencing")).unwrap();
    for n in 0..2000 {
        let key = format!(
            "old{}@2026-01-01T00:{:02}:{:02}Z",
            n / 60,
            n / 60 % 60,
            n % 60
        );
        let record = format!(
            r#"{{"key":"{key}","succeeded_at":"2026-01-01T00:00:00.000Z","host":"h","pid":1,"command":[],"attempts":1}}"#
        );
        fs::write(state.join(format!("{key}.json")), record).unwrap();
        let counter = format!("{{\"lock\":\"--once key {key:?}\",\"token\":5}}");
        fs::write(state.join(format!("fencing/{n:032x}.json")), counter).unwrap();
    }
    let tab = dir.write(
        "t.tab",
        b"@every 1s --job j -- echo \"$RETRY_FENCING_TOKEN\" >> \"$D/ran\"\n",
    );
    let trace = dir.p("trace");
    let mut tracer = cmd::Invocation::of("strace")
        .args([
            "-f",
            "-qq",
            "-v",
            "-y",
            "-s",
            "64",
            "-e",
            "trace=execve,getdents64",
        ])
        .args(["-o", &trace, cmd::bin(), "--crontab"])
        .arg(&tab)
        .args(["--catch-up", "none", "--state", &dir.p("state")])
        .env("D", dir.path(""))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let ran = cmd::wait_until(Duration::from_secs(20), || dir.count("ran") >= 2);
    // strace blocks SIGTERM itself: the scheduler gets it, and strace ends with it.
    let children = format!("/proc/{0}/task/{0}/children", tracer.id());
    let scheduler: i32 = fs::read_to_string(children)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    kill(Pid::from_raw(scheduler), Signal::SIGTERM).unwrap();
    tracer.wait().unwrap();
    assert!(ran, "no two slots ran under strace");
    let tokens = dir.read("ran");
    assert!(
        tokens
            .lines()
            .all(|t| t.parse::<i64>().is_ok_and(|t| t > 0)),
        "each slot took a fencing token: {tokens}"
    );
    let text = fs::read_to_string(&trace).unwrap();
    let pid = |line: &str| line.split_whitespace().next().unwrap_or("").to_string();
    let slots: HashSet<String> = text
        .lines()
        .filter(|l| l.contains("execve(") && l.contains("\"--run-slot\""))
        .map(pid)
        .collect();
    assert!(slots.len() >= 2, "{text:.3000}");
    let state = state.display().to_string();
    let listed: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("getdents64(") && l.contains(&state))
        .filter(|l| slots.contains(&pid(l)))
        .collect();
    assert!(listed.is_empty(), "a slot listed the state: {listed:?}");
}

#[test]
fn a_shell_line_chooses_the_shell_of_the_lines_below_it() {
    let dir = Scratch::new();
    let tab = "@every 1s --job plain -- echo sh >> \"$D/plain\"\n\
               SHELL=/bin/bash\n\
               @every 1s --job bashy -- [[ -n \"$BASH_VERSION\" ]] && echo \"$SHELL\" >> \"$D/bashy\"\n";
    let file = dir.write("shell.tab", tab.as_bytes());
    let dry = dry_run(&file);
    assert_eq!(dry.status, 0, "{}", dry.stderr);
    assert!(
        dry.stdout_text().contains("line 3: /bin/bash -c"),
        "{}",
        dry.stdout_text()
    );
    assert!(
        dry.stdout_text().contains("line 1: /bin/sh -c"),
        "{}",
        dry.stdout_text()
    );
    let c = Crontab::local(&dir, "shell", tab, &[]);
    crate::schedule::wait_lines(&dir, "bashy", 1, Duration::from_secs(10));
    let (status, _, err) = c.stop();
    assert_eq!(status, Some(143), "{err}");
    assert_eq!(
        dir.read("bashy").lines().next(),
        Some("/bin/bash"),
        "SHELL is in the jobs' environment too"
    );
    // A SHELL that cannot run is refused naming the line, at start and by the dry run.
    let bad = dir.write("bad.tab", b"SHELL=/nonexistent/bash\n@daily true\n");
    let out = dry_run(&bad);
    assert_eq!(out.status, 125);
    assert!(
        out.stderr
            .contains("bad.tab:1: SHELL=/nonexistent/bash: not an executable file"),
        "{}",
        out.stderr
    );
    let relative = dir.write("rel.tab", b"SHELL=bash\n@daily true\n");
    let out = dry_run(&relative);
    assert!(
        out.stderr
            .contains("rel.tab:1: SHELL=bash: expected an absolute path"),
        "{}",
        out.stderr
    );
}

#[test]
fn mailto_random_delay_and_user_are_taken_as_cronie_and_supercronic_mean_them() {
    let dir = Scratch::new();
    let start = |tab: &str| {
        let c = Crontab::local(&dir, "mail", tab, &[]);
        // The table is read, and its warnings said, before the jobs' slots are.
        cmd::wait_until(Duration::from_secs(10), || c.err().contains("next slot"));
        c.stop().2
    };
    let silent = start("MAILTO=\"\"\n@yearly true\n");
    assert!(!silent.contains("MAILTO"), "{silent}");
    let warned = start("MAILTO=ops@example.test\nUSER=app\n@yearly true\n");
    assert_eq!(warned.matches("warning: ").count(), 2, "{warned}");
    assert!(
        warned.contains("MAILTO=ops@example.test: retry sends no mail; an --on-give-up hook"),
        "{warned}"
    );
    assert!(
        warned.contains("USER=app: retry runs every job as the user it runs as"),
        "{warned}"
    );
    let tab = "RANDOM_DELAY=1\n@daily --job spread -- true\n@daily --splay 5s --job own -- true\n";
    let file = dir.write("delay.tab", tab.as_bytes());
    let dry = dry_run(&file).stdout_text();
    assert_eq!(
        dry.matches("RANDOM_DELAY=1: each slot starts up to 1m after its time")
            .count(),
        2,
        "{dry}"
    );
    let env = dir.write(
        "env.tab",
        b"RANDOM_DELAY=1\nMAILTO=\"\"\n@daily --job e -- env\n",
    );
    let dry = dry_run(&env).stdout_text();
    assert!(
        !dry.contains("environment: RANDOM_DELAY") && !dry.contains("environment: MAILTO"),
        "settings, not the jobs' environment\n{dry}"
    );
    let bad = dir.write("bad.tab", b"RANDOM_DELAY=2000\n@daily true\n");
    let out = dry_run(&bad);
    assert_eq!(out.status, 125);
    assert!(
        out.stderr
            .contains("bad.tab:1: RANDOM_DELAY=2000: expected whole minutes from 0 to 1440"),
        "{}",
        out.stderr
    );
}

#[test]
fn reboot_runs_once_at_each_start_never_at_a_reload_nor_by_a_catch_up() {
    let dir = Scratch::new();
    let state = dir.p("state");
    let tab = "@reboot --job boot -- echo \"$RETRY_IDEMPOTENCY_KEY\" >> \"$D/boots\"\n\
               @every 1s --catch-up all --job tick -- echo tick >> \"$D/ticks\"\n";
    let c = Crontab::start(&dir, "boot", tab, &["--state", &state]);
    crate::schedule::wait_lines(&dir, "ticks", 2, Duration::from_secs(10));
    assert_eq!(dir.count("boots"), 1, "{}", c.err());
    assert!(c.err().contains("[boot@boot-"), "{}", c.err());
    // A reload with a new @reboot line runs neither.
    let more = format!("{tab}@reboot --job boot2 -- echo again >> \"$D/boots\"\n");
    fs::write(dir.path("boot.tab"), more).unwrap();
    c.signal(Signal::SIGHUP);
    crate::schedule::wait_lines(&dir, "ticks", 4, Duration::from_secs(10));
    let (status, _, err) = c.stop();
    assert_eq!(status, Some(143), "{err}");
    assert_eq!(dir.count("boots"), 1, "{err}");
    // No record of it: a second start runs it again, once, with a key of its own.
    let records = fs::read_dir(&state).unwrap().flatten();
    assert!(
        !records
            .into_iter()
            .any(|e| e.file_name().to_string_lossy().starts_with("boot")),
        "no record"
    );
    std::thread::sleep(Duration::from_millis(1100));
    let c = Crontab::start(&dir, "boot", tab, &["--state", &state]);
    crate::schedule::wait_lines(&dir, "boots", 2, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(500));
    let (_, _, err) = c.stop();
    let keys: HashSet<String> = dir.read("boots").lines().map(str::to_string).collect();
    assert_eq!(keys.len(), 2, "two starts, two keys\n{err}");
    assert!(!err.contains("running missed slot boot"), "{err}");
    // --schedule @reboot names no time: refused with the way to do it.
    let out = retry().args(["--schedule", "@reboot", "--", "true"]).run();
    assert_eq!(out.status, 125);
    assert!(
        out.stderr
            .contains("run the command before the scheduler starts"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_calendar_line_runs_on_its_systemd_calendar_expression() {
    let dir = Scratch::new();
    let tab = "@calendar 'Mon..Fri 09:00 Europe/Berlin' --job standup -- true\n\
               @calendar '*:*:0/2' --job everytwo -- date +%s >> \"$D/two\"\n";
    let file = dir.write("cal.tab", tab.as_bytes());
    let dry = dry_run(&file);
    assert_eq!(dry.status, 0, "{}", dry.stderr);
    let text = dry.stdout_text();
    assert!(
        text.contains("schedule: \"Mon..Fri 09:00 Europe/Berlin\" in Europe/Berlin"),
        "{text}"
    );
    assert!(text.contains("09:00:00 CE"), "{text}");
    let c = Crontab::local(&dir, "cal", tab, &[]);
    crate::schedule::wait_lines(&dir, "two", 2, Duration::from_secs(10));
    let (_, _, err) = c.stop();
    // Its slots are the even seconds (a caught-up one may run in an odd second).
    let slots: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("] started"))
        .filter_map(|l| l.split("[everytwo@").nth(1))
        .filter_map(|rest| rest.split("Z]").next())
        .collect();
    assert!(slots.len() >= 2, "{err}");
    for slot in slots {
        let second: u64 = slot.rsplit(':').next().unwrap().parse().unwrap();
        assert_eq!(second % 2, 0, "{slot}: {err}");
    }
    let unquoted = dir.write("unq.tab", b"@calendar hourly true\n");
    let out = dry_run(&unquoted);
    assert!(
        out.stderr
            .contains("unq.tab:1: @calendar: quote the expression"),
        "{}",
        out.stderr
    );
}

#[test]
fn job_output_labelled_labels_a_schedule_s_output_too() {
    let dir = Scratch::new();
    let out = dir.path("out");
    let mut child = retry()
        .args([
            "--schedule",
            "@every 1s",
            "--job-output",
            "labelled",
            "--state",
            &dir.p("state"),
            "--job",
            "lab",
            "--",
            "echo",
            "hello",
        ])
        .stdout(fs::File::create(&out).unwrap())
        .stderr(Stdio::null())
        .spawn();
    assert!(cmd::wait_until(Duration::from_secs(10), || {
        fs::read_to_string(&out)
            .unwrap_or_default()
            .contains("hello")
    }));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let _ = child.wait();
    let text = fs::read_to_string(&out).unwrap();
    assert!(
        text.lines()
            .all(|l| l.contains(" [lab@") && l.ends_with("] hello")),
        "{text}"
    );
}

#[test]
fn random_delay_spreads_the_slots_of_its_lines_within_its_minutes() {
    let dir = Scratch::new();
    let jobs = 8;
    let mut tab = String::from("RANDOM_DELAY=1\n");
    for i in 0..jobs {
        tab.push_str(&format!("@every 1s --job spread{i} -- true\n"));
    }
    let cron = Crontab::local(&dir, "spread", &tab, &["-v"]);
    let said = |err: &str| {
        err.lines()
            .filter_map(|l| l.split_once("splay: sleeping ")?.1.split_once(" before"))
            .map(|(delay, rest)| (delay.to_string(), rest.to_string()))
            .collect::<Vec<_>>()
    };
    let all_said =
        crate::support::wait_until(Duration::from_secs(20), || said(&cron.err()).len() >= jobs);
    let (_, _, err) = cron.stop();
    assert!(all_said, "each line's first slot draws its delay\n{err}");
    let delays = said(&err);
    for (delay, rest) in &delays {
        let seconds = humantime::parse_duration(delay).unwrap().as_secs_f64();
        // U(0, 1m) includes its end, and the log rounds to a tenth: 59.96 s says "60s".
        assert!(seconds <= 60.0, "within RANDOM_DELAY's minute: {delay}");
        assert!(rest.contains("(up to 1m,"), "{rest}");
    }
    let distinct: std::collections::HashSet<_> = delays.iter().map(|(d, _)| d).collect();
    assert!(
        distinct.len() > jobs / 2,
        "spread, not one delay for all: {delays:?}"
    );
}
