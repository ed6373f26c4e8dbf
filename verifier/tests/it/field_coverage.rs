//! Field coverage (issue 41): every leaf field of the current predicate's schema
//! (`receipts/schema/round-v7.schema.json`) is either recomputed — changed alone in the
//! real v7 round `fixtures/v7-round/` (or, for a field it holds no value for, in the
//! newest older real round that does), the receipt re-signed, a named check other than
//! the schema's fails; or, for a field no fixture holds, shown so by a named test of
//! this binary ([`COVERED_BY_TESTS`]) — or listed in [`verifier::ATTESTED_FIELDS`] with
//! the reason no offline check can recompute it. The fields neither holds yet are [`NOT_YET_COVERED`],
//! which can only shrink: a field that becomes covered must leave it, and a new field of
//! the schema that is neither covered nor attested fails here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rayon::prelude::*;
use serde_json::Value;

use crate::forge::*;
use verifier::{ATTESTED_FIELDS, CheckName, FailureReason};

/// Fields of the v7 schema that no single-field forgery of the fixture is caught on and
/// that are not attested: the fixture holds no value for them (a Docker entry, a drift
/// check, a disqualification, a round failure …) or no check recomputes them yet. The
/// work left of issue 41, in schema order.
const NOT_YET_COVERED: &[&str] = &[
    "capabilityProbe",
    "capabilityProbe.findings[].feature",
    "capabilityProbe.findings[].field",
    "capabilityProbe.findings[].status",
    "clientSelfTest.scheduling.priority",
    "clientSelfTest.sendLagP99Us",
    "drift",
    "drift.runs[].hostLoad",
    "entries[].correctness.firstFailingGroup",
    "entries[].correctness.firstFailingItem",
    "entries[].disqualification",
    "entries[].disqualification.logTail[]",
    "entries[].disqualification.reason",
    "entries[].disqualification.reason.correctness_deadline.deadlineS",
    "entries[].disqualification.reason.engine_oom_killed.exitCode",
    "entries[].disqualification.reason.engine_oom_killed.limitMb",
    "entries[].disqualification.reason.invalid_token_id.item",
    "entries[].disqualification.reason.invalid_token_id.run",
    "entries[].disqualification.reason.invalid_token_id.status",
    "entries[].disqualification.reason.load_outputs_diverge.boundMicroNats",
    "entries[].disqualification.reason.load_outputs_diverge.gapMicroNats",
    "entries[].disqualification.reason.load_outputs_diverge.item",
    "entries[].disqualification.reason.load_outputs_diverge.run",
    "entries[].disqualification.reason.prompt_echo_mismatch.expected",
    "entries[].disqualification.reason.prompt_echo_mismatch.got",
    "entries[].disqualification.reason.prompt_echo_mismatch.item",
    "entries[].disqualification.reason.prompt_echo_mismatch.position",
    "entries[].disqualification.reason.remeasure_infra_failed.infraFailedRounds",
    "entries[].disqualification.reason.run_invalid_twice.pass",
    "entries[].disqualification.reason.secret_in_output.files",
    "entries[].engine.api",
    "entries[].engine.api.profile",
    "entries[].engine.api.testedAgainstRealServer",
    "entries[].engine.api.tokenCount",
    "entries[].engine.api.tokenIds",
    "entries[].engine.docker",
    "entries[].engine.docker.binds[]",
    "entries[].engine.docker.cpusetCpus",
    "entries[].engine.docker.gpus[]",
    "entries[].engine.docker.imageId",
    "entries[].engine.docker.imageReference",
    "entries[].engine.docker.init",
    "entries[].engine.docker.manifestDigest",
    "entries[].engine.docker.memoryBytes",
    "entries[].engine.docker.network",
    "entries[].engine.docker.networkInternal",
    "entries[].engine.docker.readOnlyRoot",
    "entries[].engine.docker.tmpfs.*",
    "entries[].engine.docker.unprivileged",
    "entries[].engine.image",
    "entries[].engine.image.config_digest",
    "entries[].engine.image.manifest_digest",
    "entries[].engine.image.name",
    "entries[].engine.isolation",
    "entries[].engine.isolation.roPaths[]",
    "entries[].engine.memoryLimitMb",
    "entries[].infraFailure",
    "entries[].infraFailure.failure.aaSpreadBp",
    "entries[].infraFailure.failure.baseline",
    "entries[].infraFailure.failure.boundBp",
    "entries[].infraFailure.failure.consecutive",
    "entries[].infraFailure.failure.control",
    "entries[].infraFailure.failure.counted",
    "entries[].infraFailure.failure.deadlineS",
    "entries[].infraFailure.failure.driftBp",
    "entries[].infraFailure.failure.entry",
    "entries[].infraFailure.failure.feature",
    "entries[].infraFailure.failure.field",
    "entries[].infraFailure.failure.item",
    "entries[].infraFailure.failure.kind",
    "entries[].infraFailure.failure.marginBp",
    "entries[].infraFailure.failure.pass",
    "entries[].infraFailure.failure.position",
    "entries[].infraFailure.failure.reference",
    "entries[].infraFailure.failure.requests",
    "entries[].infraFailure.failure.required",
    "entries[].infraFailure.kind",
    "entries[].infraFailure.stealMs",
    "entries[].infraFailure.wallMs",
    "noise.aaSpreadBp",
    "noise.baselineSpreadBp",
    "outcome.decision",
    "outcome.decision.rule",
    "outcome.decision.winner.miner",
    "outcome.decision.winner.patch",
    "outcome.leaderAfter",
    "outcome.leaderAfter.miner",
    "outcome.leaderAfter.patch",
    "outcome.leaderBefore",
    "outcome.leaderBefore.miner",
    "outcome.leaderBefore.patch",
    "outcome.reason",
    "outcome.reason.aaSpreadBp",
    "outcome.reason.baseline",
    "outcome.reason.boundBp",
    "outcome.reason.consecutive",
    "outcome.reason.control",
    "outcome.reason.counted",
    "outcome.reason.deadlineS",
    "outcome.reason.driftBp",
    "outcome.reason.entry",
    "outcome.reason.feature",
    "outcome.reason.field",
    "outcome.reason.item",
    "outcome.reason.kind",
    "outcome.reason.marginBp",
    "outcome.reason.pass",
    "outcome.reason.position",
    "outcome.reason.reference",
    "outcome.reason.requests",
    "outcome.reason.required",
    "outcome.remeasure",
    "outcome.remeasure.infraFailedRounds",
    "previousReceipt",
    "steps[].group",
    "steps[].phase",
    "steps[].status",
    "tokenCount",
    "transparencyLog",
    "transparencyLog.openingWitness",
    "transparencyLog.openingWitness.checkpointSize",
    "transparencyLog.openingWitness.name",
    "transparencyLog.openingWitness.timestampS",
    "transparencyLog.origin",
    "transparencyLog.roundOpenedIndex",
    "transparencyLog.status",
];

