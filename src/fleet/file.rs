//! File state: `STATE/budgets/NAME.json` and `STATE/circuits/NAME.json`, each read,
//! changed and replaced while holding an flock on `.NAME.lock` beside it. A
//! replacement is a temporary file renamed over the old one, so a process that dies
//! loses at most its own update and readers never see half a file. It is not
//! fsynced (that would cost most of the millisecond an update may take): a machine
//! crash may lose the last seconds of updates, and a file it left unreadable reads
//! as fresh state and is rewritten by the next update.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::Context;
use nix::fcntl::{Flock, FlockArg};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{Admission, CircuitState, FleetStore, now_ms, tokens_after};
use crate::config::fleet::{BudgetConfig, CircuitConfig};
use crate::jobs::file::escape_key;

/// What a budget file holds.
#[derive(Serialize, Deserialize)]
struct BudgetFile {
    tokens: f64,
    size: u32,
}

/// Budgets and circuits in a state directory.
pub struct FileFleet {
    dir: PathBuf,
}

impl FileFleet {
    /// Opens the state directory, creating it and its two folders (mode 0700).
    pub fn open(dir: PathBuf) -> anyhow::Result<FileFleet> {
        for sub in ["budgets", "circuits"] {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir.join(sub))
                .with_context(|| {
                    format!(
                        "--state: cannot create directory {}",
                        dir.join(sub).display()
                    )
                })?;
        }
        crate::report::probe_dir(&dir.join("budgets"))
            .with_context(|| format!("--state: cannot create a file in {}", dir.display()))?;
        Ok(FileFleet { dir })
    }

    /// The state directory as it is, for reading only.
    pub fn at(dir: PathBuf) -> FileFleet {
        FileFleet { dir }
    }

    fn path(&self, kind: &str, name: &str) -> PathBuf {
        self.dir
            .join(kind)
            .join(format!("{}.json", escape_key(name)))
    }

    /// Reads, changes and replaces one state file under its lock.
    fn update<T, R>(
        &self,
        kind: &str,
        name: &str,
        change: impl FnOnce(Option<T>) -> (T, R),
    ) -> anyhow::Result<R>
    where
        T: Serialize + DeserializeOwned,
    {
        let path = self.path(kind, name);
        let _held = lock_beside(&path)?;
        let (value, result) = change(read(&path)?);
        let mut text = serde_json::to_vec(&value)?;
        text.push(b'\n');
        replace(&path, &text)?;
        Ok(result)
    }
}

/// Takes the flock on `.NAME.lock` beside `path` (created if missing, never removed).
fn lock_beside(path: &Path) -> anyhow::Result<Flock<File>> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("state");
    let lock_path = path.with_file_name(format!(".{}.lock", name.trim_end_matches(".json")));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&lock_path)
        .with_context(|| format!("cannot open {}", lock_path.display()))?;
    Flock::lock(file, FlockArg::LockExclusive)
        .map_err(|(_, errno)| std::io::Error::from(errno))
        .with_context(|| format!("cannot flock {}", lock_path.display()))
}

