//! State records that cannot be trusted: arbitrary bytes and near-miss JSON fed to
//! every reader of a record (budget and circuit files, fencing counters, `--once`
//! markers), in process by the thousand, then through the real binary into real
//! files, and as rows of a real PostgreSQL server. No input panics; each reading is
//! what docs/state.md says (fresh state with a warning, 125 at 2^63−1, a marker that cannot
//! be read refused).

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use retry::parsers::records as r;

use crate::both_ways;
use crate::support::{Run, Scratch, retry};

/// A JSON value of the kinds a record's fields could hold, right or wrong.
fn json_value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        Just(i64::MAX.to_string()),
        Just(u64::MAX.to_string()),
        Just("253402300799999".to_string()),
        Just("253402300800000".to_string()),
        any::<f64>().prop_map(|f| format!("{f:e}")),
        Just("1e309".to_string()),
        Just("-0.0".to_string()),
        Just("null".to_string()),
        Just("true".to_string()),
        "\"[ -~]{0,12}\"",
        Just("[]".to_string()),
        Just("{}".to_string()),
    ]
}

/// A record's text: an object with some of the fields a record has (and others),
/// arbitrary text, or the bytes of an arbitrary string.
fn record_text() -> impl Strategy<Value = String> {
    let field = prop_oneof![
        Just("tokens"),
        Just("size"),
        Just("failures"),
        Just("open_until_ms"),
        Just("token"),
        Just("lock"),
        Just("key"),
        Just("status"),
        Just("succeeded_at"),
        Just("other"),
    ];
    let object = prop::collection::vec((field, json_value()), 0..6).prop_map(|fields| {
        let body: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
        format!("{{{}}}", body.join(","))
    });
    prop_oneof![
        3 => object,
        1 => any::<String>(),
        1 => "[ {}\\[\\]\":,0-9a-z.-]{0,40}",
    ]
}

/// A marker of `key` with some of its fields changed.
fn marker_text() -> impl Strategy<Value = (String, String)> {
    let time = prop_oneof![
        Just("2024-05-01T03:00:00.000Z".to_string()),
        (0u32..20_000).prop_map(|y| format!("{y:04}-05-01T03:00:00Z")),
        "[0-9TZ:.-]{0,24}",
    ];
    let status = prop_oneof![
        Just("\"succeeded\""),
        Just("\"gave_up\""),
        Just("\"maybe\""),
        Just("7"),
    ];
    let key = "[a-z@:0-9-]{1,12}";
    // Mostly the marker of the key asked for, sometimes another key's.
    let keys = key.prop_flat_map(move |k| (Just(k.clone()), prop_oneof![3 => Just(k), 1 => key]));
    (keys, time, status).prop_map(|((key, named), time, status)| {
        let text = format!(
            "{{\"key\":\"{named}\",\"status\":{status},\"succeeded_at\":\"{time}\",\
             \"host\":\"h\",\"pid\":1,\"command\":[],\"attempts\":1}}"
        );
        (key, text)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn budget_records_never_panic_and_hold_usable_tokens(text in record_text()) {
        match r::parse_budget(text.as_bytes()) {
            Ok(Some(t)) => prop_assert!(t.is_finite() && (0.0..=f64::from(u32::MAX)).contains(&t), "{}", t),
            Ok(None) => prop_assert!(text.trim().is_empty()),
            Err(why) => prop_assert!(!why.is_empty()),
        }
    }

    #[test]
    fn circuit_records_never_panic_and_name_times_up_to_year_9999(text in record_text()) {
        match r::parse_circuit(text.as_bytes()) {
            Ok(Some((_, Some(until)))) => {
                prop_assert!(until <= r::LATEST_MS);
                let shown = r::show_time(until);
                prop_assert!(shown.len() == 24 && shown.ends_with('Z'), "{}", shown);
            }
            Ok(_) => {}
            Err(why) => prop_assert!(!why.is_empty()),
        }
    }

    #[test]
    fn fencing_counters_never_panic_and_never_wrap(text in record_text()) {
        let token = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("token")?.as_i64());
        match r::parse_counter(text.as_bytes()) {
            r::Stored::Token(t) => {
                prop_assert!((1..i64::MAX).contains(&t));
                prop_assert_eq!(Some(t), token);
            }
            r::Stored::Exhausted => prop_assert_eq!(token, Some(i64::MAX)),
            r::Stored::Unreadable(why) => {
                prop_assert!(!why.is_empty());
                prop_assert!(token.is_none_or(|t| t < 1));
            }
        }
    }

    #[test]
    fn markers_never_panic_and_are_read_only_for_their_own_key((key, text) in marker_text()) {
        match r::parse_marker(&key, text.as_bytes()) {
            Ok(marker) => {
                prop_assert_eq!(&marker.key, &key);
                prop_assert!(!text.contains("\"maybe\"") && !text.contains(":7,"));
            }
            Err(why) => prop_assert!(!why.is_empty()),
        }
        prop_assert!(r::parse_marker(&key, b"").is_err());
    }

    #[test]
    fn arbitrary_bytes_never_panic_a_reader(bytes in prop::collection::vec(any::<u8>(), 0..64), key in "[a-z]{1,8}") {
        let _ = r::parse_budget(&bytes);
        let _ = r::parse_circuit(&bytes);
        let _ = r::parse_counter(&bytes);
        let object = bytes.trim_ascii_start().first() == Some(&b'{');
        prop_assert!(r::parse_marker(&key, &bytes).is_err() || object);
    }
}

/// Now, in milliseconds since the epoch.
fn now_ms() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// `retry --state STATE FLAGS -- true`.
fn run_on(state: &str, flags: &[&str]) -> Run {
    retry()
        .args(["--state", state])
        .args(flags)
        .args(["--", "true"])
        .run()
}

/// What a run over a stored circuit says, by the README: an open circuit refuses (75), and
/// one that cannot be read counts as closed, with a warning.
#[track_caller]
fn assert_circuit_outcome(out: &Run, valid: bool, open: bool, what: &str) {
    assert_ne!(out.status, 134, "{what}: an abort: {}", out.stderr);
    let expected = if open { 75 } else { 0 };
    assert_eq!(out.status, expected, "{what}: {}", out.stderr);
    assert_eq!(
        out.stderr.contains("cannot be read"),
        !valid,
        "{what}: {}",
        out.stderr
    );
}

/// Writes `text` as the record of circuit `c` and of every fencing counter in `state`.
fn plant(state: &Path, text: &str) {
    std::fs::write(state.join("circuits/c.json"), text).unwrap();
    for counter in std::fs::read_dir(state.join("fencing")).unwrap() {
        std::fs::write(counter.unwrap().path(), text).unwrap();
    }
}

#[test]
fn corrupt_files_read_by_the_binary_give_the_specd_outcome() {
    let s = Scratch::new();
    let state = s.path("state");
    let state_arg = s.p("state");
    let lock = s.p("job.lock");
    let flags = ["--circuit", "c", "--lock", &lock];
    assert_eq!(run_on(&state_arg, &flags).status, 0);
    let mut runner = TestRunner::new(Config::with_cases(40));
    runner
        .run(&record_text(), |text| {
            plant(&state, &text);
            let out = run_on(&state_arg, &flags);
            let circuit = r::parse_circuit(text.as_bytes());
            let counter = r::parse_counter(text.as_bytes());
            if counter == r::Stored::Exhausted {
                assert_eq!(out.status, 125, "{text}: {}", out.stderr);
                return Ok(());
            }
            let open = matches!(circuit, Ok(Some((f, Some(until)))) if f >= 5 && until > now_ms());
            let valid = circuit.is_ok() && !matches!(counter, r::Stored::Unreadable(_));
            assert_circuit_outcome(&out, valid, open, &text);
            Ok(())
        })
        .unwrap();
}

/// A circuit row: failures, and open_until as SQL text (or NULL).
fn circuit_row() -> impl Strategy<Value = (i32, Option<String>)> {
    let until = prop_oneof![
        Just(None),
        Just(Some("infinity".to_string())),
        Just(Some("-infinity".to_string())),
        (1i32..20_000, 1u32..13).prop_map(|(y, m)| Some(format!("{y:04}-{m:02}-01 00:00:00+00"))),
        // Well clear of now, so that the run sees it on the same side.
        prop_oneof![-3_600i64..-60, 60i64..3_600]
            .prop_map(|s| Some(format!("now() + interval '{s} seconds'"))),
    ];
    (prop_oneof![any::<i32>(), 0i32..10], until)
}

/// Tokens of a budget row, as SQL.
fn tokens_row() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("'NaN'".to_string()),
        Just("'Infinity'".to_string()),
        Just("'-Infinity'".to_string()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:e}")),
        (0.0f64..20.0).prop_map(|f| f.to_string()),
    ]
}

