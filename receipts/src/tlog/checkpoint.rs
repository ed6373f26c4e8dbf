//! C2SP tlog-checkpoint: the signed tree head of a log, a signed note whose text is the
//! log's origin line, its size in decimal, its root hash in base64 and optional extension
//! lines. It carries no time: freshness comes from witnesses
//! ([`crate::tlog::cosignature`]).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::keys::PrivateKey;
use crate::tlog::merkle::Hash;
use crate::tlog::note::{self, Note, NoteError, NoteVerifier};

/// Errors of checkpoint parsing, signing and opening.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    /// The note around it is malformed or its signature does not verify.
    #[error(transparent)]
    Note(#[from] NoteError),
    /// A note text that is not a checkpoint body.
    #[error("malformed checkpoint: {reason}")]
    Malformed {
        /// What is wrong.
        reason: &'static str,
    },
    /// A checkpoint of another log.
    #[error("checkpoint is for origin {got:?}, expected {expected:?}")]
    WrongOrigin {
        /// The pinned origin.
        expected: String,
        /// The checkpoint's origin line.
        got: String,
    },
}

/// A checkpoint body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The log's origin line (e.g. `referee.example/log`), also its key's name.
    pub origin: String,
    /// The tree size in entries.
    pub size: u64,
    /// The RFC 6962 root hash of the first `size` entries.
    pub root: Hash,
    /// Extension lines after the root, in order (referee writes none).
    pub extensions: Vec<String>,
}

impl Checkpoint {
    /// The note text: `origin\nsize\nbase64(root)\n` and one line per extension.
    pub fn to_text(&self) -> String {
        let mut text = format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            STANDARD.encode(self.root)
        );
        for e in &self.extensions {
            text.push_str(e);
            text.push('\n');
        }
        text
    }

    /// Parses a note text as a checkpoint body.
    ///
    /// Errors: [`CheckpointError::Malformed`]: fewer than three lines, an empty origin or
    /// extension line, a size that is not a decimal `u64` without leading zeros, a root
    /// that is not base64 of 32 bytes.
    pub fn parse(text: &str) -> Result<Self, CheckpointError> {
        let bad = |reason| CheckpointError::Malformed { reason };
        let body = text
            .strip_suffix('\n')
            .ok_or(bad("text does not end in a newline"))?;
        let mut lines = body.split('\n');
        let (Some(origin), Some(size), Some(root)) = (lines.next(), lines.next(), lines.next())
        else {
            return Err(bad("fewer than three lines"));
        };
        if origin.is_empty() {
            return Err(bad("empty origin line"));
        }
        let canonical_decimal = !size.is_empty()
            && size.bytes().all(|b| b.is_ascii_digit())
            && (size == "0" || !size.starts_with('0'));
        let size: u64 = canonical_decimal
            .then(|| size.parse().ok())
            .flatten()
            .ok_or(bad("size is not a decimal number without leading zeros"))?;
        let root: Hash = STANDARD
            .decode(root)
            .ok()
            .and_then(|r| r.try_into().ok())
            .ok_or(bad("root hash is not base64 of 32 bytes"))?;
        let extensions: Vec<String> = lines.map(str::to_owned).collect();
        if extensions.iter().any(String::is_empty) {
            return Err(bad("empty extension line"));
        }
        Ok(Self {
            origin: origin.to_owned(),
            size,
            root,
            extensions,
        })
    }

    /// Signs the checkpoint with the log key, named by the origin.
    ///
    /// Errors: [`CheckpointError::Note`] when the origin is not a valid key name or a
    /// line is not valid note text.
    pub fn sign(&self, key: &PrivateKey) -> Result<Note, CheckpointError> {
        Ok(note::sign(&self.to_text(), &self.origin, key)?)
    }

    /// Parses and checks a signed checkpoint: the note's signature by `log` (whose name is
    /// the origin) and the origin line against `log`'s name. Other signatures
    /// (cosignatures) are kept in the returned note and not checked here.
    ///
    /// Errors: [`CheckpointError::Note`] (malformed, [`NoteError::NotSignedBy`] for an
    /// unknown key, [`NoteError::BadSignature`]); [`CheckpointError::Malformed`];
    /// [`CheckpointError::WrongOrigin`].
    pub fn open(bytes: &[u8], log: &NoteVerifier) -> Result<(Self, Note), CheckpointError> {
        let note = Note::parse(bytes)?;
        let checkpoint = Self::parse(&note.text)?;
        if checkpoint.origin != log.name() {
            return Err(CheckpointError::WrongOrigin {
                expected: log.name().to_owned(),
                got: checkpoint.origin,
            });
        }
        note.verify(log)?;
        Ok((checkpoint, note))
    }
}
