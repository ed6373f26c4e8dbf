//! What the CLI integration tests share (`mod support;` in each): the built binary with a
//! hermetic environment, its output as text, and the tiny campaign —
//! a one-layer built-in engine, probes of a few requests — set up as a data directory
//! with a trusted evaluator key and ingested challengers, ready for `referee round`.
//! Tests run the binary (`CARGO_BIN_EXE_referee`), never `cargo`. Add helpers here rather
//! than to one test file when a second file needs them.

// Each test binary uses a subset.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use intake::gates::BuiltinBuilder;
use intake::ingest::{IngestRequest, add_campaign, add_miner, ingest};
use receipts::keys::{PrivateKey, generate_key_pair};
use receipts::layout::DataDir;
use receipts::model::{MinerId, PipelineState, Sha256Hex};
use referee::demo::{config_diff, set_key, write_config_repo};

/// Rounds measure speed: hold it so that no two of one test binary run at once on a
/// small machine.
pub static SERIAL: Mutex<()> = Mutex::new(());

/// Takes [`SERIAL`], whatever a panicking holder left.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The repository root (the `referee` package's manifest directory).
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The built `referee` binary with no `REFEREE_DATA` or `REFEREE_KEY_DIR` from the
/// caller's environment, and `NO_COLOR=1`.
pub fn bin() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_referee"));
    command
        .env_remove("REFEREE_DATA")
        .env_remove("REFEREE_KEY_DIR")
        .env("NO_COLOR", "1");
    command
}

/// `referee <args>` run in `dir` ([`bin`]), to its end.
pub fn referee(dir: &Path, args: &[&str]) -> Output {
    bin()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run referee")
}

/// Standard output as text (lossy UTF-8).
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Standard error as text (lossy UTF-8).
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Exit status, standard output and standard error, for failure messages.
pub fn text(output: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        stdout(output),
        stderr(output)
    )
}

/// `referee <args>` in `dir`, which must exit 0 (the test fails with its output
/// otherwise); its standard output.
pub fn run_ok(dir: &Path, args: &[&str]) -> String {
    let out = bin().args(args).current_dir(dir).output().expect("referee");
    assert_eq!(
        out.status.code(),
        Some(0),
        "referee {args:?}:\n{}",
        text(&out)
    );
    stdout(&out)
}

/// Asserts the command succeeded, showing its output otherwise.
pub fn ok(output: &Output) {
    assert!(output.status.success(), "referee failed: {}", text(output));
}

/// The tiny baseline: one layer, one sequence at a time.
pub const TINY_ENGINE_TOML: &str = "model_seed = 7
layers = 1
d_model = 128
heads = 4
context = 160
max_num_seqs = 1
max_num_batched_tokens = 160
threads = 1
weight_dtype = \"f32\"
kv_cache_dtype = \"f32\"
kv_cache_budget_mb = 16
startup_delay_ms = 0
";

/// The tiny campaign `tiny`; `{commit}`, `{runs}`, `{drift}`, `{backend}`, `{bound_ms}`,
/// `{input}`, `{output}` and `{rates}` are filled in by [`Tiny::toml`].
const TINY_CAMPAIGN_TOML: &str = r#"id = "tiny"
runs = {runs}
overtake_margin_bp = 1000
drift_bound_bp = {drift}
health_deadline_s = 20
# These tests run on shared 2-core VMs whose CPU steal reaches 5 %; they test rounds,
# not the steal bound (its own tests are in runner and engines).
max_steal_permille = 500
{backend}
[model]
name = "tiny"

[hardware]
memory_limit_mb = 64
engine_threads = 1

[baseline]
repo = "baseline.git"
commit = "{commit}"

[workload]
input_len = { kind = "uniform", {input} }
output_len = { kind = "uniform", {output} }

[sla]
percentile = "p50"
latency = "e2e"
bound_ms = {bound_ms}

[rate_search]
{rates}
min_probe_duration_ms = 400
min_probe_requests = 8
warmup_requests = 1
send_lag_bound_us = 250000
rate_tolerance_bp = 5000
request_deadline_ms = {deadline}
entry_deadline_s = 60

[correctness]
items = 3
group_size = 3
top_k = 5
input_len = { kind = "uniform", min = 8, max = 16 }
output_tokens = 6
{correctness}"#;

/// One probe at 10 requests/s: a round in a few seconds.
pub const FIXED_RATE: &str = "min_rate_milli_rps = 10000\nmax_rate_milli_rps = 10000";

