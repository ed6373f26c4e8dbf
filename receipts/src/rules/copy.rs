//! Copy detection's decision (content/review.md, Copy detection): a submission whose
//! weights share a file with an earlier commitment's, or whose normalised runtime code
//! equals an earlier one's, is a copy and credits the earliest such one; a submission
//! that declares `derivedFrom` must beat its original by the campaign's margin. The
//! fingerprints come from the `review` crate; the runner decides with [`detect_copy`] at
//! ingest and the verifier recomputes it from the recorded fingerprints.

use serde::{Deserialize, Serialize};

use crate::model::{CopyOutcome, CopyReason, Fingerprint, Timestamp};

/// A commitment as copy detection sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Commitment {
    /// The submission's id.
    pub submission: String,
    /// When it was committed: the earlier is the original; a tie goes to the smaller
    /// submission id, so that the order is total.
    pub committed_at: Timestamp,
    /// Its fingerprint.
    pub fingerprint: Fingerprint,
    /// The submission its manifest says it is derived from (`derivedFrom`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub derived_from: Option<String>,
}

impl Commitment {
    /// Its place in the order of commitments: time, then submission id.
    fn position(&self) -> (Timestamp, &str) {
        (self.committed_at, self.submission.as_str())
    }
}

/// Compares `candidate` with every commitment of `others` made before it, earliest first:
/// the first that shares a weights hash or equals its code makes it a [`CopyOutcome::Copy`]
/// crediting that one. Otherwise its declared `derived_from` makes it
/// [`CopyOutcome::Derived`], else it is [`CopyOutcome::Original`]. Commitments at or after
/// the candidate's position (itself included) are never its original.
pub fn detect_copy(candidate: &Commitment, others: &[Commitment]) -> CopyOutcome {
    let mut earlier: Vec<&Commitment> = others
        .iter()
        .filter(|c| c.position() < candidate.position())
        .collect();
    earlier.sort_by(|a, b| a.position().cmp(&b.position()));
    let mine = &candidate.fingerprint;
    for original in earlier {
        let theirs = &original.fingerprint;
        let reason = if let Some(sha256) = mine.weights.intersection(&theirs.weights).next() {
            CopyReason::IdenticalWeights { sha256: *sha256 }
        } else if mine.code_files > 0 && mine.code == theirs.code {
            CopyReason::SameRuntimeCode { code: mine.code }
        } else {
            continue;
        };
        return CopyOutcome::Copy {
            original: original.submission.clone(),
            reason,
        };
    }
    match &candidate.derived_from {
        Some(original) => CopyOutcome::Derived {
            original: original.clone(),
        },
        None => CopyOutcome::Original,
    }
}
