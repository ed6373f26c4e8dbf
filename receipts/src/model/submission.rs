//! A submission and the pipeline it walks (content/submitting.md, Pipeline), with
//! the transition table of content/submitting.md enforced: an illegal move is an error, never a
//! silent overwrite.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ModelError;
use super::ids::{CampaignId, MinerId, Sha256Hex, Timestamp};

/// The 15 pipeline states of content/submitting.md, in its order.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PipelineState {
    /// The on-chain commitment is seen and recorded.
    Committed,
    /// The worker claims the gates job.
    PickedUp,
    /// The patch bytes hash to the commitment.
    Fetched,
    /// Registered miner; every `index` blob id matches the pinned baseline.
    Verified,
    /// Path constraints hold (checked on the parse, before anything is written).
    SurfaceOk,
    /// The diff applies cleanly onto the baseline checkout.
    Applied,
    /// The build is running.
    Building,
    /// The engine image is pushed (only where a registry is used).
    ImagePushed,
    /// The candidate engine exists and is pinned by digest.
    Built,
    /// Waiting for a round.
    BenchQueued,
    /// Seated in a live round.
    RoundAssigned,
    /// The entry did not run, or its round did not count, because of infrastructure;
    /// one requeue for its own failure, none used when its round was `infra_failed`.
    InfraFailed,
    /// The round finished and the entry holds a speedup score.
    Scored,
    /// The entry ran and failed correctness or the SLA, or crashed at startup.
    Disqualified,
    /// The submission never ran (a gate or the build failed).
    Rejected,
}

impl PipelineState {
    /// All states in the order of content/submitting.md.
    pub const ALL: [PipelineState; 15] = [
        PipelineState::Committed,
        PipelineState::PickedUp,
        PipelineState::Fetched,
        PipelineState::Verified,
        PipelineState::SurfaceOk,
        PipelineState::Applied,
        PipelineState::Building,
        PipelineState::ImagePushed,
        PipelineState::Built,
        PipelineState::BenchQueued,
        PipelineState::RoundAssigned,
        PipelineState::InfraFailed,
        PipelineState::Scored,
        PipelineState::Disqualified,
        PipelineState::Rejected,
    ];

    /// The snake_case name used in records and on the site.
    pub fn as_str(&self) -> &'static str {
        match self {
            PipelineState::Committed => "committed",
            PipelineState::PickedUp => "picked_up",
            PipelineState::Fetched => "fetched",
            PipelineState::Verified => "verified",
            PipelineState::Applied => "applied",
            PipelineState::SurfaceOk => "surface_ok",
            PipelineState::Building => "building",
            PipelineState::ImagePushed => "image_pushed",
            PipelineState::Built => "built",
            PipelineState::BenchQueued => "bench_queued",
            PipelineState::RoundAssigned => "round_assigned",
            PipelineState::InfraFailed => "infra_failed",
            PipelineState::Scored => "scored",
            PipelineState::Disqualified => "disqualified",
            PipelineState::Rejected => "rejected",
        }
    }

    /// Whether `self → to` is a legal move (content/submitting.md): linear from `committed` to
    /// `bench_queued` (`image_pushed` only where a registry is used, so `building → built`
    /// is legal too); `rejected` from `picked_up` through `building`; `round_assigned →
    /// scored | disqualified | infra_failed`; `infra_failed → bench_queued` (the caller
    /// enforces "once" with [`Submission::requeues`]; after a round that was
    /// `infra_failed` as a whole, [`Submission::requeue_uncharged`] does not count it).
    pub fn can_move_to(self, to: PipelineState) -> bool {
        use PipelineState::*;
        matches!(
            (self, to),
            (Committed, PickedUp)
                | (PickedUp, Fetched)
                | (Fetched, Verified)
                | (Verified, SurfaceOk)
                | (SurfaceOk, Applied)
                | (Applied, Building)
                | (Building, ImagePushed)
                | (Building, Built)
                | (ImagePushed, Built)
                | (Built, BenchQueued)
                | (BenchQueued, RoundAssigned)
                | (RoundAssigned, Scored | Disqualified | InfraFailed)
                | (InfraFailed, BenchQueued)
                | (
                    PickedUp | Fetched | Verified | SurfaceOk | Applied | Building,
                    Rejected
                )
        )
    }
}

