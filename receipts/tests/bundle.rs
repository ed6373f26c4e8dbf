//! Sealing and verifying bundles: the happy path, and each way a bundle can be wrong
//! getting its own typed reason (RECEIPTS.md §Verification 1–6).

mod common;

use std::os::unix::fs::symlink;

use common::*;
use receipts::bundle::{
    BundleError, ENVELOPE_FILE, read_statement_digest, seal_bundle, sign_statement,
};
use receipts::dsse::{Envelope, IN_TOTO_PAYLOAD_TYPE, encode_base64};
use receipts::model::{ROUND_PREDICATE_TYPE, Sha256Hex};
use receipts::statement::Statement;
use receipts::verify::{CheckName, FailureReason, VerifyOptions, verify_envelope_and_files};

#[test]
fn seal_then_verify_passes_every_check() {
    let (dir, sealed) = sealed_bundle();
    assert_eq!(sealed.subjects, 4);
    assert_eq!(sealed.envelope_path, dir.path().join(ENVELOPE_FILE));
    let report = verify(dir.path());
    assert!(report.passed(), "{:#?}", report.checks);
    let names: Vec<(&str, Option<&str>)> = report
        .checks
        .iter()
        .map(|c| (c.name.as_str(), c.target.as_deref()))
        .collect();
    assert_eq!(
        names,
        [
            ("envelope.parse", None),
            ("envelope.canonical", None),
            ("envelope.payloadType", None),
            ("envelope.base64", Some("payload")),
            ("envelope.base64", Some("signatures[0].sig")),
            ("signature.length", Some("signatures[0].sig")),
            ("signature.keyid", Some("signatures[0].keyid")),
            ("signature.trusted", None),
            ("statement.parse", None),
            ("statement.type", None),
            ("statement.predicateType", None),
            ("statement.shape", None),
            ("predicate.schema", None),
            ("subject", Some("a.txt")),
            ("subject", Some("entries/0/engine.log")),
            ("subject", Some("entries/0/runs.json")),
            ("subject", Some("inputs/campaign.toml")),
        ]
    );
    assert_eq!(
        report.statement_digest.as_ref(),
        Some(&sealed.statement_digest)
    );
    assert_eq!(report.predicate_type.as_deref(), Some(TEST_PREDICATE_TYPE));
    assert_eq!(report.signed_by, [operator().keyid().to_owned()]);
    assert_eq!(
        read_statement_digest(&sealed.envelope_path).expect("digest"),
        sealed.statement_digest
    );
    // The statement: sorted subjects with sha256 of each file, our predicate.
    let statement = read_statement(dir.path());
    assert_eq!(statement.statement_type, "https://in-toto.io/Statement/v1");
    assert_eq!(statement.subject[0].name, "a.txt");
    assert_eq!(
        statement.subject[0].digest.sha256,
        Sha256Hex::digest(b"alpha\n")
    );
    assert_eq!(statement.predicate["count"], 3);
    // The payload is canonical, and the envelope file too (no trailing newline).
    let envelope = read_envelope(dir.path());
    assert_eq!(envelope.payload, statement.to_payload().expect("canonical"));
    assert_eq!(
        sealed.statement_digest,
        Sha256Hex::digest(&envelope.payload)
    );
    let file = std::fs::read(dir.path().join(ENVELOPE_FILE)).expect("read");
    assert_eq!(file, envelope.to_file_bytes().expect("canonical"));
    // Sealing again replaces the envelope and does not make it a subject.
    let again = seal_bundle(
        dir.path(),
        TEST_PREDICATE_TYPE,
        &statement.predicate,
        &[&operator()],
    )
    .expect("reseal");
    assert_eq!(again.statement_digest, sealed.statement_digest);
}