both_ways! {
    fn corrupt_rows_read_by_the_binary_give_the_specd_outcome(pg) {
        let url = pg.url("");
        let flags = ["--circuit", "c", "--retry-budget", "b"];
        assert_eq!(run_on(&url, &flags).status, 0);
        let client = pg.client();
        let mut runner = TestRunner::new(Config::with_cases(24));
        runner.run(&(circuit_row(), tokens_row()), |((failures, until), tokens)| {
            let until_sql = match &until {
                Some(u) if u.starts_with("now()") => u.clone(),
                Some(u) => format!("'{u}'"),
                None => "NULL".to_string(),
            };
            client.execute(
                &format!("UPDATE retry_circuits SET failures = {failures}, open_until = {until_sql}, probe = NULL"),
                &[],
            );
            client.execute(&format!("UPDATE retry_budgets SET tokens = {tokens}"), &[]);
            // What the server holds, read back: open-until in ms, and the tokens.
            let row = client.query_one(
                "SELECT CASE WHEN isfinite(open_until) THEN (extract(epoch FROM open_until) * 1000)::float8 END,
                        open_until = 'infinity', tokens FROM retry_circuits, retry_budgets",
                &[],
            );
            let ms: Option<f64> = row.get(0);
            let infinite: Option<bool> = row.get(1);
            let stored: f64 = row.get(2);
            let in_range = ms.is_none_or(|ms| (0.0..=r::LATEST_MS as f64).contains(&ms));
            let circuit_valid = failures >= 0 && infinite != Some(true) && in_range
                && !(until.is_some() && ms.is_none());
            let open = circuit_valid && failures >= 5 && ms.is_some_and(|ms| ms > now_ms() as f64);
            let budget_valid = stored.is_finite() && (0.0..=f64::from(u32::MAX)).contains(&stored);
            let what = format!("failures {failures}, open_until {until:?}, tokens {tokens}");
            let out = run_on(&url, &flags);
            assert_ne!(out.status, 134, "{what}: an abort: {}", out.stderr);
            assert_eq!(out.status, if open { 75 } else { 0 }, "{what}: {}", out.stderr);
            // A refused run never reaches the budget.
            let warnings = usize::from(!circuit_valid) + usize::from(!budget_valid && !open);
            assert_eq!(out.stderr.matches("cannot be read").count(), warnings, "{what}: {}", out.stderr);
            Ok(())
        }).unwrap();
    }
}
