//! What a person running `retry --schedule` in a container sees: nothing runs on a
//! first deployment until the next slot, a log with a time on every line and a start
//! and an end line per slot, and `/metrics` scraped with the real curl.

use std::fs;
use std::net::TcpStream;
use std::time::{Duration, Instant, SystemTime};

use jiff::Timestamp;

use crate::both_ways;
use crate::schedule::{append_key, every_second, first_started, wait_lines};
use crate::support::scheduler::{Schedule, Scheduler};
use crate::support::{self as cmd, Invocation, Scratch, retry, time};

/// `TIME retry: ` with TIME in RFC 3339 UTC with milliseconds.
fn stamped(line: &str) -> bool {
    let re = regex::Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z retry: ").unwrap();
    re.is_match(line)
}

/// Stops `s` once the command has left `n` lines in `runs` and the log has `ends` end
/// lines of slots (text or JSON); the exit status and the log.
fn stop_after_runs(dir: &Scratch, s: Scheduler, n: usize, ends: usize) -> (i32, String) {
    wait_lines(dir, "runs", n, Duration::from_secs(15));
    cmd::wait_until(Duration::from_secs(10), || {
        s.log().lines().filter(|l| l.contains("ended")).count() >= ends
    });
    s.stop()
}

/// Waits for the start-up line that names the metrics address; returns the URL.
fn metrics_url(s: &Scheduler) -> String {
    let mut url = None;
    let found = cmd::wait_until(Duration::from_secs(10), || {
        url = s
            .log()
            .lines()
            .find_map(|l| l.split("metrics at ").nth(1))
            .and_then(|rest| rest.split(',').next())
            .map(str::to_string);
        url.is_some()
    });
    assert!(found, "no metrics line: {}", s.log());
    url.unwrap()
}

/// `curl -fsS URL` and what it printed.
fn scrape(url: &str, extra: &[&str]) -> String {
    let out = Invocation::of("curl")
        .args(["-fsS", "--max-time", "5"])
        .args(extra)
        .arg(url)
        .run();
    assert_eq!(out.status, 0, "curl {url}: {}", out.stderr);
    String::from_utf8(out.stdout).unwrap()
}

/// The value of the series `name{labels}` in an exposition, if it is there.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.trim().parse().unwrap())
}

fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[test]
fn a_schedule_whose_latest_slot_just_passed_runs_nothing_until_the_next_slot() {
    // A second or so after a slot of */4 (a slot in the very second of the first start
    // would run): cron waits for the next one, and so must both policies that catch
    // up, on a state with no record of the job.
    let past = Timestamp::now().as_millisecond().rem_euclid(4000);
    let wait = (1200 - past).rem_euclid(4000);
    std::thread::sleep(Duration::from_millis(wait as u64));
    let dir = Scratch::new();
    let work = dir.script("work.sh", "date +%s.%N >> \"$D/$1\"");
    let start = |policy: &str| {
        Schedule::new("@every 4s")
            .job("deployed")
            .catch_up(policy)
            .state(&dir.p(&format!("state-{policy}")))
            .start(&dir, policy, &[&work, policy])
    };
    let started = Timestamp::now();
    let (latest, all) = (start("latest"), start("all"));
    let next_slot = (started.as_second() / 4 + 1) * 4;
    wait_lines(&dir, "latest", 1, Duration::from_secs(10));
    wait_lines(&dir, "all", 1, Duration::from_secs(10));
    let (_, log_latest) = latest.stop();
    let (_, log_all) = all.stop();
    for (policy, log) in [("latest", &log_latest), ("all", &log_all)] {
        let first: f64 = dir.read(policy).lines().next().unwrap().parse().unwrap();
        assert!(
            first >= next_slot as f64,
            "--catch-up {policy}: ran at {first}, before the next slot {next_slot}\n{log}"
        );
        assert!(!log.contains("running missed slot"), "{log}");
        assert!(
            log.contains("first start of job deployed: recorded as "),
            "{log}"
        );
        let record = dir.path(&format!("state-{policy}/deployed#first-start.json"));
        assert!(record.exists(), "the first start is recorded in --state");
    }
}

