//! `submissions.review` (content/review.md, What the verifier recomputes): a repository
//! submission's recorded review against itself, the campaign's other records and its
//! pipeline state. Per record with a review:
//!
//! - the static verdict is the combined severity of the findings, the LLM's verdict is
//!   its transcript's first line and its transcript hashes to `transcriptSha256`, and the
//!   verdict is the static and the LLM's combined;
//! - copy detection, recomputed ([`receipts::rules::copy::detect_copy`]) from the
//!   recorded fingerprints of the campaign's records reviewed at or before it, gives the
//!   recorded `copy`;
//! - a resolution only on a `NEEDS-HUMAN` review, and its verdict `PASS` or `FAIL`;
//! - the record's state follows the decision: `PASS` past `surface_ok`, `FAIL` (or a
//!   copy) `rejected` at gate `review`, an unresolved `NEEDS-HUMAN` still `surface_ok`.
//!
//! - the rules digest is a known rules file's
//!   ([`receipts::rules::review::KNOWN_RULES`]), and a resolution's statement
//!   (`statements/review-resolution/<sha256>.dsse.json`) hashes to the recorded digest,
//!   says what the record says and is signed by an evaluator key of the keyring.
//!
//! What it cannot recompute without the fetched tree (not published): the findings
//! themselves and the fingerprint; the rules digest names the rules file that made them.
//!
//! `entries.review` ([`check_entry_reviews`], content/review.md, In the round): a round's
//! repository entry carries its review, recomputed from the bundle's copy of the review
//! record and of the resolution's statement, with the same checks of the record, and a
//! seated entry's decision is `PASS`; from v9 a challenger derived from the incumbent
//! carries the margin it was held to (`derivedMarginBp`,
//! [`receipts::rules::review::derived_margin_bp`]), which `paired.decision` applies.

use std::path::Path;

use receipts::dsse::Envelope;
use receipts::keys::Keyring;
use receipts::layout::{resolution_input, review_input};
use receipts::model::{
    CampaignId, CopyOutcome, Entry, EntryResolution, EntryReview, EventKind, FrozenCampaign, Gate,
    PipelineState, ReviewRecord, Role, RoundRecord, Sha256Hex, Submission, SubmissionKind, Verdict,
};
use receipts::rules::copy::{Commitment, detect_copy};
use receipts::rules::review::{derived_margin_bp, entry_review, is_known_rules};
use receipts::statement::Statement;
use receipts::tlog::entry::EntryKind;
use receipts::tlog::statements::{
    MAX_STATEMENT_BYTES, REVIEW_RESOLUTION_PREDICATE_TYPE, ReviewResolutionPredicate,
    statement_path,
};

use crate::files::{read_bytes, read_json, recomputed, show};
use crate::{CheckName, FailureReason, PredicateVersion, VerifyReport};

/// Records `submissions.review` for every record of `records` (file, record) that has a
/// review, the campaign's directory `campaign_dir` holding the resolutions' statements
/// that `keyring`'s evaluator keys must have signed.
pub(crate) fn check_reviews(
    report: &mut VerifyReport,
    campaign_dir: &Path,
    keyring: &Keyring,
    records: &[(String, Submission)],
) {
    for (file, submission) in records {
        let has_review = submission
            .repository
            .as_ref()
            .is_some_and(|r| r.review.is_some());
        if has_review {
            let result = check_review(file, submission, records)
                .and_then(|()| check_logged_resolution(campaign_dir, keyring, file, submission));
            report.record(CheckName::SubmissionReview, Some(file.clone()), result);
        }
    }
}

/// The signed statement of the resolution of `submission`'s review (recorded in `file`),
/// when it has one: [`check_resolution_statement`] over
/// `<campaign_dir>/statements/review-resolution/<envelopeSha256>.dsse.json`.
fn check_logged_resolution(
    campaign_dir: &Path,
    keyring: &Keyring,
    file: &str,
    submission: &Submission,
) -> Result<(), FailureReason> {
    let Some(review) = submission
        .repository
        .as_ref()
        .and_then(|r| r.review.as_ref())
    else {
        return Ok(());
    };
    let Some(resolution) = &review.resolution else {
        return Ok(());
    };
    let path = statement_path(
        campaign_dir,
        EntryKind::ReviewResolution,
        &resolution.envelope_sha256,
    );
    let name = path
        .strip_prefix(campaign_dir)
        .unwrap_or(&path)
        .display()
        .to_string();
    let bytes = receipts::fsutil::read_limited(&path, MAX_STATEMENT_BYTES).map_err(|e| {
        FailureReason::InputInvalid {
            file: name.clone(),
            message: format!("the statement of {file}'s resolution: {e}"),
        }
    })?;
    check_resolution_statement(
        &name,
        &bytes,
        &submission.campaign,
        &submission.sha256,
        review,
        keyring,
    )
    .map(|_| ())
}