/// Fields no fixture holds a value for (none was sealed with a beacon: their seeds were drawn
/// before beacons), each shown recomputed by a test of this binary that changes it in a
/// round sealed with it and sees the named check fail: (field, `module::test`). The
/// coverage test holds each name to a test function that exists.
const COVERED_BY_TESTS: &[(&str, &str)] = &[
    (
        "beacon",
        "paired::a_beacon_dropped_or_its_source_changed_after_sealing_fails",
    ),
    (
        "beacon.round",
        "paired::a_beacon_round_other_than_the_one_named_at_opening_or_another_secret_fails",
    ),
    (
        "beacon.signature",
        "paired::a_drand_beacon_signed_for_another_round_fails",
    ),
    (
        "beacon.source",
        "paired::a_beacon_dropped_or_its_source_changed_after_sealing_fails",
    ),
    (
        "beacon.value",
        "paired::a_beacon_value_changed_after_sealing_fails",
    ),
    (
        "evaluatorSecret",
        "paired::a_beacon_round_other_than_the_one_named_at_opening_or_another_secret_fails",
    ),
    (
        "practice",
        "paired::a_beacon_round_other_than_the_one_named_at_opening_or_another_secret_fails",
    ),
    (
        "entries[].disqualification.reason.left_cpu_set.cpu",
        "paired::a_left_cpu_set_disqualification_stands_on_a_crashed_row_of_its_pass_outside_the_set",
    ),
    (
        "entries[].disqualification.reason.left_cpu_set.pass",
        "paired::a_left_cpu_set_disqualification_stands_on_a_crashed_row_of_its_pass_outside_the_set",
    ),
    (
        "entries[].disqualification.reason.output_length.long",
        "forgery_compliance::an_output_length_claim_on_exact_lengths_fails_compliance_output_length",
    ),
    (
        "entries[].disqualification.reason.output_length.pass",
        "forgery_compliance::an_output_length_claim_on_exact_lengths_fails_compliance_output_length",
    ),
    (
        "entries[].disqualification.reason.output_length.short",
        "forgery_compliance::an_output_length_claim_on_exact_lengths_fails_compliance_output_length",
    ),
    (
        "entries[].disqualification.reason.text_not_ids.item",
        "forgery_compliance::a_text_not_ids_claim_on_equal_texts_fails_compliance_text_against_ids",
    ),
    (
        "entries[].disqualification.reason.text_not_ids.run",
        "forgery_compliance::a_text_not_ids_claim_on_equal_texts_fails_compliance_text_against_ids",
    ),
];

