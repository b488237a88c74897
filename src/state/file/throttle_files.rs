//! File state: `STATE/budgets/NAME.json` and `STATE/circuits/NAME.json`, each a
//! small JSON record read and rewritten in place while holding an flock on
//! `.NAME.lock` beside it (readers take it shared). A record is padded to one
//! 256-byte write at offset 0, which the kernel and the disk apply whole, so an
//! update costs microseconds (a rename over the old file costs ~200 µs on ext4, and
//! far more on a busy disk). Only a file whose one name is the record's is read or
//! written: one that has another name too (a hard link planted in the state
//! directory) counts as fresh state and loses that name to a new file at the next
//! update, and the file it linked to stays as it was. Records
//! are not fsynced: a machine crash may lose the last seconds of updates, and a
//! record it left unreadable reads as fresh state (with one warning) and is
//! rewritten by the next update. The lock file is only ever locked. The directories
//! and files are reached through [`StateDir`] (checked, never through a link); the
//! flocks are taken without blocking, tried again within the call's bound and
//! [`LOCK_WAIT`].

use std::collections::HashSet;
use std::fs::File;
use std::io::Read;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::dir::{Access, StateDir};
use super::key::escape_key;
use crate::domain::{BudgetConfig, CircuitConfig, Interrupted, Stop};
use crate::report;
use crate::state::rules::{
    Admission, Answer, CircuitState, FleetStore, LATEST_MS, Spent, check_tokens, now_ms,
};
use crate::wait::{self, Bound, Ended};

/// Longest wait for a state file's flock, whatever the call's bound: a holder keeps
/// it for microseconds, so one held this long is stuck (or hostile), and the
/// budget or circuit fails open rather than hold the run.
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// What a budget file holds.
#[derive(Serialize, Deserialize)]
struct BudgetFile {
    tokens: f64,
    size: u32,
    /// When a held run's retry was last let through (`--throttled wait`), in
    /// milliseconds since the epoch on the store's clock; absent before the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_retry_ms: Option<u64>,
}

/// A record in a state file, and what makes one valid.
pub trait Record: Serialize + DeserializeOwned {
    /// Why the value cannot be used, if it cannot.
    fn check(&self) -> Result<(), String>;
}

impl Record for BudgetFile {
    fn check(&self) -> Result<(), String> {
        check_tokens(self.tokens)?;
        match self.last_retry_ms {
            Some(ms) if ms > LATEST_MS => Err(format!("last_retry_ms {ms} is past year 9999")),
            _ => Ok(()),
        }
    }
}

impl Record for CircuitState {
    fn check(&self) -> Result<(), String> {
        self.validate()
    }
}

/// Reads a record: `Ok(None)` for an empty file (fresh state), `Err(why)` for one
/// that cannot be read as valid. Total: every input is one of the three.
pub fn parse_record<T: Record>(text: &[u8]) -> Result<Option<T>, String> {
    if text.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let value: T = serde_json::from_slice(text).map_err(|e| e.to_string())?;
    value.check()?;
    Ok(Some(value))
}

/// A budget file's tokens (`Ok(None)`: an empty file, fresh state).
pub fn parse_budget(text: &[u8]) -> Result<Option<f64>, String> {
    Ok(parse_record::<BudgetFile>(text)?.map(|b| b.tokens))
}

/// A circuit file's failures and open-until time (`Ok(None)`: fresh state).
pub fn parse_circuit(text: &[u8]) -> Result<Option<(u32, Option<u64>)>, String> {
    Ok(parse_record::<CircuitState>(text)?.map(|c| (c.failures, c.open_until_ms)))
}

/// What a record was warned about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Warning {
    Unreadable,
    Linked,
}

/// The two kinds of state file.
#[derive(Clone, Copy)]
enum Kind {
    Budget,
    Circuit,
}

impl Kind {
    fn dir(self) -> &'static str {
        match self {
            Kind::Budget => "budgets",
            Kind::Circuit => "circuits",
        }
    }

    /// What an unreadable record counts as.
    fn fresh(self) -> &'static str {
        match self {
            Kind::Budget => "a full budget",
            Kind::Circuit => "a closed circuit",
        }
    }
}

/// Budgets and circuits in a state directory.
pub struct FileFleet {
    root: PathBuf,
    /// `None` when reading a state directory that lacks them (fresh state).
    budgets: Option<StateDir>,
    circuits: Option<StateDir>,
    /// Records already warned about: one warning of each kind per record and run.
    warned: HashSet<(PathBuf, Warning)>,
}