/// Checks the bytes `bytes` of the `review-resolution` statement `name` against the
/// review `review` of submission `record` of campaign `campaign`: they hash to the
/// resolution's `envelopeSha256`, the Statement has the `review-resolution` type and
/// says exactly what the record says (campaign, record, rules digest, verdict, reason,
/// time), and an evaluator key of `keyring` valid at the resolution's time signed it.
/// Returns that key's keyid. `Ok` with an empty keyid when there is no resolution.
///
/// Errors: [`FailureReason::InputInvalid`] naming the statement and what is wrong.
pub(crate) fn check_resolution_statement(
    name: &str,
    bytes: &[u8],
    campaign: &CampaignId,
    record: &Sha256Hex,
    review: &ReviewRecord,
    keyring: &Keyring,
) -> Result<String, FailureReason> {
    let Some(resolution) = &review.resolution else {
        return Ok(String::new());
    };
    let invalid = |message: String| FailureReason::InputInvalid {
        file: name.to_owned(),
        message,
    };
    let digest = Sha256Hex::digest(bytes);
    if digest != resolution.envelope_sha256 {
        return Err(invalid(format!(
            "hashes to {digest}, not the resolution's envelopeSha256 {}",
            resolution.envelope_sha256
        )));
    }
    let envelope = Envelope::from_json(bytes, MAX_STATEMENT_BYTES)
        .map_err(|e| invalid(format!("the envelope: {e}")))?;
    let statement: Statement =
        receipts::canonical::from_slice_strict(&envelope.payload, MAX_STATEMENT_BYTES)
            .map_err(|e| invalid(format!("its Statement: {e}")))?;
    if statement.predicate_type != REVIEW_RESOLUTION_PREDICATE_TYPE {
        return Err(invalid(format!(
            "predicate type `{}`, not `{REVIEW_RESOLUTION_PREDICATE_TYPE}`",
            statement.predicate_type
        )));
    }
    let said: ReviewResolutionPredicate = serde_json::from_value(statement.predicate)
        .map_err(|e| invalid(format!("its predicate: {e}")))?;
    let recorded = ReviewResolutionPredicate {
        campaign: campaign.clone(),
        record: *record,
        rules_digest: review.rules_digest,
        verdict: resolution.verdict,
        reason: resolution.reason.clone(),
        resolved_at: resolution.resolved_at,
    };
    if said != recorded {
        return Err(invalid(format!(
            "says {said:?}, the record says {recorded:?}"
        )));
    }
    let keys: Vec<_> = (keyring.keys().iter())
        .filter(|k| k.is_valid_at(resolution.resolved_at))
        .map(|k| k.key.clone())
        .collect();
    let signers = envelope.verify(&keys, 1).map_err(|e| {
        invalid(format!(
            "no evaluator key valid at {} signed it ({e})",
            resolution.resolved_at
        ))
    })?;
    Ok(signers
        .first()
        .map(|k| k.keyid().to_owned())
        .unwrap_or_default())
}

