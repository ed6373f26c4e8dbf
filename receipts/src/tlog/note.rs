//! C2SP signed-note: a UTF-8 text ending in a newline, a blank line, and signature lines
//! `— <key name> <base64(key id ‖ signature)>`, with the key id and verifier key string
//! of Go's `golang.org/x/mod/sumdb/note`.
//!
//! A key is named by `name` and its 4-byte id `SHA-256(name ‖ 0x0A ‖ type ‖ key)[:4]`
//! (big-endian), where `type` is the signature type: `0x01` for an Ed25519 note signature
//! over the text, `0x04` for a tlog-cosignature ([`crate::tlog::cosignature`]). Its
//! verifier key string is `name+<8 hex id>+base64(type ‖ key)`. Signatures by keys a
//! reader does not know are ignored, as the spec requires; a signature by a known key
//! that does not verify is an error.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};

use crate::keys::{PrivateKey, PublicKey};

/// Largest note read, in bytes (a checkpoint with many cosignatures is a few KB).
pub const MAX_NOTE_BYTES: usize = 1 << 16;

/// Most signature lines a note may carry (Go's `note` package refuses more than 100).
pub const MAX_SIGNATURES: usize = 100;

/// The dash that opens every signature line (U+2014 EM DASH) and the space after it.
const SIGNATURE_PREFIX: &str = "\u{2014} ";

/// Errors of parsing, signing and verifying notes and verifier keys.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoteError {
    /// A note larger than [`MAX_NOTE_BYTES`].
    #[error("note is {bytes} bytes, more than the limit of {limit}")]
    TooLarge {
        /// Its size in bytes.
        bytes: usize,
        /// [`MAX_NOTE_BYTES`].
        limit: usize,
    },
    /// A note that is not a signed note.
    #[error("malformed note: {reason}")]
    Malformed {
        /// What is wrong.
        reason: &'static str,
    },
    /// A key name that is empty or holds whitespace or `+`.
    #[error("key name {name:?} is empty or holds whitespace or `+`")]
    BadKeyName {
        /// The name.
        name: String,
    },
    /// A verifier key string that is not `name+hash+base64(type ‖ key)`.
    #[error("malformed verifier key: {reason}")]
    BadVerifierKey {
        /// What is wrong.
        reason: &'static str,
    },
    /// A verifier key string whose id is not the one its name, type and key give.
    #[error("verifier key `{name}` claims id {claimed:08x}, its key gives {computed:08x}")]
    KeyIdMismatch {
        /// The key name.
        name: String,
        /// The id in the string.
        claimed: u32,
        /// The id computed.
        computed: u32,
    },
    /// No signature line by the expected key.
    #[error("no signature by key `{name}` ({key_id:08x})")]
    NotSignedBy {
        /// The expected key's name.
        name: String,
        /// Its id.
        key_id: u32,
    },
    /// A signature line by the expected key that does not verify.
    #[error("signature by key `{name}` ({key_id:08x}) does not verify")]
    BadSignature {
        /// The key's name.
        name: String,
        /// Its id.
        key_id: u32,
    },
}

/// The signature types of a note key (the byte hashed into its id and prefixed to its key
/// in the verifier key string).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureType {
    /// `0x01`: an Ed25519 signature over the note text.
    Ed25519,
    /// `0x04`: a C2SP tlog-cosignature/v1 (a timestamp and an Ed25519 signature).
    Cosignature,
}

impl SignatureType {
    /// The type byte.
    pub fn byte(self) -> u8 {
        match self {
            Self::Ed25519 => 0x01,
            Self::Cosignature => 0x04,
        }
    }

    fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            0x01 => Some(Self::Ed25519),
            0x04 => Some(Self::Cosignature),
            _ => None,
        }
    }
}

/// Whether `name` may name a key: non-empty, no Unicode whitespace, no `+`.
fn is_valid_name(name: &str) -> bool {
    !name.is_empty() && !name.chars().any(|c| c.is_whitespace() || c == '+')
}

/// The 4-byte key id of Go's `note` package: `SHA-256(name ‖ 0x0A ‖ type ‖ key)[:4]`,
/// read big-endian.
pub fn key_id(name: &str, kind: SignatureType, key: &[u8; 32]) -> u32 {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([b'\n', kind.byte()]);
    h.update(key);
    let digest = h.finalize();
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
}

/// A public note key: its name, signature type, id and Ed25519 key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteVerifier {
    name: String,
    kind: SignatureType,
    key_id: u32,
    key: PublicKey,
}

