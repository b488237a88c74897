//! Running on a schedule, end to end: the real binary on a seconds-field CRON, real
//! state directories and a real PostgreSQL server (`each_store!` for what every store
//! does alike). Each run appends its idempotency key (one per slot,
//! `RETRY_IDEMPOTENCY_KEY`) to a file, so "each slot once" is "no key twice" and a rerun
//! of a slot is the same key again.

use std::collections::HashSet;
use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::time::{Duration, Instant};

use crate::support::scheduler::{Schedule, Scheduler, status_within};
use crate::support::stall::{Proxy, When};
use crate::support::{self as cmd, Scratch, retry, tcp_connections_to};
use crate::{both_ways, each_store};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The keys in `file`, one a line, in order.
fn keys(dir: &Scratch, file: &str) -> Vec<String> {
    dir.read(file).lines().map(str::to_string).collect()
}

fn assert_no_key_twice(keys: &[String], logs: &str) {
    let unique: HashSet<&String> = keys.iter().collect();
    assert_eq!(
        unique.len(),
        keys.len(),
        "a slot ran twice: {keys:?}\n{logs}"
    );
}

/// Waits until `file` has `n` lines, for up to `limit`.
pub fn wait_lines(dir: &Scratch, file: &str, n: usize, limit: Duration) {
    assert!(
        cmd::wait_until(limit, || dir.count(file) >= n),
        "{file} did not reach {n} lines"
    );
}

/// The slot records in the `--state` directory `state` (not the job's first-start record).
fn slot_records(state: &str) -> Vec<std::path::PathBuf> {
    fs::read_dir(state)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            name.ends_with(".json") && name.contains('@')
        })
        .collect()
}

/// Writes the first-start record of `job` into the `--state` directory `state`, `ago`
/// before now: the job ran before, so catch-up looks back that far.
pub fn first_started(state: &str, job: &str, ago: Duration) {
    let at = std::time::SystemTime::now() - ago;
    let at = crate::support::time::rfc3339_seconds(at);
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(state)
        .unwrap();
    let record = serde_json::json!({
        "key": format!("{job}#first-start"), "status": "succeeded", "succeeded_at": at,
        "host": "test", "pid": 1, "command": ["true"], "attempts": 0,
    });
    fs::write(
        format!("{state}/{job}#first-start.json"),
        record.to_string(),
    )
    .unwrap();
}

/// Waits until a slot's marker in the `--state` directory `state` says it succeeded.
fn wait_for_success_record(state: &str, limit: Duration) {
    let recorded = || {
        slot_records(state)
            .iter()
            .any(|path| fs::read_to_string(path).is_ok_and(|t| t.contains("\"succeeded\"")))
    };
    assert!(
        cmd::wait_until(limit, recorded),
        "no slot in {state} was recorded as succeeded"
    );
}

/// A CRON that fires once a minute, `ahead` seconds from now.
fn once_a_minute_in(ahead: u32) -> String {
    let second = (jiff::Timestamp::now().as_second() + i64::from(ahead)).rem_euclid(60);
    format!("{second} * * * * * *")
}

/// A scheduler `JOB` on `@every 1s` with no catch-up, the state in `DIR/state`,
/// `extra` options and `work` as the command.
pub fn every_second(dir: &Scratch, job: &str, extra: &[&str], work: &str) -> Scheduler {
    Schedule::every_second(job)
        .args(extra)
        .state(&dir.p("state"))
        .start(dir, "s", &[work])
}

/// How many slot records in the state directory have `status`.
fn records_with(state: &str, status: &str) -> usize {
    let quoted = format!("\"{status}\"");
    fs::read_dir(state)
        .into_iter()
        .flatten()
        .filter_map(|e| fs::read_to_string(e.unwrap().path()).ok())
        .filter(|t| t.contains(&quoted))
        .count()
}

/// A command that appends its slot's key to `file`.
pub fn append_key(dir: &Scratch, file: &str) -> String {
    dir.script(
        &format!("{file}.sh"),
        &format!("echo \"$RETRY_IDEMPOTENCY_KEY\" >> \"$D/{file}\""),
    )
}

each_store! {
    fn two_schedulers_sharing_the_state_run_each_slot_once(store) {
        let dir = Scratch::new();
        let work = append_key(&dir, "runs");
        let shared = Schedule::every_second("shared").state(&store.state());
        let a = shared.start(&dir, "a", &[&work]);
        let b = shared.start(&dir, "b", &[&work]);
        // Four slots: a second run of each of the first three would have shown by now.
        wait_lines(&dir, "runs", 4, Duration::from_secs(20));
        let (status_a, log_a) = a.stop();
        let (status_b, log_b) = b.stop();
        let logs = format!("{log_a}\n---\n{log_b}");
        assert_eq!((status_a, status_b), (143, 143), "{logs}");
        let keys = keys(&dir, "runs");
        assert!(keys.len() >= 3, "slots ran: {keys:?}\n{logs}");
        assert_no_key_twice(&keys, &logs);
        let recorded = store.succeeded_slots("shared");
        assert!(recorded >= 3, "{recorded} slot records\n{logs}");
    }
}

