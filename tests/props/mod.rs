//! Property tests for every parser of outside input: no input makes one panic,
//! every rejection says what is accepted, and values written the documented way
//! parse back to what was written.

use std::time::Duration;

use proptest::prelude::*;
use retry::parsers as parse;

/// Strings that look like the values people type, plus arbitrary text.
fn value_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[0-9 .,-]{0,12}",
        "[0-9]{1,25}(ns|us|ms|s|m|h|d|w|y|min|sec)?",
        "[0-9]{1,4}(\\.[0-9]{0,4})?[a-z ]{0,6}",
        "[ \\t]*[+-]?[0-9a-fxe.]{0,10}[ \\t]*",
    ]
}

/// A list of exit codes or ranges inside `lo..=hi`, e.g. `2,64-78`.
fn code_list(lo: u32, hi: u32) -> impl Strategy<Value = Vec<(u32, u32)>> {
    prop::collection::vec(
        (lo..=hi, lo..=hi).prop_map(|(a, b)| (a.min(b), a.max(b))),
        1..6,
    )
}

fn write_list(items: &[(u32, u32)]) -> String {
    items
        .iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

const HUNDRED_YEARS: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn duration_never_panics_and_explains_refusals(text in value_text()) {
        match parse::duration(&text) {
            Ok(d) => prop_assert!(d <= HUNDRED_YEARS),
            Err(msg) => prop_assert!(
                msg.contains("duration") || msg.contains("too long") || msg.contains("empty"),
                "{:?}: {}", text, msg
            ),
        }
    }

    #[test]
    fn positive_duration_is_duration_without_zero(text in value_text()) {
        let plain = parse::duration(&text);
        let positive = parse::positive_duration(&text);
        match (&plain, &positive) {
            (Ok(d), Ok(p)) => prop_assert!(d == p && !p.is_zero()),
            (Ok(d), Err(msg)) => prop_assert!(d.is_zero() && msg.contains("zero"), "{}", msg),
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            (Err(_), Ok(_)) => prop_assert!(false, "{:?}: positive accepted what duration refused", text),
        }
    }

    #[test]
    fn durations_round_trip_through_humantime(ms in 0u64..HUNDRED_YEARS.as_millis() as u64) {
        let d = Duration::from_millis(ms);
        let written = humantime::format_duration(d).to_string();
        prop_assert_eq!(parse::duration(&written), Ok(d), "{}", written);
        prop_assert_eq!(parse::duration(&format!("{ms}ms")), Ok(d));
    }

    #[test]
    fn bare_seconds_are_seconds(secs in 0u64..HUNDRED_YEARS.as_secs(), millis in 0u32..1000) {
        prop_assert_eq!(parse::duration(&format!(" {secs} ")), Ok(Duration::from_secs(secs)));
        let written = format!("{secs}.{millis:03}");
        let parsed = parse::duration(&written).unwrap();
        let exact = Duration::from_secs(secs) + Duration::from_millis(millis.into());
        // f64 carries ~16 significant digits: within a microsecond per 10^9 s.
        let slack = Duration::from_micros(1 + secs / 1_000_000_000 * 1000);
        prop_assert!(parsed.abs_diff(exact) <= slack, "{} -> {:?}", written, parsed);
    }

    #[test]
    fn durations_past_the_limit_are_refused(extra in 1u64..1_000_000_000) {
        let secs = HUNDRED_YEARS.as_secs() + extra;
        let msg = parse::duration(&secs.to_string()).unwrap_err();
        prop_assert!(msg.contains("too long"), "{}", msg);
    }

    #[test]
    fn exit_codes_never_panic(text in value_text()) {
        if let Ok(set) = parse::exit_codes(&text) {
            prop_assert!((256..1000).all(|c| !set.contains(c)));
            prop_assert_eq!(parse::exit_codes(&set.to_string()), Ok(set));
        } else {
            let msg = parse::exit_codes(&text).unwrap_err();
            prop_assert!(msg.contains("expected"), "{}", msg);
        }
    }

    #[test]
    fn exit_code_lists_round_trip(items in code_list(0, 255)) {
        let written = write_list(&items);
        let set = parse::exit_codes(&written).unwrap();
        prop_assert_eq!(set.to_string(), written.clone());
        for code in 0..=300 {
            let listed = items.iter().any(|&(a, b)| (a..=b).contains(&code));
            prop_assert_eq!(set.contains(code), listed, "{} in {}", code, written);
        }
        let spaced = written.replace(',', " , ").replace('-', " - ");
        prop_assert_eq!(parse::exit_codes(&spaced), Ok(set));
    }

    #[test]
    fn exit_codes_above_255_are_refused(items in code_list(0, 255), bad in 256u32..100_000) {
        let written = format!("{},{bad}", write_list(&items));
        let msg = parse::exit_codes(&written).unwrap_err();
        prop_assert!(msg.contains("out of range") || msg.contains("not a"), "{}", msg);
    }

    #[test]
    fn statuses_never_panic(text in value_text()) {
        if let Ok(set) = parse::statuses(&text) {
            prop_assert!((0..100).chain(600..700).all(|c| !set.contains(c)));
            prop_assert_eq!(parse::statuses(&set.to_string()), Ok(set));
        }
    }

    #[test]
    fn status_lists_round_trip(items in code_list(100, 599)) {
        let written = write_list(&items);
        let set = parse::statuses(&written).unwrap();
        prop_assert_eq!(set.to_string(), written.clone());
        let (low, high) = (format!("{written},99"), format!("600,{written}"));
        prop_assert!(parse::statuses(&low).is_err());
        prop_assert!(parse::statuses(&high).is_err());
    }

    #[test]
    fn attempts_never_panic(text in value_text()) {
        match parse::attempts(&text) {
            Ok(n) => prop_assert!(n >= 1),
            Err(msg) => prop_assert!(msg.contains("whole number"), "{}", msg),
        }
    }

    #[test]
    fn attempts_round_trip(n in 1u32..=u32::MAX) {
        prop_assert_eq!(parse::attempts(&n.to_string()), Ok(n));
        prop_assert_eq!(parse::attempts(&format!(" {n}\t")), Ok(n));
    }

    #[test]
    fn attempts_past_u32_are_refused(n in (u32::MAX as u64 + 1)..u64::MAX) {
        prop_assert!(parse::attempts(&n.to_string()).is_err());
    }

    #[test]
    fn factor_never_panics(text in value_text()) {
        match parse::factor(&text) {
            Ok(f) => prop_assert!(f.is_finite() && f > 1.0 && f <= 1000.0),
            Err(msg) => prop_assert!(msg.contains("above 1"), "{}", msg),
        }
    }

    #[test]
    fn factor_round_trips(f in 1.0f64..=1000.0) {
        prop_assume!(f > 1.0);
        prop_assert_eq!(parse::factor(&f.to_string()), Ok(f));
    }

    #[test]
    fn signal_never_panics_and_explains_refusals(text in prop_oneof![
        value_text(),
        "(SIG|sig)?[A-Za-z]{1,6}",
    ]) {
        if let Err(msg) = parse::signal(&text) {
            prop_assert!(msg.contains("expected a name such as TERM"), "{}", msg);
        }
    }

    #[test]
    fn signal_names_and_numbers_round_trip(n in 1i32..=31) {
        let sig = nix::sys::signal::Signal::try_from(n).unwrap();
        let short = sig.as_str().trim_start_matches("SIG");
        for text in [sig.as_str().to_string(), short.to_ascii_lowercase(), n.to_string()] {
            prop_assert_eq!(parse::signal(&text), Ok(sig));
        }
    }

    #[test]
    fn factor_outside_the_range_is_refused(f in prop_oneof![-1e9f64..=1.0, 1000.0001f64..1e300]) {
        prop_assert!(parse::factor(&f.to_string()).is_err());
    }
}

