//! The round record: the predicate of a round's in-toto Statement (content/rounds.md;
//! the finished round of content/rounds.md). Every number is an integer in the
//! unit its name carries (content/receipts.md, Numbers); names are lowerCamelCase.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::beacon::{BeaconPromise, BeaconRecord};
use super::campaign::{ImageRef, Sla};
use super::hardware::HardwareFingerprint;
use super::ids::{CampaignId, MinerId, Seed32, Sha256Hex, Timestamp};
use super::measurement::MeasuredFor;

/// `predicateType` of a sealed round. Bumped on any change of [`RoundRecord`]
/// (ARCHITECTURE.md, Predicate versions): v9 records what the fifth landing added (the
/// caching probe, field coverage's evidence, repository rounds, both tracks wired, rounds on
/// pods, parallel entries and GPU telemetry; each field named in content/receipts.md, v9)
/// and requires it; v8 records what the fourth trust landing and
/// the competition of 001's tracks and title added (each field named in
/// content/receipts.md, v8) and requires it; v7 records what the third trust landing and the
/// next pieces of the competition of 001 added (each field named in content/receipts.md,
/// v7) and requires it; v6 records what the second trust landing and
/// the first pieces of the competition of 001 added (each field named in
/// content/receipts.md, v6) and requires it; v5 records what the trust work of its landing
/// added (the engine's sandbox view and uid, the limits the runner enforced, the
/// measurements' ties to their entries, the sample of every counted run — each field
/// named in content/receipts.md) and requires it; v4 requires what late v3 builds recorded
/// optionally — the capability probe's findings of a round on a real engine
/// (`capabilityProbe`) and the client's scheduling as the kernel reported it
/// (`clientSelfTest.scheduling`) — so a v4 receipt without them fails `referee verify`
/// where a v3 one says `not applicable (v3)`; v3 counts output tokens from the token ids
/// the client observed, checks the correctness reference's own prompt tokenization and a
/// sample of the timed run's outputs, sandboxes and pins engines, and applies the leader
/// rule's failure cases (an infra-failed incumbent keeps its seat); v2 typed the outcome's
/// reason and decision, an entry's infrastructure failure and its engine's backend,
/// recorded what each engine ran, and copied the frozen `campaign.json` (and a JSONL
/// prompt source) into `inputs/`.
pub const ROUND_PREDICATE_TYPE: &str = "https://referee.dev/predicates/round/v9";

/// `predicateType` of the rounds sealed by v8 builds. `referee verify` still verifies
/// them; a check of what v9 added says `not applicable (v8)` where a v8 receipt lacks it.
pub const ROUND_PREDICATE_TYPE_V8: &str = "https://referee.dev/predicates/round/v8";

/// `predicateType` of the rounds sealed by v7 builds. `referee verify` still verifies
/// them; a check of what v8 added says `not applicable (v7)` where a v7 receipt lacks it.
pub const ROUND_PREDICATE_TYPE_V7: &str = "https://referee.dev/predicates/round/v7";

/// `predicateType` of the rounds sealed by v6 builds. `referee verify` still verifies
/// them; a check of what v7 added says `not applicable (v6)` where a v6 receipt lacks it.
pub const ROUND_PREDICATE_TYPE_V6: &str = "https://referee.dev/predicates/round/v6";

/// `predicateType` of the rounds sealed by v5 builds. `referee verify` still verifies
/// them; a check of what v6 added says `not applicable (v5)` where a v5 receipt lacks it.
pub const ROUND_PREDICATE_TYPE_V5: &str = "https://referee.dev/predicates/round/v5";

/// `predicateType` of the rounds sealed by v4 builds. `referee verify` still verifies
/// them; a check of what v5 added says `not applicable (v4)` where a v4 receipt lacks it.
pub const ROUND_PREDICATE_TYPE_V4: &str = "https://referee.dev/predicates/round/v4";

/// `predicateType` of the rounds sealed by v3 builds. `referee verify` still verifies
/// them; a check of what v4 requires says `not applicable (v3)` where a v3 receipt lacks
/// it (its builds recorded the capability probe and the client's scheduling only late).
pub const ROUND_PREDICATE_TYPE_V3: &str = "https://referee.dev/predicates/round/v3";

/// `predicateType` of the rounds sealed by v2 builds. `referee verify` still verifies
/// them; a check that needs what v3 added says `not applicable (v2)`.
pub const ROUND_PREDICATE_TYPE_V2: &str = "https://referee.dev/predicates/round/v2";

/// `predicateType` of the rounds sealed before v2. `referee verify` still verifies them:
/// [`RoundRecord`] reads them (their typed fields were free text then, kept as
/// [`TypedOrText::Text`]), and a check v1 cannot support says `not applicable (v1)`.
pub const ROUND_PREDICATE_TYPE_V1: &str = "https://referee.dev/predicates/round/v1";

/// The round predicate versions this build verifies, oldest first.
pub const ROUND_PREDICATE_TYPES: [&str; 9] = [
    ROUND_PREDICATE_TYPE_V1,
    ROUND_PREDICATE_TYPE_V2,
    ROUND_PREDICATE_TYPE_V3,
    ROUND_PREDICATE_TYPE_V4,
    ROUND_PREDICATE_TYPE_V5,
    ROUND_PREDICATE_TYPE_V6,
    ROUND_PREDICATE_TYPE_V7,
    ROUND_PREDICATE_TYPE_V8,
    ROUND_PREDICATE_TYPE,
];

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
/// (content/receipts.md), opened by rounds of predicate v8: v4 is signed and logged
/// before the beacon round it names exists, so a round with a beacon publishes no seed
/// commitments (its seeds derive from the committed secret and that round's value).
pub const ROUND_OPENED_PREDICATE_TYPE: &str = "https://referee.dev/predicates/round-opened/v4";

/// `predicateType` of the "round opened" statement of rounds of predicates v5 to v7: v3
/// commits to the evaluator's secret and names the beacon round the seeds derive from,
/// or says the round is practice; it was signed once the beacon value was known.
pub const ROUND_OPENED_PREDICATE_TYPE_V3: &str = "https://referee.dev/predicates/round-opened/v3";

/// `predicateType` of the "round opened" statement of rounds of predicates v3 and v4: v2
/// commits the seed of the timed-run output sample too.
pub const ROUND_OPENED_PREDICATE_TYPE_V2: &str = "https://referee.dev/predicates/round-opened/v2";