impl NoteVerifier {
    /// The verifier of `key` under `name` for signatures of `kind`.
    ///
    /// Errors: [`NoteError::BadKeyName`].
    pub fn new(name: &str, kind: SignatureType, key: PublicKey) -> Result<Self, NoteError> {
        if !is_valid_name(name) {
            return Err(NoteError::BadKeyName {
                name: name.to_owned(),
            });
        }
        Ok(Self {
            name: name.to_owned(),
            kind,
            key_id: key_id(name, kind, key.as_bytes()),
            key,
        })
    }

    /// Parses a verifier key string `name+<8 lowercase hex>+base64(type ‖ key)`.
    ///
    /// Errors: [`NoteError::BadKeyName`], [`NoteError::BadVerifierKey`] (shape, base64,
    /// unknown type, key length, weak or invalid point), [`NoteError::KeyIdMismatch`].
    pub fn parse(vkey: &str) -> Result<Self, NoteError> {
        let bad = |reason| NoteError::BadVerifierKey { reason };
        let mut parts = vkey.splitn(3, '+');
        let (Some(name), Some(hash), Some(key)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad("expected name+hash+key"));
        };
        if hash.len() != 8 || !hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(bad("hash is not 8 lowercase hex characters"));
        }
        let claimed = u32::from_str_radix(hash, 16).map_err(|_| bad("hash is not hex"))?;
        let bytes = STANDARD.decode(key).map_err(|_| bad("key is not base64"))?;
        let (&type_byte, key) = bytes.split_first().ok_or(bad("key is empty"))?;
        let kind = SignatureType::from_byte(type_byte).ok_or(bad("unknown signature type"))?;
        let key: [u8; 32] = key.try_into().map_err(|_| bad("key is not 32 bytes"))?;
        let key = PublicKey::from_bytes(&key, "verifier key", "key")
            .map_err(|_| bad("key is not a valid Ed25519 public key"))?;
        let verifier = Self::new(name, kind, key)?;
        if verifier.key_id != claimed {
            return Err(NoteError::KeyIdMismatch {
                name: name.to_owned(),
                claimed,
                computed: verifier.key_id,
            });
        }
        Ok(verifier)
    }

    /// The verifier key string `name+<8 hex>+base64(type ‖ key)`.
    pub fn to_vkey(&self) -> String {
        let mut bytes = vec![self.kind.byte()];
        bytes.extend_from_slice(self.key.as_bytes());
        format!(
            "{}+{:08x}+{}",
            self.name,
            self.key_id,
            STANDARD.encode(bytes)
        )
    }

    /// The key name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The 4-byte key id.
    pub fn key_id(&self) -> u32 {
        self.key_id
    }

    /// The signature type.
    pub fn kind(&self) -> SignatureType {
        self.kind
    }

    /// The Ed25519 key.
    pub fn key(&self) -> &PublicKey {
        &self.key
    }
}

/// One signature line: the key's name and id and the signature bytes after the id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteSignature {
    /// The key name.
    pub name: String,
    /// The key id.
    pub key_id: u32,
    /// The signature (64 bytes for Ed25519, 72 for a cosignature).
    pub bytes: Vec<u8>,
}

impl NoteSignature {
    /// The line `— name base64(id ‖ bytes)\n`.
    pub fn to_line(&self) -> String {
        let mut raw = self.key_id.to_be_bytes().to_vec();
        raw.extend_from_slice(&self.bytes);
        format!("{SIGNATURE_PREFIX}{} {}\n", self.name, STANDARD.encode(raw))
    }
}

/// A signed note: its text (ending in a newline) and its signatures in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The text, ending in `\n`.
    pub text: String,
    /// The signature lines.
    pub signatures: Vec<NoteSignature>,
}

/// Whether `text` is valid note text: non-empty, ending in `\n`, no blank line, and no
/// control character other than `\n`.
fn is_valid_text(text: &str) -> bool {
    text.ends_with('\n')
        && !text.starts_with('\n')
        && !text.contains("\n\n")
        && !text.chars().any(|c| c.is_control() && c != '\n')
}

