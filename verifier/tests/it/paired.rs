//! The paired checks of a v3 round (content/noise.md): a hand-built round of 3
//! interleaved passes — the baseline, two challengers, known throughputs — passes every
//! one of them, and each forged number, re-sealed with the same trusted key, fails
//! exactly its check with the claimed and the recomputed value.

use std::path::Path;

use crate::common::*;
use receipts::bundle::{seal_bundle, sign_statement};
use receipts::keys::PrivateKey;
use receipts::layout::{CAMPAIGN_INPUT, MINERS_INPUT, patch_input};
use receipts::model::{
    BackendKind, BeaconRecord, BeaconSource, CampaignRef, EngineRef, Entry, EntryMeasurement,
    EntryPass, EntryReview, EntryStatus, ErrorCounts, FrozenCampaign, HardwareCheck,
    HardwareFingerprint, HostLoad, IncumbentRemeasure, Leader, MeasurementOutcome, MinerId,
    NoiseCheck, NoiseVerdict, OpeningWitness, Outcome, PairedScore, Pass, PassStatus,
    ProbeHistograms, ProbeRecord, ROUND_OPENED_PREDICATE_TYPE, ROUND_OPENED_PREDICATE_TYPE_V2,
    ROUND_PREDICATE_TYPE, ROUND_PREDICATE_TYPE_V4, RevealedSeeds, Role, RoundFailure, RoundLog,
    RoundOpened, RoundRecord, RoundStatus, RunMeasurement, RunSummary, SeatRule, SeatedEntry,
    Seed32, SeedReveal, Sha256Hex, Sla, SlaUnmetReason, TokenCount, Tool, TypedOrText, Verdict,
};
use receipts::rules::histogram::{encode_histogram, new_latency_histogram};
use receipts::rules::passes::pass_order;
use receipts::rules::score::probe_throughput_milli_rps;
use receipts::rules::sla::{nearest_rank_value, required_requests, verdict};
use receipts::rules::workload::Workload;
use receipts::statement::{DigestSet, Statement, Subject};
use testkit::campaign::CampaignToml;
use verifier::view::{
    format_bp_percent, format_noise, format_paired_score, format_pass_order, format_ppm_percent,
    format_score_percent,
};
use verifier::{CheckName, FailureReason, VerifyReport};

const OPENED_FILE: &str = "round-opened.dsse.json";

const MINERS_BYTES: &[u8] = b"{\"miners\": []}\n";

/// The checks this file is about (with the host's steal and the token count, which the
/// passes' rows and the outcome read).
const PAIRED_CHECKS: [CheckName; 11] = [
    CheckName::SeedCommitments,
    CheckName::RoundScores,
    CheckName::PassOrder,
    CheckName::PassVoid,
    CheckName::PairedRatio,
    CheckName::PairedScore,
    CheckName::NoiseSpread,
    CheckName::NoiseVerdict,
    CheckName::PairedDecision,
    CheckName::HostSteal,
    CheckName::TokenCount,
];

/// The first baseline run of passes 0, 1, 2, milli-requests/s: spread
/// ⌈(10 200 − 9 900) · 10⁴ / 10 000⌉ = 300 bp.
const BASELINE: [u64; 3] = [10_000, 10_200, 9_900];
/// The A/A control: ratios 1 010 000, 1 000 000, 1 005 050 ppm, spread
/// ⌈10 000 · 10⁴ / 1 005 050⌉ = 100 bp.
const CONTROL: [u64; 3] = [10_100, 10_200, 9_950];
/// alice: ratios 1 275 600, 1 254 901, 1 262 626 — score +262 626 [+254 901, +275 600].
const ALICE: [u64; 3] = [12_756, 12_800, 12_500];
/// bob: ratios 1 050 000, 980 392, 1 040 404 — score +40 404 [−19 608, +50 000].
const BOB: [u64; 3] = [10_500, 10_000, 10_300];

/// carol, the incumbent: ratios 1 250 000, 1 225 490, 1 262 626 — score +250 000
/// [+225 490, +262 626]. Against her, alice's per-pass ratios are 1 020 480, 1 024 000
/// and 1 000 000: short of the 10 % margin.
const CAROL: [u64; 3] = [12_500, 12_500, 12_500];

/// dave, derived from carol: ratios 1 400 000, 1 372 549, 1 414 141 — score +400 000
/// [+372 549, +414 141]. Against carol, 1 120 000 in every pass: he clears the 10 %
/// margin but not the 30 % derived-work margin.
const DAVE: [u64; 3] = [14_000, 14_000, 14_000];

/// 3 interleaved passes, a 10 % margin (30 % for work derived from the incumbent) and a
/// 50 % drift bound.
fn frozen_campaign() -> FrozenCampaign {
    CampaignToml::minimal("demo")
        .set("runs", "3")
        .set("overtake_margin_bp", "1000")
        .set("derived_margin_bp", "3000")
        .set("drift_bound_bp", "5000")
        .set("rate_search.min_rate_milli_rps", "1000")
        .set("rate_search.max_rate_milli_rps", "4000")
        .set("rate_search.min_probe_duration_ms", "1000")
        .set("rate_search.min_probe_requests", "10")
        .set("rate_search.warmup_requests", "2")
        .set("rate_search.rate_tolerance_bp", "2500")
        .frozen()
}

fn diff(index: u32) -> Vec<u8> {
    format!("diff --git a/engine.toml b/engine.toml\n# entry {index}\n").into_bytes()
}

fn patch(index: u32) -> Sha256Hex {
    Sha256Hex::digest(&diff(index))
}

fn reveal(byte: u8) -> SeedReveal {
    SeedReveal::commit(Seed32([byte; 32]), Seed32([byte ^ 0xff; 32]))
}

fn leader(index: u32, miner: &str) -> Leader {
    Leader {
        patch: patch(index),
        miner: miner.parse::<MinerId>().expect("miner id"),
    }
}

/// A measured run; its paired ratio against the first baseline run of its pass (none
/// for the baseline's own run).
fn row(pass: usize, control: bool, milli_rps: u64, ratio_ppm: Option<u64>) -> EntryPass {
    EntryPass {
        pass: pass as u32,
        control,
        status: PassStatus::Measured,
        throughput_milli_rps: Some(milli_rps),
        paired_ratio_ppm: ratio_ppm,
        probe_log: None,
        engine_log: None,
        host_load: None,
        gpus: Vec::new(),
        telemetry: None,
    }
}

/// The paired ratios of `runs` against [`BASELINE`], ppm, as the constants' docs give
/// them.
fn ratios(runs: &[u64]) -> [u64; 3] {
    match runs {
        r if r == CONTROL => [1_010_000, 1_000_000, 1_005_050],
        r if r == ALICE => [1_275_600, 1_254_901, 1_262_626],
        r if r == BOB => [1_050_000, 980_392, 1_040_404],
        r if r == CAROL => [1_250_000, 1_225_490, 1_262_626],
        r if r == DAVE => [1_400_000, 1_372_549, 1_414_141],
        other => panic!("no ratios for {other:?}"),
    }
}

/// A scored entry with one measured run per pass (the baseline also its controls).
fn entry(index: u32, miner: Option<&str>, runs: &[u64], score: Option<PairedScore>) -> Entry {
    let mut passes: Vec<EntryPass> = runs
        .iter()
        .enumerate()
        .map(|(pass, t)| row(pass, false, *t, (index > 0).then(|| ratios(runs)[pass])))
        .collect();
    if index == 0 {
        let control = ratios(&CONTROL);
        passes.extend(
            CONTROL
                .iter()
                .enumerate()
                .map(|(pass, t)| row(pass, true, *t, Some(control[pass]))),
        );
    }
    Entry {
        index,
        role: if index == 0 {
            Role::Baseline
        } else {
            Role::Challenger
        },
        miner: miner.map(|m| m.parse::<MinerId>().expect("miner id")),
        patch: miner.map(|_| patch(index)),
        engine: EngineRef {
            backend: BackendKind::Builtin,
            config_sha256: Sha256Hex::digest(b"engine.toml"),
            image: None,
            command: None,
            isolation: None,
            api: None,
            memory_limit_mb: None,
            docker: None,
        },
        status: EntryStatus::Scored,
        disqualification: None,
        infra_failure: None,
        runs: vec![],
        throughput_milli_rps: None,
        throughput_min_milli_rps: None,
        throughput_max_milli_rps: None,
        correctness: None,
        score_ppm: Some(score.map_or(0, |s| s.median_ppm)),
        passes,
        paired_score: score,
        started_at: time("2026-05-01T10:00:00Z"),
        ended_at: time("2026-05-01T10:05:00Z"),
        engine_log: None,
        review: None,
    }
}

fn score(median_ppm: i64, min_ppm: i64, max_ppm: i64) -> PairedScore {
    PairedScore {
        median_ppm,
        min_ppm,
        max_ppm,
        passes: 3,
        coverage_ppm: 750_000,
    }
}

fn fingerprint() -> HardwareFingerprint {
    HardwareFingerprint {
        cpu_model: "test cpu".into(),
        cpu_count: 2,
        cpu_features: vec!["avx2".into()],
        memory_bytes: 1 << 33,
        os: "linux".into(),
        kernel: "6.1".into(),
        gpus: vec![],
        nvml: None,
    }
}

/// The honest round: alice clears the margin against the baseline in every pass and
/// takes the seat; bob is scored below her.
fn round() -> (RoundRecord, RoundOpened) {
    let entries = vec![
        entry(0, None, &BASELINE, None),
        entry(
            1,
            Some("alice"),
            &ALICE,
            Some(score(262_626, 254_901, 275_600)),
        ),
        entry(2, Some("bob"), &BOB, Some(score(40_404, -19_608, 50_000))),
    ];
    let seeds = RevealedSeeds {
        item_seed: reveal(1),
        order_seed: reveal(2),
        schedule_seed: reveal(3),
        correctness_seed: reveal(4),
        prompt_salt: reveal(5),
        sample_seed: Some(reveal(6)),
        pass_seed: Some(reveal(7)),
    };
    let passes = (0..3)
        .map(|index| Pass {
            index,
            order: pass_order(&Seed32([7; 32]), index, 3),
            void: false,
            placement: Vec::new(),
        })
        .collect();
    let campaign = CampaignRef {
        id: "demo".parse().expect("campaign id"),
        digest: frozen_campaign().digest,
    };
    let opened = RoundOpened {
        round: 1,
        campaign: campaign.clone(),
        miners_digest: Sha256Hex::digest(MINERS_BYTES),
        previous_receipt: None,
        entries: entries
            .iter()
            .map(|e| SeatedEntry {
                role: e.role,
                miner: e.miner.clone(),
                patch: e.patch,
            })
            .collect(),
        seed_commitments: Some(seeds.commitments()),
        evaluator_secret_sha256: None,
        beacon: None,
        practice: false,
        opened_at: time("2026-05-01T09:59:00Z"),
    };
    let record = RoundRecord {
        round: 1,
        campaign,
        miners_digest: Sha256Hex::digest(MINERS_BYTES),
        previous_receipt: None,
        tool: Tool {
            name: "referee".into(),
            version: "0.1.0".into(),
            git_commit: "unknown".into(),
            cpu_features: vec![],
        },
        request_sequence_digest: Workload::new(&frozen_campaign().campaign, &seeds, None)
            .and_then(|w| w.request_sequence_digest())
            .expect("digest"),
        seeds,
        beacon: None,
        evaluator_secret: None,
        practice: false,
        sla: Sla::default(),
        hardware: HardwareCheck {
            at_start: fingerprint(),
            at_end: fingerprint(),
            changed: false,
        },
        started_at: time("2026-05-01T09:58:00Z"),
        ended_at: time("2026-05-01T10:30:00Z"),
        steps: vec![],
        entries,
        drift: None,
        passes,
        noise: Some(NoiseCheck {
            baseline_spread_bp: Some(300),
            aa_spread_bp: Some(100),
            drift_bound_bp: 5000,
            margin_bp: 1000,
            verdict: NoiseVerdict::Quiet,
        }),
        outcome: Outcome {
            status: RoundStatus::Complete,
            reason: None,
            leader_before: None,
            leader_after: Some(leader(1, "alice")),
            changed: true,
            margin_bp: 1000,
            decision: TypedOrText::Typed(SeatRule::MarginMet {
                winner: leader(1, "alice"),
            }),
            remeasure: None,
        },
        token_count: None,
        client_self_test: None,
        capability_probe: None,
        limits: None,
        inputs: vec![],
        round_opened: OPENED_FILE.into(),
        transparency_log: None,
        kind: None,
        clock: None,
        decide: None,
        fast_track: None,
        pod: None,
        parallel: None,
    };
    (record, opened)
}

