//! The round record: the predicate of a round's in-toto Statement (content/rounds.md;
//! the finished round of content/rounds.md). Every number is an integer in the
//! unit its name carries (content/receipts.md, Numbers); names are lowerCamelCase.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::campaign::{ImageRef, Sla};
use super::hardware::HardwareFingerprint;
use super::ids::{CampaignId, MinerId, Seed32, Sha256Hex, Timestamp};

/// `predicateType` of a sealed round. Bumped on any change of [`RoundRecord`]
/// (ARCHITECTURE.md, Predicate versions): v2 types the outcome's reason and decision, an
/// entry's infrastructure failure and its engine's backend, records what each engine ran,
/// and copies the frozen `campaign.json` (and a JSONL prompt source) into `inputs/`.
pub const ROUND_PREDICATE_TYPE: &str = "https://referee.dev/predicates/round/v2";

/// `predicateType` of the rounds sealed before v2. `referee verify` still verifies them:
/// [`RoundRecord`] reads them (their typed fields were free text then, kept as
/// [`TypedOrText::Text`]), and a check v1 cannot support says `not applicable (v1)`.
pub const ROUND_PREDICATE_TYPE_V1: &str = "https://referee.dev/predicates/round/v1";

/// The round predicate versions this build verifies, oldest first.
pub const ROUND_PREDICATE_TYPES: [&str; 2] = [ROUND_PREDICATE_TYPE_V1, ROUND_PREDICATE_TYPE];

/// A value that predicate v2 records typed and v1 recorded as free text. Serialized
/// untagged: a v2 receipt holds the typed object (always a JSON object, so it never reads
/// as text), a v1 receipt the sentence it wrote. A v2 receipt carrying text fails the
/// schema check ([`RoundRecord::legacy_text_fields`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum TypedOrText<T> {
    /// What v2 records.
    Typed(T),
    /// What v1 recorded: a sentence for people.
    Text(String),
}

impl<T: fmt::Display> fmt::Display for TypedOrText<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypedOrText::Typed(value) => value.fmt(f),
            TypedOrText::Text(text) => f.write_str(text),
        }
    }
}

impl<T> TypedOrText<T> {
    /// The typed value; `None` for v1 text.
    pub fn typed(&self) -> Option<&T> {
        match self {
            TypedOrText::Typed(value) => Some(value),
            TypedOrText::Text(_) => None,
        }
    }
}

/// `predicateType` of the "round opened" statement signed before any entry runs
/// (content/receipts.md).
pub const ROUND_OPENED_PREDICATE_TYPE: &str = "https://referee.dev/predicates/round-opened/v1";

/// A sealed round.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoundRecord {
    /// Round number within the campaign, from 1.
    pub round: u64,
    /// The campaign, by id and digest.
    pub campaign: CampaignRef,
    /// sha256 of `miners.json` as it was when the round opened.
    pub miners_digest: Sha256Hex,
    /// sha256 of the previous round's Statement bytes in this campaign; `None` for round 1.
    pub previous_receipt: Option<Sha256Hex>,
    /// The tool that ran the round.
    pub tool: Tool,
    /// Seeds with their commitments, revealed (content/measurement.md, Seeds).
    pub seeds: RevealedSeeds,
    /// sha256 of the request sequence (content/measurement.md): depends on seeds and campaign only.
    pub request_sequence_digest: Sha256Hex,
    /// The SLA entries were measured at (copied from the campaign for readers).
    pub sla: Sla,
    /// Hardware at setup and at teardown; a round whose hardware changed is invalid.
    pub hardware: HardwareCheck,
    /// When setup started.
    pub started_at: Timestamp,
    /// When teardown ended.
    pub ended_at: Timestamp,
    /// Every step, in order.
    pub steps: Vec<Step>,
    /// Baseline first, then the incumbent (if not the baseline), then challengers in
    /// commitment order.
    pub entries: Vec<Entry>,
    /// The baseline run again at the end.
    pub drift: Option<DriftCheck>,
    /// What the round decided.
    pub outcome: Outcome,
    /// Inputs of the round as in-toto ResourceDescriptors: the campaign, miners.json,
    /// each diff (copies under `inputs/`), the baseline commit and images.
    pub inputs: Vec<ResourceDescriptor>,
    /// Bundle-relative path of the "round opened" statement, signed before any entry ran
    /// (a DSSE envelope whose predicate is [`RoundOpened`]).
    pub round_opened: String,
}

