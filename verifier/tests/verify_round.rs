//! The round checks of `verify_bundle` (content/receipts.md, Verification step 8, in
//! part): a hand-built round bundle passes them all, and each tampering — re-sealed with
//! the same trusted key, so steps 1–6 still pass — fails exactly its check with its typed
//! reason (and the checks that follow from it, such as the request-sequence digest of a
//! changed seed).

#[path = "../../receipts/tests/common/mod.rs"]
mod common;

use std::path::Path;

use common::*;
use receipts::bundle::{seal_bundle, sign_statement};
use receipts::keys::PrivateKey;
use receipts::layout::{CAMPAIGN_INPUT, MINERS_INPUT, patch_input};
use receipts::model::{
    BackendKind, Campaign, CampaignRef, EngineRef, Entry, EntryStatus, FrozenCampaign,
    HardwareCheck, HardwareFingerprint, MinerId, Outcome, ROUND_OPENED_PREDICATE_TYPE,
    ROUND_PREDICATE_TYPE, RevealedSeeds, Role, RoundOpened, RoundRecord, RoundStatus, RunSummary,
    SeatRule, SeatedEntry, Seed32, SeedReveal, Sha256Hex, Sla, Tool, TypedOrText,
};
use receipts::rules::workload::Workload;
use receipts::statement::{DigestSet, Statement, Subject};
use receipts::verify::{CheckName, FailureReason, VerifyReport};

/// Every check `referee verify` runs, the round checks included (the glob import's
/// `verify` runs only the envelope and file checks).
fn verify(dir: &Path) -> VerifyReport {
    verifier::verify_bundle(dir, &keyring(), &options())
}

const OPENED_FILE: &str = "round-opened.dsse.json";

/// A small campaign: its workload is what `requestSequence.digest` regenerates.
const CAMPAIGN_TOML: &str = r#"
id = "demo"
runs = 2
[model]
name = "m"
[baseline]
repo = "baseline"
commit = "0123456789abcdef0123456789abcdef01234567"
[workload]
input_len = { kind = "uniform", min = 4, max = 40 }
output_len = { kind = "uniform", min = 1, max = 8 }
[rate_search]
min_rate_milli_rps = 1000
max_rate_milli_rps = 4000
min_probe_duration_ms = 1000
min_probe_requests = 10
warmup_requests = 2
rate_tolerance_bp = 2500
[correctness]
items = 6
input_len = { kind = "fixed", value = 12 }
output_tokens = 4
"#;

const MINERS_BYTES: &[u8] = b"{\"miners\": []}\n";

/// The checks this file is about.
const ROUND_CHECKS: [CheckName; 9] = [
    CheckName::RoundOpenedSignature,
    CheckName::RoundOpenedMatches,
    CheckName::SeedCommitments,
    CheckName::InputsCampaign,
    CheckName::InputsMiners,
    CheckName::InputsPatches,
    CheckName::RequestSequence,
    CheckName::RoundScores,
    CheckName::RoundThroughput,
];

fn frozen_campaign() -> FrozenCampaign {
    FrozenCampaign::freeze(Campaign::from_toml("campaign.toml", CAMPAIGN_TOML).expect("campaign"))
        .expect("freezes")
}

/// The diff of entry `index`'s patch (its sha256 is the patch).
fn diff(index: u32) -> Vec<u8> {
    format!("diff --git a/engine.toml b/engine.toml\n# entry {index}\n").into_bytes()
}

/// The request-sequence digest of `seeds` under the test campaign.
fn request_sequence(seeds: &RevealedSeeds) -> Sha256Hex {
    Workload::new(&frozen_campaign().campaign, seeds, None)
        .and_then(|w| w.request_sequence_digest())
        .expect("digest")
}

fn digest(byte: u8) -> Sha256Hex {
    Sha256Hex::digest(&[byte])
}

/// The patch of entry `index`: the sha256 of its diff.
fn patch(index: u32) -> Sha256Hex {
    Sha256Hex::digest(&diff(index))
}

