//! Command-mode classification: the command's own word (RETRY_CONTROL), the
//! user's rules, then the profile, then the generic rules, first match wins (docs/command-mode.md,
//! "Classification"). A timed-out attempt is exit 124 to every
//! rule that takes exit codes.
//! `OutputWatch` is what the output streams are scanned with; it records facts,
//! and `CommandRules::classify` turns facts and the way the attempt ended into a
//! verdict.

use regex::bytes::{Regex, RegexSet, RegexSetBuilder};

use super::control::Directive;
use super::endings;
use super::http;
use super::profiles::{self, Otherwise, Profile, Row, Then, When};
use crate::domain::{Class, ExitStatus, Signal, Verdict};
use crate::parse::CodeSet;

/// How a command attempt ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommandEnd {
    Exited(ExitStatus),
    /// Killed by a signal that retry did not send.
    Signaled(Signal),
    /// Stopped by `--timeout` (or the time limit, `--max-time`).
    TimedOut,
    /// retry could not start it: 126 not executable, 127 not found.
    NotRunnable {
        code: ExitStatus,
        message: String,
    },
    /// retry could not start it for lack of resources (EAGAIN, ENOMEM).
    NoResources {
        message: String,
    },
}

/// What the output scan saw during one attempt.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutputFacts {
    pub stop_match: Option<String>,
    pub retry_match: Option<String>,
    /// The first line `--success-on-output` matched.
    pub success_match: Option<String>,
    /// The last HTTP status the profile's pattern found on stderr.
    pub status: Option<u16>,
    /// The first stderr line that matched each of the profile's phrase patterns.
    pub shown: Vec<(&'static str, String)>,
    /// retry's own stdout or stderr is a pipe whose reader has gone.
    pub output_closed: bool,
    /// What the command wrote to RETRY_CONTROL (rule 0).
    pub control: Option<Directive>,
}

/// Which stream a line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// The patterns one attempt's output is scanned with.
#[derive(Clone, Debug)]
pub struct OutputWatch {
    /// `--stop-on-output`, `--retry-on-output` and `--success-on-output`, compiled once
    /// when the flags were parsed.
    stop: Vec<Regex>,
    retry: Vec<Regex>,
    success: Vec<Regex>,
    status: Option<Regex>,
    /// The profile's phrase patterns, and the set that matches them.
    phrases: Option<(Vec<&'static str>, RegexSet)>,
}

/// The output patterns of the user's rules, in the order they are checked.
#[derive(Clone, Debug, Default)]
pub struct OutputRules {
    pub stop: Vec<Regex>,
    pub retry: Vec<Regex>,
    pub success: Vec<Regex>,
}

impl OutputRules {
    /// Whether any pattern is given.
    pub fn any(&self) -> bool {
        !(self.stop.is_empty() && self.retry.is_empty() && self.success.is_empty())
    }
}

impl OutputWatch {
    pub fn new(rules: OutputRules, profile: &Profile) -> Result<Self, regex::Error> {
        let patterns = profile.phrase_patterns();
        let phrases = if patterns.is_empty() {
            None
        } else {
            let set = RegexSetBuilder::new(&patterns)
                .case_insensitive(true)
                .build()?;
            Some((patterns, set))
        };
        Ok(OutputWatch {
            stop: rules.stop,
            retry: rules.retry,
            success: rules.success,
            status: profile.status_pattern.map(Regex::new).transpose()?,
            phrases,
        })
    }

    /// The output rules for `--dry-run`, in the order they are checked; `lines` says
    /// whose lines they match.
    pub fn describe(&self, lines: &str) -> Vec<String> {
        let rows = [
            (&self.stop, "--stop-on-output", "permanent"),
            (&self.retry, "--retry-on-output", "transient"),
            (&self.success, "--success-on-output", "success"),
        ];
        rows.iter()
            .flat_map(|(patterns, flag, class)| {
                patterns.iter().map(move |p| {
                    format!("a line of {lines} matches {flag} {:?}: {class}", p.as_str())
                })
            })
            .collect()
    }