#[test]
fn two_signers_meet_a_threshold_of_two() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_files(dir.path());
    seal_bundle(
        dir.path(),
        TEST_PREDICATE_TYPE,
        &serde_json::json!({}),
        &[&operator(), &ci(), &stranger()],
    )
    .expect("seals");
    let mut options = options();
    options.threshold = 2;
    let report = verify_envelope_and_files(dir.path(), &keyring(), &options).0;
    assert!(report.passed(), "{:#?}", failures(&report));
    assert_eq!(report.signed_by.len(), 2);
    options.threshold = 3;
    let report = verify_envelope_and_files(dir.path(), &keyring(), &options).0;
    assert_eq!(
        failures(&report),
        [(
            CheckName::Signatures,
            FailureReason::ThresholdNotMet {
                file: ENVELOPE_FILE.into(),
                counted: 2,
                threshold: 3
            }
        )]
    );
}

#[test]
fn untrusted_key_with_a_trusted_keyid_fails() {
    let (dir, _) = sealed_bundle();
    let statement = read_statement(dir.path());
    let mut envelope = sign_statement(&statement, &[&stranger()]).expect("signs");
    envelope.signatures[0].keyid = operator().keyid().to_owned();
    write_envelope(dir.path(), &envelope);
    assert_eq!(
        failures(&verify(dir.path())),
        [(
            CheckName::Signatures,
            FailureReason::NoTrustedSignature {
                file: ENVELOPE_FILE.into(),
                signatures: 1
            }
        )]
    );
}

#[test]
fn trusted_key_with_a_wrong_keyid_fails() {
    let (dir, _) = sealed_bundle();
    let mut envelope = read_envelope(dir.path());
    envelope.signatures[0].keyid = stranger().keyid().to_owned();
    write_envelope(dir.path(), &envelope);
    assert_eq!(
        failures(&verify(dir.path())),
        [
            (
                CheckName::Keyid,
                FailureReason::KeyidMismatch {
                    file: ENVELOPE_FILE.into(),
                    field: "signatures[0].keyid".into(),
                    found: stranger().keyid().to_owned(),
                    expected: operator().keyid().to_owned(),
                }
            ),
            (
                CheckName::Signatures,
                FailureReason::NoTrustedSignature {
                    file: ENVELOPE_FILE.into(),
                    signatures: 1
                }
            ),
        ]
    );
}

#[test]
fn non_64_byte_signatures_fail() {
    for length in [0usize, 63, 65, 128] {
        let (dir, _) = sealed_bundle();
        let mut envelope = read_envelope(dir.path());
        envelope.signatures[0].sig.resize(length, 7);
        write_envelope(dir.path(), &envelope);
        assert_eq!(
            failures(&verify(dir.path())),
            [
                (
                    CheckName::SignatureLength,
                    FailureReason::SignatureLength {
                        file: ENVELOPE_FILE.into(),
                        field: "signatures[0].sig".into(),
                        length
                    }
                ),
                (
                    CheckName::Signatures,
                    FailureReason::NoTrustedSignature {
                        file: ENVELOPE_FILE.into(),
                        signatures: 1
                    }
                ),
            ],
            "length {length}"
        );
    }
}

#[test]
fn no_signatures_fail() {
    let (dir, _) = sealed_bundle();
    let mut envelope = read_envelope(dir.path());
    envelope.signatures.clear();
    write_envelope(dir.path(), &envelope);
    assert_eq!(
        failures(&verify(dir.path())),
        [(
            CheckName::Signatures,
            FailureReason::NoSignatures {
                file: ENVELOPE_FILE.into()
            }
        )]
    );
}

#[test]
fn key_outside_its_validity_window_does_not_count() {
    let (dir, _) = sealed_bundle();
    let report = verify_envelope_and_files(
        dir.path(),
        &keyring(),
        &VerifyOptions::at(time("2025-06-01T00:00:00Z")),
    )
    .0;
    assert_eq!(
        failures(&report),
        [(
            CheckName::Signatures,
            FailureReason::KeyOutsideValidity {
                file: ENVELOPE_FILE.into(),
                keyid: operator().keyid().to_owned(),
                at: time("2025-06-01T00:00:00Z")
            }
        )]
    );
}

