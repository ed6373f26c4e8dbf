//! The forgeries of v6's engine-log checks (content/verifying.md, `logs.budget` and
//! `logs.tail`; content/threat-model.md, Bounded output): `fixtures/v6-round`, a real v6
//! round, changed the way an evaluator holding the key could — every subject digest
//! updated, the Statements re-signed, whatever else the change implies recomputed so that
//! every other check passes. Each fails exactly its named check.

use std::path::Path;

use crate::forge::*;
use receipts::model::{FrozenCampaign, RoundRecord};
use receipts::rules::engine_log::MAX_MARKER_BYTES;
use receipts::rules::log_tail::log_tail_of_end;
use serde_json::{Value, json};
use verifier::{CheckName, FailureReason, VerifyReport};

const CHALLENGER_LOG: &str = "logs/engines/candidate-1-miner-fast-pass-1.log";

/// Forges `fixtures/v6-round` with `files` and `receipt` (which gets the bundle's
/// directory too) and verifies it.
fn forged_v6(files: impl FnOnce(&Path), receipt: impl FnOnce(&Path, &mut Value)) -> VerifyReport {
    forged_fixture("v6-round", files, receipt)
}

/// The challenger (entry 1) disqualified `compliance_failed` with `log_tail`, its score
/// dropped and the outcome recomputed: consistent with every other check.
pub(crate) fn disqualify_challenger(dir: &Path, predicate: &mut Value, log_tail: &[String]) {
    disqualify_challenger_for(
        dir,
        predicate,
        json!("compliance_failed"),
        "its outputs were not a completions response",
        log_tail,
    );
}

/// The challenger (entry 1) disqualified for `reason` (as the receipt writes it) with
/// `detail` and `log_tail`, its score dropped and the outcome recomputed.
pub(crate) fn disqualify_challenger_for(
    dir: &Path,
    predicate: &mut Value,
    reason: Value,
    detail: &str,
    log_tail: &[String],
) {
    let challenger = &mut predicate["entries"][1];
    challenger["status"] = json!("disqualified");
    challenger["disqualification"] = json!({
        "reason": reason,
        "detail": detail,
        "logTail": log_tail,
    });
    let entry = challenger.as_object_mut().expect("entry");
    entry.remove("pairedScore");
    entry.insert("scorePpm".into(), Value::Null);
    let record: RoundRecord = serde_json::from_value(predicate.clone()).expect("record");
    let bytes = std::fs::read(dir.join("inputs/campaign.json")).expect("campaign");
    let frozen = FrozenCampaign::from_json("inputs/campaign.json", &bytes).expect("campaign");
    let outcome = verifier::recomputed_outcome(dir, &record, &frozen).expect("outcome");
    predicate["outcome"] = serde_json::to_value(outcome).expect("json");
}

/// The challenger's engine log's tail by the runner's rule.
pub(crate) fn true_tail(dir: &Path) -> Vec<String> {
    log_tail_of_end(&std::fs::read(dir.join(CHALLENGER_LOG)).expect("log"))
}

#[test]
fn the_v6_round_records_its_limits_and_its_logs_fit_them() {
    let report = forged_v6(|_| {}, |_, _| {});
    assert!(report.passed(), "{:#?}", failures(&report));
    // The limits, then the three engine logs the entries and their pass rows name.
    assert_eq!(passed(&report, CheckName::LogsBudget), 4);
    // Nobody was disqualified: no tail to hold.
    assert_eq!(passed(&report, CheckName::LogsTail), 0);
}

#[test]
fn limits_other_than_the_campaigns_fail_logs_budget() {
    let report = forged_v6(
        |_| {},
        |_, p| p["limits"]["engine_log_bytes"] = json!(1 << 20),
    );
    assert_eq!(
        only(&report, CheckName::LogsBudget),
        FailureReason::LimitsRecord {
            field: "limits".into(),
            message: "engine_log_bytes = 1048576, response_bytes = 16777216, \
                      response_events = 65536, but the campaign's are engine_log_bytes = \
                      67108864, response_bytes = 16777216, response_events = 65536"
                .into(),
        }
    );
}

#[test]
fn a_receipt_without_limits_fails_logs_budget() {
    let report = forged_v6(
        |_| {},
        |_, p| {
            p.as_object_mut().expect("predicate").remove("limits");
        },
    );
    assert_eq!(
        only(&report, CheckName::LogsBudget),
        FailureReason::LimitsRecord {
            field: "limits".into(),
            message: "missing (required from v6)".into(),
        }
    );
}