#[test]
fn a_slot_killed_mid_run_runs_again_with_the_same_key_and_a_finished_one_never() {
    let dir = Scratch::new();
    let state = dir.p("state");
    // The first run of a slot hangs (until killed); a rerun finishes at once.
    let work = dir.script(
        "work.sh",
        "if [ ! -e \"$D/rerun\" ]; then\n\
           touch \"$D/rerun\"; echo $$ > \"$D/pid\"\n\
           echo \"$RETRY_IDEMPOTENCY_KEY\" >> \"$D/starts\"; exec sleep 60\n\
         fi\n\
         echo \"$RETRY_IDEMPOTENCY_KEY\" >> \"$D/starts\"\n\
         echo \"$RETRY_IDEMPOTENCY_KEY\" >> \"$D/ends\"",
    );
    let cron = once_a_minute_in(2);
    let nightly = |catch_up| {
        Schedule::new(&cron)
            .job("nightly")
            .catch_up(catch_up)
            .window("1m")
            .state(&state)
    };
    let first = nightly("none").start(&dir, "first", &[&work]);
    wait_lines(&dir, "starts", 1, Duration::from_secs(10));
    let log = first.kill9();
    // The command may outlive retry's SIGKILL; it must not finish the slot.
    let pid: i32 = dir.read("pid").trim().parse().unwrap();
    let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);

    let second = nightly("latest").start(&dir, "second", &[&work]);
    wait_lines(&dir, "ends", 1, Duration::from_secs(10));
    // Stopped only once the slot is recorded: a SIGTERM that reaches the command before
    // it has exited interrupts the attempt, and an interrupted attempt records nothing.
    wait_for_success_record(&state, Duration::from_secs(10));
    let (_, log2) = second.stop();
    let starts = keys(&dir, "starts");
    assert_eq!(
        starts.len(),
        2,
        "the interrupted slot ran again once\n{log}\n{log2}"
    );
    assert_eq!(
        starts[0], starts[1],
        "the rerun sends the same idempotency key"
    );
    assert_eq!(keys(&dir, "ends"), vec![starts[0].clone()]);
    assert!(
        log2.contains("catch-up: running missed slot nightly@"),
        "{log2}"
    );

    // A third start finds the slot finished: it is not run again.
    let third = nightly("latest").start(&dir, "third", &[&work]);
    std::thread::sleep(Duration::from_millis(1500));
    let (status, log3) = third.stop();
    assert_eq!(status, 143, "{log3}");
    // On a slow machine a later slot may have been missed meanwhile and caught up: only
    // the finished slot's key must never start again.
    let later = keys(&dir, "starts");
    assert!(
        later[2..].iter().all(|key| *key != starts[0]),
        "a finished slot never runs again\n{log3}"
    );
    assert!(!log3.contains("running missed slot"), "{log3}");
}

#[test]
fn a_slot_that_gave_up_is_not_caught_up() {
    let dir = Scratch::new();
    let state = dir.p("state");
    let work = dir.script("fail.sh", "echo run >> \"$D/runs\"; exit 1");
    let cron = once_a_minute_in(2);
    let flaky = |catch_up| {
        Schedule::new(&cron)
            .job("flaky")
            .args(&["-a", "1"])
            .catch_up(catch_up)
            .window("1m")
            .state(&state)
    };
    let first = flaky("none").start(&dir, "first", &[&work]);
    wait_lines(&dir, "runs", 1, Duration::from_secs(10));
    first.logs_within(Duration::from_secs(10), "gave up");
    let (_, log) = first.stop();
    assert!(log.contains("gave up"), "{log}");
    let second = flaky("latest").start(&dir, "second", &[&work]);
    std::thread::sleep(Duration::from_millis(1500));
    let (_, log2) = second.stop();
    assert_eq!(dir.count("runs"), 1, "{log2}");
    assert!(!log2.contains("running missed slot"), "{log2}");
    assert_eq!(
        slot_records(&state).len(),
        1,
        "one record: the slot that gave up"
    );
}

