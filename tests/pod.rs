//! Pods end to end (content/pods.md): `referee pod check` rents a campaign's pod, ships
//! the harness, runs `referee agent` there (its steps streamed back as frames) and
//! releases the pod, each step with its phase; no private key of the evaluator reaches
//! the pod (its environment and every shipped file scanned).
//!
//! The `local` pod's tests run everywhere. The `slurm` ones need a cluster and are
//! ignored: `eval "export $(scripts/slurm-local start target/slurm)"`, then
//! `cargo test -p referee --test pod -- --ignored` (`.ci/run` does both).

mod support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use receipts::model::{PodBackend, PodSpec, Sha256Hex};
use runner::pod::{Pod, SlurmPod};
use serde_json::Value;
use support::{bin, text};

/// A planted "evaluator key": a seed as `referee keygen` writes it.
const PLANTED_SEED: &str = "5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed";

/// The weight file the campaign pins.
const WEIGHT: &[u8] = b"pod weights, fixed bytes";

/// The demo campaign with a `[pod]` of `backend` staging into `staging`, its weight served
/// from `source` (a file:// directory); written into `dir`.
fn campaign(dir: &Path, backend: &str, gpus: u32, staging: &Path, source: &Path) -> PathBuf {
    let demo = fs::read_to_string(support::root().join("examples/demo/campaign.toml")).unwrap();
    let id = format!("pod-{backend}");
    let text = demo.replacen("id = \"demo\"", &format!("id = \"{id}\""), 1)
        + &format!(
            "\n[[model.weights]]\nname = \"w.bin\"\nsha256 = \"{}\"\n\n[pod]\nbackend = \"{backend}\"\ngpus = {gpus}\ntime_limit_min = 5\nstaging_dir = \"{}\"\nweights_source = \"file://{}\"\n",
            Sha256Hex::digest(WEIGHT),
            staging.display(),
            source.display(),
        );
    let path = dir.join("campaign.toml");
    fs::write(&path, text).unwrap();
    path
}

