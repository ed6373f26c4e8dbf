//! The forgeries of the timed-run sample's calibrated bounds (v7; content/correctness.md,
//! The bounds of the sample): `fixtures/v7-round/` and `fixtures/v6-round/`, real rounds
//! (README's by-hand round: the baseline, its A/A control and `miner-fast`'s challenger),
//! their challenger's sample file changed the way an evaluator holding the key could —
//! every subject digest updated, the Statements re-signed. Each fails exactly
//! `correctness.loadSample`, naming the field and the campaign's value.

use std::path::Path;

use crate::forge::*;
use receipts::model::{DisqualificationReason, LoadSample};
use receipts::rules::sample::{first_divergent, request_gap_micro_nats};
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

/// The challenger's sample in the bundle at `dir` made divergent: at each request `r`'s
/// position `i` the reference's logprob of the output token set `gap(r, i)` micro-nats
/// below its top-1 (0 in the sealed round: the reference would have said the same),
/// each request's gap recomputed, and the challenger disqualified for the divergence the
/// verifier recomputes from the file, its outcome recomputed: a round a diverging
/// engine could have sealed, consistent with every check. Returns that reason.
pub(crate) fn diverge_challenger(
    dir: &Path,
    predicate: &mut Value,
    gap: fn(usize, usize) -> i64,
) -> DisqualificationReason {
    edit_json(dir, CHALLENGER_SAMPLE, |sample| {
        for run in sample["runs"].as_array_mut().expect("runs") {
            let requests = run["check"]["requests"].as_array_mut().expect("checked");
            for (r, request) in requests.iter_mut().enumerate() {
                let top1: Vec<i64> = (request["referenceTop1MicroNats"].as_array())
                    .expect("top-1")
                    .iter()
                    .map(|v| v.as_i64().expect("micro-nats"))
                    .collect();
                let token: Vec<i64> = (0..top1.len()).map(|i| top1[i] - gap(r, i)).collect();
                let mean = request_gap_micro_nats(&top1, &token).expect("positions");
                request["referenceTokenMicroNats"] = json!(token);
                request["gapMicroNats"] = json!(mean);
            }
        }
    });
    let bytes = std::fs::read(dir.join(CHALLENGER_SAMPLE)).expect("sample");
    let sample: LoadSample = serde_json::from_slice(&bytes).expect("sample");
    let reason = first_divergent(&sample)
        .expect("the sample diverges")
        .reason(&sample);
    crate::forgery_logs::disqualify_challenger_for(
        dir,
        predicate,
        serde_json::to_value(reason).expect("json"),
        "its outputs under load diverged from the reference's",
        &[],
    );
    reason
}

/// The by-hand round (v7 or v8) with its challenger's sample diverging on one request (2
/// nats at every position of the first: above the 1.5-nat item bound).
pub(crate) fn diverge_on_an_item(dir: &Path, predicate: &mut Value) {
    let reason = diverge_challenger(dir, predicate, |r, _| if r == 0 { 2_000_000 } else { 0 });
    assert!(
        matches!(reason, DisqualificationReason::LoadOutputsDiverge { .. }),
        "{reason:?}"
    );
}

/// The by-hand round (v7 or v8) with every request of its challenger's sample 0.3 nats off:
/// each within the item bound, their mean above the 0.25-nat group bound.
pub(crate) fn diverge_as_a_group(dir: &Path, predicate: &mut Value) {
    let reason = diverge_challenger(dir, predicate, |_, _| 300_000);
    assert!(
        matches!(reason, DisqualificationReason::LoadGroupDiverges { .. }),
        "{reason:?}"
    );
}

/// The by-hand round (v7 or v8) with the first position of three requests 9 nats off: every
/// mean within its bound, three positions over the 8-nat position bound where two are
/// allowed.
pub(crate) fn diverge_at_positions(dir: &Path, predicate: &mut Value) {
    let reason = diverge_challenger(
        dir,
        predicate,
        |r, i| {
            if r < 3 && i == 0 { 9_000_000 } else { 0 }
        },
    );
    assert!(
        matches!(reason, DisqualificationReason::LoadPositionsOver { .. }),
        "{reason:?}"
    );
}

/// Each diverging round passes every check; the same round with its challenger's
/// reason naming another run, or left scored, fails `correctness.loadSample`.
#[test]
fn a_divergence_is_recomputed_from_the_sample_file() {
    for diverge in [diverge_on_an_item, diverge_as_a_group, diverge_at_positions] {
        let report = forged_fixture("v7-round", |_| {}, diverge);
        assert!(report.passed(), "{:?}", failures(&report));
        let report = forged_fixture(
            "v7-round",
            |_| {},
            |dir, p| {
                diverge(dir, p);
                let reason = p["entries"][1]["disqualification"]["reason"]
                    .as_object_mut()
                    .and_then(|typed| typed.values_mut().next())
                    .expect("a typed reason");
                reason["run"] = json!(1);
            },
        );
        assert_eq!(failed(&report), [CheckName::LoadSample.as_str()].into());
    }
}