/// `predicateType` of the "round opened" statement of rounds of predicates v1 and v2.
pub const ROUND_OPENED_PREDICATE_TYPE_V1: &str = "https://referee.dev/predicates/round-opened/v1";

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
    /// The beacon value every seed derives from with [`RoundRecord::evaluator_secret`]
    /// (`crate::rules::seeds`): its source, round, value and signature; v5, absent in a
    /// round whose seeds the evaluator drew alone or gave (`practice`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beacon: Option<BeaconRecord>,
    /// The evaluator's 32-byte secret, revealed: its sha256 is the round-opened
    /// statement's `evaluatorSecretSha256`; v5, present exactly with `beacon`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluator_secret: Option<Seed32>,
    /// The evaluator gave the seeds (`referee round --seeds`, tests and re-runs): the
    /// round is practice and never moves a seat (content/rounds.md); v5, `false` absent.
    #[serde(default, skip_serializing_if = "is_false")]
    pub practice: bool,
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
    /// The baseline run again at the end (rounds before v3; v3 measures drift across
    /// passes instead, [`RoundRecord::noise`]).
    pub drift: Option<DriftCheck>,
    /// The passes, in the order they ran (content/rounds.md, Passes); v3, empty before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passes: Vec<Pass>,
    /// The round's measured noise: the baseline's spread across passes and the A/A
    /// control's; v3, absent before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<NoiseCheck>,
    /// What the round decided.
    pub outcome: Outcome,
    /// `usage` when the campaign counts tokens with `token_count = "usage"`: every token
    /// count and throughput of the round is the engines' own `usage.completion_tokens`,
    /// self-reported (content/measurement.md); `logprobs` when the client counted the
    /// streamed logprob entries (content/engines.md); absent when it counted the token
    /// ids it observed (and before v3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_count: Option<super::measurement::TokenCount>,
    /// The load client's self-test at setup, before any engine started
    /// (content/measurement.md, Open loop): what it held against a null server at the
    /// campaign's maximum rate, and the send-lag bound it was held to; v3, absent before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_self_test: Option<ClientSelfTest>,
    /// The capability probe of the baseline engine at setup, before any entry ran
    /// (content/engines.md, The capability probe): one finding per feature the round
    /// needs under the campaign's API profile. Absent for the built-in engine (its API is
    /// referee's own) and in rounds sealed before the probe existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability_probe: Option<super::capability::CapabilityProbe>,
    /// The output budgets the round ran under: the campaign's `[limits]`, every value
    /// written out, defaults included (content/threat-model.md, Bounded output; v6,
    /// absent before). Snake_case, as in the campaign.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<super::campaign::Limits>,
    /// Inputs of the round as in-toto ResourceDescriptors: the campaign, miners.json,
    /// each diff (copies under `inputs/`), the baseline commit and images.
    pub inputs: Vec<ResourceDescriptor>,
    /// Bundle-relative path of the "round opened" statement, signed before any entry ran
    /// (a DSSE envelope whose predicate is [`RoundOpened`]).
    pub round_opened: String,
    /// The round in the data directory's transparency log (content/transparency-log.md):
    /// where its round-opened statement was logged before any entry ran, and whether a
    /// witness cosigned that; `notLogged` when the data directory has no log. Absent in
    /// rounds sealed before the log existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transparency_log: Option<RoundLog>,
    /// What the round is for (content/title.md; v7, absent before: a regular round).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<super::title::RoundKindRecord>,
    /// The clock its recorded times come from (content/title.md; v7, absent before:
    /// the real one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<super::title::ClockKind>,
    /// A `decide` campaign's track record: the track, the workload kind and each
    /// entry's weights identity (content/s1-pro-speed.md; v8, absent for completions
    /// campaigns and before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decide: Option<super::DecideRound>,
    /// The s1-fast-speed track's gates and costs (content/s1-fast-speed.md; v8, absent
    /// in rounds of other tracks and before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast_track: Option<super::fast::FastTrackRecord>,
    /// The pod the round's entries ran on, when the campaign rents one
    /// (content/pods.md; v9, absent for a round on the evaluator's own machine and
    /// before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<super::pod::PodRun>,
    /// A parallel round's layout: its GPUs, lanes and CPU pinning (content/noise.md, Parallel passes;
    /// v9, absent in rounds of campaigns without `[parallel]` and before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel: Option<super::ParallelRecord>,
}

/// A round's place in the transparency log ([`RoundRecord::transparency_log`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "status",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum RoundLog {
    /// The data directory had no log (`log/config.toml`): the round was not logged.
    NotLogged,
    /// The round-opened statement was appended, and its checkpoint published, before any
    /// entry ran; the receipt is appended at seal (its index is known only after).
    Logged {
        /// The log's origin line (also its key's name in the keyring, role `log`).
        origin: String,
        /// Index (0-based) of the round-opened entry in the log.
        round_opened_index: u64,
        /// The witness cosignature on a checkpoint holding the round-opened entry, taken
        /// before the first entry ran (`referee round --require-witness`); `None`: the
        /// round opening was not witnessed.
        opening_witness: Option<OpeningWitness>,
    },
}

/// A witness's cosignature on the round's opening checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpeningWitness {
    /// The witness's name (its key's origin in the keyring, role `witness`).
    pub name: String,
    /// The size of the checkpoint it cosigned, entries (more than `roundOpenedIndex`).
    pub checkpoint_size: u64,
    /// The cosignature's timestamp, seconds since the Unix epoch, by the witness's clock.
    pub timestamp_s: u64,
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
    /// Picks the completed requests of each timed run whose outputs the reference checks
    /// (content/correctness.md, The timed run is checked too); v3, absent before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_seed: Option<SeedReveal>,
    /// Draws the order of the entries' runs in every pass (content/rounds.md, Passes;
    /// [`crate::rules::passes::pass_order`]); v3, absent before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_seed: Option<SeedReveal>,
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
    /// sha256(sampleSeed ‖ salt); round-opened v2, absent in v1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_seed: Option<Sha256Hex>,
    /// sha256(passSeed ‖ salt); round-opened v2, absent in v1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_seed: Option<Sha256Hex>,
}

