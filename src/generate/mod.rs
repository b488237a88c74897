//! Shell completions and the man page, generated from the clap definition so that
//! they cannot drift from `--help`. The man page's EXIT STATUS, ENVIRONMENT and
//! EXAMPLES sections come from the same tables as `--help`'s epilogue (`cli`); the
//! committed copies in `completions/` and `man/` are checked by `tests/generated.rs`.
//! bash, zsh and fish completions are written by [`completion`], which knows where the
//! target starts; elvish and PowerShell come from clap_complete.

mod completion;

use std::io::Write;

use clap::CommandFactory;
use clap_complete::Shell;
use clap_mangen::Man;
use clap_mangen::roff::{Roff, bold, italic, roman};

use crate::cli::{self, Cli, GenerateKind};

/// The generated text for `kind`.
pub fn render(kind: GenerateKind) -> anyhow::Result<Vec<u8>> {
    let shell = match kind {
        GenerateKind::Bash => return Ok(completion::bash().into_bytes()),
        GenerateKind::Zsh => return Ok(completion::zsh().into_bytes()),
        GenerateKind::Fish => return Ok(completion::fish().into_bytes()),
        GenerateKind::Elvish => Shell::Elvish,
        GenerateKind::Powershell => Shell::PowerShell,
        GenerateKind::Man => return man_page(),
    };
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "retry", &mut out);
    let text = String::from_utf8(out).expect("completion scripts are UTF-8");
    Ok(without_hidden_options(&text).into_bytes())
}

/// clap_complete offers hidden options too: drop the lines that offer them. Both
/// elvish and PowerShell scripts name one option per line, quoted or after `cand`.
fn without_hidden_options(script: &str) -> String {
    let hidden: Vec<String> = Cli::command()
        .get_arguments()
        .filter(|arg| arg.is_hide_set() && !arg.is_positional())
        .flat_map(|arg| {
            let longs = arg.get_long().map(|l| format!("--{l}"));
            let shorts = arg.get_short().map(|s| format!("-{s}"));
            longs.into_iter().chain(shorts)
        })
        .collect();
    let offers = |line: &str, name: &str| {
        line.trim_start().starts_with(&format!("cand {name} "))
            || line.contains(&format!("::new('{name}',"))
    };
    script
        .lines()
        .filter(|line| !hidden.iter().any(|name| offers(line, name)))
        .map(|line| format!("{line}\n"))
        .collect()
}

pub fn write(kind: GenerateKind) -> anyhow::Result<()> {
    let text = render(kind)?;
    std::io::stdout().lock().write_all(&text)?;
    Ok(())
}

