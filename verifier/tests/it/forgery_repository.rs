//! A repository campaign's round as the CLI seals it (content/repository-submissions.md,
//! In a round): `fixtures/v9-repository-round` is round 1 of the repository demo
//! (`examples/repository-demo/run.sh`), the baseline and the reviewed repository `good`
//! seated from its own tree, its commitment's text the entry's input in place of a diff
//! and its review in the receipt. Each forgery is re-signed as an evaluator holding the
//! key could.

use serde_json::{Value, json};
use verifier::{CheckName, FailureReason};

use crate::forge::*;

/// The round forged here.
const FIXTURE: &str = "v9-repository-round";

/// The fixture's challenger, `entries[1]`: the repository `good`.
const CHALLENGER: usize = 1;

/// The challenger's `patch`: the sha256 of its commitment's text.
fn challenger_patch() -> String {
    let receipt = statement(&fixture_named(FIXTURE), "receipt.dsse.json");
    receipt["predicate"]["entries"][CHALLENGER]["patch"]
        .as_str()
        .expect("the challenger's patch")
        .to_owned()
}

#[test]
fn the_repository_round_verifies_with_its_commitment_and_review() {
    let keyring = receipts::keys::Keyring::load(&fixture_named("v9-repository-keyring.json"))
        .expect("keyring");
    let report = verifier::verify_bundle(
        &fixture_named(FIXTURE),
        &keyring,
        &verifier::VerifyOptions::default(),
    );
    assert!(report.passed(), "{:#?}", failures(&report));
    let commitment = format!("inputs/commitments/{}.txt", challenger_patch());
    let checked = |name: CheckName, target: &str| {
        report
            .checks
            .iter()
            .any(|c| c.name == name && c.passed && c.target.as_deref() == Some(target))
    };
    assert!(checked(CheckName::InputsPatches, &commitment));
    assert!(checked(CheckName::EntryReview, "entries[1].review"));
    // The receipt carries the review that let it run, and no derived-work margin: it is
    // derived from nothing.
    let receipt = statement(&fixture_named(FIXTURE), "receipt.dsse.json");
    let review = &receipt["predicate"]["entries"][CHALLENGER]["review"];
    assert_eq!(review["decision"], json!("PASS"));
    assert_eq!(review.get("derivedMarginBp"), None);
}

/// The commitment's copy swapped for another repository's: it no longer hashes to the
/// entry's `patch`.
#[test]
fn another_commitment_in_the_input_copy_fails_inputs_patches() {
    let name = format!("inputs/commitments/{}.txt", challenger_patch());
    let report = forged_fixture(
        FIXTURE,
        |dir| {
            std::fs::write(
                dir.join(&name),
                format!("file:///elsewhere@{}", "a".repeat(40)),
            )
            .expect("write");
        },
        |_, _| {},
    );
    let failure = report
        .failures()
        .find(|c| c.name == CheckName::InputsPatches)
        .expect("inputs.patches fails");
    assert_eq!(failure.target.as_deref(), Some(name.as_str()));
}

/// A derived-work margin claimed for a challenger derived from nothing (no incumbent
/// either): `entries.review` recomputes none.
#[test]
fn a_derived_margin_claimed_without_a_derived_incumbent_fails_entries_review() {
    let report = forged_fixture(
        FIXTURE,
        |_| {},
        |_, predicate: &mut Value| {
            predicate["entries"][CHALLENGER]["review"]["derivedMarginBp"] = json!(5000);
        },
    );
    assert_eq!(
        only(&report, CheckName::EntryReview),
        FailureReason::Recomputed {
            file: "receipt.dsse.json".into(),
            field: "entries[1].review.derivedMarginBp".into(),
            claimed: "5000".into(),
            recomputed: "none".into(),
        }
    );
}

/// The review dropped from the repository entry: from v8 every seated repository
/// submission carries the review that let it run.
#[test]
fn a_repository_entry_without_its_review_fails_entries_review() {
    let report = forged_fixture(
        FIXTURE,
        |_| {},
        |_, predicate: &mut Value| {
            predicate["entries"][CHALLENGER]
                .as_object_mut()
                .expect("entry")
                .remove("review");
        },
    );
    assert!(matches!(
        only(&report, CheckName::EntryReview),
        FailureReason::Recomputed { field, .. } if field == "entries[1].review"
    ));
}
