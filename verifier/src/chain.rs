//! Checks across the rounds of one campaign (content/verifying.md, Across rounds): the
//! bundles of a `rounds/` directory, in the order of their directory numbers, are rounds
//! 1, 2, … without a gap (`chain.previousReceipt`, [`FailureReason::ChainGap`]), each
//! round's predicate says the round of its place ([`FailureReason::ChainReordered`]) and
//! its `previousReceipt` is the Statement digest of the round before it
//! ([`FailureReason::ChainFork`]); every round names the first round's campaign id and
//! digest (`chain.campaign`); and the incumbent each round seated, and its
//! `leaderBefore`, is the `leaderAfter` of the round before, and from v3 its
//! `outcome.remeasure` is the one the round before called for (`chain.incumbent`); no
//! round's predicate version is older than an earlier round's (`chain.version`: a later
//! round cannot shed the checks a newer version added). Each
//! check is recorded in the later round's report. [`verify_last_round`] runs them on the
//! last link alone, for a runner about to build the next round.

use std::path::Path;

use crate::{CheckName, FailureReason, VerifyOptions, VerifyReport};
use receipts::bundle::ENVELOPE_FILE;
use receipts::keys::Keyring;
use receipts::layout::read_round_record;
use receipts::model::{
    CampaignRef, IncumbentRemeasure, Leader, Role, RoundFailure, RoundRecord, Sha256Hex,
    TypedOrText,
};
use receipts::rules::leader::{incumbent_infra_failed_rounds, remeasure_of};

use crate::PredicateVersion;
use crate::files::{recomputed, show as show_value};

/// What the checks across rounds read of one round's record, and nothing else: a few
/// hundred bytes where the record is tens of kilobytes, so an archive's records can be
/// dropped as soon as each round's own checks ran ([`crate::archive::check_archive_links`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainLink {
    /// `round`: the round number the predicate states.
    pub round: u64,
    /// `previousReceipt`: the Statement sha256 of the round before (`None` for round 1).
    pub previous_receipt: Option<Sha256Hex>,
    /// `campaign`: its id and digest.
    pub campaign: CampaignRef,
    /// `outcome.leaderBefore` (`None`: the baseline).
    pub leader_before: Option<Leader>,
    /// `outcome.leaderAfter` (`None`: the baseline).
    pub leader_after: Option<Leader>,
    /// `outcome.remeasure` (v3; `None` before).
    pub remeasure: Option<IncumbentRemeasure>,
    /// [`incumbent_infra_failed_rounds`] of its `outcome`: the rounds in a row its
    /// outcome counts against the incumbent (what the next round's `remeasure` follows).
    pub incumbent_infra_failed_rounds: u32,
    /// The first entry whose role is `incumbent`: its `index`, and its seat when it
    /// names both a patch and a miner; `None` when no incumbent is seated.
    pub incumbent: Option<(u32, Option<Leader>)>,
    /// The `consecutive` of an `incumbent_infra_failed` outcome reason; `None` for any
    /// other outcome.
    pub incumbent_failed_consecutive: Option<u32>,
}

impl ChainLink {
    /// The fields of `record` the chain checks read.
    pub fn of(record: &RoundRecord) -> Self {
        let incumbent = record
            .entries
            .iter()
            .find(|e| e.role == Role::Incumbent)
            .map(|e| {
                let seat = e.patch.zip(e.miner.clone());
                (e.index, seat.map(|(patch, miner)| Leader { patch, miner }))
            });
        Self {
            round: record.round,
            previous_receipt: record.previous_receipt,
            campaign: record.campaign.clone(),
            leader_before: record.outcome.leader_before.clone(),
            leader_after: record.outcome.leader_after.clone(),
            remeasure: record.outcome.remeasure,
            incumbent_infra_failed_rounds: incumbent_infra_failed_rounds(&record.outcome),
            incumbent,
            incumbent_failed_consecutive: match record.outcome.reason.as_ref() {
                Some(TypedOrText::Typed(RoundFailure::IncumbentInfraFailed { consecutive })) => {
                    Some(*consecutive)
                }
                _ => None,
            },
        }
    }
}

