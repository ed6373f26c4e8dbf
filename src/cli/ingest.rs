//! `referee ingest` and `referee status` (placeholder until its issue lands).

use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct IngestArgs {}

#[derive(clap::Args, Debug)]
pub struct StatusArgs {}

pub fn run_ingest(_args: IngestArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`referee ingest` is not implemented yet")
}

pub fn run_status(_args: StatusArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`referee status` is not implemented yet")
}