#[test]
fn swapped_subject_digests_fail() {
    let (dir, _) = sealed_bundle();
    let mut statement = read_statement(dir.path());
    let first = statement.subject[0].digest.clone();
    statement.subject[0].digest = statement.subject[1].digest.clone();
    statement.subject[1].digest = first;
    write_envelope(
        dir.path(),
        &sign_statement(&statement, &[&operator()]).expect("signs"),
    );
    let names: Vec<_> = failures(&verify(dir.path()))
        .into_iter()
        .map(|(name, reason)| match reason {
            FailureReason::DigestMismatch { name: file, .. } => (name, file),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        names,
        [
            (CheckName::Subject, "a.txt".to_owned()),
            (CheckName::Subject, "entries/0/engine.log".to_owned())
        ]
    );
}

#[test]
fn missing_and_extra_files_fail() {
    let (dir, _) = sealed_bundle();
    std::fs::remove_file(dir.path().join("entries/0/runs.json")).expect("rm");
    std::fs::write(dir.path().join("inputs/extra.diff"), b"+x\n").expect("write");
    assert_eq!(
        failures(&verify(dir.path())),
        [
            (
                CheckName::Subject,
                FailureReason::SubjectMissingFile {
                    name: "entries/0/runs.json".into()
                }
            ),
            (
                CheckName::File,
                FailureReason::FileNotInSubjects {
                    name: "inputs/extra.diff".into()
                }
            ),
        ]
    );
}

#[test]
fn symlinks_are_refused_by_seal_and_verify() {
    let (dir, _) = sealed_bundle();
    symlink("/etc/hostname", dir.path().join("link")).expect("symlink");
    match seal_bundle(
        dir.path(),
        TEST_PREDICATE_TYPE,
        &serde_json::json!({}),
        &[&operator()],
    ) {
        Err(BundleError::NotRegularFile { name, kind, .. }) => {
            assert_eq!((name.as_str(), kind), ("link", "symlink"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        failures(&verify(dir.path())),
        [(
            CheckName::File,
            FailureReason::NotRegularFile {
                name: "link".into(),
                kind: "symlink".into()
            }
        )]
    );
}

#[test]
fn a_symlinked_envelope_fails_like_any_symlinked_file() {
    let (dir, _) = sealed_bundle();
    let real = dir.path().join("elsewhere.dsse.json");
    std::fs::rename(dir.path().join(ENVELOPE_FILE), &real).expect("move");
    symlink(&real, dir.path().join(ENVELOPE_FILE)).expect("symlink");
    std::fs::remove_file(&real).ok();
    // A dangling link and a link to a valid envelope fail alike.
    for target_exists in [false, true] {
        if target_exists {
            let (other, _) = sealed_bundle();
            std::fs::copy(other.path().join(ENVELOPE_FILE), &real).expect("copy");
        }
        let report = verify(dir.path());
        assert_eq!(
            (report.checks[0].name, report.checks[0].reason.clone()),
            (
                CheckName::EnvelopeParse,
                Some(FailureReason::NotRegularFile {
                    name: ENVELOPE_FILE.into(),
                    kind: "symlink".into()
                })
            ),
            "target exists: {target_exists}"
        );
        assert!(!report.passed());
    }
}

#[test]
fn bad_subject_names_and_duplicates_fail() {
    let (dir, _) = sealed_bundle();
    let mut statement = read_statement(dir.path());
    let template = statement.subject[0].clone();
    for name in [
        "../escape",
        "/etc/passwd",
        "a//b",
        "./a.txt",
        "a\\b",
        ENVELOPE_FILE,
        "a.txt",
    ] {
        let mut subject = template.clone();
        subject.name = name.to_owned();
        statement.subject.push(subject);
    }
    write_envelope(
        dir.path(),
        &sign_statement(&statement, &[&operator()]).expect("signs"),
    );
    let reasons: Vec<String> = failures(&verify(dir.path()))
        .into_iter()
        .map(|(_, reason)| match reason {
            FailureReason::BadSubjectName { name, rule } => format!("{name}: {rule}"),
            FailureReason::DuplicateSubject { name } => format!("{name}: duplicate"),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        reasons,
        [
            "../escape: `.` or `..` segment",
            "/etc/passwd: absolute path",
            "a//b: empty path segment",
            "./a.txt: `.` or `..` segment",
            "a\\b: contains a backslash",
            "receipt.dsse.json: names the envelope itself",
            "a.txt: duplicate",
        ]
    );
}

#[test]
fn envelope_json_problems_are_typed() {
    let (dir, _) = sealed_bundle();
    let path = dir.path().join(ENVELOPE_FILE);
    let good = std::fs::read_to_string(&path).expect("read");

    std::fs::write(
        &path,
        good.replacen("{\"payload\"", "{\"payloadType\":\"x\",\"payload\"", 1),
    )
    .expect("write");
    let f = failures(&verify(dir.path()));
    assert_eq!(
        f[0],
        (
            CheckName::EnvelopeParse,
            FailureReason::DuplicateKey {
                file: ENVELOPE_FILE.into(),
                path: String::new(),
                key: "payloadType".into()
            }
        )
    );
    assert!(f[1..].iter().all(|(_, r)| matches!(
        r,
        FailureReason::NotRun {
            blocked_by: CheckName::EnvelopeParse
        }
    )));

    std::fs::write(
        &path,
        good.replacen("\"payloadType\"", "\"\\u0070ayloadType\"", 1),
    )
    .expect("write");
    let f = failures(&verify(dir.path()));
    assert_eq!(
        f[0].1,
        FailureReason::NonCanonicalEnvelope {
            file: ENVELOPE_FILE.into()
        }
    );
    assert_eq!(f.len(), 1, "only the form differs: {f:?}");

    let pretty = serde_json::to_string_pretty(
        &serde_json::from_str::<serde_json::Value>(&good).expect("json"),
    )
    .expect("json");
    std::fs::write(&path, pretty).expect("write");
    assert_eq!(
        failures(&verify(dir.path())),
        [(
            CheckName::EnvelopeCanonical,
            FailureReason::NonCanonicalEnvelope {
                file: ENVELOPE_FILE.into()
            }
        )]
    );

    std::fs::write(
        &path,
        good.replacen("\"payloadType\"", "\"PayloadTYPE\":1,\"payloadType\"", 1),
    )
    .expect("write");
    assert!(matches!(
        &failures(&verify(dir.path()))[0].1,
        FailureReason::CaseFoldKey { known, .. } if known == "payloadType"
    ));

    std::fs::remove_file(&path).expect("rm");
    assert!(matches!(
        &failures(&verify(dir.path()))[0],
        (
            CheckName::EnvelopeParse,
            FailureReason::EnvelopeUnreadable { .. }
        )
    ));

    std::fs::write(&path, &good).expect("write");
    let mut small = options();
    small.max_envelope_bytes = 100;
    let report = verify_envelope_and_files(dir.path(), &keyring(), &small).0;
    assert_eq!(
        failures(&report)[0].1,
        FailureReason::EnvelopeTooLarge {
            file: ENVELOPE_FILE.into(),
            size: 101,
            limit: 100
        }
    );
}

#[test]
fn url_safe_or_unpadded_base64_is_not_referees_form() {
    let (dir, _) = sealed_bundle();
    let envelope = read_envelope(dir.path());
    let mut raw = envelope.to_raw();
    raw.payload = raw.payload.trim_end_matches('=').to_owned();
    write_raw(dir.path(), &raw);
    let f = failures(&verify(dir.path()));
    if encode_base64(&envelope.payload).ends_with('=') {
        assert_eq!(
            f,
            [(
                CheckName::Base64,
                FailureReason::NonStandardBase64 {
                    file: ENVELOPE_FILE.into(),
                    field: "payload".into()
                }
            )]
        );
    } else {
        assert!(f.is_empty());
    }
    let mut raw = envelope.to_raw();
    raw.signatures[0].sig.push('!');
    write_raw(dir.path(), &raw);
    assert!(matches!(
        &failures(&verify(dir.path()))[0],
        (CheckName::Base64, FailureReason::BadBase64 { field, .. }) if field == "signatures[0].sig"
    ));
}

#[test]
fn statement_problems_are_typed() {
    let (dir, _) = sealed_bundle();
    let statement = read_statement(dir.path());

    // Wrong payloadType, correctly signed.
    let payload = statement.to_payload().expect("canonical");
    write_envelope(
        dir.path(),
        &Envelope::sign("application/json", payload, &[&operator()]),
    );
    assert_eq!(
        failures(&verify(dir.path())),
        [(
            CheckName::PayloadType,
            FailureReason::PayloadTypeMismatch {
                file: ENVELOPE_FILE.into(),
                found: "application/json".into()
            }
        )]
    );

    // Wrong _type, correctly signed.
    let mut wrong = statement.clone();
    wrong.statement_type = "https://in-toto.io/Statement/v0.1".into();
    write_envelope(
        dir.path(),
        &sign_statement(&wrong, &[&operator()]).expect("signs"),
    );
    assert_eq!(
        failures(&verify(dir.path())),
        [(
            CheckName::StatementType,
            FailureReason::WrongStatementType {
                file: ENVELOPE_FILE.into(),
                found: "https://in-toto.io/Statement/v0.1".into()
            }
        )]
    );

    // An expected predicate type that differs.
    write_envelope(
        dir.path(),
        &sign_statement(&statement, &[&operator()]).expect("signs"),
    );
    let mut expecting = options();
    expecting.expected_predicate_type = Some(ROUND_PREDICATE_TYPE.into());
    assert_eq!(
        failures(&verify_envelope_and_files(dir.path(), &keyring(), &expecting).0),
        [(
            CheckName::PredicateType,
            FailureReason::WrongPredicateType {
                file: ENVELOPE_FILE.into(),
                found: TEST_PREDICATE_TYPE.into(),
                expected: ROUND_PREDICATE_TYPE.into()
            }
        )]
    );

    // A round predicate that does not fit RoundRecord.
    let round = Statement::new(
        statement.subject.clone(),
        ROUND_PREDICATE_TYPE,
        serde_json::json!({"round": 1}),
    );
    write_envelope(
        dir.path(),
        &sign_statement(&round, &[&operator()]).expect("signs"),
    );
    let f = failures(&verify(dir.path()));
    assert_eq!(f.len(), 1);
    assert!(
        matches!(&f[0].1, FailureReason::SchemaInvalid { predicate_type, message, .. }
        if predicate_type == ROUND_PREDICATE_TYPE && message.contains("missing field `campaign`")),
        "{f:?}"
    );

    // A float and a duplicate key inside the signed payload.
    for (text, expected) in [
        (
            payload_text(&statement).replacen("\"count\":3", "\"count\":3.5", 1),
            FailureReason::NonIntegerNumber {
                file: ENVELOPE_FILE.into(),
                path: "/predicate/count".into(),
                value: "3.5".into(),
            },
        ),
        (
            payload_text(&statement).replacen("\"count\":3", "\"count\":3,\"count\":4", 1),
            FailureReason::DuplicateKey {
                file: "receipt.dsse.json payload".into(),
                path: "/predicate".into(),
                key: "count".into(),
            },
        ),
    ] {
        write_envelope(
            dir.path(),
            &Envelope::sign(IN_TOTO_PAYLOAD_TYPE, text.into_bytes(), &[&operator()]),
        );
        let f = failures(&verify(dir.path()));
        assert_eq!(f[0], (CheckName::StatementParse, expected));
    }

    // A key equal to a Statement field up to case.
    let text = payload_text(&statement).replacen("{", "{\"PredicateType\":\"x\",", 1);
    write_envelope(
        dir.path(),
        &Envelope::sign(IN_TOTO_PAYLOAD_TYPE, text.into_bytes(), &[&operator()]),
    );
    assert_eq!(
        failures(&verify(dir.path()))[0],
        (
            CheckName::StatementParse,
            FailureReason::CaseFoldKey {
                file: "receipt.dsse.json payload".into(),
                key: "PredicateType".into(),
                known: "predicateType".into(),
            }
        )
    );

    // A subject with a digest other than sha256.
    let text =
        payload_text(&statement).replacen("{\"sha256\"", "{\"gitCommit\":\"abc\",\"sha256\"", 1);
    write_envelope(
        dir.path(),
        &Envelope::sign(IN_TOTO_PAYLOAD_TYPE, text.into_bytes(), &[&operator()]),
    );
    let f = failures(&verify(dir.path()));
    assert!(
        matches!(&f[0], (CheckName::StatementShape, FailureReason::BadStatement { message, .. }) if message.contains("gitCommit")),
        "{f:?}"
    );
}

fn payload_text(statement: &Statement) -> String {
    String::from_utf8(statement.to_payload().expect("canonical")).expect("utf-8")
}

#[test]
fn seal_refuses_bad_predicates_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_files(dir.path());
    let cases = [
        (TEST_PREDICATE_TYPE, serde_json::json!({"ratio": 0.5})),
        (TEST_PREDICATE_TYPE, serde_json::json!([1])),
        (ROUND_PREDICATE_TYPE, serde_json::json!({"round": 1})),
    ];
    for (predicate_type, predicate) in cases {
        let err = seal_bundle(dir.path(), predicate_type, &predicate, &[&operator()])
            .expect_err("refused");
        assert!(
            matches!(
                err,
                BundleError::Canonical(_) | BundleError::Predicate { .. }
            ),
            "{err:?}"
        );
        assert!(!dir.path().join(ENVELOPE_FILE).exists());
    }
    assert!(matches!(
        seal_bundle(dir.path(), TEST_PREDICATE_TYPE, &serde_json::json!({}), &[]),
        Err(BundleError::NoSigners)
    ));
}

/// A referee predicate type that fits its schema passes `predicate.schema`; the same
/// predicate with a wrong-typed field fails it, named.
#[test]
fn round_opened_predicate_is_schema_checked() {
    let digest = Sha256Hex::digest(b"x").to_string();
    let mut opened = serde_json::json!({
        "round": 2,
        "campaign": {"id": "demo", "digest": digest},
        "minersDigest": digest,
        "previousReceipt": digest,
        "entries": [{"role": "baseline", "miner": null, "patch": null}],
        "seedCommitments": {
            "itemSeed": digest, "orderSeed": digest, "scheduleSeed": digest,
            "correctnessSeed": digest, "promptSalt": digest
        },
        "openedAt": "2026-06-01T12:00:00Z"
    });
    let dir = tempfile::tempdir().expect("tempdir");
    write_files(dir.path());
    let opened_type = receipts::model::ROUND_OPENED_PREDICATE_TYPE;
    seal_bundle(dir.path(), opened_type, &opened, &[&operator()]).expect("fits RoundOpened");
    let report = verify(dir.path());
    assert!(report.passed(), "{:?}", failures(&report));
    assert_eq!(report.predicate_type.as_deref(), Some(opened_type));

    opened["round"] = serde_json::json!("two");
    let statement = Statement::new(read_statement(dir.path()).subject, opened_type, opened);
    write_envelope(
        dir.path(),
        &sign_statement(&statement, &[&operator()]).expect("signs"),
    );
    let f = failures(&verify(dir.path()));
    assert!(
        matches!(&f[..], [(CheckName::PredicateSchema, FailureReason::SchemaInvalid { message, .. })] if message.contains("\"two\"")),
        "{f:?}"
    );
}
