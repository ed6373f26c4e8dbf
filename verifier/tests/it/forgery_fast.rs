//! The s1-fast-speed round as the CLI seals it (content/s1-fast-speed.md):
//! `fixtures/v9-fast-round` is the demo's round (`examples/s1-fast-speed/`), whose
//! challenger on two L4s runs no faster than the baseline on one H100 but costs 35 % less
//! per decision, so the outcome seats it on cost (`cost_margin_met`). Each forgery is
//! re-signed as an evaluator holding the key could; only the recomputations catch it.

use receipts::rules::cost::cost_micro_usd_per_million;
use serde_json::{Value, json};
use verifier::{CheckName, FailureReason};

use crate::forge::*;

/// The round forged here.
const FIXTURE: &str = "v9-fast-round";

/// The fixture's challenger, `entries[1]`, seated on cost.
const CHALLENGER: usize = 1;

/// The fixture's receipt predicate.
fn predicate() -> Value {
    statement(&fixture_named(FIXTURE), "receipt.dsse.json")["predicate"].clone()
}

#[test]
fn the_cheaper_challenger_is_seated_on_cost_and_the_round_verifies() {
    let keyring =
        receipts::keys::Keyring::load(&fixture_named("v9-fast-keyring.json")).expect("keyring");
    let report = verifier::verify_bundle(
        &fixture_named(FIXTURE),
        &keyring,
        &verifier::VerifyOptions::default(),
    );
    assert!(report.passed(), "{:#?}", failures(&report));
    let predicate = predicate();
    let challenger = &predicate["entries"][CHALLENGER];
    let winner = json!({"patch": challenger["patch"], "miner": challenger["miner"]});
    let outcome = &predicate["outcome"];
    assert_eq!(
        outcome["decision"],
        json!({"rule": "cost_margin_met", "winner": winner})
    );
    assert_eq!(outcome["leaderAfter"], winner);
    assert_eq!(outcome["changed"], json!(true));
    assert_eq!(predicate["fastTrack"]["costSeat"], json!(1));
    // Not on throughput: both entries ran at the one fixed rate, so the challenger is not
    // 5 % faster.
    let throughput = |entry: &Value| entry["throughputMilliRps"].as_u64().expect("throughput");
    assert!(!receipts::rules::score::overtakes(
        throughput(challenger),
        throughput(&predicate["entries"][0]),
        500
    ));
    let checked = |name: CheckName, target: &str| {
        report
            .checks
            .iter()
            .any(|c| c.name == name && c.passed && c.target.as_deref() == Some(target))
    };
    assert!(checked(CheckName::FastTrackGates, "entries[1].status"));
    assert!(checked(CheckName::PairedDecision, "outcome"));
}

/// The attack the cost rule exists for: a seat it refuses. The challenger's declared
/// resources made dearer (two H100s), its row's price and cost recomputed to match and
/// `costSeat` dropped, so every `fastTrack` check holds — but the outcome still seats it:
/// `paired.decision` recomputes the seat on cost from the record and finds none.
#[test]
fn a_seat_the_cost_rule_refuses_fails_paired_decision() {
    let report = forged_fixture(
        FIXTURE,
        |_| {},
        |_, predicate: &mut Value| {
            let throughput = predicate["entries"][CHALLENGER]["throughputMilliRps"]
                .as_u64()
                .expect("throughput");
            let fast = &mut predicate["fastTrack"];
            let row = &mut fast["entries"][CHALLENGER];
            row["resources"]["gpuClass"] = json!("h100");
            // 2 × 2 000 000 + 4 × 40 000 + 32 × 5 000 µ$/h: dearer than the baseline's
            // 2 640 000.
            row["priceMicroUsdPerHour"] = json!(4_320_000);
            row["costMicroUsdPerMillion"] =
                json!(cost_micro_usd_per_million(4_320_000, throughput).expect("cost"));
            fast["costSeat"] = Value::Null;
        },
    );
    assert_eq!(
        only(&report, CheckName::PairedDecision),
        FailureReason::Recomputed {
            file: "receipt.dsse.json".into(),
            field: "outcome.leaderAfter".into(),
            claimed: leader_text(&predicate()["entries"][CHALLENGER]),
            recomputed: "the baseline".into(),
        }
    );
}