impl RoundRecord {
    /// The fields that hold v1's free text where v2 records a typed value, as
    /// predicate paths (`outcome.decision`, `entries[2].infraFailure`); empty for a
    /// well-formed v2 record.
    pub fn legacy_text_fields(&self) -> Vec<String> {
        let mut fields = Vec::new();
        if matches!(self.outcome.decision, TypedOrText::Text(_)) {
            fields.push("outcome.decision".to_owned());
        }
        if matches!(self.outcome.reason, Some(TypedOrText::Text(_))) {
            fields.push("outcome.reason".to_owned());
        }
        for entry in &self.entries {
            if matches!(entry.infra_failure, Some(TypedOrText::Text(_))) {
                fields.push(format!("entries[{}].infraFailure", entry.index));
            }
        }
        fields
    }
}

/// A campaign by id and digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CampaignRef {
    /// The campaign id.
    pub id: CampaignId,
    /// sha256 of its canonical JSON.
    pub digest: Sha256Hex,
}

/// The tool that produced a record (content/receipts.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// `referee`.
    pub name: String,
    /// Cargo package version.
    pub version: String,
    /// git commit of the build, or `unknown`.
    pub git_commit: String,
    /// CPU features the matrix kernels may use (bit-exact logprobs are promised only on
    /// identical features, content/measurement.md).
    pub cpu_features: Vec<String>,
}

/// One seed: the committed value, revealed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedReveal {
    /// The 32-byte seed.
    pub seed: Seed32,
    /// The 32-byte salt.
    pub salt: Seed32,
    /// sha256(seed ‖ salt), published in the round-opened statement.
    pub commitment: Sha256Hex,
}

impl SeedReveal {
    /// The commitment of `seed` and `salt`: sha256(seed ‖ salt).
    pub fn commit(seed: Seed32, salt: Seed32) -> Self {
        let mut bytes = [0u8; 64];
        bytes[..32].copy_from_slice(&seed.0);
        bytes[32..].copy_from_slice(&salt.0);
        Self {
            seed,
            salt,
            commitment: Sha256Hex::digest(&bytes),
        }
    }

    /// Whether the commitment matches seed and salt.
    pub fn is_consistent(&self) -> bool {
        Self::commit(self.seed, self.salt).commitment == self.commitment
    }
}

/// The four seeds of content/measurement.md plus the per-round prompt salt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevealedSeeds {
    /// Which items make up the workload.
    pub item_seed: SeedReveal,
    /// The order items are sent in.
    pub order_seed: SeedReveal,
    /// The arrival times.
    pub schedule_seed: SeedReveal,
    /// The fresh items of the correctness gate.
    pub correctness_seed: SeedReveal,
    /// Mixed into every prompt so no engine can cache answers across rounds.
    pub prompt_salt: SeedReveal,
}

/// The seed commitments alone, as the round-opened statement publishes them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedCommitments {
    /// sha256(itemSeed ‖ salt).
    pub item_seed: Sha256Hex,
    /// sha256(orderSeed ‖ salt).
    pub order_seed: Sha256Hex,
    /// sha256(scheduleSeed ‖ salt).
    pub schedule_seed: Sha256Hex,
    /// sha256(correctnessSeed ‖ salt).
    pub correctness_seed: Sha256Hex,
    /// sha256(promptSalt ‖ salt).
    pub prompt_salt: Sha256Hex,
}

impl RevealedSeeds {
    /// The commitments of these seeds.
    pub fn commitments(&self) -> SeedCommitments {
        SeedCommitments {
            item_seed: self.item_seed.commitment.clone(),
            order_seed: self.order_seed.commitment.clone(),
            schedule_seed: self.schedule_seed.commitment.clone(),
            correctness_seed: self.correctness_seed.commitment.clone(),
            prompt_salt: self.prompt_salt.commitment.clone(),
        }
    }
}

