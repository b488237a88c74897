//! Every usage error as one line in one style, clap's own included:
//! `FLAG: what is wrong; what it accepts or what to use instead` (the caller adds
//! `retry: ` and exits 125). clap's multi-line messages, with their `error:` prefix,
//! usage block and "For more information" tail, never reach the user.

use std::ffi::OsString;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Arg, Command, CommandFactory};

use super::Cli;
use super::curl_words::label;
use crate::domain::one_line;

/// The one line for `err`, without the `retry: ` prefix; `args` are the words it
/// was parsed from (the program's name first), which say how the flag was typed.
pub fn line(err: &clap::Error, args: &[OsString]) -> String {
    let cmd = Cli::command();
    let value = context(err, ContextKind::InvalidValue).unwrap_or_default();
    let typed = Typed {
        args,
        value: &value,
    };
    let arg = context(err, ContextKind::InvalidArg).map(|shown| flag(&cmd, &shown, &typed));
    if err.kind() == ErrorKind::InvalidUtf8 {
        return invalid_utf8(&cmd, args);
    }
    let (flag, problem) = match (err.kind(), arg) {
        (ErrorKind::ValueValidation, Some(flag)) => {
            let why = std::error::Error::source(err).map_or(String::new(), |e| e.to_string());
            let problem = validation(&flag, &value, &why);
            (flag, problem)
        }
        (ErrorKind::InvalidValue, Some(flag)) if value.is_empty() => (
            flag,
            "needs a value; retry --help says what it takes".into(),
        ),
        (ErrorKind::InvalidValue, Some(flag)) => {
            let valid = context(err, ContextKind::ValidValue).unwrap_or_default();
            (
                flag,
                format!("'{value}' is not accepted; expected one of {valid}"),
            )
        }
        (ErrorKind::ArgumentConflict, Some(flag)) => (flag, conflict(err, &cmd, &typed)),
        (ErrorKind::MissingRequiredArgument, Some(flag)) if flag == OPERAND => (
            flag,
            "missing; give a command (retry [OPTIONS] [--] COMMAND [ARG]...) or a URL".into(),
        ),
        (ErrorKind::MissingRequiredArgument, Some(flag)) => (
            flag,
            "missing, and another option given needs it; retry --help says which".into(),
        ),
        (ErrorKind::UnknownArgument, Some(flag)) => (
            flag,
            "unknown option; retry --help lists the options".into(),
        ),
        (_, Some(flag)) => (flag, rendered(err)),
        (_, None) => return rendered(err),
    };
    format!("{flag}: {problem}")
}

/// A value a parser refused, as `what is wrong; what it accepts`, whoever wrote the
/// parser's message (retry's own say both; clap's built-in ones say only what is wrong).
fn validation(flag: &str, value: &str, why: &str) -> String {
    let why = why.trim();
    if why.contains("; ") {
        return why.to_string();
    }
    let shown = if value.is_empty() {
        "an empty value".to_string()
    } else {
        format!("'{value}'")
    };
    if why.starts_with("expected ") {
        format!("{shown} is not accepted; {why}")
    } else {
        format!("{shown} is not accepted ({why}); retry --help says what {flag} takes")
    }
}

/// Two options that exclude each other, or one given twice.
fn conflict(err: &clap::Error, cmd: &Command, typed: &Typed<'_>) -> String {
    let given = context(err, ContextKind::InvalidArg).map(|shown| flag(cmd, &shown, typed));
    match context(err, ContextKind::PriorArg).map(|shown| flag(cmd, &shown, typed)) {
        Some(prior) if Some(&prior) != given.as_ref() => {
            format!("cannot be used with {prior}; give one of them")
        }
        _ => "given more than once; give it once".into(),
    }
}

