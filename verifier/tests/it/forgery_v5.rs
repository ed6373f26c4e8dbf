//! The forgeries of v5's checks (content/verifying.md): `fixtures/v5-round/`, a real v5
//! round (README's by-hand round sealed by this build: the baseline, its A/A control and
//! `miner-fast`'s challenger, one pass), changed the way an evaluator holding the key
//! could — every subject digest updated, the Statements re-signed with a key the keyring
//! trusts, and whatever else the change implies recomputed so that every older check
//! passes. Each fails exactly its named check.
//!
//! The fixture was made with README's by-hand commands (`referee keygen`, `keyring add
//! --valid-from 2026-01-01T00:00:00Z`, `demo --prepare`, `campaign add`, `miner add
//! miner-fast`, `ingest` of `faster-batching.diff`, `round`) by the build of the commit
//! that added it, then `cp -a data/by-hand/rounds/1 fixtures/v5-round`; keyring
//! `fixtures/v5-keyring.json`.

use std::path::Path;

use crate::forge::*;
use receipts::model::{FrozenCampaign, RoundRecord, Sha256Hex};
use receipts::rules::paired::{paired_ratio_ppm, paired_score};
use serde_json::{Value, json};
use verifier::{CheckName, FailureReason, VerifyReport};

const BASELINE_LOG: &str = "probes/baseline-pass-1.json";
const CONTROL_LOG: &str = "probes/baseline-control-pass-1.json";
const CHALLENGER_LOG: &str = "probes/candidate-1-miner-fast-pass-1.json";

/// Forges `fixtures/v5-round` with `files` and `receipt` (which gets the bundle's
/// directory too, for what it recomputes from the files) and verifies it.
fn forged_v5(files: impl FnOnce(&Path), receipt: impl FnOnce(&Path, &mut Value)) -> VerifyReport {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    forge_from(
        &fixture_named("v5-round"),
        dir.path(),
        files,
        |_| {},
        |p| receipt(&path, p),
    );
    verify(dir.path())
}

/// A probe log's median throughput, milli-requests/s.
fn log_throughput(dir: &Path, file: &str) -> u64 {
    let log: Value =
        serde_json::from_slice(&std::fs::read(dir.join(file)).expect("log")).expect("json");
    log["throughputMilliRps"].as_u64().expect("a throughput")
}

/// Re-derives what the challenger's (entry 1's) one measured run at `milli_rps` implies:
/// its row, run summary, median/min/max, paired ratio and score against the baseline's
/// run of the pass, then the round's outcome by the verifier's own decision rule.
fn recompute_challenger(dir: &Path, predicate: &mut Value, milli_rps: u64) {
    let baseline = predicate["entries"][0]["passes"][0]["throughputMilliRps"]
        .as_u64()
        .expect("baseline run");
    let challenger = &mut predicate["entries"][1];
    challenger["passes"][0]["throughputMilliRps"] = json!(milli_rps);
    challenger["passes"][0]["pairedRatioPpm"] =
        json!(paired_ratio_ppm(milli_rps, baseline).expect("ratio"));
    challenger["runs"][0]["throughputMilliRps"] = json!(milli_rps);
    for field in [
        "throughputMilliRps",
        "throughputMinMilliRps",
        "throughputMaxMilliRps",
    ] {
        challenger[field] = json!(milli_rps);
    }
    let score = paired_score(&[milli_rps], &[baseline]).expect("score");
    challenger["pairedScore"] = serde_json::to_value(score).expect("json");
    challenger["scorePpm"] = json!(score.median_ppm);
    recompute_outcome(dir, predicate);
}

/// Sets the predicate's outcome to the one the paired decision rule gives it.
fn recompute_outcome(dir: &Path, predicate: &mut Value) {
    let record: RoundRecord = serde_json::from_value(predicate.clone()).expect("record");
    let bytes = std::fs::read(dir.join("inputs/campaign.json")).expect("campaign");
    let frozen = FrozenCampaign::from_json("inputs/campaign.json", &bytes).expect("campaign");
    let outcome = verifier::recomputed_outcome(dir, &record, &frozen).expect("outcome");
    predicate["outcome"] = serde_json::to_value(outcome).expect("json");
}