/// The input copies: the frozen campaign, miners.json, each entry's diff.
fn inputs(record: &RoundRecord) -> Vec<(String, Vec<u8>)> {
    let mut files = vec![
        (CAMPAIGN_INPUT.to_owned(), frozen_campaign().bytes),
        (MINERS_INPUT.to_owned(), MINERS_BYTES.to_vec()),
    ];
    for entry in record.entries.iter().filter(|e| e.patch.is_some()) {
        files.push((patch_input(&patch(entry.index)), diff(entry.index)));
    }
    files
}

/// Seals `record` and `opened` (both signed by the operator) into `dir`.
///
/// Sealed v4: these hand-built rows cite no probe logs (or logs drawn from no workload),
/// which v5's `probes.entry` and `probe.plan` fail; `forgery_v5.rs` forges those on a
/// real v5 round. The beacon and practice tests, which read only `seeds.beacon` and this
/// file's checks, seal v5 ([`seal_as`]).
fn seal(dir: &Path, record: &RoundRecord, opened: &RoundOpened) {
    seal_as(dir, record, opened, false);
}

/// [`seal`], as v5 (with round-opened v3) when `v5`.
fn seal_as(dir: &Path, record: &RoundRecord, opened: &RoundOpened, v5: bool) {
    seal_signed(dir, record, opened, v5, &operator());
}

/// [`seal_as`], both statements signed by `signer`.
pub(crate) fn seal_signed(
    dir: &Path,
    record: &RoundRecord,
    opened: &RoundOpened,
    v5: bool,
    signer: &PrivateKey,
) {
    let (predicate_type, opened_type) = if v5 {
        (ROUND_PREDICATE_TYPE, ROUND_OPENED_PREDICATE_TYPE)
    } else {
        (ROUND_PREDICATE_TYPE_V4, ROUND_OPENED_PREDICATE_TYPE_V2)
    };
    std::fs::create_dir_all(dir.join("inputs/patches")).expect("mkdir");
    let files = inputs(record);
    for (name, bytes) in &files {
        std::fs::write(dir.join(name), bytes).expect("write");
    }
    let statement = Statement::new(
        files
            .iter()
            .map(|(name, bytes)| Subject {
                name: name.clone(),
                digest: DigestSet {
                    sha256: Sha256Hex::digest(bytes),
                },
            })
            .collect(),
        opened_type,
        serde_json::to_value(opened).expect("round-opened json"),
    );
    let envelope = sign_statement(&statement, &[signer]).expect("signs");
    std::fs::write(
        dir.join(OPENED_FILE),
        envelope.to_file_bytes().expect("canonical"),
    )
    .expect("write");
    seal_bundle(
        dir,
        predicate_type,
        &serde_json::to_value(record).expect("round json"),
        &[signer],
    )
    .expect("seals");
}

fn verify_round(record: &RoundRecord, opened: &RoundOpened) -> VerifyReport {
    verify_with_logs(record, opened, &[])
}

/// [`verify_round`] of the round sealed as v5, which added the beacon and practice.
fn verify_round_v5(record: &RoundRecord, opened: &RoundOpened) -> VerifyReport {
    let dir = tempfile::tempdir().expect("tempdir");
    seal_as(dir.path(), record, opened, true);
    verifier::verify_bundle(dir.path(), &keyring(), &options())
}

/// [`verify_round`] with probe logs (bundle-relative path, content) in the bundle.
fn verify_with_logs(
    record: &RoundRecord,
    opened: &RoundOpened,
    logs: &[(&str, &EntryMeasurement)],
) -> VerifyReport {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("probes")).expect("mkdir");
    for (name, log) in logs {
        let bytes = serde_json::to_vec(log).expect("probe log json");
        std::fs::write(dir.path().join(name), bytes).expect("write");
    }
    seal(dir.path(), record, opened);
    verifier::verify_bundle(dir.path(), &keyring(), &options())
}

/// The failures among this file's checks.
fn paired_failures(report: &VerifyReport) -> Vec<(CheckName, Option<String>, FailureReason)> {
    report
        .failures()
        .filter(|c| PAIRED_CHECKS.contains(&c.name))
        .map(|c| (c.name, c.target.clone(), c.reason.clone().expect("reason")))
        .collect()
}

/// The one failure a forgery must cause: `check` on `target`, `field` claimed and
/// recomputed.
fn only(
    record: &RoundRecord,
    opened: &RoundOpened,
) -> (CheckName, Option<String>, String, String, String) {
    let failed = paired_failures(&verify_round(record, opened));
    assert_eq!(failed.len(), 1, "{failed:#?}");
    let (name, target, reason) = failed.into_iter().next().expect("one failure");
    match reason {
        FailureReason::Recomputed {
            file,
            field,
            claimed,
            recomputed,
        } => {
            assert_eq!(file, "receipt.dsse.json");
            (name, target, field, claimed, recomputed)
        }
        other => panic!("{other:?}"),
    }
}

fn failure(
    name: CheckName,
    target: &str,
    field: &str,
    claimed: &str,
    recomputed: &str,
) -> (CheckName, Option<String>, String, String, String) {
    (
        name,
        Some(target.to_owned()),
        field.to_owned(),
        claimed.to_owned(),
        recomputed.to_owned(),
    )
}

#[test]
fn the_honest_round_passes_every_paired_check() {
    let (record, opened) = round();
    let report = verify_round(&record, &opened);
    assert_eq!(paired_failures(&report), vec![]);
    let passed = |name: CheckName| {
        report
            .checks
            .iter()
            .filter(|c| c.name == name && c.passed)
            .count()
    };
    // passes (the count), passes[0..3].
    assert_eq!(passed(CheckName::PassOrder), 4);
    assert_eq!(passed(CheckName::PassVoid), 3);
    // 6 baseline rows (3 runs, 3 controls), 3 per challenger.
    assert_eq!(passed(CheckName::PairedRatio), 12);
    assert_eq!(passed(CheckName::PairedScore), 3);
    assert_eq!(passed(CheckName::RoundScores), 3);
    assert_eq!(passed(CheckName::NoiseSpread), 1);
    assert_eq!(passed(CheckName::NoiseVerdict), 1);
    assert_eq!(passed(CheckName::PairedDecision), 1);
    assert!(
        report
            .checks
            .iter()
            .any(|c| c.name == CheckName::SeedCommitments
                && c.target.as_deref() == Some("seeds.passSeed")
                && c.passed)
    );
}

#[test]
fn a_forged_pass_order_fails() {
    let (mut record, opened) = round();
    let honest = record.passes[1].order.clone();
    record.passes[1].order.swap(0, 1);
    assert_eq!(
        only(&record, &opened),
        failure(
            CheckName::PassOrder,
            "passes[1]",
            "passes[1].order",
            &format_pass_order(&record.passes[1].order),
            &format_pass_order(&honest),
        )
    );
}

#[test]
fn a_pass_seed_that_is_not_the_committed_one_fails() {
    let (mut record, opened) = round();
    record.seeds.pass_seed = Some(reveal(8));
    let failed = paired_failures(&verify_round(&record, &opened));
    assert!(
        failed.iter().any(|(name, target, reason)| {
            *name == CheckName::SeedCommitments
                && target.as_deref() == Some("seeds.passSeed")
                && matches!(reason, FailureReason::SeedCommitmentMismatch { .. })
        }),
        "{failed:#?}"
    );
}

#[test]
fn a_forged_paired_ratio_fails() {
    let (mut record, opened) = round();
    record.entries[2].passes[1].paired_ratio_ppm = Some(1_000_000);
    assert_eq!(
        only(&record, &opened),
        failure(
            CheckName::PairedRatio,
            "entries[2].passes[1]",
            "entries[2].passes[1].pairedRatioPpm",
            "1000000",
            "980392",
        )
    );
}

#[test]
fn a_ratio_on_the_baselines_own_run_fails() {
    let (mut record, opened) = round();
    record.entries[0].passes[0].paired_ratio_ppm = Some(1_000_000);
    assert_eq!(
        only(&record, &opened),
        failure(
            CheckName::PairedRatio,
            "entries[0].passes[0]",
            "entries[0].passes[0].pairedRatioPpm",
            "1000000",
            "none",
        )
    );
}

#[test]
fn a_forged_median_fails() {
    let (mut record, opened) = round();
    if let Some(score) = &mut record.entries[2].paired_score {
        score.median_ppm = 40_405;
    }
    record.entries[2].score_ppm = Some(40_404);
    assert_eq!(
        only(&record, &opened),
        failure(
            CheckName::PairedScore,
            "entries[2]",
            "entries[2].pairedScore.medianPpm",
            "40405",
            "40404",
        )
    );
}

#[test]
fn a_forged_interval_bound_fails() {
    let (mut record, opened) = round();
    if let Some(score) = &mut record.entries[1].paired_score {
        score.min_ppm = 260_000;
    }
    assert_eq!(
        only(&record, &opened),
        failure(
            CheckName::PairedScore,
            "entries[1]",
            "entries[1].pairedScore.minPpm",
            "260000",
            "254901",
        )
    );
}

#[test]
fn a_score_that_is_not_the_paired_median_fails() {
    let (mut record, opened) = round();
    record.entries[1].score_ppm = Some(275_600);
    assert_eq!(
        only(&record, &opened),
        failure(
            CheckName::RoundScores,
            "entries[1]",
            "entries[1].scorePpm",
            "275600",
            "262626",
        )
    );
}

#[test]
fn a_forged_spread_fails() {
    let (mut record, opened) = round();
    if let Some(noise) = &mut record.noise {
        noise.aa_spread_bp = Some(99);
    }
    assert_eq!(
        only(&record, &opened),
        failure(
            CheckName::NoiseSpread,
            "noise",
            "noise.aaSpreadBp",
            "99",
            "100",
        )
    );
}

#[test]
fn a_forged_verdict_fails() {
    let (mut record, opened) = round();
    if let Some(noise) = &mut record.noise {
        noise.verdict = NoiseVerdict::Inconclusive;
    }
    assert_eq!(
        only(&record, &opened),
        failure(
            CheckName::NoiseVerdict,
            "noise",
            "noise.verdict",
            "Inconclusive",
            "Quiet",
        )
    );
}

#[test]
fn a_forged_seat_fails() {
    let (mut record, opened) = round();
    record.outcome.leader_after = Some(leader(2, "bob"));
    record.outcome.decision = TypedOrText::Typed(SeatRule::MarginMet {
        winner: leader(2, "bob"),
    });
    assert_eq!(
        only(&record, &opened),
        failure(
            CheckName::PairedDecision,
            "outcome",
            "outcome.leaderAfter",
            &format!("{} (bob)", patch(2).short()),
            &format!("{} (alice)", patch(1).short()),
        )
    );
}

#[test]
fn a_kept_seat_the_challenger_cleared_fails() {
    let (mut record, opened) = round();
    record.outcome.leader_after = None;
    record.outcome.changed = false;
    record.outcome.decision = TypedOrText::Typed(SeatRule::MarginNotMet {
        best: leader(1, "alice"),
    });
    let (name, _, field, claimed, _) = only(&record, &opened);
    assert_eq!(
        (name, field.as_str(), claimed.as_str()),
        (
            CheckName::PairedDecision,
            "outcome.leaderAfter",
            "the baseline"
        )
    );
}