impl FileFleet {
    /// Opens the state directory, creating it and its two folders (mode 0700), and
    /// checks them.
    pub fn open(root: PathBuf) -> anyhow::Result<FileFleet> {
        let dir = StateDir::open(&root)?;
        let budgets = dir.subdir(Kind::Budget.dir())?;
        let circuits = dir.subdir(Kind::Circuit.dir())?;
        budgets.probe().with_context(|| {
            format!(
                "--state: cannot create a file in {}",
                budgets.path().display()
            )
        })?;
        Ok(FileFleet {
            root,
            budgets: Some(budgets),
            circuits: Some(circuits),
            warned: HashSet::new(),
        })
    }

    /// The state directory as it is, for reading only (nothing is created).
    pub fn at(root: PathBuf) -> anyhow::Result<FileFleet> {
        let dir = StateDir::open_existing(&root)?;
        let sub = |kind: Kind| match &dir {
            Some(dir) => dir.existing_subdir(kind.dir()),
            None => Ok(None),
        };
        Ok(FileFleet {
            budgets: sub(Kind::Budget)?,
            circuits: sub(Kind::Circuit)?,
            root,
            warned: HashSet::new(),
        })
    }

    fn dir(&self, kind: Kind) -> Option<&StateDir> {
        match kind {
            Kind::Budget => self.budgets.as_ref(),
            Kind::Circuit => self.circuits.as_ref(),
        }
    }

    /// Refuses a link (or anything but a regular file) where the record of `name` or
    /// its lock should be: checked before the first attempt, so it is exit 125.
    fn check_name(&self, kind: Kind, name: &str) -> anyhow::Result<()> {
        let Some(dir) = self.dir(kind) else {
            return Ok(());
        };
        dir.refuse_odd_entry(&record_name(name))?;
        dir.refuse_odd_entry(&lock_name(name))
    }

    /// Reads, changes and rewrites one state file under its lock. `change` gets the
    /// record (`None`: fresh state) and the record's file, whose time is the store's
    /// clock.
    fn update<T: Record, R>(
        &mut self,
        kind: Kind,
        name: &str,
        bound: &Bound,
        change: impl FnOnce(Option<T>, &File) -> anyhow::Result<(T, R)>,
    ) -> anyhow::Result<R> {
        let dir = self
            .dir(kind)
            .context("the state directory is opened for reading only")?;
        let file_name = record_name(name);
        let path = dir.join(&file_name);
        let _held = lock_beside(dir, name, true, bound)?;
        // A record made just now is fresh state; one found empty was cut short.
        let existed = dir.identity(&file_name)?.is_some();
        let (mut file, relinked) = own_record(dir, &file_name)?;
        let stored = if relinked {
            self.warn_linked(kind, path.clone());
            None
        } else if !existed {
            None
        } else {
            let mut text = Vec::with_capacity(RECORD);
            file.read_to_end(&mut text)
                .with_context(|| format!("cannot read {}", path.display()))?;
            self.parse(kind, path.clone(), &text)
        };
        let (value, result) = change(stored, &file)?;
        write_record(&file, &serde_json::to_vec(&value)?)
            .with_context(|| format!("--state: cannot write {}", path.display()))?;
        Ok(result)
    }

    /// Says `message` once per record, kind of warning and run.
    fn warn_once(&mut self, path: PathBuf, warning: Warning, message: String) {
        if self.warned.insert((path, warning)) {
            report::notice(&message);
        }
    }

    /// A record that has another name too (a hard link) is not read: it counts as fresh
    /// state, and the next update gives the record a file of its own.
    fn warn_linked(&mut self, kind: Kind, path: PathBuf) {
        let message = format!(
            "warning: {} had another name (a hard link): counting it as {}, and a new \
             record takes its place; the file it named is left as it was",
            path.display(),
            kind.fresh()
        );
        self.warn_once(path, Warning::Linked, message);
    }