#[test]
fn the_re_signed_v5_round_passes_every_check_v5_added() {
    let report = forged_v5(|_| {}, |_, _| {});
    assert!(
        report.passed(),
        "{:#?}",
        report.failures().collect::<Vec<_>>()
    );
    // Three pass rows (the baseline's, its control's, the challenger's), two entries.
    assert_eq!(passed(&report, CheckName::ProbeLogEntry), 3);
    assert_eq!(passed(&report, CheckName::RunsPasses), 2);
    assert_eq!(passed(&report, CheckName::RoundSla), 1);
    // No entry was disqualified by a run's end: nothing for `status.passes` to hold.
    assert_eq!(passed(&report, CheckName::StatusPasses), 0);
}

/// The coherent forgery of issue 41: the baseline's genuine probe log credited to the
/// challenger (copied over the challenger's log), the challenger's row, runs, paired
/// score and the round's outcome recomputed from it. Every measurement check passes —
/// the log is real — but the log names the run it measured.
#[test]
fn one_entrys_real_probe_log_moved_onto_another_entrys_row_fails_probes_entry() {
    let report = forged_v5(
        |dir| {
            std::fs::copy(dir.join(BASELINE_LOG), dir.join(CHALLENGER_LOG)).expect("copy");
        },
        |dir, p| {
            let moved = log_throughput(dir, CHALLENGER_LOG);
            recompute_challenger(dir, p, moved);
        },
    );
    let reason = only(&report, CheckName::ProbeLogEntry);
    let FailureReason::Recomputed {
        file,
        field,
        claimed,
        recomputed,
    } = reason
    else {
        panic!("{reason:?}")
    };
    assert_eq!(
        (file.as_str(), field.as_str()),
        (CHALLENGER_LOG, "measuredFor")
    );
    assert!(
        claimed.starts_with("round 1 entry 0 patch none config "),
        "{claimed}"
    );
    assert!(
        recomputed.starts_with("round 1 entry 1 patch e5595a3d34df082f0d1b60815358d65f669e334e70f470047fba5e3881d88ea1 config "),
        "{recomputed}"
    );
}

/// The same move by name: the challenger's row and run summary cite the baseline's A/A
/// control log.
#[test]
fn a_row_citing_another_entrys_log_fails_probes_entry() {
    let report = forged_v5(
        |_| {},
        |dir, p| {
            p["entries"][1]["passes"][0]["probeLog"] = json!(CONTROL_LOG);
            p["entries"][1]["runs"][0]["probeLog"] = json!(CONTROL_LOG);
            let moved = log_throughput(dir, CONTROL_LOG);
            recompute_challenger(dir, p, moved);
        },
    );
    assert!(matches!(
        only(&report, CheckName::ProbeLogEntry),
        FailureReason::Recomputed { file, field, .. }
            if file == CONTROL_LOG && field == "measuredFor"
    ));
}

/// A measured row that names no probe log: nothing would say what it measured.
#[test]
fn a_measured_row_without_its_probe_log_fails_probes_entry() {
    let report = forged_v5(
        |_| {},
        |_, p| {
            let row = p["entries"][0]["passes"][1].as_object_mut().expect("row");
            row.remove("probeLog");
        },
    );
    assert_eq!(
        only(&report, CheckName::ProbeLogEntry),
        recomputed(
            "receipt.dsse.json",
            "entries[0].passes[1].probeLog",
            "none",
            "the probe log a `Measured` run wrote"
        )
    );
}

/// The run summaries an entry's median is read from cite another entry's log (its
/// figures recomputed from it): they are not the entry's pass rows.
#[test]
fn run_summaries_citing_another_log_than_the_rows_fail_runs_passes() {
    let report = forged_v5(
        |_| {},
        |dir, p| {
            let moved = log_throughput(dir, BASELINE_LOG);
            let challenger = &mut p["entries"][1];
            challenger["runs"][0]["probeLog"] = json!(BASELINE_LOG);
            challenger["runs"][0]["throughputMilliRps"] = json!(moved);
            for field in [
                "throughputMilliRps",
                "throughputMinMilliRps",
                "throughputMaxMilliRps",
            ] {
                challenger[field] = json!(moved);
            }
        },
    );
    assert_eq!(
        only(&report, CheckName::RunsPasses),
        recomputed(
            "receipt.dsse.json",
            "entries[1].runs[0].probeLog",
            BASELINE_LOG,
            &format!("one of {CHALLENGER_LOG}")
        )
    );
}

