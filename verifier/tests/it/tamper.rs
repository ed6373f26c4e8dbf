//! Tamper property tests: flipping any one byte of the payload, of a signature, of any
//! artifact or of the envelope file makes verification fail with the matching reason
//! (issue 2, Tests; content/receipts.md §Keys: referee is strict about its own bundles).

use crate::common::*;
use proptest::prelude::*;
use receipts::bundle::ENVELOPE_FILE;
use verifier::{CheckName, FailureReason};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 64,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    /// Any artifact byte: exactly that file's subject check fails, with a digest mismatch.
    #[test]
    fn flipping_an_artifact_byte_names_the_file(file in 0..FILES.len(), position in any::<prop::sample::Index>(), mask in 1u8..=255) {
        let (dir, _) = sealed_bundle();
        let (name, bytes) = FILES[file];
        let mut changed = bytes.to_vec();
        let at = position.index(changed.len());
        changed[at] ^= mask;
        std::fs::write(dir.path().join(name), &changed).expect("write");
        let failed = failures(&verify(dir.path()));
        prop_assert_eq!(failed.len(), 1);
        prop_assert!(matches!(&failed[0], (CheckName::Subject, FailureReason::DigestMismatch { name: n, .. }) if n == name), "{:?}", failed);
    }

    /// Any payload byte, re-encoded with the original signature: no trusted signature.
    #[test]
    fn flipping_a_payload_byte_breaks_the_signature(position in any::<prop::sample::Index>(), mask in 1u8..=255) {
        let (dir, _) = sealed_bundle();
        let mut envelope = read_envelope(dir.path());
        let at = position.index(envelope.payload.len());
        envelope.payload[at] ^= mask;
        write_envelope(dir.path(), &envelope);
        let failed = failures(&verify(dir.path()));
        prop_assert!(failed.contains(&(CheckName::Signatures, FailureReason::NoTrustedSignature { file: ENVELOPE_FILE.into(), signatures: 1, keyids: vec![operator().keyid().to_owned()] })), "{:?}", failed);
    }

    /// Any signature byte: no trusted signature, and nothing else is blamed.
    #[test]
    fn flipping_a_signature_byte_breaks_the_signature(position in 0usize..64, mask in 1u8..=255) {
        let (dir, _) = sealed_bundle();
        let mut envelope = read_envelope(dir.path());
        envelope.signatures[0].sig[position] ^= mask;
        write_envelope(dir.path(), &envelope);
        let failed = failures(&verify(dir.path()));
        prop_assert_eq!(failed, vec![(CheckName::Signatures, FailureReason::NoTrustedSignature { file: ENVELOPE_FILE.into(), signatures: 1, keyids: vec![operator().keyid().to_owned()] })]);
    }

    /// Any byte of the envelope file itself: verification fails, and the first failure
    /// is an envelope check whose reason names `receipt.dsse.json`.
    #[test]
    fn flipping_an_envelope_file_byte_names_the_envelope(position in any::<prop::sample::Index>(), mask in 1u8..=255) {
        let (dir, _) = sealed_bundle();
        let path = dir.path().join(ENVELOPE_FILE);
        let mut bytes = std::fs::read(&path).expect("read");
        let at = position.index(bytes.len());
        bytes[at] ^= mask;
        std::fs::write(&path, &bytes).expect("write");
        let report = verify(dir.path());
        prop_assert!(!report.passed());
        let first = report.failures().next().expect("a failure");
        let reason = first.reason.as_ref().expect("reason").to_string();
        prop_assert!(reason.contains(ENVELOPE_FILE), "byte {} ^ {:#x}: {:?} {}", at, mask, first.name, reason);
        prop_assert!(first.name != CheckName::Subject && first.name != CheckName::File);
    }
}

/// Every position of the envelope file, with three masks (low bit, ASCII case bit, high
/// bit): not one change verifies.
#[test]
fn every_envelope_byte_matters() {
    let (dir, _) = sealed_bundle();
    let path = dir.path().join(ENVELOPE_FILE);
    let good = std::fs::read(&path).expect("read");
    for at in 0..good.len() {
        for mask in [0x01u8, 0x20, 0x80] {
            let mut bytes = good.clone();
            bytes[at] ^= mask;
            std::fs::write(&path, &bytes).expect("write");
            let report = verify(dir.path());
            let first = report
                .failures()
                .next()
                .unwrap_or_else(|| panic!("byte {at} ^ {mask:#x} verified"));
            let reason = first.reason.as_ref().expect("reason").to_string();
            assert!(
                reason.contains(ENVELOPE_FILE),
                "byte {at} ^ {mask:#x}: {reason}"
            );
        }
    }
}