impl RevealedSeeds {
    /// The commitments of these seeds.
    pub fn commitments(&self) -> SeedCommitments {
        SeedCommitments {
            item_seed: self.item_seed.commitment,
            order_seed: self.order_seed.commitment,
            schedule_seed: self.schedule_seed.commitment,
            correctness_seed: self.correctness_seed.commitment,
            prompt_salt: self.prompt_salt.commitment,
            sample_seed: self.sample_seed.as_ref().map(|s| s.commitment),
            pass_seed: self.pass_seed.as_ref().map(|s| s.commitment),
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
    /// Seed commitments; v4 omits them in a round with a beacon (its seeds derive from
    /// the secret and a beacon value that does not exist yet when the round opens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed_commitments: Option<SeedCommitments>,
    /// sha256 of the evaluator's secret the seeds derive from
    /// (`crate::rules::seeds::secret_commitment`); v3, absent without a beacon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluator_secret_sha256: Option<Sha256Hex>,
    /// The beacon round the seeds derive from; v3, absent without a beacon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beacon: Option<BeaconPromise>,
    /// The evaluator gave the seeds: a practice round (v3; `false` absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub practice: bool,
    /// When the round opened.
    pub opened_at: Timestamp,
}

/// `skip_serializing_if` for a flag written only when set.
fn is_false(flag: &bool) -> bool {
    !*flag
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

/// The load client's self-test (content/measurement.md, Open loop): the client drove a
/// null server on loopback at the campaign's maximum rate with the campaign's request
/// shape, each response held for the SLA bound. The round opened only because the
/// send-lag p99 was within `sendLagBoundUs` and no request failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientSelfTest {
    /// The rate asked for (the campaign's maximum), milli-requests/s.
    pub rate_milli_rps: u64,
    /// The rate the client actually sent at, milli-requests/s.
    pub achieved_milli_rps: u64,
    /// Send-lag p50, µs (nearest rank).
    pub send_lag_p50_us: u64,
    /// Send-lag p99, µs (nearest rank).
    pub send_lag_p99_us: u64,
    /// The campaign's effective send-lag bound the p99 was held to, µs.
    pub send_lag_bound_us: u64,
    /// Measured requests (warm-up excluded).
    pub requests: u32,
    /// Measured requests that failed (the null server never fails one).
    pub failed: u32,
    /// Most requests in flight at once.
    pub in_flight_max: u32,
    /// TCP connections the null server accepted, warm-up included.
    pub connections: u64,
    /// How the client's threads were scheduled, as the kernel reported it (absent in
    /// rounds sealed before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<ClientScheduling>,
}

/// How the load client's threads were scheduled during the self-test
/// (content/measurement.md, How the client's threads are scheduled): read back from the
/// kernel, not what was asked. Every probe of the round runs on the same client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientScheduling {
    /// The policy of the client runtime's threads.
    pub policy: ClientPolicy,
    /// Their real-time priority (1–99) under `fifo`; 0 under `normal`.
    pub priority: u8,
    /// CPUs a `SCHED_IDLE` spinner kept awake for the length of the self-test (0: none,
    /// or the client was run with the CPUs left to idle).
    pub awake_cpus: u32,
}

/// A scheduling policy of the load client's threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClientPolicy {
    /// `SCHED_FIFO`: the process could run real-time (root or `CAP_SYS_NICE`).
    Fifo,
    /// The normal policy (`SCHED_OTHER`): it could not, or was not asked to.
    Normal,
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

/// Why an entry was disqualified: a closed set a miner can look up. The reasons v3
/// added carry their evidence (serialized as `{"prompt_echo_mismatch": {...}}`; the
/// others stay plain strings).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum DisqualificationReason {
    /// The engine exited, or never answered `/health`, before the health deadline.
    EngineDiedBeforeHealthy,
    /// The engine died while being measured.
    EngineCrashed,
    /// The kernel killed the engine for passing its memory limit, before it was healthy
    /// or while it was measured: the Docker backend reads it from the container's
    /// inspected state (`State.OOMKilled`, `State.ExitCode`; content/docker.md).
    EngineOomKilled {
        /// The limit it passed (the container's, the campaign's
        /// `hardware.memory_limit_mb`), MiB.
        limit_mb: u64,
        /// The container's exit code (137: SIGKILL).
        exit_code: i64,
    },
    /// No rate met the SLA, or the entry's deadline expired (content/measurement.md).
    SlaUnmet,
    /// The logit distance exceeded a bound (content/correctness.md, Correctness).
    CorrectnessFailed,
    /// Outputs broke the request contract (wrong length, not greedy-stable, cached).
    ComplianceFailed,
    /// The prompt token ids the entry echoed for a correctness item differ from the
    /// reference runtime's own tokenization of the prompt text (content/correctness.md).
    PromptEchoMismatch {
        /// The correctness item.
        item: u32,
        /// First differing position, tokens from 0.
        position: u32,
        /// The reference's id there; `None` when the reference's prompt ends before it.
        expected: Option<u32>,
        /// The entry's id there; `None` when the entry's echo ends before it.
        got: Option<u32>,
    },
    /// A sampled request of a timed run: its generated tokens, teacher-forced through
    /// the reference, have a mean top-1 gap above the bound (content/correctness.md).
    LoadOutputsDiverge {
        /// The run, from 0.
        run: u32,
        /// The sampled request's workload item (`itemIndex`).
        item: u32,
        /// Its mean gap, micro-nats.
        gap_micro_nats: u64,
        /// The campaign's bound, micro-nats.
        bound_micro_nats: u64,
    },
    /// The reference runtime refused to teacher-force the token ids the entry generated
    /// (an id outside its vocabulary, say: it answered a client error), on a sampled
    /// request of a timed run (`run`) or a correctness item (`run` absent): ids no model
    /// of the campaign's can have produced are the entry's fault, never the round's
    /// (content/correctness.md).
    InvalidTokenId {
        /// The timed run, from 0; `None` for a correctness item.
        run: Option<u32>,
        /// The workload item (`itemIndex`) or the correctness item.
        item: u32,
        /// The reference's HTTP status.
        status: u16,
    },
    /// The entry's correctness outputs did not all arrive within their deadline.
    CorrectnessDeadline {
        /// The deadline, seconds.
        deadline_s: u64,
    },
    /// The incumbent, re-measured alone because its runs had made `infra_failed_rounds`
    /// rounds in a row `infra_failed`, failed for infrastructure reasons again
    /// (content/leader-rule.md, Infra-failed incumbent).
    RemeasureInfraFailed {
        /// The rounds in a row its runs had made `infra_failed` before this one.
        infra_failed_rounds: u32,
    },
    /// Files the entry's run wrote held the evaluator's or the log's private key
    /// material: each was withheld before sealing (`rules::redaction`), and the evaluator
    /// was told to rotate the key (v5; content/threat-model.md).
    SecretInOutput {
        /// How many of the files its pass rows and correctness summary cite were withheld.
        files: u32,
    },
    /// A thread of the entry's engine was allowed on a CPU outside the engine's set
    /// (`isolation.engineCpus`) while its run was measured or after it: an engine that
    /// moves onto the load generator's CPU makes its own client lag (v6; content/
    /// measurement.md, Isolation). Its run's row is `crashed`.
    LeftCpuSet {
        /// The pass of that run, from 0.
        pass: u32,
        /// The lowest CPU outside the engine's set the thread was allowed on.
        cpu: u32,
    },
    /// The entry's run in `pass` was invalid again after its re-run while both baseline
    /// runs of that pass were valid: the host held for them, so the fault is the entry's,
    /// and no engine can veto a round (v6; content/noise.md, Failures in a pass).
    RunInvalidTwice {
        /// The pass, from 0.
        pass: u32,
    },
    /// The mean gap of a timed run's sampled requests is above the campaign's load group
    /// bound (from v7; content/correctness.md, The bounds of the sample): a model
    /// degraded a little on every request.
    LoadGroupDiverges {
        /// The run, from 0.
        run: u32,
        /// The mean of its sampled requests' gaps, micro-nats.
        mean_micro_nats: u64,
        /// The campaign's bound, micro-nats.
        bound_micro_nats: u64,
    },
    /// More generated positions of a timed run's sampled requests than the campaign
    /// allows have a gap above its position bound (from v7; content/correctness.md, The
    /// bounds of the sample): tokens no honest model ranks near the top, such as filler.
    LoadPositionsOver {
        /// The run, from 0.
        run: u32,
        /// Positions above the position bound.
        positions: u32,
        /// The most the campaign allows.
        max_positions: u32,
    },
    /// A sampled request of a timed run streamed text that is not its own token ids as
    /// the reference detokenizes them (v7; content/correctness.md, Streamed text against
    /// the ids): a client shown `z` everywhere was scored on plausible ids.
    TextNotIds {
        /// The run, from 0.
        run: u32,
        /// The sampled request's workload item (`itemIndex`).
        item: u32,
    },
    /// A counted run's probes held requests whose stream ended normally with fewer
    /// (`short`) or more (`long`) output tokens than asked (v7; content/correctness.md,
    /// Compliance tests): every request asks for an exact length (`min_tokens` =
    /// `max_tokens`, and `ignore_eos` where the profile takes it), so an early end of
    /// sequence is the engine's (MLPerf TEST06/TEST09).
    OutputLength {
        /// The pass of that run, from 0.
        pass: u32,
        /// Its requests that ended short, over all its probes.
        short: u64,
        /// Its requests that streamed more tokens than asked.
        long: u64,
    },
    /// A counted run's caching probe decoded repeated prompts faster than fresh ones by
    /// more than the campaign's bound (v9; content/correctness.md, Caching; MLPerf
    /// TEST04): an answer cache, which a round whose prompts never repeat would not show.
    Caching {
        /// The pass of that run, from 0.
        pass: u32,
        /// How much faster the repeats decoded, basis points.
        speedup_bp: u64,
        /// The campaign's bound, basis points.
        bound_bp: u32,
    },
    /// An s1-fast-speed challenger's capability score on the sealed items is below the
    /// incumbent's in the same round (v9; content/s1-fast-speed.md, The gates): it
    /// cannot be seated, on throughput or on cost.
    CapabilityBelowIncumbent {
        /// Its score, ppm (`fastTrack.entries[].capabilityPpm`).
        capability_ppm: u32,
        /// The incumbent's score, ppm.
        incumbent_ppm: u32,
    },
    /// An s1-fast-speed challenger's agreement with s1-pro is below the incumbent's in
    /// the same round (v9; content/s1-fast-speed.md, The gates).
    AgreementBelowIncumbent {
        /// Its agreement, ppm (`fastTrack.entries[].agreementPpm`).
        agreement_ppm: u32,
        /// The incumbent's agreement, ppm.
        incumbent_ppm: u32,
    },
}

