//! One line of a crontab, cut into its parts as cronie and supercronic cut it: a
//! `NAME=VALUE` setting, or a job line's CRON words, its own options (up to the first
//! `--`, split as a shell splits words) and its COMMAND. What the parts mean together
//! (options checked, CRON read in the job's zone) is the crontab's.

use sha2::{Digest, Sha256};

/// Options that make no sense on one line: they belong to the whole scheduler.
const NOT_PER_LINE: [&str; 5] = [
    "--crontab",
    "--schedule",
    "--once",
    "--metrics-listen",
    "--grace",
];

/// A job line's parts.
#[derive(Debug, PartialEq, Eq)]
pub struct JobLine {
    /// The schedule as `--schedule` takes it: CRON, or `@calendar`'s EXPR unquoted.
    pub cron: String,
    /// Whether it is a systemd calendar expression (`@calendar 'EXPR'`).
    pub calendar: bool,
    pub own: Vec<String>,
    pub command: String,
}

/// `NAME=VALUE`, quotes around VALUE removed; `None` for a line that is no setting.
pub fn setting(line: &str) -> Option<(String, String)> {
    let (name, value) = line.split_once('=')?;
    let name = name.trim();
    let mut chars = name.chars();
    let first = chars.next()?;
    let valid = (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return None;
    }
    let value = value.trim();
    let unquoted = ['"', '\'']
        .iter()
        .find_map(|q| value.strip_prefix(*q).and_then(|v| v.strip_suffix(*q)))
        .unwrap_or(value);
    Some((name.to_string(), unquoted.to_string()))
}

/// A job line cut into CRON, its own options and COMMAND.
pub fn job(line: &str) -> Result<JobLine, String> {
    let (cron, calendar, rest) = match calendar_line(line)? {
        Some((expr, rest)) => (expr, true, rest),
        None => {
            let (cron_words, rest) = words(line, cron_words(line));
            (cron_words.join(" "), false, rest)
        }
    };
    if rest.is_empty() {
        return Err(format!("no command after CRON '{cron}'"));
    }
    let (own, command) = if rest.starts_with('-') {
        own_options(rest)?
    } else {
        (Vec::new(), rest.to_string())
    };
    if command.trim().is_empty() {
        return Err("no command after the line's options and --".into());
    }
    Ok(JobLine {
        cron,
        calendar,
        own,
        command,
    })
}

/// `@calendar 'EXPR' REST`: EXPR, quoted as a shell quotes it (so the line stays one
/// CRON, one schedule), and the rest of the line; `None` for another line.
fn calendar_line(line: &str) -> Result<Option<(String, &str)>, String> {
    let Some(after) = line
        .get(..9)
        .filter(|head| head.eq_ignore_ascii_case("@calendar"))
        .map(|head| &line[head.len()..])
    else {
        return Ok(None);
    };
    let quoted = after.trim_start();
    let quote = quoted.chars().next().filter(|c| matches!(c, '\'' | '"'));
    let end = quote.and_then(|q| quoted[1..].find(q).map(|at| at + 1));
    match (quote, end) {
        (Some(_), Some(end)) => Ok(Some((quoted[1..end].to_string(), quoted[end + 1..].trim_start()))),
        _ => Err("@calendar: quote the expression as a shell quotes a word: @calendar 'Mon..Fri 09:00' COMMAND".into()),
    }
}

/// A word that can be a CRON field (numbers, `*`, ranges, steps, lists, names, `L`,
/// `W` and `#`), as opposed to the command's first word.
fn field_like(word: &str) -> bool {
    const NAMES: [&str; 19] = [
        "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC", "SUN",
        "MON", "TUE", "WED", "THU", "FRI", "SAT",
    ];
    word.split([',', '-', '/']).all(|part| {
        let upper = part.to_ascii_uppercase();
        let name = upper
            .trim_end_matches('L')
            .split('#')
            .next()
            .unwrap_or_default();
        !part.is_empty()
            && (part
                .chars()
                .all(|c| c.is_ascii_digit() || "*?#LW".contains(c))
                || NAMES.contains(&upper.as_str())
                || NAMES.contains(&name))
    })
}

/// The first `n` words of `line` and the text after them.
fn words(line: &str, n: usize) -> (Vec<&str>, &str) {
    let mut rest = line.trim_start();
    let mut out = Vec::new();
    while out.len() < n && !rest.is_empty() {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        out.push(&rest[..end]);
        rest = rest[end..].trim_start();
    }
    (out, rest)
}

/// How many words CRON takes at the start of `line`.
fn cron_words(line: &str) -> usize {
    let (first, _) = words(line, 7);
    if let Some(nick) = first.first().filter(|w| w.starts_with('@')) {
        return if nick.eq_ignore_ascii_case("@every") {
            2
        } else {
            1
        };
    }
    match first.iter().take_while(|w| field_like(w)).count() {
        7 => 7,
        6 => 6,
        _ => 5,
    }
}

/// The line's own options (up to the first `--`, split as a shell splits words) and
/// the command after them.
fn own_options(rest: &str) -> Result<(Vec<String>, String), String> {
    let mut offset = 0;
    let mut split = None;
    for word in rest.split_whitespace() {
        let at = offset + rest[offset..].find(word).unwrap_or(0);
        if word == "--" {
            split = Some(at);
            break;
        }
        offset = at + word.len();
    }
    let Some(at) = split else {
        return Err(
            "the line's options (it starts with -) must end with -- before the command".into(),
        );
    };
    let options = shlex::split(&rest[..at])
        .ok_or_else(|| "the line's options have an unclosed quote".to_string())?;
    for word in &options {
        let refused = NOT_PER_LINE.iter().find(|name| {
            word == *name || word.strip_prefix(*name).is_some_and(|r| r.starts_with('='))
        });
        if let Some(name) = refused {
            return Err(format!(
                "{name}: not an option of one line; it belongs to retry --crontab as a whole"
            ));
        }
    }
    Ok((options, rest[at + 2..].trim().to_string()))
}