/// The `requestSequence.digest` failure a changed seed causes.
fn sequence_moved(record: &RoundRecord) -> (CheckName, Option<String>, FailureReason) {
    (
        CheckName::RequestSequence,
        Some("requestSequenceDigest".into()),
        FailureReason::RequestSequenceMismatch {
            recorded: record.request_sequence_digest.clone(),
            recomputed: request_sequence(&record.seeds),
        },
    )
}

fn reveal(byte: u8) -> SeedReveal {
    SeedReveal::commit(Seed32([byte; 32]), Seed32([byte ^ 0xff; 32]))
}

fn run(index: u32, throughput: u64) -> RunSummary {
    RunSummary {
        run: index,
        throughput_milli_rps: Some(throughput),
        rate_milli_rps: Some(throughput),
        probes: 5,
        probe_log: format!("entries/probes-{index}.jsonl"),
    }
}

/// An entry with the given runs; throughput, min and max, and score as the runner would
/// write them for a first baseline of 10 000 milli-req/s.
fn entry(index: u32, role: Role, miner: Option<&str>, runs: &[u64], score: Option<i64>) -> Entry {
    let mut sorted = runs.to_vec();
    sorted.sort_unstable();
    Entry {
        index,
        role,
        miner: miner.map(|m| m.parse::<MinerId>().expect("miner id")),
        patch: miner.map(|_| patch(index)),
        engine: EngineRef {
            backend: BackendKind::Builtin,
            config_sha256: digest(7),
            image: None,
            command: None,
        },
        status: if runs.is_empty() {
            EntryStatus::Disqualified
        } else {
            EntryStatus::Scored
        },
        disqualification: None,
        infra_failure: None,
        runs: runs
            .iter()
            .enumerate()
            .map(|(i, t)| run(i as u32, *t))
            .collect(),
        throughput_milli_rps: sorted.get((sorted.len().max(1) - 1) / 2).copied(),
        throughput_min_milli_rps: sorted.first().copied(),
        throughput_max_milli_rps: sorted.last().copied(),
        correctness: None,
        score_ppm: score,
        started_at: time("2026-05-01T10:00:00Z"),
        ended_at: time("2026-05-01T10:05:00Z"),
        engine_log: None,
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
    }
}

/// A consistent round: the baseline (runs 9 800, 10 000, 10 400: median 10 000), a
/// challenger with an even run count (15 000, 15 099: lower middle 15 000, +500 000 ppm),
/// a slower challenger at 6 667 (floor((6 667 / 10 000 − 1) · 10⁶) = −333 300 ppm), and
/// a disqualified challenger with no runs.
fn round() -> (RoundRecord, RoundOpened) {
    let entries = vec![
        entry(0, Role::Baseline, None, &[10_400, 9_800, 10_000], Some(0)),
        entry(
            1,
            Role::Challenger,
            Some("alice"),
            &[15_099, 15_000],
            Some(500_000),
        ),
        entry(2, Role::Challenger, Some("bob"), &[6_667], Some(-333_300)),
        entry(3, Role::Challenger, Some("carol"), &[], None),
    ];
    let seeds = RevealedSeeds {
        item_seed: reveal(1),
        order_seed: reveal(2),
        schedule_seed: reveal(3),
        correctness_seed: reveal(4),
        prompt_salt: reveal(5),
    };
    let campaign = CampaignRef {
        id: "demo".parse().expect("campaign id"),
        digest: frozen_campaign().digest,
    };
    let opened = RoundOpened {
        round: 2,
        campaign: campaign.clone(),
        miners_digest: Sha256Hex::digest(MINERS_BYTES),
        previous_receipt: Some(digest(11)),
        entries: entries
            .iter()
            .map(|e| SeatedEntry {
                role: e.role,
                miner: e.miner.clone(),
                patch: e.patch.clone(),
            })
            .collect(),
        seed_commitments: seeds.commitments(),
        opened_at: time("2026-05-01T09:59:00Z"),
    };
    let record = RoundRecord {
        round: 2,
        campaign,
        miners_digest: Sha256Hex::digest(MINERS_BYTES),
        previous_receipt: Some(digest(11)),
        tool: Tool {
            name: "referee".into(),
            version: "0.1.0".into(),
            git_commit: "unknown".into(),
            cpu_features: vec![],
        },
        request_sequence_digest: request_sequence(&seeds),
        seeds,
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
        outcome: Outcome {
            status: RoundStatus::Complete,
            reason: None,
            leader_before: None,
            leader_after: None,
            changed: false,
            margin_bp: 100,
            decision: TypedOrText::Typed(SeatRule::NoScoredChallenger),
        },
        inputs: vec![],
        round_opened: OPENED_FILE.into(),
    };
    (record, opened)
}