/// The predicate of the "round opened" statement (content/receipts.md): signed before any entry
/// runs so the seed commitments and the entry list cannot be rewritten later.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoundOpened {
    /// Round number.
    pub round: u64,
    /// The campaign.
    pub campaign: CampaignRef,
    /// sha256 of miners.json.
    pub miners_digest: Sha256Hex,
    /// Previous round's Statement digest.
    pub previous_receipt: Option<Sha256Hex>,
    /// The entries seated, in run order.
    pub entries: Vec<SeatedEntry>,
    /// Seed commitments.
    pub seed_commitments: SeedCommitments,
    /// When the round opened.
    pub opened_at: Timestamp,
}

/// An entry as seated in the round-opened statement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeatedEntry {
    /// Its role.
    pub role: Role,
    /// The miner, none for the baseline.
    pub miner: Option<MinerId>,
    /// The diff's sha256, none for the baseline.
    pub patch: Option<Sha256Hex>,
}

/// Hardware at both ends of the round.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HardwareCheck {
    /// Fingerprint at setup.
    pub at_start: HardwareFingerprint,
    /// Fingerprint at teardown.
    pub at_end: HardwareFingerprint,
    /// Whether they differ (then the round is invalid).
    pub changed: bool,
}

/// A step's phase, as in content/rounds.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Getting a machine (a local machine: probing it).
    Provisioning,
    /// Installing the harness, shipping the repo (here: drawing seeds, opening the round).
    Bootstrapping,
    /// Fetching engine images (here: preparing patched trees).
    PullingImage,
    /// Staging the model.
    DownloadingModel,
    /// Loading weights and waiting for `/health`.
    StartingEngine,
    /// Rate search and runs at the SLA.
    RunningSla,
    /// Greedy outputs of the correctness items.
    RunningCorrectness,
    /// The scorer computes reference logprobs.
    Scoring,
    /// Releasing the machine.
    Teardown,
}

/// How a step ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// It did its work.
    Ok,
    /// It failed; the entry it belongs to carries the typed reason.
    Failed,
    /// It was not run (e.g. no incumbent, or the entry was already disqualified).
    Skipped,
}

/// One step of the round (content/rounds.md: phase, start and end time, log saved and digested).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// Position in the round, from 0.
    pub index: u32,
    /// The group it belongs to: `Setup`, `Baseline`, `Incumbent`, `Candidate 2 of 5`,
    /// `Scorer`, `Drift baseline`, `Teardown`.
    pub group: String,
    /// What it does, e.g. `Baseline, starting the engine`.
    pub name: String,
    /// Its phase.
    pub phase: Phase,
    /// Start time.
    pub started_at: Timestamp,
    /// End time.
    pub ended_at: Timestamp,
    /// How it ended.
    pub status: StepStatus,
    /// Bundle-relative path of its log (a subject of the Statement).
    pub log: Option<String>,
}

/// An entry's role in the round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The pinned baseline; speed 0 by definition.
    Baseline,
    /// The current leader, re-measured.
    Incumbent,
    /// A queued submission.
    Challenger,
}

/// How an entry ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntryStatus {
    /// It holds a throughput and a score.
    Scored,
    /// It ran and was wrong, missed the SLA, or crashed at start.
    Disqualified,
    /// It never ran because of infrastructure (or the round was infra_failed).
    InfraFailed,
}

/// Why an entry was disqualified: a closed set a miner can look up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DisqualificationReason {
    /// The engine exited, or never answered `/health`, before the health deadline.
    EngineDiedBeforeHealthy,
    /// The engine died while being measured.
    EngineCrashed,
    /// No rate met the SLA, or the entry's deadline expired (content/measurement.md).
    SlaUnmet,
    /// The logit distance exceeded a bound (content/correctness.md, Correctness).
    CorrectnessFailed,
    /// Outputs broke the request contract (wrong length, not greedy-stable, cached).
    ComplianceFailed,
}

impl DisqualificationReason {
    /// The snake_case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            DisqualificationReason::EngineDiedBeforeHealthy => "engine_died_before_healthy",
            DisqualificationReason::EngineCrashed => "engine_crashed",
            DisqualificationReason::SlaUnmet => "sla_unmet",
            DisqualificationReason::CorrectnessFailed => "correctness_failed",
            DisqualificationReason::ComplianceFailed => "compliance_failed",
        }
    }
}