#[test]
fn the_text_log_of_three_slots_has_timestamps_and_a_start_and_an_end_line_each() {
    let dir = Scratch::new();
    let work = dir.script(
        "work.sh",
        "echo \"$RETRY_IDEMPOTENCY_KEY\" >> \"$D/runs\"; echo 'the job speaks' >&2",
    );
    let s = every_second(&dir, "logged", &[], &work);
    let (status, log) = stop_after_runs(&dir, s, 3, 3);
    assert_eq!(status, 143, "{log}");
    for line in log.lines() {
        if line == "the job speaks" {
            continue; // the command's own output, unchanged
        }
        assert!(stamped(line), "a line without its time: {line:?}\n{log}");
    }
    assert!(
        log.lines().filter(|l| *l == "the job speaks").count() >= 3,
        "{log}"
    );
    let re = regex::Regex::new(r"\[logged@([0-9T:Z-]+)\] (started|ended): (.*)$").unwrap();
    let mut slots: Vec<(String, String, String)> = Vec::new();
    for line in log.lines() {
        if let Some(c) = re.captures(line) {
            slots.push((c[1].into(), c[2].into(), c[3].into()));
        }
    }
    let ends: Vec<&(String, String, String)> = slots.iter().filter(|s| s.1 == "ended").collect();
    assert!(ends.len() >= 3, "{log}");
    let success = regex::Regex::new(r"^succeeded, 1 attempt in \d+ms, exit status 0$").unwrap();
    for (slot, _, text) in &ends {
        assert!(
            slots
                .iter()
                .any(|s| s.0 == *slot && s.1 == "started" && s.2.contains("work.sh")),
            "{slot} has no start line naming the command\n{log}"
        );
        assert!(success.is_match(text), "{text}");
    }
    assert!(
        log.trim_end()
            .ends_with(" retry: stopped by SIGTERM; exit status 143"),
        "{log}"
    );
}

#[test]
fn quiet_keeps_only_errors_and_the_end_lines_of_slots_that_did_not_succeed() {
    let dir = Scratch::new();
    // Every other slot fails.
    let work = dir.script(
        "work.sh",
        "echo run >> \"$D/runs\"; [ $(( $(wc -l < \"$D/runs\") % 2 )) = 0 ]",
    );
    let s = every_second(&dir, "quiet", &["-q", "-a", "1"], &work);
    // Runs 1 and 3 fail: -q keeps their two end lines.
    let (status, log) = stop_after_runs(&dir, s, 4, 2);
    assert_eq!(status, 143, "{log}");
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines.len() >= 2, "{log}");
    for line in &lines {
        assert!(stamped(line), "{line}");
        assert!(
            line.contains("] ended: gave up, 1 attempt in "),
            "-q leaves only the end lines of failed slots: {line}\n{log}"
        );
        assert!(
            line.contains("exit status 1 (gave up after 1 attempt: exit status 1"),
            "{line}"
        );
    }
}

#[test]
fn json_lines_start_with_the_time_and_a_slot_has_started_and_ended_events() {
    let dir = Scratch::new();
    let work = append_key(&dir, "runs");
    let s = every_second(&dir, "json", &["--log-format", "json"], &work);
    let (_, log) = stop_after_runs(&dir, s, 2, 2);
    let events: Vec<serde_json::Value> = log
        .lines()
        .map(|l| {
            assert!(l.starts_with("{\"time\":\""), "{l}");
            serde_json::from_str(l).unwrap()
        })
        .collect();
    let ended: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event"] == "slot_ended")
        .collect();
    assert!(ended.len() >= 2, "{log}");
    for e in ended {
        assert_eq!(e["outcome"], "succeeded", "{e}");
        assert_eq!(
            (e["attempts"].as_u64(), e["exit_code"].as_i64()),
            (Some(1), Some(0))
        );
        assert!(e["slot"].as_str().unwrap().starts_with("json@"), "{e}");
        time::parse_rfc3339(e["time"].as_str().unwrap());
    }
    assert!(events.iter().any(|e| e["event"] == "slot_started"), "{log}");
}

