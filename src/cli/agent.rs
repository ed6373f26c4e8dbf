//! `referee agent --order <staging>/order.json [--pass N]`: the side of a pod that runs
//! there (content/pods.md, The agent). It prints framed messages on standard output (its
//! diagnostics go to standard error) for the evaluator that started it through the
//! pod's scheduler; it holds no key and signs nothing. Without `--pass` it sets the pod
//! up; with it, it runs that pass of the order's round and sends each run back.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use runner::pod::agent::run_agent;
use runner::round::run_pod_pass;

/// `referee agent`.
#[derive(clap::Args, Debug)]
pub struct AgentArgs {
    /// The order the evaluator shipped, in the staging directory beside every file it
    /// names.
    #[arg(long)]
    order: PathBuf,
    /// Run this pass (from 0) of the order's round, from the journal shipped with it,
    /// instead of the setup steps.
    #[arg(long)]
    pass: Option<u32>,
}

pub fn run(args: AgentArgs) -> anyhow::Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match args.pass {
        Some(pass) => run_pod_pass(&args.order, pass, &mut out)?,
        None => run_agent(&args.order, &mut out)?,
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
