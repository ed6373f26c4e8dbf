//! The round checks of `verify_bundle` (content/receipts.md, Verification step 8, in
//! part: the round-opened statement, the seed commitments, the input copies, the
//! request-sequence digest, the v1/v2 scores against the first baseline and the entry
//! throughputs) on `fixtures/v2-round/`, a real round: each forgery changes one fact and
//! re-signs the bundle with the forger's trusted key (`forge`), so steps 1–6 pass and
//! exactly the checks that recompute the changed fact fail, with their recomputed and
//! claimed values (and the checks that follow from it, such as the request-sequence
//! digest of a changed seed).

use crate::forge::*;
use receipts::bundle::ENVELOPE_FILE;
use receipts::layout::{CAMPAIGN_INPUT, MINERS_INPUT, patch_input};
use receipts::model::{FrozenCampaign, RevealedSeeds, Seed32, SeedReveal, Sha256Hex};
use receipts::rules::workload::Workload;
use serde_json::{Value, json};
use verifier::{CheckName, FailureReason};

/// The fixture's one challenger patch, its miner `fast`.
const PATCH: &str = "f98bb8888a2454cec792fdb3057f7a3f604e2afd317a4b644b9913f86e318dfc";
/// The digest of the fixture's `inputs/miners.json`.
const MINERS_DIGEST: &str = "f242e9a88d8d2ec2f4288989f93efd4dc5123c3baf2ce9d59e1b3e6dd661f29a";
/// The fixture's recorded request-sequence digest.
const REQUEST_SEQUENCE: &str = "6a1fd473d67228acc7434a9ec2e8939e8643e5187d770fd858ec355caf13e77c";
const BASELINE_PROBES: &str = "probes/baseline.json";

fn digest(text: &str) -> Sha256Hex {
    text.parse().expect("sha256 hex")
}

/// The fixture's receipt predicate.
fn predicate() -> Value {
    statement(&fixture(), ENVELOPE_FILE)["predicate"].clone()
}

/// The fixture's revealed seeds.
fn seeds() -> RevealedSeeds {
    serde_json::from_value(predicate()["seeds"].clone()).expect("seeds")
}

/// The request-sequence digest of `seeds` under the fixture's frozen campaign.
fn request_sequence(seeds: &RevealedSeeds) -> Sha256Hex {
    let bytes = std::fs::read(fixture().join(CAMPAIGN_INPUT)).expect("campaign copy");
    let frozen = FrozenCampaign::from_json(CAMPAIGN_INPUT, &bytes).expect("frozen campaign");
    Workload::new(&frozen.campaign, seeds, None)
        .and_then(|w| w.request_sequence_digest())
        .expect("digest")
}

/// The `requestSequence.digest` failure that changed `seeds` cause.
fn sequence_moved(seeds: &RevealedSeeds) -> (CheckName, Option<String>, FailureReason) {
    (
        CheckName::RequestSequence,
        Some("requestSequenceDigest".into()),
        FailureReason::RequestSequenceMismatch {
            recorded: Box::new(digest(REQUEST_SEQUENCE)),
            recomputed: Box::new(request_sequence(seeds)),
        },
    )
}

#[test]
fn round_checks_do_not_run_for_other_predicates() {
    // The same signed round under another predicate type: only steps 1–6 apply.
    let report = forged(
        |dir| {
            resign(dir, ENVELOPE_FILE, |s| {
                s["predicateType"] = json!("https://example.com/predicates/test/v1")
            })
        },
        |_| {},
    );
    assert!(
        report.passed(),
        "{:#?}",
        report.failures().collect::<Vec<_>>()
    );
    let round_checks = [
        CheckName::RoundOpenedSignature,
        CheckName::RoundOpenedMatches,
        CheckName::SeedCommitments,
        CheckName::InputsCampaign,
        CheckName::InputsMiners,
        CheckName::InputsPatches,
        CheckName::RequestSequence,
        CheckName::RoundScores,
        CheckName::RoundThroughput,
        CheckName::FilesNamed,
        CheckName::ProbeLog,
        CheckName::StatusConsistent,
    ];
    assert!(!report.checks.is_empty());
    assert!(
        report
            .checks
            .iter()
            .all(|c| !round_checks.contains(&c.name)),
        "{:#?}",
        report.checks
    );
}

