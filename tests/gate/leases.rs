//! PostgreSQL locks and markers: leases in `retry_lease`, `--once` rows in
//! `retry_once`, each test run twice (directly and through PgBouncer in transaction
//! mode) by `both_ways!`.

use super::*;
use crate::both_ways;
use crate::support::postgres::{Postgres, Via};
use crate::support::stall::{Proxy, When};

/// `--lease-ttl` for the tests that wait for a lease to expire.
const TTL: &str = "3s";

/// A command that prints its fencing token.
fn print_token() -> [&'static str; 4] {
    ["--", "sh", "-c", "echo $RETRY_FENCING_TOKEN"]
}

/// The tokens of `runs` runs of `cmd` in turn.
fn tokens(runs: usize, mut cmd: impl FnMut() -> Invocation) -> Vec<i64> {
    (0..runs)
        .map(|_| {
            let out = cmd().args(print_token()).run();
            assert_eq!(out.status, 0, "{}", out.stderr);
            let text = out.stdout_text();
            text.trim()
                .parse()
                .unwrap_or_else(|_| panic!("no token in {text:?}: {}", out.stderr))
        })
        .collect()
}

both_ways! {
    fn a_lease_lets_one_of_two_runs_in(pg) {
        let dir = Dir::new();
        let lock = pg.url("#nightly-report");
        let first = dir.locked(&lock).args(dir.ready_work(2.0)).start();
        dir.wait_for("ready");
        let lease = pg.lease("lock:nightly-report").expect("a lease row");
        assert!(lease.held, "{lease:?}");
        assert!(lease.token >= 1 && lease.expires_in > 0.0, "{lease:?}");
        assert!(lease.holder.contains(&format!(":{}:", first.id())), "{lease:?}");

        let second = dir.locked_work(&lock, &["--busy-exit", "9"]).run();
        assert_eq!(second.status, 9, "{}", second.stderr);
        assert!(second.stderr.contains("nightly-report") && second.stderr.contains("busy"));

        let first = wait_for_run(first);
        assert_eq!(first.status, 0, "{}", first.stderr);
        assert!(!pg.lease("lock:nightly-report").unwrap().held, "released at exit");
        assert_eq!(dir.count(), 1, "only the holder ran");
        dir.assert_does_the_work(&mut dir.locked(&lock), 2, "released at exit");
    }
}

both_ways! {
    fn nothing_is_left_in_a_server_session_for_the_next_run(pg) {
        let dir = Dir::new();
        let lock = pg.url("#pooled");
        let holders: Vec<Child> = (0..4)
            .map(|_| dir.locked(&lock).args(["-a", "1"]).args(dir.work(1.0)).start())
            .collect();
        for out in holders.into_iter().map(wait_for_run) {
            assert_eq!(out.status, 0, "{}", out.stderr);
        }
        assert_eq!(dir.count(), 1, "exactly one of four concurrent lockers ran");
        // Right after holders that exited cleanly, the lock is free, also directly.
        for n in 2..=4 {
            let direct = pg.direct_url("#pooled");
            dir.assert_does_the_work(&mut dir.locked(&direct), n, "never told busy");
        }
    }
}

both_ways! {
    fn sigkill_of_the_holder_frees_the_lease_within_its_ttl(pg) {
        let dir = Dir::new();
        let lock = pg.url("#killed");
        let holder = start_watched(
            &dir,
            dir.locked(&lock).args(["--lease-ttl", TTL]),
            long_command(&dir),
        );
        let killed = Instant::now();
        let _reaper = holder.kill_retry();
        let mut waiting = dir.locked(&lock);
        waiting.args(["--lock-wait", "10s", "--lease-ttl", TTL]);
        dir.assert_does_the_work(&mut waiting, 1, "the expired lease");
        let took = killed.elapsed();
        assert!(took < Duration::from_secs(4), "within TTL + 1 s: {took:?}");
    }
}

