//! C2SP tlog-cosignature/v1: a witness's signature line on a checkpoint, signature type
//! `0x04`. Its bytes after the key id are an 8-byte big-endian timestamp (seconds since
//! the Unix epoch, the witness's clock) and an Ed25519 signature over
//! `cosignature/v1\ntime <timestamp>\n` followed by the checkpoint's note text.

use crate::keys::PrivateKey;
use crate::tlog::note::{Note, NoteError, NoteSignature, NoteVerifier, SignatureType};

/// The message a cosignature signs: the header lines and the checkpoint text.
pub fn signed_message(checkpoint_text: &str, timestamp: u64) -> String {
    format!("cosignature/v1\ntime {timestamp}\n{checkpoint_text}")
}

/// A cosignature line by `name` over `checkpoint_text` at `timestamp` (seconds since
/// the Unix epoch).
///
/// Errors: [`NoteError::BadKeyName`].
pub fn cosign(
    checkpoint_text: &str,
    name: &str,
    key: &PrivateKey,
    timestamp: u64,
) -> Result<NoteSignature, NoteError> {
    let verifier = NoteVerifier::new(name, SignatureType::Cosignature, key.public().clone())?;
    let mut bytes = timestamp.to_be_bytes().to_vec();
    bytes.extend_from_slice(&key.sign(signed_message(checkpoint_text, timestamp).as_bytes()));
    Ok(NoteSignature {
        name: name.to_owned(),
        key_id: verifier.key_id(),
        bytes,
    })
}

/// Checks `witness`'s cosignature on `note` (a signed checkpoint) and returns its
/// timestamp (seconds since the Unix epoch); with several lines by the witness, every
/// one must verify and the latest timestamp is returned.
///
/// Errors: [`NoteError::NotSignedBy`] (also for a verifier that is not of type
/// [`SignatureType::Cosignature`]); [`NoteError::BadSignature`] for a line that is not
/// 72 bytes or does not verify.
pub fn verify(note: &Note, witness: &NoteVerifier) -> Result<u64, NoteError> {
    let mut latest = None;
    if witness.kind() == SignatureType::Cosignature {
        for sig in note.signatures_by(witness) {
            let bad = || NoteError::BadSignature {
                name: witness.name().to_owned(),
                key_id: witness.key_id(),
            };
            let (time, signature) = sig.bytes.split_at_checked(8).ok_or_else(bad)?;
            let time = u64::from_be_bytes(time.try_into().map_err(|_| bad())?);
            let message = signed_message(&note.text, time);
            if !witness.key().verify_strict(message.as_bytes(), signature) {
                return Err(bad());
            }
            latest = latest.max(Some(time));
        }
    }
    latest.ok_or_else(|| NoteError::NotSignedBy {
        name: witness.name().to_owned(),
        key_id: witness.key_id(),
    })
}
