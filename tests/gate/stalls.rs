//! A PostgreSQL server that accepts the connection and then stops answering: at each
//! point of a run where `retry` talks to it, the stalled call is given up within
//! `connect_timeout` + 1 s with the consequence docs/postgres.md gives, no further call is made on
//! the connection that timed out, and SIGTERM ends the run with 143 within a second.
//! Stalls are made for real: a proxy that goes silent (`support::stall`), run both ways,
//! and SIGSTOP of the server (directly only: the pooler would answer for it). Leases
//! are lost the same way: their renewals stall.

use super::*;
use crate::both_ways;
use crate::support::postgres::Postgres;
use crate::support::stall::{Proxy, When};

/// `connect_timeout` of the stalled URLs, in seconds.
const LIMIT: u64 = 2;

/// The server (or the pooler) behind a proxy that stalls `when`, with `connect_timeout`.
fn stalling(pg: &Postgres, when: When) -> Proxy {
    Proxy::to(pg.port(), when)
}

/// The proxy's URL with `connect_timeout` set and `rest` (e.g. `#lock`).
fn url(proxy: &Proxy, rest: &str) -> String {
    proxy.url(&format!("?connect_timeout={LIMIT}{rest}"))
}

/// Waits for the proxy to stall, then for retry to exit: it must be gone within
/// `connect_timeout` + 1 s of the stall.
#[track_caller]
fn given_up_in_time(proxy: &Proxy, child: Child) -> Run {
    let stalled = wait_until(Duration::from_secs(20), || proxy.stalled());
    assert!(stalled, "nothing stalled");
    let (out, took) = exit_within(child, Duration::from_secs(LIMIT + 10));
    // The figure of how long a stall kept retry alive (`--nocapture` shows it).
    eprintln!("stall: retry exited {took:?} after the stall (connect_timeout={LIMIT}s)");
    assert!(
        took < Duration::from_secs(LIMIT + 1),
        "given up {took:?} after the stall: {}",
        out.stderr
    );
    assert_eq!(
        proxy.calls_after_stall(),
        0,
        "a call on a timed-out connection"
    );
    out
}

/// Waits for the proxy to stall, then SIGTERMs retry: 143 within a second.
#[track_caller]
fn stopped_by_sigterm(proxy: &Proxy, child: Child) -> Run {
    let stalled = wait_until(Duration::from_secs(20), || proxy.stalled());
    assert!(stalled, "nothing stalled");
    std::thread::sleep(Duration::from_millis(100));
    let (out, took) = signal_after(child, Duration::ZERO, Signal::SIGTERM);
    eprintln!("stall: retry exited {took:?} after SIGTERM");
    assert_eq!(out.status, 143, "{}", out.stderr);
    assert!(took < Duration::from_secs(1), "{took:?}");
    out
}

/// A command that counts itself, then creates `done` (the stall's trigger) and exits
/// with `status`.
fn work_then(dir: &Dir, status: i32) -> Vec<String> {
    vec![
        "--".into(),
        "sh".into(),
        "-c".into(),
        format!(
            "echo run >> '{}'; touch '{}'; exit {status}",
            dir.counter().display(),
            dir.path("done").display()
        ),
    ]
}

both_ways! {
    fn a_stalled_marker_write_is_125_saying_the_success_was_not_recorded(pg) {
        let dir = Dir::new();
        let proxy = stalling(&pg, When::FileExists(dir.path("done")));
        let child = dir
            .once("k", url(&proxy, ""))
            .report(dir.report())
            .args(work_then(&dir, 0))
            .start();
        let out = given_up_in_time(&proxy, child);
        assert_eq!(out.status, 125, "{}", out.stderr);
        out.assert_stderr_has("the command succeeded but its success could not be recorded");
        assert_eq!(once_markers(&pg), 0);
        assert_eq!(dir.count(), 1);

        let dir = Dir::new();
        let proxy = stalling(&pg, When::FileExists(dir.path("done")));
        // Another key: the first one's lease was never released (its release stalled).
        let child = dir.once("k2", url(&proxy, "")).args(work_then(&dir, 0)).start();
        stopped_by_sigterm(&proxy, child);
    }
}