/// A receipt whose SLA is looser than the campaign's: its probes are judged by the
/// campaign's.
#[test]
fn a_receipt_sla_other_than_the_campaigns_fails_round_sla() {
    let report = forged_v5(|_| {}, |_, p| p["sla"]["bound_ms"] = json!(60_000));
    let reason = only(&report, CheckName::RoundSla);
    assert!(
        matches!(&reason, FailureReason::Recomputed { field, .. } if field == "sla"),
        "{reason:?}"
    );
}

/// The fastest entry marked crashed, its score dropped and the outcome recomputed, while
/// its pass row says it measured.
#[test]
fn the_fastest_entry_marked_crashed_while_its_row_measured_fails_status_passes() {
    let report = forged_v5(
        |_| {},
        |dir, p| {
            let challenger = &mut p["entries"][1];
            challenger["status"] = json!("disqualified");
            challenger["disqualification"] = json!({
                "reason": "engine_crashed",
                "detail": "the engine exited during the SLA runs",
                "logTail": [],
            });
            let entry = challenger.as_object_mut().expect("entry");
            entry.remove("pairedScore");
            entry.insert("scorePpm".into(), Value::Null);
            recompute_outcome(dir, p);
        },
    );
    assert_eq!(
        only(&report, CheckName::StatusPasses),
        FailureReason::StatusInconsistent {
            field: "entries[1].status".into(),
            status: "disqualified (engine_crashed)".into(),
            problem: "no pass row of the entry is `crashed` (its rows: measured)".into(),
        }
    );
}

/// The challenger's probe log with `edit` applied to its one probe.
fn forged_probe(edit: impl FnOnce(&mut Value)) -> VerifyReport {
    forged_v5(
        |dir| {
            edit_json(dir, CHALLENGER_LOG, |log| {
                edit(&mut log["runs"][0]["probes"][0])
            })
        },
        |_, _| {},
    )
}

/// The field of the one `probe.plan` failure of `report`, with its claimed value.
fn plan_failure(report: &VerifyReport) -> (String, String) {
    match only(report, CheckName::ProbePlan) {
        FailureReason::Recomputed {
            file,
            field,
            claimed,
            ..
        } => {
            assert_eq!(file, CHALLENGER_LOG);
            (field, claimed)
        }
        other => panic!("{other:?}"),
    }
}

/// Input bytes are the seeded items' prompts: one byte more fails.
#[test]
fn a_probes_input_bytes_other_than_its_items_fail_probe_plan() {
    let report = forged_probe(|probe| {
        let bytes = probe["inputBytes"].as_u64().expect("bytes");
        probe["inputBytes"] = json!(bytes + 1);
    });
    assert_eq!(plan_failure(&report).0, "runs[0].probes[0].inputBytes");
}

/// The warm-up count is the campaign's.
#[test]
fn a_probes_warm_up_other_than_the_campaigns_fails_probe_plan() {
    let report = forged_probe(|probe| probe["warmupRequests"] = json!(0));
    assert_eq!(
        plan_failure(&report),
        (
            "runs[0].probes[0].warmupRequests".to_owned(),
            "0".to_owned()
        )
    );
}

/// Output tokens beyond what the measured items ask for.
#[test]
fn more_output_tokens_than_the_items_ask_fail_probe_plan() {
    let report = forged_probe(|probe| probe["outputTokens"] = json!(1_000_000));
    assert_eq!(
        plan_failure(&report),
        (
            "runs[0].probes[0].outputTokens".to_owned(),
            "1000000".to_owned()
        )
    );
}

