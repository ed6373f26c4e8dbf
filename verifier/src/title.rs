//! A campaign's title recomputed from its chain (content/title.md, `title.chain`): its
//! sealed rounds, each read as [`RoundFacts`], and its signed revocations
//! (`<campaign>/statements/revocation/`), each placed after the round it was logged
//! after, derived by [`Title::derive`] under the rules of the campaign the rounds froze.
//! The verifier records the derivation as a check; `referee status`, `referee due` and
//! the site show what it derived.

use std::fs;
use std::path::Path;

use receipts::keys::Keyring;
use receipts::model::{RoundRecord, Sha256Hex};
use receipts::rules::title::{
    ChainItem, Clock, Revocation, RoundFacts, Title, TitleEvent, TitleRules, chain_of,
};
use receipts::tlog::entry::EntryKind;
use receipts::tlog::statements::{REVOCATION_PREDICATE_TYPE, RevocationPredicate, STATEMENTS_DIR};

use crate::inputs::read_campaign_copy;
use crate::statements::read_statement;
use crate::{CheckName, FailureReason, VerifyReport};

/// A campaign's title as its chain derives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DerivedTitle {
    /// The campaign's title rules (from the campaign its first round froze).
    pub rules: TitleRules,
    /// The clock the title counts: the real one when any round ran on it, else virtual
    /// (a demo's title; rounds of the other clock never count).
    pub clock: Clock,
    /// The title after the chain.
    pub title: Title,
    /// What happened at each item of the chain, in order.
    pub events: Vec<TitleEvent>,
    /// The revocations, in chain order, with the round each was logged after.
    pub revocations: Vec<(u64, Revocation)>,
}

/// The title of the campaign in `campaign_dir` from its sealed rounds `records` (any
/// order; the caller verified them) and its revocation statements, each checked against
/// `keyring` (an evaluator key valid at its `revokedAt`) and against the rounds (the
/// revoked entry was seated in its round, which was sealed before the revocation). `None`
/// when the campaign has no sealed round.
///
/// Errors: what is wrong, in words: an unreadable campaign copy, a revocation that does
/// not verify, or a chain the title rules refuse ([`receipts::rules::title::TitleError`]).
pub fn derive_campaign_title(
    campaign_dir: &Path,
    first_bundle: &Path,
    records: &[&RoundRecord],
    keyring: &Keyring,
) -> Result<Option<DerivedTitle>, String> {
    if records.is_empty() {
        return Ok(None);
    }
    let (file, campaign) = read_campaign_copy(first_bundle);
    let campaign = campaign.map_err(|e| format!("{}: {file}: {e}", first_bundle.display()))?;
    let rules = TitleRules::of_campaign(&campaign.campaign);
    let revocations = revocations(campaign_dir, records, keyring)?;
    let facts: Vec<RoundFacts> = records
        .iter()
        .map(|r| RoundFacts::from_record(r, &rules))
        .collect();
    let clock = if facts.iter().any(|f| f.clock == Clock::Real) {
        Clock::Real
    } else {
        Clock::Virtual
    };
    let chain: Vec<ChainItem> = chain_of(facts, revocations.clone());
    let (title, events) = Title::derive(&rules, clock, &chain).map_err(|e| e.to_string())?;
    Ok(Some(DerivedTitle {
        rules,
        clock,
        title,
        events,
        revocations,
    }))
}