/// The hardware is read from the two fingerprints, not from the receipt's reason: a
/// machine that changed mid-round seats nobody, whatever the passes say.
#[test]
fn a_seat_taken_on_hardware_that_changed_fails() {
    let (mut record, opened) = round();
    record.hardware.at_end.cpu_count = 4;
    record.hardware.changed = true;
    assert_eq!(
        only(&record, &opened),
        failure(
            CheckName::PairedDecision,
            "outcome",
            "outcome.status",
            "Complete",
            "InfraFailed",
        )
    );
}

#[test]
fn a_pass_hidden_as_void_fails() {
    let (mut record, opened) = round();
    record.passes[2].void = true;
    assert_eq!(
        only(&record, &opened),
        failure(
            CheckName::PassVoid,
            "passes[2]",
            "passes[2].void",
            "true",
            "false",
        )
    );
}

/// The baseline crashed in passes 0 and 1: both are void, only one pass counts, the
/// round is `infra_failed` with `too_few_passes` and nobody is scored.
fn two_void_passes() -> (RoundRecord, RoundOpened) {
    let (mut record, opened) = round();
    for pass in 0..2 {
        record.passes[pass].void = true;
        let baseline = &mut record.entries[0].passes[pass];
        baseline.status = PassStatus::Crashed;
        baseline.throughput_milli_rps = None;
        // Nothing to pair with in these passes.
        for entry in &mut record.entries {
            for row in entry.passes.iter_mut().filter(|r| r.pass == pass as u32) {
                row.paired_ratio_ppm = None;
            }
        }
    }
    for entry in &mut record.entries[1..] {
        entry.status = EntryStatus::InfraFailed;
        entry.score_ppm = None;
        entry.paired_score = None;
    }
    let failure = RoundFailure::TooFewPasses {
        counted: 1,
        required: 2,
    };
    record.noise = Some(NoiseCheck {
        baseline_spread_bp: None,
        aa_spread_bp: None,
        drift_bound_bp: 5000,
        margin_bp: 1000,
        verdict: NoiseVerdict::Unmeasured,
    });
    record.outcome = Outcome {
        status: RoundStatus::InfraFailed,
        reason: Some(TypedOrText::Typed(failure)),
        leader_before: None,
        leader_after: None,
        changed: false,
        margin_bp: 1000,
        decision: TypedOrText::Typed(SeatRule::RoundInfraFailed),
        remeasure: None,
    };
    (record, opened)
}

#[test]
fn fewer_than_two_counted_passes_make_the_round_infra_failed() {
    let (record, opened) = two_void_passes();
    let report = verify_round(&record, &opened);
    assert_eq!(paired_failures(&report), vec![]);
}

#[test]
fn a_round_with_one_counted_pass_that_claims_a_seat_fails() {
    let (mut record, opened) = two_void_passes();
    record.outcome.status = RoundStatus::Complete;
    record.outcome.reason = None;
    assert_eq!(
        only(&record, &opened),
        failure(
            CheckName::PairedDecision,
            "outcome",
            "outcome.status",
            "Complete",
            "InfraFailed",
        )
    );
}

/// [`two_void_passes`] with each challenger's reason the round's own failure, as the
/// runner settles them.
fn two_void_passes_settled() -> (RoundRecord, RoundOpened) {
    let (mut record, opened) = two_void_passes();
    let failure = record
        .outcome
        .reason
        .clone()
        .and_then(|r| r.typed().cloned());
    for entry in &mut record.entries[1..] {
        entry.infra_failure = failure.clone().map(|failure| {
            TypedOrText::Typed(receipts::model::EntryInfraFailure::RoundInfraFailed { failure })
        });
    }
    (record, opened)
}

/// An entry `infra_failed` for the round names the round's failure: one that names
/// another count of passes than the outcome does fails `status.consistent`.
#[test]
fn an_entrys_round_failure_other_than_the_outcomes_fails_status_consistent() {
    let statuses = |record: &RoundRecord, opened: &RoundOpened| -> Vec<(String, FailureReason)> {
        verify_round(record, opened)
            .failures()
            .filter(|c| c.name == CheckName::StatusConsistent)
            .map(|c| {
                (
                    c.target.clone().unwrap_or_default(),
                    c.reason.clone().expect("reason"),
                )
            })
            .collect()
    };
    let (record, opened) = two_void_passes_settled();
    let honest = statuses(&record, &opened);
    let (mut forged, opened) = two_void_passes_settled();
    forged.entries[1].infra_failure = Some(TypedOrText::Typed(
        receipts::model::EntryInfraFailure::RoundInfraFailed {
            failure: RoundFailure::TooFewPasses {
                counted: 2,
                required: 2,
            },
        },
    ));
    let forged = statuses(&forged, &opened);
    let added: Vec<&(String, FailureReason)> =
        forged.iter().filter(|f| !honest.contains(f)).collect();
    assert_eq!(
        added,
        [&(
            "entries[1].status".to_owned(),
            FailureReason::StatusInconsistent {
                field: "entries[1].status".into(),
                status: "infra_failed".into(),
                problem: "its reason is the round's failure (2 passes counted (the baseline's \
                          runs measured in them), fewer than the 2 a round needs), but the \
                          outcome's reason is 1 pass counted (the baseline's runs measured in \
                          them), fewer than the 2 a round needs"
                    .into(),
            }
        )]
    );
}

#[test]
fn scores_read_as_percentages_with_their_interval() {
    assert_eq!(
        format_paired_score(&score(262_626, 254_901, 275_600)),
        "+26.26 % [+25.4, +27.6] (75 % coverage, 3 passes)"
    );
    // The interval is rounded outward: never printed narrower than it is.
    assert_eq!(
        format_paired_score(&score(40_404, -19_608, 50_000)),
        "+4.04 % [-2.0, +5.0] (75 % coverage, 3 passes)"
    );
    assert_eq!(format_score_percent(-19_608), "-1.96 %");
    assert_eq!(format_score_percent(0), "0.00 %");
    assert_eq!(format_ppm_percent(937_500), "93.75 %");
    assert_eq!(format_ppm_percent(992_187), "99.21 %");
    assert_eq!(format_bp_percent(310), "3.1 %");
    assert_eq!(format_bp_percent(125), "1.25 %");
}

#[test]
fn the_noise_floor_reads_against_its_bounds() {
    let (record, _) = round();
    let noise = record.noise.expect("noise");
    assert_eq!(
        format_noise(&noise),
        "noise floor: A/A spread 1 % (margin 10 %), baseline spread 3 % (drift bound 50 %): quiet"
    );
    let (record, _) = two_void_passes();
    assert_eq!(
        format_noise(&record.noise.expect("noise")),
        "noise floor: A/A spread — (margin 10 %), baseline spread — (drift bound 50 %): unmeasured"
    );
}

#[test]
fn the_view_shows_passes_scores_and_noise_verified() {
    let (record, opened) = round();
    let dir = tempfile::tempdir().expect("tempdir");
    seal(dir.path(), &record, &opened);
    let report = verifier::verify_bundle(dir.path(), &keyring(), &options());
    let view = verifier::RoundView::from_record(dir.path(), &record, &report);
    let alice = view
        .entry(1)
        .and_then(|e| e.paired_score.clone())
        .expect("score");
    assert_eq!(alice.value, score(262_626, 254_901, 275_600));
    assert!(alice.verified);
    assert_eq!(view.passes.len(), 3);
    assert!(
        view.passes
            .iter()
            .all(|p| p.order.verified && p.void.verified)
    );
    assert_eq!(view.passes[1].order.value, record.passes[1].order);
    let noise = view.noise.expect("noise");
    assert!(noise.verified);
    assert_eq!(noise.value.aa_spread_bp, Some(100));
    assert!(view.leader_after.verified && view.decision.verified);
    let pass_seed = view
        .seeds
        .iter()
        .find(|s| s.name == "passSeed")
        .expect("passSeed");
    assert!(pass_seed.commitment.verified);
}