/// Starts a scheduler on a state with no slot record of a job that first started a
/// minute ago, with a 3 s window (3 missed slots of `@every 1s`), and returns the
/// keys it ran first and its log, once it has run `runs` missed slots.
fn catch_up_from_state(catch_up: &str, runs: usize) -> (Vec<String>, String) {
    let dir = Scratch::new();
    let work = append_key(&dir, "runs");
    let state = dir.p("state");
    first_started(&state, "catch", Duration::from_secs(60));
    let s = Schedule::new("@every 1s")
        .job("catch")
        .catch_up(catch_up)
        .window("3s")
        .state(&state)
        .start(&dir, "s", &[&work]);
    // The catch-up is done once its runs are (the slots of now may come between them)
    // and its line about the dropped ones, which comes first, is out.
    wait_lines(&dir, "runs", runs, Duration::from_secs(10));
    cmd::wait_until(Duration::from_secs(10), || {
        let log = s.log();
        log.contains("catch-up: ") && log.matches("running missed slot").count() >= runs
    });
    let (_, log) = s.stop();
    (keys(&dir, "runs"), log)
}

#[test]
fn catch_up_latest_all_and_none_from_state_say_what_they_did() {
    let (runs, log) = catch_up_from_state("all", 3);
    assert_eq!(
        log.matches("catch-up: running missed slot catch@").count(),
        3,
        "{log}"
    );
    assert!(runs.len() >= 3, "{runs:?}\n{log}");
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("running missed slot"))
        .collect();
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(lines, sorted, "missed slots run oldest first");

    let (_, log) = catch_up_from_state("latest", 1);
    assert_eq!(
        log.matches("catch-up: running missed slot catch@").count(),
        1,
        "{log}"
    );
    assert!(
        log.contains("catch-up: dropped 2 older missed slots of job catch (--catch-up latest)"),
        "{log}"
    );

    let (_, log) = catch_up_from_state("none", 0);
    assert!(!log.contains("running missed slot"), "{log}");
    assert!(
        log.contains("catch-up: dropped 3 missed slots of job catch (--catch-up none)"),
        "{log}"
    );
}

#[test]
fn overlap_skip_logs_and_records_the_skipped_slot() {
    let dir = Scratch::new();
    let state = dir.p("state");
    let work = dir.script(
        "slow.sh",
        "echo \"$RETRY_IDEMPOTENCY_KEY\" >> \"$D/runs\"; sleep 1.6",
    );
    let s = every_second(&dir, "slow", &[], &work);
    // Two slots skipped (each recorded), each after a run that outlasted it.
    cmd::wait_until(Duration::from_secs(15), || {
        records_with(&state, "skipped") >= 2
    });
    let (_, log) = s.stop();
    let skip_line = log
        .lines()
        .find(|l| l.contains("] ended: skipped, 0 attempts in "));
    assert!(
        skip_line.is_some_and(|l| l
            .ends_with(", exit status 0 (the job's previous slot still runs (--overlap skip))")),
        "{log}"
    );
    let skipped = records_with(&state, "skipped");
    assert!(skipped >= 1, "skipped slots are recorded\n{log}");
    assert_no_key_twice(&keys(&dir, "runs"), &log);
}

/// A job of `secs` seconds every 2 s with `--overlap queue`, `--catch-up catch_up` and
/// `--catch-up-window window`, stopped once `runs` runs have started: the log and the
/// keys that ran (never one twice), with nothing skipped.
fn queued_every_2s(secs: &str, catch_up: &str, window: &str, runs: usize) -> (String, Vec<String>) {
    let dir = Scratch::new();
    let state = dir.p("state");
    let work = dir.script(
        "slow.sh",
        &format!("echo \"$RETRY_IDEMPOTENCY_KEY\" >> \"$D/runs\"; sleep {secs}"),
    );
    let s = Schedule::new("@every 2s")
        .job("queued")
        .catch_up(catch_up)
        .args(&["--overlap", "queue"])
        .window(window)
        .state(&state)
        .start(&dir, "s", &[&work]);
    wait_lines(&dir, "runs", runs, Duration::from_secs(20));
    let (_, log) = s.stop();
    assert!(!log.contains("skipped"), "{log}");
    let runs = keys(&dir, "runs");
    assert_no_key_twice(&runs, &log);
    (log, runs)
}

#[test]
fn overlap_queue_runs_the_slot_after_the_long_run() {
    let (log, runs) = queued_every_2s("1.3", "none", "1m", 3);
    // A 1.3 s job every 2 s never overlaps: nothing queued, every slot ran.
    assert!(runs.len() >= 2, "{runs:?}\n{log}");

    // No window: nothing is caught up at start, so every catch-up is a queued slot.
    let (log, runs) = queued_every_2s("2.5", "latest", "0s", 3);
    // The slot that came during a 2.5 s run runs right after it.
    assert!(
        log.matches("catch-up: running missed slot queued@").count() >= 1,
        "{log}"
    );
    assert!(runs.len() >= 2, "{runs:?}\n{log}");
}