impl Note {
    /// Parses a signed note: the text up to the last blank line, then one or more
    /// signature lines.
    ///
    /// Errors: [`NoteError::TooLarge`]; [`NoteError::Malformed`] for invalid UTF-8, a
    /// control character, no blank line, a text or signature line that does not follow
    /// the format, no signature or more than [`MAX_SIGNATURES`].
    pub fn parse(bytes: &[u8]) -> Result<Self, NoteError> {
        let bad = |reason| NoteError::Malformed { reason };
        if bytes.len() > MAX_NOTE_BYTES {
            return Err(NoteError::TooLarge {
                bytes: bytes.len(),
                limit: MAX_NOTE_BYTES,
            });
        }
        let all = std::str::from_utf8(bytes).map_err(|_| bad("not UTF-8"))?;
        let split = all
            .rfind("\n\n")
            .ok_or(bad("no blank line before the signatures"))?;
        let (text, sigs) = (&all[..=split], &all[split + 2..]);
        if !is_valid_text(text) {
            return Err(bad(
                "text is empty, has a blank line or a control character",
            ));
        }
        let Some(sigs) = sigs.strip_suffix('\n') else {
            return Err(bad("signatures do not end in a newline"));
        };
        let mut signatures = Vec::new();
        for line in sigs.split('\n') {
            if signatures.len() == MAX_SIGNATURES {
                return Err(bad("too many signatures"));
            }
            signatures.push(parse_signature_line(line)?);
        }
        Ok(Self {
            text: text.to_owned(),
            signatures,
        })
    }

    /// The note's bytes: text, blank line, signature lines.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.text.clone();
        out.push('\n');
        for s in &self.signatures {
            out.push_str(&s.to_line());
        }
        out.into_bytes()
    }

    /// The signatures whose name and id are `verifier`'s.
    pub fn signatures_by<'a>(
        &'a self,
        verifier: &'a NoteVerifier,
    ) -> impl Iterator<Item = &'a NoteSignature> + 'a {
        self.signatures
            .iter()
            .filter(|s| s.name == verifier.name && s.key_id == verifier.key_id)
    }

    /// Checks that `verifier` (an [`SignatureType::Ed25519`] key) signed the text: at
    /// least one signature line by it, and every such line verifies (`verify_strict`).
    ///
    /// Errors: [`NoteError::NotSignedBy`] (also for a verifier of another type),
    /// [`NoteError::BadSignature`].
    pub fn verify(&self, verifier: &NoteVerifier) -> Result<(), NoteError> {
        let mut found = false;
        if verifier.kind == SignatureType::Ed25519 {
            for sig in self.signatures_by(verifier) {
                if !verifier.key.verify_strict(self.text.as_bytes(), &sig.bytes) {
                    return Err(NoteError::BadSignature {
                        name: verifier.name.clone(),
                        key_id: verifier.key_id,
                    });
                }
                found = true;
            }
        }
        if !found {
            return Err(NoteError::NotSignedBy {
                name: verifier.name.clone(),
                key_id: verifier.key_id,
            });
        }
        Ok(())
    }
}

/// Parses `— name base64(id ‖ signature)`.
fn parse_signature_line(line: &str) -> Result<NoteSignature, NoteError> {
    let bad = |reason| NoteError::Malformed { reason };
    let rest = line.strip_prefix(SIGNATURE_PREFIX).ok_or(bad(
        "signature line does not start with an em dash and a space",
    ))?;
    let (name, b64) = rest
        .split_once(' ')
        .ok_or(bad("signature line has no space after the key name"))?;
    if !is_valid_name(name) {
        return Err(bad("signature line has an invalid key name"));
    }
    let raw = STANDARD
        .decode(b64)
        .map_err(|_| bad("signature is not base64"))?;
    if raw.len() < 5 {
        return Err(bad("signature is shorter than a key id and one byte"));
    }
    let (id, bytes) = raw.split_at(4);
    Ok(NoteSignature {
        name: name.to_owned(),
        key_id: u32::from_be_bytes([id[0], id[1], id[2], id[3]]),
        bytes: bytes.to_vec(),
    })
}

/// Signs `text` as `name` with an Ed25519 note signature and returns the signed note.
///
/// Errors: [`NoteError::BadKeyName`]; [`NoteError::Malformed`] for text that is not
/// valid note text (see [`Note::parse`]).
pub fn sign(text: &str, name: &str, key: &PrivateKey) -> Result<Note, NoteError> {
    if !is_valid_text(text) {
        return Err(NoteError::Malformed {
            reason: "text is empty, has a blank line or a control character",
        });
    }
    let verifier = NoteVerifier::new(name, SignatureType::Ed25519, key.public().clone())?;
    Ok(Note {
        text: text.to_owned(),
        signatures: vec![NoteSignature {
            name: name.to_owned(),
            key_id: verifier.key_id,
            bytes: key.sign(text.as_bytes()).to_vec(),
        }],
    })
}
