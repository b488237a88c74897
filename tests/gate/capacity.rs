//! A fleet larger than the server's connection limit: a server that takes 12
//! connections (9 for the runs' role, which is no superuser) and a pooler that takes 8
//! clients, with several times as many runs at once. A run has a connection open only
//! while it has statements to send, and a connection refused for want of capacity is
//! tried again, so every run exits 0. A proxy that answers as a full server does
//! (`support::refuse`) shows what a run does while refused; authentication and a
//! missing database are still answers at once. Run both ways.

use super::*;
use crate::both_ways;
use crate::support::postgres::{Options, Postgres, USER};
use crate::support::refuse::Refuser;

/// Runs at once: three times the server's connections.
const FLEET: usize = 36;

/// The role the runs connect as (superusers have slots of their own).
const ROLE: &str = "app";

/// The runs' URL: as `ROLE`, with `rest` (`#NAME`, `?…`).
fn url(pg: &Postgres, rest: &str) -> String {
    pg.url_as(ROLE, rest)
}

/// Says (with `--nocapture`) how many connections the server and the pooler turned
/// away for want of capacity during the test.
fn say_refusals(pg: &Postgres, test: &str) {
    let logs = pg.logs();
    let server = logs.matches("too many clients already").count()
        + logs
            .matches("remaining connection slots are reserved")
            .count();
    let pooler = logs.matches("no more connections allowed").count();
    eprintln!(
        "{test} ({:?}): refused by the server {server}, by the pooler {pooler}",
        pg.via
    );
}

/// Starts `FLEET` runs, the i-th made by `make(i)`.
fn start_fleet(make: impl Fn(usize) -> Invocation) -> Vec<Child> {
    (0..FLEET).map(|i| make(i).start()).collect()
}

/// Waits for every run and checks that each exited 0.
#[track_caller]
fn all_exit_0(children: Vec<Child>) -> Vec<Run> {
    let outs: Vec<Run> = children.into_iter().map(wait_for_run).collect();
    for out in &outs {
        assert_eq!(out.status, 0, "{}", out.stderr);
    }
    outs
}

/// A command that counts itself, says `ready.N`, and runs until `go` exists.
fn until_go(dir: &Dir, n: usize) -> Vec<String> {
    vec![
        "--".into(),
        "sh".into(),
        "-c".into(),
        format!(
            "echo run >> '{counter}'; touch '{ready}.{n}'; \
             until [ -e '{go}' ]; do sleep 0.02; done",
            counter = dir.counter().display(),
            ready = dir.path("ready").display(),
            go = dir.path("go").display()
        ),
    ]
}

/// Waits until the commands of `n` runs say they are ready.
fn wait_ready(dir: &Dir, n: usize) {
    let all = wait_until(Duration::from_secs(60), || {
        (0..n).all(|i| dir.path(&format!("ready.{i}")).exists())
    });
    assert!(all, "not every command started");
}

both_ways! {
    fn holders_of_leases_through_renewals_all_exit_0(pg, Options::small()) {
        pg.add_role(ROLE);
        let dir = Dir::new();
        // A lease of 3 s is renewed every second: four renewals each during the work.
        let children = start_fleet(|i| {
            let mut cmd = dir.locked(url(&pg, &format!("#holder-{i}")));
            cmd.args(["--lease-ttl", "3s"]).args(dir.work(4.0));
            cmd
        });
        all_exit_0(children);
        say_refusals(&pg, "holders");
        assert_eq!(dir.count(), FLEET);
        for i in 0..FLEET {
            let lease = pg.lease(&format!("lock:holder-{i}")).expect("a lease row");
            assert!(!lease.held, "released at exit: {lease:?}");
        }
    }
}

both_ways! {
    fn a_queue_on_one_lock_runs_one_at_a_time_with_growing_tokens(pg, Options::small()) {
        pg.add_role(ROLE);
        let dir = Dir::new();
        // Two holders at once would find `in` made: exit 99, with no retry to hide it.
        let work = format!(
            "mkdir '{inside}' || exit 99; echo $RETRY_FENCING_TOKEN >> '{tokens}'; \
             sleep 0.05; rmdir '{inside}'",
            inside = dir.path("in").display(),
            tokens = dir.path("tokens").display()
        );
        let children = start_fleet(|_| {
            let mut cmd = dir.locked(url(&pg, "#one"));
            cmd.args(["--lock-wait", "120s", "-a", "1", "--", "sh", "-c", &work]);
            cmd
        });
        let outs = all_exit_0(children);
        say_refusals(&pg, "queue");
        let waited = outs.iter().filter(|o| o.stderr.contains("is busy; waiting")).count();
        assert!(waited > 0, "nobody waited");
        let tokens: Vec<i64> = std::fs::read_to_string(dir.path("tokens"))
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        assert_eq!(tokens.len(), FLEET, "every run ran");
        assert!(
            tokens.windows(2).all(|w| w[0] < w[1]),
            "tokens grow from holder to holder: {tokens:?}"
        );
    }
}

