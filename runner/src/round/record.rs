//! What the round journal holds: one record per finished group of steps (`Setup`,
//! `Baseline`, `Incumbent`, `Candidate i of n`, `Scorer`, `Drift baseline`, `Teardown`,
//! then `Sealed`). A group is the unit of resume: an engine lives only within its group,
//! so a round killed mid-group runs that group again from its start.
//!
//! These records stay in `.work/` (they hold the seeds before they are revealed and the
//! raw float logprobs); the bundle gets integer artifacts only.

use receipts::model::{
    CorrectnessSummary, Disqualification, EngineRef, EntryMeasurement, HardwareFingerprint, Leader,
    MinerId, PipelineState, ResourceDescriptor, RevealedSeeds, Role, Sha256Hex, Step, Timestamp,
};
use serde::{Deserialize, Serialize};

/// One journal line.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Record {
    /// The round opened: seeds committed and signed, entries seated.
    Setup(Box<SetupRecord>),
    /// One entry's engine run (baseline, incumbent, a candidate, or the drift baseline).
    Entry(Box<EntryRecord>),
    /// The scorer's verdicts.
    Scorer(ScorerRecord),
    /// The machine probed again.
    Teardown(TeardownRecord),
    /// The bundle is sealed in `.work/`; what is left is the rename and the submission
    /// records.
    Sealed(SealedRecord),
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
    /// The request-sequence digest of these seeds and the campaign.
    pub request_sequence_digest: Sha256Hex,
    /// The entries, in run order.
    pub entries: Vec<PlannedEntry>,
    /// The seat when the round opened.
    pub leader_before: Option<Leader>,
    /// sha256 of the previous round's Statement.
    pub previous_receipt: Option<Sha256Hex>,
    /// sha256 of `miners.json` when the round opened.
    pub miners_digest: Sha256Hex,
    /// The round's inputs (copies under `inputs/`).
    pub inputs: Vec<ResourceDescriptor>,
    /// keyid of the key that signed the round-opened statement: a resume must sign with
    /// the same key.
    pub signer_keyid: String,
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
    },
    /// Disqualified before or while running (died before healthy, crashed).
    Disqualified(Disqualification),
    /// It never ran because of infrastructure (the tree could not be prepared, the load
    /// generator failed).
    InfraFailed {
        /// Why.
        reason: String,
    },
}

/// An entry group's result.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryRecord {
    /// The entry index ([`PlannedEntry::index`]); the drift baseline repeats 0.
    pub index: u32,
    /// Whether this is the drift baseline.
    pub drift: bool,
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
    /// The result.
    pub result: EntryResult,
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
