//! Field coverage (issue 41): every leaf field of the current predicate's schema
//! (`receipts/schema/round-v9.schema.json`) is either recomputed — changed alone, in each
//! way the schema allows, in a bundle that holds it, the receipt re-signed, every change
//! fails and one fails a named check other than the schema's — or, for a field only a
//! chain recomputes or no fixture holds, shown so by a named test of this binary
//! ([`COVERED_BY_TESTS`]), or listed in [`verifier::ATTESTED_FIELDS`] with the reason no
//! offline check can recompute it. The bundles: the real rounds of `fixtures/` (newest
//! first; a logged one verified with its log checks, as `referee verify` runs them),
//! rounds [`DERIVED`] from them that pass every check, and the rounds the paired tests
//! build by hand. The fields neither holds yet are [`NOT_YET_COVERED`],
//! which can only shrink: a field that becomes covered must leave it, and a new field of
//! the schema that is neither covered nor attested fails here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde_json::Value;

use crate::forge::*;
use crate::forgery_logs::LoggedFixture;
use verifier::{ATTESTED_FIELDS, CheckName, FailureReason};

/// Fields of the v9 schema that no single-field forgery is caught on and that are not
/// attested: no bundle here holds a value for them yet. Their checks exist and are
/// tested; a sealed round of each track, added to [`FIXTURES`] in one line, takes them
/// off this list. The work left of issue 41, in schema order.
const NOT_YET_COVERED: &[&str] = &[
    // One value today, `pinned` (issue 46: the recipe re-run is not in a round yet), so
    // no other value to forge; the schema refuses any other
    // (`forgery_decide::a_weights_source_other_than_pinned_fails_the_schema`).
    "decide.weights[].source",
    // A run invalid for its telemetry (issue 50): no bundle holds one yet, and no CLI path
    // seals one on a GPU-less host: only an NVML reading (a hardware throttle reason, an
    // XID, a busy SM clock under `min_sm_clock_mhz`) makes a run invalid, the CPU twin's
    // readings never do. `host.telemetry` recomputes the violation from the run's file
    // (the forgeries of forgery_telemetry); a round sealed on a GPU takes these off.
    "entries[].infraFailure.violation.device",
    "entries[].infraFailure.violation.kind",
    "entries[].infraFailure.violation.mhz",
    "entries[].infraFailure.violation.minMhz",
    "entries[].infraFailure.violation.reason",
    "entries[].infraFailure.violation.tMs",
    "entries[].infraFailure.violation.xid",
    "entries[].passes[].telemetry.violation",
    "entries[].passes[].telemetry.violation.device",
    "entries[].passes[].telemetry.violation.kind",
    "entries[].passes[].telemetry.violation.mhz",
    "entries[].passes[].telemetry.violation.minMhz",
    "entries[].passes[].telemetry.violation.reason",
    "entries[].passes[].telemetry.violation.tMs",
    "entries[].passes[].telemetry.violation.xid",
    // A round on a rented pod (issue 49): no fixture holds one (sealing one needs a Slurm
    // cluster); `.ci/run`'s Slurm stage runs one end to end (tests/pod.rs), its `pod.agent`
    // passes and its re-signed forgeries fail it.
    "pod",
    "pod.allocations[].agentSha256",
    "pod.allocations[].id",
    "pod.allocations[].steps[]",
    "pod.backend",
];

