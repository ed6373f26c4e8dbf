//! Rounds sealed by earlier predicate versions still verify. v1 (`fixtures/v1-round/`, made with the
//! commit before the layout change, `ec7952f`: a tiny campaign of the end-to-end tests at
//! a fixed rate of 10 req/s, one challenger raising `max_num_seqs` 1 → 8, sealed by
//! `referee round`) still verifies: every check it can support passes, including the
//! checks v2 added (its `inputs/campaign.toml` has the schema-1 digest it recorded, the
//! request sequence regenerates from its seeds).
//!
//! The fixture was made with: `referee keygen`, `keyring add --valid-from
//! 2026-01-01T00:00:00Z`, `campaign add`, `miner add fast`, `ingest` (commitment
//! `f98bb888…18dfc`), `round`, then `cp -a data/tiny/rounds/1 fixtures/v1-round`.
//!
//! `fixtures/v2-round/` is the same campaign and patch sealed by the last v2 build
//! (`427bb03`, with the baseline repository rebuilt by `git`, hence another commit id),
//! the same commands, keyring `fixtures/v2-keyring.json`.
//!
//! `fixtures/v3-round/` is README's by-hand round (`examples/by-hand/campaign.toml`, the
//! demo's baseline at one fixed rate, `miner-fast`'s `faster-batching.diff`) sealed by the
//! last v3 build (`f0fd59e`) with README's by-hand commands, keyring
//! `fixtures/v3-keyring.json`. `fixtures/v4-round/` is the same round sealed by the last
//! v4 build (`42e958b`), keyring `fixtures/v4-keyring.json`; `fixtures/v5-round/` by the
//! last v5 build (`15aa2ee`), keyring `fixtures/v5-keyring.json`; `fixtures/v6-round/` by the
//! last v6 build (`71cac50`), keyring `fixtures/v6-keyring.json`; `fixtures/v7-round/` by
//! the merged v7 build (`6ce563d`), keyring `fixtures/v7-keyring.json`; `fixtures/v8-round/`
//! by the merged v8 build (`13fb218`), keyring `fixtures/v8-keyring.json`.

use std::path::Path;

use receipts::keys::Keyring;
use receipts::model::{
    ROUND_PREDICATE_TYPE_V1, ROUND_PREDICATE_TYPE_V2, ROUND_PREDICATE_TYPE_V3,
    ROUND_PREDICATE_TYPE_V4, ROUND_PREDICATE_TYPE_V5, ROUND_PREDICATE_TYPE_V6,
    ROUND_PREDICATE_TYPE_V7, ROUND_PREDICATE_TYPE_V8,
};
use verifier::{CheckName, VerifyOptions};

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

#[test]
fn a_v1_round_still_verifies() {
    still_verifies("v1", ROUND_PREDICATE_TYPE_V1);
}

#[test]
fn a_v2_round_still_verifies() {
    still_verifies("v2", ROUND_PREDICATE_TYPE_V2);
}

/// A v3 round verifies with every check of v3 passing: nothing v4 requires is missing
/// from it (a built-in engine is not probed; its self-test records the scheduling), so
/// only the checks v5 added are `not applicable`.
#[test]
fn a_v3_round_still_verifies() {
    verifies_with_every_check_applicable("v3", ROUND_PREDICATE_TYPE_V3);
}

/// A v4 round verifies with every check of v4 passing, only the checks v5 added `not
/// applicable`.
#[test]
fn a_v4_round_still_verifies() {
    verifies_with_every_check_applicable("v4", ROUND_PREDICATE_TYPE_V4);
}

/// A v5 round verifies with every check of v5 passing; it has no beacon (README's
/// by-hand round), and only the checks v6 added are `not applicable`.
#[test]
fn a_v5_round_still_verifies() {
    let mut expected = vec![
        ("seeds.beacon", Some("beacon"), "no beacon"),
        ("seeds.beaconOrder", None, "v5"),
    ];
    expected.extend(v6_only("v5"));
    expected.extend(v7_only("v5"));
    expected.extend(v8_only("v5"));
    expected.extend(v9_only("v5"));
    verifies_with_not_applicable("v5", ROUND_PREDICATE_TYPE_V5, expected);
}

/// A v6 round verifies with every check of v6 passing; it has no beacon (README's
/// by-hand round), and only the checks v7 added are `not applicable`.
#[test]
fn a_v6_round_still_verifies() {
    let mut expected = vec![
        ("seeds.beacon", Some("beacon"), "no beacon"),
        ("seeds.beaconOrder", None, "v6"),
    ];
    expected.extend(v7_only("v6"));
    expected.extend(v8_only("v6"));
    expected.extend(v9_only("v6"));
    verifies_with_not_applicable("v6", ROUND_PREDICATE_TYPE_V6, expected);
}

