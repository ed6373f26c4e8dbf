//! Ed25519 keys and the keyring (content/receipts.md §Keys).
//!
//! Private keys are `<name>.key` files holding the 32-byte seed as 64 lowercase hex
//! characters, mode 0600; loading one that group or others can read is an error. Public
//! keys are `<name>.pub` files holding the securesystemslib key dict (`keytype`, `scheme`,
//! `keyval.public`) plus its `keyid`, securesystemslib's default keyid. Weak (small-order)
//! public keys are refused wherever a key is loaded, and signatures are only ever checked
//! with `verify_strict`. No key material appears in `Debug`, `Display` or any error.

use crate::fsutil::IoError;
use std::fmt;
use std::path::{Path, PathBuf};

use aho_corasick::AhoCorasick;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use rand_core::{OsRng, RngCore};
use serde::{Deserialize, Serialize};

use crate::canonical::{self, StrictJsonError};
use crate::fsutil::{read_limited, write_atomic};
use crate::model::{Sha256Hex, Timestamp};

/// `keytype` and `scheme` of every referee key (securesystemslib's names).
pub const ED25519: &str = "ed25519";

/// Largest key or keyring file read, in bytes (a keyring of thousands of keys fits).
pub const MAX_KEY_FILE_BYTES: usize = 1 << 20;

/// Errors of key and keyring handling. None carries key material.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Reading or writing a key file failed.
    /// An I/O error on a named file.
    #[error(transparent)]
    Io(#[from] IoError),
    /// A private key path that is a directory.
    #[error("`{path}` is a directory, not a key file")]
    IsADirectory {
        /// The directory.
        path: PathBuf,
    },
    /// A public key (`.pub`, or a public key file's JSON) where a private key is expected.
    #[error("`{path}` is a public key; pass the `.key` file")]
    PublicKeyGiven {
        /// The file.
        path: PathBuf,
    },
    /// A private key file that group or others may read.
    #[error(
        "private key `{path}` has mode {mode:o}: group and others must have no access (chmod 600)"
    )]
    LoosePermissions {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A private key file that is not 64 lowercase hex characters (plus an optional
    /// newline).
    #[error(
        "private key `{path}` is malformed: expected 64 lowercase hex characters (a 32-byte seed)"
    )]
    MalformedPrivateKey {
        /// The file.
        path: PathBuf,
    },
    /// A public key that is not 32 bytes of hex, not a curve point, or a weak
    /// (small-order) point.
    #[error("public key in `{source_name}` at `{field}` is {problem}")]
    BadPublicKey {
        /// The file (or `<input>`).
        source_name: String,
        /// The field, e.g. `keyval.public` or `[2].keyval.public`.
        field: String,
        /// What is wrong: `not 64 hex characters`, `not a curve point`, `a weak (small-order) key`.
        problem: &'static str,
    },
    /// `keytype` or `scheme` other than `ed25519`.
    #[error("`{source_name}` field `{field}` is `{value}`, expected `ed25519`")]
    UnsupportedKeyType {
        /// The file.
        source_name: String,
        /// `keytype` or `scheme`.
        field: String,
        /// The value found.
        value: String,
    },
    /// A `keyid` that is not the securesystemslib keyid of the key.
    #[error("`{source_name}` field `{field}` is `{found}` but the key's keyid is `{expected}`")]
    KeyidMismatch {
        /// The file.
        source_name: String,
        /// The field.
        field: String,
        /// What the file says.
        found: String,
        /// The keyid computed from the key.
        expected: String,
    },
    /// A key or keyring file that is not strict JSON of the expected shape.
    #[error("parsing `{path}`")]
    Json {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: StrictJsonError,
    },
    /// `keygen` refuses to overwrite.
    #[error("`{path}` already exists; refusing to overwrite a key")]
    AlreadyExists {
        /// The existing file.
        path: PathBuf,
    },
    /// The OS random source failed.
    #[error("reading the OS random source: {message}")]
    Random {
        /// The source's message.
        message: String,
    },
    /// A key added to a keyring that already holds it.
    #[error("the keyring already holds key `{keyid}`")]
    DuplicateKey {
        /// Its keyid.
        keyid: String,
    },
    /// A keyring entry whose `role` and `origin` do not fit: a log or witness key
    /// without an origin (or with one that cannot name a note key), or an evaluator key
    /// with one.
    #[error("key `{keyid}`: {problem}")]
    BadRole {
        /// Its keyid.
        keyid: String,
        /// What is wrong.
        problem: &'static str,
    },
    /// A validity window that ends before it starts.
    #[error("key `{keyid}`: validUntil `{valid_until}` is before validFrom `{valid_from}`")]
    BadValidity {
        /// Its keyid.
        keyid: String,
        /// Start.
        valid_from: Timestamp,
        /// End.
        valid_until: Timestamp,
    },
    /// Canonical JSON could not be produced (never for key files in practice).
    #[error("encoding `{path}`")]
    Canonical {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: canonical::CanonicalError,
    },
}