/// The real rounds the fields are forged in, newest first.
const FIXTURES: [&str; 7] = [
    "v7-round", "v6-round", "v5-round", "v4-round", "v3-round", "v2-round", "v1-round",
];

/// Every leaf of the schema, by path (`entries[].passes[].status`: arrays as `[]`, a
/// map's values as `*`), with the string values it may take (`const`s and `enum`s of
/// its alternatives; empty for a free value). An optional object is also a leaf of its
/// own (its `null` alternative): dropping it is a change too.
fn schema_leaves(schema: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let mut leaves = BTreeMap::new();
    walk(
        schema,
        &schema["$defs"],
        String::new(),
        &mut Vec::new(),
        &mut leaves,
    );
    leaves
}

fn walk(
    node: &Value,
    defs: &Value,
    path: String,
    refs: &mut Vec<String>,
    leaves: &mut BTreeMap<String, BTreeSet<String>>,
) {
    if let Some(target) = node["$ref"].as_str() {
        let name = target.rsplit('/').next().unwrap_or(target).to_owned();
        if refs.contains(&name) {
            leaves.entry(path).or_default();
            return;
        }
        refs.push(name.clone());
        walk(&defs[&name], defs, path, refs, leaves);
        refs.pop();
        return;
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(alternatives) = node[key].as_array() {
            for alternative in alternatives {
                walk(alternative, defs, path.clone(), refs, leaves);
            }
            return;
        }
    }
    let join = |key: &str| {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    };
    if let Some(properties) = node["properties"].as_object() {
        for (key, value) in properties {
            walk(value, defs, join(key), refs, leaves);
        }
        return;
    }
    if node["additionalProperties"].is_object() {
        walk(&node["additionalProperties"], defs, join("*"), refs, leaves);
        return;
    }
    if node["items"].is_object() {
        walk(&node["items"], defs, format!("{path}[]"), refs, leaves);
        return;
    }
    let values = leaves.entry(path).or_default();
    if let Some(value) = node["const"].as_str() {
        values.insert(value.to_owned());
    }
    for value in node["enum"].as_array().into_iter().flatten() {
        if let Some(value) = value.as_str() {
            values.insert(value.to_owned());
        }
    }
}

