//! Stopping cleanly with PostgreSQL leases: a run ended by SIGINT, SIGTERM or SIGHUP
//! in any phase (attempt, backoff sleep, hook) frees its `--lock` and `--once` leases,
//! so the next holder gets in at once although the lease has an hour to run; a second
//! signal during a release that gets no answer ends the run at once. Waiters survive a
//! restart of the pooler (or of the server). A holder warns before a server at
//! capacity loses its lease, and a holder stopped past its lease says so. Run both ways.

use super::*;
use crate::both_ways;
use crate::support::postgres::{Client, Options, Postgres};
use crate::support::stall::{Proxy, When};

/// A TTL that no test waits out: a lease the next holder gets was released.
const HOUR: &str = "1h";

/// Which lease a run holds.
#[derive(Clone, Copy, Debug)]
enum Lease {
    Lock,
    Once,
}

impl Lease {
    /// The run's flags and its row in `retry_lease`.
    fn flags(self, pg: &Postgres, name: &str) -> (Vec<String>, String) {
        match self {
            Lease::Lock => (
                vec!["--lock".into(), pg.url(&format!("#{name}"))],
                format!("lock:{name}"),
            ),
            Lease::Once => (
                vec!["--once".into(), name.into(), "--state".into(), pg.url("")],
                format!("once:{name}"),
            ),
        }
    }
}

/// Where a run is when the signal comes.
#[derive(Clone, Copy, Debug)]
enum Phase {
    Attempt,
    Sleep,
    Hook,
}

impl Phase {
    /// The run's flags and command: each touches `ready` once the phase has begun.
    fn run(self, dir: &Dir) -> Vec<String> {
        let ready = dir.path("ready").display().to_string();
        let sh = |script: String| vec!["--".into(), "sh".into(), "-c".into(), script];
        let fixed = ["--jitter", "none", "--lease-ttl", HOUR].map(String::from);
        let mut args: Vec<String> = fixed.to_vec();
        match self {
            Phase::Attempt => args.extend(sh(format!("touch '{ready}'; sleep 30"))),
            Phase::Sleep => {
                args.extend(["-a", "2", "--delay", "30s"].map(String::from));
                args.extend(sh(format!("touch '{ready}'; exit 1")));
            }
            Phase::Hook => {
                args.extend(["-a", "2", "--delay", "0s", "--on-retry"].map(String::from));
                args.push(format!("touch '{ready}'; sleep 30"));
                args.extend(sh("exit 1".into()));
            }
        }
        args
    }
}

/// Stops a holder of `lease` with `signal` in `phase`, then checks that it exits
/// 128+N within a second and that the next holder gets in at once.
fn released_on(pg: &Postgres, phase: Phase, signal: Signal, lease: Lease) {
    let dir = Dir::new();
    let name = format!("{phase:?}-{signal:?}-{lease:?}").to_lowercase();
    let (flags, row) = lease.flags(pg, &name);
    let holder = bare_retry(&dir).args(&flags).args(phase.run(&dir)).start();
    dir.wait_for("ready");
    // Into the phase: the sleep has begun after the failed attempt.
    std::thread::sleep(Duration::from_millis(200));
    assert!(pg.lease(&row).expect("a lease row").held, "{name}: held");
    let signalled = Instant::now();
    let (out, took) = signal_after(holder, Duration::ZERO, signal);
    let status = 128 + signal as i32;
    assert_eq!(out.status, status, "{name}: {}", out.stderr);
    assert!(
        took < Duration::from_secs(1),
        "{name}: exited {took:?} after {signal:?}"
    );
    out.assert_stderr_lacks("could not release");
    let next = dir.retry().args(&flags).args(dir.work(0.0)).run();
    assert_eq!(next.status, 0, "{name}: the next holder: {}", next.stderr);
    assert_eq!(dir.count(), 1, "{name}: the next holder ran");
    let in_after = signalled.elapsed();
    assert!(
        in_after < Duration::from_secs(2),
        "{name}: next holder in {in_after:?}"
    );
    next.assert_stderr_lacks("busy");
}

/// Each signal once in `phase`: SIGTERM with `--lock`, SIGINT with `--once`, SIGHUP
/// with each.
fn every_signal_in(pg: &Postgres, phase: Phase) {
    for (signal, lease) in [
        (Signal::SIGTERM, Lease::Lock),
        (Signal::SIGINT, Lease::Once),
        (Signal::SIGHUP, Lease::Lock),
        (Signal::SIGHUP, Lease::Once),
    ] {
        released_on(pg, phase, signal, lease);
    }
}

both_ways! {
    fn a_signal_during_the_attempt_releases_the_lease(pg) {
        every_signal_in(&pg, Phase::Attempt);
    }
}

