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
//! What it cannot recompute without the fetched tree (not published): the findings
//! themselves and the fingerprint; the rules digest names the rules file that made them.

use receipts::model::{
    CopyOutcome, EventKind, Gate, PipelineState, ReviewRecord, Submission, Verdict,
};
use receipts::rules::copy::{Commitment, detect_copy};

use crate::files::recomputed;
use crate::{CheckName, FailureReason, VerifyReport};

/// Records `submissions.review` for every record of `records` (file, record) that has a
/// review.
pub(crate) fn check_reviews(report: &mut VerifyReport, records: &[(String, Submission)]) {
    for (file, submission) in records {
        let has_review = submission
            .repository
            .as_ref()
            .is_some_and(|r| r.review.is_some());
        if has_review {
            let result = check_review(file, submission, records);
            report.record(CheckName::SubmissionReview, Some(file.clone()), result);
        }
    }
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
    let copy = recompute_copy(submission, review, records);
    if review.copy != copy {
        return Err(recomputed(
            file,
            field("copy"),
            show_copy(&review.copy),
            show_copy(&copy),
        ));
    }
    if let Some(resolution) = &review.resolution
        && (review.verdict != Verdict::NeedsHuman || resolution.verdict == Verdict::NeedsHuman)
    {
        return Err(recomputed(
            file,
            field("resolution.verdict"),
            format!(
                "{} on a {} review",
                resolution.verdict.as_str(),
                review.verdict.as_str()
            ),
            "PASS or FAIL, and only on a NEEDS-HUMAN review",
        ));
    }
    check_state(file, submission, review)
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
                rules_digest: Sha256Hex::digest(b"rules"),
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
}
