//! The forgery corpus (content/verifying.md): `fixtures/v2-round/`, a real round, with one
//! number or fact changed in the predicate or in a raw file, every subject digest updated
//! and the Statements re-signed with a fresh key the keyring trusts — what an evaluator
//! holding the key could do. Steps 1–6 pass every time; exactly the check that
//! recomputes the changed value from the raw files fails, with the recomputed and the
//! claimed value, never a panic.

use std::path::Path;

use crate::forge::*;
use receipts::bundle::read_statement_digest;
use receipts::model::Sha256Hex;
use serde_json::{Value, json};
use verifier::archive::{find_bundles, verify_archive};
use verifier::{CheckName, FailureReason, VerifyOptions, VerifyReport};

const BASELINE_PROBES: &str = "probes/baseline.json";
const CANDIDATE_PROBES: &str = "probes/candidate-1-fast.json";
const CANDIDATE_ITEMS: &str = "correctness/candidate-1-fast.json";

/// The probe `runs[0].probes[0]` of a probe log.
fn probe(log: &mut Value) -> &mut Value {
    &mut log["runs"][0]["probes"][0]
}

#[test]
fn the_re_signed_round_passes_every_check() {
    let report = forged(|_| {}, |_| {});
    assert!(
        report.passed(),
        "{:#?}",
        report.failures().collect::<Vec<_>>()
    );
    for name in [
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
        CheckName::ProbeHistograms,
        CheckName::ProbePercentile,
        CheckName::ProbeOverBound,
        CheckName::ProbeVerdict,
        CheckName::ProbeThroughput,
        CheckName::RunResult,
        CheckName::EntryMeasurement,
        CheckName::DriftRecomputed,
        CheckName::HardwareChanged,
        CheckName::CorrectnessVerdict,
        CheckName::StatusConsistent,
        CheckName::Timeline,
    ] {
        assert!(
            report.checks.iter().any(|c| c.name == name && c.passed),
            "{} did not pass",
            name.as_str()
        );
    }
    // The fixture's correctness file predates the raw top-k: its distances are taken as
    // stored, `not applicable`, never passed.
    let distances: Vec<_> = report
        .checks
        .iter()
        .filter(|c| c.name == CheckName::CorrectnessDistances)
        .map(|c| (c.target.as_deref(), c.passed, c.not_applicable))
        .collect();
    assert_eq!(
        distances,
        vec![(
            Some("entries[1].correctness"),
            false,
            Some("no raw logprobs")
        )]
    );
    // Three probe logs of one probe each.
    let count = |name| report.checks.iter().filter(|c| c.name == name).count();
    // round, campaign.id, campaign.digest, minersDigest, previousReceipt, 2 entries.
    assert_eq!(count(CheckName::RoundOpenedMatches), 7);
    // The five v2 seeds, and sampleSeed and passSeed not applicable before v3.
    assert_eq!(count(CheckName::SeedCommitments), 7);
    assert_eq!(count(CheckName::RoundScores), 2);
    assert_eq!(count(CheckName::RoundThroughput), 2);
    assert_eq!(
        report.predicate_type.as_deref(),
        Some(receipts::model::ROUND_PREDICATE_TYPE_V2)
    );
    assert_eq!(count(CheckName::ProbePercentile), 3);
    assert_eq!(count(CheckName::RunResult), 3);
    // roundOpened, 12 step logs, 2 entries' engine logs, 3 probe logs (the drift
    // baseline's included), 1 items file, 3 inputs.
    assert_eq!(count(CheckName::FilesNamed), 22);
}

#[test]
fn a_log_the_predicate_names_but_did_not_sign_fails_files_named() {
    let report = forged(
        |_| {},
        |p| p["entries"][0]["engineLog"] = json!("logs/engines/other.log"),
    );
    assert_eq!(
        only(&report, CheckName::FilesNamed),
        FailureReason::FileNotNamed {
            field: "entries[0].engineLog".into(),
            file: "logs/engines/other.log".into(),
        }
    );
}

