//! `referee agent --order <staging>/order.json`: the side of a pod that runs there
//! (content/pods.md, The agent). It prints framed messages on standard output (its
//! diagnostics go to standard error) for the evaluator that started it through the
//! pod's scheduler; it holds no key and signs nothing.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use runner::pod::agent::run_agent;

/// `referee agent`.
#[derive(clap::Args, Debug)]
pub struct AgentArgs {
    /// The order the evaluator shipped, in the staging directory beside every file it
    /// names.
    #[arg(long)]
    order: PathBuf,
}

pub fn run(args: AgentArgs) -> anyhow::Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    run_agent(&args.order, &mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
