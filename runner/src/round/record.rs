//! What the round journal holds: one record per finished group of steps — `Setup`, then
//! one per run of an entry in a pass (`(pass, slot)`, and its one re-run when the first
//! was invalid, content/rounds.md, Passes), `Scorer`, `Teardown`, then `Sealed`. A run is
//! the unit of resume: an engine lives only within its run, so a round killed mid-run
//! runs that run again from its start, after the last journaled one
//! (`passes::remaining`).
//!
//! These records stay in `.work/` (they hold the seeds before they are revealed and the
//! raw float logprobs); the bundle gets integer artifacts only.

use receipts::model::{
    BackendKind, ClientSelfTest, CorrectnessSummary, Disqualification, EngineRef, EntryMeasurement,
    HardwareFingerprint, HostLoad, Leader, MinerId, PipelineState, ResourceDescriptor,
    RevealedSeeds, Role, RoundFailure, Sha256Hex, Step, SubmissionImage, Timestamp,
};
use serde::{Deserialize, Serialize};

/// One journal line.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Record {
    /// The round opened: seeds committed and signed, entries seated.
    Setup(Box<SetupRecord>),
    /// One entry's engine run in one pass (the baseline's run or its A/A control, the
    /// incumbent's, a candidate's).
    Entry(Box<EntryRecord>),
    /// The scorer's verdicts.
    Scorer(ScorerRecord),
    /// The machine probed again.
    Teardown(TeardownRecord),
    /// The bundle's files that held private key material, found before sealing (each
    /// withheld, its entry disqualified `secret_in_output`).
    Withheld(WithheldRecord),
    /// The bundle is sealed in `.work/`; what is left is the rename and the submission
    /// records.
    Sealed(SealedRecord),
    /// A rented pod's setup steps, or its release step (content/pods.md, A round on a
    /// pod).
    Pod(Box<PodRecord>),
}

/// A pod's steps as the evaluator ran them: renting, shipping and the agent's setup
/// steps when it was rented, or its release.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodRecord {
    /// The backend that rented it.
    pub backend: receipts::model::PodBackend,
    /// The scheduler's id of the allocation.
    pub allocation: u64,
    /// The node(s) it runs on (empty in a release record).
    pub nodes: String,
    /// The GPUs the scheduler gave the agent (empty in a release record).
    pub gpus: String,
    /// sha256 of the binary shipped as the agent, which the agent reported running.
    pub agent_sha256: Sha256Hex,
    /// The steps.
    pub steps: Vec<Step>,
}

/// An entry seated in the round, in run order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedEntry {
    /// Position in the round, from 0 (the baseline).
    pub index: u32,
    /// Its role.
    pub role: Role,
    /// The miner; `None` for the baseline.
    pub miner: Option<MinerId>,
    /// The diff; `None` for the baseline.
    pub patch: Option<Sha256Hex>,
    /// The step group, as in content/rounds.md: `Baseline`,
    /// `Incumbent — miner-a e5595a3…88ea1`, `Candidate 2 of 5 — miner-b 0c1d2e3…4f5a6`.
    pub group: String,
    /// File-name form of the entry, one per entry and unique within the round:
    /// `baseline`, `incumbent-miner-a`, `candidate-2-miner-b` (bundle files and step logs).
    pub slug: String,
    /// The image `referee build` recorded on its submission (Docker campaigns), read when
    /// it was seated: the entry runs it by its id. `None` for the baseline and for the
    /// backends without images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<SubmissionImage>,
}

