//! `referee seal` (placeholder until its issue lands).

use std::process::ExitCode;

/// Arguments of `referee seal`.
#[derive(clap::Args, Debug)]
pub struct SealArgs {}

pub fn run(_args: SealArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`referee seal` is not implemented yet")
}
