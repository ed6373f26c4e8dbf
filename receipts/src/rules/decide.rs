//! The `decide` workload kind's contract as arithmetic (content/s1-pro-speed.md): a
//! request filled from the campaign's template, the decision and the compared vector read
//! from a response at the campaign's JSON pointers, and the logit distance between two
//! such vectors, in integer micro-nats like every distance of [`super::correctness`].

use serde_json::Value;

use super::correctness::{Verdict, quantize_logprob, verdict};
use super::workload::Item;
use crate::model::{
    CorrectnessSpec, DecideContract, DecideItem, DecideItems, MeasuredFor, Sha256Hex, VectorKind,
};

/// The template placeholder replaced by the item's prompt (a string).
pub const PROMPT_PLACEHOLDER: &str = "{{prompt}}";
/// The template placeholder replaced by the item's index (a number).
pub const ITEM_INDEX_PLACEHOLDER: &str = "{{item_index}}";

/// How a sidecar's response breaks the declared contract.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecideError {
    /// Nothing at the decision pointer, or not a string there.
    #[error("no decision (a string) at `{pointer}`")]
    NoDecision {
        /// The campaign's decision pointer.
        pointer: String,
    },
    /// A decision not in the declared set.
    #[error("decision `{decision}` is not one of the declared decisions")]
    OutsideSet {
        /// The decision as answered (escape it before printing).
        decision: String,
    },
    /// Nothing usable at the vector pointer: not an array of one number per declared
    /// decision, nor an object with a number for each.
    #[error("no vector over the {expected} declared decisions at `{pointer}`")]
    NoVector {
        /// The campaign's vector pointer.
        pointer: String,
        /// How many values it needs.
        expected: usize,
    },
    /// A value of the vector is not finite, or too large to be a log-probability.
    #[error("the value for decision `{decision}` is not a finite log-probability")]
    NotFinite {
        /// The decision it stands for.
        decision: String,
    },
}

/// The request body of `item` from the contract's parsed `template`: every string exactly
/// [`PROMPT_PLACEHOLDER`] becomes the prompt, every string exactly
/// [`ITEM_INDEX_PLACEHOLDER`] the item index; everything else as written. Every entry of a
/// round is sent the same bytes.
pub fn fill_template(template: &Value, item: &Item) -> Value {
    match template {
        Value::String(s) if s == PROMPT_PLACEHOLDER => Value::String(item.prompt.clone()),
        Value::String(s) if s == ITEM_INDEX_PLACEHOLDER => Value::from(item.item_index),
        Value::Array(values) => {
            Value::Array(values.iter().map(|v| fill_template(v, item)).collect())
        }
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), fill_template(v, item)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The index in the declared set of the decision `response` answers.
///
/// Errors: [`DecideError::NoDecision`], [`DecideError::OutsideSet`].
pub fn read_decision(response: &Value, contract: &DecideContract) -> Result<usize, DecideError> {
    let decision = response
        .pointer(&contract.decision_pointer)
        .and_then(Value::as_str)
        .ok_or_else(|| DecideError::NoDecision {
            pointer: contract.decision_pointer.clone(),
        })?;
    contract
        .decisions
        .iter()
        .position(|d| d == decision)
        .ok_or_else(|| DecideError::OutsideSet {
            decision: decision.to_owned(),
        })
}

/// The declared vector of `response` as log-probabilities in micro-nats, one per declared
/// decision in the declared order: read as given for [`VectorKind::Logprobs`], through
/// log-softmax for [`VectorKind::Logits`], then quantized ([`quantize_logprob`]).
///
/// Errors: [`DecideError::NoVector`], [`DecideError::NotFinite`].
pub fn read_vector(response: &Value, contract: &DecideContract) -> Result<Vec<i64>, DecideError> {
    let no_vector = || DecideError::NoVector {
        pointer: contract.vector_pointer.clone(),
        expected: contract.decisions.len(),
    };
    let values: Vec<f64> = match response.pointer(&contract.vector_pointer) {
        Some(Value::Array(values)) if values.len() == contract.decisions.len() => values
            .iter()
            .map(Value::as_f64)
            .collect::<Option<_>>()
            .ok_or_else(no_vector)?,
        Some(Value::Object(fields)) if fields.len() == contract.decisions.len() => contract
            .decisions
            .iter()
            .map(|d| fields.get(d).and_then(Value::as_f64))
            .collect::<Option<_>>()
            .ok_or_else(no_vector)?,
        _ => return Err(no_vector()),
    };
    let values = match contract.vector {
        VectorKind::Logprobs => values,
        VectorKind::Logits => log_softmax(&values),
    };
    values
        .iter()
        .zip(&contract.decisions)
        .map(|(v, decision)| {
            quantize_logprob(*v).ok_or_else(|| DecideError::NotFinite {
                decision: decision.clone(),
            })
        })
        .collect()
}

/// log-softmax with the maximum subtracted first (no overflow for large logits); a
/// non-finite input leaves non-finite outputs, which quantizing refuses.
fn log_softmax(logits: &[f64]) -> Vec<f64> {
    let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = logits.iter().map(|l| (l - max).exp()).sum();
    let log_sum = max + sum.ln();
    logits.iter().map(|l| l - log_sum).collect()
}

/// One item's distance, micro-nats: the largest |entry − reference| over the declared
/// decisions (both vectors in the declared order, as [`read_vector`] returns them); a
/// decision one side lacks counts as the other side's whole magnitude.
pub fn item_distance_micro_nats(entry: &[i64], reference: &[i64]) -> u64 {
    let len = entry.len().max(reference.len());
    (0..len)
        .map(|i| {
            let e = entry.get(i).copied().unwrap_or(0);
            let r = reference.get(i).copied().unwrap_or(0);
            e.abs_diff(r)
        })
        .max()
        .unwrap_or(0)
}

/// The gate's verdict on the item distances (in item order) with the contract's groups and
/// bounds: every group mean within `group_mean_bound_micro_nats`, no item above
/// `item_bound_micro_nats`, as [`verdict`] judges a completions campaign.
pub fn gate_verdict(items_micro_nats: &[u64], contract: &DecideContract) -> Verdict {
    let spec = CorrectnessSpec {
        items: contract.gate_items,
        group_size: contract.group_size,
        group_mean_bound_micro_nats: contract.group_mean_bound_micro_nats,
        item_bound_micro_nats: contract.item_bound_micro_nats,
        ..CorrectnessSpec::default()
    };
    verdict(items_micro_nats, &spec)
}

/// One gate item as a sidecar answered it: the item, the decision and the declared vector
/// in micro-nats ([`read_vector`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    /// The gate item's index, from 0.
    pub index: u32,
    /// sha256 of its prompt.
    pub prompt_sha256: Sha256Hex,
    /// The decision answered.
    pub decision: String,
    /// The declared vector, micro-nats, in the declared order.
    pub vector: Vec<i64>,
}