/// The knobs of the tiny campaign; [`Tiny::default`] is one pass at [`FIXED_RATE`],
/// drift bound 50 %, SLA p50 e2e ≤ 250 ms, prompts of 24–48 and outputs of 24–32
/// tokens, the builtin backend.
#[derive(Clone, Copy, Debug)]
pub struct Tiny<'a> {
    /// The `[rate_search]` rate lines.
    pub rates: &'a str,
    /// Passes (`runs`).
    pub runs: u32,
    /// `drift_bound_bp`.
    pub drift_bound_bp: u32,
    /// A top-level `backend = …` line, or empty.
    pub backend: &'a str,
    /// The SLA bound, ms.
    pub bound_ms: u32,
    /// The `input_len` bounds, `min = …, max = …`.
    pub input_len: &'a str,
    /// The `output_len` bounds.
    pub output_len: &'a str,
    /// More `[correctness]` lines (the sample's bounds, say), or empty.
    pub correctness: &'a str,
}

impl Default for Tiny<'static> {
    fn default() -> Self {
        Self {
            rates: FIXED_RATE,
            runs: 1,
            drift_bound_bp: 5000,
            backend: "",
            bound_ms: 250,
            input_len: "min = 24, max = 48",
            output_len: "min = 24, max = 32",
            correctness: "",
        }
    }
}

impl Tiny<'_> {
    /// The campaign file pinning `commit`.
    pub fn toml(&self, commit: &str) -> String {
        TINY_CAMPAIGN_TOML
            .replace("{commit}", commit)
            .replace("{rates}", self.rates)
            .replace("{backend}", self.backend)
            .replace("{runs}", &self.runs.to_string())
            .replace("{drift}", &self.drift_bound_bp.to_string())
            .replace("{bound_ms}", &self.bound_ms.to_string())
            // 1.5 s, or past a looser SLA bound: a request may take what the SLA allows.
            .replace("{deadline}", &(self.bound_ms + 500).max(1500).to_string())
            .replace("{input}", self.input_len)
            .replace("{output}", self.output_len)
            .replace("{correctness}", self.correctness)
    }
}

/// The diff setting `key = value` in the tiny baseline's `engine.toml`.
pub fn tiny_diff(key: &str, value: &str) -> String {
    config_diff(TINY_ENGINE_TOML, &set_key(TINY_ENGINE_TOML, key, value)).expect("diff")
}

/// A temp dir holding a data directory with the tiny campaign added, the evaluator key
/// trusted (in a key directory next to the data directory, never inside it: the data
/// directory is published) and challengers ingested.
pub struct Fixture {
    /// The temp dir: `src/` (baseline repository and campaign file), `data/`, `keys/`.
    pub dir: tempfile::TempDir,
    /// `<dir>/data`.
    pub data: PathBuf,
    /// `<dir>/keys/evaluator.key`.
    pub key: PathBuf,
}

impl Fixture {
    /// Campaign `tiny` of `tiny`, and for each `(miner, key, value)` of `edits` that
    /// miner registered and its diff setting `key = value` ingested to `bench_queued`.
    pub fn new(tiny: &Tiny<'_>, edits: &[(&str, &str, &str)]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data");
        let source = dir.path().join("src");
        let commit =
            write_config_repo(&source.join("baseline.git"), TINY_ENGINE_TOML).expect("repo");
        let campaign_toml = source.join("campaign.toml");
        std::fs::write(&campaign_toml, tiny.toml(&commit.to_string())).expect("campaign");
        let data_dir = DataDir::new(&data);
        add_campaign(&data_dir, &campaign_toml).expect("campaign add");
        let keys = dir.path().join("keys");
        std::fs::create_dir_all(&keys).expect("mkdir keys");
        generate_key_pair(&keys.join("evaluator")).expect("keygen");
        let key = PrivateKey::load(&keys.join("evaluator.key")).expect("key");
        testkit::keyring(&[&key])
            .save(&data_dir.keyring_path())
            .expect("save keyring");
        let campaign = data_dir.campaign(&"tiny".parse().expect("id"));
        for (miner, key_name, value) in edits {
            let miner: MinerId = miner.parse().expect("miner id");
            add_miner(&campaign, &miner).expect("miner add");
            let diff = tiny_diff(key_name, value);
            let commitment = Sha256Hex::digest(diff.as_bytes());
            let request = IngestRequest {
                diff: diff.as_bytes(),
                miner: &miner,
                commitment: &commitment,
            };
            let outcome = ingest(&campaign, &request, &BuiltinBuilder).expect("ingest");
            assert_eq!(outcome.submission().state, PipelineState::BenchQueued);
        }
        Self {
            key: keys.join("evaluator.key"),
            data,
            dir,
        }
    }