both_ways! {
    fn a_signal_during_the_backoff_sleep_releases_the_lease(pg) {
        every_signal_in(&pg, Phase::Sleep);
    }
}

both_ways! {
    fn a_signal_during_a_hook_releases_the_lease(pg) {
        every_signal_in(&pg, Phase::Hook);
    }
}

both_ways! {
    fn a_signal_during_a_lock_wait_ends_the_waiter_and_frees_what_it_held(pg) {
        let dir = Dir::new();
        let holder = start_watched(
            &dir,
            dir.retry().args(["--lease-ttl", HOUR, "--lock", &pg.url("#waited")]),
            long_command(&dir),
        );
        let before = pg.lease("lock:waited").expect("a lease row");
        // A waiter for the --lock, and one that holds its --lock while it waits for
        // the --once key's lock, which another run holds.
        let other = Dir::new();
        let key_holder = start_watched(
            &other,
            other.once("k", pg.url("")).args(["--lease-ttl", HOUR]),
            long_command(&other),
        );
        for (signal, flags) in [
            (Signal::SIGTERM, vec!["--lock".to_string(), pg.url("#waited")]),
            (
                Signal::SIGINT,
                vec!["--lock".into(), pg.url("#free"), "--once".into(), "k".into(),
                     "--state".into(), pg.url("")],
            ),
        ] {
            let waiter = dir
                .retry()
                .args(&flags)
                .args(["--lease-ttl", HOUR, "--lock-wait", "60s"])
                .args(dir.work(0.0))
                .start();
            let (out, took) = signal_after(waiter, Duration::from_millis(700), signal);
            assert_eq!(out.status, 128 + signal as i32, "{}", out.stderr);
            assert!(took < Duration::from_secs(1), "{took:?}");
            // Between two polls ("while waiting for …") or during one ("while taking …").
            out.assert_stderr_has(&format!("stopped by {signal:?} while "));
        }
        let after = pg.lease("lock:waited").expect("a lease row");
        assert!(after.held, "{after:?}");
        assert_eq!((after.holder, after.token), (before.holder, before.token));
        assert!(!pg.lease("lock:free").expect("taken while waiting").held, "freed");
        assert_eq!(dir.count(), 0, "no waiter ran");
        drop((holder, key_holder));
    }
}

/// A holder of `name` whose release gets no answer, stopped by SIGTERM during its
/// attempt; returns it once the release has stalled, with the signal's time.
fn stalled_release(pg: &Postgres, dir: &Dir, proxy: &Proxy, name: &str) -> (Child, Instant) {
    let holder = bare_retry(dir)
        .arg("--lock")
        .arg(proxy.url(&format!("?connect_timeout=30#{name}")))
        .args(["--lease-ttl", HOUR])
        .report(dir.report())
        .args(dir.ready_work(30.0))
        .start();
    dir.wait_for("ready");
    assert!(pg.lease(&format!("lock:{name}")).unwrap().held);
    crate::support::signal(&holder, Signal::SIGTERM);
    let signalled = Instant::now();
    let stalled = wait_until(Duration::from_secs(5), || proxy.stalled());
    assert!(stalled, "the release never went out");
    (holder, signalled)
}

both_ways! {
    fn a_release_that_gets_no_answer_ends_2s_after_the_signal_or_at_a_second_one(pg) {
        let dir = Dir::new();
        let release = When::Sql("SET expires_at = '-infinity'".into());
        // The release's own bound: 2 s after the signal, whatever connect_timeout says.
        let proxy = Proxy::to(pg.port(), release.clone());
        let (holder, signalled) = stalled_release(&pg, &dir, &proxy, "stalled");
        let (out, _) = exit_within(holder, Duration::from_secs(10));
        let took = signalled.elapsed();
        assert_eq!(out.status, 143, "{}", out.stderr);
        assert!(took > Duration::from_millis(1800) && took < Duration::from_secs(3), "{took:?}");
        out.assert_stderr_has("could not release the lease lock:stalled");
        assert_stopped_because(&dir.report(), "signal");
        // A second signal during the release ends the run at once.
        let dir = Dir::new();
        let proxy = Proxy::to(pg.port(), release);
        let (holder, _) = stalled_release(&pg, &dir, &proxy, "stalled-twice");
        let (out, took) = signal_after(holder, Duration::ZERO, Signal::SIGTERM);
        assert_eq!(out.status, 143, "{}", out.stderr);
        assert!(took < Duration::from_secs(1), "{took:?} after the second signal");
        out.assert_stderr_has("(interrupted by SIGTERM)");
    }
}

/// Waiters in a queue on one lock.
const WAITERS: usize = 30;