    pub fn reads_stdout(&self) -> bool {
        !self.stop.is_empty() || !self.retry.is_empty() || !self.success.is_empty()
    }

    pub fn reads_stderr(&self) -> bool {
        self.reads_stdout() || self.status.is_some() || self.phrases.is_some()
    }

    /// Scans one line (without its terminator) and records what it shows.
    pub fn observe(&self, line: &[u8], stream: Stream, facts: &mut OutputFacts) {
        let text = || {
            String::from_utf8_lossy(line)
                .chars()
                .take(200)
                .collect::<String>()
        };
        if facts.stop_match.is_none() && self.stop.iter().any(|re| re.is_match(line)) {
            facts.stop_match = Some(text());
        }
        if facts.retry_match.is_none() && self.retry.iter().any(|re| re.is_match(line)) {
            facts.retry_match = Some(text());
        }
        if facts.success_match.is_none() && self.success.iter().any(|re| re.is_match(line)) {
            facts.success_match = Some(text());
        }
        if stream == Stream::Stderr {
            if let Some(caps) = self.status.as_ref().and_then(|re| re.captures(line)) {
                let status = std::str::from_utf8(&caps[1])
                    .ok()
                    .and_then(|s| s.parse().ok());
                facts.status = status.or(facts.status);
            }
            if let Some((patterns, set)) = &self.phrases {
                for i in set.matches(line).iter() {
                    if !facts.shown.iter().any(|(p, _)| *p == patterns[i]) {
                        facts.shown.push((patterns[i], text()));
                    }
                }
            }
        }
    }
}

/// Rules 1, 2 and 2a: what the output rules make of the lines seen, first match wins;
/// `None` when none matched. HTTP mode applies the same to a response body's lines;
/// `place` says where the line was (`""`, or `" in the body"`).
pub fn output_verdict(facts: &OutputFacts, place: &str) -> Option<Verdict> {
    let said = |flag: &str, line: &str| format!("{flag} matched '{line}'{place}");
    if let Some(line) = &facts.stop_match {
        return Some(Verdict::permanent(said("--stop-on-output", line)));
    }
    if let Some(line) = &facts.retry_match {
        return Some(Verdict::transient(said("--retry-on-output", line)));
    }
    let line = facts.success_match.as_ref()?;
    Some(Verdict::success(said("--success-on-output", line)))
}

/// The rules in force for a command run.
#[derive(Clone, Debug)]
pub struct CommandRules {
    pub stop_on: Option<CodeSet>,
    pub retry_on: Option<CodeSet>,
    pub success_on: Option<CodeSet>,
    /// `--stop-on-status`, `--retry-on-status`: for the HTTP status the profile's tool
    /// printed (curl -f), before the status table.
    pub stop_on_status: Option<CodeSet>,
    pub retry_on_status: Option<CodeSet>,
    pub profile: &'static Profile,
}

impl CommandRules {
    pub fn classify(&self, end: &CommandEnd, facts: &OutputFacts) -> Verdict {
        let verdict = self.classify_end(end, facts);
        if facts.output_closed && verdict.class == Class::Transient {
            return endings::OUTPUT_CLOSED.verdict(&[("reason", &verdict.reason)]);
        }
        verdict
    }

