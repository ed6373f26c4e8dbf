//! Checks across the rounds of one campaign (content/verifying.md, Across rounds): the
//! bundles of a `rounds/` directory, in the order of their directory numbers, are rounds
//! 1, 2, … without a gap (`chain.previousReceipt`, [`FailureReason::ChainGap`]), each
//! round's predicate says the round of its place ([`FailureReason::ChainReordered`]) and
//! its `previousReceipt` is the Statement digest of the round before it
//! ([`FailureReason::ChainFork`]); every round names the first round's campaign id and
//! digest (`chain.campaign`); and the incumbent each round seated, and its
//! `leaderBefore`, is the `leaderAfter` of the round before (`chain.incumbent`). Each
//! check is recorded in the later round's report.

use std::path::Path;

use receipts::model::{Leader, Role, RoundRecord, Sha256Hex};
use receipts::verify::{CheckName, FailureReason, VerifyReport};

/// One bundle of a chain: its place (the number of its directory), its report and its
/// record (`None` when the predicate did not pass a round schema).
pub(crate) struct Link<'a> {
    /// The number its directory name holds; `None` for a name that is not a number.
    pub place: Option<u64>,
    /// Its report, where the chain checks are recorded.
    pub report: &'a mut VerifyReport,
    /// Its round record.
    pub record: Option<&'a RoundRecord>,
}

/// Runs the chain checks over `links` of the rounds directory `chain`, sorted by place
/// here (a name that is not a number sorts last and fails `chain.previousReceipt`).
pub(crate) fn check_chain(chain: &Path, links: &mut [Link<'_>]) {
    links.sort_by_key(|l| (l.place.is_none(), l.place));
    let chain_name = chain.display().to_string();
    let campaign = links
        .iter()
        .find_map(|l| l.record)
        .map(|r| r.campaign.clone());
    let mut expected = 1u64;
    let mut previous: Option<(Option<Sha256Hex>, Option<&RoundRecord>)> = None;
    for link in links.iter_mut() {
        let bundle = link.report.bundle.display().to_string();
        let Some(record) = link.record else {
            link.report.fail(
                CheckName::ChainPrevious,
                None,
                FailureReason::NotRun {
                    blocked_by: CheckName::PredicateSchema,
                },
            );
            previous = Some((link.report.statement_digest.clone(), None));
            expected += 1;
            continue;
        };
        let place = link.place.unwrap_or(u64::MAX);
        let previous_digest = previous.as_ref().and_then(|(d, _)| d.clone());
        let order = if place != expected {
            Err(FailureReason::ChainGap {
                chain: chain_name.clone(),
                expected,
                found: place,
                bundle: bundle.clone(),
            })
        } else if record.round != place {
            Err(FailureReason::ChainReordered {
                chain: chain_name.clone(),
                bundle: bundle.clone(),
                round: record.round,
                place,
            })
        } else if record.previous_receipt != previous_digest {
            Err(FailureReason::ChainFork {
                round: record.round,
                claimed: record.previous_receipt.clone(),
                recomputed: previous_digest,
            })
        } else {
            Ok(())
        };
        link.report
            .record(CheckName::ChainPrevious, Some(bundle.clone()), order);
        if let Some(campaign) = &campaign {
            let result = if record.campaign.id != campaign.id {
                Err(FailureReason::ChainCampaign {
                    round: record.round,
                    field: "campaign.id".to_owned(),
                    claimed: record.campaign.id.to_string(),
                    chain_value: campaign.id.to_string(),
                })
            } else if record.campaign.digest != campaign.digest {
                Err(FailureReason::ChainCampaign {
                    round: record.round,
                    field: "campaign.digest".to_owned(),
                    claimed: record.campaign.digest.to_string(),
                    chain_value: campaign.digest.to_string(),
                })
            } else {
                Ok(())
            };
            link.report
                .record(CheckName::ChainCampaign, Some(bundle.clone()), result);
        }
        if let Some((_, Some(before))) = &previous {
            let result = incumbent(record, before);
            link.report
                .record(CheckName::ChainIncumbent, Some(bundle.clone()), result);
        }
        previous = Some((link.report.statement_digest.clone(), Some(record)));
        expected = place.saturating_add(1);
    }
}

/// `chain.incumbent`: `record`'s `leaderBefore` and its seated incumbent (none when the
/// seat is the baseline's) are `before`'s `leaderAfter`.
fn incumbent(record: &RoundRecord, before: &RoundRecord) -> Result<(), FailureReason> {
    let seat = before.outcome.leader_after.as_ref();
    let fail = |field: String, claimed: Option<&Leader>| FailureReason::ChainIncumbent {
        round: record.round,
        field,
        claimed: show(claimed),
        previous: before.round,
        recomputed: show(seat),
    };
    if record.outcome.leader_before.as_ref() != seat {
        return Err(fail(
            "outcome.leaderBefore".to_owned(),
            record.outcome.leader_before.as_ref(),
        ));
    }
    let seated = record.entries.iter().find(|e| e.role == Role::Incumbent);
    let seated_leader = seated.and_then(|e| {
        Some(Leader {
            patch: e.patch.clone()?,
            miner: e.miner.clone()?,
        })
    });
    match (seated, seat) {
        (None, None) => Ok(()),
        (Some(e), _) if seated_leader.as_ref() != seat => Err(fail(
            format!("entries[{}] (the incumbent)", e.index),
            seated_leader.as_ref(),
        )),
        (Some(_), _) => Ok(()),
        (None, Some(_)) => Err(fail("entries (no incumbent seated)".to_owned(), None)),
    }
}

/// A seat, rendered: `<patch short> (<miner>)`, or `baseline`.
fn show(leader: Option<&Leader>) -> String {
    leader.map_or_else(
        || "baseline".to_owned(),
        |l| format!("{} ({})", l.patch, l.miner),
    )
}
