//! The campaign: everything a round is measured against, frozen before any round runs
//! (content/data-directory.md). One type holds every field with its default;
//! `campaign.toml` is the form people write, and [`FrozenCampaign`] is the form frozen
//! into the data directory — `campaign.json`, RFC 8785 canonical JSON with a
//! `schemaVersion` — whose stored bytes every receipt's campaign digest covers.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::ModelError;
use super::ids::{CampaignId, Sha256Hex};

/// A frozen campaign. Field names are snake_case, as written in `campaign.toml`.
///
/// Defaults follow content/competition.md (p95, 1 s bound, three runs, 2,000
/// correctness items, group bound 0.20, item bound 2.0) and content/submitting.md
/// (overtake margin 1 %). A campaign may shrink any of them for demos and tests
/// (content/measurement.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Campaign {
    /// `[a-z0-9-]{1,64}`; names the campaign's directory under the data directory.
    pub id: CampaignId,
    /// Human title shown on the scoreboard.
    #[serde(default)]
    pub title: String,
    /// The model every entry serves.
    pub model: ModelSpec,
    /// The hardware class rounds run on.
    #[serde(default)]
    pub hardware: HardwareSpec,
    /// The pinned baseline every diff is applied to.
    pub baseline: BaselineSpec,
    /// How entries are started.
    #[serde(default)]
    pub backend: Backend,
    /// The workload mix.
    #[serde(default)]
    pub workload: WorkloadSpec,
    /// The latency SLA throughput is measured at.
    #[serde(default)]
    pub sla: Sla,
    /// The rate search that finds the highest rate meeting the SLA.
    #[serde(default)]
    pub rate_search: RateSearchSpec,
    /// Independent runs per entry; the entry's throughput is their median (default 3).
    #[serde(default = "defaults::runs")]
    pub runs: u32,
    /// The order of the runs within a round: `"interleaved"` (the default, also when
    /// absent: `runs` passes, each running every entry once in an order drawn from the
    /// round's `passSeed`) or `"sequential"` (each entry's runs back to back, for
    /// backends slow to start). Absent (`None`) unless written, so campaigns frozen
    /// before it keep their digest. An unknown value is refused by the parser, naming
    /// the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_order: Option<PassOrder>,
    /// How the load generator counts output tokens: `"ids"` (the token ids it observed;
    /// the default, also when absent) or `"usage"` (the engine's self-reported
    /// `usage.completion_tokens`, for an engine API that cannot return token ids). Absent
    /// (`None`, meaning `"ids"`) unless written, so campaigns frozen before it keep their
    /// digest. An unknown value is refused by the parser, naming the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_count: Option<super::TokenCount>,
    /// The correctness gate.
    #[serde(default)]
    pub correctness: CorrectnessSpec,
    /// A challenger takes the seat only when `T_c × 10⁴ ≥ T_i × (10⁴ + margin)`; in basis
    /// points (default 100 = 1 %, content/submitting.md).
    #[serde(default = "defaults::overtake_margin_bp")]
    pub overtake_margin_bp: u32,
    /// Largest allowed |drift baseline − first baseline| / first baseline, in basis
    /// points, before the round is `infra_failed` (default 500 = 5 %).
    #[serde(default = "defaults::drift_bound_bp")]
    pub drift_bound_bp: u32,
    /// How long an engine may take to answer `/health`, in seconds (default 600).
    #[serde(default = "defaults::health_deadline_s")]
    pub health_deadline_s: u64,
    /// Surface rules for diffs.
    #[serde(default)]
    pub surface: SurfaceSpec,
    /// Keyids (securesystemslib default) of the evaluator keys that may sign this
    /// campaign's receipts; empty means any key of the keyring.
    #[serde(default)]
    pub evaluator_keyids: Vec<String>,
    /// `true` lets an entry's engine run unsandboxed when neither `bwrap` nor `unshare`
    /// can run on the host (recorded per entry as sandbox `trusted`); absent or `false`:
    /// such an entry is `infra_failed` instead (content/threat-model.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_engines: Option<bool>,
    /// Largest CPU steal time a run may suffer, in permille of the time its CPUs were
    /// given (`steal ms × 1000 ≤ bound × wall ms × CPUs`); a run over it is re-run once,
    /// then the entry is `infra_failed`. Absent: 50 (5 %); 1000 switches the check off
    /// (content/measurement.md, Isolation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steal_permille: Option<u32>,
    /// What the campaign's submissions are: `"diff"` (also when absent) or
    /// `"repository"` (content/repository-submissions.md). Absent (`None`) unless
    /// written, so campaigns frozen before it keep their digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submission: Option<super::SubmissionKind>,
    /// `[repository]`: the fetch gate's size cap and the per-coldkey queue of a
    /// `"repository"` campaign; absent, every default of [`super::RepositorySpec`].
    /// Refused on a `"diff"` campaign.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<super::RepositorySpec>,
    /// How a round's winner takes the title (content/title.md): `"000"` at once
    /// (absent), `"001"` after a confirmation round at least `holding_period_h` later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seat_rule: Option<SeatRuleKind>,
    /// Rule 001: the least time between a win and its confirmation round, hours
    /// (absent: 24).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holding_period_h: Option<u32>,
    /// The most time between two re-measurements of the title holder, days (absent: 7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remeasure_every_days: Option<u32>,
    /// How many counted regular rounds back a failed holder's successor is drawn from
    /// (absent: 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub successor_rounds: Option<u32>,
    /// `[limits]`: how much output an engine may make before it is cut (its log) or its
    /// request fails (a response). Absent (`None`, meaning [`Limits::default`]) unless
    /// written, so campaigns frozen before it keep their digest (content/threat-model.md,
    /// Bounded output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<Limits>,
    /// The oldest round predicate type a receipt of this campaign may have: `referee
    /// campaign add` records the newest it seals (`…/round/v6` and later), so a receipt
    /// of an older version, which lacks the checks added since, fails
    /// `round.minPredicate`. Absent (`None`) in campaigns frozen before it, which keep
    /// their digest and accept every version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_predicate: Option<String>,
    /// The competition track (content/s1-pro-speed.md): `"s1-pro-speed"` needs
    /// `workload_kind = "decide"` and pinned weights. Absent unless written, so campaigns
    /// frozen before it keep their digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub track: Option<super::Track>,
    /// What entries serve: `"completions"` (absent) or `"decide"`, which needs
    /// `[decide]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_kind: Option<super::WorkloadKind>,
    /// `[decide]`: the decision API of a `"decide"` campaign ([`super::DecideContract`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decide: Option<super::DecideContract>,
    /// A repository campaign's LLM review (content/review.md): a shell command given the
    /// fetched tree as its last argument and the static findings as JSON on stdin, printing
    /// its verdict on its first line. Absent (none by default): the static review alone
    /// decides, and campaigns frozen before it keep their digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_command: Option<String>,
    /// `[log]`: what the campaign asks of the transparency log's witnesses
    /// (content/transparency-log.md, Witnesses). Absent (`None`, meaning
    /// [`LogPolicy::default`]: nothing required) unless written, so campaigns frozen before
    /// it keep their digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<LogPolicy>,
    /// `[pod]`: the machine entries run on ([`super::PodSpec`], content/pods.md). Absent
    /// (`None`, meaning `backend = "local"`) unless written, so campaigns frozen before it
    /// keep their digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<super::PodSpec>,
    /// `[cost]`: the price of each resource class, by which an s1-fast-speed campaign
    /// also seats a challenger on cost per decision (content/s1-fast-speed.md, The cost
    /// rule). Absent unless written, so campaigns frozen before it keep their digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<super::CostSpec>,
    /// `[capability]`: the scorer of the sealed capability gate (track
    /// `s1-fast-speed`). Absent unless written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<super::CapabilitySpec>,
    /// `[agreement]`: the s1-pro reference of the agreement gate (track
    /// `s1-fast-speed`). Absent unless written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agreement: Option<super::AgreementSpec>,
    /// The derived-work margin, basis points (content/review.md, The derived-work margin):
    /// a challenger whose review says `derivedFrom` the incumbent takes the seat only by
    /// clearing this margin instead of `overtake_margin_bp`, when it is the larger; at most
    /// 100000. Absent (derived work held to `overtake_margin_bp`) unless written, so
    /// campaigns frozen before it keep their digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub derived_margin_bp: Option<u32>,
    /// `[parallel]`: the entries of a pass run at the same time on the round's GPUs
    /// ([`super::ParallelSpec`], content/noise.md, Parallel passes). Absent unless written: one run at
    /// a time, and campaigns frozen before it keep their digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel: Option<super::ParallelSpec>,
    /// `[isolation]`: whether engines get CPU sets of their own ([`super::IsolationSpec`]).
    /// Absent unless written (pinned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<super::IsolationSpec>,
    /// The lowest SM clock a busy GPU may run at while a run is measured, MHz: a
    /// telemetry sample below it makes the run invalid, re-run once like CPU steal
    /// (content/measurement.md, Telemetry). Absent: no clock bound (hardware throttle
    /// reasons and XIDs still invalidate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_sm_clock_mhz: Option<u32>,
}

