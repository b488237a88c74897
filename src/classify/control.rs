//! Rule 0 of command mode: a directive the command wrote to the file named by
//! `RETRY_CONTROL`, checked before every other rule, since the command knows
//! its own failure best (docs/internals.md, "The command's own word"). The
//! directives are a table; the file itself is the command executor's.

use std::time::Duration;

use crate::domain::{Class, Verdict, WaitHint};
use crate::parse;

/// What the command said about its attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Directive {
    /// Transient, and wait at least this long, as for Retry-After.
    RetryAfter(Duration, String),
    Retry,
    Stop,
    Success,
}

/// One directive: the words the command writes and what they make of the attempt.
pub struct DirectiveRow {
    pub words: &'static str,
    pub class: Class,
    pub why: &'static str,
}

/// The directives, in the order `--dry-run` shows them.
pub static DIRECTIVES: [DirectiveRow; 4] = [
    DirectiveRow {
        words: "retry-after DUR",
        class: Class::Transient,
        why: "wait at least DUR, spread as for Retry-After, up to --max-retry-after",
    },
    DirectiveRow {
        words: "retry",
        class: Class::Transient,
        why: "the command says another attempt could succeed",
    },
    DirectiveRow {
        words: "stop",
        class: Class::Permanent,
        why: "the command says no attempt can succeed",
    },
    DirectiveRow {
        words: "success",
        class: Class::Success,
        why: "exit 0 whatever the command's status",
    },
];

/// What the directives' expected form is, for warnings.
pub const EXPECTED: &str = "one of: retry-after DUR, retry, stop, success";

/// Longest file that is read: a directive is one short line.
pub const MAX_LEN: usize = 256;

impl Directive {
    /// Reads the file's text: `Ok(None)` when the command wrote nothing.
    pub fn parse(text: &str) -> Result<Option<Directive>, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let directive = match words.as_slice() {
            [] => return Ok(None),
            ["retry"] => Directive::Retry,
            ["stop"] => Directive::Stop,
            ["success"] => Directive::Success,
            ["retry-after", dur] => {
                let wait = parse::duration(dur).map_err(|e| format!("retry-after {dur}: {e}"))?;
                Directive::RetryAfter(wait, format!("retry-after {dur}"))
            }
            _ => return Err(format!("{:?} is not a directive", text.trim())),
        };
        Ok(Some(directive))
    }

    fn row(&self) -> &'static DirectiveRow {
        let i = match self {
            Directive::RetryAfter(..) => 0,
            Directive::Retry => 1,
            Directive::Stop => 2,
            Directive::Success => 3,
        };
        &DIRECTIVES[i]
    }

    pub fn verdict(&self) -> Verdict {
        let said = match self {
            Directive::RetryAfter(_, text) => text.as_str(),
            _ => self.row().words,
        };
        Verdict::new(
            self.row().class,
            format!("the command wrote {said:?} to RETRY_CONTROL"),
        )
    }

    /// The wait the command asked for, as the engine obeys a server's.
    pub fn wait_hint(&self) -> Option<WaitHint> {
        match self {
            Directive::RetryAfter(wait, text) => Some(WaitHint {
                wait: *wait,
                source: format!("RETRY_CONTROL: {text}"),
                asked_by: "the command",
            }),
            _ => None,
        }
    }
}

impl DirectiveRow {
    /// `RETRY_CONTROL says "stop": permanent (...)`, for `--dry-run`.
    pub fn describe(&self) -> String {
        format!(
            "RETRY_CONTROL says {:?}: {} ({})",
            self.words,
            self.class.as_str(),
            self.why
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_directive_and_its_class() {
        let class = |text: &str| Directive::parse(text).unwrap().unwrap().verdict().class;
        assert_eq!(class("retry\n"), Class::Transient);
        assert_eq!(class("  stop "), Class::Permanent);
        assert_eq!(class("success"), Class::Success);
        assert_eq!(class("retry-after 2s"), Class::Transient);
        let wait = Directive::parse("retry-after 1.5\n").unwrap().unwrap();
        assert_eq!(
            wait.wait_hint().map(|h| (h.wait, h.asked_by)),
            Some((Duration::from_millis(1500), "the command"))
        );
        assert_eq!(Directive::parse(" \n").unwrap(), None);
    }

    #[test]
    fn anything_else_is_refused() {
        for text in [
            "again",
            "retry stop",
            "retry-after soon",
            "retry-after",
            "STOP",
        ] {
            assert!(Directive::parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn every_row_describes_itself() {
        for row in &DIRECTIVES {
            assert!(row.describe().contains(row.class.as_str()));
        }
    }
}
