//! A correctness verdict recomputed from the per-item file (content/correctness.md,
//! Correctness): `fixtures/v7-round` derived into the round an engine whose answers
//! drift from the reference's would have sealed — the challenger's own top-k moved, its
//! per-position and item distances, its verdict and its disqualification recomputed —
//! which passes every check; its verdict's fields then changed alone fail
//! `correctness.verdict`. And the round whose challenger's outputs missed the correctness
//! deadline: its reason names the campaign's deadline (`status.consistent`).

use std::path::Path;

use crate::forge::*;
use receipts::model::CorrectnessItems;
use receipts::rules::correctness::{item_distance_micro_nats, item_positions_micro_nats};
use serde_json::{Value, json};
use verifier::{CheckName, FailureReason};

const CHALLENGER_ITEMS: &str = "correctness/candidate-1-miner-fast.json";

/// How far, micro-nats, the challenger's logprobs of every token but its greedy one are
/// moved at item 1's positions: above the 2-nat item bound.
const DRIFT_MICRO_NATS: i64 = 3_000_000;

/// The by-hand round (v7 or v8) in `dir` with its challenger's item 1 drifting
/// ([`DRIFT_MICRO_NATS`] below its own logprobs at every token but the greedy one, which
/// stays first), its distances, verdict and disqualification (`correctness_failed`)
/// recomputed, and the outcome with them.
pub(crate) fn fail_correctness(dir: &Path, predicate: &mut Value) {
    edit_json(dir, CHALLENGER_ITEMS, |file| {
        let top_k = u32::try_from(file["topK"].as_u64().expect("topK")).expect("k");
        let item = &mut file["items"][1];
        for position in item["entryTopK"].as_array_mut().expect("top-k") {
            for pair in position.as_array_mut().expect("pairs").iter_mut().skip(1) {
                pair[1] = json!(pair[1].as_i64().expect("logprob") - DRIFT_MICRO_NATS);
            }
        }
        let side = |name: &str| -> Vec<Vec<(u32, i64)>> {
            serde_json::from_value(item[name].clone()).expect("top-k")
        };
        let positions =
            item_positions_micro_nats(1, top_k, &side("entryTopK"), &side("referenceTopK"))
                .expect("positions");
        item["distanceMicroNats"] = json!(item_distance_micro_nats(&positions));
        item["positionMicroNats"] = json!(positions);
    });
    let bytes = std::fs::read(dir.join(CHALLENGER_ITEMS)).expect("items");
    let items: CorrectnessItems = serde_json::from_slice(&bytes).expect("items");
    let (verdict, _) = receipts::rules::correctness::verdict_from_artifact(&items);
    assert_eq!(
        (verdict.first_failing_item, verdict.first_failing_group),
        (Some(1), Some(0))
    );
    let summary = &mut predicate["entries"][1]["correctness"];
    summary["passed"] = json!(verdict.passed);
    summary["maxItemMicroNats"] = json!(verdict.max_item_micro_nats);
    summary["maxGroupMeanMicroNats"] = json!(verdict.max_group_mean_micro_nats);
    summary["firstFailingItem"] = json!(verdict.first_failing_item);
    summary["firstFailingGroup"] = json!(verdict.first_failing_group);
    crate::forgery_logs::disqualify_challenger_for(
        dir,
        predicate,
        json!("correctness_failed"),
        "logit distance of item 1 above the item bound",
        &[],
    );
}

/// The derived round passes every check; its first failing item or group named
/// otherwise, or dropped, fails `correctness.verdict` alone.
#[test]
fn a_failed_verdicts_first_failing_item_and_group_are_recomputed() {
    let report = forged_fixture("v7-round", |_| {}, fail_correctness);
    assert!(report.passed(), "{:?}", failures(&report));
    for (field, value) in [
        ("firstFailingItem", json!(2)),
        ("firstFailingItem", Value::Null),
        ("firstFailingGroup", json!(1)),
        ("firstFailingGroup", Value::Null),
    ] {
        let report = forged_fixture(
            "v7-round",
            |_| {},
            |dir, p| {
                fail_correctness(dir, p);
                p["entries"][1]["correctness"][field] = value.clone();
            },
        );
        assert_eq!(
            failed(&report),
            [CheckName::CorrectnessVerdict.as_str()].into(),
            "{field}: {value}"
        );
    }
}

/// The campaign's correctness deadline in the by-hand round: its default (600 s) capped
/// by `entry_deadline_s` (60).
const DEADLINE_S: u64 = 60;

/// The by-hand round (v7 or v8) in `dir` with its challenger disqualified
/// `correctness_deadline` (its correctness outputs never all arrived: no verdict), the
/// outcome recomputed.
pub(crate) fn miss_correctness_deadline(dir: &Path, predicate: &mut Value) {
    predicate["entries"][1]
        .as_object_mut()
        .expect("entry")
        .remove("correctness");
    crate::forgery_logs::disqualify_challenger_for(
        dir,
        predicate,
        json!({"correctness_deadline": {"deadlineS": DEADLINE_S}}),
        "correctness outputs: no complete answer within the deadline of 60 s",
        &[],
    );
}

/// The derived round passes; its reason naming another deadline than the campaign's
/// fails `status.consistent` alone.
#[test]
fn a_correctness_deadline_is_the_campaigns() {
    let report = forged_fixture("v7-round", |_| {}, miss_correctness_deadline);
    assert!(report.passed(), "{:?}", failures(&report));
    let report = forged_fixture(
        "v7-round",
        |_| {},
        |dir, p| {
            miss_correctness_deadline(dir, p);
            p["entries"][1]["disqualification"]["reason"]["correctness_deadline"]["deadlineS"] =
                json!(DEADLINE_S + 1);
        },
    );
    assert_eq!(
        failures(&report),
        vec![(
            CheckName::StatusConsistent,
            Some("entries[1].status".to_owned()),
            FailureReason::StatusInconsistent {
                field: "entries[1].status".into(),
                status: "disqualified".into(),
                problem: "its reason is correctness_deadline after 61 s, but the campaign's \
                          correctness deadline is 60 s"
                    .into(),
            }
        )]
    );
}
