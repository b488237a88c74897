//! `--crontab FILE`: the file read into jobs, each line once. The file is read whole
//! and checked before anything runs ([`mod@file`]: a regular file, at most 1 MiB, no NUL, job
//! lines in UTF-8); each line is cut into its parts ([`mod@line`]), its options checked by the
//! same command-line definition and configuration as `--schedule` once per distinct set
//! of options ([`check`]), its CRON read in the job's zone, and its words sized against
//! what `exec` allows. A bad line is one error naming `FILE:LINE`, and nothing runs.
//! Settings lines (`NAME=VALUE`) set the jobs' environment below them, as cronie and
//! supercronic do, except those that are `retry`'s own: `CRON_TZ`, `SHELL`, `MAILTO`,
//! `RANDOM_DELAY` and `USER`.

mod check;
mod file;
mod line;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::schedule::{Job, Line};
use crate::cron;
use crate::domain::LogConfig;

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
    pub jobs: Vec<Job>,
    /// What the file asks that `retry` does otherwise, said once at start.
    pub warnings: Vec<String>,
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

/// What the settings lines above a job line have set.
struct Settings {
    env: Vec<(String, String)>,
    zone: Option<String>,
    shell: [String; 2],
    /// `RANDOM_DELAY`'s minutes, as a `--splay` that the line's and the command line's win over.
    random_delay: Option<u32>,
}

/// Reads and checks `path`; `base` is the command line's options for every job.
pub fn read(path: &Path, base: &[String], log: &LogConfig) -> anyhow::Result<Crontab> {
    let shown = path.display().to_string();
    let file = file::read(path, &shown)?;
    let mut settings = Settings {
        env: Vec::new(),
        zone: None,
        shell: crate::sys::SHELL.map(String::from),
        random_delay: None,
    };
    let mut warnings = Vec::new();
    let mut checker = check::Checker::new(log);
    let mut jobs: Vec<Job> = Vec::new();
    let mut names: HashMap<String, usize> = HashMap::new();
    for (number, text) in file.lines() {
        let at = |why: String| anyhow::anyhow!("{shown}:{number}: {why}");
        if let Some((name, value)) = line::setting(text) {
            if let Some(warning) = settings.set(name, value).map_err(at)? {
                warnings.push(format!("{shown}:{number}: {warning}"));
            }
            continue;
        }
        let job = job(text, number, base, &settings, &mut checker).map_err(at)?;
        let name = job.schedule.job.clone();
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
        warnings,
    })
}

impl Settings {
    /// Takes a `NAME=VALUE` line; a setting of retry's own that asks for something retry
    /// does otherwise gives a warning.
    fn set(&mut self, name: String, value: String) -> Result<Option<String>, String> {
        match name.as_str() {
            "CRON_TZ" => {
                cron::parse_zone(&value).map_err(|e| format!("CRON_TZ: {e}"))?;
                self.zone = Some(value);
            }
            "SHELL" => {
                self.shell = shell(&value)?;
                // cronie sets it in the jobs' environment too.
                self.env.retain(|(n, _)| n != "SHELL");
                self.env.push((name, value));
            }
            "MAILTO" if value.is_empty() => {}
            "MAILTO" => {
                return Ok(Some(format!(
                    "MAILTO={value}: retry sends no mail; an --on-give-up hook tells someone of a failed slot (docs/schedules.md shows one)"
                )));
            }
            "RANDOM_DELAY" => {
                let minutes: u32 = value.parse().ok().filter(|m| *m <= 1440).ok_or_else(|| {
                    format!("RANDOM_DELAY={value}: expected whole minutes from 0 to 1440")
                })?;
                self.random_delay = (minutes > 0).then_some(minutes);
            }
            "USER" => {
                return Ok(Some(format!(
                    "USER={value}: retry runs every job as the user it runs as; USER changes no user"
                )));
            }
            _ => {
                self.env.retain(|(n, _)| *n != name);
                self.env.push((name, value));
            }
        }
        Ok(None)
    }
}

/// `SHELL=PATH`: an absolute path to an executable file, checked at every read.
fn shell(path: &str) -> Result<[String; 2], String> {
    if !crate::sys::SHELL_LINES {
        return Err(format!(
            "SHELL={path}: Windows runs each line with cmd /c; remove the SHELL line"
        ));
    }
    if !Path::new(path).is_absolute() {
        return Err(format!(
            "SHELL={path}: expected an absolute path, such as /bin/bash"
        ));
    }
    if !crate::sys::is_executable(Path::new(path)) {
        return Err(format!(
            "SHELL={path}: not an executable file here; give the path of an installed shell"
        ));
    }
    Ok([path.to_string(), "-c".to_string()])
}

/// One job line, checked by the configuration as a command line would be.
fn job(
    text: &str,
    number: usize,
    base: &[String],
    settings: &Settings,
    checker: &mut check::Checker<'_>,
) -> Result<Job, String> {
    let parts = line::job(text)?;
    let mut options: Vec<String> = Vec::new();
    if let Some(minutes) = settings.random_delay {
        options.extend(["--splay".into(), format!("{minutes}m")]);
    }
    options.extend(base.iter().cloned());
    if let Some(zone) = &settings.zone {
        options.extend(["--tz".into(), zone.clone()]);
    }
    // A line's own name is checked on its own: most lines differ by it alone, and the
    // rest of their options are checked once for all of them.
    let (name, own) = line::named(&parts.own)?;
    options.extend(own);
    let mut schedule = checker.options(&options, &settings.shell)?;
    let expression = if parts.calendar {
        cron::Expression::calendar(&parts.cron).map_err(|e| format!("@calendar: {e}"))?
    } else {
        cron::Expression::parse(&parts.cron).map_err(|e| format!("CRON: {e}"))?
    };
    schedule.cron = cron::CronSchedule::new(expression, schedule.cron.zone.clone());
    let never = schedule.cron.next_after(jiff::Timestamp::now()).is_none();
    if never && !schedule.cron.is_reboot() {
        return Err(format!(
            "CRON '{}' names no future time; check the day and month fields",
            parts.cron
        ));
    }
    if let Some(name) = name {
        schedule.job = name;
    } else if !check::named(&options) {
        schedule.job = line::default_name(&parts.command, text);
    }
    schedule
        .state
        .check_key(&format!("{}@2000-01-01T00:00:00Z", schedule.job))
        .map_err(|e| format!("--job: {e}"))?;
    options.extend(["--job".into(), schedule.job.clone()]);
    options.extend(["--schedule".into(), parts.cron.clone()]);
    let line = Line {
        number,
        own: parts.own,
        command: parts.command,
        shell: settings.shell.clone(),
        random_delay: settings.random_delay,
    };
    let mut args: Vec<OsString> = options.into_iter().map(OsString::from).collect();
    args.push("--".into());
    args.extend(line.shell.iter().map(OsString::from));
    args.push(line.command.clone().into());
    checker.sizes(&args, &settings.env, &line)?;
    Ok(Job {
        schedule,
        args,
        env: settings.env.clone(),
        line: Some(line),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scheduler_s_own_options_are_not_handed_to_the_jobs() {
        let argv: Vec<OsString> = ["--crontab", "f", "-a", "3", "--grace=5s", "--dry-run", "-q"]
            .map(OsString::from)
            .to_vec();
        assert_eq!(job_options(&argv), ["-a", "3", "-q"]);
    }
}
