//! A round bundle's inputs against what the predicate records about them
//! (content/verifying.md): the frozen campaign's copy hashes to the campaign digest,
//! `inputs/miners.json` to `minersDigest`, each diff copy (a repository campaign's
//! commitment copy, `inputs/commitments/<sha256>.txt`) to its patch hash, a JSONL
//! prompt source to the campaign's pin; then the request-sequence digest is regenerated
//! from the revealed seeds and that campaign with `receipts::rules::workload`.
//!
//! The files were already checked against their subjects (step 6); these checks bind the
//! predicate's numbers to them, so an input copy edited and re-sealed with the
//! evaluator's key no longer matches the digest the round-opened statement published.

use std::path::Path;

use crate::{CheckName, FailureReason, VerifyReport};
use receipts::fsutil::read_limited;
use receipts::layout::{
    CAMPAIGN_INPUT, CAMPAIGN_TOML_INPUT, MINERS_INPUT, PROMPTS_INPUT, commitment_input, patch_input,
};
use receipts::model::{FrozenCampaign, PromptSource, RoundRecord, Sha256Hex, SubmissionKind};
use receipts::rules::workload::Workload;

use crate::PredicateVersion;

/// Largest input copy read, bytes (a diff is bounded far below this by the campaign).
const MAX_INPUT_BYTES: usize = 64 << 20;

/// Runs `inputs.campaign`, `inputs.miners`, `inputs.patches` and
/// `requestSequence.digest` on the round `record` of the bundle in `dir`. Returns the
/// bundle's frozen campaign when `inputs.campaign` passed (the later checks take their
/// bounds from it).
pub(crate) fn check_inputs(
    report: &mut VerifyReport,
    dir: &Path,
    record: &RoundRecord,
    version: PredicateVersion,
) -> Option<FrozenCampaign> {
    let campaign = check_campaign(report, dir, record);
    let miners = read(dir, MINERS_INPUT).and_then(|bytes| {
        digest_matches(MINERS_INPUT, "minersDigest", &record.miners_digest, &bytes)
    });
    report.record(
        CheckName::InputsMiners,
        Some(MINERS_INPUT.to_owned()),
        miners,
    );
    // A repository campaign's entries carry their commitment's text in place of a diff.
    let repository = campaign
        .as_ref()
        .is_some_and(|c| c.campaign.submission_kind() == SubmissionKind::Repository);
    for patch in record.entries.iter().filter_map(|e| e.patch.as_ref()) {
        let file = if repository {
            commitment_input(patch)
        } else {
            patch_input(patch)
        };
        let result =
            read(dir, &file).and_then(|bytes| digest_matches(&file, "patch", patch, &bytes));
        report.record(CheckName::InputsPatches, Some(file), result);
    }
    match &campaign {
        Some(frozen) => {
            check_request_sequence(report, dir, record, frozen, version);
            check_min_predicate(report, frozen, version);
        }
        None => report.not_run(&[CheckName::RequestSequence], CheckName::InputsCampaign),
    }
    campaign
}

/// `round.minPredicate`, for a campaign that names the oldest predicate its receipts may
/// have (`min_predicate`, recorded by `referee campaign add` from round/v6 on): the
/// receipt's version is at least it, so a receipt sealed as an older version, without
/// the checks added since, fails. Not recorded for a campaign without it: it was frozen
/// before the floor existed. Dropping the floor from a later round's campaign copy
/// changes the campaign digest, which `chain.campaign` holds across the rounds.
fn check_min_predicate(
    report: &mut VerifyReport,
    frozen: &FrozenCampaign,
    version: PredicateVersion,
) {
    let Some(min) = &frozen.campaign.min_predicate else {
        return;
    };
    let floor = PredicateVersion::of(min);
    let result = match floor {
        Some(floor) if version >= floor => Ok(()),
        _ => Err(crate::files::recomputed(
            "receipt.dsse.json",
            "predicateType",
            format!("round/{}", version.name()),
            match floor {
                Some(floor) => format!(
                    "round/{} or later (the campaign's min_predicate)",
                    floor.name()
                ),
                None => format!("a version at least the campaign's min_predicate `{min}`"),
            },
        )),
    };
    report.record(
        CheckName::RoundMinPredicate,
        Some("predicateType".to_owned()),
        result,
    );
}