both_ways! {
    fn waiters_through_a_restart_of_the_pooler_or_the_server_all_run(pg) {
        let mut pg = pg;
        let dir = Dir::new();
        let lock = pg.url("#queue");
        let holder = dir.locked(&lock).args(dir.ready_work(1.5)).start();
        dir.wait_for("ready");
        let waiters: Vec<Child> = (0..WAITERS)
            .map(|_| {
                dir.locked(&lock)
                    .args(["--lock-wait", "60s", "-a", "1"])
                    .args(dir.work(0.02))
                    .start()
            })
            .collect();
        std::thread::sleep(Duration::from_millis(700));
        pg.restart_the_way_in();
        let holder = wait_for_run(holder);
        assert_eq!(holder.status, 0, "the holder: {}", holder.stderr);
        for out in waiters.into_iter().map(wait_for_run) {
            assert_eq!(out.status, 0, "a waiter: {}", out.stderr);
        }
        assert_eq!(dir.count(), WAITERS + 1, "every waiter ran");
    }
}

both_ways! {
    fn waiters_through_a_restart_of_the_server_all_run_twenty_times_in_a_row(pg) {
        // The server restarts under the waiters; behind PgBouncer the pooler stays up and
        // its logins to the server fail (or wait) meanwhile. Twenty rounds: the rare waiter
        // a restart met at its connect (57P01, a login that waits) would show.
        for round in 0..20 {
            let dir = Dir::new();
            let lock = pg.url(&format!("#round{round}"));
            let holder = dir.locked(&lock).args(dir.ready_work(0.6)).start();
            dir.wait_for("ready");
            let waiters: Vec<Child> = (0..WAITERS)
                .map(|_| {
                    dir.locked(&lock)
                        .args(["--lock-wait", "120s", "-a", "1"])
                        .args(dir.work(0.01))
                        .start()
                })
                .collect();
            std::thread::sleep(Duration::from_millis(300));
            pg.restart();
            let holder = wait_for_run(holder);
            assert_eq!(holder.status, 0, "round {round}, the holder: {}", holder.stderr);
            for out in waiters.into_iter().map(wait_for_run) {
                assert_eq!(out.status, 0, "round {round}, a waiter: {}", out.stderr);
            }
            assert_eq!(dir.count(), WAITERS + 1, "round {round}: every waiter ran");
        }
    }
}

/// The role of the runs at capacity (superusers have slots of their own).
const ROLE: &str = "app";

/// Connections as `ROLE` to the way in (the server, or the pooler) until it refuses
/// one: the server (or the pooler) is at capacity while they are held.
fn fill(pg: &Postgres) -> Vec<Client> {
    let config = format!(
        "host=127.0.0.1 port={} user={ROLE} dbname=postgres",
        pg.port()
    );
    let mut held = Vec::new();
    while let Ok(client) = Client::try_connect(&config) {
        held.push(client);
        assert!(held.len() < 50, "the server never refused");
    }
    held
}

both_ways! {
    fn a_holder_warns_before_a_server_at_capacity_loses_its_lease(pg, Options::small()) {
        pg.add_role(ROLE);
        let dir = Dir::new();
        let holder = dir
            .locked(pg.url_as(ROLE, "#full"))
            .args(["--lease-ttl", "3s"])
            .args(dir.ready_work(20.0))
            .start();
        dir.wait_for("ready");
        let full = fill(&pg);
        let (out, _) = exit_within(holder, Duration::from_secs(10));
        drop(full);
        assert_lost(&out);
        let warned = out.stderr.find("warning: a renewal of the lease lock:full has waited");
        let lost = out.stderr.find("was lost");
        assert!(warned.is_some() && warned < lost, "warned first: {}", out.stderr);
        out.assert_stderr_has("a longer --lease-ttl (now 3s) or PgBouncer");
        assert_eq!(out.stderr.matches("warning: a renewal").count(), 1, "one warning");
    }
}

both_ways! {
    fn a_holder_stopped_past_its_lease_says_it_was_stopped(pg) {
        let dir = Dir::new();
        let holder = start_watched(
            &dir,
            dir.locked(pg.url("#stopped")).args(["--lease-ttl", "3s"]),
            long_command(&dir),
        );
        let pid = Pid::from_raw(holder.retry.id() as i32);
        kill(pid, Signal::SIGSTOP).unwrap();
        std::thread::sleep(Duration::from_millis(3500));
        kill(pid, Signal::SIGCONT).unwrap();
        let (out, _) = exit_within(holder.retry, Duration::from_secs(10));
        drop(holder.reaper);
        assert_lost(&out);
        out.assert_stderr_has("the lease expired meanwhile");
        out.assert_stderr_lacks("no renewal was answered");
        let said = out
            .stderr
            .split("this process was stopped for ")
            .nth(1)
            .and_then(|rest| rest.split('s').next())
            .and_then(|secs| secs.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no length of the stop: {}", out.stderr));
        assert!((3.0..5.0).contains(&said), "stopped for {said}s: {}", out.stderr);
    }
}
