//! Sealing and verifying bundles: the happy path, and each way a bundle can be wrong
//! getting its own typed reason (content/receipts.md §Verification 1–6).

use std::os::unix::fs::symlink;

use crate::common::*;
use receipts::bundle::{
    BundleError, ENVELOPE_FILE, read_statement_digest, seal_bundle, sign_statement,
};
use receipts::dsse::{Envelope, IN_TOTO_PAYLOAD_TYPE, encode_base64};
use receipts::model::{ROUND_PREDICATE_TYPE, Sha256Hex};
use receipts::statement::Statement;
use verifier::{CheckName, FailureReason, VerifyOptions, verify_envelope_and_files};

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
                signatures: 1,
                keyids: vec![operator().keyid().to_owned()],
            }
        )]
    );
}

/// A signature valid under a trusted key whose keyid hint is another key's (or empty):
/// referee's own bundles refuse it with the hint named, and it does not count; verified
/// as foreign it counts and no keyid check is recorded (before: "none of the 1
/// signatures verifies", which was not so, with a keyid-mismatch message).
#[test]
fn trusted_key_with_a_wrong_keyid_fails() {
    let (dir, _) = sealed_bundle();
    let foreign = VerifyOptions {
        foreign: true,
        ..options()
    };
    for hint in [stranger().keyid().to_owned(), String::new()] {
        let mut envelope = read_envelope(dir.path());
        envelope.signatures[0].keyid = hint.clone();
        write_envelope(dir.path(), &envelope);
        let report = verify(dir.path());
        assert_eq!(
            failures(&report),
            [
                (
                    CheckName::Keyid,
                    FailureReason::KeyidHintDiffers {
                        file: ENVELOPE_FILE.into(),
                        field: "signatures[0].keyid".into(),
                        keyid: operator().keyid().to_owned(),
                        hint: hint.clone(),
                    }
                ),
                (
                    CheckName::Signatures,
                    FailureReason::ThresholdNotMet {
                        file: ENVELOPE_FILE.into(),
                        counted: 0,
                        threshold: 1
                    }
                ),
            ]
        );
        let keyid_check = report
            .checks
            .iter()
            .find(|c| c.name == CheckName::Keyid)
            .expect("a keyid check");
        assert_eq!(keyid_check.target.as_deref(), Some("signatures[0].keyid"));
        assert_eq!(
            keyid_check.reason.as_ref().expect("reason").to_string(),
            format!(
                "`receipt.dsse.json` field `signatures[0].keyid`: signature valid under key \
                 `{}`; keyid hint `{hint}` differs",
                operator().keyid()
            )
        );
        assert!(report.signed_by.is_empty());

        let report = verify_envelope_and_files(dir.path(), &keyring(), &foreign).0;
        assert!(report.passed(), "{:?}", failures(&report));
        assert_eq!(report.signed_by, [operator().keyid().to_owned()]);
        assert!(report.checks.iter().all(|c| c.name != CheckName::Keyid));
    }
}

