//! Shell completions and the man page, generated from the clap definition so that
//! they cannot drift from `--help`.

use std::io::Write;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, GenerateKind};

/// The generated text for `kind`.
pub fn render(kind: GenerateKind) -> anyhow::Result<Vec<u8>> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    let shell = match kind {
        GenerateKind::Bash => Shell::Bash,
        GenerateKind::Zsh => Shell::Zsh,
        GenerateKind::Fish => Shell::Fish,
        GenerateKind::Elvish => Shell::Elvish,
        GenerateKind::Powershell => Shell::PowerShell,
        GenerateKind::Man => {
            clap_mangen::Man::new(cmd).render(&mut out)?;
            return Ok(out);
        }
    };
    clap_complete::generate(shell, &mut cmd, "retry", &mut out);
    Ok(out)
}

pub fn write(kind: GenerateKind) -> anyhow::Result<()> {
    let text = render(kind)?;
    std::io::stdout().lock().write_all(&text)?;
    Ok(())
}