/// The campaign copy the bundle in `dir` holds, parsed: `inputs/campaign.json`, or a
/// schema-1 `inputs/campaign.toml` when there is no JSON copy; with the file's
/// bundle-relative name. Its digest is `inputs.campaign`'s to check.
pub fn read_campaign_copy(dir: &Path) -> (&'static str, Result<FrozenCampaign, FailureReason>) {
    if dir.join(CAMPAIGN_INPUT).is_file() {
        let parsed = read(dir, CAMPAIGN_INPUT).and_then(|bytes| {
            FrozenCampaign::from_json(CAMPAIGN_INPUT, &bytes)
                .map_err(|e| invalid(CAMPAIGN_INPUT, e))
        });
        (CAMPAIGN_INPUT, parsed)
    } else {
        let parsed = read(dir, CAMPAIGN_TOML_INPUT).and_then(|bytes| {
            FrozenCampaign::from_legacy_toml(CAMPAIGN_TOML_INPUT, &String::from_utf8_lossy(&bytes))
                .map_err(|e| invalid(CAMPAIGN_TOML_INPUT, e))
        });
        (CAMPAIGN_TOML_INPUT, parsed)
    }
}

/// `inputs.campaign`: the campaign copy the bundle holds — `inputs/campaign.json`, or a
/// schema-1 `inputs/campaign.toml` — has the digest the predicate records. Returns the
/// campaign when it does.
fn check_campaign(
    report: &mut VerifyReport,
    dir: &Path,
    record: &RoundRecord,
) -> Option<FrozenCampaign> {
    let recorded = &record.campaign.digest;
    let (file, parsed) = read_campaign_copy(dir);
    let result = parsed.and_then(|frozen| {
        if &frozen.digest != recorded {
            return Err(FailureReason::InputDigestMismatch {
                file: file.to_owned(),
                field: "campaign.digest".to_owned(),
                recorded: Box::new(*recorded),
                actual: Box::new(frozen.digest),
            });
        }
        if frozen.campaign.id != record.campaign.id {
            return Err(FailureReason::InputInvalid {
                file: file.to_owned(),
                message: format!(
                    "its id is `{}`, the receipt's campaign is `{}`",
                    frozen.campaign.id, record.campaign.id
                ),
            });
        }
        Ok(frozen)
    });
    match result {
        Ok(frozen) => {
            report.pass(CheckName::InputsCampaign, Some(file.to_owned()));
            Some(frozen)
        }
        Err(reason) => {
            report.fail(CheckName::InputsCampaign, Some(file.to_owned()), reason);
            None
        }
    }
}

/// `requestSequence.digest`: regenerated from the revealed seeds and the bundle's own
/// campaign (and JSONL prompt copy), it equals `requestSequenceDigest`. Not applicable
/// to a v1 bundle whose prompts came from a JSONL file: v1 did not copy that file.
fn check_request_sequence(
    report: &mut VerifyReport,
    dir: &Path,
    record: &RoundRecord,
    frozen: &FrozenCampaign,
    version: PredicateVersion,
) {
    let target = Some("requestSequenceDigest".to_owned());
    let prompts = match &frozen.campaign.workload.prompt_source {
        PromptSource::Generated => None,
        PromptSource::Jsonl { .. } if version == PredicateVersion::V1 => {
            report.not_applicable(CheckName::RequestSequence, target, version.name());
            return;
        }
        PromptSource::Jsonl { .. } => match read(dir, PROMPTS_INPUT) {
            Ok(bytes) => Some(bytes),
            Err(reason) => {
                report.fail(CheckName::RequestSequence, target, reason);
                return;
            }
        },
    };
    let recomputed = Workload::new(&frozen.campaign, &record.seeds, prompts.as_deref())
        .and_then(|w| w.request_sequence_digest());
    let result = match recomputed {
        Ok(digest) if digest == record.request_sequence_digest => Ok(()),
        Ok(digest) => Err(FailureReason::RequestSequenceMismatch {
            recorded: Box::new(record.request_sequence_digest),
            recomputed: Box::new(digest),
        }),
        Err(e) => Err(FailureReason::InputInvalid {
            file: PROMPTS_INPUT.to_owned(),
            message: e.to_string(),
        }),
    };
    report.record(CheckName::RequestSequence, target, result);
}

/// The bytes of the bundle file `name`.
fn read(dir: &Path, name: &str) -> Result<Vec<u8>, FailureReason> {
    read_limited(&dir.join(name), MAX_INPUT_BYTES).map_err(|e| FailureReason::InputMissing {
        file: name.to_owned(),
        message: e.to_string(),
    })
}

/// `Ok` when `bytes` hash to `recorded`, the predicate's `field`.
fn digest_matches(
    file: &str,
    field: &str,
    recorded: &Sha256Hex,
    bytes: &[u8],
) -> Result<(), FailureReason> {
    let actual = Sha256Hex::digest(bytes);
    if &actual == recorded {
        Ok(())
    } else {
        Err(FailureReason::InputDigestMismatch {
            file: file.to_owned(),
            field: field.to_owned(),
            recorded: Box::new(*recorded),
            actual: Box::new(actual),
        })
    }
}

fn invalid(file: &str, error: impl std::fmt::Display) -> FailureReason {
    FailureReason::InputInvalid {
        file: file.to_owned(),
        message: error.to_string(),
    }
}