mod traces {
    use proptest::prelude::*;
    use retry::parsers::traces;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        #[test]
        fn otel_values_never_panic_and_explain_refusals(text in "\\PC{0,60}") {
            if let Err(msg) = traces::otlp_endpoint(&text) {
                prop_assert!(msg.contains("http://"), "{:?}: {}", text, msg);
            }
            if let Err(msg) = traces::key_value_list(&text) {
                prop_assert!(msg.contains("key=value"), "{:?}: {}", text, msg);
            }
            if let Some(back) = traces::traceparent(&text) {
                prop_assert_eq!(back.len(), 55);
            }
        }

        #[test]
        fn endpoints_round_trip(host in "[a-z][a-z0-9]{0,10}", port in 1u16..) {
            let url = format!("http://{host}:{port}/otlp");
            let read = traces::otlp_endpoint(&url).unwrap();
            prop_assert_eq!(read.as_str(), url.as_str());
        }

        #[test]
        fn key_value_lists_round_trip(pairs in proptest::collection::vec(("[a-z.]{1,10}", "\\PC{0,12}"), 0..5)) {
            let text: Vec<String> = pairs
                .iter()
                .map(|(k, v)| {
                    let encoded = percent_encoding::utf8_percent_encode(v, percent_encoding::NON_ALPHANUMERIC);
                    format!("{k}={encoded}")
                })
                .collect();
            let read = traces::key_value_list(&text.join(",")).unwrap();
            let want: Vec<(String, String)> = pairs.clone();
            prop_assert_eq!(read, want);
        }

