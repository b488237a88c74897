//! `retry -- COMMAND [ARG]...` and `retry COMMAND [ARG]...`, the command line without an
//! option, read without clap (a URL is left to it): building clap's command of 150
//! options and parsing its 56 defaults cost more instructions than everything else
//! retry does before its first spawn. The test beside it holds every default here equal
//! to clap's.

use std::ffi::OsString;
use std::time::Duration;

use super::curl_words::target_mode;
use super::{Cli, JobOutput, Mode};
use crate::domain::{BackoffKind, CatchUp, JitterKind, LogFormat, Overlap, ProfileName, StdinMode};

/// The parse of a command line that gives no option, or `None` for any other (clap's).
pub(super) fn without_options(args: &[OsString]) -> Option<Cli> {
    let first = args.get(1)?;
    let target = if first == "--" {
        args.get(2..).filter(|rest| !rest.is_empty())?
    } else if first.as_encoded_bytes().first().is_some_and(|b| *b != b'-')
        // curl's options may follow a URL (`retry URL -o out`): clap's walk moves them.
        && target_mode(first) == Mode::Command
    {
        &args[1..]
    } else {
        return None;
    };
    Some(defaults(target.to_vec()))
}

/// Every option at its default, as clap's definition in `cli` gives it.
fn defaults(target: Vec<OsString>) -> Cli {
    Cli {
        attempts: 5,
        delay: Duration::from_secs(1),
        max_delay: None,
        backoff: BackoffKind::Exponential,
        factor: 2.0,
        jitter: JitterKind::Full,
        delays: None,
        consecutive: None,
        until_failure: false,
        ignore_retry_after: false,
        timeout: None,
        max_time: None,
        seed: None,
        allow_nested: false,
        profile: ProfileName::Auto,
        stop_on: None,
        retry_on: None,
        success_on: None,
        stop_on_output: Vec::new(),
        retry_on_output: Vec::new(),
        success_on_output: Vec::new(),
        stdin: StdinMode::Auto,
        hold_stdout: false,
        hold_stderr: false,
        kill_after: Duration::from_secs(5),
        // clap's default_value = "TERM", read the same way.
        signal: crate::sys::parse_signal("TERM").expect("TERM names a signal on every system"),
        preserve_status: false,
        method: None,
        headers: Vec::new(),
        data: Vec::new(),
        json: None,
        output: None,
        include: false,
        connect_timeout: None,
        insecure: false,
        max_redirs: 10,
        idempotency_key: None,
        idempotency_header: reqwest::header::HeaderName::from_static("idempotency-key"),
        retry_unsafe: false,
        retry_on_status: None,
        stop_on_status: None,
        max_retry_after: Duration::from_secs(5 * 60),
        fail: false,
        fail_with_body: false,
        silent: false,
        show_error: false,
        location: false,
        head: false,
        write_out: None,
        dump_header: None,
        remote_name: false,
        curl_retry: None,
        retry_delay: None,
        retry_max_time: None,
        retry_connrefused: false,
        retry_all_errors: false,
        continue_at: None,
        user: None,
        basic: false,
        proto: None,
        proto_redir: None,
        user_agent: None,
        referer: None,
        cookie: Vec::new(),
        data_binary: Vec::new(),
        data_raw: Vec::new(),
        data_urlencode: Vec::new(),
        data_args: Vec::new(),
        stdin_given: false,
        jitter_given: false,
        upload_file: None,
        globoff: false,
        get: false,
        form: Vec::new(),
        compressed: false,
        proxy: None,
        noproxy: None,
        cacert: None,
        cert: None,
        key: None,
        http1_1: false,
        http2: false,
        resolve: Vec::new(),
        ipv4: false,
        ipv6: false,
        unix_socket: None,
        lock: None,
        lock_wait: Duration::ZERO,
        busy_exit: 0,
        once: None,
        state: None,
        lease_ttl: None,
        on_retry: None,
        on_give_up: None,
        on_success: None,
        hook_timeout: Duration::from_secs(30),
        schedule: None,
        crontab: None,
        job_output: JobOutput::Labelled,
        run_slot: None,
        slot_log_fd: None,
        job: None,
        catch_up: CatchUp::Latest,
        catch_up_window: Duration::from_secs(24 * 60 * 60),
        overlap: Overlap::Skip,
        grace: Duration::from_secs(20),
        tz: None,
        metrics_listen: None,
        retry_budget: None,
        budget_size: 10,
        budget_ratio: 0.1,
        circuit: None,
        circuit_failures: 5,
        circuit_cooldown: Duration::from_secs(60),
        circuit_exit: 75,
        throttled: None,
        splay: Duration::ZERO,
        quiet: 0,
        verbose: 0,
        log_format: LogFormat::Text,
        report: None,
        dry_run: false,
        generate: None,
        target,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    /// clap's parse of the same words, the reference every default here must equal.
    fn by_clap(words: &[&str]) -> String {
        format!(
            "{:?}",
            super::super::parse_with(args(words), false).unwrap()
        )
    }

    #[test]
    fn a_command_without_options_parses_as_clap_does() {
        let lines: [&[&str]; 5] = [
            &["retry", "--", "true"],
            &["retry", "true"],
            &["retry", "--", "sh", "-c", "exit 3", "--attempts", "9"],
            &["retry", "ls", "-la", "--", "-a"],
            &["retry", "--", "http://127.0.0.1:1/", "-o", "x"],
        ];
        for words in lines {
            let fast = without_options(&args(words)).expect("taken without clap");
            assert_eq!(format!("{fast:?}"), by_clap(words), "{words:?}");
        }
    }

    #[test]
    fn anything_with_an_option_or_a_url_is_left_to_clap() {
        let lines: [&[&str]; 8] = [
            &["retry"],
            &["retry", "--"],
            &["retry", "-a", "3", "--", "true"],
            &["retry", "--help"],
            &["retry", "-", "x"],
            &["retry", "--attempts=3", "true"],
            &["retry", "http://127.0.0.1:1/"],
            &["retry", "HTTPS://127.0.0.1:1/", "-o", "x"],
        ];
        for words in lines {
            assert!(without_options(&args(words)).is_none(), "{words:?}");
        }
    }
}
