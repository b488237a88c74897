//! HTTP mode executor (being built).

use crate::cli::Cli;
use crate::engine::{AttemptContext, AttemptReport, Executor};
use crate::exec::RunInfo;

pub struct HttpExecutor;

impl HttpExecutor {
    pub fn new(_cli: &Cli, _url: &str, _info: &RunInfo) -> anyhow::Result<Self> {
        anyhow::bail!("HTTP mode is not available in this build")
    }

    /// The classification rules in force, for `--dry-run`.
    pub fn rules(&self) -> Vec<String> {
        Vec::new()
    }
}

impl Executor for HttpExecutor {
    fn attempt(&mut self, _ctx: &AttemptContext) -> anyhow::Result<AttemptReport> {
        anyhow::bail!("HTTP mode is not available in this build")
    }

    fn deliver(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
}