/// The file's value; a missing file is fresh state, and so is one a crash left
/// unparseable (with a note), so that it cannot wedge every later run.
fn read<T: DeserializeOwned>(path: &Path) -> anyhow::Result<Option<T>> {
    match std::fs::read(path) {
        Ok(text) => match serde_json::from_slice(&text) {
            Ok(value) => Ok(Some(value)),
            Err(e) => {
                crate::report::verbose(
                    1,
                    &format!("{} is unreadable ({e}); starting it afresh", path.display()),
                );
                Ok(None)
            }
        },
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Writes a temporary file and renames it over `path`: readers see the old or the
/// new contents, whole.
fn replace(path: &Path, text: &[u8]) -> anyhow::Result<()> {
    let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(text)?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.with_context(|| format!("cannot write {}", path.display()))
}

fn fresh_tokens(stored: Option<BudgetFile>, budget: &BudgetConfig) -> f64 {
    stored.map_or(f64::from(budget.size), |b| {
        b.tokens.min(f64::from(budget.size))
    })
}

impl FleetStore for FileFleet {
    fn describe(&self) -> String {
        format!("state directory {}", self.dir.display())
    }

    fn spend(&mut self, budget: &BudgetConfig, success: bool) -> anyhow::Result<f64> {
        self.update("budgets", &budget.name, |stored: Option<BudgetFile>| {
            let tokens = tokens_after(
                fresh_tokens(stored, budget),
                budget.size,
                budget.ratio,
                success,
            );
            (
                BudgetFile {
                    tokens,
                    size: budget.size,
                },
                tokens,
            )
        })
    }

    fn tokens(&mut self, budget: &BudgetConfig) -> anyhow::Result<f64> {
        let stored = read(&self.path("budgets", &budget.name))?;
        Ok(fresh_tokens(stored, budget))
    }

    fn admit(&mut self, circuit: &CircuitConfig) -> anyhow::Result<Admission> {
        let path = self.path("circuits", &circuit.name);
        // A closed circuit is read without writing: most runs only look.
        let state: Option<CircuitState> = read(&path)?;
        if state.is_none_or(|mut s| s.admit(now_ms(), circuit) == Admission::Closed) {
            return Ok(Admission::Closed);
        }
        self.update("circuits", &circuit.name, |stored: Option<CircuitState>| {
            let mut state = stored.unwrap_or_default();
            let admission = state.admit(now_ms(), circuit);
            (state, admission)
        })
    }

    fn record_run(
        &mut self,
        circuit: &CircuitConfig,
        success: bool,
    ) -> anyhow::Result<CircuitState> {
        self.update("circuits", &circuit.name, |stored: Option<CircuitState>| {
            let mut state = stored.unwrap_or_default();
            state.record(success, now_ms(), circuit);
            (state, state)
        })
    }

    fn circuit(&mut self, circuit: &CircuitConfig) -> anyhow::Result<CircuitState> {
        Ok(read(&self.path("circuits", &circuit.name))?.unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_budget_file_keeps_its_tokens_between_runs() {
        let dir = tempfile::tempdir().unwrap();
        let budget = BudgetConfig {
            name: "api/v1".into(),
            size: 10,
            ratio: 0.5,
        };
        let mut store = FileFleet::open(dir.path().to_path_buf()).unwrap();
        assert_eq!(store.tokens(&budget).unwrap(), 10.0);
        assert_eq!(store.spend(&budget, false).unwrap(), 9.0);
        let mut again = FileFleet::open(dir.path().to_path_buf()).unwrap();
        assert_eq!(again.spend(&budget, true).unwrap(), 9.5);
        assert!(dir.path().join("budgets/api%2Fv1.json").exists());
    }

    #[test]
    fn a_torn_state_file_reads_as_fresh_and_is_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let budget = BudgetConfig {
            name: "b".into(),
            size: 10,
            ratio: 0.1,
        };
        let mut store = FileFleet::open(dir.path().to_path_buf()).unwrap();
        std::fs::write(dir.path().join("budgets/b.json"), b"{\"tok").unwrap();
        assert_eq!(store.tokens(&budget).unwrap(), 10.0);
        assert_eq!(store.spend(&budget, false).unwrap(), 9.0);
        assert_eq!(store.tokens(&budget).unwrap(), 9.0);
    }

    #[test]
    fn a_circuit_file_opens_and_is_read_without_change() {
        let dir = tempfile::tempdir().unwrap();
        let c = CircuitConfig {
            name: "db".into(),
            failures: 2,
            cooldown: Duration::from_secs(60),
            exit: 75,
        };
        let mut store = FileFleet::open(dir.path().to_path_buf()).unwrap();
        store.record_run(&c, false).unwrap();
        assert_eq!(store.admit(&c).unwrap(), Admission::Closed);
        store.record_run(&c, false).unwrap();
        assert!(matches!(
            store.admit(&c).unwrap(),
            Admission::Open { failures: 2, .. }
        ));
        let before = store.circuit(&c).unwrap();
        assert!(matches!(store.admit(&c).unwrap(), Admission::Open { .. }));
        assert_eq!(store.circuit(&c).unwrap(), before);
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
        let budget = BudgetConfig {
            name: "cost".into(),
            size: 1_000_000,
            ratio: 0.1,
        };
        let circuit = CircuitConfig {
            name: "cost".into(),
            failures: u32::MAX,
            cooldown: Duration::from_secs(60),
            exit: 75,
        };
        let mut time = |what: &str, op: &mut dyn FnMut(usize)| {
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
            store.spend(&budget, i % 2 == 0).unwrap();
        });
        let mut store = FileFleet::open(store.dir.clone()).unwrap();
        time("circuit update (a finished run)", &mut |i| {
            store.record_run(&circuit, i % 2 == 0).unwrap();
        });
        let mut store = FileFleet::open(store.dir.clone()).unwrap();
        time("circuit admission (closed: a read)", &mut |_| {
            store.admit(&circuit).unwrap();
        });
    }
}
