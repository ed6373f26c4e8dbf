//! The review stage of a repository submission (content/review.md), after the manifest
//! holds (`surface_ok`): the static rules and the campaign's LLM review command when it
//! names one, then copy detection against the campaign's earlier commitments. Everything
//! is recorded in the record's `repository.review`, then:
//!
//! - `PASS` and no copy: `surface_ok → bench_queued`, the reason naming the rules digest
//!   and, for a `derivedFrom` submission, its original and the margin it must beat;
//! - `FAIL`, or a copy of an earlier commitment: `rejected` at gate `review`, the reason
//!   listing the findings or naming the original it copies (which is credited);
//! - `NEEDS-HUMAN`: the record stays in `surface_ok` until a person decides
//!   ([`resolve`], `referee review --resolve`: signed and logged as a
//!   `review-resolution` statement).
//!
//! A record reviewed already is never reviewed again: an interrupted ingest resumes at
//! the move its recorded review decides.

use std::collections::BTreeSet;

use ::review::llm::{CommandReviewer, LlmReviewer};
use ::review::{ReviewInput, RuleSet, WeightFile};
use receipts::layout::CampaignDir;
use receipts::model::{
    Campaign, CopyOutcome, CopyReason, Gate, PipelineState, ReviewRecord, ReviewResolution,
    Sha256Hex, Submission, Timestamp, Verdict,
};
use receipts::rules::copy::{Commitment as CopyCommitment, detect_copy};
use receipts::tlog::entry::EntryKind;
use receipts::tlog::statements::{
    REVIEW_RESOLUTION_PREDICATE_TYPE, ReviewResolutionPredicate, submission_subject,
};

use super::{Commitment, FetchedTree, RepositoryError, load_manifest, tree_dir};
use crate::statements::StatementLog;
use crate::store::CampaignStore;

/// Reviews the submission in `surface_ok` unless it was reviewed already, records the
/// review, and makes the move it decides. Returns whether the walk goes on (false: it
/// waits for a person).
///
/// Errors: [`RepositoryError::Review`] when the tree cannot be read or the LLM review
/// command gives no verdict (the record stays in `surface_ok`, unreviewed, and the next
/// ingest retries); [`RepositoryError::Manifest`] when the validated manifest no longer
/// reads; data directory errors.
pub(crate) fn review_stage(
    campaign_dir: &CampaignDir,
    campaign: &Campaign,
    submission: &mut Submission,
) -> Result<bool, RepositoryError> {
    let reviewed = submission
        .repository
        .as_ref()
        .and_then(|r| r.review.clone());
    let record = match reviewed {
        Some(record) => record,
        None => {
            let record = review_submission(campaign_dir, campaign, submission)?;
            if let Some(repository) = submission.repository.as_mut() {
                repository.review = Some(record.clone());
            }
            campaign_dir.save_submission(submission)?;
            record
        }
    };
    settle(campaign, submission, &record, Timestamp::now())
}

/// Makes the move `record` decides ([`ReviewRecord::decision`]); false when it waits for
/// a person.
fn settle(
    campaign: &Campaign,
    submission: &mut Submission,
    record: &ReviewRecord,
    at: Timestamp,
) -> Result<bool, RepositoryError> {
    match record.decision() {
        Verdict::NeedsHuman => Ok(false),
        Verdict::Pass => {
            submission.transition(
                PipelineState::BenchQueued,
                at,
                pass_reason(campaign, record),
            )?;
            Ok(true)
        }
        Verdict::Fail => {
            submission.reject(Gate::Review, at, fail_reason(record))?;
            Ok(true)
        }
    }
}

