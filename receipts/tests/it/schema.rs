//! The committed JSON Schemas of the round and rerun predicates must match the types. When the model
//! changes, regenerate it with `REFEREE_BLESS=1 cargo test -p receipts --test it schema`.

use std::path::Path;

use receipts::schema::{
    RERUN_SCHEMA_PATH, ROUND_SCHEMA_PATH, rerun_schema_json, round_schema_json,
};

#[test]
fn schema_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(ROUND_SCHEMA_PATH);
    let generated = round_schema_json();
    if testkit::blessing() {
        std::fs::write(&path, &generated).expect("write schema");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is stale: run `REFEREE_BLESS=1 cargo test -p receipts --test it schema` and commit it",
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

#[test]
fn rerun_schema_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(RERUN_SCHEMA_PATH);
    let generated = rerun_schema_json();
    if testkit::blessing() {
        std::fs::write(&path, &generated).expect("write schema");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is stale: run `REFEREE_BLESS=1 cargo test -p receipts --test it schema` and commit it",
        path.display()
    );
}

#[test]
fn rerun_schema_names_the_predicate_type() {
    let schema: serde_json::Value = serde_json::from_str(&rerun_schema_json()).expect("json");
    assert_eq!(schema["$id"], receipts::model::RERUN_PREDICATE_TYPE);
    assert_eq!(schema["title"], "RerunRecord");
    let required: Vec<&str> = schema["required"]
        .as_array()
        .expect("required")
        .iter()
        .filter_map(|f| f.as_str())
        .collect();
    for field in ["original", "tolerance", "round", "entries", "verdict"] {
        assert!(
            required.contains(&field),
            "{field} not required: {required:?}"
        );
    }
}
