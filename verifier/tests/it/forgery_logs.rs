//! The forgeries of v6's engine-log checks (content/verifying.md, `logs.budget` and
//! `logs.tail`; content/threat-model.md, Bounded output): `fixtures/v6-round`, a real v6
//! round, changed the way an evaluator holding the key could — every subject digest
//! updated, the Statements re-signed, whatever else the change implies recomputed so that
//! every other check passes. Each fails exactly its named check. And the transparency
//! log's: `fixtures/v9-logged-round`, a round logged and witnessed ([`LoggedFixture`]),
//! its log record changed field by field, each change failing its named log check.

use std::path::{Path, PathBuf};

use crate::forge::*;
use receipts::keys::Keyring;
use receipts::model::{FrozenCampaign, RoundRecord};
use receipts::rules::engine_log::MAX_MARKER_BYTES;
use receipts::rules::log_tail::log_tail_of_end;
use receipts::tlog::proof::round_proof_path;
use serde_json::{Value, json};
use verifier::{CheckName, FailureReason, VerifyOptions, VerifyReport};

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

/// A fixture round sealed into a transparency log (`fixtures/v9-logged-round`): what
/// `referee verify` checks it against besides the bundle, the log checks run after the
/// bundle's. Its layout: the bundle `fixtures/<name>`, its proofs `fixtures/<name>.proof`,
/// its log `fixtures/<stem>-tlog/` and its keyring `fixtures/<stem>-keyring.json`,
/// `<stem>` being `<name>` without `-round`. Its evaluator key is the forger's
/// ([`key`]), so a forgery re-signs its logged round-opened statement byte for byte.
pub(crate) struct LoggedFixture {
    /// The fixture's keyring: the evaluator key (the forger's), the log key (role `log`)
    /// and the witness key (role `witness`).
    keyring: Keyring,
    /// Its proofs, `fixtures/<name>.proof`.
    proof: PathBuf,
    /// The log's directory (its `checkpoint` and `tile/`).
    log_dir: PathBuf,
}

impl LoggedFixture {
    /// The log files of `fixtures/<name>`, when it has its proofs beside it.
    pub(crate) fn of(name: &str) -> Option<Self> {
        let proof = round_proof_path(&fixture_named(name));
        if !proof.is_file() {
            return None;
        }
        let stem = name.strip_suffix("-round").unwrap_or(name);
        let keyring_path = fixture_named(&format!("{stem}-keyring.json"));
        Some(Self {
            keyring: Keyring::load(&keyring_path).expect("the fixture's keyring"),
            proof,
            log_dir: fixture_named(&format!("{stem}-tlog")),
        })
    }

    /// `referee verify` on the bundle `dir` forged from this fixture, with its proofs
    /// copied beside it: the bundle's checks, then the log checks against the fixture's
    /// log, both under the fixture's keyring.
    pub(crate) fn verify(&self, dir: &Path) -> VerifyReport {
        std::fs::copy(&self.proof, round_proof_path(dir)).expect("copy the proofs");
        self.verify_under(dir, &self.keyring)
    }

    /// As [`LoggedFixture::verify`], with the proofs already beside `dir` and under
    /// `keyring`.
    fn verify_under(&self, dir: &Path, keyring: &Keyring) -> VerifyReport {
        let mut report = verifier::verify_bundle(dir, keyring, &VerifyOptions::default());
        let options = verifier::tlog::LogOptions {
            log_dir: Some(self.log_dir.clone()),
            ..Default::default()
        };
        verifier::tlog::check_bundle_log(&mut report, dir, keyring, &options);
        report
    }
}

/// The logged round, README's by-hand round whose campaign's `[log]` requires its
/// witness on the opening and on each pass.
const LOGGED: &str = "v9-logged-round";