/// One bundle of a chain: its place (the number of its directory), its report and its
/// chain link (`None` when the predicate did not pass a round schema).
pub(crate) struct Link<'a> {
    /// The number its directory name holds; `None` for a name that is not a number.
    pub place: Option<u64>,
    /// Its report, where the chain checks are recorded.
    pub report: &'a mut VerifyReport,
    /// What the checks read of its round record.
    pub record: Option<&'a ChainLink>,
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
    let mut previous: Option<(Option<Sha256Hex>, Option<&ChainLink>)> = None;
    // The newest predicate version seen so far in the chain, with its round.
    let mut newest: Option<(PredicateVersion, u64)> = None;
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
            previous = Some((link.report.statement_digest, None));
            expected += 1;
            continue;
        };
        let place = link.place.unwrap_or(u64::MAX);
        let previous_digest = previous.as_ref().and_then(|(d, _)| *d);
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
                claimed: record.previous_receipt.map(Box::new),
                recomputed: previous_digest.map(Box::new),
            })
        } else {
            Ok(())
        };
        link.report
            .record(CheckName::ChainPrevious, Some(bundle.clone()), order);
        if let Some(campaign) = &campaign {
            let result = same_campaign(record, campaign);
            link.report
                .record(CheckName::ChainCampaign, Some(bundle.clone()), result);
        }
        if let Some((_, Some(before))) = &previous {
            let result = seat(link.report, record, before);
            link.report
                .record(CheckName::ChainIncumbent, Some(bundle.clone()), result);
        }
        let version = (link.report.predicate_type.as_deref()).and_then(PredicateVersion::of);
        if let (Some(version), Some((before, round))) = (version, newest) {
            let result = if version < before {
                Err(recomputed(
                    ENVELOPE_FILE,
                    "predicateType",
                    format!("round/{}", version.name()),
                    format!(
                        "round/{} or later (round {round} of the chain is round/{})",
                        before.name(),
                        before.name()
                    ),
                ))
            } else {
                Ok(())
            };
            link.report
                .record(CheckName::ChainVersion, Some(bundle.clone()), result);
        }
        if let Some(version) = version {
            newest = Some(newest.map_or((version, record.round), |(v, r)| {
                if version >= v {
                    (version, record.round)
                } else {
                    (v, r)
                }
            }));
        }
        previous = Some((link.report.statement_digest, Some(record)));
        expected = place.saturating_add(1);
    }
}

/// [`verify_round_bundle`](crate::verify_round_bundle) of the last sealed round of a
/// campaign, the bundle `dir`, with the checks across rounds against the round just before
/// it, the bundle `before` (`None` for round 1): what a runner checks before it builds
/// the next round on `dir` (content/verifying.md, Across rounds). `dir` is round
/// `before`'s round + 1 and its `previousReceipt` is `before`'s Statement sha256
/// (`chain.previousReceipt`), names its campaign (`chain.campaign`) and seats its leader
/// (`chain.incumbent`), each recorded in `dir`'s report. `before` itself is not verified
/// again: `dir`'s signature covers its digest, and the rounds before it were checked so
/// when each was the last. A `before` that cannot be read fails `chain.previousReceipt`.
pub fn verify_last_round(
    dir: &Path,
    before: Option<&Path>,
    keyring: &Keyring,
    options: &VerifyOptions,
) -> VerifyReport {
    let (mut report, record) = crate::verify_round_bundle(dir, keyring, options);
    let (Some(record), Some(before)) = (record, before) else {
        return report;
    };
    let bundle = Some(dir.display().to_string());
    let (previous, digest) = match read_round_record(before) {
        Ok(read) => read,
        Err(e) => {
            let reason = FailureReason::ArtifactUnreadable {
                file: before.display().to_string(),
                message: e.to_string(),
            };
            report.fail(CheckName::ChainPrevious, bundle, reason);
            return report;
        }
    };
    let order = if record.round != previous.round.saturating_add(1) {
        Err(FailureReason::ChainGap {
            chain: dir
                .parent()
                .map_or_else(String::new, |p| p.display().to_string()),
            expected: previous.round.saturating_add(1),
            found: record.round,
            bundle: dir.display().to_string(),
        })
    } else if record.previous_receipt.as_ref() != Some(&digest) {
        Err(FailureReason::ChainFork {
            round: record.round,
            claimed: record.previous_receipt.map(Box::new),
            recomputed: Some(Box::new(digest)),
        })
    } else {
        Ok(())
    };
    report.record(CheckName::ChainPrevious, bundle.clone(), order);
    let (record, previous) = (ChainLink::of(&record), ChainLink::of(&previous));
    let result = same_campaign(&record, &previous.campaign);
    report.record(CheckName::ChainCampaign, bundle.clone(), result);
    let result = seat(&report, &record, &previous);
    report.record(CheckName::ChainIncumbent, bundle, result);
    report
}