#[test]
fn a_forged_verdict_leaves_the_noise_unverified_in_the_view() {
    let (mut record, opened) = round();
    if let Some(noise) = &mut record.noise {
        noise.verdict = NoiseVerdict::Inconclusive;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    seal(dir.path(), &record, &opened);
    let report = verifier::verify_bundle(dir.path(), &keyring(), &options());
    let view = verifier::RoundView::from_record(dir.path(), &record, &report);
    assert!(!view.noise.expect("noise").verified);
}

#[test]
fn a_forged_seat_is_unverified_in_the_view() {
    let (mut record, opened) = round();
    record.outcome.leader_after = Some(leader(2, "bob"));
    let dir = tempfile::tempdir().expect("tempdir");
    seal(dir.path(), &record, &opened);
    let report = verifier::verify_bundle(dir.path(), &keyring(), &options());
    let view = verifier::RoundView::from_record(dir.path(), &record, &report);
    assert!(!view.leader_after.verified);
    assert!(!view.decision.verified);
    assert!(view.entries.iter().all(|e| e.score_ppm.verified));
}

/// The A/A control of pass 2 ran at 11 000 milli-req/s: ratios 1 010 000, 1 000 000,
/// 1 111 111, spread ⌈111 111 · 10⁴ / 1 010 000⌉ = 1 101 bp, over the 10 % margin: the
/// round is `inconclusive` and the seat stays with the baseline.
fn noisy_control() -> (RoundRecord, RoundOpened) {
    let (mut record, opened) = round();
    let control = &mut record.entries[0].passes[5];
    assert!(control.control && control.pass == 2);
    control.throughput_milli_rps = Some(11_000);
    control.paired_ratio_ppm = Some(1_111_111);
    record.noise = Some(NoiseCheck {
        baseline_spread_bp: Some(300),
        aa_spread_bp: Some(1_101),
        drift_bound_bp: 5000,
        margin_bp: 1000,
        verdict: NoiseVerdict::Inconclusive,
    });
    record.outcome = Outcome {
        status: RoundStatus::Inconclusive,
        reason: Some(TypedOrText::Typed(RoundFailure::NoiseAboveMargin {
            aa_spread_bp: 1_101,
            margin_bp: 1000,
        })),
        leader_before: None,
        leader_after: None,
        changed: false,
        margin_bp: 1000,
        decision: TypedOrText::Typed(SeatRule::RoundInconclusive),
        remeasure: None,
    };
    (record, opened)
}

#[test]
fn an_inconclusive_round_keeps_the_seat() {
    let (record, opened) = noisy_control();
    assert_eq!(paired_failures(&verify_round(&record, &opened)), vec![]);
}

#[test]
fn an_inconclusive_round_that_claims_the_seat_fails() {
    let (mut record, opened) = noisy_control();
    record.outcome.status = RoundStatus::Complete;
    record.outcome.reason = None;
    record.outcome.leader_after = Some(leader(1, "alice"));
    record.outcome.changed = true;
    record.outcome.decision = TypedOrText::Typed(SeatRule::MarginMet {
        winner: leader(1, "alice"),
    });
    assert_eq!(
        only(&record, &opened),
        failure(
            CheckName::PairedDecision,
            "outcome",
            "outcome.status",
            "Complete",
            "Inconclusive",
        )
    );
}

#[test]
fn a_quiet_verdict_over_a_noisy_control_fails() {
    let (mut record, opened) = noisy_control();
    if let Some(noise) = &mut record.noise {
        noise.verdict = NoiseVerdict::Quiet;
    }
    assert_eq!(
        only(&record, &opened),
        failure(
            CheckName::NoiseVerdict,
            "noise",
            "noise.verdict",
            "Quiet",
            "Inconclusive",
        )
    );
}

#[test]
fn a_re_run_after_an_invalid_attempt_counts() {
    let (mut record, opened) = round();
    let mut invalid = record.entries[1].passes[0].clone();
    invalid.status = PassStatus::Invalid;
    invalid.throughput_milli_rps = None;
    invalid.paired_ratio_ppm = None;
    record.entries[1].passes.insert(0, invalid);
    assert_eq!(paired_failures(&verify_round(&record, &opened)), vec![]);
    // Without its re-run the round is infra_failed (`run_invalid`): the claimed seat and
    // the scores fail.
    record.entries[1].passes.remove(1);
    let failed = paired_failures(&verify_round(&record, &opened));
    let decision: Vec<&FailureReason> = failed
        .iter()
        .filter(|(name, _, _)| *name == CheckName::PairedDecision)
        .map(|(_, _, reason)| reason)
        .collect();
    assert_eq!(
        decision,
        [&FailureReason::Recomputed {
            file: "receipt.dsse.json".into(),
            field: "outcome.status".into(),
            claimed: "Complete".into(),
            recomputed: "InfraFailed".into(),
        }]
    );
    assert!(
        failed
            .iter()
            .any(|(name, target, _)| *name == CheckName::PairedScore
                && target.as_deref() == Some("entries[1]"))
    );
}

#[test]
fn a_v3_round_without_passes_fails() {
    let (mut record, opened) = round();
    record.passes.clear();
    let failed = paired_failures(&verify_round(&record, &opened));
    assert!(
        failed.contains(&(
            CheckName::PassOrder,
            Some("passes".to_owned()),
            FailureReason::Recomputed {
                file: "receipt.dsse.json".into(),
                field: "passes.length".into(),
                claimed: "0".into(),
                recomputed: "3".into(),
            }
        )),
        "{failed:#?}"
    );
}

/// carol holds the seat; alice, the best challenger, beats the baseline by more than
/// carol does but not carol by the margin in every pass: carol keeps the seat.
fn defended_seat() -> (RoundRecord, RoundOpened) {
    let (mut record, _) = round();
    let mut carol = entry(
        1,
        Some("carol"),
        &CAROL,
        Some(score(250_000, 225_490, 262_626)),
    );
    carol.role = Role::Incumbent;
    let alice = entry(
        2,
        Some("alice"),
        &ALICE,
        Some(score(262_626, 254_901, 275_600)),
    );
    record.entries = vec![record.entries[0].clone(), carol, alice];
    record.outcome.leader_before = Some(leader(1, "carol"));
    record.outcome.leader_after = Some(leader(1, "carol"));
    record.outcome.changed = false;
    record.outcome.decision = TypedOrText::Typed(SeatRule::MarginNotMet {
        best: leader(2, "alice"),
    });
    let opened = RoundOpened {
        entries: record
            .entries
            .iter()
            .map(|e| SeatedEntry {
                role: e.role,
                miner: e.miner.clone(),
                patch: e.patch,
            })
            .collect(),
        ..round().1
    };
    (record, opened)
}

/// carol holds the seat; dave, whose review says he is derived from her, beats her by
/// 12 % in every pass: past the 10 % margin, short of the 30 % derived-work margin he is
/// held to (content/review.md, The derived-work margin). carol keeps the seat.
fn derived_challenger() -> (RoundRecord, RoundOpened) {
    let (mut record, opened) = defended_seat();
    let mut dave = entry(
        2,
        Some("dave"),
        &DAVE,
        Some(score(400_000, 372_549, 414_141)),
    );
    dave.review = Some(EntryReview {
        record: receipts::layout::review_input(&patch(2)),
        rules_version: 1,
        rules_digest: Sha256Hex::digest(b"rules"),
        verdict: Verdict::Pass,
        decision: Verdict::Pass,
        derived_from: Some(patch(1).to_string()),
        resolution: None,
        derived_margin_bp: Some(3000),
    });
    record.entries[2] = dave;
    record.outcome.decision = TypedOrText::Typed(SeatRule::MarginNotMet {
        best: leader(2, "dave"),
    });
    let opened = RoundOpened {
        entries: record
            .entries
            .iter()
            .map(|e| SeatedEntry {
                role: e.role,
                miner: e.miner.clone(),
                patch: e.patch,
            })
            .collect(),
        ..opened
    };
    (record, opened)
}

#[test]
fn a_challenger_derived_from_the_incumbent_is_held_to_the_derived_margin() {
    let (record, opened) = derived_challenger();
    assert_eq!(paired_failures(&verify_round(&record, &opened)), vec![]);
}

/// The attack: the evaluator seats dave, who cleared the campaign's 10 % but not the
/// 30 % his `derivedFrom` holds him to, and re-signs. The verifier decides again with
/// the margin recomputed from the campaign and the review, never the receipt's claim.
#[test]
fn a_derived_challenger_seated_below_the_derived_margin_fails() {
    let (mut record, opened) = derived_challenger();
    record.outcome.leader_after = Some(leader(2, "dave"));
    record.outcome.changed = true;
    record.outcome.decision = TypedOrText::Typed(SeatRule::MarginMet {
        winner: leader(2, "dave"),
    });
    // Dropping the claimed margin does not help: the decision does not read it.
    record.entries[2]
        .review
        .as_mut()
        .expect("review")
        .derived_margin_bp = None;
    assert_eq!(
        only(&record, &opened),
        failure(
            CheckName::PairedDecision,
            "outcome",
            "outcome.leaderAfter",
            &format!("{} (dave)", patch(2).short()),
            &format!("{} (carol)", patch(1).short()),
        )
    );
    // Derived from someone else, the same runs take the seat.
    record.entries[2]
        .review
        .as_mut()
        .expect("review")
        .derived_from = Some(patch(7).to_string());
    assert_eq!(paired_failures(&verify_round(&record, &opened)), vec![]);
}

#[test]
fn an_incumbent_defends_against_a_challenger_short_of_the_margin() {
    let (record, opened) = defended_seat();
    assert_eq!(paired_failures(&verify_round(&record, &opened)), vec![]);
}

#[test]
fn a_seat_taken_without_clearing_the_margin_fails() {
    let (mut record, opened) = defended_seat();
    record.outcome.leader_after = Some(leader(2, "alice"));
    record.outcome.changed = true;
    record.outcome.decision = TypedOrText::Typed(SeatRule::MarginMet {
        winner: leader(2, "alice"),
    });
    assert_eq!(
        only(&record, &opened),
        failure(
            CheckName::PairedDecision,
            "outcome",
            "outcome.leaderAfter",
            &format!("{} (alice)", patch(2).short()),
            &format!("{} (carol)", patch(1).short()),
        )
    );
}

/// The passes of a round of `entries` entries, in the order redrawn from its `passSeed`.
fn passes_of(entries: u32) -> Vec<Pass> {
    (0..3)
        .map(|index| Pass {
            index,
            order: pass_order(&Seed32([7; 32]), index, entries),
            void: false,
            placement: Vec::new(),
        })
        .collect()
}

/// The entries of `record` as its round-opened statement seats them.
fn seated(record: &RoundRecord) -> Vec<SeatedEntry> {
    record
        .entries
        .iter()
        .map(|e| SeatedEntry {
            role: e.role,
            miner: e.miner.clone(),
            patch: e.patch,
        })
        .collect()
}

/// carol, the incumbent, re-measured alone after her runs made 2 rounds in a row
/// `infra_failed`: only the baseline and carol seated, and she keeps the seat.
fn remeasured() -> (RoundRecord, RoundOpened) {
    let (mut record, opened) = defended_seat();
    record.entries.truncate(2);
    record.passes = passes_of(2);
    record.outcome.decision = TypedOrText::Typed(SeatRule::NoScoredChallenger);
    record.outcome.remeasure = Some(IncumbentRemeasure {
        infra_failed_rounds: 2,
    });
    let opened = RoundOpened {
        entries: seated(&record),
        ..opened
    };
    (record, opened)
}

#[test]
fn an_incumbent_re_measured_alone_keeps_the_seat() {
    let (record, opened) = remeasured();
    assert_eq!(paired_failures(&verify_round(&record, &opened)), vec![]);
}

/// Regression (issue 13): `outcome.remeasure` was the one field of the outcome the
/// verifier did not compare with its recomputation.
#[test]
fn a_remeasure_below_the_threshold_fails() {
    let (mut record, opened) = remeasured();
    record.outcome.remeasure = Some(IncumbentRemeasure {
        infra_failed_rounds: 1,
    });
    assert_eq!(
        only(&record, &opened),
        failure(
            CheckName::PairedDecision,
            "outcome",
            "outcome.remeasure",
            "1",
            "none"
        )
    );
}

#[test]
fn a_remeasure_without_an_incumbent_fails() {
    let (mut record, opened) = round();
    record.outcome.remeasure = Some(IncumbentRemeasure {
        infra_failed_rounds: 2,
    });
    assert_eq!(
        only(&record, &opened),
        failure(
            CheckName::PairedDecision,
            "outcome",
            "outcome.remeasure",
            "2",
            "none"
        )
    );
}

#[test]
fn a_remeasure_round_that_seats_a_challenger_fails() {
    let (mut record, opened) = defended_seat();
    record.outcome.remeasure = Some(IncumbentRemeasure {
        infra_failed_rounds: 2,
    });
    assert_eq!(
        only(&record, &opened),
        failure(
            CheckName::PairedDecision,
            "outcome",
            "entries[2].role",
            "challenger",
            "no challenger: outcome.remeasure seats only the baseline and the incumbent",
        )
    );
}

/// Round 1 ([`round`]: alice takes the seat) and round 2 after it: alice defends alone,
/// with `remeasure` as given, sealed as `demo/rounds/{1,2}` under `data`; the reports of
/// both, as the archive verifies them (chain checks included).
fn chain_of_two(data: &Path, remeasure: Option<IncumbentRemeasure>) -> Vec<VerifyReport> {
    chain_of_two_with(data, |second| second.outcome.remeasure = remeasure)
}

/// [`chain_of_two`] with round 2 changed by `edit` before it is sealed.
fn chain_of_two_with(data: &Path, edit: impl FnOnce(&mut RoundRecord)) -> Vec<VerifyReport> {
    use receipts::bundle::{ENVELOPE_FILE, read_statement_digest};
    use verifier::archive::{find_bundles, verify_archive};
    let (first, first_opened) = round();
    let first_dir = data.join("demo/rounds/1");
    seal(&first_dir, &first, &first_opened);
    let digest = read_statement_digest(&first_dir.join(ENVELOPE_FILE)).expect("digest");
    let (mut second, opened) = round();
    second.round = 2;
    second.previous_receipt = Some(digest);
    second.entries.truncate(2);
    second.passes = passes_of(2);
    second.entries[1].role = Role::Incumbent;
    let alice = Some(leader(1, "alice"));
    second.outcome.leader_before = alice.clone();
    second.outcome.leader_after = alice;
    second.outcome.changed = false;
    second.outcome.decision = TypedOrText::Typed(SeatRule::NoScoredChallenger);
    edit(&mut second);
    let opened = RoundOpened {
        round: 2,
        previous_receipt: Some(digest),
        entries: seated(&second),
        ..opened
    };
    seal(&data.join("demo/rounds/2"), &second, &opened);
    let bundles = find_bundles(data).expect("bundles");
    verify_archive(&bundles, &keyring(), &options(), &|| {})
}

/// Round 2 of [`chain_of_two`] `infra_failed` by its incumbent, alice, counting
/// `consecutive` rounds in a row: the chain's checks of it.
fn incumbent_failed_chain(consecutive: u32) -> Vec<(CheckName, Option<FailureReason>)> {
    use receipts::model::EntryInfraFailure;
    let data = tempfile::tempdir().expect("tempdir");
    let reports = chain_of_two_with(data.path(), |second| {
        let failure = RoundFailure::IncumbentInfraFailed { consecutive };
        let alice = &mut second.entries[1];
        alice.status = EntryStatus::InfraFailed;
        alice.score_ppm = None;
        alice.paired_score = None;
        alice.infra_failure = Some(TypedOrText::Typed(EntryInfraFailure::Runner {
            detail: "its engine's backend failed".into(),
        }));
        second.outcome.status = RoundStatus::InfraFailed;
        second.outcome.reason = Some(TypedOrText::Typed(failure));
        second.outcome.decision = TypedOrText::Typed(SeatRule::RoundInfraFailed);
    });
    reports[1]
        .checks
        .iter()
        .filter(|c| c.name.as_str().starts_with("chain."))
        .map(|c| (c.name, c.reason.clone()))
        .collect()
}

/// An incumbent's failure counts one more round than the round before left against it:
/// after a round that did not fail for alice, 1; a count of 2 fails `chain.incumbent`.
#[test]
fn an_incumbent_failure_count_the_round_before_does_not_give_fails_chain_incumbent() {
    let passed = vec![
        (CheckName::ChainPrevious, None),
        (CheckName::ChainCampaign, None),
        (CheckName::ChainIncumbent, None),
        (CheckName::ChainVersion, None),
    ];
    assert_eq!(incumbent_failed_chain(1), passed);
    let mut failed = passed;
    failed[2].1 = Some(FailureReason::Recomputed {
        file: "receipt.dsse.json".into(),
        field: "round 2 outcome.reason.consecutive".into(),
        claimed: "2".into(),
        recomputed: "1 (round 1 left 0 rounds in a row infra_failed by the incumbent)".into(),
    });
    assert_eq!(incumbent_failed_chain(2), failed);
}

/// Regression (issue 13): a round could claim to re-measure its incumbent alone — and
/// so seat no challenger — when the round before had not failed for her at all.
#[test]
fn a_remeasure_the_previous_round_did_not_call_for_fails_chain_incumbent() {
    // The chain's checks of round 2 (the hand-built rounds carry no probe logs, so only
    // this file's checks and the chain's are read).
    let chain = |report: &VerifyReport| -> Vec<(CheckName, Option<FailureReason>)> {
        report
            .checks
            .iter()
            .filter(|c| c.name.as_str().starts_with("chain."))
            .map(|c| (c.name, c.reason.clone()))
            .collect()
    };
    let data = tempfile::tempdir().expect("tempdir");
    let honest = chain_of_two(data.path(), None);
    assert_eq!(paired_failures(&honest[1]), vec![]);
    assert_eq!(
        chain(&honest[1]),
        vec![
            (CheckName::ChainPrevious, None),
            (CheckName::ChainCampaign, None),
            (CheckName::ChainIncumbent, None),
            (CheckName::ChainVersion, None),
        ]
    );

    // Within round 2 a re-measure after 2 rounds is consistent; only round 1 says
    // otherwise: it failed for nobody.
    let data = tempfile::tempdir().expect("tempdir");
    let forged = chain_of_two(
        data.path(),
        Some(IncumbentRemeasure {
            infra_failed_rounds: 2,
        }),
    );
    assert_eq!(paired_failures(&forged[1]), vec![]);
    assert_eq!(
        chain(&forged[1]),
        vec![
            (CheckName::ChainPrevious, None),
            (CheckName::ChainCampaign, None),
            (
                CheckName::ChainIncumbent,
                Some(FailureReason::Recomputed {
                    file: "receipt.dsse.json".into(),
                    field: "round 2 outcome.remeasure".into(),
                    claimed: "2".into(),
                    recomputed:
                        "none (round 1 left 0 rounds in a row infra_failed by the incumbent)".into(),
                })
            ),
            (CheckName::ChainVersion, None),
        ]
    );
}

/// The probe log of one run whose 10 measured requests all failed: `no_token_ids` of them
/// for want of token ids (the rest `bad_body`), recorded as counted by `token_count`.
/// Every figure is the one the rules give, so it passes every measurement check.
fn failed_log(no_token_ids: u64, token_count: TokenCount) -> EntryMeasurement {
    let sla = Sla::default();
    let encode = |h| encode_histogram(&h).expect("encodes");
    let mut send_lag = new_latency_histogram();
    send_lag.record_n(0, 10).expect("records");
    let requests = 10;
    let over_bound = requests;
    let probe = ProbeRecord {
        run: 0,
        probe: 0,
        sub_stream: 0,
        rate_milli_rps: 1_000,
        warmup_requests: 2,
        requests: 10,
        completed: 0,
        over_bound: 10,
        percentile_us: nearest_rank_value(&new_latency_histogram(), sla.percentile, requests),
        required_requests: required_requests(over_bound, sla.percentile),
        send_lag_p50_us: 0,
        send_lag_p99_us: 0,
        send_lag_bound_us: (sla.bound_us() / 100).max(2_000),
        verdict: verdict(
            requests,
            over_bound,
            sla.percentile,
            0,
            (sla.bound_us() / 100).max(2_000),
        ),
        throughput_milli_rps: probe_throughput_milli_rps(0, 1_000_000),
        duration_us: 1_000_000,
        input_bytes: 100,
        output_tokens: 0,
        token_count: Some(token_count),
        errors: ErrorCounts {
            no_token_ids,
            bad_body: requests - no_token_ids,
            ..ErrorCounts::default()
        },
        histograms: ProbeHistograms {
            e2e: encode(new_latency_histogram()),
            ttft: encode(new_latency_histogram()),
            tpot: encode(new_latency_histogram()),
            itl: encode(new_latency_histogram()),
            send_lag: encode(send_lag),
        },
    };
    EntryMeasurement {
        runs: vec![RunMeasurement {
            run: 0,
            throughput_milli_rps: None,
            rate_milli_rps: None,
            probes: vec![probe],
            valid: true,
        }],
        throughput_milli_rps: None,
        throughput_min_milli_rps: None,
        throughput_max_milli_rps: None,
        valid: true,
        outcome: MeasurementOutcome::SlaUnmet {
            reason: SlaUnmetReason::NoPassingRate,
        },
        measured_for: None,
        caching: None,
    }
}

const BASELINE_LOG: &str = "probes/baseline-pass-0.json";

/// [`two_void_passes`] where the baseline's run of pass 0 got no token ids: its 10
/// requests all failed `no_token_ids` (its log [`BASELINE_LOG`]). The round is
/// `infra_failed` with `no_token_ids`, named before its too few passes.
fn without_token_ids() -> (RoundRecord, RoundOpened) {
    let (mut record, opened) = two_void_passes();
    let baseline = &mut record.entries[0].passes[0];
    assert!(!baseline.control && baseline.pass == 0);
    baseline.status = PassStatus::SlaUnmet;
    baseline.probe_log = Some(BASELINE_LOG.into());
    record.outcome.reason = Some(TypedOrText::Typed(RoundFailure::NoTokenIds {
        pass: 0,
        control: false,
        requests: 10,
    }));
    (record, opened)
}

/// The failures of the measurement checks of the probe logs.
fn log_failures(report: &VerifyReport) -> Vec<(CheckName, Option<String>)> {
    report
        .failures()
        .filter(|c| {
            c.name.as_str().starts_with("probe")
                || matches!(
                    c.name,
                    CheckName::RunResult | CheckName::EntryMeasurement | CheckName::FilesNamed
                )
        })
        .map(|c| (c.name, c.target.clone()))
        .collect()
}

#[test]
fn a_baseline_run_without_token_ids_makes_the_round_infra_failed() {
    let (record, opened) = without_token_ids();
    let log = failed_log(10, TokenCount::Ids);
    let report = verify_with_logs(&record, &opened, &[(BASELINE_LOG, &log)]);
    assert_eq!(paired_failures(&report), vec![]);
    assert_eq!(log_failures(&report), vec![]);
}

#[test]
fn a_hidden_baseline_run_without_token_ids_fails() {
    let (mut record, opened) = without_token_ids();
    record.outcome.reason = Some(TypedOrText::Typed(RoundFailure::TooFewPasses {
        counted: 1,
        required: 2,
    }));
    let log = failed_log(10, TokenCount::Ids);
    let failed = paired_failures(&verify_with_logs(&record, &opened, &[(BASELINE_LOG, &log)]));
    assert_eq!(
        failed,
        vec![(
            CheckName::PairedDecision,
            Some("outcome".to_owned()),
            FailureReason::Recomputed {
                file: "receipt.dsse.json".into(),
                field: "outcome.reason".into(),
                claimed: "TooFewPasses { counted: 1, required: 2 }".into(),
                recomputed: format!(
                    "NoTokenIds {{ pass: 0, control: false, requests: 10 }} (from `{BASELINE_LOG}`)"
                ),
            }
        )]
    );
}

#[test]
fn a_claimed_run_without_token_ids_the_logs_contradict_fails() {
    let (record, opened) = without_token_ids();
    // One of its 10 requests failed for another reason: it got token ids.
    let log = failed_log(9, TokenCount::Ids);
    let failed = paired_failures(&verify_with_logs(&record, &opened, &[(BASELINE_LOG, &log)]));
    assert_eq!(
        failed,
        vec![(
            CheckName::PairedDecision,
            Some("outcome".to_owned()),
            FailureReason::Recomputed {
                file: "receipt.dsse.json".into(),
                field: "outcome.reason".into(),
                claimed: "NoTokenIds { pass: 0, control: false, requests: 10 }".into(),
                recomputed: "no baseline run without token ids (from the baseline's probe logs)"
                    .into(),
            }
        )]
    );
}

#[test]
fn a_round_token_count_that_is_not_the_campaigns_fails() {
    let (mut record, opened) = round();
    record.token_count = Some(TokenCount::Usage);
    assert_eq!(
        only(&record, &opened),
        failure(
            CheckName::TokenCount,
            "tokenCount",
            "tokenCount",
            "Usage",
            "Ids"
        )
    );
}

#[test]
fn a_probe_log_counted_otherwise_than_the_campaign_fails() {
    let (record, opened) = without_token_ids();
    let log = failed_log(10, TokenCount::Usage);
    let report = verify_with_logs(&record, &opened, &[(BASELINE_LOG, &log)]);
    assert_eq!(
        paired_failures(&report),
        vec![(
            CheckName::TokenCount,
            Some(BASELINE_LOG.to_owned()),
            FailureReason::Recomputed {
                file: BASELINE_LOG.into(),
                field: "runs[0].probes[0].tokenCount".into(),
                claimed: "Usage".into(),
                recomputed: "Ids".into(),
            }
        )]
    );
    // Honest, the round's own and the log's pass.
    let (record, opened) = without_token_ids();
    let log = failed_log(10, TokenCount::Ids);
    let report = verify_with_logs(&record, &opened, &[(BASELINE_LOG, &log)]);
    let passed: Vec<Option<&str>> = report
        .checks
        .iter()
        .filter(|c| c.name == CheckName::TokenCount && c.passed)
        .map(|c| c.target.as_deref())
        .collect();
    assert_eq!(passed, [Some("tokenCount"), Some(BASELINE_LOG)]);
}

/// A host load of `steal_ms` stolen over 5 000 ms: on the 1 CPU of these entries the
/// campaign's default bound (50 ‰) allows 250 ms.
fn load(steal_ms: u64) -> HostLoad {
    HostLoad {
        steal_ms,
        wall_ms: 5_000,
        cpu_freq_khz: vec![],
    }
}

#[test]
fn a_measured_run_within_the_steal_bound_passes() {
    let (mut record, opened) = round();
    record.entries[1].passes[0].host_load = Some(load(250));
    let report = verify_round(&record, &opened);
    assert_eq!(paired_failures(&report), vec![]);
    assert!(report.checks.iter().any(|c| c.name == CheckName::HostSteal
        && c.target.as_deref() == Some("entries[1].passes[0]")
        && c.passed));
}

#[test]
fn a_measured_run_over_the_steal_bound_fails() {
    let (mut record, opened) = round();
    record.entries[1].passes[0].host_load = Some(load(251));
    assert_eq!(
        only(&record, &opened),
        failure(
            CheckName::HostSteal,
            "entries[1].passes[0]",
            "entries[1].passes[0].status",
            "Measured",
            "Invalid (hostLoad over the steal bound (251 ms stolen from 1 CPUs over 5000 ms, \
             bound 50 ‰))",
        )
    );
}

const STOLEN_LOG: &str = "probes/alice-pass-0.json";

/// [`round`] where alice's first attempt of pass 0 was invalid for steal (its log
/// measured, SLA unmet) and was re-run.
fn stolen_attempt(steal_ms: u64) -> (RoundRecord, RoundOpened) {
    let (mut record, opened) = round();
    let mut stolen = record.entries[1].passes[0].clone();
    stolen.status = PassStatus::Invalid;
    stolen.throughput_milli_rps = None;
    stolen.paired_ratio_ppm = None;
    stolen.probe_log = Some(STOLEN_LOG.into());
    stolen.host_load = Some(load(steal_ms));
    record.entries[1].passes.insert(0, stolen);
    (record, opened)
}

#[test]
fn an_attempt_invalid_for_steal_over_the_bound_passes() {
    let (record, opened) = stolen_attempt(251);
    let log = failed_log(0, TokenCount::Ids);
    let report = verify_with_logs(&record, &opened, &[(STOLEN_LOG, &log)]);
    assert_eq!(paired_failures(&report), vec![]);
    assert_eq!(log_failures(&report), vec![]);
}

#[test]
fn an_attempt_invalid_for_steal_within_the_bound_fails() {
    let (record, opened) = stolen_attempt(250);
    let log = failed_log(0, TokenCount::Ids);
    let report = verify_with_logs(&record, &opened, &[(STOLEN_LOG, &log)]);
    assert_eq!(
        paired_failures(&report),
        vec![(
            CheckName::HostSteal,
            Some("entries[1].passes[0]".to_owned()),
            FailureReason::Recomputed {
                file: "receipt.dsse.json".into(),
                field: "entries[1].passes[0].status".into(),
                claimed: "Invalid".into(),
                recomputed: format!(
                    "SlaUnmet {{ reason: NoPassingRate }} (from `{STOLEN_LOG}`; hostLoad within \
                     the steal bound (250 ms stolen from 1 CPUs over 5000 ms, bound 50 ‰); no telemetry \
                     violation)"
                ),
            }
        )]
    );
    assert_eq!(log_failures(&report), vec![]);
}

#[test]
fn a_scored_entry_with_a_run_over_the_steal_bound_fails() {
    let (mut record, opened) = round();
    record.entries[2].runs = vec![RunSummary {
        run: 0,
        throughput_milli_rps: Some(10_300),
        rate_milli_rps: Some(11_000),
        probes: 1,
        probe_log: "probes/bob.json".into(),
        host_load: Some(load(400)),
    }];
    assert_eq!(
        only(&record, &opened),
        failure(
            CheckName::HostSteal,
            "entries[2]",
            "entries[2].status",
            "Scored",
            "InfraFailed (run 0: hostLoad over the steal bound (400 ms stolen from 1 CPUs over \
             5000 ms, bound 50 ‰))",
        )
    );
}

/// Regression (demo round 1): a scored entry whose pass was still invalid for steal after
/// its re-run. Its run summaries may leave that run out; its pass rows show it is no
/// counted run, so the entry is `infra_failed` (`cpu_steal`), not scored. Its first
/// attempt, over the bound too, is allowed (it was re-run).
#[test]
fn a_scored_entry_whose_re_run_was_invalid_for_steal_fails() {
    let (mut record, opened) = stolen_attempt(251);
    let rerun = &mut record.entries[1].passes[1];
    assert_eq!((rerun.pass, rerun.control), (0, false));
    rerun.status = PassStatus::Invalid;
    rerun.throughput_milli_rps = None;
    rerun.paired_ratio_ppm = None;
    rerun.host_load = Some(load(300));
    let log = failed_log(0, TokenCount::Ids);
    let report = verify_with_logs(&record, &opened, &[(STOLEN_LOG, &log)]);
    let steal: Vec<_> = paired_failures(&report)
        .into_iter()
        .filter(|(name, _, _)| *name == CheckName::HostSteal)
        .collect();
    assert_eq!(
        steal,
        vec![(
            CheckName::HostSteal,
            Some("entries[1]".to_owned()),
            FailureReason::Recomputed {
                file: "receipt.dsse.json".into(),
                field: "entries[1].status".into(),
                claimed: "Scored".into(),
                recomputed: "InfraFailed (passes[1]: invalid on its last attempt, hostLoad over \
                             the steal bound (300 ms stolen from 1 CPUs over 5000 ms, bound 50 \
                             ‰))"
                .into(),
            }
        )]
    );
}

/// `round()` with its seeds derived from a file beacon and a secret, as a round with
/// `--beacon-file` seals them: the round-opened statement commits to the secret and
/// names the beacon round.
fn beacon_round() -> (RoundRecord, RoundOpened) {
    beacon_round_with(BeaconRecord {
        source: BeaconSource::File,
        round: 7,
        value: Seed32([0x22; 32]),
        signature: None,
    })
}

/// [`round`] with its seeds derived from `beacon` and a fixed secret, as the runner
/// seals such a round.
fn beacon_round_with(beacon: BeaconRecord) -> (RoundRecord, RoundOpened) {
    use receipts::rules::seeds::{derived_seeds, secret_commitment};
    let (mut record, mut opened) = round();
    let secret = Seed32([0x11; 32]);
    record.seeds = derived_seeds(&secret, &beacon.value);
    opened.seed_commitments = Some(record.seeds.commitments());
    opened.evaluator_secret_sha256 = Some(secret_commitment(&secret));
    opened.beacon = Some(beacon.promise());
    record.beacon = Some(beacon);
    record.evaluator_secret = Some(secret);
    (record, opened)
}

/// The `seeds.beacon` results: (target, passed).
fn beacon_checks(report: &VerifyReport) -> Vec<(String, bool)> {
    report
        .checks
        .iter()
        .filter(|c| c.name == CheckName::SeedsBeacon && c.not_applicable.is_none())
        .map(|c| (c.target.clone().expect("target"), c.passed))
        .collect()
}

#[test]
fn a_beacon_round_rederives_every_seed() {
    let (record, opened) = beacon_round();
    let checks = beacon_checks(&verify_round_v5(&record, &opened));
    let targets: Vec<&str> = checks.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        targets,
        [
            "practice",
            "evaluatorSecret",
            "beacon.round",
            "beacon.value",
            "seeds.itemSeed",
            "seeds.orderSeed",
            "seeds.scheduleSeed",
            "seeds.correctnessSeed",
            "seeds.promptSalt",
            "seeds.sampleSeed",
            "seeds.passSeed"
        ]
    );
    assert!(checks.iter().all(|(_, passed)| *passed), "{checks:?}");
    // A round without a beacon has nothing to derive.
    let (record, opened) = round();
    let report = verify_round_v5(&record, &opened);
    let beacon: Vec<_> = report
        .checks
        .iter()
        .filter(|c| c.name == CheckName::SeedsBeacon)
        .map(|c| (c.target.as_deref(), c.passed, c.not_applicable))
        .collect();
    assert_eq!(
        beacon,
        [
            (Some("practice"), true, None),
            (Some("beacon"), false, Some("no beacon"))
        ]
    );
}

