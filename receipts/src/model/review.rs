//! The review of a repository submission as recorded (content/review.md): the static
//! findings and the rules digest they come from, the LLM review when the campaign names
//! one, the combined verdict, the copy-detection fingerprint and outcome, and a person's
//! resolution of a `NEEDS-HUMAN`. The review itself runs in the `review` crate; copy
//! detection's decision is [`crate::rules::copy`], so the verifier recomputes it from
//! these records.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ids::{Sha256Hex, Timestamp};

/// What a finding of a rule does to the verdict.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// A person reads the finding and decides (`needs-human`).
    NeedsHuman,
    /// The submission is refused (`fail`).
    Fail,
}

impl Severity {
    /// How the rules file and the findings spell it: `fail`, `needs-human`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Fail => "fail",
            Severity::NeedsHuman => "needs-human",
        }
    }
}

/// A review's verdict; anything but `PASS` stops the pipeline.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub enum Verdict {
    /// Nothing found.
    #[serde(rename = "PASS")]
    Pass,
    /// A person decides.
    #[serde(rename = "NEEDS-HUMAN")]
    NeedsHuman,
    /// Refused.
    #[serde(rename = "FAIL")]
    Fail,
}

impl Verdict {
    /// `PASS`, `NEEDS-HUMAN` or `FAIL`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::NeedsHuman => "NEEDS-HUMAN",
            Verdict::Fail => "FAIL",
        }
    }

    /// Reads [`Verdict::as_str`]'s spelling; anything else is none.
    pub fn parse(text: &str) -> Option<Self> {
        [Verdict::Pass, Verdict::NeedsHuman, Verdict::Fail]
            .into_iter()
            .find(|v| v.as_str() == text)
    }

    /// The combined verdict: any `FAIL` gives `FAIL`, else any `NEEDS-HUMAN` gives
    /// `NEEDS-HUMAN`, else `PASS` (none at all is `PASS`).
    pub fn combine(verdicts: impl IntoIterator<Item = Verdict>) -> Verdict {
        verdicts.into_iter().max().unwrap_or(Verdict::Pass)
    }

    /// What findings of `severity` give on their own.
    pub fn of_severity(severity: Severity) -> Verdict {
        match severity {
            Severity::Fail => Verdict::Fail,
            Severity::NeedsHuman => Verdict::NeedsHuman,
        }
    }

    /// The verdict of a set of findings: [`Verdict::combine`] of their severities.
    pub fn of_findings(findings: &[Finding]) -> Verdict {
        Verdict::combine(findings.iter().map(|f| Verdict::of_severity(f.severity)))
    }
}

/// One hit of one rule.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Finding {
    /// The file, `/`-separated below the tree's root.
    pub file: String,
    /// The 1-based line; none for a finding about the whole file (an archive, its size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// The rule's id.
    pub rule: String,
    /// The rule's severity.
    pub severity: Severity,
    /// What matched: the rules file's entry (`requests`, `api.openai.com`), or what the
    /// detector measured (`base64 run of 344 characters`). Submission text: escape it
    /// before a terminal or a page shows it.
    pub detail: String,
}

/// What copy detection compares, recorded so that anyone can recompute a copy decision
/// from the records alone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fingerprint {
    /// The weights files' SHA-256s, less the base model's pinned files (every submission
    /// of a track may ship those).
    pub weights: BTreeSet<Sha256Hex>,
    /// SHA-256 of the sorted, newline-joined normalised digests of the runtime's files.
    pub code: Sha256Hex,
    /// How many runtime files the code digest covers; 0 compares equal to nothing.
    pub code_files: u32,
}

/// Why a submission is a copy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum CopyReason {
    /// A weights file (beyond the base model's) has the same SHA-256 as one of the
    /// original's.
    IdenticalWeights {
        /// The shared hash (the smallest, when several are shared).
        sha256: Sha256Hex,
    },
    /// The runtime's normalised code equals the original's.
    SameRuntimeCode {
        /// The shared code digest.
        code: Sha256Hex,
    },
}

/// What copy detection decided about a submission.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum CopyOutcome {
    /// No earlier commitment matches and none is declared as its origin.
    Original,
    /// A copy: disqualified, and the original is credited.
    Copy {
        /// The earliest commitment it copies (its submission id).
        original: String,
        /// Why.
        reason: CopyReason,
    },
    /// Declared as derived from `original` (`derivedFrom`): it must beat that submission
    /// by the campaign's margin (the round's decision applies it).
    Derived {
        /// The submission it is derived from (the sha256 of the commitment the manifest
        /// names: a repository submission's id).
        original: String,
    },
}