#[test]
fn a_changed_seed_breaks_its_commitment() {
    let mut changed = seeds();
    changed.order_seed.seed = Seed32([0xaa; 32]);
    let report = forged(
        |_| {},
        |p| p["seeds"]["orderSeed"]["seed"] = json!("aa".repeat(32)),
    );
    assert_eq!(
        failures(&report),
        vec![
            (
                CheckName::SeedCommitments,
                Some("seeds.orderSeed".into()),
                FailureReason::SeedInconsistent {
                    seed: "seeds.orderSeed".into(),
                    commitment: Box::new(seeds().order_seed.commitment),
                    actual: Box::new(
                        SeedReveal::commit(Seed32([0xaa; 32]), changed.order_seed.salt).commitment,
                    ),
                }
            ),
            sequence_moved(&changed),
        ]
    );
}

#[test]
fn a_recommitted_seed_differs_from_the_published_commitment() {
    // Seed, salt and commitment rewritten consistently after the round opened.
    let reveal = SeedReveal::commit(Seed32([0x42; 32]), Seed32([0xbd; 32]));
    let mut changed = seeds();
    changed.item_seed = reveal.clone();
    let written = serde_json::to_value(&reveal).expect("json");
    let report = forged(|_| {}, |p| p["seeds"]["itemSeed"] = written);
    assert_eq!(
        failures(&report),
        vec![
            (
                CheckName::SeedCommitments,
                Some("seeds.itemSeed".into()),
                FailureReason::SeedCommitmentMismatch {
                    file: OPENED.into(),
                    seed: "seeds.itemSeed".into(),
                    receipt: Box::new(reveal.commitment),
                    round_opened: Box::new(seeds().item_seed.commitment),
                }
            ),
            sequence_moved(&changed),
        ]
    );
}

#[test]
fn a_changed_commitment_in_the_receipt_fails() {
    let forged_commitment = Sha256Hex::digest(b"another commitment");
    let written = json!(forged_commitment.to_string());
    let report = forged(|_| {}, |p| p["seeds"]["promptSalt"]["commitment"] = written);
    assert_eq!(
        only(&report, CheckName::SeedCommitments),
        FailureReason::SeedInconsistent {
            seed: "seeds.promptSalt".into(),
            commitment: Box::new(forged_commitment),
            actual: Box::new(seeds().prompt_salt.commitment),
        }
    );
}

/// The `roundOpened.matches` failures of `report`, after asserting that nothing else
/// failed: `field: receipt | round-opened`.
fn mismatches(report: &verifier::VerifyReport) -> Vec<String> {
    failures(report)
        .into_iter()
        .map(|(name, _, reason)| match (name, reason) {
            (
                CheckName::RoundOpenedMatches,
                FailureReason::RoundOpenedMismatch {
                    file,
                    field,
                    receipt,
                    round_opened,
                },
            ) if file == OPENED => format!("{field}: {receipt} | {round_opened}"),
            other => panic!("unexpected failure {other:?}"),
        })
        .collect()
}

#[test]
fn an_entry_the_round_opened_did_not_seat_fails() {
    // The receipt's challenger was not seated when the round opened.
    let report = forged_opened(|p| {
        p["entries"].as_array_mut().expect("entries").truncate(1);
    });
    assert_eq!(
        mismatches(&report),
        vec![format!(
            "entries[1]: challenger miner=fast patch={PATCH} | none"
        )]
    );
}

#[test]
fn an_entry_seated_but_missing_from_the_receipt_fails() {
    let other = Sha256Hex::digest(b"a dropped patch");
    let seated = json!({"role": "challenger", "miner": "slow", "patch": other.to_string()});
    let report = forged_opened(|p| p["entries"].as_array_mut().expect("entries").push(seated));
    assert_eq!(
        mismatches(&report),
        vec![format!(
            "entries[2]: none | challenger miner=slow patch={other}"
        )]
    );
}

