//! The review of a repository submission before anything of it runs (content/review.md):
//! static rules kept as data in a versioned rules file ([`rules`]), applied to the
//! submission's tree with Python parsed by tree-sitter ([`scan`]); an optional LLM review
//! behind a trait ([`llm`]); the combined verdict ([`Verdict`]); and copy detection against
//! earlier commitments ([`copy`]).
//!
//! It works on a directory and a [`ReviewInput`]; intake's repository submissions fill one
//! from the fetched tree and its manifest.

pub mod copy;
pub mod llm;
mod python;
pub mod rules;
pub mod scan;
mod tree;

use std::path::PathBuf;

use receipts::fsutil::IoError;
use receipts::model::Sha256Hex;
use serde::Serialize;

pub use python::ParseError;
pub use receipts::model::Verdict;
pub use receipts::model::review::{Finding, Severity};
pub use rules::{RuleSet, RulesError};

/// What a review reads: the submission's tree and what its manifest says about it.
#[derive(Clone, Debug)]
pub struct ReviewInput {
    /// The tree's root directory (the repository at its pinned commit).
    pub root: PathBuf,
    /// The manifest's weights files: no rule reads them, and copy detection compares their
    /// hashes.
    pub weights: Vec<WeightFile>,
    /// The submission the manifest says this one is derived from (`derivedFrom`); copy
    /// detection records it ([`copy::commitment_of_tree`]): it must beat that one by the
    /// campaign's margin.
    pub derived_from: Option<String>,
    /// Strings that mark the campaign's benchmark (its id, its workload files' names), for
    /// the rules with `campaign_markers`.
    pub campaign_markers: Vec<String>,
}

/// One weights file of the manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeightFile {
    /// Its path below the tree's root, `/`-separated.
    pub path: String,
    /// Its SHA-256, as the manifest declares it (intake checks it against the bytes).
    pub sha256: Sha256Hex,
}

/// The static half of a review: which rules, what they found, what that gives.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StaticReview {
    /// The rules file's `version`.
    pub rules_version: u32,
    /// SHA-256 of the rules file's bytes.
    pub rules_digest: Sha256Hex,
    /// Every finding, sorted by file, line and rule.
    pub findings: Vec<Finding>,
    /// The combined verdict of the findings' severities.
    pub verdict: Verdict,
}

/// A whole review: the static review, the LLM's when the campaign names one, and the
/// combined verdict.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Review {
    /// The static review.
    #[serde(rename = "static")]
    pub static_review: StaticReview,
    /// The LLM review; none when the campaign names no reviewer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<llm::LlmReview>,
    /// [`Verdict::combine`] of the static and the LLM verdicts.
    pub verdict: Verdict,
}

/// Why a review could not be made (a finding is never an error).
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// A file or directory of the tree could not be read.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The Python grammar did not load.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// The LLM reviewer gave no verdict.
    #[error(transparent)]
    Llm(#[from] llm::LlmError),
}

/// Applies `rules` to the input's tree.
///
/// Errors: as [`scan::findings`].
pub fn static_review(input: &ReviewInput, rules: &RuleSet) -> Result<StaticReview, ReviewError> {
    let findings = scan::findings(input, rules)?;
    let verdict = Verdict::of_findings(&findings);
    Ok(StaticReview {
        rules_version: rules.version,
        rules_digest: rules.digest,
        findings,
        verdict,
    })
}

/// The static review, then the LLM review when `reviewer` is given (it sees the static
/// findings), and their combined verdict.
///
/// Errors: as [`static_review`]; [`ReviewError::Llm`] when the reviewer gives no verdict
/// (the pipeline stops: no verdict is not a `PASS`).
pub fn review(
    input: &ReviewInput,
    rules: &RuleSet,
    reviewer: Option<&dyn llm::LlmReviewer>,
) -> Result<Review, ReviewError> {
    let static_review = static_review(input, rules)?;
    let llm = match reviewer {
        Some(reviewer) => Some(reviewer.review(&llm::LlmRequest {
            tree: &input.root,
            rules_digest: static_review.rules_digest,
            findings: &static_review.findings,
        })?),
        None => None,
    };
    let verdict = Verdict::combine(
        std::iter::once(static_review.verdict).chain(llm.as_ref().map(|l| l.verdict)),
    );
    Ok(Review {
        static_review,
        llm,
        verdict,
    })
}