    fn classify_end(&self, end: &CommandEnd, facts: &OutputFacts) -> Verdict {
        match end {
            CommandEnd::NoResources { .. } => return endings::NO_RESOURCES.verdict(&[]),
            CommandEnd::NotRunnable { message, .. } => {
                return endings::NOT_RUNNABLE.verdict(&[("error", message)]);
            }
            _ => {}
        }
        if let Some(directive) = &facts.control {
            return directive.verdict();
        }
        if let Some(verdict) = output_verdict(facts, "") {
            return verdict;
        }
        match end {
            CommandEnd::Exited(code) => self.classify_exit(*code, facts),
            CommandEnd::TimedOut => self.classify_timeout(),
            CommandEnd::Signaled(sig) if *sig == Signal::PIPE && facts.output_closed => {
                endings::SIGPIPE_READER_GONE.verdict(&[])
            }
            CommandEnd::Signaled(sig) => endings::SIGNALED.verdict(&[("signal", &sig.name())]),
            CommandEnd::NotRunnable { .. } | CommandEnd::NoResources { .. } => {
                unreachable!("handled above")
            }
        }
    }

    /// Rules 3 to 5, the user's exit code lists, for `code`; `None` when none decides.
    fn listed_verdict(&self, code: ExitStatus) -> Option<Verdict> {
        let listed = |set: &Option<CodeSet>| {
            set.as_ref()
                .is_some_and(|s| s.contains(u32::from(code.code())))
        };
        if listed(&self.stop_on) {
            return Some(Verdict::permanent(format!(
                "exit status {code} is in --stop-on"
            )));
        }
        if let Some(retry_on) = &self.retry_on {
            if retry_on.contains(u32::from(code.code())) {
                return Some(Verdict::transient(format!(
                    "exit status {code} is in --retry-on"
                )));
            }
            if !code.is_success() && !listed(&self.success_on) {
                return Some(Verdict::permanent(format!(
                    "exit status {code} is not in --retry-on {retry_on}"
                )));
            }
        }
        listed(&self.success_on)
            .then(|| Verdict::success(format!("exit status {code} is in --success-on")))
    }

    /// A timeout is exit 124 to the user's lists (`--stop-on 124` makes it permanent);
    /// the profile knows the tool's own codes, not retry's, so it is skipped.
    fn classify_timeout(&self) -> Verdict {
        match self.listed_verdict(ExitStatus::TIMEOUT) {
            Some(verdict) => Verdict {
                reason: format!("timed out, {}", verdict.reason),
                ..verdict
            },
            None => endings::TIMED_OUT.verdict(&[]),
        }
    }

    fn classify_exit(&self, code: ExitStatus, facts: &OutputFacts) -> Verdict {
        if let Some(verdict) = self.listed_verdict(code) {
            return verdict;
        }
        if !code.is_success() {
            if let Some(verdict) = self.profile_verdict(code, facts) {
                return verdict;
            }
        }
        let row = profiles::GENERIC_EXITS
            .iter()
            .find(|r| profiles::codes_contain(r.codes, code))
            .expect("generic rules cover 0..=255");
        row_verdict(row, code, facts, self.status_lists())
    }

    fn status_lists(&self) -> (Option<&CodeSet>, Option<&CodeSet>) {
        (self.stop_on_status.as_ref(), self.retry_on_status.as_ref())
    }