/// securesystemslib's default keyid of an Ed25519 public key: lowercase hex sha256 of the
/// canonical bytes `{"keytype":"ed25519","keyval":{"public":"<64 hex>"},"scheme":"ed25519"}`
/// (content/receipts.md §Envelope). For the RFC 8032 TEST 1 key it is
/// `74c181c7ad8a0855d4b55e44d2ba87aabdddb196832571f15f92fece332e4916`.
pub fn keyid_of(public: &[u8; 32]) -> String {
    // The dict has only fixed ASCII strings and hex, so it is written canonically by hand.
    let dict = format!(
        r#"{{"keytype":"ed25519","keyval":{{"public":"{}"}},"scheme":"ed25519"}}"#,
        hex::encode(public)
    );
    Sha256Hex::digest(dict.as_bytes()).to_string()
}

/// A validated Ed25519 public key (a curve point that is not of small order) with its
/// keyid.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    key: VerifyingKey,
    keyid: String,
}

impl PublicKey {
    /// Validates 32 bytes as a public key; `source_name` and `field` go into errors.
    ///
    /// Errors: [`KeyError::BadPublicKey`] when the bytes are not a curve point or the
    /// point is weak (small order, `VerifyingKey::is_weak`).
    pub fn from_bytes(bytes: &[u8; 32], source_name: &str, field: &str) -> Result<Self, KeyError> {
        let bad = |problem| KeyError::BadPublicKey {
            source_name: source_name.to_owned(),
            field: field.to_owned(),
            problem,
        };
        let key = VerifyingKey::from_bytes(bytes).map_err(|_| bad("not a curve point"))?;
        if key.is_weak() {
            return Err(bad("a weak (small-order) key"));
        }
        Ok(Self::from_verifying_key(key))
    }

    /// Validates 64 lowercase hex characters as a public key.
    ///
    /// Errors: as [`PublicKey::from_bytes`], plus `not 64 lowercase hex characters`.
    pub fn from_hex(text: &str, source_name: &str, field: &str) -> Result<Self, KeyError> {
        let bytes = decode_hex32(text).ok_or_else(|| KeyError::BadPublicKey {
            source_name: source_name.to_owned(),
            field: field.to_owned(),
            problem: "not 64 lowercase hex characters",
        })?;
        Self::from_bytes(&bytes, source_name, field)
    }

    fn from_verifying_key(key: VerifyingKey) -> Self {
        Self {
            keyid: keyid_of(key.as_bytes()),
            key,
        }
    }

    /// The securesystemslib keyid (64 lowercase hex characters).
    pub fn keyid(&self) -> &str {
        &self.keyid
    }

