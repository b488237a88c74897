//! Every usage error as one line in one style, clap's own included:
//! `FLAG: what is wrong; what it accepts or what to use instead` (the caller adds
//! `retry: ` and exits 125). clap's multi-line messages, with their `error:` prefix,
//! usage block and "For more information" tail, never reach the user.

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Command, CommandFactory};

use super::Cli;
use super::curl_words::label;

/// The one line for `err`, without the `retry: ` prefix.
pub fn line(err: &clap::Error) -> String {
    let cmd = Cli::command();
    let arg = context(err, ContextKind::InvalidArg).map(|shown| flag(&cmd, &shown));
    let value = context(err, ContextKind::InvalidValue).unwrap_or_default();
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
        (ErrorKind::ArgumentConflict, Some(flag)) => (flag, conflict(err, &cmd)),
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
        (ErrorKind::InvalidUtf8, Some(flag)) => (flag, "not valid UTF-8".into()),
        (_, Some(flag)) => (flag, rendered(err)),
        (_, None) => return rendered(err),
    };
    format!("{flag}: {problem}")
}

/// A value a parser refused, as `what is wrong; what it accepts`, whoever wrote the
/// parser's message (retry's own say both; clap's built-in ones say only what is wrong).
fn validation(flag: &str, value: &str, why: &str) -> String {
    let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
    if why.contains("; ") {
        return why;
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
fn conflict(err: &clap::Error, cmd: &Command) -> String {
    let given = context(err, ContextKind::InvalidArg).map(|shown| flag(cmd, &shown));
    match context(err, ContextKind::PriorArg).map(|shown| flag(cmd, &shown)) {
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

/// "-a/--attempts" for clap's `--attempts <N>`; the operand as `COMMAND|URL`.
fn flag(cmd: &Command, shown: &str) -> String {
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
        Some(arg) if !arg.is_positional() => label(arg),
        _ if word.starts_with('-') => word.to_string(),
        _ => OPERAND.into(),
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
        line(&crate::cli::parse(all).unwrap_err())
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
