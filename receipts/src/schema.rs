//! The JSON Schema of the round predicate, generated from [`RoundRecord`] by schemars and
//! committed at `receipts/schema/round-v9.schema.json` (content/receipts.md, Statement:
//! publish the schema at a stable path). The v1, v2 and v3 schemas stay committed beside it, as they
//! were published. The rerun predicate's ([`RerunRecord`]) is committed at
//! `receipts/schema/rerun-v2.schema.json` (v1's stays committed as published). The tests `schema_is_current` and
//! `rerun_schema_is_current` fail when a committed file is stale; `REFEREE_BLESS=1 cargo
//! test -p receipts --test it schema` rewrites them.

use crate::model::{RERUN_PREDICATE_TYPE, ROUND_PREDICATE_TYPE, RerunRecord, RoundRecord};

/// Path of the committed schema, relative to the `receipts` crate root.
pub const ROUND_SCHEMA_PATH: &str = "schema/round-v9.schema.json";

/// The JSON Schema (draft 2020-12) of [`RoundRecord`], with `$id` set to
/// [`ROUND_PREDICATE_TYPE`], pretty-printed with a trailing newline.
pub fn round_schema_json() -> String {
    let mut schema = schemars::schema_for!(RoundRecord);
    schema.insert("$id".to_owned(), ROUND_PREDICATE_TYPE.into());
    pretty(&schema)
}

/// Path of the committed schema of the rerun predicate, relative to the `receipts` crate
/// root.
pub const RERUN_SCHEMA_PATH: &str = "schema/rerun-v2.schema.json";

/// The JSON Schema (draft 2020-12) of [`RerunRecord`], with `$id` set to
/// [`RERUN_PREDICATE_TYPE`], pretty-printed with a trailing newline.
pub fn rerun_schema_json() -> String {
    let mut schema = schemars::schema_for!(RerunRecord);
    schema.insert("$id".to_owned(), RERUN_PREDICATE_TYPE.into());
    pretty(&schema)
}

/// A schema pretty-printed with a trailing newline.
fn pretty(schema: &schemars::Schema) -> String {
    // A schema of plain types always serializes; fall back to its debug form rather than
    // panic should that ever change.
    let mut text =
        serde_json::to_string_pretty(&schema).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}
