//! `referee ingest` and `referee status`: run a submitted diff through the gates, and
//! show submissions with their event logs (DESIGN.md §2).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use intake::gates::BuiltinBuilder;
use intake::ingest::{IngestOutcome, IngestRequest, find_submission, ingest};
use receipts::layout::DataDir;
use receipts::model::{CampaignId, EventKind, MinerId, Sha256Hex, Submission};

use super::DataArgs;

/// Arguments of `referee ingest`.
#[derive(clap::Args, Debug)]
pub struct IngestArgs {
    /// The diff file, exactly as the miner committed it.
    pub patch: PathBuf,
    /// The miner whose commitment this is.
    #[arg(long)]
    pub miner: MinerId,
    /// The sha256 the miner published (64 lowercase hex characters).
    #[arg(long)]
    pub commitment: Sha256Hex,
    /// The campaign id.
    #[arg(long)]
    pub campaign: CampaignId,
    /// Print the submission record as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub data: DataArgs,
}

/// Arguments of `referee status`.
#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    /// A submission's sha256 (or a prefix of at least 4 characters): print its event
    /// log. Without it, list every submission.
    pub hash: Option<String>,
    /// The campaign id.
    #[arg(long)]
    pub campaign: CampaignId,
    /// Print JSON (the record, or an array of records).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub data: DataArgs,
}

pub fn run_ingest(args: IngestArgs) -> anyhow::Result<ExitCode> {
    let bytes = std::fs::read(&args.patch)
        .with_context(|| format!("reading `{}`", args.patch.display()))?;
    let campaign_dir = DataDir::new(&args.data.data).campaign(&args.campaign);
    let outcome = ingest(
        &campaign_dir,
        &IngestRequest {
            diff: &bytes,
            miner: &args.miner,
            commitment: &args.commitment,
        },
        &BuiltinBuilder,
    )
    .with_context(|| format!("ingesting `{}`", args.patch.display()))?;
    let submission = outcome.submission();
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, submission)?;
        writeln!(out)?;
    } else {
        if let IngestOutcome::Duplicate(_) = outcome {
            writeln!(
                out,
                "duplicate of {} (first committed by `{}`): recorded as an event, skipped",
                submission.sha256, submission.miner
            )?;
        }
        print_log(&mut out, submission)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run_status(args: StatusArgs) -> anyhow::Result<ExitCode> {
    let campaign_dir = DataDir::new(&args.data.data).campaign(&args.campaign);
    campaign_dir.load_campaign()?;
    let mut out = std::io::stdout().lock();
    if let Some(hash) = &args.hash {
        let submission = find_submission(&campaign_dir, hash)?;
        if args.json {
            serde_json::to_writer_pretty(&mut out, &submission)?;
            writeln!(out)?;
        } else {
            print_log(&mut out, &submission)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let submissions = campaign_dir.list_submissions()?;
    if args.json {
        serde_json::to_writer_pretty(&mut out, &submissions)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{:<13}  {:<16}  {:<14}  last reason",
        "submission", "miner", "state"
    )?;
    for s in &submissions {
        writeln!(
            out,
            "{:<13}  {:<16}  {:<14}  {}",
            s.sha256.short(),
            s.miner.as_str(),
            s.state.as_str(),
            s.last_reason().unwrap_or_default()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One submission: a header, then every event, oldest first.
fn print_log(out: &mut impl Write, submission: &Submission) -> std::io::Result<()> {
    writeln!(
        out,
        "submission {}  miner `{}`  {} bytes  state {}",
        submission.sha256, submission.miner, submission.size_bytes, submission.state
    )?;
    for event in &submission.events {
        let what = match &event.kind {
            EventKind::Transition { to, gate, round } => {
                let mut what = to.to_string();
                if let Some(gate) = gate {
                    what.push_str(&format!(" at {gate}"));
                }
                if let Some(round) = round {
                    what.push_str(&format!(" (round {round})"));
                }
                what
            }
            EventKind::Duplicate { miner, .. } => format!("duplicate from `{miner}`"),
            EventKind::Superseded { miner, .. } => format!("superseded `{miner}`"),
        };
        writeln!(out, "  {}  {what:<22}  {}", event.at, event.reason)?;
    }
    Ok(())
}