/// retry(1): clap_mangen's title, name, synopsis, description and one section per
/// help heading, then our own sections. The `after_long_help` epilogue is left out:
/// its content is rendered here as proper man sections instead.
fn man_page() -> anyhow::Result<Vec<u8>> {
    // X.Y.Z alone: the commit and target of `--version` belong to a build, not the page.
    let cmd = Cli::command().version(env!("CARGO_PKG_VERSION"));
    let man = Man::new(cmd).manual("User Commands");
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    // No hyphenation: an option's name is never broken across lines, so searching the
    // pager for --max-delay finds every mention (its hyphens are \-, no break point).
    Roff::new().control("nh", []).to_writer(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    paragraphs(&[cli::help::MODES]).to_writer(&mut out)?;
    man.render_options_section(&mut out)?;
    tagged_section("EXIT STATUS", cli::help::EXIT_STATUS).to_writer(&mut out)?;
    tagged_section("ENVIRONMENT", cli::help::ENVIRONMENT).to_writer(&mut out)?;
    examples_section().to_writer(&mut out)?;
    see_also_section().to_writer(&mut out)?;
    man.render_version_section(&mut out)?;
    Ok(drop_repeated_preambles(out))
}

fn paragraphs(texts: &[&str]) -> Roff {
    let mut roff = Roff::new();
    for text in texts {
        roff.control("PP", []).text([roman(*text)]);
    }
    roff
}

/// A section of `.TP` entries: a bold tag and its explanation.
fn tagged_section(title: &str, rows: &[(&str, &str)]) -> Roff {
    let mut roff = Roff::new();
    roff.control("SH", [title]);
    for (tag, text) in rows {
        roff.control("TP", [])
            .text([bold(*tag)])
            .text([roman(*text)]);
    }
    roff
}

/// The columns a man page's example line may take at 80 columns: man indents the
/// section's text by 7 and `.RS 4` by 4 more.
const EXAMPLE_WIDTH: usize = 80 - 7 - 4;

/// Each example as an unfilled command line followed by what it does; a long one is
/// broken between shell words with a ` \` (as `--help` breaks it), so it fits 80 columns.
fn examples_section() -> Roff {
    let mut roff = Roff::new();
    roff.control("SH", ["EXAMPLES"]);
    for (command, what) in cli::help::EXAMPLES {
        roff.control("PP", [])
            .text([roman(*what)])
            .control("RS", ["4"])
            .control("nf", []);
        // wrap_command starts its lines with two spaces that .RS stands for here.
        for line in cli::help::wrap_command(command, EXAMPLE_WIDTH + 2).lines() {
            roff.text([bold(line.strip_prefix("  ").unwrap_or(line))]);
        }
        roff.control("fi", []).control("RE", []);
    }
    roff
}

fn see_also_section() -> Roff {
    let mut roff = Roff::new();
    roff.control("SH", ["SEE ALSO"]);
    roff.text([
        bold("curl"),
        roman("(1), "),
        bold("timeout"),
        roman("(1), "),
        bold("flock"),
        roman("(1); docs/report.md for the report schema, docs/command-mode.md and docs/curl.md for the classification tables ("),
        italic("retry --dry-run"),
        roman(" prints the rules in force)."),
    ]);
    roff
}

/// Every roff fragment starts with the same apostrophe preamble; one is enough.
fn drop_repeated_preambles(out: Vec<u8>) -> Vec<u8> {
    let text = String::from_utf8(out).expect("roff output is UTF-8");
    let preamble = Roff::new().render();
    let body = text.replace(&preamble, "");
    format!("{preamble}{body}").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn man() -> String {
        String::from_utf8(render(GenerateKind::Man).unwrap()).unwrap()
    }

    /// What of `wanted` the man page does not hold.
    fn missing_from_man(wanted: &[String]) -> Vec<&String> {
        let page = man();
        wanted
            .iter()
            .filter(|w| !page.contains(w.as_str()))
            .collect()
    }

    #[test]
    fn man_page_has_the_promised_sections() {
        let sections = [
            "NAME",
            "SYNOPSIS",
            "DESCRIPTION",
            "\"ATTEMPTS AND TIMING\"",
            "\"HTTP MODE\"",
            "\"SCHEDULED JOBS\"",
            "\"EXIT STATUS\"",
            "ENVIRONMENT",
            "EXAMPLES",
        ]
        .map(|name| format!(".SH {name}"));
        assert_eq!(missing_from_man(&sections), Vec::<&String>::new());
        assert!(
            !man().contains(".SH EXTRA"),
            "the epilogue is rendered as sections"
        );
    }

    #[test]
    fn man_page_names_every_environment_variable() {
        let names = [
            "RETRY_ATTEMPT",
            "RETRY_ATTEMPTS",
            "RETRY_IDEMPOTENCY_KEY",
            "RETRY_DEADLINE_MS",
            "RETRY_DEPTH",
            "NO_COLOR",
            "GITHUB_ACTIONS",
            "XDG_STATE_HOME",
        ]
        .map(|name| format!("\\fB{name}\\fR"));
        assert_eq!(missing_from_man(&names), Vec::<&String>::new());
    }

    #[test]
    fn man_page_has_one_preamble() {
        let preamble = Roff::new().render();
        assert_eq!(man().matches(&preamble).count(), 1);
    }
}
