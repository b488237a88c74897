//! Fleets, end to end: many real `retry` processes sharing a retry budget, a
//! circuit breaker and a lock's fencing counter on every store (`each_store!`: a state
//! directory, and a real PostgreSQL server directly and through PgBouncer), and a
//! seeded splay. The work is a shell script that
//! appends a line per attempt, so "attempts in all" is a line count.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::each_store;
use crate::support::{self as cmd, Invocation, Run, Scratch};

/// How many runs share a budget or a lock.
const CROWD: usize = 20;

/// `retry` with its default state directory inside the scratch directory.
fn retry(s: &Scratch) -> Invocation {
    let mut c = cmd::retry();
    c.env("XDG_STATE_HOME", s.path("xdg"));
    c
}

fn spawn(s: &Scratch, args: &[String]) -> Child {
    retry(s)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
}

fn run(s: &Scratch, args: &[String]) -> Run {
    retry(s).args(args).run()
}

fn wait_all(children: Vec<Child>) -> Vec<Run> {
    children.into_iter().map(cmd::wait_for_run).collect()
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|a| a.to_string()).collect()
}

/// A script that appends a line to `attempts` and exits with the status in the file
/// `status` (1 when missing).
fn counting_script(s: &Scratch) -> String {
    s.script(
        "work",
        "echo x >> \"$D/attempts\"\nif [ -f \"$D/status\" ]; then exit \"$(cat \"$D/status\")\"; fi\nexit 1",
    )
}

/// 20 concurrent failing runs with `-a 5` against one budget of 10 tokens.
fn crowd_on_budget(s: &Scratch, state: &str) -> usize {
    let work = counting_script(s);
    let children: Vec<Child> = (0..CROWD)
        .map(|_| {
            spawn(
                s,
                &args(&[
                    "-a",
                    "5",
                    "--delay",
                    "1ms",
                    "--max-delay",
                    "5ms",
                    "--state",
                    state,
                    "--retry-budget",
                    "api",
                    "--",
                    &work,
                ]),
            )
        })
        .collect();
    let runs = wait_all(children);
    assert!(
        runs.iter().all(|r| r.status == 1),
        "every run fails with the script's status"
    );
    assert!(
        runs.iter()
            .any(|r| r.stderr.contains("retry budget api is spent")),
        "{}",
        runs[0].stderr
    );
    s.count("attempts")
}

each_store! {
    fn twenty_failing_runs_sharing_a_budget_make_at_most_n_half_plus_one_retries(store) {
        let s = Scratch::new();
        let attempts = crowd_on_budget(&s, &store.state());
        // Without the budget: 20 × 5 = 100.
        assert!(
            (CROWD..=CROWD + 10 / 2 + 1).contains(&attempts),
            "{attempts} attempts"
        );
        assert_eq!(store.budget_tokens("api"), 0.0);
    }
}

/// Runs the counting script once under budget `b` (size 4, ratio 1) and gives the
/// attempts it made.
fn budget_run(s: &Scratch, state: &str, attempts: &str, status: &str) -> (usize, Run) {
    std::fs::write(s.path("status"), status).unwrap();
    let before = s.count("attempts");
    let work = counting_script(s);
    let r = run(
        s,
        &args(&[
            "-a",
            attempts,
            "--delay",
            "1ms",
            "--state",
            state,
            "--retry-budget",
            "b",
            "--budget-size",
            "4",
            "--budget-ratio",
            "1",
            "--report",
            &s.p("report.json"),
            "--",
            &work,
        ]),
    );
    (s.count("attempts") - before, r)
}

fn successes_refill(state: &str, s: &Scratch) {
    // 4 → 3 → 2: two failed single attempts spend half the budget.
    for _ in 0..2 {
        budget_run(s, state, "1", "1");
    }
    let (made, r) = budget_run(s, state, "5", "1");
    assert_eq!(made, 1, "2 → 1 tokens: no retry; {}", r.stderr);
    assert_eq!(r.status, 1);
    r.assert_stderr_has("retry budget b is spent (1 of 4 tokens): not retrying");
    assert!(
        s.read("report.json")
            .contains("\"stopped_because\": \"budget\"")
    );
    // Three successes earn three tokens: 1 → 4.
    for _ in 0..3 {
        assert_eq!(budget_run(s, state, "1", "0").1.status, 0);
    }
    let (made, _) = budget_run(s, state, "3", "1");
    assert_eq!(made, 2, "4 → 3 allows a retry, 3 → 2 does not");
}

