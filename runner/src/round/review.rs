//! A repository submission carried into its round (content/review.md, In the round):
//! at setup its commitment's text, its review record and the signed statement of a
//! person's resolution are copied under `inputs/` (so the round-opened statement commits
//! to what let each entry run); at seal each entry's review is taken from those copies,
//! as the verifier takes it again (`receipts::rules::review::entry_review`).

use std::path::Path;

use receipts::dsse::Envelope;
use receipts::fsutil::read_limited;
use receipts::layout::{CampaignDir, commitment_input, resolution_input, review_input};
use receipts::model::{EntryReview, ReviewRecord, Sha256Hex};
use receipts::rules::review::entry_review;
use receipts::tlog::entry::EntryKind;
use receipts::tlog::statements::{MAX_STATEMENT_BYTES, statement_path};

use super::{RoundError, io};

/// Largest review record copy read back, bytes (findings and an LLM transcript).
const MAX_REVIEW_BYTES: usize = 16 << 20;

/// An input copy of a round: its bundle-relative name and its bytes.
pub(crate) type InputCopy = (String, Vec<u8>);

/// The input copies of the repository submission `patch` seated in round `round` of the
/// campaign in `campaign_dir`, as (bundle-relative name, bytes): its commitment's text
/// (which hashes to `patch`: the repository entry's input in place of a diff), its
/// review record, pretty JSON as the data directory writes records, and the statement of
/// its resolution when a person resolved it. `None` for a diff submission.
///
/// Errors: [`RoundError::Data`] when the record does not load; [`RoundError::Io`] when
/// the resolution's statement does not read; [`RoundError::Record`] when the record does
/// not serialise.
pub(crate) fn repository_inputs(
    campaign_dir: &CampaignDir,
    round: u64,
    patch: &Sha256Hex,
) -> Result<Option<Vec<InputCopy>>, RoundError> {
    let submission = campaign_dir.load_submission(patch)?;
    let Some(repository) = submission.repository else {
        return Ok(None);
    };
    let mut files = vec![(commitment_input(patch), repository.commitment.into_bytes())];
    let Some(review) = repository.review else {
        return Ok(Some(files));
    };
    let mut bytes = serde_json::to_vec_pretty(&review).map_err(|e| RoundError::Record {
        round,
        message: format!("the review of {patch}: {e}"),
    })?;
    bytes.push(b'\n');
    files.push((review_input(patch), bytes));
    if let Some(resolution) = &review.resolution {
        let path = statement_path(
            campaign_dir.root(),
            EntryKind::ReviewResolution,
            &resolution.envelope_sha256,
        );
        let statement = read_limited(&path, MAX_STATEMENT_BYTES).map_err(io("reading", &path))?;
        files.push((resolution_input(&resolution.envelope_sha256), statement));
    }
    Ok(Some(files))
}

