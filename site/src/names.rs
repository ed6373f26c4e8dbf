//! The wire names of the receipts' enums beyond the round model's (whose names are
//! their own `as_str()`, receipts::model): what the pages show and the machine files
//! (CSV, JSON, feeds) write. One home, so a page and its CSV never disagree.

use serde::Serialize;

/// Any unit-variant enum of the receipts as its JSON spells it (`llama-cpp-python`,
/// `logprobs`); `?` for a value that does not serialise to a string.
pub fn wire_name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => "?".to_owned(),
    }
}
