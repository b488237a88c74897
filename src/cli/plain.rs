//! `retry -- COMMAND [ARG]...` and `retry COMMAND [ARG]...`, the command line without an
//! option, read without clap (a URL is left to it): building clap's command of 150
//! options and parsing its 56 defaults cost more instructions than everything else
//! retry does before its first spawn. Every option is then at `Cli::default()`, built
//! from the constants clap's `default_value`s name ([`args`](super::args)); the test
//! beside it holds the two parses equal.

use std::ffi::OsString;

use super::curl_words::target_mode;
use super::{Cli, Mode};

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
    Some(Cli {
        target: target.to_vec(),
        ..Cli::default()
    })
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