/// The review of the entry of `patch` in round `round` from the copies [`review_inputs`] wrote into the
/// bundle `bundle`; none when there is no copy (the baseline, a diff).
///
/// Errors: [`RoundError::Io`] when a copy does not read; [`RoundError::Record`] when
/// the record's copy or the resolution's envelope does not parse.
pub(crate) fn entry_review_of(
    bundle: &Path,
    round: u64,
    patch: &Sha256Hex,
) -> Result<Option<EntryReview>, RoundError> {
    let path = bundle.join(review_input(patch));
    if !path.exists() {
        return Ok(None);
    }
    let bad = |message: String| RoundError::Record { round, message };
    let bytes = read_limited(&path, MAX_REVIEW_BYTES).map_err(io("reading", &path))?;
    let review: ReviewRecord =
        serde_json::from_slice(&bytes).map_err(|e| bad(format!("`{}`: {e}", path.display())))?;
    let keyid = match &review.resolution {
        Some(resolution) => {
            let path = bundle.join(resolution_input(&resolution.envelope_sha256));
            let bytes = read_limited(&path, MAX_STATEMENT_BYTES).map_err(io("reading", &path))?;
            let envelope = Envelope::from_json(&bytes, MAX_STATEMENT_BYTES)
                .map_err(|e| bad(format!("`{}`: {e}", path.display())))?;
            envelope
                .signatures
                .first()
                .map(|s| s.keyid.clone())
                .unwrap_or_default()
        }
        None => String::new(),
    };
    Ok(Some(entry_review(patch, &review, &keyid)))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use receipts::bundle::sign_statement;
    use receipts::keys::PrivateKey;
    use receipts::layout::DataDir;
    use receipts::model::{
        CopyOutcome, Fingerprint, RepositoryRecord, ReviewResolution, Submission, Timestamp,
        Verdict,
    };
    use receipts::statement::Statement;

    use super::*;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_unix_seconds(1_800_000_000 + s).expect("time")
    }

    /// A repository record resolved PASS by a person, its statement signed by `key` and
    /// stored where `referee review --resolve` stores it; returns its envelope's bytes.
    fn resolved_record(dir: &CampaignDir, sha: Sha256Hex, key: &PrivateKey) -> Vec<u8> {
        let statement = Statement::new(
            Vec::new(),
            receipts::tlog::statements::REVIEW_RESOLUTION_PREDICATE_TYPE,
            serde_json::json!({"verdict": "PASS"}),
        );
        let envelope = sign_statement(&statement, &[key])
            .expect("signs")
            .to_file_bytes()
            .expect("canonical");
        let envelope_sha256 = Sha256Hex::digest(&envelope);
        let path = statement_path(dir.root(), EntryKind::ReviewResolution, &envelope_sha256);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, &envelope).expect("statement");
        let mut submission = Submission::committed(
            sha,
            "tiny".parse().expect("id"),
            "m".parse().expect("miner"),
            sha,
            4,
            at(0),
        );
        submission.repository = Some(RepositoryRecord {
            commitment: "https://example.org/r@0123".into(),
            committed_at: at(0),
            coldkey: None,
            tree_sha256: None,
            manifest_sha256: None,
            validation: None,
            review: Some(ReviewRecord {
                rules_version: 1,
                rules_digest: Sha256Hex::digest(b"rules"),
                findings: Vec::new(),
                static_verdict: Verdict::NeedsHuman,
                llm: None,
                verdict: Verdict::NeedsHuman,
                reviewed_at: at(1),
                derived_from: Some("ab".repeat(32)),
                fingerprint: Fingerprint {
                    weights: BTreeSet::new(),
                    code: Sha256Hex::digest(b"code"),
                    code_files: 1,
                },
                copy: CopyOutcome::Original,
                resolution: Some(ReviewResolution {
                    verdict: Verdict::Pass,
                    reason: "reads the GPU's state".into(),
                    resolved_at: at(2),
                    envelope_sha256,
                    log_index: 4,
                }),
            }),
        });
        std::fs::create_dir_all(dir.submissions_dir()).expect("mkdir");
        let json = serde_json::to_vec_pretty(&submission).expect("json");
        std::fs::write(dir.submission_json(&sha), json).expect("record");
        envelope
    }

    #[test]
    fn a_resolved_review_is_copied_as_inputs_and_read_back_into_the_entry() {
        let data = tempfile::tempdir().expect("tempdir");
        let dir = DataDir::new(data.path()).campaign(&"tiny".parse().expect("id"));
        let sha = Sha256Hex::digest(b"https://example.org/r@0123");
        let key = PrivateKey::from_seed(&[3; 32]);
        let envelope = resolved_record(&dir, sha, &key);

        let files = repository_inputs(&dir, 2, &sha)
            .expect("inputs")
            .expect("a repository submission");
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        let statement = resolution_input(&Sha256Hex::digest(&envelope));
        assert_eq!(
            names,
            [
                commitment_input(&sha).as_str(),
                review_input(&sha).as_str(),
                statement.as_str()
            ]
        );
        // The commitment's copy hashes to the entry's `patch`, as a diff's does.
        assert_eq!(Sha256Hex::digest(&files[0].1), sha);
        assert_eq!(files[2].1, envelope);

        let bundle = tempfile::tempdir().expect("bundle");
        assert_eq!(entry_review_of(bundle.path(), 2, &sha).expect("none"), None);
        for (name, bytes) in &files {
            let path = bundle.path().join(name);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, bytes).expect("copy");
        }
        let review = entry_review_of(bundle.path(), 2, &sha)
            .expect("reads")
            .expect("a review");
        assert_eq!(review.record, review_input(&sha));
        assert_eq!(
            (review.verdict, review.decision),
            (Verdict::NeedsHuman, Verdict::Pass)
        );
        assert_eq!(review.derived_from, Some("ab".repeat(32)));
        let resolution = review.resolution.expect("resolution");
        assert_eq!(resolution.statement, statement);
        assert_eq!(resolution.keyid, key.keyid());
    }
}