#[test]
fn a_probe_log_naming_a_nonexistent_run_fails_probes_log() {
    let report = forged(
        |dir| {
            edit_json(dir, BASELINE_PROBES, |log| {
                log["runs"][0]["run"] = json!(5);
                probe(log)["run"] = json!(5);
            })
        },
        |_| {},
    );
    assert_eq!(
        only(&report, CheckName::ProbeLog),
        FailureReason::UnknownRun {
            file: BASELINE_PROBES.into(),
            run: 5,
        }
    );
}

#[test]
fn a_truncated_histogram_fails_probe_histograms() {
    let report = forged(
        |dir| {
            edit_json(dir, BASELINE_PROBES, |log| {
                let text = probe(log)["histograms"]["e2e"].as_str().unwrap().to_owned();
                probe(log)["histograms"]["e2e"] = json!(text[..40]);
            })
        },
        |_| {},
    );
    let reason = only(&report, CheckName::ProbeHistograms);
    assert!(
        matches!(&reason, FailureReason::ArtifactUnreadable { file, .. }
            if file == "probes/baseline.json runs[0].probes[0].histograms.e2e"),
        "{reason:?}"
    );
    // The recomputations that need it are reported as not run.
    for name in [
        CheckName::ProbePercentile,
        CheckName::ProbeOverBound,
        CheckName::ProbeVerdict,
    ] {
        assert!(report.failures().any(|c| c.name == name
            && c.reason
                == Some(FailureReason::NotRun {
                    blocked_by: CheckName::ProbeHistograms
                })));
    }
}

#[test]
fn an_oversized_histogram_fails_probe_histograms() {
    let report = forged(
        |dir| {
            edit_json(dir, BASELINE_PROBES, |log| {
                probe(log)["histograms"]["itl"] = json!("A".repeat((1 << 20) + 4));
            })
        },
        |_| {},
    );
    let reason = only(&report, CheckName::ProbeHistograms);
    assert!(
        reason
            .to_string()
            .contains("1048580 bytes of text, the limit is 1048576"),
        "{reason}"
    );
}

#[test]
fn a_percentile_not_in_the_histogram_fails_probe_percentile() {
    let report = forged(
        |dir| {
            edit_json(dir, BASELINE_PROBES, |log| {
                probe(log)["percentileUs"] = json!(30000)
            })
        },
        |_| {},
    );
    assert_eq!(
        only(&report, CheckName::ProbePercentile),
        recomputed(
            BASELINE_PROBES,
            "runs[0].probes[0].percentileUs",
            "30000",
            "34271"
        )
    );
}

#[test]
fn an_over_bound_count_not_in_the_histogram_fails_probe_over_bound() {
    let report = forged(
        |dir| {
            edit_json(dir, BASELINE_PROBES, |log| {
                probe(log)["overBound"] = json!(1)
            })
        },
        |_| {},
    );
    assert_eq!(
        only(&report, CheckName::ProbeOverBound),
        recomputed(BASELINE_PROBES, "runs[0].probes[0].overBound", "1", "0")
    );
}

#[test]
fn a_loosened_send_lag_bound_fails_probe_verdict() {
    let report = forged(
        |dir| {
            edit_json(dir, CANDIDATE_PROBES, |log| {
                probe(log)["sendLagBoundUs"] = json!(999_999_999)
            })
        },
        |_| {},
    );
    assert_eq!(
        only(&report, CheckName::ProbeVerdict),
        recomputed(
            CANDIDATE_PROBES,
            "runs[0].probes[0].sendLagBoundUs",
            "999999999",
            "250000"
        )
    );
}

#[test]
fn a_shortened_duration_fails_probe_throughput() {
    // 8 completed in 737 083 µs is 10 853 milli-req/s; in 600 000 µs it would be 13 333.
    let report = forged(
        |dir| {
            edit_json(dir, BASELINE_PROBES, |log| {
                probe(log)["durationUs"] = json!(600_000)
            })
        },
        |_| {},
    );
    assert_eq!(
        only(&report, CheckName::ProbeThroughput),
        recomputed(
            BASELINE_PROBES,
            "runs[0].probes[0].throughputMilliRps",
            "10853",
            "13333 (8 completed in 600000 µs)"
        )
    );
}