/// The gate's per-item file of one entry: its `answers` against the reference runtime's
/// (`reference`, the same items in the same order), each item's distance, the group means
/// and the contract's bounds. An item the reference lacks is compared with an empty
/// vector (its whole magnitude, [`item_distance_micro_nats`]).
pub fn gate_file(
    contract: &DecideContract,
    answers: &[Answer],
    reference: &[Answer],
    measured_for: Option<MeasuredFor>,
) -> DecideItems {
    let items: Vec<DecideItem> = answers
        .iter()
        .map(|answer| {
            let theirs = reference
                .iter()
                .find(|r| r.index == answer.index)
                .map_or(&[][..], |r| r.vector.as_slice());
            DecideItem {
                index: answer.index,
                prompt_sha256: answer.prompt_sha256,
                decision: answer.decision.clone(),
                entry_micro_nats: answer.vector.clone(),
                reference_micro_nats: theirs.to_vec(),
                distance_micro_nats: item_distance_micro_nats(&answer.vector, theirs),
            }
        })
        .collect();
    let distances: Vec<u64> = items.iter().map(|i| i.distance_micro_nats).collect();
    DecideItems {
        decisions: contract.decisions.clone(),
        group_size: contract.group_size,
        group_mean_bound_micro_nats: contract.group_mean_bound_micro_nats,
        item_bound_micro_nats: contract.item_bound_micro_nats,
        group_means_micro_nats: gate_verdict(&distances, contract).group_means_micro_nats,
        items,
        measured_for,
    }
}

/// The gate recomputed from a per-item file's vectors alone, as a verifier does: every
/// item's distance from its two vectors, then [`gate_verdict`] with `contract`'s groups
/// and bounds (the campaign's, never the file's). Returns the distances, in item order,
/// and the verdict (its group means included).
pub fn recompute_gate(file: &DecideItems, contract: &DecideContract) -> (Vec<u64>, Verdict) {
    let distances: Vec<u64> = file
        .items
        .iter()
        .map(|i| item_distance_micro_nats(&i.entry_micro_nats, &i.reference_micro_nats))
        .collect();
    let verdict = gate_verdict(&distances, contract);
    (distances, verdict)
}
