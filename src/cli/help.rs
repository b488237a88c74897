//! The prose of `--help` and the man page beyond each flag's own text: how the target
//! selects a mode, the exit statuses, the environment and worked examples, as tables
//! that `--help`'s epilogue and the man page's sections are both built from.

/// How the target is chosen, shown first after the options in `--help`.
pub const MODES: &str = "\
A first operand starting with http:// or https:// is an HTTP request; anything else is a \
command, run directly (PATH lookup, no shell; use sh -c '...' for a pipeline). Options go \
before the target, and everything after a command belongs to the command; after a URL \
options may follow too, as with curl (one URL per run). DUR is a duration such as \
250ms, 2s or 1m30s, or a number of seconds such as 1.5. LIST is comma-separated values \
and ranges, such as 2,64-78.";

/// Exit statuses: one table for `--help` and the man page's EXIT STATUS section.
pub const EXIT_STATUS: &[(&str, &str)] = &[
    (
        "0",
        "An attempt succeeded, or the run was skipped (lock busy with --busy-exit 0, or the --once key is done); \
         with --until-failure, every attempt succeeded.",
    ),
    (
        "N",
        "The last attempt's own exit status, after the attempt limit, the time limit (--max-time) or a permanent failure.",
    ),
    (
        "1",
        "The last attempt failed by a rule (an output rule or a RETRY_CONTROL directive) although the \
         command exited 0: a failed run never exits 0.",
    ),
    (
        "124",
        "The last attempt was stopped by --timeout (exit 124 to --stop-on, --retry-on and --success-on).",
    ),
    (
        "75",
        "The --circuit is open: the run was refused without an attempt (--circuit-exit).",
    ),
    (
        "125",
        "retry itself failed: a bad usage or value, or a lock or state store that cannot be reached \
         (nothing ran); a lock lost during the run (the running command was ended), a success that \
         could not be recorded, a temporary file that cannot be written, or a last attempt that \
         could not be started for lack of resources (EAGAIN, ENOMEM).",
    ),
    (
        "126, 127",
        "The command is not executable / not found (never retried).",
    ),
    (
        "128+N",
        "The last attempt died of signal N, or retry itself was stopped by signal N (the only way \
         a --schedule scheduler ends, once it has started).",
    ),
    (
        "HTTP mode",
        "curl's codes: 1 a protocol --proto does not permit, 3 malformed URL, 5 could not \
         resolve the proxy, 6 could not resolve host, 7 could not connect, 18 body shorter than \
         its Content-Length, 22 final status >= 400 (with or without -f), 23 the body could not \
         be written (a reader gone, stdout closed or full, -o failing), 26 cannot read the -T \
         file, 28 timed out, 35 TLS handshake failed, 47 too many redirects, 52 empty reply, \
         56 receive failure (connection reset mid-transfer), \
         60 certificate problem, 97 the SOCKS proxy refused the handshake or the request.",
    ),
];

