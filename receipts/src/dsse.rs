//! DSSE envelopes (secure-systems-lab/dsse `protocol.md`, `envelope.md`; content/receipts.md
//! §Envelope): the pre-authentication encoding that is signed, strict base64, and the
//! envelope file.
//!
//! Writing is always one form: standard base64 with padding, and the envelope file is
//! RFC 8785 canonical JSON. Reading is tolerant of other tools within the spec's rules:
//! strict JSON (see [`crate::canonical`]), base64 in the standard alphabet and then the
//! URL-safe one, padded or not, but never with non-canonical trailing bits or wrong
//! padding. Whether an envelope is in referee's own form is a separate question, answered
//! by the `verifier` crate's envelope checks: referee's own bundles must be canonical, standard padded base64
//! with keyids equal to the verifying key's; `referee verify --foreign`
//! (`verifier::VerifyOptions::foreign`) accepts exactly what this module reads,
//! and treats each keyid as a hint only.

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::canonical::{self, CanonicalError, StrictJsonError};
use crate::keys::{PrivateKey, PublicKey};

/// The only payloadType referee signs or accepts: an in-toto Statement.
pub const IN_TOTO_PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";

/// Length in bytes of every Ed25519 signature.
pub const SIGNATURE_LENGTH: usize = 64;

const WRITE: GeneralPurpose = base64::engine::general_purpose::STANDARD;

// Padding is optional but, when present, exactly right: text with a `=` is decoded with
// canonical padding required, text without one with none (the base64 crate's
// `Indifferent` mode would also take a partial `XX=` where `XX==` is due).
const READ_PADDED: GeneralPurposeConfig = GeneralPurposeConfig::new()
    .with_decode_allow_trailing_bits(false)
    .with_decode_padding_mode(DecodePaddingMode::RequireCanonical);
const READ_UNPADDED: GeneralPurposeConfig = GeneralPurposeConfig::new()
    .with_decode_allow_trailing_bits(false)
    .with_decode_padding_mode(DecodePaddingMode::RequireNone);
const READ_STANDARD_PADDED: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, READ_PADDED);
const READ_URL_SAFE_PADDED: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, READ_PADDED);
const READ_STANDARD_UNPADDED: GeneralPurpose =
    GeneralPurpose::new(&alphabet::STANDARD, READ_UNPADDED);
const READ_URL_SAFE_UNPADDED: GeneralPurpose =
    GeneralPurpose::new(&alphabet::URL_SAFE, READ_UNPADDED);

/// Errors reading or verifying an envelope. Fields are named as in the JSON
/// (`payload`, `signatures[1].sig`).
#[derive(Debug, thiserror::Error)]
pub enum EnvelopeError {
    /// Not strict JSON, or not an object with string `payload`, `payloadType` and an array
    /// of `signatures`.
    #[error("envelope is not valid strict JSON of the DSSE shape")]
    Json(#[source] StrictJsonError),
    /// An unknown key that differs from a known one only in case (e.g. `PayloadType`):
    /// another parser might read it as the known one.
    #[error("envelope key `{key}` differs from `{known}` only in case")]
    CaseFoldCollision {
        /// The key found.
        key: String,
        /// The known key it collides with.
        known: &'static str,
    },
    /// A field that is not valid base64.
    #[error("envelope field `{field}` is not valid base64: {message}")]
    Base64 {
        /// The field.
        field: String,
        /// The decoder's message.
        message: String,
    },
    /// `payloadType` is not `application/vnd.in-toto+json`.
    #[error("envelope payloadType is `{found}`, expected `application/vnd.in-toto+json`")]
    PayloadType {
        /// The value found.
        found: String,
    },
    /// Fewer distinct trusted keys verified the envelope than the threshold asks.
    #[error("{verified} distinct trusted keys verified the envelope, {threshold} required")]
    ThresholdNotMet {
        /// Distinct keys that verified a signature.
        verified: usize,
        /// The threshold.
        threshold: usize,
    },
}

/// One signature of an envelope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// The signer's keyid, a hint only (DSSE allows it empty). [`Envelope::verify`] ignores
    /// it; the verifier requires it to be the verifying key's keyid unless the
    /// envelope is verified as foreign.
    pub keyid: String,
    /// The raw signature bytes (64 for Ed25519; anything else never verifies).
    pub sig: Vec<u8>,
}