    /// The 32 raw bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        self.key.as_bytes()
    }

    /// The 64 lowercase hex characters of `keyval.public`.
    pub fn to_hex(&self) -> String {
        hex::encode(self.key.as_bytes())
    }

    /// Whether `signature` is a valid Ed25519 signature of `message` under this key, by
    /// `verify_strict` (RFC 8032 with canonical `R` and `S` and no small-order `R`). Any
    /// signature that is not exactly 64 bytes is invalid.
    pub fn verify_strict(&self, message: &[u8], signature: &[u8]) -> bool {
        let Ok(bytes) = <[u8; 64]>::try_from(signature) else {
            return false;
        };
        let signature = ed25519_dalek::Signature::from_bytes(&bytes);
        self.key.verify_strict(message, &signature).is_ok()
    }

    /// The `.pub` file form.
    pub fn to_file(&self) -> PublicKeyFile {
        PublicKeyFile {
            keytype: ED25519.to_owned(),
            scheme: ED25519.to_owned(),
            keyval: KeyVal {
                public: self.to_hex(),
            },
            keyid: self.keyid.clone(),
        }
    }

    /// Reads and validates a `.pub` file.
    ///
    /// Errors: [`KeyError::Io`], [`KeyError::Json`], [`KeyError::UnsupportedKeyType`],
    /// [`KeyError::BadPublicKey`], [`KeyError::KeyidMismatch`].
    pub fn load(path: &Path) -> Result<Self, KeyError> {
        let bytes = read_key_file(path, "reading public key")?;
        let file: PublicKeyFile = canonical::from_slice_strict(&bytes, MAX_KEY_FILE_BYTES)
            .map_err(|source| KeyError::Json {
                path: path.to_owned(),
                source,
            })?;
        file.validate(&path.display().to_string(), "")
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", self.keyid)
    }
}

/// An Ed25519 signing key. Its `Debug` shows only the keyid; the seed is zeroized on drop
/// (ed25519-dalek's `zeroize` feature).
pub struct PrivateKey {
    signing: SigningKey,
    public: PublicKey,
}

impl PrivateKey {
    /// The key of a 32-byte RFC 8032 seed ("secret key").
    pub fn from_seed(seed: &[u8; 32]) -> Self {
        let signing = SigningKey::from_bytes(seed);
        let public = PublicKey::from_verifying_key(signing.verifying_key());
        Self { signing, public }
    }

    /// A fresh key from the OS random source (`rand_core::OsRng`, getrandom).
    ///
    /// Errors: [`KeyError::Random`].
    pub fn generate() -> Result<Self, KeyError> {
        let mut seed = [0u8; 32];
        OsRng
            .try_fill_bytes(&mut seed)
            .map_err(|e| KeyError::Random {
                message: e.to_string(),
            })?;
        let key = Self::from_seed(&seed);
        seed.fill(0);
        Ok(key)
    }

    /// Reads a `.key` file: 64 lowercase hex characters, optionally followed by one `\n`.
    ///
    /// Errors: [`KeyError::IsADirectory`]; [`KeyError::PublicKeyGiven`] for a `.pub`
    /// file; [`KeyError::LoosePermissions`] when group or others have any access (Unix);
    /// [`KeyError::MalformedPrivateKey`]; [`KeyError::Io`].
    pub fn load(path: &Path) -> Result<Self, KeyError> {
        if path.is_dir() {
            return Err(KeyError::IsADirectory {
                path: path.to_owned(),
            });
        }
        if path.extension().is_some_and(|e| e == "pub") {
            return Err(KeyError::PublicKeyGiven {
                path: path.to_owned(),
            });
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let meta = std::fs::metadata(path).map_err(|source| {
                KeyError::Io(IoError {
                    action: "reading private key",
                    path: path.to_owned(),
                    source,
                })
            })?;
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(KeyError::LoosePermissions {
                    path: path.to_owned(),
                    mode,
                });
            }
        }
        let mut bytes = read_key_file(path, "reading private key")?;
        let text = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
        let seed = std::str::from_utf8(text).ok().and_then(decode_hex32);
        bytes.fill(0);
        let mut seed = seed.ok_or_else(|| KeyError::MalformedPrivateKey {
            path: path.to_owned(),
        })?;
        let key = Self::from_seed(&seed);
        seed.fill(0);
        Ok(key)
    }

    /// Its public key.
    pub fn public(&self) -> &PublicKey {
        &self.public
    }

    /// The keyid of its public key.
    pub fn keyid(&self) -> &str {
        self.public.keyid()
    }

    /// The 64-byte Ed25519 signature of `message` (deterministic, RFC 8032).
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.signing.sign(message).to_bytes()
    }

    /// A finder of this key's 32-byte seed in the forms a leak takes (for the scan of
    /// a round's bundle before sealing, content/threat-model.md): the raw bytes, hex in
    /// either case, and base64 in the standard and the URL-safe alphabets at each of the
    /// three byte alignments a seed can have inside a longer encoded stream.
    pub fn seed_forms(&self) -> SeedForms {
        SeedForms::of(&self.signing.to_bytes())
    }

    /// The `.key` file bytes: the seed as hex plus a newline.
    fn to_file_bytes(&self) -> Vec<u8> {
        let mut text = hex::encode(self.signing.to_bytes()).into_bytes();
        text.push(b'\n');
        text
    }
}

