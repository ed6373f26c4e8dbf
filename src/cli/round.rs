//! `referee round` (placeholder until its issue lands).

use std::process::ExitCode;

/// Arguments of `referee round`.
#[derive(clap::Args, Debug)]
pub struct RoundArgs {}

pub fn run(_args: RoundArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`referee round` is not implemented yet")
}
