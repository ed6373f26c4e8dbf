//! C2SP tlog-proof@v1: an offline-verifiable proof that an entry is in a log. Its lines
//! are the header `c2sp.org/tlog-proof@v1`, an optional `extra <base64>` (opaque to the
//! verifier, never trusted), `index <n>`, the inclusion proof one base64 hash a line
//! (from the leaf's sibling up), an empty line, and the checkpoint note verbatim.
//!
//! referee writes a round's two proofs (its round-opened statement and its receipt) into
//! one file, `rounds/<n>.proof`, one after the other; each starts with the header line,
//! which no checkpoint line can equal (signature lines start with an em dash).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::tlog::checkpoint::{Checkpoint, CheckpointError};
use crate::tlog::merkle::{Hash, ProofError, verify_inclusion};
use crate::tlog::note::{MAX_SIGNATURES, NoteVerifier};

/// The first line of every proof.
pub const PROOF_HEADER: &str = "c2sp.org/tlog-proof@v1";

/// Largest proof file read, in bytes: a few proofs of up to 64 hashes each with a
/// checkpoint of up to [`MAX_SIGNATURES`] signature lines.
pub const MAX_PROOF_FILE_BYTES: usize = 1 << 18;

/// Where a round's proofs lie: `rounds/<n>.proof` next to its bundle `rounds/<n>`
/// (outside it: every file inside a bundle is a subject of its receipt, and the
/// receipt's own proof exists only after sealing).
pub fn round_proof_path(bundle: &std::path::Path) -> std::path::PathBuf {
    let mut name = bundle.file_name().unwrap_or_default().to_os_string();
    name.push(".proof");
    bundle.with_file_name(name)
}

/// Errors of parsing and checking proofs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlogProofError {
    /// Bytes that are not proofs in the tlog-proof format.
    #[error("malformed tlog-proof: {reason}")]
    Malformed {
        /// What is wrong.
        reason: &'static str,
    },
    /// The proof's checkpoint does not open with the pinned log key and origin.
    #[error("the proof's checkpoint: {0}")]
    Checkpoint(#[from] CheckpointError),
    /// The inclusion proof does not verify against the checkpoint.
    #[error("entry {index} is not proved in the checkpoint of size {size}: {source}")]
    Inclusion {
        /// The entry's index.
        index: u64,
        /// The checkpoint's size.
        size: u64,
        /// Why.
        #[source]
        source: ProofError,
    },
}

/// One tlog-proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlogProof {
    /// The `extra` data (referee writes the entry's kind, `round-opened` or `receipt`);
    /// unauthenticated.
    pub extra: Option<Vec<u8>>,
    /// The entry's index in the log (0-based).
    pub index: u64,
    /// The inclusion proof, from the leaf's sibling up.
    pub proof: Vec<Hash>,
    /// The checkpoint note, verbatim (with its cosignatures).
    pub checkpoint: Vec<u8>,
}

impl TlogProof {
    /// The proof's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = format!("{PROOF_HEADER}\n");
        if let Some(extra) = &self.extra {
            out.push_str(&format!("extra {}\n", STANDARD.encode(extra)));
        }
        out.push_str(&format!("index {}\n", self.index));
        for hash in &self.proof {
            out.push_str(&STANDARD.encode(hash));
            out.push('\n');
        }
        out.push('\n');
        let mut bytes = out.into_bytes();
        bytes.extend_from_slice(&self.checkpoint);
        bytes
    }

    /// Parses one proof.
    ///
    /// Errors: [`TlogProofError::Malformed`]: not UTF-8, no header, an `index` that is not
    /// a decimal without leading zeros, a hash line that is not base64 of 32 bytes, more
    /// than 64 hashes, no empty line before the checkpoint.
    pub fn parse(bytes: &[u8]) -> Result<Self, TlogProofError> {
        let bad = |reason| TlogProofError::Malformed { reason };
        let text = std::str::from_utf8(bytes).map_err(|_| bad("not UTF-8"))?;
        let rest = text
            .strip_prefix(PROOF_HEADER)
            .and_then(|r| r.strip_prefix('\n'))
            .ok_or(bad("the first line is not `c2sp.org/tlog-proof@v1`"))?;
        let (mut line, mut rest) = rest.split_once('\n').ok_or(bad("no index line"))?;
        let mut extra = None;
        if let Some(b64) = line.strip_prefix("extra ") {
            extra = Some(
                STANDARD
                    .decode(b64)
                    .map_err(|_| bad("extra data is not base64"))?,
            );
            (line, rest) = rest.split_once('\n').ok_or(bad("no index line"))?;
        }
        let index = line
            .strip_prefix("index ")
            .filter(|n| {
                !n.is_empty()
                    && n.bytes().all(|b| b.is_ascii_digit())
                    && (*n == "0" || !n.starts_with('0'))
            })
            .and_then(|n| n.parse::<u64>().ok())
            .ok_or(bad("no `index <n>` line with a decimal index"))?;
        let mut proof = Vec::new();
        loop {
            let (line, tail) = rest
                .split_once('\n')
                .ok_or(bad("no empty line before the checkpoint"))?;
            rest = tail;
            if line.is_empty() {
                break;
            }
            if proof.len() == 64 {
                return Err(bad("more than 64 proof hashes"));
            }
            let hash: Hash = STANDARD
                .decode(line)
                .ok()
                .and_then(|h| h.try_into().ok())
                .ok_or(bad("a proof line is not base64 of 32 bytes"))?;
            proof.push(hash);
        }
        Ok(Self {
            extra,
            index,
            proof,
            checkpoint: rest.as_bytes().to_vec(),
        })
    }

    /// Parses a file of one or more proofs, one after the other.
    ///
    /// Errors: as [`TlogProof::parse`]; also a file larger than
    /// [`MAX_PROOF_FILE_BYTES`] or more than [`MAX_SIGNATURES`] proofs.
    pub fn parse_all(bytes: &[u8]) -> Result<Vec<Self>, TlogProofError> {
        let bad = |reason| TlogProofError::Malformed { reason };
        if bytes.len() > MAX_PROOF_FILE_BYTES {
            return Err(bad("the proof file is too large"));
        }
        let text = std::str::from_utf8(bytes).map_err(|_| bad("not UTF-8"))?;
        let separator = format!("\n{PROOF_HEADER}\n");
        let mut starts = vec![0];
        starts.extend(text.match_indices(&separator).map(|(i, _)| i + 1));
        if starts.len() > MAX_SIGNATURES {
            return Err(bad("too many proofs"));
        }
        let ends = starts.iter().skip(1).copied().chain([text.len()]);
        starts
            .iter()
            .zip(ends)
            .map(|(&start, end)| Self::parse(&bytes[start..end]))
            .collect()
    }

    /// Checks the proof: its checkpoint opens with `log` (signature, origin), and `leaf`
    /// is at [`TlogProof::index`] in the checkpoint's tree. Returns the checkpoint.
    ///
    /// Errors: [`TlogProofError::Checkpoint`]; [`TlogProofError::Inclusion`] (an index
    /// beyond the size, a proof of the wrong length, a root that does not match).
    pub fn verify(&self, leaf: &Hash, log: &NoteVerifier) -> Result<Checkpoint, TlogProofError> {
        let (checkpoint, _) = Checkpoint::open(&self.checkpoint, log)?;
        verify_inclusion(
            leaf,
            self.index,
            checkpoint.size,
            &self.proof,
            &checkpoint.root,
        )
        .map_err(|source| TlogProofError::Inclusion {
            index: self.index,
            size: checkpoint.size,
            source,
        })?;
        Ok(checkpoint)
    }
}
