//! Receipt bundles (content/receipts.md): a directory holding `receipt.dsse.json`
//! and every file that envelope's Statement names. Sealing digests every regular file of
//! the directory (recursively) into the subjects, signs the Statement and writes the
//! envelope; this is the function the round executor and `referee seal` call.

use crate::fsutil::IoError;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::canonical::CanonicalError;
use crate::dsse::{Envelope, EnvelopeError, IN_TOTO_PAYLOAD_TYPE, RawEnvelope};
use crate::fsutil::{self, read_limited, sync_dir, write_atomic};
use crate::keys::PrivateKey;
use crate::model::Sha256Hex;
use crate::statement::{self, DigestSet, Statement, Subject};

/// File name of the envelope at the root of a bundle; never a subject.
pub const ENVELOPE_FILE: &str = "receipt.dsse.json";

/// Largest envelope file read, in bytes (16 MiB). A round's predicate holds log tails and
/// per-entry summaries, not the logs themselves, which are subjects.
pub const MAX_ENVELOPE_BYTES: usize = 16 << 20;

/// Errors of sealing and reading bundles, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// Reading or writing failed.
    /// An I/O error on a named file.
    #[error(transparent)]
    Io(#[from] IoError),
    /// A bundle entry that is not a regular file or directory (a symlink, socket, …).
    #[error("`{name}` in bundle `{dir}` is a {kind}; bundles hold regular files only")]
    NotRegularFile {
        /// The bundle directory.
        dir: PathBuf,
        /// Its bundle-relative path.
        name: String,
        /// What it is (`symlink`, `special file`).
        kind: &'static str,
    },
    /// A file whose relative path is not UTF-8, or breaks the subject name rules.
    #[error("file `{name}` in bundle `{dir}` cannot be a subject name: {rule}")]
    BadFileName {
        /// The bundle directory.
        dir: PathBuf,
        /// The path, lossily decoded.
        name: String,
        /// The rule it breaks.
        rule: &'static str,
    },
    /// No signer was given.
    #[error("sealing needs at least one signing key")]
    NoSigners,
    /// The predicate does not fit its type's schema (or is not an object).
    #[error("predicate does not fit `{predicate_type}`: {message}")]
    Predicate {
        /// The predicateType.
        predicate_type: String,
        /// What does not fit.
        message: String,
    },
    /// The Statement could not be emitted canonically (a float in the predicate, …).
    #[error("encoding the statement")]
    Canonical(#[source] CanonicalError),
    /// An envelope that cannot be read.
    #[error("reading envelope `{path}`")]
    Envelope {
        /// The envelope file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: EnvelopeError,
    },
}

/// What [`seal_bundle`] produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealedBundle {
    /// sha256 of the Statement (payload) bytes: what the next round's `previousReceipt`
    /// records.
    pub statement_digest: Sha256Hex,
    /// Number of subjects (files) in the Statement.
    pub subjects: usize,
    /// Where the envelope was written (`<dir>/receipt.dsse.json`).
    pub envelope_path: PathBuf,
}

/// A file found under a bundle directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BundleEntry {
    /// Bundle-relative path with `/` separators (lossy if not UTF-8).
    pub name: String,
    /// Its full path.
    pub path: PathBuf,
    /// What it is.
    pub kind: EntryKind,
}

/// The kind of a [`BundleEntry`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file with a UTF-8 relative path.
    File,
    /// A symbolic link (never followed).
    Symlink,
    /// A socket, FIFO or device.
    Special,
    /// A regular file whose relative path is not UTF-8.
    NonUtf8Name,
}

