//! Fixtures shared by the bundle tests: fixed keys (RFC 8032 seeds), a keyring, a small
//! bundle directory, and helpers to rewrite a bundle's envelope.
#![allow(dead_code)]

use std::path::Path;

use receipts::bundle::{ENVELOPE_FILE, SealedBundle, seal_bundle};
use receipts::dsse::{Envelope, RawEnvelope};
use receipts::keys::{Keyring, PrivateKey};
use receipts::model::Timestamp;
use receipts::statement::Statement;
use verifier::{CheckName, FailureReason, VerifyOptions, VerifyReport, verify_envelope_and_files};

/// A predicate type with no schema of ours.
pub const TEST_PREDICATE_TYPE: &str = "https://example.com/predicates/test/v1";

/// RFC 8032 TEST 1 key: the trusted operator key.
pub fn operator() -> PrivateKey {
    PrivateKey::from_seed(&seed(
        "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
    ))
}

/// RFC 8032 TEST 2 key: not in the keyring.
pub fn stranger() -> PrivateKey {
    PrivateKey::from_seed(&seed(
        "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
    ))
}

/// RFC 8032 TEST 3 key: a second trusted key (the "CI key").
pub fn ci() -> PrivateKey {
    PrivateKey::from_seed(&seed(
        "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
    ))
}

fn seed(hex_text: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    hex::decode_to_slice(hex_text, &mut out).expect("hex");
    out
}

pub fn time(text: &str) -> Timestamp {
    text.parse().expect("timestamp")
}

/// Operator and CI keys, valid from 2026-01-01 on.
pub fn keyring() -> Keyring {
    testkit::keyring_from(&[&operator(), &ci()], time("2026-01-01T00:00:00Z"))
}

pub fn options() -> VerifyOptions {
    VerifyOptions::at(time("2026-06-01T00:00:00Z"))
}

/// The files of the test bundle.
pub const FILES: &[(&str, &[u8])] = &[
    ("a.txt", b"alpha\n"),
    ("entries/0/engine.log", b"engine started\nhealthy\n"),
    ("entries/0/runs.json", br#"{"throughputMilliRps":12345}"#),
    ("inputs/campaign.toml", b"id = \"demo\"\n"),
];

pub fn write_files(dir: &Path) {
    for (name, bytes) in FILES {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, bytes).expect("write");
    }
}

/// A sealed test bundle signed by the operator.
pub fn sealed_bundle() -> (tempfile::TempDir, SealedBundle) {
    let dir = tempfile::tempdir().expect("tempdir");
    write_files(dir.path());
    let sealed = seal_bundle(
        dir.path(),
        TEST_PREDICATE_TYPE,
        &serde_json::json!({"note": "hand-built", "count": 3}),
        &[&operator()],
    )
    .expect("seals");
    (dir, sealed)
}

pub fn read_envelope(dir: &Path) -> Envelope {
    let bytes = std::fs::read(dir.join(ENVELOPE_FILE)).expect("envelope");
    Envelope::from_json(&bytes, 1 << 24).expect("envelope parses")
}

pub fn write_envelope(dir: &Path, envelope: &Envelope) {
    std::fs::write(
        dir.join(ENVELOPE_FILE),
        envelope.to_file_bytes().expect("canonical"),
    )
    .expect("write");
}

pub fn write_raw(dir: &Path, raw: &RawEnvelope) {
    let bytes = serde_json_canonicalizer::to_vec(raw).expect("canonical");
    std::fs::write(dir.join(ENVELOPE_FILE), bytes).expect("write");
}

pub fn read_statement(dir: &Path) -> Statement {
    serde_json::from_slice(&read_envelope(dir).payload).expect("statement")
}

pub fn verify(dir: &Path) -> VerifyReport {
    verify_envelope_and_files(dir, &keyring(), &options()).0
}

/// The failed checks as (name, reason).
pub fn failures(report: &VerifyReport) -> Vec<(CheckName, FailureReason)> {
    report
        .failures()
        .map(|c| (c.name, c.reason.clone().expect("a failure has a reason")))
        .collect()
}
