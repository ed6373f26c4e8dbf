//! The forgeries of the timed-run sample's calibrated bounds (v7; content/correctness.md,
//! The bounds of the sample): `fixtures/v7-round/` and `fixtures/v6-round/`, real rounds
//! (README's by-hand round: the baseline, its A/A control and `miner-fast`'s challenger),
//! their challenger's sample file changed the way an evaluator holding the key could —
//! every subject digest updated, the Statements re-signed. Each fails exactly
//! `correctness.loadSample`, naming the field and the campaign's value.

use std::path::Path;

use crate::forge::*;
use serde_json::{Value, json};
use verifier::{CheckName, VerifyReport};

const CHALLENGER_SAMPLE: &str = "correctness/candidate-1-miner-fast-load-sample.json";

/// `fixture` with its challenger's sample file edited by `edit`, re-signed and verified.
fn forged_sample(fixture: &str, edit: impl FnOnce(&mut Value)) -> VerifyReport {
    let dir = tempfile::tempdir().expect("tempdir");
    forge_from(
        &fixture_named(fixture),
        dir.path(),
        |d: &Path| edit_json(d, CHALLENGER_SAMPLE, edit),
        |_| {},
        |_| {},
    );
    verify(dir.path())
}

#[test]
fn the_re_signed_v7_round_passes_correctness_load_sample() {
    let report = forged_sample("v7-round", |_| {});
    assert!(report.passed(), "{:?}", failures(&report));
}

/// A group bound loosened in the sample file: not the campaign's (its default, 0.25 nats).
#[test]
fn a_group_bound_other_than_the_campaigns_fails_correctness_load_sample() {
    let report = forged_sample("v7-round", |s| s["groupBoundMicroNats"] = json!(9_000_000));
    assert_eq!(
        only(&report, CheckName::LoadSample),
        recomputed(
            CHALLENGER_SAMPLE,
            "groupBoundMicroNats",
            "9000000",
            "250000"
        )
    );
}

/// The position bound and the most positions over it, each loosened alone.
#[test]
fn a_position_bound_or_count_other_than_the_campaigns_fails_correctness_load_sample() {
    let report = forged_sample("v7-round", |s| {
        s["positionBoundMicroNats"] = json!(80_000_000);
    });
    assert_eq!(
        only(&report, CheckName::LoadSample),
        recomputed(
            CHALLENGER_SAMPLE,
            "positionBoundMicroNats",
            "80000000",
            "8000000"
        )
    );
    let report = forged_sample("v7-round", |s| s["maxPositionsOver"] = json!(1000));
    assert_eq!(
        only(&report, CheckName::LoadSample),
        recomputed(CHALLENGER_SAMPLE, "maxPositionsOver", "1000", "2")
    );
}

/// The item bound: from v7 the campaign's `load_item_bound_micro_nats` (default 1.5
/// nats), no longer the gate's item bound of 2.0.
#[test]
fn a_v7_item_bound_other_than_the_load_item_bound_fails_correctness_load_sample() {
    let report = forged_sample("v7-round", |s| s["boundMicroNats"] = json!(2_000_000));
    assert_eq!(
        only(&report, CheckName::LoadSample),
        recomputed(CHALLENGER_SAMPLE, "boundMicroNats", "2000000", "1500000")
    );
}

/// A v7 sample without its group bound (so judged on the item bound alone, as before
/// v7) fails; a v6 sample carrying one fails too (v6 judged on the item bound alone).
#[test]
fn the_bounds_are_required_from_v7_and_absent_before() {
    let report = forged_sample("v7-round", |s| {
        if let Value::Object(fields) = s {
            fields.remove("groupBoundMicroNats");
        }
    });
    assert_eq!(
        only(&report, CheckName::LoadSample),
        recomputed(CHALLENGER_SAMPLE, "groupBoundMicroNats", "absent", "250000")
    );
    let report = forged_sample("v6-round", |s| s["groupBoundMicroNats"] = json!(250_000));
    assert_eq!(
        only(&report, CheckName::LoadSample),
        recomputed(CHALLENGER_SAMPLE, "groupBoundMicroNats", "250000", "absent")
    );
}
