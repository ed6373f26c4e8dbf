//! The forgeries of v9's caching check (content/verifying.md, `compliance.caching`;
//! content/correctness.md, Compliance tests): `fixtures/v9-round`, a real v9 round whose
//! challenger's run ended with its caching probe, changed the way an evaluator holding
//! the key could — every subject digest updated, the Statements re-signed, the outcome
//! recomputed where a status changes. Each fails exactly `compliance.caching`.

use std::path::Path;

use crate::forge::*;
use crate::forgery_compliance::disqualify_challenger;
use serde_json::{Value, json};
use verifier::{CheckName, FailureReason, VerifyReport};

/// The challenger's probe log of pass 0.
const LOG: &str = "probes/candidate-1-miner-fast-pass-1.json";

/// Forges `fixtures/v9-round` with `files` and `receipt` and verifies it.
fn forged_v9(files: impl FnOnce(&Path), receipt: impl FnOnce(&Path, &mut Value)) -> VerifyReport {
    forged_fixture("v9-round", files, receipt)
}

/// The challenger's caching probe with `change` applied to its JSON.
fn edit_probe(dir: &Path, change: impl FnOnce(&mut Value)) {
    let path = dir.join(LOG);
    let mut log: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    change(&mut log["caching"]);
    std::fs::write(&path, serde_json::to_vec(&log).expect("json")).expect("write");
}

/// The one failure of `report`, which must be `compliance.caching`'s.
fn caching_failure(report: &VerifyReport) -> FailureReason {
    let failed: Vec<_> = report.failures().collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(failed[0].name, CheckName::Caching, "{failed:#?}");
    failed[0].reason.clone().expect("a reason")
}

/// The speed-up of a probe whose every repeat decoded in 1 µs: each pair's is its fresh
/// span × 10⁴ − 10⁴, and the one at an eighth from the smallest counts.
fn all_repeats_instant(probe: &Value) -> u64 {
    let mut pairs: Vec<u64> = (probe["requests"].as_array().expect("requests").iter())
        .filter(|r| r["repeat"] == json!(false))
        .map(|r| r["decodeUs"].as_u64().expect("decodeUs") * 10_000 - 10_000)
        .collect();
    pairs.sort_unstable();
    pairs[pairs.len() / 8]
}

#[test]
fn the_v9_round_holds_its_caching_probe() {
    let report = forged_v9(|_| {}, |_, _| {});
    assert!(report.passed(), "{:#?}", failures(&report));
    // The challenger's one counted run (the baseline runs no probe).
    assert_eq!(passed(&report, CheckName::Caching), 1);
}

/// The attack the check exists for, hidden: the probe shows an answer cache (every
/// repeat decoded in 1 µs, its figures made consistent), and the challenger stays
/// scored. It should have been `caching`.
#[test]
fn a_cache_on_a_scored_challenger_fails_compliance_caching() {
    let mut speedup = 0;
    let report = forged_v9(
        |dir| {
            edit_probe(dir, |probe| {
                for request in probe["requests"].as_array_mut().expect("requests") {
                    if request["repeat"] == json!(true) {
                        request["decodeUs"] = json!(1);
                    }
                }
                speedup = all_repeats_instant(probe);
                probe["speedupBp"] = json!(speedup);
            })
        },
        |_, _| {},
    );
    let expected = format!("pass 0: repeats faster by {speedup} bp, bound 10000 bp");
    let reason = caching_failure(&report);
    assert!(
        matches!(&reason, FailureReason::Recomputed { claimed, recomputed, .. }
            if claimed == "none" && *recomputed == expected),
        "{reason:?}"
    );
}

/// An honest challenger disqualified `caching`: its probe's repeats were not faster.
#[test]
fn a_caching_claim_on_an_honest_probe_fails_compliance_caching() {
    let report = forged_v9(
        |_| {},
        |dir, p| {
            let reason = json!({"caching": {"pass": 0, "speedupBp": 50000, "boundBp": 10000}});
            disqualify_challenger(dir, p, reason)
        },
    );
    let reason = caching_failure(&report);
    assert!(
        matches!(&reason, FailureReason::Recomputed { claimed, recomputed, .. }
            if claimed == "pass 0: repeats faster by 50000 bp, bound 10000 bp"
                && recomputed == "none"),
        "{reason:?}"
    );
}

/// A speed-up written over the one its requests give.
#[test]
fn a_speedup_unlike_its_requests_fails_compliance_caching() {
    let report = forged_v9(
        |dir| edit_probe(dir, |probe| probe["speedupBp"] = json!(12_345)),
        |_, _| {},
    );
    let reason = caching_failure(&report);
    assert!(
        matches!(&reason, FailureReason::Recomputed { field, claimed, .. }
            if field == "caching.speedupBp" && claimed == "12345"),
        "{reason:?}"
    );
}

/// A probe sent on prompts of the engine's choosing (one replaced by another prompt of
/// the sub-stream), or with a looser bound than the campaign's.
#[test]
fn a_probe_on_other_prompts_or_bound_fails_compliance_caching() {
    let report = forged_v9(
        |dir| {
            edit_probe(dir, |probe| {
                probe["requests"][0]["promptSha256"] = json!("0".repeat(64));
            })
        },
        |_, _| {},
    );
    let reason = caching_failure(&report);
    assert!(
        matches!(&reason, FailureReason::Recomputed { field, .. } if field == "caching.requests"),
        "{reason:?}"
    );
    let report = forged_v9(
        |dir| edit_probe(dir, |probe| probe["boundBp"] = json!(1_000_000)),
        |_, _| {},
    );
    let reason = caching_failure(&report);
    assert!(
        matches!(&reason, FailureReason::Recomputed { field, .. } if field == "caching.boundBp"),
        "{reason:?}"
    );
}

/// A probe left out of a counted run whose campaign asks for one.
#[test]
fn a_probe_left_out_fails_compliance_caching() {
    let report = forged_v9(
        |dir| {
            let path = dir.join(LOG);
            let mut log: Value =
                serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
            log.as_object_mut().expect("log").remove("caching");
            std::fs::write(&path, serde_json::to_vec(&log).expect("json")).expect("write");
        },
        |_, _| {},
    );
    let reason = caching_failure(&report);
    assert!(
        matches!(&reason, FailureReason::Recomputed { field, claimed, .. }
            if field == "caching" && claimed == "absent"),
        "{reason:?}"
    );
}