impl fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PrivateKey({})", self.public.keyid)
    }
}

/// `keyval` of a securesystemslib key dict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyVal {
    /// 64 lowercase hex characters.
    pub public: String,
}

/// The `.pub` file: the securesystemslib key dict plus its keyid (content/receipts.md §Keys).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicKeyFile {
    /// `ed25519`.
    pub keytype: String,
    /// `ed25519`.
    pub scheme: String,
    /// The public key.
    pub keyval: KeyVal,
    /// securesystemslib's default keyid ([`keyid_of`]).
    pub keyid: String,
}

impl PublicKeyFile {
    /// Checks the dict and returns the key; `prefix` is prepended to field names in
    /// errors (e.g. `[3].` in a keyring).
    ///
    /// Errors: [`KeyError::UnsupportedKeyType`], [`KeyError::BadPublicKey`],
    /// [`KeyError::KeyidMismatch`].
    pub fn validate(&self, source_name: &str, prefix: &str) -> Result<PublicKey, KeyError> {
        for (field, value) in [("keytype", &self.keytype), ("scheme", &self.scheme)] {
            if value != ED25519 {
                return Err(KeyError::UnsupportedKeyType {
                    source_name: source_name.to_owned(),
                    field: format!("{prefix}{field}"),
                    value: value.clone(),
                });
            }
        }
        let key = PublicKey::from_hex(
            &self.keyval.public,
            source_name,
            &format!("{prefix}keyval.public"),
        )?;
        if key.keyid() != self.keyid {
            return Err(KeyError::KeyidMismatch {
                source_name: source_name.to_owned(),
                field: format!("{prefix}keyid"),
                found: self.keyid.clone(),
                expected: key.keyid().to_owned(),
            });
        }
        Ok(key)
    }
}

/// Generates a key pair: `<out>.key` (the seed as hex, mode 0600) and `<out>.pub` (the
/// [`PublicKeyFile`], canonical JSON). Both are written atomically; nothing is
/// overwritten.
///
/// Errors: [`KeyError::AlreadyExists`] when either file exists; [`KeyError::Random`];
/// [`KeyError::Io`].
pub fn generate_key_pair(out: &Path) -> Result<PublicKeyFile, KeyError> {
    let key_path = with_suffix(out, ".key");
    let pub_path = with_suffix(out, ".pub");
    for path in [&key_path, &pub_path] {
        if path.symlink_metadata().is_ok() {
            return Err(KeyError::AlreadyExists { path: path.clone() });
        }
    }
    let key = PrivateKey::generate()?;
    let file = key.public().to_file();
    let pub_bytes = canonical::to_canonical_vec(&file).map_err(|source| KeyError::Canonical {
        path: pub_path.clone(),
        source,
    })?;
    let mut key_bytes = key.to_file_bytes();
    let written = write_atomic(&key_path, &key_bytes, 0o600);
    key_bytes.fill(0);
    written.map_err(|source| {
        KeyError::Io(IoError {
            action: "writing private key",
            path: key_path.clone(),
            source,
        })
    })?;
    write_atomic(&pub_path, &pub_bytes, 0o644).map_err(|source| {
        KeyError::Io(IoError {
            action: "writing public key",
            path: pub_path,
            source,
        })
    })?;
    Ok(file)
}

