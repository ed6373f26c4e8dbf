//! The Docker demo (`examples/docker-demo/`, content/docker.md) end to end against a real
//! daemon: the base image imported from a rootfs made here (the `referee` binary and the
//! libraries `ldd` lists), the baseline image built from the baseline tree's own
//! `Dockerfile`, the campaign added, the submission ingested (it stops in `building`),
//! `referee build --once`, a round to `complete` with both entries scored from their own
//! images, `referee verify` of the data directory passing with the image checks, and a
//! re-run (`referee verify --rerun`) running every entry again from its recorded image id; and
//! a challenger whose record lost its image `infra_failed` without running anything.
//!
//! Needs a daemon: `eval "export $(scripts/dockerd start target/dockerd)"`, then
//! `cargo test -p referee --test docker_demo -- --ignored` (`.ci/run` does both).

mod support;

use std::path::Path;

use engines::docker::Daemon;
use engines::docker::build::{context_tar, rootfs_context};
use receipts::keys::{PrivateKey, generate_key_pair};
use receipts::layout::{DataDir, read_round_record};
use receipts::model::{EntryStatus, PipelineState, Role, RoundStatus, Sha256Hex};
use referee::demo::docker::{
    CAMPAIGN_ID, DOCKER_BASE_IMAGE, SUBMISSION_DIFF, baseline_files, stage,
};
use support::{bin, run_ok, text};

/// The campaign's `backend.image`: the baseline tree's image.
const BASELINE_IMAGE: &str = "referee-demo/engine:baseline";

/// The demo staged in a temp dir up to `referee build --once`: the base and baseline
/// images on the daemon, the campaign added, the evaluator key trusted, the submission
/// built and `bench_queued`.
struct Staged {
    dir: tempfile::TempDir,
    campaign: receipts::layout::CampaignDir,
    patch: Sha256Hex,
    baseline: engines::docker::build::BuiltImage,
    built: receipts::model::SubmissionImage,
    key_path: std::path::PathBuf,
}

/// `--campaign demo-docker --data data`.
const C: [&str; 4] = ["--campaign", CAMPAIGN_ID, "--data", "data"];

/// Stages the demo ([`Staged`]) on the daemon of `DOCKER_HOST`.
fn staged() -> Staged {
    let daemon = Daemon::connect(None).expect("DOCKER_HOST (scripts/dockerd start)");
    let base = rootfs_context(&[(
        Path::new(env!("CARGO_BIN_EXE_referee")),
        "/usr/local/bin/referee",
    )])
    .expect("rootfs");
    daemon
        .build_image(base, "Dockerfile", DOCKER_BASE_IMAGE)
        .expect("base image");
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("baseline-tree");
    std::fs::create_dir(&tree).expect("mkdir");
    for (name, text) in baseline_files() {
        std::fs::write(tree.join(name), text).expect("write");
    }
    let baseline = daemon
        .build_image(
            context_tar(&tree).expect("context"),
            "Dockerfile",
            BASELINE_IMAGE,
        )
        .expect("baseline image");

    stage(&dir.path().join("src")).expect("stage");
    run_ok(
        dir.path(),
        &["campaign", "add", "src/campaign.toml", "--data", "data"],
    );
    let keys = dir.path().join("keys");
    std::fs::create_dir(&keys).expect("mkdir");
    generate_key_pair(&keys.join("evaluator")).expect("keygen");
    let key = PrivateKey::load(&keys.join("evaluator.key")).expect("key");
    let data = DataDir::new(dir.path().join("data"));
    testkit::keyring(&[&key])
        .save(&data.keyring_path())
        .expect("save keyring");
    run_ok(
        dir.path(),
        &[&["miner", "add", "miner-fast"][..], &C].concat(),
    );
    std::fs::write(dir.path().join("faster.diff"), SUBMISSION_DIFF).expect("diff");
    let patch = Sha256Hex::digest(SUBMISSION_DIFF.as_bytes());
    let commitment = patch.to_string();
    let ingest = [
        &["ingest", "faster.diff", "--miner", "miner-fast"][..],
        &["--commitment", &commitment],
        &C,
    ]
    .concat();
    run_ok(dir.path(), &ingest);
    let campaign = data.campaign(&CAMPAIGN_ID.parse().expect("id"));
    assert_eq!(
        campaign.load_submission(&patch).expect("record").state,
        PipelineState::Building
    );
    run_ok(dir.path(), &[&["build", "--once"][..], &C].concat());
    let submission = campaign.load_submission(&patch).expect("record");
    assert_eq!(submission.state, PipelineState::BenchQueued);
    let built = submission.image.expect("image on the record");
    assert_eq!(built.tag, format!("referee/{CAMPAIGN_ID}:{patch}"));
    assert_ne!(built.image_id, baseline.image_id);

    let key_path = keys.join("evaluator.key");
    Staged {
        dir,
        campaign,
        patch,
        baseline,
        built,
        key_path,
    }
}

