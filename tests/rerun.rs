//! End-to-end tests of `referee verify --rerun` (issue 14) on tiny rounds of the built-in
//! engine: a faithful round re-runs GOOD and its signed rerun bundle verifies and names
//! the original; a recorded diff whose knob was changed 160× (`max_num_batched_tokens`
//! 160 → 1: the prompt prefilled one token per step; the receipt re-signed with the
//! evaluator's key) is BAD, naming the entry and the paired score; a recorded
//! diff whose engine cannot start is FAIL; an entry recorded on Docker is UNKWN "image
//! unavailable". Wall-clock is never asserted.
//!
//! Each original round seats the baseline and one challenger whose diff changes nothing
//! the engine's speed depends on (`kv_cache_budget_mb` 16 → 17), in one pass; the forged
//! copies replace that diff (renamed to its new sha256 everywhere) and re-sign both
//! statements with the evaluator's key, so the copy verifies and only a re-run can tell.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};

use receipts::bundle::{ENVELOPE_FILE, MAX_ENVELOPE_BYTES, sign_statement};
use receipts::dsse::Envelope;
use receipts::keys::PrivateKey;
use receipts::layout::{patch_input, read_round_record};
use receipts::model::Sha256Hex;
use receipts::statement::Statement;
use serde_json::Value;

use support::{Fixture, Tiny, text, tiny_diff as diff};
use testkit::copy_dir;

/// Rounds measure speed: never two at once.
static SERIAL: Mutex<()> = Mutex::new(());

/// The tiny campaign (tests/support) of one pass, so the speed tolerance is the
/// campaign's drift bound. The SLA is loose (p50 ≤ 1 s): the tests run on shared, busy
/// machines and test re-runs, not the SLA.
const LOOSE: Tiny<'static> = Tiny {
    rates: support::FIXED_RATE,
    runs: 1,
    drift_bound_bp: 5000,
    backend: "",
    bound_ms: 1000,
    input_len: "min = 24, max = 48",
    output_len: "min = 24, max = 32",
    correctness: "",
};

/// One probe at 4 requests/s, which every engine here keeps up with: a faithful re-run's
/// paired score stays within a few percent of the original's. Drift bound 50 %.
const FIXED_RATE: Tiny<'static> = Tiny {
    rates: "min_rate_milli_rps = 4000\nmax_rate_milli_rps = 4000",
    ..LOOSE
};

/// A rate search from 4 to 32 requests/s over long prompts and short outputs, where
/// prefilling one prompt token per step instead of the whole prompt costs most of the
/// throughput (−85 % measured on a busy 2-core VM, whose noise moved a harmless diff's
/// score by up to 20 %). Drift bound 20 %.
const LONG_PROMPTS: Tiny<'static> = Tiny {
    rates: "min_rate_milli_rps = 4000\nmax_rate_milli_rps = 32000",
    drift_bound_bp: 2000,
    input_len: "min = 100, max = 140",
    output_len: "min = 8, max = 12",
    ..LOOSE
};

/// The challenger's miner.
const MINER: &str = "same";

/// A sealed original round: its data directory (with the evaluator's keyring), the
/// evaluator's key, and the challenger's patch.
struct Original {
    dir: tempfile::TempDir,
    data: PathBuf,
    key: PathBuf,
    patch: Sha256Hex,
}

impl Original {
    /// `rounds/1` of the campaign.
    fn bundle(&self) -> PathBuf {
        self.data.join("tiny/rounds/1")
    }

    /// The campaign's baseline repository in the data directory.
    fn baseline(&self) -> PathBuf {
        self.data.join("tiny/baseline.git")
    }

    fn key(&self) -> PrivateKey {
        PrivateKey::load(&self.key).unwrap()
    }
}

/// A data directory with the tiny campaign of `tiny`, the challenger's harmless diff
/// ingested, and round 1 run and sealed through the binary.
fn original(tiny: &Tiny<'_>) -> Original {
    let fixture = Fixture::new(tiny, &[(MINER, "kv_cache_budget_mb", "17")]);
    let patch = Sha256Hex::digest(diff("kv_cache_budget_mb", "17").as_bytes());
    let round = fixture.round_command().output().unwrap();
    assert!(round.status.success(), "{}", text(&round));
    Original {
        dir: fixture.dir,
        data: fixture.data,
        key: fixture.key,
        patch,
    }
}

/// The fixed-rate original, run once for every test that needs it.
fn fixed_rate() -> &'static Original {
    static ORIGINAL: OnceLock<Original> = OnceLock::new();
    ORIGINAL.get_or_init(|| original(&FIXED_RATE))
}