/// `<out>.key` / `<out>.pub`: the suffix is appended to the whole file name.
fn with_suffix(out: &Path, suffix: &str) -> PathBuf {
    let mut name = out.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn read_key_file(path: &Path, action: &'static str) -> Result<Vec<u8>, KeyError> {
    let bytes = read_limited(path, MAX_KEY_FILE_BYTES).map_err(|source| {
        KeyError::Io(IoError {
            action,
            path: path.to_owned(),
            source,
        })
    })?;
    if bytes.len() > MAX_KEY_FILE_BYTES {
        return Err(KeyError::Json {
            path: path.to_owned(),
            source: StrictJsonError::TooLarge {
                size: bytes.len(),
                limit: MAX_KEY_FILE_BYTES,
            },
        });
    }
    Ok(bytes)
}

/// The base64 characters of `seed` placed `offset` bytes (0–2) into a stream, that depend
/// on the seed's bits alone: the characters that mix in the bytes before it (`offset`
/// bytes make ⌈8·offset/6⌉ such characters) and the last one, which mixes in the bytes
/// after it, are left out.
fn base64_core(engine: &base64::engine::GeneralPurpose, seed: &[u8; 32], offset: usize) -> Vec<u8> {
    let mut placed = vec![0u8; offset];
    placed.extend_from_slice(seed);
    let encoded = engine.encode(&placed).into_bytes();
    let skip = (8 * offset).div_ceil(6);
    encoded[skip..encoded.len() - 1].to_vec()
}

/// A private key's seed (or another 32-byte secret, [`SeedForms::of`]) in the forms of
/// [`PrivateKey::seed_forms`], searched for at once (Aho–Corasick). The patterns are
/// secret material: the finder lives as long as the scan that needs it.
pub struct SeedForms {
    finder: AhoCorasick,
}

impl SeedForms {
    /// A finder of any 32-byte secret `seed` (a key's seed, the evaluator's secret, a
    /// round's sample seed) in the forms of [`PrivateKey::seed_forms`].
    pub fn of(seed: &[u8; 32]) -> Self {
        let mut forms: Vec<Vec<u8>> = vec![
            seed.to_vec(),
            hex::encode(seed).into_bytes(),
            hex::encode_upper(seed).into_bytes(),
        ];
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            forms.extend((0..3).map(|offset| base64_core(engine, seed, offset)));
        }
        SeedForms {
            finder: AhoCorasick::new(&forms).expect("a few fixed-length patterns build"),
        }
    }

    /// Whether `bytes` hold the seed in any of its forms.
    pub fn found_in(&self, bytes: &[u8]) -> bool {
        self.finder.is_match(bytes)
    }
}

impl fmt::Debug for SeedForms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SeedForms(..)")
    }
}

/// Whether `bytes` are what a private key file holds, as [`PrivateKey::load`] reads it:
/// 64 lowercase hex characters (a 32-byte seed), optionally followed by one `\n`. For
/// finding keys where they must not be (the published data directory, see
/// `layout::find_private_keys`); the bytes are not kept.
pub fn is_private_key_seed(bytes: &[u8]) -> bool {
    let text = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    text.len() == 64 && text.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// 64 lowercase hex characters as 32 bytes.
fn decode_hex32(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || !text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(text, &mut out).ok()?;
    Some(out)
}

/// One trusted key of the keyring with its validity window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustedKey {
    /// The key.
    pub key: PublicKey,
    /// First instant its signatures count.
    pub valid_from: Timestamp,
    /// First instant its signatures no longer count; `None` = open-ended.
    pub valid_until: Option<Timestamp>,
}

impl TrustedKey {
    /// Whether the key is valid at `at`: `validFrom ≤ at < validUntil`.
    pub fn is_valid_at(&self, at: Timestamp) -> bool {
        self.valid_from <= at && self.valid_until.is_none_or(|until| at < until)
    }
}

/// What a keyring key may sign; a key is accepted only in its role.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyRole {
    /// Round receipts and round-opened statements (DSSE envelopes). The default, so
    /// keyrings written before roles existed parse unchanged.
    #[default]
    Evaluator,
    /// Checkpoints of the transparency log named by the key's origin.
    Log,
    /// Cosignatures of checkpoints, as the witness named by the key's origin.
    Witness,
}

impl KeyRole {
    fn is_evaluator(&self) -> bool {
        *self == Self::Evaluator
    }
}