both_ways! {
    fn once_with_postgres_state_records_a_row_and_skips_the_second_run(pg) {
        let dir = Dir::new();
        let state = pg.url("");
        let failed = dir.once("broken", &state).args(["-a", "1", "--", "false"]).run();
        assert_eq!(failed.status, 1, "{}", failed.stderr);
        assert!(!pg.lease("once:broken").unwrap().held, "a failed run frees its key");

        let waiting = || {
            let mut cmd = dir.once("nightly", &state);
            cmd.args(["--lock-wait", "20s"]);
            cmd
        };
        let outs = dir.crowd(waiting, 0.5);
        for out in &outs {
            out.assert_stderr_lacks("prepared statement");
        }
        let client = pg.client();
        let rows = client.query(
            "SELECT key, host, pid, command, attempts, status FROM retry_once",
            &[],
        );
        assert_eq!(rows.len(), 1, "a failed run records nothing");
        let row = &rows[0];
        assert_eq!(row.get::<_, String>("key"), "nightly");
        assert!(!row.get::<_, String>("host").is_empty());
        assert!(row.get::<_, i32>("pid") > 0);
        assert!(row.get::<_, String>("command").starts_with("sh -c"));
        assert_eq!(row.get::<_, i32>("attempts"), 1);
        assert_eq!(row.get::<_, String>("status"), "succeeded");
        assert!(!pg.lease("once:nightly").unwrap().held, "the record released the key");

        let again = dir.once("nightly", &state).args(dir.work(0.0)).run();
        assert_eq!(again.status, 0);
        again.assert_stderr_has("already succeeded at");
        assert_eq!(dir.count(), 1);

        client.execute("DELETE FROM retry_once WHERE key = 'nightly'", &[]);
        dir.assert_does_the_work(
            &mut dir.once("nightly", &state),
            2,
            "deleting the row lets the job run again",
        );
    }
}

both_ways! {
    fn fencing_tokens_only_grow(pg) {
        let dir = Dir::new();
        let lock = pg.url("#fenced");
        let before = tokens(3, || dir.locked(&lock));
        assert!(before.windows(2).all(|w| w[0] < w[1]), "{before:?}");
        // The token starts from the server's clock in microseconds.
        let now_us = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_micros() as i64;
        assert!((before[0] - now_us).abs() < 60_000_000, "{before:?} vs {now_us}");
        pg.restart();
        let after = tokens(2, || dir.locked(&lock));
        assert!(before[2] < after[0] && after[0] < after[1], "{before:?} {after:?}");
        // A --once key's lease is fenced the same way.
        let state = pg.url("");
        let n = std::cell::Cell::new(0);
        let keys = tokens(2, || {
            n.set(n.get() + 1);
            let mut cmd = dir.retry();
            cmd.args(["--state", &state, "--once"]).arg(format!("k{}", n.get()));
            cmd
        });
        assert!(keys[0] > 0 && keys[1] > 0, "{keys:?}");
    }
}

both_ways! {
    fn a_lease_counts_on_from_an_earlier_fencing_table(pg) {
        let dir = Dir::new();
        let client = pg.client();
        client.batch_execute(
            "CREATE TABLE retry_fencing (name text PRIMARY KEY, token bigint NOT NULL);
             INSERT INTO retry_fencing VALUES ('seeded', 9000000000000000000)",
        );
        let seeded = tokens(2, || dir.locked(pg.url("#seeded")));
        assert_eq!(seeded, [9_000_000_000_000_000_001, 9_000_000_000_000_000_002]);
        let other = tokens(1, || dir.locked(pg.url("#other")));
        assert!(other[0] < 9_000_000_000_000_000_000, "only the name it counted");
    }
}

/// Holds a lease (and a `--once` key) at `url` with work that takes 3 s, does
/// `meanwhile` to the server, and checks that the run still succeeds and records its key.
fn a_held_lease_survives(
    pg: &Postgres,
    url: &dyn Fn(&str) -> String,
    ttl: &str,
    meanwhile: impl FnOnce(&Postgres),
) {
    let dir = Dir::new();
    let state = url("");
    let holder = dir
        .locked(url("#held"))
        .args(["--once", "k", "--state", &state, "--lease-ttl", ttl])
        .args(dir.ready_work(3.0))
        .start();
    dir.wait_for("ready");
    meanwhile(pg);
    let out = wait_for_run(holder);
    assert_eq!(
        out.status, 0,
        "a lease is a row, not a session: {}",
        out.stderr
    );
    assert_eq!(once_markers(pg), 1);
}

both_ways! {
    fn a_server_restart_does_not_lose_a_held_lease(pg) {
        a_held_lease_survives(&pg, &|rest| pg.url(rest), "9s", Postgres::restart);
    }
}

