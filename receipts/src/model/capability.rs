//! The capability probe of a round (content/engines.md, The capability probe): before any
//! entry runs, the baseline engine is started and asked a fixed set of tiny requests
//! under the campaign's API profile, one per feature the round needs. Each finding is
//! recorded; the first missing one makes the round `infra_failed` with
//! [`super::RoundFailure::CapabilityMissing`] before any entry runs, so no challenger is
//! judged on what the baseline cannot do. A `decide` campaign's probe asks its baseline
//! sidecar for the declared contract instead ([`CapabilityFeature::DECIDE`],
//! content/s1-pro-speed.md).

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ApiProfile, WorkloadKind};

/// The name of the timeline step the probe runs in: its `durationMs` fits inside it.
pub const CAPABILITY_PROBE_STEP: &str = "Probing the baseline engine's API";

/// What the baseline engine was asked, in the order the probe asks it.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum CapabilityFeature {
    /// The engine answers 200 on one of the profile's readiness routes within the
    /// campaign's `health_deadline_s`.
    Readiness,
    /// A streamed request of `max_tokens` output tokens, EOS suppressed, yields exactly
    /// that many tokens counted as the profile says (`token_count`): what every probe of
    /// the rate search needs.
    StreamedLength,
    /// A `usage.completion_tokens` the stream reports agrees with the tokens asked for;
    /// under `token_count = "usage"` the stream must report one.
    UsageAgreement,
    /// A non-streamed greedy request with `echo` and `logprobs: k` (the correctness
    /// client's path) returns exactly `max_tokens` generated tokens, each position with
    /// `k` distinct token ids (`token_ids`, `tokenizer`).
    TopKLogprobs,
    /// The echoed prompt, BOS put back where the profile says the echo strips it, starts
    /// with at most one BOS (`bos`, `bos_token_id`).
    EchoedPrompt,
    /// A token-id prompt (the echoed ids) is echoed back unchanged: the reference's
    /// teacher forcing sends prompts as ids (`token_id_prompts`). Needed only where the
    /// profile says prompts may be token ids.
    TokenIdPrompts,
    /// The text of the greedy request's prompt and output ids (the `detokenizer`
    /// endpoint) tokenizes back to exactly those ids (the `tokenizer` endpoint, BOS as
    /// it adds it) and, sent as a text prompt, is echoed as them: the reference's teacher
    /// forcing from text. Needed only where the profile says prompts may not be token
    /// ids (`token_id_prompts = false`).
    TextRoundTrip,
    /// A `decide` campaign's sidecar refuses a request without the run's bearer token
    /// with 401 on its decision route (`decide.path`).
    DecideToken,
    /// With the token, the sidecar answers a fresh item with a decision at the
    /// campaign's `decide.decision_pointer`, one of the declared `decide.decisions`.
    DecideDecision,
    /// That answer holds the compared vector at `decide.vector_pointer`: one finite
    /// log-probability per declared decision.
    DecideVector,
}

impl CapabilityFeature {
    /// Every feature, in the order the probe asks for them.
    pub const ALL: [CapabilityFeature; 7] = [
        CapabilityFeature::Readiness,
        CapabilityFeature::StreamedLength,
        CapabilityFeature::UsageAgreement,
        CapabilityFeature::TopKLogprobs,
        CapabilityFeature::EchoedPrompt,
        CapabilityFeature::TokenIdPrompts,
        CapabilityFeature::TextRoundTrip,
    ];

    /// Every feature a `decide` campaign's probe asks of its baseline sidecar, in order.
    pub const DECIDE: [CapabilityFeature; 4] = [
        CapabilityFeature::Readiness,
        CapabilityFeature::DecideToken,
        CapabilityFeature::DecideDecision,
        CapabilityFeature::DecideVector,
    ];