/// Runs the review of the submission's fetched tree and copy detection.
fn review_submission(
    campaign_dir: &CampaignDir,
    campaign: &Campaign,
    submission: &Submission,
) -> Result<ReviewRecord, RepositoryError> {
    let tree = FetchedTree::load(&tree_dir(campaign_dir, &submission.sha256))?;
    let manifest_error = |message: String| RepositoryError::Manifest {
        submission: submission.sha256.to_string(),
        message,
    };
    let manifest = load_manifest(&tree).map_err(|e| manifest_error(e.message))?;
    let mut weights = Vec::new();
    let mut base_weights = BTreeSet::new();
    for weight in &manifest.weights {
        let sha256: Sha256Hex = weight
            .sha256
            .parse()
            .map_err(|_| manifest_error(format!("weight `{}`: bad sha256", weight.path)))?;
        if !weight.quantised {
            // A pinned file of the base model: every submission of the track may ship it.
            base_weights.insert(sha256);
        }
        weights.push(WeightFile {
            path: weight.path.clone(),
            sha256,
        });
    }
    let derived_from = match &manifest.derived_from {
        Some(text) => Some(
            text.parse::<Commitment>()
                .map_err(|e| manifest_error(format!("`derivedFrom`: {e}")))?
                .digest()
                .to_string(),
        ),
        None => None,
    };
    let input = ReviewInput {
        root: tree.files_root(),
        weights,
        derived_from: derived_from.clone(),
        campaign_markers: vec![campaign.id.to_string()],
    };
    let rules = RuleSet::builtin()?;
    let reviewer = campaign.review_command.as_deref().map(CommandReviewer::new);
    let review = ::review::review(
        &input,
        &rules,
        reviewer.as_ref().map(|r| r as &dyn LlmReviewer),
    )?;
    let committed_at = submission
        .repository
        .as_ref()
        .map_or_else(Timestamp::now, |r| r.committed_at);
    let candidate = ::review::copy::commitment_of_tree(
        submission.sha256.to_string(),
        committed_at,
        &input,
        &rules,
        &base_weights,
    )?;
    let reviewed_at = Timestamp::now();
    let others = reviewed_commitments(&campaign_dir.list_submissions()?, &submission.sha256);
    let copy = detect_copy(&candidate, &others);
    Ok(ReviewRecord {
        rules_version: review.static_review.rules_version,
        rules_digest: review.static_review.rules_digest,
        findings: review.static_review.findings,
        static_verdict: review.static_review.verdict,
        llm: review.llm,
        verdict: review.verdict,
        reviewed_at,
        derived_from,
        fingerprint: candidate.fingerprint,
        copy,
        resolution: None,
    })
}

/// The commitments copy detection compares a submission with: every other record of the
/// campaign with a recorded review, as its record holds it. The verifier rebuilds the
/// same list from the records, keeping those reviewed at or before the candidate.
pub fn reviewed_commitments(records: &[Submission], except: &Sha256Hex) -> Vec<CopyCommitment> {
    records
        .iter()
        .filter(|s| &s.sha256 != except)
        .filter_map(|s| {
            let repository = s.repository.as_ref()?;
            let review = repository.review.as_ref()?;
            Some(CopyCommitment {
                submission: s.sha256.to_string(),
                committed_at: repository.committed_at,
                fingerprint: review.fingerprint.clone(),
                derived_from: review.derived_from.clone(),
            })
        })
        .collect()
}

/// The `bench_queued` move's reason.
fn pass_reason(campaign: &Campaign, record: &ReviewRecord) -> String {
    let how = match &record.resolution {
        Some(r) => format!("NEEDS-HUMAN resolved PASS by the evaluator: {}", r.reason),
        None => "PASS".to_owned(),
    };
    let copy = match &record.copy {
        CopyOutcome::Derived { original } => format!(
            "derived from {original}: it must beat that submission by the campaign's margin ({} bp)",
            // The derived-work margin, when larger (receipts::rules::review::derived_margin_bp).
            campaign
                .derived_margin_bp
                .unwrap_or(0)
                .max(campaign.overtake_margin_bp)
        ),
        _ => "no earlier commitment copied".to_owned(),
    };
    format!(
        "review {how} (rules v{} sha256 {}, {} findings); {copy}",
        record.rules_version,
        record.rules_digest,
        record.findings.len()
    )
}

/// The `rejected` move's reason: the copy's original, or the findings (and the LLM's and
/// the person's verdicts).
fn fail_reason(record: &ReviewRecord) -> String {
    if let CopyOutcome::Copy { original, reason } = &record.copy {
        let why = match reason {
            CopyReason::IdenticalWeights { sha256 } => {
                format!("identical weights file (sha256 {sha256})")
            }
            CopyReason::SameRuntimeCode { code } => {
                format!("the same runtime code once cosmetics are taken out (sha256 {code})")
            }
        };
        return format!(
            "disqualified as a copy of submission {original}, committed earlier and credited: {why}"
        );
    }
    let mut parts = vec![format!(
        "review {} (rules v{} sha256 {})",
        record.verdict.as_str(),
        record.rules_version,
        record.rules_digest
    )];
    parts.extend(record.findings.iter().map(|f| {
        let place = f
            .line
            .map_or_else(|| f.file.clone(), |l| format!("{}:{l}", f.file));
        format!(
            "{} {} at {place}: {}",
            f.severity.as_str(),
            f.rule,
            f.detail
        )
    }));
    if let Some(llm) = &record.llm {
        parts.push(format!(
            "LLM review `{}`: {} (transcript sha256 {})",
            llm.command,
            llm.verdict.as_str(),
            llm.transcript_sha256
        ));
    }
    if let Some(r) = &record.resolution {
        parts.push(format!(
            "NEEDS-HUMAN resolved FAIL by the evaluator: {}",
            r.reason
        ));
    }
    parts.join("; ")
}

