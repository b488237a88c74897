//! Other tools' spellings of retry's settings, in one table: an option typed as
//! flock, GNU timeout, recur, the GitHub retry action, supercronic, a systemd timer, a
//! Kubernetes CronJob or another tool spells it is refused with retry's own word for it. The README's "Coming from another tool"
//! table shows the same rows (`tests::every_row_is_in_the_readme_table` holds them
//! together).

/// When a spelling means the other tool's option: some letters are also curl's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// Wherever it is typed.
    Always,
    /// Before a command (not a URL).
    Command,
    /// Before a command, next to `--lock`.
    Lock,
    /// Before the target, as a whole argument (`-test`, `-test=true`, or Go's `--test`),
    /// in both modes: supercronic's single-dash flags, never read as bundled letters
    /// (`-debug` is not `-d ebug`). After a URL the letters are curl's.
    Word,
}

/// One tool's option and retry's word for it.
#[derive(Debug)]
pub struct Spelling {
    /// The tool, as the README's table names it.
    pub tool: &'static str,
    /// The option as typed (`--tries`; `_` and `-` match each other).
    pub typed: &'static str,
    /// The option with its value, as the README's table shows it.
    pub shown: &'static str,
    /// What to use instead, as the README's table says it (backticks left out).
    pub retry: &'static str,
    pub when: When,
    /// A value for the option in a sample use (empty for a flag without one).
    pub sample: &'static str,
}

const fn row(
    tool: &'static str,
    typed: &'static str,
    shown: &'static str,
    retry: &'static str,
    when: When,
    sample: &'static str,
) -> Spelling {
    Spelling {
        tool,
        typed,
        shown,
        retry,
        when,
        sample,
    }
}

/// The tool column of rows no one tool owns.
pub const OTHERS: &str = "other tools";

const NICK: &str = "GitHub retry action";
const SUPERCRONIC: &str = "supercronic";
const TIMER: &str = "systemd timer";
const CRONJOB: &str = "Kubernetes CronJob";