    /// The key directory: `<dir>/keys/`.
    pub fn key_dir(&self) -> PathBuf {
        self.key.parent().expect("key dir").to_path_buf()
    }

    /// `referee round --campaign tiny --data <data> --key <key>` ([`bin`]), to add
    /// arguments or environment to.
    pub fn round_command(&self) -> Command {
        let mut command = bin();
        command
            .args(["round", "--campaign", "tiny", "--data"])
            .arg(&self.data)
            .arg("--key")
            .arg(&self.key);
        command
    }
}

/// Writes `<dir>/src/baseline.git` (the demo's baseline engine config) and
/// `<dir>/src/campaign.toml`: campaign `cli`, every default, `extra` appended. Returns
/// the campaign file.
pub fn write_cli_campaign(dir: &Path, extra: &str) -> PathBuf {
    let commit = write_config_repo(
        &dir.join("src/baseline.git"),
        referee::demo::BASELINE_ENGINE_TOML,
    )
    .expect("baseline repo");
    let path = dir.join("src/campaign.toml");
    std::fs::write(
        &path,
        format!(
            "id = \"cli\"\n\n[model]\nname = \"ref-tiny\"\n\n[baseline]\nrepo = \"baseline.git\"\ncommit = \"{commit}\"\n{extra}"
        ),
    )
    .expect("write campaign.toml");
    path
}

/// [`write_cli_campaign`], then `referee campaign add` into `<dir>/data` and `referee
/// miner add miner-a`, both through the binary.
pub fn setup_cli_campaign(dir: &Path, extra: &str) {
    write_cli_campaign(dir, extra);
    let add = referee(
        dir,
        &["campaign", "add", "src/campaign.toml", "--data", "data"],
    );
    assert_eq!(add.status.code(), Some(0), "{add:?}");
    let miner = referee(
        dir,
        &[
            "miner",
            "add",
            "miner-a",
            "--campaign",
            "cli",
            "--data",
            "data",
        ],
    );
    assert_eq!(miner.status.code(), Some(0), "{miner:?}");
}

/// Writes `bytes` to `<dir>/<file>` and runs `referee ingest <file>` for `miner-a` of
/// campaign `cli` with the honest commitment, then `extra` arguments.
pub fn ingest_cli(dir: &Path, file: &str, bytes: &[u8], extra: &[&str]) -> Output {
    std::fs::write(dir.join(file), bytes).expect("write diff");
    let commitment = Sha256Hex::digest(bytes).to_string();
    let mut args = vec![
        "ingest",
        file,
        "--miner",
        "miner-a",
        "--commitment",
        commitment.as_str(),
        "--campaign",
        "cli",
        "--data",
        "data",
    ];
    args.extend_from_slice(extra);
    referee(dir, &args)
}

/// A demo staged under `<dir>/src` (its `campaign.toml` there) made ready for a round,
/// all through the binary: `referee campaign add` into `<dir>/data`, an evaluator key pair
/// `<dir>/keys/evaluator.{key,pub}` that the data directory's keyring trusts, `referee
/// miner add <miner>`, and `diff` written to `<dir>/<file>` and ingested for that miner
/// with its honest commitment. `campaign` is the staged campaign's id. Returns the
/// evaluator's key and the path of its key file (for `referee round --key`).
pub fn setup_demo_submission(
    dir: &Path,
    campaign: &str,
    miner: &str,
    file: &str,
    diff: &str,
) -> (PrivateKey, PathBuf) {
    ok(&referee(
        dir,
        &["campaign", "add", "src/campaign.toml", "--data", "data"],
    ));
    let keys = dir.join("keys");
    std::fs::create_dir(&keys).expect("mkdir");
    generate_key_pair(&keys.join("evaluator")).expect("keygen");
    let key_path = keys.join("evaluator.key");
    let key = PrivateKey::load(&key_path).expect("key");
    testkit::keyring(&[&key])
        .save(&DataDir::new(dir.join("data")).keyring_path())
        .expect("save keyring");
    let on = ["--campaign", campaign, "--data", "data"];
    ok(&referee(dir, &[&["miner", "add", miner][..], &on].concat()));
    std::fs::write(dir.join(file), diff).expect("diff");
    let commitment = Sha256Hex::digest(diff.as_bytes()).to_string();
    let ingest = [
        &["ingest", file, "--miner", miner][..],
        &["--commitment", &commitment],
        &on,
    ]
    .concat();
    ok(&referee(dir, &ingest));
    (key, key_path)
}