/// A context value as text: a list joined with commas.
fn context(err: &clap::Error, kind: ContextKind) -> Option<String> {
    match err.get(kind)? {
        ContextValue::String(s) => Some(s.clone()),
        ContextValue::Strings(list) => Some(list.join(", ")),
        ContextValue::StyledStr(s) => Some(s.to_string()),
        ContextValue::StyledStrs(list) => Some(
            list.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        ),
        ContextValue::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// "-a/--attempts" for clap's "--attempts <N>", or the alias the user typed (`-m` for
/// `-t/--timeout`); the operand as `COMMAND|URL`.
fn flag(cmd: &Command, shown: &str, typed: &Typed<'_>) -> String {
    let word = shown.split([' ', '=']).next().unwrap_or(shown);
    let word = word.trim_end_matches('.');
    let found = cmd.get_arguments().find(|a| {
        word.strip_prefix("--")
            .is_some_and(|long| a.get_long() == Some(long))
            || word
                .strip_prefix('-')
                .is_some_and(|s| s.chars().count() == 1 && a.get_short() == s.chars().next())
    });
    match found {
        Some(arg) if !arg.is_positional() => typed.alias_of(arg).unwrap_or_else(|| label(arg)),
        _ if word.starts_with('-') => word.to_string(),
        _ => OPERAND.into(),
    }
}

/// The words of the command line, and the value clap refused, if any.
struct Typed<'a> {
    args: &'a [OsString],
    value: &'a str,
}

impl Typed<'_> {
    /// The alias of `arg` the user typed (its own short or long name is said as
    /// `label` says it): the last such word before `--`, one carrying the refused
    /// value first.
    fn alias_of(&self, arg: &Arg) -> Option<String> {
        let own = [
            arg.get_short().map(|s| format!("-{s}")),
            arg.get_long().map(|l| format!("--{l}")),
        ];
        let given = self.given(arg);
        let carrying = given
            .iter()
            .rev()
            .find(|(_, value)| *value == Some(self.value));
        let (spelled, _) = carrying.or(given.last())?;
        (!own.contains(&Some(spelled.clone()))).then(|| spelled.clone())
    }

    /// Each word before `--` that names `arg`, with the value it carries or the next word.
    fn given(&self, arg: &Arg) -> Vec<(String, Option<&str>)> {
        let shorts: Vec<char> = arg.get_short_and_visible_aliases().unwrap_or_default();
        let shorts = [shorts, arg.get_all_short_aliases().unwrap_or_default()].concat();
        let longs = [
            arg.get_long().into_iter().collect(),
            arg.get_all_aliases().unwrap_or_default(),
        ]
        .concat();
        let words: Vec<Option<&str>> = self.args.iter().skip(1).map(|w| w.to_str()).collect();
        let mut found = Vec::new();
        for (i, word) in words.iter().enumerate() {
            let Some(word) = *word else { continue };
            if word == "--" {
                break;
            }
            let next = words.get(i + 1).copied().flatten();
            if let Some(long) = word.strip_prefix("--") {
                let (name, attached) = match long.split_once('=') {
                    Some((name, value)) => (name, Some(value)),
                    None => (long, next),
                };
                if longs.contains(&name) {
                    found.push((format!("--{name}"), attached));
                }
            } else if let Some(short) = word.strip_prefix('-') {
                let mut chars = short.chars();
                if let Some(c) = chars.next().filter(|c| shorts.contains(c)) {
                    let rest = chars.as_str();
                    found.push((
                        format!("-{c}"),
                        if rest.is_empty() { next } else { Some(rest) },
                    ));
                }
            }
        }
        found
    }
}

/// Which argument held invalid UTF-8: the option whose value it is (attached, or the
/// word before it), else the word's position.
fn invalid_utf8(cmd: &Command, args: &[OsString]) -> String {
    let Some(at) = (1..args.len()).find(|&i| args[i].to_str().is_none()) else {
        return "an argument is not valid UTF-8; give it as UTF-8 text".into();
    };
    let word = args[at].to_string_lossy();
    let before = || {
        let word = args[at - 1].to_str().filter(|_| at > 1)?;
        option_named(cmd, word).filter(|(_, attached)| !attached)
    };
    match option_named(cmd, &word)
        .filter(|(_, attached)| *attached)
        .or_else(before)
    {
        Some((flag, _)) => {
            format!("{flag}: the value is not valid UTF-8; this option takes UTF-8 text")
        }
        None => format!(
            "argument {at} ('{}'): not valid UTF-8; give it as UTF-8 text",
            one_line(&word)
        ),
    }
}

