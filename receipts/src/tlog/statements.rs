//! The signed statements that log entries of the kinds beyond a round's own point to
//! (content/transparency-log.md, Entry kinds): each is a DSSE envelope over an in-toto
//! Statement, signed by the evaluator key, stored under
//! `<data>/<campaign>/statements/<kind>/<sha256 of the envelope file>.dsse.json`, and
//! logged as `{campaign, round?, kind, envelopeSha256}`. Each predicate is versioned by
//! its `predicateType`, as the round's are; the subjects keep the format general: a
//! submission names what was committed by a record key and a digest, whatever the
//! commitment's form (a diff's sha256 today, a repository's commit later).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::model::{CampaignId, Gate, Leader, MinerId, Sha256Hex, Timestamp, Verdict};
use crate::statement::{DigestSet, Subject};
use crate::tlog::entry::EntryKind;

/// The statements' directory inside a campaign's directory.
pub const STATEMENTS_DIR: &str = "statements";

/// `predicateType` of a `submission` statement.
pub const SUBMISSION_PREDICATE_TYPE: &str = "https://referee.dev/predicates/submission/v1";

/// `predicateType` of a `gate-rejection` statement.
pub const GATE_REJECTION_PREDICATE_TYPE: &str = "https://referee.dev/predicates/gate-rejection/v1";

/// `predicateType` of a `measurement` statement.
pub const MEASUREMENT_PREDICATE_TYPE: &str = "https://referee.dev/predicates/measurement/v1";

/// `predicateType` of a `revocation` statement.
pub const REVOCATION_PREDICATE_TYPE: &str = "https://referee.dev/predicates/revocation/v1";
/// `predicateType` of a `review-resolution` statement.
pub const REVIEW_RESOLUTION_PREDICATE_TYPE: &str =
    "https://referee.dev/predicates/review-resolution/v1";

/// Largest statement envelope read, in bytes: a measurement names a pass's few files.
pub const MAX_STATEMENT_BYTES: usize = 1 << 20;

/// Where the statement envelope whose file has digest `envelope_sha256` lies:
/// `<campaign_root>/statements/<kind>/<sha256>.dsse.json`.
pub fn statement_path(
    campaign_root: &Path,
    kind: EntryKind,
    envelope_sha256: &Sha256Hex,
) -> PathBuf {
    campaign_root
        .join(STATEMENTS_DIR)
        .join(kind.as_str())
        .join(format!("{envelope_sha256}.dsse.json"))
}

/// The subject of a submission or gate-rejection statement: the submission record's key
/// as its name, the committed content's sha256 as its digest.
pub fn submission_subject(record: &Sha256Hex, content: &Sha256Hex) -> Subject {
    Subject {
        name: record.to_string(),
        digest: DigestSet { sha256: *content },
    }
}

/// A `submission` statement's predicate: one ingest's commitment, logged as the ingest
/// recorded it. Its subject is [`submission_subject`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubmissionPredicate {
    /// The campaign.
    pub campaign: CampaignId,
    /// The miner who committed.
    pub miner: MinerId,
    /// What the miner committed, as text: a diff's published sha256 (64 hex); other forms
    /// of commitment (a repository at a commit) write their own.
    pub commitment: String,
    /// The key of the submission record the ingest landed in (the sha256 of a diff's
    /// bytes, or the commitment for a diff refused unread). Several commitments of one
    /// record are duplicates of its first.
    pub record: Sha256Hex,
    /// When the commitment was ingested (the record's first event, or the duplicate's).
    pub committed_at: Timestamp,
    /// For a repository commitment (then `commitment` is its `<URL>@<commit>` text): the
    /// record's repository facts as the ingest left them — the commitment's time, the
    /// coldkey, the fetched tree's digest, the manifest's digest and the validation
    /// result (content/repository-submissions.md, Records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<crate::model::RepositoryRecord>,
}

