//! Repository submissions (content/repository-submissions.md): a campaign whose
//! submissions are repositories pinned at a commit rather than diffs, the limits of its
//! per-coldkey queue, the role a registered hotkey plays, and what a repository
//! submission's record holds beside the pipeline (the commitment, the fetched tree's and
//! the manifest's digests, the manifest's validation result).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ids::{Sha256Hex, Timestamp};

/// What a campaign's submissions are: `"diff"` (a unified diff against the baseline,
/// content/submitting.md) or `"repository"` (a repository at a pinned commit with a
/// `reax-submission.json` manifest).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SubmissionKind {
    /// A unified diff against the pinned baseline.
    #[default]
    Diff,
    /// A repository at a pinned commit, `<URL>@<40-hex commit>`.
    Repository,
}

impl SubmissionKind {
    /// The name written in `campaign.toml`.
    pub fn as_str(&self) -> &'static str {
        match self {
            SubmissionKind::Diff => "diff",
            SubmissionKind::Repository => "repository",
        }
    }
}

/// `[repository]` of a campaign of kind `"repository"`: the fetch gate's size cap and
/// the rate-limited queue per coldkey. Every field has a default; the table itself may be
/// absent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RepositorySpec {
    /// The largest file a fetched repository may hold, bytes (for a Git LFS file, the
    /// size its pointer declares, checked before anything is downloaded). Default
    /// 53,687,091,200 (50 GiB, the Hugging Face Hub's own limit on one file).
    #[serde(default = "defaults::max_file_bytes")]
    pub max_file_bytes: u64,
    /// The most submissions of one coldkey's hotkeys that may wait at once (admitted and
    /// not yet `rejected`, `scored` or `disqualified`). Default 2.
    #[serde(default = "defaults::max_pending_per_coldkey")]
    pub max_pending_per_coldkey: u32,
    /// The most submissions one coldkey's hotkeys may have admitted within any
    /// `rate_window_h` hours, by commitment time. Default 4.
    #[serde(default = "defaults::max_per_window")]
    pub max_per_window: u32,
    /// The length of the sliding window of `max_per_window`, hours. Default 24.
    #[serde(default = "defaults::rate_window_h")]
    pub rate_window_h: u32,
}

impl Default for RepositorySpec {
    fn default() -> Self {
        Self {
            max_file_bytes: defaults::max_file_bytes(),
            max_pending_per_coldkey: defaults::max_pending_per_coldkey(),
            max_per_window: defaults::max_per_window(),
            rate_window_h: defaults::rate_window_h(),
        }
    }
}

mod defaults {
    pub fn max_file_bytes() -> u64 {
        50 * 1024 * 1024 * 1024
    }
    pub fn max_pending_per_coldkey() -> u32 {
        2
    }
    pub fn max_per_window() -> u32 {
        4
    }
    pub fn rate_window_h() -> u32 {
        24
    }
}

/// The role a registered hotkey plays. One hotkey cannot be both: the chain allows one
/// commitment per hotkey and subnet, so an operator who wants both registers two.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MinerRole {
    /// A competition hotkey: it commits repository submissions.
    Competition,
    /// An inference miner: it serves traffic and may not submit.
    Inference,
}

impl MinerRole {
    /// The name written in records and on the command line.
    pub fn as_str(&self) -> &'static str {
        match self {
            MinerRole::Competition => "competition",
            MinerRole::Inference => "inference",
        }
    }
}

/// What a repository submission's record holds beside the pipeline
/// ([`super::Submission::repository`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RepositoryRecord {
    /// The commitment as published, `<repository URL>@<40-hex commit>` (at most 128
    /// bytes); the record's `sha256` is the sha256 of these bytes.
    pub commitment: String,
    /// When the commitment was made (its block's time): the earlier commitment wins a
    /// tie, and the rate limits count by it.
    pub committed_at: Timestamp,
    /// The coldkey of the committing hotkey's registration, once it was looked up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coldkey: Option<String>,
    /// The fetched tree's digest (content/repository-submissions.md, Tree digest), once
    /// fetched: a later push to the repository cannot change it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_sha256: Option<Sha256Hex>,
    /// sha256 of the exact bytes of `reax-submission.json` at the commit, once read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_sha256: Option<Sha256Hex>,
    /// The manifest's validation result, once validated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<ManifestValidation>,
    /// The review before anything of it runs (content/review.md), once reviewed: the
    /// findings, the verdict, copy detection and a person's resolution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<super::ReviewRecord>,
}

/// The result of validating a repository's `reax-submission.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManifestValidation {
    /// Whether every check passed (`errors` is empty).
    pub passed: bool,
    /// Every error found, each naming its field; empty when it passed.
    pub errors: Vec<ManifestFieldError>,
}

/// One manifest error: the field it is about and what is wrong, with a typed reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManifestFieldError {
    /// The field, as a JSON path in the manifest (`runtime.dockerfile`,
    /// `weights[2].sha256`) or a file of the repository (`README.md`).
    pub field: String,
    /// The typed reason, snake_case (`unpinned_base_image`, `licence_not_allowed`, …;
    /// content/repository-submissions.md lists them).
    pub reason: String,
    /// What is wrong, in words a miner can act on (untrusted text quoted raw).
    pub message: String,
}