/// A chain whose second round is sealed as v4 after a v5 first round: the later round
/// would shed v5's checks.
#[test]
fn a_chain_whose_predicate_version_goes_down_fails_chain_version() {
    let data = tempfile::tempdir().expect("tempdir");
    let rounds = data.path().join("by-hand/rounds");
    let first = rounds.join("1");
    std::fs::create_dir_all(&rounds).expect("mkdir");
    forge_from(&fixture_named("v5-round"), &first, |_| {}, |_| {}, |_| {});
    let digest =
        receipts::bundle::read_statement_digest(&first.join("receipt.dsse.json")).expect("digest");
    forge_from(
        &fixture_named("v5-round"),
        &rounds.join("2"),
        |_| {},
        |opened| {
            opened["round"] = json!(2);
            opened["previousReceipt"] = json!(digest.to_string());
        },
        |p| {
            p["round"] = json!(2);
            p["previousReceipt"] = json!(digest.to_string());
        },
    );
    // Round 2 as v4 would have sealed it: a v4 receipt over a round-opened v2 statement.
    resign(&rounds.join("2"), "round-opened.dsse.json", |s| {
        s["predicateType"] = json!(receipts::model::ROUND_OPENED_PREDICATE_TYPE_V2);
    });
    resign(&rounds.join("2"), "receipt.dsse.json", |s| {
        s["predicateType"] = json!(receipts::model::ROUND_PREDICATE_TYPE_V4);
    });
    let bundles = verifier::archive::find_bundles(data.path()).expect("bundles");
    let reports = verifier::archive::verify_archive(
        &bundles,
        &keyring(),
        &verifier::VerifyOptions::default(),
        &|| {},
    );
    let second = reports
        .iter()
        .find(|r| r.bundle.ends_with("2"))
        .expect("round 2");
    assert_eq!(
        only(second, CheckName::ChainVersion),
        recomputed(
            "receipt.dsse.json",
            "predicateType",
            "round/v4",
            "round/v5 or later (round 1 of the chain is round/v5)"
        )
    );
}

/// The engine told to use more threads than the campaign's `hardware.engine_threads`
/// (1 in the by-hand campaign).
#[test]
fn engine_threads_other_than_the_campaigns_fail_engine_isolation() {
    let report = forged_v5(
        |_| {},
        |_, p| p["entries"][1]["engine"]["isolation"]["engineThreads"] = json!(2),
    );
    assert!(matches!(
        only(&report, CheckName::EngineIsolation),
        FailureReason::Recomputed { field, claimed, .. }
            if field == "entries[1].engine.isolation.engineThreads" && claimed == "2"
    ));
}

/// An engine run without a sandbox in a campaign that does not declare
/// `trusted_engines`.
#[test]
fn an_unsandboxed_engine_without_trusted_engines_fails_engine_isolation() {
    let report = forged_v5(
        |_| {},
        |_, p| p["entries"][1]["engine"]["isolation"]["sandbox"] = json!("trusted"),
    );
    assert!(matches!(
        only(&report, CheckName::EngineIsolation),
        FailureReason::Recomputed { field, claimed, .. }
            if field == "entries[1].engine.isolation.sandbox" && claimed == "Trusted"
    ));
}

/// An engine claimed unsandboxed (allowed for the built-in engine when bubblewrap does not
/// run) while its recorded command is bubblewrap's.
#[test]
fn an_unsandboxed_claim_on_a_bubblewrap_command_fails_engine_isolation() {
    let report = forged_v5(
        |_| {},
        |_, p| p["entries"][1]["engine"]["isolation"]["sandbox"] = json!("unsandboxed"),
    );
    assert_eq!(
        only(&report, CheckName::EngineIsolation),
        recomputed(
            "receipt.dsse.json",
            "entries[1].engine.isolation.sandbox",
            "Unsandboxed",
            "Bwrap (the program of its command, \"bwrap\")"
        )
    );
}

/// An engine that ran (its command is recorded) whose isolation record was dropped.
#[test]
fn an_engine_that_ran_without_its_isolation_record_fails_engine_isolation() {
    let report = forged_v5(
        |_| {},
        |_, p| p["entries"][1]["engine"]["isolation"] = Value::Null,
    );
    assert!(matches!(
        only(&report, CheckName::EngineIsolation),
        FailureReason::Recomputed { field, claimed, .. }
            if field == "entries[1].engine.isolation" && claimed == "absent"
    ));
}

