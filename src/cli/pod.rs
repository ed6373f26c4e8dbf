//! `referee pod check --campaign campaign.toml`: sets a campaign's pod up and releases
//! it, every step printed (content/pods.md, Pointing referee at a cluster): the way to
//! see that a Slurm cluster rents, ships, pulls and downloads what rounds will need
//! before any round runs.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use receipts::model::{Campaign, StepStatus};
use receipts::text::escape_untrusted;
use runner::pod::pod_for;
use runner::pod::session::{PodInputs, PodStep, campaign_pulls, set_up, tear_down};

#[derive(clap::Subcommand, Debug)]
pub enum PodCommand {
    /// Rent the campaign's pod, ship the harness, run the agent's setup steps (images by
    /// digest, weights by sha256 into the node's cache), release it; print every step.
    Check(CheckArgs),
}

/// `referee pod check`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// The campaign whose `[pod]` is checked.
    #[arg(long)]
    campaign: PathBuf,
    /// The binary shipped as the agent; default this one.
    #[arg(long)]
    binary: Option<PathBuf>,
    /// The staging directory of a `local` pod (a `slurm` pod uses `[pod] staging_dir`);
    /// default a fresh temporary directory.
    #[arg(long)]
    staging: Option<PathBuf>,
    /// Print the steps and the agent's report as JSON.
    #[arg(long)]
    json: bool,
}

/// `referee pod check`'s exit codes, for `--help`.
pub const POD_EXIT_CODES: &str = "Exit status: 0 when every step ran or was skipped; 1 when one failed; 2 on a usage or I/O error.";

pub fn run(cmd: PodCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        PodCommand::Check(args) => check(args),
    }
}

fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.campaign)
        .with_context(|| format!("reading {}", args.campaign.display()))?;
    let campaign = Campaign::from_toml(&args.campaign.display().to_string(), &text)?;
    let spec = campaign.pod.clone().unwrap_or_default();
    let scratch = tempfile::tempdir().context("creating a temporary staging directory")?;
    let staging = match (&spec.staging_dir, args.staging) {
        (Some(dir), _) => PathBuf::from(dir),
        (None, Some(dir)) => dir,
        (None, None) => scratch.path().to_path_buf(),
    };
    let weights_cache = spec
        .weights_cache_dir()
        .map_or_else(|| staging.join("weights-cache"), PathBuf::from);
    let binary = match args.binary {
        Some(binary) => binary,
        None => std::env::current_exe().context("locating this binary")?,
    };
    let (images, weights) = campaign_pulls(&campaign, &spec);
    let inputs = PodInputs {
        staging,
        binary,
        files: vec![("inputs/campaign.toml".to_owned(), args.campaign.clone())],
        images,
        weights,
        weights_cache,
        round: None,
    };
    let mut pod = pod_for(&spec, &format!("referee-{}", campaign.id.as_str()));
    let setup = set_up(pod.as_mut(), &inputs);
    let (teardown, released) = tear_down(pod.as_mut());
    let (mut steps, report, error) = match setup {
        Ok(setup) => {
            let report = serde_json::json!({
                "allocation": setup.allocation.id,
                "nodes": setup.allocation.nodes,
                "agentSha256": setup.agent_sha256.as_str(),
                "node": setup.node,
                "gpus": setup.gpus,
                "environment": setup.environment.keys().collect::<Vec<_>>(),
            });
            (setup.steps, report, None)
        }
        Err((steps, e)) => (steps, serde_json::Value::Null, Some(e.to_string())),
    };
    steps.push(teardown);
    let ok =
        error.is_none() && released.is_ok() && steps.iter().all(|s| s.status != StepStatus::Failed);
    let mut out = std::io::stdout().lock();
    if args.json {
        let json = serde_json::json!({
            "ok": ok,
            "steps": steps.iter().map(step_json).collect::<Vec<_>>(),
            "agent": report,
            "error": error,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&json)?)?;
    } else {
        for step in &steps {
            writeln!(
                out,
                "{:<8} {} ({:?})",
                format!("{:?}", step.status).to_lowercase(),
                step.name,
                step.phase
            )?;
            for line in &step.detail {
                writeln!(out, "         {}", escape_untrusted(line))?;
            }
        }
        if let Some(e) = &error {
            writeln!(out, "error: {}", escape_untrusted(e))?;
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn step_json(step: &PodStep) -> serde_json::Value {
    serde_json::json!({
        "phase": step.phase,
        "name": step.name,
        "status": step.status,
        "detail": step.detail,
    })
}