#[test]
fn a_run_rate_not_its_passing_probe_fails_run_result() {
    let report = forged(
        |_| {},
        |p| p["entries"][0]["runs"][0]["rateMilliRps"] = json!(9000),
    );
    assert_eq!(
        only(&report, CheckName::RunResult),
        recomputed(
            "receipt.dsse.json",
            "run 0 rateMilliRps (from `probes/baseline.json`)",
            "9000",
            "10000"
        )
    );
}

#[test]
fn an_entry_maximum_not_its_runs_fails_entry_measurement() {
    let report = forged(
        |dir| {
            edit_json(dir, CANDIDATE_PROBES, |log| {
                log["throughputMaxMilliRps"] = json!(10_800)
            })
        },
        |_| {},
    );
    assert_eq!(
        only(&report, CheckName::EntryMeasurement),
        recomputed(CANDIDATE_PROBES, "throughputMaxMilliRps", "10800", "10733")
    );
}

#[test]
fn a_drift_not_its_throughputs_fails_drift_recomputed() {
    // |10 491 − 10 853| · 10⁴ / 10 853 = 333.5… → 334 bp.
    let report = forged(|_| {}, |p| p["drift"]["driftBp"] = json!(300));
    assert_eq!(
        only(&report, CheckName::DriftRecomputed),
        recomputed("receipt.dsse.json", "drift.driftBp", "300", "334")
    );
}

#[test]
fn a_hardware_verdict_not_its_fingerprints_fails_hardware_changed() {
    let report = forged(|_| {}, |p| p["hardware"]["changed"] = json!(true));
    assert_eq!(
        only(&report, CheckName::HardwareChanged),
        recomputed("receipt.dsse.json", "hardware.changed", "true", "false")
    );
}

#[test]
fn a_summary_not_its_distances_fails_correctness_verdict() {
    // Item 0 now 0.6 nats at every position: the group mean is 200 000 (the bound, so it
    // still passes) but the largest item is 600 000, not the 0 the summary says.
    let report = forged(
        |dir| {
            edit_json(dir, CANDIDATE_ITEMS, |items| {
                items["items"][0]["positionMicroNats"] = json!(vec![600_000; 6]);
                items["items"][0]["distanceMicroNats"] = json!(600_000);
            })
        },
        |_| {},
    );
    assert_eq!(
        only(&report, CheckName::CorrectnessVerdict),
        recomputed(
            "receipt.dsse.json",
            "entries[1].correctness.maxItemMicroNats",
            "0",
            "600000"
        )
    );
}

/// The view's correctness of the challenger of the fixture forged with `files` and
/// `receipt`: its largest item distance and whether it is verified.
fn viewed_correctness(files: impl FnOnce(&Path), receipt: impl FnOnce(&mut Value)) -> (u64, bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    forge_into(dir.path(), files, |_| {}, receipt);
    let report = verify(dir.path());
    let (record, _) = receipts::layout::read_round_record(dir.path()).expect("record");
    let view = verifier::RoundView::from_record(dir.path(), &record, &report);
    let correctness = view.entries[1].correctness.clone().expect("correctness");
    (correctness.value.max_item_micro_nats, correctness.verified)
}

#[test]
fn a_forged_correctness_number_re_signed_is_unverified_in_the_view() {
    // Every file intact and signed: only `correctness.verdict` recomputes the number.
    assert_eq!(
        viewed_correctness(
            |_| {},
            |p| p["entries"][1]["correctness"]["maxItemMicroNats"] = json!(1)
        ),
        (1, false)
    );
    // A rewritten distance that the verdict agrees with: `correctness.distances` fails.
    let rewritten = |dir: &Path| {
        add_raw_top_k(dir, CANDIDATE_ITEMS);
        edit_json(dir, CANDIDATE_ITEMS, |items| {
            items["items"][0]["positionMicroNats"][0] = json!(3);
            items["items"][0]["distanceMicroNats"] = json!(1);
        });
    };
    assert_eq!(
        viewed_correctness(
            rewritten,
            |p| p["entries"][1]["correctness"]["maxItemMicroNats"] = json!(1)
        ),
        (1, false)
    );
    // The honest round: verified with its distances recomputed, and without raw
    // logprobs (`correctness.distances` not applicable) on its verdict alone.
    assert_eq!(
        viewed_correctness(|dir| add_raw_top_k(dir, CANDIDATE_ITEMS), |_| {}),
        (0, true)
    );
    assert_eq!(viewed_correctness(|_| {}, |_| {}), (0, true));
}