/// A disqualification with its evidence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Disqualification {
    /// The typed reason.
    pub reason: DisqualificationReason,
    /// Human detail, e.g. `engine died before becoming healthy (exit status 1)`.
    pub detail: String,
    /// The last lines (at most 50) of the engine's log.
    pub log_tail: Vec<String>,
}

/// How the entry's engine was run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EngineRef {
    /// The backend that ran it.
    pub backend: BackendKind,
    /// sha256 of the engine config file of the (patched) tree.
    pub config_sha256: Sha256Hex,
    /// The image, for the docker backend.
    pub image: Option<ImageRef>,
    /// The command line as the runner started it, placeholders substituted (v2; absent
    /// in v1 and for an entry that never started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
}

/// An engine backend, as receipts name it (content/rounds.md, Engines).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    /// The built-in reference engine, run as `referee engine serve`.
    Builtin,
    /// Any local command that serves the OpenAI-compatible API.
    Process,
    /// A container image (its own issue; not runnable in this build).
    Docker,
}

impl BackendKind {
    /// The snake_case name: `builtin`, `process`, `docker`.
    pub fn as_str(&self) -> &'static str {
        match self {
            BackendKind::Builtin => "builtin",
            BackendKind::Process => "process",
            BackendKind::Docker => "docker",
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One full rate search of an entry (content/measurement.md, Run).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    /// Run number, from 0.
    pub run: u32,
    /// Throughput of the highest passing probe, milli-requests/s; `None` when none passed.
    pub throughput_milli_rps: Option<u64>,
    /// Target rate of that probe, milli-requests/s.
    pub rate_milli_rps: Option<u64>,
    /// Probes sent.
    pub probes: u32,
    /// Bundle-relative path of the probe log (every probe with its histograms).
    pub probe_log: String,
}

/// An entry's correctness verdict (content/correctness.md, Correctness).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CorrectnessSummary {
    /// Items scored.
    pub items: u32,
    /// Whether every group mean and every item is within its bound.
    pub passed: bool,
    /// Largest per-item distance, micro-nats.
    pub max_item_micro_nats: u64,
    /// Largest group mean, micro-nats.
    pub max_group_mean_micro_nats: u64,
    /// Index of the first item over the item bound.
    pub first_failing_item: Option<u32>,
    /// Index of the first group over the group bound.
    pub first_failing_group: Option<u32>,
    /// Bundle-relative path of the per-item distances.
    pub items_file: String,
}

/// The per-item correctness artifact of one entry (`correctness/<entry>.json`): what the
/// verifier recomputes the verdict from (content/correctness.md §Correctness). Integers only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CorrectnessItems {
    /// Top-k logprobs compared per position.
    pub top_k: u32,
    /// Items per group, taken in order.
    pub group_size: u32,
    /// Bound on every group mean, micro-nats.
    pub group_mean_bound_micro_nats: u64,
    /// Bound on every item, micro-nats.
    pub item_bound_micro_nats: u64,
    /// Every item, in order.
    pub items: Vec<CorrectnessItem>,
}

/// One correctness item of one entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CorrectnessItem {
    /// Item index within the correctness set, from 0.
    pub index: u32,
    /// sha256 of the prompt's token ids (canonical JSON list), shared by every entry.
    pub prompt_sha256: Sha256Hex,
    /// Prompt length, tokens.
    pub prompt_tokens: u32,
    /// The entry's greedy output, token ids.
    pub output_token_ids: Vec<u32>,
    /// Distance at each generated position, micro-nats.
    pub position_micro_nats: Vec<u64>,
    /// The item's distance: the rounded-half-up mean of `positionMicroNats`.
    pub distance_micro_nats: u64,
}

