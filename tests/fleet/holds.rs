//! `--throttled wait`: runs that a spent retry budget or an open circuit holds instead
//! of ending, against a real HTTP server on 127.0.0.1 that answers 503 through an
//! outage and 200 after it, on every store (`each_store!`: a state directory, and
//! PostgreSQL directly and through PgBouncer). What was sent is counted by the server; what was held, by the reports.

use std::process::Child;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::{CROWD, args, retry, run, spawn, wait_all};
use crate::both_ways;
use crate::each_store;
use crate::support::http_server::{Reply, Server};
use crate::support::stores::Store;
use crate::support::{self as cmd, Scratch, read_json, time::parse_rfc3339};

/// The probe interval of these tests: `--delay`.
const DELAY: Duration = Duration::from_millis(300);

/// A service that answers 503 until `outage` has passed, then 200.
fn service(outage: Duration) -> (Server, Instant) {
    let up = Instant::now() + outage;
    let server = Server::handler(move |request, _| {
        if request.at < up {
            Reply::status(503)
        } else {
            Reply::ok("up")
        }
    });
    (server, up)
}

/// The options of a held run against `state`.
fn held(state: &str, max_time: &str, extra: &[&str]) -> Vec<String> {
    let mut list = args(&[
        "--delay",
        "300ms",
        "--max-delay",
        "1s",
        "--max-time",
        max_time,
        "--retry-budget",
        "api",
        "--throttled",
        "wait",
        "--state",
        state,
    ]);
    list.extend(args(extra));
    list
}

/// The times at which runs claimed a probe, from their JSON log lines, in order.
fn probe_times<'a>(stderrs: impl Iterator<Item = &'a str>) -> Vec<jiff::Timestamp> {
    let mut times: Vec<jiff::Timestamp> = stderrs
        .flat_map(str::lines)
        .filter(|line| line.contains("this retry is the probe"))
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("a JSON log line");
            parse_rfc3339(v["time"].as_str().expect("a time"))
        })
        .collect();
    times.sort();
    times
}

/// No two probes within one `--delay` (the log line follows the claim by a moment: a
/// few ms of slack).
fn assert_a_delay_apart(probes: &[jiff::Timestamp]) {
    for pair in probes.windows(2) {
        let apart = pair[1].duration_since(pair[0]);
        assert!(
            apart >= jiff::SignedDuration::from_millis(DELAY.as_millis() as i64 - 30),
            "probes {} and {} are {apart:?} apart",
            pair[0],
            pair[1]
        );
    }
}

/// 20 runs through a 2.5 s outage with `--throttled wait`: every run succeeds after
/// it, each sends at most its `-a`, the fleet's retries during the outage stay near
/// N/2 plus one probe per `--delay`, and no two probes are claimed within one.
fn crowd_through_an_outage(state: &str) {
    let s = Scratch::new();
    let outage = Duration::from_millis(2500);
    let (server, up) = service(outage);
    let children: Vec<Child> = (0..CROWD)
        .map(|i| {
            let url = server.url(&format!("/c/{i}"));
            let extra = ["-a", "8", "--log-format", "json", url.as_str()];
            spawn(&s, &held(state, "20s", &extra))
        })
        .collect();
    let runs = wait_all(children);
    for r in &runs {
        assert_eq!(r.status, 0, "{}", r.stderr);
    }
    assert!(
        runs.iter().any(|r| r.stderr.contains("\"event\":\"held\"")),
        "some runs were held"
    );
    let requests = server.requests();
    let mut firsts = 0;
    for i in 0..CROWD {
        let path = format!("/c/{i}");
        let own: Vec<_> = requests.iter().filter(|r| r.target == path).collect();
        assert!(
            (1..=8).contains(&own.len()),
            "{path}: {} requests",
            own.len()
        );
        assert_eq!(
            own.last().map(|r| r.at >= up),
            Some(true),
            "{path} ended up"
        );
        firsts += usize::from(own[0].at < up);
    }
    let in_outage = requests.iter().filter(|r| r.at < up).count();
    let retries = in_outage - firsts;
    let probes = probe_times(runs.iter().map(|r| r.stderr.as_str()));
    let intervals = (outage.as_millis() / DELAY.as_millis()) as usize + 1;
    eprintln!(
        "holds: {} requests in the outage ({firsts} first attempts, {retries} retries), {} probes claimed",
        in_outage,
        probes.len()
    );
    assert!(!probes.is_empty(), "the spent budget was probed");
    assert!(
        probes.len() <= intervals + 1,
        "{} probes: {probes:?}",
        probes.len()
    );
    assert_a_delay_apart(&probes);
    // Without a budget 20 runs would send 60 or more retries in 2.5 s.
    assert!(
        retries <= 10 / 2 + 1 + intervals + 1,
        "{retries} retries in the outage"
    );
}

each_store! {
    fn held_runs_on_a_budget_succeed_after_the_outage_with_one_probe_per_delay(store) {
        crowd_through_an_outage(&store.state());
    }
}