/// Every value of `value` at a schema leaf: (its leaf path, its JSON pointer).
fn instances(
    value: &Value,
    leaves: &BTreeMap<String, BTreeSet<String>>,
    path: &str,
    pointer: &str,
    out: &mut Vec<(String, String)>,
) {
    let leaf = if leaves.contains_key(path) {
        Some(path.to_owned())
    } else {
        // A map's value: `inputs[].digest.sha256` is the leaf `inputs[].digest.*`.
        let parent = path.rsplit_once('.').map(|(p, _)| format!("{p}.*"));
        parent.filter(|p| leaves.contains_key(p))
    };
    if let Some(leaf) = &leaf
        && !value.is_null()
    {
        out.push((leaf.clone(), pointer.to_owned()));
    }
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                let inner = match &leaf {
                    Some(l) if l.ends_with(".*") => l.clone(),
                    _ if path.is_empty() => key.clone(),
                    _ => format!("{path}.{key}"),
                };
                instances(v, leaves, &inner, &format!("{pointer}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                instances(
                    v,
                    leaves,
                    &format!("{path}[]"),
                    &format!("{pointer}/{i}"),
                    out,
                );
            }
        }
        _ => {}
    }
}

/// `value` changed, staying within what the schema allows where that is known: an
/// optional object or array dropped (`null`), a boolean flipped, an integer raised by
/// one, a string to another value it may take, a percentile to another, a digest's
/// last hex digit, a time's last second digit, any other string with a character added.
fn changed(value: &Value, allowed: &BTreeSet<String>) -> Value {
    match value {
        Value::Bool(b) => Value::Bool(!b),
        Value::Number(n) => Value::from(n.as_u64().map_or(1, |n| n + 1)),
        Value::String(s) => {
            if let Some(other) = allowed.iter().find(|a| *a != s) {
                return Value::String(other.clone());
            }
            // A percentile (`p50`, `p99.9`) to another one.
            if s.starts_with('p')
                && s.len() > 1
                && s[1..].bytes().all(|b| b.is_ascii_digit() || b == b'.')
            {
                return Value::String(if s == "p99" { "p90" } else { "p99" }.to_owned());
            }
            let hex = s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit());
            let time = s.len() == 20 && s.ends_with('Z') && s.as_bytes()[10] == b'T';
            let mut out = s.clone();
            if hex || time {
                let at = if hex { 63 } else { 18 };
                let digit = if &s[at..=at] == "0" { "1" } else { "0" };
                out.replace_range(at..=at, digit);
            } else {
                out.push('x');
            }
            Value::String(out)
        }
        Value::Object(_) | Value::Array(_) | Value::Null => Value::Null,
    }
}

/// The checks (not the schema's) that fail when the receipt's value at `pointer` in the
/// fixture `fixture` becomes `value`, everything else as sealed.
fn caught_by(fixture: &str, pointer: &str, value: Value) -> BTreeSet<&'static str> {
    let dir = tempfile::tempdir().expect("tempdir");
    forge_from(
        &fixture_named(fixture),
        dir.path(),
        |_| {},
        |_| {},
        |p| *p.pointer_mut(pointer).expect("the pointer exists") = value,
    );
    let report = verify(dir.path());
    report
        .failures()
        .filter(|c| !matches!(c.reason, Some(FailureReason::NotRun { .. })))
        .map(|c| c.name)
        .filter(|n| *n != CheckName::PredicateSchema)
        .map(|n| n.as_str())
        .collect()
}