/// An engine log one byte longer than the default 64 MiB budget and the longest marker
/// allow: the verifier reads no log longer than that.
#[test]
fn an_engine_log_over_its_budget_fails_logs_budget() {
    let most = (64u64 << 20) + MAX_MARKER_BYTES;
    let report = forged_v6(
        |dir| {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join(CHALLENGER_LOG))
                .expect("log");
            file.set_len(most + 1).expect("grown");
        },
        |_, _| {},
    );
    assert_eq!(
        only(&report, CheckName::LogsBudget),
        FailureReason::LimitsRecord {
            field: CHALLENGER_LOG.into(),
            message: format!(
                "{} bytes, more than the {most} an engine log budget of 67108864 allows",
                most + 1
            ),
        }
    );
}

/// A disqualification quoting its engine log exactly passes; one quoting a line the log
/// does not hold, re-signed with everything else consistent, fails `logs.tail` alone.
#[test]
fn a_log_tail_the_engine_log_does_not_hold_fails_logs_tail() {
    let report = forged_v6(
        |_| {},
        |dir, p| {
            let tail = true_tail(dir);
            assert!(!tail.is_empty());
            disqualify_challenger(dir, p, &tail);
        },
    );
    assert!(report.passed(), "{:#?}", failures(&report));
    assert_eq!(passed(&report, CheckName::LogsTail), 1);
    let report = forged_v6(
        |_| {},
        |dir, p| {
            let mut tail = true_tail(dir);
            tail.push("CUDA error: an illegal memory access was encountered".into());
            disqualify_challenger(dir, p, &tail);
        },
    );
    assert_eq!(
        only(&report, CheckName::LogsTail),
        FailureReason::LogTail {
            entry: 1,
            message: format!("it is not the tail of `{CHALLENGER_LOG}`"),
        }
    );
}

/// From v6 a correctness file and a timed-run sample must name the run they judged: the
/// sealed fixture's do, and a file with `measuredFor` dropped fails `correctness.entry`.
#[test]
fn a_v6_correctness_file_without_its_run_fails_correctness_entry() {
    let honest = forged_v6(|_| {}, |_, _| {});
    assert!(
        honest.passed(),
        "{:#?}",
        honest.failures().collect::<Vec<_>>()
    );
    assert_eq!(passed(&honest, CheckName::CorrectnessEntry), 2);
    let items = "correctness/candidate-1-miner-fast.json";
    let report = forged_v6(
        |dir| {
            let path = dir.join(items);
            let mut file: Value =
                serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
            file.as_object_mut().expect("object").remove("measuredFor");
            std::fs::write(&path, serde_json::to_vec(&file).expect("json")).expect("write");
        },
        |_, _| {},
    );
    let failed: Vec<_> = report.failures().collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(failed[0].name, CheckName::CorrectnessEntry);
    assert!(
        matches!(&failed[0].reason, Some(FailureReason::Recomputed { file, field, claimed, recomputed })
            if file == items && field == "measuredFor" && claimed == "absent"
                && recomputed == "the run of `entries[1]` it judged (required from round/v6)"),
        "{:?}",
        failed[0].reason
    );
}

/// The log checks' failures of `fixtures/v6-round` with `receipt` applied, as
/// `referee verify` runs them after the bundle's own: (check, reason).
fn log_failures(receipt: impl FnOnce(&mut Value)) -> Vec<(CheckName, FailureReason)> {
    let dir = tempfile::tempdir().expect("tempdir");
    forge_from(
        &fixture_named("v6-round"),
        dir.path(),
        |_| {},
        |_| {},
        receipt,
    );
    let mut report = verify(dir.path());
    let options = verifier::tlog::LogOptions::default();
    verifier::tlog::check_bundle_log(&mut report, dir.path(), &keyring(), &options);
    report
        .failures()
        .filter(|c| c.name.as_str().starts_with("log."))
        .map(|c| (c.name, c.reason.clone().expect("a reason")))
        .collect()
}

/// A receipt cannot leave the log out of its story: the v6 round, `notLogged`, passes the
/// log checks as not applicable; dropping its `transparencyLog` fails `log.roundOpened`
/// (required from v5), and claiming it logged in a log the keyring has no key for fails
/// `log.checkpoint`.
#[test]
fn a_receipt_that_drops_or_forges_its_log_record_fails_the_log_checks() {
    assert_eq!(log_failures(|_| {}), vec![]);
    assert_eq!(
        log_failures(|p| {
            p.as_object_mut()
                .expect("predicate")
                .remove("transparencyLog");
        }),
        vec![(
            CheckName::LogRoundOpened,
            FailureReason::Recomputed {
                file: "receipt.dsse.json".into(),
                field: "transparencyLog".into(),
                claimed: "absent".into(),
                recomputed: "`logged` or `notLogged` (recorded from v5)".into(),
            }
        )]
    );
    let forged = log_failures(|p| {
        p["transparencyLog"] = json!({
            "status": "logged",
            "origin": "referee.example/log",
            "roundOpenedIndex": 0,
        });
    });
    assert_eq!(
        forged.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
        [CheckName::LogCheckpoint],
        "{forged:#?}"
    );
}
