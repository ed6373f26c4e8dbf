//! A round's beacon value, checked offline (content/verifying.md, Seeds): a drand
//! quicknet value must be sha256 of a BLS signature on its round number that verifies
//! against the chain's public key; a file beacon carries no signature and proves nothing
//! about who chose it, which the result says.

use drand_verify::{G2PubkeyRfc, Pubkey};
use receipts::model::{
    BeaconRecord, BeaconSource, RoundLog, RoundOpened, RoundRecord, Seed32, Timestamp,
};
use sha2::{Digest, Sha256};

use crate::files::recomputed;
use crate::{CheckName, FailureReason, PredicateVersion, VerifyReport};

/// drand quicknet's chain hash (`/info` of the chain), for reference in messages.
pub const QUICKNET_CHAIN_HASH: &str =
    "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971";

/// quicknet's genesis, seconds since the Unix epoch (its `/info`): round 1's time.
pub const QUICKNET_GENESIS_S: i64 = 1_692_803_367;

/// quicknet's period, milliseconds: a round every 3 s.
pub const QUICKNET_PERIOD_MS: u64 = 3_000;

/// The time quicknet round `round` (≥ 1) is produced, milliseconds since the Unix
/// epoch: genesis + period × (round − 1). Before it nobody, the evaluator included,
/// knows the round's value.
pub fn quicknet_round_time_ms(round: u64) -> i64 {
    let period = QUICKNET_PERIOD_MS as i64;
    let since = i64::try_from(round.saturating_sub(1)).unwrap_or(i64::MAX / period);
    QUICKNET_GENESIS_S * 1000 + since.saturating_mul(period)
}

/// drand quicknet's public key: a compressed G2 point (scheme `bls-unchained-g1-rfc9380`).
const QUICKNET_PUBLIC_KEY: [u8; 96] = [
    0x83, 0xcf, 0x0f, 0x28, 0x96, 0xad, 0xee, 0x7e, 0xb8, 0xb5, 0xf0, 0x1f, 0xca, 0xd3, 0x91, 0x22,
    0x12, 0xc4, 0x37, 0xe0, 0x07, 0x3e, 0x91, 0x1f, 0xb9, 0x00, 0x22, 0xd3, 0xe7, 0x60, 0x18, 0x3c,
    0x8c, 0x4b, 0x45, 0x0b, 0x6a, 0x0a, 0x6c, 0x3a, 0xc6, 0xa5, 0x77, 0x6a, 0x2d, 0x10, 0x64, 0x51,
    0x0d, 0x1f, 0xec, 0x75, 0x8c, 0x92, 0x1c, 0xc2, 0x2b, 0x0e, 0x17, 0xe6, 0x3a, 0xaf, 0x4b, 0xcb,
    0x5e, 0xd6, 0x63, 0x04, 0xde, 0x9c, 0xf8, 0x09, 0xbd, 0x27, 0x4c, 0xa7, 0x3b, 0xab, 0x4a, 0xf5,
    0xa6, 0xe9, 0xc7, 0x6a, 0x4b, 0xc0, 0x9e, 0x76, 0xea, 0xe8, 0x99, 0x1e, 0xf5, 0xec, 0xe4, 0x5a,
];

/// What a beacon value that checked out is worth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BeaconTrust {
    /// Its signature verified against the beacon's public key: nobody chose it.
    Signed,
    /// An unsigned source (a file): the value is the evaluator's word.
    Unsigned,
}

/// Why a beacon value does not check out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BeaconError {
    /// A signed source recorded no signature.
    #[error("the {beacon} beacon of round {round} records no signature")]
    MissingSignature {
        /// The beacon's source.
        beacon: &'static str,
        /// The beacon round.
        round: u64,
    },
    /// The signature is not hex, or not a point of the curve.
    #[error("the {beacon} beacon signature of round {round} is malformed: {message}")]
    MalformedSignature {
        /// The beacon's source.
        beacon: &'static str,
        /// The beacon round.
        round: u64,
        /// What is wrong with it.
        message: String,
    },
    /// The signature does not verify on the round against the chain's public key.
    #[error("the {beacon} beacon signature does not verify for round {round}")]
    BadSignature {
        /// The beacon's source.
        beacon: &'static str,
        /// The beacon round.
        round: u64,
    },
    /// The value is not sha256 of the signature.
    #[error(
        "the {beacon} beacon value of round {round} is {recorded}, its signature gives {derived}"
    )]
    ValueMismatch {
        /// The beacon's source.
        beacon: &'static str,
        /// The beacon round.
        round: u64,
        /// The value recorded, hex.
        recorded: String,
        /// sha256 of the signature, hex.
        derived: String,
    },
}