/// `[log]` of a campaign (content/transparency-log.md, Witnesses): whether its rounds
/// must be published as of a witnessed log, which witnesses count, and whether each
/// pass waits for a cosignature.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LogPolicy {
    /// Every round is logged and witnessed: a round waits, bounded, for a cosignature on
    /// its opening and on its receipt (as `referee round --require-witness` does), and the
    /// site refuses a bundle with no witness cosignature on the checkpoint of its
    /// receipt's proof. `false` (absent): a bundle without one is published as of its
    /// `endedAt`, marked "time not witnessed".
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// The witnesses that count, by the name of their keyring key (role `witness`, its
    /// `origin`), at most [`LogPolicy::MAX_WITNESSES`]; empty (absent): every witness key
    /// the keyring trusts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub witnesses: Vec<String>,
    /// Each pass waits, bounded, after its `measurement` entry is logged, for a witness to
    /// cosign a checkpoint holding it; that cosigned checkpoint is the one its proof in
    /// `rounds/<n>.proof` is against, so a pass could not have been fabricated later.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub witness_each_pass: bool,
}

impl LogPolicy {
    /// Most witness names `[log] witnesses` lists.
    pub const MAX_WITNESSES: usize = 16;

    /// Whether a witness key named `name` counts for this campaign.
    pub fn counts(&self, name: &str) -> bool {
        self.witnesses.is_empty() || self.witnesses.iter().any(|w| w == name)
    }
}

/// The output budgets of a campaign (`[limits]`, content/threat-model.md, Bounded
/// output): an engine is a miner's code, and nothing it prints or streams may make a
/// round too large to seal or to verify. Recorded in the receipt as written here
/// (snake_case, like [`Sla`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Most bytes of output one engine log keeps, stdout and stderr together: its first
    /// half (rounded up) and its last half, a marker line between them naming the bytes
    /// dropped and the whole stream's sha256 (default [`Limits::ENGINE_LOG_BYTES`],
    /// 64 MiB; [`Limits::MIN_BYTES`] to [`Limits::MAX_ENGINE_LOG_BYTES`]).
    #[serde(default = "defaults::engine_log_bytes")]
    pub engine_log_bytes: u64,
    /// Most bytes one streamed response may carry, comments included, before its
    /// request fails `responseTooLarge` (default [`Limits::RESPONSE_BYTES`], 16 MiB;
    /// [`Limits::MIN_BYTES`] to [`Limits::MAX_RESPONSE_BYTES`]).
    #[serde(default = "defaults::response_bytes")]
    pub response_bytes: u64,
    /// Most events (blank-line separated, comment-only and empty ones included) one
    /// streamed response may carry before its request fails `responseTooLarge` (default
    /// [`Limits::RESPONSE_EVENTS`], 65,536; 1 to [`Limits::MAX_RESPONSE_EVENTS`]).
    #[serde(default = "defaults::response_events")]
    pub response_events: u64,
}

impl Limits {
    /// Default `engine_log_bytes`: 64 MiB.
    pub const ENGINE_LOG_BYTES: u64 = 64 << 20;
    /// Default `response_bytes`: 16 MiB, some 8,000 chunks of 2 KiB (a token with its
    /// top-20 logprobs), far above any completion a workload asks for.
    pub const RESPONSE_BYTES: u64 = 16 << 20;
    /// Default `response_events`: 65,536, far above one chunk per output token.
    pub const RESPONSE_EVENTS: u64 = 1 << 16;
    /// Smallest `engine_log_bytes` and `response_bytes`: 4 KiB.
    pub const MIN_BYTES: u64 = 4 << 10;
    /// Largest `engine_log_bytes`: 1 GiB (what a verifier reads is derived from it).
    pub const MAX_ENGINE_LOG_BYTES: u64 = 1 << 30;
    /// Largest `response_bytes`: 1 GiB.
    pub const MAX_RESPONSE_BYTES: u64 = 1 << 30;
    /// Largest `response_events`: 2^24.
    pub const MAX_RESPONSE_EVENTS: u64 = 1 << 24;
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            engine_log_bytes: Self::ENGINE_LOG_BYTES,
            response_bytes: Self::RESPONSE_BYTES,
            response_events: Self::RESPONSE_EVENTS,
        }
    }
}

/// How a round's winner takes the title (`seat_rule`, content/title.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum SeatRuleKind {
    /// `"000"`: at once, as the round decided (content/leader-rule.md).
    #[default]
    #[serde(rename = "000")]
    Immediate,
    /// `"001"`: after a confirmation round at least the holding period later
    /// reproduces the margin.
    #[serde(rename = "001")]
    Confirmed,
}

/// The order of a round's runs (content/rounds.md, Passes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PassOrder {
    /// `runs` passes; each runs every seated entry once (the baseline twice) in an order
    /// drawn from the round's `passSeed`, so drift falls on all entries alike.
    #[default]
    Interleaved,
    /// Each entry's runs back to back (the baseline's first runs, each other entry's,
    /// then the baseline's controls): drift lands on whole entries.
    Sequential,
}

impl Campaign {
    /// The engine API profile every engine of a round is talked to with: the process
    /// backend's `[backend.api]` resolved, else [`super::ApiProfile::default`]; its
    /// `token_count` is the campaign's `token_count` when `[backend.api]` sets none.
    pub fn api_profile(&self) -> super::ApiProfile {
        let spec = match &self.backend {
            Backend::Process { api: Some(api), .. } => api.clone(),
            _ => super::ApiSpec::default(),
        };
        let mut profile = spec.resolve();
        if spec.token_count.is_none()
            && spec.profile.is_none()
            && let Some(count) = self.token_count
        {
            profile.token_count = count;
        }
        profile
    }

    /// The order of a round's runs: `pass_order`, absent = interleaved.
    pub fn effective_pass_order(&self) -> PassOrder {
        self.pass_order.unwrap_or_default()
    }

    /// Whether engines and the load client get CPU sets of their own (`[isolation] pin`,
    /// absent = `true`).
    pub fn pins_cpus(&self) -> bool {
        self.isolation.is_none_or(|isolation| isolation.pin)
    }

    /// Whether unsandboxed engines are allowed (`trusted_engines`, absent = `false`).
    pub fn trusts_engines(&self) -> bool {
        self.trusted_engines.unwrap_or(false)
    }

    /// The kind of the campaign's submissions: `submission`, absent = diff.
    pub fn submission_kind(&self) -> super::SubmissionKind {
        self.submission.unwrap_or_default()
    }

    /// The repository limits: `[repository]`, absent = its defaults.
    pub fn repository_spec(&self) -> super::RepositorySpec {
        self.repository.clone().unwrap_or_default()
    }

    /// The steal bound in permille: `max_steal_permille`, absent = 50.
    pub fn effective_max_steal_permille(&self) -> u32 {
        self.max_steal_permille.unwrap_or(50)
    }

    /// The output budgets: `[limits]`, absent = [`Limits::default`].
    pub fn effective_limits(&self) -> Limits {
        self.limits.unwrap_or_default()
    }

    /// What the campaign asks of the log's witnesses: `[log]`, absent =
    /// [`LogPolicy::default`].
    pub fn effective_log(&self) -> LogPolicy {
        self.log.clone().unwrap_or_default()
    }
}

/// The model under test (content/data-directory.md: model + weight digests).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// The name engines serve it under (`/v1/models`).
    pub name: String,
    /// Weight files with their sha256; empty for the built-in engine, whose weights are
    /// drawn from the seed in its config.
    #[serde(default)]
    pub weights: Vec<WeightFile>,
}