/// Two trusted signers, the second with the first's keyid as its hint: by default only
/// the first counts (threshold 2 not met, the second's hint named); as foreign both do.
#[test]
fn a_wrong_hint_does_not_count_toward_the_threshold_unless_foreign() {
    let (dir, _) = sealed_bundle();
    let statement = read_statement(dir.path());
    let mut envelope = sign_statement(&statement, &[&operator(), &ci()]).expect("signs");
    envelope.signatures[1].keyid = operator().keyid().to_owned();
    write_envelope(dir.path(), &envelope);
    let mut two = options();
    two.threshold = 2;
    let report = verify_envelope_and_files(dir.path(), &keyring(), &two).0;
    assert_eq!(
        failures(&report),
        [
            (
                CheckName::Keyid,
                FailureReason::KeyidHintDiffers {
                    file: ENVELOPE_FILE.into(),
                    field: "signatures[1].keyid".into(),
                    keyid: ci().keyid().to_owned(),
                    hint: operator().keyid().to_owned(),
                }
            ),
            (
                CheckName::Signatures,
                FailureReason::ThresholdNotMet {
                    file: ENVELOPE_FILE.into(),
                    counted: 1,
                    threshold: 2
                }
            ),
        ]
    );
    two.foreign = true;
    let report = verify_envelope_and_files(dir.path(), &keyring(), &two).0;
    assert!(report.passed(), "{:?}", failures(&report));
    assert_eq!(
        report.signed_by,
        [operator().keyid().to_owned(), ci().keyid().to_owned()]
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
                        signatures: 1,
                        keyids: vec![operator().keyid().to_owned()],
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

/// Standard base64 rewritten as another tool might: URL-safe alphabet, no padding.
fn url_safe_unpadded(text: &str) -> String {
    text.replace('+', "-")
        .replace('/', "_")
        .trim_end_matches('=')
        .to_owned()
}

/// Another tool's envelope (pretty-printed JSON, URL-safe unpadded base64, its own keyid
/// hint) over a payload a trusted key signed: refused in referee's strict form with each
/// difference named, accepted with `foreign` (no `envelope.canonical` or
/// `signature.keyid` check); wrong padding and non-canonical trailing bits are still
/// refused then.
#[test]
fn foreign_envelopes_are_read_as_dsse_allows() {
    let (dir, _) = sealed_bundle();
    let envelope = read_envelope(dir.path());
    let path = dir.path().join(ENVELOPE_FILE);
    let hint = "other-tool:key-1";
    let mut raw = envelope.to_raw();
    raw.payload = url_safe_unpadded(&raw.payload);
    raw.signatures[0].sig = url_safe_unpadded(&raw.signatures[0].sig);
    raw.signatures[0].keyid = hint.into();
    std::fs::write(&path, serde_json::to_string_pretty(&raw).expect("json")).expect("write");

    let file = || ENVELOPE_FILE.to_owned();
    let mut expected = vec![(
        CheckName::EnvelopeCanonical,
        FailureReason::NonCanonicalEnvelope { file: file() },
    )];
    if raw.payload != encode_base64(&envelope.payload) {
        expected.push((
            CheckName::Base64,
            FailureReason::NonStandardBase64 {
                file: file(),
                field: "payload".into(),
            },
        ));
    }
    expected.extend([
        (
            CheckName::Base64,
            FailureReason::NonStandardBase64 {
                file: file(),
                field: "signatures[0].sig".into(),
            },
        ),
        (
            CheckName::Keyid,
            FailureReason::KeyidHintDiffers {
                file: file(),
                field: "signatures[0].keyid".into(),
                keyid: operator().keyid().to_owned(),
                hint: hint.into(),
            },
        ),
        (
            CheckName::Signatures,
            FailureReason::ThresholdNotMet {
                file: file(),
                counted: 0,
                threshold: 1,
            },
        ),
    ]);
    assert_eq!(failures(&verify(dir.path())), expected);

    let foreign = VerifyOptions {
        foreign: true,
        ..options()
    };
    let report = verify_envelope_and_files(dir.path(), &keyring(), &foreign).0;
    assert!(report.passed(), "{:?}", failures(&report));
    let names: Vec<(&str, Option<&str>)> = report
        .checks
        .iter()
        .map(|c| (c.name.as_str(), c.target.as_deref()))
        .collect();
    assert_eq!(
        names,
        [
            ("envelope.parse", None),
            ("envelope.payloadType", None),
            ("envelope.base64", Some("payload")),
            ("envelope.base64", Some("signatures[0].sig")),
            ("signature.length", Some("signatures[0].sig")),
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
    assert_eq!(report.signed_by, [operator().keyid().to_owned()]);

    // Still refused as foreign: a partial padding, too much padding, a set trailing bit.
    let standard = envelope.to_raw().signatures[0].sig.clone();
    assert!(
        standard.ends_with("=="),
        "64 bytes end in one leftover byte"
    );
    let data = standard.trim_end_matches('=');
    let (head, last) = data.split_at(data.len() - 1);
    const ALPHABET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let last = ALPHABET.find(last).expect("standard alphabet");
    assert_eq!(
        last & 0xf,
        0,
        "the low 4 bits of the last symbol are padding bits"
    );
    let bumped = last | 1;
    let set_bit = format!("{head}{}==", &ALPHABET[bumped..=bumped]);
    for sig in [format!("{data}="), format!("{data}==="), set_bit] {
        let mut raw = envelope.to_raw();
        raw.signatures[0].sig = sig.clone();
        std::fs::write(&path, serde_json::to_string_pretty(&raw).expect("json")).expect("write");
        let report = verify_envelope_and_files(dir.path(), &keyring(), &foreign).0;
        assert_eq!(
            failures(&report)[0],
            (
                CheckName::Base64,
                FailureReason::BadBase64 {
                    file: file(),
                    field: "signatures[0].sig".into(),
                    message: receipts::dsse::decode_base64(&sig).expect_err("refused"),
                }
            ),
            "{sig}"
        );
    }
}

/// The round-opened predicate used by the canonical-payload and schema tests.
fn round_opened_predicate() -> serde_json::Value {
    let digest = Sha256Hex::digest(b"x").to_string();
    serde_json::json!({
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
    })
}

/// A validly signed payload of one of referee's own predicate types that is not its
/// RFC 8785 canonical form (pretty-printed, or a needless escape) fails
/// `statement.canonical`, foreign or not; the same bytes with another tool's predicate
/// type pass (before: both passed).
#[test]
fn non_canonical_payloads_of_referees_types_are_refused() {
    use receipts::model::{ROUND_OPENED_PREDICATE_TYPE, ROUND_PREDICATE_TYPE_V1};

    let (dir, _) = sealed_bundle();
    let subject = read_statement(dir.path()).subject;
    let foreign = VerifyOptions {
        foreign: true,
        ..options()
    };
    let sign = |payload: Vec<u8>| {
        write_envelope(
            dir.path(),
            &Envelope::sign(IN_TOTO_PAYLOAD_TYPE, payload, &[&operator()]),
        );
    };

    let opened = Statement::new(
        subject.clone(),
        ROUND_OPENED_PREDICATE_TYPE,
        round_opened_predicate(),
    );
    let canonical = payload_text(&opened);
    let pretty = serde_json::to_vec_pretty(&opened).expect("json");
    let escaped = canonical.replacen("\"demo\"", "\"d\\u0065mo\"", 1);
    assert_ne!(escaped, canonical);
    for payload in [pretty, escaped.into_bytes()] {
        sign(payload);
        let expected = [(
            CheckName::StatementCanonical,
            FailureReason::NonCanonicalPayload {
                file: ENVELOPE_FILE.into(),
                predicate_type: ROUND_OPENED_PREDICATE_TYPE.into(),
            },
        )];
        assert_eq!(failures(&verify(dir.path())), expected);
        let report = verify_envelope_and_files(dir.path(), &keyring(), &foreign).0;
        assert_eq!(failures(&report), expected);
        assert_eq!(
            expected[0].1.to_string(),
            "`receipt.dsse.json` payload is not canonical JSON (RFC 8785), which \
             `https://referee.dev/predicates/round-opened/v4` requires"
        );
    }

    // The canonical bytes pass, the new check recorded right after the parse.
    sign(canonical.into_bytes());
    let report = verify(dir.path());
    assert!(report.passed(), "{:?}", failures(&report));
    let names: Vec<&str> = report.checks.iter().map(|c| c.name.as_str()).collect();
    let at = names
        .iter()
        .position(|n| *n == "statement.parse")
        .expect("parse");
    assert_eq!(names[at + 1], "statement.canonical");

    // A round v1 payload: the same rule (its schema failure is reported too).
    let round = Statement::new(
        subject.clone(),
        ROUND_PREDICATE_TYPE_V1,
        serde_json::json!({"round": 1}),
    );
    sign(serde_json::to_vec_pretty(&round).expect("json"));
    let f = failures(&verify(dir.path()));
    assert_eq!(
        f[0],
        (
            CheckName::StatementCanonical,
            FailureReason::NonCanonicalPayload {
                file: ENVELOPE_FILE.into(),
                predicate_type: ROUND_PREDICATE_TYPE_V1.into(),
            }
        )
    );
    assert_eq!(f.len(), 2, "{f:?}");
    assert_eq!(f[1].0, CheckName::PredicateSchema);

    // Another tool's predicate type need not be canonical, and gets no such check.
    let other = Statement::new(
        subject,
        TEST_PREDICATE_TYPE,
        serde_json::json!({"note": "pretty", "count": 3}),
    );
    sign(serde_json::to_vec_pretty(&other).expect("json"));
    let report = verify(dir.path());
    assert!(report.passed(), "{:?}", failures(&report));
    assert!(
        report
            .checks
            .iter()
            .all(|c| c.name != CheckName::StatementCanonical)
    );
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
        // `-0` is read as a float; a number no double holds is not JSON to serde_json.
        (
            payload_text(&statement).replacen("\"count\":3", "\"count\":-0", 1),
            FailureReason::NonIntegerNumber {
                file: ENVELOPE_FILE.into(),
                path: "/predicate/count".into(),
                value: "-0.0".into(),
            },
        ),
        (
            payload_text(&statement).replacen("\"count\":3", "\"count\":1e400", 1),
            FailureReason::InvalidJson {
                file: "receipt.dsse.json payload".into(),
                message: serde_json::from_str::<serde_json::Value>(
                    &payload_text(&statement).replacen("\"count\":3", "\"count\":1e400", 1),
                )
                .unwrap_err()
                .to_string(),
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
    // Named as from the parsed value: no byte position.
    assert!(
        matches!(&f[0], (_, FailureReason::BadStatement { message, .. }) if !message.contains(" at line ")),
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
    let mut opened = round_opened_predicate();
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