/// Seals `dir` into a bundle: every regular file under it except the top-level
/// `receipt.dsse.json` becomes a subject (sorted by name, relative paths with `/`), the
/// Statement of `predicate_type`/`predicate` is signed by every signer and written to
/// `dir/receipt.dsse.json` atomically (replacing an earlier one). Every subject is
/// fsynced before it is hashed, and every directory of the bundle after, so what the
/// envelope seals is on disk before the envelope is.
///
/// Checks everything before writing: nothing is written on error.
///
/// Errors: [`BundleError::NoSigners`]; [`BundleError::NotRegularFile`] for a symlink or
/// special file; [`BundleError::BadFileName`] for a non-UTF-8 or otherwise unusable name;
/// [`BundleError::Predicate`] when the predicate is not an object or does not fit the
/// schema of a referee predicate type ([`statement::check_predicate`]);
/// [`BundleError::Canonical`] for a float in the predicate; [`BundleError::Io`].
pub fn seal_bundle(
    dir: &Path,
    predicate_type: &str,
    predicate: &Value,
    signers: &[&PrivateKey],
) -> Result<SealedBundle, BundleError> {
    if signers.is_empty() {
        return Err(BundleError::NoSigners);
    }
    statement::check_predicate(predicate_type, predicate).map_err(|message| {
        BundleError::Predicate {
            predicate_type: predicate_type.to_owned(),
            message,
        }
    })?;
    let mut subjects = Vec::new();
    let mut directories = std::collections::BTreeSet::new();
    for entry in list_files(dir)? {
        match entry.kind {
            EntryKind::File => {}
            EntryKind::Symlink | EntryKind::Special => {
                return Err(BundleError::NotRegularFile {
                    dir: dir.to_owned(),
                    name: entry.name,
                    kind: if entry.kind == EntryKind::Symlink {
                        "symlink"
                    } else {
                        "special file"
                    },
                });
            }
            EntryKind::NonUtf8Name => {
                return Err(BundleError::BadFileName {
                    dir: dir.to_owned(),
                    name: entry.name,
                    rule: "not UTF-8",
                });
            }
        }
        if let Err(rule) = check_subject_name(&entry.name) {
            return Err(BundleError::BadFileName {
                dir: dir.to_owned(),
                name: entry.name,
                rule,
            });
        }
        // What is sealed is on disk first: a crash after sealing never leaves a subject
        // whose bytes the digest does not describe.
        let sha256 = sync_and_hash(&entry.path)?;
        if let Some(parent) = entry.path.parent() {
            directories.insert(parent.to_path_buf());
        }
        subjects.push(Subject {
            name: entry.name,
            digest: DigestSet { sha256 },
        });
    }
    // And so is every directory entry naming them.
    directories.insert(dir.to_path_buf());
    for directory in &directories {
        sync_dir(directory).map_err(|source| {
            BundleError::Io(IoError {
                action: "syncing bundle directory",
                path: directory.clone(),
                source,
            })
        })?;
    }
    let count = subjects.len();
    let statement = Statement::new(subjects, predicate_type, predicate.clone());
    let envelope = sign_statement(&statement, signers)?;
    let statement_digest = Sha256Hex::digest(&envelope.payload);
    let bytes = envelope.to_file_bytes().map_err(BundleError::Canonical)?;
    let envelope_path = dir.join(ENVELOPE_FILE);
    write_atomic(&envelope_path, &bytes, 0o644).map_err(|source| {
        BundleError::Io(IoError {
            action: "writing envelope",
            path: envelope_path.clone(),
            source,
        })
    })?;
    Ok(SealedBundle {
        statement_digest,
        subjects: count,
        envelope_path,
    })
}

/// Signs `statement` (its canonical bytes are the payload) with every signer. Used for
/// the "round opened" statement, written as a file into the bundle before sealing.
///
/// Errors: [`BundleError::NoSigners`]; [`BundleError::Canonical`] when the predicate
/// holds a float or an out-of-range integer.
pub fn sign_statement(
    statement: &Statement,
    signers: &[&PrivateKey],
) -> Result<Envelope, BundleError> {
    if signers.is_empty() {
        return Err(BundleError::NoSigners);
    }
    let payload = statement.to_payload().map_err(BundleError::Canonical)?;
    Ok(Envelope::sign(IN_TOTO_PAYLOAD_TYPE, payload, signers))
}

/// sha256 of the Statement bytes inside the envelope at `envelope_path`, for the next
/// round's `previousReceipt`. Reads the envelope strictly but does not verify it: verify
/// the bundle first where that matters.
///
/// Errors: [`BundleError::Io`]; [`BundleError::Envelope`] for a malformed envelope.
pub fn read_statement_digest(envelope_path: &Path) -> Result<Sha256Hex, BundleError> {
    let bytes = read_limited(envelope_path, MAX_ENVELOPE_BYTES).map_err(|source| {
        BundleError::Io(IoError {
            action: "reading envelope",
            path: envelope_path.to_owned(),
            source,
        })
    })?;
    let envelope = RawEnvelope::parse(&bytes, MAX_ENVELOPE_BYTES)
        .and_then(|(raw, _)| raw.decode())
        .map_err(|source| BundleError::Envelope {
            path: envelope_path.to_owned(),
            source,
        })?;
    Ok(Sha256Hex::digest(&envelope.payload))
}