#[test]
fn a_correctness_file_missing_an_item_fails_correctness_verdict() {
    let report = forged(
        |dir| {
            edit_json(dir, CANDIDATE_ITEMS, |items| {
                items["items"].as_array_mut().unwrap().remove(1);
            })
        },
        |_| {},
    );
    assert_eq!(
        only(&report, CheckName::CorrectnessVerdict),
        FailureReason::MissingItem {
            file: CANDIDATE_ITEMS.into(),
            index: 1,
            found: 2,
            expected: 3,
        }
    );
}

/// The fixture with the raw top-k of [`add_raw_top_k`] in the candidate's correctness
/// file, `files` applied after, and `receipt` applied to the predicate.
fn forged_with_raw_top_k(
    files: impl FnOnce(&Path),
    receipt: impl FnOnce(&mut Value),
) -> VerifyReport {
    forged(
        |dir| {
            add_raw_top_k(dir, CANDIDATE_ITEMS);
            files(dir);
        },
        receipt,
    )
}

#[test]
fn raw_top_k_that_give_the_stored_distances_pass_correctness_distances() {
    let report = forged_with_raw_top_k(|_| {}, |_| {});
    assert!(
        report.passed(),
        "{:#?}",
        report.failures().collect::<Vec<_>>()
    );
    let distances: Vec<_> = report
        .checks
        .iter()
        .filter(|c| c.name == CheckName::CorrectnessDistances)
        .map(|c| (c.target.as_deref(), c.passed))
        .collect();
    assert_eq!(distances, vec![(Some("entries[1].correctness"), true)]);
}

#[test]
fn a_rewritten_raw_logprob_fails_correctness_distances() {
    // The reference's logprob of item 0's first output token, −0.05 → −0.25 nats: the
    // position's distance is 0.2 nats, not the 0 the file stores.
    let report = forged_with_raw_top_k(
        |dir| {
            edit_json(dir, CANDIDATE_ITEMS, |items| {
                let pairs = items["items"][0]["referenceTopK"][0]
                    .as_array_mut()
                    .unwrap();
                let last = pairs.len() - 1;
                assert_eq!(pairs[last][1], json!(RAW_LOGPROBS[0]));
                pairs[last][1] = json!(-250_000);
            })
        },
        |_| {},
    );
    assert_eq!(
        only(&report, CheckName::CorrectnessDistances),
        recomputed(
            CANDIDATE_ITEMS,
            "items[0].positionMicroNats[0]",
            "0",
            "200000"
        )
    );
}

#[test]
fn a_rewritten_distance_with_raw_logprobs_left_alone_fails_correctness_distances() {
    // Item 0's first position 0 → 3 µnat, its mean (3 + 3) / 6 = 1 and the summary's
    // largest item 1, all consistent with each other: only the raw top-k say otherwise.
    let report = forged_with_raw_top_k(
        |dir| {
            edit_json(dir, CANDIDATE_ITEMS, |items| {
                items["items"][0]["positionMicroNats"][0] = json!(3);
                items["items"][0]["distanceMicroNats"] = json!(1);
            })
        },
        |p| p["entries"][1]["correctness"]["maxItemMicroNats"] = json!(1),
    );
    assert_eq!(
        only(&report, CheckName::CorrectnessDistances),
        recomputed(CANDIDATE_ITEMS, "items[0].positionMicroNats[0]", "3", "0")
    );
}