/// The option that `word` names as typed (`--long`, `--long=VALUE`, `-s`, `-sVALUE`),
/// if it takes a value, and whether the value is in the word.
fn option_named(cmd: &Command, word: &str) -> Option<(String, bool)> {
    let (name, attached) = match word.strip_prefix("--") {
        Some(long) => match long.split_once('=') {
            Some((name, _)) => (format!("--{name}"), true),
            None => (word.to_string(), false),
        },
        None => {
            let short = word.strip_prefix('-')?.chars().next()?;
            (format!("-{short}"), word.len() > 1 + short.len_utf8())
        }
    };
    let names = |a: &Arg| {
        let longs = [
            a.get_long().into_iter().collect(),
            a.get_all_aliases().unwrap_or_default(),
        ];
        let shorts = [
            a.get_short_and_visible_aliases().unwrap_or_default(),
            a.get_all_short_aliases().unwrap_or_default(),
        ];
        let longs = longs.concat().into_iter().map(|l| format!("--{l}"));
        let shorts = shorts.concat().into_iter().map(|s| format!("-{s}"));
        longs.chain(shorts).any(|n| n == name)
    };
    cmd.get_arguments()
        .find(|a| !a.is_positional() && names(a))
        .filter(|a| a.get_action().takes_values())
        .map(|_| (name, attached))
}

/// How the operand is named in messages.
const OPERAND: &str = "COMMAND|URL";

/// clap's own text, for errors without context: its first line, without `error: `.
fn rendered(err: &clap::Error) -> String {
    let text = err.to_string();
    let first = text.lines().next().unwrap_or_default();
    first
        .strip_prefix("error: ")
        .unwrap_or(first)
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(args: &[&str]) -> String {
        let mut all = vec!["retry"];
        all.extend_from_slice(args);
        let words: Vec<OsString> = all.iter().map(OsString::from).collect();
        line(&crate::cli::parse(all).unwrap_err(), &words)
    }

    #[test]
    fn clap_errors_become_one_line_naming_the_flag() {
        assert_eq!(
            refusal(&["--delay", "soon", "true"]),
            "--delay: 'soon' is not a duration; expected 250ms, 2s, 1m30s or a number of seconds such as 1.5"
        );
        assert!(refusal(&["-a"]).starts_with("-a/--attempts: needs a value"));
        assert_eq!(
            refusal(&["--backoff", "sideways", "true"])
                .split(';')
                .next()
                .unwrap(),
            "--backoff: 'sideways' is not accepted; expected one of exponential, linear, constant"
                .split(';')
                .next()
                .unwrap()
        );
        assert_eq!(
            refusal(&["-q", "-v", "true"]),
            "-q/--quiet: cannot be used with -v/--verbose; give one of them"
        );
        assert_eq!(
            refusal(&["--delay", "1s", "--delay", "2s", "true"]),
            "--delay: given more than once; give it once"
        );
        assert!(refusal(&[]).starts_with("COMMAND|URL: missing"));
    }

    #[test]
    fn no_line_keeps_clap_s_prefix_or_tail() {
        for args in [
            &["--delay", "x", "true"][..],
            &["--jitter", "lots", "true"],
            &["--no-such", "true"],
            &["-d", "x", "--json", "{}", "http://h/"],
        ] {
            let text = refusal(args);
            assert!(!text.contains("error:"), "{args:?}: {text}");
            assert!(!text.contains('\n'), "{args:?}: {text}");
            assert!(!text.contains("For more information"), "{args:?}: {text}");
        }
    }
}