/// One weight file and its digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WeightFile {
    /// File name relative to the weights directory.
    pub name: String,
    /// Its sha256.
    pub sha256: Sha256Hex,
}

/// The hardware class (content/data-directory.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HardwareSpec {
    /// A name such as `rtx-pro-6000-96gb` or `cpu-2core`.
    #[serde(default = "defaults::hardware_class")]
    pub class: String,
    /// Device memory an engine may use, in MiB; the built-in engine refuses to start with
    /// an out-of-memory error naming what did not fit when its weights and KV cache need more.
    #[serde(default = "defaults::memory_limit_mb")]
    pub memory_limit_mb: u64,
    /// Threads an engine may use; at most cores − 1 so the load generator is not starved
    /// (content/measurement.md). 0 = cores − 1.
    #[serde(default)]
    pub engine_threads: u32,
}

impl Default for HardwareSpec {
    fn default() -> Self {
        Self {
            class: defaults::hardware_class(),
            memory_limit_mb: defaults::memory_limit_mb(),
            engine_threads: 0,
        }
    }
}

/// The pinned baseline (content/data-directory.md: repo, commit, engine config path, image digest).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BaselineSpec {
    /// Path (relative to the campaign file when frozen, then to the data directory) or URL
    /// of the baseline git repository.
    pub repo: String,
    /// The pinned commit: 40 lowercase hex characters.
    pub commit: String,
    /// Path of the engine config inside the repository (for the built-in engine,
    /// `engine.toml`).
    #[serde(default = "defaults::engine_config_path")]
    pub engine_config_path: String,
    /// The baseline engine image, for the docker backend.
    #[serde(default)]
    pub image: Option<ImageRef>,
}

/// A container image pinned by digest (content/receipts.md: record the registry manifest digest
/// and the config digest, named).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageRef {
    /// Repository reference without tag, e.g. `ghcr.io/org/engine`.
    pub name: String,
    /// `sha256:<hex>` registry manifest digest.
    pub manifest_digest: String,
    /// `sha256:<hex>` image config digest, when known.
    #[serde(default)]
    pub config_digest: Option<String>,
}

impl Backend {
    /// Which backend this is, as a receipt records it.
    pub fn kind(&self) -> super::BackendKind {
        match self {
            Backend::Builtin => super::BackendKind::Builtin,
            Backend::Process { .. } => super::BackendKind::Process,
            Backend::Docker(_) => super::BackendKind::Docker,
        }
    }

    /// The declared read-only paths (`[backend] ro_paths`); none for the built-in engine.
    pub fn ro_paths(&self) -> &[String] {
        match self {
            Backend::Builtin => &[],
            Backend::Process { ro_paths, .. } => ro_paths,
            Backend::Docker(docker) => &docker.ro_paths,
        }
    }
}

/// How entries are started (content/rounds.md, Engines).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Backend {
    /// `referee engine serve` as a child process, with the patched tree's config.
    #[default]
    Builtin,
    /// Any command serving the OpenAI-compatible API on the listening socket it inherits
    /// as fd 3 (`LISTEN_FDS=1`, `LISTEN_PID`: systemd socket activation), sandboxed.
    /// `{config}` in an argument is replaced by the absolute path of the patched tree's
    /// engine config, `{tree}` by the patched tree's absolute path, `{listen_fd}` by `3`,
    /// `{port}` by that socket's port (for messages: a socket the engine binds itself is
    /// unreachable), `{threads}` by the engine's thread count and `{memory_mb}` by
    /// `hardware.memory_limit_mb`.
    Process {
        /// Program and arguments.
        command: Vec<String>,
        /// `[backend.api]`: how referee talks to the server (content/engines.md). Absent:
        /// [`super::ApiProfile::default`], what referee did before profiles existed, so
        /// campaigns frozen before it keep their digest.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        api: Option<super::ApiSpec>,
        /// Host paths the engine sees read-only at their own paths besides the system,
        /// its executable and the patched tree (a Python venv, a model file), each
        /// absolute (content/threat-model.md, The engine's sandbox). Absent: none.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        ro_paths: Vec<String>,
    },
    /// A container image per entry, run by a Docker daemon on the engine's host
    /// (content/docker.md). `kind = "docker"` alone is still valid: every field has a
    /// default, and absent fields are not written, so older campaigns keep their digest.
    Docker(DockerSpec),
}

/// `[backend]` of `kind = "docker"` (content/docker.md): which image, how it is started,
/// and what the container may see.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct DockerSpec {
    /// The image every entry runs unless a build recorded its own: a tag (`engine:v1`,
    /// resolved once when the round sets up, then run by its image id) or
    /// `name@sha256:<manifest digest>`. Absent: the baseline's `image`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The container's command (the image's entrypoint is kept); empty: the image's own.
    /// `{config}` and `{tree}` are the patched tree's config and root as mounted in the
    /// container (`/tree`, read-only), `{port}` the container port, `{threads}` and
    /// `{memory_mb}` as for the process backend.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// The port the engine listens on inside the container (all interfaces); absent: 8000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// The container's whole environment (nothing of the runner's is passed); values get
    /// the placeholders of `command`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub env: std::collections::BTreeMap<String, String>,
    /// GPUs the container gets (`--gpus device=…`: ids or UUIDs); empty: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<String>,
    /// A host directory of model weights, bind-mounted read-only at `/weights`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights: Option<String>,
    /// Host paths bind-mounted read-only at their own paths in the container, each
    /// absolute (content/docker.md). Absent: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ro_paths: Vec<String>,
    /// Size of the container's writable `/tmp` (a tmpfs), MiB; absent: 64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmpfs_mb: Option<u32>,
    /// Registry repository built images are pushed to (`registry.example/engines`);
    /// absent: builds stay on the building host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
}

impl DockerSpec {
    /// The container port: `port`, else 8000.
    pub fn port(&self) -> u16 {
        self.port.unwrap_or(8000)
    }

    /// The `/tmp` tmpfs size, MiB: `tmpfs_mb`, else 64.
    pub fn tmpfs_mb(&self) -> u32 {
        self.tmpfs_mb.unwrap_or(64)
    }
}

/// The workload mix (content/data-directory.md; content/measurement.md, Seeds).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Prompt lengths, in tokens.
    #[serde(default = "defaults::input_len")]
    pub input_len: LengthDist,
    /// Output lengths, in tokens; every request fixes its output length with `ignore_eos`
    /// and `min_tokens` = `max_tokens`.
    #[serde(default = "defaults::output_len")]
    pub output_len: LengthDist,
    /// Where prompts come from.
    #[serde(default)]
    pub prompt_source: PromptSource,
    /// Arrival process of the open-loop schedule.
    #[serde(default)]
    pub arrival: Arrival,
}

impl Default for WorkloadSpec {
    fn default() -> Self {
        Self {
            input_len: defaults::input_len(),
            output_len: defaults::output_len(),
            prompt_source: PromptSource::default(),
            arrival: Arrival::default(),
        }
    }
}

/// A length distribution over tokens, drawn with integer arithmetic from ChaCha20.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LengthDist {
    /// Always `value` tokens.
    Fixed {
        /// Tokens.
        value: u32,
    },
    /// Uniform over `min..=max` tokens.
    Uniform {
        /// Smallest length, tokens.
        min: u32,
        /// Largest length, tokens.
        max: u32,
    },
}

impl LengthDist {
    /// Largest length this distribution can draw, in tokens.
    pub fn max(&self) -> u32 {
        match *self {
            LengthDist::Fixed { value } => value,
            LengthDist::Uniform { max, .. } => max,
        }
    }

    /// Smallest length this distribution can draw, in tokens.
    pub fn min(&self) -> u32 {
        match *self {
            LengthDist::Fixed { value } => value,
            LengthDist::Uniform { min, .. } => min,
        }
    }
}

/// Where prompts come from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum PromptSource {
    /// Seeded text generator (words drawn from a fixed vocabulary with ChaCha20).
    #[default]
    Generated,
    /// A JSONL file, one `{"prompt": "..."}` object a line; items are drawn from it.
    Jsonl {
        /// Path relative to the campaign directory.
        path: String,
        /// sha256 of the file, checked before use.
        sha256: Sha256Hex,
    },
}

/// Arrival process of the open-loop schedule (content/measurement.md, Open loop).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Exponential gaps (Poisson process) from an integer inverse-CDF table.
    #[default]
    Poisson,
    /// Evenly spaced arrivals.
    Constant,
}