/// An entry recorded on another backend than the campaign's.
#[test]
fn an_engine_on_another_backend_than_the_campaigns_fails_engine_isolation() {
    let report = forged_v5(
        |_| {},
        |_, p| p["entries"][1]["engine"]["backend"] = json!("process"),
    );
    assert_eq!(
        only(&report, CheckName::EngineIsolation),
        recomputed(
            "receipt.dsse.json",
            "entries[1].engine.backend",
            "process",
            "builtin (the campaign's backend)"
        )
    );
}

/// A self-test whose send-lag p50 is above its p99.
#[test]
fn a_self_test_p50_above_its_p99_fails_client_self_test() {
    let report = forged_v5(
        |_| {},
        |_, p| p["clientSelfTest"]["sendLagP50Us"] = json!(100_000),
    );
    assert!(matches!(
        only(&report, CheckName::ClientSelfTest),
        FailureReason::Recomputed { field, .. } if field == "clientSelfTest.sendLagP50Us"
    ));
}

/// A self-test run at another rate than the campaign's maximum.
#[test]
fn a_self_test_at_another_rate_than_the_campaigns_maximum_fails_client_self_test() {
    let report = forged_v5(
        |_| {},
        |_, p| p["clientSelfTest"]["rateMilliRps"] = json!(1000),
    );
    assert_eq!(
        only(&report, CheckName::ClientSelfTest),
        recomputed(
            "receipt.dsse.json",
            "clientSelfTest.rateMilliRps",
            "1000",
            "4000"
        )
    );
}

/// `referee show` and the site (`verifier::view`) mark the moved log's figures
/// unverified: the challenger's throughput and paired score rest on `probes.entry`.
#[test]
fn the_view_marks_a_moved_logs_figures_unverified() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    forge_from(
        &fixture_named("v5-round"),
        dir.path(),
        |dir| {
            std::fs::copy(dir.join(BASELINE_LOG), dir.join(CHALLENGER_LOG)).expect("copy");
        },
        |_| {},
        |p| {
            let moved = log_throughput(&path, CHALLENGER_LOG);
            recompute_challenger(&path, p, moved);
        },
    );
    let view = verifier::RoundView::from_bundle(
        dir.path(),
        &keyring(),
        &verifier::VerifyOptions::default(),
    )
    .expect("a round");
    let challenger = view.entry(1).expect("the challenger");
    assert!(!challenger.throughput_milli_rps.verified);
    assert!(!challenger.paired_score.as_ref().expect("a score").verified);
    let baseline = view.entry(0).expect("the baseline");
    assert!(baseline.throughput_milli_rps.verified);
}

/// The challenger's per-item correctness file.
const CHALLENGER_ITEMS: &str = "correctness/candidate-1-miner-fast.json";
/// The challenger's timed-run sample.
const CHALLENGER_SAMPLE: &str = "correctness/candidate-1-miner-fast-load-sample.json";

/// An item's prompt hash swapped for another item's: the outputs would be credited to a
/// prompt the seed did not draw.
#[test]
fn a_prompt_hash_other_than_the_seeded_items_fails_correctness_prompts() {
    let mut swapped = String::new();
    let report = forged_v5(
        |dir| {
            edit_json(dir, CHALLENGER_ITEMS, |f| {
                let other = f["items"][2]["promptSha256"].clone();
                swapped = other.as_str().expect("hash").to_owned();
                f["items"][1]["promptSha256"] = other;
            })
        },
        |_, _| {},
    );
    let reason = only(&report, CheckName::CorrectnessPrompts);
    assert!(
        matches!(&reason, FailureReason::Recomputed { file, field, claimed, .. }
            if file == CHALLENGER_ITEMS && field == "items[1].promptSha256" && *claimed == swapped),
        "{reason:?}"
    );
}