/// Checks `beacon` offline: for drand quicknet, its signature verifies on its round
/// against the chain's public key and its value is sha256 of the signature.
///
/// Errors: a [`BeaconError`] naming what does not hold.
pub fn check_beacon(beacon: &BeaconRecord) -> Result<BeaconTrust, BeaconError> {
    let name = beacon.source.as_str();
    let round = beacon.round;
    match beacon.source {
        BeaconSource::File => Ok(BeaconTrust::Unsigned),
        BeaconSource::DrandQuicknet => {
            let signature_hex =
                beacon
                    .signature
                    .as_deref()
                    .ok_or(BeaconError::MissingSignature {
                        beacon: name,
                        round,
                    })?;
            let malformed = |message: String| BeaconError::MalformedSignature {
                beacon: name,
                round,
                message,
            };
            let signature = hex::decode(signature_hex).map_err(|e| malformed(e.to_string()))?;
            let key = G2PubkeyRfc::from_fixed(QUICKNET_PUBLIC_KEY)
                .map_err(|e| malformed(format!("the pinned public key: {e}")))?;
            let verified = key
                .verify(round, b"", &signature)
                .map_err(|e| malformed(e.to_string()))?;
            if !verified {
                return Err(BeaconError::BadSignature {
                    beacon: name,
                    round,
                });
            }
            let derived = Seed32(Sha256::digest(&signature).into());
            if derived != beacon.value {
                return Err(BeaconError::ValueMismatch {
                    beacon: name,
                    round,
                    recorded: beacon.value.to_hex(),
                    derived: derived.to_hex(),
                });
            }
            Ok(BeaconTrust::Signed)
        }
    }
}

/// `seeds.beaconOrder` (v8; `not applicable` before): a round whose seeds derive from a
/// drand quicknet round was opened before that round was produced, so the evaluator
/// committed its secret and seats without knowing the value. Two targets:
/// `openedAt`, the signed opening's own time (the evaluator's clock: it proves the order
/// only if the evaluator did not backdate it), and `openingWitness`, the witness
/// cosignature on the opening checkpoint (`log.witness` checks it is genuine), which an
/// evaluator cannot backdate: a round opened after seeing the value it likes fails
/// there. A `file` beacon has no round time (`not applicable`), nor has a round without
/// a beacon.
pub(crate) fn check_beacon_order(
    report: &mut VerifyReport,
    record: &RoundRecord,
    opened: Option<&RoundOpened>,
    version: PredicateVersion,
) {
    let name = CheckName::SeedsBeaconOrder;
    if version < PredicateVersion::V8 {
        report.not_applicable(name, None, version.name());
        return;
    }
    let Some(beacon) = &record.beacon else {
        report.not_applicable(name, None, "no beacon");
        return;
    };
    if beacon.source != BeaconSource::DrandQuicknet {
        report.not_applicable(name, None, "a file beacon has no round time");
        return;
    }
    let produced_ms = quicknet_round_time_ms(beacon.round);
    let produced = format!(
        "before {} (drand quicknet round {}'s time)",
        show_ms(produced_ms),
        beacon.round
    );
    let file = record.round_opened.as_str();
    let opened_at = match opened {
        None => Err(FailureReason::NotRun {
            blocked_by: CheckName::RoundOpenedSignature,
        }),
        Some(o) if unix_ms(o.opened_at) < produced_ms => Ok(()),
        Some(o) => Err(recomputed(file, "openedAt", o.opened_at, &produced)),
    };
    report.record(name, Some("openedAt".to_owned()), opened_at);
    let witness = match &record.transparency_log {
        Some(RoundLog::Logged {
            opening_witness: Some(witness),
            ..
        }) => witness,
        _ => {
            report.not_applicable(
                name,
                Some("openingWitness".to_owned()),
                "round opening not witnessed",
            );
            return;
        }
    };
    let witnessed_ms =
        i64::try_from(witness.timestamp_s).map_or(i64::MAX, |s| s.saturating_mul(1000));
    let result = if witnessed_ms < produced_ms {
        Ok(())
    } else {
        Err(recomputed(
            "receipt.dsse.json",
            "transparencyLog.openingWitness.timestampS",
            format!("{} ({})", witness.timestamp_s, show_ms(witnessed_ms)),
            &produced,
        ))
    };
    report.record(name, Some("openingWitness".to_owned()), result);
}