/// Which latency the SLA bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum LatencyKind {
    /// End-to-end: scheduled send to last byte.
    #[default]
    E2e,
    /// Time to first token, from the scheduled send.
    Ttft,
    /// Time per output token after the first.
    Tpot,
}

impl fmt::Display for LatencyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LatencyKind::E2e => "e2e",
            LatencyKind::Ttft => "ttft",
            LatencyKind::Tpot => "tpot",
        })
    }
}

impl FromStr for LatencyKind {
    type Err = ModelError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "e2e" => Ok(LatencyKind::E2e),
            "ttft" => Ok(LatencyKind::Ttft),
            "tpot" => Ok(LatencyKind::Tpot),
            _ => Err(ModelError::InvalidField {
                field: "sla.latency".into(),
                value: s.into(),
                rule: "one of e2e, ttft, tpot".into(),
            }),
        }
    }
}

/// A percentile in tenths of a percent: `p95` is 950, `p99.9` is 999. Written as `"p95"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Percentile(u32);

impl Percentile {
    /// The median, p50 (500 tenths of a percent): the send-lag median every probe records.
    pub const P50: Self = Self(500);
    /// p99 (990 tenths of a percent): the send-lag tail every probe records.
    pub const P99: Self = Self(990);

    /// `permille` in 1..=999 (tenths of a percent).
    pub fn from_permille(permille: u32) -> Result<Self, ModelError> {
        if (1..=999).contains(&permille) {
            Ok(Self(permille))
        } else {
            Err(ModelError::InvalidField {
                field: "sla.percentile".into(),
                value: permille.to_string(),
                rule: "between p0.1 and p99.9".into(),
            })
        }
    }

    /// Tenths of a percent (p95 → 950).
    pub fn permille(&self) -> u32 {
        self.0
    }

    /// The nearest-rank index (1-based) of this percentile among `n` sorted samples:
    /// ⌈q·n⌉, at least 1 (content/measurement.md, Percentile).
    pub fn nearest_rank(&self, n: u64) -> u64 {
        // In u128: a forged histogram may count up to 2^64 − 1 samples.
        let rank = (u128::from(self.0) * u128::from(n)).div_ceil(1000);
        u64::try_from(rank).unwrap_or(u64::MAX).max(1)
    }
}

impl Default for Percentile {
    fn default() -> Self {
        Self(950)
    }
}

impl fmt::Display for Percentile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_multiple_of(10) {
            write!(f, "p{}", self.0 / 10)
        } else {
            write!(f, "p{}.{}", self.0 / 10, self.0 % 10)
        }
    }
}

impl FromStr for Percentile {
    type Err = ModelError;

    /// `p95`, `p99.9`, `95`; at most one decimal.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || ModelError::InvalidField {
            field: "sla.percentile".into(),
            value: s.into(),
            rule: "like p95 or p99.9".into(),
        };
        let digits = s.strip_prefix('p').unwrap_or(s);
        let (whole, tenth) = match digits.split_once('.') {
            Some((w, t)) if t.len() == 1 => (w, t),
            Some(_) => return Err(bad()),
            None => (digits, "0"),
        };
        if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) || whole.len() > 2 {
            return Err(bad());
        }
        let whole: u32 = whole.parse().map_err(|_| bad())?;
        let tenth: u32 = tenth.parse().map_err(|_| bad())?;
        Self::from_permille(whole * 10 + tenth)
    }
}

impl Serialize for Percentile {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Percentile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Percentile {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Percentile".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "pattern": "^p[0-9]{1,2}(\\.[0-9])?$" })
    }
}

/// The latency SLA (content/data-directory.md: percentile, latency kind, bound).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Sla {
    /// Nearest-rank percentile of the latency that must stay within the bound.
    #[serde(default)]
    pub percentile: Percentile,
    /// Which latency.
    #[serde(default)]
    pub latency: LatencyKind,
    /// The bound, in milliseconds (default 1000, the s1-pro track).
    #[serde(default = "defaults::sla_bound_ms")]
    pub bound_ms: u64,
}

impl Default for Sla {
    fn default() -> Self {
        Self {
            percentile: Percentile::default(),
            latency: LatencyKind::default(),
            bound_ms: defaults::sla_bound_ms(),
        }
    }
}

impl fmt::Display for Sla {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}ms",
            self.percentile, self.latency, self.bound_ms
        )
    }
}

impl FromStr for Sla {
    type Err = ModelError;

    /// `p95:e2e:300ms` (the `referee bench serve --sla` form).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut parts = s.split(':');
        let (Some(p), Some(k), Some(b), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(ModelError::InvalidField {
                field: "sla".into(),
                value: s.into(),
                rule: "percentile:latency:bound, like p95:e2e:300ms".into(),
            });
        };
        let bound_ms = b
            .strip_suffix("ms")
            .unwrap_or(b)
            .parse::<u64>()
            .map_err(|_| ModelError::InvalidField {
                field: "sla.bound_ms".into(),
                value: b.into(),
                rule: "whole milliseconds, like 300ms".into(),
            })?;
        Ok(Self {
            percentile: p.parse()?,
            latency: k.parse()?,
            bound_ms,
        })
    }
}

impl Sla {
    /// The bound in microseconds (histograms are in µs).
    pub fn bound_us(&self) -> u64 {
        self.bound_ms.saturating_mul(1000)
    }
}

/// The rate search (content/measurement.md, Throughput at a latency SLA). Rates are integer
/// milli-requests per second (no floats anywhere in a payload).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RateSearchSpec {
    /// Lowest rate probed, milli-requests/s.
    #[serde(default = "defaults::min_rate_milli_rps")]
    pub min_rate_milli_rps: u64,
    /// Highest rate probed, milli-requests/s.
    #[serde(default = "defaults::max_rate_milli_rps")]
    pub max_rate_milli_rps: u64,
    /// A probe lasts at least this long, in ms (warm-up excluded).
    #[serde(default = "defaults::min_probe_duration_ms")]
    pub min_probe_duration_ms: u64,
    /// A probe sends at least this many measured requests.
    #[serde(default = "defaults::min_probe_requests")]
    pub min_probe_requests: u32,
    /// Requests sent before each probe's measured ones and excluded from it.
    #[serde(default = "defaults::warmup_requests")]
    pub warmup_requests: u32,
    /// Largest allowed send-lag p99, in µs; 0 means max(2 ms, 1 % of the SLA bound).
    #[serde(default)]
    pub send_lag_bound_us: u64,
    /// Bisection stops when hi/lo is within this many basis points (default 500 = 5 %).
    #[serde(default = "defaults::rate_tolerance_bp")]
    pub rate_tolerance_bp: u32,
    /// Every request's deadline, in ms, after its scheduled send (default 4 × SLA bound
    /// when 0).
    #[serde(default)]
    pub request_deadline_ms: u64,
    /// Wall-clock budget for one entry's runs, in seconds; past it the entry is
    /// disqualified with `sla_unmet`.
    #[serde(default = "defaults::entry_deadline_s")]
    pub entry_deadline_s: u64,
    /// Where each run's bracket starts (content/measurement.md, Run): absent or
    /// `"min_rate"`, at `min_rate_milli_rps`, doubling up (the search of every campaign
    /// frozen before the field, which keeps its digest); `"estimate"`, a first probe at
    /// `max_rate_milli_rps` whose throughput under overload picks the doubling rate the
    /// bracket starts at ([`SearchStart`]). New campaigns write `start = "estimate"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<SearchStart>,
}

/// Where a run's rate search starts its bracket (`rate_search.start`; the search itself is
/// `receipts::rules::search`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchStart {
    /// Probe `min_rate_milli_rps`, then double while probes pass: the first probes of a
    /// fast server are long (at 0.5 req/s, 130 requests take 260 s).
    #[default]
    MinRate,
    /// Probe `max_rate_milli_rps` first; unless it passes (the ceiling), start at the
    /// highest rate `min_rate_milli_rps × 2^k` below it and at most that probe's
    /// throughput, halving while probes fail and doubling while they pass. On the same
    /// server it ends in the bracket `min_rate` would, so it finds the same rate.
    Estimate,
}

