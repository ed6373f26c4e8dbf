//! The rounds of the other engine backends (content/engines.md, content/docker.md):
//! `fixtures/v7-process-round` (the built-in engine as a `process` command under the
//! `vllm` profile), `fixtures/v7-capability-round` (`infra_failed` by the capability
//! probe) and `fixtures/v7-docker-round` (the Docker demo's round against a real
//! daemon), re-signed unchanged they pass; changed as an evaluator holding the key could,
//! each fails exactly its named check.

use crate::forge::*;
use serde_json::{Value, json};
use verifier::{CheckName, FailureReason, VerifyReport};

/// `fixture` with `edit` applied to its receipt's predicate, re-signed and verified.
fn forged_round(fixture: &str, edit: impl FnOnce(&mut Value)) -> VerifyReport {
    forged_fixture(fixture, |_| {}, |_, p| edit(p))
}

#[test]
fn the_re_signed_rounds_of_the_other_backends_pass() {
    for fixture in ["v7-process-round", "v7-capability-round", "v7-docker-round"] {
        let report = forged_round(fixture, |_| {});
        assert!(report.passed(), "{fixture}: {:#?}", failures(&report));
    }
    let docker = forged_round("v7-docker-round", |_| {});
    assert_eq!(passed(&docker, CheckName::EngineDocker), 2);
    let process = forged_round("v7-process-round", |_| {});
    assert_eq!(passed(&process, CheckName::EngineApi), 2);
    assert_eq!(passed(&process, CheckName::CapabilityProbe), 1);
}

/// `engine.docker` failing on entry `index`, as (check, target).
fn docker_record(index: u32) -> Vec<(&'static str, Option<String>)> {
    vec![(
        CheckName::EngineDocker.as_str(),
        Some(format!("entries[{index}]")),
    )]
}

/// The failures of `report` that are not only not run: (check, target).
fn failed_targets(report: &VerifyReport) -> Vec<(&'static str, Option<String>)> {
    report
        .failures()
        .filter(|c| !matches!(c.reason, Some(FailureReason::NotRun { .. })))
        .map(|c| (c.name.as_str(), c.target.clone()))
        .collect()
}

/// The reason of the one failure of `report`.
fn the_reason(report: &VerifyReport) -> FailureReason {
    let all = failures(report);
    assert_eq!(all.len(), 1, "{all:#?}");
    all[0].2.clone()
}

#[test]
fn a_container_cpuset_other_than_the_engines_cpus_fails_engine_docker() {
    let report = forged_round("v7-docker-round", |p| {
        p["entries"][1]["engine"]["docker"]["cpusetCpus"] = json!("0");
    });
    assert_eq!(failed_targets(&report), docker_record(1));
    assert_eq!(
        the_reason(&report),
        FailureReason::DockerRecord {
            field: "entries[1].engine.docker.cpusetCpus".into(),
            message: "`0`, but the engine's recorded CPUs (isolation.engineCpus, pinning \
                      Cpuset) give `1`"
                .into(),
        }
    );
}

#[test]
fn a_baseline_image_other_than_the_campaigns_fails_engine_docker() {
    let report = forged_round("v7-docker-round", |p| {
        p["entries"][0]["engine"]["docker"]["imageReference"] = json!("referee-demo/engine:other");
    });
    assert_eq!(
        the_reason(&report),
        FailureReason::DockerRecord {
            field: "entries[0].engine.docker.imageReference".into(),
            message: "`referee-demo/engine:other`, but the campaign's image is \
                      `referee-demo/engine:baseline`"
                .into(),
        }
    );
}

#[test]
fn a_tmpfs_other_than_the_campaigns_fails_engine_docker() {
    let report = forged_round("v7-docker-round", |p| {
        p["entries"][1]["engine"]["docker"]["tmpfs"]["/tmp"] = json!("rw,size=1024m");
    });
    assert_eq!(failed_targets(&report), docker_record(1));
}

/// An entry that never ran claims a run's cause; one that ran claims it never did.
#[test]
fn an_infra_failure_the_entrys_runs_do_not_allow_fails_status_consistent() {
    let report = forged_round("v7-capability-round", |p| {
        p["entries"][0]["infraFailure"] = json!({"kind": "client_lagged"});
    });
    assert_eq!(
        the_reason(&report),
        FailureReason::StatusInconsistent {
            field: "entries[0].status".into(),
            status: "infra_failed".into(),
            problem: "its reason is a run's (the client's send lag exceeded its bound: the \
                      client, not the engine, was measured), but it has no runs"
                .into(),
        }
    );
}