both_ways! {
    fn a_stalled_lease_take_is_125_before_any_attempt(pg) {
        let dir = Dir::new();
        let proxy = stalling(&pg, When::Sql("INSERT INTO retry_lease".into()));
        let child = dir.locked(url(&proxy, "#x")).args(work_then(&dir, 0)).start();
        let out = given_up_in_time(&proxy, child);
        assert_eq!(out.status, 125, "{}", out.stderr);
        out.assert_stderr_has(&format!("no answer within {LIMIT}s (connect_timeout)"));
        assert_eq!(dir.count(), 0, "the command never ran");

        // --max-time bounds a call before the first attempt: 125, report max_time.
        let proxy = stalling(&pg, When::Sql("INSERT INTO retry_lease".into()));
        let slow = proxy.url("?connect_timeout=30#x");
        let out = dir
            .locked(&slow)
            .args(["--max-time", "1s"])
            .report(dir.report())
            .args(work_then(&dir, 0))
            .run();
        assert_eq!(out.status, 125, "{}", out.stderr);
        assert!(out.elapsed < Duration::from_secs(3), "{:?}", out.elapsed);
        assert_stopped_because(&dir.report(), "max_time");
        assert_eq!(dir.count(), 0);

        let proxy = stalling(&pg, When::Sql("INSERT INTO retry_lease".into()));
        let child = dir.locked(url(&proxy, "#x")).args(work_then(&dir, 0)).start();
        stopped_by_sigterm(&proxy, child);
    }
}

both_ways! {
    fn a_stalled_table_creation_is_given_up_within_one_connect_timeout(pg) {
        // A server that has no table yet: the first run creates them, and that stalls.
        let dir = Dir::new();
        let proxy = stalling(&pg, When::Sql("pg_advisory_xact_lock".into()));
        let child = dir.locked(url(&proxy, "#x")).args(work_then(&dir, 0)).start();
        let out = given_up_in_time(&proxy, child);
        assert_eq!(out.status, 125, "{}", out.stderr);
        out.assert_stderr_has("cannot create retry's tables");
        out.assert_stderr_has(&format!("no answer within {LIMIT}s (connect_timeout)"));
        assert_eq!(dir.count(), 0, "the command never ran");
    }
}

/// A run with `--state` through a proxy that stalls at `sql`, `flags` for the budget
/// or circuit, on work that exits with `status`.
fn fleet_run(pg: &Postgres, dir: &Dir, sql: &str, flags: &[&str], status: i32) -> (Proxy, Child) {
    let proxy = stalling(pg, When::Sql(sql.into()));
    let child = dir
        .retry()
        .args(["--state", &url(&proxy, "")])
        .args(flags)
        .args(work_then(dir, status))
        .start();
    (proxy, child)
}

both_ways! {
    fn a_lease_granted_after_its_loss_deadline_is_released_and_is_125(pg) {
        let dir = Dir::new();
        // A take answered 2.5 s late: past 2/3 of a 3 s TTL, within connect_timeout.
        let late = When::Late("INSERT INTO retry_lease".into(), Duration::from_millis(2500));
        let proxy = Proxy::to(pg.port(), late);
        let lock = proxy.url("?connect_timeout=10#late");
        let out = dir
            .locked(&lock)
            .args(["--lease-ttl", "3s"])
            .args(work_then(&dir, 0))
            .run();
        assert_eq!(out.status, 125, "{}", out.stderr);
        out.assert_stderr_has("past 2/3 of its TTL");
        assert_eq!(dir.count(), 0, "no attempt");
        let lease = pg.lease("lock:late").expect("the row");
        assert!(!lease.held, "released at once: {lease:?}");
    }
}

both_ways! {
    fn a_stalled_budget_update_fails_open_and_the_run_goes_on(pg) {
        let dir = Dir::new();
        let flags = ["--retry-budget", "b", "-a", "2"];
        let (proxy, child) = fleet_run(&pg, &dir, "INSERT INTO retry_budgets", &flags, 3);
        let stalled = wait_until(Duration::from_secs(20), || proxy.stalled());
        assert!(stalled);
        let (out, took) = exit_within(child, Duration::from_secs(15));
        assert!(took < Duration::from_secs(LIMIT + 1), "{took:?}");
        assert_eq!(out.status, 3, "the command's own status: {}", out.stderr);
        out.assert_stderr_has("going on without the retry budget");
        assert_eq!(dir.count(), 2, "the retry was made");
        assert_eq!(proxy.calls_after_stall(), 0);
        let (proxy, child) = fleet_run(&pg, &dir, "INSERT INTO retry_budgets", &flags, 3);
        stopped_by_sigterm(&proxy, child);
    }
}