each_store! {
    fn successes_refill_a_budget(store) {
        successes_refill(&store.state(), &Scratch::new());
    }
}

/// One run on circuit `c` (2 failures open it, cooldown `cooldown`).
fn circuit_args(s: &Scratch, state: &str, cooldown: &str, work: &str) -> Vec<String> {
    args(&[
        "-a",
        "1",
        "--state",
        state,
        "--circuit",
        "c",
        "--circuit-failures",
        "2",
        "--circuit-cooldown",
        cooldown,
        "--report",
        &s.p("report.json"),
        "--",
        work,
    ])
}

fn circuit_lifecycle(s: &Scratch, state: &str) {
    let fail = s.script("fail", "echo x >> \"$D/attempts\"; exit 3");
    // The probe takes a while, so that the others arrive while it runs.
    let probe = s.script("probe", "echo x >> \"$D/attempts\"; sleep 0.5; exit 0");
    let cooldown = "2s";
    for _ in 0..2 {
        assert_eq!(run(s, &circuit_args(s, state, cooldown, &fail)).status, 3);
    }
    let refused = run(s, &circuit_args(s, state, cooldown, &fail));
    assert_eq!(refused.status, 75, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("circuit c is open until")
            && refused
                .stderr
                .contains("after 2 failed runs in a row: not running"),
        "{}",
        refused.stderr
    );
    assert!(
        s.read("report.json")
            .contains("\"stopped_because\": \"circuit_open\"")
    );
    assert_eq!(s.count("attempts"), 2, "a refused run makes no attempt");
    let mut exit_9 = args(&["--circuit-exit", "9"]);
    exit_9.extend(circuit_args(s, state, cooldown, &fail));
    let custom = run(s, &exit_9);
    assert_eq!(custom.status, 9);
    std::thread::sleep(Duration::from_millis(2_100));
    // Ten runs at once after the cooldown: exactly one is the probe.
    let children: Vec<Child> = (0..10)
        .map(|_| spawn(s, &circuit_args(s, state, cooldown, &probe)))
        .collect();
    let runs = wait_all(children);
    let probes = runs.iter().filter(|r| r.status == 0).count();
    let others = runs.iter().filter(|r| r.status == 75).count();
    assert_eq!(
        (probes, others),
        (1, 9),
        "{:?}",
        runs.iter().map(|r| &r.stderr).collect::<Vec<_>>()
    );
    assert_eq!(s.count("attempts"), 3);
    // Its success closed the circuit.
    assert_eq!(run(s, &circuit_args(s, state, cooldown, &probe)).status, 0);
    assert_eq!(s.count("attempts"), 4);
}

each_store! {
    fn a_circuit_opens_refuses_lets_one_probe_through_and_closes(store) {
        circuit_lifecycle(&Scratch::new(), &store.state());
    }
}

#[test]
fn a_failed_probe_keeps_the_circuit_open_and_a_skip_claims_no_probe() {
    let s = Scratch::new();
    let state = s.p("state");
    let fail = s.script("fail", "echo x >> \"$D/attempts\"; exit 3");
    let with_one = |extra: &[&str]| {
        let mut a = args(extra);
        a.extend(args(&[
            "-a",
            "1",
            "--state",
            &state,
            "--circuit",
            "c",
            "--circuit-failures",
            "1",
            "--circuit-cooldown",
            "1s",
            "--",
            &fail,
        ]));
        a
    };
    assert_eq!(run(&s, &with_one(&[])).status, 3);
    std::thread::sleep(Duration::from_millis(1_100));
    // A run skipped at its lock claims no probe.
    let lock = s.p("job.lock");
    let holding = s.script("holding", "touch \"$D/held\"; sleep 1");
    let holder = retry(&s).args(["--lock", &lock, "--", &holding]).spawn();
    assert!(cmd::wait_until(Duration::from_secs(10), || s
        .path("held")
        .exists()));
    let skipped = run(&s, &with_one(&["--lock", &lock]));
    assert_eq!(skipped.status, 0, "{}", skipped.stderr);
    skipped.assert_stderr_has("busy");
    wait_all(vec![holder]);
    let probe = run(&s, &with_one(&[]));
    assert_eq!(probe.status, 3, "the probe ran: {}", probe.stderr);
    probe.assert_stderr_has("this run is the probe");
    assert_eq!(
        run(&s, &with_one(&[])).status,
        75,
        "its failure keeps it open"
    );
}