impl DisqualificationReason {
    /// The snake_case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            DisqualificationReason::EngineDiedBeforeHealthy => "engine_died_before_healthy",
            DisqualificationReason::EngineCrashed => "engine_crashed",
            DisqualificationReason::EngineOomKilled { .. } => "engine_oom_killed",
            DisqualificationReason::SlaUnmet => "sla_unmet",
            DisqualificationReason::CorrectnessFailed => "correctness_failed",
            DisqualificationReason::ComplianceFailed => "compliance_failed",
            DisqualificationReason::PromptEchoMismatch { .. } => "prompt_echo_mismatch",
            DisqualificationReason::LoadOutputsDiverge { .. } => "load_outputs_diverge",
            DisqualificationReason::InvalidTokenId { .. } => "invalid_token_id",
            DisqualificationReason::CorrectnessDeadline { .. } => "correctness_deadline",
            DisqualificationReason::RemeasureInfraFailed { .. } => "remeasure_infra_failed",
            DisqualificationReason::SecretInOutput { .. } => "secret_in_output",
            DisqualificationReason::LeftCpuSet { .. } => "left_cpu_set",
            DisqualificationReason::RunInvalidTwice { .. } => "run_invalid_twice",
            DisqualificationReason::LoadGroupDiverges { .. } => "load_group_diverges",
            DisqualificationReason::LoadPositionsOver { .. } => "load_positions_over",
            DisqualificationReason::TextNotIds { .. } => "text_not_ids",
            DisqualificationReason::OutputLength { .. } => "output_length",
            DisqualificationReason::Caching { .. } => "caching",
            DisqualificationReason::CapabilityBelowIncumbent { .. } => "capability_below_incumbent",
            DisqualificationReason::AgreementBelowIncumbent { .. } => "agreement_below_incumbent",
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
    /// How the engine process was confined and pinned (v3; absent before and for an
    /// entry that never started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<EngineIsolation>,
    /// The engine API profile it was talked to with (v3, optional: absent in older
    /// bundles and for the built-in engine without `[backend.api]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<EngineApi>,
    /// Memory the engine was allowed, MiB (`hardware.memory_limit_mb`, passed as
    /// `{memory_mb}`; v3, optional: absent in older bundles).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_mb: Option<u64>,
    /// The container a Docker entry ran in, as the daemon reported it back (v3, optional:
    /// absent in older bundles and for other backends; content/docker.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docker: Option<DockerRun>,
}

/// Whether `digest` is an OCI sha256 digest: `sha256:` and 64 lowercase hex digits (an
/// image config id, a registry manifest digest).
pub fn is_sha256_digest(digest: &str) -> bool {
    digest
        .strip_prefix("sha256:")
        .is_some_and(|hex| hex.parse::<Sha256Hex>().is_ok())
}

/// One Docker entry's image and container, read back from the daemon's `inspect` after
/// the container started (not from what the runner asked for; content/docker.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DockerRun {
    /// The image reference the campaign (or the entry's build) named, e.g. `engine:v1`.
    pub image_reference: String,
    /// `sha256:<64 hex>`: the registry manifest digest, when the image came from a
    /// registry (its `RepoDigests`); absent for an image built or imported locally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_digest: Option<String>,
    /// `sha256:<64 hex>`: the image config id the container ran.
    pub image_id: String,
    /// The daemon's version, e.g. `20.10.24+dfsg1`.
    pub daemon_version: String,
    /// The API version negotiated with the daemon, `major.minor`.
    pub api_version: String,
    /// The container's memory limit, bytes (`HostConfig.Memory`).
    pub memory_bytes: u64,
    /// The CPUs it may run on (`HostConfig.CpusetCpus`, kernel list syntax); empty when
    /// unpinned.
    pub cpuset_cpus: String,
    /// GPUs requested (`HostConfig.DeviceRequests` device ids); empty: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<String>,
    /// The root filesystem is read-only (`HostConfig.ReadonlyRootfs`).
    pub read_only_root: bool,
    /// An init process reaps the engine's children (`HostConfig.Init`).
    pub init: bool,
    /// The container is not privileged (`HostConfig.Privileged` false).
    pub unprivileged: bool,
    /// The network it was attached to, and whether that network is internal (no
    /// outbound route).
    pub network: String,
    /// `Internal` of that network, as inspected.
    pub network_internal: bool,
    /// Writable mounts: the tmpfs paths and their options (`HostConfig.Tmpfs`).
    pub tmpfs: std::collections::BTreeMap<String, String>,
    /// Bind mounts, `source:target:mode`; every one read-only (`:ro`).
    pub binds: Vec<String>,
    /// Names of the environment variables the container has (the image's and the
    /// campaign's; values are not recorded).
    pub env_names: Vec<String>,
}