    /// The features the probe of a campaign of workload `kind` asks for, in order:
    /// [`Self::ALL`] for completions, [`Self::DECIDE`] for a decision sidecar.
    pub fn asked_for(kind: WorkloadKind) -> &'static [CapabilityFeature] {
        match kind {
            WorkloadKind::Completions => &Self::ALL,
            WorkloadKind::Decide => &Self::DECIDE,
        }
    }

    /// Whether a round under `api` needs this feature: teacher forcing goes through
    /// token-id prompts (`tokenIdPrompts`) where `token_id_prompts` is true and through
    /// text (`textRoundTrip`) where it is false; every other feature is always needed.
    /// A feature not needed is recorded [`FindingStatus::NotNeeded`], never asked.
    pub fn needed(self, api: &ApiProfile) -> bool {
        match self {
            CapabilityFeature::TokenIdPrompts => api.token_id_prompts,
            CapabilityFeature::TextRoundTrip => !api.token_id_prompts,
            _ => true,
        }
    }

    /// The name the receipt writes (`streamedLength`).
    pub fn as_str(self) -> &'static str {
        match self {
            CapabilityFeature::Readiness => "readiness",
            CapabilityFeature::StreamedLength => "streamedLength",
            CapabilityFeature::UsageAgreement => "usageAgreement",
            CapabilityFeature::TopKLogprobs => "topKLogprobs",
            CapabilityFeature::EchoedPrompt => "echoedPrompt",
            CapabilityFeature::TokenIdPrompts => "tokenIdPrompts",
            CapabilityFeature::TextRoundTrip => "textRoundTrip",
            CapabilityFeature::DecideToken => "decideToken",
            CapabilityFeature::DecideDecision => "decideDecision",
            CapabilityFeature::DecideVector => "decideVector",
        }
    }

    /// The campaign fields that can fix a missing finding of this feature (`[backend.api]`'s,
    /// a decision sidecar's `[decide]` contract, or `baseline.commit` for a baseline that
    /// does not keep the contract): a finding's `field` is one of them.
    pub fn fields(self) -> &'static [&'static str] {
        match self {
            CapabilityFeature::Readiness => &["backend.api.readiness", "decide.health_path"],
            CapabilityFeature::StreamedLength => &[
                "backend.api.token_count",
                "backend.api.token_ids",
                "backend.api.extra",
            ],
            CapabilityFeature::UsageAgreement => &["backend.api.token_count"],
            CapabilityFeature::TopKLogprobs => &[
                "backend.api.token_ids",
                "backend.api.tokenizer",
                "backend.api.extra",
            ],
            CapabilityFeature::EchoedPrompt => &["backend.api.bos", "backend.api.bos_token_id"],
            CapabilityFeature::TokenIdPrompts => &["backend.api.token_id_prompts"],
            CapabilityFeature::TextRoundTrip => &[
                "backend.api.token_id_prompts",
                "backend.api.detokenizer",
                "backend.api.tokenizer",
            ],
            CapabilityFeature::DecideToken => &["decide.path", "baseline.commit"],
            CapabilityFeature::DecideDecision => &[
                "decide.path",
                "decide.request_template",
                "decide.decision_pointer",
                "decide.decisions",
                "baseline.commit",
            ],
            CapabilityFeature::DecideVector => &[
                "decide.vector_pointer",
                "decide.decisions",
                "baseline.commit",
            ],
        }
    }
}

impl fmt::Display for CapabilityFeature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether the baseline engine showed a feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FindingStatus {
    /// It did.
    Ok,
    /// It did not: the round cannot be run on this profile.
    Missing,
    /// It was not asked: an earlier finding was missing (the engine never became ready,
    /// or the request it builds on failed).
    NotAsked,
    /// The round does not need it under the campaign's profile
    /// ([`CapabilityFeature::needed`]), so it was not asked.
    NotNeeded,
}

/// One finding of the capability probe.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CapabilityFinding {
    /// The feature asked for.
    pub feature: CapabilityFeature,
    /// What the engine showed.
    pub status: FindingStatus,
    /// What was observed, for people (`got 7 tokens, asked 8`); engine-controlled text
    /// inside it is escaped when shown.
    pub detail: String,
    /// For a missing finding, the `[backend.api]` field that would fix it (one of
    /// [`CapabilityFeature::fields`]); `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// The capability probe's findings ([`super::RoundRecord::capability_probe`]): one per
/// feature of [`CapabilityFeature::asked_for`] the campaign's workload kind, in that
/// order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CapabilityProbe {
    /// The findings, in [`CapabilityFeature::asked_for`] order.
    pub findings: Vec<CapabilityFinding>,
    /// How long the probe took, engine start to stop, ms (an observation).
    pub duration_ms: u64,
}

impl CapabilityProbe {
    /// The first missing finding, if any: the round's failure.
    pub fn first_missing(&self) -> Option<&CapabilityFinding> {
        self.findings
            .iter()
            .find(|f| f.status == FindingStatus::Missing)
    }
}