/// One entry of the round (a row of the table in content/rounds.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// Position in the round, from 0.
    pub index: u32,
    /// Its role.
    pub role: Role,
    /// The miner; `None` for the baseline.
    pub miner: Option<MinerId>,
    /// sha256 of the diff; `None` for the baseline.
    pub patch: Option<Sha256Hex>,
    /// How it was run.
    pub engine: EngineRef,
    /// How it ended.
    pub status: EntryStatus,
    /// Why it was disqualified.
    pub disqualification: Option<Disqualification>,
    /// Why it is `infra_failed` (the tree, the client or the scorer failed, or the round
    /// was `infra_failed`).
    #[serde(default)]
    pub infra_failure: Option<TypedOrText<EntryInfraFailure>>,
    /// Every run, in order.
    pub runs: Vec<RunSummary>,
    /// Median run throughput, milli-requests/s.
    pub throughput_milli_rps: Option<u64>,
    /// Lowest run throughput, milli-requests/s.
    pub throughput_min_milli_rps: Option<u64>,
    /// Highest run throughput, milli-requests/s.
    pub throughput_max_milli_rps: Option<u64>,
    /// The correctness verdict (not for the baseline, which is the reference).
    pub correctness: Option<CorrectnessSummary>,
    /// Speedup against the round's first baseline run: (T / T_baseline − 1) in parts per
    /// million, floor-rounded; 0 for the baseline.
    pub score_ppm: Option<i64>,
    /// When its first step started.
    pub started_at: Timestamp,
    /// When its last step ended.
    pub ended_at: Timestamp,
    /// Bundle-relative path of the engine's log.
    pub engine_log: Option<String>,
}

/// The drift check (content/measurement.md, Paired comparison and drift).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DriftCheck {
    /// First baseline throughput, milli-requests/s.
    pub first_milli_rps: u64,
    /// Drift baseline throughput, milli-requests/s (`None` if it failed).
    pub drift_milli_rps: Option<u64>,
    /// |drift − first| / first in basis points, rounded up.
    pub drift_bp: Option<u64>,
    /// The campaign's bound, basis points.
    pub bound_bp: u32,
    /// Whether the drift is within the bound.
    pub within_bound: bool,
    /// Bundle-relative path of the drift baseline's probe logs.
    pub runs: Vec<RunSummary>,
}

/// Whether the round counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RoundStatus {
    /// The round finished and its leader decision stands.
    Complete,
    /// The baseline failed, drifted or the hardware changed: sealed for the record, no
    /// leader change, challengers requeued once.
    InfraFailed,
}

/// A leader: the submission holding the seat.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Leader {
    /// The diff's sha256.
    pub patch: Sha256Hex,
    /// Its miner.
    pub miner: MinerId,
}

/// What the round decided (content/leader-rule.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    /// Whether the round counts.
    pub status: RoundStatus,
    /// Why, when it does not.
    pub reason: Option<TypedOrText<RoundFailure>>,
    /// The seat before the round (`None` = the baseline).
    pub leader_before: Option<Leader>,
    /// The seat after the round (`None` = the baseline).
    pub leader_after: Option<Leader>,
    /// Whether the seat changed.
    pub changed: bool,
    /// The overtake margin applied, basis points.
    pub margin_bp: u32,
    /// Which rule decided (margin met, not met, incumbent disqualified, …).
    pub decision: TypedOrText<SeatRule>,
}

/// Why a round is `infra_failed` (content/leader-rule.md): the round is sealed for the
/// record, changes no seat and is charged to no challenger.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum RoundFailure {
    /// The first baseline run produced no throughput.
    BaselineFailed,
    /// The drift baseline produced no throughput.
    DriftBaselineFailed,
    /// The drift baseline moved more than the bound.
    Drift {
        /// Measured drift, basis points.
        drift_bp: u64,
        /// The campaign's bound, basis points.
        bound_bp: u32,
    },
    /// The hardware fingerprint at teardown differs from the one at setup.
    HardwareChanged,
    /// The reference runtime failed: no entry has a correctness verdict.
    ScorerFailed,
}

impl fmt::Display for RoundFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RoundFailure::BaselineFailed => f.write_str("the baseline failed"),
            RoundFailure::DriftBaselineFailed => f.write_str("the drift baseline failed"),
            RoundFailure::Drift { drift_bp, bound_bp } => write!(
                f,
                "the drift baseline moved {drift_bp} bp from the first baseline, more than the \
                 bound of {bound_bp} bp"
            ),
            RoundFailure::HardwareChanged => {
                f.write_str("the hardware changed between setup and teardown")
            }
            RoundFailure::ScorerFailed => f.write_str("the reference runtime failed"),
        }
    }
}