/// A decoded DSSE envelope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    /// How to interpret the payload; for referee always [`IN_TOTO_PAYLOAD_TYPE`].
    pub payload_type: String,
    /// The payload bytes (a Statement's canonical JSON).
    pub payload: Vec<u8>,
    /// Signatures over [`pae`] of `payload_type` and `payload`.
    pub signatures: Vec<Signature>,
}

/// The envelope as it appears in JSON, strings still encoded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawEnvelope {
    /// base64 of the payload.
    pub payload: String,
    /// The payload type.
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    /// The signatures.
    pub signatures: Vec<RawSignature>,
}

/// A signature as it appears in JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawSignature {
    /// The keyid hint (absent reads as empty).
    #[serde(default)]
    pub keyid: String,
    /// base64 of the signature.
    pub sig: String,
}

/// DSSE's pre-authentication encoding: `"DSSEv1" SP len(type) SP type SP len(body) SP
/// body`, lengths in bytes as decimal ASCII (DSSE `protocol.md`). For type
/// `http://example.com/HelloWorld` and body `hello world` it is
/// `DSSEv1 29 http://example.com/HelloWorld 11 hello world`.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload_type.len() + payload.len() + 32);
    out.extend_from_slice(b"DSSEv1 ");
    out.extend_from_slice(payload_type.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload_type.as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload);
    out
}

/// Standard alphabet with padding: the only form referee writes.
pub fn encode_base64(bytes: &[u8]) -> String {
    WRITE.encode(bytes)
}

/// Decodes base64 as content/receipts.md §Envelope reads it: the standard alphabet, then the
/// URL-safe one (never a mix); padding optional but, when present, exactly right (`AA==`
/// or `AA`, never `AA=` or `AA===`); trailing bits must be zero (so each byte string has
/// one encoding per alphabet and padding choice).
///
/// Errors: the decoder's message for the standard alphabet.
pub fn decode_base64(text: &str) -> Result<Vec<u8>, String> {
    let (standard, url_safe) = if text.contains('=') {
        (READ_STANDARD_PADDED, READ_URL_SAFE_PADDED)
    } else {
        (READ_STANDARD_UNPADDED, READ_URL_SAFE_UNPADDED)
    };
    match standard.decode(text) {
        Ok(bytes) => Ok(bytes),
        Err(error) => url_safe.decode(text).map_err(|_| error.to_string()),
    }
}

impl RawEnvelope {
    /// Parses envelope JSON strictly (at most `limit` bytes): duplicate keys, invalid
    /// UTF-8 and lone surrogates are refused, unknown keys are ignored unless they equal a
    /// known key up to case. Returns the envelope and whether `bytes` are RFC 8785
    /// canonical JSON (told by the same strict pass, see [`canonical::scan_strict`]).
    ///
    /// Errors: [`EnvelopeError::Json`], [`EnvelopeError::CaseFoldCollision`].
    pub fn parse(bytes: &[u8], limit: usize) -> Result<(Self, bool), EnvelopeError> {
        let (value, scan) =
            canonical::from_slice_scanned::<Value>(bytes, limit).map_err(EnvelopeError::Json)?;
        check_case_folds(&value)?;
        let raw = Self::deserialize(&value).map_err(|e| {
            EnvelopeError::Json(StrictJsonError::Shape {
                message: e.to_string(),
            })
        })?;
        Ok((raw, scan.canonical))
    }

    /// Decodes `payload` and every `sig` (see [`decode_base64`]).
    ///
    /// Errors: [`EnvelopeError::Base64`] naming the first bad field.
    pub fn decode(&self) -> Result<Envelope, EnvelopeError> {
        let payload = decode_base64(&self.payload).map_err(|message| EnvelopeError::Base64 {
            field: "payload".to_owned(),
            message,
        })?;
        let signatures = self
            .signatures
            .iter()
            .enumerate()
            .map(|(index, s)| {
                let sig = decode_base64(&s.sig).map_err(|message| EnvelopeError::Base64 {
                    field: format!("signatures[{index}].sig"),
                    message,
                })?;
                Ok(Signature {
                    keyid: s.keyid.clone(),
                    sig,
                })
            })
            .collect::<Result<_, EnvelopeError>>()?;
        Ok(Envelope {
            payload_type: self.payload_type.clone(),
            payload,
            signatures,
        })
    }
}