/// `referee verify --rerun <bundle> --data <data> <extra…>`.
fn rerun(original: &Original, bundle: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_referee"))
        .args(["verify", "--rerun"])
        .arg(bundle)
        .arg("--data")
        .arg(&original.data)
        .args(extra)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// The `--json` output of a re-run.
fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(output)))
}

/// The statement of the envelope `file` in `dir`, as JSON.
fn statement(dir: &Path, file: &str) -> Value {
    let bytes = std::fs::read(dir.join(file)).unwrap();
    let envelope = Envelope::from_json(&bytes, MAX_ENVELOPE_BYTES).unwrap();
    serde_json::from_slice(&envelope.payload).unwrap()
}

/// Re-signs the envelope `file` of `dir` with `key` over its Statement edited by `edit`,
/// every subject's digest recomputed from the files as they are now.
fn resign(dir: &Path, file: &str, key: &PrivateKey, edit: impl FnOnce(&mut Value)) {
    let mut value = statement(dir, file);
    edit(&mut value);
    for subject in value["subject"].as_array_mut().unwrap() {
        let name = subject["name"].as_str().unwrap().to_owned();
        let bytes = std::fs::read(dir.join(&name)).unwrap();
        subject["digest"]["sha256"] = Value::String(Sha256Hex::digest(&bytes).to_string());
    }
    let statement: Statement = serde_json::from_value(value).unwrap();
    let envelope = sign_statement(&statement, &[key]).unwrap();
    std::fs::write(dir.join(file), envelope.to_file_bytes().unwrap()).unwrap();
}

/// A copy of the original bundle (under the original's temp dir, as `name`) whose
/// challenger's recorded diff is `new_diff`: the file renamed to its sha256, every
/// mention of the old sha256 in both statements and in the probe logs (which name their
/// entry's patch from v5) replaced, both statements re-signed with the evaluator's key:
/// a forgery no offline check catches, which only a re-run shows. Returns the copy and
/// the new patch.
fn forge_diff(original: &Original, name: &str, new_diff: &str) -> (PathBuf, Sha256Hex) {
    let copy = original.dir.path().join(name);
    copy_dir(&original.bundle(), &copy);
    let new = Sha256Hex::digest(new_diff.as_bytes());
    std::fs::remove_file(copy.join(patch_input(&original.patch))).unwrap();
    std::fs::write(copy.join(patch_input(&new)), new_diff).unwrap();
    let replace = |value: &mut Value| {
        let text = serde_json::to_string(value)
            .unwrap()
            .replace(original.patch.as_str(), new.as_str());
        *value = serde_json::from_str(&text).unwrap();
    };
    // Probe logs (from v5), correctness and sample files (from v6) name their entry's
    // patch: rewritten too, so only a re-run catches the forgery.
    for dir in ["probes", "correctness"] {
        for log in std::fs::read_dir(copy.join(dir)).unwrap() {
            let path = log.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::write(&path, text.replace(original.patch.as_str(), new.as_str())).unwrap();
        }
    }
    let key = original.key();
    resign(&copy, "round-opened.dsse.json", &key, replace);
    resign(&copy, ENVELOPE_FILE, &key, replace);
    assert_verifies(original, &copy);
    (copy, new)
}

/// `referee verify <dir>` passes against the original's keyring; returns its stdout.
fn assert_verifies(original: &Original, dir: &Path) -> String {
    let verify = Command::new(env!("CARGO_BIN_EXE_referee"))
        .arg("verify")
        .arg(dir)
        .arg("--data")
        .arg(&original.data)
        .output()
        .unwrap();
    assert!(verify.status.success(), "{}", text(&verify));
    String::from_utf8_lossy(&verify.stdout).into_owned()
}