#[test]
fn every_leaf_field_is_recomputed_by_a_named_check_or_attested() {
    let schema_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../receipts/schema/round-v7.schema.json");
    let schema: Value =
        serde_json::from_slice(&std::fs::read(schema_path).expect("schema")).expect("json");
    let leaves = schema_leaves(&schema);
    let attested: BTreeSet<&str> = ATTESTED_FIELDS.iter().map(|f| f.path).collect();
    let tested: BTreeSet<&str> = COVERED_BY_TESTS.iter().map(|(field, _)| *field).collect();
    let not_leaves: Vec<&&str> = attested
        .iter()
        .chain(&tested)
        .chain(NOT_YET_COVERED)
        .filter(|p| !leaves.contains_key(**p))
        .collect();
    assert_eq!(not_leaves, Vec::<&&str>::new(), "listed but not a field");
    let missing_tests: Vec<&str> = COVERED_BY_TESTS
        .iter()
        .map(|(_, test)| *test)
        .filter(|test| !test_exists(test))
        .collect();
    assert_eq!(missing_tests, Vec::<&str>::new(), "named but not a test");

    // Each field is forged in the newest fixture that holds a value for it: the v7 round
    // first, then the older real rounds (a drift check, for one, is only in v1 and v2),
    // whose checks of that field are the current verifier's.
    let mut first: BTreeMap<&str, (&str, String, Value)> = BTreeMap::new();
    for fixture in FIXTURES {
        // Re-signed unchanged, each fixture passes: a failure below is the field's.
        let dir = tempfile::tempdir().expect("tempdir");
        forge_from(&fixture_named(fixture), dir.path(), |_| {}, |_| {}, |_| {});
        let report = verify(dir.path());
        assert!(report.passed(), "{fixture}: {:#?}", failed(&report));
        let receipt = statement(&fixture_named(fixture), "receipt.dsse.json");
        let mut found = Vec::new();
        instances(&receipt["predicate"], &leaves, "", "", &mut found);
        for (leaf, pointer) in found {
            let Some((leaf, _)) = leaves.get_key_value(&leaf) else {
                continue;
            };
            let value = receipt["predicate"].pointer(&pointer).expect("instance");
            first
                .entry(leaf.as_str())
                .or_insert_with(|| (fixture, pointer, value.clone()));
        }
    }
    let outcomes: Vec<(&str, BTreeSet<&'static str>)> = leaves
        .keys()
        .filter(|leaf| !attested.contains(leaf.as_str()))
        .filter_map(|leaf| Some((leaf.as_str(), first.get(leaf.as_str())?)))
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|(leaf, (fixture, pointer, value))| {
            let forged = changed(value, &leaves[leaf]);
            (leaf, caught_by(fixture, pointer, forged))
        })
        .collect();
    let caught: BTreeSet<&str> = outcomes
        .iter()
        .filter(|(_, checks)| !checks.is_empty())
        .map(|(leaf, _)| *leaf)
        .collect();
    let gaps: Vec<&str> = leaves
        .keys()
        .map(String::as_str)
        .filter(|leaf| !attested.contains(leaf) && !caught.contains(leaf))
        .filter(|leaf| !tested.contains(leaf))
        .collect();
    // A field the fixture now holds and a single-field forgery catches leaves the list.
    let caught_and_listed: Vec<&&str> = tested.iter().filter(|t| caught.contains(**t)).collect();
    assert_eq!(
        caught_and_listed,
        Vec::<&&str>::new(),
        "caught on the fixture: no longer needs its test listed"
    );
    assert_eq!(
        gaps, NOT_YET_COVERED,
        "a field is neither recomputed by a named check nor attested, or one listed as \
         not yet covered now is"
    );
}

/// Whether `module::test` names a `#[test]` function of this binary's
/// `tests/it/<module>.rs`.
fn test_exists(name: &str) -> bool {
    let Some((module, test)) = name.split_once("::") else {
        return false;
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it")
        .join(format!("{module}.rs"));
    std::fs::read_to_string(path)
        .is_ok_and(|source| source.contains(&format!("#[test]\nfn {test}()")))
}

/// content/verifying.md publishes exactly the attested fields, each with its reason, in
/// the list's order: neither can drift from the other.
#[test]
fn the_attested_fields_are_published_with_their_reasons() {
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../content/verifying.md");
    let doc = std::fs::read_to_string(doc_path).expect("verifying.md");
    let missing: Vec<&str> = ATTESTED_FIELDS
        .iter()
        .filter(|f| !doc.contains(&format!("| `{}` | {} |", f.path, f.reason)))
        .map(|f| f.path)
        .collect();
    assert_eq!(missing, Vec::<&str>::new());
    // And the published table lists nothing else: its rows are the list, in order.
    let table: Vec<&str> = doc
        .lines()
        .skip_while(|line| !line.starts_with("| attested field |"))
        .skip(2)
        .take_while(|line| line.starts_with("| `"))
        .collect();
    let rows: Vec<String> = ATTESTED_FIELDS
        .iter()
        .map(|f| format!("| `{}` | {} |", f.path, f.reason))
        .collect();
    assert_eq!(table, rows);
}