/// `entries.review` of the round `record` in the bundle `dir`, its campaign `campaign`
/// (when its copy passed `inputs.campaign`): one check per entry with a review, and from
/// v8 per challenger or incumbent of a repository campaign without one.
pub(crate) fn check_entry_reviews(
    report: &mut VerifyReport,
    dir: &Path,
    record: &RoundRecord,
    campaign: Option<&FrozenCampaign>,
    keyring: &Keyring,
    version: PredicateVersion,
) {
    let repository =
        campaign.is_some_and(|c| c.campaign.submission_kind() == SubmissionKind::Repository);
    for entry in &record.entries {
        let target = format!("entries[{}].review", entry.index);
        let result = match (&entry.review, &entry.patch) {
            (None, Some(_)) if repository && version >= PredicateVersion::V8 => Err(recomputed(
                "receipt.dsse.json",
                target.clone(),
                "none",
                "the review of the repository submission it runs",
            )),
            (None, _) => continue,
            (Some(_), None) => Err(recomputed(
                "receipt.dsse.json",
                target.clone(),
                "a review",
                "none: the baseline is not reviewed",
            )),
            (Some(review), Some(patch)) => {
                // The margin recomputed from the campaign (unknown when its copy failed
                // `inputs.campaign`: that check fails the bundle); none before v9.
                let margin = match campaign {
                    Some(frozen) if version >= PredicateVersion::V9 => derived_margin_bp(
                        &frozen.campaign,
                        entry.role,
                        incumbent_patch(record),
                        review.derived_from.as_deref(),
                    ),
                    Some(_) => None,
                    None => review.derived_margin_bp,
                };
                check_entry_review(dir, record, entry, (review, margin), patch, keyring)
            }
        };
        report.record(CheckName::EntryReview, Some(target), result);
    }
}

/// The submission holding the seat before the round `record`: its incumbent's.
pub(crate) fn incumbent_patch(record: &RoundRecord) -> Option<&Sha256Hex> {
    record
        .entries
        .iter()
        .find(|e| e.role == Role::Incumbent)
        .and_then(|e| e.patch.as_ref())
}

/// One entry's review against the bundle's copies (see [`check_entry_reviews`]), its
/// derived-work margin against `derived_margin_bp`.
fn check_entry_review(
    dir: &Path,
    record: &RoundRecord,
    entry: &Entry,
    (review, derived_margin_bp): (&EntryReview, Option<u32>),
    patch: &Sha256Hex,
    keyring: &Keyring,
) -> Result<(), FailureReason> {
    let field = |name: &str| format!("entries[{}].review.{name}", entry.index);
    let input = |name: &str| -> Result<(), FailureReason> {
        if record.inputs.iter().any(|i| i.name == name) {
            Ok(())
        } else {
            Err(FailureReason::FileNotNamed {
                field: "inputs".to_owned(),
                file: name.to_owned(),
            })
        }
    };
    let copy = review_input(patch);
    input(&copy)?;
    let reviewed: ReviewRecord = read_json(dir, &copy)?;
    check_verdicts(&copy, &reviewed, "")?;
    check_resolution_rule(&copy, &reviewed, "")?;
    let keyid = match &reviewed.resolution {
        Some(resolution) => {
            let statement = resolution_input(&resolution.envelope_sha256);
            input(&statement)?;
            let bytes = read_bytes(dir, &statement, MAX_STATEMENT_BYTES)?;
            check_resolution_statement(
                &statement,
                &bytes,
                &record.campaign.id,
                patch,
                &reviewed,
                keyring,
            )?
        }
        None => String::new(),
    };
    let mut expected = entry_review(patch, &reviewed, &keyid);
    expected.derived_margin_bp = derived_margin_bp;
    if let Some((name, claimed, recomputed_value)) = first_difference(review, &expected) {
        return Err(recomputed(
            "receipt.dsse.json",
            field(name),
            claimed,
            recomputed_value,
        ));
    }
    if expected.decision != Verdict::Pass {
        return Err(recomputed(
            "receipt.dsse.json",
            field("decision"),
            expected.decision.as_str(),
            "PASS: only a submission whose review passed runs",
        ));
    }
    Ok(())
}