/// Variables retry sets for the command or reads itself, for `--help` and the man page.
pub const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "RETRY_ATTEMPT",
        "Set for the command: this attempt's number, from 1.",
    ),
    (
        "RETRY_ATTEMPTS",
        "Set for the command: the attempt limit (0 with -a 0: none).",
    ),
    (
        "RETRY_IDEMPOTENCY_KEY",
        "Set for the command: one UUID v4 per run, the same on every attempt (or the --idempotency-key value).",
    ),
    (
        "RETRY_DEADLINE_MS",
        "Set for the command when --max-time is given: milliseconds left of the time limit.",
    ),
    (
        "RETRY_FENCING_TOKEN",
        "Set for the command and hooks under --lock or --once: a number greater than any handed out before for \
         the same lock (for a file lock, the realtime clock in microseconds or the state directory's last token + 1).",
    ),
    (
        "RETRY_DEPTH",
        "Set for the command: the nesting level. A retry that inherits 1 or more makes one attempt only, \
         unless --allow-nested is given.",
    ),
    (
        "RETRY_CONTROL",
        "Set for the command: an empty file in a private directory (under $XDG_RUNTIME_DIR, else \
         $TMPDIR, else /tmp). The command may write one directive to it: 'retry-after DUR' (transient; \
         wait at least DUR, capped by --max-retry-after), 'retry' (transient), 'stop' (permanent) or \
         'success' (exit 0 whatever the status). It is checked before every other rule; anything else \
         is a warning and is ignored.",
    ),
    (
        "RETRY_EXIT_CODE, RETRY_HTTP_STATUS",
        "Set for hooks: the status retry would exit with (curl's code in HTTP mode), and the HTTP \
         status when there was a response. Hooks also get the command's RETRY_* variables \
         (RETRY_DEPTH is retry's own).",
    ),
    (
        "RETRY_OUTCOME, RETRY_CLASS, RETRY_REASON",
        "Set for hooks: how the last attempt ended, its class (success, transient, permanent) and why.",
    ),
    (
        "RETRY_NEXT_DELAY_MS",
        "Set for --on-retry: the backoff sleep before the next attempt, in milliseconds.",
    ),
    (
        "NO_COLOR",
        "When set and not empty, no colour on stderr or in --help.",
    ),
    (
        "GITHUB_ACTIONS",
        "When true, a failed attempt that will be retried is also a ::warning:: annotation and giving up an ::error:: one.",
    ),
    (
        "XDG_STATE_HOME",
        "Default --state directory is $XDG_STATE_HOME/retry (or ~/.local/state/retry when unset).",
    ),
];

/// Worked examples, for `--help` and the man page's EXAMPLES section.
pub const EXAMPLES: &[(&str, &str)] = &[
    (
        "retry -- ./deploy.sh",
        "Up to 5 attempts, full-jitter exponential backoff from 1s, capped at 30s.",
    ),
    (
        "retry -a 10 --max-time 2m -t 20s -- curl -fsS https://example.com/health",
        "curl's exit codes and the HTTP status it prints decide what is retried; no attempt starts past 2 minutes.",
    ),
    (
        "retry --retry-on-output 'connection reset' --stop-on 2 -- ./sync.sh",
        "Retry when the output says so (even on exit 0); exit 2 stops at once.",
    ),
    (
        "retry --hold-stdout -- ./fetch-report | jq .",
        "Downstream sees exactly one attempt's output.",
    ),
    (
        "retry -X POST --idempotency-key auto -d @charge.json https://api.example/charges",
        "A POST retried safely: every attempt carries the same Idempotency-Key.",
    ),
    (
        "retry -o page.html --max-retry-after 1m https://example.com/",
        "Download to page.html (replaced only on success), obeying Retry-After up to a minute.",
    ),
    (
        "retry -fsSL --retry 5 -C - -o big.iso https://example.com/big.iso",
        "A curl line made retrying: a download cut off mid-way resumes where it stopped.",
    ),
    (
        "retry --lock /run/lock/report.lock --once \"report-$(date +%F)\" -- make-report",
        "A cron job: one instance at a time, and at most one success a day.",
    ),
    (
        "retry --on-give-up 'cat > /var/spool/retry/$(date +%s).json' --on-success 'curl -fsS https://hc-ping.com/UUID' -- ./nightly.sh",
        "Failed work goes to a dead-letter directory as its report; a dead-man monitor hears of each success.",
    ),
    (
        "retry --schedule '0 3 * * *' --tz Europe/Berlin --state /var/lib/retry -- make-report",
        "A scheduler: every night at 03:00 Berlin time (five fields; seven add seconds first and \
         the year last, as supercronic reads them), each night once across restarts.",
    ),
    (
        "retry --schedule '@every 30s' --overlap skip -- ./poll-queue.sh",
        "Every 30 seconds on the epoch's multiples, so replicas agree on the slots.",
    ),
    (
        "retry -a 0 --max-time 10m --delays 1s,5s,30s -j none -- pg_isready -h db",
        "No attempt limit, only 10 minutes; sleeps of exactly 1s, 5s, then 30s each time.",
    ),
    (
        "retry --consecutive 3 --delay 2s -a 30 https://staging.example/health",
        "Go on only after three healthy answers in a row, 2s apart.",
    ),
    (
        "retry --until-failure -a 200 --delay 0 --hold-stdout --hold-stderr -- cargo test flaky",
        "Hunt a flaky test: run it until it fails (at most 200 times); the failing run's output is shown.",
    ),
    (
        "retry --dry-run -a 6 --delay 500ms --jitter equal -- make test",
        "Print the schedule and the classification rules, run nothing.",
    ),
];