/// 20 runs compete for one lock; each appends its token while holding it.
fn crowd_on_lock(s: &Scratch, lock: &str) -> Vec<u64> {
    let work = s.script("token", "echo \"$RETRY_FENCING_TOKEN\" >> \"$D/tokens\"");
    let children: Vec<Child> = (0..CROWD)
        .map(|_| {
            spawn(
                s,
                &args(&[
                    "--lock",
                    lock,
                    "--lock-wait",
                    "60s",
                    "--state",
                    &s.p("state"),
                    "--",
                    &work,
                ]),
            )
        })
        .collect();
    for r in wait_all(children) {
        assert_eq!(r.status, 0, "{}", r.stderr);
    }
    s.read("tokens")
        .lines()
        .map(|l| l.parse().unwrap_or_else(|_| panic!("token {l:?}")))
        .collect()
}

fn assert_increasing(tokens: &[u64]) {
    assert_eq!(tokens.len(), CROWD);
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
}

each_store! {
    fn the_fencing_token_of_a_lock_increases_under_twenty_concurrent_lockers(store) {
        let s = Scratch::new();
        let lock = store.lock("nightly");
        let tokens = crowd_on_lock(&s, &lock);
        assert_increasing(&tokens);
        if let Some(dir) = store.directory() {
            a_lock_file_s_counter_lives_in_the_state(&s, dir, &lock, tokens[CROWD - 1]);
        }
    }
}

/// The counter of the lock file `lock` (in `dir`) lives in STATE/fencing, never in the
/// lock file, and keeps counting past `last` when the file is reached another way.
fn a_lock_file_s_counter_lives_in_the_state(s: &Scratch, dir: &Scratch, lock: &str, last: u64) {
    assert_eq!(std::fs::read(lock).unwrap(), b"");
    let counters: Vec<_> = std::fs::read_dir(s.path("state/fencing"))
        .unwrap()
        .collect();
    assert_eq!(
        counters.len(),
        2,
        "one by the lock's path, one by its inode"
    );
    std::fs::create_dir(dir.path("sub")).unwrap();
    let again = run(
        s,
        &args(&[
            "--lock",
            &dir.p("sub/../nightly.lock"),
            "--state",
            &s.p("state"),
            "--",
            "sh",
            "-c",
            "echo $RETRY_FENCING_TOKEN",
        ]),
    );
    let token: u64 = again.stdout_text().trim().parse().unwrap();
    assert!(token > last, "{token} after {last}");
}

#[test]
fn a_seeded_splay_is_the_same_twice_and_counts_toward_max_time() {
    let s = Scratch::new();
    let splay = |seed: &str| {
        let r = run(
            &s,
            &args(&["-v", "--splay", "1s", "--seed", seed, "--", "true"]),
        );
        assert_eq!(r.status, 0);
        let line = r
            .stderr
            .lines()
            .find(|l| l.contains("splay: sleeping"))
            .unwrap_or_else(|| panic!("{}", r.stderr))
            .to_string();
        (line, r.elapsed)
    };
    let (first, took) = splay("42");
    let (second, _) = splay("42");
    assert_eq!(first, second);
    let dry = run(
        &s,
        &args(&["--dry-run", "--splay", "1s", "--seed", "42", "--", "true"]),
    )
    .stdout_text();
    let shown = first
        .split("sleeping ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    assert!(
        dry.contains(&format!("with --seed 42: {shown}")),
        "{dry}\n{first}"
    );
    assert!(
        took >= Duration::from_millis(
            shown
                .trim_end_matches("ms")
                .parse::<u64>()
                .unwrap_or(0)
                .min(999)
        )
    );
    // Counted in --max-time: a splay longer than the time limit leaves nothing to run in.
    let r = run(
        &s,
        &args(&[
            "--splay",
            "10s",
            "--seed",
            "1",
            "--max-time",
            "500ms",
            "--",
            "true",
        ]),
    );
    assert!(r.elapsed < Duration::from_secs(3), "{:?}", r.elapsed);
    // The dry run shows the sleep the run takes: --seed 1's draw of 10s, cut to --max-time.
    let dry = run(
        &s,
        &args(&[
            "--dry-run",
            "--splay",
            "10s",
            "--seed",
            "1",
            "--max-time",
            "500ms",
            "--",
            "true",
        ]),
    )
    .stdout_text();
    assert!(dry.contains("with --seed 1: 500ms\n"), "{dry}");
}

