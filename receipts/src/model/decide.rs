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