/// The setup group's result.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetupRecord {
    /// Round number.
    pub round: u64,
    /// When setup started.
    pub started_at: Timestamp,
    /// Its steps.
    pub steps: Vec<Step>,
    /// The machine at setup.
    pub hardware: HardwareFingerprint,
    /// The seeds (secret until the receipt reveals them).
    pub seeds: RevealedSeeds,
    /// The beacon value the seeds derive from (absent without a beacon, and in a journal
    /// an older runner wrote).
    #[serde(default)]
    pub beacon: Option<receipts::model::BeaconRecord>,
    /// The evaluator's secret the seeds derive from, present exactly with `beacon`.
    #[serde(default)]
    pub evaluator_secret: Option<receipts::model::Seed32>,
    /// The seeds were given (`--seeds`): a practice round.
    #[serde(default)]
    pub practice: bool,
    /// The request-sequence digest of these seeds and the campaign.
    pub request_sequence_digest: Sha256Hex,
    /// The entries, in run order.
    pub entries: Vec<PlannedEntry>,
    /// The seat when the round opened.
    pub leader_before: Option<Leader>,
    /// Rounds in a row, just before this one, that the incumbent's runs made
    /// `infra_failed` (from the previous round's outcome); at
    /// `receipts::rules::leader::REMEASURE_AFTER_ROUNDS` this round seats no challenger.
    #[serde(default)]
    pub incumbent_infra_failed_rounds: u32,
    /// sha256 of the previous round's Statement.
    pub previous_receipt: Option<Sha256Hex>,
    /// sha256 of `miners.json` when the round opened.
    pub miners_digest: Sha256Hex,
    /// The round's inputs (copies under `inputs/`).
    pub inputs: Vec<ResourceDescriptor>,
    /// keyid of the key that signed the round-opened statement: a resume must sign with
    /// the same key.
    pub signer_keyid: String,
    /// The load client's self-test, run before the round opened (absent in a journal an
    /// older runner wrote).
    #[serde(default)]
    pub client_self_test: Option<ClientSelfTest>,
    /// The capability probe of the baseline engine (absent for the built-in engine and
    /// in a journal an older runner wrote).
    #[serde(default)]
    pub capability_probe: Option<receipts::model::CapabilityProbe>,
    /// What the round is for (content/title.md); absent in a journal of an older build:
    /// a regular round. Written `roundKind`: `kind` is the journal line's own tag.
    #[serde(default, rename = "roundKind")]
    pub kind: Option<receipts::model::RoundKindRecord>,
    /// The workload items whose token ids the load client keeps, per entry
    /// ([`receipts::rules::sample::keep_pool`]), drawn at home from the sample seed: present
    /// only in the copy shipped to a pod, which holds neither the sample seed nor the
    /// evaluator's secret (content/pods.md, What the pod is shipped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_pools: Option<Vec<SamplePool>>,
}

/// One entry's sample pool in a pod's copy of the setup record
/// ([`SetupRecord::sample_pools`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SamplePool {
    /// The entry index ([`PlannedEntry::index`]).
    pub entry: u32,
    /// The workload item indices its load client keeps, ascending.
    pub items: Vec<u32>,
}

/// How an entry's engine run ended, before the scorer's verdict.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum EntryResult {
    /// The rate search ran (its outcome may still be `sla_unmet`).
    Measured {
        /// Every run with its probes.
        measurement: Box<EntryMeasurement>,
        /// `.work/`-relative file of the greedy correctness outputs, when taken.
        outputs: Option<String>,
        /// Why correctness outputs could not be taken (a compliance failure).
        outputs_error: Option<String>,
        /// The typed disqualification its correctness outputs earned (the deadline).
        #[serde(default)]
        outputs_disqualification: Option<Disqualification>,
    },
    /// Disqualified before or while running (died before healthy, crashed).
    Disqualified(Disqualification),
    /// It ran on infrastructure that did not hold (the tree could not be prepared, the
    /// load generator failed, a log could not be kept): the run is invalid and run again
    /// once.
    InfraFailed {
        /// Why.
        reason: String,
    },
}

impl EntryResult {
    /// Whether this run took the entry's correctness outputs, or tried to and the entry's
    /// answers failed (then they are not taken again).
    pub fn took_outputs(&self) -> bool {
        matches!(
            self,
            EntryResult::Measured { outputs, outputs_error, outputs_disqualification, .. }
                if outputs.is_some() || outputs_error.is_some() || outputs_disqualification.is_some()
        )
    }
}

/// One run of an entry in one pass.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryRecord {
    /// The entry index ([`PlannedEntry::index`]).
    pub index: u32,
    /// The pass, from 0.
    pub pass: u32,
    /// Whether this is the baseline's A/A control run of the pass.
    pub control: bool,
    /// Whether this is the re-run of an invalid first attempt.
    pub rerun: bool,
    /// Its steps.
    pub steps: Vec<Step>,
    /// When its first step started.
    pub started_at: Timestamp,
    /// When its last step ended.
    pub ended_at: Timestamp,
    /// How its engine was run.
    pub engine: EngineRef,
    /// Bundle-relative path of the engine log.
    pub engine_log: Option<String>,
    /// Bundle-relative path of the probe log.
    pub probe_log: Option<String>,
    /// What the host did over its SLA run (CPU steal, clocks); `None` when the run did not
    /// reach it or `/proc/stat` could not be read.
    #[serde(default)]
    pub host_load: Option<HostLoad>,
    /// Whether the steal of `host_load` exceeded the campaign's `max_steal_permille`:
    /// the run is invalid (re-run once) whatever it measured.
    #[serde(default)]
    pub steal_exceeded: bool,
    /// `.work/`-relative file of the requests of its result probe the load client kept
    /// for the timed-run sample ([`crate::correctness::KeptRun`]); `None` for the
    /// baseline, a run that kept none or did not reach its result probe.
    #[serde(default)]
    pub kept: Option<String>,
    /// An s1-pro-speed campaign's pinned weight files as found in its tree, hashed before
    /// its engine started (content/s1-pro-speed.md); `None` for other campaigns and a run
    /// that did not get as far.
    #[serde(default)]
    pub weights: Option<Vec<receipts::model::WeightFile>>,
    /// Its telemetry over the SLA run (v9): the bundle file and its summary, whose
    /// violation makes the run invalid (re-run once) whatever it measured; `None` when
    /// the run did not reach it or `/proc/stat` could not be read.
    #[serde(default)]
    pub telemetry: Option<receipts::model::RunTelemetry>,
    /// The result.
    pub result: EntryResult,
}

