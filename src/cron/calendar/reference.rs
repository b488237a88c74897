//! systemd itself as the reference: every expression of `reference.txt` is given to
//! `systemd-analyze calendar --iterations=5 --base-time=T` (systemd 252 runs it
//! without systemd running, `TZ` naming the local zone), and our reading must refuse
//! what it refuses and give the same five next elapses, to the second (it prints no
//! fractions). The file groups expressions under `@ ZONE BASE` lines: the zone they are
//! read in and the instant the search starts from. Without systemd-analyze the test
//! says SKIPPED, unless `RETRY_TEST_REQUIRE_SYSTEMD=1` (as CI sets) makes that a failure.

use std::process::Command;

use jiff::Timestamp;

use super::Calendar;
use crate::cron::Zone;

const CASES: &str = include_str!("reference.txt");

/// Elapses compared per expression, as the issue asks.
const ITERATIONS: usize = 5;

/// Expressions both readings must accept, at least.
const AT_LEAST: usize = 200;

/// Expressions read in one zone from one instant.
struct Group {
    zone: &'static str,
    base: Timestamp,
    expressions: Vec<&'static str>,
}

fn groups() -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for line in CASES.lines().map(str::trim_end) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(context) = line.strip_prefix("@ ") {
            let (zone, base) = context.split_once(' ').expect("@ ZONE BASE");
            out.push(Group {
                zone,
                base: base.parse().expect("BASE in RFC 3339"),
                expressions: Vec::new(),
            });
            continue;
        }
        out.last_mut()
            .expect("an @ ZONE BASE line first")
            .expressions
            .push(line);
    }
    out
}

/// What systemd-analyze said of one expression: refused, or its elapses in UTC.
#[derive(Debug, PartialEq)]
enum Said {
    Refused,
    Elapses(Vec<String>),
}

/// systemd-analyze's answers for a group, in the group's order; `None` when it cannot
/// run. An expression whose search systemd gives up on (its 1,000 steps: "Failed to
/// determine next elapse") is asked again with fewer iterations, for the elapses
/// before that: ours must give those, then none.
fn systemd(group: &Group) -> Option<Vec<Said>> {
    let (stdout, stderr) = analyze(group.zone, group.base, ITERATIONS, &group.expressions)?;
    let blocks = blocks(&stdout);
    group
        .expressions
        .iter()
        .map(|expr| match blocks.iter().find(|(e, _)| e == expr) {
            Some((_, elapses)) => Some(Said::Elapses(elapses.clone())),
            None if stderr.contains(&format!("next elapse for '{expr}'")) => gave_up(group, expr),
            None => Some(Said::Refused),
        })
        .collect()
}

/// The elapses systemd gives for `expr` before its search gives up.
fn gave_up(group: &Group, expr: &str) -> Option<Said> {
    for n in (1..ITERATIONS).rev() {
        let (stdout, _) = analyze(group.zone, group.base, n, &[expr])?;
        if let Some((_, elapses)) = blocks(&stdout).pop() {
            return Some(Said::Elapses(elapses));
        }
    }
    Some(Said::Elapses(Vec::new()))
}

/// `systemd-analyze calendar` with the local zone `zone`: its stdout and stderr.
fn analyze(zone: &str, base: Timestamp, n: usize, exprs: &[&str]) -> Option<(String, String)> {
    let out = Command::new("systemd-analyze")
        .env("TZ", zone)
        .env("SYSTEMD_COLORS", "0")
        .arg("calendar")
        .arg(format!("--iterations={n}"))
        .arg(format!("--base-time=@{}", base.as_second()))
        .args(exprs)
        .output()
        .ok()?;
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    Some((text(&out.stdout), text(&out.stderr)))
}