/// `chain.campaign`: `record` names the chain's `campaign` id and digest.
fn same_campaign(record: &ChainLink, campaign: &CampaignRef) -> Result<(), FailureReason> {
    let differs = |field: &str, claimed: String, chain_value: String| {
        Err(FailureReason::ChainCampaign {
            round: record.round,
            field: field.to_owned(),
            claimed,
            chain_value,
        })
    };
    if record.campaign.id != campaign.id {
        differs(
            "campaign.id",
            record.campaign.id.to_string(),
            campaign.id.to_string(),
        )
    } else if record.campaign.digest != campaign.digest {
        differs(
            "campaign.digest",
            record.campaign.digest.to_string(),
            campaign.digest.to_string(),
        )
    } else {
        Ok(())
    }
}

/// `chain.incumbent` of `record` (its report `report`, for its predicate version) after
/// `before`: [`incumbent`], then [`remeasure`].
fn seat(
    report: &VerifyReport,
    record: &ChainLink,
    before: &ChainLink,
) -> Result<(), FailureReason> {
    let v3 = report
        .predicate_type
        .as_deref()
        .and_then(PredicateVersion::of)
        >= Some(PredicateVersion::V3);
    incumbent(record, before)
        .and_then(|()| remeasure(record, before, v3))
        .and_then(|()| consecutive(record, before))
}

/// `chain.incumbent`: an `incumbent_infra_failed` outcome counts the rounds in a row its
/// incumbent failed, this one included: one more than `before`'s count (0 when `before`
/// did not fail for the incumbent), by [`receipts::rules::leader::infra_failed_incumbent`].
fn consecutive(record: &ChainLink, before: &ChainLink) -> Result<(), FailureReason> {
    let Some(claimed) = record.incumbent_failed_consecutive else {
        return Ok(());
    };
    let expected = before.incumbent_infra_failed_rounds.saturating_add(1);
    if claimed == expected {
        return Ok(());
    }
    Err(recomputed(
        ENVELOPE_FILE,
        format!("round {} outcome.reason.consecutive", record.round),
        claimed.to_string(),
        format!(
            "{expected} (round {} left {} rounds in a row infra_failed by the incumbent)",
            before.round, before.incumbent_infra_failed_rounds
        ),
    ))
}

/// `chain.incumbent`: `record`'s `leaderBefore` and its seated incumbent (none when the
/// seat is the baseline's) are `before`'s `leaderAfter`.
fn incumbent(record: &ChainLink, before: &ChainLink) -> Result<(), FailureReason> {
    let seat = before.leader_after.as_ref();
    let fail = |field: String, claimed: Option<&Leader>| FailureReason::ChainIncumbent {
        round: record.round,
        field,
        claimed: show(claimed),
        previous: before.round,
        recomputed: show(seat),
    };
    if record.leader_before.as_ref() != seat {
        return Err(fail(
            "outcome.leaderBefore".to_owned(),
            record.leader_before.as_ref(),
        ));
    }
    match (&record.incumbent, seat) {
        (None, None) => Ok(()),
        (Some((index, seated)), _) if seated.as_ref() != seat => Err(fail(
            format!("entries[{index}] (the incumbent)"),
            seated.as_ref(),
        )),
        (Some(_), _) => Ok(()),
        (None, Some(_)) => Err(fail("entries (no incumbent seated)".to_owned(), None)),
    }
}

/// `chain.incumbent`, from v3 (`outcome.remeasure` is absent before): `record`'s
/// `remeasure` is the one [`remeasure_of`] gives for its seat after the rounds in a row
/// that `before`'s outcome counts against the incumbent
/// ([`incumbent_infra_failed_rounds`]), so no round claims a re-measure, which seats no
/// challenger, that the round before did not call for.
fn remeasure(record: &ChainLink, before: &ChainLink, v3: bool) -> Result<(), FailureReason> {
    let rounds = before.incumbent_infra_failed_rounds;
    let expected = remeasure_of(record.leader_before.as_ref(), rounds);
    let count = |r: Option<IncumbentRemeasure>| show_value(r.map(|r| r.infra_failed_rounds));
    if !v3 || record.remeasure == expected {
        return Ok(());
    }
    Err(recomputed(
        ENVELOPE_FILE,
        format!("round {} outcome.remeasure", record.round),
        count(record.remeasure),
        format!(
            "{} (round {} left {rounds} rounds in a row infra_failed by the incumbent)",
            count(expected),
            before.round
        ),
    ))
}

/// A seat, rendered: `<patch short> (<miner>)`, or `baseline`.
fn show(leader: Option<&Leader>) -> String {
    leader.map_or_else(
        || "baseline".to_owned(),
        |l| format!("{} ({})", l.patch, l.miner),
    )
}