/// The input copies of the bundle: the frozen campaign, miners.json, each entry's diff.
fn inputs(record: &RoundRecord) -> Vec<(String, Vec<u8>)> {
    let mut files = vec![
        (CAMPAIGN_INPUT.to_owned(), frozen_campaign().bytes),
        (MINERS_INPUT.to_owned(), MINERS_BYTES.to_vec()),
    ];
    for entry in record.entries.iter().filter(|e| e.patch.is_some()) {
        let patch = Sha256Hex::digest(&diff(entry.index));
        files.push((patch_input(&patch), diff(entry.index)));
    }
    files
}

/// Writes the bundle: the input copies, the round-opened envelope signed by
/// `opened_signer` (its subjects: the inputs), and the receipt sealed by the operator.
fn seal(dir: &Path, record: &RoundRecord, opened: &RoundOpened, opened_signer: &PrivateKey) {
    std::fs::create_dir_all(dir.join("inputs/patches")).expect("mkdir");
    for (name, bytes) in inputs(record) {
        std::fs::write(dir.join(name), bytes).expect("write");
    }
    sign_and_seal(dir, record, opened, opened_signer);
}

/// Signs the round-opened statement over the bundle's input files as they are now and
/// seals the receipt: after an input was edited, what an evaluator with the key can do.
fn sign_and_seal(
    dir: &Path,
    record: &RoundRecord,
    opened: &RoundOpened,
    opened_signer: &PrivateKey,
) {
    let _ = std::fs::remove_file(dir.join(receipts::bundle::ENVELOPE_FILE));
    let statement = Statement::new(
        inputs(record)
            .iter()
            .map(|(name, _)| Subject {
                name: name.clone(),
                digest: DigestSet {
                    sha256: Sha256Hex::digest(&std::fs::read(dir.join(name)).expect("read")),
                },
            })
            .collect(),
        ROUND_OPENED_PREDICATE_TYPE,
        serde_json::to_value(opened).expect("round-opened json"),
    );
    let envelope = sign_statement(&statement, &[opened_signer]).expect("signs");
    std::fs::write(
        dir.join(OPENED_FILE),
        envelope.to_file_bytes().expect("canonical"),
    )
    .expect("write");
    seal_bundle(
        dir,
        ROUND_PREDICATE_TYPE,
        &serde_json::to_value(record).expect("round json"),
        &[&operator()],
    )
    .expect("seals");
}

/// Seals `record` and `opened` (round-opened signed by the operator) and verifies.
fn verify_round(record: &RoundRecord, opened: &RoundOpened) -> VerifyReport {
    let dir = tempfile::tempdir().expect("tempdir");
    seal(dir.path(), record, opened, &operator());
    verify(dir.path())
}

/// The failures, after asserting that steps 1–6 all passed (only a round check can
/// catch a re-sealed tampering).
fn round_failures(report: &VerifyReport) -> Vec<(CheckName, Option<String>, FailureReason)> {
    let failed: Vec<_> = report
        .failures()
        .map(|c| (c.name, c.target.clone(), c.reason.clone().expect("reason")))
        .collect();
    assert!(
        failed
            .iter()
            .all(|(name, _, _)| ROUND_CHECKS.contains(name)),
        "{failed:#?}"
    );
    failed
}