impl Default for RateSearchSpec {
    fn default() -> Self {
        Self {
            min_rate_milli_rps: defaults::min_rate_milli_rps(),
            max_rate_milli_rps: defaults::max_rate_milli_rps(),
            min_probe_duration_ms: defaults::min_probe_duration_ms(),
            min_probe_requests: defaults::min_probe_requests(),
            warmup_requests: defaults::warmup_requests(),
            send_lag_bound_us: 0,
            rate_tolerance_bp: defaults::rate_tolerance_bp(),
            request_deadline_ms: 0,
            entry_deadline_s: defaults::entry_deadline_s(),
            start: None,
        }
    }
}

impl RateSearchSpec {
    /// The send-lag p99 bound in µs: the configured one, else max(2 ms, 1 % of the SLA
    /// bound) (content/measurement.md, Open loop).
    pub fn effective_send_lag_bound_us(&self, sla: &Sla) -> u64 {
        if self.send_lag_bound_us > 0 {
            self.send_lag_bound_us
        } else {
            (sla.bound_us() / 100).max(2_000)
        }
    }

    /// Where each run's bracket starts: `start`, absent = [`SearchStart::MinRate`].
    pub fn effective_start(&self) -> SearchStart {
        self.start.unwrap_or_default()
    }

    /// Every request's deadline in ms: the configured one, else 4 × the SLA bound.
    pub fn effective_request_deadline_ms(&self, sla: &Sla) -> u64 {
        if self.request_deadline_ms > 0 {
            self.request_deadline_ms
        } else {
            sla.bound_ms.saturating_mul(4)
        }
    }
}

/// The correctness gate (content/correctness.md, Correctness; s1-pro-speed track of
/// content/competition.md). Distances are integer micro-nats.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CorrectnessSpec {
    /// Fresh items drawn from `correctnessSeed` (default 2,000); at least `group_size`.
    /// Items are grouped in order; when `items` is not a multiple of `group_size` the last,
    /// smaller group is judged on its own mean.
    #[serde(default = "defaults::correctness_items")]
    pub items: u32,
    /// Items per group, taken in order (default 3).
    #[serde(default = "defaults::group_size")]
    pub group_size: u32,
    /// Bound on every group's mean distance, micro-nats (default 200,000 = 0.20 nats).
    #[serde(default = "defaults::group_mean_bound_micro_nats")]
    pub group_mean_bound_micro_nats: u64,
    /// Bound on every item's distance, micro-nats (default 2,000,000 = 2.0 nats).
    #[serde(default = "defaults::item_bound_micro_nats")]
    pub item_bound_micro_nats: u64,
    /// Top-k logprobs compared per position (default 20).
    #[serde(default = "defaults::top_k")]
    pub top_k: u32,
    /// Prompt length of a correctness item, tokens.
    #[serde(default = "defaults::correctness_input_len")]
    pub input_len: LengthDist,
    /// Greedy output tokens generated per item.
    #[serde(default = "defaults::correctness_output_tokens")]
    pub output_tokens: u32,
    /// Completed requests of each timed run's result probe whose outputs the reference
    /// checks; absent: 8 ([`CorrectnessSpec::effective_load_sample`]); 0 switches the
    /// check off (recorded `not applicable`); at most 1,000. An `Option` so that campaigns
    /// frozen before it keep their digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_sample: Option<u32>,
    /// Bound on a sampled request's mean gap between the reference's top-1 logprob and
    /// its logprob of the entry's token, micro-nats; absent: `item_bound_micro_nats`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_bound_micro_nats: Option<u64>,
    /// Deadline for all of one entry's correctness outputs, and for the reference's
    /// answers to one entry, seconds; absent: 600; at least 1; capped by
    /// `rate_search.entry_deadline_s` ([`CorrectnessSpec::effective_deadline_s`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_s: Option<u64>,
    /// The reference runtime the scorer runs ([`ReferenceRuntime`]); absent: the
    /// baseline at full precision ([`CorrectnessSpec::effective_reference`]). An `Option`
    /// so that campaigns frozen before it keep their digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<ReferenceRuntime>,
    /// How far, micro-nats, the reference's logprob of one token at one prefix may differ
    /// between two entries' correctness files (`correctness.reference`); absent: 0, the
    /// answers identical. A runtime whose kernels are not bit-reproducible across
    /// requests (a GPU's, batching or not) sets it. An `Option` so that campaigns frozen
    /// before it keep their digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_tolerance_micro_nats: Option<u64>,
    /// Bound on the mean, over one timed run's sampled requests, of their mean top-1 gaps,
    /// micro-nats (from `…/round/v7`); absent: [`DEFAULT_LOAD_GROUP_BOUND_MICRO_NATS`],
    /// calibrated on honest runs (content/correctness.md, The bounds of the sample).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_group_bound_micro_nats: Option<u64>,
    /// Bound on each sampled request's mean top-1 gap, micro-nats (from `…/round/v7`,
    /// replacing `load_bound_micro_nats`); absent:
    /// [`DEFAULT_LOAD_ITEM_BOUND_MICRO_NATS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_item_bound_micro_nats: Option<u64>,
    /// A generated position whose top-1 gap is above this bound, micro-nats, counts
    /// against `load_max_positions_over` (from `…/round/v7`); absent:
    /// [`DEFAULT_LOAD_POSITION_BOUND_MICRO_NATS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_position_bound_micro_nats: Option<u64>,
    /// The most positions above the position bound among one timed run's sampled
    /// requests (from `…/round/v7`); absent: [`DEFAULT_LOAD_MAX_POSITIONS_OVER`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_max_positions_over: Option<u32>,
    /// Fresh prompts of each challenger run's caching probe, each sent twice (from
    /// `…/round/v9`; content/correctness.md, Caching); absent:
    /// [`DEFAULT_CACHING_PROMPTS`]; 0 switches the probe off; at most 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caching_prompts: Option<u32>,
    /// Bound on how much faster a caching probe's repeats may decode than its fresh
    /// prompts, basis points (from `…/round/v9`); absent: [`DEFAULT_CACHING_BOUND_BP`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caching_bound_bp: Option<u32>,
}

/// The reference runtime of the correctness gate (content/correctness.md, The reference
/// runtime): what the scorer starts, under the baseline's command, to teacher-force every
/// entry's outputs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ReferenceRuntime {
    /// The baseline tree with its engine config rewritten to full precision
    /// (`weight_dtype` and `kv_cache_dtype` = `f32`, keys of the built-in engine's TOML
    /// config): the default.
    #[default]
    BaselineFullPrecision,
    /// The baseline tree and engine config unmodified: for an engine whose config is not
    /// the built-in engine's TOML (llama-cpp-python's JSON, say), which then judges
    /// entries against the baseline exactly as it is measured.
    Baseline,
}

impl ReferenceRuntime {
    /// The kebab-case name, as written in `campaign.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BaselineFullPrecision => "baseline-full-precision",
            Self::Baseline => "baseline",
        }
    }
}

/// Requests sampled per timed run when `correctness.load_sample` is absent.
pub const DEFAULT_LOAD_SAMPLE: u32 = 8;

/// `correctness.load_group_bound_micro_nats` when absent: honest runs of the built-in
/// engine put it at a false disqualification rate under 0.1 % of entry-rounds
/// (content/correctness.md, The bounds of the sample).
pub const DEFAULT_LOAD_GROUP_BOUND_MICRO_NATS: u64 = 250_000;

/// `correctness.load_item_bound_micro_nats` when absent (content/correctness.md, The
/// bounds of the sample).
pub const DEFAULT_LOAD_ITEM_BOUND_MICRO_NATS: u64 = 1_500_000;

/// `correctness.load_position_bound_micro_nats` when absent (content/correctness.md, The
/// bounds of the sample).
pub const DEFAULT_LOAD_POSITION_BOUND_MICRO_NATS: u64 = 8_000_000;

/// `correctness.load_max_positions_over` when absent (content/correctness.md, The bounds
/// of the sample).
pub const DEFAULT_LOAD_MAX_POSITIONS_OVER: u32 = 2;

/// Fresh prompts of a caching probe when `correctness.caching_prompts` is absent: 8,
/// so 16 requests a challenger run.
pub const DEFAULT_CACHING_PROMPTS: u32 = 8;

