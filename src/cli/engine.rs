//! `referee engine …` (placeholder until its issue lands).

use std::process::ExitCode;

#[derive(clap::Subcommand, Debug)]
pub enum EngineCommand {
    /// Serve the built-in engine.
    Serve {},
}

pub fn run(_cmd: EngineCommand) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`referee engine serve` is not implemented yet")
}
