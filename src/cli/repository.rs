//! `referee ingest --repository <URL>@<commit> --committed-at <time>`: a repository
//! campaign's commitment through the queue, the fetch gate and the manifest checks
//! (content/repository-submissions.md), logged as `submission` (and `gate-rejection`)
//! statements when the data directory has a transparency log. Text output escapes every recorded string
//! (`receipts::text::escape_untrusted`): the reasons quote the repository's paths and
//! the miner's manifest.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use intake::repository::{
    Commitment, GitFetcher, RepositoryOutcome, RepositoryRequest, ingest_repository, tree_dir,
};
use receipts::layout::DataDir;
use receipts::model::{PipelineState, Timestamp};
use receipts::text::escape_untrusted;

use super::ingest::{IngestArgs, StatementKeys, print_log};

pub fn run_ingest_repository(
    args: &IngestArgs,
    commitment: &str,
    committed_at: Timestamp,
) -> anyhow::Result<ExitCode> {
    let parsed: Commitment = commitment
        .parse()
        .with_context(|| format!("--repository `{}`", escape_untrusted(commitment)))?;
    let campaign_dir = DataDir::new(&args.data.data).campaign(&args.campaign);
    let statements = StatementKeys::open(&args.data.data, &args.keys)?;
    let request = RepositoryRequest {
        commitment: &parsed,
        miner: &args.miner,
        committed_at,
    };
    let fetcher = GitFetcher {
        ca_file: args.ca_file.clone(),
    };
    let outcome = ingest_repository(&campaign_dir, &request, &fetcher)
        .with_context(|| format!("ingesting `{}`", escape_untrusted(commitment)))?;
    let submission = outcome.submission();
    if let Some(statements) = &statements {
        statements.log_submission(&campaign_dir, submission)?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, submission)?;
        writeln!(out)?;
    } else {
        if let RepositoryOutcome::Duplicate(_) = outcome {
            writeln!(
                out,
                "duplicate of {} (held by `{}`): recorded as an event",
                submission.sha256,
                escape_untrusted(submission.miner.as_str())
            )?;
        }
        print_log(&mut out, submission)?;
        if let Some(record) = &submission.repository {
            writeln!(
                out,
                "  commitment    {}",
                escape_untrusted(&record.commitment)
            )?;
            writeln!(out, "  committed at  {}", record.committed_at)?;
            if let Some(tree) = &record.tree_sha256 {
                writeln!(out, "  tree sha256   {tree}")?;
                writeln!(
                    out,
                    "  tree          {}",
                    tree_dir(&campaign_dir, &submission.sha256).display()
                )?;
            }
            if let Some(manifest) = &record.manifest_sha256 {
                writeln!(out, "  manifest      sha256 {manifest}")?;
            }
            if let Some(validation) = &record.validation {
                for e in &validation.errors {
                    writeln!(
                        out,
                        "  error         {}: {}: {}",
                        escape_untrusted(&e.field),
                        e.reason,
                        escape_untrusted(&e.message)
                    )?;
                }
            }
            if let Some(review) = &record.review {
                print_review(&mut out, review)?;
            }
        }
    }
    Ok(match outcome {
        RepositoryOutcome::New(s) if s.state == PipelineState::Rejected => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    })
}

/// The review's verdict, findings and copy outcome, escaped (content/review.md).
fn print_review(
    out: &mut impl Write,
    review: &receipts::model::ReviewRecord,
) -> std::io::Result<()> {
    writeln!(
        out,
        "  review        {} (rules v{} sha256 {}, {} findings)",
        review.verdict.as_str(),
        review.rules_version,
        review.rules_digest,
        review.findings.len()
    )?;
    for f in &review.findings {
        let place = f
            .line
            .map_or_else(|| f.file.clone(), |l| format!("{}:{l}", f.file));
        writeln!(
            out,
            "  finding       {} {} at {}: {}",
            f.severity.as_str(),
            escape_untrusted(&f.rule),
            escape_untrusted(&place),
            escape_untrusted(&f.detail)
        )?;
    }
    match &review.copy {
        receipts::model::CopyOutcome::Copy { original, .. } => {
            writeln!(out, "  copy          of submission {original}, credited")?;
        }
        receipts::model::CopyOutcome::Derived { original } => {
            writeln!(out, "  derived from  submission {original}")?;
        }
        receipts::model::CopyOutcome::Original => {}
    }
    if review.decision() == receipts::model::Verdict::NeedsHuman {
        writeln!(
            out,
            "  waiting for a person: referee review --resolve <submission> --verdict PASS|FAIL --reason …"
        )?;
    }
    Ok(())
}
