//! `--crontab FILE`: the file read into jobs. Each job line is checked by the same
//! command-line definition and configuration as `--schedule` (the command line's
//! options, then the line's own, which override them); a bad line is one error
//! naming `FILE:LINE`, and nothing runs.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{Config, ScheduleConfig};
use crate::cli;
use crate::cron;
use crate::domain::LogConfig;

/// Options that make no sense on one line: they belong to the whole scheduler.
const NOT_PER_LINE: [&str; 5] = [
    "--crontab",
    "--schedule",
    "--once",
    "--metrics-listen",
    "--grace",
];
/// Options of `retry --crontab` that the scheduler keeps to itself (with whether
/// they take a value), not handed to the jobs' slot runs.
const SCHEDULER_ONLY: [(&str, bool); 5] = [
    ("--crontab", true),
    ("--job-output", true),
    ("--grace", true),
    ("--metrics-listen", true),
    ("--dry-run", false),
];

/// A crontab, checked.
pub struct Crontab {
    pub path: PathBuf,
    pub jobs: Vec<CrontabJob>,
}

/// One job line.
pub struct CrontabJob {
    /// The line's number (from 1).
    pub line: usize,
    /// The options of its slot runs, before `--`: the command line's, then the line's.
    pub options: Vec<String>,
    /// The line's own options, for the dry run.
    pub own: Vec<String>,
    /// COMMAND, run by the shell (`/bin/sh -c`; `cmd /c` on Windows).
    pub command: String,
    /// `NAME=VALUE` lines above it.
    pub env: Vec<(String, String)>,
    pub config: Config,
}

impl CrontabJob {
    pub fn schedule(&self) -> &ScheduleConfig {
        self.config
            .schedule
            .as_ref()
            .expect("a crontab job is built with --schedule")
    }

    /// The argument words after the options: the command, run by the shell.
    pub fn target(&self) -> [String; 4] {
        let [shell, flag] = crate::sys::SHELL;
        ["--", shell, flag, &self.command].map(String::from)
    }
}

/// The command line's words that the jobs take: all but the scheduler's own options.
pub fn job_options(argv: &[OsString]) -> Vec<String> {
    let mut out = Vec::new();
    let mut words = argv.iter().map(|w| w.to_string_lossy().into_owned());
    while let Some(word) = words.next() {
        let own = SCHEDULER_ONLY.iter().find(|(name, _)| {
            word == *name || word.strip_prefix(name).is_some_and(|r| r.starts_with('='))
        });
        match own {
            Some((name, true)) if word == *name => {
                words.next();
            }
            Some(_) => {}
            None => out.push(word),
        }
    }
    out
}

/// Reads and checks `path`; `base` is the command line's options for every job.
pub fn read(path: &Path, base: &[String], log: &LogConfig) -> anyhow::Result<Crontab> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("--crontab {shown}: cannot read it: {e}"))?;
    let mut env: Vec<(String, String)> = Vec::new();
    let mut zone: Option<String> = None;
    let mut jobs: Vec<CrontabJob> = Vec::new();
    let mut names: HashMap<String, usize> = HashMap::new();
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        let at = |why: String| anyhow::anyhow!("{shown}:{number}: {why}");
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some((name, value)) = env_line(line) {
            if name == "CRON_TZ" {
                cron::parse_zone(&value).map_err(|e| at(format!("CRON_TZ: {e}")))?;
                zone = Some(value);
            } else {
                env.retain(|(n, _)| *n != name);
                env.push((name, value));
            }
            continue;
        }
        let job = job_line(line, base, zone.as_deref(), log).map_err(at)?;
        let job = CrontabJob {
            line: number,
            env: env.clone(),
            ..job
        };
        let name = job.schedule().job.clone();
        if let Some(first) = names.insert(name.clone(), number) {
            return Err(at(format!(
                "job {name} is also the job of line {first}; give one of them its own --job NAME"
            )));
        }
        jobs.push(job);
    }
    if jobs.is_empty() {
        anyhow::bail!("--crontab {shown}: no job line (CRON COMMAND) in it");
    }
    Ok(Crontab {
        path: path.to_path_buf(),
        jobs,
    })
}

