//! The forgeries of v7's compliance checks (content/verifying.md,
//! `compliance.textAgainstIds` and `compliance.outputLength`; content/correctness.md,
//! Streamed text against the ids and Compliance tests): `fixtures/v7-round`, a real v7
//! round, changed the way an evaluator holding the key could — every subject digest
//! updated, the Statements re-signed, the outcome recomputed so that every other check
//! passes. Each fails exactly its named check.

use std::path::Path;

use crate::forge::*;
use receipts::model::{FrozenCampaign, RoundRecord};
use serde_json::{Value, json};
use verifier::{CheckName, FailureReason, VerifyReport};

const SAMPLE: &str = "correctness/candidate-1-miner-fast-load-sample.json";

/// Forges `fixtures/v7-round` with `files` and `receipt` (which gets the bundle's
/// directory too) and verifies it.
fn forged_v7(files: impl FnOnce(&Path), receipt: impl FnOnce(&Path, &mut Value)) -> VerifyReport {
    forged_fixture("v7-round", files, receipt)
}

/// The one failure of `report`, which must be of check `name`.
fn only_failure(report: &VerifyReport, name: CheckName) -> FailureReason {
    let failed: Vec<_> = report.failures().collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(failed[0].name, name, "{failed:#?}");
    failed[0].reason.clone().expect("a reason")
}

/// The challenger (entry 1) disqualified for `reason`, its score dropped and the
/// outcome recomputed: consistent with every check but the one that recomputes `reason`.
pub(crate) fn disqualify_challenger(dir: &Path, predicate: &mut Value, reason: Value) {
    let challenger = &mut predicate["entries"][1];
    challenger["status"] = json!("disqualified");
    challenger["disqualification"] = json!({
        "reason": reason,
        "detail": "forged",
        "logTail": [],
    });
    let entry = challenger.as_object_mut().expect("entry");
    entry.remove("pairedScore");
    entry.insert("scorePpm".into(), Value::Null);
    let record: RoundRecord = serde_json::from_value(predicate.clone()).expect("record");
    let bytes = std::fs::read(dir.join("inputs/campaign.json")).expect("campaign");
    let frozen = FrozenCampaign::from_json("inputs/campaign.json", &bytes).expect("campaign");
    let outcome = verifier::recomputed_outcome(dir, &record, &frozen).expect("outcome");
    predicate["outcome"] = serde_json::to_value(outcome).expect("json");
}

/// The sample file of the challenger with `change` applied to its JSON.
fn edit_sample(dir: &Path, change: impl FnOnce(&mut Value)) {
    let path = dir.join(SAMPLE);
    let mut file: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    change(&mut file);
    std::fs::write(&path, serde_json::to_vec(&file).expect("json")).expect("write");
}

#[test]
fn the_v7_round_holds_its_streamed_texts_and_lengths() {
    let report = forged_v7(|_| {}, |_, _| {});
    assert!(report.passed(), "{:#?}", failures(&report));
    // The challenger's sample; the challenger's counted runs (not the baseline's).
    assert_eq!(passed(&report, CheckName::TextAgainstIds), 1);
    assert_eq!(passed(&report, CheckName::OutputLength), 1);
}

/// A streamed text changed under its ids: the entry, scored, should have been
/// `text_not_ids`.
#[test]
fn a_streamed_text_unlike_its_ids_fails_compliance_text_against_ids() {
    let report = forged_v7(
        |dir| {
            edit_sample(dir, |file| {
                file["runs"][0]["check"]["requests"][0]["streamedText"] = json!("zzzz");
            })
        },
        |_, _| {},
    );
    let reason = only_failure(&report, CheckName::TextAgainstIds);
    assert!(
        matches!(&reason, FailureReason::Recomputed { field, claimed, recomputed, .. }
            if field == "entries[1].disqualification" && claimed == "none"
                && recomputed.starts_with("run 0 item ")),
        "{reason:?}"
    );
}

/// A sample that says its texts were not checked, under a profile with a detokenizer.
#[test]
fn texts_left_unchecked_fail_compliance_text_against_ids() {
    let report = forged_v7(
        |dir| {
            edit_sample(dir, |file| {
                file["textAgainstIds"] = json!({"kind": "not_applicable", "reason": "forged"});
            })
        },
        |_, _| {},
    );
    let reason = only_failure(&report, CheckName::TextAgainstIds);
    assert!(
        matches!(&reason, FailureReason::Recomputed { file, field, .. }
            if file == SAMPLE && field == "textAgainstIds.kind"),
        "{reason:?}"
    );
}

/// An honest challenger disqualified `text_not_ids`: its texts are its ids'.
#[test]
fn a_text_not_ids_claim_on_equal_texts_fails_compliance_text_against_ids() {
    let report = forged_v7(
        |_| {},
        |dir, p| disqualify_challenger(dir, p, json!({"text_not_ids": {"run": 0, "item": 0}})),
    );
    let reason = only_failure(&report, CheckName::TextAgainstIds);
    assert!(
        matches!(&reason, FailureReason::Recomputed { claimed, recomputed, .. }
            if claimed == "run 0 item 0" && recomputed == "none"),
        "{reason:?}"
    );
}

/// An honest challenger disqualified `output_length`: its probe logs hold no short or
/// long request.
#[test]
fn an_output_length_claim_on_exact_lengths_fails_compliance_output_length() {
    let report = forged_v7(
        |_| {},
        |dir, p| {
            let reason = json!({"output_length": {"pass": 0, "short": 1, "long": 0}});
            disqualify_challenger(dir, p, reason)
        },
    );
    let reason = only_failure(&report, CheckName::OutputLength);
    assert!(
        matches!(&reason, FailureReason::Recomputed { claimed, recomputed, .. }
            if claimed == "pass 0: 1 short, 0 long" && recomputed == "none"),
        "{reason:?}"
    );
}
