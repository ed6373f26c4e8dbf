//! The s1-pro-speed demo on the Docker backend (`examples/s1-pro-speed/docker/`,
//! content/s1-pro-speed.md, Docker) end to end against a real daemon and a registry on
//! 127.0.0.1 (Debian's `docker-registry`):
//! - the base image (the `referee` binary and the libraries `ldd` lists) built from a
//!   rootfs, pushed to the registry, and removed from the daemon, so the builds below
//!   must pull it by the digest the baseline's `Dockerfile` pins;
//! - the baseline image built from the baseline tree's own `Dockerfile` with no network;
//! - the campaign added, the submission ingested and built by `referee build --once`
//!   from its patched tree's `Dockerfile` (its image id on its record);
//! - a decide round to `complete`: the sidecar's capability probe, each entry's run with
//!   the run's token in its container's environment only, decisions per second at p95,
//!   the weights and logit-distance gates, every entry in its own image;
//! - `referee verify` of the data directory passing with the image and decide checks.
//!
//! Needs a daemon and the registry: `apt-get install -y docker.io docker-registry`,
//! `eval "export $(scripts/dockerd start target/dockerd)"`, then
//! `cargo test -p referee --test docker_s1_pro_speed -- --ignored` (`.ci/run` does this).

mod support;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use engines::docker::Daemon;
use engines::docker::build::{context_tar, rootfs_context};
use receipts::keys::{PrivateKey, generate_key_pair};
use receipts::layout::{DataDir, read_round_record};
use receipts::model::{
    CapabilityFeature, DECIDE_TOKEN_ENV, EntryStatus, FindingStatus, PipelineState, Role,
    RoundStatus, Sha256Hex, Track,
};
use referee::demo::s1_pro_speed::SUBMISSION_DIFF;
use referee::demo::s1_pro_speed::docker::{BASELINE_IMAGE, CAMPAIGN_ID, baseline_files, stage};
use support::{bin, run_ok, text};

/// `--campaign s1-pro-speed-docker --data data`.
const C: [&str; 4] = ["--campaign", CAMPAIGN_ID, "--data", "data"];

