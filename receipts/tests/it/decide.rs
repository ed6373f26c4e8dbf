//! The `decide` workload kind and the s1-pro-speed track: the campaign's declared
//! contract, the decision and vector read from a response, the logit-distance gate over
//! the declared vector, and weight files against their pinned digests.

use receipts::model::*;
use receipts::rules::decide::{
    DecideError, fill_template, gate_verdict, item_distance_micro_nats, read_decision, read_vector,
};
use receipts::rules::weights::{WeightsMismatch, compare};
use receipts::rules::workload::Item;
use serde_json::json;

const S1_PRO_SPEED: &str = r#"
id = "s1-pro-speed"
track = "s1-pro-speed"
workload_kind = "decide"
[model]
name = "s1-pro"
weights = [{ name = "model.bin", sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" }]
[baseline]
repo = "baseline"
commit = "0123456789abcdef0123456789abcdef01234567"
[decide]
request_template = '{"input": {"text": "{{prompt}}", "id": "{{item_index}}"}, "mode": "fast"}'
decision_pointer = "/decision"
vector_pointer = "/logprobs"
decisions = ["allow", "deny", "review"]
"#;

fn contract() -> DecideContract {
    Campaign::from_toml("c.toml", S1_PRO_SPEED)
        .unwrap()
        .decide
        .unwrap()
}

#[test]
fn a_decide_campaign_gets_the_contract_defaults() {
    let c = Campaign::from_toml("c.toml", S1_PRO_SPEED).unwrap();
    assert_eq!(c.track, Some(Track::S1ProSpeed));
    assert_eq!(c.effective_workload_kind(), WorkloadKind::Decide);
    let d = c.decide.unwrap();
    assert_eq!(
        (d.path.as_str(), d.health_path.as_str()),
        ("/internal/v1/decide", "/health")
    );
    assert_eq!(
        (
            d.gate_items,
            d.group_size,
            d.group_mean_bound_micro_nats,
            d.item_bound_micro_nats
        ),
        (2_000, 3, 200_000, 2_000_000)
    );
    assert_eq!(d.vector, VectorKind::Logprobs);
}

#[test]
fn decide_fields_go_together() {
    let error = |text: &str| Campaign::from_toml("c.toml", text).unwrap_err().to_string();
    // `decide` without `[decide]`.
    let without = S1_PRO_SPEED.split("[decide]").next().unwrap();
    assert!(
        error(without).contains("needs [decide]"),
        "{}",
        error(without)
    );
    // `[decide]` on a completions campaign.
    let completions = S1_PRO_SPEED
        .replace("track = \"s1-pro-speed\"\n", "")
        .replace("workload_kind = \"decide\"\n", "");
    assert!(error(&completions).contains("only a workload_kind = \"decide\""));
    // A repeated decision, a template that is not JSON.
    let twice = S1_PRO_SPEED.replace("\"review\"]", "\"deny\"]");
    assert!(
        error(&twice).contains("decide.decisions"),
        "{}",
        error(&twice)
    );
    let not_json = S1_PRO_SPEED.replace("\"mode\": \"fast\"}'", "'");
    assert!(error(&not_json).contains("decide.request_template"));
    // The track needs pinned weights.
    let unpinned = S1_PRO_SPEED.replace(
        "weights = [{ name = \"model.bin\", sha256 = \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\" }]\n",
        "",
    );
    assert!(error(&unpinned).contains("model.weights"));
}

#[test]
fn the_template_is_filled_from_the_item_only() {
    let item = Item {
        item_index: 7,
        prompt: "say \"hi\"".into(),
        prompt_sha256: Sha256Hex::digest(b"say \"hi\""),
        max_tokens: 1,
        arrival_unit_ns: 0,
    };
    let filled = fill_template(&contract().template().unwrap(), &item);
    assert_eq!(
        filled,
        json!({"input": {"text": "say \"hi\"", "id": 7}, "mode": "fast"})
    );
}

#[test]
fn decisions_are_read_at_the_pointer_and_only_from_the_set() {
    let c = contract();
    assert_eq!(read_decision(&json!({"decision": "review"}), &c), Ok(2));
    assert_eq!(
        read_decision(&json!({"verdict": "allow"}), &c),
        Err(DecideError::NoDecision {
            pointer: "/decision".into()
        })
    );
    assert_eq!(
        read_decision(&json!({"decision": 1}), &c),
        Err(DecideError::NoDecision {
            pointer: "/decision".into()
        })
    );
    assert_eq!(
        read_decision(&json!({"decision": "maybe"}), &c),
        Err(DecideError::OutsideSet {
            decision: "maybe".into()
        })
    );
}

#[test]
fn the_vector_is_read_in_the_declared_order_and_quantized() {
    let mut c = contract();
    let array = json!({"logprobs": [-0.1, -2.5, -3.0000005]});
    assert_eq!(
        read_vector(&array, &c),
        Ok(vec![-100_000, -2_500_000, -3_000_001])
    );
    let object = json!({"logprobs": {"review": -3.0, "allow": -0.1, "deny": -2.5}});
    assert_eq!(
        read_vector(&object, &c),
        Ok(vec![-100_000, -2_500_000, -3_000_000])
    );
    let short = json!({"logprobs": [-0.1, -2.5]});
    assert_eq!(
        read_vector(&short, &c),
        Err(DecideError::NoVector {
            pointer: "/logprobs".into(),
            expected: 3
        })
    );
    // Logits through log-softmax: [0, ln 3, 0] gives ln(1/5), ln(3/5), ln(1/5), and a
    // constant shift of every logit changes nothing.
    c.vector = VectorKind::Logits;
    let ln3 = 3f64.ln();
    let expected = Ok(vec![-1_609_438, -510_826, -1_609_438]);
    assert_eq!(
        read_vector(&json!({"logprobs": [0.0, ln3, 0.0]}), &c),
        expected
    );
    assert_eq!(
        read_vector(&json!({"logprobs": [40.0, 40.0 + ln3, 40.0]}), &c),
        expected
    );
}

/// The gate over a declared vector with exact distances: each item is the largest
/// difference over the decisions, groups of 3 are bounded by 0.20 nats on their mean and
/// every item by 2.0 nats.
#[test]
fn the_gate_over_the_declared_vector_has_exact_distances() {
    let c = contract();
    let reference = [
        vec![-100_000, -2_500_000, -3_000_000],
        vec![-200_000, -1_800_000, -4_000_000],
        vec![-50_000, -3_100_000, -6_000_000],
        vec![-700_000, -900_000, -2_000_000],
    ];
    let entry = [
        vec![-100_000, -2_500_000, -3_000_000], // identical: 0
        vec![-250_000, -1_700_000, -4_000_000], // 50,000 and 100,000: 100,000
        vec![-50_000, -3_100_000, -6_500_000],  // 500,000
        vec![-700_000, -900_000, -2_000_001],   // 1
    ];
    let distances: Vec<u64> = entry
        .iter()
        .zip(&reference)
        .map(|(e, r)| item_distance_micro_nats(e, r))
        .collect();
    assert_eq!(distances, [0, 100_000, 500_000, 1]);
    let verdict = gate_verdict(&distances, &c);
    // Group 0: (0 + 100,000 + 500,000) / 3 = 200,000 exactly: on the bound, passes.
    assert_eq!(verdict.group_means_micro_nats, [200_000, 1]);
    assert!(verdict.passed);
    assert_eq!(verdict.max_item_micro_nats, 500_000);
    // One micro-nat more in group 0 fails it (mean rounds half up: 600,002 / 3 → 200,001).
    let over = gate_verdict(&[0, 100_000, 500_002, 1], &c);
    assert_eq!(
        (
            over.passed,
            over.first_failing_group,
            over.first_failing_item
        ),
        (false, Some(0), None)
    );
    // An item above 2.0 nats fails the gate even when its group's mean passes.
    let mut wide = c.clone();
    wide.group_mean_bound_micro_nats = 2_000_000;
    let item = gate_verdict(&[0, 0, 2_000_001], &wide);
    assert_eq!(
        (
            item.passed,
            item.first_failing_item,
            item.first_failing_group
        ),
        (false, Some(2), None)
    );
}

#[test]
fn weights_are_compared_by_name_and_digest_and_a_mismatch_names_both_digests() {
    let file = |name: &str, bytes: &[u8]| WeightFile {
        name: name.into(),
        sha256: Sha256Hex::digest(bytes),
    };
    let pinned = [file("a.bin", b"a"), file("b.bin", b"b")];
    assert_eq!(
        compare(&pinned, &[file("b.bin", b"b"), file("a.bin", b"a")]),
        Ok(())
    );
    let error = *compare(&pinned, &[file("a.bin", b"a"), file("b.bin", b"B")]).unwrap_err();
    assert_eq!(
        error,
        WeightsMismatch::Digest {
            name: "b.bin".into(),
            expected: Sha256Hex::digest(b"b"),
            got: Sha256Hex::digest(b"B"),
        }
    );
    assert_eq!(
        error.to_string(),
        format!(
            "`b.bin` has sha256 {}, expected {}",
            Sha256Hex::digest(b"B"),
            Sha256Hex::digest(b"b")
        )
    );
    assert!(matches!(
        compare(&pinned, &[file("a.bin", b"a")]).map_err(|e| *e),
        Err(WeightsMismatch::Missing { name, .. }) if name == "b.bin"
    ));
    assert!(matches!(
        compare(&pinned, &[file("a.bin", b"a"), file("b.bin", b"b"), file("c.bin", b"c")])
            .map_err(|e| *e),
        Err(WeightsMismatch::Unexpected { name, .. }) if name == "c.bin"
    ));
}

/// The gate's per-item file: each item's distance from both vectors, the group means and
/// the contract's bounds; recomputing it from the vectors alone gives the same numbers,
/// and a forged distance or vector shows.
#[test]
fn the_gate_file_holds_both_vectors_and_recomputes_exactly() {
    use receipts::rules::decide::{Answer, gate_file, recompute_gate};
    let contract = contract();
    let answer = |index: u32, vector: [i64; 3]| Answer {
        index,
        prompt_sha256: Sha256Hex::digest(index.to_string().as_bytes()),
        decision: "allow".into(),
        vector: vector.to_vec(),
    };
    let entry = [
        answer(0, [-100_000, -2_000_000, -3_000_000]),
        answer(1, [-500_000, -1_000_000, -2_000_000]),
        answer(2, [-1, -2, -3]),
        answer(3, [-7, -7, -7]),
    ];
    // Item 1 the reference answers 300,000 µnat apart on `deny`; item 3 it lacks.
    let reference = [
        answer(0, [-100_000, -2_000_000, -3_000_000]),
        answer(1, [-500_000, -1_300_000, -2_000_000]),
        answer(2, [-1, -2, -4]),
    ];
    let file = gate_file(&contract, &entry, &reference, None);
    let distances: Vec<u64> = file.items.iter().map(|i| i.distance_micro_nats).collect();
    assert_eq!(distances, [0, 300_000, 1, 7]);
    // Groups of 3: (0 + 300,000 + 1) / 3 rounded half up, then 7 alone.
    assert_eq!(file.group_means_micro_nats, [100_000, 7]);
    assert_eq!(file.decisions, ["allow", "deny", "review"]);
    assert_eq!(file.items[3].reference_micro_nats, Vec::<i64>::new());
    let (recomputed, verdict) = recompute_gate(&file, &contract);
    assert_eq!(recomputed, distances);
    assert!(verdict.passed);
    assert_eq!(verdict.group_means_micro_nats, file.group_means_micro_nats);
    assert_eq!(
        (
            verdict.max_item_micro_nats,
            verdict.max_group_mean_micro_nats
        ),
        (300_000, 100_000)
    );

    // A vector edited after the fact moves the recomputed distance, not the stored one.
    let mut forged = file.clone();
    forged.items[1].entry_micro_nats[1] = -1_300_000;
    let (recomputed, _) = recompute_gate(&forged, &contract);
    assert_eq!(recomputed, [0, 0, 1, 7]);
    assert_eq!(forged.items[1].distance_micro_nats, 300_000);

    // Over the group bound by one micro-nat fails the gate.
    let tight = DecideContract {
        group_mean_bound_micro_nats: 99_999,
        ..contract
    };
    let (_, verdict) = recompute_gate(&file, &tight);
    assert!(!verdict.passed);
    assert_eq!(verdict.first_failing_group, Some(0));
}