/// A scratch directory with the weight source, the planted key file and a staging dir.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("source")).unwrap();
        fs::write(dir.path().join("source/w.bin"), WEIGHT).unwrap();
        fs::create_dir_all(dir.path().join("keys")).unwrap();
        fs::write(
            dir.path().join("keys/evaluator.key"),
            format!("{PLANTED_SEED}\n"),
        )
        .unwrap();
        Self { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// `referee pod check --json` of `campaign` with the planted key in its environment and
/// key directory; its JSON report.
fn pod_check(scratch: &Scratch, campaign: &Path) -> Value {
    let output = bin()
        .args(["pod", "check", "--json", "--campaign"])
        .arg(campaign)
        .current_dir(scratch.dir.path())
        .env("REFEREE_KEY_DIR", scratch.path("keys"))
        .env("REFEREE_PLANTED_SIGNING_KEY", PLANTED_SEED)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "pod check failed: {}",
        text(&output)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Each step as `(phase, name, status)`.
fn steps(report: &Value) -> Vec<(String, String, String)> {
    report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["phase"].as_str().unwrap().to_owned(),
                s["name"].as_str().unwrap().to_owned(),
                s["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The detail lines of the step named `name`.
fn detail(report: &Value, name: &str) -> Vec<String> {
    let step = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no step {name}"));
    step["detail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_owned())
        .collect()
}

/// The setup steps of 003 in order, each with its phase.
fn expected_steps() -> Vec<(String, String, String)> {
    [
        ("provisioning", "Renting the pod", "ok"),
        ("bootstrapping", "Shipping the harness", "ok"),
        ("bootstrapping", "Preparing the pod", "ok"),
        ("pulling_image", "Pulling engine images", "skipped"),
        ("downloading_model", "Downloading model weights", "ok"),
        ("teardown", "Releasing the pod", "ok"),
    ]
    .map(|(p, n, s)| (p.to_owned(), n.to_owned(), s.to_owned()))
    .to_vec()
}

/// What every pod check asserts: the steps, the agent running the shipped binary, the
/// weight downloaded then cached, and no key anywhere on the pod.
fn assert_pod_round_trip(scratch: &Scratch, campaign: &Path, staging: &Path) -> Value {
    let binary_sha =
        receipts::bundle::file_sha256(Path::new(env!("CARGO_BIN_EXE_referee"))).unwrap();
    let first = pod_check(scratch, campaign);
    assert_eq!(first["ok"], true, "{first:#}");
    assert_eq!(steps(&first), expected_steps(), "{first:#}");
    assert_eq!(first["agent"]["agentSha256"], binary_sha.as_str());
    assert_eq!(
        detail(&first, "Downloading model weights"),
        [format!(
            "w.bin sha256:{} downloaded ({} bytes), verified",
            Sha256Hex::digest(WEIGHT),
            WEIGHT.len()
        )]
    );
    let second = pod_check(scratch, campaign);
    assert_eq!(
        detail(&second, "Downloading model weights"),
        [format!(
            "w.bin sha256:{} cached, verified",
            Sha256Hex::digest(WEIGHT)
        )]
    );

    // No key reached the pod: not in the agent's environment (names and values: a
    // value holding a seed fails the check itself), not in any shipped file.
    let environment: Vec<&str> = first["agent"]["environment"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for name in [
        "REFEREE_PLANTED_SIGNING_KEY",
        "REFEREE_KEY_DIR",
        "PATH",
        "HOME",
    ] {
        assert!(
            !environment.contains(&name),
            "{name} reached the pod: {environment:?}"
        );
    }
    assert_eq!(
        receipts::layout::find_private_keys(staging).unwrap(),
        Vec::<PathBuf>::new()
    );
    let mut shipped = 0;
    for entry in walk(staging) {
        let bytes = fs::read(&entry).unwrap();
        assert!(
            !bytes
                .windows(PLANTED_SEED.len())
                .any(|w| w == PLANTED_SEED.as_bytes()),
            "{} holds the planted key",
            entry.display()
        );
        shipped += 1;
    }
    // The binary, the campaign, the order and the cached weight.
    assert_eq!(shipped, 4, "{:?}", walk(staging));
    second
}

/// Every regular file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files.sort();
    files
}

#[test]
fn a_local_pod_runs_the_setup_steps_and_no_key_reaches_it() {
    let scratch = Scratch::new();
    let staging = scratch.path("staging");
    let campaign = campaign(
        scratch.dir.path(),
        "local",
        1,
        &staging,
        &scratch.path("source"),
    );
    let report = assert_pod_round_trip(&scratch, &campaign, &staging);
    assert_eq!(report["agent"]["allocation"], Value::Null);
    assert_eq!(report["agent"]["gpus"], "");
    assert_eq!(report["agent"]["environment"], serde_json::json!([]));
}

#[test]
fn a_tampered_shipment_fails_its_step_and_the_pod_is_still_released() {
    let scratch = Scratch::new();
    let staging = scratch.path("staging");
    let campaign = campaign(
        scratch.dir.path(),
        "local",
        1,
        &staging,
        &scratch.path("source"),
    );
    // The weight source serves other bytes than the campaign pins.
    fs::write(scratch.path("source/w.bin"), b"tampered").unwrap();
    let output = bin()
        .args(["pod", "check", "--json", "--campaign"])
        .arg(&campaign)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut expected = expected_steps();
    expected[4].2 = "failed".into();
    assert_eq!(steps(&report), expected, "{report:#}");
    assert_eq!(
        detail(&report, "Downloading model weights"),
        [format!(
            "weight `w.bin` from `file://{}` has sha256 {}, the campaign pins {}",
            scratch.path("source/w.bin").display(),
            Sha256Hex::digest(b"tampered"),
            Sha256Hex::digest(WEIGHT)
        )]
    );
    assert!(
        !staging
            .join("weights-cache")
            .join(Sha256Hex::digest(WEIGHT).as_str())
            .exists()
    );
}

/// The cluster `.ci/run` started: `SLURM_CONF` must name it.
fn require_cluster() {
    assert!(
        std::env::var_os("SLURM_CONF").is_some(),
        "no SLURM_CONF: start a cluster with scripts/slurm-local"
    );
}

#[test]
#[ignore = "needs a Slurm cluster: scripts/slurm-local start, then SLURM_CONF (.ci/run)"]
fn a_slurm_pod_is_an_exclusive_gpu_allocation_with_nothing_of_the_evaluator() {
    require_cluster();
    let scratch = Scratch::new();
    let staging = scratch.path("staging");
    let campaign = campaign(
        scratch.dir.path(),
        "slurm",
        2,
        &staging,
        &scratch.path("source"),
    );
    let report = assert_pod_round_trip(&scratch, &campaign, &staging);
    assert!(
        report["agent"]["allocation"].as_u64().is_some(),
        "{report:#}"
    );
    assert_eq!(report["agent"]["gpus"], "0,1");
    // Only what the scheduler sets on the node: none of the test's own variables.
    let environment = report["agent"]["environment"].as_array().unwrap();
    assert!(
        environment.iter().any(|v| v == "SLURM_JOB_ID"),
        "{environment:?}"
    );
    assert!(
        environment.iter().any(|v| v == "CUDA_VISIBLE_DEVICES"),
        "{environment:?}"
    );
    assert!(
        !environment.iter().any(|v| v == "NO_COLOR"),
        "{environment:?}"
    );
    assert!(
        !environment.iter().any(|v| v == "CARGO_MANIFEST_DIR"),
        "{environment:?}"
    );
    assert_eq!(
        detail(&report, "Releasing the pod"),
        ["released; no leftover allocation"]
    );
}

#[test]
#[ignore = "needs a Slurm cluster: scripts/slurm-local start, then SLURM_CONF (.ci/run)"]
fn a_leftover_allocation_is_cancelled_and_reported() {
    require_cluster();
    let scratch = Scratch::new();
    let staging = scratch.path("staging");
    let campaign = campaign(
        scratch.dir.path(),
        "slurm",
        1,
        &staging,
        &scratch.path("source"),
    );
    // A killed evaluator's allocation, still holding a GPU under the pod's name.
    let leftover = Command::new("sbatch")
        .args([
            "--parsable",
            "--job-name=referee-pod-slurm",
            "--gres=gpu:1",
            "--time=5",
        ])
        .args([
            "--export=NONE",
            "--output=/dev/null",
            "--wrap=exec /bin/sleep infinity",
        ])
        .output()
        .unwrap();
    assert!(leftover.status.success(), "{leftover:?}");
    let id = String::from_utf8_lossy(&leftover.stdout).trim().to_owned();
    let report = pod_check(&scratch, &campaign);
    assert_eq!(
        detail(&report, "Releasing the pod"),
        [format!("leftover allocation {id} cancelled")]
    );
    let queue = Command::new("squeue")
        .args([
            "--noheader",
            "--name=referee-pod-slurm",
            "--states=PENDING,RUNNING",
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&queue.stdout), "");
}

#[test]
#[ignore = "needs a Slurm cluster: scripts/slurm-local start, then SLURM_CONF (.ci/run)"]
fn a_killed_allocation_is_seen_dead_and_a_new_one_is_rented() {
    require_cluster();
    let spec = PodSpec {
        backend: PodBackend::Slurm,
        time_limit_min: 5,
        staging_dir: Some("/tmp".into()),
        ..PodSpec::default()
    };
    let mut pod = SlurmPod::new(spec.clone(), "referee-killed");
    let first = pod.provision().unwrap();
    let id = first.id.unwrap();
    assert!(pod.is_alive().unwrap());
    let cancel = Command::new("scancel")
        .arg(id.to_string())
        .status()
        .unwrap();
    assert!(cancel.success());
    // Slurm ends the job within its KillWait; poll without a wall-clock assertion.
    let mut alive = true;
    for _ in 0..600 {
        alive = pod.is_alive().unwrap();
        if !alive {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(!alive, "allocation {id} still runs after scancel");
    let mut again = SlurmPod::new(spec, "referee-killed");
    let second = again.provision().unwrap();
    assert_ne!(second.id, Some(id));
    let ran = again
        .command(Path::new("/bin/true"), &[])
        .unwrap()
        .status()
        .unwrap();
    assert!(ran.success());
    assert!(again.release().unwrap().leftovers_cancelled.is_empty());
    pod.release().unwrap();
}

/// The tiny campaign of two passes on a `slurm` pod of 2 GPUs staging into `staging`.
fn tiny_on_a_pod(staging: &Path) -> String {
    format!(
        "[pod]\nbackend = \"slurm\"\ngpus = 2\ntime_limit_min = 10\nstaging_dir = \"{}\"\n",
        staging.display()
    )
}

/// The pod's allocations of the round `referee-tiny-r1`, as `squeue` lists them.
fn allocations_of_the_round() -> Vec<String> {
    let queue = Command::new("squeue")
        .args(["--noheader", "--name=referee-tiny-r1", "--format=%i"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&queue.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// The forms (raw, hex, base64) of the 32-byte secret the journal's setup record holds
/// at `pointer` as hex.
fn secret_at(setup: &Value, pointer: &str) -> receipts::keys::SeedForms {
    let hex = setup
        .pointer(pointer)
        .unwrap_or_else(|| panic!("the home journal's setup holds no {pointer}: {setup:#}"));
    let seed: receipts::model::Seed32 = serde_json::from_value(hex.clone()).unwrap();
    receipts::keys::SeedForms::of(&seed.0)
}

/// Every regular file under `dir` that is still there when read (the agent writes
/// while it is walked): its path and bytes. The shipped binary, `bin/referee`, is this
/// test's own build (its sha256 is checked against the receipt): left out, the walk
/// takes milliseconds while the pod runs on.
fn read_tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return files;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(read_tree(&path));
        } else if path.ends_with("bin/referee") {
            continue;
        } else if let Ok(bytes) = fs::read(&path) {
            files.push((path, bytes));
        }
    }
    files
}

/// A round on a rented pod end to end (content/pods.md, A round on a pod): every pass
/// runs on the allocation through `referee agent`, each run journaled at home as its
/// frame arrives; the allocation killed after the first run, the round goes on on a new
/// one from the journal; the receipt records both allocations, their setup steps and the
/// agent's sha256, and verifies; the entries' engine time on the pod is counted; the
/// staging directory is gone after the release. While the round runs, nothing on the
/// pod holds a private key, the evaluator's secret (a beacon round) or the sample seed:
/// the pod's copy of the journal carries the sample pools instead. Then the attacks,
/// re-signed with the evaluator's own key: another agent digest, and the pod dropped
/// from the receipt, each fail `pod.agent`.
#[test]
#[ignore = "needs a Slurm cluster: scripts/slurm-local start, then SLURM_CONF (.ci/run)"]
fn a_round_runs_on_a_slurm_pod_and_a_killed_allocation_resumes_on_a_new_one() {
    require_cluster();
    let staging_dir = tempfile::tempdir().unwrap();
    let staging = staging_dir.path().join("staging");
    let pod = tiny_on_a_pod(&staging);
    let tiny = support::Tiny {
        runs: 2,
        backend: &pod,
        ..support::Tiny::default()
    };
    let fixture = support::Fixture::new(&tiny, &[("miner-a", "max_num_seqs", "2")]);
    let beacon = staging_dir.path().join("beacon.json");
    fs::write(
        &beacon,
        format!(r#"{{"round":7,"value":"{}"}}"#, "be".repeat(32)),
    )
    .unwrap();
    let mut round = fixture
        .round_command()
        .arg("--beacon-file")
        .arg(&beacon)
        .arg("--json")
        .env("REFEREE_PLANTED_SIGNING_KEY", PLANTED_SEED)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once the first run is journaled at home: what the pod holds is scanned, then its
    // allocation is killed.
    let journal = fixture.data.join("tiny/.work/round-1/journal.jsonl");
    let round_staging = staging.join("tiny-round-1");
    let mut killed = None;
    for _ in 0..3000 {
        let home = fs::read_to_string(&journal).unwrap_or_default();
        if home.matches("\"kind\":\"entry\"").count() >= 1 {
            let setup: Value = serde_json::from_str(home.lines().next().unwrap()).unwrap();
            let secrets = [
                (
                    "the planted key",
                    receipts::keys::SeedForms::of(&[0x5e, 0xed].repeat(16).try_into().unwrap()),
                ),
                (
                    "the evaluator's secret",
                    secret_at(&setup, "/evaluatorSecret"),
                ),
                (
                    "the sample seed",
                    secret_at(&setup, "/seeds/sampleSeed/seed"),
                ),
            ];
            let shipped = read_tree(&round_staging);
            let paths: Vec<&PathBuf> = shipped.iter().map(|(path, _)| path).collect();
            assert!(shipped.len() > 5, "{paths:?}");
            for (path, bytes) in &shipped {
                for (what, forms) in &secrets {
                    assert!(!forms.found_in(bytes), "{} holds {what}", path.display());
                }
            }
            // The pod's journal: the setup without either secret, with the sample pools.
            let (_, pod_journal) = (shipped.iter())
                .find(|(path, _)| path.ends_with("tiny/.work/round-1/journal.jsonl"))
                .expect("no journal shipped to the pod");
            let pod_setup: Value =
                serde_json::from_slice(pod_journal.split(|b| *b == b'\n').next().unwrap()).unwrap();
            assert_eq!(pod_setup["evaluatorSecret"], Value::Null);
            assert_eq!(pod_setup["seeds"]["sampleSeed"], Value::Null);
            assert_eq!(pod_setup["seeds"]["itemSeed"], setup["seeds"]["itemSeed"]);
            assert_eq!(
                pod_setup["samplePools"].as_array().map(Vec::len),
                Some(2),
                "{pod_setup:#}"
            );
            for pool in pod_setup["samplePools"].as_array().unwrap() {
                assert!(
                    pool["items"].as_array().is_some_and(|i| !i.is_empty()),
                    "{pool}"
                );
            }
            assert_eq!(
                receipts::layout::find_private_keys(&round_staging).unwrap(),
                Vec::<PathBuf>::new()
            );
            let ids = allocations_of_the_round();
            assert_eq!(ids.len(), 1, "{ids:?}");
            let cancel = Command::new("scancel").arg(&ids[0]).status().unwrap();
            assert!(cancel.success());
            killed = Some(ids[0].clone());
            break;
        }
        if round.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let output = round.wait_with_output().unwrap();
    let Some(killed) = killed else {
        panic!(
            "the round journaled no run while its first allocation lived: {}",
            text(&output)
        );
    };
    let killed: u64 = killed.parse().unwrap();
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(allocations_of_the_round(), Vec::<String>::new());
    assert!(
        !round_staging.exists(),
        "the staging directory outlived the release: {:?}",
        walk(&round_staging)
    );
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();

    let bundle = fixture.data.join("tiny/rounds/1");
    let keyring = receipts::keys::Keyring::load(&fixture.data.join("keyring.json")).unwrap();
    let verify = |dir: &Path| verifier::verify_bundle(dir, &keyring, &Default::default());
    let report = verify(&bundle);
    assert!(
        report.passed(),
        "{:#?}",
        report.failures().collect::<Vec<_>>()
    );
    let pod_checks: Vec<_> = report
        .checks
        .iter()
        .filter(|c| c.name == verifier::CheckName::PodAgent)
        .map(|c| (c.target.clone(), c.passed))
        .collect();
    assert_eq!(
        pod_checks,
        [
            (Some("pod.allocations[0]".to_owned()), true),
            (Some("pod.allocations[1]".to_owned()), true)
        ]
    );
    let statement = testkit::forge::statement(&bundle, "receipt.dsse.json");
    let pod = &statement["predicate"]["pod"];
    let binary_sha =
        receipts::bundle::file_sha256(Path::new(env!("CARGO_BIN_EXE_referee"))).unwrap();
    assert_eq!(pod["backend"], "slurm");
    let allocations = pod["allocations"].as_array().unwrap();
    assert_eq!(allocations.len(), 2, "{pod:#}");
    assert_eq!(allocations[0]["id"], killed);
    assert_ne!(allocations[1]["id"], killed);
    for allocation in allocations {
        assert_eq!(allocation["agentSha256"], binary_sha.as_str());
        assert_eq!(allocation["gpus"], "0,1");
    }
    // Each allocation's steps, by name, from the receipt's timeline: its setup, then
    // its release.
    let steps = statement["predicate"]["steps"].as_array().unwrap();
    let names = |allocation: &Value| -> Vec<String> {
        allocation["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                let step = &steps[i.as_u64().unwrap() as usize];
                assert_eq!(step["group"], "Pod");
                step["name"].as_str().unwrap().to_owned()
            })
            .collect()
    };
    let setup_and_release = [
        "Renting the pod",
        "Shipping the harness",
        "Preparing the pod",
        "Pulling engine images",
        "Downloading model weights",
        "Releasing the pod",
    ];
    assert_eq!(names(&allocations[0]), setup_and_release);
    assert_eq!(names(&allocations[1]), setup_and_release);
    // The entries ran on the pod: their engine logs name the staged trees (the
    // reference scorer's engine runs at home, after the pod is released).
    let engine_logs: Vec<PathBuf> = walk(&bundle.join("logs/engines"))
        .into_iter()
        .filter(|log| !log.ends_with("scorer.log"))
        .collect();
    assert!(!engine_logs.is_empty());
    for log in &engine_logs {
        let text = fs::read_to_string(log).unwrap();
        assert!(
            text.contains(&staging.display().to_string()),
            "{} ran off the pod",
            log.display()
        );
    }
    // The engine time counts the entries' engines on the pod: at least their SLA runs
    // (each within its engine's life; 1 ms of rounding each).
    let sla: Vec<i128> = (steps.iter())
        .filter(|s| s["phase"] == "running_sla" && s["group"] != "Scorer")
        .map(|s| {
            let at = |k: &str| {
                serde_json::from_value::<receipts::model::Timestamp>(s[k].clone())
                    .unwrap()
                    .datetime()
            };
            (at("endedAt") - at("startedAt")).whole_microseconds()
        })
        .collect();
    assert!(sla.len() >= 4, "{sla:?}");
    let sla_ms = sla.iter().sum::<i128>() / 1000;
    let engine_ms = i128::from(summary["engineMs"].as_u64().unwrap());
    assert!(
        engine_ms + sla.len() as i128 >= sla_ms,
        "engine time {engine_ms} ms, the entries' SLA runs {sla_ms} ms"
    );

    // The attacks, each on a copy re-signed with the evaluator's own key.
    let key = receipts::keys::PrivateKey::load(&fixture.key).unwrap();
    let forged = |edit: &dyn Fn(&mut Value)| {
        let copy = tempfile::tempdir().unwrap();
        testkit::copy_dir(&bundle, copy.path());
        let mut statement = testkit::forge::statement(copy.path(), "receipt.dsse.json");
        edit(&mut statement["predicate"]);
        testkit::forge::sign_with(copy.path(), "receipt.dsse.json", statement, &key);
        let report = verify(copy.path());
        report
            .failures()
            .filter(|c| c.name == verifier::CheckName::PodAgent)
            .map(|c| {
                c.reason
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
    };
    let other = Sha256Hex::digest(b"another agent");
    assert_eq!(
        forged(&|p| p["pod"]["allocations"][1]["agentSha256"] = other.as_str().into()),
        [format!(
            "`receipt.dsse.json` pod.allocations[1].agentSha256 is {other}, recomputed {binary_sha}"
        )]
    );
    assert_eq!(
        forged(&|p| {
            p.as_object_mut().unwrap().remove("pod");
        }),
        ["`receipt.dsse.json` pod: missing: the campaign rents a `slurm` pod"]
    );
}