/// Fields the forgeries above cannot show recomputed, each shown by a test of this
/// binary that changes it in a round holding it (or adds it to a round that may not hold
/// it) and sees the named check fail: (field, `module::test`). No fixture was sealed with
/// a beacon (their seeds were drawn before beacons); the previous receipt is the chain's
/// to recompute; no runner ever wrote a drift run's host load (drift ended with v2, host
/// loads began with v5); no Docker fixture was given GPUs. The coverage test holds each
/// name to a test function that exists.
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
        "previousReceipt",
        "forgery::a_fork_fails_chain_previous_receipt",
    ),
    (
        "entries[].disqualification.reason.caching.boundBp",
        "forgery_caching::a_caching_claim_on_an_honest_probe_fails_compliance_caching",
    ),
    (
        "entries[].disqualification.reason.caching.pass",
        "forgery_caching::a_caching_claim_on_an_honest_probe_fails_compliance_caching",
    ),
    (
        "entries[].disqualification.reason.caching.speedupBp",
        "forgery_caching::a_caching_claim_on_an_honest_probe_fails_compliance_caching",
    ),
    (
        "entries[].disqualification.reason.capability_below_incumbent.capabilityPpm",
        "forgery_fast::a_gate_failure_claimed_on_a_passing_row_fails_fast_track_gates",
    ),
    (
        "entries[].disqualification.reason.capability_below_incumbent.incumbentPpm",
        "forgery_fast::a_gate_failure_claimed_on_a_passing_row_fails_fast_track_gates",
    ),
    (
        "entries[].disqualification.reason.agreement_below_incumbent.agreementPpm",
        "forgery_fast::a_gate_failure_claimed_on_a_passing_row_fails_fast_track_gates",
    ),
    (
        "entries[].disqualification.reason.agreement_below_incumbent.incumbentPpm",
        "forgery_fast::a_gate_failure_claimed_on_a_passing_row_fails_fast_track_gates",
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
    (
        "drift.runs[].hostLoad",
        "forgery::a_drift_record_dropped_added_or_given_a_host_load_fails_drift_recomputed",
    ),
    (
        "entries[].engine.docker.gpus[]",
        "forgery_engines::container_gpus_other_than_the_campaigns_fail_engine_docker",
    ),
    (
        "entries[].review.derivedFrom",
        "forgery_review::a_review_field_changed_alone_fails_entries_review",
    ),
    (
        "entries[].review.derivedMarginBp",
        "forgery_review::a_review_field_changed_alone_fails_entries_review",
    ),
    (
        "entries[].review.resolution",
        "forgery_review::a_review_field_changed_alone_fails_entries_review",
    ),
    (
        "entries[].review.resolution.keyid",
        "forgery_review::a_review_field_changed_alone_fails_entries_review",
    ),
    (
        "entries[].review.resolution.statement",
        "forgery_review::a_review_field_changed_alone_fails_entries_review",
    ),
    (
        "entries[].review.resolution.verdict",
        "forgery_review::a_review_field_changed_alone_fails_entries_review",
    ),
];

/// The real rounds the fields are forged in, newest first. `v9-fast-round` is the
/// s1-fast-speed demo's round (`examples/s1-fast-speed/`: a decide round with its
/// `fastTrack`, the cheaper challenger seated on cost). Besides README's by-hand
/// round of each version (v9, v8 and v7 first), two v7 rounds of it sealed with its `[backend]` replaced by
/// the built-in engine run as a `process` command (`referee engine serve --config
/// {config} --listen-fd {listen_fd} --threads {threads}`) and its rate at 2 requests/s:
/// `v7-process-round` under the `vllm` API profile with `ro_paths =
/// ["/usr/share/zoneinfo"]` (complete: the capability probe, the engines' API record,
/// memory limit and read-only paths), and `v7-capability-round` under a profile
/// without token-id prompts or a tokenizer (`infra_failed` by the capability probe's
/// missing `textRoundTrip`: the typed round failure copied onto the challenger). And
/// `v7-docker-round`, the Docker demo's round (`examples/docker-demo/`: its base image
/// from the `referee` binary and the libraries `ldd` lists, its baseline image, the
/// submission built by `referee build --once`) at 2 requests/s within 500 ms, against a
/// private daemon (`scripts/dockerd`): every entry's container as the daemon reported it.
/// And `v9-logged-round`, README's by-hand round logged in a transparency log whose
/// campaign's `[log]` requires its witness on the opening and on each pass
/// ([`LoggedFixture`]).
/// And `v9-decide-round`, the s1-pro-speed demo's round (`examples/s1-pro-speed/`, sealed
/// with the CLI): a `decide` campaign's track
/// record, its sidecar's capability probe and the gate files over the declared vector.
/// And `v9-fast-round`, the s1-fast-speed demo's round (`examples/s1-fast-speed/`, sealed
/// with the CLI): its `fastTrack` record, cost seat included, and the agreement files.
/// And `v9-repository-round`, round 1 of the repository demo (`examples/repository-demo/`):
/// a reviewed repository submission seated from its fetched tree, its commitment text,
/// review record and review in the round.
/// And `v9-parallel-round`, README's by-hand round as a parallel round (`[parallel] gpus =
/// 2`, `[isolation] pin = false`, as `referee demo --parallel` makes its campaign, its SLA
/// bound at 5 s): the layout over two placeholder GPUs, each pass's placement drawn from
/// its seed and each run's GPUs.
///
/// A new fixture is one line here: `fixtures/<name>` (the bundle) and, for a logged
/// round, its proofs `fixtures/<name>.proof`, its log `fixtures/<stem>-tlog/` and the
/// keyring `fixtures/<stem>-keyring.json` holding the log and witness keys, `<stem>` being
/// `<name>` without `-round`. Its receipt and round-opened statement are re-signed with
/// the forger's key, which must leave it passing every check: a logged fixture is sealed
/// with that key as its evaluator key, so its logged round-opened statement is re-signed
/// byte for byte.
const FIXTURES: &[&str] = &[
    "v9-round",
    "v9-logged-round",
    "v9-decide-round",
    "v9-fast-round",
    "v9-repository-round",
    "v9-parallel-round",
    "v8-round",
    "v7-round",
    "v7-process-round",
    "v7-capability-round",
    "v7-docker-round",
    "v6-round",
    "v5-round",
    "v4-round",
    "v3-round",
    "v2-round",
    "v1-round",
];