    fn profile_verdict(&self, code: ExitStatus, facts: &OutputFacts) -> Option<Verdict> {
        let profile = self.profile;
        let matched = profile
            .rows
            .iter()
            .find(|row| profiles::codes_contain(row.codes, code) && condition_holds(row, facts));
        match matched {
            Some(row) => Some(row_verdict(row, code, facts, self.status_lists())),
            None if profile.otherwise == Otherwise::Permanent => Some(Verdict::permanent(format!(
                "{}: exit status {code} is not a temporary failure",
                profile.name
            ))),
            None => None,
        }
    }
}

/// The verdict of the row that matched `code`, with what stderr showed; a status shown
/// goes to the user's status `lists` before the table.
fn row_verdict(
    row: &Row,
    code: ExitStatus,
    facts: &OutputFacts,
    lists: (Option<&CodeSet>, Option<&CodeSet>),
) -> Verdict {
    let mut reason = with_code(row.why, code);
    let shown = facts.status.filter(|_| !matches!(row.when, When::Always));
    match (row.then, shown) {
        (Then::StatusTable, Some(status)) => {
            let by_table = http::listed_status(status, lists)
                .unwrap_or_else(|| profiles::shown_status(status));
            reason.push_str(&format!(", stderr shows {}", by_table.reason));
            return Verdict::new(by_table.class, reason).capped(by_table.retry_cap);
        }
        (_, Some(status)) => reason.push_str(&format!(", stderr shows HTTP {status}")),
        (_, None) => {}
    }
    if let Some(line) = shown_line(row, facts) {
        reason.push_str(&format!(", stderr shows {line:?}"));
    }
    match row.then {
        Then::Is(class, cap) => Verdict::new(class, reason).capped(cap),
        Then::StatusTable => unreachable!("a status-table row matches only when a status is shown"),
    }
}

fn condition_holds(row: &Row, facts: &OutputFacts) -> bool {
    match row.when {
        When::Always => true,
        When::StatusShown => facts.status.is_some(),
        When::NoStatus => facts.status.is_none(),
        When::Shows(_) => shown_line(row, facts).is_some(),
    }
}

/// The first stderr line that matched one of the row's phrases.
fn shown_line<'a>(row: &Row, facts: &'a OutputFacts) -> Option<&'a str> {
    let When::Shows(phrases) = row.when else {
        return None;
    };
    facts
        .shown
        .iter()
        .find(|(p, _)| phrases.patterns.contains(p))
        .map(|(_, line)| line.as_str())
}

