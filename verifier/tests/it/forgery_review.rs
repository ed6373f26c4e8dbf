//! `entries.review` (content/review.md, In the round): a repository entry's review in the
//! receipt against the bundle's copies of its review record and of its resolution's signed
//! statement. The v8 round is forged as an evaluator holding the key could: its challenger
//! given a review as the runner writes it (the record's copy and the statement's under
//! `inputs/`, both inputs and subjects), then one fact changed; the receipt re-signed.

use std::collections::BTreeSet;

use receipts::bundle::{ENVELOPE_FILE, sign_statement};
use receipts::keys::PrivateKey;
use receipts::layout::{resolution_input, review_input};
use receipts::model::review::{Finding, Severity};
use receipts::model::{
    CopyOutcome, Fingerprint, ReviewRecord, ReviewResolution, Sha256Hex, Timestamp, Verdict,
};
use receipts::rules::review::{KNOWN_RULES, entry_review};
use receipts::statement::Statement;
use receipts::tlog::statements::{
    REVIEW_RESOLUTION_PREDICATE_TYPE, ReviewResolutionPredicate, submission_subject,
};
use serde_json::{Value, json};
use verifier::{CheckName, FailureReason, VerifyReport};

use crate::forge::*;

/// The round forged here: the current predicate's fixture.
const FIXTURE: &str = "v8-round";

/// The fixture's challenger, `entries[1]`.
const CHALLENGER: usize = 1;

fn at(minute: i64) -> Timestamp {
    Timestamp::from_unix_seconds(1_700_000_000 + minute * 60).expect("time")
}

/// A review under the built-in rules with `findings` (their verdict recorded), no LLM
/// review, an original.
fn review(findings: Vec<Finding>) -> ReviewRecord {
    let verdict = Verdict::of_findings(&findings);
    ReviewRecord {
        rules_version: KNOWN_RULES[0].0,
        rules_digest: KNOWN_RULES[0].1.parse().expect("hex"),
        findings,
        static_verdict: verdict,
        llm: None,
        verdict,
        reviewed_at: at(0),
        derived_from: None,
        fingerprint: Fingerprint {
            weights: BTreeSet::new(),
            code: Sha256Hex::digest(b"server.py"),
            code_files: 1,
        },
        copy: CopyOutcome::Original,
        resolution: None,
    }
}

fn finding(severity: Severity) -> Finding {
    Finding {
        file: "server.py".into(),
        line: Some(3),
        rule: "exec.subprocess".into(),
        severity,
        detail: "subprocess.run".into(),
    }
}

/// A `NEEDS-HUMAN` review a person resolved `verdict` (the statement's digest filled in
/// when it is signed).
fn resolved(verdict: Verdict) -> ReviewRecord {
    let mut record = review(vec![finding(Severity::NeedsHuman)]);
    record.resolution = Some(ReviewResolution {
        verdict,
        reason: "nvidia-smi only reads the GPU's state".into(),
        resolved_at: at(5),
        envelope_sha256: Sha256Hex::digest(b"filled in when signed"),
        log_index: 7,
    });
    record
}