/// A generated id rewritten to the runner-up of the entry's own top-k at that position
/// (the distances, computed from the top-k lists, unchanged): not what a greedy engine
/// picks. The round's one id that outranks a generated one, the end of sequence at
/// item 0 position 2 that the fixed output length banned, does not excuse another.
#[test]
fn a_generated_id_other_than_its_top_k_argmax_fails_correctness_greedy() {
    let report = forged_v5(
        |dir| {
            edit_json(dir, CHALLENGER_ITEMS, |f| {
                let runner_up = f["items"][1]["entryTopK"][1][1][0].clone();
                f["items"][1]["outputTokenIds"][1] = runner_up;
            })
        },
        |_, _| {},
    );
    assert_eq!(
        only(&report, CheckName::CorrectnessGreedy),
        recomputed(
            CHALLENGER_ITEMS,
            "items[1].outputTokenIds[1]",
            "141 (logprob -1516293 µnat)",
            "14 (logprob -900822 µnat, the argmax of its top-k; only 257, never generated, \
             outranks a generated id, first at correctness/candidate-1-miner-fast.json \
             items[0].outputTokenIds[2])"
        )
    );
}

/// A second per-item file (the baseline's, a copy of the challenger's) in which the
/// reference answered item 0's first position otherwise (one logprob 0.090245 nats
/// lower), on both sides so that its distances and verdict still hold; with
/// `tolerance`, the campaign's `correctness.reference_tolerance_micro_nats` set to it
/// (the campaign's digest updated wherever the statements name it).
fn second_reference_answer(tolerance: Option<u64>) -> VerifyReport {
    const BASELINE_ITEMS: &str = "correctness/baseline.json";
    const CAMPAIGN: &str = "inputs/campaign.json";
    let dir = tempfile::tempdir().expect("tempdir");
    let sealed = std::fs::read(fixture_named("v5-round").join(CAMPAIGN)).expect("campaign");
    let old_digest = Sha256Hex::digest(&sealed).to_string();
    let campaign = match tolerance {
        None => sealed,
        Some(tolerance) => {
            let mut campaign: Value = serde_json::from_slice(&sealed).expect("json");
            campaign["correctness"]["reference_tolerance_micro_nats"] = json!(tolerance);
            receipts::canonical::to_canonical_vec(&campaign).expect("canonical")
        }
    };
    let new_digest = Sha256Hex::digest(&campaign).to_string();
    forge_from(
        &fixture_named("v5-round"),
        dir.path(),
        |dir| {
            std::fs::copy(dir.join(CHALLENGER_ITEMS), dir.join(BASELINE_ITEMS)).expect("copy");
            edit_json(dir, BASELINE_ITEMS, |f| {
                for side in ["entryTopK", "referenceTopK"] {
                    f["items"][0][side][0][4][1] = json!(-4_000_000);
                }
            });
            std::fs::write(dir.join(CAMPAIGN), &campaign).expect("write");
        },
        |opened| replace_string(opened, &old_digest, &new_digest),
        |p| {
            let mut summary = p["entries"][1]["correctness"].clone();
            summary["itemsFile"] = json!(BASELINE_ITEMS);
            summary
                .as_object_mut()
                .expect("summary")
                .remove("loadSampleFile");
            p["entries"][0]["correctness"] = summary;
            replace_string(p, &old_digest, &new_digest);
        },
    );
    resign(dir.path(), "receipt.dsse.json", |s| {
        let subjects = s["subject"].as_array_mut().expect("subjects");
        subjects.push(json!({"name": BASELINE_ITEMS, "digest": {"sha256": ""}}));
        subjects.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    });
    verify(dir.path())
}

/// Every string `from` anywhere in `value` replaced by `to`.
fn replace_string(value: &mut Value, from: &str, to: &str) {
    match value {
        Value::String(s) if s == from => *s = to.to_owned(),
        Value::Array(items) => items.iter_mut().for_each(|v| replace_string(v, from, to)),
        Value::Object(map) => map.values_mut().for_each(|v| replace_string(v, from, to)),
        _ => {}
    }
}

/// The reference is deterministic, so the same prefix cannot get two answers.
#[test]
fn two_reference_answers_for_one_prefix_fail_correctness_reference() {
    let report = second_reference_answer(None);
    assert_eq!(
        only(&report, CheckName::CorrectnessReference),
        recomputed(
            CHALLENGER_ITEMS,
            "items[0].referenceTopK[0]",
            "[(133, -614673), (235, -1390343), (163, -2715106), (112, -2916397), (114, -4090245)]",
            "[(133, -614673), (235, -1390343), (163, -2715106), (112, -2916397), (114, -4000000)] \
             (as in correctness/baseline.json)"
        )
    );
}