impl EntryRecord {
    /// What in the run's telemetry makes it invalid, when anything does.
    pub fn telemetry_violation(&self) -> Option<&receipts::model::TelemetryViolation> {
        self.telemetry.as_ref().and_then(|t| t.violation.as_ref())
    }

    /// The record of a run of entry `index` in pass `pass` (`control`: the baseline's A/A
    /// control; `rerun`: the re-run of an invalid first attempt) before anything of it
    /// ran: started and ended `at`, its engine on `backend` with nothing configured yet
    /// ([`unconfigured_engine`]), no steps, logs or host load, and `infra_failed` ("not
    /// run") until its result replaces that.
    pub(crate) fn not_run(
        index: u32,
        pass: u32,
        control: bool,
        rerun: bool,
        at: Timestamp,
        backend: BackendKind,
    ) -> Self {
        EntryRecord {
            index,
            pass,
            control,
            rerun,
            steps: Vec::new(),
            started_at: at,
            ended_at: at,
            engine: unconfigured_engine(backend),
            engine_log: None,
            probe_log: None,
            host_load: None,
            steal_exceeded: false,
            kept: None,
            weights: None,
            telemetry: None,
            result: EntryResult::InfraFailed {
                reason: "not run".into(),
            },
        }
    }
}

/// An engine on `backend` with nothing configured: the SHA-256 of an empty config, no
/// image, command or isolation (an entry that never got as far as its engine).
pub(crate) fn unconfigured_engine(backend: BackendKind) -> EngineRef {
    EngineRef {
        backend,
        config_sha256: Sha256Hex::digest(b""),
        image: None,
        command: None,
        isolation: None,
        api: None,
        memory_limit_mb: None,
        docker: None,
    }
}

/// The scorer's verdict on one entry.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryVerdict {
    /// The entry index.
    pub index: u32,
    /// The summary, when the distances were computed.
    pub summary: Option<CorrectnessSummary>,
    /// Why they could not be (a compliance failure of the entry's outputs).
    pub error: Option<String>,
    /// A typed disqualification from the scorer (an echoed prompt that is not the
    /// reference's, timed-run outputs that diverge); then `summary` is `None`.
    #[serde(default)]
    pub disqualification: Option<Disqualification>,
}

/// The scorer group's result.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScorerRecord {
    /// Its steps.
    pub steps: Vec<Step>,
    /// Verdicts of the entries that produced outputs.
    pub verdicts: Vec<EntryVerdict>,
    /// Why the reference runtime itself failed (then the round is `infra_failed`).
    pub failure: Option<String>,
    /// The typed round failure when it is more than `scorer_failed` (the baseline's
    /// prompt echo, the scorer's deadline).
    #[serde(default)]
    pub round_failure: Option<RoundFailure>,
}

/// The teardown group's result.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TeardownRecord {
    /// Its steps.
    pub steps: Vec<Step>,
    /// The machine at teardown.
    pub hardware: HardwareFingerprint,
}

/// A submission's move after the round.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubmissionUpdate {
    /// The submission.
    pub patch: Sha256Hex,
    /// `scored`, `disqualified` or `infra_failed`.
    pub to: PipelineState,
    /// The reason recorded on its event.
    pub reason: String,
    /// For `infra_failed`: whether its move back to `bench_queued` uses its one requeue.
    #[serde(default)]
    pub requeue: RequeueCharge,
}

/// Whether an `infra_failed` challenger's requeue uses its one requeue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequeueCharge {
    /// Its own infrastructure failure in a round that counts: requeued once.
    #[default]
    Charged,
    /// The round was `infra_failed` as a whole: requeued without using it.
    Uncharged,
}

/// The files found holding private key material before sealing (`secrets.rs`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WithheldRecord {
    /// Each file, in bundle order.
    pub files: Vec<WithheldFile>,
}

/// One bundle file withheld for holding private key material.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WithheldFile {
    /// Its bundle-relative path.
    pub path: String,
    /// Its size before it was withheld, bytes.
    pub bytes: u64,
    /// The entry whose run wrote it; `None` for the runner's own files.
    pub entry: Option<u32>,
}

/// The sealed bundle, waiting to be renamed into `rounds/<n>/`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SealedRecord {
    /// sha256 of the Statement.
    pub statement_digest: Sha256Hex,
    /// The submission moves to make once the bundle is in place.
    pub updates: Vec<SubmissionUpdate>,
}
