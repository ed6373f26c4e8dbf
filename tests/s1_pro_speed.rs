//! The s1-pro-speed demo (`examples/s1-pro-speed/`, content/s1-pro-speed.md) end to end:
//! the campaign added, the submission ingested, a round of the built-in engine served as
//! a decision sidecar — each run's bearer token in its engine's environment only,
//! readiness on the contract's health route, decisions per second measured at p95, the
//! weights gate and the logit-distance gate on fresh items — then `referee verify` of
//! the data directory passing with the decide checks. The sidecar's capability probe
//! runs before any entry: a contract the baseline does not keep fails the round at setup.

mod support;

use std::path::Path;

use receipts::layout::{DataDir, read_round_record};
use receipts::model::{
    CapabilityFeature, EntryStatus, FindingStatus, Role, RoundFailure, RoundStatus, Sha256Hex,
    Track, TypedOrText, WeightFile, WeightsSource, WorkloadKind,
};
use referee::demo::s1_pro_speed::{CAMPAIGN_ID, SUBMISSION_DIFF, WEIGHTS, stage};
use support::{bin, run_ok, stdout, text};

/// `--campaign s1-pro-speed-demo --data data`.
const C: [&str; 4] = ["--campaign", CAMPAIGN_ID, "--data", "data"];

/// Stages the demo in `dir` with its campaign file passed through `edit`, adds the
/// campaign, a keyring, the miner and its submission, and runs round 1.
fn staged_round(dir: &Path, edit: impl Fn(String) -> String) {
    let campaign = stage(&dir.join("src")).expect("stage");
    let text = std::fs::read_to_string(&campaign).expect("campaign");
    std::fs::write(&campaign, edit(text)).expect("campaign");
    let (_, key_path) = support::setup_demo_submission(
        dir,
        CAMPAIGN_ID,
        "miner-fast",
        "faster.diff",
        SUBMISSION_DIFF,
    );
    run_ok(
        dir,
        &[
            &["round"][..],
            &C,
            &["--key", key_path.to_str().expect("utf-8")],
        ]
        .concat(),
    );
}