/// Held runs whose asks queue on the budget row (another session keeps it locked, as a
/// train of other runs' statements does on a busy server) claim the probe at most once
/// per `--delay` of the times they get the row, however long each of them waited for it.
fn probes_of_asks_queued_on_a_locked_row(pg: &crate::support::postgres::Postgres) {
    let s = Scratch::new();
    let (server, _) = service(Duration::from_secs(3600));
    let state = pg.url("");
    let first = run(&s, &held(&state, "5s", &["-a", "1", &server.url("/first")]));
    assert_eq!(first.status, 22, "{}", first.stderr);
    // Spent, with no probe due: the runs below are held and ask again and again.
    let client = pg.client();
    client.execute(
        "UPDATE retry_budgets SET tokens = 0, last_retry_at = now() + interval '1 hour' WHERE name = 'api'",
        &[],
    );
    let children: Vec<Child> = (0..6)
        .map(|i| {
            let url = server.url(&format!("/q/{i}"));
            let extra = ["-a", "3", "--log-format", "json", &url];
            spawn(&s, &held(&state, "6s", &extra))
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    // A probe falls due, but the row stays locked for 1.5 s: the asks of that time queue.
    client.batch_execute(
        "BEGIN;
         UPDATE retry_budgets SET last_retry_at = now() - interval '1 hour' WHERE name = 'api';
         SELECT pg_sleep(1.5);
         COMMIT",
    );
    let runs = wait_all(children);
    for r in &runs {
        assert_eq!(r.status, 22, "{}", r.stderr);
    }
    let probes = probe_times(runs.iter().map(|r| r.stderr.as_str()));
    eprintln!("queued asks: {} probes claimed: {probes:?}", probes.len());
    assert!(
        !probes.is_empty(),
        "a probe was claimed once the row was free"
    );
    assert_a_delay_apart(&probes);
}

both_ways! {
    fn asks_queued_on_a_locked_budget_row_claim_one_probe_per_delay(pg) {
        probes_of_asks_queued_on_a_locked_row(&pg);
    }
}

/// A run held by a budget that stays spent (its last retry stamped an hour ahead, so
/// no probe is due): `--max-time` ends it as `--throttled exit` would, with the last
/// attempt's status and report `budget`, having sent one attempt; SIGTERM while held
/// ends it with 143 within a second.
fn a_held_run_obeys_max_time_and_signals(store: &Store) {
    let s = Scratch::new();
    let state = &store.state();
    let (server, _) = service(Duration::from_secs(3600));
    let url = server.url("/down");
    let first = run(&s, &held(state, "5s", &["-a", "1", &url]));
    assert_eq!(first.status, 22, "{}", first.stderr);
    store.spend_budget("api");
    let report = s.path("max-time.json");
    let start = Instant::now();
    let r = run(
        &s,
        &held(
            state,
            "2s",
            &["-a", "5", "--report", &s.p("max-time.json"), &url],
        ),
    );
    assert_eq!(r.status, 22, "the last attempt's status: {}", r.stderr);
    assert!(r.elapsed <= Duration::from_millis(2500), "{:?}", r.elapsed);
    // Holds of up to --max-delay 1s: the one not started had more than was left.
    assert!(start.elapsed() >= Duration::from_millis(900), "it was held");
    r.assert_stderr_has("holding the run");
    // The run ends at a hold that would outlast --max-time, or, when the machine is slow,
    // at an ask of the budget that the run's deadline cut short: both end by the time limit.
    let ended_by = if r.stderr.contains("no answer before the run's deadline") {
        "max_time"
    } else {
        r.assert_stderr_has("less than the next");
        "budget"
    };
    let doc = read_json(&report);
    assert_eq!(doc["result"]["stopped_because"], ended_by, "{doc}");
    assert_eq!(doc["result"]["attempts"], 1);
    assert_eq!(doc["attempts"].as_array().map(Vec::len), Some(1));
    let holds = doc["holds"].as_array().expect("holds");
    assert!(!holds.is_empty(), "{doc}");
    assert!(
        holds
            .iter()
            .all(|h| h["cause"] == "budget" && h["duration_ms"].as_u64() >= Some(30))
    );
    assert_eq!(server.hits(), 2, "one attempt each");

    let report = s.path("signal.json");
    let mut child = retry(&s)
        .args(held(
            state,
            "30s",
            &["-a", "5", "--report", &s.p("signal.json"), &url],
        ))
        .stderr(std::fs::File::create(s.path("signal.err")).unwrap())
        .spawn();
    let holding = cmd::wait_until(Duration::from_secs(10), || {
        s.read("signal.err").contains("holding the run")
    });
    assert!(holding, "never held: {}", s.read("signal.err"));
    cmd::signal(&child, Signal::SIGTERM);
    let (status, took) = cmd::wait_exit(&mut child, Duration::from_secs(5));
    assert_eq!(status, 143);
    assert!(
        took <= Duration::from_secs(1),
        "exited {took:?} after SIGTERM"
    );
    let doc = read_json(&report);
    assert_eq!(doc["result"]["stopped_because"], "signal", "{doc}");
    assert!(!doc["holds"].as_array().expect("holds").is_empty(), "{doc}");
    assert_eq!(server.hits(), 3);
}

each_store! {
    fn a_run_held_by_a_budget_obeys_max_time_and_signals(store) {
        a_held_run_obeys_max_time_and_signals(&store);
    }
}

/// Runs that find the circuit open hold until its cooldown ends; the one that claims
/// the probe succeeds (the service is back) and closes it, and the held runs go on.
/// One whose `--max-time` ends first exits `--circuit-exit` without an attempt.
fn circuit_holds(state: &str) {
    let s = Scratch::new();
    let (server, _) = service(Duration::from_millis(800));
    let circuit = |max_time: &str, extra: &[&str]| {
        let mut list = args(&[
            "--state",
            state,
            "--circuit",
            "svc",
            "--circuit-failures",
            "1",
            "--circuit-cooldown",
            "2s",
            "--throttled",
            "wait",
            "--max-time",
            max_time,
            "-a",
            "1",
        ]);
        list.extend(args(extra));
        list
    };
    let opener = run(&s, &circuit("5s", &[&server.url("/open")]));
    assert_eq!(opener.status, 22, "{}", opener.stderr);
    let short = run(
        &s,
        &circuit(
            "700ms",
            &["--report", &s.p("short.json"), &server.url("/short")],
        ),
    );
    assert_eq!(short.status, 75, "{}", short.stderr);
    short.assert_stderr_has("holding the run");
    let doc = read_json(&s.path("short.json"));
    assert_eq!(doc["result"]["stopped_because"], "circuit_open", "{doc}");
    assert_eq!(doc["result"]["attempts"], 0);
    assert!(
        doc["holds"]
            .as_array()
            .is_some_and(|h| !h.is_empty() && h.iter().all(|h| h["cause"] == "circuit"))
    );
    let children: Vec<Child> = (0..5)
        .map(|i| {
            let report = s.p(&format!("held-{i}.json"));
            spawn(
                &s,
                &circuit(
                    "10s",
                    &["--report", &report, &server.url(&format!("/held/{i}"))],
                ),
            )
        })
        .collect();
    let runs = wait_all(children);
    for (i, r) in runs.iter().enumerate() {
        assert_eq!(r.status, 0, "{}", r.stderr);
        let doc = read_json(&s.path(&format!("held-{i}.json")));
        assert_eq!(doc["result"]["attempts"], 1, "{doc}");
        assert!(
            doc["holds"]
                .as_array()
                .is_some_and(|h| h.iter().all(|h| h["cause"] == "circuit"))
        );
    }
    assert_eq!(
        runs.iter()
            .filter(|r| r.stderr.contains("this run is the probe"))
            .count(),
        1,
        "one probe closed the circuit"
    );
    let held = server
        .requests()
        .iter()
        .filter(|r| r.target.starts_with("/held/"))
        .count();
    let short = server
        .requests()
        .iter()
        .filter(|r| r.target == "/short")
        .count();
    assert_eq!((held, short), (5, 0), "held runs sent nothing while held");
}

each_store! {
    fn runs_held_by_an_open_circuit_go_on_after_its_probe_succeeds(store) {
        circuit_holds(&store.state());
    }
}

#[test]
fn throttled_is_refused_where_it_would_mean_nothing() {
    let s = Scratch::new();
    let r = run(
        &s,
        &args(&["--throttled", "wait", "--max-time", "5s", "--", "true"]),
    );
    assert_eq!(r.status, 125);
    r.assert_stderr_has(
        "--throttled: it says what a spent --retry-budget or an open --circuit does",
    );
    let r = run(&s, &args(&["--throttled", "exit", "--", "true"]));
    assert_eq!(r.status, 125, "{}", r.stderr);
    let r = run(
        &s,
        &args(&["--throttled", "wait", "--retry-budget", "api", "--", "true"]),
    );
    assert_eq!(r.status, 125);
    r.assert_stderr_has("--throttled wait");
    r.assert_stderr_has("needs --max-time");
    let r = run(
        &s,
        &args(&["--throttled", "sometimes", "--circuit", "c", "--", "true"]),
    );
    assert_eq!(r.status, 125);
    r.assert_stderr_has("--throttled: 'sometimes' is not accepted; expected one of exit, wait");
    assert!(!s.path("xdg/retry").exists(), "nothing was created");
}

#[test]
fn a_dry_run_says_what_throttled_does() {
    let s = Scratch::new();
    let state = s.p("state");
    let base = [
        "--dry-run",
        "--state",
        &state,
        "--retry-budget",
        "api",
        "--delay",
        "2s",
    ];
    let mut wait = args(&base);
    wait.extend(args(&[
        "--throttled",
        "wait",
        "--max-time",
        "1m",
        "--",
        "true",
    ]));
    let r = run(&s, &wait);
    assert_eq!(r.status, 0, "{}", r.stderr);
    r.assert_stdout_has("throttled:   wait: a refused retry or an open circuit holds the run");
    r.assert_stdout_has("one held retry per 2s fleet-wide is the probe");
    let mut exit = args(&base);
    exit.extend(args(&["--", "true"]));
    run(&s, &exit).assert_stdout_has("throttled:   exit: a refused retry ends the run");
}