/// `at` in milliseconds since the Unix epoch.
fn unix_ms(at: Timestamp) -> i64 {
    (at.datetime().unix_timestamp_nanos() / 1_000_000) as i64
}

/// `ms` since the Unix epoch (whole seconds here: quicknet's times and cosignatures
/// are) as an RFC 3339 instant, or the number where out of range.
fn show_ms(ms: i64) -> String {
    Timestamp::from_unix_seconds(ms / 1000).map_or_else(|_| format!("{ms} ms"), |t| t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// drand quicknet round 123, as published by the chain
    /// (`/52db9ba7…e971/public/123`; drand-verify's own test vector).
    const ROUND_123_SIGNATURE: &str = "b75c69d0b72a5d906e854e808ba7e2accb1542ac355ae486d591aa9d43765482e26cd02df835d3546d23c4b13e0dfc92";
    /// drand quicknet round 657413 with its published randomness.
    const ROUND_657413_SIGNATURE: &str = "b713718a38ae728dfd477991af2822e08d2f305e47718cef9f7848ce4050e7be41076862b98fad56e91a6b85b89cd97b";
    const ROUND_657413_RANDOMNESS: &str =
        "fc1873a13f3545aeade8401532ef5519920652eee6b0d2b19ca12643b87b3587";

    fn drand(round: u64, signature: &str, value: Seed32) -> BeaconRecord {
        BeaconRecord {
            source: BeaconSource::DrandQuicknet,
            round,
            value,
            signature: Some(signature.to_owned()),
        }
    }

    fn value_of(signature: &str) -> Seed32 {
        Seed32(Sha256::digest(hex::decode(signature).expect("hex")).into())
    }

    #[test]
    fn recorded_drand_quicknet_rounds_verify_offline() {
        let published: Seed32 = ROUND_657413_RANDOMNESS.parse().expect("hex");
        assert_eq!(value_of(ROUND_657413_SIGNATURE), published);
        assert_eq!(
            check_beacon(&drand(657_413, ROUND_657413_SIGNATURE, published)),
            Ok(BeaconTrust::Signed)
        );
        assert_eq!(
            check_beacon(&drand(
                123,
                ROUND_123_SIGNATURE,
                value_of(ROUND_123_SIGNATURE)
            )),
            Ok(BeaconTrust::Signed)
        );
    }

    #[test]
    fn a_changed_round_value_or_signature_fails() {
        let value = value_of(ROUND_123_SIGNATURE);
        assert_eq!(
            check_beacon(&drand(124, ROUND_123_SIGNATURE, value)),
            Err(BeaconError::BadSignature {
                beacon: "drand_quicknet",
                round: 124
            })
        );
        // Another round's genuine signature: a valid point that does not verify here.
        assert!(matches!(
            check_beacon(&drand(123, ROUND_657413_SIGNATURE, value)),
            Err(BeaconError::BadSignature { round: 123, .. })
        ));
        let mut changed = value;
        changed.0[0] ^= 1;
        assert!(matches!(
            check_beacon(&drand(123, ROUND_123_SIGNATURE, changed)),
            Err(BeaconError::ValueMismatch { round: 123, .. })
        ));
        let mut unsigned = drand(123, ROUND_123_SIGNATURE, value);
        unsigned.signature = None;
        assert!(matches!(
            check_beacon(&unsigned),
            Err(BeaconError::MissingSignature { .. })
        ));
        assert!(matches!(
            check_beacon(&drand(123, "zz", value)),
            Err(BeaconError::MalformedSignature { .. })
        ));
    }

    #[test]
    fn a_file_beacon_is_unsigned() {
        let file = BeaconRecord {
            source: BeaconSource::File,
            round: 1,
            value: Seed32([0; 32]),
            signature: None,
        };
        assert_eq!(check_beacon(&file), Ok(BeaconTrust::Unsigned));
    }
}