/// The engine API profile of an entry's engine, as its receipt records it
/// (content/engines.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EngineApi {
    /// The built-in profile it started from; absent for a profile written field by field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<super::ApiProfileName>,
    /// `false`: "untested against a real server" — the profile was never run against
    /// its real server by referee's CI.
    pub tested_against_real_server: bool,
    /// How output tokens were counted.
    pub token_count: super::measurement::TokenCount,
    /// Where token ids came from.
    pub token_ids: super::TokenIds,
}

/// How an engine process was confined (content/threat-model.md, The engine's sandbox).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SandboxKind {
    /// bubblewrap: own user, pid, network and mount namespaces; since v5 an allow-list
    /// (the system, the engine's executable, its tree and the declared read-only paths,
    /// a fresh `/tmp`), before it the filesystem read-only with the key and data
    /// directories hidden.
    Bwrap,
    /// util-linux `unshare`: the same namespaces, every mount remounted read-only, the key
    /// and data directories hidden (used when `bwrap` was missing; no longer made, read
    /// from older receipts).
    Unshare,
    /// None: the campaign declares `trusted_engines = true` and bubblewrap could not run.
    Trusted,
    /// A Docker container on an internal network, root read-only, a clean environment
    /// (the Docker backend; its flags as inspected are the entry's `engine.docker`).
    Docker,
    /// None: the built-in engine on a host without bubblewrap (its only miner-controlled
    /// input is its config file, range-checked at the build gate).
    Unsandboxed,
}

/// How an engine's CPU set was enforced (content/measurement.md, Isolation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CpuPinning {
    /// `sched_setaffinity(2)` before the engine's exec; the engine could reset it.
    SchedAffinity,
    /// Not pinned: the host has one usable core, shared by the engine and the client.
    None,
    /// The container's cgroup cpuset (`HostConfig.CpusetCpus`): the engine cannot leave it.
    Cpuset,
}

/// The isolation of one engine run (v3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EngineIsolation {
    /// Its sandbox.
    pub sandbox: SandboxKind,
    /// How its CPU set was enforced.
    pub pinning: CpuPinning,
    /// The CPUs (kernel numbering) the engine was pinned to.
    pub engine_cpus: Vec<u32>,
    /// The CPUs the load generator was pinned to; disjoint from `engineCpus` unless
    /// `pinning` is `none`.
    pub client_cpus: Vec<u32>,
    /// Compute threads the engine was told to use (at most `engineCpus`' count).
    pub engine_threads: u32,
    /// The host uid the engine ran as (v5): the engine uid (`referee round
    /// --engine-uid`, default 990000) when the runner was root or the engine a Docker
    /// container, else the runner's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
    /// Whether `uid` is the unprivileged engine uid (v5); `false`: the engine kept the
    /// runner's uid (the runner was not root, or the engine ran unsandboxed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_uid: Option<bool>,
    /// The campaign's declared read-only paths (`[backend] ro_paths`) the engine was
    /// shown (v5; content/threat-model.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ro_paths: Vec<String>,
}

/// What the host did to a run besides running it: CPU time stolen by the hypervisor and
/// the cores' clock (v3; content/measurement.md, Isolation).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostLoad {
    /// Steal time over the run, summed over the engine's and the client's CPUs, in ms
    /// (`/proc/stat` ticks converted with the kernel's USER_HZ).
    pub steal_ms: u64,
    /// The run's wall time the steal is compared with, in ms.
    pub wall_ms: u64,
    /// `scaling_cur_freq` of each pinned CPU at the run's end, in kHz; empty when the
    /// host does not expose cpufreq.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_freq_khz: Vec<CpuFrequency>,
}

/// One CPU's clock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CpuFrequency {
    /// The CPU (kernel numbering).
    pub cpu: u32,
    /// Its current frequency, in kHz.
    pub khz: u64,
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
    /// Steal time and CPU clock over the run (v3; absent before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_load: Option<HostLoad>,
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
    /// Bundle-relative path of the timed-run output sample ([`LoadSample`]); v3, absent
    /// before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_sample_file: Option<String>,
}

/// The per-item correctness artifact of one entry (`correctness/<entry>.json`): what the
/// verifier recomputes the distances and the verdict from (content/correctness.md
/// §Correctness). Integers only.
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
    /// Whose outputs the file judged (from round/v6; absent in older files): the round,
    /// the entry, its patch and engine config, and the pass of the entry's run that took
    /// the greedy outputs (never a control). The verifier holds it to the entry citing
    /// the file (`correctness.entry`), so one entry's file cannot be credited to another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_for: Option<MeasuredFor>,
}

/// One correctness item of one entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CorrectnessItem {
    /// Item index within the correctness set, from 0.
    pub index: u32,
    /// sha256 of the prompt text's UTF-8 bytes (the workload item's), shared by every entry.
    pub prompt_sha256: Sha256Hex,
    /// Prompt length, tokens.
    pub prompt_tokens: u32,
    /// The entry's greedy output, token ids.
    pub output_token_ids: Vec<u32>,
    /// Distance at each generated position, micro-nats.
    pub position_micro_nats: Vec<u64>,
    /// The item's distance: the rounded-half-up mean of `positionMicroNats`.
    pub distance_micro_nats: u64,
    /// The entry's top-k at each generated position, as `[token id, logprob in
    /// micro-nats]` pairs quantized as read and cut to the file's `topK`
    /// (`receipts::rules::correctness::top_k`): what `positionMicroNats` is computed
    /// from. Absent in files written before they were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_top_k: Option<Vec<Vec<(u32, i64)>>>,
    /// The reference's teacher-forced top-k at each position, in the same form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_top_k: Option<Vec<Vec<(u32, i64)>>>,
}

