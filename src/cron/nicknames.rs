//! CRON's nicknames: one table that the parser reads and that `--help`, the man page,
//! the error messages and docs/schedules.md list (tests here and in `cli::help` hold
//! them to it). Adding one is a row here; CONTRIBUTING's "Adding a schedule form" says
//! what follows.

/// A nickname and the five fields it stands for.
#[derive(Debug)]
pub struct Nickname {
    pub name: &'static str,
    pub fields: &'static str,
    /// Another spelling of the nickname before it (`@midnight` of `@daily`): listed in
    /// parentheses after it.
    pub alias: bool,
}

const fn row(name: &'static str, fields: &'static str) -> Nickname {
    Nickname {
        name,
        fields,
        alias: false,
    }
}

const fn alias(name: &'static str, fields: &'static str) -> Nickname {
    Nickname {
        name,
        fields,
        alias: true,
    }
}

/// The nicknames cronie reads, in the order they are listed; an alias follows its name.
pub const NICKNAMES: &[Nickname] = &[
    row("@hourly", "0 * * * *"),
    row("@daily", "0 0 * * *"),
    alias("@midnight", "0 0 * * *"),
    row("@weekly", "0 0 * * 0"),
    row("@monthly", "0 0 1 * *"),
    row("@yearly", "0 0 1 1 *"),
    alias("@annually", "0 0 1 1 *"),
];

/// The five fields `text` stands for, if it is a nickname (in any case).
pub fn fields(text: &str) -> Option<&'static str> {
    NICKNAMES
        .iter()
        .find(|n| text.eq_ignore_ascii_case(n.name))
        .map(|n| n.fields)
}

/// The list as the help and the docs write it: `@hourly, @daily (@midnight), …`.
pub fn listed() -> String {
    let mut out = String::new();
    for nickname in NICKNAMES {
        if nickname.alias {
            out.push_str(&format!(" ({})", nickname.name));
        } else {
            if !out.is_empty() {
                out.push_str(", ");
            }
            out.push_str(nickname.name);
        }
    }
    out
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// `text` with its backticks gone and its runs of white space one space each.
    pub fn flat(text: &str) -> String {
        let text = text.replace('`', "").replace("\\-", "-");
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn an_alias_stands_for_what_its_name_does() {
        for (i, nickname) in NICKNAMES.iter().enumerate() {
            if nickname.alias {
                assert_eq!(
                    nickname.fields,
                    NICKNAMES[i - 1].fields,
                    "{}",
                    nickname.name
                );
            }
            assert!(
                crate::cron::vixie::parse(nickname.fields).is_ok(),
                "{}",
                nickname.name
            );
        }
        assert_eq!(fields("@Midnight"), Some("0 0 * * *"));
        assert_eq!(fields("@reboot"), None, "no time at all: not a nickname");
    }

    #[test]
    fn the_man_page_the_errors_and_the_docs_list_the_table() {
        let list = listed();
        assert!(
            list.starts_with("@hourly, @daily (@midnight), @weekly"),
            "{list}"
        );
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let read = |path: &str| std::fs::read_to_string(root.join(path)).unwrap();
        // `--help` is checked by the command line's tests (`cli::help`).
        let places = [
            ("man/retry.1", read("man/retry.1")),
            ("docs/schedules.md", read("docs/schedules.md")),
            ("a schedule's error", crate::cron::vixie::cron_accepts()),
        ];
        for (place, text) in places {
            assert!(
                flat(&text).contains(&list),
                "{place} does not list the nicknames as the table does: {list}"
            );
        }
    }
}