/// `correctness.caching_bound_bp` when absent: repeats may decode up to twice as fast as
/// fresh prompts (10,000 bp). Twice the round's A/A spread, MLPerf's form of the bound,
/// is at most 2 × the overtake margin (200 bp by default) in a round that decides, far
/// inside the noise of single requests on a shared machine; an answer cache
/// decodes a repeat in no time (content/correctness.md, Caching).
pub const DEFAULT_CACHING_BOUND_BP: u32 = 10_000;

/// The correctness deadline when `correctness.deadline_s` is absent, seconds.
pub const DEFAULT_CORRECTNESS_DEADLINE_S: u64 = 600;

/// The most generated positions (`correctness.items × correctness.output_tokens`) a
/// campaign may ask for. An entry's per-item correctness file stores both sides' top-k
/// at every position; at `top_k` 20 and the widest integers an engine can answer (token
/// ids up to 2³² − 1, logprobs down to −10⁹ nats) it stays under 58 MiB here, within the
/// 64 MiB the verifier reads of one file (content/correctness.md, The per-item file).
pub const MAX_CORRECTNESS_POSITIONS: u64 = 40_000;

impl CorrectnessSpec {
    /// The bound on a sampled request's mean gap, micro-nats: `load_bound_micro_nats`,
    /// else the item bound.
    pub fn effective_load_bound_micro_nats(&self) -> u64 {
        self.load_bound_micro_nats
            .unwrap_or(self.item_bound_micro_nats)
    }

    /// The sample's bounds from `…/round/v7` on: each field, else its calibrated default.
    pub fn effective_load_bounds(&self) -> LoadBounds {
        LoadBounds {
            group_micro_nats: self
                .load_group_bound_micro_nats
                .unwrap_or(DEFAULT_LOAD_GROUP_BOUND_MICRO_NATS),
            item_micro_nats: self
                .load_item_bound_micro_nats
                .unwrap_or(DEFAULT_LOAD_ITEM_BOUND_MICRO_NATS),
            position_micro_nats: self
                .load_position_bound_micro_nats
                .unwrap_or(DEFAULT_LOAD_POSITION_BOUND_MICRO_NATS),
            max_positions_over: self
                .load_max_positions_over
                .unwrap_or(DEFAULT_LOAD_MAX_POSITIONS_OVER),
        }
    }

    /// The reference runtime: `reference`, else the baseline at full precision.
    pub fn effective_reference(&self) -> ReferenceRuntime {
        self.reference.unwrap_or_default()
    }

    /// Fresh prompts of a caching probe: `caching_prompts`, else
    /// [`DEFAULT_CACHING_PROMPTS`] (0: no probe).
    pub fn effective_caching_prompts(&self) -> u32 {
        self.caching_prompts.unwrap_or(DEFAULT_CACHING_PROMPTS)
    }

    /// The bound on a caching probe's speed-up, basis points: `caching_bound_bp`, else
    /// [`DEFAULT_CACHING_BOUND_BP`].
    pub fn effective_caching_bound_bp(&self) -> u32 {
        self.caching_bound_bp.unwrap_or(DEFAULT_CACHING_BOUND_BP)
    }

    /// Requests sampled per timed run: `load_sample`, else 8.
    pub fn effective_load_sample(&self) -> u32 {
        self.load_sample.unwrap_or(DEFAULT_LOAD_SAMPLE)
    }

    /// The correctness deadline in seconds: `deadline_s` (else 600), at most
    /// `entry_deadline_s`, at least 1.
    pub fn effective_deadline_s(&self, rate_search: &RateSearchSpec) -> u64 {
        self.deadline_s
            .unwrap_or(DEFAULT_CORRECTNESS_DEADLINE_S)
            .min(rate_search.entry_deadline_s)
            .max(1)
    }
}

impl Default for CorrectnessSpec {
    fn default() -> Self {
        Self {
            items: defaults::correctness_items(),
            group_size: defaults::group_size(),
            group_mean_bound_micro_nats: defaults::group_mean_bound_micro_nats(),
            item_bound_micro_nats: defaults::item_bound_micro_nats(),
            top_k: defaults::top_k(),
            input_len: defaults::correctness_input_len(),
            output_tokens: defaults::correctness_output_tokens(),
            load_sample: None,
            load_bound_micro_nats: None,
            deadline_s: None,
            reference: None,
            reference_tolerance_micro_nats: None,
            load_group_bound_micro_nats: None,
            load_item_bound_micro_nats: None,
            load_position_bound_micro_nats: None,
            load_max_positions_over: None,
            caching_prompts: None,
            caching_bound_bp: None,
        }
    }
}

/// The bounds of the timed runs' sample statistic (from `…/round/v7`), per run: every
/// sampled request's mean gap at most `item_micro_nats`, their mean at most
/// `group_micro_nats`, and at most `max_positions_over` generated positions whose gap is
/// above `position_micro_nats` (content/correctness.md, The bounds of the sample).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadBounds {
    /// Bound on a run's mean request gap, micro-nats.
    pub group_micro_nats: u64,
    /// Bound on each request's mean gap, micro-nats.
    pub item_micro_nats: u64,
    /// The gap above which a position counts, micro-nats.
    pub position_micro_nats: u64,
    /// The most positions of a run's sample above `position_micro_nats`.
    pub max_positions_over: u32,
}

/// Surface rules a diff must pass before it is applied (content/submitting.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SurfaceSpec {
    /// Glob patterns (gitignore-like, matched against the repository-relative path) no
    /// diff may touch.
    #[serde(default = "defaults::denied_paths")]
    pub denied_paths: Vec<String>,
    /// File modes a new or changed file may have, as octal strings (default `100644`).
    #[serde(default = "defaults::allowed_modes")]
    pub allowed_modes: Vec<String>,
    /// Largest diff accepted, bytes (default 1 MiB).
    #[serde(default = "defaults::max_diff_bytes")]
    pub max_diff_bytes: u64,
    /// Longest line accepted, bytes (default 65,536: real patches carry long generated
    /// lines, lock files and minified assets; the line limit only bounds what one line of
    /// a message or a parse can cost, `max_diff_bytes` bounds the whole).
    #[serde(default = "defaults::max_line_bytes")]
    pub max_line_bytes: u64,
}

impl Default for SurfaceSpec {
    fn default() -> Self {
        Self {
            denied_paths: defaults::denied_paths(),
            allowed_modes: defaults::allowed_modes(),
            max_diff_bytes: defaults::max_diff_bytes(),
            max_line_bytes: defaults::max_line_bytes(),
        }
    }
}

impl Campaign {
    /// Parses `campaign.toml` text and validates it. `source` names the file in errors.
    ///
    /// Errors: [`ModelError::Toml`] with the parser's message (which names the field) for
    /// syntax, unknown fields and wrong types; [`ModelError::InvalidField`] for a value out
    /// of range.
    pub fn from_toml(source: &str, text: &str) -> Result<Self, ModelError> {
        let campaign: Campaign = toml::from_str(text).map_err(|e| ModelError::Toml {
            file: source.to_owned(),
            message: e.to_string(),
        })?;
        campaign.validate()?;
        Ok(campaign)
    }

    /// The campaign as TOML, every default written out.
    pub fn to_toml(&self) -> Result<String, ModelError> {
        toml::to_string_pretty(self).map_err(|e| ModelError::Toml {
            file: "<campaign>".into(),
            message: e.to_string(),
        })
    }