/// Forges [`FIXTURE`]: the challenger gets `record` as its review — the record's copy and,
/// when it has a resolution, the resolution's statement signed by `signer` under
/// `inputs/`, both inputs of the round and subjects of the receipt, and `entries[1].review`
/// as the runner writes it — then `edit` is applied to the receipt's predicate; the
/// receipt and the round-opened statement are re-signed with the forger's key.
fn forged_review(
    mut record: ReviewRecord,
    signer: &PrivateKey,
    edit: impl FnOnce(&mut Value),
) -> VerifyReport {
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    testkit::copy_dir(&fixture_named(FIXTURE), dir);
    let mut receipt = statement(dir, ENVELOPE_FILE);
    let predicate = &receipt["predicate"];
    let patch: Sha256Hex = predicate["entries"][CHALLENGER]["patch"]
        .as_str()
        .expect("the challenger's patch")
        .parse()
        .expect("hex");
    let campaign = predicate["campaign"]["id"].clone();
    let mut files = Vec::new();
    if let Some(resolution) = record.resolution.clone() {
        let said = ReviewResolutionPredicate {
            campaign: serde_json::from_value(campaign).expect("campaign id"),
            record: patch,
            rules_digest: record.rules_digest,
            verdict: resolution.verdict,
            reason: resolution.reason.clone(),
            resolved_at: resolution.resolved_at,
        };
        let statement = Statement::new(
            vec![submission_subject(&patch, &patch)],
            REVIEW_RESOLUTION_PREDICATE_TYPE,
            serde_json::to_value(&said).expect("predicate"),
        );
        let bytes = sign_statement(&statement, &[signer])
            .expect("signs")
            .to_file_bytes()
            .expect("canonical");
        let sha = Sha256Hex::digest(&bytes);
        if let Some(r) = record.resolution.as_mut() {
            r.envelope_sha256 = sha;
        }
        files.push((resolution_input(&sha), bytes));
    }
    let mut bytes = serde_json::to_vec_pretty(&record).expect("record");
    bytes.push(b'\n');
    files.push((review_input(&patch), bytes));
    let entry = entry_review(&patch, &record, signer.keyid());
    for (name, bytes) in &files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, bytes).expect("write");
        let digest = json!({"sha256": Sha256Hex::digest(bytes).to_string()});
        receipt["subject"]
            .as_array_mut()
            .expect("subjects")
            .push(json!({"name": name, "digest": digest}));
        receipt["predicate"]["inputs"]
            .as_array_mut()
            .expect("inputs")
            .push(json!({"name": name, "digest": digest}));
    }
    receipt["predicate"]["entries"][CHALLENGER]["review"] =
        serde_json::to_value(&entry).expect("review");
    edit(&mut receipt["predicate"]);
    resign(dir, OPENED, |_| {});
    sign(dir, ENVELOPE_FILE, receipt);
    verify(dir)
}

/// The review of the challenger in a receipt's predicate.
fn entry(predicate: &mut Value) -> &mut Value {
    &mut predicate["entries"][CHALLENGER]["review"]
}

/// The failed field of `entries.review`, the only check that failed.
fn failed_field(report: &VerifyReport) -> (String, String) {
    match only(report, CheckName::EntryReview) {
        FailureReason::Recomputed { file, field, .. } => (file, field),
        other => panic!("expected a recomputed field, got {other:?}"),
    }
}

#[test]
fn reviews_as_the_runner_writes_them_pass_entries_review() {
    let plain = forged_review(review(Vec::new()), &key(), |_| {});
    assert!(plain.passed(), "{:#?}", failures(&plain));
    assert_eq!(passed(&plain, CheckName::EntryReview), 1);
    let resolved = forged_review(resolved(Verdict::Pass), &key(), |_| {});
    assert!(resolved.passed(), "{:#?}", failures(&resolved));
    assert_eq!(passed(&resolved, CheckName::EntryReview), 1);
}

#[test]
fn a_flipped_review_verdict_fails_entries_review() {
    let report = forged_review(resolved(Verdict::Pass), &key(), |p| {
        entry(p)["verdict"] = json!("PASS");
    });
    assert_eq!(
        failed_field(&report),
        (
            "receipt.dsse.json".into(),
            "entries[1].review.verdict".into()
        )
    );
    // The record's copy flipped as well: its verdict no longer follows from its findings.
    let mut flipped = resolved(Verdict::Pass);
    flipped.static_verdict = Verdict::Pass;
    flipped.verdict = Verdict::Pass;
    flipped.resolution = None;
    let report = forged_review(flipped, &key(), |_| {});
    assert_eq!(failed_field(&report).1, "staticVerdict");
}

#[test]
fn a_resolution_signed_by_a_key_outside_the_keyring_fails_entries_review() {
    let stranger = PrivateKey::from_seed(&[0x11; 32]);
    let report = forged_review(resolved(Verdict::Pass), &stranger, |_| {});
    match only(&report, CheckName::EntryReview) {
        FailureReason::InputInvalid { file, message } => {
            assert!(file.starts_with("inputs/review-resolutions/"), "{file}");
            assert!(message.contains("no evaluator key"), "{message}");
        }
        other => panic!("expected the statement refused, got {other:?}"),
    }
}