    /// Reads one state file under a shared lock, so no update is seen half done.
    fn read<T: Record>(
        &mut self,
        kind: Kind,
        name: &str,
        bound: &Bound,
    ) -> anyhow::Result<Option<T>> {
        let Some(dir) = self.dir(kind) else {
            return Ok(None);
        };
        let file_name = record_name(name);
        if dir.identity(&file_name)?.is_none() {
            return Ok(None);
        }
        let _held = lock_beside(dir, name, false, bound)?;
        let path = dir.join(&file_name);
        let Some(mut file) = dir.open_file(&file_name, Access::Read)? else {
            return Ok(None);
        };
        if has_other_names(&file, &path)? {
            self.warn_linked(kind, path);
            return Ok(None);
        }
        let mut text = Vec::with_capacity(RECORD);
        file.read_to_end(&mut text)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Ok(self.parse(kind, path, &text))
    }

    /// A record's value; one that cannot be read is fresh state, with one warning,
    /// so that it cannot wedge every later run. Every record read here was there
    /// before, so an empty one was cut short (a full disk, a crash) and is warned of too.
    fn parse<T: Record>(&mut self, kind: Kind, path: PathBuf, text: &[u8]) -> Option<T> {
        let read = match parse_record(text) {
            Ok(None) => Err("it is empty".to_string()),
            read => read,
        };
        match read {
            Ok(value) => value,
            Err(why) => {
                let message = format!(
                    "warning: {} cannot be read ({why}); counting it as {} until it is rewritten",
                    path.display(),
                    kind.fresh()
                );
                self.warn_once(path, Warning::Unreadable, message);
                None
            }
        }
    }
}

/// `NAME.json`, NAME escaped as a `--once` key is.
fn record_name(name: &str) -> String {
    format!("{}.json", escape_key(name))
}

/// `.NAME.lock`, the file whose flock guards `NAME.json`.
fn lock_name(name: &str) -> String {
    format!(".{}.lock", escape_key(name))
}

/// Whether the file opened as `path` has another name too (a hard link).
fn has_other_names(file: &File, path: &std::path::Path) -> anyhow::Result<bool> {
    let links =
        crate::sys::link_count(file).with_context(|| format!("cannot stat {}", path.display()))?;
    Ok(links > 1)
}

/// Opens the record `name` in `dir` to rewrite it, created if missing; true when it
/// had another name too (a hard link): that file is not retry's to write, so the
/// record's name is removed and a new file made in its place.
fn own_record(dir: &StateDir, name: &str) -> anyhow::Result<(File, bool)> {
    let file = dir
        .open_file(name, Access::Update)?
        .context("a created file is there")?;
    if !has_other_names(&file, &dir.join(name))? {
        return Ok((file, false));
    }
    dir.remove(name)
        .with_context(|| format!("cannot remove {}", dir.join(name).display()))?;
    let fresh = dir
        .open_file(name, Access::New)?
        .context("a created file is there")?;
    Ok((fresh, true))
}

/// Size of a record on disk: the JSON, padded with spaces, then a newline.
const RECORD: usize = 256;

/// Writes `json` as one padded record at offset 0 (one write, whole or not at all).
fn write_record(file: &File, json: &[u8]) -> std::io::Result<()> {
    if json.len() >= RECORD {
        return Err(std::io::Error::other("state record too long"));
    }
    let mut record = json.to_vec();
    record.resize(RECORD - 1, b' ');
    record.push(b'\n');
    crate::sys::write_all_at(file, &record, 0)?;
    if file.metadata()?.len() > RECORD as u64 {
        file.set_len(RECORD as u64)?;
    }
    Ok(())
}

/// Takes the lock (shared or `exclusive`, without blocking) on `.NAME.lock` in `dir` (created if
/// missing, never removed), trying again until `bound` or [`LOCK_WAIT`] ends.
fn lock_beside(
    dir: &StateDir,
    name: &str,
    exclusive: bool,
    bound: &Bound,
) -> anyhow::Result<crate::sys::Locked> {
    let lock = lock_name(name);
    let path = dir.join(&lock);
    let mut file = dir.open_file(&lock, Access::Update)?;
    let limit = bound.earlier(Instant::now().checked_add(LOCK_WAIT));
    let tried = wait::retry_until(&limit, || {
        let Some(unlocked) = file.take() else {
            return Err(std::io::Error::from(std::io::ErrorKind::NotFound));
        };
        match crate::sys::try_lock(unlocked, exclusive) {
            Ok(Ok(locked)) => Ok(Some(locked)),
            Ok(Err(unlocked)) => {
                file = Some(unlocked);
                Ok(None)
            }
            Err(e) => Err(e),
        }
    });
    match tried {
        Ok(Ok(locked)) => Ok(locked),
        Ok(Err(e)) => Err(e).with_context(|| format!("cannot flock {}", path.display())),
        Err(Ended::Stopped(Stop::Signal(sig))) => Err(Interrupted(sig).into()),
        Err(Ended::Stopped(Stop::LockLost(why))) => Err(anyhow::anyhow!(why)),
        Err(Ended::TimedOut) if bound.check().is_err() => Err(anyhow::anyhow!(
            "--max-time ran out while waiting for the flock on {}",
            path.display()
        )),
        Err(Ended::TimedOut) => Err(anyhow::anyhow!(
            "another process held the flock on {} for {} (it is held for microseconds)",
            path.display(),
            crate::domain::human(LOCK_WAIT)
        )),
    }
}