/// Which rule settled the seat (content/leader-rule.md). `margin` in the sentences is
/// the outcome's `marginBp`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "rule",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum SeatRule {
    /// The round was `infra_failed`: no leader change.
    RoundInfraFailed,
    /// No challenger was scored; the incumbent keeps the seat.
    NoScoredChallenger,
    /// The best challenger met the margin and takes the seat.
    MarginMet {
        /// The new leader.
        winner: Leader,
    },
    /// The best challenger did not meet the margin; the incumbent keeps the seat.
    MarginNotMet {
        /// The best challenger.
        best: Leader,
    },
    /// The leader was disqualified; the best scored challenger takes the seat without
    /// the margin.
    IncumbentDisqualified {
        /// The new leader.
        winner: Leader,
    },
    /// The leader was disqualified and no challenger was scored: the seat falls back to
    /// the baseline.
    IncumbentDisqualifiedFallback,
}

impl fmt::Display for SeatRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = |l: &Leader| format!("{} ({})", l.patch.short(), l.miner);
        match self {
            SeatRule::RoundInfraFailed => {
                f.write_str("infra_failed: no leader change, challengers requeued once")
            }
            SeatRule::NoScoredChallenger => {
                f.write_str("no challenger was scored; the incumbent keeps the seat")
            }
            SeatRule::MarginMet { winner } => write!(
                f,
                "{} beat the incumbent by at least the margin",
                name(winner)
            ),
            SeatRule::MarginNotMet { best } => write!(
                f,
                "the best challenger {} did not beat the incumbent by the margin; the \
                 incumbent keeps the seat",
                name(best)
            ),
            SeatRule::IncumbentDisqualified { winner } => write!(
                f,
                "the incumbent was disqualified; {} takes the seat without the margin",
                name(winner)
            ),
            SeatRule::IncumbentDisqualifiedFallback => f.write_str(
                "the incumbent was disqualified and no challenger was scored; the seat falls \
                 back to the baseline",
            ),
        }
    }
}

/// Why an entry is `infra_failed`: a failure of the infrastructure, never charged to the
/// entry's miner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum EntryInfraFailure {
    /// The round was `infra_failed`: this entry's measurements do not count.
    RoundInfraFailed {
        /// Why the round failed.
        failure: RoundFailure,
    },
    /// The baseline itself failed (its engine or its SLA runs).
    BaselineFailed {
        /// What failed.
        detail: String,
    },
    /// The runner could not run the entry (its tree, its engine's backend).
    Runner {
        /// What failed.
        detail: String,
    },
    /// The client's send lag exceeded its bound: the client, not the engine, was
    /// measured.
    ClientLagged,
    /// The scorer could not score the entry.
    ScorerFailed {
        /// What failed.
        detail: String,
    },
    /// The scorer produced no verdict for the entry.
    NoVerdict,
    /// The entry's steps never ran.
    NotRun,
}

impl fmt::Display for EntryInfraFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EntryInfraFailure::RoundInfraFailed { failure } => {
                write!(f, "the round was infra_failed: {failure}")
            }
            EntryInfraFailure::BaselineFailed { detail } => {
                write!(f, "the baseline failed: {detail}")
            }
            EntryInfraFailure::Runner { detail } => f.write_str(detail),
            EntryInfraFailure::ClientLagged => f.write_str(
                "the client's send lag exceeded its bound: the client, not the engine, was \
                 measured",
            ),
            EntryInfraFailure::ScorerFailed { detail } => {
                write!(f, "the scorer could not score it: {detail}")
            }
            EntryInfraFailure::NoVerdict => f.write_str("the scorer produced no verdict"),
            EntryInfraFailure::NotRun => f.write_str("the entry did not run"),
        }
    }
}

/// An in-toto ResourceDescriptor (attestation spec v1), as the predicate's inputs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDescriptor {
    /// Name, e.g. `inputs/campaign.toml` or `baseline`.
    pub name: String,
    /// Digests by algorithm: `sha256`, `gitCommit`.
    pub digest: std::collections::BTreeMap<String, String>,
    /// Where it comes from, when it has an address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
}
