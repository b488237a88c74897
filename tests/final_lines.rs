//! The last word of a run and of a dry run: the final line names the last failure's
//! cause and the exit status (the circuit's refusal too), and `--dry-run` counts the
//! splay in its worst case and a circuit's failures past its threshold plainly.

use crate::support::{Scratch, retry};

#[test]
fn the_last_line_names_the_last_failures_cause_also_with_quiet() {
    for quiet in [&[][..], &["-q"][..]] {
        let out = retry()
            .args(quiet)
            .args(["-a", "2", "--delay", "1ms", "--", "sh", "-c", "exit 7"])
            .run();
        assert_eq!(out.status, 7, "{}", out.stderr);
        assert_eq!(
            out.stderr.lines().last(),
            Some("retry: gave up after 2 attempts: exit status 7 (non-zero exit status)"),
            "{quiet:?}: {}",
            out.stderr
        );
    }
}

/// A value a line echoes (here the name of a command not found) has its control
/// characters escaped in every line, -v's and the JSON log's included: each line is
/// one line, and no escape sequence reaches the terminal.
#[test]
fn echoed_values_are_escaped_in_every_line() {
    let name = "no-such\x1b[2J\ncommand";
    for flags in [&["-v"][..], &["-q"], &["--log-format", "json", "-v"]] {
        let out = retry().args(flags).args(["-a", "2", "--", name]).run();
        assert_eq!(out.status, 127, "{flags:?}: {}", out.stderr);
        assert!(
            !out.stderr.contains(['\x1b', '\r']),
            "{flags:?}: {}",
            out.stderr
        );
        let lines: Vec<&str> = out.stderr.lines().collect();
        let about: Vec<&&str> = lines.iter().filter(|l| l.contains("no-such")).collect();
        assert!(!about.is_empty(), "{flags:?}: {}", out.stderr);
        for line in about {
            let escaped = line.contains(r"no-such\u{1b}[2J\ncommand")
                || line.contains(r"no-such\u001b[2J\ncommand");
            assert!(escaped, "{flags:?}: {line}");
        }
        assert!(
            lines
                .iter()
                .all(|l| l.starts_with("retry: ") || l.starts_with('{')),
            "{}",
            out.stderr
        );
    }
    // The dry run's lines too: the target is one line, nothing raw on stdout.
    let url = "http://127.0.0.1:9/a\x1b[2J\nb";
    for args in [["--dry-run", "--", name], ["--dry-run", "-g", url]] {
        let out = retry().args(args).run();
        assert_eq!(out.status, 0, "{}", out.stderr);
        let text = out.stdout_text();
        assert!(!text.contains('\x1b'), "{text}");
        let line = text.lines().find(|l| l.starts_with("target:")).unwrap();
        let one = line.ends_with(r"\u{1b}[2J\ncommand") || line.ends_with(r"\u{1b}[2J\nb");
        assert!(one, "{line}");
    }
}

/// When a rule made an exit 0 a failure, the final line names the rule, with -q and in
/// the GitHub annotation alike.
#[test]
fn the_last_line_names_the_rule_that_made_an_exit_0_a_failure() {
    let expected = "gave up after 2 attempts: exit status 1 (the command exited 0, but \
                    --retry-on-output matched 'busy')";
    for quiet in [&[][..], &["-q"][..]] {
        let out = retry()
            .env("GITHUB_ACTIONS", "true")
            .args(quiet)
            .args(["-a", "2", "--delay", "1ms", "--retry-on-output", "busy"])
            .args(["--", "echo", "busy"])
            .run();
        assert_eq!(out.status, 1, "{}", out.stderr);
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert!(
            lines.contains(&format!("::error title=retry::{expected}").as_str()),
            "{quiet:?}: {}",
            out.stderr
        );
        assert_eq!(
            lines.last().copied(),
            Some(format!("retry: {expected}").as_str()),
            "{quiet:?}: {}",
            out.stderr
        );
    }
    let stopped = retry()
        .args(["-a", "2", "--stop-on-output", "busy", "--", "echo", "busy"])
        .run();
    assert_eq!(
        stopped.stderr.lines().last(),
        Some(
            "retry: permanent failure: --stop-on-output matched 'busy': exit status 1 (the command exited 0)"
        ),
        "{}",
        stopped.stderr
    );
}

/// Circuit `c` in the state directory `state`, opened by one failed run.
fn on_circuit(state: &str) -> [&str; 6] {
    [
        "--state",
        state,
        "--circuit",
        "c",
        "--circuit-failures",
        "1",
    ]
}

#[test]
fn the_circuit_open_line_says_its_exit_status() {
    let s = Scratch::new();
    let state = s.p("state");
    let circuit = |exit: &str| {
        retry()
            .args(["-a", "1"])
            .args(on_circuit(&state))
            .args(["--circuit-exit", exit, "--", "sh", "-c", "exit 3"])
            .run()
    };
    assert_eq!(circuit("75").status, 3);
    for exit in ["75", "9"] {
        let refused = circuit(exit);
        assert_eq!(refused.status.to_string(), exit, "{}", refused.stderr);
        let line = refused.stderr.lines().last().unwrap_or_default();
        assert!(
            line.starts_with("retry: circuit c is open until ")
                && line.ends_with(&format!(
                    "after 1 failed run in a row: not running; exit status {exit}"
                )),
            "{line}"
        );
    }
}

#[test]
fn dry_run_counts_a_circuits_failures_past_its_threshold_plainly() {
    let s = Scratch::new();
    let state = s.p("state");
    let circuit = on_circuit(&state);
    // A 1 ms cooldown: each later run is a probe that fails, and the count goes on.
    for _ in 0..3 {
        let out = retry()
            .args(["-a", "1"])
            .args(circuit)
            .args([
                "--circuit-cooldown",
                "1ms",
                "--",
                "sh",
                "-c",
                "sleep 0.01; exit 3",
            ])
            .run();
        assert_eq!(out.status, 3, "{}", out.stderr);
    }
    let dry = retry()
        .args(["--dry-run"])
        .args(circuit)
        .args(["--", "true"])
        .run();
    assert_eq!(dry.status, 0, "{}", dry.stderr);
    let text = dry.stdout_text();
    assert!(
        text.contains(
            "; 3 failed runs in a row (it opens at 1); cooldown 1m; refused runs exit 75"
        ),
        "{text}"
    );
    assert!(!text.contains("3 of 1"), "{text}");
}

#[test]
fn dry_run_worst_case_counts_the_splay() {
    let out = retry()
        .args([
            "--dry-run",
            "--splay",
            "30s",
            "-a",
            "4",
            "-t",
            "10s",
            "--",
            "true",
        ])
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    let text = out.stdout_text();
    assert!(text.contains("1        0ms - 30s (--splay)"), "{text}");
    assert!(
        text.contains(
            "worst case: 37s of sleeping (30s of --splay, 7s of backoff) + 4 x 10s of attempts = 1m17s"
        ),
        "{text}"
    );
}