/// The LLM review as recorded: who, the verdict, the transcript and its digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LlmReview {
    /// The reviewer: its command line as the campaign wrote it.
    pub command: String,
    /// Its verdict: the transcript's first line.
    pub verdict: Verdict,
    /// SHA-256 of the transcript's bytes.
    pub transcript_sha256: Sha256Hex,
    /// Everything it printed, verdict line included (published with the findings).
    pub transcript: String,
}

/// A person's decision on a `NEEDS-HUMAN` review (`referee review --resolve`), signed by
/// the evaluator key and logged as a `review-resolution` statement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReviewResolution {
    /// `PASS` (queued for a round) or `FAIL` (rejected at gate `review`).
    pub verdict: Verdict,
    /// The person's reason, as given.
    pub reason: String,
    /// When it was decided.
    pub resolved_at: Timestamp,
    /// SHA-256 of the statement's envelope file
    /// (`statements/review-resolution/<sha256>.dsse.json`).
    pub envelope_sha256: Sha256Hex,
    /// The statement's entry in the transparency log.
    pub log_index: u64,
}

/// A repository submission's review, as its record holds it
/// ([`super::RepositoryRecord::review`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReviewRecord {
    /// The rules file's `version`.
    pub rules_version: u32,
    /// SHA-256 of the rules file's bytes.
    pub rules_digest: Sha256Hex,
    /// Every finding, sorted by file, line and rule.
    pub findings: Vec<Finding>,
    /// [`Verdict::of_findings`] of `findings`.
    pub static_verdict: Verdict,
    /// The LLM review; none when the campaign names no reviewer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmReview>,
    /// [`Verdict::combine`] of the static and the LLM verdicts.
    pub verdict: Verdict,
    /// When the review was made: copy detection compared the submission with the
    /// commitments of the campaign reviewed at or before this time (and committed
    /// before it).
    pub reviewed_at: Timestamp,
    /// The submission the manifest says this one is derived from (`derivedFrom`, as the
    /// sha256 of that commitment: its submission id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub derived_from: Option<String>,
    /// What copy detection compared.
    pub fingerprint: Fingerprint,
    /// What copy detection decided against the campaign's earlier commitments.
    pub copy: CopyOutcome,
    /// A person's decision, only on a `NEEDS-HUMAN` verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<ReviewResolution>,
}

impl ReviewRecord {
    /// The verdict that decides the pipeline: a copy is `FAIL`; else the resolution's
    /// when there is one; else the review's.
    pub fn decision(&self) -> Verdict {
        if matches!(self.copy, CopyOutcome::Copy { .. }) {
            return Verdict::Fail;
        }
        self.resolution.as_ref().map_or(self.verdict, |r| r.verdict)
    }
}

/// An entry's review as its round receipt carries it (v8; content/review.md, In the
/// round): what let a repository submission run, taken from the copy of its review
/// record in the bundle (`record`), which the verifier recomputes it from
/// ([`crate::rules::review::entry_review`]). Absent for the baseline and for a diff.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EntryReview {
    /// Bundle-relative path of the copy of the submission's [`ReviewRecord`]
    /// (`inputs/reviews/<sha256>.json`, [`crate::layout::review_input`]), an input of the
    /// round.
    pub record: String,
    /// The rules file's `version`.
    pub rules_version: u32,
    /// SHA-256 of the rules file's bytes: one of the rules files this build knows
    /// ([`crate::rules::review::KNOWN_RULES`]).
    pub rules_digest: Sha256Hex,
    /// The review's verdict, the static and the LLM verdicts combined.
    pub verdict: Verdict,
    /// What let it run: [`ReviewRecord::decision`], `PASS` for every seated entry.
    pub decision: Verdict,
    /// The submission its manifest says it is derived from (`derivedFrom`): it must beat
    /// that one by the campaign's margin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub derived_from: Option<String>,
    /// A person's resolution of a `NEEDS-HUMAN` review, with its signed statement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<EntryResolution>,
    /// v9: the margin, basis points, this challenger had to clear against the incumbent
    /// because `derivedFrom` names the incumbent and the campaign's `derived_margin_bp` is
    /// larger than its overtake margin ([`crate::rules::review::derived_margin_bp`]);
    /// absent when the overtake margin held it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub derived_margin_bp: Option<u32>,
}

/// A person's resolution as a round receipt carries it ([`EntryReview::resolution`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EntryResolution {
    /// The person's verdict: `PASS` or `FAIL`.
    pub verdict: Verdict,
    /// Bundle-relative path of the copy of the signed `review-resolution` statement
    /// (`inputs/review-resolutions/<envelope sha256>.dsse.json`,
    /// [`crate::layout::resolution_input`]), an input of the round.
    pub statement: String,
    /// The keyid of the evaluator key that signed it (the statement's signature's).
    pub keyid: String,
}
