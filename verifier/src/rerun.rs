//! A rerun bundle (`referee verify --rerun --key`; content/verifying.md, Re-running a
//! round): after the envelope, Statement and file checks every bundle gets
//! ([`crate::envelope`]), the re-run's own checks — that `original.statement.json` is a
//! subject, hashes to the digest the predicate names and is the round Statement it names
//! (`rerun.original`); that every file an entry names is a subject (`files.named`); and
//! that the tolerance follows from its basis, each part's verdict from its findings and
//! the overall verdict from the parts (`rerun.verdict`), recomputed with
//! `receipts::rules::rerun`. What the re-run measured is taken as the signer's word: only
//! another re-run checks it.

use std::path::Path;

use serde::Deserialize;

use crate::{CheckName, FailureReason, VerifyReport};
use receipts::bundle::{ENVELOPE_FILE, MAX_ENVELOPE_BYTES};
use receipts::canonical::from_slice_strict;
use receipts::dsse::RawEnvelope;
use receipts::fsutil::read_limited;
use receipts::layout::DataError;
use receipts::model::{
    Comparison, Finding, FindingKind, RERUN_PREDICATE_TYPE, ROUND_PREDICATE_TYPES, RerunRecord,
    RerunVerdict, RoundRecord, Severity, Sha256Hex,
};
use receipts::rules::rerun::{
    item_tolerance_micro_nats, item_within, overall_verdict, seat_severity, speedup_within,
    tolerance_of, tolerance_ppm, verdict_of,
};
use receipts::statement::{PredicateText, Statement};

use crate::files::{recomputed, same};

/// The re-run checks on `statement` of the bundle in `dir` (its predicate type is
/// [`receipts::model::RERUN_PREDICATE_TYPE`]): `rerun.original`, `files.named` and
/// `rerun.verdict`, or all three not run when the predicate does not fit its schema.
pub(crate) fn check_rerun(
    report: &mut VerifyReport,
    dir: &Path,
    statement: &Statement<PredicateText>,
) {
    let Ok(record) = statement.predicate_as::<RerunRecord>() else {
        report.not_run(
            &[
                CheckName::RerunOriginal,
                CheckName::FilesNamed,
                CheckName::RerunVerdict,
            ],
            CheckName::PredicateSchema,
        );
        return;
    };
    let original = check_original(dir, statement, &record);
    report.record(
        CheckName::RerunOriginal,
        Some("original".to_owned()),
        original,
    );
    for entry in &record.entries {
        for file in entry.rerun.iter().flat_map(|m| &m.files) {
            let named = statement.subject.iter().any(|s| s.name == *file);
            let result = named.then_some(()).ok_or(FailureReason::FileNotNamed {
                field: format!("entries[{}].rerun.files", entry.index),
                file: file.clone(),
            });
            report.record(CheckName::FilesNamed, Some(file.clone()), result);
        }
    }
    let v2 = statement.predicate_type == RERUN_PREDICATE_TYPE;
    report.record(
        CheckName::RerunVerdict,
        Some("verdict".to_owned()),
        check_verdict(&record, v2),
    );
}

/// `rerun.original`: the original Statement's file is a subject, hashes to
/// `original.statementDigest`, and is a round Statement of `original.predicateType`
/// whose campaign and round are the predicate's.
fn check_original(
    dir: &Path,
    statement: &Statement<PredicateText>,
    record: &RerunRecord,
) -> Result<(), FailureReason> {
    let original = &record.original;
    let file = original.statement.as_str();
    if !statement.subject.iter().any(|s| s.name == file) {
        return Err(FailureReason::FileNotNamed {
            field: "original.statement".to_owned(),
            file: file.to_owned(),
        });
    }
    receipts::bundle::check_subject_name(file).map_err(|rule| FailureReason::InputInvalid {
        file: file.to_owned(),
        message: rule.to_owned(),
    })?;
    let bytes = read_limited(&dir.join(file), MAX_ENVELOPE_BYTES).map_err(|e| {
        FailureReason::InputMissing {
            file: file.to_owned(),
            message: e.to_string(),
        }
    })?;
    let actual = Sha256Hex::digest(&bytes);
    if actual != original.statement_digest {
        return Err(FailureReason::InputDigestMismatch {
            file: file.to_owned(),
            actual: Box::new(actual),
            field: "original.statementDigest".to_owned(),
            recorded: Box::new(original.statement_digest),
        });
    }
    let invalid = |message: String| FailureReason::InputInvalid {
        file: file.to_owned(),
        message,
    };
    let parsed: Statement =
        from_slice_strict(&bytes, MAX_ENVELOPE_BYTES).map_err(|e| invalid(e.to_string()))?;
    same(
        ENVELOPE_FILE,
        "original.predicateType",
        original.predicate_type.as_str(),
        parsed.predicate_type.as_str(),
    )?;
    if !ROUND_PREDICATE_TYPES.contains(&parsed.predicate_type.as_str()) {
        return Err(invalid(format!(
            "predicateType `{}` is not a round predicate",
            parsed.predicate_type
        )));
    }
    let round = RoundRecord::deserialize(&parsed.predicate)
        .map_err(|e| invalid(format!("its round predicate: {e}")))?;
    same(
        ENVELOPE_FILE,
        "original.campaign",
        &original.campaign,
        &round.campaign,
    )?;
    same(ENVELOPE_FILE, "original.round", original.round, round.round)
}

