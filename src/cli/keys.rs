//! `referee keys` (placeholder until its issue lands).

use std::process::ExitCode;

/// Arguments of `referee keys`.
#[derive(clap::Args, Debug)]
pub struct KeygenArgs {}

pub fn run(_args: KeygenArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`referee keys` is not implemented yet")
}