#[test]
fn a_beacon_value_changed_after_sealing_fails() {
    let (mut record, opened) = beacon_round();
    if let Some(beacon) = &mut record.beacon {
        beacon.value.0[0] ^= 1;
    }
    let failed: Vec<String> = beacon_checks(&verify_round_v5(&record, &opened))
        .into_iter()
        .filter(|(_, passed)| !passed)
        .map(|(target, _)| target)
        .collect();
    assert_eq!(
        failed,
        [
            "seeds.itemSeed",
            "seeds.orderSeed",
            "seeds.scheduleSeed",
            "seeds.correctnessSeed",
            "seeds.promptSalt",
            "seeds.sampleSeed",
            "seeds.passSeed"
        ]
    );
}

#[test]
fn a_beacon_round_other_than_the_one_named_at_opening_or_another_secret_fails() {
    let (mut record, opened) = beacon_round();
    if let Some(beacon) = &mut record.beacon {
        beacon.round = 8;
    }
    record.evaluator_secret = Some(Seed32([0x12; 32]));
    let failed: Vec<String> = beacon_checks(&verify_round_v5(&record, &opened))
        .into_iter()
        .filter(|(_, passed)| !passed)
        .map(|(target, _)| target)
        .take(2)
        .collect();
    assert_eq!(failed, ["evaluatorSecret", "beacon.round"]);
    // A practice flag dropped after opening.
    let (record, mut opened) = beacon_round();
    opened.practice = true;
    let checks = beacon_checks(&verify_round_v5(&record, &opened));
    assert_eq!(checks[0], ("practice".to_owned(), false));
}

