//! `referee bench …` (placeholder until its issue lands).

use std::process::ExitCode;

#[derive(clap::Subcommand, Debug)]
pub enum BenchCommand {
    /// Measure an OpenAI-compatible server.
    Serve {},
}

pub fn run(_cmd: BenchCommand) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`referee bench serve` is not implemented yet")
}