#[test]
fn a_faithful_round_reruns_good_and_its_signed_rerun_verifies_and_names_the_original() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let original = fixed_rate();
    let out = original.dir.path().join("good.rerun");
    let output = rerun(
        original,
        &original.bundle(),
        &[
            "--key",
            original.key.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let result = json(&output);
    assert_eq!(result["verdict"], "good", "{result:#}");
    assert_eq!(result["exitCode"], 0);
    let record = &result["record"];
    let (_, digest) = read_round_record(&original.bundle()).unwrap();
    assert_eq!(record["original"]["statementDigest"], digest.as_str());
    assert_eq!(record["original"]["statement"], "original.statement.json");
    // One pass: no A/A spread, so the campaign's drift bound, capped at two thirds of
    // its margin of 10 %.
    assert_eq!(
        record["tolerance"],
        serde_json::json!({"toleranceBp": 666, "basis": {"kind": "drift_bound", "boundBp": 5000}, "capBp": 666})
    );
    let verdicts: Vec<(&str, &str)> = record["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["role"].as_str().unwrap(),
                e["comparison"]["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [("baseline", "good"), ("challenger", "good")],
        "{result:#}"
    );
    assert_eq!(record["round"]["verdict"], "good");
    // The original Statement, byte for byte, is in the rerun bundle.
    let original_statement = {
        let bytes = std::fs::read(original.bundle().join(ENVELOPE_FILE)).unwrap();
        Envelope::from_json(&bytes, MAX_ENVELOPE_BYTES)
            .unwrap()
            .payload
    };
    assert_eq!(
        std::fs::read(out.join("original.statement.json")).unwrap(),
        original_statement
    );
    // `referee verify` checks the rerun bundle and says which receipt it re-ran.
    let stdout = assert_verifies(original, &out);
    assert!(
        stdout.contains(&format!(
            "re-ran round 1 of `tiny`, statement sha256 {digest}: GOOD"
        )),
        "{stdout}"
    );
    assert!(stdout.contains("ok   rerun: 2 checks passed"), "{stdout}");
    assert_eq!(
        statement(&out, ENVELOPE_FILE)["predicateType"],
        "https://referee.dev/predicates/rerun/v2"
    );
    // Rerun v2 requires the tolerance's cap; a v1 re-run sealed before the cap, uncapped,
    // keeps verifying.
    for (version, verifies) in [("v1", true), ("v2", false)] {
        let uncapped = original
            .dir
            .path()
            .join(format!("uncapped-{version}.rerun"));
        copy_dir(&out, &uncapped);
        resign(&uncapped, ENVELOPE_FILE, &original.key(), |statement| {
            statement["predicateType"] =
                Value::String(format!("https://referee.dev/predicates/rerun/{version}"));
            let tolerance = &mut statement["predicate"]["tolerance"];
            tolerance["toleranceBp"] = Value::from(5000);
            tolerance.as_object_mut().unwrap().remove("capBp").unwrap();
        });
        let verify = Command::new(env!("CARGO_BIN_EXE_referee"))
            .arg("verify")
            .arg(&uncapped)
            .arg("--data")
            .arg(&original.data)
            .output()
            .unwrap();
        let expected = if verifies { 0 } else { 1 };
        assert_eq!(
            verify.status.code(),
            Some(expected),
            "{version}: {}",
            text(&verify)
        );
        if !verifies {
            assert!(
                text(&verify).contains("tolerance.capBp present"),
                "{}",
                text(&verify)
            );
        }
    }
    // A one-byte change to the original's copy fails it.
    let tampered = original.dir.path().join("tampered.rerun");
    copy_dir(&out, &tampered);
    let path = tampered.join("original.statement.json");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.push(b' ');
    std::fs::write(&path, bytes).unwrap();
    let verify = Command::new(env!("CARGO_BIN_EXE_referee"))
        .arg("verify")
        .arg(&tampered)
        .arg("--data")
        .arg(&original.data)
        .output()
        .unwrap();
    assert_eq!(verify.status.code(), Some(1), "{}", text(&verify));
}

#[test]
fn a_knob_changed_160_fold_in_a_recorded_diff_is_bad_naming_the_entry_and_the_score() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let original = original(&LONG_PROMPTS);
    // The recorded diff now prefills one prompt token per step instead of 160.
    let (forged, patch) = forge_diff(
        &original,
        "forged-bad",
        &diff("max_num_batched_tokens", "1"),
    );
    let baseline = original.baseline();
    let output = rerun(
        &original,
        &forged,
        &["--baseline", baseline.to_str().unwrap(), "--json"],
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let result = json(&output);
    assert_eq!(result["verdict"], "bad", "{result:#}");
    let entry = &result["record"]["entries"][1];
    assert_eq!(entry["patch"], patch.as_str());
    assert_eq!(entry["comparison"]["verdict"], "bad");
    let findings = entry["comparison"]["findings"].as_array().unwrap();
    let speedup = findings
        .iter()
        .find(|f| f["check"]["kind"] == "speedup")
        .unwrap_or_else(|| panic!("no speedup finding: {findings:#?}"));
    assert_eq!(speedup["severity"], "bad");
    let old = speedup["check"]["originalPpm"].as_i64().unwrap();
    let new = speedup["check"]["rerunPpm"].as_i64().unwrap();
    assert_eq!(speedup["check"]["tolerancePpm"], 66_600);
    assert!((new - old).abs() > 66_600, "{speedup:#}");
    // The engine config the diff makes is not the one recorded either.
    assert!(
        findings
            .iter()
            .any(|f| f["check"]["kind"] == "engine_config" && f["severity"] == "bad"),
        "{findings:#?}"
    );
}

#[test]
fn a_recorded_diff_whose_engine_cannot_start_is_fail_saying_where() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let original = fixed_rate();
    // A KV cache far over the memory limit: the engine refuses to start.
    let (forged, _) = forge_diff(original, "forged-fail", &diff("kv_cache_budget_mb", "4096"));
    let baseline = original.baseline();
    let output = rerun(
        original,
        &forged,
        &["--baseline", baseline.to_str().unwrap(), "--json"],
    );
    assert_eq!(output.status.code(), Some(3), "{}", text(&output));
    let result = json(&output);
    assert_eq!(result["verdict"], "fail", "{result:#}");
    let entries = &result["record"]["entries"];
    assert_eq!(entries[0]["comparison"]["verdict"], "good");
    let comparison = &entries[1]["comparison"];
    assert_eq!(comparison["verdict"], "fail");
    let reason = comparison["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("pass 1, starting the engine: engine died before becoming healthy"),
        "{reason}"
    );
    assert_eq!(entries[1]["rerun"]["status"], "disqualified");
    // For people: the entry, its verdict and where the re-run broke.
    let human = rerun(
        original,
        &forged,
        &["--baseline", baseline.to_str().unwrap(), "--entries", MINER],
    );
    assert_eq!(human.status.code(), Some(3), "{}", text(&human));
    let stdout = String::from_utf8_lossy(&human.stdout);
    let patch = entries[1]["patch"]
        .as_str()
        .unwrap()
        .parse::<Sha256Hex>()
        .unwrap();
    assert!(
        stdout.contains(&format!(
            "  FAIL  challenger {MINER} {}: pass 1, starting the engine: engine died before becoming healthy",
            patch.short()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("result: FAIL (1 GOOD, 1 FAIL of 2 entries)"),
        "{stdout}"
    );
}

/// An entry of a built-in campaign whose receipt says it ran on Docker never reaches a
/// re-run: `verify` refuses the bundle first, its backend not the campaign's
/// (`engine.isolation`; a Docker campaign's entries run their recorded image ids:
/// tests/docker_demo.rs).
#[test]
fn an_entry_recorded_on_docker_in_a_builtin_campaign_is_refused_before_the_rerun() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let original = fixed_rate();
    let copy = original.dir.path().join("docker");
    copy_dir(&original.bundle(), &copy);
    resign(&copy, ENVELOPE_FILE, &original.key(), |s| {
        let engine = &mut s["predicate"]["entries"][1]["engine"];
        engine["backend"] = Value::String("docker".into());
        // A container's sandbox and cpuset (`engine.isolation`, checked by verify).
        engine["isolation"]["sandbox"] = Value::String("docker".into());
        if engine["isolation"]["pinning"] == "sched_affinity" {
            engine["isolation"]["pinning"] = Value::String("cpuset".into());
        }
        // What a Docker entry records (`engine.docker`, checked by verify), as inspected.
        let memory_bytes = engine["memoryLimitMb"].as_u64().unwrap_or(64) << 20;
        engine["docker"] = serde_json::json!({
            "imageReference": "engine:v1",
            "imageId": format!("sha256:{}", "a".repeat(64)),
            "daemonVersion": "20.10.24+dfsg1",
            "apiVersion": "1.41",
            "memoryBytes": memory_bytes,
            "cpusetCpus": "1",
            "readOnlyRoot": true,
            "init": true,
            "unprivileged": true,
            "network": "referee-test",
            "networkInternal": true,
            "tmpfs": {"/tmp": "rw,size=64m"},
            "binds": ["/data/trees/a:/tree:ro"],
            "envNames": ["PATH"],
        });
    });
    let verify = Command::new(env!("CARGO_BIN_EXE_referee"))
        .arg("verify")
        .arg(&copy)
        .arg("--data")
        .arg(&original.data)
        .output()
        .unwrap();
    assert_eq!(verify.status.code(), Some(1), "{}", text(&verify));
    assert!(
        String::from_utf8_lossy(&verify.stdout).contains(
            "FAIL engine.isolation entries[1]: `receipt.dsse.json` entries[1].engine.backend is \
             docker, recomputed builtin (the campaign's backend)"
        ),
        "{}",
        text(&verify)
    );
}
