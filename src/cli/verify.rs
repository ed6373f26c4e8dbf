//! `referee verify` (placeholder until its issue lands).

use std::process::ExitCode;

/// Arguments of `referee verify`.
#[derive(clap::Args, Debug)]
pub struct VerifyArgs {}

pub fn run(_args: VerifyArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`referee verify` is not implemented yet")
}