/// A campaign whose reference runtime is not bit-reproducible sets a tolerance: the
/// same 0.090245-nat difference passes within 0.1 nats and fails within 0.09.
#[test]
fn a_reference_difference_within_the_campaigns_tolerance_passes_correctness_reference() {
    let report = second_reference_answer(Some(100_000));
    assert!(report.passed(), "{:#?}", failed(&report));
    let report = second_reference_answer(Some(90_000));
    assert!(matches!(
        only(&report, CheckName::CorrectnessReference),
        FailureReason::Recomputed { field, .. } if field == "items[0].referenceTopK[0]"
    ));
}

/// The timed-run sample of a diverging entry hidden: its run claims that no kept
/// request of the result probe completed, so nothing is drawn or checked
/// (`correctness.loadSample` has nothing to redraw), while the probe completed every
/// measured request and the keep pool holds them.
#[test]
fn a_sample_claiming_no_completed_request_fails_correctness_sample_pool() {
    let report = forged_v5(
        |dir| {
            edit_json(dir, CHALLENGER_SAMPLE, |s| {
                s["runs"][0]["completed"] = json!([]);
                s["runs"][0]["check"] = json!({
                    "kind": "not_applicable",
                    "reason": "no kept request of the result probe completed",
                });
            })
        },
        |_, _| {},
    );
    assert_eq!(
        only(&report, CheckName::LoadSamplePool),
        recomputed(
            CHALLENGER_SAMPLE,
            "runs[0].completed",
            "[]",
            "[26, 27, 35, 47, 49, 64, 65, 66, 68, 70, 74, 79, 85] (the keep pool's items among \
             the measured requests)"
        )
    );
}

/// A sample naming another probe than its run's result probe.
#[test]
fn a_sample_of_another_probe_than_the_result_fails_correctness_sample_pool() {
    let report = forged_v5(
        |dir| edit_json(dir, CHALLENGER_SAMPLE, |s| s["runs"][0]["probe"] = json!(1)),
        |_, _| {},
    );
    assert_eq!(
        only(&report, CheckName::LoadSamplePool),
        recomputed(CHALLENGER_SAMPLE, "runs[0].probe", "1", "0")
    );
}

/// A run's wall time cut below the probes it contains (its run summary alike): the
/// probes of its log ran 2.37 s one after another inside it.
#[test]
fn a_wall_time_shorter_than_its_probes_fails_host_load() {
    let report = forged_v5(
        |_| {},
        |_, p| {
            p["entries"][1]["passes"][0]["hostLoad"]["wallMs"] = json!(1000);
            p["entries"][1]["runs"][0]["hostLoad"]["wallMs"] = json!(1000);
        },
    );
    assert_eq!(
        only(&report, CheckName::HostLoad),
        recomputed(
            "receipt.dsse.json",
            "entries[1].passes[0].hostLoad.wallMs",
            "1000",
            &format!("at least 2367 (the probes of `{CHALLENGER_LOG}` ran 2367023 µs)")
        )
    );
}

/// The identity a round/v6 file records, for the challenger (entry 1) of the v5 round,
/// with `edit` applied: what its scorer writes into both of its correctness files.
fn challenger_identity(dir: &Path, edit: impl FnOnce(&mut Value)) -> Value {
    let log: Value = serde_json::from_slice(&std::fs::read(dir.join(CHALLENGER_LOG)).expect("log"))
        .expect("json");
    let mut identity = log["measuredFor"].clone();
    edit(&mut identity);
    identity
}