/// Why a resolution was refused.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The submission is not a repository submission waiting for a person.
    #[error(
        "submission {submission} does not wait for a person's review: {why} (only a NEEDS-HUMAN review in `surface_ok` is resolved)"
    )]
    NotWaiting {
        /// The submission.
        submission: String,
        /// What it is instead.
        why: String,
    },
    /// A person's verdict is `PASS` or `FAIL`.
    #[error("a resolution's verdict is PASS or FAIL, not NEEDS-HUMAN")]
    NeedsHumanVerdict,
}

fn not_a_repository(submission: &Submission) -> ResolveError {
    ResolveError::NotWaiting {
        submission: submission.sha256.to_string(),
        why: format!("it is `{}` with no review", submission.state),
    }
}

/// Checks that `submission` waits for a person's decision: a repository submission in
/// `surface_ok` whose review is `NEEDS-HUMAN`, unresolved and no copy.
///
/// Errors: [`ResolveError::NotWaiting`] saying what it is instead.
pub fn check_waiting(submission: &Submission) -> Result<(), ResolveError> {
    let not_waiting = |why: String| ResolveError::NotWaiting {
        submission: submission.sha256.to_string(),
        why,
    };
    let review = submission
        .repository
        .as_ref()
        .and_then(|r| r.review.as_ref())
        .ok_or_else(|| not_a_repository(submission))?;
    if submission.state != PipelineState::SurfaceOk || review.resolution.is_some() {
        return Err(not_waiting(format!(
            "it is `{}`, already decided",
            submission.state
        )));
    }
    if review.decision() != Verdict::NeedsHuman {
        return Err(not_waiting(format!(
            "its review decided {}",
            review.decision().as_str()
        )));
    }
    Ok(())
}

/// A person's decision on a `NEEDS-HUMAN` review, as `referee review --resolve` gives it.
#[derive(Clone, Debug)]
pub struct Resolution<'a> {
    /// The submission record's key.
    pub submission: &'a Sha256Hex,
    /// `PASS` or `FAIL`.
    pub verdict: Verdict,
    /// Why, in the person's words (recorded and logged raw).
    pub reason: &'a str,
    /// When it was decided.
    pub at: Timestamp,
}

/// Records a person's decision on the `NEEDS-HUMAN` review of a repository submission,
/// under the campaign's lock: signs it with the evaluator key and logs it as a
/// `review-resolution` statement (through `log`), records it in the review with the
/// statement's envelope digest and log index, and makes the move it decides:
/// `bench_queued` on `PASS`, `rejected` at gate `review` on `FAIL`. Returns the record.
///
/// Errors: [`RepositoryError::Resolve`] when the submission does not wait for a person or
/// the verdict is `NEEDS-HUMAN` (nothing is logged); the statement's, the data
/// directory's and the model's errors.
pub fn resolve(
    campaign_dir: &CampaignDir,
    resolution: &Resolution<'_>,
    log: &StatementLog<'_>,
) -> Result<Submission, RepositoryError> {
    let _lock = campaign_dir.lock()?;
    let campaign = campaign_dir.load_campaign()?.campaign;
    let mut submission = campaign_dir.load_submission(resolution.submission)?;
    check_waiting(&submission)?;
    if resolution.verdict == Verdict::NeedsHuman {
        return Err(ResolveError::NeedsHumanVerdict.into());
    }
    let Some(repository) = submission.repository.as_mut() else {
        return Err(not_a_repository(&submission).into());
    };
    let Some(review) = repository.review.as_mut() else {
        return Err(not_a_repository(&submission).into());
    };
    let predicate = ReviewResolutionPredicate {
        campaign: campaign.id.clone(),
        record: submission.sha256,
        rules_digest: review.rules_digest,
        verdict: resolution.verdict,
        reason: resolution.reason.to_owned(),
        resolved_at: resolution.at,
    };
    let subject = submission_subject(
        &submission.sha256,
        &repository.tree_sha256.unwrap_or(submission.sha256),
    );
    let logged = log.log(
        campaign_dir,
        EntryKind::ReviewResolution,
        None,
        vec![subject],
        REVIEW_RESOLUTION_PREDICATE_TYPE,
        &predicate,
    )?;
    review.resolution = Some(ReviewResolution {
        verdict: resolution.verdict,
        reason: resolution.reason.to_owned(),
        resolved_at: resolution.at,
        envelope_sha256: logged.envelope_sha256,
        log_index: logged.index,
    });
    let record = review.clone();
    settle(&campaign, &mut submission, &record, resolution.at)?;
    campaign_dir.save_submission(&submission)?;
    Ok(submission)
}