#[test]
fn a_swapped_token_id_fails_correctness_distances() {
    // Item 1, position 2: the entry's top token becomes id 300, which the reference does
    // not list. Each side takes the other's k-th logprob (−6.0) for the token it lacks:
    // |−0.05 − (−6.0)| = 5.95 nats.
    let report = forged_with_raw_top_k(
        |dir| {
            edit_json(dir, CANDIDATE_ITEMS, |items| {
                items["items"][1]["entryTopK"][2][0][0] = json!(300);
            })
        },
        |_| {},
    );
    assert_eq!(
        only(&report, CheckName::CorrectnessDistances),
        recomputed(
            CANDIDATE_ITEMS,
            "items[1].positionMicroNats[2]",
            "0",
            "5950000"
        )
    );
}

#[test]
fn raw_top_k_left_out_of_one_item_fails_correctness_distances() {
    let report = forged_with_raw_top_k(
        |dir| {
            edit_json(dir, CANDIDATE_ITEMS, |items| {
                items["items"][2]
                    .as_object_mut()
                    .unwrap()
                    .remove("referenceTopK");
            })
        },
        |_| {},
    );
    assert_eq!(
        only(&report, CheckName::CorrectnessDistances),
        FailureReason::ArtifactUnreadable {
            file: CANDIDATE_ITEMS.into(),
            message: "items[2] has no referenceTopK, which other items of the file have".into(),
        }
    );
}

#[test]
fn a_disqualified_entry_without_a_reason_fails_status_consistent() {
    let report = forged(
        |_| {},
        |p| {
            p["entries"][1]["status"] = json!("disqualified");
            p["entries"][1]["scorePpm"] = Value::Null;
        },
    );
    assert_eq!(
        only(&report, CheckName::StatusConsistent),
        FailureReason::StatusInconsistent {
            field: "entries[1].status".into(),
            status: "disqualified".into(),
            problem: "it has no disqualification reason".into(),
        }
    );
}

#[test]
fn an_oom_kill_on_an_engine_without_a_container_fails_status_consistent() {
    let report = forged(
        |_| {},
        |p| {
            p["entries"][1]["status"] = json!("disqualified");
            p["entries"][1]["scorePpm"] = Value::Null;
            p["entries"][1]["disqualification"] = json!({
                "reason": {"engine_oom_killed": {"limitMb": 64, "exitCode": 137}},
                "detail": "container killed for running out of memory (limit 64 MiB, exit code 137)",
                "logTail": [],
            });
        },
    );
    assert_eq!(
        only(&report, CheckName::StatusConsistent),
        FailureReason::StatusInconsistent {
            field: "entries[1].status".into(),
            status: "disqualified".into(),
            problem: "its reason is engine_oom_killed at a limit of 64 MiB, but its engine is a \
                      builtin one with a memory limit of none (a kill is read from a Docker \
                      container's state, at the container's limit)"
                .into(),
        }
    );
}

#[test]
fn an_infra_failed_round_without_a_reason_fails_status_consistent() {
    let report = forged(|_| {}, |p| p["outcome"]["status"] = json!("infra_failed"));
    assert_eq!(
        only(&report, CheckName::StatusConsistent),
        FailureReason::StatusInconsistent {
            field: "outcome.status".into(),
            status: "infra_failed".into(),
            problem: "it has no reason".into(),
        }
    );
}

#[test]
fn overlapping_steps_fail_timeline() {
    let report = forged(
        |_| {},
        |p| p["steps"][5]["startedAt"] = json!("2026-12-01T22:12:44.7Z"),
    );
    let reason = only(&report, CheckName::Timeline);
    assert_eq!(
        reason.to_string(),
        "`receipt.dsse.json` steps[5].startedAt is 2026-12-01T22:12:44.7Z, before \
         steps[4].endedAt (2026-12-01T22:12:44.732161Z)"
    );
}