both_ways! {
    fn a_stalled_circuit_admission_fails_open(pg) {
        let dir = Dir::new();
        let sql = "UPDATE retry_circuits";
        let (proxy, child) = fleet_run(&pg, &dir, sql, &["--circuit", "c"], 0);
        let out = given_up_in_time(&proxy, child);
        assert_eq!(out.status, 0, "{}", out.stderr);
        out.assert_stderr_has("going on without the retry budget and circuit breaker");
        assert_eq!(dir.count(), 1);
        let (proxy, child) = fleet_run(&pg, &dir, sql, &["--circuit", "c"], 0);
        stopped_by_sigterm(&proxy, child);
    }
}

both_ways! {
    fn a_stalled_circuit_record_after_giving_up_fails_open(pg) {
        let dir = Dir::new();
        let (sql, flags) = ("INSERT INTO retry_circuits", ["--circuit", "c", "-a", "1"]);
        let (proxy, child) = fleet_run(&pg, &dir, sql, &flags, 4);
        let out = given_up_in_time(&proxy, child);
        assert_eq!(out.status, 4, "{}", out.stderr);
        out.assert_stderr_has("warning: the fleet state");
        let (proxy, child) = fleet_run(&pg, &dir, sql, &flags, 4);
        stopped_by_sigterm(&proxy, child);
    }
}

/// Starts `cmd` on a command that waits for `go`; returns once it is running.
fn waiting_for_go(dir: &Dir, cmd: &mut Invocation) -> Child {
    let child = cmd
        .args([
            "--",
            "sh",
            "-c",
            &format!(
                "echo run >> '{}'; touch '{}'; while [ ! -e '{}' ]; do sleep 0.01; done",
                dir.counter().display(),
                dir.path("ready").display(),
                dir.path("go").display()
            ),
        ])
        .start();
    dir.wait_for("ready");
    child
}

#[test]
fn a_sigstopped_server_is_a_stalled_server_for_the_marker_and_the_take() {
    let Some(pg) = postgres::start("a_sigstopped_server_is_a_stalled_server") else {
        return;
    };
    let dir = Dir::new();
    let state = pg.direct_url(&format!("?connect_timeout={LIMIT}"));
    let child = waiting_for_go(&dir, &mut dir.once("k", &state));
    // No session of the run is open while its command runs: the marker's connection
    // meets a server that takes no new one.
    let server = pg.stop_server();
    std::fs::write(dir.path("go"), "").unwrap();
    let start = Instant::now();
    let (out, _) = exit_within(child, Duration::from_secs(LIMIT + 10));
    let took = start.elapsed();
    assert!(took < Duration::from_secs(LIMIT + 1), "{took:?}");
    assert_eq!(out.status, 125, "{}", out.stderr);
    out.assert_stderr_has("could not be recorded");
    drop(server);

    // Waiting for a busy lease, a poll that gets no answer is a passing state (a server
    // restarting behind a pooler looks the same): the wait goes on, and ends with 125
    // naming the last poll's trouble only when --lock-wait does.
    let lock = pg.direct_url(&format!("?connect_timeout={LIMIT}#busy"));
    let dir = Dir::new();
    let holder = waiting_for_go(&dir, &mut dir.locked(&lock));
    let waiter = dir
        .locked(&lock)
        .args(["--lock-wait", "6s"])
        .args(dir.work(0.0))
        .start();
    std::thread::sleep(Duration::from_millis(500));
    let stopped = pg.stop_server();
    let (out, took) = exit_within(waiter, Duration::from_secs(LIMIT + 15));
    assert!(
        took >= Duration::from_secs(4),
        "{took:?}: the wait went on past one poll"
    );
    assert!(took < Duration::from_secs(6 + LIMIT + 2), "{took:?}");
    assert_eq!(out.status, 125, "{}", out.stderr);
    out.assert_stderr_has(&format!("no answer within {LIMIT}s (connect_timeout)"));
    drop(stopped);
    std::fs::write(dir.path("go"), "").unwrap();
    assert_eq!(wait_for_run(holder).status, 0);
}