/// `rerun.verdict`: the tolerance is the one its basis gives (capped, from rerun v2:
/// `capped` — a v1 re-run may be uncapped), every finding has the severity its numbers
/// give, every part that was tried has the verdict its findings give, and the overall
/// verdict is the parts'.
fn check_verdict(record: &RerunRecord, capped: bool) -> Result<(), FailureReason> {
    if capped {
        same(
            ENVELOPE_FILE,
            "tolerance.capBp present",
            record.tolerance.cap_bp.is_some(),
            true,
        )?;
    }
    same(
        ENVELOPE_FILE,
        "tolerance",
        &record.tolerance,
        &tolerance_of(&record.tolerance.basis, record.tolerance.cap_bp),
    )?;
    let parts = std::iter::once(("round".to_owned(), &record.round)).chain(
        record
            .entries
            .iter()
            .map(|e| (format!("entries[{}].comparison", e.index), &e.comparison)),
    );
    let allowed = tolerance_ppm(&record.tolerance);
    for (field, part) in parts {
        for (i, finding) in part.findings.iter().enumerate() {
            finding_holds(&format!("{field}.findings[{i}]"), finding, allowed)?;
        }
        part_verdict(&field, part)?;
    }
    same(
        ENVELOPE_FILE,
        "verdict",
        record.verdict,
        overall_verdict(&record.round, record.entries.iter().map(|e| &e.comparison)),
    )
}

/// A finding's severity is the one its own numbers give under the tolerance
/// (`allowed`, ppm): a value that moved is BAD, a seat whose deciding margin lay inside
/// the tolerance or a round status that moved is NOISY; a finding whose values hold
/// (equal, or within their rule) is a failure. A seat's recorded distance is judged by
/// its magnitude, which reads both the contradiction a capped re-run records (never
/// negative) and the signed distance of re-runs sealed before the cap.
fn finding_holds(field: &str, finding: &Finding, allowed: u64) -> Result<(), FailureReason> {
    let moved = |differs: bool| differs.then_some(Severity::Bad);
    let expected = match &finding.check {
        FindingKind::RequestSequence { original, rerun }
        | FindingKind::EngineConfig { original, rerun } => moved(original != rerun),
        FindingKind::Status {
            original,
            rerun,
            original_reason,
            rerun_reason,
        } => moved(original != rerun || original_reason != rerun_reason),
        FindingKind::Correctness {
            original_passed,
            rerun_passed,
        } => moved(original_passed != rerun_passed),
        FindingKind::ItemDistance {
            original_micro_nats,
            rerun_micro_nats,
            tolerance_micro_nats,
            ..
        } => {
            let rule = [
                item_tolerance_micro_nats(true),
                item_tolerance_micro_nats(false),
            ];
            moved(
                rule.contains(tolerance_micro_nats)
                    && !item_within(
                        *original_micro_nats,
                        *rerun_micro_nats,
                        *tolerance_micro_nats,
                    ),
            )
        }
        FindingKind::Speedup {
            original_ppm,
            rerun_ppm,
            tolerance_ppm,
        } => {
            moved(*tolerance_ppm == allowed && !speedup_within(*original_ppm, *rerun_ppm, allowed))
        }
        FindingKind::RoundStatus { original, rerun } => {
            (original != rerun).then_some(Severity::Noisy)
        }
        FindingKind::Seat {
            original,
            rerun,
            margin_distance_ppm,
            tolerance_ppm,
        } => (original != rerun && *tolerance_ppm == allowed)
            .then(|| seat_severity(*margin_distance_ppm, allowed)),
    };
    same(
        ENVELOPE_FILE,
        &format!("{field}.severity"),
        Some(finding.severity),
        expected,
    )
}