/// A beacon dropped after sealing (its secret kept), or its source changed: the seeds
/// no longer rest on what the opening named.
#[test]
fn a_beacon_dropped_or_its_source_changed_after_sealing_fails() {
    let (mut record, opened) = beacon_round();
    record.beacon = None;
    let failed: Vec<String> = beacon_checks(&verify_round_v5(&record, &opened))
        .into_iter()
        .filter(|(_, passed)| !passed)
        .map(|(target, _)| target)
        .collect();
    assert_eq!(failed, ["beacon"]);
    let (mut record, opened) = beacon_round();
    if let Some(beacon) = &mut record.beacon {
        beacon.source = BeaconSource::DrandQuicknet;
    }
    let failed: Vec<String> = beacon_checks(&verify_round_v5(&record, &opened))
        .into_iter()
        .filter(|(_, passed)| !passed)
        .map(|(target, _)| target)
        .collect();
    // Not the round named at opening, and unsigned where drand signs.
    assert_eq!(failed, ["beacon.round", "beacon.value"]);
}

/// A drand beacon whose signature is swapped for another round's genuine one: it does
/// not verify for the round the receipt names.
#[test]
fn a_drand_beacon_signed_for_another_round_fails() {
    use sha2::{Digest, Sha256};
    // drand quicknet rounds 123 and 657413 as the chain published them (the verifier's
    // own beacon test vectors).
    const ROUND_123: &str = "b75c69d0b72a5d906e854e808ba7e2accb1542ac355ae486d591aa9d43765482e26cd02df835d3546d23c4b13e0dfc92";
    const ROUND_657413: &str = "b713718a38ae728dfd477991af2822e08d2f305e47718cef9f7848ce4050e7be41076862b98fad56e91a6b85b89cd97b";
    let signature = hex::decode(ROUND_123).expect("hex");
    let (mut record, opened) = beacon_round_with(BeaconRecord {
        source: BeaconSource::DrandQuicknet,
        round: 123,
        value: Seed32(Sha256::digest(&signature).into()),
        signature: Some(ROUND_123.to_owned()),
    });
    let checks = beacon_checks(&verify_round_v5(&record, &opened));
    assert!(checks.iter().all(|(_, passed)| *passed), "{checks:?}");
    if let Some(beacon) = &mut record.beacon {
        beacon.signature = Some(ROUND_657413.to_owned());
    }
    let failed: Vec<String> = beacon_checks(&verify_round_v5(&record, &opened))
        .into_iter()
        .filter(|(_, passed)| !passed)
        .map(|(target, _)| target)
        .collect();
    assert_eq!(failed, ["beacon.value"]);
}

/// drand quicknet round 657413 as the chain published it (the verifier's own beacon
/// test vector): produced at 2023-09-15T11:00:03Z.
fn drand_657413() -> BeaconRecord {
    BeaconRecord {
        source: BeaconSource::DrandQuicknet,
        round: 657_413,
        value: "fc1873a13f3545aeade8401532ef5519920652eee6b0d2b19ca12643b87b3587"
            .parse()
            .expect("hex"),
        signature: Some("b713718a38ae728dfd477991af2822e08d2f305e47718cef9f7848ce4050e7be41076862b98fad56e91a6b85b89cd97b".to_owned()),
    }
}

/// A round whose seeds derive from drand round 657413, opened (v4: no seed
/// commitments) at `opened_at` and, when `witnessed_at` is given, its opening cosigned
/// by a witness at that time (seconds since the Unix epoch).
fn drand_round(opened_at: &str, witnessed_at: Option<u64>) -> (RoundRecord, RoundOpened) {
    let (mut record, mut opened) = beacon_round_with(drand_657413());
    opened.seed_commitments = None;
    opened.opened_at = time(opened_at);
    record.transparency_log = Some(RoundLog::Logged {
        origin: "referee.test/log".to_owned(),
        round_opened_index: 3,
        opening_witness: witnessed_at.map(|timestamp_s| OpeningWitness {
            name: "witness.test".to_owned(),
            checkpoint_size: 4,
            timestamp_s,
        }),
    });
    (record, opened)
}

/// The `seeds.beaconOrder` results: (target, passed, not applicable because).
fn beacon_order(report: &VerifyReport) -> Vec<(Option<String>, bool, Option<String>)> {
    report
        .checks
        .iter()
        .filter(|c| c.name == CheckName::SeedsBeaconOrder)
        .map(|c| {
            let why = c.not_applicable.map(|w| w.to_owned());
            (c.target.clone(), c.passed, why)
        })
        .collect()
}