/// A v7 round verifies with every check of v7 passing; it has no beacon (README's
/// by-hand round), and only the checks v8 added are `not applicable`.
#[test]
fn a_v7_round_still_verifies() {
    let mut expected = vec![
        ("seeds.beacon", Some("beacon"), "no beacon"),
        ("seeds.beaconOrder", None, "v7"),
    ];
    // v9's caching check runs beside v7's compliance checks, before v8's.
    expected.push(("compliance.caching", None, "v7"));
    expected.extend(v8_only("v7"));
    expected.extend(v9_only("v7"));
    verifies_with_not_applicable("v7", ROUND_PREDICATE_TYPE_V7, expected);
}

/// A v8 round verifies with every check of v8 passing; it has no beacon (README's
/// by-hand round), and only the checks v9 added are `not applicable`.
#[test]
fn a_v8_round_still_verifies() {
    let mut expected = vec![
        ("seeds.beacon", Some("beacon"), "no beacon"),
        ("seeds.beaconOrder", None, "no beacon"),
        ("compliance.caching", None, "v8"),
    ];
    expected.extend(v9_only("v8"));
    verifies_with_not_applicable("v8", ROUND_PREDICATE_TYPE_V8, expected);
}

/// `fixtures/<version>-round` verifies with `predicate_type`, exactly the checks of
/// `expected` `not applicable`, in order; returns the report.
fn verifies_with_not_applicable(
    version: &str,
    predicate_type: &str,
    expected: Vec<(&str, Option<&str>, &str)>,
) -> verifier::VerifyReport {
    let keyring =
        Keyring::load(&fixture(&format!("{version}-keyring.json"))).expect("keyring loads");
    let report = verifier::verify_bundle(
        &fixture(&format!("{version}-round")),
        &keyring,
        &VerifyOptions::default(),
    );
    assert!(
        report.passed(),
        "{:#?}",
        report.failures().collect::<Vec<_>>()
    );
    assert_eq!(report.predicate_type.as_deref(), Some(predicate_type));
    let not_applicable: Vec<(&str, Option<&str>, &str)> = report
        .checks
        .iter()
        .filter_map(|c| Some((c.name.as_str(), c.target.as_deref(), c.not_applicable?)))
        .collect();
    assert_eq!(not_applicable, expected);
    report
}

/// The checks v8 added, each `not applicable (<version>)` on an older round, in the
/// order they run.
fn v8_only(version: &str) -> Vec<(&'static str, Option<&'static str>, &str)> {
    vec![
        ("decide.round", None, version),
        ("decide.weights", None, version),
        ("decide.gate", None, version),
    ]
}

/// The checks v7 added, each `not applicable (<version>)` on an older round, in the
/// order they run, with v9's `compliance.caching`, which runs beside them.
fn v7_only(version: &str) -> Vec<(&'static str, Option<&'static str>, &str)> {
    vec![
        ("compliance.textAgainstIds", None, version),
        ("compliance.outputLength", None, version),
        ("compliance.caching", None, version),
    ]
}

/// `list` with [`v7_only`] where they run: before `status.passes` (after the
/// correctness checks), else at the end.
fn with_v7<'a>(
    mut list: Vec<(&'a str, Option<&'a str>, &'a str)>,
    version: &'a str,
) -> Vec<(&'a str, Option<&'a str>, &'a str)> {
    let at = (list.iter())
        .position(|c| c.0 == "status.passes")
        .unwrap_or(list.len());
    list.splice(at..at, v7_only(version));
    list
}

/// The checks v6 added, each `not applicable (<version>)` on an older round, in the
/// order they run.
fn v6_only(_version: &str) -> Vec<(&'static str, Option<&'static str>, &str)> {
    vec![]
}

/// The checks v5 added, each `not applicable (<version>)` on an older round, in the
/// order they run: what its probe logs (and receipt) did not yet record, and the
/// cross-checks of its correctness files (`correctness.samplePool` only where an entry
/// names a timed-run sample: `sample`).
fn v5_only(version: &str, sample: bool) -> Vec<(&'static str, Option<&'static str>, &str)> {
    let mut checks = vec![
        ("seeds.beacon", None, version),
        // v8's, run beside the beacon's.
        ("seeds.beaconOrder", None, version),
        ("round.sla", Some("sla"), version),
        ("probes.entry", None, version),
        ("runs.passes", None, version),
        ("host.load", None, version),
        ("probe.plan", None, version),
        ("engine.isolation", None, version),
        ("correctness.entry", None, version),
        ("correctness.prompts", None, version),
        ("correctness.greedy", None, version),
        ("correctness.reference", None, version),
    ];
    if sample {
        checks.push(("correctness.samplePool", None, version));
    }
    checks.extend([
        ("status.passes", None, version),
        ("secret.withheld", None, version),
    ]);
    checks
}

