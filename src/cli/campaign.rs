//! `referee campaign …` and `referee miner …` (placeholder until its issue lands).

use std::process::ExitCode;

#[derive(clap::Subcommand, Debug)]
pub enum CampaignCommand {
    /// Freeze a campaign.toml into the data directory.
    Add {},
}

#[derive(clap::Subcommand, Debug)]
pub enum MinerCommand {
    /// Register a miner.
    Add {},
}

pub fn run_campaign(_cmd: CampaignCommand) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`referee campaign add` is not implemented yet")
}

pub fn run_miner(_cmd: MinerCommand) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`referee miner add` is not implemented yet")
}