fn fresh_tokens(stored: Option<&BudgetFile>, budget: &BudgetConfig) -> f64 {
    stored.map_or(f64::from(budget.size), |b| {
        b.tokens.min(f64::from(budget.size))
    })
}

/// Now on the store's clock: the time the kernel stamps on `record` (a record of the
/// state directory, its own only name, whose flock the caller holds), so runs on hosts
/// that share the directory over a network file system agree on it as they agree on
/// file times.
fn store_now_ms(record: &File) -> anyhow::Result<u64> {
    crate::sys::stamp_now_ms(record).context("cannot set the time of a record")
}

impl FleetStore for FileFleet {
    fn describe(&self) -> String {
        format!("state directory {}", self.root.display())
    }

    fn check(
        &mut self,
        budget: Option<&BudgetConfig>,
        circuit: Option<&CircuitConfig>,
    ) -> anyhow::Result<()> {
        if let Some(b) = budget {
            self.check_name(Kind::Budget, &b.name)?;
        }
        if let Some(c) = circuit {
            self.check_name(Kind::Circuit, &c.name)?;
        }
        Ok(())
    }

    fn spend(
        &mut self,
        budget: &BudgetConfig,
        attempt: Spent,
        bound: &Bound,
    ) -> anyhow::Result<f64> {
        self.update(
            Kind::Budget,
            &budget.name,
            bound,
            |stored: Option<BudgetFile>, _| {
                let tokens = attempt.tokens_after(fresh_tokens(stored.as_ref(), budget), budget);
                let last_retry_ms = stored.and_then(|b| b.last_retry_ms);
                let record = BudgetFile {
                    tokens,
                    size: budget.size,
                    last_retry_ms,
                };
                Ok((record, tokens))
            },
        )
    }

    fn ask(
        &mut self,
        budget: &BudgetConfig,
        probe_after: Duration,
        bound: &Bound,
    ) -> anyhow::Result<Answer> {
        self.update(
            Kind::Budget,
            &budget.name,
            bound,
            |stored: Option<BudgetFile>, record| {
                let tokens = fresh_tokens(stored.as_ref(), budget);
                let last = stored.and_then(|b| b.last_retry_ms);
                let (answer, last_retry_ms) = crate::state::rules::ask(
                    tokens,
                    budget.size,
                    last,
                    store_now_ms(record)?,
                    probe_after,
                );
                let record = BudgetFile {
                    tokens,
                    size: budget.size,
                    last_retry_ms,
                };
                Ok((record, answer))
            },
        )
    }

    fn tokens(&mut self, budget: &BudgetConfig, bound: &Bound) -> anyhow::Result<f64> {
        let stored: Option<BudgetFile> = self.read(Kind::Budget, &budget.name, bound)?;
        Ok(fresh_tokens(stored.as_ref(), budget))
    }

    fn admit(&mut self, circuit: &CircuitConfig, bound: &Bound) -> anyhow::Result<Admission> {
        // A closed circuit is read without writing: most runs only look.
        let state: Option<CircuitState> = self.read(Kind::Circuit, &circuit.name, bound)?;
        if state.is_none_or(|mut s| s.admit(now_ms(), circuit) == Admission::Closed) {
            return Ok(Admission::Closed);
        }
        self.update(
            Kind::Circuit,
            &circuit.name,
            bound,
            |stored: Option<CircuitState>, _| {
                let mut state = stored.unwrap_or_default();
                let admission = state.admit(now_ms(), circuit);
                Ok((state, admission))
            },
        )
    }