/// A tried part's verdict is its findings' ([`verdict_of`]); a part that failed or was
/// not tried says why and lists no finding.
fn part_verdict(field: &str, part: &Comparison) -> Result<(), FailureReason> {
    match part.verdict {
        RerunVerdict::Fail | RerunVerdict::Unkwn if part.reason.is_none() => Err(recomputed(
            ENVELOPE_FILE,
            format!("{field}.reason"),
            "none",
            format!("a reason for {}", part.verdict),
        )),
        RerunVerdict::Fail | RerunVerdict::Unkwn => Ok(()),
        verdict => same(
            ENVELOPE_FILE,
            &format!("{field}.verdict"),
            verdict,
            verdict_of(&part.findings),
        ),
    }
}

/// The rerun record of the bundle in `dir`, read without checking any signature: for
/// showing what a bundle that verified re-ran.
///
/// Errors: [`DataError::Io`] when the envelope cannot be read, [`DataError::Parse`] when
/// it, its Statement or its predicate does not parse.
pub fn read_rerun_record(dir: &Path) -> Result<RerunRecord, DataError> {
    let path = dir.join(ENVELOPE_FILE);
    let bytes = read_limited(&path, MAX_ENVELOPE_BYTES).map_err(|source| {
        DataError::Io(receipts::fsutil::IoError {
            action: "reading",
            path: path.clone(),
            source,
        })
    })?;
    let parse = |message: String| DataError::Parse {
        path: path.clone(),
        message,
    };
    let envelope = RawEnvelope::parse(&bytes, MAX_ENVELOPE_BYTES)
        .and_then(|(raw, _)| raw.decode())
        .map_err(|e| parse(e.to_string()))?;
    let statement: Statement<PredicateText> =
        from_slice_strict(&envelope.payload, MAX_ENVELOPE_BYTES)
            .map_err(|e| parse(format!("its statement: {e}")))?;
    statement
        .predicate_as()
        .map_err(|e| parse(format!("its rerun predicate: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::model::Leader;

    fn finding(severity: Severity, check: FindingKind) -> Finding {
        Finding { severity, check }
    }

    #[test]
    fn a_speedup_finding_must_lie_beyond_the_tolerance() {
        let speedup = |rerun_ppm| FindingKind::Speedup {
            original_ppm: 0,
            rerun_ppm,
            tolerance_ppm: 500_000,
        };
        assert!(finding_holds("f", &finding(Severity::Bad, speedup(500_001)), 500_000).is_ok());
        // Within the tolerance: no finding may claim it moved.
        assert!(finding_holds("f", &finding(Severity::Bad, speedup(500_000)), 500_000).is_err());
        // A tolerance other than the record's.
        assert!(finding_holds("f", &finding(Severity::Bad, speedup(500_001)), 400_000).is_err());
    }

    #[test]
    fn a_moved_seat_is_noisy_exactly_when_its_contradiction_lay_inside_the_tolerance() {
        let leader = Leader {
            patch: Sha256Hex::digest(b"diff"),
            miner: "m".parse().expect("miner"),
        };
        let seat = |distance| FindingKind::Seat {
            original: None,
            rerun: Some(leader.clone()),
            margin_distance_ppm: Some(distance),
            tolerance_ppm: 100_000,
        };
        assert!(finding_holds("f", &finding(Severity::Noisy, seat(-100_000)), 100_000).is_ok());
        assert!(finding_holds("f", &finding(Severity::Bad, seat(-100_000)), 100_000).is_err());
        assert!(finding_holds("f", &finding(Severity::Bad, seat(-100_001)), 100_000).is_ok());
        // A capped re-run records the contradiction, never negative.
        assert!(finding_holds("f", &finding(Severity::Noisy, seat(0)), 100_000).is_ok());
        assert!(finding_holds("f", &finding(Severity::Bad, seat(100_001)), 100_000).is_ok());
    }
}