/// The first field (camelCase, dotted) where `claimed` and `expected` differ, with both
/// values shown; none when they are equal.
fn first_difference(
    claimed: &EntryReview,
    expected: &EntryReview,
) -> Option<(&'static str, String, String)> {
    let resolution = |r: &EntryReview, part: fn(&EntryResolution) -> String| {
        show(r.resolution.as_ref().map(part))
    };
    let fields = [
        ("record", claimed.record.clone(), expected.record.clone()),
        (
            "rulesVersion",
            claimed.rules_version.to_string(),
            expected.rules_version.to_string(),
        ),
        (
            "rulesDigest",
            claimed.rules_digest.to_string(),
            expected.rules_digest.to_string(),
        ),
        (
            "verdict",
            claimed.verdict.as_str().to_owned(),
            expected.verdict.as_str().to_owned(),
        ),
        (
            "decision",
            claimed.decision.as_str().to_owned(),
            expected.decision.as_str().to_owned(),
        ),
        (
            "derivedFrom",
            show(claimed.derived_from.as_ref()),
            show(expected.derived_from.as_ref()),
        ),
        (
            "resolution.verdict",
            resolution(claimed, |r| r.verdict.as_str().to_owned()),
            resolution(expected, |r| r.verdict.as_str().to_owned()),
        ),
        (
            "resolution.statement",
            resolution(claimed, |r| r.statement.clone()),
            resolution(expected, |r| r.statement.clone()),
        ),
        (
            "resolution.keyid",
            resolution(claimed, |r| r.keyid.clone()),
            resolution(expected, |r| r.keyid.clone()),
        ),
        (
            "derivedMarginBp",
            show(claimed.derived_margin_bp),
            show(expected.derived_margin_bp),
        ),
    ];
    fields.into_iter().find(|(_, a, b)| a != b)
}

/// Checks the review of `submission` (recorded in `file`) against `records`, every record
/// of its campaign with its file. `Ok` for a record without a review.
///
/// Errors: [`FailureReason::Recomputed`] naming the first field that does not follow.
pub(crate) fn check_review(
    file: &str,
    submission: &Submission,
    records: &[(String, Submission)],
) -> Result<(), FailureReason> {
    let Some(repository) = submission.repository.as_ref() else {
        return Ok(());
    };
    let Some(review) = repository.review.as_ref() else {
        return Ok(());
    };
    let field = |name: &str| format!("repository.review.{name}");
    check_verdicts(file, review, "repository.review.")?;
    let copy = recompute_copy(submission, review, records);
    if review.copy != copy {
        return Err(recomputed(
            file,
            field("copy"),
            show_copy(&review.copy),
            show_copy(&copy),
        ));
    }
    check_resolution_rule(file, review, "repository.review.")?;
    check_state(file, submission, review)
}

/// A review's own verdicts (`file` holding it, its fields named after `prefix`): its rules
/// digest a known rules file's, the static verdict the findings' combined severity, the
/// LLM's verdict its transcript's first line and the transcript its digest's, the
/// verdict the two combined.
///
/// Errors: [`FailureReason::Recomputed`] naming the first field that does not follow.
fn check_verdicts(file: &str, review: &ReviewRecord, prefix: &str) -> Result<(), FailureReason> {
    let field = |name: &str| format!("{prefix}{name}");
    if !is_known_rules(review.rules_version, &review.rules_digest) {
        return Err(recomputed(
            file,
            field("rulesDigest"),
            review.rules_digest,
            format!(
                "the digest of a known rules file of version {}",
                review.rules_version
            ),
        ));
    }
    let static_verdict = Verdict::of_findings(&review.findings);
    if review.static_verdict != static_verdict {
        return Err(recomputed(
            file,
            field("staticVerdict"),
            review.static_verdict.as_str(),
            static_verdict.as_str(),
        ));
    }
    if let Some(llm) = &review.llm {
        let digest = receipts::model::Sha256Hex::digest(llm.transcript.as_bytes());
        if llm.transcript_sha256 != digest {
            return Err(recomputed(
                file,
                field("llm.transcriptSha256"),
                llm.transcript_sha256,
                digest,
            ));
        }
        let first = llm.transcript.lines().next().unwrap_or("").trim();
        if Verdict::parse(first) != Some(llm.verdict) {
            return Err(recomputed(
                file,
                field("llm.verdict"),
                llm.verdict.as_str(),
                format!("the transcript's first line, {first:?}"),
            ));
        }
    }
    let verdict = Verdict::combine(
        std::iter::once(review.static_verdict).chain(review.llm.as_ref().map(|l| l.verdict)),
    );
    if review.verdict != verdict {
        return Err(recomputed(
            file,
            field("verdict"),
            review.verdict.as_str(),
            verdict.as_str(),
        ));
    }
    Ok(())
}