/// Each expression systemd-analyze printed, with its elapses in UTC (`Next elapse:`
/// and `Iter. #N:`, each replaced by the `(in UTC):` line after it when there is one).
/// An expression starts with `Original form:`, or with `Normalized form:` alone when
/// it was written in its normal form.
fn blocks(stdout: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut opened = false;
    for line in stdout.lines().map(str::trim) {
        let Some((label, value)) = line.split_once(": ") else {
            continue;
        };
        let just_opened = std::mem::replace(&mut opened, label == "Original form");
        let elapses = out.last_mut().map(|(_, e)| e);
        match (label, elapses) {
            ("Original form", _) => out.push((value.to_string(), Vec::new())),
            ("Normalized form", _) if !just_opened => out.push((value.to_string(), Vec::new())),
            ("Next elapse", Some(e)) if value != "never" => e.push(utc_of(value)),
            ("(in UTC)", Some(e)) => {
                e.pop();
                e.push(utc_of(value));
            }
            (label, Some(e)) if label.starts_with("Iter. #") => e.push(utc_of(value)),
            _ => {}
        }
    }
    out
}

/// `Sat 2026-03-28 12:15:00 UTC` as `2026-03-28T12:15:00Z` (other zones are followed
/// by their `(in UTC)` line, which replaces them).
fn utc_of(shown: &str) -> String {
    let words: Vec<&str> = shown.split_whitespace().collect();
    match words.as_slice() {
        [_, date, time, _] => format!("{date}T{time}Z"),
        _ => shown.to_string(),
    }
}

/// Our answer, in systemd-analyze's terms.
fn ours(group: &Group, expr: &str) -> Said {
    let Ok(calendar) = Calendar::parse(expr) else {
        return Said::Refused;
    };
    let zone = Zone::named(group.zone).expect("the group's zone");
    let mut t = group.base;
    let mut elapses = Vec::new();
    while elapses.len() < ITERATIONS {
        let Some(next) = calendar.next_after(&zone, t) else {
            break;
        };
        elapses.push(next.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
        t = next;
    }
    Said::Elapses(elapses)
}

/// Says that the comparison did not run, or fails when CI requires it.
fn skipped(why: &str) {
    use std::io::Write;
    if std::env::var("RETRY_TEST_REQUIRE_SYSTEMD").is_ok_and(|v| v == "1") {
        panic!(
            "{why}, and RETRY_TEST_REQUIRE_SYSTEMD=1 makes the comparison with systemd mandatory"
        );
    }
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED cron::calendar::reference: {why}; install systemd (systemd-analyze) to compare calendar expressions with systemd's own reading"
    );
}

#[test]
fn every_expression_elapses_as_systemd_analyze_says() {
    let mut compared = 0;
    let mut wrong = Vec::new();
    for group in groups() {
        let Some(theirs) = systemd(&group) else {
            return skipped("systemd-analyze cannot be run here");
        };
        for (expr, said) in group.expressions.iter().zip(theirs) {
            let got = ours(&group, expr);
            if got != said {
                wrong.push(format!(
                    "{expr:?} in {} from {}: systemd {said:?}, ours {got:?}",
                    group.zone, group.base
                ));
            }
            compared += usize::from(matches!(said, Said::Elapses(_)));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(
        compared >= AT_LEAST,
        "only {compared} expressions compared; the reference holds {AT_LEAST} at least"
    );
}

#[test]
fn systemd_analyze_s_lines_are_read_in_utc() {
    let shown = "  Original form: *-*-* 02:30\nNormalized form: *-*-* 02:30:00\n    Next elapse: Mon 2026-03-30 02:30:00 CEST\n       (in UTC): Mon 2026-03-30 00:30:00 UTC\n       From now: 8 months ago\n       Iter. #2: Tue 2026-03-31 02:30:00 CEST\n       (in UTC): Tue 2026-03-31 00:30:00 UTC\n\n  Original form: *-02-30\nNormalized form: *-02-30 00:00:00\n    Next elapse: never\n\nNormalized form: *-*-* 00:00:00\n    Next elapse: Sun 2026-03-29 00:00:00 UTC\n";
    assert_eq!(
        blocks(shown),
        [
            (
                "*-*-* 02:30".to_string(),
                vec![
                    "2026-03-30T00:30:00Z".to_string(),
                    "2026-03-31T00:30:00Z".to_string()
                ]
            ),
            ("*-02-30".to_string(), Vec::new()),
            (
                "*-*-* 00:00:00".to_string(),
                vec!["2026-03-29T00:00:00Z".to_string()]
            )
        ]
    );
}