/// The campaign's revocation statements, each verified, with the round it was logged
/// after, sorted by that round and then by `revokedAt`.
fn revocations(
    campaign_dir: &Path,
    records: &[&RoundRecord],
    keyring: &Keyring,
) -> Result<Vec<(u64, Revocation)>, String> {
    let dir = campaign_dir
        .join(STATEMENTS_DIR)
        .join(EntryKind::Revocation.as_str());
    let names = match fs::read_dir(&dir) {
        Ok(entries) => entries
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("`{}`: {e}", dir.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(format!("`{}`: {e}", dir.display())),
    };
    let mut found = Vec::new();
    for name in names {
        let Some(sha) = name
            .strip_suffix(".dsse.json")
            .and_then(|s| s.parse::<Sha256Hex>().ok())
        else {
            continue;
        };
        let read = read_statement::<RevocationPredicate>(
            campaign_dir,
            EntryKind::Revocation,
            &sha,
            REVOCATION_PREDICATE_TYPE,
            keyring,
            |p| p.revoked_at,
        )?;
        let p = read.predicate;
        let seated = records.iter().any(|r| {
            r.round == p.round
                && r.entries.iter().any(|e| {
                    e.patch == Some(p.entry.patch) && e.miner.as_ref() == Some(&p.entry.miner)
                })
        });
        if !seated || p.round > p.after_round {
            return Err(format!(
                "revocation `{name}` revokes {} ({}) of round {}, which no round sealed by round {} seated",
                p.entry.miner, p.entry.patch, p.round, p.after_round
            ));
        }
        let at_s = p.revoked_at.datetime().unix_timestamp();
        found.push((
            p.after_round,
            Revocation {
                round: p.round,
                entry: p.entry,
                reason: p.reason,
                at_s,
            },
        ));
    }
    found.sort_by_key(|(after, r)| (*after, r.at_s));
    Ok(found)
}

/// The `log.archive` findings of campaign `campaign`'s revocation entries (`entries`,
/// with their log indices): each one's statement (`<campaign_dir>/statements/revocation/`)
/// verifies against `keyring` and names the campaign and round its entry names, and the
/// entry stands where its `afterRound` places it in the chain ([`revocation_placement`]):
/// `logged_at(round, receipt)` gives the log index of a round's receipt (`true`) or
/// round-opened (`false`) entry. A revocation whose `afterRound` lies moves the title at
/// another place than the one it was logged at: a title moved without cause.
pub(crate) fn revocation_findings(
    campaign: &receipts::model::CampaignId,
    campaign_dir: &Path,
    entries: &[(u64, receipts::tlog::entry::LogEntry)],
    logged_at: &dyn Fn(u64, bool) -> Option<u64>,
    keyring: &Keyring,
) -> Vec<String> {
    let mut findings = Vec::new();
    for (index, entry) in entries {
        let read = read_statement::<RevocationPredicate>(
            campaign_dir,
            EntryKind::Revocation,
            &entry.envelope_sha256,
            REVOCATION_PREDICATE_TYPE,
            keyring,
            |p| p.revoked_at,
        );
        let p = match read {
            Ok(read) => read.predicate,
            Err(message) => {
                findings.push(format!("revocation entry {index}: {message}"));
                continue;
            }
        };
        if p.campaign != *campaign || entry.round != Some(p.round) {
            findings.push(format!(
                "revocation entry {index} is logged for `{campaign}` round {}, its statement revokes `{}` round {}",
                entry.round.map_or_else(|| "none".to_owned(), |r| r.to_string()),
                p.campaign,
                p.round
            ));
        }
        let placed = revocation_placement(
            *index,
            p.after_round,
            logged_at(p.after_round, true),
            logged_at(p.after_round + 1, false),
        );
        if let Err(message) = placed {
            findings.push(format!("revocation entry {index}: {message}"));
        }
    }
    findings
}

/// Whether a revocation logged at index `index` stands where its `afterRound`
/// (`after_round`) places it in the chain: after the receipt entry of round
/// `after_round` (`receipt_at`, when that round was logged) and before the round-opened
/// entry of the round after it (`next_opened_at`, when there is one), so the title moves
/// between those two rounds and nowhere else.
///
/// Errors: the sentence saying which side it breaks.
pub fn revocation_placement(
    index: u64,
    after_round: u64,
    receipt_at: Option<u64>,
    next_opened_at: Option<u64>,
) -> Result<(), String> {
    if let Some(receipt) = receipt_at.filter(|r| *r > index) {
        return Err(format!(
            "its afterRound is {after_round}, but round {after_round}'s receipt is logged later, at index {receipt}"
        ));
    }
    if let Some(opened) = next_opened_at.filter(|o| *o < index) {
        return Err(format!(
            "its afterRound is {after_round}, but round {} opened before it, at index {opened}: it takes effect after a later round",
            after_round + 1
        ));
    }
    Ok(())
}

/// `title.chain` of the campaign in `campaign_dir` whose sealed rounds are `rounds`
/// (bundle and record), recorded in `report`; nothing when it has no sealed round.
pub(crate) fn check_title(
    campaign_dir: &Path,
    rounds: &[(&Path, &RoundRecord)],
    keyring: &Keyring,
    report: &mut VerifyReport,
) {
    let Some(first) = rounds.iter().min_by_key(|(_, r)| r.round) else {
        return;
    };
    let records: Vec<&RoundRecord> = rounds.iter().map(|(_, r)| *r).collect();
    let result = derive_campaign_title(campaign_dir, first.0, &records, keyring)
        .map(|_| ())
        .map_err(|message| FailureReason::TitleChain {
            campaign: campaign_dir.display().to_string(),
            message,
        });
    // The campaign's `rounds/` directory, as archive's checks name it.
    report.record(CheckName::TitleChain, Some("rounds".to_owned()), result);
}

/// One step of a title's history in words, for `referee status` and the campaign page:
/// the round it belongs to (a revocation: the revoked entry's) and a sentence with its
/// reason; `None` for a round that moved nothing. `escape` makes the untrusted parts (a
/// miner id, an evaluator's or a gate's reason) safe where they are shown.
pub fn event_text(event: &TitleEvent, escape: &dyn Fn(&str) -> String) -> Option<(u64, String)> {
    use receipts::rules::title::MoveReason;
    let at = |s: i64| {
        receipts::model::Timestamp::from_unix_seconds(s)
            .map_or_else(|_| format!("{s} s"), |t| t.to_string())
    };
    let who = |l: Option<&receipts::model::Leader>| {
        l.map_or_else(
            || "vacant".to_owned(),
            |l| format!("{} ({})", escape(l.miner.as_str()), l.patch.short()),
        )
    };
    Some(match event {
        TitleEvent::Moved {
            round,
            at_s,
            from,
            to,
            reason,
        } => {
            let why = match reason {
                MoveReason::Won => "it won the round".to_owned(),
                MoveReason::Confirmed { won_round } => {
                    format!("its win of round {won_round} confirmed")
                }
                MoveReason::HolderFailed { reason } => {
                    format!("the holder failed: {}", escape(reason))
                }
                MoveReason::Revoked { reason } => {
                    format!("the holder's entry revoked: {}", escape(reason))
                }
            };
            let text = format!(
                "the title moved from {} to {} at {} ({why})",
                who(from.as_ref()),
                who(to.as_ref()),
                at(*at_s)
            );
            (*round, text)
        }
        TitleEvent::Pending {
            round,
            challenger,
            earliest_confirmation_s,
        } => (
            *round,
            format!(
                "{} won: pending, its confirmation round can end from {}",
                who(Some(challenger)),
                at(*earliest_confirmation_s)
            ),
        ),
        TitleEvent::NotConfirmed {
            round,
            challenger,
            won_round,
            requeue,
        } => (
            *round,
            format!(
                "{}'s win of round {won_round} not confirmed: the margin did not reproduce{}",
                who(Some(challenger)),
                if *requeue { "; back to the queue" } else { "" }
            ),
        ),
        TitleEvent::Remeasured { round, holder } => (
            *round,
            format!("{} re-measured: it keeps the title", who(Some(holder))),
        ),
        TitleEvent::RevokedEntry { round, entry } => (
            *round,
            format!("{} revoked (its evidence kept)", who(Some(entry))),
        ),
        TitleEvent::Ignored { .. } => return None,
    })
}

/// `title.round` of a v7 round `record` (nothing before v7, whose rounds are regular
/// rounds on the real clock): `kind` and `clock` are present, and the submissions its
/// kind names (a confirmation's challenger and holder, a re-measurement's holder) are
/// entries it seated.
pub(crate) fn check_title_round(
    report: &mut VerifyReport,
    record: &RoundRecord,
    version: crate::PredicateVersion,
) {
    use receipts::model::{Leader, RoundKindRecord};
    if version < crate::PredicateVersion::V7 {
        return;
    }
    let fail = |field: &str, message: String| FailureReason::TitleRound {
        field: field.to_owned(),
        message,
    };
    let seated = |field: &str, leader: &Leader| {
        let found = record
            .entries
            .iter()
            .any(|e| e.patch == Some(leader.patch) && e.miner.as_ref() == Some(&leader.miner));
        if found {
            Ok(())
        } else {
            Err(fail(
                field,
                format!(
                    "names {} ({}), which the round did not seat",
                    leader.miner, leader.patch
                ),
            ))
        }
    };
    let result = match (&record.kind, record.clock) {
        (None, _) => Err(fail("kind", "missing (required from v7)".to_owned())),
        (_, None) => Err(fail("clock", "missing (required from v7)".to_owned())),
        (Some(RoundKindRecord::Regular), Some(_)) => Ok(()),
        (Some(RoundKindRecord::Confirmation { challenger, holder }), Some(_)) => {
            seated("kind.challenger", challenger).and_then(|()| match holder {
                Some(holder) => seated("kind.holder", holder),
                None => Ok(()),
            })
        }
        (Some(RoundKindRecord::Remeasure { holder }), Some(_)) => seated("kind.holder", holder),
    };
    report.record(CheckName::TitleRound, Some("kind".to_owned()), result);
}

#[cfg(test)]
mod tests {
    use super::revocation_placement;

    #[test]
    fn a_revocation_stands_between_its_after_round_and_the_next_round() {
        // Round 3's receipt at 10, round 4 opened at 14: a revocation at 12 after round 3.
        assert_eq!(revocation_placement(12, 3, Some(10), Some(14)), Ok(()));
        // The last round sealed: nothing opened after it yet.
        assert_eq!(revocation_placement(12, 3, Some(10), None), Ok(()));
        // It claims round 4 (sealed at 18) when it was logged before round 4 opened.
        assert_eq!(
            revocation_placement(12, 4, Some(18), None),
            Err(
                "its afterRound is 4, but round 4's receipt is logged later, at index 18"
                    .to_owned()
            )
        );
        // It claims round 2 when round 3 had opened (at 8) before it was logged.
        assert_eq!(
            revocation_placement(12, 2, Some(6), Some(8)),
            Err(
                "its afterRound is 2, but round 3 opened before it, at index 8: it takes effect after a later round"
                    .to_owned()
            )
        );
    }
}
