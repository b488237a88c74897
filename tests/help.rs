//! `retry -h` and `retry --help`: grouped options, worked examples, and colour only
//! on a terminal and never with NO_COLOR.

use std::io::Read;
use std::process::Stdio;

use crate::support::{Invocation, Terminal, retry, terminal};

/// `retry ARGS` with colour left to the terminal (a colour TERM, no colour
/// variables), or turned off with NO_COLOR=1.
fn asking_for(args: &[&str], no_color: bool) -> Invocation {
    let mut cmd = retry();
    for var in ["NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE"] {
        cmd.env_remove(var);
    }
    cmd.env("TERM", "xterm-256color").args(args);
    if no_color {
        cmd.env("NO_COLOR", "1");
    }
    cmd
}

fn piped(args: &[&str], no_color: bool) -> String {
    let out = asking_for(args, no_color).run();
    assert_eq!(out.status, 0, "retry {args:?}: {}", out.stderr);
    String::from_utf8(out.stdout).unwrap()
}

/// Runs retry with stdout on a pseudo-terminal and returns what it wrote there.
fn on_terminal(args: &[&str], no_color: bool) -> String {
    let Terminal { mut master, slave } = terminal();
    let mut cmd = asking_for(args, no_color);
    let mut child = cmd.stdout(Stdio::from(slave)).spawn();
    // The builder holds the terminal's other end until dropped; reading needs it closed.
    drop(cmd);
    let mut text = Vec::new();
    let mut buf = [0u8; 8192];
    // Reading the master ends with EIO once the child has closed the terminal.
    while let Ok(n) = master.read(&mut buf) {
        if n == 0 {
            break;
        }
        text.extend_from_slice(&buf[..n]);
    }
    assert!(child.wait().unwrap().success());
    String::from_utf8(text).unwrap()
}

const ESC: char = '\x1b';

#[test]
fn help_is_coloured_on_a_terminal() {
    let text = on_terminal(&["--help"], false);
    assert!(text.contains("Attempts and timing"), "{text}");
    assert!(text.contains(ESC), "no colour on a terminal");
}

#[test]
fn no_color_turns_help_colour_off_on_a_terminal() {
    for flag in ["-h", "--help"] {
        let text = on_terminal(&[flag], true);
        assert!(text.contains("Attempts and timing"), "{text}");
        assert!(
            !text.contains(ESC),
            "NO_COLOR=1 retry {flag} has escape codes"
        );
    }
}

#[test]
fn piped_help_has_no_escape_codes() {
    for flag in ["-h", "--help"] {
        for no_color in [false, true] {
            let text = piped(&[flag], no_color);
            assert!(!text.contains(ESC), "piped retry {flag} has escape codes");
        }
    }
}

/// The headings in the order both helps show them, and those `-h` shows too.
const HEADINGS: &[(&str, bool)] = &[
    ("Attempts and timing:", true),
    ("Classification (command mode):", true),
    ("Process handling (command mode):", false),
    ("HTTP mode:", true),
    ("Scheduled jobs:", true),
    ("Output and reporting:", false),
];

#[test]
fn help_groups_options_under_headings() {
    for flag in ["-h", "--help"] {
        let text = piped(&[flag], true);
        let positions: Vec<usize> = HEADINGS
            .iter()
            .filter(|(_, short)| *short || flag == "--help")
            .map(|(h, _)| text.find(h).unwrap_or_else(|| panic!("{flag} lacks {h}")))
            .collect();
        assert!(positions.is_sorted(), "{flag}: headings out of order");
    }
}

#[test]
fn long_help_ends_with_exit_status_environment_and_examples() {
    let text = piped(&["--help"], true);
    let exit = text.find("\nExit status:\n").expect("exit status");
    let env = text.find("\nEnvironment:\n").expect("environment");
    let examples = text.find("\nExamples:\n").expect("examples");
    assert!(exit < env && env < examples);
    assert!(text[examples..].contains("retry --hold-stdout -- ./fetch-report | jq ."));
    assert!(text.contains("RETRY_IDEMPOTENCY_KEY"));
}

#[test]
fn short_help_is_the_summary() {
    let short = piped(&["-h"], true);
    let long = piped(&["--help"], true);
    assert!(
        short.len() * 4 < long.len(),
        "-h is not a summary of --help"
    );
    let flat = short.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("retry --help, man retry, and docs/"),
        "-h does not say where the rest is:\n{short}"
    );
    let examples = &short[short.find("\nExamples:\n").expect("-h has examples")..];
    let commands = examples
        .lines()
        .skip(2)
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  retry "))
        .count();
    assert_eq!(commands, 3, "-h has three examples:\n{examples}");
    for option in [
        "--attempts",
        "--max-time",
        "--retry-on-status",
        "--lock",
        "--once",
    ] {
        assert!(short.contains(option), "-h lacks {option}");
    }
    assert!(
        !short.contains("--proto-redir"),
        "-h lists curl's rare options"
    );
}

/// `retry -h` fits one screen: at 80 columns, at most 50 lines, none wider, and names
/// `--crontab` beside `--schedule`. Without COLUMNS it is 80 columns wide all the same.
#[test]
fn short_help_fits_one_screen_at_80_columns() {
    let out = asking_for(&["-h"], true).env("COLUMNS", "80").run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("--crontab <FILE>"),
        "-h lacks --crontab:\n{text}"
    );
    let wide = asking_for(&["-h"], true).env_remove("COLUMNS").run();
    assert_eq!(
        String::from_utf8(wide.stdout).unwrap(),
        text,
        "-h without COLUMNS"
    );
    let lines = text.lines().count();
    assert!(
        lines <= 50,
        "retry -h is {lines} lines at 80 columns:\n{text}"
    );
    for line in text.lines() {
        assert!(
            line.chars().count() <= 80,
            "wider than 80 columns: {line:?}"
        );
    }
}