/// The local dates of the slots a dry run lists, and the line of each.
fn slot_dates(text: &str) -> Vec<(jiff::civil::Date, &str)> {
    text.lines()
        .filter(|l| l.starts_with("  ") && l.ends_with("Z)"))
        .map(|l| (l.trim()[..10].parse().expect("a date"), l))
        .collect()
}

#[test]
fn a_calendar_expression_is_read_in_its_own_zone_and_the_dry_run_names_it() {
    let dir = Scratch::new();
    let state = dir.p("state");
    let out = Schedule::new("Mon..Fri 09:00 Europe/Berlin")
        .args(&["--tz", "America/New_York"])
        .job("standup")
        .state(&state)
        .dry_run(&["true"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let text = out.stdout_text();
    assert!(
        text.contains("schedule: \"Mon..Fri 09:00 Europe/Berlin\" in Europe/Berlin"),
        "{text}"
    );
    let slots = slot_dates(&text);
    assert_eq!(slots.len(), 5, "{text}");
    for (date, line) in slots {
        assert!(line.contains(" 09:00:00 CE"), "{line}");
        let weekend = [jiff::civil::Weekday::Saturday, jiff::civil::Weekday::Sunday];
        assert!(!weekend.contains(&date.weekday()), "{line}");
    }
    // cronexpr's named weekdays with #: the second Monday of each month.
    let out = Schedule::new("0 9 * * MON#2")
        .args(&["--tz", "UTC"])
        .job("second")
        .state(&state)
        .dry_run(&["true"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let text = out.stdout_text();
    let slots = slot_dates(&text);
    assert_eq!(slots.len(), 5, "{text}");
    for (date, line) in slots {
        assert_eq!(date.weekday(), jiff::civil::Weekday::Monday, "{line}");
        assert!((8..=14).contains(&date.day()), "{line}");
    }
    // A value neither grammar reads names both, in one line.
    for bad in ["Mon..Fri 25:00", "* * * *", "every weekday"] {
        let out = cmd::run(&["--schedule", bad, "--", "true"]);
        assert_eq!(out.status, 125, "{bad}: {}", out.stderr);
        let line = out.stderr.trim_end();
        assert!(!line.contains('\n'), "{line}");
        assert!(
            line.starts_with("retry: --schedule: ")
                && line.contains("five fields")
                && line.contains("calendar expression"),
            "{bad}: {line}"
        );
    }
}

#[test]
fn dry_run_prints_the_next_five_slots_in_the_zone_and_utc_and_the_catch_up() {
    let dir = Scratch::new();
    let state = dir.p("state");
    let report = Schedule::new("30 2 * * *").job("report");
    let fresh = report.clone().state(&state).dry_run(&["true"]);
    assert!(
        fresh.stdout_text().contains("first start: none recorded")
            && fresh
                .stdout_text()
                .contains("catch-up: no missed slot would run"),
        "a first start catches up nothing:\n{}",
        fresh.stdout_text()
    );
    assert!(!dir.path("state").exists(), "a dry run creates nothing");
    first_started(&state, "report", Duration::from_secs(3 * 86400));
    first_started(&state, "tick", Duration::from_secs(60));
    let out = report
        .args(&["--tz", "America/New_York"])
        .state(&state)
        .dry_run(&["true"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let text = out.stdout_text();
    let slots: Vec<&str> = text.lines().filter(|l| l.contains(" 02:30:00 E")).collect();
    assert_eq!(
        slots.len(),
        6,
        "five next slots and one to catch up:\n{text}"
    );
    for line in &slots {
        assert!(
            line.contains("T06:30:00Z)") || line.contains("T07:30:00Z)"),
            "{line}"
        );
    }
    assert!(text.contains("catch-up would run:"), "{text}");
    assert!(text.contains("first start: 20"), "{text}");
    let none = Schedule::every_second("tick")
        .window("10s")
        .state(&state)
        .dry_run(&["true"]);
    assert!(
        none.stdout_text()
            .contains("catch-up would drop 10 missed slots"),
        "{}",
        none.stdout_text()
    );
}

#[test]
fn bad_schedule_options_exit_125_naming_the_flag() {
    let dir = Scratch::new();
    let state = dir.p("state");
    let cases: [(&[&str], &str); 10] = [
        (&["--schedule", "61 * * * *"], "--schedule"),
        (&["--schedule", "* * *"], "five fields"),
        // Seconds first or year last: both seven-field spellings are shown.
        (&["--schedule", "*/5 * * * * *"], "'0 */5 * * * * *'"),
        (&["--schedule", "@every 250ms"], "whole number of seconds"),
        (&["--schedule", "@daily", "--tz", "Mars/Olympus"], "--tz"),
        (&["--schedule", "@daily", "--once", "k"], "--once"),
        (&["--schedule", "@daily", "--busy-exit", "3"], "--busy-exit"),
        (&["--schedule", "@daily", "--stdin", "replay"], "--stdin"),
        (&["--schedule", "@daily", "--stdin", "auto"], "--stdin"),
        (
            &["--schedule", "@daily", "--catch-up", "some"],
            "--catch-up",
        ),
    ];
    for (args, flag) in cases {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--state", &state, "--", "touch", "ran"]);
        let out = retry().current_dir(dir.dir.path()).args(&all).run();
        assert_eq!(out.status, 125, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(flag), "{args:?}: {}", out.stderr);
        assert!(!dir.path("ran").exists());
    }
}

#[test]
fn sigterm_stops_the_scheduler_with_143_and_a_local_state_is_said_to_be_one_host_only() {
    let dir = Scratch::new();
    let s = Schedule::new("@yearly")
        .state(&dir.p("state"))
        .start(&dir, "s", &["true"]);
    s.logs_within(Duration::from_secs(10), "next slot");
    let start = Instant::now();
    let (status, log) = s.stop();
    assert_eq!(status, 143, "{log}");
    assert!(start.elapsed() < Duration::from_secs(2));
    assert!(log.contains("exactly once on this host only"), "{log}");
    // An idle scheduler says why it stopped, as the last line.
    assert!(
        log.trim_end()
            .ends_with(" retry: stopped by SIGTERM; exit status 143"),
        "{log}"
    );
    assert!(log.contains("job true-"), "the default job name: {log}");
}

#[test]
fn state_that_cannot_be_reached_at_start_is_exit_125_and_nothing_runs() {
    let dir = Scratch::new();
    let port = crate::support::ports::free_port();
    let state = format!("postgres://app@127.0.0.1:{port}/jobs?connect_timeout=2");
    let out = retry()
        .current_dir(dir.dir.path())
        .args(
            Schedule::new("@every 1s")
                .state(&state)
                .command(&["touch", "ran"]),
        )
        .run();
    assert_eq!(out.status, 125, "{}", out.stderr);
    out.assert_stderr_has("127.0.0.1");
    assert!(!dir.path("ran").exists());
}

both_ways! {
    fn a_lost_lease_ends_the_slot_as_gave_up_and_the_scheduler_goes_on_holding_nothing(pg) {
        let dir = Scratch::new();
        let work = dir.script(
            "hang.sh",
            "echo \"$RETRY_IDEMPOTENCY_KEY\" >> \"$D/starts\"; exec sleep 30",
        );
        // The lock's renewals stall once the slot runs; the state is reached directly.
        let proxy = Proxy::to(pg.port(), When::FileExists(dir.path("stall")));
        let lock = proxy.url("?connect_timeout=2#lost");
        let (state, cron) = (pg.url(""), once_a_minute_in(2));
        let s = Schedule::new(&cron)
            .job("guarded")
            .catch_up("none")
            .args(&["--lock", &lock, "--lease-ttl", "3s", "--kill-after", "1s"])
            .state(&state)
            .start(&dir, "s", &[&work]);
        wait_lines(&dir, "starts", 1, Duration::from_secs(10));
        fs::write(dir.path("stall"), "").unwrap();
        let client = pg.client();
        let status = || {
            client
                .query_opt("SELECT status FROM retry_once WHERE key LIKE 'guarded@%'", &[])
                .map(|row| row.get::<_, String>(0))
        };
        assert!(cmd::wait_until(Duration::from_secs(10), || status().is_some()), "the slot was not recorded");
        assert_eq!(status().as_deref(), Some("gave_up"));
        std::thread::sleep(Duration::from_millis(300));
        let pid = s.child.id() as i32;
        assert_eq!(tcp_connections_to(pid, pg.port()), 0, "no connection between slots");
        let (code, log) = s.stop();
        assert_eq!(code, 143, "the scheduler went on after the lost lease\n{log}");
        assert!(log.contains("was lost"), "{log}");
    }
}

both_ways! {
    fn a_stalled_first_read_of_the_state_is_125_at_start(pg) {
        let dir = Scratch::new();
        let proxy = Proxy::to(pg.port(), When::FirstStatement);
        let state = proxy.url("?connect_timeout=2");
        let every_second = |state: &str| Schedule::new("@every 1s").state(state);
        let out = retry()
            .args(every_second(&state).command(&["touch", "ran"]))
            .current_dir(dir.path(""))
            .run();
        assert_eq!(out.status, 125, "{}", out.stderr);
        assert!(out.elapsed < Duration::from_secs(3), "{:?}", out.elapsed);
        assert!(!dir.path("ran").exists());
        assert_eq!(proxy.calls_after_stall(), 0);
        let proxy = Proxy::to(pg.port(), When::FirstStatement);
        let state = proxy.url("?connect_timeout=30");
        let s = every_second(&state).start(&dir, "s", &["touch", "ran"]);
        assert!(cmd::wait_until(Duration::from_secs(10), || proxy.stalled()));
        let stopped = Instant::now();
        let (code, log) = s.stop();
        assert_eq!(code, 143, "{log}");
        assert!(stopped.elapsed() < Duration::from_secs(1), "{:?}", stopped.elapsed());
    }
}

both_ways! {
    fn a_stalled_slot_record_is_an_error_line_and_the_next_slot_runs_on_time(pg) {
        let dir = Scratch::new();
        // Only the call that records the first slot gets no answer.
        let proxy = Proxy::to_one(pg.port(), When::FileExists(dir.path("stall")));
        let state = proxy.url("?connect_timeout=2");
        let work = dir.script(
            "work.sh",
            "date +%s.%N >> \"$D/runs\"; touch \"$D/stall\"",
        );
        let s = Schedule::new("@every 4s")
            .catch_up("none")
            .state(&state)
            .start(&dir, "s", &[&work]);
        wait_lines(&dir, "runs", 2, Duration::from_secs(15));
        let (code, log) = s.stop();
        assert_eq!(code, 143, "{log}");
        assert!(log.contains("could not be recorded"), "{log}");
        assert!(proxy.stalled());
        assert_eq!(proxy.calls_after_stall(), 0, "{log}");
        let runs: Vec<f64> = dir.read("runs").lines().map(|l| l.parse().unwrap()).collect();
        let late = runs[1] % 4.0;
        assert!(late < 1.0, "the next slot started {late:.2}s after its time\n{log}");
        // SIGTERM while a slot record gets no answer: 143 once the slot's run has given
        // up its lease's release, whose own bound after a signal is 2 s.
        let dir = Scratch::new();
        let proxy = Proxy::to(pg.port(), When::FileExists(dir.path("stall")));
        let state = proxy.url("?connect_timeout=30");
        let work = dir.script("work.sh", "touch \"$D/stall\"");
        // --grace 0: the stop does not wait for the slot, whose record is part of it.
        let s = Schedule::new("@every 1s")
            .catch_up("none")
            .args(&["--grace", "0"])
            .state(&state)
            .start(&dir, "s", &[&work]);
        assert!(cmd::wait_until(Duration::from_secs(10), || proxy.stalled()));
        std::thread::sleep(Duration::from_millis(200));
        let stopped = Instant::now();
        let (code, log) = s.stop();
        assert_eq!(code, 143, "{log}");
        assert!(stopped.elapsed() < Duration::from_millis(3000), "{:?}\n{log}", stopped.elapsed());
    }
}

#[test]
fn json_logs_and_the_report_name_the_slot_and_its_idempotency_key() {
    let dir = Scratch::new();
    let report = dir.p("report.json");
    let s = Schedule::every_second("named")
        .args(&["-a", "1", "--log-format", "json", "--report", &report])
        .state(&dir.p("state"))
        .start(&dir, "s", &["false"]);
    let slots_in = |log: &str| -> Vec<String> {
        log.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v["slot"].as_str().map(str::to_string))
            .collect()
    };
    cmd::wait_for_file(&dir.path("report.json"), Duration::from_secs(5));
    // Lines of a second slot.
    cmd::wait_until(Duration::from_secs(10), || {
        slots_in(&s.log()).iter().collect::<HashSet<_>>().len() >= 2
    });
    let (_, log) = s.stop();
    let slots = slots_in(&log);
    assert!(slots.len() >= 2, "{log}");
    assert!(slots.iter().all(|s| s.starts_with("named@")), "{slots:?}");
    let report: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&report).unwrap()).unwrap();
    let key = report["idempotency_key"].as_str().unwrap();
    let derived: Vec<String> = slots
        .iter()
        .map(|s| uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, s.as_bytes()).to_string())
        .collect();
    assert!(
        derived.iter().any(|d| d == key),
        "{key} is a UUID v5 of a slot key"
    );
}

#[test]
fn with_no_grace_sigterm_reaches_the_running_job_first_then_stops_the_scheduler() {
    let dir = Scratch::new();
    let work = dir.script(
        "trap.sh",
        "trap 'echo TERM >> \"$D/got\"; exit 143' TERM\n\
         echo started >> \"$D/started\"\n\
         sleep 30 & wait",
    );
    let s = Schedule::new("@every 1s")
        .catch_up("none")
        .args(&["--grace", "0"])
        .state(&dir.p("state"))
        .start(&dir, "s", &[&work]);
    wait_lines(&dir, "started", 1, Duration::from_secs(10));
    let (status, log) = s.stop();
    assert_eq!(status, 143, "{log}");
    assert_eq!(dir.read("got"), "TERM\n", "{log}");
}

both_ways! {
    fn a_slot_whose_state_cannot_be_reached_does_not_run_and_the_scheduler_goes_on(pg) {
        let dir = Scratch::new();
        let work = append_key(&dir, "runs");
        let state = format!("{}?connect_timeout=1", pg.url(""));
        let s = Schedule::new("@every 1s")
            .catch_up("none")
            .state(&state)
            .start(&dir, "s", &[&work]);
        wait_lines(&dir, "runs", 1, Duration::from_secs(10));
        drop(pg);
        let ran = dir.count("runs");
        // A refused connection may be a server that restarts: each slot tries it for
        // connect_timeout before it gives up. Two slots that did not run:
        cmd::wait_until(Duration::from_secs(15), || {
            s.log().matches("the slot did not run").count() >= 2
        });
        let (status, log) = s.stop();
        assert_eq!(status, 143, "{log}");
        assert!(
            dir.count("runs") <= ran + 1,
            "no slot runs unguarded\n{log}"
        );
        assert!(log.contains("the slot did not run"), "{log}");
    }
}

#[test]
fn a_slot_skipped_for_a_busy_lock_is_recorded_as_skipped() {
    let dir = Scratch::new();
    let lock = dir.p("job.lock");
    let state = dir.p("state");
    let mut holder = std::process::Command::new("flock")
        .args([
            &lock,
            "sh",
            "-c",
            "echo held > \"$0\"; exec sleep 30",
            &dir.p("held"),
        ])
        .spawn()
        .expect("flock (util-linux)");
    cmd::wait_for_file(&dir.path("held"), Duration::from_secs(10));
    let work = append_key(&dir, "runs");
    let s = every_second(&dir, "locked", &["--lock", &lock], &work);
    // Two busy slots, each recorded.
    cmd::wait_until(Duration::from_secs(15), || {
        records_with(&state, "skipped") >= 2
    });
    let (_, log) = s.stop();
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_eq!(dir.count("runs"), 0, "{log}");
    assert!(log.contains("is busy"), "{log}");
    let skipped = records_with(&state, "skipped");
    assert!(skipped >= 1, "busy slots are recorded as skipped\n{log}");
}

#[test]
fn a_slot_the_open_circuit_refuses_is_recorded_as_refused() {
    let dir = Scratch::new();
    let state = dir.p("state");
    let work = dir.script(
        "fails.sh",
        "echo \"$RETRY_IDEMPOTENCY_KEY\" >> \"$D/runs\"; exit 1",
    );
    let s = every_second(
        &dir,
        "tripped",
        &[
            "-a",
            "1",
            "--circuit",
            "c",
            "--circuit-failures",
            "1",
            "--circuit-cooldown",
            "1m",
        ],
        &work,
    );
    wait_lines(&dir, "runs", 1, Duration::from_secs(10));
    // Two slots refused, each recorded.
    cmd::wait_until(Duration::from_secs(15), || {
        records_with(&state, "refused") >= 2
    });
    let (status, log) = s.stop();
    assert_eq!(status, 143, "{log}");
    // The first slot gave up and opened the circuit: every later slot was refused, not run.
    assert_eq!(dir.count("runs"), 1, "{log}");
    assert!(log.contains("circuit c is open"), "{log}");
    let refused = records_with(&state, "refused");
    assert!(refused >= 1, "refused slots are recorded\n{log}");
}

// ---- A graceful stop (SPEC "Running on a schedule": --grace) ----

/// A job that says when it starts, traps SIGTERM (saying so), and ends after `secs`.
pub fn slow_job(dir: &Scratch, secs: u32) -> String {
    dir.script(
        "slow.sh",
        &format!(
            "trap 'echo TERM >> \"$D/got\"; exit 143' TERM\n\
             echo \"$RETRY_IDEMPOTENCY_KEY\" >> \"$D/started\"\n\
             sleep {secs} & wait\n\
             echo done >> \"$D/done\""
        ),
    )
}

fn term(s: &Scheduler) {
    kill(Pid::from_raw(s.child.id() as i32), Signal::SIGTERM).unwrap();
}

/// Waits for the scheduler to exit, for up to `limit`: its status and the log.
fn exited_within(mut s: Scheduler, limit: Duration) -> (Option<i32>, String) {
    let status = status_within(&mut s.child, limit);
    (status, s.log())
}

/// A scheduler running `slow_job(secs)` every second under `grace`, once its first
/// slot has started.
fn slot_running(secs: u32, job: &str, grace: &str) -> (Scratch, Scheduler) {
    let dir = Scratch::new();
    let work = slow_job(&dir, secs);
    let s = every_second(&dir, job, &["--grace", grace], &work);
    wait_lines(&dir, "started", 1, Duration::from_secs(10));
    (dir, s)
}

/// Sends SIGTERM and waits up to `limit` for the scheduler to exit 143: the log and
/// how long it took from the signal.
fn term_exits_143(s: Scheduler, limit: Duration) -> (String, Duration) {
    let stopped = Instant::now();
    term(&s);
    let (status, log) = exited_within(s, limit);
    assert_eq!(status, Some(143), "{log}");
    (log, stopped.elapsed())
}

#[test]
fn sigterm_lets_the_running_slot_finish_within_the_grace_then_exits_143() {
    let (dir, s) = slot_running(2, "graceful", "10s");
    let (log, took) = term_exits_143(s, Duration::from_secs(10));
    assert!(took < Duration::from_secs(4), "{took:?}\n{log}");
    assert_eq!(dir.read("done"), "done\n", "the slot finished\n{log}");
    assert_eq!(dir.read("got"), "", "the job never got SIGTERM\n{log}");
    assert_eq!(dir.count("started"), 1, "no new slot started\n{log}");
    // Recorded as usual: a success marker for the slot.
    let succeeded = slot_records(&dir.p("state"))
        .iter()
        .filter(|path| fs::read_to_string(path).unwrap().contains("\"succeeded\""))
        .count();
    assert_eq!(succeeded, 1, "{log}");
    assert!(log.contains("--grace 10s to finish"), "{log}");
    assert!(
        log.trim_end()
            .ends_with(" retry: stopped by SIGTERM; exit status 143"),
        "{log}"
    );
}

#[test]
fn a_second_sigterm_during_the_grace_ends_the_running_slot_at_once() {
    let (dir, s) = slot_running(30, "twice", "30s");
    term(&s);
    std::thread::sleep(Duration::from_millis(700));
    let mut s = s;
    assert!(s.child_alive(), "the first SIGTERM waits for the slot");
    assert_eq!(
        dir.read("got"),
        "",
        "the first SIGTERM stays with the scheduler"
    );
    let (log, took) = term_exits_143(s, Duration::from_secs(5));
    assert!(took < Duration::from_secs(2), "{took:?}\n{log}");
    assert!(dir.read("done").is_empty(), "{log}");
    assert!(log.contains("ending the running slot at once"), "{log}");
}

#[test]
fn when_the_grace_is_over_the_running_slot_gets_sigterm() {
    let (dir, s) = slot_running(30, "over", "1s");
    let (log, took) = term_exits_143(s, Duration::from_secs(10));
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(4),
        "{took:?}\n{log}"
    );
    assert_eq!(dir.read("got"), "TERM\n", "{log}");
    assert!(log.contains("--grace 1s is over"), "{log}");
}

#[test]
fn a_skipped_slot_is_logged_at_its_own_time_while_the_long_run_goes_on() {
    let dir = Scratch::new();
    let work = slow_job(&dir, 4);
    let s = every_second(&dir, "long", &[], &work);
    wait_lines(&dir, "started", 1, Duration::from_secs(10));
    let skipped = s.logs_within(Duration::from_secs(3), "(--overlap skip)");
    let done_then = dir.path("done").exists();
    let (status, log) = s.stop();
    assert!(skipped, "no skipped slot logged while the run ran\n{log}");
    assert!(!done_then, "the skip was logged only after the run\n{log}");
    assert_eq!(status, 143, "{log}");
    // Each skipped slot is logged once.
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("(--overlap skip)"))
        .collect();
    let unique: HashSet<&str> = lines
        .iter()
        .map(|l| l.split(" retry: ").nth(1).unwrap_or(l))
        .collect();
    assert_eq!(unique.len(), lines.len(), "{log}");
}

#[test]
fn a_schedule_that_never_fires_is_125_in_the_dry_run_as_in_the_run() {
    let dir = Scratch::new();
    for extra in [&["--dry-run"][..], &[]] {
        let out = retry()
            .args(["--schedule", "0 0 30 2 *", "--state", &dir.p("state")])
            .args(extra)
            .args(["--", "touch", &dir.p("ran")])
            .run();
        assert_eq!(out.status, 125, "{extra:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("names no future time"),
            "{}",
            out.stderr
        );
        assert!(!dir.path("ran").exists());
    }
}