    fn record_run(
        &mut self,
        circuit: &CircuitConfig,
        success: bool,
        bound: &Bound,
    ) -> anyhow::Result<CircuitState> {
        self.update(
            Kind::Circuit,
            &circuit.name,
            bound,
            |stored: Option<CircuitState>, _| {
                let mut state = stored.unwrap_or_default();
                state.record(success, now_ms(), circuit);
                Ok((state, state))
            },
        )
    }

    fn circuit(&mut self, circuit: &CircuitConfig, bound: &Bound) -> anyhow::Result<CircuitState> {
        Ok(self
            .read(Kind::Circuit, &circuit.name, bound)?
            .unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ExitStatus;
    use std::time::Duration;

    /// A budget of `--throttled exit`.
    fn budget(name: &str, size: u32, ratio: f64) -> BudgetConfig {
        BudgetConfig {
            name: name.into(),
            size,
            ratio,
            probe_after: None,
        }
    }

    /// One attempt (not a probe) counted in `budget`: the tokens after it.
    fn spend(store: &mut FileFleet, budget: &BudgetConfig, success: bool) -> f64 {
        let attempt = Spent {
            success,
            probe: false,
        };
        store
            .spend(budget, attempt, &Bound::signals_only())
            .unwrap()
    }

    #[test]
    fn a_budget_file_keeps_its_tokens_between_runs() {
        let dir = tempfile::tempdir().unwrap();
        let budget = budget("api/v1", 10, 0.5);
        let mut store = FileFleet::open(dir.path().to_path_buf()).unwrap();
        assert_eq!(store.tokens(&budget, &Bound::signals_only()).unwrap(), 10.0);
        assert_eq!(spend(&mut store, &budget, false), 9.0);
        let mut again = FileFleet::open(dir.path().to_path_buf()).unwrap();
        assert_eq!(spend(&mut again, &budget, true), 9.5);
        assert!(dir.path().join("budgets/api%2Fv1.json").exists());
    }

    #[test]
    fn a_torn_state_file_reads_as_fresh_and_is_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let budget = budget("b", 10, 0.1);
        let mut store = FileFleet::open(dir.path().to_path_buf()).unwrap();
        std::fs::write(dir.path().join("budgets/b.json"), b"{\"tok").unwrap();
        assert_eq!(store.tokens(&budget, &Bound::signals_only()).unwrap(), 10.0);
        assert_eq!(spend(&mut store, &budget, false), 9.0);
        assert_eq!(store.tokens(&budget, &Bound::signals_only()).unwrap(), 9.0);
    }

    #[test]
    fn a_hard_link_in_place_of_a_record_keeps_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let budget = budget("b", 10, 0.5);
        let mut store = FileFleet::open(dir.path().join("state")).unwrap();
        let target = dir.path().join("precious");
        std::fs::write(&target, "mine\n").unwrap();
        let record = dir.path().join("state/budgets/b.json");
        std::fs::hard_link(&target, &record).unwrap();
        assert_eq!(spend(&mut store, &budget, false), 9.0, "counted from fresh");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine\n");
        assert_eq!(store.tokens(&budget, &Bound::signals_only()).unwrap(), 9.0);
        let links = |path| crate::sys::link_count(&std::fs::File::open(path).unwrap()).unwrap();
        assert_eq!(links(&record), 1);
        assert_eq!(links(&target), 1);
    }

    #[test]
    fn a_circuit_file_opens_and_is_read_without_change() {
        let dir = tempfile::tempdir().unwrap();
        let c = CircuitConfig {
            name: "db".into(),
            failures: 2,
            cooldown: Duration::from_secs(60),
            exit: ExitStatus::new(75),
        };
        let mut store = FileFleet::open(dir.path().to_path_buf()).unwrap();
        store.record_run(&c, false, &Bound::signals_only()).unwrap();
        assert_eq!(
            store.admit(&c, &Bound::signals_only()).unwrap(),
            Admission::Closed
        );
        store.record_run(&c, false, &Bound::signals_only()).unwrap();
        assert!(matches!(
            store.admit(&c, &Bound::signals_only()).unwrap(),
            Admission::Open { failures: 2, .. }
        ));
        let before = store.circuit(&c, &Bound::signals_only()).unwrap();
        assert!(matches!(
            store.admit(&c, &Bound::signals_only()).unwrap(),
            Admission::Open { .. }
        ));
        assert_eq!(store.circuit(&c, &Bound::signals_only()).unwrap(), before);
    }

