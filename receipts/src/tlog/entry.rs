//! A log entry: the small canonical JSON statement the log holds for a signed envelope,
//! `{campaign, round?, kind, envelopeSha256}` (`round` absent for kinds that belong to no
//! round). Whole envelopes would not fit tlog-tiles' 65,535-byte entries; the verifier
//! rebuilds the entry from the envelope bytes it holds and checks the entry's leaf hash
//! against the log. An entry of a round's kinds is byte for byte what logs held before
//! the other kinds existed, so old logs keep verifying.

use serde::{Deserialize, Serialize};

use crate::canonical::{self, CanonicalError};
use crate::model::{CampaignId, Sha256Hex};
use crate::tlog::merkle::{Hash, leaf_hash};

/// What a log entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EntryKind {
    /// The round-opened statement, logged before the round's first entry runs.
    RoundOpened,
    /// The sealed round's receipt.
    Receipt,
    /// An ingest's commitment (`statements::SubmissionPredicate`); no round.
    Submission,
    /// A gate's rejection of a submission, with its reason
    /// (`statements::GateRejectionPredicate`); no round.
    GateRejection,
    /// The files of one pass of a round, logged as the pass ends
    /// (`statements::MeasurementPredicate`).
    Measurement,
    /// The evaluator's revocation of a sealed round's entry
    /// (`statements::RevocationPredicate`, content/title.md).
    Revocation,
    /// A person's decision on a repository submission's `NEEDS-HUMAN` review
    /// (`statements::ReviewResolutionPredicate`, content/review.md); no round.
    ReviewResolution,
}

impl EntryKind {
    /// The kebab-case name, as entries and `statements/<kind>/` spell it.
    pub fn as_str(&self) -> &'static str {
        match self {
            EntryKind::RoundOpened => "round-opened",
            EntryKind::Receipt => "receipt",
            EntryKind::Submission => "submission",
            EntryKind::GateRejection => "gate-rejection",
            EntryKind::Measurement => "measurement",
            EntryKind::Revocation => "revocation",
            EntryKind::ReviewResolution => "review-resolution",
        }
    }
}

/// One log entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LogEntry {
    /// The campaign.
    pub campaign: CampaignId,
    /// The round number; absent for kinds that belong to no round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u64>,
    /// Which envelope of the round.
    pub kind: EntryKind,
    /// SHA-256 of the envelope file's bytes.
    pub envelope_sha256: Sha256Hex,
}

impl LogEntry {
    /// The entry for the envelope file `envelope` (its bytes as stored).
    pub fn for_envelope(
        campaign: CampaignId,
        round: Option<u64>,
        kind: EntryKind,
        envelope: &[u8],
    ) -> Self {
        Self {
            campaign,
            round,
            kind,
            envelope_sha256: Sha256Hex::digest(envelope),
        }
    }

    /// The entry's bytes in the log: RFC 8785 canonical JSON.
    ///
    /// Errors: [`CanonicalError`] (not reachable for these field types).
    pub fn to_bytes(&self) -> Result<Vec<u8>, CanonicalError> {
        canonical::to_canonical_vec(self)
    }

    /// The entry's RFC 6962 leaf hash.
    ///
    /// Errors: as [`LogEntry::to_bytes`].
    pub fn leaf_hash(&self) -> Result<Hash, CanonicalError> {
        Ok(leaf_hash(&self.to_bytes()?))
    }
}