/// `referee round` of the staged campaign, which must exit 0.
fn round(staged: &Staged) {
    let round = [
        &["round"][..],
        &C,
        &["--key", staged.key_path.to_str().expect("utf-8")],
    ]
    .concat();
    run_ok(staged.dir.path(), &round);
}

#[test]
#[ignore = "needs dockerd: eval \"export $(scripts/dockerd start target/dockerd)\"; see the module docs"]
fn the_docker_demo_runs_a_round_from_each_entrys_own_image() {
    let _serial = support::serial();
    let staged = staged();
    let Staged {
        dir,
        campaign,
        patch,
        baseline,
        built,
        ..
    } = &staged;
    round(&staged);
    let (record, _) = read_round_record(&campaign.round_dir(1)).expect("receipt");
    assert_eq!(record.outcome.status, RoundStatus::Complete);
    let ran: Vec<(Role, EntryStatus, String, String)> = record
        .entries
        .iter()
        .map(|e| {
            let docker = e.engine.docker.as_ref().expect("engine.docker");
            (
                e.role,
                e.status,
                docker.image_reference.clone(),
                docker.image_id.clone(),
            )
        })
        .collect();
    assert_eq!(
        ran,
        [
            (
                Role::Baseline,
                EntryStatus::Scored,
                BASELINE_IMAGE.to_owned(),
                baseline.image_id.clone()
            ),
            (
                Role::Challenger,
                EntryStatus::Scored,
                built.tag.clone(),
                built.image_id.clone()
            ),
        ]
    );
    assert_eq!(
        campaign.load_submission(patch).expect("record").state,
        PipelineState::Scored
    );

    let verified = run_ok(
        dir.path(),
        &["verify", "data", "--keyring", "data/keyring.json", "--json"],
    );
    let reports: serde_json::Value = serde_json::from_str(&verified).expect("json");
    let mut image_checks = Vec::new();
    for report in reports.as_array().expect("array") {
        assert_eq!(report["passed"], true, "{report:#}");
        for check in report["checks"].as_array().expect("checks") {
            let name = check["name"].as_str().expect("name");
            if ["engine.docker", "submissions.image"].contains(&name) {
                image_checks.push((
                    name.to_owned(),
                    check["target"].as_str().expect("target").to_owned(),
                    check["passed"].as_bool().expect("passed"),
                ));
            }
        }
    }
    assert_eq!(
        image_checks,
        [
            ("engine.docker".to_owned(), "entries[0]".to_owned(), true),
            ("engine.docker".to_owned(), "entries[1]".to_owned(), true),
            (
                "submissions.image".to_owned(),
                format!("submissions/{patch}.json"),
                true
            ),
        ]
    );

    // A skeptic's re-run on the same daemon: every entry runs again from the image id its
    // receipt recorded (nothing rebuilt), and is compared, not skipped.
    let bundle = campaign.round_dir(1);
    let out = bin()
        .args(["verify", "--rerun"])
        .arg(&bundle)
        .args(["--data", "data", "--json"])
        .current_dir(dir.path())
        .output()
        .expect("referee verify --rerun");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "a re-run that ran: {}",
        text(&out)
    );
    let rerun: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let statuses: Vec<(String, String)> = rerun["record"]["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            (
                e["comparison"]["verdict"].as_str().unwrap_or("").to_owned(),
                e["rerun"]["status"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    for (verdict, status) in &statuses {
        assert!(
            verdict != "unkwn" && status == "scored",
            "{statuses:?}: {rerun:#}"
        );
    }
}

#[test]
#[ignore = "needs dockerd: eval \"export $(scripts/dockerd start target/dockerd)\"; see the module docs"]
fn a_challenger_whose_record_holds_no_image_is_infra_failed_and_runs_nothing() {
    let _serial = support::serial();
    let staged = staged();
    // The record as a build that never recorded its image would leave it.
    let path = staged.campaign.submission_json(&staged.patch);
    let mut record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    record.as_object_mut().expect("object").remove("image");
    std::fs::write(&path, serde_json::to_vec_pretty(&record).expect("json")).expect("write");
    round(&staged);
    let (record, _) = read_round_record(&staged.campaign.round_dir(1)).expect("receipt");
    let challenger = &record.entries[1];
    assert_eq!(challenger.status, EntryStatus::InfraFailed);
    assert_eq!(challenger.engine.docker, None);
    assert_eq!(
        challenger.infra_failure.as_ref().map(ToString::to_string),
        Some(format!(
            "submission {} has no built image on its record: a Docker campaign runs each \
             entry from the image `referee build` recorded for it (content/docker.md)",
            staged.patch
        ))
    );
}