/// The timed-run output sample of one entry (`correctness/<entry>-load-sample.json`,
/// content/correctness.md): per run, requests of its result probe drawn with
/// `sampleSeed`, their generated token ids teacher-forced through the reference. What
/// the verifier recomputes the selection, the gaps and the verdict from. Integers only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadSample {
    /// The entry's index in the round (part of each run's sampling identity).
    pub entry: u32,
    /// Completed requests sampled per run (the campaign's `correctness.load_sample`).
    pub sample_size: u32,
    /// Bound on every sampled request's mean gap, micro-nats.
    pub bound_micro_nats: u64,
    /// Every run, in order.
    pub runs: Vec<LoadSampleRun>,
    /// Whether each sampled request's streamed text was held against its ids as the
    /// reference detokenizes them (v7; absent before): `checked` where the campaign's API
    /// profile has a detokenizer (every checked request then records both texts),
    /// `not_applicable` with the reason where it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_against_ids: Option<TextAgainstIds>,
    /// Whose timed runs the file sampled (from round/v6; absent in older files): as a
    /// per-item file's [`CorrectnessItems::measured_for`] (its `pass` the entry's run
    /// that took the greedy outputs; `runs[].run` name the passes sampled), held to the
    /// entry citing the file (`correctness.entry`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_for: Option<MeasuredFor>,
    /// Bound on a run's mean request gap, micro-nats (from round/v7, with the two fields
    /// below; `boundMicroNats` is then the item bound): the campaign's
    /// `load_group_bound_micro_nats` (content/correctness.md, The bounds of the sample).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_bound_micro_nats: Option<u64>,
    /// The gap above which a generated position counts, micro-nats (from round/v7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position_bound_micro_nats: Option<u64>,
    /// The most positions of a run's sample above `positionBoundMicroNats` (from
    /// round/v7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_positions_over: Option<u32>,
}

/// One run of a [`LoadSample`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadSampleRun {
    /// The run, from 0.
    pub run: u32,
    /// The probe whose throughput is the run's result, from 0.
    pub probe: u32,
    /// Workload items (`itemIndex`) of that probe's measured requests whose token ids
    /// the client kept and that completed, ascending: what the sample is drawn from.
    pub completed: Vec<u32>,
    /// The check of the drawn requests, or why it could not run.
    pub check: LoadSampleCheck,
}

/// The check of one run's sample. Deserialized through [`LoadSampleCheckFields`] (same
/// JSON, same errors for a missing `kind` or field) rather than serde's internally tagged
/// derive, which copies the whole object (thousands of token ids per sample) into an
/// intermediate tree before reading it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum LoadSampleCheck {
    /// The drawn requests, in the order drawn, each teacher-forced through the reference.
    Checked {
        /// The requests.
        requests: Vec<LoadSampleRequest>,
    },
    /// The check did not run: counts neither as passed nor as failed.
    NotApplicable {
        /// Why (e.g. the engine's API returned no token ids).
        reason: String,
    },
}

/// The fields of a [`LoadSampleCheck`] object, read in one pass, each request as `R`: a
/// [`LoadSampleRequest`] for [`LoadSampleCheck`]'s own reading, less for a reader that
/// shows less (the site's entry page reads each request's gap only). `kind` says which of
/// the other two the object must hold; a field of the other variant is ignored, as
/// serde's derive ignores it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadSampleCheckFields<R> {
    /// Which check it is.
    pub kind: LoadSampleCheckKind,
    /// The drawn requests (`checked`).
    pub requests: Option<Vec<R>>,
    /// Why the check did not run (`not_applicable`).
    pub reason: Option<String>,
}

/// `kind` of a [`LoadSampleCheck`] object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadSampleCheckKind {
    /// [`LoadSampleCheck::Checked`]: `requests` follows.
    Checked,
    /// [`LoadSampleCheck::NotApplicable`]: `reason` follows.
    NotApplicable,
}

impl<'de> Deserialize<'de> for LoadSampleCheck {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let fields = LoadSampleCheckFields::<LoadSampleRequest>::deserialize(deserializer)?;
        match fields.kind {
            LoadSampleCheckKind::Checked => Ok(Self::Checked {
                requests: fields
                    .requests
                    .ok_or_else(|| D::Error::missing_field("requests"))?,
            }),
            LoadSampleCheckKind::NotApplicable => Ok(Self::NotApplicable {
                reason: fields
                    .reason
                    .ok_or_else(|| D::Error::missing_field("reason"))?,
            }),
        }
    }
}

/// One sampled request of a timed run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadSampleRequest {
    /// The workload item it sent (`itemIndex`).
    pub item_index: u32,
    /// sha256 of the item's prompt text.
    pub prompt_sha256: Sha256Hex,
    /// The generated token ids the load client observed.
    pub output_token_ids: Vec<u32>,
    /// The reference's top-1 logprob at each generated position, micro-nats.
    pub reference_top1_micro_nats: Vec<i64>,
    /// The reference's logprob of the entry's token at each position, micro-nats.
    pub reference_token_micro_nats: Vec<i64>,
    /// The rounded-half-up mean of (top-1 − token) over positions, micro-nats.
    pub gap_micro_nats: u64,
    /// The text the load client saw streamed with these ids, concatenated (v7, where
    /// [`LoadSample::text_against_ids`] is `checked`; engine-controlled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streamed_text: Option<String>,
    /// The reference's detokenization of `outputTokenIds` (its API profile's
    /// detokenizer; v7, where [`LoadSample::text_against_ids`] is `checked`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_text: Option<String>,
}

/// Whether a [`LoadSample`]'s streamed texts were held against their ids (v7).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TextAgainstIds {
    /// Every checked request records its streamed text and the reference's text of its
    /// ids; the first that differ disqualifies the entry (`text_not_ids`).
    Checked,
    /// Not checked: counts neither as passed nor as failed.
    NotApplicable {
        /// Why (the API profile has no detokenizer).
        reason: String,
    },
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
    /// Speedup against the baseline: (T / T_baseline − 1) in parts per million,
    /// floor-rounded; 0 for the baseline. From v3 the median of the entry's paired
    /// ratios ([`Entry::paired_score`]); before, against the round's first baseline run.
    pub score_ppm: Option<i64>,
    /// The entry's runs, one row per attempt in pass order (the baseline's A/A control
    /// runs are marked `control`); v3, empty before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passes: Vec<EntryPass>,
    /// The paired score over the counted passes, when scored; v3, absent before and for
    /// the baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired_score: Option<PairedScore>,
    /// When its first step started.
    pub started_at: Timestamp,
    /// When its last step ended.
    pub ended_at: Timestamp,
    /// Bundle-relative path of the engine's log.
    pub engine_log: Option<String>,
    /// The review that let a repository submission run (content/review.md, In the
    /// round); v8, absent for the baseline, a diff and before v8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<super::review::EntryReview>,
}

/// One slot of a pass's order: a run of entry `entry`; `control` marks the baseline's
/// second run of the pass, the A/A control (content/rounds.md, Passes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PassSlot {
    /// The entry's index in the round (0 = the baseline).
    pub entry: u32,
    /// Whether this is the baseline's A/A control run.
    pub control: bool,
}