// Leases lost because their renewals stall.

/// `date +%s.%N` of the local clock, as the commands below write it.
fn epoch_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// When the lease `name` expires by the server's clock, in seconds since the epoch.
fn expires_at(pg: &Postgres, name: &str) -> f64 {
    pg.client()
        .query_one(
            "SELECT extract(epoch FROM expires_at)::float8 FROM retry_lease WHERE name = $1",
            &[&name],
        )
        .get(0)
}

/// A command that writes its pid, says `ready`, and on SIGTERM writes the time to
/// `term` (and then exits, unless `stubborn`); it runs until ended.
fn lease_holder_command(dir: &Dir, stubborn: bool) -> Vec<String> {
    let on_term = if stubborn { "" } else { "; exit 143" };
    vec![
        "--".into(),
        "sh".into(),
        "-c".into(),
        format!(
            "trap 'date +%s.%N > {term}{on_term}' TERM; echo $$ > '{pid}'; touch '{ready}'; \
             exec >/dev/null 2>&1; while :; do sleep 0.05; done",
            term = dir.path("term").display(),
            pid = dir.path("command.pid").display(),
            ready = dir.path("ready").display()
        ),
    ]
}

/// Holds `lock` through a proxy that stalls once `stall` exists; returns the holder
/// and the proxy.
fn hold_until_stalled(dir: &Dir, pg: &Postgres, stubborn: bool) -> (Watched, Proxy) {
    let proxy = stalling(pg, When::FileExists(dir.path("stall")));
    let holder = start_watched(
        dir,
        dir.locked(url(&proxy, "#leased"))
            .args(["--once", "k", "--state", &url(&proxy, "")])
            .args(["--lease-ttl", "3s", "--kill-after", "10s"])
            .report(dir.report()),
        lease_holder_command(dir, stubborn),
    );
    (holder, proxy)
}