/// Forges the fixture into `data/tiny/rounds/<place>` as round `round` whose
/// `previousReceipt` is `previous` (in the receipt and the round-opened statement), with
/// `files` and `receipt` applied on top; returns its Statement digest.
fn round_into(
    data: &Path,
    place: u64,
    round: u64,
    previous: Option<&Sha256Hex>,
    files: impl FnOnce(&Path),
    receipt: impl FnOnce(&mut Value),
) -> Sha256Hex {
    let dir = data.join("tiny/rounds").join(place.to_string());
    let previous = previous.map_or(Value::Null, |d| json!(d.to_string()));
    let opened_previous = previous.clone();
    forge_into(
        &dir,
        files,
        |p| {
            p["round"] = json!(round);
            p["previousReceipt"] = opened_previous;
        },
        |p| {
            p["round"] = json!(round);
            p["previousReceipt"] = previous;
            receipt(p);
        },
    );
    read_statement_digest(&dir.join(receipts::bundle::ENVELOPE_FILE)).expect("digest")
}

/// Every bundle under `data`, verified as an archive (chains included).
fn verify_data(data: &Path) -> Vec<VerifyReport> {
    let bundles = find_bundles(data).expect("bundles");
    verify_archive(&bundles, &keyring(), &VerifyOptions::default(), &|| {})
}

/// The failed checks of each report, by the bundle's directory name.
fn failures_by_round(reports: &[VerifyReport]) -> Vec<(String, Vec<&'static str>)> {
    reports
        .iter()
        .map(|r| {
            let name = r.bundle.file_name().unwrap().to_string_lossy().into_owned();
            (name, failed(r).into_iter().collect())
        })
        .collect()
}

#[test]
fn a_chain_of_two_rounds_passes() {
    let data = tempfile::tempdir().expect("tempdir");
    let first = round_into(data.path(), 1, 1, None, |_| {}, |_| {});
    round_into(data.path(), 2, 2, Some(&first), |_| {}, |_| {});
    let reports = verify_data(data.path());
    assert_eq!(
        failures_by_round(&reports),
        vec![("1".into(), vec![]), ("2".into(), vec![])]
    );
    let second = &reports[1];
    for name in [
        CheckName::ChainPrevious,
        CheckName::ChainCampaign,
        CheckName::ChainIncumbent,
    ] {
        assert!(second.checks.iter().any(|c| c.name == name && c.passed));
    }
}

#[test]
fn a_chain_with_a_gap_fails_chain_previous_receipt() {
    let data = tempfile::tempdir().expect("tempdir");
    let first = round_into(data.path(), 1, 1, None, |_| {}, |_| {});
    round_into(data.path(), 3, 3, Some(&first), |_| {}, |_| {});
    let reports = verify_data(data.path());
    assert_eq!(
        failures_by_round(&reports),
        vec![
            ("1".into(), vec![]),
            ("3".into(), vec!["chain.previousReceipt"])
        ]
    );
    let reason = reports[1].failures().next().and_then(|c| c.reason.clone());
    assert!(
        matches!(
            reason,
            Some(FailureReason::ChainGap {
                expected: 2,
                found: 3,
                ..
            })
        ),
        "{reason:?}"
    );
}

#[test]
fn a_fork_fails_chain_previous_receipt() {
    let data = tempfile::tempdir().expect("tempdir");
    let first = round_into(data.path(), 1, 1, None, |_| {}, |_| {});
    let other = Sha256Hex::digest(b"another round 1");
    round_into(data.path(), 2, 2, Some(&other), |_| {}, |_| {});
    let reports = verify_data(data.path());
    assert_eq!(
        reports[1].failures().next().and_then(|c| c.reason.clone()),
        Some(FailureReason::ChainFork {
            round: 2,
            claimed: Some(Box::new(other)),
            recomputed: Some(Box::new(first)),
        })
    );
    assert_eq!(
        failures_by_round(&reports)[1].1,
        vec!["chain.previousReceipt"]
    );
}

#[test]
fn a_round_out_of_its_place_fails_chain_previous_receipt() {
    let data = tempfile::tempdir().expect("tempdir");
    let first = round_into(data.path(), 1, 1, None, |_| {}, |_| {});
    round_into(data.path(), 2, 3, Some(&first), |_| {}, |_| {});
    let reports = verify_data(data.path());
    assert_eq!(
        failures_by_round(&reports)[1].1,
        vec!["chain.previousReceipt"]
    );
    assert!(matches!(
        reports[1].failures().next().and_then(|c| c.reason.clone()),
        Some(FailureReason::ChainReordered {
            round: 3,
            place: 2,
            ..
        })
    ));
}