/// A change of a fixture round's receipt, given the bundle's directory.
type Derive = fn(&Path, &mut Value);

/// Fixture rounds (the v9 one, a Docker one) changed into rounds that pass every check,
/// each (fixture, what it becomes, the change) with what the forgery tests make of it,
/// for fields the sealed rounds hold no value for.
const DERIVED: &[(&str, &str, Derive)] = &[
    (
        "v9-round",
        "the challenger disqualified with its log tail",
        |dir, predicate| {
            let tail = crate::forgery_logs::true_tail(dir);
            crate::forgery_logs::disqualify_challenger(dir, predicate, &tail);
        },
    ),
    (
        "v9-round",
        "the challenger's engine log withheld for the key it held",
        crate::forgery_secret::withhold_challenger_log,
    ),
    (
        "v9-round",
        "the challenger past its correctness deadline",
        crate::forgery_correctness::miss_correctness_deadline,
    ),
    (
        "v9-round",
        "the challenger's correctness failed",
        crate::forgery_correctness::fail_correctness,
    ),
    (
        "v9-round",
        "the challenger's sample diverging on an item",
        crate::forgery_sample::diverge_on_an_item,
    ),
    (
        "v9-round",
        "the challenger's sample diverging as a group",
        crate::forgery_sample::diverge_as_a_group,
    ),
    (
        "v9-round",
        "the challenger's sample over at too many positions",
        crate::forgery_sample::diverge_at_positions,
    ),
    (
        "v9-round",
        "the challenger's GPU at its software power cap and thermal slowdown",
        crate::forgery_telemetry::gpu_recorded_only,
    ),
    (
        "v7-docker-round",
        "the challenger's container killed for memory",
        crate::forgery_engines::oom_kill_challenger,
    ),
    (
        "v7-docker-round",
        "the baseline's image pulled from a registry",
        crate::forgery_engines::pull_baseline_image,
    ),
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
                // RFC 6901: a key's `~` and `/` escaped (a tmpfs mount point is a key).
                let key = key.replace('~', "~0").replace('/', "~1");
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

/// The changes of `value` a forger could make, staying within what the schema allows
/// where that is known: an optional object or array dropped (`null`), an object also
/// replaced by text (a `TypedOrText`'s other form), a boolean flipped, an integer raised
/// by one, a string to each other value it may take, a percentile to another, a digest's
/// last hex digit, a time's last second digit, any other string with a character added.
fn changes(value: &Value, allowed: &BTreeSet<String>) -> Vec<Value> {
    match value {
        Value::Bool(b) => vec![Value::Bool(!b)],
        Value::Number(n) => vec![Value::from(n.as_u64().map_or(1, |n| n + 1))],
        Value::String(s) => {
            let others: Vec<Value> = allowed
                .iter()
                .filter(|a| *a != s)
                .map(|a| Value::String(a.clone()))
                .collect();
            if !others.is_empty() {
                return others;
            }
            // A percentile (`p50`, `p99.9`) to another one.
            if s.starts_with('p')
                && s.len() > 1
                && s[1..].bytes().all(|b| b.is_ascii_digit() || b == b'.')
            {
                return vec![Value::String(
                    if s == "p99" { "p90" } else { "p99" }.to_owned(),
                )];
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
            vec![Value::String(out)]
        }
        Value::Object(_) => vec![Value::Null, Value::String("forged".to_owned())],
        Value::Array(_) | Value::Null => vec![Value::Null],
    }
}

/// A bundle fields are forged in: a real round of `fixtures/`, one [`DERIVED`] from the
/// fixtures, or a round built by hand by the paired tests
/// ([`crate::paired::built_rounds`]), sealed with the forger's key.
struct Source {
    /// The fixture's or the built round's name, for messages.
    name: String,
    /// Where the bundle is.
    dir: PathBuf,
    /// A logged fixture's log: its forgeries are verified with the log checks too.
    log: Option<LoggedFixture>,
    /// The checks that already fail in it unforged, with their targets: none in a real
    /// round; in a built one, sealed without the probe logs, correctness files and engine
    /// records of a real run, the checks of those. A forgery is caught by a check failing
    /// on a target it did not fail on before.
    before: BTreeSet<(&'static str, Option<String>)>,
    /// The derived or built round's directory, kept while the test runs.
    _built: Option<tempfile::TempDir>,
}

/// The report of `referee verify` on the bundle `dir` forged from `source`: a logged
/// fixture's with its log checks ([`LoggedFixture::verify`]).
fn verify_as(source: &Source, dir: &Path) -> verifier::VerifyReport {
    match &source.log {
        Some(log) => log.verify(dir),
        None => verify(dir),
    }
}

/// What verifying the bundle of `source` with the receipt's value at `pointer` changed
/// to `value` gives: (whether any check failed that did not before, the schema's
/// included; the checks other than the schema's that did). In a logged round,
/// `log.receipt` does not count: any change re-signs the receipt, which is then no longer
/// the one logged, and a forger holding the log key too would log the forged one; the
/// other log checks are against entries logged before the receipt existed (the opening,
/// its witness, each pass's measurement).
fn forged_in(source: &Source, pointer: &str, value: Value) -> (bool, BTreeSet<&'static str>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let bundle = dir.path().join("round");
    forge_from(
        &source.dir,
        &bundle,
        |_| {},
        |_| {},
        |p| *p.pointer_mut(pointer).expect("the pointer exists") = value,
    );
    let relogged = CheckName::LogReceipt.as_str();
    let new: BTreeSet<&'static str> = failed_at(&verify_as(source, &bundle))
        .into_iter()
        .filter(|failure| !source.before.contains(failure))
        .map(|(name, _)| name)
        .filter(|name| source.log.is_none() || *name != relogged)
        .collect();
    let schema = CheckName::PredicateSchema.as_str();
    let rejected = !new.is_empty();
    let named = new.into_iter().filter(|n| *n != schema).collect();
    (rejected, named)
}

/// The checks of `report` that failed for a reason of their own, with their targets.
fn failed_at(report: &verifier::VerifyReport) -> BTreeSet<(&'static str, Option<String>)> {
    report
        .failures()
        .filter(|c| !matches!(c.reason, Some(FailureReason::NotRun { .. })))
        .map(|c| (c.name.as_str(), c.target.clone()))
        .collect()
}

/// Whether the field at `pointer` of `source`, holding `value`, is recomputed there:
/// every change [`changes`] makes fails verification, and at least one fails a named
/// check other than the schema's — a value the schema alone refuses is no value a check
/// recomputed. An object is the exception: that the predicate requires it in its typed
/// form is the schema's to hold, and what it holds are leaves of their own.
fn caught_in(source: &Source, pointer: &str, value: &Value, allowed: &BTreeSet<String>) -> bool {
    let mut named = value.is_object();
    for forged in changes(value, allowed) {
        let (rejected, checks) = forged_in(source, pointer, forged);
        if !rejected {
            return false;
        }
        named |= !checks.is_empty();
    }
    named
}

/// The real fixture rounds, each re-signed unchanged and passing, the rounds
/// [`DERIVED`] from them, passing too, then the rounds the paired tests build,
/// sealed with the forger's key, with the checks that fail in them.
fn sources() -> Vec<Source> {
    let mut sources = Vec::new();
    for fixture in FIXTURES {
        let source = Source {
            name: (*fixture).to_owned(),
            dir: fixture_named(fixture),
            log: LoggedFixture::of(fixture),
            before: BTreeSet::new(),
            _built: None,
        };
        // Re-signed unchanged, each fixture passes (a logged one its log checks too): a
        // failure below is the field's.
        let dir = tempfile::tempdir().expect("tempdir");
        let bundle = dir.path().join("round");
        forge_from(&source.dir, &bundle, |_| {}, |_| {}, |_| {});
        let report = verify_as(&source, &bundle);
        assert!(report.passed(), "{fixture}: {:#?}", failed(&report));
        sources.push(source);
    }
    for (fixture, what, derive) in DERIVED {
        let name = format!("{fixture}, {what}");
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().to_owned();
        forge_from(
            &fixture_named(fixture),
            dir.path(),
            |_| {},
            |_| {},
            |p| derive(&path, p),
        );
        let report = verify(dir.path());
        assert!(report.passed(), "{name}: {:#?}", failed(&report));
        sources.push(Source {
            name,
            dir: path,
            log: None,
            before: BTreeSet::new(),
            _built: Some(dir),
        });
    }
    for built in crate::paired::built_rounds() {
        let dir = tempfile::tempdir().expect("tempdir");
        crate::paired::seal_built(dir.path(), &built, &key());
        let before = failed_at(&verify(dir.path()));
        assert!(
            !before.contains(&(CheckName::PredicateSchema.as_str(), None)),
            "{}: {before:?}",
            built.name
        );
        sources.push(Source {
            name: built.name.to_owned(),
            dir: dir.path().to_owned(),
            log: None,
            before,
            _built: Some(dir),
        });
    }
    sources
}

#[test]
fn every_leaf_field_is_recomputed_by_a_named_check_or_attested() {
    let schema_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../receipts/schema/round-v9.schema.json");
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

    // Each field is forged in the bundles that hold a value for it, in order, until one
    // catches it: the v9 round first, then the older real rounds (a drift check, for one,
    // is only in v1 and v2), whose checks of that field are the current verifier's, then
    // the built rounds (a seat taken, a typed infrastructure failure …).
    let sources = sources();
    let mut held: BTreeMap<&str, Vec<(&Source, String, Value)>> = BTreeMap::new();
    for source in &sources {
        let receipt = statement(&source.dir, "receipt.dsse.json");
        let mut found = Vec::new();
        instances(&receipt["predicate"], &leaves, "", "", &mut found);
        let mut seen = BTreeSet::new();
        for (leaf, pointer) in found {
            let Some((leaf, _)) = leaves.get_key_value(&leaf) else {
                continue;
            };
            if !seen.insert(leaf.as_str()) {
                continue;
            }
            let value = receipt["predicate"].pointer(&pointer).expect("instance");
            held.entry(leaf.as_str())
                .or_default()
                .push((source, pointer, value.clone()));
        }
    }
    let caught: BTreeSet<&str> = leaves
        .keys()
        .filter(|leaf| !attested.contains(leaf.as_str()))
        .filter_map(|leaf| Some((leaf.as_str(), held.get(leaf.as_str())?)))
        .collect::<Vec<_>>()
        .into_par_iter()
        .filter(|(leaf, holders)| {
            holders
                .iter()
                .any(|(source, pointer, value)| caught_in(source, pointer, value, &leaves[*leaf]))
        })
        .map(|(leaf, _)| leaf)
        .collect();
    let gaps: Vec<&str> = leaves
        .keys()
        .map(String::as_str)
        .filter(|leaf| !attested.contains(leaf) && !caught.contains(leaf))
        .filter(|leaf| !tested.contains(leaf))
        .collect();
    // A field a bundle now holds and a single-field forgery catches leaves the list.
    let caught_and_listed: Vec<&&str> = tested.iter().filter(|t| caught.contains(**t)).collect();
    assert_eq!(
        caught_and_listed,
        Vec::<&&str>::new(),
        "caught on the fixture: no longer needs its test listed"
    );
    // Where each gap is held, for the one who closes it.
    let holders: Vec<String> = gaps
        .iter()
        .map(|gap| {
            let names: Vec<&str> = held
                .get(gap)
                .into_iter()
                .flatten()
                .map(|(source, _, _)| source.name.as_str())
                .collect();
            format!("{gap}: held by {names:?}")
        })
        .collect();
    assert_eq!(
        gaps, NOT_YET_COVERED,
        "a field is neither recomputed by a named check nor attested, or one listed as \
         not yet covered now is; the gaps: {holders:#?}"
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