/// The grinding evaluator (issue 42): it watches drand quicknet rounds come out and opens
/// the round naming the one whose seeds it likes (657413, produced 11:00:03), as if it had
/// named it in advance. Its seeds all derive from the genuine value (`seeds.beacon`
/// passes), but its opening was signed, and witnessed, after that round existed:
/// `seeds.beaconOrder` fails. An honest opening, 6 s before the round, passes; a
/// backdated `openedAt` is caught by the witness, and without one only its own clock
/// vouches for the order (content/threat-model.md).
#[test]
fn an_evaluator_that_opens_with_a_beacon_round_it_has_already_seen_is_caught() {
    const PRODUCED_S: u64 = 1_694_775_603;
    let pass = |target: &str| (Some(target.to_owned()), true, None);
    let fail = |target: &str| (Some(target.to_owned()), false, None);
    // Honest: opened and witnessed before the round it names was produced.
    let (record, opened) = drand_round("2023-09-15T10:59:56.500Z", Some(PRODUCED_S - 6));
    let report = verify_round_v5(&record, &opened);
    assert!(beacon_checks(&report).iter().all(|(_, passed)| *passed));
    assert_eq!(
        beacon_order(&report),
        [pass("openedAt"), pass("openingWitness")]
    );
    // The grinder opens 3 s after the round it picked, its witness cosigning then.
    let (record, opened) = drand_round("2023-09-15T11:00:06Z", Some(PRODUCED_S + 4));
    let report = verify_round_v5(&record, &opened);
    assert!(beacon_checks(&report).iter().all(|(_, passed)| *passed));
    assert_eq!(
        beacon_order(&report),
        [fail("openedAt"), fail("openingWitness")]
    );
    let messages: Vec<String> = (report.checks.iter())
        .filter(|c| c.name == CheckName::SeedsBeaconOrder)
        .filter_map(|c| c.reason.as_ref().map(ToString::to_string))
        .collect();
    assert!(
        messages[1].contains("1694775607")
            && messages[1]
                .contains("before 2023-09-15T11:00:03Z (drand quicknet round 657413's time)"),
        "{messages:?}"
    );
    // It backdates `openedAt`: the witness's clock is not its own.
    let (record, opened) = drand_round("2023-09-15T10:59:56Z", Some(PRODUCED_S + 4));
    assert_eq!(
        beacon_order(&verify_round_v5(&record, &opened)),
        [pass("openedAt"), fail("openingWitness")]
    );
    // At the exact time of the round, the value may be out: not before, caught.
    let (record, opened) = drand_round("2023-09-15T11:00:03Z", Some(PRODUCED_S));
    assert_eq!(
        beacon_order(&verify_round_v5(&record, &opened)),
        [fail("openedAt"), fail("openingWitness")]
    );
    // Backdated and unwitnessed: only the evaluator's clock orders it.
    let (record, opened) = drand_round("2023-09-15T10:59:56Z", None);
    assert_eq!(
        beacon_order(&verify_round_v5(&record, &opened)),
        [
            pass("openedAt"),
            (
                Some("openingWitness".to_owned()),
                false,
                Some("round opening not witnessed".to_owned())
            )
        ]
    );
    // A file beacon has no round time; a round without a beacon nothing to order.
    let (record, opened) = beacon_round();
    assert_eq!(
        beacon_order(&verify_round_v5(&record, &opened)),
        [(
            None,
            false,
            Some("a file beacon has no round time".to_owned())
        )]
    );
    let (record, opened) = round();
    assert_eq!(
        beacon_order(&verify_round_v5(&record, &opened)),
        [(None, false, Some("no beacon".to_owned()))]
    );
}

/// A v4 opening publishes no seed commitments for a beacon round: each revealed seed is
/// checked consistent and derived; without a beacon, commitments stay required.
#[test]
fn a_beacon_round_opens_without_seed_commitments_and_a_drawn_one_cannot() {
    let (record, opened) = drand_round("2023-09-15T10:59:56.500Z", None);
    let report = verify_round_v5(&record, &opened);
    let commitments: Vec<(Option<String>, bool)> = (report.checks.iter())
        .filter(|c| c.name == CheckName::SeedCommitments)
        .map(|c| (c.target.clone(), c.passed))
        .collect();
    assert_eq!(commitments.len(), 7, "{commitments:?}");
    assert!(
        commitments.iter().all(|(_, passed)| *passed),
        "{commitments:?}"
    );
    let (record, mut opened) = round();
    opened.seed_commitments = None;
    let failed: Vec<Option<String>> = (verify_round_v5(&record, &opened).checks.iter())
        .filter(|c| c.name == CheckName::SeedCommitments && !c.passed)
        .map(|c| c.target.clone())
        .collect();
    assert_eq!(failed.len(), 7, "{failed:?}");
}

/// A practice round whose receipt moves the seat fails the decision: the rule keeps it.
#[test]
fn a_practice_round_that_moves_the_seat_fails() {
    let (mut record, mut opened) = round();
    assert!(record.outcome.changed);
    record.practice = true;
    opened.practice = true;
    let failed = paired_failures(&verify_round_v5(&record, &opened));
    assert!(
        failed
            .iter()
            .any(|(name, _, _)| *name == CheckName::PairedDecision),
        "{failed:#?}"
    );
    record.outcome.leader_after = record.outcome.leader_before.clone();
    record.outcome.changed = false;
    assert_eq!(
        paired_failures(&verify_round_v5(&record, &opened)),
        Vec::new()
    );
}

/// Bob's run of pass 1 was invalid, and invalid again after its re-run, while both
/// baseline runs of that pass were valid: from v6 (no veto) he is disqualified
/// `run_invalid_twice` and alice keeps the seat she took, the round complete.
fn bob_invalid_twice() -> (RoundRecord, RoundOpened) {
    let (mut record, opened) = round();
    let bob = &mut record.entries[2];
    let position = bob
        .passes
        .iter()
        .position(|r| r.pass == 1 && !r.control)
        .expect("bob's pass 1");
    let invalid = EntryPass {
        status: PassStatus::Invalid,
        throughput_milli_rps: None,
        paired_ratio_ppm: None,
        ..bob.passes[position].clone()
    };
    bob.passes[position] = invalid.clone();
    bob.passes.insert(position + 1, invalid);
    bob.status = EntryStatus::Disqualified;
    bob.disqualification = Some(receipts::model::Disqualification {
        reason: receipts::model::DisqualificationReason::RunInvalidTwice { pass: 1 },
        detail: "its run was invalid again after its re-run in pass 1".into(),
        log_tail: vec![],
    });
    bob.score_ppm = None;
    bob.paired_score = None;
    (record, opened)
}

/// [`bob_invalid_twice`] before v6 (sealed v4, the baseline's veto): his run invalid
/// again after its re-run fails the round (`run_invalid`), nobody is scored, bob keeps
/// his own cause and alice is `infra_failed` for the round.
fn bob_invalid_twice_vetoed() -> (RoundRecord, RoundOpened) {
    use receipts::model::EntryInfraFailure;
    let (mut record, opened) = bob_invalid_twice();
    let failure = RoundFailure::RunInvalid {
        entry: 2,
        control: false,
        pass: 1,
    };
    for entry in &mut record.entries[1..] {
        entry.status = EntryStatus::InfraFailed;
        entry.disqualification = None;
        entry.score_ppm = None;
        entry.paired_score = None;
        entry.infra_failure = Some(TypedOrText::Typed(if entry.index == 2 {
            EntryInfraFailure::ClientLagged
        } else {
            EntryInfraFailure::RoundInfraFailed {
                failure: failure.clone(),
            }
        }));
    }
    record.outcome = Outcome {
        status: RoundStatus::InfraFailed,
        reason: Some(TypedOrText::Typed(failure)),
        leader_before: None,
        leader_after: None,
        changed: false,
        margin_bp: 1000,
        decision: TypedOrText::Typed(SeatRule::RoundInfraFailed),
        remeasure: None,
    };
    (record, opened)
}

/// [`remeasured`] with the incumbent failing its re-measure for infrastructure reasons
/// again: disqualified `remeasure_infra_failed` after the outcome's 2 rounds.
fn remeasure_failed() -> (RoundRecord, RoundOpened) {
    let (mut record, opened) = remeasured();
    let incumbent = &mut record.entries[1];
    incumbent.status = EntryStatus::Disqualified;
    incumbent.score_ppm = None;
    incumbent.paired_score = None;
    incumbent.disqualification = Some(receipts::model::Disqualification {
        reason: receipts::model::DisqualificationReason::RemeasureInfraFailed {
            infra_failed_rounds: 2,
        },
        detail: "re-measured alone after its runs made the last 2 rounds infra_failed, it \
                 failed for infrastructure reasons again: infra_failed"
            .into(),
        log_tail: vec![],
    });
    (record, opened)
}

/// [`bob_invalid_twice_vetoed`] with bob's cause CPU steal: both attempts of his pass 1
/// over the campaign's steal bound (900 ms stolen in 1 s), his `cpu_steal` naming that
/// load.
fn bob_stolen_twice_vetoed() -> (RoundRecord, RoundOpened) {
    use receipts::model::{EntryInfraFailure, HostLoad};
    let (mut record, opened) = bob_invalid_twice_vetoed();
    let bob = &mut record.entries[2];
    for row in bob.passes.iter_mut().filter(|r| r.pass == 1 && !r.control) {
        row.host_load = Some(HostLoad {
            steal_ms: 900,
            wall_ms: 1000,
            cpu_freq_khz: Vec::new(),
        });
    }
    bob.infra_failure = Some(TypedOrText::Typed(EntryInfraFailure::CpuSteal {
        steal_ms: 900,
        wall_ms: 1000,
    }));
    (record, opened)
}

/// The `host.steal` failures, by target, of `state` sealed as v4 (as the vetoed rounds
/// are).
fn steal_failures(state: (RoundRecord, RoundOpened)) -> Vec<Option<String>> {
    let (record, opened) = state;
    let built = BuiltRound {
        name: "steal",
        record,
        opened,
        current: false,
        files: vec![],
    };
    let dir = tempfile::tempdir().expect("tempdir");
    seal_built(dir.path(), &built, &testkit::forge::key());
    let report = verifier::verify_bundle(
        dir.path(),
        &testkit::forge::keyring(),
        &verifier::VerifyOptions::default(),
    );
    report
        .failures()
        .filter(|c| c.name == CheckName::HostSteal)
        .map(|c| c.target.clone())
        .collect()
}

/// Bob's `cpu_steal` stands on his over-bound pass rows; naming a load none of his runs
/// had (another steal or wall time) fails `host.steal` on him.
#[test]
fn a_cpu_steal_naming_a_load_no_run_had_fails_host_steal() {
    use receipts::model::EntryInfraFailure;
    assert_eq!(
        steal_failures(bob_stolen_twice_vetoed()),
        Vec::<Option<String>>::new()
    );
    for (steal_ms, wall_ms) in [(901, 1000), (900, 1001)] {
        let (mut record, opened) = bob_stolen_twice_vetoed();
        record.entries[2].infra_failure = Some(TypedOrText::Typed(EntryInfraFailure::CpuSteal {
            steal_ms,
            wall_ms,
        }));
        assert_eq!(
            steal_failures((record, opened)),
            vec![Some("entries[2]".to_owned())]
        );
    }
}

