//! The JSON Schema of the round predicate, generated from [`RoundRecord`] by schemars and
//! committed at `receipts/schema/round-v3.schema.json` (content/receipts.md, Statement:
//! publish the schema at a stable path). The v1 and v2 schemas stay committed beside it, as they
//! were published. The test `schema_is_current` fails when the committed file is
//! stale; `UPDATE_SCHEMA=1 cargo test -p receipts --test schema` rewrites it.

use crate::model::{ROUND_PREDICATE_TYPE, RoundRecord};

/// Path of the committed schema, relative to the `receipts` crate root.
pub const ROUND_SCHEMA_PATH: &str = "schema/round-v3.schema.json";

/// The JSON Schema (draft 2020-12) of [`RoundRecord`], with `$id` set to
/// [`ROUND_PREDICATE_TYPE`], pretty-printed with a trailing newline.
pub fn round_schema_json() -> String {
    let mut schema = schemars::schema_for!(RoundRecord);
    schema.insert("$id".to_owned(), ROUND_PREDICATE_TYPE.into());
    // A schema of plain types always serializes; fall back to its debug form rather than
    // panic should that ever change.
    let mut text =
        serde_json::to_string_pretty(&schema).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}