/// A person's resolution overrides a verdict only as the rules allow: only a
/// `NEEDS-HUMAN` review, and only with `PASS` or `FAIL` (a `FAIL` or a copy stands).
///
/// Errors: [`FailureReason::Recomputed`] on `resolution.verdict`.
fn check_resolution_rule(
    file: &str,
    review: &ReviewRecord,
    prefix: &str,
) -> Result<(), FailureReason> {
    match &review.resolution {
        Some(resolution)
            if review.verdict != Verdict::NeedsHuman
                || resolution.verdict == Verdict::NeedsHuman =>
        {
            Err(recomputed(
                file,
                format!("{prefix}resolution.verdict"),
                format!(
                    "{} on a {} review",
                    resolution.verdict.as_str(),
                    review.verdict.as_str()
                ),
                "PASS or FAIL, and only on a NEEDS-HUMAN review",
            ))
        }
        _ => Ok(()),
    }
}

/// Copy detection over the recorded fingerprints: the campaign's other records reviewed
/// at or before this one.
fn recompute_copy(
    submission: &Submission,
    review: &ReviewRecord,
    records: &[(String, Submission)],
) -> CopyOutcome {
    let commitment = |s: &Submission| {
        let repository = s.repository.as_ref()?;
        let review = repository.review.as_ref()?;
        Some((
            Commitment {
                submission: s.sha256.to_string(),
                committed_at: repository.committed_at,
                fingerprint: review.fingerprint.clone(),
                derived_from: review.derived_from.clone(),
            },
            review.reviewed_at,
        ))
    };
    let others: Vec<Commitment> = records
        .iter()
        .map(|(_, s)| s)
        .filter(|s| s.sha256 != submission.sha256)
        .filter_map(commitment)
        .filter(|(_, reviewed_at)| *reviewed_at <= review.reviewed_at)
        .map(|(c, _)| c)
        .collect();
    match commitment(submission) {
        Some((candidate, _)) => detect_copy(&candidate, &others),
        None => CopyOutcome::Original,
    }
}

fn show_copy(copy: &CopyOutcome) -> String {
    match copy {
        CopyOutcome::Original => "original".to_owned(),
        CopyOutcome::Copy { original, .. } => format!("a copy of {original}"),
        CopyOutcome::Derived { original } => format!("derived from {original}"),
    }
}