/// One pass of a round: every seated entry run once (the baseline twice), in `order`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Pass {
    /// The pass, from 0.
    pub index: u32,
    /// The runs in the order they ran: drawn with `passSeed` for interleaved passes,
    /// entry order for sequential ones.
    pub order: Vec<PassSlot>,
    /// Whether the baseline's run of this pass failed: then no entry's run of it counts.
    pub void: bool,
    /// A parallel round's placement of each run of `order`, aligned with it, drawn from
    /// `passSeed` (`receipts::rules::placement`; v9, empty for serial rounds).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement: Vec<super::RunPlacement>,
}

/// How one run of an entry ended (content/rounds.md, Passes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PassStatus {
    /// The rate search found a throughput meeting the SLA.
    Measured,
    /// No rate met the SLA, or the entry's deadline expired.
    SlaUnmet,
    /// The engine died before it was healthy or while it was measured.
    Crashed,
    /// The run does not count (the client lagged, or the CPUs were stolen from) and was
    /// run again once.
    Invalid,
    /// The runner could not run it (the tree, the backend, a log that could not be kept).
    InfraFailed,
    /// It never ran (the round stopped before it).
    NotRun,
}

/// One entry's run in one pass: one row per attempt, a re-run after the invalid attempt
/// it replaces.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EntryPass {
    /// The pass, from 0.
    pub pass: u32,
    /// Whether this is the baseline's A/A control run.
    pub control: bool,
    /// How the run ended.
    pub status: PassStatus,
    /// Its throughput when measured, milli-requests/s.
    pub throughput_milli_rps: Option<u64>,
    /// Its paired ratio: its throughput over the same pass's baseline run,
    /// `floor(T · 10⁶ / T_baseline)` ppm, when both were measured; none for the
    /// baseline's own run (its control's is the A/A ratio).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired_ratio_ppm: Option<u64>,
    /// Bundle-relative path of its probe log, when written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_log: Option<String>,
    /// Bundle-relative path of its engine's log, when kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_log: Option<String>,
    /// Steal time and CPU clock over its SLA run, when sampled: a steal over the
    /// campaign's `max_steal_permille` makes the attempt `invalid` whatever its probe log
    /// measured (content/measurement.md, Isolation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_load: Option<HostLoad>,
    /// The GPUs of its lane in a parallel round (`parallel.devices` of its placement;
    /// v9, empty for serial rounds).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<super::GpuDevice>,
    /// Its run's telemetry (v9): the sampled file and its summary; a violation makes
    /// the attempt `invalid` (content/measurement.md, Telemetry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<super::RunTelemetry>,
}

/// An entry's paired score: per valid pass, its throughput over the baseline's in the
/// same pass, as a score in parts per million (content/measurement.md, Paired
/// comparison, passes and noise).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairedScore {
    /// The median paired score (the lower middle for an even count), ppm.
    pub median_ppm: i64,
    /// The lowest paired score, ppm.
    pub min_ppm: i64,
    /// The highest paired score, ppm.
    pub max_ppm: i64,
    /// Passes paired.
    pub passes: u32,
    /// The distribution-free coverage of [min, max] for the median, 1 − 2^(1−R) with R
    /// paired passes, ppm rounded down (0 for one pass).
    pub coverage_ppm: u64,
}

/// The round's measured noise (content/measurement.md, Paired comparison, passes and
/// noise): spreads are `⌈(max − min) · 10⁴ / median⌉` basis points across passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NoiseCheck {
    /// The spread of the baseline's first runs' throughputs, basis points; `None` when
    /// fewer than two passes are valid.
    pub baseline_spread_bp: Option<u64>,
    /// The spread of the A/A control's paired ratios, basis points; `None` as above.
    pub aa_spread_bp: Option<u64>,
    /// The campaign's drift bound the baseline spread is held to, basis points.
    pub drift_bound_bp: u32,
    /// The overtake margin the A/A spread is held to, basis points.
    pub margin_bp: u32,
    /// What the spreads mean for the round.
    pub verdict: NoiseVerdict,
}

/// What a round's noise means for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NoiseVerdict {
    /// Both spreads are within their bounds: the round can separate contestants.
    Quiet,
    /// The baseline spread more than the drift bound: the round is `infra_failed`.
    BaselineDrift,
    /// The A/A control spread more than the margin: the round is `inconclusive`.
    Inconclusive,
    /// Fewer than two valid passes: no spread could be measured.
    Unmeasured,
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
    /// The baseline failed or drifted, the incumbent failed for infrastructure reasons,
    /// or the hardware changed: sealed for the record, no leader change, and charged to
    /// no challenger's one requeue.
    InfraFailed,
    /// The A/A control spread more than the overtake margin (content/rounds.md, Passes):
    /// the round cannot separate contestants; no leader change, charged to no
    /// challenger's one requeue. v3.
    Inconclusive,
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
    /// Set when the incumbent was re-measured alone (only the baseline and the incumbent
    /// seated) because its runs had made the rounds before this one `infra_failed`
    /// (content/leader-rule.md); absent otherwise, and in receipts before v3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remeasure: Option<IncumbentRemeasure>,
}

/// Why a round re-measures its incumbent alone (content/leader-rule.md, Infra-failed
/// incumbent).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IncumbentRemeasure {
    /// The rounds in a row, just before this one, that the incumbent's own runs made
    /// `infra_failed`.
    pub infra_failed_rounds: u32,
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
    /// The baseline's echoed prompt token ids differ from the reference runtime's own
    /// tokenization (a server that strips BOS, say): no entry's echo can be judged.
    ReferencePromptMismatch {
        /// The correctness item.
        item: u32,
        /// First differing position, tokens from 0.
        position: u32,
        /// The reference's id there; `None` when its prompt ends before it.
        reference: Option<u32>,
        /// The baseline's id there; `None` when its echo ends before it.
        baseline: Option<u32>,
    },
    /// The reference runtime did not answer within the correctness deadline.
    ScorerDeadline {
        /// The deadline, seconds.
        deadline_s: u64,
    },
    /// The incumbent failed for infrastructure reasons (its entry's `infraFailure` says
    /// which): the seat cannot be defended or taken this round.
    IncumbentInfraFailed {
        /// Rounds in a row, this one included, that the incumbent's runs made
        /// `infra_failed`.
        consecutive: u32,
    },
    /// Fewer passes counted (the baseline's runs valid in them) than the round needs.
    TooFewPasses {
        /// Passes that counted.
        counted: u32,
        /// Passes needed.
        required: u32,
    },
    /// A run was still invalid after its one re-run (the client lagged, the CPUs were
    /// stolen from, the runner failed).
    RunInvalid {
        /// The entry's index.
        entry: u32,
        /// Whether it was the baseline's A/A control run.
        control: bool,
        /// The pass, from 0.
        pass: u32,
    },
    /// A baseline run got no token ids at all: every request of every probe of its run
    /// in pass `pass` failed `noTokenIds` (with `token_count = "ids"`). The engine's API
    /// cannot return token ids, so no throughput of the round can be counted; a campaign
    /// for such an API sets `token_count = "usage"` (self-reported counts).
    NoTokenIds {
        /// The pass, from 0.
        pass: u32,
        /// Whether it was the baseline's A/A control run.
        control: bool,
        /// Measured requests of that run, all failed `noTokenIds`.
        requests: u64,
    },
    /// The capability probe found the baseline engine lacking a feature the round needs
    /// under the campaign's API profile (its finding in `capabilityProbe`): no entry ran.
    CapabilityMissing {
        /// The first missing feature.
        feature: super::capability::CapabilityFeature,
        /// The `[backend.api]` field that would fix it.
        field: String,
    },
    /// The A/A control's paired ratios spread more than the overtake margin: the round
    /// is `inconclusive`.
    NoiseAboveMargin {
        /// The A/A spread, basis points.
        aa_spread_bp: u64,
        /// The campaign's overtake margin, basis points.
        margin_bp: u32,
    },
}