both_ways! {
    fn no_run_holds_a_connection_while_its_command_runs(pg, Options::small()) {
        pg.add_role(ROLE);
        let dir = Dir::new();
        let state = url(&pg, "");
        // Holders of leases (renewed after 20 s only) and runs of --once keys.
        let children = start_fleet(|i| {
            let mut cmd = if i % 2 == 0 {
                dir.locked(url(&pg, &format!("#idle-{i}")))
            } else {
                dir.once(&format!("idle-{i}"), &state)
            };
            cmd.args(["--lease-ttl", "60s"]).args(until_go(&dir, i));
            cmd
        });
        wait_ready(&dir, FLEET);
        let pids: Vec<u32> = children.iter().map(Child::id).collect();
        pg.assert_no_connection_of(&pids, Duration::from_secs(1));
        std::fs::write(dir.path("go"), "").unwrap();
        all_exit_0(children);
        assert_eq!(dir.count(), FLEET);
        assert_eq!(once_markers(&pg), (FLEET / 2) as i64);
    }
}

both_ways! {
    fn a_server_that_refuses_for_capacity_for_a_while_lets_the_run_go_on(pg) {
        let dir = Dir::new();
        let proxy = Refuser::to(pg.port(), 5);
        let out = dir
            .locked(proxy.url_as(USER, "#refused"))
            .arg("-vv")
            .args(dir.work(0.0))
            .run();
        assert_eq!(out.status, 0, "{}", out.stderr);
        assert_eq!(dir.count(), 1);
        assert_eq!(proxy.refused(), 5);
        assert!(proxy.forwarded() >= 1, "the sixth connection reached the server");
        assert!(out.elapsed < Duration::from_secs(5), "{:?}", out.elapsed);
        out.assert_stderr_has(
            "the server refused the connection: too many clients \
             (sorry, too many clients already, SQLSTATE 53300)",
        );
        out.assert_stderr_has("trying again in");
    }
}

both_ways! {
    fn a_server_that_goes_on_refusing_is_125_naming_the_refusal_when_the_bound_passes(pg) {
        let dir = Dir::new();
        let proxy = Refuser::to(pg.port(), usize::MAX);
        // Without --lock-wait: connect_timeout.
        let out = dir
            .locked(proxy.url_as(USER, "?connect_timeout=1#full"))
            .args(dir.work(0.0))
            .run();
        assert_eq!(out.status, 125, "{}", out.stderr);
        out.assert_stderr_has("the server refused the connection: too many clients");
        assert!(out.elapsed > Duration::from_millis(800), "{:?}", out.elapsed);
        assert!(out.elapsed < Duration::from_secs(3), "{:?}", out.elapsed);
        assert!(proxy.refused() > 2, "tried again: {}", proxy.refused());
        assert_eq!(proxy.forwarded(), 0);
        // With --lock-wait: as long as it.
        let out = dir
            .locked(proxy.url_as(USER, "?connect_timeout=1#full"))
            .args(["--lock-wait", "3s"])
            .args(dir.work(0.0))
            .run();
        assert_eq!(out.status, 125, "{}", out.stderr);
        out.assert_stderr_has("too many clients");
        assert!(out.elapsed > Duration::from_millis(2500), "{:?}", out.elapsed);
        assert!(out.elapsed < Duration::from_secs(5), "{:?}", out.elapsed);
        assert_eq!(dir.count(), 0);
        // A signal ends the tries within a second.
        let child = dir
            .locked(proxy.url_as(USER, "?connect_timeout=30#full"))
            .report(dir.report())
            .args(dir.work(0.0))
            .start();
        let (out, took) = signal_after(child, Duration::from_millis(500), Signal::SIGTERM);
        assert_eq!(out.status, 143, "{}", out.stderr);
        assert!(took < Duration::from_secs(1), "{took:?}");
        assert_stopped_because(&dir.report(), "signal");
        assert_eq!(dir.count(), 0);
    }
}

both_ways! {
    fn an_unknown_role_and_a_missing_database_are_125_at_once(pg) {
        let dir = Dir::new();
        let port = pg.port();
        for url in [
            format!("postgres://ghost@127.0.0.1:{port}/postgres#x"),
            format!("postgres://{USER}@127.0.0.1:{port}/no_such_db#x"),
        ] {
            let out = dir.locked(&url).args(dir.work(0.0)).run();
            assert_eq!(out.status, 125, "{url}: {}", out.stderr);
            // connect_timeout is 10 s: an answer is not tried again.
            assert!(out.elapsed < Duration::from_secs(3), "{url}: {:?}", out.elapsed);
            out.assert_stderr_lacks("refused the connection");
        }
        assert_eq!(dir.count(), 0);
    }
}