#[test]
fn an_incumbent_the_previous_round_did_not_seat_fails_chain_incumbent() {
    let data = tempfile::tempdir().expect("tempdir");
    let first = round_into(data.path(), 1, 1, None, |_| {}, |_| {});
    round_into(
        data.path(),
        2,
        2,
        Some(&first),
        |_| {},
        |p| {
            p["outcome"]["leaderBefore"] = json!({
                "miner": "fast",
                "patch": "f98bb8888a2454cec792fdb3057f7a3f604e2afd317a4b644b9913f86e318dfc",
            })
        },
    );
    let reports = verify_data(data.path());
    assert_eq!(failures_by_round(&reports)[1].1, vec!["chain.incumbent"]);
    assert_eq!(
        reports[1]
            .failures()
            .next()
            .map(|c| c.reason.clone().unwrap().to_string()),
        Some(
            "round 2 outcome.leaderBefore is \
             f98bb8888a2454cec792fdb3057f7a3f604e2afd317a4b644b9913f86e318dfc (fast), round 1 \
             left the seat to baseline"
                .to_owned()
        )
    );
}

#[test]
fn a_round_of_another_campaign_fails_chain_campaign() {
    let data = tempfile::tempdir().expect("tempdir");
    let first = round_into(data.path(), 1, 1, None, |_| {}, |_| {});
    // Another campaign frozen under the same id: another title, so another digest, and
    // a round 2 consistent with it in every other respect.
    let original = std::fs::read(fixture().join("inputs/campaign.json")).expect("campaign");
    let other = String::from_utf8(original)
        .expect("utf-8")
        .replace("\"title\":\"\"", "\"title\":\"other\"");
    let other_digest = Sha256Hex::digest(other.as_bytes()).to_string();
    let dir = data.path().join("tiny/rounds/2");
    let (opened_digest, receipt_digest) = (other_digest.clone(), other_digest.clone());
    forge_into(
        &dir,
        |dir| std::fs::write(dir.join("inputs/campaign.json"), &other).expect("write"),
        |p| {
            p["round"] = json!(2);
            p["previousReceipt"] = json!(first.to_string());
            p["campaign"]["digest"] = json!(opened_digest);
        },
        |p| {
            p["round"] = json!(2);
            p["previousReceipt"] = json!(first.to_string());
            p["campaign"]["digest"] = json!(receipt_digest);
            p["inputs"][0]["digest"]["sha256"] = json!(receipt_digest);
        },
    );
    let reports = verify_data(data.path());
    assert_eq!(failures_by_round(&reports)[1].1, vec!["chain.campaign"]);
    assert_eq!(
        reports[1].failures().next().and_then(|c| c.reason.clone()),
        Some(FailureReason::ChainCampaign {
            round: 2,
            field: "campaign.digest".into(),
            claimed: other_digest,
            chain_value: "2044afbca3f2bee36a36328bd58b7edda405987b9a042ddca78b1102c5ce9711".into(),
        })
    );
}

/// `payload` (a V2 histogram, uncompressed) in the V2+DEFLATE form probe logs hold:
/// cookie, compressed length, zlib stream; base64.
fn deflate_blob(payload: &[u8]) -> String {
    use std::io::Write as _;
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(payload).expect("compresses");
    let compressed = encoder.finish().expect("compresses");
    let mut blob = 0x1c84_9314u32.to_be_bytes().to_vec();
    blob.extend_from_slice(&(compressed.len() as u32).to_be_bytes());
    blob.extend_from_slice(&compressed);
    receipts::dsse::encode_base64(&blob)
}