/// A `gate-rejection` statement's predicate: why a submission was rejected. Its subject
/// is [`submission_subject`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GateRejectionPredicate {
    /// The campaign.
    pub campaign: CampaignId,
    /// The rejected submission record's key.
    pub record: Sha256Hex,
    /// The gate that rejected it.
    pub gate: Gate,
    /// The recorded reason, raw (diff paths as the diff has them).
    pub reason: String,
    /// When it was rejected.
    pub rejected_at: Timestamp,
}

/// A `measurement` statement's predicate: one pass of a round, logged as it ends. Its
/// subjects are every file the pass's rows cite (probe logs, engine logs), by
/// bundle-relative name and sha256, sorted by name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MeasurementPredicate {
    /// The campaign.
    pub campaign: CampaignId,
    /// The round.
    pub round: u64,
    /// The pass, from 0.
    pub pass: u32,
}

/// A `revocation` statement's predicate (`referee revoke`, content/title.md): the
/// evaluator takes back a sealed round's entry. It takes effect at its place in the
/// chain, after round `afterRound`; sealed rounds are not re-derived, the entry's evidence
/// stays. Its subject is the revoked patch (name: its miner).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RevocationPredicate {
    /// The campaign.
    pub campaign: CampaignId,
    /// The round whose entry is revoked.
    pub round: u64,
    /// The revoked entry.
    pub entry: Leader,
    /// The evaluator's reason.
    pub reason: String,
    /// The last round sealed when it was logged: it takes effect after that round.
    pub after_round: u64,
    /// When it was logged, on the clock of the campaign's rounds.
    pub revoked_at: Timestamp,
}

/// A `review-resolution` statement's predicate: a person's decision on a repository
/// submission's `NEEDS-HUMAN` review (`referee review --resolve`, content/review.md). Its
/// subject is [`submission_subject`] of the record and its tree's digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReviewResolutionPredicate {
    /// The campaign.
    pub campaign: CampaignId,
    /// The submission record's key.
    pub record: Sha256Hex,
    /// The rules digest of the review it resolves.
    pub rules_digest: Sha256Hex,
    /// The person's verdict: `PASS` or `FAIL`.
    pub verdict: Verdict,
    /// The person's reason, raw.
    pub reason: String,
    /// When it was decided.
    pub resolved_at: Timestamp,
}

/// The `extra` of a measurement's tlog-proof in `rounds/<n>.proof`: `measurement <pass>
/// <envelope sha256>`, naming the statement the proof is about. Unauthenticated: the
/// verifier rebuilds the entry from the statement file and checks it against the log.
pub fn measurement_proof_extra(pass: u32, envelope_sha256: &Sha256Hex) -> String {
    format!("measurement {pass} {envelope_sha256}")
}

/// The pass and envelope digest of a measurement proof's `extra`, when it is one.
pub fn parse_measurement_proof_extra(extra: &[u8]) -> Option<(u32, Sha256Hex)> {
    let text = std::str::from_utf8(extra).ok()?;
    let mut words = text.strip_prefix("measurement ")?.split(' ');
    let pass = words.next()?.parse().ok()?;
    let sha = words.next()?.parse().ok()?;
    words.next().is_none().then_some((pass, sha))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_paths_and_proof_extras_are_fixed() {
        let sha = Sha256Hex::digest(b"envelope");
        assert_eq!(
            statement_path(Path::new("data/demo"), EntryKind::GateRejection, &sha),
            PathBuf::from(format!(
                "data/demo/statements/gate-rejection/{sha}.dsse.json"
            ))
        );
        let extra = measurement_proof_extra(3, &sha);
        assert_eq!(extra, format!("measurement 3 {sha}"));
        assert_eq!(
            parse_measurement_proof_extra(extra.as_bytes()),
            Some((3, sha))
        );
        assert_eq!(parse_measurement_proof_extra(b"round-opened"), None);
        assert_eq!(
            parse_measurement_proof_extra(format!("{extra} x").as_bytes()),
            None
        );
    }
}