fn with_code(why: &str, code: ExitStatus) -> String {
    if why.contains("exit") {
        why.to_string()
    } else {
        format!("{why} (exit {code})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::exit_codes;

    fn rules(profile: &'static Profile) -> CommandRules {
        CommandRules {
            stop_on: None,
            retry_on: None,
            success_on: None,
            stop_on_status: None,
            retry_on_status: None,
            profile,
        }
    }

    fn exit(rules: &CommandRules, code: u8) -> Class {
        rules
            .classify(
                &CommandEnd::Exited(ExitStatus::new(code)),
                &OutputFacts::default(),
            )
            .class
    }

    #[test]
    fn generic_rules() {
        let r = rules(&profiles::GENERIC);
        assert_eq!(exit(&r, 0), Class::Success);
        assert_eq!(exit(&r, 1), Class::Transient);
        assert_eq!(exit(&r, 127), Class::Permanent);
        assert_eq!(exit(&r, 75), Class::Transient);
        assert_eq!(exit(&r, 64), Class::Permanent);
        assert_eq!(
            r.classify(&CommandEnd::TimedOut, &OutputFacts::default())
                .class,
            Class::Transient
        );
        assert_eq!(
            r.classify(
                &CommandEnd::Signaled(Signal::new(9)),
                &OutputFacts::default()
            )
            .class,
            Class::Transient
        );
        let nr = CommandEnd::NotRunnable {
            code: ExitStatus::NOT_FOUND,
            message: "x: command not found".into(),
        };
        assert_eq!(
            r.classify(&nr, &OutputFacts::default()).class,
            Class::Permanent
        );
    }

    #[test]
    fn order_is_output_then_lists_then_profile() {
        let mut r = rules(&profiles::CURL);
        r.stop_on = Some(exit_codes("6").unwrap());
        let facts = OutputFacts {
            retry_match: Some("x".into()),
            ..Default::default()
        };
        assert_eq!(
            r.classify(&CommandEnd::Exited(ExitStatus::new(6)), &facts)
                .class,
            Class::Transient
        );
        let facts = OutputFacts {
            stop_match: Some("y".into()),
            retry_match: Some("x".into()),
            ..Default::default()
        };
        assert_eq!(
            r.classify(&CommandEnd::Exited(ExitStatus::new(0)), &facts)
                .class,
            Class::Permanent
        );
        assert_eq!(
            exit(&r, 6),
            Class::Permanent,
            "--stop-on beats the curl profile"
        );
    }

    #[test]
    fn the_commands_own_word_comes_first() {
        let mut r = rules(&profiles::CURL);
        r.success_on = Some(exit_codes("6").unwrap());
        let said = |directive: Directive| OutputFacts {
            stop_match: Some("fatal".into()),
            control: Some(directive),
            ..Default::default()
        };
        let class = |end: CommandEnd, d| r.classify(&end, &said(d)).class;
        assert_eq!(
            class(CommandEnd::Exited(ExitStatus::new(6)), Directive::Retry),
            Class::Transient
        );
        assert_eq!(
            class(CommandEnd::Exited(ExitStatus::new(0)), Directive::Stop),
            Class::Permanent
        );
        assert_eq!(
            class(CommandEnd::Exited(ExitStatus::new(3)), Directive::Success),
            Class::Success
        );
        assert_eq!(
            class(CommandEnd::Signaled(Signal::new(9)), Directive::Success),
            Class::Success
        );
    }

    #[test]
    fn a_timeout_is_exit_124_to_the_exit_code_lists() {
        let timeout = |r: &CommandRules| r.classify(&CommandEnd::TimedOut, &OutputFacts::default());
        let mut r = rules(&profiles::CURL);
        assert_eq!(
            timeout(&r).class,
            Class::Transient,
            "the profile is skipped"
        );
        r.stop_on = Some(exit_codes("124").unwrap());
        let stopped = timeout(&r);
        assert_eq!(stopped.class, Class::Permanent);
        assert_eq!(stopped.reason, "timed out, exit status 124 is in --stop-on");
        r.stop_on = None;
        r.retry_on = Some(exit_codes("2").unwrap());
        assert_eq!(timeout(&r).class, Class::Permanent);
        r.retry_on = Some(exit_codes("2,124").unwrap());
        assert_eq!(timeout(&r).class, Class::Transient);
    }

    #[test]
    fn success_on_output_comes_after_retry_on_output() {
        let watch = OutputWatch::new(
            OutputRules {
                retry: vec![Regex::new("again").unwrap()],
                success: vec![Regex::new("^done").unwrap()],
                ..OutputRules::default()
            },
            &profiles::GENERIC,
        )
        .unwrap();
        let r = rules(&profiles::GENERIC);
        let verdict = |lines: &[&str], end: CommandEnd| {
            let mut facts = OutputFacts::default();
            for line in lines {
                watch.observe(line.as_bytes(), Stream::Stdout, &mut facts);
            }
            r.classify(&end, &facts)
        };
        let failed = CommandEnd::Exited(ExitStatus::new(3));
        assert_eq!(
            verdict(&["done: 3 rows"], failed.clone()).class,
            Class::Success
        );
        assert_eq!(verdict(&["done", "again"], failed).class, Class::Transient);
        assert_eq!(
            verdict(&["done"], CommandEnd::TimedOut).class,
            Class::Success
        );
    }

    #[test]
    fn retry_on_makes_the_rest_permanent() {
        let mut r = rules(&profiles::GENERIC);
        r.retry_on = Some(exit_codes("3,5-7").unwrap());
        assert_eq!(exit(&r, 6), Class::Transient);
        assert_eq!(exit(&r, 1), Class::Permanent);
        assert_eq!(exit(&r, 0), Class::Success);
        r.success_on = Some(exit_codes("1").unwrap());
        assert_eq!(exit(&r, 1), Class::Success);
    }

    #[test]
    fn success_on_for_grep() {
        let mut r = rules(&profiles::GENERIC);
        r.success_on = Some(exit_codes("0,1").unwrap());
        assert_eq!(exit(&r, 1), Class::Success);
        assert_eq!(exit(&r, 2), Class::Transient);
    }

    #[test]
    fn curl_22_reads_the_status() {
        let r = rules(&profiles::CURL);
        let verdict_for = |line: &str| verdict_after(&profiles::CURL, 22, &[line]);
        assert_eq!(
            verdict_for("curl: (22) The requested URL returned error: 503").class,
            Class::Transient
        );
        assert_eq!(
            verdict_for("curl: (22) The requested URL returned error: 404 Not Found").class,
            Class::Permanent
        );
        let v500 = verdict_for("curl: (22) The requested URL returned error: 500");
        assert_eq!(
            (v500.class, v500.retry_cap.map(|l| l.max_retries)),
            (Class::Transient, Some(2))
        );
        let none = verdict_for("");
        assert_eq!(
            (none.class, none.retry_cap.map(|l| l.max_retries)),
            (Class::Transient, Some(2))
        );
        assert_eq!(exit(&r, 3), Class::Permanent);
        assert_eq!(exit(&r, 99), Class::Permanent, "the rest are permanent");
    }

    #[test]
    fn git_128_needs_a_network_phrase() {
        let class_for = |line: &str| verdict_after(&profiles::GIT, 128, &[line]).class;
        assert_eq!(
            class_for("fatal: unable to access 'x': Could not resolve host: example.com"),
            Class::Transient
        );
        assert_eq!(
            class_for("fatal: unable to access 'x': The requested URL returned error: 503"),
            Class::Transient
        );
        assert_eq!(
            class_for("fatal: unable to access 'x': The requested URL returned error: 403"),
            Class::Permanent
        );
        assert_eq!(class_for("fatal: not a git repository"), Class::Permanent);
    }

    #[test]
    fn git_128_classifies_the_status_with_the_status_table() {
        let shown = |status: u16| {
            verdict_after(
                &profiles::GIT,
                128,
                &[&format!(
                    "fatal: unable to access 'http://127.0.0.1/r.git/': The requested URL returned error: {status}"
                )],
            )
        };
        for status in [501, 505, 507] {
            assert_eq!(shown(status).class, Class::Permanent, "{status}");
        }
        let v500 = shown(500);
        assert_eq!(
            (v500.class, v500.retry_cap),
            (Class::Transient, Some(crate::classify::http::RETRY_CAP_500))
        );
        assert!(
            v500.reason
                .starts_with("git: HTTP error from the remote (exit 128), stderr shows HTTP 500: Internal Server Error"),
            "{}",
            v500.reason
        );
        assert_eq!(shown(429).class, Class::Transient);
    }

    #[test]
    fn a_500_on_stderr_counts_against_the_same_limit_as_an_http_500() {
        let curl = verdict_after(
            &profiles::CURL,
            22,
            &["curl: (22) The requested URL returned error: 500"],
        );
        let wget = verdict_after(&profiles::WGET, 8, &["ERROR 500: Internal Server Error."]);
        assert_eq!(
            curl.retry_cap.map(|l| l.key),
            Some(crate::domain::RetryCapKey::Http500)
        );
        assert_eq!(curl.retry_cap, wget.retry_cap);
    }

    #[test]
    fn sigpipe_is_permanent_only_when_the_reader_is_gone() {
        let r = rules(&profiles::GENERIC);
        let end = CommandEnd::Signaled(Signal::PIPE);
        assert_eq!(
            r.classify(&end, &OutputFacts::default()).class,
            Class::Transient
        );
        let closed = OutputFacts {
            output_closed: true,
            ..Default::default()
        };
        assert_eq!(r.classify(&end, &closed).class, Class::Permanent);
    }

    /// The verdict for `code` after the tool wrote `stderr`.
    fn verdict_after(profile: &'static Profile, code: u8, stderr: &[&str]) -> Verdict {
        let watch = OutputWatch::new(OutputRules::default(), profile).unwrap();
        let mut facts = OutputFacts::default();
        for line in stderr {
            watch.observe(line.as_bytes(), Stream::Stderr, &mut facts);
        }
        rules(profile).classify(&CommandEnd::Exited(ExitStatus::new(code)), &facts)
    }

    #[test]
    fn rsync_5_is_transient_only_when_the_daemon_is_full() {
        let full = verdict_after(
            &profiles::RSYNC,
            5,
            &[
                "@ERROR: max connections (1) reached -- try again later",
                "rsync error: error starting client-server protocol (code 5) at main.c(1863) [Receiver=3.2.7]",
            ],
        );
        assert_eq!(full.class, Class::Transient, "{}", full.reason);
        assert!(
            full.reason.contains("max connections (1)"),
            "{}",
            full.reason
        );
        let refused = verdict_after(
            &profiles::RSYNC,
            5,
            &[
                "@ERROR: auth failed on module m",
                "rsync error: error starting client-server protocol (code 5)",
            ],
        );
        assert_eq!(refused.class, Class::Permanent);
    }

    #[test]
    fn rsync_23_is_permanent_for_a_missing_or_unreadable_source() {
        for cause in ["No such file or directory (2)", "Permission denied (13)"] {
            let v = verdict_after(
                &profiles::RSYNC,
                23,
                &[&format!(
                    "rsync: [sender] link_stat \"/src/x\" failed: {cause}"
                )],
            );
            assert_eq!(v.class, Class::Permanent, "{cause}");
        }
        let other = verdict_after(
            &profiles::RSYNC,
            23,
            &["rsync: read errors mapping \"/x\": Input/output error (5)"],
        );
        assert_eq!(
            (other.class, other.retry_cap.map(|l| l.max_retries)),
            (Class::Transient, Some(2))
        );
    }

    #[test]
    fn wget_8_without_a_status_is_retried_twice() {
        let quiet = verdict_after(&profiles::WGET, 8, &[]);
        assert_eq!(
            (quiet.class, quiet.retry_cap.map(|l| l.max_retries)),
            (Class::Transient, Some(2))
        );
        let shown = verdict_after(
            &profiles::WGET,
            8,
            &["2026-12-03 14:00:00 ERROR 503: Service Unavailable."],
        );
        assert_eq!((shown.class, shown.retry_cap), (Class::Transient, None));
        let gone = verdict_after(
            &profiles::WGET,
            8,
            &["2026-12-03 14:00:00 ERROR 404: Not Found."],
        );
        assert_eq!(gone.class, Class::Permanent);
    }

    #[test]
    fn ssh_255_is_permanent_when_the_login_or_host_key_is_refused() {
        let refused = [
            "git@127.0.0.1: Permission denied (publickey).",
            "Host key verification failed.",
            "@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @",
            "Received disconnect from 127.0.0.1 port 22:2: Too many authentication failures",
            "Unable to negotiate with 127.0.0.1 port 22: no matching host key type found. Their offer: ssh-rsa",
            "Unable to negotiate with 127.0.0.1 port 22: no matching cipher found.",
        ];
        for line in refused {
            let v = verdict_after(&profiles::SSH, 255, &[line]);
            assert_eq!(v.class, Class::Permanent, "{line}");
        }
        let down = verdict_after(
            &profiles::SSH,
            255,
            &["ssh: connect to host 127.0.0.1 port 22: Connection refused"],
        );
        assert_eq!(down.class, Class::Transient);
    }

    #[test]
    fn ssh_other_codes_belong_to_the_remote() {
        let r = rules(&profiles::SSH);
        assert_eq!(exit(&r, 255), Class::Transient);
        assert_eq!(exit(&r, 1), Class::Permanent);
    }

    #[test]
    fn stdout_lines_never_feed_the_status() {
        let watch = OutputWatch::new(OutputRules::default(), &profiles::CURL).unwrap();
        let mut facts = OutputFacts::default();
        watch.observe(b"returned error: 503", Stream::Stdout, &mut facts);
        assert_eq!(facts.status, None);
    }
}