/// The options `retry -h` shows, by clap id: those most runs need, one screen's worth.
/// Every other option is shown by `--help` and the man page only.
pub const SHORT_HELP: &[&str] = &[
    "attempts",
    "delay",
    "timeout",
    "max_time",
    "stop_on",
    "retry_on",
    "retry_on_status",
    "lock",
    "once",
    "state",
    "schedule",
    "crontab",
    "quiet",
    "verbose",
    "dry_run",
];

/// What `retry -h` ends with: three examples, and where the rest is.
pub const SHORT_AFTER_HELP: &str = "\
Examples:
  retry -a 10 --max-time 2m -- ./deploy.sh
  retry -X POST --idempotency-key auto -d @order.json https://api.example/orders
  retry --lock /run/lock/report.lock --once \"report-$(date +%F)\" -- make-report

A URL takes curl's options: -X, -H, -d, -o, -f, -L, -u, --retry and more.
Everything else: retry --help, man retry, and docs/ in retry's source.";

/// Options `retry -h` shows under another heading than `--help` does (`None`: beside
/// -h and -V), so that one screen holds fewer headings.
const SHORT_HEADINGS: &[(&str, Option<&str>)] = &[
    ("schedule", Some(super::args::JOBS)),
    ("crontab", Some(super::args::JOBS)),
    ("quiet", None),
    ("verbose", None),
    ("dry_run", None),
];

/// `cmd` as `retry -h` shows it: only the options of [`SHORT_HELP`], then the examples.
pub fn short(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|arg| {
        let id = arg.get_id().as_str();
        let shown = SHORT_HELP.contains(&id);
        let heading = SHORT_HEADINGS.iter().find(|(of, _)| *of == id);
        let arg = arg.hide_short_help(!shown);
        match heading {
            Some((_, heading)) => arg.help_heading(*heading),
            None => arg,
        }
    })
    .after_help(SHORT_AFTER_HELP)
}

/// The widest `retry -h` is laid out for, whatever the terminal: one screen of 80 columns.
pub const SHORT_WIDTH: usize = 80;

/// The widest `--help` is laid out for, as clap's `max_term_width` says.
pub const MAX_WIDTH: usize = 100;

/// The width `--help` is laid out for: the terminal's (stdout, else stderr, else
/// stdin), else `COLUMNS`, else the widest; never wider than `MAX_WIDTH`. clap is
/// given the same width, so the prose below is wrapped once, here, and never again.
pub fn width() -> usize {
    let terminal = terminal_size::terminal_size().map(|(w, _)| usize::from(w.0));
    let columns = || std::env::var("COLUMNS").ok()?.trim().parse::<usize>().ok();
    terminal
        .or_else(columns)
        .filter(|w| *w > 0)
        .unwrap_or(MAX_WIDTH)
        .min(MAX_WIDTH)
}

/// The text after the options in `--help`, built from the tables above and wrapped
/// to `width` columns, each entry's lines indented under its text.
pub fn after_long_help(width: usize) -> String {
    let mut text = String::from("Modes:\n");
    text += &wrap(MODES, "  ", "  ", width);
    text += "\nExit status:\n";
    for (status, meaning) in EXIT_STATUS {
        let first = format!("  {status:<10} ");
        text += &wrap(meaning, &first, &" ".repeat(first.len()), width);
    }
    text += "\nEnvironment:\n";
    for (name, meaning) in ENVIRONMENT {
        text += &wrap(name, "  ", "  ", width);
        text += &wrap(meaning, "      ", "      ", width);
    }
    text += "\nExamples:\n";
    for (i, (command, what)) in EXAMPLES.iter().enumerate() {
        if i > 0 {
            text += "\n";
        }
        text += &wrap_command(command, width);
        text += &wrap(what, "      ", "      ", width);
    }
    text.trim_end().to_string()
}