/// An incumbent disqualified for failing its re-measure counts the rounds the outcome's
/// re-measure counts; another count fails `status.consistent` on it.
#[test]
fn a_remeasure_failure_counting_other_rounds_than_the_outcome_fails_status_consistent() {
    let consistent = |state: (RoundRecord, RoundOpened)| -> Vec<Option<FailureReason>> {
        let (record, opened) = state;
        verify_round(&record, &opened)
            .checks
            .iter()
            .filter(|c| c.name == CheckName::StatusConsistent)
            .filter(|c| c.target.as_deref() == Some("entries[1].status"))
            .map(|c| c.reason.clone())
            .collect()
    };
    assert_eq!(consistent(remeasure_failed()), vec![None]);
    let (mut record, opened) = remeasure_failed();
    if let Some(d) = record.entries[1].disqualification.as_mut() {
        d.reason = receipts::model::DisqualificationReason::RemeasureInfraFailed {
            infra_failed_rounds: 3,
        };
    }
    assert_eq!(
        consistent((record, opened)),
        vec![Some(FailureReason::StatusInconsistent {
            field: "entries[1].status".into(),
            status: "disqualified".into(),
            problem: "its reason is remeasure_infra_failed after 3 rounds, but the outcome's \
                      re-measure counts 2"
                .into(),
        })]
    );
}

/// The failures of `status.passes` and of this file's checks in a round sealed with the
/// current predicate.
fn no_veto_failures(record: &RoundRecord, opened: &RoundOpened) -> Vec<(CheckName, String)> {
    verify_round_v5(record, opened)
        .failures()
        .filter(|c| PAIRED_CHECKS.contains(&c.name) || c.name == CheckName::StatusPasses)
        .map(|c| (c.name, c.target.clone().unwrap_or_default()))
        .collect()
}

#[test]
fn an_entry_invalid_twice_beside_a_valid_baseline_is_disqualified_from_v6() {
    let (record, opened) = bob_invalid_twice();
    assert_eq!(no_veto_failures(&record, &opened), vec![]);
    let report = verify_round_v5(&record, &opened);
    let status_passes: Vec<_> = report
        .checks
        .iter()
        .filter(|c| {
            c.name == CheckName::StatusPasses && c.target.as_deref() == Some("entries[2].status")
        })
        .collect();
    assert_eq!(status_passes.len(), 1);
    assert!(status_passes[0].reason.is_none());

    // Claimed infra_failed (a free requeue): the rows say disqualified.
    let (mut forged, opened) = bob_invalid_twice();
    forged.entries[2].status = EntryStatus::InfraFailed;
    forged.entries[2].disqualification = None;
    forged.entries[2].infra_failure = Some(TypedOrText::Typed(
        receipts::model::EntryInfraFailure::ClientLagged,
    ));
    assert_eq!(
        no_veto_failures(&forged, &opened),
        vec![(CheckName::StatusPasses, "entries[2].status".to_owned())]
    );

    // Claimed for a pass whose rows measured.
    let (mut forged, opened) = bob_invalid_twice();
    forged.entries[2].disqualification = Some(receipts::model::Disqualification {
        reason: receipts::model::DisqualificationReason::RunInvalidTwice { pass: 0 },
        detail: String::new(),
        log_tail: vec![],
    });
    assert_eq!(
        no_veto_failures(&forged, &opened),
        vec![(CheckName::StatusPasses, "entries[2].status".to_owned())]
    );
}

/// [`round`] where bob, pinned to CPU 1, is disqualified `left_cpu_set` for CPU `cpu` in
/// pass 1 (index 1) while his rows of pass `crashed_pass` are the crashed ones.
fn left_cpu_set(cpu: u32, crashed_pass: u32) -> (RoundRecord, RoundOpened) {
    let pinned = receipts::model::EngineIsolation {
        sandbox: receipts::model::SandboxKind::Bwrap,
        pinning: receipts::model::CpuPinning::SchedAffinity,
        engine_cpus: vec![1],
        client_cpus: vec![0],
        engine_threads: 1,
        uid: None,
        own_uid: None,
        ro_paths: vec![],
    };
    let (mut record, opened) = round();
    let bob = &mut record.entries[2];
    bob.engine.isolation = Some(pinned);
    for row in bob.passes.iter_mut().filter(|r| r.pass == crashed_pass) {
        row.status = PassStatus::Crashed;
        row.throughput_milli_rps = None;
        row.paired_ratio_ppm = None;
    }
    bob.status = EntryStatus::Disqualified;
    bob.disqualification = Some(receipts::model::Disqualification {
        reason: receipts::model::DisqualificationReason::LeftCpuSet { pass: 1, cpu },
        detail: "the engine left its CPU set".into(),
        log_tail: vec![],
    });
    bob.score_ppm = None;
    bob.paired_score = None;
    (record, opened)
}

#[test]
fn a_left_cpu_set_disqualification_stands_on_a_crashed_row_of_its_pass_outside_the_set() {
    let left = |cpu: u32, crashed_pass: u32| {
        let (record, opened) = left_cpu_set(cpu, crashed_pass);
        let failed: Vec<(CheckName, String)> = verify_round_v5(&record, &opened)
            .failures()
            .filter(|c| c.name == CheckName::StatusPasses)
            .map(|c| (c.name, c.target.clone().unwrap_or_default()))
            .collect();
        failed
    };
    assert_eq!(left(0, 1), vec![]);
    let bob = vec![(CheckName::StatusPasses, "entries[2].status".to_owned())];
    // The CPU it names is its own.
    assert_eq!(left(1, 1), bob);
    // Its crashed row is another pass's.
    assert_eq!(left(0, 2), bob);
}

/// A round built by hand in this file, for the field-coverage test
/// (`field_coverage.rs`): it holds fields no real fixture round holds (a seat taken or
/// defended, an incumbent re-measured, an `infra_failed` or `inconclusive` outcome and
/// its typed reason, a disqualification), and its files besides the inputs.
pub(crate) struct BuiltRound {
    /// What the round shows, for failure messages.
    pub name: &'static str,
    /// The receipt's predicate.
    pub record: RoundRecord,
    /// The round-opened predicate.
    pub opened: RoundOpened,
    /// Sealed with the current predicate (else v4, as [`seal`] does).
    pub current: bool,
    /// Files of the bundle besides the inputs: (bundle-relative path, bytes).
    pub files: Vec<(&'static str, Vec<u8>)>,
}

/// The rounds of this file that hold what no real fixture does, each as its test
/// verifies it.
pub(crate) fn built_rounds() -> Vec<BuiltRound> {
    let built = |name, (record, opened): (RoundRecord, RoundOpened), current| BuiltRound {
        name,
        record,
        opened,
        current,
        files: vec![],
    };
    let (mut counted, opened) = round();
    counted.token_count = Some(TokenCount::Ids);
    let mut without_ids = built("no token ids", settled(without_token_ids()), false);
    without_ids.files = vec![(
        BASELINE_LOG,
        serde_json::to_vec(&failed_log(10, TokenCount::Ids)).expect("probe log json"),
    )];
    vec![
        built("a seat taken", round(), false),
        built("a seat defended", defended_seat(), false),
        built("an incumbent re-measured", remeasured(), false),
        built("an incumbent failed", incumbent_failed(), false),
        built(
            "an incumbent re-measured, failed again",
            remeasure_failed(),
            false,
        ),
        built("too few passes", two_void_passes_settled(), false),
        built("inconclusive", noisy_control(), false),
        without_ids,
        built("tokens counted by ids", (counted, opened), false),
        built("invalid twice", bob_invalid_twice(), true),
        built("invalid twice, vetoed", bob_invalid_twice_vetoed(), false),
        built(
            "invalid twice for CPU steal, vetoed",
            bob_stolen_twice_vetoed(),
            false,
        ),
        built("inconclusive, settled", settled(noisy_control()), false),
        built("the baseline drifted", drifted(), false),
        built(
            "the reference's prompt not the baseline's",
            scorer_failed(RoundFailure::ReferencePromptMismatch {
                item: 0,
                position: 1,
                reference: Some(5),
                baseline: Some(6),
            }),
            false,
        ),
        built(
            "the scorer past its deadline",
            scorer_failed(RoundFailure::ScorerDeadline {
                deadline_s: correctness_deadline_s(),
            }),
            false,
        ),
        built("left its CPU set", left_cpu_set(0, 1), true),
    ]
}

/// `state` settled as the runner settles a round that did not complete: every entry but
/// the baseline (and one disqualified on its own) `infra_failed` with the outcome's
/// typed reason, unscored.
fn settled((mut record, opened): (RoundRecord, RoundOpened)) -> (RoundRecord, RoundOpened) {
    let failure = record
        .outcome
        .reason
        .clone()
        .and_then(|r| r.typed().cloned());
    for entry in &mut record.entries[1..] {
        if entry.status == EntryStatus::Disqualified {
            continue;
        }
        entry.status = EntryStatus::InfraFailed;
        entry.score_ppm = None;
        entry.paired_score = None;
        entry.infra_failure = failure.clone().map(|failure| {
            TypedOrText::Typed(receipts::model::EntryInfraFailure::RoundInfraFailed { failure })
        });
    }
    (record, opened)
}

/// [`defended_seat`] `infra_failed` by its incumbent, carol, for the first round in a
/// row: she keeps her own cause and the seat, alice is `infra_failed` for the round.
fn incumbent_failed() -> (RoundRecord, RoundOpened) {
    let (mut record, opened) = defended_seat();
    record.outcome.status = RoundStatus::InfraFailed;
    record.outcome.reason = Some(TypedOrText::Typed(RoundFailure::IncumbentInfraFailed {
        consecutive: 1,
    }));
    record.outcome.decision = TypedOrText::Typed(SeatRule::RoundInfraFailed);
    let (mut record, opened) = settled((record, opened));
    record.entries[1].infra_failure = Some(TypedOrText::Typed(
        receipts::model::EntryInfraFailure::Runner {
            detail: "its engine's backend failed".into(),
        },
    ));
    (record, opened)
}

/// [`round`] failed by the reference scorer with `failure`, settled.
fn scorer_failed(failure: RoundFailure) -> (RoundRecord, RoundOpened) {
    let (mut record, opened) = round();
    record.outcome = Outcome {
        status: RoundStatus::InfraFailed,
        reason: Some(TypedOrText::Typed(failure)),
        leader_before: None,
        leader_after: None,
        changed: false,
        margin_bp: 1000,
        decision: TypedOrText::Typed(SeatRule::RoundInfraFailed),
        remeasure: None,
    };
    settled((record, opened))
}

/// [`round`] whose baseline ran at 30 000 milli-req/s in pass 2: its spread
/// ⌈20 000 · 10⁴ / 30 000⌉ = 6 667 bp is over the 50 % drift bound, so the round is
/// `infra_failed` (`drift`), its outcome as the verifier recomputes it, settled.
fn drifted() -> (RoundRecord, RoundOpened) {
    let (mut record, opened) = round();
    let baseline = &mut record.entries[0].passes[2];
    assert!(!baseline.control && baseline.pass == 2);
    baseline.throughput_milli_rps = Some(30_000);
    let dir = tempfile::tempdir().expect("tempdir");
    record.outcome =
        verifier::recomputed_outcome(dir.path(), &record, &frozen_campaign()).expect("outcome");
    settled((record, opened))
}

/// The correctness deadline of [`frozen_campaign`], seconds.
fn correctness_deadline_s() -> u64 {
    let campaign = frozen_campaign().campaign;
    campaign
        .correctness
        .effective_deadline_s(&campaign.rate_search)
}

/// The reference scorer stalled: its failure names the campaign's correctness deadline,
/// and one that names another fails `paired.decision` (the entries' copies forged alike).
#[test]
fn a_scorer_deadline_other_than_the_campaigns_fails_paired_decision() {
    let deadline_s = correctness_deadline_s();
    let (record, opened) = scorer_failed(RoundFailure::ScorerDeadline { deadline_s });
    assert_eq!(paired_failures(&verify_round(&record, &opened)), vec![]);
    let (record, opened) = scorer_failed(RoundFailure::ScorerDeadline {
        deadline_s: deadline_s + 1,
    });
    let (name, target, field, _, _) = only(&record, &opened);
    assert_eq!(
        (name, target.as_deref(), field.as_str()),
        (CheckName::PairedDecision, Some("outcome"), "outcome.reason")
    );
}

/// Seals `built` into `dir` (its files first), both statements signed by `signer`.
pub(crate) fn seal_built(dir: &Path, built: &BuiltRound, signer: &PrivateKey) {
    for (name, bytes) in &built.files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, bytes).expect("write");
    }
    seal_signed(dir, &built.record, &built.opened, built.current, signer);
}