/// Sources: flock(1), timeout(1), recur's README, nick-fields/retry's action.yml,
/// `supercronic -help`, systemd.timer(5) and systemd-run(1), the Kubernetes CronJob
/// spec (`startingDeadlineSeconds`, `concurrencyPolicy`).
pub const SPELLINGS: &[Spelling] = &[
    row(OTHERS, "--tries", "--tries N", "-a N", When::Always, "3"),
    row(
        OTHERS,
        "--max-attempts",
        "--max-attempts N",
        "-a N",
        When::Always,
        "3",
    ),
    row(
        OTHERS,
        "--wait",
        "--wait DUR",
        "--delay DUR",
        When::Always,
        "2s",
    ),
    row(
        OTHERS,
        "--interval",
        "--interval DUR",
        "--delay DUR",
        When::Always,
        "2s",
    ),
    row(
        OTHERS,
        "--sleep",
        "--sleep DUR",
        "--delay DUR",
        When::Always,
        "2s",
    ),
    row(
        OTHERS,
        "--lock-timeout",
        "--lock-timeout DUR",
        "--lock-wait DUR",
        When::Always,
        "5s",
    ),
    row(
        OTHERS,
        "--cron",
        "--cron EXPR",
        "--schedule EXPR",
        When::Always,
        "@hourly",
    ),
    row("flock", "-w", "-w N", "--lock-wait N", When::Lock, "5"),
    row("flock", "-E", "-E N", "--busy-exit N", When::Lock, "1"),
    row(
        "flock",
        "-n",
        "-n",
        "nothing: a busy lock is skipped at once by default (--lock-wait 0)",
        When::Lock,
        "",
    ),
    row(
        "GNU timeout",
        "-s",
        "-s SIG",
        "--signal SIG",
        When::Command,
        "KILL",
    ),
    row(
        "GNU timeout",
        "-k",
        "-k DUR",
        "--kill-after DUR",
        When::Command,
        "5s",
    ),
    row(
        "recur",
        "-d",
        "-d DUR",
        "--delay DUR --backoff constant -j none",
        When::Command,
        "2s",
    ),
    row(
        "recur",
        "-j",
        "-j MIN,MAX",
        "-j full or -j equal (each sleep spread below its length, not a range added to it)",
        When::Always,
        "1s,5s",
    ),
    row(
        "recur",
        "-r",
        "-r",
        "nothing: piped stdin is replayed to every attempt by default (--stdin auto)",
        When::Command,
        "",
    ),
    row(
        NICK,
        "--timeout_minutes",
        "timeout_minutes",
        "-t Nm",
        When::Always,
        "10",
    ),
    row(
        NICK,
        "--retry_wait_seconds",
        "retry_wait_seconds",
        "--delay Ns --backoff constant -j none",
        When::Always,
        "10",
    ),
    row(
        NICK,
        "--new_command_on_retry",
        "new_command_on_retry",
        "a command that reads RETRY_ATTEMPT (1, then 2, ...)",
        When::Always,
        "./again.sh",
    ),
    row(
        NICK,
        "--continue_on_error",
        "continue_on_error",
        "retry ... || true (or the step's continue-on-error)",
        When::Always,
        "true",
    ),
    row(
        NICK,
        "--polling_interval_seconds",
        "polling_interval_seconds",
        "nothing: retry sees an attempt end at once",
        When::Always,
        "1",
    ),
    row(SUPERCRONIC, "-test", "-test", "--dry-run", When::Word, ""),
    row(
        SUPERCRONIC,
        "-json",
        "-json",
        "--log-format json",
        When::Word,
        "",
    ),
    row(
        SUPERCRONIC,
        "-overlapping",
        "-overlapping",
        "--overlap allow",
        When::Word,
        "",
    ),
    row(SUPERCRONIC, "-quiet", "-quiet", "-q", When::Word, ""),
    row(SUPERCRONIC, "-debug", "-debug", "-v", When::Word, ""),
    row(
        SUPERCRONIC,
        "-passthrough-logs",
        "-passthrough-logs",
        "--job-output raw",
        When::Word,
        "",
    ),
    row(
        SUPERCRONIC,
        "-split-logs",
        "-split-logs",
        "nothing: retry does this already (a job's stdout goes to stdout, its stderr to stderr)",
        When::Word,
        "",
    ),
    row(
        SUPERCRONIC,
        "-inotify",
        "-inotify",
        "nothing: retry does this already (a changed crontab is read again, as on SIGHUP)",
        When::Word,
        "",
    ),
    row(
        SUPERCRONIC,
        "-prometheus-listen-address",
        "-prometheus-listen-address ADDR",
        "--metrics-listen ADDR:PORT",
        When::Word,
        "0.0.0.0:9746",
    ),
    row(
        SUPERCRONIC,
        "-sentry-dsn",
        "-sentry-dsn DSN",
        "an --on-give-up hook (docs/schedules.md shows one that posts to a webhook)",
        When::Word,
        "https://key@sentry.example/1",
    ),
    row(
        TIMER,
        "--on-calendar",
        "--on-calendar EXPR",
        "--schedule EXPR",
        When::Always,
        "Mon..Fri 09:00",
    ),
    row(
        TIMER,
        "--persistent",
        "--persistent",
        "nothing: missed slots are caught up by default (--catch-up latest; none for Persistent=false)",
        When::Always,
        "",
    ),
    row(
        TIMER,
        "--randomized-delay-sec",
        "--randomized-delay-sec N",
        "--splay Ns",
        When::Always,
        "300",
    ),
    row(
        OTHERS,
        "--random-delay",
        "--random-delay DUR",
        "--splay DUR",
        When::Always,
        "5m",
    ),
    row(
        CRONJOB,
        "--starting-deadline-seconds",
        "--starting-deadline-seconds N",
        "--catch-up-window Ns",
        When::Always,
        "300",
    ),
    row(
        CRONJOB,
        "--concurrency-policy",
        "--concurrency-policy POLICY",
        "--overlap skip|allow|replace (Forbid, Allow, Replace)",
        When::Always,
        "Forbid",
    ),
];

/// Where an option is typed: what decides whether a spelling applies.
#[derive(Clone, Copy, Debug, Default)]
pub struct Place {
    /// The target is a URL.
    pub http: bool,
    /// `--lock` is given.
    pub lock: bool,
}

/// The row for option `name` (as typed, without a value) with `value`, where typed.
pub fn find(name: &str, value: Option<&str>, place: Place) -> Option<&'static Spelling> {
    let same = |typed: &str| {
        typed.len() == name.len()
            && typed
                .chars()
                .zip(name.chars())
                .all(|(a, b)| a == b || matches!((a, b), ('_', '-') | ('-', '_')))
    };
    SPELLINGS.iter().find(|row| {
        same(row.typed)
            && match row.when {
                When::Always | When::Word => true,
                When::Command => !place.http,
                When::Lock => !place.http && place.lock,
            }
            // retry's own -j takes a kind: only a number is recur's.
            && (row.typed != "-j" || value.is_some_and(|v| v.contains(|c: char| c.is_ascii_digit())))
    })
}