/// The record's state against the review's decision.
fn check_state(
    file: &str,
    submission: &Submission,
    review: &ReviewRecord,
) -> Result<(), FailureReason> {
    let rejected_at_review = submission.events.iter().any(|e| {
        matches!(
            e.kind,
            EventKind::Transition {
                to: PipelineState::Rejected,
                gate: Some(Gate::Review),
                ..
            }
        )
    });
    let (holds, expected) = match review.decision() {
        Verdict::Fail => (rejected_at_review, "rejected at gate `review`"),
        Verdict::NeedsHuman => (
            submission.state == PipelineState::SurfaceOk,
            "`surface_ok`, waiting for a person",
        ),
        Verdict::Pass => (
            !rejected_at_review && submission.state != PipelineState::SurfaceOk,
            "past `surface_ok` and not rejected at gate `review`",
        ),
    };
    if holds {
        Ok(())
    } else {
        Err(recomputed(
            file,
            "state",
            submission.state,
            format!(
                "{expected} (the review decides {})",
                review.decision().as_str()
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use receipts::model::review::{Finding, Severity};
    use receipts::model::{
        CopyReason, Fingerprint, LlmReview, RepositoryRecord, ReviewResolution, Sha256Hex,
        Timestamp,
    };

    use super::*;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_unix_seconds(1_800_000_000 + s).expect("time")
    }

    /// A repository record committed at `at(minute * 60)` whose review PASSed with code
    /// digest `code`, walked to `bench_queued`.
    fn record(name: &str, minute: i64, code: &[u8]) -> Submission {
        let sha = Sha256Hex::digest(name.as_bytes());
        let mut s = Submission::committed(
            sha,
            "c".parse().expect("id"),
            "m".parse().expect("miner"),
            sha,
            4,
            at(0),
        );
        s.repository = Some(RepositoryRecord {
            commitment: name.to_owned(),
            committed_at: at(minute * 60),
            coldkey: None,
            tree_sha256: None,
            manifest_sha256: None,
            validation: None,
            review: Some(ReviewRecord {
                rules_version: 1,
                rules_digest: receipts::rules::review::KNOWN_RULES[0]
                    .1
                    .parse()
                    .expect("hex"),
                findings: Vec::new(),
                static_verdict: Verdict::Pass,
                llm: None,
                verdict: Verdict::Pass,
                reviewed_at: at(1000 + minute),
                derived_from: None,
                fingerprint: Fingerprint {
                    weights: BTreeSet::new(),
                    code: Sha256Hex::digest(code),
                    code_files: 1,
                },
                copy: CopyOutcome::Original,
                resolution: None,
            }),
        });
        for to in [
            PipelineState::PickedUp,
            PipelineState::Fetched,
            PipelineState::Verified,
            PipelineState::SurfaceOk,
            PipelineState::BenchQueued,
        ] {
            s.transition(to, at(1), "gate").expect("move");
        }
        s
    }

    fn review_of(s: &mut Submission) -> &mut ReviewRecord {
        s.repository
            .as_mut()
            .and_then(|r| r.review.as_mut())
            .expect("review")
    }

    /// An original and its copy as ingest records them: the copy rejected at `review`.
    fn campaign() -> Vec<(String, Submission)> {
        let original = record("original", 0, b"code");
        let mut copy = record("copy", 5, b"code");
        copy.events.truncate(5);
        copy.state = PipelineState::SurfaceOk;
        copy.reject(Gate::Review, at(2), "a copy").expect("reject");
        review_of(&mut copy).copy = CopyOutcome::Copy {
            original: original.sha256.to_string(),
            reason: CopyReason::SameRuntimeCode {
                code: Sha256Hex::digest(b"code"),
            },
        };
        vec![("original".into(), original), ("copy".into(), copy)]
    }

    fn check(records: &[(String, Submission)], index: usize) -> Result<(), FailureReason> {
        let (file, s) = &records[index];
        check_review(file, s, records)
    }

    fn failed_field(result: Result<(), FailureReason>) -> String {
        match result {
            Err(FailureReason::Recomputed { field, .. }) => field,
            other => panic!("expected a recomputed failure, got {other:?}"),
        }
    }

    #[test]
    fn an_original_and_its_copy_as_recorded_pass() {
        let records = campaign();
        assert_eq!(check(&records, 0), Ok(()));
        assert_eq!(check(&records, 1), Ok(()));
    }

    #[test]
    fn a_copy_recorded_as_an_original_fails() {
        let mut records = campaign();
        review_of(&mut records[1].1).copy = CopyOutcome::Original;
        assert_eq!(failed_field(check(&records, 1)), "repository.review.copy");
        // And crediting the later one instead of the earlier.
        let mut records = campaign();
        review_of(&mut records[0].1).copy = CopyOutcome::Copy {
            original: records[1].1.sha256.to_string(),
            reason: CopyReason::SameRuntimeCode {
                code: Sha256Hex::digest(b"code"),
            },
        };
        assert_eq!(failed_field(check(&records, 0)), "repository.review.copy");
    }

    #[test]
    fn a_pass_over_a_failing_finding_fails() {
        let mut records = campaign();
        review_of(&mut records[0].1).findings.push(Finding {
            file: "a.py".into(),
            line: Some(3),
            rule: "llm.endpoint".into(),
            severity: Severity::Fail,
            detail: "api.openai.com".into(),
        });
        assert_eq!(
            failed_field(check(&records, 0)),
            "repository.review.staticVerdict"
        );
        // With the static verdict forged too, the combined one does not follow... and
        // with every verdict FAIL, the queued state does not.
        let review = review_of(&mut records[0].1);
        review.static_verdict = Verdict::Fail;
        assert_eq!(
            failed_field(check(&records, 0)),
            "repository.review.verdict"
        );
        review_of(&mut records[0].1).verdict = Verdict::Fail;
        assert_eq!(failed_field(check(&records, 0)), "state");
    }

    #[test]
    fn an_llm_verdict_its_transcript_does_not_give_fails() {
        let mut records = campaign();
        let transcript = "FAIL\nit calls a hosted model\n".to_owned();
        review_of(&mut records[0].1).llm = Some(LlmReview {
            command: "reviewer".into(),
            verdict: Verdict::Pass,
            transcript_sha256: Sha256Hex::digest(transcript.as_bytes()),
            transcript,
        });
        assert_eq!(
            failed_field(check(&records, 0)),
            "repository.review.llm.verdict"
        );
        let llm = review_of(&mut records[0].1).llm.as_mut().expect("llm");
        llm.transcript = "PASS\n".into();
        assert_eq!(
            failed_field(check(&records, 0)),
            "repository.review.llm.transcriptSha256"
        );
    }

    #[test]
    fn a_needs_human_queued_without_a_resolution_fails() {
        let mut records = campaign();
        let review = review_of(&mut records[0].1);
        review.findings.push(Finding {
            file: "a.py".into(),
            line: Some(1),
            rule: "exec.subprocess".into(),
            severity: Severity::NeedsHuman,
            detail: "subprocess".into(),
        });
        review.static_verdict = Verdict::NeedsHuman;
        review.verdict = Verdict::NeedsHuman;
        assert_eq!(failed_field(check(&records, 0)), "state");
        review_of(&mut records[0].1).resolution = Some(ReviewResolution {
            verdict: Verdict::Pass,
            reason: "reads the GPU's state".into(),
            resolved_at: at(3),
            envelope_sha256: Sha256Hex::digest(b"envelope"),
            log_index: 0,
        });
        assert_eq!(check(&records, 0), Ok(()));
    }

    /// `records[0]` made a `NEEDS-HUMAN` resolved `PASS`, its statement signed by `signer`
    /// saying `reason` and stored under `campaign_dir`'s statements.
    fn resolved_and_logged(
        campaign_dir: &Path,
        signer: &receipts::keys::PrivateKey,
        reason: &str,
    ) -> Submission {
        let mut s = campaign().remove(0).1;
        let said = ReviewResolutionPredicate {
            campaign: s.campaign.clone(),
            record: s.sha256,
            rules_digest: review_of(&mut s).rules_digest,
            verdict: Verdict::Pass,
            reason: reason.to_owned(),
            resolved_at: at(3),
        };
        let statement = Statement::new(
            Vec::new(),
            REVIEW_RESOLUTION_PREDICATE_TYPE,
            serde_json::to_value(&said).expect("predicate"),
        );
        let bytes = receipts::bundle::sign_statement(&statement, &[signer])
            .expect("signs")
            .to_file_bytes()
            .expect("canonical");
        let envelope_sha256 = Sha256Hex::digest(&bytes);
        let path = statement_path(campaign_dir, EntryKind::ReviewResolution, &envelope_sha256);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, &bytes).expect("statement");
        let review = review_of(&mut s);
        review.verdict = Verdict::NeedsHuman;
        review.resolution = Some(ReviewResolution {
            verdict: Verdict::Pass,
            reason: "reads the GPU's state".into(),
            resolved_at: at(3),
            envelope_sha256,
            log_index: 0,
        });
        s
    }

    #[test]
    fn a_logged_resolution_is_checked_against_the_record_and_the_evaluator_keys() {
        let dir = tempfile::tempdir().expect("tempdir");
        let evaluator = receipts::keys::PrivateKey::from_seed(&[1; 32]);
        let keyring = testkit::keyring(&[&evaluator]);
        let check = |s: &Submission| check_logged_resolution(dir.path(), &keyring, "f", s);
        let honest = resolved_and_logged(dir.path(), &evaluator, "reads the GPU's state");
        assert_eq!(check(&honest), Ok(()));
        let stranger = receipts::keys::PrivateKey::from_seed(&[2; 32]);
        let forged = resolved_and_logged(dir.path(), &stranger, "reads the GPU's state");
        match check(&forged) {
            Err(FailureReason::InputInvalid { file, message }) => {
                assert!(file.starts_with("statements/review-resolution/"), "{file}");
                assert!(message.contains("no evaluator key valid at"), "{message}");
            }
            other => panic!("expected the statement refused, got {other:?}"),
        }
        // The record's reason is not the one the evaluator signed.
        let edited = resolved_and_logged(dir.path(), &evaluator, "it runs nothing");
        match check(&edited) {
            Err(FailureReason::InputInvalid { message, .. }) => {
                assert!(message.contains("the record says"), "{message}");
            }
            other => panic!("expected the statement refused, got {other:?}"),
        }
    }
}