/// Refuses unknown keys that case-fold to a known key, at the top level and in each
/// signature (content/receipts.md, Verification step 1).
fn check_case_folds(value: &Value) -> Result<(), EnvelopeError> {
    let check = |object: &serde_json::Map<String, Value>, known: &[&'static str]| {
        match canonical::case_fold_collision(object.keys().map(String::as_str), known) {
            Some((key, known)) => Err(EnvelopeError::CaseFoldCollision { key, known }),
            None => Ok(()),
        }
    };
    if let Value::Object(top) = value {
        check(top, &["payload", "payloadType", "signatures"])?;
        if let Some(Value::Array(signatures)) = top.get("signatures") {
            for signature in signatures {
                if let Value::Object(object) = signature {
                    check(object, &["keyid", "sig"])?;
                }
            }
        }
    }
    Ok(())
}

impl Envelope {
    /// Signs `payload` as `payload_type` with every signer (one signature each, keyid =
    /// the signer's securesystemslib keyid).
    pub fn sign(payload_type: &str, payload: Vec<u8>, signers: &[&PrivateKey]) -> Self {
        let message = pae(payload_type, &payload);
        let signatures = signers
            .iter()
            .map(|key| Signature {
                keyid: key.keyid().to_owned(),
                sig: key.sign(&message).to_vec(),
            })
            .collect();
        Self {
            payload_type: payload_type.to_owned(),
            payload,
            signatures,
        }
    }

    /// The JSON form with base64 fields encoded (standard alphabet, padded).
    pub fn to_raw(&self) -> RawEnvelope {
        RawEnvelope {
            payload: encode_base64(&self.payload),
            payload_type: self.payload_type.clone(),
            signatures: self
                .signatures
                .iter()
                .map(|s| RawSignature {
                    keyid: s.keyid.clone(),
                    sig: encode_base64(&s.sig),
                })
                .collect(),
        }
    }

    /// The envelope file bytes: RFC 8785 canonical JSON of [`Envelope::to_raw`], no
    /// trailing newline.
    ///
    /// Errors: [`CanonicalError`] (not expected: the envelope holds only strings).
    pub fn to_file_bytes(&self) -> Result<Vec<u8>, CanonicalError> {
        canonical::to_canonical_vec(&self.to_raw())
    }

    /// Reads an envelope file of any DSSE tool, tolerantly (see the module docs).
    ///
    /// Errors: [`EnvelopeError::Json`], [`EnvelopeError::CaseFoldCollision`],
    /// [`EnvelopeError::Base64`].
    pub fn from_json(bytes: &[u8], limit: usize) -> Result<Self, EnvelopeError> {
        RawEnvelope::parse(bytes, limit)?.0.decode()
    }

    /// Verifies the envelope as any DSSE verifier would: payloadType must be
    /// [`IN_TOTO_PAYLOAD_TYPE`]; each signature is checked with `verify_strict` against
    /// every key (keyids are hints only); returns the distinct keys that verified, in
    /// `keys` order, when there are at least `threshold` of them.
    ///
    /// Errors: [`EnvelopeError::PayloadType`], [`EnvelopeError::ThresholdNotMet`] (also
    /// when `threshold` is 0: zero signatures never verify).
    pub fn verify<'k>(
        &self,
        keys: &'k [PublicKey],
        threshold: usize,
    ) -> Result<Vec<&'k PublicKey>, EnvelopeError> {
        if self.payload_type != IN_TOTO_PAYLOAD_TYPE {
            return Err(EnvelopeError::PayloadType {
                found: self.payload_type.clone(),
            });
        }
        let message = pae(&self.payload_type, &self.payload);
        let verified: Vec<&PublicKey> = keys
            .iter()
            .filter(|key| {
                self.signatures
                    .iter()
                    .any(|s| signed_by(&message, &s.sig, key))
            })
            .collect();
        if verified.len() < threshold.max(1) {
            return Err(EnvelopeError::ThresholdNotMet {
                verified: verified.len(),
                threshold: threshold.max(1),
            });
        }
        Ok(verified)
    }
}

/// Whether `sig` is `key`'s Ed25519 signature over the PAE `message`, checked with
/// `verify_strict` (content/receipts.md, Keys). The one signature check of referee: the
/// verifier's reported check and [`Envelope::verify`] both call it.
pub fn signed_by(message: &[u8], sig: &[u8], key: &PublicKey) -> bool {
    key.verify_strict(message, sig)
}