#[test]
fn entries_reordered_after_the_round_opened_fail() {
    let report = forged_opened(|p| p["entries"].as_array_mut().expect("entries").swap(0, 1));
    let fast = format!("challenger miner=fast patch={PATCH}");
    let baseline = "baseline miner=none patch=none";
    assert_eq!(
        mismatches(&report),
        vec![
            format!("entries[0]: {baseline} | {fast}"),
            format!("entries[1]: {fast} | {baseline}"),
        ]
    );
}

#[test]
fn a_changed_miners_digest_fails() {
    let forged_digest = Sha256Hex::digest(b"another miners.json");
    let written = json!(forged_digest.to_string());
    let report = forged(|_| {}, |p| p["minersDigest"] = written);
    assert_eq!(
        failures(&report),
        vec![
            (
                CheckName::RoundOpenedMatches,
                Some("minersDigest".into()),
                FailureReason::RoundOpenedMismatch {
                    file: OPENED.into(),
                    field: "minersDigest".into(),
                    receipt: forged_digest.to_string(),
                    round_opened: MINERS_DIGEST.into(),
                }
            ),
            // The copy of miners.json no longer hashes to the digest the receipt records.
            (
                CheckName::InputsMiners,
                Some(MINERS_INPUT.into()),
                FailureReason::InputDigestMismatch {
                    file: MINERS_INPUT.into(),
                    field: "minersDigest".into(),
                    recorded: Box::new(forged_digest),
                    actual: Box::new(digest(MINERS_DIGEST)),
                }
            ),
        ]
    );
}

/// The failures of a round whose round-opened statement did not verify: `first`, then
/// `roundOpened.matches` and the five published commitments not run.
fn opened_unverified(
    first: (CheckName, Option<String>, FailureReason),
) -> Vec<(CheckName, Option<String>, FailureReason)> {
    let blocked = FailureReason::NotRun {
        blocked_by: CheckName::RoundOpenedSignature,
    };
    let mut expected = vec![
        first,
        (CheckName::RoundOpenedMatches, None, blocked.clone()),
    ];
    for seed in [
        "itemSeed",
        "orderSeed",
        "scheduleSeed",
        "correctnessSeed",
        "promptSalt",
    ] {
        expected.push((
            CheckName::SeedCommitments,
            Some(format!("seeds.{seed}")),
            blocked.clone(),
        ));
    }
    expected
}

#[test]
fn round_opened_signed_by_an_untrusted_key_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    forge_into(dir.path(), |_| {}, |_| {}, |_| {});
    let stranger = receipts::keys::PrivateKey::from_seed(&[0x33; 32]);
    sign_with(dir.path(), OPENED, statement(dir.path(), OPENED), &stranger);
    resign(dir.path(), ENVELOPE_FILE, |_| {});
    assert_eq!(
        failures(&verify(dir.path())),
        opened_unverified((
            CheckName::RoundOpenedSignature,
            Some(format!("{OPENED} signature.trusted")),
            FailureReason::NoTrustedSignature {
                file: OPENED.into(),
                signatures: 1,
                keyids: vec![stranger.keyid().to_owned()],
            }
        ))
    );
}

#[test]
fn round_opened_of_the_wrong_predicate_type_fails() {
    let expected = statement(&fixture(), OPENED)["predicateType"]
        .as_str()
        .expect("type")
        .to_owned();
    let other = "https://example.com/predicates/test/v1";
    let report = forged(
        |dir| resign(dir, OPENED, |s| s["predicateType"] = json!(other)),
        |_| {},
    );
    assert_eq!(
        failures(&report),
        opened_unverified((
            CheckName::RoundOpenedSignature,
            Some(format!("{OPENED} statement.predicateType")),
            FailureReason::WrongPredicateType {
                file: OPENED.into(),
                found: other.into(),
                expected,
            }
        ))
    );
}