#[test]
fn a_consistent_round_passes_every_round_check() {
    let (record, opened) = round();
    let report = verify_round(&record, &opened);
    assert!(
        report.passed(),
        "{:#?}",
        report.failures().collect::<Vec<_>>()
    );
    let count = |name| report.checks.iter().filter(|c| c.name == name).count();
    assert_eq!(count(CheckName::RoundOpenedSignature), 1);
    // round, campaign.id, campaign.digest, minersDigest, previousReceipt, 4 entries.
    assert_eq!(count(CheckName::RoundOpenedMatches), 9);
    assert_eq!(count(CheckName::SeedCommitments), 5);
    assert_eq!(count(CheckName::RoundScores), 4);
    assert_eq!(count(CheckName::RoundThroughput), 4);
    assert_eq!(report.predicate_type.as_deref(), Some(ROUND_PREDICATE_TYPE));
}

#[test]
fn round_checks_do_not_run_for_other_predicates() {
    let (dir, _sealed) = sealed_bundle();
    let report = verify(dir.path());
    assert!(report.passed());
    assert!(
        report
            .checks
            .iter()
            .all(|c| !ROUND_CHECKS.contains(&c.name))
    );
}

#[test]
fn a_changed_seed_breaks_its_commitment() {
    let (mut record, opened) = round();
    record.seeds.order_seed.seed = Seed32([0xaa; 32]);
    let expected = SeedReveal::commit(Seed32([0xaa; 32]), record.seeds.order_seed.salt);
    let failed = round_failures(&verify_round(&record, &opened));
    assert_eq!(
        failed,
        vec![
            (
                CheckName::SeedCommitments,
                Some("seeds.orderSeed".into()),
                FailureReason::SeedInconsistent {
                    seed: "seeds.orderSeed".into(),
                    commitment: opened.seed_commitments.order_seed.clone(),
                    actual: expected.commitment,
                }
            ),
            sequence_moved(&record),
        ]
    );
}

#[test]
fn a_recommitted_seed_differs_from_the_published_commitment() {
    // Seed, salt and commitment rewritten consistently after the round opened.
    let (mut record, opened) = round();
    record.seeds.item_seed = reveal(0x42);
    let failed = round_failures(&verify_round(&record, &opened));
    assert_eq!(
        failed,
        vec![
            (
                CheckName::SeedCommitments,
                Some("seeds.itemSeed".into()),
                FailureReason::SeedCommitmentMismatch {
                    file: OPENED_FILE.into(),
                    seed: "seeds.itemSeed".into(),
                    receipt: reveal(0x42).commitment,
                    round_opened: opened.seed_commitments.item_seed.clone(),
                }
            ),
            sequence_moved(&record),
        ]
    );
}

#[test]
fn a_changed_commitment_in_the_receipt_fails() {
    let (mut record, opened) = round();
    record.seeds.prompt_salt.commitment = digest(0x77);
    let failed = round_failures(&verify_round(&record, &opened));
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert!(matches!(
        &failed[0],
        (CheckName::SeedCommitments, Some(t), FailureReason::SeedInconsistent { seed, commitment, .. })
            if t == "seeds.promptSalt" && seed == "seeds.promptSalt" && *commitment == digest(0x77)
    ));
}

fn entry_mismatches(failed: &[(CheckName, Option<String>, FailureReason)]) -> Vec<String> {
    failed
        .iter()
        .map(|(name, _, reason)| match (name, reason) {
            (
                CheckName::RoundOpenedMatches,
                FailureReason::RoundOpenedMismatch {
                    field,
                    receipt,
                    round_opened,
                    ..
                },
            ) => format!("{field}: {receipt} | {round_opened}"),
            other => panic!("unexpected failure {other:?}"),
        })
        .collect()
}