#[test]
fn a_signal_during_the_splay_exits_at_once() {
    let s = Scratch::new();
    let mut child = retry(&s)
        // --seed 1 draws a splay of 25.6s: a random draw under 300 ms would let `true` run first.
        .args([
            "--splay",
            "30s",
            "--seed",
            "1",
            "--report",
            &s.p("r.json"),
            "--",
            "true",
        ])
        .stderr(Stdio::piped())
        .spawn();
    std::thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    crate::support::signal(&child, nix::sys::signal::Signal::SIGTERM);
    let status = child.wait().unwrap();
    assert!(start.elapsed() < Duration::from_secs(2));
    assert_eq!(cmd::status_of(&status), 143);
    assert!(s.read("r.json").contains("\"stopped_because\": \"signal\""));
}

#[test]
fn unreachable_state_is_125_before_the_first_attempt() {
    let s = Scratch::new();
    let work = counting_script(&s);
    let r = run(
        &s,
        &args(&[
            "--state",
            "postgres://u@127.0.0.1:1/db?connect_timeout=2",
            "--retry-budget",
            "b",
            "--",
            &work,
        ]),
    );
    assert_eq!(r.status, 125, "{}", r.stderr);
    assert_eq!(s.count("attempts"), 0);
    std::fs::write(s.path("file"), "").unwrap();
    let r = run(
        &s,
        &args(&["--state", &s.p("file"), "--circuit", "c", "--", &work]),
    );
    assert_eq!(r.status, 125, "{}", r.stderr);
    assert_eq!(s.count("attempts"), 0);
}

#[test]
fn a_dry_run_shows_the_budget_and_circuit_without_changing_them() {
    let s = Scratch::new();
    let state = s.p("state");
    let work = counting_script(&s);
    run(
        &s,
        &args(&[
            "-a",
            "2",
            "--delay",
            "1ms",
            "--state",
            &state,
            "--retry-budget",
            "b",
            "--circuit",
            "c",
            "--circuit-failures",
            "1",
            "--",
            &work,
        ]),
    );
    let before = (
        s.read("state/budgets/b.json"),
        s.read("state/circuits/c.json"),
    );
    let dry = run(
        &s,
        &args(&[
            "--dry-run",
            "--state",
            &state,
            "--retry-budget",
            "b",
            "--circuit",
            "c",
            "--circuit-failures",
            "1",
            "--",
            &work,
        ]),
    );
    assert_eq!(dry.status, 0);
    let out = dry.stdout_text();
    assert!(out.contains("budget:      b holds 8 of 10 tokens"), "{out}");
    assert!(out.contains("circuit:     c is open until"), "{out}");
    assert_eq!(
        before,
        (
            s.read("state/budgets/b.json"),
            s.read("state/circuits/c.json")
        )
    );
    assert_eq!(s.count("attempts"), 2);
}

#[test]
fn a_nested_run_neither_spends_nor_counts() {
    let s = Scratch::new();
    let state = s.p("state");
    let r = run_nested(
        &s,
        &args(&[
            "--state",
            &state,
            "--retry-budget",
            "b",
            "--circuit",
            "c",
            "--",
            "false",
        ]),
    );
    assert_eq!(r.status, 1);
    assert!(!s.path("state/budgets/b.json").exists());
    assert!(!s.path("state/circuits/c.json").exists());
}

fn run_nested(s: &Scratch, list: &[String]) -> Run {
    retry(s).env("RETRY_DEPTH", "1").args(list).run()
}

#[test]
fn bad_fleet_values_are_refused_naming_the_flag() {
    let s = Scratch::new();
    for (flag, value) in [
        ("--budget-size", "0"),
        ("--budget-ratio", "1.5"),
        ("--budget-ratio", "0"),
        ("--circuit-failures", "0"),
        ("--circuit-cooldown", "0"),
        ("--circuit-exit", "300"),
        ("--splay", "-1s"),
        ("--retry-budget", ""),
    ] {
        let r = run(&s, &args(&[flag, value, "--", "true"]));
        assert_eq!(r.status, 125, "{flag} {value}");
        assert!(r.stderr.contains(flag), "{flag}: {}", r.stderr);
    }
}

mod capacity;
mod holds;
mod state_files;
