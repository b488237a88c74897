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
    if err.kind() == ErrorKind::InvalidUtf8 {
        return invalid_utf8(&cmd, args);
    }
    let value = context(err, ContextKind::InvalidValue).unwrap_or_default();
    let typed = Typed {
        args,
        value: &value,
    };
    let arg = context(err, ContextKind::InvalidArg).map(|shown| flag(&cmd, &shown, &typed));
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

/// "-a/--attempts" for clap's `--attempts <N>`, or the alias the user typed (`-m` for
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
    /// `label` says it): the last word before `--` that names it, one carrying the
    /// refused value first.
    fn alias_of(&self, arg: &Arg) -> Option<String> {
        let names = spellings(arg);
        let words: Vec<Option<&str>> = self.args.iter().skip(1).map(|w| w.to_str()).collect();
        let given: Vec<(String, Option<&str>)> = words
            .iter()
            .take_while(|w| **w != Some("--"))
            .enumerate()
            .filter_map(|(i, word)| {
                let (name, attached) = split_option(word.as_deref()?)?;
                let value = attached.or_else(|| words.get(i + 1).copied().flatten());
                names.contains(&name).then_some((name, value))
            })
            .collect();
        let carrying = given.iter().rev().find(|(_, v)| *v == Some(self.value));
        let (spelled, _) = carrying.or(given.last())?;
        let own = [
            arg.get_short().map(|s| format!("-{s}")),
            arg.get_long().map(|l| format!("--{l}")),
        ];
        (!own.contains(&Some(spelled.clone()))).then(|| spelled.clone())
    }
}

/// Every way to name `arg` on the command line: `--long`, its aliases, `-s` and its
/// short aliases.
fn spellings(arg: &Arg) -> Vec<String> {
    let longs = [
        arg.get_long().into_iter().collect(),
        arg.get_all_aliases().unwrap_or_default(),
    ];
    let shorts = [
        arg.get_short_and_visible_aliases().unwrap_or_default(),
        arg.get_all_short_aliases().unwrap_or_default(),
    ];
    let longs = longs.concat().into_iter().map(|l| format!("--{l}"));
    longs
        .chain(shorts.concat().into_iter().map(|s| format!("-{s}")))
        .collect()
}

/// A word that names an option, as its name (`--long`, `-s`) and the value attached to
/// it (`--long=VALUE`, `-sVALUE`), if any.
fn split_option(word: &str) -> Option<(String, Option<&str>)> {
    if let Some(long) = word.strip_prefix("--").filter(|l| !l.is_empty()) {
        return Some(match long.split_once('=') {
            Some((name, value)) => (format!("--{name}"), Some(value)),
            None => (word.to_string(), None),
        });
    }
    let mut chars = word.strip_prefix('-')?.chars();
    let short = chars.next()?;
    let rest = chars.as_str();
    Some((format!("-{short}"), (!rest.is_empty()).then_some(rest)))
}

/// Which argument held invalid UTF-8: the option whose value it is (attached, or the
/// word before it), else the word's position.
fn invalid_utf8(cmd: &Command, args: &[OsString]) -> String {
    let Some(at) = (1..args.len()).find(|&i| args[i].to_str().is_none()) else {
        return "an argument is not valid UTF-8; give it as UTF-8 text".into();
    };
    let word = args[at].to_string_lossy();
    let taking_value = |name: &str| {
        let found = cmd
            .get_arguments()
            .find(|a| !a.is_positional() && spellings(a).iter().any(|n| n == name));
        found.is_some_and(|a| a.get_action().takes_values())
    };
    let attached =
        split_option(&word).filter(|(name, value)| value.is_some() && taking_value(name));
    let before = || {
        let before = args[at - 1].to_str().filter(|_| at > 1)?;
        split_option(before).filter(|(name, value)| value.is_none() && taking_value(name))
    };
    match attached.or_else(before) {
        Some((flag, _)) => {
            format!("{flag}: the value is not valid UTF-8; this option takes UTF-8 text")
        }
        None => format!(
            "argument {at} ('{}'): not valid UTF-8; give it as UTF-8 text",
            one_line(&word)
        ),
    }
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
    fn a_flag_is_named_as_typed_when_it_is_an_alias() {
        assert!(refusal(&["-m", "abc", "true"]).starts_with("-m: 'abc' is not a duration"));
        assert!(refusal(&["-mabc", "true"]).starts_with("-m: 'abc'"));
        assert!(refusal(&["-t", "x", "true"]).starts_with("-t/--timeout: 'x'"));
        assert!(refusal(&["--timeout=x", "true"]).starts_with("-t/--timeout: 'x'"));
    }

    #[test]
    fn invalid_utf8_names_its_option_or_its_position() {
        use crate::sys::os_string_from_bytes;
        let line_for = |args: &[&[u8]]| {
            let mut words = vec![OsString::from("retry")];
            words.extend(args.iter().map(|a| os_string_from_bytes(a)));
            line(&crate::cli::parse(words.clone()).unwrap_err(), &words)
        };
        let bad: &[u8] = b"\xff";
        let option = "the value is not valid UTF-8";
        assert!(line_for(&[b"--delay", bad, b"true"]).starts_with(&format!("--delay: {option}")));
        assert!(line_for(&[b"--delay=\xff", b"true"]).starts_with(&format!("--delay: {option}")));
        assert!(line_for(&[b"-t\xff", b"true"]).starts_with(&format!("-t: {option}")));
        assert_eq!(
            invalid_utf8(
                &Cli::command(),
                &["retry".into(), "-v".into(), os_string_from_bytes(bad)]
            ),
            "argument 2 ('\u{fffd}'): not valid UTF-8; give it as UTF-8 text"
        );
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
