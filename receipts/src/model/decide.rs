//! The `decide` workload kind and the s1-pro-speed track (content/s1-pro-speed.md): an
//! entry is a sidecar answering one decision per request on `POST /internal/v1/decide`,
//! and the request and response shapes are the campaign's, declared here, never coded.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ModelError;

/// The environment variable that carries a run's bearer token to its engine, and only to
/// it: a decide request without `Authorization: Bearer <token>` must be refused with 401.
pub const DECIDE_TOKEN_ENV: &str = "REFEREE_DECIDE_TOKEN";

/// What an entry serves (the campaign's `workload_kind`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WorkloadKind {
    /// OpenAI completions, streamed (every campaign before `decide` existed).
    #[default]
    Completions,
    /// One decision per request from a sidecar ([`DecideContract`]).
    Decide,
}

/// The competition track a campaign runs (the campaign's `track`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum Track {
    /// Faster s1-pro with provably identical outputs: pinned or reproduced weights, the
    /// logit-distance gate on fresh items, decisions/s at the SLA.
    #[serde(rename = "s1-pro-speed")]
    S1ProSpeed,
    /// Faster or cheaper s1-fast: the sealed capability and s1-pro agreement gates,
    /// decisions/s at the SLA, and cost per decision (content/s1-fast-speed.md).
    #[serde(rename = "s1-fast-speed")]
    S1FastSpeed,
}

impl Track {
    /// The track's name as campaigns and receipts write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::S1ProSpeed => "s1-pro-speed",
            Self::S1FastSpeed => "s1-fast-speed",
        }
    }
}

/// What the declared vector of a response holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VectorKind {
    /// Log-probabilities over the decision set, in nats, compared as they are.
    #[default]
    Logprobs,
    /// Raw logits over the decision set: turned into log-probabilities (log-softmax)
    /// before they are compared, so a constant shift is no distance.
    Logits,
}

/// The decision API of a `decide` campaign (`[decide]`): where the sidecar listens, the
/// request template, where the decision and the compared vector sit in a response, the
/// declared decision set, and the logit-distance gate on fresh items.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecideContract {
    /// The decision route (default `/internal/v1/decide`).
    #[serde(default = "default_path")]
    pub path: String,
    /// The readiness route (default `/health`).
    #[serde(default = "default_health")]
    pub health_path: String,
    /// The request body, JSON text: every string exactly `{{prompt}}` becomes the workload
    /// item's prompt, every string exactly `{{item_index}}` its index (a number).
    pub request_template: String,
    /// RFC 6901 JSON pointer to the decision (a string) in a response.
    pub decision_pointer: String,
    /// RFC 6901 JSON pointer to the vector the gate compares: an array in the order of
    /// `decisions`, or an object keyed by decision.
    pub vector_pointer: String,
    /// What the vector holds (default `logprobs`).
    #[serde(default)]
    pub vector: VectorKind,
    /// The declared decision set: a response naming anything else fails
    /// `decisionOutsideSet`.
    pub decisions: Vec<String>,
    /// Fresh items the logit-distance gate compares (default 2,000).
    #[serde(default = "default_gate_items")]
    pub gate_items: u32,
    /// Items per group whose mean the gate bounds (default 3).
    #[serde(default = "default_group_size")]
    pub group_size: u32,
    /// The bound on every group's mean distance, micro-nats (default 200,000: 0.20 nats).
    #[serde(default = "default_group_bound")]
    pub group_mean_bound_micro_nats: u64,
    /// The bound on every item's distance, micro-nats (default 2,000,000: 2.0 nats).
    #[serde(default = "default_item_bound")]
    pub item_bound_micro_nats: u64,
}

fn default_path() -> String {
    "/internal/v1/decide".into()
}
fn default_health() -> String {
    "/health".into()
}
fn default_gate_items() -> u32 {
    2_000
}
fn default_group_size() -> u32 {
    3
}
fn default_group_bound() -> u64 {
    200_000
}
fn default_item_bound() -> u64 {
    2_000_000
}

impl DecideContract {
    /// The contract's request template parsed.
    ///
    /// Errors: [`ModelError::InvalidField`] naming `decide.request_template` when it is
    /// not JSON.
    pub fn template(&self) -> Result<serde_json::Value, ModelError> {
        serde_json::from_str(&self.request_template).map_err(|e| ModelError::InvalidField {
            field: "decide.request_template".into(),
            value: self.request_template.clone(),
            rule: format!("must be JSON text: {e}"),
        })
    }

    /// Checks the contract: routes and pointers start with `/`, the template is JSON,
    /// the decision set is non-empty without duplicates, the gate has items, a group
    /// size and bounds with the group bound at most the item bound.
    ///
    /// Errors: [`ModelError::InvalidField`] naming the first field that breaks its rule.
    pub fn validate(&self) -> Result<(), ModelError> {
        let invalid = |field: &str, value: String, rule: &str| {
            Err(ModelError::InvalidField {
                field: format!("decide.{field}"),
                value,
                rule: rule.into(),
            })
        };
        for (field, value) in [
            ("path", &self.path),
            ("health_path", &self.health_path),
            ("decision_pointer", &self.decision_pointer),
            ("vector_pointer", &self.vector_pointer),
        ] {
            if !value.starts_with('/') {
                return invalid(field, value.clone(), "must start with `/`");
            }
        }
        self.template()?;
        let mut seen = std::collections::BTreeSet::new();
        if self.decisions.is_empty() {
            return invalid(
                "decisions",
                String::new(),
                "must name at least one decision",
            );
        }
        if let Some(twice) = self.decisions.iter().find(|d| !seen.insert(d.as_str())) {
            return invalid("decisions", twice.clone(), "must not repeat a decision");
        }
        if self.gate_items == 0 || self.group_size == 0 {
            return invalid(
                "gate_items",
                format!("{}/{}", self.gate_items, self.group_size),
                "the gate needs at least one item and a group size of at least 1",
            );
        }
        if self.group_mean_bound_micro_nats > self.item_bound_micro_nats {
            return invalid(
                "group_mean_bound_micro_nats",
                self.group_mean_bound_micro_nats.to_string(),
                "must not exceed item_bound_micro_nats",
            );
        }
        Ok(())
    }
}