#[test]
fn no_corrupted_histogram_payload_panics_the_decoder() {
    use hdrhistogram::serialization::{Serializer, V2Serializer};
    use receipts::rules::histogram::{decode_histogram, new_latency_histogram};
    let mut h = new_latency_histogram();
    for v in [1, 7, 250, 34_271, 1_000_000, 3_600_000_000] {
        h.saturating_record(v);
    }
    let mut plain = Vec::new();
    V2Serializer::new()
        .serialize(&h, &mut plain)
        .expect("serializes");
    assert!(matches!(decode_histogram(&deflate_blob(&plain)), Ok(d) if d == h));
    // The uncompressed V2 form (cookie 0x1c849313) decodes too.
    let uncompressed = decode_histogram(&receipts::dsse::encode_base64(&plain));
    assert!(
        matches!(&uncompressed, Ok(d) if *d == h),
        "{uncompressed:?}"
    );
    // Every byte of the payload flipped three ways, and every truncation: each decodes
    // or is an error, none panics.
    let mut decoded = 0;
    for at in 0..plain.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut bytes = plain.clone();
            bytes[at] ^= flip;
            decoded += usize::from(decode_histogram(&deflate_blob(&bytes)).is_ok());
        }
        assert!(
            decode_histogram(&deflate_blob(&plain[..at])).is_err(),
            "{at}"
        );
    }
    // Flips inside the counts still decode (to another histogram).
    assert!(decoded > 0);
}

#[test]
fn a_histogram_declaring_a_payload_it_lacks_fails_probe_histograms() {
    use hdrhistogram::serialization::{Serializer, V2Serializer};
    // The baseline's SLA histogram, its header claiming 2^32 − 1 bytes of counts: the
    // decoder must refuse it before allocating them.
    let mut plain = Vec::new();
    let h = receipts::rules::histogram::new_latency_histogram();
    V2Serializer::new()
        .serialize(&h, &mut plain)
        .expect("serializes");
    plain[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
    let blob = deflate_blob(&plain);
    let report = forged(
        |dir| {
            edit_json(dir, BASELINE_PROBES, |log| {
                probe(log)["histograms"]["e2e"] = json!(blob)
            })
        },
        |_| {},
    );
    let reason = only(&report, CheckName::ProbeHistograms).to_string();
    assert!(
        reason.ends_with("header declares a payload of 4294967295 bytes, 1 follow it"),
        "{reason}"
    );
}

/// A v1–v2 round runs its baseline again at the end whenever the baseline's first run
/// scored: the v2 round with its drift record dropped fails `drift.recomputed`, as does
/// a drift run given a host load (drift ended with v2, host loads began with v5) and a
/// v9 round given a drift record.
#[test]
fn a_drift_record_dropped_added_or_given_a_host_load_fails_drift_recomputed() {
    let report = forged(
        |_| {},
        |p| {
            p.as_object_mut().expect("predicate").remove("drift");
        },
    );
    assert_eq!(
        only(&report, CheckName::DriftRecomputed),
        recomputed(
            "receipt.dsse.json",
            "drift",
            "absent",
            "the drift check against the baseline's first 10853 milli-rps (a round/v2 \
             round runs the baseline again at the end when it scored)"
        )
    );
    let report = forged(
        |_| {},
        |p| p["drift"]["runs"][0]["hostLoad"] = json!({"stealMs": 0, "wallMs": 4000}),
    );
    assert_eq!(
        only(&report, CheckName::DriftRecomputed),
        recomputed(
            "receipt.dsse.json",
            "drift.runs[0].hostLoad",
            "a host load",
            "none: no runner recorded one in a drift run (drift ended with v2, host loads \
             began with v5)"
        )
    );
    let report = forged_fixture(
        "v9-round",
        |_| {},
        |_, p| {
            let first = p["entries"][0]["throughputMilliRps"].clone();
            p["drift"] = json!({
                "firstMilliRps": first,
                "driftMilliRps": null,
                "driftBp": null,
                "boundBp": 5000,
                "withinBound": false,
                "runs": [],
            });
        },
    );
    assert_eq!(
        only(&report, CheckName::DriftRecomputed),
        recomputed(
            "receipt.dsse.json",
            "drift",
            "a drift record",
            "none (from v3 the A/A control and the per-pass baselines measure the noise)"
        )
    );
}