/// The holder's lease stalls: SIGTERM 2 s and SIGKILL 2.5 s after the last renewal that
/// was sent (the command gone by 2.7 s), and another run takes the lease only once the
/// server's TTL from that renewal has run out.
fn a_lease_whose_renewals_stall_ends_its_attempt_in_time(pg: &Postgres, stubborn: bool) {
    let dir = Dir::new();
    let (holder, proxy) = hold_until_stalled(&dir, pg, stubborn);
    std::thread::sleep(Duration::from_millis(1200));
    std::fs::write(dir.path("stall"), "").unwrap();
    let second = dir
        .locked(pg.url("#leased"))
        .args(["--lock-wait", "20s", "--lease-ttl", "3s"])
        .args([
            "--",
            "sh",
            "-c",
            &format!("date +%s.%N > '{}'", dir.path("second").display()),
        ])
        .start();
    let pid = holder.pid;
    let gone = wait_until(Duration::from_secs(10), || !alive(pid));
    let gone_at = epoch_now();
    assert!(gone, "the command still runs");
    let lease_until = expires_at(pg, "lock:leased");
    // The last renewal that reached the server, by the server's clock.
    let renewed = lease_until - 3.0;
    if !stubborn {
        let term: f64 = std::fs::read_to_string(dir.path("term"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let after = term - renewed;
        assert!(
            (1.8..2.4).contains(&after),
            "SIGTERM {after:.2}s after the last renewal"
        );
    }
    let after = gone_at - renewed;
    assert!(
        after < 2.75,
        "the command was gone {after:.2}s after the last renewal"
    );
    if stubborn {
        assert!(
            after > 2.3,
            "SIGKILL came {after:.2}s after the last renewal, not 2.5s"
        );
    }
    let (out, _) = exit_within(holder.retry, Duration::from_secs(10));
    assert_lost(&out);
    assert_stopped_because(&dir.report(), "lock_lost");
    assert_eq!(
        once_markers(pg),
        0,
        "nothing recorded by a holder that lost its lease"
    );
    let out = wait_for_run(second);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let took: f64 = std::fs::read_to_string(dir.path("second"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        took >= lease_until - 0.05,
        "taken {:.2}s before the lease expired",
        lease_until - took
    );
    assert!(proxy.stalled());
}

both_ways! {
    fn a_lease_whose_renewals_stall_ends_its_attempt_before_it_can_pass_on(pg) {
        a_lease_whose_renewals_stall_ends_its_attempt_in_time(&pg, false);
    }
}

both_ways! {
    fn a_command_that_ignores_sigterm_is_killed_before_its_lost_lease_can_pass_on(pg) {
        a_lease_whose_renewals_stall_ends_its_attempt_in_time(&pg, true);
    }
}

both_ways! {
    fn a_lease_lost_during_a_backoff_sleep_ends_the_run_at_once(pg) {
        let dir = Dir::new();
        let proxy = stalling(&pg, When::FileExists(dir.path("stall")));
        let holder = bare_retry(&dir)
            .arg("--lock")
            .arg(url(&proxy, "#sleeper"))
            .args(["--lease-ttl", "3s", "-a", "5", "--delay", "30s", "--jitter", "none"])
            .report(dir.report())
            .args(work_then(&dir, 1))
            .start();
        dir.wait_for("done");
        std::fs::write(dir.path("stall"), "").unwrap();
        let (out, took) = exit_within(holder, Duration::from_secs(10));
        assert!(took < Duration::from_millis(3200), "{took:?}");
        assert_eq!(out.status, 125, "{}", out.stderr);
        let report = assert_stopped_because(&dir.report(), "lock_lost");
        assert_eq!(report["attempts"].as_array().unwrap().len(), 1);
        assert_eq!(dir.count(), 1, "no further attempt");
    }
}

both_ways! {
    fn an_in_flight_request_is_abandoned_when_the_lease_is_lost(pg) {
        let dir = Dir::new();
        let proxy = stalling(&pg, When::FileExists(dir.path("stall")));
        let port = silent_listener();
        let holder = bare_retry(&dir)
            .arg("--lock")
            .arg(url(&proxy, "#http"))
            .args(["--lease-ttl", "3s"])
            .report(dir.report())
            .arg(format!("http://127.0.0.1:{port}/slow"))
            .start();
        let held = wait_until(Duration::from_secs(10), || {
            pg.lease("lock:http").is_some_and(|l| l.held)
        });
        assert!(held, "retry never took the lease");
        std::fs::write(dir.path("stall"), "").unwrap();
        let (out, took) = exit_within(holder, Duration::from_secs(10));
        assert!(took < Duration::from_millis(3200), "{took:?}");
        assert_lost(&out);
        assert_stopped_because(&dir.report(), "lock_lost");
    }
}

both_ways! {
    fn a_lease_lost_while_waiting_for_a_once_key_ends_the_wait(pg) {
        let dir = Dir::new();
        let state = pg.url("");
        let first = start_watched(
            &dir,
            dir.locked(pg.url("#first")).args(["--once", "k", "--state", &state]),
            watched_command(&dir),
        );
        let proxy = stalling(&pg, When::FileExists(dir.path("stall")));
        let waiting = dir
            .locked(url(&proxy, "#second"))
            .args(["--once", "k", "--state", &state, "--lock-wait", "30s", "--lease-ttl", "3s"])
            .report(dir.report())
            .args(dir.work(0.0))
            .start();
        let held = wait_until(Duration::from_secs(10), || {
            pg.lease("lock:second").is_some_and(|l| l.held)
        });
        assert!(held, "the second run never took its lease");
        std::fs::write(dir.path("stall"), "").unwrap();
        let (out, took) = exit_within(waiting, Duration::from_secs(10));
        assert!(took < Duration::from_millis(3200), "{took:?}");
        assert_eq!(out.status, 125, "{}", out.stderr);
        out.assert_stderr_has("while waiting for the lock on --once key");
        assert_stopped_because(&dir.report(), "lock_lost");
        assert_eq!(dir.count(), 1, "only the first run worked");
        drop(first.kill_retry());
    }
}

both_ways! {
    fn a_lease_taken_away_as_the_command_succeeds_records_nothing(pg) {
        let dir = Dir::new();
        let state = pg.url("");
        let mut cmd = dir.once("k", &state);
        cmd.report(dir.report());
        let child = waiting_for_go(&dir, &mut cmd);
        let stolen = pg.client().execute(
            "UPDATE retry_lease SET holder = 'someone else', expires_at = now() + interval '1 hour'
             WHERE name = 'once:k'",
            &[],
        );
        assert_eq!(stolen, 1);
        std::fs::write(dir.path("go"), "").unwrap();
        let (out, _) = exit_within(child, Duration::from_secs(10));
        assert_lost(&out);
        out.assert_stderr_has("the command succeeded but");
        assert_stopped_because(&dir.report(), "lock_lost");
        assert_eq!(once_markers(&pg), 0, "a success without its lease is not recorded");
    }
}

// A lost lease's holder whose command and a `setsid` grandchild both ignore SIGTERM.

/// `--lease-ttl` of the escaped-grandchild runs: long enough that a grandchild ended
/// only after the command's own SIGKILL (a second kill window later) would still run
/// when the server lets the next holder in.
const ESCAPE_TTL: f64 = 6.0;

/// A command that ignores SIGTERM and starts a `setsid` grandchild that ignores it
/// too and appends the time to `beats` every 20 ms; it writes the grandchild's pid to
/// `grandchild.pid`, its own to `command.pid`, then says `ready`.
fn escaping_command(dir: &Dir) -> Vec<String> {
    let beat = format!(
        "trap '' TERM; while :; do date +%s.%N >> '{beats}'; sleep 0.02; done",
        beats = dir.path("beats").display()
    );
    vec![
        "--".into(),
        "sh".into(),
        "-c".into(),
        format!(
            "trap '' TERM; setsid sh -c \"$0\" </dev/null >/dev/null 2>&1 & echo $! > '{g}'; \
             echo $$ > '{pid}'; touch '{ready}'; exec >/dev/null 2>&1; \
             while :; do sleep 0.05; done",
            g = dir.path("grandchild.pid").display(),
            pid = dir.path("command.pid").display(),
            ready = dir.path("ready").display()
        ),
        beat,
    ]
}

/// The numbers in a file of `date +%s.%N` lines.
fn times(path: &Path) -> Vec<f64> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// One holder of `lock:NAME` whose renewals stall, with the escaping command, and the
/// next run waiting for the lease: returns the grandchild's last heartbeat and the
/// next holder's first, in seconds since the epoch.
fn escaped_grandchild_and_next_holder(pg: &Postgres, name: &str) -> (f64, f64) {
    let dir = Dir::new();
    let proxy = stalling(pg, When::FileExists(dir.path("stall")));
    let ttl = format!("{}ms", ESCAPE_TTL * 1000.0);
    let holder = start_watched(
        &dir,
        dir.locked(url(&proxy, &format!("#{name}")))
            .args(["--lease-ttl", &ttl, "--kill-after", "30s"])
            .report(dir.report()),
        escaping_command(&dir),
    );
    let grandchild: i32 = wait_for_pid_file(&dir.path("grandchild.pid"));
    let beating = wait_until(Duration::from_secs(5), || {
        !times(&dir.path("beats")).is_empty()
    });
    assert!(beating, "the grandchild never beat");
    std::thread::sleep(Duration::from_millis(1200));
    std::fs::write(dir.path("stall"), "").unwrap();
    let next = dir
        .locked(pg.url(&format!("#{name}")))
        .args(["--lock-wait", "30s", "--lease-ttl", &ttl])
        .args([
            "--",
            "sh",
            "-c",
            &format!("date +%s.%N > '{}'", dir.path("next").display()),
        ])
        .start();
    let gone = wait_until(Duration::from_secs(20), || {
        !alive(grandchild) && !alive(holder.pid)
    });
    assert!(gone, "the lost lease's attempt still runs");
    let (out, _) = exit_within(holder.retry, Duration::from_secs(10));
    assert_lost(&out);
    assert_stopped_because(&dir.report(), "lock_lost");
    let out = wait_for_run(next);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let last_beat = times(&dir.path("beats")).into_iter().fold(0.0, f64::max);
    (last_beat, times(&dir.path("next"))[0])
}

/// Waits for a file that holds a process ID.
fn wait_for_pid_file(path: &Path) -> i32 {
    let written = wait_until(Duration::from_secs(5), || {
        std::fs::read_to_string(path).is_ok_and(|t| t.trim().parse::<i32>().is_ok())
    });
    assert!(written, "{} never held a pid", path.display());
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

both_ways! {
    fn an_escaped_grandchild_is_gone_before_a_lost_lease_passes_on(pg) {
        // Three holders side by side: every grandchild must be gone before the next
        // holder of its lease starts.
        let results: Vec<(f64, f64)> = std::thread::scope(|scope| {
            let runs: Vec<_> = (0..3)
                .map(|i| {
                    let pg = &pg;
                    scope.spawn(move || escaped_grandchild_and_next_holder(pg, &format!("escape{i}")))
                })
                .collect();
            runs.into_iter().map(|r| r.join().unwrap()).collect()
        });
        for (last_beat, next_start) in &results {
            // The figure: how long before the next holder the grandchild was gone.
            eprintln!("escaped grandchild: last heartbeat {:.3}s before the next holder's first", next_start - last_beat);
        }
        for (last_beat, next_start) in results {
            assert!(
                last_beat < next_start,
                "the grandchild beat {:.3}s after the next holder started",
                last_beat - next_start
            );
        }
    }
}

both_ways! {
    fn sigterm_during_a_stalled_release_is_143_and_the_report_says_signal(pg) {
        let dir = Dir::new();
        let proxy = stalling(&pg, When::Sql("SET expires_at = '-infinity'".into()));
        let child = dir
            .locked(url(&proxy, "#release"))
            .report(dir.report())
            .args(work_then(&dir, 0))
            .start();
        // A signal during the release gives it 2 s more (its bound after a signal).
        let stalled = wait_until(Duration::from_secs(20), || proxy.stalled());
        assert!(stalled, "nothing stalled");
        let (out, took) = signal_after(child, Duration::from_millis(100), Signal::SIGTERM);
        assert_eq!(out.status, 143, "{}", out.stderr);
        assert!(took < Duration::from_secs(3), "{took:?}");
        assert_eq!(dir.count(), 1, "the command ran and succeeded");
        assert_stopped_because(&dir.report(), "signal");
        out.assert_stderr_has("stopped by SIGTERM after the last attempt");
        let report = read_json(&dir.report());
        assert_eq!(report["result"]["exit_code"], 143);
    }
}

both_ways! {
    fn a_lease_lost_during_a_hook_ends_the_hook_and_what_left_its_group_in_time(pg) {
        let dir = Dir::new();
        let proxy = stalling(&pg, When::FileExists(dir.path("stall")));
        // The hook and its setsid descendant both ignore SIGTERM: only SIGKILL ends them.
        let hook = format!(
            "trap '' TERM; setsid sh -c \"trap '' TERM; exec sleep 60\" </dev/null >/dev/null 2>&1 & \
             echo $! > '{escaped}'; echo $$ > '{hook}'; exec >/dev/null 2>&1; \
             while :; do sleep 0.05; done",
            escaped = dir.path("escaped").display(),
            hook = dir.path("hook").display()
        );
        let holder = bare_retry(&dir)
            .arg("--lock")
            .arg(url(&proxy, "#hooked"))
            .args(["--lease-ttl", "3s", "-a", "3", "--delay", "30s", "--jitter", "none"])
            .args(["--on-retry", &hook])
            .report(dir.report())
            .args(work_then(&dir, 1))
            .start();
        let pids = [
            wait_for_pid_file(&dir.path("hook")),
            wait_for_pid_file(&dir.path("escaped")),
        ];
        std::fs::write(dir.path("stall"), "").unwrap();
        let (out, took) = exit_within(holder, Duration::from_secs(10));
        // Lost at most 2 s after the stall (2/3 of the TTL after the last renewal), and
        // SIGKILL half a second later.
        assert!(took < Duration::from_millis(3200), "{took:?}");
        assert_lost(&out);
        assert_stopped_because(&dir.report(), "lock_lost");
        for pid in pids {
            assert!(!alive(pid), "{pid} of the hook outlived the lost lease");
        }
        assert_eq!(dir.count(), 1, "no further attempt");
    }
}