/// `NAME=VALUE`, quotes around VALUE removed.
fn env_line(line: &str) -> Option<(String, String)> {
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

/// A word that can be a CRON field (numbers, `*`, ranges, steps, lists, names, croner's
/// `L`, `W` and `#`), as opposed to the command's first word.
fn field_like(word: &str) -> bool {
    const NAMES: [&str; 19] = [
        "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC", "SUN",
        "MON", "TUE", "WED", "THU", "FRI", "SAT",
    ];
    word.split([',', '-', '/']).all(|part| {
        let upper = part.to_ascii_uppercase();
        !part.is_empty()
            && (part
                .chars()
                .all(|c| c.is_ascii_digit() || "*?#LW".contains(c))
                || NAMES.contains(&upper.as_str()))
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
fn cron_words(line: &str) -> Result<usize, String> {
    let (first, _) = words(line, 7);
    if let Some(nick) = first.first().filter(|w| w.starts_with('@')) {
        return Ok(if nick.eq_ignore_ascii_case("@every") {
            2
        } else {
            1
        });
    }
    match first.iter().take_while(|w| field_like(w)).count() {
        7 => Ok(7),
        6 => Ok(6),
        _ => Ok(5),
    }
}

/// One job line, checked by the configuration as a command line would be.
fn job_line(
    line: &str,
    base: &[String],
    zone: Option<&str>,
    log: &LogConfig,
) -> Result<CrontabJob, String> {
    let (cron_words, rest) = words(line, cron_words(line)?);
    let cron = cron_words.join(" ");
    let expression = cron::Expression::parse(&cron).map_err(|e| format!("CRON: {e}"))?;
    drop(expression);
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
    let mut options: Vec<String> = base.to_vec();
    if let Some(zone) = zone {
        options.extend(["--tz".into(), zone.into()]);
    }
    options.extend(["--job".into(), default_name(&command, line)]);
    options.extend(own.iter().cloned());
    options.extend(["--schedule".into(), cron.clone()]);
    let mut argv: Vec<OsString> = vec!["retry".into()];
    argv.extend(options.iter().map(OsString::from));
    argv.extend(["--", crate::sys::SHELL[0], crate::sys::SHELL[1]].map(OsString::from));
    argv.push(command.clone().into());
    let cli = cli::parse_overriding(argv.clone()).map_err(|e| cli::usage::line(&e, &argv))?;
    let config = Config::from_cli(cli, log).map_err(|e| format!("{e:#}"))?;
    let never = config
        .schedule
        .as_ref()
        .is_some_and(|plan| plan.cron.next_after(jiff::Timestamp::now()).is_none());
    if never {
        return Err(format!(
            "CRON '{cron}' names no future time; check the day and month fields"
        ));
    }
    Ok(CrontabJob {
        line: 0,
        options,
        own,
        command,
        env: Vec::new(),
        config,
    })
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

/// The command's first word's base name, `-`, and the first 8 hex digits of the
/// SHA-256 of the whole line (as `--schedule` names jobs).
fn default_name(command: &str, line: &str) -> String {
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
    fn env_lines_lose_their_quotes_and_cron_lines_are_not_env_lines() {
        assert_eq!(
            env_line("GREETING = \"hello world\""),
            Some(("GREETING".into(), "hello world".into()))
        );
        assert_eq!(env_line("A='b=c'"), Some(("A".into(), "b=c".into())));
        assert_eq!(env_line("*/5 * * * * X=1 ./run"), None);
        assert_eq!(env_line("0 3 * * * a=b"), None);
    }

    #[test]
    fn cron_takes_five_or_seven_words_or_a_nickname() {
        assert_eq!(cron_words("0 3 * * * ./backup"), Ok(5));
        assert_eq!(cron_words("*/5 * * * * * * ./poll"), Ok(7));
        assert_eq!(cron_words("0 9 * JAN MON-FRI echo"), Ok(5));
        assert_eq!(cron_words("@every 10s ./poll"), Ok(2));
        assert_eq!(cron_words("@daily ./x"), Ok(1));
        assert_eq!(cron_words("0 0 * * * 2027 ./x"), Ok(6));
    }

    #[test]
    fn options_end_at_the_first_double_dash_and_split_as_a_shell_does() {
        let (own, command) = own_options("-a 3 --on-give-up 'echo gave up' -- ./x -- y").unwrap();
        assert_eq!(own, ["-a", "3", "--on-give-up", "echo gave up"]);
        assert_eq!(command, "./x -- y");
        assert!(
            own_options("-a 3 ./x")
                .unwrap_err()
                .contains("must end with --")
        );
        assert!(own_options("-a '3 -- ./x").unwrap_err().contains("quote"));
        for bad in [
            "--schedule=@daily",
            "--once k",
            "--grace 1s",
            "--metrics-listen :1",
            "--crontab f",
        ] {
            let err = own_options(&format!("{bad} -- ./x")).unwrap_err();
            assert!(err.contains("not an option of one line"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_scheduler_s_own_options_are_not_handed_to_the_jobs() {
        let argv: Vec<OsString> = ["--crontab", "f", "-a", "3", "--grace=5s", "--dry-run", "-q"]
            .map(OsString::from)
            .to_vec();
        assert_eq!(job_options(&argv), ["-a", "3", "-q"]);
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