#[test]
fn an_entry_added_after_the_round_opened_fails() {
    let (mut record, opened) = round();
    record
        .entries
        .push(entry(4, Role::Challenger, Some("mallory"), &[], None));
    let failed = round_failures(&verify_round(&record, &opened));
    assert_eq!(
        entry_mismatches(&failed),
        vec![format!(
            "entries[4]: challenger miner=mallory patch={} | none",
            patch(4)
        )]
    );
}

#[test]
fn an_entry_removed_after_the_round_opened_fails() {
    let (mut record, opened) = round();
    record.entries.pop();
    let failed = round_failures(&verify_round(&record, &opened));
    assert_eq!(
        entry_mismatches(&failed),
        vec![format!(
            "entries[3]: none | challenger miner=carol patch={}",
            patch(3)
        )]
    );
}

#[test]
fn entries_reordered_after_the_round_opened_fail() {
    let (mut record, opened) = round();
    record.entries.swap(1, 2);
    let failed = round_failures(&verify_round(&record, &opened));
    let alice = format!("challenger miner=alice patch={}", patch(1));
    let bob = format!("challenger miner=bob patch={}", patch(2));
    assert_eq!(
        entry_mismatches(&failed),
        vec![
            format!("entries[1]: {bob} | {alice}"),
            format!("entries[2]: {alice} | {bob}"),
        ]
    );
}

#[test]
fn a_changed_miners_digest_fails() {
    let (mut record, opened) = round();
    record.miners_digest = digest(0x55);
    let failed = round_failures(&verify_round(&record, &opened));
    let (matches, inputs): (Vec<_>, Vec<_>) = failed
        .into_iter()
        .partition(|(name, _, _)| *name == CheckName::RoundOpenedMatches);
    assert_eq!(
        entry_mismatches(&matches),
        vec![format!(
            "minersDigest: {} | {}",
            digest(0x55),
            Sha256Hex::digest(MINERS_BYTES)
        )]
    );
    // The copy of miners.json no longer hashes to the digest the receipt records.
    assert_eq!(
        inputs,
        vec![(
            CheckName::InputsMiners,
            Some(MINERS_INPUT.into()),
            FailureReason::InputDigestMismatch {
                file: MINERS_INPUT.into(),
                field: "minersDigest".into(),
                recorded: digest(0x55),
                actual: Sha256Hex::digest(MINERS_BYTES),
            }
        )]
    );
}

#[test]
fn round_opened_signed_by_an_untrusted_key_fails() {
    let (record, opened) = round();
    let dir = tempfile::tempdir().expect("tempdir");
    seal(dir.path(), &record, &opened, &stranger());
    let report = verify(dir.path());
    let failed = round_failures(&report);
    assert_eq!(
        failed[0],
        (
            CheckName::RoundOpenedSignature,
            Some(format!("{OPENED_FILE} signature.trusted")),
            FailureReason::NoTrustedSignature {
                file: OPENED_FILE.into(),
                signatures: 1,
            }
        )
    );
    // Nothing to compare against: matches and the published commitments are not run.
    let blocked = FailureReason::NotRun {
        blocked_by: CheckName::RoundOpenedSignature,
    };
    assert_eq!(failed.len(), 1 + 1 + 5, "{failed:#?}");
    assert!(failed[1..].iter().all(|(_, _, reason)| *reason == blocked));
}