/// `docker <args>` (the CLI, on the daemon of `DOCKER_HOST`), which must succeed; its
/// trimmed standard output.
fn docker(args: &[&str]) -> String {
    let out = Command::new("docker").args(args).output().expect("docker");
    assert!(out.status.success(), "docker {args:?}:\n{}", text(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Debian's `docker-registry` serving a fresh storage directory on `127.0.0.1:<port>`,
/// killed and reaped when dropped.
struct Registry {
    child: Child,
    /// `127.0.0.1:<port>`.
    addr: String,
    _dir: tempfile::TempDir,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts a [`Registry`] and waits (up to 60 s) until `GET /v2/` answers 200.
fn registry() -> Registry {
    let dir = tempfile::tempdir().expect("tempdir");
    // A port the kernel just handed out; the registry binds it right after.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let config = dir.path().join("config.yml");
    std::fs::write(
        &config,
        format!(
            "version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {}\n\
             http:\n  addr: {addr}\n",
            dir.path().join("data").display()
        ),
    )
    .expect("config");
    let log = std::fs::File::create(dir.path().join("registry.log")).expect("log");
    let child = Command::new("docker-registry")
        .arg("serve")
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("docker-registry (apt-get install -y docker-registry)");
    let mut registry = Registry {
        child,
        addr,
        _dir: dir,
    };
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if answers_200(&registry.addr) {
            return registry;
        }
        let exited = registry.child.try_wait().expect("wait");
        assert!(
            exited.is_none() && Instant::now() < until,
            "the registry did not answer on {} ({exited:?}): {}",
            registry.addr,
            std::fs::read_to_string(registry._dir.path().join("registry.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether `GET /v2/` on `addr` answers 200.
fn answers_200(addr: &str) -> bool {
    let Ok(mut stream) = std::net::TcpStream::connect(addr) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    if stream
        .write_all(b"GET /v2/ HTTP/1.0\r\nHost: registry\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut head = [0_u8; 12];
    stream.read_exact(&mut head).is_ok() && head.ends_with(b" 200")
}

/// The base image built from a rootfs, pushed to `registry` and removed from the daemon;
/// returns its reference pinned by the registry's manifest digest
/// (`127.0.0.1:<port>/referee-demo/base@sha256:…`) and its image id. The rootfs image
/// is the Docker demo's too (same binary, same id), so the pushed base adds a label of
/// this run's own: its id is on no other tag, and untagging it removes it.
fn pushed_base(daemon: &Daemon, registry: &Registry) -> (String, String) {
    let repository = format!("{}/referee-demo/base", registry.addr);
    let tag = format!("{repository}:1");
    let rootfs_tag = "referee-demo/s1-pro-speed-rootfs:1";
    let context = rootfs_context(&[(
        Path::new(env!("CARGO_BIN_EXE_referee")),
        "/usr/local/bin/referee",
    )])
    .expect("rootfs");
    daemon
        .build_image(context, "Dockerfile", rootfs_tag)
        .expect("rootfs image");
    let labelled = tempfile::tempdir().expect("tempdir");
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::fs::write(
        labelled.path().join("Dockerfile"),
        format!("FROM {rootfs_tag}\nLABEL dev.referee.test-run=\"{nonce}\"\n"),
    )
    .expect("Dockerfile");
    let base = daemon
        .build_image(
            context_tar(labelled.path()).expect("context"),
            "Dockerfile",
            &tag,
        )
        .expect("base image");
    docker(&["push", &tag]);
    let digests = docker(&[
        "image",
        "inspect",
        "--format",
        "{{json .RepoDigests}}",
        &tag,
    ]);
    let digests: Vec<String> = serde_json::from_str(&digests).expect("RepoDigests");
    let pinned = digests
        .into_iter()
        .find(|d| d.starts_with(&format!("{repository}@sha256:")))
        .expect("the registry's digest");
    // Untagging the one tag removes the image (and its digest reference) from the daemon.
    docker(&["image", "rm", &tag]);
    let gone = Command::new("docker")
        .args(["image", "inspect", &base.image_id])
        .output()
        .expect("docker");
    assert!(!gone.status.success(), "the base is still on the daemon");
    (pinned, base.image_id)
}

#[test]
#[ignore = "needs dockerd and docker-registry: see the module docs"]
fn the_s1_pro_speed_demo_runs_a_decide_round_from_each_entrys_own_image() {
    let _serial = support::serial();
    let daemon = Daemon::connect(None).expect("DOCKER_HOST (scripts/dockerd start)");
    let registry = registry();
    let (base, base_id) = pushed_base(&daemon, &registry);

    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    stage(&dir.join("src"), &base).expect("stage");
    let tree = dir.join("baseline-tree");
    std::fs::create_dir(&tree).expect("mkdir");
    for (name, text) in baseline_files(&base) {
        std::fs::write(tree.join(name), text).expect("write");
    }
    // No network in the build: the daemon pulled the base from the registry by digest,
    // and it is the image that was pushed.
    let baseline = daemon
        .build_image(
            context_tar(&tree).expect("context"),
            "Dockerfile",
            BASELINE_IMAGE,
        )
        .expect("baseline image");
    assert_eq!(
        docker(&["image", "inspect", "--format", "{{.Id}}", &base]),
        base_id
    );

    run_ok(
        dir,
        &["campaign", "add", "src/campaign.toml", "--data", "data"],
    );
    let keys = dir.join("keys");
    std::fs::create_dir(&keys).expect("mkdir");
    generate_key_pair(&keys.join("evaluator")).expect("keygen");
    let key = PrivateKey::load(&keys.join("evaluator.key")).expect("key");
    let data = DataDir::new(dir.join("data"));
    testkit::keyring(&[&key])
        .save(&data.keyring_path())
        .expect("save keyring");
    run_ok(dir, &[&["miner", "add", "miner-fast"][..], &C].concat());
    std::fs::write(dir.join("faster.diff"), SUBMISSION_DIFF).expect("diff");
    let patch = Sha256Hex::digest(SUBMISSION_DIFF.as_bytes());
    let commitment = patch.to_string();
    let ingest = [
        &["ingest", "faster.diff", "--miner", "miner-fast"][..],
        &["--commitment", &commitment],
        &C,
    ]
    .concat();
    run_ok(dir, &ingest);
    run_ok(dir, &[&["build", "--once"][..], &C].concat());
    let campaign = data.campaign(&CAMPAIGN_ID.parse().expect("id"));
    let submission = campaign.load_submission(&patch).expect("record");
    assert_eq!(submission.state, PipelineState::BenchQueued);
    let built = submission.image.expect("image on the record");
    assert_eq!(built.tag, format!("referee/{CAMPAIGN_ID}:{patch}"));
    assert_ne!(built.image_id, baseline.image_id);

    let key_path = keys.join("evaluator.key");
    let round = [
        &["round"][..],
        &C,
        &["--key", key_path.to_str().expect("utf-8")],
    ]
    .concat();
    run_ok(dir, &round);
    let (record, _) = read_round_record(&campaign.round_dir(1)).expect("receipt");
    let why: Vec<_> = (record.entries.iter())
        .map(|e| (&e.infra_failure, &e.disqualification))
        .collect();
    assert_eq!(
        record.outcome.status,
        RoundStatus::Complete,
        "{:?}\n{why:?}",
        record.outcome
    );
    let probe = record.capability_probe.as_ref().expect("the probe");
    let found: Vec<(CapabilityFeature, FindingStatus)> = (probe.findings.iter())
        .map(|f| (f.feature, f.status))
        .collect();
    assert_eq!(
        found,
        CapabilityFeature::DECIDE.map(|feature| (feature, FindingStatus::Ok))
    );
    assert_eq!(
        record.decide.as_ref().and_then(|d| d.track),
        Some(Track::S1ProSpeed)
    );
    // Each entry ran in a container of its own image, on an internal network with a
    // read-only root, the token's name (never its value) in its recorded environment.
    let ran: Vec<(Role, EntryStatus, String, String, bool, bool, bool)> = record
        .entries
        .iter()
        .map(|e| {
            let docker = e.engine.docker.as_ref().expect("engine.docker");
            (
                e.role,
                e.status,
                docker.image_reference.clone(),
                docker.image_id.clone(),
                docker.network_internal && docker.read_only_root,
                docker.env_names.iter().any(|n| n == DECIDE_TOKEN_ENV),
                (e.engine.command.iter().flatten()).any(|a| a.contains(DECIDE_TOKEN_ENV)),
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
                baseline.image_id.clone(),
                true,
                true,
                false
            ),
            (
                Role::Challenger,
                EntryStatus::Scored,
                built.tag.clone(),
                built.image_id.clone(),
                true,
                true,
                false
            ),
        ]
    );

    let verified = run_ok(
        dir,
        &["verify", "data", "--keyring", "data/keyring.json", "--json"],
    );
    let reports: serde_json::Value = serde_json::from_str(&verified).expect("json");
    let mut checked = Vec::new();
    for report in reports.as_array().expect("array") {
        assert_eq!(report["passed"], true, "{report:#}");
        for check in report["checks"].as_array().expect("checks") {
            let name = check["name"].as_str().expect("name");
            if ["engine.docker", "submissions.image", "capability.probe"].contains(&name) {
                checked.push((
                    name.to_owned(),
                    check["target"].as_str().expect("target").to_owned(),
                    check["passed"].as_bool().expect("passed"),
                ));
            }
        }
    }
    let pass = |name: &str, target: &str| (name.to_owned(), target.to_owned(), true);
    assert_eq!(
        checked,
        [
            pass("engine.docker", "entries[0]"),
            pass("engine.docker", "entries[1]"),
            pass("capability.probe", "capabilityProbe"),
            pass("submissions.image", &format!("submissions/{patch}.json")),
        ]
    );

    // Forgeries re-signed with the evaluator's key: each fails the checks that recompute
    // or cross-check what it changed.
    let bundle = campaign.round_dir(1);
    let relative = bundle.strip_prefix(dir.join("data")).expect("in data");
    let forged = |edit: &dyn Fn(&mut serde_json::Value)| -> Vec<(String, serde_json::Value)> {
        let copy = tempfile::tempdir().expect("tempdir");
        testkit::copy_dir(&dir.join("data"), copy.path());
        let round = copy.path().join(relative);
        let mut statement = testkit::forge::statement(&round, "receipt.dsse.json");
        edit(&mut statement["predicate"]);
        testkit::forge::sign_with(&round, "receipt.dsse.json", statement, &key);
        let out = bin()
            .arg("verify")
            .arg(copy.path())
            .args(["--keyring", "data/keyring.json", "--json"])
            .current_dir(dir)
            .output()
            .expect("referee verify");
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        let reports: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let mut failed = Vec::new();
        for report in reports.as_array().expect("array") {
            for check in report["checks"].as_array().expect("checks") {
                if check["passed"] == false && check["notApplicable"].is_null() {
                    failed.push((
                        check["name"].as_str().expect("name").to_owned(),
                        check["reason"].clone(),
                    ));
                }
            }
        }
        failed
    };
    // The challenger claims to have run the baseline's image: its record says otherwise.
    let baseline_id = baseline.image_id.clone();
    assert_eq!(
        forged(&|p| p["entries"][1]["engine"]["docker"]["imageId"] = baseline_id.clone().into()),
        [(
            "submissions.image".to_owned(),
            serde_json::json!({
                "code": "recomputed",
                "file": format!("submissions/{patch}.json"),
                "field": "image.imageId",
                "claimed": built.image_id,
                "recomputed": format!(
                    "{} (`rounds/1` entries[1].engine.docker.imageId)",
                    baseline.image_id
                ),
            })
        )]
    );
    // The challenger's container claims a network with a route out.
    assert_eq!(
        forged(&|p| p["entries"][1]["engine"]["docker"]["networkInternal"] = false.into()),
        [(
            "engine.docker".to_owned(),
            serde_json::json!({
                "code": "dockerRecord",
                "field": "entries[1].engine.docker.networkInternal",
                "message": "false: the container was not sandboxed as the backend promises",
            })
        )]
    );
    // The sidecar's capability probe dropped.
    assert_eq!(
        forged(&|p| {
            p.as_object_mut()
                .expect("predicate")
                .remove("capabilityProbe");
        }),
        [(
            "capability.probe".to_owned(),
            serde_json::json!({
                "code": "recomputed",
                "file": "receipt.dsse.json",
                "field": "capabilityProbe",
                "claimed": "absent",
                "recomputed": "the findings of the probe a round on a real engine opens with",
            })
        )]
    );
}
