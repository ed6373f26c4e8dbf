//! The verifier's side of the forger (`testkit::forge`, re-exported here): forge the
//! v2 fixture round, verify it, and read which checks failed and why.

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;
pub use testkit::forge::*;
use verifier::{CheckName, FailureReason, VerifyOptions, VerifyReport};

/// Forges the fixture with `files` and `receipt` (the round-opened predicate unchanged)
/// and verifies it.
pub fn forged(files: impl FnOnce(&Path), receipt: impl FnOnce(&mut Value)) -> VerifyReport {
    let dir = tempfile::tempdir().expect("tempdir");
    forge_into(dir.path(), files, |_| {}, receipt);
    verify(dir.path())
}

/// Forges `fixtures/<name>` (a round of the current layout: `v6-round`, `v7-round` …)
/// with `files` and `receipt` (which gets the forged bundle's directory too), the
/// round-opened predicate unchanged, and verifies it.
pub fn forged_fixture(
    name: &str,
    files: impl FnOnce(&Path),
    receipt: impl FnOnce(&Path, &mut Value),
) -> VerifyReport {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    forge_from(
        &fixture_named(name),
        dir.path(),
        files,
        |_| {},
        |p| receipt(&path, p),
    );
    verify(dir.path())
}

/// How many `name` checks `report` ran and passed.
pub fn passed(report: &VerifyReport, name: CheckName) -> usize {
    (report.checks.iter())
        .filter(|c| c.name == name && c.passed)
        .count()
}

/// Forges the fixture with `opened` applied to the round-opened predicate only and
/// verifies it.
pub fn forged_opened(opened: impl FnOnce(&mut Value)) -> VerifyReport {
    let dir = tempfile::tempdir().expect("tempdir");
    forge_into(dir.path(), |_| {}, opened, |_| {});
    verify(dir.path())
}

/// Verifies `dir` against [`keyring`], key validity now.
pub fn verify(dir: &Path) -> VerifyReport {
    verifier::verify_bundle(dir, &keyring(), &VerifyOptions::default())
}

/// The names of the checks that failed for a reason of their own (not the ones only
/// not run because another failed).
pub fn failed(report: &VerifyReport) -> BTreeSet<&'static str> {
    report
        .failures()
        .filter(|c| !matches!(c.reason, Some(FailureReason::NotRun { .. })))
        .map(|c| c.name.as_str())
        .collect()
}

/// Asserts that exactly `name` failed (the checks only blocked by it aside) and returns
/// its first failure's reason.
pub fn only(report: &VerifyReport, name: CheckName) -> FailureReason {
    assert_eq!(
        failed(report),
        [name.as_str()].into_iter().collect(),
        "{:#?}",
        report.failures().collect::<Vec<_>>()
    );
    report
        .failures()
        .find(|c| c.name == name)
        .and_then(|c| c.reason.clone())
        .expect("a reason")
}

/// Every failure of `report` in order, the ones only not run included: (check, target,
/// reason).
pub fn failures(report: &VerifyReport) -> Vec<(CheckName, Option<String>, FailureReason)> {
    report
        .failures()
        .map(|c| {
            (
                c.name,
                c.target.clone(),
                c.reason.clone().expect("a reason"),
            )
        })
        .collect()
}

/// The reason of a check that recomputed `field` of `file` and found `recomputed` where
/// the bundle claims `claimed`.
pub fn recomputed(file: &str, field: &str, claimed: &str, recomputed: &str) -> FailureReason {
    FailureReason::Recomputed {
        file: file.to_owned(),
        field: field.to_owned(),
        claimed: claimed.to_owned(),
        recomputed: recomputed.to_owned(),
    }
}