        #[test]
        fn traceparents_round_trip(trace in 1u128.., span in 1u64.., sampled: bool) {
            let text = format!("00-{trace:032x}-{span:016x}-0{}", u8::from(sampled));
            prop_assert_eq!(traces::traceparent(&text), Some(text.clone()));
        }
    }
}

mod lock_and_state_targets {
    use std::path::PathBuf;

    use proptest::prelude::*;
    use retry::parsers::state as file;
    use retry::parsers::state::{self, Backend};

    fn target_text() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<String>(),
            "(postgres|postgresql|POSTGRES|http|file)://[a-z@:%\\[\\]./0-9?=&#_-]{0,40}",
            "postgres://[a-z]{1,8}(:[a-z]{0,6})?@[a-z0-9.]{1,12}(:[0-9]{1,6})?(/[a-z]{0,8})?(\\?[a-z_]{1,16}=[a-z0-9]{0,8})?(#[a-z-]{0,12})?",
            "[/.a-z0-9 _-]{0,30}/?",
        ]
    }

    fn word() -> impl Strategy<Value = String> {
        "[a-z][a-z0-9_]{0,10}"
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn target_parsers_never_panic(text in target_text()) {
            let any = state::parse_target(&text);
            if let Err(msg) = state::parse_lock_target(&text) {
                prop_assert!(msg.starts_with("--lock: "), "{}", msg);
            }
            if let Err(msg) = state::parse_state_target(&text) {
                prop_assert!(msg.starts_with("--state: "), "{}", msg);
            }
            if let Ok(Backend::Postgres(pg)) = &any {
                // Display never shows the password, and shows a lock name as given.
                let shown = pg.to_string();
                prop_assert!(shown.starts_with("postgres://"));
                if let (Some(pw), false) = (&pg.password, pg.password.as_deref() == Some("")) {
                    prop_assert!(!shown.contains(&format!(":{pw}@")), "{}", shown);
                }
            }
        }

        #[test]
        fn plain_paths_are_files(path in "[/.a-zA-Z0-9 _-]{1,40}") {
            prop_assume!(!path.contains("://"));
            prop_assert_eq!(state::parse_target(&path), Ok(Backend::File(PathBuf::from(&path))));
            if !path.ends_with('/') {
                prop_assert!(state::parse_lock_target(&path).is_ok());
            }
            prop_assert!(state::parse_state_target(&path).is_ok());
        }

        #[test]
        fn lock_names_with_a_control_character_are_refused_saying_what_is_accepted(
            before in "[a-z]{0,8}", control in "[\\x00-\\x1f\\x7f]", after in "[a-z]{0,8}",
        ) {
            let name = format!("{before}{control}{after}");
            let encoded: String = name.bytes().map(|b| format!("%{b:02X}")).collect();
            for lock in [format!("/tmp/{name}.lock"), format!("postgres://u@h/db#{encoded}")] {
                let msg = state::parse_lock_target(&lock).expect_err("a control character");
                prop_assert!(msg.starts_with("--lock: ") && msg.contains("expected"), "{}", msg);
            }
        }

        #[test]
        fn postgres_targets_round_trip(
            user in word(), host in "[a-z][a-z0-9.-]{0,15}", port in 1u16..,
            db in word(), name in "[a-zA-Z0-9_-]{1,20}",
        ) {
            let lock = format!("postgres://{user}@{host}:{port}/{db}#{name}");
            let Ok(Backend::Postgres(pg)) = state::parse_lock_target(&lock) else {
                return Err(TestCaseError::fail(format!("{lock} refused")));
            };
            prop_assert_eq!(pg.user.as_deref(), Some(user.as_str()));
            prop_assert_eq!(pg.host.as_deref(), Some(host.as_str()));
            prop_assert_eq!(pg.port, Some(port));
            prop_assert_eq!(pg.dbname.as_deref(), Some(db.as_str()));
            prop_assert_eq!(pg.name.as_deref(), Some(name.as_str()));
            prop_assert_eq!(pg.to_string(), lock.clone());
            // A lock needs #NAME; a state store must not have one.
            let bare = format!("postgres://{user}@{host}:{port}/{db}");
            prop_assert!(state::parse_lock_target(&bare).is_err());
            prop_assert!(state::parse_state_target(&bare).is_ok());
            prop_assert!(state::parse_state_target(&lock).is_err());
        }

        #[test]
        fn other_schemes_are_refused(scheme in "[a-z][a-z0-9+.-]{0,8}", rest in "[a-z/]{0,10}") {
            prop_assume!(!scheme.eq_ignore_ascii_case("postgres") && !scheme.eq_ignore_ascii_case("postgresql"));
            let text = format!("{scheme}://{rest}");
            prop_assert!(state::parse_target(&text).is_err());
        }

        #[test]
        fn marker_file_names_round_trip(key in any::<String>()) {
            prop_assume!(!key.is_empty()); // --once refuses an empty key
            let name = format!("{}.json", file::escape_key(&key));
            prop_assert!(!name.contains('/') && !name.chars().any(char::is_control));
            prop_assert!(!name.starts_with('.'));
            prop_assert_eq!(file::key_from_file_name(&name), Some(key.clone()));
            if let Err(msg) = file::check_key(&key) {
                prop_assert!(msg.contains("file name"), "{}", msg);
            }
        }
    }
}