#[test]
fn a_round_opened_path_that_is_not_a_subject_fails() {
    let outside = "../elsewhere.dsse.json";
    let report = forged(|_| {}, |p| p["roundOpened"] = json!(outside));
    let mut expected = opened_unverified((
        CheckName::RoundOpenedSignature,
        Some(outside.into()),
        FailureReason::RoundOpenedNotSubject {
            file: outside.into(),
        },
    ));
    // The file list catches it too: the predicate names a file the Statement did not sign.
    expected.push((
        CheckName::FilesNamed,
        Some(outside.into()),
        FailureReason::FileNotNamed {
            field: "roundOpened".into(),
            file: outside.into(),
        },
    ));
    assert_eq!(failures(&report), expected);
}

#[test]
fn a_score_off_by_one_ppm_fails() {
    // ⌊(10 733 / 10 853 − 1) · 10⁶⌋ = −11 057 against the first baseline run.
    let report = forged(|_| {}, |p| p["entries"][1]["scorePpm"] = json!(-11_056));
    assert_eq!(
        only(&report, CheckName::RoundScores),
        FailureReason::ScoreMismatch {
            index: 1,
            found: Some(-11_056),
            expected: Some(-11_057),
            throughput_milli_rps: Some(10_733),
            baseline_milli_rps: Some(10_853),
        }
    );
}

#[test]
fn a_score_on_an_unscored_entry_fails() {
    // The challenger disqualified (with its reason) but keeping its score.
    let report = forged(
        |_| {},
        |p| {
            p["entries"][1]["status"] = json!("disqualified");
            p["entries"][1]["disqualification"] = json!({
                "reason": "compliance_failed",
                "detail": "outputs broke the request contract",
                "logTail": [],
            });
        },
    );
    assert_eq!(
        only(&report, CheckName::RoundScores),
        FailureReason::ScoreMismatch {
            index: 1,
            found: Some(-11_057),
            expected: None,
            throughput_milli_rps: Some(10_733),
            baseline_milli_rps: Some(10_853),
        }
    );
}

#[test]
fn a_changed_baseline_shifts_the_challengers_score() {
    // The first baseline rewritten to 12 000 milli-req/s everywhere it is stated (8
    // completed in 666 666 µs; drift ⌈1 509 · 10⁴ / 12 000⌉ = 1 258 bp): only the
    // challenger's score, ⌊(10 733 / 12 000 − 1) · 10⁶⌋ = −105 584, no longer follows.
    let report = forged(
        |dir| {
            edit_json(dir, BASELINE_PROBES, |log| {
                let probe = &mut log["runs"][0]["probes"][0];
                probe["durationUs"] = json!(666_666);
                probe["throughputMilliRps"] = json!(12_000);
                log["runs"][0]["throughputMilliRps"] = json!(12_000);
                for field in [
                    "throughputMilliRps",
                    "throughputMinMilliRps",
                    "throughputMaxMilliRps",
                ] {
                    log[field] = json!(12_000);
                }
            })
        },
        |p| {
            let baseline = &mut p["entries"][0];
            baseline["runs"][0]["throughputMilliRps"] = json!(12_000);
            for field in [
                "throughputMilliRps",
                "throughputMinMilliRps",
                "throughputMaxMilliRps",
            ] {
                baseline[field] = json!(12_000);
            }
            p["drift"]["firstMilliRps"] = json!(12_000);
            p["drift"]["driftBp"] = json!(1_258);
        },
    );
    assert_eq!(
        only(&report, CheckName::RoundScores),
        FailureReason::ScoreMismatch {
            index: 1,
            found: Some(-11_057),
            expected: Some(-105_584),
            throughput_milli_rps: Some(10_733),
            baseline_milli_rps: Some(12_000),
        }
    );
}

#[test]
fn an_entry_throughput_not_its_runs_median_fails() {
    // The score recomputed to match (⌊(10 734 / 10 853 − 1) · 10⁶⌋ = −10 965): the
    // runs and the probe log still say 10 733.
    let report = forged(
        |_| {},
        |p| {
            p["entries"][1]["throughputMilliRps"] = json!(10_734);
            p["entries"][1]["scorePpm"] = json!(-10_965);
        },
    );
    assert_eq!(
        failures(&report),
        vec![
            (
                CheckName::RoundThroughput,
                Some("entries[1]".into()),
                FailureReason::ThroughputMismatch {
                    index: 1,
                    field: "throughputMilliRps".into(),
                    found: Some(10_734),
                    expected: Some(10_733),
                }
            ),
            (
                CheckName::EntryMeasurement,
                Some("entries[1]".into()),
                recomputed(
                    "receipt.dsse.json",
                    "entries[1].throughputMilliRps",
                    "10734",
                    "10733"
                )
            ),
        ]
    );
}

