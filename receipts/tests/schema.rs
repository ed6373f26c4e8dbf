//! The committed JSON Schema of the round predicate must match the types. When the model
//! changes, regenerate it with `UPDATE_SCHEMA=1 cargo test -p receipts --test schema`.

use std::path::Path;

use receipts::schema::{ROUND_SCHEMA_PATH, round_schema_json};

#[test]
fn schema_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(ROUND_SCHEMA_PATH);
    let generated = round_schema_json();
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &generated).expect("write schema");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is stale: run `UPDATE_SCHEMA=1 cargo test -p receipts --test schema` and commit it",
        path.display()
    );
}

#[test]
fn schema_names_the_predicate_type() {
    let schema: serde_json::Value = serde_json::from_str(&round_schema_json()).expect("json");
    assert_eq!(schema["$id"], receipts::model::ROUND_PREDICATE_TYPE);
    assert_eq!(schema["title"], "RoundRecord");
    assert!(
        schema["required"]
            .as_array()
            .expect("required")
            .iter()
            .any(|f| f == "campaign")
    );
}
