//! The rounds of the other engine backends (content/engines.md, content/docker.md):
//! `fixtures/v7-process-round` (the built-in engine as a `process` command under the
//! `vllm` profile), `fixtures/v7-capability-round` (`infra_failed` by the capability
//! probe) and `fixtures/v7-docker-round` (the Docker demo's round against a real
//! daemon), re-signed unchanged they pass; changed as an evaluator holding the key could,
//! each fails exactly its named check.

use std::path::Path;

use crate::forge::*;
use receipts::rules::log_tail::log_tail_of_end;
use serde_json::{Value, json};
use verifier::{CheckName, FailureReason, VerifyReport};

/// The challenger's engine log in the Docker round.
const CHALLENGER_LOG: &str = "logs/engines/candidate-1-miner-fast-pass-1.log";

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

/// A container that claims a GPU the campaign's `[backend] gpus` did not give it (none,
/// in the Docker demo) fails `engine.docker`, naming both.
#[test]
fn container_gpus_other_than_the_campaigns_fail_engine_docker() {
    let report = forged_round("v7-docker-round", |p| {
        p["entries"][1]["engine"]["docker"]["gpus"] = json!(["0"]);
    });
    assert_eq!(failed_targets(&report), docker_record(1));
    assert_eq!(
        the_reason(&report),
        FailureReason::DockerRecord {
            field: "entries[1].engine.docker.gpus".into(),
            message: "[\"0\"], but the campaign's `[backend] gpus` are []".into(),
        }
    );
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
                      client, not the engine, was measured), but it never ran"
                .into(),
        }
    );
}

/// The Docker round in `dir` with its challenger's container killed for memory in its
/// pass: its pass row `crashed` (no throughput, no paired ratio), its run and
/// correctness gone, disqualified `engine_oom_killed` at the campaign's limit with its
/// engine log's tail, the outcome recomputed.
pub(crate) fn oom_kill_challenger(dir: &Path, predicate: &mut Value) {
    let challenger = &mut predicate["entries"][1];
    let row = challenger["passes"][0].as_object_mut().expect("row");
    row.insert("status".into(), json!("crashed"));
    row.remove("throughputMilliRps");
    row.remove("pairedRatioPpm");
    row.remove("probeLog");
    let entry = challenger.as_object_mut().expect("entry");
    entry.insert("runs".into(), json!([]));
    for field in [
        "correctness",
        "throughputMilliRps",
        "throughputMinMilliRps",
        "throughputMaxMilliRps",
    ] {
        entry.remove(field);
    }
    let tail = log_tail_of_end(&std::fs::read(dir.join(CHALLENGER_LOG)).expect("log"));
    crate::forgery_logs::disqualify_challenger_for(
        dir,
        predicate,
        json!({"engine_oom_killed": {"exitCode": 137, "limitMb": 256}}),
        "its container was killed for memory (limit 256 MiB)",
        &tail,
    );
}

/// The derived round passes; its kill claimed at another limit than the container's
/// fails `status.consistent` alone.
#[test]
fn an_oom_kill_at_another_limit_than_the_containers_fails_status_consistent() {
    let report = forged_fixture("v7-docker-round", |_| {}, oom_kill_challenger);
    assert!(report.passed(), "{:#?}", failures(&report));
    let report = forged_fixture(
        "v7-docker-round",
        |_| {},
        |dir, p| {
            oom_kill_challenger(dir, p);
            p["entries"][1]["disqualification"]["reason"]["engine_oom_killed"]["limitMb"] =
                json!(512);
        },
    );
    assert_eq!(
        the_reason(&report),
        FailureReason::StatusInconsistent {
            field: "entries[1].status".into(),
            status: "disqualified".into(),
            problem: "its reason is engine_oom_killed at a limit of 512 MiB, but its engine \
                      is a docker one with a memory limit of 256 MiB (a kill is read from a \
                      Docker container's state, at the container's limit)"
                .into(),
        }
    );
}

/// A registry's manifest digest for the Docker round's baseline image.
const MANIFEST: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

/// The Docker round with its baseline's image pulled from a registry: the daemon's
/// manifest digest recorded, and `engine.image` naming the image by it (its repository,
/// that digest, the config id the container ran), as the runner records a pulled image.
pub(crate) fn pull_baseline_image(_dir: &Path, predicate: &mut Value) {
    let engine = &mut predicate["entries"][0]["engine"];
    engine["docker"]["manifestDigest"] = json!(MANIFEST);
    let image_id = engine["docker"]["imageId"].clone();
    engine["image"] = json!({
        "name": "referee-demo/engine",
        "manifest_digest": MANIFEST,
        "config_digest": image_id,
    });
}

/// The derived round passes; its image's repository, or its manifest digest on one side
/// only, fails `engine.docker`.
#[test]
fn a_registry_image_names_the_containers_repository_and_digest() {
    let report = forged_fixture("v7-docker-round", |_| {}, pull_baseline_image);
    assert!(report.passed(), "{:#?}", failures(&report));
    let edits: [fn(&mut Value); 3] = [
        |p| p["entries"][0]["engine"]["image"]["name"] = json!("referee-demo/other"),
        |p| p["entries"][0]["engine"]["image"] = Value::Null,
        |p| p["entries"][0]["engine"]["docker"]["manifestDigest"] = Value::Null,
    ];
    for edit in edits {
        let report = forged_fixture(
            "v7-docker-round",
            |_| {},
            |dir, p| {
                pull_baseline_image(dir, p);
                edit(p);
            },
        );
        assert_eq!(failed_targets(&report), docker_record(0));
    }
}