#[test]
fn metrics_count_slots_that_succeed_give_up_and_are_skipped_as_curl_scrapes_them() {
    let dir = Scratch::new();
    // Run 1 succeeds, run 2 gives up, run 3 outlasts a slot (skipped), later ones succeed.
    let work = dir.script(
        "work.sh",
        "echo run >> \"$D/runs\"; n=$(wc -l < \"$D/runs\")\n\
         case $n in 2) exit 3;; 3) sleep 1.5;; esac",
    );
    let began = now_secs();
    let metered = ["-a", "1", "--metrics-listen", "127.0.0.1:0"];
    let s = every_second(&dir, "metered", &metered, &work);
    let url = metrics_url(&s);
    wait_lines(&dir, "runs", 5, Duration::from_secs(15));
    // Scraped once the fifth run has ended, with no slot under way.
    let series = |text: &str, name: &str| sample(text, &format!("{name}{{retry_job=\"metered\"}}"));
    let mut text = String::new();
    cmd::wait_until(Duration::from_secs(10), || {
        text = scrape(&url, &[]);
        let ended = series(&text, "retry_last_slot_end_seconds");
        ended.is_some() && ended >= series(&text, "retry_last_slot_start_seconds")
    });
    let headers = scrape(&url, &["-o", "/dev/null", "-D", "-"]);
    let open = scrape(
        &url,
        &["-H", "Accept: application/openmetrics-text; version=1.0.0"],
    );
    let missing = Invocation::of("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            &url.replace("/metrics", "/other"),
        ])
        .run();
    let (status, log) = s.stop();
    assert_eq!(status, 143, "{log}");
    let count = |outcome: &str| {
        sample(
            &text,
            &format!("retry_slots_total{{retry_job=\"metered\",outcome=\"{outcome}\"}}"),
        )
        .unwrap_or_else(|| panic!("no {outcome} series:\n{text}"))
    };
    let (succeeded, gave_up, skipped) = (count("succeeded"), count("gave_up"), count("skipped"));
    assert!(succeeded >= 3.0, "{text}");
    assert_eq!(gave_up, 1.0, "{text}");
    assert!(skipped >= 1.0, "{text}\n{log}");
    assert_eq!(count("refused"), 0.0, "{text}");
    let job = |name: &str| series(&text, name);
    assert_eq!(
        job("retry_attempts_total"),
        Some(succeeded + gave_up),
        "{text}"
    );
    assert_eq!(job("retry_slots_caught_up_total"), Some(0.0), "{text}");
    // A slot in the very second the scheduler started is the only one it may drop.
    let dropped = usize::from(
        log.contains("catch-up: dropped 1 missed slot of job metered (--catch-up none)"),
    );
    assert_eq!(
        job("retry_slots_dropped_total"),
        Some(dropped as f64),
        "{text}\n{log}"
    );
    let last_success = job("retry_last_success_seconds").expect("a success was seen");
    assert!(last_success > began && last_success <= now_secs(), "{text}");
    let next = job("retry_next_slot_seconds").unwrap();
    assert!(next > now_secs() - 2.0, "{text}");
    let (start, end) = (
        job("retry_last_slot_start_seconds").unwrap(),
        job("retry_last_slot_end_seconds").unwrap(),
    );
    assert!(began <= start && start <= end, "{text}");
    assert!(job("retry_last_slot_duration_seconds").is_some(), "{text}");
    for line in text.lines().filter(|l| l.starts_with("retry_")) {
        assert!(line.contains("retry_job=\"metered\""), "{line}");
    }
    assert!(
        headers
            .to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4"),
        "{headers}"
    );
    assert!(open.ends_with("# EOF\n"), "{open}");
    assert_eq!(String::from_utf8_lossy(&missing.stdout), "404");
}

#[test]
fn the_last_success_starts_from_the_state_and_is_absent_until_there_is_one() {
    let dir = Scratch::new();
    let state = dir.p("state");
    let kept = Schedule::new("@yearly")
        .job("kept")
        .args(&["--metrics-listen", "127.0.0.1:0"])
        .state(&state);
    let args = |name| {
        let s = kept.start(&dir, name, &["true"]);
        let text = scrape(&metrics_url(&s), &[]);
        let (status, log) = s.stop();
        assert_eq!(status, 143, "{log}");
        text
    };
    let fresh = args("fresh");
    assert!(
        fresh.contains("retry_slots_total{retry_job=\"kept\",outcome=\"succeeded\"} 0"),
        "{fresh}"
    );
    assert!(
        !fresh.contains("retry_last_success_seconds{"),
        "absent until a success:\n{fresh}"
    );
    // A slot that succeeded an hour ago (as another scheduler on this state recorded it),
    // and a newer one that gave up.
    let at = |ago: u64| time::rfc3339_millis(SystemTime::now() - Duration::from_secs(ago));
    let slot = |ago: u64| time::rfc3339_seconds(SystemTime::now() - Duration::from_secs(ago));
    for (ago, status) in [(3600, "succeeded"), (60, "gave_up")] {
        let key = format!("kept@{}", slot(ago + 5));
        let record = serde_json::json!({
            "key": key, "status": status, "succeeded_at": at(ago), "host": "h", "pid": 1,
            "command": ["true"], "attempts": 1,
        });
        fs::write(format!("{state}/{key}.json"), record.to_string()).unwrap();
    }
    let seeded = args("seeded");
    let value = sample(&seeded, "retry_last_success_seconds{retry_job=\"kept\"}").expect(&seeded);
    let expected = now_secs() - 3600.0;
    assert!(
        (value - expected).abs() < 30.0,
        "{value} is not an hour ago\n{seeded}"
    );
}