#[test]
fn round_opened_of_the_wrong_predicate_type_fails() {
    let (mut record, opened) = round();
    // Point the round at a signed envelope that is not a round-opened statement: a
    // second copy of a bundle envelope with a test predicate.
    let dir = tempfile::tempdir().expect("tempdir");
    seal(dir.path(), &record, &opened, &operator());
    let other = sign_statement(
        &Statement::new(vec![], TEST_PREDICATE_TYPE, serde_json::json!({"x": 1})),
        &[&operator()],
    )
    .expect("signs");
    std::fs::write(
        dir.path().join("other.dsse.json"),
        other.to_file_bytes().expect("canonical"),
    )
    .expect("write");
    std::fs::remove_file(dir.path().join("receipt.dsse.json")).expect("rm");
    record.round_opened = "other.dsse.json".into();
    seal_bundle(
        dir.path(),
        ROUND_PREDICATE_TYPE,
        &serde_json::to_value(&record).expect("json"),
        &[&operator()],
    )
    .expect("seals");
    let failed = round_failures(&verify(dir.path()));
    assert!(
        matches!(
            &failed[0],
            (CheckName::RoundOpenedSignature, _, FailureReason::WrongPredicateType { file, found, expected })
                if file == "other.dsse.json" && found == TEST_PREDICATE_TYPE && expected == ROUND_OPENED_PREDICATE_TYPE
        ),
        "{failed:#?}"
    );
}

#[test]
fn a_round_opened_path_that_is_not_a_subject_fails() {
    let (mut record, opened) = round();
    record.round_opened = "../elsewhere.dsse.json".into();
    let failed = round_failures(&verify_round(&record, &opened));
    assert_eq!(
        failed[0],
        (
            CheckName::RoundOpenedSignature,
            Some("../elsewhere.dsse.json".into()),
            FailureReason::RoundOpenedNotSubject {
                file: "../elsewhere.dsse.json".into()
            }
        )
    );
}

#[test]
fn a_score_off_by_one_ppm_fails() {
    let (mut record, opened) = round();
    record.entries[2].score_ppm = Some(-333_299);
    let failed = round_failures(&verify_round(&record, &opened));
    assert_eq!(
        failed,
        vec![(
            CheckName::RoundScores,
            Some("entries[2]".into()),
            FailureReason::ScoreMismatch {
                index: 2,
                found: Some(-333_299),
                expected: Some(-333_300),
                throughput_milli_rps: Some(6_667),
                baseline_milli_rps: Some(10_000),
            }
        )]
    );
}

#[test]
fn a_score_on_an_unscored_entry_fails() {
    let (mut record, opened) = round();
    record.entries[3].score_ppm = Some(0);
    let failed = round_failures(&verify_round(&record, &opened));
    assert!(matches!(
        &failed[..],
        [(
            CheckName::RoundScores,
            _,
            FailureReason::ScoreMismatch {
                index: 3,
                found: Some(0),
                expected: None,
                ..
            }
        )]
    ));
}

#[test]
fn a_median_that_is_not_the_median_fails() {
    // The upper middle of an even count, with the score recomputed to match it: only the
    // throughput check can tell.
    let (mut record, opened) = round();
    record.entries[1].throughput_milli_rps = Some(15_099);
    record.entries[1].score_ppm = Some(509_900);
    let failed = round_failures(&verify_round(&record, &opened));
    assert_eq!(
        failed,
        vec![(
            CheckName::RoundThroughput,
            Some("entries[1]".into()),
            FailureReason::ThroughputMismatch {
                index: 1,
                field: "throughputMilliRps".into(),
                found: Some(15_099),
                expected: Some(15_000),
            }
        )]
    );
}

#[test]
fn a_wrong_min_or_max_fails() {
    let (mut record, opened) = round();
    record.entries[0].throughput_max_milli_rps = Some(10_399);
    let failed = round_failures(&verify_round(&record, &opened));
    assert_eq!(
        failed,
        vec![(
            CheckName::RoundThroughput,
            Some("entries[0]".into()),
            FailureReason::ThroughputMismatch {
                index: 0,
                field: "throughputMaxMilliRps".into(),
                found: Some(10_399),
                expected: Some(10_400),
            }
        )]
    );
}