/// A trusted log or witness key: the key, its role, and the name its note signatures
/// carry (a log's origin line, a witness's name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleKey {
    /// The key and its validity window.
    pub trusted: TrustedKey,
    /// [`KeyRole::Log`] or [`KeyRole::Witness`].
    pub role: KeyRole,
    /// The log's origin or the witness's name: non-empty, no whitespace, no `+`.
    pub origin: String,
}

/// A keyring entry as stored: the `.pub` dict plus `validFrom`/`validUntil`, and `role`
/// (absent for an evaluator key) and `origin` (log and witness keys only).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KeyringEntryFile {
    keytype: String,
    scheme: String,
    keyval: KeyVal,
    keyid: String,
    valid_from: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    valid_until: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "KeyRole::is_evaluator")]
    role: KeyRole,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    origin: Option<String>,
}

/// The trusted public keys (`data/keyring.json`, content/receipts.md §Keys): a JSON array of
/// `.pub` dicts each with `validFrom` and optional `validUntil` (RFC 3339 UTC). Keys are
/// identified by their public key bytes; a keyid is only a hint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Keyring {
    keys: Vec<TrustedKey>,
    role_keys: Vec<RoleKey>,
}

impl Keyring {
    /// A keyring of `keys`.
    ///
    /// Errors: [`KeyError::DuplicateKey`] when a public key appears twice;
    /// [`KeyError::BadValidity`].
    pub fn new(keys: Vec<TrustedKey>) -> Result<Self, KeyError> {
        let mut ring = Self::default();
        for key in keys {
            ring.add(key)?;
        }
        Ok(ring)
    }

    /// Reads and validates a keyring file (strict JSON).
    ///
    /// Errors: [`KeyError::Io`], [`KeyError::Json`], and per entry the errors of
    /// [`PublicKeyFile::validate`] with the field prefixed by `[<index>].`, plus
    /// [`KeyError::DuplicateKey`] and [`KeyError::BadValidity`].
    pub fn load(path: &Path) -> Result<Self, KeyError> {
        let bytes = read_key_file(path, "reading keyring")?;
        let entries: Vec<KeyringEntryFile> =
            canonical::from_slice_strict(&bytes, MAX_KEY_FILE_BYTES).map_err(|source| {
                KeyError::Json {
                    path: path.to_owned(),
                    source,
                }
            })?;
        let name = path.display().to_string();
        let mut ring = Self::default();
        for (index, entry) in entries.into_iter().enumerate() {
            let file = PublicKeyFile {
                keytype: entry.keytype,
                scheme: entry.scheme,
                keyval: entry.keyval,
                keyid: entry.keyid,
            };
            let key = file.validate(&name, &format!("[{index}]."))?;
            let trusted = TrustedKey {
                key,
                valid_from: entry.valid_from,
                valid_until: entry.valid_until,
            };
            match (entry.role, entry.origin) {
                (KeyRole::Evaluator, None) => ring.add(trusted)?,
                (KeyRole::Evaluator, Some(_)) => {
                    return Err(KeyError::BadRole {
                        keyid: trusted.key.keyid().to_owned(),
                        problem: "an evaluator key has no origin",
                    });
                }
                (role, Some(origin)) => ring.add_role_key(RoleKey {
                    trusted,
                    role,
                    origin,
                })?,
                (_, None) => {
                    return Err(KeyError::BadRole {
                        keyid: trusted.key.keyid().to_owned(),
                        problem: "a log or witness key needs an origin",
                    });
                }
            }
        }
        Ok(ring)
    }

    /// Writes the keyring atomically as canonical JSON, mode 0644.
    ///
    /// Errors: [`KeyError::Io`].
    pub fn save(&self, path: &Path) -> Result<(), KeyError> {
        let evaluator = self.keys.iter().map(|k| (k, KeyRole::Evaluator, None));
        let others = (self.role_keys.iter()).map(|k| (&k.trusted, k.role, Some(k.origin.clone())));
        let entries: Vec<KeyringEntryFile> = evaluator
            .chain(others)
            .map(|(trusted, role, origin)| {
                let file = trusted.key.to_file();
                KeyringEntryFile {
                    keytype: file.keytype,
                    scheme: file.scheme,
                    keyval: file.keyval,
                    keyid: file.keyid,
                    valid_from: trusted.valid_from,
                    valid_until: trusted.valid_until,
                    role,
                    origin,
                }
            })
            .collect();
        let bytes =
            canonical::to_canonical_vec(&entries).map_err(|source| KeyError::Canonical {
                path: path.to_owned(),
                source,
            })?;
        write_atomic(path, &bytes, 0o644).map_err(|source| {
            KeyError::Io(IoError {
                action: "writing keyring",
                path: path.to_owned(),
                source,
            })
        })
    }