#[test]
fn the_s1_pro_speed_demo_runs_a_decide_round_whose_receipt_verifies() {
    let _serial = support::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    staged_round(dir, |campaign| campaign);
    let data = DataDir::new(dir.join("data"));
    let campaign = data.campaign(&CAMPAIGN_ID.parse().expect("id"));
    let (record, _) = read_round_record(&campaign.round_dir(1)).expect("receipt");
    let why: Vec<_> = (record.entries.iter())
        .map(|e| (&e.infra_failure, &e.disqualification))
        .collect();
    assert_eq!(
        record.outcome.status,
        RoundStatus::Complete,
        "{:?}\n{why:?}",
        record.outcome
    );
    let statuses: Vec<(Role, EntryStatus)> =
        record.entries.iter().map(|e| (e.role, e.status)).collect();
    assert_eq!(
        statuses,
        [
            (Role::Baseline, EntryStatus::Scored),
            (Role::Challenger, EntryStatus::Scored)
        ]
    );
    // Before any entry ran, the baseline sidecar kept the declared contract.
    let probe = record
        .capability_probe
        .as_ref()
        .expect("the sidecar's probe");
    let found: Vec<(CapabilityFeature, FindingStatus)> = (probe.findings.iter())
        .map(|f| (f.feature, f.status))
        .collect();
    let ok = |feature| (feature, FindingStatus::Ok);
    assert_eq!(
        found,
        CapabilityFeature::DECIDE.map(ok),
        "{:?}",
        probe.findings
    );
    // Each entry hashed the pinned file in its own tree.
    let decide = record.decide.as_ref().expect("the decide record");
    assert_eq!(decide.track, Some(Track::S1ProSpeed));
    assert_eq!(decide.workload_kind, WorkloadKind::Decide);
    let pinned = vec![WeightFile {
        name: "model.weights".into(),
        sha256: Sha256Hex::digest(WEIGHTS.as_bytes()),
    }];
    let weights: Vec<(u32, WeightsSource, Vec<WeightFile>)> = decide
        .weights
        .iter()
        .map(|w| (w.entry, w.source, w.files.clone()))
        .collect();
    assert_eq!(
        weights,
        [
            (0, WeightsSource::Pinned, pinned.clone()),
            (1, WeightsSource::Pinned, pinned)
        ]
    );
    // Each entry's sidecar refused a request without its token before it was timed.
    let steps = campaign.round_dir(1).join("logs/steps");
    let start_log = (std::fs::read_dir(&steps).expect("the step logs"))
        .map(|e| e.expect("a step log").path())
        .find(|p| {
            (p.to_string_lossy())
                .ends_with("-candidate-1-miner-fast-pass-1-starting-the-engine.log")
        })
        .expect("the challenger's start step log");
    let start_log = std::fs::read_to_string(&start_log).expect("the start step's log");
    assert!(
        start_log.contains("token: 401 without the run's token"),
        "{start_log}"
    );
    // The sidecar was launched with its decisions; its token is in no argument.
    let command = record.entries[1].engine.command.clone().expect("command");
    let decisions = command
        .iter()
        .position(|a| a == "--decide")
        .expect("--decide");
    assert_eq!(command[decisions + 1], "a,e,i,o");
    assert!(command.iter().all(|a| a.len() != 64), "{command:?}");
    // The built-in engine's answers are batch-independent: the challenger's 30 fresh
    // items are the reference's exactly.
    let gate = record.entries[1].correctness.as_ref().expect("the gate");
    assert_eq!(
        (gate.items, gate.passed, gate.max_item_micro_nats),
        (30, true, 0)
    );
    assert!(
        record.entries[1]
            .throughput_milli_rps
            .is_some_and(|t| t > 0)
    );

    let verified = run_ok(
        dir,
        &["verify", "data", "--keyring", "data/keyring.json", "--json"],
    );
    let reports: serde_json::Value = serde_json::from_str(&verified).expect("json");
    let mut decide_checks = Vec::new();
    for report in reports.as_array().expect("array") {
        for check in report["checks"].as_array().into_iter().flatten() {
            let name = check["name"].as_str().unwrap_or_default();
            if name.starts_with("decide.") || name == "capability.probe" {
                decide_checks.push((
                    name.to_owned(),
                    check["target"].as_str().unwrap_or_default().to_owned(),
                    check["passed"].as_bool().unwrap_or_default(),
                ));
            }
        }
    }
    let passed = |name: &str, target: &str| (name.to_owned(), target.to_owned(), true);
    assert_eq!(
        decide_checks,
        [
            passed("capability.probe", "capabilityProbe"),
            passed("decide.round", ""),
            passed("decide.weights", "decide.weights[0]"),
            passed("decide.weights", "decide.weights[1]"),
            passed("decide.gate", "entries[1].correctness"),
        ],
        "{verified}"
    );
    assert!(
        reports
            .as_array()
            .expect("array")
            .iter()
            .all(|r| r["passed"] == true),
        "{verified}"
    );

    // A distance edited in the gate file is recomputed from its two vectors.
    let gate_file = campaign.round_dir(1).join(&gate.items_file);
    let mut file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&gate_file).expect("gate file")).expect("json");
    file["items"][0]["distanceMicroNats"] = serde_json::json!(1);
    std::fs::write(&gate_file, file.to_string()).expect("write");
    let bundle = campaign.round_dir(1);
    let forged = bin()
        .args(["verify", bundle.to_str().expect("utf-8")])
        .args(["--keyring", "data/keyring.json", "--json"])
        .current_dir(dir)
        .output()
        .expect("referee");
    assert_eq!(forged.status.code(), Some(1), "{}", text(&forged));
    let reports: serde_json::Value = serde_json::from_str(&stdout(&forged)).expect("json");
    let report = &reports[0];
    let failed: Vec<(String, String)> = (report["checks"].as_array().into_iter().flatten())
        .filter(|c| c["passed"] == false && c["notApplicable"].is_null())
        .map(|c| {
            let name = c["name"].as_str().unwrap_or_default().to_owned();
            (name, c["target"].as_str().unwrap_or_default().to_owned())
        })
        .filter(|(name, _)| name.starts_with("decide."))
        .collect();
    assert_eq!(
        failed,
        [(
            "decide.gate".to_owned(),
            "entries[1].correctness".to_owned()
        )],
        "{report:#}"
    );
}

/// A baseline sidecar that does not keep the declared contract — here the campaign reads
/// the decision at a pointer the sidecar does not answer — fails the round at setup, by
/// the capability probe and before any entry is timed: `infra_failed` with the typed
/// `capability_missing` naming the feature and the campaign field that fixes it. The
/// receipt of that round verifies.
#[test]
fn a_sidecar_without_the_declared_decision_fails_the_round_before_timing() {
    let _serial = support::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    staged_round(dir, |campaign| {
        campaign.replace(
            "decision_pointer = \"/decision\"",
            "decision_pointer = \"/verdict\"",
        )
    });
    let data = DataDir::new(dir.join("data"));
    let campaign = data.campaign(&CAMPAIGN_ID.parse().expect("id"));
    let (record, _) = read_round_record(&campaign.round_dir(1)).expect("receipt");
    assert_eq!(record.outcome.status, RoundStatus::InfraFailed);
    assert_eq!(
        record.outcome.reason,
        Some(TypedOrText::Typed(RoundFailure::CapabilityMissing {
            feature: CapabilityFeature::DecideDecision,
            field: "decide.decision_pointer".into(),
        })),
        "{:?}",
        record.capability_probe
    );
    let found: Vec<(CapabilityFeature, FindingStatus)> = (record.capability_probe.iter())
        .flat_map(|p| &p.findings)
        .map(|f| (f.feature, f.status))
        .collect();
    assert_eq!(
        found,
        [
            (CapabilityFeature::Readiness, FindingStatus::Ok),
            (CapabilityFeature::DecideToken, FindingStatus::Ok),
            (CapabilityFeature::DecideDecision, FindingStatus::Missing),
            (CapabilityFeature::DecideVector, FindingStatus::NotAsked),
        ]
    );
    assert!(
        record.entries.iter().all(|e| e.runs.is_empty()),
        "no entry is timed after a missing finding"
    );
    run_ok(dir, &["verify", "data", "--keyring", "data/keyring.json"]);
}
