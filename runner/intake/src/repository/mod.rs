//! Repository submissions (content/repository-submissions.md): a competition hotkey
//! commits `<repository URL>@<40-hex commit>` ([`Commitment`]); the queue admits it
//! ([`queue`]: a registered `competition` hotkey, its coldkey's limits); it is fetched
//! at exactly that commit through the fetch gate ([`fetch`]: [`Fetcher`],
//! [`FetchedTree`]); its `reax-submission.json` is validated ([`manifest`]:
//! [`Manifest`], with [`dockerfile`] and [`licence`]); it is reviewed ([`review`]: the
//! static rules, the campaign's LLM review, copy detection); and it waits in
//! `bench_queued` for a round.
//!
//! The walk. `committed → picked_up → fetched` (admitted by the queue, then fetched past
//! the fetch gate; the tree's digest recorded) `→ verified` (the hotkey and queue facts
//! restated) `→ surface_ok` (the manifest holds) `→ bench_queued` (the review passed and
//! no earlier commitment is copied: [`review`], content/review.md; a `NEEDS-HUMAN` waits
//! in `surface_ok` for a person, a `FAIL` or a copy is `rejected` at gate `review`). A queue refusal is
//! `rejected` at gate `verified` from `picked_up`, a fetch rejection at `fetched`, a
//! manifest error at `surface_ok` — every error listed in one reason, each naming its
//! field. The record is keyed by the sha256 of the commitment's bytes; a second ingest of
//! the same commitment is a `duplicate` event, and an earlier commitment time takes the
//! record over (the earlier commitment wins a tie), unless the first never held the slot
//! (rejected at `fetched` or `verified`), which a later valid one replaces.
//!
//! The fetched tree stays in `data/<campaign>/.work/repositories/<sha256>/`
//! ([`tree_dir`], never published), for the review stage ([`FetchedTree::load`]) and for
//! the rounds that seat it ([`checkout`]: copied and hashed again).

pub mod checkout;
pub mod fetch;
pub mod lfs;
pub mod manifest;
pub mod review;

pub use receipts::rules::repository::{commitment, dockerfile, licence, queue};

use std::path::PathBuf;

use receipts::fsutil::IoError;
use receipts::layout::{CampaignDir, DataError};
use receipts::model::{
    ModelError, PipelineState, RepositoryRecord, Sha256Hex, Submission, SubmissionKind, Timestamp,
};

pub use commitment::{Commitment, CommitmentError};
pub use fetch::{FetchError, FetchOutcome, FetchRejection, FetchedTree, Fetcher, GitFetcher};
pub use manifest::{MANIFEST_PATH, Manifest, load_manifest, validate_tree};
pub use queue::{HotkeyRegistration, QueueRejection};
use receipts::rules::repository::copy::copy_path;

use crate::store::CampaignStore;

