//! The wire names of the receipts' enums, as the receipts spell them: what the pages
//! show and the machine files (CSV, JSON, feeds) write. One home, so a page and its CSV
//! never disagree.

use receipts::model::{EntryStatus, Role, RoundStatus};
use serde::Serialize;

/// A role as the receipts spell it: `baseline`, `incumbent`, `challenger`.
pub fn role_name(role: Role) -> &'static str {
    match role {
        Role::Baseline => "baseline",
        Role::Incumbent => "incumbent",
        Role::Challenger => "challenger",
    }
}

/// An entry status as the receipts spell it: `scored`, `disqualified`, `infra_failed`.
pub fn entry_status_name(status: EntryStatus) -> &'static str {
    match status {
        EntryStatus::Scored => "scored",
        EntryStatus::Disqualified => "disqualified",
        EntryStatus::InfraFailed => "infra_failed",
    }
}

/// A round status as the receipts spell it: `complete`, `infra_failed`, `inconclusive`.
pub fn round_status_name(status: RoundStatus) -> &'static str {
    match status {
        RoundStatus::Complete => "complete",
        RoundStatus::InfraFailed => "infra_failed",
        RoundStatus::Inconclusive => "inconclusive",
    }
}

/// Any unit-variant enum of the receipts as its JSON spells it (`llama-cpp-python`,
/// `logprobs`); `?` for a value that does not serialise to a string.
pub fn wire_name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => "?".to_owned(),
    }
}