both_ways! {
    fn a_terminated_backend_does_not_lose_a_held_lease(pg) {
        // Renewals held 300 ms on their way, so that their session can be ended midway:
        // no session of retry's stays open between them.
        let renewal = "UPDATE retry_lease SET expires_at = now() + make_interval(secs => $4)";
        let late = When::Late(renewal.into(), Duration::from_millis(300));
        let proxy = Proxy::to(pg.port(), late);
        // A 6 s lease renews every 2 s: one renewal falls in the 2.5 s of terminations,
        // and a loaded machine's slow reconnect still has 4 s before the lease is lost.
        a_held_lease_survives(&pg, &|rest| proxy.url(rest), "6s", |pg| {
            let mut ended = 0;
            wait_until(Duration::from_millis(2500), || {
                ended += pg.terminate_retry_backends();
                ended > 0
            });
            assert!(ended >= 1 || pg.via == Via::Pooler, "{ended}");
        });
    }
}

/// The TLS tests: the pooler offers the server's certificate to clients too.
fn tls_server(test: &str, via: Via) -> Option<Postgres> {
    let options = postgres::Options {
        tls: true,
        via,
        ..postgres::Options::default()
    };
    postgres::start_with(test, options)
}

#[test]
fn tls_follows_the_sslmode_in_the_url() {
    for via in [Via::Direct, Via::Pooler] {
        let Some(pg) = tls_server("tls_follows_the_sslmode_in_the_url", via) else {
            return;
        };
        let dir = Dir::new();
        let cert = pg.cert_path().display().to_string();
        let named = format!(
            "postgres://{}@localhost:{}/postgres",
            postgres::USER,
            pg.port()
        );
        for (url, ok) in [
            (pg.url("?sslmode=disable#a"), true),
            (pg.url("?sslmode=prefer#a"), true),
            (pg.url("?sslmode=require#a"), true),
            (
                pg.url(&format!("?sslmode=verify-ca&sslrootcert={cert}#a")),
                true,
            ),
            (
                format!("{named}?sslmode=verify-full&sslrootcert={cert}#a"),
                true,
            ),
            (
                pg.url(&format!("?sslmode=verify-full&sslrootcert={cert}#a")),
                false,
            ),
        ] {
            let out = dir.locked(&url).args(dir.work(0.0)).run();
            assert_eq!(out.status == 0, ok, "{via:?} {url}: {}", out.stderr);
        }
    }
}

#[test]
fn sslmode_require_fails_against_a_server_without_tls() {
    for via in [Via::Direct, Via::Pooler] {
        let Some(pg) =
            postgres::start_via("sslmode_require_fails_against_a_server_without_tls", via)
        else {
            return;
        };
        let dir = Dir::new();
        let out = dir
            .locked(pg.url("?sslmode=require#a"))
            .args(dir.work(0.0))
            .run();
        assert_eq!(out.status, 125, "{via:?}: {}", out.stderr);
        assert_eq!(dir.count(), 0);
        dir.assert_does_the_work(
            &mut dir.locked(pg.url("?sslmode=prefer#a")),
            1,
            "prefer falls back to plain text",
        );
    }
}

/// The DDL block of docs/postgres.md, which the README points to.
fn documented_ddl() -> String {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/postgres.md")).unwrap();
    let start = doc
        .find("<!-- ddl -->")
        .expect("docs/postgres.md marks its DDL with <!-- ddl -->");
    let block = &doc[start..];
    let sql = block
        .split("```sql\n")
        .nth(1)
        .expect("a ```sql block after the mark");
    sql.split("```").next().unwrap().to_string()
}

/// `limited`: a role that may log in and nothing else (no CREATE on `public`, as
/// PostgreSQL 15 and later have it).
fn add_limited_role(pg: &Postgres) {
    let client = pg.client();
    client.batch_execute("CREATE ROLE limited LOGIN; REVOKE CREATE ON SCHEMA public FROM PUBLIC;");
}

both_ways! {
    fn a_role_without_create_gets_the_documented_ddl_and_works_with_dml_alone(pg) {
        add_limited_role(&pg);
        let dir = Dir::new();
        let url = |rest: &str| pg.url_as("limited", rest);
        let every_table = || {
            dir.locked(url("#x"))
                .args(["--once", "k", "--state", &url("")])
                .args(["--retry-budget", "b", "--circuit", "c"])
                .args(dir.work(0.0))
                .run()
        };
        let out = every_table();
        assert_eq!(out.status, 125, "{}", out.stderr);
        out.assert_stderr_has("have an administrator run once");
        assert_eq!(dir.count(), 0);
        let ddl = documented_ddl();
        for table in ["retry_lease", "retry_once", "retry_budgets", "retry_circuits"] {
            assert!(ddl.contains(&format!("CREATE TABLE IF NOT EXISTS {table} (")), "{table}");
        }
        for line in out.stderr.lines().filter(|l| l.starts_with("    ") || l.starts_with(");")) {
            assert!(ddl.contains(line), "docs/postgres.md lacks what retry prints: {line}");
        }
        let admin = pg.client();
        admin.batch_execute(&ddl);
        admin.batch_execute("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO limited");
        let out = every_table();
        assert_eq!(out.status, 0, "{}", out.stderr);
        assert_eq!(dir.count(), 1);
        let schedule = dir
            .retry()
            .args(["--state", &url(""), "--schedule", "@every 1s", "--job", "j"])
            .args(dir.work(0.0))
            .start();
        let ran = wait_until(Duration::from_secs(10), || dir.count() >= 2);
        crate::support::signal(&schedule, nix::sys::signal::Signal::SIGTERM);
        let out = wait_for_run(schedule);
        assert!(ran, "a scheduler as the limited role ran a slot: {}", out.stderr);
        assert_eq!(out.status, 143, "{}", out.stderr);
    }
}