    #[test]
    fn a_spent_budget_file_lets_one_held_retry_through_per_interval() {
        let dir = tempfile::tempdir().unwrap();
        let budget = BudgetConfig {
            name: "api".into(),
            size: 2,
            ratio: 0.5,
            probe_after: Some(Duration::from_millis(300)),
        };
        let every = Duration::from_millis(300);
        let mut store = FileFleet::open(dir.path().to_path_buf()).unwrap();
        let mut other = FileFleet::open(dir.path().to_path_buf()).unwrap();
        let fail = Spent {
            success: false,
            probe: false,
        };
        assert_eq!(
            store.spend(&budget, fail, &Bound::signals_only()).unwrap(),
            1.0
        );
        // No retry recorded yet: the first asker probes, the second is refused.
        assert_eq!(
            store.ask(&budget, every, &Bound::signals_only()).unwrap(),
            Answer::Probe
        );
        assert_eq!(
            other.ask(&budget, every, &Bound::signals_only()).unwrap(),
            Answer::Refused(1.0)
        );
        // The probe fails: no token taken.
        let probe_failed = Spent {
            success: false,
            probe: true,
        };
        assert_eq!(
            store
                .spend(&budget, probe_failed, &Bound::signals_only())
                .unwrap(),
            1.0
        );
        std::thread::sleep(Duration::from_millis(320));
        assert_eq!(
            other.ask(&budget, every, &Bound::signals_only()).unwrap(),
            Answer::Probe
        );
        // It succeeds: max(T + R, N/2 + R) = 1.5, and everyone may retry.
        let probe_won = Spent {
            success: true,
            probe: true,
        };
        assert_eq!(
            other
                .spend(&budget, probe_won, &Bound::signals_only())
                .unwrap(),
            1.5
        );
        assert_eq!(
            store.ask(&budget, every, &Bound::signals_only()).unwrap(),
            Answer::Allowed
        );
        let text = std::fs::read_to_string(dir.path().join("budgets/api.json")).unwrap();
        assert!(text.contains("\"last_retry_ms\":"), "{text}");
    }

    #[test]
    fn a_budget_file_of_an_earlier_version_reads_and_one_past_year_9999_is_fresh() {
        assert_eq!(parse_budget(br#"{"tokens":3.0,"size":10}"#), Ok(Some(3.0)));
        let far = format!(
            r#"{{"tokens":3.0,"size":10,"last_retry_ms":{}}}"#,
            super::LATEST_MS + 1
        );
        assert!(parse_budget(far.as_bytes()).is_err());
    }

    /// What one update costs here: run by bench/storm.sh, which reads the `cost` lines.
    #[test]
    #[ignore = "a measurement, run by bench/storm.sh"]
    fn update_cost() {
        let rounds: usize = std::env::var("ROUNDS").map_or(2000, |r| r.parse().unwrap());
        let dir = std::env::var_os("COST_DIR").map_or_else(
            || tempfile::tempdir().unwrap().keep(),
            std::path::PathBuf::from,
        );
        let mut store = FileFleet::open(dir).unwrap();
        let budget = budget("cost", 1_000_000, 0.1);
        let circuit = CircuitConfig {
            name: "cost".into(),
            failures: u32::MAX,
            cooldown: Duration::from_secs(60),
            exit: ExitStatus::new(75),
        };
        let time = |what: &str, op: &mut dyn FnMut(usize)| {
            let mut samples: Vec<Duration> = (0..rounds)
                .map(|i| {
                    let start = std::time::Instant::now();
                    op(i);
                    start.elapsed()
                })
                .collect();
            samples.sort();
            let mean = samples.iter().sum::<Duration>() / u32::try_from(rounds).unwrap();
            let p99 = samples[rounds * 99 / 100];
            println!("cost\t{what}\t{}\t{}", mean.as_micros(), p99.as_micros());
        };
        time("budget update (spend or earn)", &mut |i| {
            spend(&mut store, &budget, i % 2 == 0);
        });
        let mut store = FileFleet::open(store.root.clone()).unwrap();
        time("circuit update (a finished run)", &mut |i| {
            store
                .record_run(&circuit, i % 2 == 0, &Bound::signals_only())
                .unwrap();
        });
        let mut store = FileFleet::open(store.root.clone()).unwrap();
        time("circuit admission (closed: a read)", &mut |_| {
            store.admit(&circuit, &Bound::signals_only()).unwrap();
        });
    }
}