#[test]
fn metrics_listen_is_refused_without_a_schedule_with_a_name_and_on_a_taken_port() {
    let dir = Scratch::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_addr = taken.local_addr().unwrap().to_string();
    let cases: [(&[&str], &[&str]); 3] = [
        (
            &["--metrics-listen", "127.0.0.1:9746"],
            &["--metrics-listen", "--schedule"],
        ),
        (
            &[
                "--schedule",
                "@every 1s",
                "--metrics-listen",
                "localhost:9746",
            ],
            &["--metrics-listen", "IP address"],
        ),
        (
            &["--schedule", "@every 1s", "--metrics-listen", &taken_addr],
            &["--metrics-listen: cannot listen on", &taken_addr],
        ),
    ];
    for (args, says) in cases {
        let out = retry()
            .current_dir(dir.dir.path())
            .args(args)
            .args(["--state", &dir.p("state"), "--", "touch", "ran"])
            .run();
        assert_eq!(out.status, 125, "{args:?}: {}", out.stderr);
        for word in says {
            assert!(out.stderr.contains(word), "{args:?}: {}", out.stderr);
        }
        assert!(!dir.path("ran").exists(), "{args:?} ran the command");
        assert!(!dir.path("state").exists(), "{args:?} touched the state");
    }
    drop(taken);
}

#[test]
fn sigterm_ends_a_scheduler_within_a_second_while_a_scraper_holds_a_connection() {
    let dir = Scratch::new();
    let s = Schedule::new("@yearly")
        .args(&["--metrics-listen", "127.0.0.1:0"])
        .state(&dir.p("state"))
        .start(&dir, "s", &["true"]);
    let url = metrics_url(&s);
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/metrics");
    // A scraper that connects and never sends its request.
    let _stalled = TcpStream::connect(addr).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let stopped = Instant::now();
    let (status, log) = s.stop();
    assert_eq!(status, 143, "{log}");
    assert!(
        stopped.elapsed() < Duration::from_secs(1),
        "{:?}",
        stopped.elapsed()
    );
}

#[test]
fn an_unreadable_first_start_record_is_replaced_by_the_current_second() {
    let dir = Scratch::new();
    let state = dir.p("state");
    first_started(&state, "mended", Duration::from_secs(3600));
    let record = format!("{state}/mended#first-start.json");
    fs::write(&record, "{ not json").unwrap();
    let before = Timestamp::now().as_second();
    let s = Schedule::new("@yearly")
        .job("mended")
        .state(&state)
        .start(&dir, "s", &["true"]);
    assert!(s.logs_within(Duration::from_secs(10), "next slot"));
    let (status, log) = s.stop();
    assert_eq!(status, 143, "{log}");
    assert!(
        log.contains("warning: the first-start record of job mended"),
        "{log}"
    );
    let text: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&record).unwrap()).unwrap();
    let at = time::parse_rfc3339(text["succeeded_at"].as_str().unwrap()).as_second();
    assert!(at >= before && at <= Timestamp::now().as_second(), "{text}");
}

both_ways! {
    fn a_first_start_in_postgres_is_recorded_once_and_kept(pg) {
        let dir = Scratch::new();
        let state = pg.url("");
        let start = |name| {
            let s = Schedule::new("@yearly").job("pgjob").state(&state).start(&dir, name, &["true"]);
            assert!(s.logs_within(Duration::from_secs(10), "next slot"));
            let (status, log) = s.stop();
            assert_eq!(status, 143, "{log}");
            log
        };
        let first = start("first");
        assert!(first.contains("first start of job pgjob: recorded as "), "{first}");
        let client = pg.client();
        let recorded = || {
            client
                .query_opt("SELECT succeeded_at::text FROM retry_once WHERE key = 'pgjob#first-start'", &[])
                .map(|row| row.get::<_, String>(0))
        };
        let at = recorded().expect("a first-start row");
        std::thread::sleep(Duration::from_millis(1100));
        let second = start("second");
        assert!(!second.contains("first start of job"), "{second}");
        assert_eq!(recorded(), Some(at), "kept as it was");
    }
}

both_ways! {
    fn a_slot_the_state_keeps_from_running_counts_as_skipped(pg) {
        let dir = Scratch::new();
        let work = append_key(&dir, "runs");
        let state = format!("{}?connect_timeout=2", pg.url(""));
        let s = Schedule::every_second("cut")
            .args(&["--metrics-listen", "127.0.0.1:0"])
            .state(&state)
            .start(&dir, "s", &[&work]);
        let url = metrics_url(&s);
        wait_lines(&dir, "runs", 1, Duration::from_secs(10));
        let before = scrape(&url, &[]);
        drop(pg);
        let skipped = |text: &str| {
            sample(text, "retry_slots_total{retry_job=\"cut\",outcome=\"skipped\"}").unwrap()
        };
        let mut after = String::new();
        let counted = cmd::wait_until(Duration::from_secs(10), || {
            after = scrape(&url, &[]);
            skipped(&after) > skipped(&before)
        });
        let (status, log) = s.stop();
        assert_eq!(status, 143, "{log}");
        assert!(counted, "no slot counted as skipped:\n{after}\n{log}");
        assert!(log.contains("the slot did not run"), "{log}");
        assert!(log.contains("] ended: skipped, 0 attempts in "), "{log}");
    }
}