/// Errors of a repository ingest; a repository that breaks a rule is never one of them
/// (it is recorded as a rejection).
#[derive(Debug, thiserror::Error)]
pub enum RepositoryError {
    /// Reading or writing the data directory failed.
    #[error(transparent)]
    Data(#[from] DataError),
    /// A record broke the model's rules.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// An I/O error on a named file.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The fetch failed for a reason that is not the miner's; the record stays in
    /// `picked_up` and the next ingest of the commitment resumes it.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// The review could not be made (the tree unreadable, the LLM review command gave no
    /// verdict); the record stays in `surface_ok` and the next ingest retries.
    #[error(transparent)]
    Review(#[from] ::review::ReviewError),
    /// The built-in rules file does not load.
    #[error(transparent)]
    Rules(#[from] ::review::RulesError),
    /// The manifest that held at `surface_ok` no longer reads for the review.
    #[error("submission {submission}: the manifest does not read for the review: {message}")]
    Manifest {
        /// The submission.
        submission: String,
        /// Why.
        message: String,
    },
    /// A person's resolution could not be signed, stored or logged.
    #[error(transparent)]
    Statement(#[from] crate::statements::StatementError),
    /// A person's resolution was refused.
    #[error(transparent)]
    Resolve(#[from] review::ResolveError),
    /// The campaign takes diffs, not repositories.
    #[error(
        "campaign `{campaign}` takes submissions of kind `{kind}`; a repository commitment needs a campaign with submission = \"repository\""
    )]
    WrongKind {
        /// The campaign.
        campaign: String,
        /// Its kind.
        kind: &'static str,
    },
}

/// What a repository ingest did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RepositoryOutcome {
    /// A new submission; its record after the gates.
    New(Submission),
    /// The commitment was already recorded: a duplicate event was added to this record
    /// (which an earlier commitment may have taken over).
    Duplicate(Submission),
}

impl RepositoryOutcome {
    /// The record, either way.
    pub fn submission(&self) -> &Submission {
        match self {
            RepositoryOutcome::New(s) | RepositoryOutcome::Duplicate(s) => s,
        }
    }
}

/// One repository commitment to ingest.
#[derive(Clone, Copy, Debug)]
pub struct RepositoryRequest<'a> {
    /// The commitment as published.
    pub commitment: &'a Commitment,
    /// The hotkey that committed it.
    pub miner: &'a receipts::model::MinerId,
    /// When it was committed (its block's time).
    pub committed_at: Timestamp,
}

/// Where the tree of the submission `sha256` is kept:
/// `data/<campaign>/.work/repositories/<sha256>/`. Under `.work/`, never published: the
/// files are the miner's (weights of gigabytes, and any file among them that looks like a
/// private key would otherwise make the data directory refuse to publish,
/// `receipts::layout::find_private_keys`).
pub fn tree_dir(campaign_dir: &CampaignDir, sha256: &Sha256Hex) -> PathBuf {
    campaign_dir
        .work_dir()
        .join("repositories")
        .join(sha256.as_str())
}

/// Ingests one repository commitment into the repository campaign of `campaign_dir`,
/// under its lock: records it, then walks it through the queue, the fetch gate (with
/// `fetcher`) and the manifest checks, saving the record after every transition.
///
/// Errors: [`RepositoryError::WrongKind`] for a diff campaign; data directory, model
/// and fetch machinery errors (the record keeps the state reached).
pub fn ingest_repository(
    campaign_dir: &CampaignDir,
    request: &RepositoryRequest<'_>,
    fetcher: &dyn Fetcher,
) -> Result<RepositoryOutcome, RepositoryError> {
    let _lock = campaign_dir.lock()?;
    let campaign = campaign_dir.load_campaign()?.campaign;
    if campaign.submission_kind() != SubmissionKind::Repository {
        return Err(RepositoryError::WrongKind {
            campaign: campaign.id.to_string(),
            kind: campaign.submission_kind().as_str(),
        });
    }
    let sha256 = request.commitment.digest();
    let existing = if campaign_dir.submission_json(&sha256).exists() {
        Some(campaign_dir.load_submission(&sha256)?)
    } else {
        None
    };
    let superseded = match existing {
        Some(earlier) if earlier.never_held_slot() => Some(earlier),
        Some(mut submission) => {
            take_over_if_earlier(campaign_dir, &mut submission, request)?;
            campaign_dir.save_submission(&submission)?;
            walk(campaign_dir, &campaign, &mut submission, fetcher)?;
            return Ok(RepositoryOutcome::Duplicate(submission));
        }
        None => None,
    };
    let text = request.commitment.as_str();
    let mut submission = Submission::committed(
        sha256,
        campaign.id.clone(),
        request.miner.clone(),
        sha256,
        text.len() as u64,
        Timestamp::now(),
    );
    submission.repository = Some(RepositoryRecord {
        commitment: text.to_owned(),
        committed_at: request.committed_at,
        coldkey: None,
        tree_sha256: None,
        manifest_sha256: None,
        validation: None,
        review: None,
    });
    if let Some(earlier) = &superseded {
        submission.record_superseded(earlier, Timestamp::now());
    }
    campaign_dir.save_submission(&submission)?;
    walk(campaign_dir, &campaign, &mut submission, fetcher)?;
    Ok(RepositoryOutcome::New(submission))
}

/// A second commitment of the same repository and commit: a `duplicate` event; when it
/// was committed earlier by a registered competition hotkey, it takes the record over
/// (the earlier commitment wins), and the event names the one it displaced.
fn take_over_if_earlier(
    campaign_dir: &CampaignDir,
    submission: &mut Submission,
    request: &RepositoryRequest<'_>,
) -> Result<(), RepositoryError> {
    let registry = campaign_dir.load_miners()?;
    let earlier = submission
        .repository
        .as_ref()
        .is_some_and(|r| request.committed_at < r.committed_at);
    let competitor = registry.get(request.miner).is_some_and(|m| {
        m.role == Some(receipts::model::MinerRole::Competition) && m.coldkey.is_some()
    });
    if earlier && competitor && &submission.miner != request.miner {
        let displaced = std::mem::replace(&mut submission.miner, request.miner.clone());
        if let Some(record) = submission.repository.as_mut() {
            record.committed_at = request.committed_at;
            record.coldkey = registry.get(request.miner).and_then(|m| m.coldkey.clone());
        }
        submission.record_duplicate(displaced, submission.commitment, Timestamp::now());
    } else {
        submission.record_duplicate(
            request.miner.clone(),
            submission.commitment,
            Timestamp::now(),
        );
    }
    Ok(())
}

/// Walks the repository gates from the record's state to `bench_queued` or `rejected`.
fn walk(
    campaign_dir: &CampaignDir,
    campaign: &receipts::model::Campaign,
    submission: &mut Submission,
    fetcher: &dyn Fetcher,
) -> Result<(), RepositoryError> {
    let spec = campaign.repository_spec();
    loop {
        let at = Timestamp::now();
        match submission.state {
            PipelineState::Committed => submission.transition(
                PipelineState::PickedUp,
                at,
                "gates job claimed by this referee worker",
            )?,
            PipelineState::PickedUp => {
                if !admit(campaign_dir, &spec, submission)? {
                    campaign_dir.save_submission(submission)?;
                    return Ok(());
                }
                fetch(campaign_dir, &spec, submission, fetcher)?;
            }
            PipelineState::Fetched => {
                let coldkey = submission
                    .repository
                    .as_ref()
                    .and_then(|r| r.coldkey.clone())
                    .unwrap_or_default();
                let reason = format!(
                    "hotkey `{}` is a registered competition hotkey of coldkey `{coldkey}`; within the queue's limits (max_pending_per_coldkey {}, max_per_window {} over {} h)",
                    submission.miner,
                    spec.max_pending_per_coldkey,
                    spec.max_per_window,
                    spec.rate_window_h
                );
                submission.transition(PipelineState::Verified, at, reason)?;
            }
            PipelineState::Verified => validate(campaign_dir, submission)?,
            PipelineState::SurfaceOk => {
                if !review::review_stage(campaign_dir, campaign, submission)? {
                    campaign_dir.save_submission(submission)?;
                    return Ok(());
                }
            }
            _ => return Ok(()),
        }
        campaign_dir.save_submission(submission)?;
    }
}

/// The queue's decision; a refusal rejects the record at gate `verified`. Returns
/// whether it was admitted.
fn admit(
    campaign_dir: &CampaignDir,
    spec: &receipts::model::RepositorySpec,
    submission: &mut Submission,
) -> Result<bool, RepositoryError> {
    let registry = campaign_dir.load_miners()?;
    let others: Vec<Submission> = campaign_dir
        .list_submissions()?
        .into_iter()
        .filter(|s| s.sha256 != submission.sha256)
        .collect();
    let committed_at = submission
        .repository
        .as_ref()
        .map_or_else(Timestamp::now, |r| r.committed_at);
    let coldkey = registry
        .get(&submission.miner)
        .and_then(|m| m.coldkey.clone());
    if let Some(record) = submission.repository.as_mut() {
        record.coldkey = coldkey;
    }
    match queue::admit(&registry, spec, &others, &submission.miner, committed_at) {
        Ok(_) => Ok(true),
        Err(rejection) => {
            submission.reject(
                receipts::model::Gate::Verified,
                Timestamp::now(),
                rejection.to_string(),
            )?;
            Ok(false)
        }
    }
}

/// The fetch gate; a rejection rejects the record at gate `fetched`.
fn fetch(
    campaign_dir: &CampaignDir,
    spec: &receipts::model::RepositorySpec,
    submission: &mut Submission,
    fetcher: &dyn Fetcher,
) -> Result<(), RepositoryError> {
    let Some(commitment) = submission
        .repository
        .as_ref()
        .and_then(|r| r.commitment.parse::<Commitment>().ok())
    else {
        submission.reject(
            receipts::model::Gate::Fetched,
            Timestamp::now(),
            "the recorded commitment does not parse",
        )?;
        return Ok(());
    };
    let dest = tree_dir(campaign_dir, &submission.sha256);
    let tree = if dest.join("tree.json").exists() {
        FetchedTree::load(&dest)?
    } else {
        match fetcher.fetch(&commitment, spec.max_file_bytes, &dest)? {
            FetchOutcome::Fetched(tree) => tree,
            FetchOutcome::Rejected(rejections) => {
                let reason = rejections
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ");
                submission.reject(receipts::model::Gate::Fetched, Timestamp::now(), reason)?;
                return Ok(());
            }
        }
    };
    if let Some(record) = submission.repository.as_mut() {
        record.tree_sha256 = Some(tree.tree_sha256);
    }
    submission.transition(
        PipelineState::Fetched,
        Timestamp::now(),
        format!(
            "fetched commit `{}` past the fetch gate: {} files, {} in-tree symlinks, tree sha256 {}",
            commitment.commit(),
            tree.files.len(),
            tree.symlinks.len(),
            tree.tree_sha256
        ),
    )?;
    Ok(())
}

/// The manifest checks; errors reject the record at gate `surface_ok`. The copy of what
/// they read is published first, at `repositories/<sha256>.json`
/// (`receipts::rules::repository::copy`), for the verifier to run them again.
fn validate(
    campaign_dir: &CampaignDir,
    submission: &mut Submission,
) -> Result<(), RepositoryError> {
    let tree = FetchedTree::load(&tree_dir(campaign_dir, &submission.sha256))?;
    let (manifest_sha256, validation, copy) = manifest::validate_tree_with_copy(&tree);
    let path = copy_path(campaign_dir.root(), &submission.sha256);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(IoError::at("creating", dir))?;
    }
    let bytes = serde_json::to_vec_pretty(&copy).map_err(|e| IoError {
        action: "serializing",
        path: path.clone(),
        source: std::io::Error::other(e),
    })?;
    receipts::fsutil::write_atomic(&path, &bytes, 0o644).map_err(IoError::at("writing", &path))?;
    let reason = if validation.passed {
        format!(
            "`{MANIFEST_PATH}` (sha256 {}) holds: schema, track, base manifest, Dockerfile pins, weights' sha256, recipe and licences",
            manifest_sha256.map(|s| s.to_string()).unwrap_or_default()
        )
    } else {
        validation
            .errors
            .iter()
            .map(|e| format!("`{}`: {}: {}", e.field, e.reason, e.message))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let passed = validation.passed;
    if let Some(record) = submission.repository.as_mut() {
        record.manifest_sha256 = manifest_sha256;
        record.validation = Some(validation);
    }
    if passed {
        submission.transition(PipelineState::SurfaceOk, Timestamp::now(), reason)?;
    } else {
        submission.reject(receipts::model::Gate::SurfaceOk, Timestamp::now(), reason)?;
    }
    Ok(())
}