/// `fixtures/<version>-round` verifies with `predicate_type`, only the checks v5 added
/// `not applicable`, and the request sequence, the paired decision, the client self-test
/// and the capability probe passed.
fn verifies_with_every_check_applicable(version: &str, predicate_type: &str) {
    let report = verifies_with_not_applicable(
        version,
        predicate_type,
        [
            with_v7([v5_only(version, true), v6_only(version)].concat(), version),
            v8_only(version),
            v9_only(version),
        ]
        .concat(),
    );
    for name in [
        CheckName::RequestSequence,
        CheckName::PairedDecision,
        CheckName::ClientSelfTest,
        CheckName::CapabilityProbe,
    ] {
        assert!(
            report.checks.iter().any(|c| c.name == name && c.passed),
            "{} did not pass",
            name.as_str()
        );
    }
}

/// `fixtures/<version>-round` verifies against `fixtures/<version>-keyring.json` with
/// `predicate_type`, every round check passing and only those of what v3 added marked
/// not applicable.
fn still_verifies(version: &str, predicate_type: &str) {
    let keyring =
        Keyring::load(&fixture(&format!("{version}-keyring.json"))).expect("keyring loads");
    let report = verifier::verify_bundle(
        &fixture(&format!("{version}-round")),
        &keyring,
        &VerifyOptions::default(),
    );
    assert!(
        report.passed(),
        "{:#?}",
        report.failures().collect::<Vec<_>>()
    );
    assert_eq!(report.predicate_type.as_deref(), Some(predicate_type));
    let passed = |name| report.checks.iter().any(|c| c.name == name && c.passed);
    for name in [
        CheckName::RoundOpenedSignature,
        CheckName::SeedCommitments,
        CheckName::InputsCampaign,
        CheckName::InputsMiners,
        CheckName::InputsPatches,
        CheckName::RequestSequence,
        CheckName::RoundThroughput,
        CheckName::RoundScores,
    ] {
        assert!(passed(name), "{} did not pass", name.as_str());
    }
    // Only what v3 added is beyond the bundle's version: its two seeds and the paired
    // checks of its passes, each `not applicable (vN)`; and the distance recomputation,
    // which needs the raw top-k later files hold.
    let not_applicable: Vec<(&str, Option<&str>, &str)> = report
        .checks
        .iter()
        .filter_map(|c| Some((c.name.as_str(), c.target.as_deref(), c.not_applicable?)))
        .collect();
    let mut v3_only = vec![
        ("seeds.commitments", Some("seeds.sampleSeed"), version),
        ("seeds.commitments", Some("seeds.passSeed"), version),
        ("seeds.beacon", None, version),
        ("seeds.beaconOrder", None, version),
    ];
    for name in [
        "passes.order",
        "passes.void",
        "paired.ratio",
        "paired.score",
        "noise.spread",
        "noise.verdict",
        "paired.decision",
    ] {
        v3_only.push((name, None, version));
    }
    v3_only.push(("round.tokenCount", Some("tokenCount"), version));
    v3_only.push(("host.steal", None, version));
    v3_only.push(("client.selfTest", Some("clientSelfTest"), version));
    v3_only.push(("capability.probe", Some("capabilityProbe"), version));
    // Its correctness file predates the raw top-k: the distances are taken as stored.
    v3_only.push((
        "correctness.distances",
        Some("entries[1].correctness"),
        "no raw logprobs",
    ));
    // And what v5 added, in the order the checks run: the SLA before the token count,
    // the binding, the host load, the probe plans and the isolation after the
    // measurements, the cross-checks of the correctness file after its distances (no
    // timed-run sample before v3), the statuses and the withheld files last.
    // (`seeds.beacon` and `seeds.beaconOrder` run with the seeds, listed above.)
    let [
        _beacon,
        _beacon_order,
        sla,
        entry,
        runs,
        load,
        plan,
        isolation,
        bound,
        prompts,
        greedy,
        reference,
        statuses,
        secret,
    ]: [_; 14] = v5_only(version, false).try_into().expect("fourteen checks");
    let mut expected = v3_only;
    let before = |list: &[(&str, Option<&str>, &str)], name: &str| {
        list.iter().position(|c| c.0 == name).expect(name)
    };
    let at = before(&expected, "round.tokenCount");
    expected.insert(at, sla);
    let at = before(&expected, "client.selfTest");
    expected.splice(at..at, [entry, runs, load, plan, isolation]);
    expected.extend([bound, prompts, greedy, reference, statuses, secret]);
    expected.extend(v6_only(version));
    let mut expected = with_v7(expected, version);
    expected.extend(v8_only(version));
    expected.extend(v9_only(version));
    assert_eq!(not_applicable, expected);
}

/// The checks v9 added that run after every older one, each `not applicable
/// (<version>)` on an older round (v9's `compliance.caching` runs among the compliance
/// checks: a v7 or v8 round lists it there, an older one in [`v7_only`]).
fn v9_only(version: &str) -> Vec<(&'static str, Option<&'static str>, &str)> {
    vec![("host.telemetry", None, version)]
}