/// Both correctness files naming the challenger's run pass; one naming another entry
/// (the baseline's file moved onto the challenger, say) fails.
#[test]
fn a_correctness_file_naming_another_entry_fails_correctness_entry() {
    let honest = forged_v5(
        |dir| {
            let identity = challenger_identity(dir, |_| {});
            edit_json(dir, CHALLENGER_ITEMS, |f| {
                f["measuredFor"] = identity.clone()
            });
            edit_json(dir, CHALLENGER_SAMPLE, |s| s["measuredFor"] = identity);
        },
        |_, _| {},
    );
    assert!(
        honest.passed(),
        "{:#?}",
        honest.failures().collect::<Vec<_>>()
    );
    assert_eq!(passed(&honest, CheckName::CorrectnessEntry), 2);
    let report = forged_v5(
        |dir| {
            let identity = challenger_identity(dir, |i| {
                i["entry"] = json!(0);
                i["patch"] = Value::Null;
            });
            edit_json(dir, CHALLENGER_ITEMS, |f| f["measuredFor"] = identity);
        },
        |_, _| {},
    );
    let reason = only(&report, CheckName::CorrectnessEntry);
    assert!(
        matches!(&reason, FailureReason::Recomputed { file, field, claimed, recomputed }
            if file == CHALLENGER_ITEMS && field == "measuredFor"
                && claimed.starts_with("round 1 entry 0 patch none config ")
                && recomputed.starts_with("round 1 entry 1 patch e5595a3d")
                && recomputed.ends_with("pass 0 (the entry `entries[1]` citing it, in a pass of its own)")),
        "{reason:?}"
    );
}

/// A timed-run sample naming a pass the entry never ran.
#[test]
fn a_sample_file_naming_a_pass_the_entry_never_ran_fails_correctness_entry() {
    let report = forged_v5(
        |dir| {
            let identity = challenger_identity(dir, |i| i["pass"] = json!(3));
            edit_json(dir, CHALLENGER_SAMPLE, |s| s["measuredFor"] = identity);
        },
        |_, _| {},
    );
    assert!(matches!(
        only(&report, CheckName::CorrectnessEntry),
        FailureReason::Recomputed { file, field, claimed, .. }
            if file == CHALLENGER_SAMPLE && field == "measuredFor" && claimed.ends_with(" pass 3")
    ));
}

/// The fixture's frozen campaign with `min_predicate` set to `min`, canonical as
/// `referee campaign add` writes it: its bytes and their digest.
fn campaign_with_floor(min: &str) -> (Vec<u8>, String) {
    let path = fixture_named("v5-round").join("inputs/campaign.json");
    let mut campaign: Value =
        serde_json::from_slice(&std::fs::read(path).expect("campaign")).expect("json");
    campaign["min_predicate"] = json!(min);
    let bytes = receipts::canonical::to_canonical_vec(&campaign).expect("canonical");
    let digest = receipts::model::Sha256Hex::digest(&bytes).to_string();
    (bytes, digest)
}

/// The v5 round in a campaign whose `min_predicate` is `min`, its campaign digest
/// updated in both statements.
fn in_campaign_with_floor(min: &str) -> VerifyReport {
    let (bytes, digest) = campaign_with_floor(min);
    let dir = tempfile::tempdir().expect("tempdir");
    forge_from(
        &fixture_named("v5-round"),
        dir.path(),
        |dir| std::fs::write(dir.join("inputs/campaign.json"), &bytes).expect("write"),
        |opened| opened["campaign"]["digest"] = json!(digest),
        |p| {
            p["campaign"]["digest"] = json!(digest);
            // The input copy's entry names the same bytes.
            p["inputs"][0]["digest"]["sha256"] = json!(digest);
        },
    );
    verify(dir.path())
}

/// A campaign frozen with `min_predicate` v6 holds a v5 receipt (sealed by an older
/// build, without the checks v6 added); the same campaign with a v5 floor accepts it.
#[test]
fn a_receipt_older_than_its_campaigns_min_predicate_fails_round_min_predicate() {
    let accepted = in_campaign_with_floor(receipts::model::ROUND_PREDICATE_TYPE_V5);
    assert!(
        accepted.passed(),
        "{:#?}",
        accepted.failures().collect::<Vec<_>>()
    );
    assert_eq!(passed(&accepted, CheckName::RoundMinPredicate), 1);
    let report = in_campaign_with_floor(receipts::model::ROUND_PREDICATE_TYPE_V6);
    assert_eq!(
        only(&report, CheckName::RoundMinPredicate),
        recomputed(
            "receipt.dsse.json",
            "predicateType",
            "round/v5",
            "round/v6 or later (the campaign's min_predicate)"
        )
    );
}