impl fmt::Display for PipelineState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The gate that produced a rejection (content/submitting.md), so a miner sees which step failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    /// sha256 of the bytes equals the published commitment.
    Fetched,
    /// Registered miner; blob ids match the pinned baseline.
    Verified,
    /// Path and content rules on libgit2's parse of the diff.
    SurfaceOk,
    /// libgit2 applies the diff onto a fresh worktree.
    Applied,
    /// The build (for the built-in engine: the patched config parses and is in range).
    Build,
    /// A repository submission's review (content/review.md): a `FAIL` verdict, a
    /// person's `FAIL` on a `NEEDS-HUMAN`, or a copy of an earlier commitment.
    Review,
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Gate::Fetched => "fetched",
            Gate::Verified => "verified",
            Gate::SurfaceOk => "surface_ok",
            Gate::Applied => "applied",
            Gate::Build => "build",
            Gate::Review => "review",
        })
    }
}

/// What an event records.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum EventKind {
    /// The submission moved to `to`.
    Transition {
        /// The new state.
        to: PipelineState,
        /// For `rejected`: the gate that failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gate: Option<Gate>,
        /// For round outcomes: the round number.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        round: Option<u64>,
    },
    /// A later commitment of the same bytes: recorded here, not as a new submission
    /// (content/submitting.md: later duplicates are skipped, including your own).
    Duplicate {
        /// Who committed the duplicate.
        miner: MinerId,
        /// The duplicate's commitment.
        commitment: Sha256Hex,
    },
    /// An earlier commitment of these bytes that was not valid (rejected at `fetched` or
    /// `verified`). It never held the slot: the first *valid* commitment of a patch hash
    /// wins (content/submitting.md), so this record replaced it and keeps its trace
    /// here.
    Superseded {
        /// Who made the mismatched commitment.
        miner: MinerId,
        /// The mismatched commitment.
        commitment: Sha256Hex,
        /// When it was committed.
        committed_at: Timestamp,
    },
}

/// One entry of a submission's event log. (No `deny_unknown_fields`: serde does not
/// support it together with the flattened, tagged `kind`.)
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// When it happened.
    pub at: Timestamp,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
    /// Why, in words a miner can act on (which gate, path and rule; which round entry).
    pub reason: String,
}

/// A submission record: `data/<campaign>/submissions/<sha256>.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Submission {
    /// sha256 of the exact diff bytes: the dedupe key.
    pub sha256: Sha256Hex,
    /// The campaign it was committed to.
    pub campaign: CampaignId,
    /// The miner whose commitment came first.
    pub miner: MinerId,
    /// The commitment the miner published (what `fetched` checks).
    pub commitment: Sha256Hex,
    /// Size of the diff, bytes.
    pub size_bytes: u64,
    /// The current state: always the `to` of the last transition event.
    pub state: PipelineState,
    /// Times it went `infra_failed → bench_queued` for its own infrastructure failure (at
    /// most 1); a requeue after a round that was `infra_failed` as a whole is not counted.
    #[serde(default)]
    pub requeues: u32,
    /// Every transition and duplicate, oldest first.
    pub events: Vec<Event>,
    /// The engine image `referee build` built from the patched tree (Docker campaigns
    /// only; content/docker.md, Building): what a round runs for this submission.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<SubmissionImage>,
    /// A repository submission's commitment, fetched tree, manifest and validation
    /// (content/repository-submissions.md); absent for a diff. Its `sha256` is then the
    /// sha256 of the commitment's bytes, `size_bytes` their length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<super::RepositoryRecord>,
}

/// The image a Docker build produced for a submission, recorded on its `built` move.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubmissionImage {
    /// The tag it was given: `referee/<campaign>:<submission sha256>`.
    pub tag: String,
    /// Its image config id, `sha256:<64 hex>`: the id a round runs it by.
    pub image_id: String,
    /// The registry manifest digest, `sha256:<64 hex>`, only when it was pushed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_digest: Option<String>,
    /// sha256 of the daemon's build output, as it streamed.
    pub build_log_sha256: Sha256Hex,
}

impl SubmissionImage {
    /// Whether `id` has the form of an image config id: `sha256:` and 64 lowercase hex
    /// digits.
    pub fn is_image_id(id: &str) -> bool {
        id.strip_prefix("sha256:").is_some_and(|hex| {
            hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        })
    }
}

