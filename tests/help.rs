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

#[test]
fn help_groups_options_under_headings() {
    for flag in ["-h", "--help"] {
        let text = piped(&[flag], true);
        let positions: Vec<usize> = [
            "Attempts and timing:",
            "Classification (command mode):",
            "Process handling (command mode):",
            "HTTP mode:",
            "Scheduled jobs:",
            "Output and reporting:",
        ]
        .iter()
        .map(|h| text.find(h).unwrap_or_else(|| panic!("{flag} lacks {h}")))
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
        short.len() * 2 < long.len(),
        "-h is not shorter than --help"
    );
    assert!(short.contains("Run `retry --help` for details and examples."));
    assert!(!short.contains("Examples:"));
    let widest = short.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(widest <= 100, "-h has a {widest}-column line");
}

/// `--version` and `-V` print the same one line, as most tools do (`retry X.Y.Z`).
#[test]
fn version_and_v_print_the_same_one_line() {
    let expected = format!("retry {}\n", env!("CARGO_PKG_VERSION"));
    assert_eq!(piped(&["--version"], true), expected);
    assert_eq!(piped(&["-V"], true), expected);
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
