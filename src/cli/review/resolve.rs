//! `referee review --resolve <submission> --verdict PASS|FAIL --reason <text>`: a person's
//! decision on a repository submission's NEEDS-HUMAN review (content/review.md), signed
//! with the evaluator key, logged as a `review-resolution` statement and recorded in the
//! submission's review; the submission then moves to `bench_queued` or is rejected at
//! gate `review`.

use std::io::Write;
use std::process::ExitCode;

use ::review::Verdict;
use anyhow::Context;
use intake::ingest::find_submission;
use intake::repository::review::{Resolution, resolve};
use receipts::layout::DataDir;
use receipts::model::{CampaignId, Timestamp};
use receipts::text::escape_untrusted;

use crate::cli::DataArgs;
use crate::cli::ingest::{StatementKeyArgs, StatementKeys, print_log};

/// The options of `referee review --resolve`.
#[derive(clap::Args, Debug)]
pub struct ResolveArgs {
    /// With --resolve: the person's verdict, PASS or FAIL.
    #[arg(long, value_parser = parse_verdict)]
    pub verdict: Option<Verdict>,
    /// With --resolve: why, in words a miner can act on (recorded and logged as given).
    #[arg(long)]
    pub reason: Option<String>,
    /// With --resolve: the campaign id.
    #[arg(long)]
    pub campaign: Option<CampaignId>,
    #[command(flatten)]
    pub data: DataArgs,
    #[command(flatten)]
    pub keys: StatementKeyArgs,
}

fn parse_verdict(s: &str) -> Result<Verdict, String> {
    match Verdict::parse(s) {
        Some(Verdict::NeedsHuman) | None => Err(format!("`{s}` is not PASS or FAIL")),
        Some(verdict) => Ok(verdict),
    }
}

/// Records the decision on `key`'s review and prints the record's event log.
pub fn run(key: &str, args: &ResolveArgs) -> anyhow::Result<ExitCode> {
    let (Some(verdict), Some(reason), Some(campaign)) =
        (args.verdict, args.reason.as_deref(), args.campaign.as_ref())
    else {
        anyhow::bail!("--resolve needs --verdict, --reason and --campaign");
    };
    if reason.trim().is_empty() {
        anyhow::bail!("--reason is empty: say why");
    }
    let campaign_dir = DataDir::new(&args.data.data).campaign(campaign);
    let submission = find_submission(&campaign_dir, key)?;
    let keys = StatementKeys::open(&args.data.data, &args.keys)?.with_context(|| {
        format!(
            "the data directory `{}` has no transparency log (`referee log init`): a resolution is signed and logged",
            args.data.data.display()
        )
    })?;
    let log = keys.statement_log()?;
    let resolution = Resolution {
        submission: &submission.sha256,
        verdict,
        reason,
        at: Timestamp::now(),
    };
    let submission = resolve(&campaign_dir, &resolution, &log)
        .with_context(|| format!("resolving the review of {}", submission.sha256))?;
    let mut out = std::io::stdout().lock();
    print_log(&mut out, &submission)?;
    if let Some(r) = submission
        .repository
        .as_ref()
        .and_then(|r| r.review.as_ref())
        .and_then(|r| r.resolution.as_ref())
    {
        writeln!(
            out,
            "  resolution    {}: {} (statement sha256 {}, log entry {})",
            r.verdict.as_str(),
            escape_untrusted(&r.reason),
            r.envelope_sha256,
            r.log_index
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_person_decides_pass_or_fail_only() {
        assert_eq!(parse_verdict("PASS"), Ok(Verdict::Pass));
        assert_eq!(parse_verdict("FAIL"), Ok(Verdict::Fail));
        assert_eq!(
            parse_verdict("NEEDS-HUMAN").unwrap_err(),
            "`NEEDS-HUMAN` is not PASS or FAIL"
        );
        assert_eq!(
            parse_verdict("pass").unwrap_err(),
            "`pass` is not PASS or FAIL"
        );
    }
}