impl Submission {
    /// A new record in state `committed`, with its first event.
    pub fn committed(
        sha256: Sha256Hex,
        campaign: CampaignId,
        miner: MinerId,
        commitment: Sha256Hex,
        size_bytes: u64,
        at: Timestamp,
    ) -> Self {
        Self {
            sha256,
            campaign,
            miner,
            commitment,
            size_bytes,
            state: PipelineState::Committed,
            requeues: 0,
            image: None,
            repository: None,
            events: vec![Event {
                at,
                kind: EventKind::Transition {
                    to: PipelineState::Committed,
                    gate: None,
                    round: None,
                },
                reason: "commitment recorded".into(),
            }],
        }
    }

    /// Whether this record's pipeline moves `from → to`: the transition table
    /// ([`PipelineState::can_move_to`]), and for a repository `surface_ok →
    /// bench_queued` — it is built and run by the review and round steps of later
    /// stages, so its gates end at `surface_ok` (the manifest holds).
    pub fn allows(&self, from: PipelineState, to: PipelineState) -> bool {
        from.can_move_to(to)
            || (self.repository.is_some()
                && (from, to) == (PipelineState::SurfaceOk, PipelineState::BenchQueued))
    }

    /// Moves to `to`, appending an event. Errors with [`ModelError::IllegalTransition`] for
    /// a move the table forbids, and for a second `infra_failed → bench_queued` requeue.
    pub fn transition(
        &mut self,
        to: PipelineState,
        at: Timestamp,
        reason: impl Into<String>,
    ) -> Result<(), ModelError> {
        self.transition_with(to, at, reason, None, None)
    }

    /// Moves to `rejected`, naming the gate that failed.
    pub fn reject(
        &mut self,
        gate: Gate,
        at: Timestamp,
        reason: impl Into<String>,
    ) -> Result<(), ModelError> {
        self.transition_with(PipelineState::Rejected, at, reason, Some(gate), None)
    }

    /// Moves to a round outcome (`round_assigned`, `scored`, `disqualified`,
    /// `infra_failed`), naming the round.
    pub fn round_transition(
        &mut self,
        to: PipelineState,
        round: u64,
        at: Timestamp,
        reason: impl Into<String>,
    ) -> Result<(), ModelError> {
        self.transition_with(to, at, reason, None, Some(round))
    }

    fn transition_with(
        &mut self,
        to: PipelineState,
        at: Timestamp,
        reason: impl Into<String>,
        gate: Option<Gate>,
        round: Option<u64>,
    ) -> Result<(), ModelError> {
        let requeue = self.state == PipelineState::InfraFailed && to == PipelineState::BenchQueued;
        if !self.allows(self.state, to) || (requeue && self.requeues >= 1) {
            return Err(ModelError::IllegalTransition {
                submission: self.sha256.to_string(),
                from: self.state,
                to,
            });
        }
        if requeue {
            self.requeues += 1;
        }
        self.push_transition(to, at, reason.into(), gate, round);
        Ok(())
    }

    fn push_transition(
        &mut self,
        to: PipelineState,
        at: Timestamp,
        reason: String,
        gate: Option<Gate>,
        round: Option<u64>,
    ) {
        self.state = to;
        let at = self.not_before_last(at);
        self.events.push(Event {
            at,
            kind: EventKind::Transition { to, gate, round },
            reason,
        });
    }

    /// `at`, or the time of the last event when `at` is earlier (a step back of the wall
    /// clock): every event is dated at or after the one before it, whichever method
    /// appends it (content/submitting.md, The pipeline).
    fn not_before_last(&self, at: Timestamp) -> Timestamp {
        self.events.last().map_or(at, |last| at.max(last.at))
    }

    /// Records a later commitment of the same bytes as an event on this record (dated
    /// no earlier than the last event).
    pub fn record_duplicate(&mut self, miner: MinerId, commitment: Sha256Hex, at: Timestamp) {
        let reason = format!(
            "duplicate of {} committed first by `{}`; skipped",
            self.sha256.short(),
            self.miner
        );
        let at = self.not_before_last(at);
        self.events.push(Event {
            at,
            kind: EventKind::Duplicate { miner, commitment },
            reason,
        });
    }

    /// Whether this record never held its patch hash's slot: it was rejected at `fetched`
    /// (the commitment does not match the bytes) or at `verified` (an unregistered miner,
    /// or blob ids that do not match the baseline). Such a commitment was never *valid*, so
    /// a later commitment of the same bytes replaces it (content/submitting.md: the
    /// first valid commitment wins); otherwise anyone could block a diff for good by
    /// committing it first from an unregistered id.
    pub fn never_held_slot(&self) -> bool {
        self.state == PipelineState::Rejected
            && self.events.iter().rev().any(|e| {
                matches!(
                    e.kind,
                    EventKind::Transition {
                        to: PipelineState::Rejected,
                        gate: Some(Gate::Fetched | Gate::Verified),
                        ..
                    }
                )
            })
    }