    /// Checks every value's range; the error names the field, the value and the rule.
    pub fn validate(&self) -> Result<(), ModelError> {
        let field = |field: &str, value: String, rule: &str| {
            Err(ModelError::InvalidField {
                field: field.into(),
                value,
                rule: rule.into(),
            })
        };
        if let Some(min) = &self.min_predicate
            && !super::ROUND_PREDICATE_TYPES.contains(&min.as_str())
        {
            return field(
                "min_predicate",
                min.clone(),
                "must be a round predicate type this build verifies",
            );
        }
        self.validate_decide()?;
        if let Some(pod) = &self.pod {
            pod.validate()?;
        }
        if let Some(parallel) = &self.parallel {
            parallel.validate()?;
            if let Some(pod) = self.pod.as_ref().filter(|pod| parallel.gpus > pod.gpus) {
                return field(
                    "parallel.gpus",
                    parallel.gpus.to_string(),
                    &format!("must be at most the pod's {} GPUs", pod.gpus),
                );
            }
        }
        self.validate_fast()?;
        if self.model.name.is_empty() {
            return field("model.name", String::new(), "must not be empty");
        }
        if !(self.baseline.commit.len() == 40
            && self
                .baseline
                .commit
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
        {
            return field(
                "baseline.commit",
                self.baseline.commit.clone(),
                "40 lowercase hex characters",
            );
        }
        let config_path = &self.baseline.engine_config_path;
        if config_path.is_empty()
            || config_path.starts_with('/')
            || config_path
                .split('/')
                .any(|c| c == ".." || c == "." || c.is_empty())
        {
            return field(
                "baseline.engine_config_path",
                config_path.clone(),
                "a relative path inside the repository",
            );
        }
        for (name, dist) in [
            ("workload.input_len", &self.workload.input_len),
            ("workload.output_len", &self.workload.output_len),
            ("correctness.input_len", &self.correctness.input_len),
        ] {
            if dist.min() == 0 || dist.min() > dist.max() {
                return field(name, format!("{dist:?}"), "1 ≤ min ≤ max tokens");
            }
        }
        if self.health_deadline_s == 0 {
            return field("health_deadline_s", "0".into(), "at least 1 second");
        }
        if self.hardware.memory_limit_mb == 0 {
            return field("hardware.memory_limit_mb", "0".into(), "at least 1 MiB");
        }
        if self.hardware.engine_threads > 1024 {
            return field(
                "hardware.engine_threads",
                self.hardware.engine_threads.to_string(),
                "0 (cores − 1) to 1024",
            );
        }
        if let Some(bound) = self.max_steal_permille
            && bound > 1000
        {
            return field(
                "max_steal_permille",
                bound.to_string(),
                "at most 1000 (100 %); 1000 switches the steal check off",
            );
        }
        if let Some(spec) = &self.repository {
            if self.submission_kind() != super::SubmissionKind::Repository {
                return field(
                    "repository",
                    "[repository]".into(),
                    "only a campaign with submission = \"repository\" takes a [repository] table",
                );
            }
            for (name, value) in [
                ("repository.max_file_bytes", spec.max_file_bytes),
                (
                    "repository.max_pending_per_coldkey",
                    spec.max_pending_per_coldkey.into(),
                ),
                ("repository.max_per_window", spec.max_per_window.into()),
                ("repository.rate_window_h", spec.rate_window_h.into()),
            ] {
                if value == 0 {
                    return field(name, "0".into(), "at least 1");
                }
            }
        }
        let limits = self.effective_limits();
        for (name, value, min, max) in [
            (
                "limits.engine_log_bytes",
                limits.engine_log_bytes,
                Limits::MIN_BYTES,
                Limits::MAX_ENGINE_LOG_BYTES,
            ),
            (
                "limits.response_bytes",
                limits.response_bytes,
                Limits::MIN_BYTES,
                Limits::MAX_RESPONSE_BYTES,
            ),
            (
                "limits.response_events",
                limits.response_events,
                1,
                Limits::MAX_RESPONSE_EVENTS,
            ),
        ] {
            if !(min..=max).contains(&value) {
                return field(name, value.to_string(), &format!("{min} to {max}"));
            }
        }
        let log = self.effective_log();
        if log.witnesses.len() > LogPolicy::MAX_WITNESSES {
            return field(
                "log.witnesses",
                log.witnesses.len().to_string(),
                &format!("at most {} names", LogPolicy::MAX_WITNESSES),
            );
        }
        if let Some(name) = (log.witnesses.iter()).find(|n| n.is_empty() || n.len() > 256) {
            return field(
                "log.witnesses",
                format!("{name:?}"),
                "each a witness key's name, 1 to 256 bytes",
            );
        }
        if self.drift_bound_bp > 10_000 {
            return field(
                "drift_bound_bp",
                self.drift_bound_bp.to_string(),
                "at most 10000 (100 %); a larger bound switches the drift check off",
            );
        }
        if self.sla.bound_ms == 0 {
            return field("sla.bound_ms", "0".into(), "at least 1 ms");
        }
        let rs = &self.rate_search;
        if rs.min_rate_milli_rps == 0 || rs.min_rate_milli_rps > rs.max_rate_milli_rps {
            return field(
                "rate_search.min_rate_milli_rps",
                rs.min_rate_milli_rps.to_string(),
                "1 ≤ min_rate_milli_rps ≤ max_rate_milli_rps",
            );
        }
        if rs.min_probe_requests == 0 {
            return field("rate_search.min_probe_requests", "0".into(), "at least 1");
        }
        if rs.rate_tolerance_bp == 0 {
            return field("rate_search.rate_tolerance_bp", "0".into(), "at least 1");
        }
        if self.runs == 0 || self.runs > 99 {
            return field("runs", self.runs.to_string(), "1 to 99");
        }
        let c = &self.correctness;
        if c.group_size == 0 {
            return field("correctness.group_size", "0".into(), "at least 1");
        }
        if c.items < c.group_size {
            return field(
                "correctness.items",
                c.items.to_string(),
                "at least correctness.group_size (a last partial group counts as a group)",
            );
        }
        if c.top_k == 0 || c.top_k > 20 {
            return field("correctness.top_k", c.top_k.to_string(), "1 to 20");
        }
        if c.output_tokens == 0 {
            return field("correctness.output_tokens", "0".into(), "at least 1");
        }
        if u64::from(c.items) * u64::from(c.output_tokens) > MAX_CORRECTNESS_POSITIONS {
            return field(
                "correctness.items",
                format!("{} (× output_tokens {})", c.items, c.output_tokens),
                &format!(
                    "items × output_tokens at most {MAX_CORRECTNESS_POSITIONS}, so that the \
                     per-item file with both sides' top-k stays within the verifier's read \
                     limit"
                ),
            );
        }
        if let Some(n) = c.load_sample.filter(|n| *n > 1000) {
            return field("correctness.load_sample", n.to_string(), "0 (off) to 1000");
        }
        if let Some(n) = c.caching_prompts.filter(|n| *n > 100) {
            return field(
                "correctness.caching_prompts",
                n.to_string(),
                "0 (off) to 100",
            );
        }
        if c.deadline_s == Some(0) {
            return field("correctness.deadline_s", "0".into(), "at least 1 second");
        }
        if self.overtake_margin_bp > 100_000 {
            return field(
                "overtake_margin_bp",
                self.overtake_margin_bp.to_string(),
                "at most 100000 (1000 %)",
            );
        }
        if let Some(bp) = self.derived_margin_bp.filter(|bp| *bp > 100_000) {
            return field(
                "derived_margin_bp",
                bp.to_string(),
                "at most 100000 (1000 %)",
            );
        }
        for mode in &self.surface.allowed_modes {
            if !matches!(mode.as_str(), "100644" | "100755") {
                return field(
                    "surface.allowed_modes",
                    mode.clone(),
                    "regular file modes only: 100644 or 100755",
                );
            }
        }
        if let Backend::Docker(docker) = &self.backend {
            if docker.port == Some(0) {
                return field("backend.port", "0".into(), "1 to 65535");
            }
            if docker.tmpfs_mb == Some(0) {
                return field("backend.tmpfs_mb", "0".into(), "at least 1");
            }
            if docker.image.is_none() && self.baseline.image.is_none() {
                return field(
                    "backend.image",
                    "none".into(),
                    "an image reference, here or as baseline.image",
                );
            }
        }
        for path in self.backend.ro_paths() {
            let p = std::path::Path::new(path);
            let plain = p.components().all(|c| {
                matches!(
                    c,
                    std::path::Component::RootDir | std::path::Component::Normal(_)
                )
            });
            if !p.is_absolute() || !plain || p.parent().is_none() {
                return field(
                    "backend.ro_paths",
                    path.clone(),
                    "an absolute path without `.` or `..`, other than `/`",
                );
            }
        }
        if let Backend::Process { command, api, .. } = &self.backend {
            if command.is_empty() {
                return field(
                    "backend.command",
                    "[]".into(),
                    "a program and its arguments",
                );
            }
            self.api_profile().validate()?;
            if let Some(api) = api
                && (api.token_count.is_some() || api.profile.is_some())
                && let Some(count) = self.token_count
                && count != api.resolve().token_count
            {
                return field(
                    "token_count",
                    format!("{count:?}").to_lowercase(),
                    "disagrees with backend.api's token_count (write it once, in [backend.api])",
                );
            }
        }
        for keyid in &self.evaluator_keyids {
            if keyid.parse::<Sha256Hex>().is_err() {
                return field(
                    "evaluator_keyids",
                    keyid.clone(),
                    "64 lowercase hex characters",
                );
            }
        }
        Ok(())
    }

    /// The campaign's RFC 8785 canonical JSON bytes, defaults included (no
    /// `schemaVersion`): the bytes a schema-1 campaign's digest covers.
    fn legacy_canonical_json(&self) -> Result<Vec<u8>, ModelError> {
        crate::canonical::to_canonical_vec(self).map_err(|e| ModelError::Canonical {
            message: e.to_string(),
        })
    }
}

/// The `schemaVersion` of the `campaign.json` this build writes. Version 1 is the form
/// before `campaign.json` existed: only `campaign.toml`, digested as the canonical JSON of
/// its parsed value ([`FrozenCampaign::from_legacy_toml`]).
pub const CAMPAIGN_SCHEMA_VERSION: u32 = 2;

/// A campaign as frozen in the data directory: the parsed value, the exact bytes its
/// digest covers, and their sha256 — the campaign digest every receipt records. The
/// digest is of stored bytes and is never re-derived, so adding a field to [`Campaign`]
/// or changing a default leaves every frozen campaign's digest as it was.
///
/// Compatibility rule: a field added to [`Campaign`] after schema 2 is read from an older
/// `campaign.json` as its documented "absent" value (an `Option` that is `None`, skipped
/// when serialized), never as today's default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrozenCampaign {
    /// The campaign.
    pub campaign: Campaign,
    /// Its schema version: [`CAMPAIGN_SCHEMA_VERSION`], or 1 for a TOML-only campaign.
    pub schema_version: u32,
    /// The bytes the digest covers: `campaign.json` as stored (schema ≥ 2), or the
    /// canonical JSON of the frozen `campaign.toml` (schema 1).
    pub bytes: Vec<u8>,
    /// sha256 of `bytes`.
    pub digest: Sha256Hex,
}

