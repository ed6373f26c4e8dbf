//! A decide round forged by an evaluator holding the key (`fixtures/v9-decide-round`, the
//! s1-pro-speed demo's round sealed with the CLI, re-signed with the forger's key after
//! one change): the sidecar's capability probe and the track record are recomputed or
//! held to the round, so each forgery fails its own check.

use serde_json::{Value, json};
use verifier::CheckName;

use crate::forge::*;

/// The round forged here.
const FIXTURE: &str = "v9-decide-round";

/// The fixture re-signed unchanged passes, with the sidecar's probe and every decide
/// check.
#[test]
fn the_decide_fixture_re_signed_unchanged_passes() {
    let report = forged_fixture(FIXTURE, |_| {}, |_, _| {});
    assert!(report.passed(), "{:#?}", failures(&report));
    assert_eq!(passed(&report, CheckName::CapabilityProbe), 1);
    assert_eq!(passed(&report, CheckName::DecideRound), 1);
    assert_eq!(passed(&report, CheckName::DecideWeights), 2);
    assert_eq!(passed(&report, CheckName::DecideGate), 1);
}

/// A v9 decide round without its sidecar's probe, one claiming the completions
/// features, and one whose sidecar "did not check the token" while its entries still
/// ran: each fails `capability.probe` alone.
#[test]
fn a_decide_rounds_probe_dropped_swapped_or_contradicted_fails_capability_probe() {
    let dropped = forged_fixture(
        FIXTURE,
        |_| {},
        |_, p| {
            p.as_object_mut()
                .expect("predicate")
                .remove("capabilityProbe");
        },
    );
    assert_eq!(
        only(&dropped, CheckName::CapabilityProbe),
        recomputed(
            "receipt.dsse.json",
            "capabilityProbe",
            "absent",
            "the findings of the probe a round on a real engine opens with",
        )
    );
    let swapped = forged_fixture(
        FIXTURE,
        |_| {},
        |_, p| p["capabilityProbe"]["findings"][1]["feature"] = json!("streamedLength"),
    );
    only(&swapped, CheckName::CapabilityProbe);
    let contradicted = forged_fixture(
        FIXTURE,
        |_| {},
        |_, p| {
            let token: &mut Value = &mut p["capabilityProbe"]["findings"][1];
            token["status"] = json!("missing");
            token["field"] = json!("baseline.commit");
        },
    );
    let failed = failed(&contradicted);
    assert!(
        failed.contains(CheckName::CapabilityProbe.as_str()),
        "{failed:?}"
    );
}

/// `decide.weights[].source` has one value today (`pinned`: the recipe re-run is not in a
/// round yet); any other is refused by the v9 schema before any check reads it.
#[test]
fn a_weights_source_other_than_pinned_fails_the_schema() {
    let report = forged_fixture(
        FIXTURE,
        |_| {},
        |_, p| p["decide"]["weights"][1]["source"] = json!("reproduced"),
    );
    let failed = failed(&report);
    assert!(
        failed.contains(CheckName::PredicateSchema.as_str()),
        "{failed:?}"
    );
}