impl fmt::Display for RoundFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RoundFailure::BaselineFailed => f.write_str("the baseline failed"),
            RoundFailure::TooFewPasses { counted, required } => write!(
                f,
                "{counted} pass{} counted (the baseline's runs measured in them), fewer than \
                 the {required} a round needs",
                if *counted == 1 { "" } else { "es" }
            ),
            RoundFailure::RunInvalid {
                entry,
                control,
                pass,
            } => write!(
                f,
                "the run of entry {entry}{} in pass {} was invalid twice (the client, the \
                 host or the runner, not the engine)",
                if *control { " (the A/A control)" } else { "" },
                pass + 1
            ),
            RoundFailure::NoTokenIds {
                pass,
                control,
                requests,
            } => write!(
                f,
                "the baseline's engine{} returned no token ids on any of the {requests} \
                 requests of pass {}: tokens cannot be counted (a campaign for an API \
                 without token ids sets token_count = \"usage\")",
                if *control { " (the A/A control)" } else { "" },
                pass + 1
            ),
            RoundFailure::CapabilityMissing { feature, field } => write!(
                f,
                "the baseline engine lacks what the round needs under the campaign's API \
                 profile (feature `{feature}`, capability probe): set `{field}` to what its \
                 server supports"
            ),
            RoundFailure::NoiseAboveMargin {
                aa_spread_bp,
                margin_bp,
            } => write!(
                f,
                "the baseline's A/A control spread {aa_spread_bp} bp across passes, more than \
                 the margin of {margin_bp} bp: the round cannot separate contestants"
            ),
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
            RoundFailure::ReferencePromptMismatch {
                item,
                position,
                reference,
                baseline,
            } => write!(
                f,
                "correctness item {item}: the baseline's echoed prompt differs from the \
                 reference's tokenization at position {position} (reference {}, baseline {})",
                token_or_end(*reference),
                token_or_end(*baseline)
            ),
            RoundFailure::ScorerDeadline { deadline_s } => write!(
                f,
                "the reference runtime did not answer within the correctness deadline of \
                 {deadline_s} s"
            ),
            RoundFailure::IncumbentInfraFailed { consecutive: 0 | 1 } => {
                f.write_str("the incumbent failed for infrastructure reasons")
            }
            RoundFailure::IncumbentInfraFailed { consecutive } => write!(
                f,
                "the incumbent failed for infrastructure reasons, {consecutive} rounds in a row"
            ),
        }
    }
}

/// A token id, or `end` where a sequence ended before the position.
fn token_or_end(token: Option<u32>) -> String {
    token.map_or_else(|| "end".to_owned(), |t| t.to_string())
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
    /// The round was `inconclusive`: no leader change.
    RoundInconclusive,
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
    /// The leader was disqualified and the best scored challenger was slower than the
    /// baseline (score below 0): the seat falls back to the baseline.
    IncumbentDisqualifiedSlowerThanBaseline {
        /// The best scored challenger.
        best: Leader,
    },
    /// No challenger met the throughput margin, and in a campaign scoring cost this one,
    /// through both gates, is at least the cost margin cheaper per decision at a
    /// throughput not below the incumbent's within the round's noise floor: it takes the
    /// seat (`fastTrack.costSeat`; v9, content/s1-fast-speed.md, The cost rule).
    CostMarginMet {
        /// The new leader.
        winner: Leader,
    },
}

impl fmt::Display for SeatRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = |l: &Leader| format!("{} ({})", l.patch.short(), l.miner);
        match self {
            SeatRule::RoundInfraFailed => f.write_str(
                "infra_failed: no leader change; challengers requeued without using their one \
                 requeue",
            ),
            SeatRule::RoundInconclusive => f.write_str(
                "inconclusive: no leader change; challengers requeued without using their one \
                 requeue",
            ),
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
            SeatRule::IncumbentDisqualifiedSlowerThanBaseline { best } => write!(
                f,
                "the incumbent was disqualified and the best challenger {} was slower than the \
                 baseline; the seat falls back to the baseline",
                name(best)
            ),
            SeatRule::CostMarginMet { winner } => write!(
                f,
                "{} was cheaper per decision than the incumbent by at least the cost margin, at \
                 a throughput not below its own",
                name(winner)
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
    /// The hypervisor stole more CPU time over the run than the campaign's
    /// `max_steal_permille` allows (content/measurement.md, Isolation): the host, not the
    /// engine, was measured.
    CpuSteal {
        /// Steal time over the run, summed over the pinned CPUs, ms.
        steal_ms: u64,
        /// The run's wall time, ms.
        wall_ms: u64,
    },
    /// The scorer could not score the entry.
    ScorerFailed {
        /// What failed.
        detail: String,
    },
    /// The scorer produced no verdict for the entry.
    NoVerdict,
    /// The entry's steps never ran.
    NotRun,
    /// The run's GPU telemetry made it invalid (v9; content/measurement.md, Telemetry):
    /// a hardware throttle, an XID or a slow SM clock; the GPU, not the engine, was
    /// measured.
    Telemetry {
        /// The first offending reading.
        violation: super::TelemetryViolation,
    },
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
            EntryInfraFailure::CpuSteal { steal_ms, wall_ms } => write!(
                f,
                "the hypervisor stole {steal_ms} ms of CPU time over the run's {wall_ms} ms, \
                 above the campaign's max_steal_permille: the host, not the engine, was \
                 measured"
            ),
            EntryInfraFailure::ScorerFailed { detail } => {
                write!(f, "the scorer could not score it: {detail}")
            }
            EntryInfraFailure::NoVerdict => f.write_str("the scorer produced no verdict"),
            EntryInfraFailure::NotRun => f.write_str("the entry did not run"),
            EntryInfraFailure::Telemetry { violation } => {
                write!(f, "{violation}: the GPU, not the engine, was measured")
            }
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