both_ways! {
    fn an_earlier_once_table_holds_markers_and_is_upgraded_where_the_role_may(pg) {
        add_limited_role(&pg);
        let admin = pg.client();
        admin.batch_execute(
            "CREATE TABLE retry_once (key text PRIMARY KEY, succeeded_at timestamptz NOT NULL,
                 host text NOT NULL, pid integer NOT NULL, command text NOT NULL,
                 attempts integer NOT NULL);
             INSERT INTO retry_once VALUES ('old', now(), 'h', 1, 'c', 1);",
        );
        admin.batch_execute(LEASE_DDL_FOR_TESTS);
        admin.batch_execute("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO limited");
        let dir = Dir::new();
        let state = pg.url_as("limited", "");
        let old = dir.once("old", &state).args(dir.work(0.0)).run();
        assert_eq!(old.status, 0, "{}", old.stderr);
        old.assert_stderr_has("already succeeded");
        dir.assert_does_the_work(&mut dir.once("new", &state), 1, "markers in the old table");
        // A scheduler records other endings: the role may not add the column.
        let out = dir
            .retry()
            .args(["--state", &state, "--schedule", "@every 1s", "--job", "j"])
            .args(dir.work(0.0))
            .run();
        assert_eq!(out.status, 125, "{}", out.stderr);
        out.assert_stderr_has("ALTER TABLE retry_once ADD COLUMN IF NOT EXISTS status");
        // The owner may: the table is upgraded and keeps its rows.
        let owner = pg.url("");
        dir.assert_does_the_work(&mut dir.once("newer", &owner), 2, "upgraded");
        let status: String = admin
            .query_one("SELECT status FROM retry_once WHERE key = 'old'", &[])
            .get(0);
        assert_eq!(status, "succeeded");
    }
}

/// The lease table, as a test that sets up an earlier version's tables needs it.
pub const LEASE_DDL_FOR_TESTS: &str = "CREATE TABLE IF NOT EXISTS retry_lease (
    name text PRIMARY KEY, holder text NOT NULL, token bigint NOT NULL,
    expires_at timestamptz NOT NULL)";

both_ways! {
    fn a_dry_run_creates_no_table(pg) {
        let dir = Dir::new();
        let state = pg.url("");
        for args in [
            vec!["--schedule", "*/5 * * * *", "--state", &state],
            vec!["--once", "k", "--state", &state, "--lock", "postgres://u@127.0.0.1:1/db#x"],
            vec!["--retry-budget", "b", "--circuit", "c", "--state", &state],
        ] {
            let out = dir.retry().arg("--dry-run").args(&args).args(dir.work(0.0)).run();
            assert_eq!(out.status, 0, "{args:?}: {}", out.stderr);
        }
        let tables: i64 = pg
            .client()
            .query_one(
                "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'retry\\_%'",
                &[],
            )
            .get(0);
        assert_eq!(tables, 0, "a dry run creates nothing");
        assert_eq!(dir.count(), 0);
    }
}

both_ways! {
    fn a_lease_token_at_its_largest_is_125_never_a_wrap(pg) {
        let dir = Dir::new();
        let admin = pg.client();
        admin.batch_execute(LEASE_DDL_FOR_TESTS);
        admin.batch_execute(
            "INSERT INTO retry_lease VALUES ('lock:max', 'gone', 9223372036854775807, '-infinity')",
        );
        let out = dir.locked(pg.url("#max")).args(dir.work(0.0)).run();
        assert_eq!(out.status, 125, "{}", out.stderr);
        out.assert_stderr_has("lock:max");
        out.assert_stderr_has("2^63-1");
        assert_eq!(dir.count(), 0);
    }
}
