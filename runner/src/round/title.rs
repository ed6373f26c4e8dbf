//! The round kinds of the title (content/title.md): `referee round --kind confirmation`
//! re-measures the earliest pending challenger side by side with the holder;
//! `--kind remeasure` re-runs the holder against the baseline with every successor
//! candidate beside it, so that each is re-checked by running it. Both take nothing
//! from the queue. What they seat comes from the title the campaign's chain derives
//! ([`verifier::title::derive_campaign_title`]), the same derivation the verifier
//! recomputes.

use receipts::layout::read_round_record;
use receipts::model::{Leader, RoundKindRecord, RoundRecord, Submission};
use receipts::rules::title::Title;

use super::{Ctx, RoundError};

/// Which kind of round `referee round --kind` asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RoundKindRequest {
    /// Challengers from the queue (the default).
    #[default]
    Regular,
    /// Confirm the earliest pending challenger (seat rule 001).
    Confirmation,
    /// Re-measure the holder.
    Remeasure,
}

/// The kind of round `request` resolves to on the campaign's chain, and the submissions
/// it seats as challengers besides the incumbent `incumbent` (the seat the round before
/// left): for a confirmation the pending challenger and the holder, for a
/// re-measurement the holder and its successor candidates, best first; for a regular
/// round `None` (the queue's).
///
/// Errors: [`RoundError::Title`] when the chain derives no title, or the title does not
/// call for the round (no pending challenger, its holding period not over at `now_s`,
/// a vacant title to re-measure); [`RoundError::Data`] when a sealed round or a seated
/// submission's record cannot be read.
pub(crate) fn resolve(
    ctx: &Ctx<'_>,
    request: RoundKindRequest,
    incumbent: Option<&Leader>,
    now_s: i64,
) -> Result<(RoundKindRecord, Option<Vec<Submission>>), RoundError> {
    let refuse = |message: String| RoundError::Title { message };
    let derive = || -> Result<Title, RoundError> {
        let dir = &ctx.campaign_dir;
        let numbers = dir.round_numbers()?;
        let mut records: Vec<RoundRecord> = Vec::new();
        for n in &numbers {
            records.push(read_round_record(&dir.round_dir(*n))?.0);
        }
        let first = dir.round_dir(numbers.first().copied().unwrap_or(1));
        let refs: Vec<&RoundRecord> = records.iter().collect();
        let derived =
            verifier::title::derive_campaign_title(dir.root(), &first, &refs, &ctx.keyring)
                .map_err(refuse)?;
        Ok(derived.map(|d| d.title).unwrap_or_default())
    };
    let (kind, seated): (RoundKindRecord, Vec<Leader>) = match request {
        RoundKindRequest::Regular => return Ok((RoundKindRecord::Regular, None)),
        RoundKindRequest::Confirmation => {
            let title = derive()?;
            let Some(head) = title.pending.first() else {
                return Err(refuse("no challenger is pending confirmation".to_owned()));
            };
            if now_s < head.earliest_confirmation_s {
                return Err(refuse(format!(
                    "{} ({}) won round {}: its confirmation is due from {} s (Unix), not before",
                    head.challenger.miner,
                    head.challenger.patch.short(),
                    head.won_round,
                    head.earliest_confirmation_s
                )));
            }
            let seated = std::iter::once(head.challenger.clone())
                .chain(title.holder.clone())
                .collect();
            let kind = RoundKindRecord::Confirmation {
                challenger: head.challenger.clone(),
                holder: title.holder.clone(),
            };
            (kind, seated)
        }
        RoundKindRequest::Remeasure => {
            let title = derive()?;
            let Some(holder) = title.holder.clone() else {
                return Err(refuse(
                    "the title is vacant: there is no holder to re-measure".to_owned(),
                ));
            };
            let rules = receipts::rules::title::TitleRules::of_campaign(&ctx.frozen.campaign);
            let seated = std::iter::once(holder.clone())
                .chain(title.successor_candidates(&rules))
                .collect();
            (RoundKindRecord::Remeasure { holder }, seated)
        }
    };
    let mut challengers = Vec::new();
    for leader in seated {
        if Some(&leader) == incumbent {
            continue;
        }
        let mut submission = ctx.campaign_dir.load_submission(&leader.patch)?;
        // The seat is the title's: the miner it names (a duplicate's committer included).
        submission.miner = leader.miner;
        challengers.push(submission);
    }
    Ok((kind, Some(challengers)))
}