    /// Records, on this new record, the earlier record of the same bytes whose commitment
    /// was not valid (see [`EventKind::Superseded`]). The traces `earlier` carried are
    /// copied too; each keeps its original commitment time in `committedAt`, and as an
    /// event of this record is dated `at` (no earlier than the last event), when this
    /// record took it over, so the events stay in time order.
    pub fn record_superseded(&mut self, earlier: &Submission, at: Timestamp) {
        let at = self.not_before_last(at);
        // Keep the traces `earlier` itself carried, so a chain of invalid commitments
        // loses nothing.
        self.events.extend(
            earlier
                .events
                .iter()
                .filter(|e| matches!(e.kind, EventKind::Superseded { .. }))
                .map(|e| Event { at, ..e.clone() }),
        );
        let committed_at = earlier.events.first().map_or(at, |e| e.at);
        let reason = format!(
            "an earlier commitment of these bytes by `{}` was not valid ({}); the first valid commitment holds the slot",
            earlier.miner,
            earlier.last_reason().unwrap_or("commitment mismatch"),
        );
        self.events.push(Event {
            at,
            kind: EventKind::Superseded {
                miner: earlier.miner.clone(),
                commitment: earlier.commitment,
                committed_at,
            },
            reason,
        });
    }

    /// Whether an `infra_failed` submission may still be requeued.
    pub fn can_requeue(&self) -> bool {
        self.state == PipelineState::InfraFailed && self.requeues == 0
    }

    /// Moves an `infra_failed` submission back to `bench_queued`, once: the one requeue
    /// of content/submitting.md (the round executor after an `infra_failed` round, and
    /// `intake::ingest::requeue`).
    ///
    /// Errors: [`ModelError::IllegalTransition`] when it is not `infra_failed` or was
    /// requeued already (the record is unchanged).
    pub fn requeue(&mut self, at: Timestamp, reason: impl Into<String>) -> Result<(), ModelError> {
        self.transition(PipelineState::BenchQueued, at, reason)
    }

    /// Moves an `infra_failed` submission back to `bench_queued` after a round that was
    /// `infra_failed` as a whole (content/leader-rule.md): the round is charged to no
    /// challenger, so [`Submission::requeues`] is unchanged and a spent requeue does not
    /// stop it.
    ///
    /// Errors: [`ModelError::IllegalTransition`] when it is not `infra_failed` (the
    /// record is unchanged).
    pub fn requeue_uncharged(
        &mut self,
        at: Timestamp,
        reason: impl Into<String>,
    ) -> Result<(), ModelError> {
        if self.state != PipelineState::InfraFailed {
            return Err(ModelError::IllegalTransition {
                submission: self.sha256.to_string(),
                from: self.state,
                to: PipelineState::BenchQueued,
            });
        }
        self.push_transition(PipelineState::BenchQueued, at, reason.into(), None, None);
        Ok(())
    }

    /// The reason of the last transition event (for `rejected` and `disqualified`, the
    /// verdict a miner reads).
    pub fn last_reason(&self) -> Option<&str> {
        self.events
            .iter()
            .rev()
            .find(|e| matches!(e.kind, EventKind::Transition { .. }))
            .map(|e| e.reason.as_str())
    }
}

/// `data/<campaign>/miners.json`: registered miners, append-only.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MinerRegistry {
    /// Registered miners, oldest first.
    pub miners: Vec<RegisteredMiner>,
}

/// One registered miner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegisteredMiner {
    /// The miner id (hotkey).
    pub id: MinerId,
    /// When it was registered.
    pub registered_at: Timestamp,
    /// The coldkey that owns the hotkey (repository campaigns: the queue is per coldkey).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coldkey: Option<String>,
    /// The hotkey's role; absent for a diff campaign's miner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<super::MinerRole>,
    /// The registration's cost, as an opaque reference (an extrinsic hash, a receipt id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration: Option<String>,
}

impl MinerRegistry {
    /// Whether `id` is registered.
    pub fn contains(&self, id: &MinerId) -> bool {
        self.get(id).is_some()
    }

    /// The registration of `id`, if registered.
    pub fn get(&self, id: &MinerId) -> Option<&RegisteredMiner> {
        self.miners.iter().find(|m| &m.id == id)
    }
}