/// A failed check and its target.
type Failed = (&'static str, Option<String>);

/// A change of the receipt's predicate and the checks it fails.
type Case = (fn(&mut Value), Vec<Failed>);

/// The checks that fail in `fixtures/v9-logged-round` with `receipt` applied and the
/// receipt re-signed, with their targets, verified as `referee verify` does with its
/// proofs and log; and the log checks that passed.
fn logged(receipt: impl FnOnce(&mut Value)) -> (Vec<Failed>, Vec<&'static str>) {
    let fixture = LoggedFixture::of(LOGGED).expect("a logged fixture");
    let dir = tempfile::tempdir().expect("tempdir");
    let bundle = dir.path().join("round");
    forge_from(&fixture_named(LOGGED), &bundle, |_| {}, |_| {}, receipt);
    let report = fixture.verify(&bundle);
    let failed = (report.failures())
        .filter(|c| !matches!(c.reason, Some(FailureReason::NotRun { .. })))
        .map(|c| (c.name.as_str(), c.target.clone()))
        .collect();
    let passed = (report.checks.iter())
        .filter(|c| c.passed && c.name.as_str().starts_with("log."))
        .map(|c| c.name.as_str())
        .collect();
    (failed, passed)
}

/// Each field of a logged round's `transparencyLog`, changed alone and the receipt
/// re-signed with the evaluator key, fails its named log check: the origin (no log key
/// for it: `log.checkpoint`), the round-opened index (`log.roundOpened`), the opening's
/// witness, its checkpoint size and its time (`log.witness`), the witness dropped from a
/// round whose campaign required it (`log.witness`) and the round said not logged
/// (`log.roundOpened`). A changed receipt is no longer the one logged, so `log.receipt`
/// fails too wherever the proofs are read: a forger holding the log key would log the
/// forged receipt, and the field-coverage test does not count that check.
#[test]
fn each_field_of_a_logged_rounds_log_record_changed_alone_fails_its_log_check() {
    // Unchanged, every log check passes: the opening, the receipt, the checkpoints, the
    // pass's measurement, the opening's witness and the pass's, consistency with the log.
    let (failed, passed) = logged(|_| {});
    assert_eq!(failed, Vec::<Failed>::new());
    assert_eq!(
        passed,
        [
            "log.roundOpened",
            "log.receipt",
            "log.checkpoint",
            "log.measurements",
            "log.witness",
            "log.witness",
            "log.consistency"
        ]
    );
    let receipt = ("log.receipt", Some("receipt".to_owned()));
    let witness = |name: &str| ("log.witness", Some(name.to_owned()));
    let cases: [Case; 7] = [
        (
            |p| p["transparencyLog"]["origin"] = json!("referee.example/logx"),
            vec![("log.checkpoint", None)],
        ),
        (
            |p| {
                let index = &mut p["transparencyLog"]["roundOpenedIndex"];
                *index = json!(index.as_u64().expect("an index") + 1);
            },
            vec![
                ("log.roundOpened", Some("round-opened".to_owned())),
                receipt.clone(),
            ],
        ),
        (
            |p| p["transparencyLog"]["openingWitness"] = Value::Null,
            vec![receipt.clone(), ("log.witness", None)],
        ),
        (
            |p| p["transparencyLog"]["openingWitness"]["name"] = json!("witness.examplex"),
            vec![receipt.clone(), witness("witness.examplex")],
        ),
        (
            |p| {
                let size = &mut p["transparencyLog"]["openingWitness"]["checkpointSize"];
                *size = json!(size.as_u64().expect("a size") + 1);
            },
            vec![receipt.clone(), witness("witness.example")],
        ),
        (
            |p| {
                let at = &mut p["transparencyLog"]["openingWitness"]["timestampS"];
                *at = json!(at.as_u64().expect("a time") + 1);
            },
            vec![receipt.clone(), witness("witness.example")],
        ),
        (
            |p| p["transparencyLog"]["status"] = json!("notLogged"),
            vec![("log.roundOpened", None)],
        ),
    ];
    for (edit, expected) in cases {
        let mut record =
            statement(&fixture_named(LOGGED), "receipt.dsse.json")["predicate"].clone();
        edit(&mut record);
        assert_eq!(logged(edit).0, expected, "{}", record["transparencyLog"]);
    }
}

/// A round whose campaign's `[log]` asks it logged and witnessed cannot drop either from
/// its receipt: the opening's witness dropped fails `log.witness`, the round said not
/// logged fails `log.roundOpened`, each naming the campaign's `[log]`.
#[test]
fn a_required_log_or_witness_dropped_from_the_receipt_fails() {
    let fixture = LoggedFixture::of(LOGGED).expect("a logged fixture");
    for (edit, check, expected) in [
        (
            (|p: &mut Value| p["transparencyLog"]["openingWitness"] = Value::Null)
                as fn(&mut Value),
            CheckName::LogWitness,
            FailureReason::Log {
                file: "receipt.dsse.json".into(),
                message: "it records no witness cosignature on the round's opening, but its \
                          campaign's `[log] required` asks one before any entry ran"
                    .into(),
            },
        ),
        (
            |p| p["transparencyLog"] = json!({"status": "notLogged"}),
            CheckName::LogRoundOpened,
            FailureReason::NotLogged {
                round: 1,
                why: "its receipt records no transparency log, but its campaign's `[log]` \
                      asks every round logged and witnessed"
                    .into(),
            },
        ),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let bundle = dir.path().join("round");
        forge_from(&fixture_named(LOGGED), &bundle, |_| {}, |_| {}, edit);
        let report = fixture.verify(&bundle);
        let reason = (report.failures())
            .find(|c| c.name == check)
            .and_then(|c| c.reason.clone());
        assert_eq!(reason, Some(expected));
    }
}

/// A witness the campaign's `[log] witnesses` does not count vouches for nothing, even
/// one the verifier's keyring trusts and whose cosignature is genuine: the evaluator
/// colluding with a second witness (`rogue.example`, its key added to the keyring) has it
/// cosign the opening checkpoint in the proofs and records it as the opening's witness,
/// the receipt re-signed with the evaluator key: `log.witness` fails naming the
/// campaign's witnesses. Each pass's checkpoint, its counted witness's cosignature
/// swapped for the rogue's, fails `log.witness` for that pass.
#[test]
fn a_witness_the_campaign_does_not_count_fails_log_witness() {
    use receipts::keys::{KeyRole, PrivateKey, RoleKey, TrustedKey};
    use receipts::tlog::cosignature::cosign;
    use receipts::tlog::note::Note;
    use receipts::tlog::proof::TlogProof;

    const ROGUE: &str = "rogue.example";
    let fixture = LoggedFixture::of(LOGGED).expect("a logged fixture");
    let rogue = PrivateKey::from_seed(&[0x77; 32]);
    let mut keyring = fixture.keyring.clone();
    keyring
        .add_role_key(RoleKey {
            trusted: TrustedKey {
                key: rogue.public().clone(),
                valid_from: "2026-01-01T00:00:00Z".parse().expect("a time"),
                valid_until: None,
            },
            role: KeyRole::Witness,
            origin: ROGUE.to_owned(),
        })
        .expect("a witness key");
    let record = statement(&fixture_named(LOGGED), "receipt.dsse.json")["predicate"].clone();
    let at = record["transparencyLog"]["openingWitness"]["timestampS"]
        .as_u64()
        .expect("a time");
    // The proofs with `kind`'s checkpoint (`round-opened` or `measurement …`) cosigned by
    // the rogue witness too, or instead of the counted one (`swap`).
    let proofs_with_rogue = |kind: &str, swap: bool| -> Vec<u8> {
        let bytes = std::fs::read(&fixture.proof).expect("the proofs");
        let proofs = TlogProof::parse_all(&bytes).expect("proofs");
        (proofs.into_iter())
            .flat_map(|mut proof| {
                let extra = String::from_utf8(proof.extra.clone().unwrap_or_default());
                if extra.is_ok_and(|e| e.starts_with(kind)) {
                    let mut note = Note::parse(&proof.checkpoint).expect("a checkpoint");
                    if swap {
                        note.signatures.retain(|s| s.name != "witness.example");
                    }
                    let line = cosign(&note.text, ROGUE, &rogue, at).expect("a cosignature");
                    note.signatures.push(line);
                    proof.checkpoint = note.to_bytes();
                }
                proof.to_bytes()
            })
            .collect()
    };
    let failed = |proofs: Vec<u8>, receipt: fn(&mut Value)| {
        let dir = tempfile::tempdir().expect("tempdir");
        let bundle = dir.path().join("round");
        forge_from(&fixture_named(LOGGED), &bundle, |_| {}, |_| {}, receipt);
        std::fs::write(round_proof_path(&bundle), proofs).expect("write the proofs");
        let report = fixture.verify_under(&bundle, &keyring);
        (report.failures())
            .filter(|c| !matches!(c.reason, Some(FailureReason::NotRun { .. })))
            .map(|c| {
                (
                    c.name,
                    c.target.clone(),
                    c.reason.clone().expect("a reason"),
                )
            })
            .collect::<Vec<_>>()
    };
    let witness_failure = |message: &str| FailureReason::Log {
        file: "the round-opened proof's checkpoint".to_owned(),
        message: message.to_owned(),
    };
    // The rogue's cosignature on the opening is genuine: named as the opening's witness,
    // it passes every part of the check but the campaign's count. The re-signed receipt
    // is no longer the one logged (`log.receipt`), which a forger holding the log key
    // would log too.
    let receipt_relogged = |failures: &[(CheckName, Option<String>, FailureReason)]| {
        failures
            .first()
            .map(|(name, target, _)| (*name, target.clone()))
            == Some((CheckName::LogReceipt, Some("receipt".to_owned())))
    };
    let opening = failed(proofs_with_rogue("round-opened", false), |p| {
        p["transparencyLog"]["openingWitness"]["name"] = json!(ROGUE);
    });
    assert!(receipt_relogged(&opening), "{opening:#?}");
    assert_eq!(
        opening[1..],
        [(
            CheckName::LogWitness,
            Some(ROGUE.to_owned()),
            witness_failure(
                "`rogue.example` is not one of the campaign's `[log] witnesses` (witness.example)"
            )
        )]
    );
    // The receipt unchanged, each pass's checkpoint cosigned only by the rogue fails
    // for that pass.
    let pass = failed(proofs_with_rogue("measurement", true), |_| {});
    let pass: Vec<_> = (pass.iter())
        .map(|(name, target, reason)| match reason {
            FailureReason::Log { message, .. } => (*name, target.clone(), message.as_str()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        pass,
        [(
            CheckName::LogWitness,
            Some("pass 0".to_owned()),
            "pass 0's checkpoint carries no cosignature by a counted witness valid at its time"
        )],
    );
}