/// The same round decided as a throughput campaign would (the challenger is not 5 %
/// faster, so the baseline keeps the seat): in a campaign scoring cost the verifier
/// demands the seat on cost.
#[test]
fn a_cost_seat_withheld_fails_paired_decision() {
    let report = forged_fixture(
        FIXTURE,
        |_| {},
        |_, predicate: &mut Value| {
            let outcome = &mut predicate["outcome"];
            outcome["leaderAfter"] = Value::Null;
            outcome["changed"] = json!(false);
            outcome["decision"] = json!({"rule": "no_scored_challenger"});
        },
    );
    let reason = only(&report, CheckName::PairedDecision);
    assert!(
        matches!(&reason, FailureReason::Recomputed { field, .. } if field == "outcome.leaderAfter"),
        "{reason:?}"
    );
}

/// A challenger whose capability on the sealed items is below the baseline's, left scored
/// and seated: `fastTrack.gates` names it, and neither the cost seat nor the outcome
/// holds.
#[test]
fn a_capability_below_the_incumbents_fails_fast_track_gates() {
    let report = forged_fixture(
        FIXTURE,
        |_| {},
        |_, predicate: &mut Value| {
            predicate["fastTrack"]["entries"][CHALLENGER]["capabilityPpm"] = json!(749_999);
        },
    );
    assert_eq!(
        failed(&report),
        ["fastTrack.decision", "fastTrack.gates", "paired.decision"]
            .into_iter()
            .collect()
    );
    let gate = report
        .failures()
        .find(|c| c.name == CheckName::FastTrackGates)
        .expect("fastTrack.gates fails");
    assert_eq!(gate.target.as_deref(), Some("entries[1].status"));
    assert_eq!(
        gate.reason.as_ref().map(ToString::to_string).as_deref(),
        Some(
            "`receipt.dsse.json` entries[1].status: scored, but its row fails a gate against \
             the incumbent's: capability_below_incumbent: 749999 ppm, the incumbent's 750000 \
             ppm; it cannot be seated"
        )
    );
}

/// A gate disqualification claimed on a challenger whose row passes both gates, each
/// gate in turn: `fastTrack.gates` names it.
#[test]
fn a_gate_failure_claimed_on_a_passing_row_fails_fast_track_gates() {
    for reason in [
        json!({"capability_below_incumbent": {"capabilityPpm": 750_000, "incumbentPpm": 750_000}}),
        json!({"agreement_below_incumbent": {"agreementPpm": 1_000_000, "incumbentPpm": 1_000_000}}),
    ] {
        let report = forged_fixture(
            FIXTURE,
            |_| {},
            |_, predicate: &mut Value| {
                let entry = &mut predicate["entries"][CHALLENGER];
                entry["status"] = json!("disqualified");
                entry["disqualification"] = json!({
                    "reason": reason,
                    "detail": "below the incumbent's",
                    "logTail": [],
                });
            },
        );
        let gate = report
            .failures()
            .find(|c| c.name == CheckName::FastTrackGates)
            .unwrap_or_else(|| panic!("fastTrack.gates fails: {:#?}", failures(&report)));
        assert_eq!(gate.target.as_deref(), Some("entries[1].status"));
    }
}

/// The seat `entry` would hold, as `paired.decision` names it.
fn leader_text(entry: &Value) -> String {
    let leader: receipts::model::Leader =
        serde_json::from_value(json!({"patch": entry["patch"], "miner": entry["miner"]}))
            .expect("leader");
    verifier::view::format_leader(Some(&leader))
}
