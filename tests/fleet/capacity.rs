//! Budgets and circuits of a fleet larger than the server's connection limit: a server
//! that takes 12 connections (9 for the runs' role) and a pooler that takes 8 clients,
//! with several times as many runs spending one budget and counting on one circuit at
//! once. Every run exits 0 and its updates count, and none holds a connection while its
//! command runs. Run both ways.

use std::process::Child;
use std::time::Duration;

use super::{args, spawn, wait_all};
use crate::both_ways;
use crate::support::postgres::Options;
use crate::support::{Scratch, wait_until};

/// Runs at once: three times the server's connections.
const FLEET: usize = 36;

/// The role the runs connect as (superusers have slots of their own).
const ROLE: &str = "app";

/// Work whose first attempt says `ready.N`, waits for `go` and fails; the retry succeeds.
fn fail_once_after_go(s: &Scratch) -> String {
    s.script(
        "work",
        "if [ -e \"$D/tried.$1\" ]; then exit 0; fi\n\
         touch \"$D/tried.$1\" \"$D/ready.$1\"\n\
         until [ -e \"$D/go\" ]; do sleep 0.02; done\n\
         exit 1",
    )
}

both_ways! {
    fn budget_spenders_on_a_full_server_all_count_and_hold_no_connection_meanwhile(pg, Options::small()) {
        pg.add_role(ROLE);
        let s = Scratch::new();
        let state = pg.url_as(ROLE, "");
        let work = fail_once_after_go(&s);
        let children: Vec<Child> = (0..FLEET)
            .map(|i| {
                spawn(
                    &s,
                    &args(&[
                        "-a", "2", "--delay", "10ms", "--max-delay", "10ms",
                        "--state", &state,
                        "--retry-budget", "api", "--budget-size", "1000",
                        "--circuit", "api",
                        "--", &work, &i.to_string(),
                    ]),
                )
            })
            .collect();
        let ready = wait_until(Duration::from_secs(60), || {
            (0..FLEET).all(|i| s.path(&format!("ready.{i}")).exists())
        });
        assert!(ready, "not every first attempt started");
        let pids: Vec<u32> = children.iter().map(Child::id).collect();
        pg.assert_no_connection_of(&pids, Duration::from_secs(1));
        std::fs::write(s.path("go"), "").unwrap();
        for out in wait_all(children) {
            assert_eq!(out.status, 0, "{}", out.stderr);
            out.assert_stderr_lacks("warning: the fleet state");
        }
        let client = pg.client();
        let tokens: f64 = client
            .query_one("SELECT tokens FROM retry_budgets WHERE name = 'api'", &[])
            .get(0);
        // Each run: one failure (-1), one success (+0.1).
        let expected = 1000.0 - FLEET as f64 * 0.9;
        assert!((tokens - expected).abs() < 1e-6, "{tokens} tokens, not {expected}");
        let failures: i32 = client
            .query_one("SELECT failures FROM retry_circuits WHERE name = 'api'", &[])
            .get(0);
        assert_eq!(failures, 0, "every run succeeded");
    }
}