/// The row of a whole argument that is another tool's single-dash flag (`-test`,
/// `-prometheus-listen-address=ADDR`), and whether it carries its value after `=`.
pub fn whole_word(word: &str) -> Option<(&'static Spelling, bool)> {
    let (name, value) = match word.split_once('=') {
        Some((name, _)) => (name, true),
        None => (word, false),
    };
    let row = SPELLINGS
        .iter()
        .find(|row| row.when == When::Word && row.typed == name)?;
    Some((row, value))
}

/// The row of a single-dash flag typed with two dashes, as Go's flag package takes it
/// (`--test` for `-test`): for an option retry does not know (`--json` is retry's).
pub fn doubled(name: &str) -> Option<&'static Spelling> {
    whole_word(name.strip_prefix('-')?).map(|(row, _)| row)
}

/// "for flock's -w N use --lock-wait N", as a message ends.
pub fn advice(row: &Spelling) -> String {
    let whose = if row.tool == OTHERS {
        row.shown.to_string()
    } else {
        format!("{}'s {}", row.tool, row.shown)
    };
    format!("for {whose} use {}", row.retry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// The README and docs/ pages, where the "Coming from another tool" table lives.
    fn documents() -> String {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut text = std::fs::read_to_string(root.join("README.md")).unwrap();
        for entry in std::fs::read_dir(root.join("docs")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "md") {
                text.push_str(&std::fs::read_to_string(path).unwrap());
            }
        }
        text
    }

    #[test]
    fn every_row_is_in_the_readme_table() {
        let text = documents();
        let rows: Vec<Vec<String>> = text
            .lines()
            .filter(|l| l.starts_with("| "))
            .map(|l| {
                l.trim_matches('|')
                    .split(" | ")
                    .map(|c| c.trim().replace('`', "").replace("\\|", "|"))
                    .collect()
            })
            .collect();
        for row in SPELLINGS {
            let found = rows.iter().any(|cells| {
                cells.len() >= 3
                    && cells[0] == row.tool
                    && cells[1].split(", ").any(|c| c == row.shown)
                    && cells[2].contains(row.retry)
            });
            assert!(
                found,
                "no row '| {} | `{}` | … {} … |' in the README's \"Coming from another tool\" table",
                row.tool, row.shown, row.retry
            );
        }
    }

    #[test]
    fn no_spelling_is_retry_s_own_long_option() {
        let mut cmd = crate::cli::Cli::command();
        cmd.build();
        for row in SPELLINGS.iter().filter(|r| r.typed.starts_with("--")) {
            let long = row.typed[2..].replace('_', "-");
            assert!(
                !cmd.get_arguments().any(|a| a.get_long() == Some(&long)),
                "{} is retry's own option",
                row.typed
            );
        }
    }

    #[test]
    fn letters_that_are_curl_s_apply_only_where_curl_s_do_not() {
        let lock = Place {
            http: false,
            lock: true,
        };
        assert!(find("-w", Some("5"), lock).is_some());
        assert!(find("-w", Some("5"), Place::default()).is_none());
        assert!(
            find(
                "-n",
                None,
                Place {
                    http: true,
                    lock: true
                }
            )
            .is_none()
        );
        assert!(find("-j", Some("none"), Place::default()).is_none());
        assert!(find("-j", Some("1s,5s"), Place::default()).is_some());
        assert!(find("--max_attempts", Some("3"), Place::default()).is_some());
    }

    #[test]
    fn supercronic_s_flags_are_whole_words_and_take_go_s_double_dash() {
        let retry_of = |word: &str| whole_word(word).map(|(row, _)| row.retry);
        assert_eq!(retry_of("-test"), Some("--dry-run"));
        assert_eq!(retry_of("-overlapping"), Some("--overlap allow"));
        assert!(
            whole_word("-prometheus-listen-address=:9746").is_some_and(|(_, attached)| attached)
        );
        for not_whole in ["-t", "-tes", "-testing", "test", "--tries"] {
            assert!(whole_word(not_whole).is_none(), "{not_whole}");
        }
        assert_eq!(doubled("--debug").map(|row| row.retry), Some("-v"));
        assert!(doubled("-debug").is_none());
        // Found by name as the walk records them; `--test` only as an unknown option.
        assert!(find("-test", None, Place::default()).is_some());
        assert!(find("--test", None, Place::default()).is_none());
    }
}