/// A line's own `--job NAME` (checked as the command line checks it) and its other
/// options.
pub fn named(own: &[String]) -> Result<(Option<String>, Vec<String>), String> {
    let mut name = None;
    let mut rest = Vec::new();
    let mut words = own.iter();
    while let Some(word) = words.next() {
        let value = match word.strip_prefix("--job") {
            Some("") => words.next().cloned(),
            Some(v) if v.starts_with('=') => Some(v[1..].to_string()),
            _ => {
                rest.push(word.clone());
                continue;
            }
        };
        let value = value.ok_or("--job: a value is required (NAME)")?;
        name = Some(crate::cli::job_name_value(&value).map_err(|e| format!("--job: {e}"))?);
    }
    Ok((name, rest))
}

/// The command's first word's base name, `-`, and the first 8 hex digits of the
/// SHA-256 of the whole line (as `--schedule` names jobs).
pub fn default_name(command: &str, line: &str) -> String {
    let first = command.split_whitespace().next().unwrap_or("job");
    let base: String = first
        .rsplit('/')
        .next()
        .unwrap_or(first)
        .chars()
        .filter(|c| !matches!(c, '@' | '/') && !c.is_control())
        .take(60)
        .collect();
    let digest = Sha256::digest(line.as_bytes());
    let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{hex}", if base.is_empty() { "job" } else { &base })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_lose_their_quotes_and_job_lines_are_not_settings() {
        assert_eq!(
            setting("GREETING = \"hello world\""),
            Some(("GREETING".into(), "hello world".into()))
        );
        assert_eq!(setting("A='b=c'"), Some(("A".into(), "b=c".into())));
        assert_eq!(setting("*/5 * * * * X=1 ./run"), None);
        assert_eq!(setting("0 3 * * * a=b"), None);
    }

    #[test]
    fn cron_takes_five_or_seven_words_or_a_nickname() {
        assert_eq!(cron_words("0 3 * * * ./backup"), 5);
        assert_eq!(cron_words("*/5 * * * * * * ./poll"), 7);
        assert_eq!(cron_words("0 9 * JAN MON-FRI echo"), 5);
        assert_eq!(cron_words("0 9 * * MON#2 echo"), 5);
        assert_eq!(cron_words("0 9 * * FRIL echo"), 5);
        assert_eq!(cron_words("@every 10s ./poll"), 2);
        assert_eq!(cron_words("@daily ./x"), 1);
        assert_eq!(cron_words("0 0 * * * 2027 ./x"), 6);
    }

    #[test]
    fn options_end_at_the_first_double_dash_and_split_as_a_shell_does() {
        let line = job("*/5 * * * * -a 3 --on-give-up 'echo gave up' -- ./x -- y").unwrap();
        assert_eq!(line.cron, "*/5 * * * *");
        assert_eq!(line.own, ["-a", "3", "--on-give-up", "echo gave up"]);
        assert_eq!(line.command, "./x -- y");
        assert!(
            job("@daily -a 3 ./x")
                .unwrap_err()
                .contains("must end with --")
        );
        assert!(job("@daily -a '3 -- ./x").unwrap_err().contains("quote"));
        assert!(
            job("@daily")
                .unwrap_err()
                .contains("no command after CRON '@daily'")
        );
        for bad in [
            "--schedule=@daily",
            "--once k",
            "--grace 1s",
            "--metrics-listen :1",
            "--crontab f",
        ] {
            let err = job(&format!("@daily {bad} -- ./x")).unwrap_err();
            assert!(err.contains("not an option of one line"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_calendar_line_takes_its_quoted_expression_as_its_schedule() {
        let line = job("@calendar 'Mon..Fri 09:00 Europe/Berlin' -a 2 -- ./report.sh").unwrap();
        assert_eq!(line.cron, "Mon..Fri 09:00 Europe/Berlin");
        assert!(line.calendar);
        assert_eq!(
            (line.own, line.command),
            (
                vec!["-a".to_string(), "2".into()],
                "./report.sh".to_string()
            )
        );
        let plain = job("@CALENDAR \"hourly\" ./tick").unwrap();
        assert_eq!(
            (plain.cron.as_str(), plain.command.as_str()),
            ("hourly", "./tick")
        );
        assert!(
            job("@calendar hourly ./tick")
                .unwrap_err()
                .contains("quote the expression")
        );
        assert!(
            job("@calendar 'hourly")
                .unwrap_err()
                .contains("quote the expression")
        );
        assert!(!job("@daily ./x").unwrap().calendar);
    }

    #[test]
    fn default_names_are_the_first_word_and_a_hash_of_the_line() {
        let a = default_name("/usr/bin/backup --full", "0 3 * * * /usr/bin/backup --full");
        let b = default_name("/usr/bin/backup --full", "0 4 * * * /usr/bin/backup --full");
        assert!(
            a.starts_with("backup-") && a.len() == "backup-".len() + 8,
            "{a}"
        );
        assert_ne!(a, b);
    }
}