#[test]
fn a_resolution_keyid_not_its_signers_fails_entries_review() {
    let report = forged_review(resolved(Verdict::Pass), &key(), |p| {
        entry(p)["resolution"]["keyid"] = json!("someone-else");
    });
    assert_eq!(
        failed_field(&report).1,
        "entries[1].review.resolution.keyid"
    );
}

#[test]
fn a_resolution_overriding_a_fail_fails_entries_review() {
    let mut record = resolved(Verdict::Pass);
    record.findings = vec![finding(Severity::Fail)];
    record.static_verdict = Verdict::Fail;
    record.verdict = Verdict::Fail;
    let report = forged_review(record, &key(), |_| {});
    assert_eq!(failed_field(&report).1, "resolution.verdict");
}

#[test]
fn an_entry_whose_review_did_not_pass_fails_entries_review() {
    for record in [
        review(vec![finding(Severity::Fail)]),
        review(vec![finding(Severity::NeedsHuman)]),
        resolved(Verdict::Fail),
    ] {
        let report = forged_review(record, &key(), |_| {});
        assert_eq!(failed_field(&report).1, "entries[1].review.decision");
    }
}

#[test]
fn a_review_under_an_unknown_rules_file_fails_entries_review() {
    let mut record = review(Vec::new());
    record.rules_digest = Sha256Hex::digest(b"rules that find nothing");
    let report = forged_review(record, &key(), |_| {});
    assert_eq!(failed_field(&report).1, "rulesDigest");
}

#[test]
fn a_review_whose_record_is_not_an_input_fails_entries_review() {
    let report = forged_review(review(Vec::new()), &key(), |p| {
        let inputs = p["inputs"].as_array_mut().expect("inputs");
        inputs.retain(|i| {
            !i["name"]
                .as_str()
                .unwrap_or("")
                .starts_with("inputs/reviews/")
        });
    });
    assert!(matches!(
        only(&report, CheckName::EntryReview),
        FailureReason::FileNotNamed { .. }
    ));
}

#[test]
fn a_review_on_the_baseline_fails_entries_review() {
    let report = forged_review(review(Vec::new()), &key(), |p| {
        let review = entry(p).clone();
        p["entries"][0]["review"] = review;
    });
    let failures: Vec<_> = failures(&report)
        .into_iter()
        .map(|(name, target, _)| (name, target))
        .collect();
    assert_eq!(
        failures,
        vec![(CheckName::EntryReview, Some("entries[0].review".to_owned()))]
    );
}

#[test]
fn a_review_field_changed_alone_fails_entries_review() {
    // derivedMarginBp: v8 had no derived-work margin, and the challenger is derived from
    // nothing (verifier/tests/it/paired.rs holds one held to it).
    let changes: [(&str, Value); 10] = [
        ("record", json!("inputs/reviews/elsewhere.json")),
        ("rulesVersion", json!(2)),
        (
            "rulesDigest",
            json!(Sha256Hex::digest(b"other rules").to_string()),
        ),
        ("verdict", json!("FAIL")),
        ("decision", json!("NEEDS-HUMAN")),
        ("derivedFrom", json!("ab".repeat(32))),
        ("resolution.verdict", json!("FAIL")),
        (
            "resolution.statement",
            json!("inputs/review-resolutions/x.dsse.json"),
        ),
        ("resolution.keyid", json!("k")),
        ("derivedMarginBp", json!(3000)),
    ];
    for (field, value) in changes {
        let report = forged_review(resolved(Verdict::Pass), &key(), |p| {
            let review = entry(p);
            match field.split_once('.') {
                Some((outer, inner)) => review[outer][inner] = value,
                None => review[field] = value,
            }
        });
        assert_eq!(
            failed_field(&report),
            (
                "receipt.dsse.json".to_owned(),
                format!("entries[1].review.{field}")
            ),
            "{field}"
        );
    }
    // The resolution dropped from the receipt.
    let report = forged_review(resolved(Verdict::Pass), &key(), |p| {
        entry(p)
            .as_object_mut()
            .expect("review")
            .remove("resolution");
    });
    assert_eq!(
        failed_field(&report).1,
        "entries[1].review.resolution.verdict"
    );
}