/// `text` filled greedily into lines of at most `width` columns: the first line starts
/// with `first`, the others with `rest`. A word longer than a line has a line of its own.
fn wrap(text: &str, first: &str, rest: &str, width: usize) -> String {
    fill(text.split_whitespace(), first, rest, "", width)
}

/// A command line, broken between shell words (quotes kept whole, an option kept with
/// its value) with a ` \` at the end of each line but the last, so that it can still
/// be pasted into a shell.
pub fn wrap_command(command: &str, width: usize) -> String {
    let mut units: Vec<String> = Vec::new();
    let mut words = shell_words(command).into_iter().peekable();
    while let Some(word) = words.next() {
        let takes_next = word.starts_with('-');
        match words.peek() {
            Some(next) if takes_next && !next.starts_with('-') => {
                let value = words.next().unwrap_or_default();
                units.push(format!("{word} {value}"));
            }
            _ => units.push(word),
        }
    }
    fill(units.iter().map(String::as_str), "  ", "    ", " \\", width)
}

/// Greedy filling: each line as full as `width` allows, `end` after every line that
/// has a next one.
fn fill<'a>(
    words: impl Iterator<Item = &'a str>,
    first: &str,
    rest: &str,
    end: &str,
    width: usize,
) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in words {
        let fits = line.chars().count() + 1 + word.chars().count() + end.len() <= width;
        if !empty && !fits {
            lines.push(std::mem::replace(&mut line, rest.to_string()));
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line += word;
        empty = false;
    }
    lines.push(line);
    let last = lines.len() - 1;
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| format!("{l}{}\n", if i < last { end } else { "" }))
        .collect()
}

/// The words of a command line as a shell splits it, each with its quotes.
fn shell_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    for c in command.chars() {
        match (quote, c) {
            (None, ' ') => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                continue;
            }
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
        word.push(c);
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_is_filled_greedily_under_its_indent() {
        let text = wrap("aaa bbb ccc ddd", "  x ", "    ", 12);
        assert_eq!(text, "  x aaa bbb\n    ccc ddd\n");
        assert_eq!(wrap("toolongforit", "  ", "  ", 5), "  toolongforit\n");
    }

    #[test]
    fn commands_break_between_shell_words_with_a_continuation() {
        let words = shell_words("retry --on-give-up 'cat > x' -- \"a b\" c");
        assert_eq!(
            words,
            ["retry", "--on-give-up", "'cat > x'", "--", "\"a b\"", "c"]
        );
        let text = wrap_command("retry --on-give-up 'cat > spool' -- ./job", 30);
        assert_eq!(
            text,
            "  retry \\\n    --on-give-up 'cat > spool' \\\n    -- ./job\n"
        );
    }

    #[test]
    fn every_option_of_short_help_exists() {
        use clap::CommandFactory;
        let cmd = crate::cli::Cli::command();
        let ids = SHORT_HELP
            .iter()
            .chain(SHORT_HEADINGS.iter().map(|(id, _)| id));
        for id in ids {
            assert!(cmd.get_arguments().any(|a| a.get_id() == *id), "{id}");
        }
    }

    #[test]
    fn no_line_of_the_epilogue_is_wider_than_asked() {
        for width in [80, 100] {
            let text = after_long_help(width);
            for line in text.lines() {
                assert!(line.chars().count() <= width, "{width}: {line:?}");
            }
        }
    }

    #[test]
    fn the_help_lists_cron_s_nicknames_as_their_table_does() {
        use clap::CommandFactory;
        let help = crate::cli::Cli::command().render_long_help().to_string();
        let list = crate::cron::listed_nicknames();
        assert!(
            crate::cron::flat(&help).contains(&list),
            "--schedule's help does not list the nicknames as src/cron/nicknames.rs does: {list}"
        );
    }
}