/// Every file under `dir` except the top-level [`ENVELOPE_FILE`], sorted by name. Symlinks
/// are listed, never followed; directories are descended.
///
/// Errors: [`BundleError::Io`] when a directory cannot be read.
pub fn list_files(dir: &Path) -> Result<Vec<BundleEntry>, BundleError> {
    let mut out = Vec::new();
    walk(dir, "", true, &mut out)?;
    out.retain(|e| e.name != ENVELOPE_FILE);
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Lists `dir` into `out`; `prefix` is its bundle-relative path plus `/`, and
/// `prefix_utf8` whether that path was UTF-8 all the way down.
fn walk(
    dir: &Path,
    prefix: &str,
    prefix_utf8: bool,
    out: &mut Vec<BundleEntry>,
) -> Result<(), BundleError> {
    let io_err = |source| {
        BundleError::Io(IoError {
            action: "listing bundle directory",
            path: dir.to_owned(),
            source,
        })
    };
    for item in fs::read_dir(dir).map_err(io_err)? {
        let item = item.map_err(io_err)?;
        let file_type = item.file_type().map_err(io_err)?;
        let os_name = item.file_name();
        let (part, utf8) = match os_name.to_str() {
            Some(s) => (s.to_owned(), true),
            None => (os_name.to_string_lossy().into_owned(), false),
        };
        let name = format!("{prefix}{part}");
        let path = item.path();
        if file_type.is_dir() {
            walk(&path, &format!("{name}/"), prefix_utf8 && utf8, out)?;
            continue;
        }
        let kind = if file_type.is_symlink() {
            EntryKind::Symlink
        } else if !file_type.is_file() {
            EntryKind::Special
        } else if !(utf8 && prefix_utf8) {
            EntryKind::NonUtf8Name
        } else {
            EntryKind::File
        };
        out.push(BundleEntry { name, path, kind });
    }
    Ok(())
}

/// Checks a subject name: a relative path of `/`-separated segments, none empty, `.` or
/// `..`, with no `\`, NUL or other control character (content/receipts.md, Verification step 6:
/// no `..`, no absolute path), and not the envelope itself.
///
/// Errors: the rule the name breaks.
pub fn check_subject_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("empty name");
    }
    if name.starts_with('/') {
        return Err("absolute path");
    }
    if name.contains('\\') {
        return Err("contains a backslash");
    }
    if name.chars().any(char::is_control) {
        return Err("contains a control character");
    }
    if name == ENVELOPE_FILE {
        return Err("names the envelope itself");
    }
    for segment in name.split('/') {
        match segment {
            "" => return Err("empty path segment"),
            "." | ".." => return Err("`.` or `..` segment"),
            _ => {}
        }
    }
    Ok(())
}

/// fsyncs a file, then hashes it from the same handle.
fn sync_and_hash(path: &Path) -> Result<Sha256Hex, BundleError> {
    let io_err = |action| {
        move |source| {
            BundleError::Io(IoError {
                action,
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let mut file = fs::File::open(path).map_err(io_err("opening"))?;
    file.sync_all().map_err(io_err("syncing"))?;
    let mut hasher = Sha256::new();
    io::copy(&mut file, &mut hasher).map_err(io_err("hashing"))?;
    Ok(Sha256Hex::from_bytes(hasher.finalize().into()))
}

/// Bytes read at a time when hashing a file: large reads keep the system calls a small
/// part of hashing a large file (`io::copy`'s own buffer is 8 KiB).
const HASH_READ_BYTES: usize = 64 << 10;

thread_local! {
    /// The read buffer of [`file_sha256`], one per thread and reused for every file, so
    /// hashing a bundle's files allocates nothing per file.
    static HASH_BUFFER: std::cell::RefCell<Vec<u8>> =
        std::cell::RefCell::new(vec![0; HASH_READ_BYTES]);
}

/// sha256 of a regular file's bytes, streamed: opened with [`fsutil::open_regular`]
/// (never through a symlink), read to the length `fstat` gave it (so a file that fits the
/// buffer takes one `read`), or to its end when that length is 0.
///
/// Errors: the I/O error; a path that is not a regular file is an
/// [`io::ErrorKind::InvalidInput`] error naming what it is.
pub fn file_sha256(path: &Path) -> io::Result<Sha256Hex> {
    use std::io::Read;
    let (mut file, length) = fsutil::open_regular(path)?;
    let mut hasher = Sha256::new();
    // Not re-entered: nothing below calls back into this function.
    HASH_BUFFER.with_borrow_mut(|buffer| {
        let mut left = length;
        loop {
            match file.read(buffer) {
                Ok(0) => return Ok(()),
                Ok(n) => {
                    hasher.update(&buffer[..n]);
                    left = left.saturating_sub(n as u64);
                    if length > 0 && left == 0 {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    })?;
    Ok(Sha256Hex::from_bytes(hasher.finalize().into()))
}