impl FrozenCampaign {
    /// Freezes a validated campaign: canonical JSON with `schemaVersion`
    /// [`CAMPAIGN_SCHEMA_VERSION`].
    ///
    /// Errors: [`ModelError::Canonical`] when it cannot be canonicalized.
    pub fn freeze(campaign: Campaign) -> Result<Self, ModelError> {
        let canonical = |e: crate::canonical::CanonicalError| ModelError::Canonical {
            message: e.to_string(),
        };
        let mut value = serde_json::to_value(&campaign).map_err(|e| ModelError::Canonical {
            message: e.to_string(),
        })?;
        if let Some(map) = value.as_object_mut() {
            map.insert("schemaVersion".into(), CAMPAIGN_SCHEMA_VERSION.into());
        }
        let bytes = crate::canonical::to_canonical_vec(&value).map_err(canonical)?;
        Ok(Self {
            campaign,
            schema_version: CAMPAIGN_SCHEMA_VERSION,
            digest: Sha256Hex::digest(&bytes),
            bytes,
        })
    }

    /// Reads a stored `campaign.json` (`source` names it in errors): strict JSON (no
    /// duplicate keys), RFC 8785 canonical, a known `schemaVersion`, a valid campaign.
    /// The digest is sha256 of `bytes` exactly.
    ///
    /// Errors: [`ModelError::InvalidField`] naming `schemaVersion` or the broken rule,
    /// [`ModelError::Toml`]-style parse errors as [`ModelError::Canonical`] naming
    /// `source`.
    pub fn from_json(source: &str, bytes: &[u8]) -> Result<Self, ModelError> {
        let parse = |message: String| ModelError::Canonical {
            message: format!("{source}: {message}"),
        };
        let mut value = crate::canonical::parse_strict(bytes, MAX_CAMPAIGN_BYTES)
            .map_err(|e| parse(e.to_string()))?;
        let canonical =
            crate::canonical::to_canonical_vec(&value).map_err(|e| parse(e.to_string()))?;
        if canonical != bytes {
            return Err(parse(
                "not RFC 8785 canonical JSON (was it edited by hand? campaigns are frozen)".into(),
            ));
        }
        let version = value
            .as_object_mut()
            .and_then(|map| map.remove("schemaVersion"))
            .and_then(|v| v.as_u64());
        if version != Some(u64::from(CAMPAIGN_SCHEMA_VERSION)) {
            return Err(ModelError::InvalidField {
                field: format!("{source}: schemaVersion"),
                value: version.map_or_else(|| "absent".into(), |v| v.to_string()),
                rule: format!("this build reads schema version {CAMPAIGN_SCHEMA_VERSION}"),
            });
        }
        let campaign: Campaign = serde_json::from_value(value).map_err(|e| parse(e.to_string()))?;
        campaign.validate()?;
        Ok(Self {
            campaign,
            schema_version: CAMPAIGN_SCHEMA_VERSION,
            digest: Sha256Hex::digest(bytes),
            bytes: bytes.to_vec(),
        })
    }

    /// Reads a schema-1 campaign: a `campaign.toml` frozen before `campaign.json`
    /// existed. Its digest is sha256 of the canonical JSON of the parsed campaign, as
    /// the rounds sealed then recorded it; fields added since are absent (skipped), so
    /// the digest stays what those rounds recorded.
    ///
    /// Errors: as [`Campaign::from_toml`].
    pub fn from_legacy_toml(source: &str, text: &str) -> Result<Self, ModelError> {
        let campaign = Campaign::from_toml(source, text)?;
        let bytes = campaign.legacy_canonical_json()?;
        Ok(Self {
            campaign,
            schema_version: 1,
            digest: Sha256Hex::digest(&bytes),
            bytes,
        })
    }
}

/// Largest `campaign.json` read, bytes.
const MAX_CAMPAIGN_BYTES: usize = 1 << 20;

/// Default values, one function per field so serde and the docs agree.
mod defaults {
    use super::{LengthDist, Limits};

    pub fn engine_log_bytes() -> u64 {
        Limits::ENGINE_LOG_BYTES
    }
    pub fn response_bytes() -> u64 {
        Limits::RESPONSE_BYTES
    }
    pub fn response_events() -> u64 {
        Limits::RESPONSE_EVENTS
    }

    pub fn runs() -> u32 {
        3
    }
    pub fn overtake_margin_bp() -> u32 {
        100
    }
    pub fn drift_bound_bp() -> u32 {
        500
    }
    pub fn health_deadline_s() -> u64 {
        600
    }
    pub fn hardware_class() -> String {
        "cpu".into()
    }
    pub fn memory_limit_mb() -> u64 {
        1024
    }
    pub fn engine_config_path() -> String {
        "engine.toml".into()
    }
    pub fn input_len() -> LengthDist {
        LengthDist::Uniform { min: 64, max: 256 }
    }
    pub fn output_len() -> LengthDist {
        LengthDist::Uniform { min: 16, max: 64 }
    }
    pub fn sla_bound_ms() -> u64 {
        1000
    }
    pub fn min_rate_milli_rps() -> u64 {
        500
    }
    pub fn max_rate_milli_rps() -> u64 {
        64_000
    }
    pub fn min_probe_duration_ms() -> u64 {
        10_000
    }
    pub fn min_probe_requests() -> u32 {
        130
    }
    pub fn warmup_requests() -> u32 {
        10
    }
    pub fn rate_tolerance_bp() -> u32 {
        500
    }
    pub fn entry_deadline_s() -> u64 {
        3600
    }
    pub fn correctness_items() -> u32 {
        2000
    }
    pub fn group_size() -> u32 {
        3
    }
    pub fn group_mean_bound_micro_nats() -> u64 {
        200_000
    }
    pub fn item_bound_micro_nats() -> u64 {
        2_000_000
    }
    pub fn top_k() -> u32 {
        20
    }
    pub fn correctness_input_len() -> LengthDist {
        LengthDist::Uniform { min: 16, max: 64 }
    }
    pub fn correctness_output_tokens() -> u32 {
        16
    }
    pub fn denied_paths() -> Vec<String> {
        vec![
            ".github/**".into(),
            ".gitmodules".into(),
            ".gitattributes".into(),
            "**/.gitattributes".into(),
        ]
    }
    pub fn allowed_modes() -> Vec<String> {
        vec!["100644".into()]
    }
    pub fn max_diff_bytes() -> u64 {
        1 << 20
    }
    pub fn max_line_bytes() -> u64 {
        64 << 10
    }
}