/// `--version` and `-V` print the same one line, `retry X.Y.Z (COMMIT DATE TARGET)`:
/// the commit (9 hex digits, `-dirty` after an edit) and its UTC date are this
/// checkout's, as build.rs read them, so that Debian's `retry 1.0.5` is never taken for
/// ours.
#[test]
fn version_and_v_print_the_same_one_line() {
    let line = piped(&["--version"], true);
    assert_eq!(piped(&["-V"], true), line);
    let form = regex::Regex::new(
        r"^retry (\S+) \(([0-9a-f]{9})(-dirty)? (\d{4}-\d{2}-\d{2}) ([a-z0-9_]+-[a-z0-9_-]+)\)\n$",
    )
    .unwrap();
    let caps = form.captures(&line).unwrap_or_else(|| panic!("{line:?}"));
    assert_eq!(&caps[1], env!("CARGO_PKG_VERSION"), "{line:?}");
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("TZ", "UTC")
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let Some(head) = git(&["rev-parse", "HEAD"]) else {
        return; // a checkout without git metadata built `(unknown commit, TARGET)`
    };
    // The binary may be of an earlier commit than a checkout that moved on since; its
    // commit must then be an ancestor, and its date that commit's.
    let commit = &caps[2];
    let date = git(&[
        "show",
        "-s",
        "--format=%cd",
        "--date=format-local:%Y-%m-%d",
        commit,
    ]);
    assert_eq!(date.as_deref(), Some(&caps[4]), "{line:?} (HEAD {head})");
    assert!(
        git(&["merge-base", "--is-ancestor", commit, "HEAD"]).is_some(),
        "{line:?}: not a commit of this checkout's history (HEAD {head})"
    );
}

#[test]
fn long_help_lists_exit_1_and_everything_125_stands_for() {
    let text = piped(&["--help"], true);
    let exit =
        &text[text.find("\nExit status:\n").unwrap()..text.find("\nEnvironment:\n").unwrap()];
    let flat = exit.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("1 The last attempt failed by a rule"),
        "{exit}"
    );
    assert!(flat.contains("RETRY_CONTROL"), "{exit}");
    // A lost lock ends a running command with 125: "nothing ran" is not always so.
    assert!(!flat.contains("Nothing ran."), "{exit}");
    for cause in [
        "lock lost during the run",
        "lack of resources",
        "temporary file",
    ] {
        assert!(flat.contains(cause), "125 does not name {cause:?}: {exit}");
    }
}

/// `retry --help` with `COLUMNS` set and stdout a pipe, as a script or a pager sees it.
fn help_at(columns: usize) -> String {
    let out = asking_for(&["--help"], true)
        .env("COLUMNS", columns.to_string())
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    String::from_utf8(out.stdout).unwrap()
}

/// The prose sections, each with the column its wrapped lines continue at, and
/// whether an entry's first line (indented 2) starts the same paragraph.
const PROSE: &[(&str, usize, bool)] = &[
    ("Modes:", 2, true),
    ("Exit status:", 13, true),
    ("Environment:", 6, false),
    ("Examples:", 6, false),
];

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// Every line of a prose paragraph was as full as the width allowed: the next line's
/// first word would not have fitted. A fragment left by wrapping twice (`…(or` / `the` /
/// `…`) fails this, and so does a line that runs past the width.
fn check_prose(text: &str, width: usize) -> Vec<String> {
    let mut problems = Vec::new();
    let start = text.find("\nModes:\n").expect("a Modes section") + 1;
    let lines: Vec<&str> = text[start..].lines().collect();
    let mut section = PROSE[0];
    for (i, line) in lines.iter().enumerate() {
        if let Some(found) = PROSE.iter().find(|(name, _, _)| line == name) {
            section = *found;
            continue;
        }
        let (_, at, joined) = section;
        if line.trim().is_empty() || indent(line) != at || i == 0 {
            continue;
        }
        let previous = lines[i - 1];
        let same_paragraph = indent(previous) == at || (joined && indent(previous) == 2);
        if !same_paragraph || previous.ends_with('\\') || previous.trim().is_empty() {
            continue;
        }
        let word = line.split_whitespace().next().unwrap_or_default();
        if previous.chars().count() + 1 + word.chars().count() <= width {
            problems.push(format!(
                "{width}: {word:?} would fit after {previous:?}, yet starts the next line"
            ));
        }
    }
    problems
}

/// `--help` reads cleanly at 80 columns and on wider terminals: nothing runs past the
/// width, and the prose sections are wrapped once, to that width, under their indent.
#[test]
fn help_is_wrapped_once_at_80_columns_and_wider() {
    for (columns, width) in [(80, 80), (100, 100), (132, 100)] {
        let text = help_at(columns);
        let mut problems: Vec<String> = text
            .lines()
            .filter(|l| l.chars().count() > width)
            .map(|l| format!("{columns}: {} columns: {l:?}", l.chars().count()))
            .collect();
        problems.extend(check_prose(&text, width));
        assert!(problems.is_empty(), "\n{}", problems.join("\n"));
        for name in ["Exit status:", "Environment:", "Examples:"] {
            let at = text.find(&format!("\n{name}\n")).expect(name);
            let body = text[at + name.len() + 2..].lines().take(3);
            assert!(
                body.clone().all(|l| l.is_empty() || indent(l) >= 2),
                "{columns}: {name} has a line at column 0: {:?}",
                body.collect::<Vec<_>>()
            );
        }
    }
}