#[test]
fn a_changed_baseline_shifts_every_score() {
    // A faster first baseline (runs rewritten consistently): every scored challenger's
    // score no longer follows.
    let (mut record, opened) = round();
    record.entries[0].runs = vec![run(0, 12_000)];
    record.entries[0].throughput_milli_rps = Some(12_000);
    record.entries[0].throughput_min_milli_rps = Some(12_000);
    record.entries[0].throughput_max_milli_rps = Some(12_000);
    let failed = round_failures(&verify_round(&record, &opened));
    let targets: Vec<_> = failed.iter().map(|(n, t, _)| (*n, t.clone())).collect();
    assert_eq!(
        targets,
        vec![
            (CheckName::RoundScores, Some("entries[1]".into())),
            (CheckName::RoundScores, Some("entries[2]".into())),
        ]
    );
}

#[test]
fn score_formula_matches_the_runner_vectors() {
    use receipts::rules::score::{run_throughputs, score_ppm};
    assert_eq!(score_ppm(10_000, 10_000), Some(0));
    assert_eq!(score_ppm(15_099, 10_000), Some(509_900));
    assert_eq!(score_ppm(2, 3), Some(-333_334));
    assert_eq!(score_ppm(6_667, 10_000), Some(-333_300));
    assert_eq!(score_ppm(1, 0), None);
    assert_eq!(run_throughputs(&[]), None);
    assert_eq!(run_throughputs(&[5]), Some((5, 5, 5)));
    assert_eq!(run_throughputs(&[4, 1, 3, 2]), Some((2, 1, 4)));
    assert_eq!(run_throughputs(&[3, 9, 1]), Some((3, 1, 9)));
}

#[test]
fn an_edited_campaign_copy_fails_its_digest() {
    // The receipt and round-opened statement are re-signed over an edited campaign copy
    // (a looser SLA bound); its digest no longer matches the one both records carry.
    let (record, opened) = round();
    let dir = tempfile::tempdir().expect("tempdir");
    seal(dir.path(), &record, &opened, &operator());
    let edited = String::from_utf8(frozen_campaign().bytes)
        .expect("utf-8")
        .replace("\"bound_ms\":1000", "\"bound_ms\":9000");
    std::fs::write(dir.path().join(CAMPAIGN_INPUT), &edited).expect("write");
    sign_and_seal(dir.path(), &record, &opened, &operator());
    let failed = round_failures(&verify(dir.path()));
    assert_eq!(
        failed,
        vec![
            (
                CheckName::InputsCampaign,
                Some(CAMPAIGN_INPUT.into()),
                FailureReason::InputDigestMismatch {
                    file: CAMPAIGN_INPUT.into(),
                    field: "campaign.digest".into(),
                    recorded: frozen_campaign().digest,
                    actual: Sha256Hex::digest(edited.as_bytes()),
                }
            ),
            (
                CheckName::RequestSequence,
                None,
                FailureReason::NotRun {
                    blocked_by: CheckName::InputsCampaign
                }
            )
        ]
    );
}

#[test]
fn an_edited_diff_copy_fails_its_patch() {
    let (record, opened) = round();
    let dir = tempfile::tempdir().expect("tempdir");
    seal(dir.path(), &record, &opened, &operator());
    let file = patch_input(&patch(1));
    std::fs::write(dir.path().join(&file), b"diff --git a/x b/x\n").expect("write");
    sign_and_seal(dir.path(), &record, &opened, &operator());
    let failed = round_failures(&verify(dir.path()));
    assert_eq!(
        failed,
        vec![(
            CheckName::InputsPatches,
            Some(file.clone()),
            FailureReason::InputDigestMismatch {
                file,
                field: "patch".into(),
                recorded: patch(1),
                actual: Sha256Hex::digest(b"diff --git a/x b/x\n"),
            }
        )]
    );
}

#[test]
fn a_forged_request_sequence_digest_fails() {
    let (mut record, opened) = round();
    let honest = record.request_sequence_digest.clone();
    record.request_sequence_digest = digest(0x12);
    let failed = round_failures(&verify_round(&record, &opened));
    assert_eq!(
        failed,
        vec![(
            CheckName::RequestSequence,
            Some("requestSequenceDigest".into()),
            FailureReason::RequestSequenceMismatch {
                recorded: digest(0x12),
                recomputed: honest,
            }
        )]
    );
}