mod http_headers {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use proptest::prelude::*;
    use retry::parsers::headers::{self as h, HeaderAction};

    fn header_text() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<String>(),
            "[ \t]*[0-9]{0,25}(\\.[0-9]{0,4})?[ \t]*",
            "(Mon|Tue|Sun|Sunday|Foo), [0-9]{1,2}[ -](Jan|Feb|Nov|Xyz)[ -][0-9]{2,4} [0-9]{2}:[0-9]{2}:[0-9]{2} (GMT|UTC)",
            "[a-z\"]{0,8}(;[rt ]{1,2}=[0-9a-z\"]{0,5}){0,3}(, *[a-z]{0,5}(;[rt]=[0-9]{0,4}){0,2}){0,2}",
        ]
    }

    fn now() -> impl Strategy<Value = SystemTime> {
        (0u64..4_000_000_000).prop_map(|s| UNIX_EPOCH + Duration::from_secs(s))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn wait_parsers_never_panic(text in header_text(), now in now()) {
            for wait in [
                h::retry_after(&text, now),
                h::rate_limit_reset(&text, now),
                h::rate_limit_field(&text),
                h::delta_seconds(&text),
            ]
            .into_iter()
            .flatten()
            {
                prop_assert!(wait <= h::MAX_WAIT);
            }
            let _ = h::http_date(&text);
            let _ = h::rate_limit_remaining(&text);
        }

        #[test]
        fn retry_after_seconds_round_trip(secs in 0u64..h::MAX_WAIT.as_secs(), now in now()) {
            let text = format!(" {secs} ");
            prop_assert_eq!(h::retry_after(&text, now), Some(Duration::from_secs(secs)));
        }

        #[test]
        fn retry_after_dates_in_every_form(ahead in 0u64..1_000_000, now_s in 0u64..3_000_000_000) {
            let now = UNIX_EPOCH + Duration::from_secs(now_s);
            let at = now + Duration::from_secs(ahead);
            let imf = crate::support::time::http_date(at);
            prop_assert_eq!(h::retry_after(&imf, now), Some(Duration::from_secs(ahead)));
            prop_assert_eq!(h::http_date(&imf), Some(at));
            // A date in the past means no extra wait.
            let past = crate::support::time::http_date(UNIX_EPOCH + Duration::from_secs(now_s / 2));
            if now_s > 1 {
                prop_assert_eq!(h::retry_after(&past, now), Some(Duration::ZERO));
            }
        }

        #[test]
        fn rate_limit_reset_is_delta_or_epoch(secs in 0u64..h::EPOCH_THRESHOLD, now_s in 1_600_000_000u64..2_000_000_000, ahead in 0u64..100_000) {
            let now = UNIX_EPOCH + Duration::from_secs(now_s);
            prop_assert_eq!(h::rate_limit_reset(&secs.to_string(), now), Some(Duration::from_secs(secs)));
            let epoch = (now_s + ahead).to_string();
            prop_assert_eq!(h::rate_limit_reset(&epoch, now), Some(Duration::from_secs(ahead)));
        }

        #[test]
        fn rate_limit_field_takes_exhausted_items(t in 0u64..100_000, other in 0u64..100_000, r in 1u64..1000) {
            let field = format!("\"default\";r=0;t={t}, \"burst\";r={r};t={other}");
            prop_assert_eq!(h::rate_limit_field(&field), Some(Duration::from_secs(t)));
            let none_out = format!("\"default\";r={r};t={t}");
            prop_assert_eq!(h::rate_limit_field(&none_out), None);
        }

        #[test]
        fn remaining_round_trips(n in any::<u64>()) {
            prop_assert_eq!(h::rate_limit_remaining(&format!(" {n} ")), Some(n));
        }

        #[test]
        fn header_lines_never_panic(line in any::<String>()) {
            match h::header_line(&line) {
                Ok(parsed) => {
                    prop_assert!(h::check_name(&parsed.name).is_ok());
                    if let HeaderAction::Set(v) = &parsed.value {
                        prop_assert!(!v.contains(['\r', '\n', '\0']));
                    }
                }
                Err(msg) => prop_assert!(!msg.is_empty()),
            }
            let _ = h::header_file(&line);
        }

        #[test]
        fn header_lines_round_trip(name in "[A-Za-z0-9!#$%&'*+.^_`|~-]{1,20}", value in "[!-~]([ -~]{0,30}[!-~])?") {
            let parsed = h::header_line(&format!("{name}: {value}")).unwrap();
            prop_assert_eq!(&parsed.name, &name);
            prop_assert_eq!(parsed.value, HeaderAction::Set(value));
            prop_assert_eq!(h::header_line(&format!("{name}:")).unwrap().value, HeaderAction::Remove);
            prop_assert_eq!(h::header_line(&format!("{name};")).unwrap().value, HeaderAction::Empty);
        }

        #[test]
        fn header_lines_refuse_smuggled_lines(name in "[A-Za-z-]{1,10}", a in "[a-z]{1,5}", b in "[a-z]{1,5}") {
            let smuggled = format!("{name}: {a}\r\nX-Evil: {b}");
            prop_assert!(h::header_line(&smuggled).is_err());
        }
    }
}

mod records;