impl super::Campaign {
    /// What entries serve: `workload_kind`, absent = completions.
    pub fn effective_workload_kind(&self) -> WorkloadKind {
        self.workload_kind.unwrap_or_default()
    }

    /// The `decide` fields together: `workload_kind = "decide"` exactly when `[decide]`
    /// is there (and valid), and track `s1-pro-speed` only with `decide` and pinned
    /// weights.
    ///
    /// Errors: [`ModelError::InvalidField`] naming the field.
    pub(crate) fn validate_decide(&self) -> Result<(), ModelError> {
        let invalid = |field: &str, value: &str, rule: &str| {
            Err(ModelError::InvalidField {
                field: field.into(),
                value: value.into(),
                rule: rule.into(),
            })
        };
        match (self.effective_workload_kind(), &self.decide) {
            (WorkloadKind::Decide, Some(contract)) => contract.validate()?,
            (WorkloadKind::Decide, None) => {
                return invalid("decide", "", "workload_kind = \"decide\" needs [decide]");
            }
            (WorkloadKind::Completions, Some(_)) => {
                return invalid(
                    "decide",
                    "[decide]",
                    "only a workload_kind = \"decide\" campaign takes [decide]",
                );
            }
            (WorkloadKind::Completions, None) => {}
        }
        if let Some(track @ Track::S1ProSpeed) = self.track {
            if self.effective_workload_kind() != WorkloadKind::Decide {
                return invalid(
                    "track",
                    track.as_str(),
                    "s1-pro-speed entries are decision sidecars: workload_kind = \"decide\"",
                );
            }
            if self.model.weights.is_empty() {
                return invalid(
                    "model.weights",
                    "[]",
                    "s1-pro-speed pins its weight files with their sha256",
                );
            }
        }
        Ok(())
    }
}

/// The logit-distance gate's per-item file of one entry of a `decide` campaign
/// (`correctness/<entry>.json`, named by the entry's correctness summary): both declared
/// vectors of every fresh item, what the verifier recomputes each item's distance, every
/// group mean and the verdict from (content/s1-pro-speed.md). Integers only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecideItems {
    /// The declared decisions, in the order of every vector of the file.
    pub decisions: Vec<String>,
    /// Items per group, taken in order.
    pub group_size: u32,
    /// Bound on every group mean, micro-nats.
    pub group_mean_bound_micro_nats: u64,
    /// Bound on every item, micro-nats.
    pub item_bound_micro_nats: u64,
    /// Every item, in order.
    pub items: Vec<DecideItem>,
    /// Every group's mean distance, micro-nats (integer, rounded half up), in order.
    pub group_means_micro_nats: Vec<u64>,
    /// Whose answers the file judged: the round, the entry, its patch and engine config,
    /// and the pass of the run that answered. The verifier holds it to the entry citing
    /// the file (`correctness.entry`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_for: Option<super::MeasuredFor>,
}

/// One fresh item of the gate: the entry's and the reference's declared vector, as
/// log-probabilities in micro-nats in the declared order, and their distance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecideItem {
    /// Item index within the gate's items, from 0.
    pub index: u32,
    /// sha256 of the prompt's UTF-8 bytes (the workload's correctness item).
    pub prompt_sha256: super::Sha256Hex,
    /// The entry's decision.
    pub decision: String,
    /// The entry's vector, micro-nats.
    pub entry_micro_nats: Vec<i64>,
    /// The reference runtime's vector, micro-nats.
    pub reference_micro_nats: Vec<i64>,
    /// The largest difference over the declared decisions, micro-nats.
    pub distance_micro_nats: u64,
}

/// What a round of a `decide` campaign records of its track (content/s1-pro-speed.md; v8,
/// absent for completions campaigns). Every entry's throughput is then in milli-decisions
/// per second: one decision per request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecideRound {
    /// The campaign's track, when it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub track: Option<Track>,
    /// What the entries served: always `decide`.
    pub workload_kind: WorkloadKind,
    /// Every entry whose engine started, with the weight files it served (an
    /// s1-pro-speed campaign's only), in entry order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub weights: Vec<EntryWeights>,
}

/// The weights identity of one entry of an s1-pro-speed round: the campaign's pinned
/// file names as found in the entry's tree, each with the sha256 of its bytes, hashed
/// before its engine started. The verifier holds them to the campaign's `model.weights`
/// (`receipts::rules::weights::compare`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EntryWeights {
    /// The entry's index.
    pub entry: u32,
    /// How its files were established: `pinned` (byte-identical to the campaign's pins).
    pub source: WeightsSource,
    /// Its files with their digests, by name.
    pub files: Vec<super::WeightFile>,
}

/// How an entry's weights were established.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WeightsSource {
    /// The files are the campaign's pinned ones, byte for byte.
    Pinned,
}