    /// Adds an evaluator key.
    ///
    /// Errors: [`KeyError::DuplicateKey`] when the same public key is already present (in
    /// any role); [`KeyError::BadValidity`] when `validUntil` < `validFrom`.
    pub fn add(&mut self, key: TrustedKey) -> Result<(), KeyError> {
        self.check_new(&key)?;
        self.keys.push(key);
        Ok(())
    }

    /// Adds a log or witness key.
    ///
    /// Errors: as [`Keyring::add`], plus [`KeyError::BadRole`] for the evaluator role or
    /// an origin that cannot name a note key (empty, whitespace or `+`).
    pub fn add_role_key(&mut self, key: RoleKey) -> Result<(), KeyError> {
        let bad = |problem| KeyError::BadRole {
            keyid: key.trusted.key.keyid().to_owned(),
            problem,
        };
        if key.role == KeyRole::Evaluator {
            return Err(bad("an evaluator key has no origin"));
        }
        if key.origin.is_empty() || key.origin.chars().any(|c| c.is_whitespace() || c == '+') {
            return Err(bad("origin is empty or holds whitespace or `+`"));
        }
        self.check_new(&key.trusted)?;
        self.role_keys.push(key);
        Ok(())
    }

    /// The trusted key of `role` (log or witness) named `origin`, with these public key
    /// bytes: a log's key is accepted only for its own origin, never as an evaluator's.
    pub fn find_role_key(
        &self,
        role: KeyRole,
        origin: &str,
        public: &[u8; 32],
    ) -> Option<&RoleKey> {
        (self.role_keys.iter())
            .find(|k| k.role == role && k.origin == origin && k.trusted.key.as_bytes() == public)
    }

    /// Every log and witness key, in file order.
    pub fn role_keys(&self) -> &[RoleKey] {
        &self.role_keys
    }

    /// Whether `key` may join the ring: a public key not yet in it, a valid window.
    fn check_new(&self, key: &TrustedKey) -> Result<(), KeyError> {
        let bytes = key.key.as_bytes();
        if self.find(bytes).is_some()
            || self
                .role_keys
                .iter()
                .any(|k| k.trusted.key.as_bytes() == bytes)
        {
            return Err(KeyError::DuplicateKey {
                keyid: key.key.keyid().to_owned(),
            });
        }
        if let Some(until) = key.valid_until
            && until < key.valid_from
        {
            return Err(KeyError::BadValidity {
                keyid: key.key.keyid().to_owned(),
                valid_from: key.valid_from,
                valid_until: until,
            });
        }
        Ok(())
    }

    /// The evaluator key with these public key bytes.
    pub fn find(&self, public: &[u8; 32]) -> Option<&TrustedKey> {
        self.keys.iter().find(|k| k.key.as_bytes() == public)
    }

    /// Every evaluator key, in file order.
    pub fn keys(&self) -> &[TrustedKey] {
        &self.keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a directory or a `.pub` given as a private key got "chmod 600" advice
    /// (issue 17).
    #[test]
    fn a_directory_or_public_key_is_not_called_a_loose_private_key() {
        let dir = std::env::temp_dir().join(format!("referee-keys-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let message = PrivateKey::load(&dir).err().unwrap().to_string();
        assert_eq!(
            message,
            format!("`{}` is a directory, not a key file", dir.display())
        );
        let stem = dir.join("op");
        generate_key_pair(&stem).unwrap();
        let public = dir.join("op.pub");
        let message = PrivateKey::load(&public).err().unwrap().to_string();
        assert_eq!(
            message,
            format!(
                "`{}` is a public key; pass the `.key` file",
                public.display()
            )
        );
        assert!(PrivateKey::load(&dir.join("op.key")).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
