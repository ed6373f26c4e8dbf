//! Interop with Python's securesystemslib (`securesystemslib[crypto]==1.6.0`, through
//! `verifier/tests/python/dsse_interop.py`): Python verifies an envelope referee signed,
//! referee verifies one Python signed, and with the same seed and payload both signatures
//! are byte-identical (Ed25519 is deterministic).
//!
//! It needs an interpreter outside cargo, so it is `#[ignore]`d: `scripts/test` provisions
//! a venv and runs it with `--ignored` and `REFEREE_PYTHON` set. Run that way, it fails
//! when `REFEREE_PYTHON` is unset or lacks the modules — it never skips.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use receipts::dsse::{Envelope, IN_TOTO_PAYLOAD_TYPE};
use receipts::statement::{DigestSet, Statement, Subject};

/// The interpreter named by `REFEREE_PYTHON`; panics when it is unset or cannot import
/// securesystemslib's DSSE and signer modules.
fn python() -> PathBuf {
    let python = match std::env::var_os("REFEREE_PYTHON") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => panic!(
            "REFEREE_PYTHON is not set: point it at a Python with securesystemslib[crypto]==1.6.0, or run scripts/test"
        ),
    };
    let check = Command::new(&python)
        .args([
            "-c",
            "import cryptography, securesystemslib.dsse, securesystemslib.signer",
        ])
        .output()
        .unwrap_or_else(|e| panic!("REFEREE_PYTHON=`{}` does not run: {e}", python.display()));
    assert!(
        check.status.success(),
        "REFEREE_PYTHON=`{}` lacks securesystemslib[crypto]==1.6.0 (run scripts/test): {}",
        python.display(),
        String::from_utf8_lossy(&check.stderr).trim()
    );
    python
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/dsse_interop.py")
}

/// Runs the helper; returns (exit code, stdout).
fn run(python: &Path, args: &[&str]) -> (i32, String) {
    let output = Command::new(python)
        .arg(script())
        .args(args)
        .output()
        .expect("run the Python interpreter");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("ModuleNotFoundError"),
        "securesystemslib[crypto] is not installed for {}: {stderr}",
        python.display()
    );
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).trim().to_owned(),
    )
}

fn payload() -> Vec<u8> {
    Statement::new(
        vec![Subject {
            name: "logs/engine.log".into(),
            digest: DigestSet {
                sha256: receipts::model::Sha256Hex::digest(b"log\n"),
            },
        }],
        TEST_PREDICATE_TYPE,
        serde_json::json!({"scorePpm": 125000, "note": "é ✓"}),
    )
    .to_payload()
    .expect("canonical")
}

#[test]
#[ignore = "needs python with securesystemslib and hdrhistogram: run scripts/test"]
fn interop_securesystemslib_dsse() {
    let python = python();
    let dir = tempfile::tempdir().expect("tempdir");
    let key = operator();
    let seed_hex = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
    let public_hex = key.public().to_hex();

    // Python verifies what referee signed.
    let ours = Envelope::sign(IN_TOTO_PAYLOAD_TYPE, payload(), &[&key]);
    let ours_path = dir.path().join("referee.dsse.json");
    std::fs::write(&ours_path, ours.to_file_bytes().expect("canonical")).expect("write");
    let (code, keyid) = run(
        &python,
        &["verify", ours_path.to_str().expect("utf-8"), &public_hex],
    );
    assert_eq!(code, 0, "Python refused referee's envelope");
    assert_eq!(
        keyid,
        key.keyid(),
        "securesystemslib computes the same keyid"
    );

    // Python refuses it once a payload byte changes.
    let mut tampered = ours.clone();
    tampered.payload[10] ^= 1;
    let tampered_path = dir.path().join("tampered.dsse.json");
    std::fs::write(&tampered_path, tampered.to_file_bytes().expect("canonical")).expect("write");
    let (code, _) = run(
        &python,
        &[
            "verify",
            tampered_path.to_str().expect("utf-8"),
            &public_hex,
        ],
    );
    assert_eq!(code, 1, "Python accepted a tampered envelope");

    // referee verifies what Python signed.
    let payload_path = dir.path().join("payload.json");
    std::fs::write(&payload_path, payload()).expect("write");
    let theirs_path = dir.path().join("python.dsse.json");
    let (code, keyid) = run(
        &python,
        &[
            "sign",
            seed_hex,
            payload_path.to_str().expect("utf-8"),
            theirs_path.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(code, 0, "Python failed to sign");
    assert_eq!(keyid, key.keyid());
    let theirs = Envelope::from_json(&std::fs::read(&theirs_path).expect("read"), 1 << 20)
        .expect("referee reads Python's envelope");
    let verified = theirs
        .verify(std::slice::from_ref(key.public()), 1)
        .expect("referee verifies Python's envelope");
    assert_eq!(verified.len(), 1);

    // Same seed, same payload: byte-identical envelopes' contents and signatures.
    assert_eq!(theirs.payload, ours.payload);
    assert_eq!(theirs.signatures, ours.signatures);
}