#[test]
fn a_wrong_min_or_max_fails() {
    let report = forged(
        |_| {},
        |p| p["entries"][0]["throughputMaxMilliRps"] = json!(10_852),
    );
    assert_eq!(
        failures(&report),
        vec![
            (
                CheckName::RoundThroughput,
                Some("entries[0]".into()),
                FailureReason::ThroughputMismatch {
                    index: 0,
                    field: "throughputMaxMilliRps".into(),
                    found: Some(10_852),
                    expected: Some(10_853),
                }
            ),
            (
                CheckName::EntryMeasurement,
                Some("entries[0]".into()),
                recomputed(
                    "receipt.dsse.json",
                    "entries[0].throughputMaxMilliRps",
                    "10852",
                    "10853"
                )
            ),
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
    // Both statements re-signed over an edited campaign copy (a looser SLA bound), the
    // receipt's list of inputs updated: its digest no longer matches the campaign digest
    // both records carry.
    let original = std::fs::read(fixture().join(CAMPAIGN_INPUT)).expect("campaign");
    let edited = String::from_utf8(original)
        .expect("utf-8")
        .replace("\"bound_ms\":250", "\"bound_ms\":9000");
    let written = edited.clone();
    let listed = json!(Sha256Hex::digest(edited.as_bytes()).to_string());
    let report = forged(
        |dir| std::fs::write(dir.join(CAMPAIGN_INPUT), &written).expect("write"),
        |p| p["inputs"][0]["digest"]["sha256"] = listed,
    );
    let failures = failures(&report);
    assert_eq!(
        failures[..2],
        [
            (
                CheckName::InputsCampaign,
                Some(CAMPAIGN_INPUT.into()),
                FailureReason::InputDigestMismatch {
                    file: CAMPAIGN_INPUT.into(),
                    field: "campaign.digest".into(),
                    recorded: Box::new(
                        predicate()["campaign"]["digest"]
                            .as_str()
                            .map(digest)
                            .expect("digest")
                    ),
                    actual: Box::new(Sha256Hex::digest(edited.as_bytes())),
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
    assert_eq!(failed(&report), ["inputs.campaign"].into_iter().collect());
}

#[test]
fn an_edited_diff_copy_fails_its_patch() {
    let file = patch_input(&digest(PATCH));
    // The diff copy replaced and the receipt's list of inputs updated: only the entry's
    // patch still says what the diff was.
    let listed = json!(Sha256Hex::digest(b"diff --git a/x b/x\n").to_string());
    let report = forged(
        |dir| std::fs::write(dir.join(&file), b"diff --git a/x b/x\n").expect("write"),
        |p| p["inputs"][2]["digest"]["sha256"] = listed,
    );
    assert_eq!(
        only(&report, CheckName::InputsPatches),
        FailureReason::InputDigestMismatch {
            file: file.clone(),
            field: "patch".into(),
            recorded: Box::new(digest(PATCH)),
            actual: Box::new(Sha256Hex::digest(b"diff --git a/x b/x\n")),
        }
    );
}

#[test]
fn a_forged_request_sequence_digest_fails() {
    assert_eq!(request_sequence(&seeds()), digest(REQUEST_SEQUENCE));
    let forged_digest = Sha256Hex::digest(b"another request sequence");
    let written = json!(forged_digest.to_string());
    let report = forged(|_| {}, |p| p["requestSequenceDigest"] = written);
    assert_eq!(
        only(&report, CheckName::RequestSequence),
        FailureReason::RequestSequenceMismatch {
            recorded: Box::new(forged_digest),
            recomputed: Box::new(digest(REQUEST_SEQUENCE)),
        }
    );
}
