//! One sealed round, for people: [`RoundView`] is the view-model that `referee show`
//! prints and the site (planned) will render — one model, two renderers. It is built from
//! a bundle's round record *after* [`verify_bundle`] ran on it, and every field carries
//! whether it was verified ([`Field::verified`]): a field is verified when every check
//! that covers it passed — the envelope and Statement checks that make the predicate
//! signed, plus the checks that bind it to the bundle's files or recompute it (a score
//! rests on `round.scores`, on its entry's `round.throughput` and on the probe logs of
//! its runs and of the baseline's). A field whose check failed, did not run, or is not
//! applicable to the bundle's predicate version is unverified.
//!
//! The model holds raw values: integers in the unit their name carries (`scorePpm`,
//! `throughputMilliRps`, `…Ms`), untrusted text (miner ids, log tails, details) as the
//! receipt records it. Renderers format numbers with [`format_score_percent`],
//! [`format_milli_rps`] and [`format_duration_ms`], and escape untrusted text with
//! [`receipts::text::escape_untrusted`] (text output) or their own format's escaping.
//!
//! [`CampaignRounds`] lists a campaign's sealed rounds ([`RoundRow`]) and says who leads
//! ([`CurrentLeader`]): the seat after the last round that verifies.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::{Check, CheckName, VerifyOptions, VerifyReport};
use receipts::keys::Keyring;
use receipts::layout::{
    DataDir, DataError, MINERS_INPUT, commitment_input, patch_input, read_round_record,
};
use receipts::model::{
    BackendKind, CampaignId, CapabilityFinding, CapabilityProbe, ClientPolicy, ClientScheduling,
    ClientSelfTest, CorrectnessSummary, DisqualificationReason, Entry, EntryInfraFailure,
    EntryStatus, FindingStatus, Gate, HardwareFingerprint, Leader, MinerId, NoiseCheck,
    NoiseVerdict, PairedScore, PassSlot, PassStatus, Phase, Role, RoundFailure, RoundRecord,
    RoundStatus, Seed32, SeedReveal, Sha256Hex, Step, StepStatus, Timestamp, TokenCount, Tool,
    TypedOrText,
};
use receipts::rules::paired::median_coverage_ppm;
use receipts::rules::score::run_throughputs;
use receipts::rules::search::at_ceiling;
use receipts::text::format_grouped;

use crate::inputs::read_campaign_copy;
use crate::{PredicateVersion, verify_bundle};

/// A value of the view and whether it was verified. Serialized as
/// `{"value": …, "verified": true}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Field<T> {
    /// The value, as the receipt records it or as derived from what it records.
    pub value: T,
    /// Whether every check that covers the value passed. `false` when one failed, did not
    /// run, or is not applicable to the bundle's predicate version.
    pub verified: bool,
}

impl<T> Field<T> {
    /// `value`, verified or not.
    pub fn new(value: T, verified: bool) -> Self {
        Self { value, verified }
    }
}

/// What verification said about the bundle, in short (`referee verify` prints every
/// check).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verification {
    /// Whether the bundle verifies: every check passed or is not applicable.
    pub passed: bool,
    /// The round predicate version (`v1`, `v2`), when the Statement's type is one.
    pub predicate_version: Option<&'static str>,
    /// The Statement's `predicateType`, when step 5 passed.
    pub predicate_type: Option<String>,
    /// sha256 of the Statement bytes (the next round's `previousReceipt`), when the
    /// payload decoded.
    pub statement_digest: Option<Sha256Hex>,
    /// keyids of the trusted keys that counted toward the threshold.
    pub signed_by: Vec<String>,
    /// Checks recorded.
    pub checks: usize,
    /// Checks that failed (not run included).
    pub failed: usize,
    /// Checks not applicable to the predicate version (neither passed nor failed).
    pub not_applicable: usize,
    /// Every failed check.
    pub failures: Vec<CheckFailure>,
}

impl Verification {
    /// The summary of `report`.
    pub fn of(report: &VerifyReport) -> Self {
        let failures: Vec<CheckFailure> = report
            .failures()
            .map(|check| CheckFailure {
                check: check.name,
                target: check.target.clone(),
                message: check
                    .reason
                    .as_ref()
                    .map_or_else(|| "failed".to_owned(), ToString::to_string),
            })
            .collect();
        Self {
            passed: report.passed(),
            predicate_version: report
                .predicate_type
                .as_deref()
                .and_then(PredicateVersion::of)
                .map(|v| v.name()),
            predicate_type: report.predicate_type.clone(),
            statement_digest: report.statement_digest,
            signed_by: report.signed_by.clone(),
            checks: report.checks.len(),
            failed: failures.len(),
            not_applicable: report
                .checks
                .iter()
                .filter(|c| c.not_applicable.is_some())
                .count(),
            failures,
        }
    }
}

/// One failed check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckFailure {
    /// The check, by its dotted name (`subject`, `round.scores`).
    pub check: CheckName,
    /// What it concerns (a file, `entries[1]`, a seed), when it runs per item.
    pub target: Option<String>,
    /// Why it failed (untrusted: it may quote bundle contents).
    pub message: String,
}

/// A sealed round, everything a person needs to read it (content/commands.md, `referee
/// show`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RoundView {
    /// The bundle directory.
    pub bundle: PathBuf,
    /// What verification said.
    pub verification: Verification,
    /// Round number within the campaign, from 1 (`roundOpened.matches`).
    pub round: Field<u64>,
    /// The campaign id (`roundOpened.matches`, `inputs.campaign`).
    pub campaign: Field<CampaignId>,
    /// sha256 of the frozen campaign (`roundOpened.matches`, `inputs.campaign`).
    pub campaign_digest: Field<Sha256Hex>,
    /// `complete`, `infra_failed` or `inconclusive`.
    pub status: Field<RoundStatus>,
    /// Why the round is `infra_failed` or `inconclusive`, as a sentence (untrusted text
    /// for v1 bundles).
    pub status_reason: Option<Field<String>>,
    /// The status and its reason in words that match it ([`format_verdict`]):
    /// `complete`, `inconclusive — not decided: A/A 30.78 % > margin 10 %`,
    /// `infra_failed — the baseline failed` (untrusted text for v1 bundles).
    pub verdict: Field<String>,
    /// Entries by status: "N scored · M disqualified".
    pub counts: Field<EntryCounts>,
    /// When setup started.
    pub started_at: Field<Timestamp>,
    /// When teardown ended.
    pub ended_at: Field<Timestamp>,
    /// How long the round took to settle: `endedAt − startedAt`, milliseconds.
    pub settled_in_ms: Field<i64>,
    /// The highest score among scored entries (the baseline's 0 included); `None` when
    /// no entry was scored.
    pub top_score: Option<TopScore>,
    /// The seat before the round; `None` is the baseline.
    pub leader_before: Field<Option<Leader>>,
    /// The seat after the round; `None` is the baseline. Verified only when every
    /// entry's score is, since the leader rule decided on them.
    pub leader_after: Field<Option<Leader>>,
    /// Whether the seat changed.
    pub leader_changed: Field<bool>,
    /// The overtake margin applied, basis points.
    pub margin_bp: Field<u32>,
    /// Which rule decided, as a sentence (`Display` of `outcome.decision`; a v1
    /// receipt's own text, untrusted).
    pub decision: Field<String>,
    /// The SLA entries were measured at, `p95:e2e:300ms`.
    pub sla: Field<String>,
    /// Whether every token count and throughput of the round is the engines' own
    /// `usage.completion_tokens` (`tokenCount: "usage"`), which renderers mark
    /// [`SELF_REPORTED`].
    pub self_reported_tokens: Field<bool>,
    /// sha256 of the request sequence (`requestSequence.digest` regenerates it).
    pub request_sequence_digest: Field<Sha256Hex>,
    /// The tool that ran the round.
    pub tool: Field<Tool>,
    /// The entries, in run order: baseline, incumbent, challengers.
    pub entries: Vec<EntryView>,
    /// Every step, in order.
    pub steps: Vec<StepView>,
    /// The five seeds (from v3 also `sampleSeed` and `passSeed`), committed before any
    /// entry ran and revealed in the receipt.
    pub seeds: Vec<SeedView>,
    /// The beacon the seeds derive from (v5; absent when the evaluator drew or gave
    /// them), vouched for by `seeds.beacon`; a `file` beacon is unsigned.
    pub beacon: Option<Field<receipts::model::BeaconRecord>>,
    /// The evaluator gave the seeds: a practice round, which moves no seat.
    pub practice: Field<bool>,
    /// What the round was for and its clock, in words (content/title.md, v7): set for a
    /// confirmation or re-measurement round and for a round on a virtual clock, which
    /// counts for no real title; attested by the signature (`title.chain` recomputes
    /// what the kind claims across rounds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title_round: Option<Field<String>>,
    /// Hardware at both ends of the round.
    pub hardware: HardwareView,
    /// The drift check: the baseline run again at the end (rounds before v3).
    pub drift: Option<DriftView>,
    /// The passes in the order they ran (v3; empty before): each pass's order, redrawn
    /// from `passSeed` by `passes.order`, and whether it was void (`passes.void`).
    pub passes: Vec<PassView>,
    /// The round's noise floor (v3): the baseline spread and the A/A spread in basis
    /// points against their bounds, and their verdict (`noise.spread`, `noise.verdict`).
    pub noise: Option<Field<NoiseCheck>>,
    /// The load client's self-test before the round opened (v3): the rate it held against
    /// a null server, its send-lag p50 and p99 and the bound it was held to
    /// (`client.selfTest`).
    pub client_self_test: Option<Field<ClientSelfTest>>,
    /// The capability probe of the baseline engine before any entry ran (v3, `process`
    /// backends): one finding per feature the round needs (`capability.probe`).
    pub capability_probe: Option<Field<CapabilityProbe>>,
    /// A `decide` campaign's track record (v8, content/s1-pro-speed.md): its track, the
    /// workload kind and each entry's weights identity, vouched for by `decide.round` and
    /// every `decide.weights` (passed, or not applicable to a track without pinned
    /// weights).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decide: Option<Field<receipts::model::DecideRound>>,
    /// The pod the entries ran on (v9, a rented pod): each allocation with its agent's
    /// digest (`pod.agent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod: Option<Field<receipts::model::PodRun>>,
    /// Where each number comes from and which checks vouch for it.
    pub sources: Vec<Source>,
}

/// Entries by status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryCounts {
    /// Entries with a throughput and a score.
    pub scored: usize,
    /// Entries disqualified (wrong, SLA unmet, crashed).
    pub disqualified: usize,
    /// Entries that never counted because of infrastructure.
    pub infra_failed: usize,
    /// Entries an `inconclusive` round left not decided (`infra_failed` on the wire,
    /// [`EntryView::undecided`]); not counted in `infra_failed`.
    pub undecided: usize,
    /// All entries.
    pub total: usize,
}

/// The round's top score.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopScore {
    /// Index of the entry that holds it (into [`RoundView::entries`] by `index`).
    pub entry: u32,
    /// The score, ppm of speedup against the first baseline run (0 = baseline speed).
    /// Verified only when every entry's score is: the top is a maximum over all of them.
    pub score_ppm: Field<i64>,
}

/// One row of the entries table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryView {
    /// Position in the round, from 0.
    pub index: u32,
    /// `baseline`, `incumbent` or `challenger` (`roundOpened.matches`).
    pub role: Field<Role>,
    /// The miner; `None` for the baseline (untrusted text; `roundOpened.matches`,
    /// `inputs.miners`).
    pub miner: Field<Option<MinerId>>,
    /// sha256 of the diff; `None` for the baseline (`roundOpened.matches`,
    /// `inputs.patches`).
    pub patch: Field<Option<Sha256Hex>>,
    /// The patch abbreviated as the scoreboard does, `abcdef1…12345`.
    pub patch_short: Field<Option<String>>,
    /// `scored`, `disqualified` or `infra_failed`.
    pub status: Field<EntryStatus>,
    /// Whether the round was `inconclusive` and left this entry not decided: its wire
    /// status is `infra_failed` with `round_infra_failed`, but nothing failed; renderers
    /// say "not decided" and show [`EntryView::undecided_score`].
    pub undecided: bool,
    /// For an [`undecided`](EntryView::undecided) entry, what its per-pass paired ratios
    /// give although the round decided nothing: their median, interval `[min, max]` and
    /// coverage over the passes that counted, in the shape of a paired score (ppm).
    /// Verified when `paired.ratio` passed on every row it rests on and their probe logs
    /// are intact. `None` for every other entry, and when no pass paired it.
    pub undecided_score: Option<Field<PairedScore>>,
    /// Speedup against the first baseline run, parts per million (0 = baseline speed);
    /// from v3 the median paired score; `None` unless scored.
    pub score_ppm: Field<Option<i64>>,
    /// The paired score over the counted passes (v3, not for the baseline): median,
    /// interval `[min, max]` in ppm, passes and the interval's coverage in ppm; verified
    /// by `paired.score` on the entry's runs.
    pub paired_score: Option<Field<PairedScore>>,
    /// Median run throughput, milli-requests/s.
    pub throughput_milli_rps: Field<Option<u64>>,
    /// Lowest run throughput, milli-requests/s.
    pub throughput_min_milli_rps: Field<Option<u64>>,
    /// Highest run throughput, milli-requests/s.
    pub throughput_max_milli_rps: Field<Option<u64>>,
    /// Whether a run of it passed at the campaign's `rate_search.max_rate_milli_rps`,
    /// the search's ceiling (`receipts::rules::search::at_ceiling`): its throughput at
    /// the SLA is at least the one measured, shown `≥ … req/s (ceiling)`. Verified with
    /// the throughput and `inputs.campaign`.
    pub at_ceiling: Field<bool>,
    /// Runs measured.
    pub runs: Field<usize>,
    /// When its first step started.
    pub started_at: Field<Timestamp>,
    /// When its last step ended.
    pub ended_at: Field<Timestamp>,
    /// How long its runs took, all passes together, milliseconds: the summed durations of
    /// the steps of its group ([`entry_duration_ms`]); `endedAt − startedAt` when no step
    /// names it.
    pub duration_ms: Field<i64>,
    /// The backend that ran its engine.
    pub backend: Field<BackendKind>,
    /// The correctness verdict (not for the baseline); verified when its items file is
    /// intact and `correctness.verdict` (and `correctness.distances`, unless it is not
    /// applicable: a file without raw logprobs) recomputed it.
    pub correctness: Option<Field<CorrectnessSummary>>,
    /// Why it was disqualified.
    pub disqualification: Option<DisqualificationView>,
    /// Why it is `infra_failed`, as a sentence (untrusted text).
    pub infra_failure: Option<Field<String>>,
    /// Bundle-relative path of its engine's log; verified when the file is intact.
    pub engine_log: Option<Field<String>>,
}

/// A disqualification with its evidence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DisqualificationView {
    /// The typed reason (`engine_died_before_healthy`, `sla_unmet`, …).
    pub reason: Field<DisqualificationReason>,
    /// Human detail (untrusted text).
    pub detail: Field<String>,
    /// The last lines of the engine's log (untrusted text); verified when the engine
    /// log file is intact.
    pub log_tail: Field<Vec<String>>,
}

/// One step of the timeline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepView {
    /// Position in the round, from 0.
    pub index: u32,
    /// The group: `Setup`, `Baseline`, `Candidate 2 of 5`, `Scorer`, …
    pub group: Field<String>,
    /// What it does, `Baseline, starting the engine`.
    pub name: Field<String>,
    /// Its phase (`starting_engine`, `running_sla`, …).
    pub phase: Field<Phase>,
    /// Start time.
    pub started_at: Field<Timestamp>,
    /// End time.
    pub ended_at: Field<Timestamp>,
    /// `endedAt − startedAt`, milliseconds.
    pub duration_ms: Field<i64>,
    /// From the previous step's end to this step's start, milliseconds; `None` for the
    /// first step.
    pub since_previous_ms: Field<Option<i64>>,
    /// `ok`, `failed` or `skipped`.
    pub status: Field<StepStatus>,
    /// Bundle-relative path of its log; verified when the file is intact.
    pub log: Option<Field<String>>,
}

impl StepView {
    /// Whether every field of the step is verified.
    pub fn verified(&self) -> bool {
        self.group.verified
            && self.name.verified
            && self.phase.verified
            && self.started_at.verified
            && self.ended_at.verified
            && self.duration_ms.verified
            && self.since_previous_ms.verified
            && self.status.verified
            && self.log.as_ref().is_none_or(|l| l.verified)
    }
}

/// One seed: its commitment and what the receipt reveals (`seeds.commitments`: sha256 of
/// seed ‖ salt is the commitment the round-opened statement published).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SeedView {
    /// The seed's field name: `itemSeed`, `orderSeed`, `scheduleSeed`,
    /// `correctnessSeed`, `promptSalt`, and from v3 `sampleSeed`, `passSeed`.
    pub name: &'static str,
    /// sha256(seed ‖ salt), 64 hex characters.
    pub commitment: Field<Sha256Hex>,
    /// The revealed 32-byte seed, 64 hex characters.
    pub seed: Field<Seed32>,
    /// The revealed 32-byte salt, 64 hex characters.
    pub salt: Field<Seed32>,
}

/// Hardware at both ends of the round.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HardwareView {
    /// Fingerprint at setup (memory in bytes).
    pub at_start: Field<HardwareFingerprint>,
    /// Fingerprint at teardown (memory in bytes).
    pub at_end: Field<HardwareFingerprint>,
    /// Whether they differ (then the round is `infra_failed`).
    pub changed: Field<bool>,
}

/// The drift check. Verified when signed and its probe logs are intact (the verifier
/// does not recompute it yet).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DriftView {
    /// First baseline throughput, milli-requests/s.
    pub first_milli_rps: Field<u64>,
    /// Drift baseline throughput, milli-requests/s; `None` when it failed.
    pub drift_milli_rps: Field<Option<u64>>,
    /// |drift − first| / first, basis points, rounded up.
    pub drift_bp: Field<Option<u64>>,
    /// The campaign's bound, basis points.
    pub bound_bp: Field<u32>,
    /// Whether the drift is within the bound.
    pub within_bound: Field<bool>,
}

/// One pass of a v3 round.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PassView {
    /// The pass, from 0.
    pub index: u32,
    /// Its runs in the order they ran, by entry index (`control`: the baseline's A/A
    /// control).
    pub order: Field<Vec<PassSlot>>,
    /// Whether a baseline run of it failed: then nothing of it counts.
    pub void: Field<bool>,
}

/// Where a number of the view comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    /// The view's field, as a path: `entries[].scorePpm`.
    pub field: &'static str,
    /// Its unit.
    pub unit: &'static str,
    /// How it is obtained.
    pub from: &'static str,
    /// The checks (dotted names) that must pass for it to be verified, besides the
    /// envelope and Statement checks that make it signed.
    pub checks: &'static [&'static str],
}

/// Where the view's numbers come from, in the order `referee show` prints them.
pub const SOURCES: &[Source] = &[
    Source {
        field: "entries[].scorePpm",
        unit: "ppm of speedup, 0 = baseline speed",
        from: "median run throughput against the first baseline run: \
               (T / T_baseline − 1) × 10^6, floor-rounded",
        checks: &["round.scores", "round.throughput", "subject"],
    },
    Source {
        field: "entries[].pairedScore",
        unit: "ppm of speedup: median, [min, max]; coverage in ppm",
        from: "v3: per counted pass, the entry's throughput over the same pass's first \
               baseline run; median (lower middle), min and max of those ratios − 10^6, \
               coverage 1 − 2^(1−passes)",
        checks: &["paired.score", "paired.ratio", "passes.void", "subject"],
    },
    Source {
        field: "noise",
        unit: "basis points",
        from: "v3: spread ⌈(max − min) × 10^4 / median⌉ of the first baseline runs (against \
               the drift bound) and of the A/A control's paired ratios (against the margin)",
        checks: &["noise.spread", "noise.verdict"],
    },
    Source {
        field: "clientSelfTest",
        unit: "milli-requests/s, µs",
        from: "v3: the load client against a null server at the campaign's maximum rate \
               before the round opened; send-lag p99 at most the campaign's bound",
        checks: &["client.selfTest", "inputs.campaign"],
    },
    Source {
        field: "passes[].order",
        unit: "entry indexes",
        from: "v3: redrawn from the revealed passSeed (Fisher–Yates on ChaCha20, one stream \
               per pass)",
        checks: &["passes.order", "seeds.commitments"],
    },
    Source {
        field: "entries[].throughputMilliRps",
        unit: "milli-requests/s",
        from: "median (lower middle) of the runs' throughputs, each the highest passing \
               probe of its rate search in the probe log",
        checks: &["round.throughput", "subject"],
    },
    Source {
        field: "topScore.scorePpm",
        unit: "ppm of speedup, 0 = baseline speed",
        from: "the highest scorePpm among scored entries",
        checks: &["round.scores", "round.throughput", "subject"],
    },
    Source {
        field: "leaderAfter",
        unit: "patch and miner, null = the baseline",
        from: "the leader rule applied by the runner to the scores and the margin; v3: \
               the paired decision rule, recomputed from the passes",
        checks: &[
            "round.scores",
            "round.throughput",
            "subject",
            "paired.decision",
        ],
    },
    Source {
        field: "settledInMs",
        unit: "milliseconds",
        from: "endedAt − startedAt of the round, as the runner recorded them",
        checks: &[],
    },
    Source {
        field: "entries[].durationMs",
        unit: "milliseconds",
        from: "endedAt − startedAt of the entry's steps",
        checks: &[],
    },
    Source {
        field: "steps[].sincePreviousMs",
        unit: "milliseconds",
        from: "this step's startedAt − the previous step's endedAt",
        checks: &[],
    },
    Source {
        field: "drift.driftBp",
        unit: "basis points",
        from: "|drift baseline − first baseline| / first baseline, rounded up \
               (not recomputed by the verifier)",
        checks: &["subject"],
    },
    Source {
        field: "seeds[].commitment",
        unit: "sha256",
        from: "sha256(seed ‖ salt), published in the round-opened statement before any \
               entry ran",
        checks: &["seeds.commitments", "roundOpened.signature"],
    },
    Source {
        field: "requestSequenceDigest",
        unit: "sha256",
        from: "the request sequence regenerated from the revealed seeds and the bundle's \
               campaign",
        checks: &["requestSequence.digest", "inputs.campaign"],
    },
];

/// The envelope and Statement checks: when all of them passed, the predicate is signed
/// by trusted keys and every field of it is at least signed.
const SIGNED_CHECKS: [CheckName; 13] = [
    CheckName::EnvelopeParse,
    CheckName::EnvelopeCanonical,
    CheckName::PayloadType,
    CheckName::Base64,
    CheckName::SignatureLength,
    CheckName::Signatures,
    CheckName::Keyid,
    CheckName::StatementParse,
    CheckName::StatementCanonical,
    CheckName::StatementType,
    CheckName::PredicateType,
    CheckName::StatementShape,
    CheckName::PredicateSchema,
];

/// Looks up the checks of one report.
struct Checks<'a> {
    /// The report's checks by name, each name's in the order run (a view asks a few
    /// hundred questions of a report of some 750 checks).
    by_name: HashMap<CheckName, Vec<&'a Check>>,
    /// Whether the predicate is signed: every envelope and Statement check passed (or is
    /// not applicable), `signature.trusted` and `predicate.schema` among them.
    signed: bool,
}

impl<'a> Checks<'a> {
    fn new(report: &'a VerifyReport) -> Self {
        let ran = |name: CheckName| report.checks.iter().any(|c| c.name == name && c.passed);
        let signed = ran(CheckName::Signatures)
            && ran(CheckName::PredicateSchema)
            && report
                .checks
                .iter()
                .filter(|c| SIGNED_CHECKS.contains(&c.name))
                .all(|c| c.passed || c.not_applicable.is_some());
        let mut by_name: HashMap<CheckName, Vec<&Check>> = HashMap::new();
        for check in &report.checks {
            by_name.entry(check.name).or_default().push(check);
        }
        Self { by_name, signed }
    }

    /// The checks named `name`, in the order run.
    fn named(&self, name: CheckName) -> impl Iterator<Item = &'a Check> + '_ {
        self.by_name.get(&name).into_iter().flatten().copied()
    }

    /// Whether check `name` passed for `target`: at least one such check was recorded,
    /// every one passed, and no check of that name without a target (one that stands for
    /// all targets, like "not run") failed. Not applicable is not passed.
    fn passed(&self, name: CheckName, target: &str) -> bool {
        let mut found = false;
        for check in self.named(name) {
            match check.target.as_deref() {
                Some(t) if t == target => {
                    if !check.passed {
                        return false;
                    }
                    found = true;
                }
                None if !check.passed => return false,
                _ => {}
            }
        }
        found
    }

    /// [`Checks::passed`], or every check `name` for `target` is not applicable (a
    /// recomputation the bundle's files cannot support, such as distances without raw
    /// logprobs: the value rests on the checks that did run).
    fn passed_or_not_applicable(&self, name: CheckName, target: &str) -> bool {
        let mut recorded = self
            .named(name)
            .filter(|c| c.target.as_deref() == Some(target))
            .peekable();
        let not_applicable =
            recorded.peek().is_some() && recorded.all(|c| c.not_applicable.is_some());
        not_applicable || self.passed(name, target)
    }

    /// Whether no record of check `name` for `target` (or for the whole bundle) failed:
    /// passed, `not applicable` to an older version, or not recorded.
    fn not_failed(&self, name: CheckName, target: &str) -> bool {
        self.named(name).all(|c| {
            c.passed
                || c.not_applicable.is_some()
                || c.target.as_deref().is_some_and(|t| t != target)
        })
    }

    /// Whether the probe logs of `entry`'s pass rows are its own (`probes.entry`, v5).
    fn rows_bound(&self, entry: &receipts::model::Entry) -> bool {
        (0..entry.passes.len()).all(|j| {
            self.not_failed(
                CheckName::ProbeLogEntry,
                &format!("entries[{}].passes[{j}]", entry.index),
            )
        })
    }

    /// Whether check `name` was recorded and every record of it passed.
    fn all_passed(&self, name: CheckName) -> bool {
        let mut checks = self.named(name).peekable();
        checks.peek().is_some() && checks.all(|c| c.passed)
    }

    /// Signed, and the bundle file `name` matches its subject.
    fn file(&self, name: &str) -> bool {
        self.signed && self.passed(CheckName::Subject, name)
    }
}

/// A bundle whose round record cannot be read (no envelope, not a round predicate): no
/// view, only what verification said.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Unreadable {
    /// The bundle directory.
    pub bundle: PathBuf,
    /// Why the round record cannot be read, naming the file.
    pub error: String,
    /// What verification said.
    pub verification: Verification,
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "bundle `{}` holds no readable round: {}",
            self.bundle.display(),
            self.error
        )
    }
}

impl std::error::Error for Unreadable {}

/// [`RoundView::title_round`]'s words for `record`: its kind when it is not a regular
/// round, and a virtual clock; `None` for a regular round on the real clock.
fn title_round_words(record: &RoundRecord) -> Option<String> {
    use receipts::model::{ClockKind, RoundKindRecord};
    let seat = |l: Option<&Leader>| {
        l.map_or_else(
            || "the vacant title (the baseline)".to_owned(),
            |l| format!("{} ({})", l.miner, l.patch.short()),
        )
    };
    let kind = match &record.kind {
        None | Some(RoundKindRecord::Regular) => None,
        Some(RoundKindRecord::Confirmation { challenger, holder }) => Some(format!(
            "a confirmation round: {} re-measured against {}",
            seat(Some(challenger)),
            seat(holder.as_ref())
        )),
        Some(RoundKindRecord::Remeasure { holder }) => Some(format!(
            "a re-measurement of the title's holder {} against the baseline",
            seat(Some(holder))
        )),
    };
    let virtual_clock = record.clock == Some(ClockKind::Virtual);
    match (kind, virtual_clock) {
        (None, false) => None,
        (Some(kind), false) => Some(kind),
        (None, true) => Some("on a virtual clock: it counts for no real title".to_owned()),
        (Some(kind), true) => Some(format!(
            "{kind}, on a virtual clock: it counts for no real title"
        )),
    }
}

impl RoundView {
    /// What this round's throughputs count ([`RateUnit::of`] its `decide` record).
    pub fn rate_unit(&self) -> RateUnit {
        RateUnit::of(self.decide.as_ref().map(|d| &d.value))
    }

    /// Verifies the bundle in `dir` with [`verify_bundle`], then reads its round record
    /// ([`read_round_record`]) and builds the view, each field marked with the checks
    /// that cover it. A bundle that does not verify still gets a view, its fields marked
    /// unverified.
    ///
    /// Errors: [`Unreadable`] when the round record cannot be read at all.
    pub fn from_bundle(
        dir: &Path,
        keyring: &Keyring,
        options: &VerifyOptions,
    ) -> Result<Self, Box<Unreadable>> {
        let report = verify_bundle(dir, keyring, options);
        match read_round_record(dir) {
            Ok((record, _)) => Ok(Self::from_record(dir, &record, &report)),
            Err(error) => Err(Box::new(Unreadable {
                bundle: dir.to_owned(),
                error: with_causes(&error),
                verification: Verification::of(&report),
            })),
        }
    }

    /// The view of `record`, the round record of the bundle in `dir`, with `report`, the
    /// [`verify_bundle`] report of that same bundle.
    pub fn from_record(dir: &Path, record: &RoundRecord, report: &VerifyReport) -> Self {
        let checks = Checks::new(report);
        let signed = checks.signed;
        let matches = |field: &str| signed && checks.passed(CheckName::RoundOpenedMatches, field);
        let campaign_ok = checks.all_passed(CheckName::InputsCampaign);
        let rate_search = read_campaign_copy(dir)
            .1
            .ok()
            .map(|frozen| frozen.campaign.rate_search);

        // Throughputs rest on round.throughput and on the probe logs of the runs; a score
        // on its throughput, the first baseline's and round.scores.
        let throughput_ok: Vec<bool> = record
            .entries
            .iter()
            .map(|e| {
                signed
                    && checks.passed(CheckName::RoundThroughput, &entry_target(e.index))
                    && e.runs.iter().all(|r| checks.file(&r.probe_log))
                    // v5: the runs are the entry's own rows, their logs its own.
                    && checks.not_failed(CheckName::RunsPasses, &entry_target(e.index))
                    && checks.rows_bound(e)
            })
            .collect();
        let baseline_ok = throughput_ok.first().copied().unwrap_or(true);
        let score_ok: Vec<bool> = record
            .entries
            .iter()
            .zip(&throughput_ok)
            .map(|(e, &t)| {
                t && baseline_ok && checks.passed(CheckName::RoundScores, &entry_target(e.index))
            })
            .collect();
        let scores_ok = signed && score_ok.iter().all(|&ok| ok);
        // From v3 the seat is recomputed from the passes.
        let v3 = PredicateVersion::of(report.predicate_type.as_deref().unwrap_or(""))
            >= Some(PredicateVersion::V3);
        let seat_ok = scores_ok && (!v3 || checks.passed(CheckName::PairedDecision, "outcome"));

        let entries: Vec<EntryView> = record
            .entries
            .iter()
            .zip(throughput_ok.iter().zip(&score_ok))
            .map(|(e, (&t_ok, &s_ok))| {
                let seat_ok = matches(&entry_target(e.index));
                let miner_ok = seat_ok
                    && (e.miner.is_none() || checks.passed(CheckName::InputsMiners, MINERS_INPUT));
                let patch_ok = seat_ok
                    && e.patch.as_ref().is_none_or(|p| {
                        checks.passed(CheckName::InputsPatches, &patch_input(p))
                            || checks.passed(CheckName::InputsPatches, &commitment_input(p))
                    });
                let log_ok = e.engine_log.as_deref().is_none_or(|l| checks.file(l));
                let undecided = left_undecided(record.outcome.status, e);
                EntryView {
                    index: e.index,
                    role: Field::new(e.role, seat_ok),
                    miner: Field::new(e.miner.clone(), miner_ok),
                    patch: Field::new(e.patch, patch_ok),
                    patch_short: Field::new(e.patch.as_ref().map(Sha256Hex::short), patch_ok),
                    status: Field::new(e.status, signed),
                    undecided,
                    undecided_score: undecided
                        .then(|| undecided_score(record, e, &checks))
                        .flatten(),
                    score_ppm: Field::new(e.score_ppm, s_ok),
                    // It rests on the entry's runs in every pass (their probe logs
                    // intact) and on the baseline's.
                    paired_score: e.paired_score.map(|p| {
                        let runs_ok = std::iter::once(e)
                            .chain(record.entries.first())
                            .all(|entry| checks.rows_bound(entry))
                            && std::iter::once(e)
                                .chain(record.entries.first())
                                .flat_map(|entry| &entry.passes)
                                .filter_map(|row| row.probe_log.as_deref())
                                .all(|log| checks.file(log));
                        Field::new(
                            p,
                            s_ok && runs_ok
                                && checks.passed(CheckName::PairedScore, &entry_target(e.index)),
                        )
                    }),
                    throughput_milli_rps: Field::new(e.throughput_milli_rps, t_ok),
                    throughput_min_milli_rps: Field::new(e.throughput_min_milli_rps, t_ok),
                    throughput_max_milli_rps: Field::new(e.throughput_max_milli_rps, t_ok),
                    at_ceiling: Field::new(
                        rate_search.as_ref().is_some_and(|spec| {
                            e.runs.iter().any(|r| at_ceiling(r.rate_milli_rps, spec))
                        }),
                        t_ok && campaign_ok,
                    ),
                    runs: Field::new(e.runs.len(), t_ok),
                    started_at: Field::new(e.started_at, signed),
                    ended_at: Field::new(e.ended_at, signed),
                    duration_ms: Field::new(entry_duration_ms(e, &record.steps), signed),
                    backend: Field::new(e.engine.backend, signed),
                    // Recomputed from its per-item file: the verdict, and the file's
                    // distances from its raw top-k where it stores them; a decide
                    // campaign's gate from its two vectors per item (`decide.gate`).
                    correctness: e.correctness.as_ref().map(|c| {
                        let at = format!("{}.correctness", entry_target(e.index));
                        let ok = checks.file(&c.items_file)
                            && (checks.passed(CheckName::DecideGate, &at)
                                || checks.passed(CheckName::CorrectnessVerdict, &at)
                                    && checks.passed_or_not_applicable(
                                        CheckName::CorrectnessDistances,
                                        &at,
                                    ));
                        Field::new(c.clone(), ok)
                    }),
                    disqualification: e.disqualification.as_ref().map(|d| DisqualificationView {
                        reason: Field::new(d.reason, signed),
                        detail: Field::new(d.detail.clone(), signed),
                        log_tail: Field::new(d.log_tail.clone(), signed && log_ok),
                    }),
                    infra_failure: e
                        .infra_failure
                        .as_ref()
                        .map(|i| Field::new(i.to_string(), signed)),
                    engine_log: e
                        .engine_log
                        .as_ref()
                        .map(|l| Field::new(l.clone(), checks.file(l))),
                }
            })
            .collect();

        let mut counts = EntryCounts {
            total: record.entries.len(),
            ..EntryCounts::default()
        };
        for e in &record.entries {
            match e.status {
                EntryStatus::Scored => counts.scored += 1,
                EntryStatus::Disqualified => counts.disqualified += 1,
                EntryStatus::InfraFailed if left_undecided(record.outcome.status, e) => {
                    counts.undecided += 1;
                }
                EntryStatus::InfraFailed => counts.infra_failed += 1,
            }
        }

        // The first entry holding the highest score.
        let top_score = record
            .entries
            .iter()
            .filter(|e| e.status == EntryStatus::Scored)
            .filter_map(|e| e.score_ppm.map(|s| (e.index, s)))
            .fold(
                None,
                |best: Option<(u32, i64)>, (index, score)| match best {
                    Some((_, b)) if b >= score => best,
                    _ => Some((index, score)),
                },
            )
            .map(|(entry, score)| TopScore {
                entry,
                score_ppm: Field::new(score, scores_ok),
            });

        let steps = record
            .steps
            .iter()
            .enumerate()
            .map(|(position, step)| {
                let since_previous = position
                    .checked_sub(1)
                    .and_then(|p| record.steps.get(p))
                    .map(|prev| prev.ended_at.millis_until(step.started_at));
                StepView {
                    index: step.index,
                    group: Field::new(step.group.clone(), signed),
                    name: Field::new(step.name.clone(), signed),
                    phase: Field::new(step.phase, signed),
                    started_at: Field::new(step.started_at, signed),
                    ended_at: Field::new(step.ended_at, signed),
                    duration_ms: Field::new(step.started_at.millis_until(step.ended_at), signed),
                    since_previous_ms: Field::new(since_previous, signed),
                    status: Field::new(step.status, signed),
                    log: step
                        .log
                        .as_ref()
                        .map(|l| Field::new(l.clone(), checks.file(l))),
                }
            })
            .collect();

        let s = &record.seeds;
        let seed_rows: [(&'static str, &SeedReveal); 5] = [
            ("itemSeed", &s.item_seed),
            ("orderSeed", &s.order_seed),
            ("scheduleSeed", &s.schedule_seed),
            ("correctnessSeed", &s.correctness_seed),
            ("promptSalt", &s.prompt_salt),
        ];
        let v3_rows = [
            ("sampleSeed", s.sample_seed.as_ref()),
            ("passSeed", s.pass_seed.as_ref()),
        ];
        let seeds = seed_rows
            .into_iter()
            .chain(
                v3_rows
                    .into_iter()
                    .filter_map(|(name, reveal)| Some((name, reveal?))),
            )
            .map(|(name, reveal)| {
                let ok =
                    signed && checks.passed(CheckName::SeedCommitments, &format!("seeds.{name}"));
                SeedView {
                    name,
                    commitment: Field::new(reveal.commitment, ok),
                    seed: Field::new(reveal.seed, ok),
                    salt: Field::new(reveal.salt, ok),
                }
            })
            .collect();

        let beacon_vouched = signed
            && checks.passed(CheckName::SeedsBeacon, "beacon.value")
            && checks.passed(CheckName::SeedsBeacon, "seeds.itemSeed");
        let beacon = record.beacon.clone().map(|b| Field::new(b, beacon_vouched));
        let practice = Field::new(
            record.practice,
            signed && checks.passed_or_not_applicable(CheckName::SeedsBeacon, "practice"),
        );
        let title_round = title_round_words(record).map(|text| Field::new(text, signed));

        let drift = record.drift.as_ref().map(|d| {
            let ok = signed && d.runs.iter().all(|r| checks.file(&r.probe_log));
            DriftView {
                first_milli_rps: Field::new(d.first_milli_rps, ok),
                drift_milli_rps: Field::new(d.drift_milli_rps, ok),
                drift_bp: Field::new(d.drift_bp, ok),
                bound_bp: Field::new(d.bound_bp, signed),
                within_bound: Field::new(d.within_bound, ok),
            }
        });

        let passes = record
            .passes
            .iter()
            .enumerate()
            .map(|(position, pass)| {
                let target = format!("passes[{position}]");
                PassView {
                    index: pass.index,
                    order: Field::new(
                        pass.order.clone(),
                        signed && checks.passed(CheckName::PassOrder, &target),
                    ),
                    void: Field::new(
                        pass.void,
                        signed && checks.passed(CheckName::PassVoid, &target),
                    ),
                }
            })
            .collect();
        let noise = record.noise.map(|n| {
            let ok = signed
                && checks.passed(CheckName::NoiseSpread, "noise")
                && checks.passed(CheckName::NoiseVerdict, "noise");
            Field::new(n, ok)
        });
        let client_self_test = record.client_self_test.clone().map(|t| {
            Field::new(
                t,
                signed && checks.passed(CheckName::ClientSelfTest, "clientSelfTest"),
            )
        });
        let capability_probe = record.capability_probe.clone().map(|p| {
            Field::new(
                p,
                signed && checks.passed(CheckName::CapabilityProbe, "capabilityProbe"),
            )
        });
        let decide = record.decide.clone().map(|d| {
            let weights = checks
                .named(CheckName::DecideWeights)
                .all(|c| c.passed || c.not_applicable.is_some());
            Field::new(
                d,
                signed && checks.all_passed(CheckName::DecideRound) && weights,
            )
        });

        let outcome = &record.outcome;
        let pod = record
            .pod
            .clone()
            .map(|p| Field::new(p, signed && checks.all_passed(CheckName::PodAgent)));
        RoundView {
            bundle: dir.to_owned(),
            verification: Verification::of(report),
            round: Field::new(record.round, matches("round")),
            campaign: Field::new(
                record.campaign.id.clone(),
                matches("campaign.id") && campaign_ok,
            ),
            campaign_digest: Field::new(
                record.campaign.digest,
                matches("campaign.digest") && campaign_ok,
            ),
            status: Field::new(outcome.status, signed),
            status_reason: outcome
                .reason
                .as_ref()
                .map(|r| Field::new(r.to_string(), signed)),
            verdict: Field::new(
                format_verdict(outcome.status, outcome.reason.as_ref()),
                signed,
            ),
            counts: Field::new(counts, signed),
            started_at: Field::new(record.started_at, signed),
            ended_at: Field::new(record.ended_at, signed),
            settled_in_ms: Field::new(record.started_at.millis_until(record.ended_at), signed),
            top_score,
            leader_before: Field::new(outcome.leader_before.clone(), signed),
            leader_after: Field::new(outcome.leader_after.clone(), seat_ok),
            leader_changed: Field::new(outcome.changed, seat_ok),
            margin_bp: Field::new(outcome.margin_bp, signed),
            decision: Field::new(outcome.decision.to_string(), seat_ok),
            sla: Field::new(record.sla.to_string(), signed),
            self_reported_tokens: Field::new(record.token_count == Some(TokenCount::Usage), signed),
            request_sequence_digest: Field::new(
                record.request_sequence_digest,
                signed && checks.passed(CheckName::RequestSequence, "requestSequenceDigest"),
            ),
            tool: Field::new(record.tool.clone(), signed),
            entries,
            steps,
            seeds,
            beacon,
            practice,
            title_round,
            hardware: HardwareView {
                at_start: Field::new(record.hardware.at_start.clone(), signed),
                at_end: Field::new(record.hardware.at_end.clone(), signed),
                changed: Field::new(record.hardware.changed, signed),
            },
            drift,
            passes,
            noise,
            client_self_test,
            capability_probe,
            decide,
            pod,
            sources: SOURCES.to_vec(),
        }
    }

    /// The entry with position `index`.
    pub fn entry(&self, index: u32) -> Option<&EntryView> {
        self.entries.iter().find(|e| e.index == index)
    }
}

/// `error` and its causes, `reading `…`: No such file or directory (os error 2)`.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// `entries[i]`, the target of the per-entry checks.
fn entry_target(index: u32) -> String {
    format!("entries[{index}]")
}

/// Whether `entry` is one that a round of `status` left not decided: the round was
/// `inconclusive`, and the entry is `infra_failed` only because of it
/// (`round_infra_failed`).
fn left_undecided(status: RoundStatus, entry: &Entry) -> bool {
    status == RoundStatus::Inconclusive
        && entry.status == EntryStatus::InfraFailed
        && matches!(
            entry.infra_failure.as_ref().and_then(TypedOrText::typed),
            Some(EntryInfraFailure::RoundInfraFailed { .. })
        )
}

/// [`EntryView::undecided_score`] of `entry`: its last measured attempt in each pass
/// that was not void, with a paired ratio, as ppm of speedup (ratio − 10⁶); the median,
/// `[min, max]` and the coverage of `passes` values. `None` when no row pairs.
fn undecided_score(
    record: &RoundRecord,
    entry: &Entry,
    checks: &Checks<'_>,
) -> Option<Field<PairedScore>> {
    let void = |pass: u32| record.passes.iter().any(|p| p.index == pass && p.void);
    let baseline_logs_ok = record
        .entries
        .first()
        .into_iter()
        .flat_map(|b| &b.passes)
        .filter_map(|row| row.probe_log.as_deref())
        .all(|log| checks.file(log));
    let mut verified = checks.signed && baseline_logs_ok;
    let mut ratios = Vec::new();
    for (position, row) in entry.passes.iter().enumerate() {
        let last_of_pass = entry
            .passes
            .iter()
            .rposition(|r| r.pass == row.pass && r.control == row.control)
            == Some(position);
        let Some(ratio) = row.paired_ratio_ppm else {
            continue;
        };
        if row.control || !last_of_pass || void(row.pass) || row.status != PassStatus::Measured {
            continue;
        }
        verified &= checks.passed(
            CheckName::PairedRatio,
            &format!("entries[{}].passes[{position}]", entry.index),
        ) && row.probe_log.as_deref().is_none_or(|log| checks.file(log));
        ratios.push(ratio);
    }
    let (median, min, max) = run_throughputs(&ratios)?;
    let score = |ratio: u64| i64::try_from(i128::from(ratio) - 1_000_000).ok();
    let passes = u32::try_from(ratios.len()).ok()?;
    Some(Field::new(
        PairedScore {
            median_ppm: score(median)?,
            min_ppm: score(min)?,
            max_ppm: score(max)?,
            passes,
            coverage_ppm: median_coverage_ppm(passes),
        },
        verified,
    ))
}

/// How long `entry`'s runs took, all passes together, ms: the summed durations of the
/// steps of its group (the group of the first step that started within its span; each
/// pass's run of it has steps of that group). `endedAt − startedAt` when no step started
/// within its span (a record without steps).
pub fn entry_duration_ms(entry: &Entry, steps: &[Step]) -> i64 {
    match entry_group(entry, steps) {
        Some(group) => steps
            .iter()
            .filter(|s| s.group == group)
            .map(|s| s.started_at.millis_until(s.ended_at))
            .sum(),
        None => entry.started_at.millis_until(entry.ended_at),
    }
}

/// A gate for people, by what it checks (its wire name, `surface_ok`, reads as success):
/// `hash check`, `eligibility checks`, `surface checks`, `apply`, `build`. A rejection
/// reads `surface checks failed`.
pub fn format_gate(gate: Gate) -> &'static str {
    match gate {
        Gate::Fetched => "hash check",
        Gate::Verified => "eligibility checks",
        Gate::SurfaceOk => "surface checks",
        Gate::Applied => "apply",
        Gate::Build => "build",
        Gate::Review => "review",
    }
}

/// The timeline group of `entry`'s steps (`Baseline`, `Candidate 2 of 5 — …`): the group
/// of the first step that started within its span; every pass's run of it has steps of
/// that group. `None` when no step started within its span.
pub fn entry_group<'s>(entry: &Entry, steps: &'s [Step]) -> Option<&'s str> {
    steps
        .iter()
        .find(|s| s.started_at >= entry.started_at && s.started_at <= entry.ended_at)
        .map(|s| s.group.as_str())
}

/// A round's status and its reason in words that match the status: `complete`;
/// `inconclusive — not decided: A/A 30.78 % > margin 10 %` (the A/A spread over the
/// margin, [`format_bp_percent`]), `inconclusive — not decided: <reason>` otherwise;
/// `infra_failed — <reason>`. The reason is the receipt's (untrusted text for v1).
pub fn format_verdict(status: RoundStatus, reason: Option<&TypedOrText<RoundFailure>>) -> String {
    let with_reason = |words: &str, separator: &str| match reason {
        Some(reason) => format!("{words}{separator}{reason}"),
        None => words.to_owned(),
    };
    match status {
        RoundStatus::Complete => "complete".to_owned(),
        RoundStatus::Inconclusive => match reason.and_then(TypedOrText::typed) {
            Some(RoundFailure::NoiseAboveMargin {
                aa_spread_bp,
                margin_bp,
            }) => format!(
                "inconclusive — not decided: A/A {} > margin {}",
                format_bp_percent(*aa_spread_bp),
                format_bp_percent(u64::from(*margin_bp))
            ),
            _ => with_reason("inconclusive — not decided", ": "),
        },
        RoundStatus::InfraFailed => with_reason("infra_failed", " — "),
    }
}

/// One sealed round of a campaign, as a row of `referee rounds`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RoundRow {
    /// The round number (its directory's name, `rounds/<n>/`).
    pub round: u64,
    /// The bundle directory.
    pub bundle: PathBuf,
    /// Whether the bundle verifies and records the round its directory names.
    pub verified: bool,
    /// Checks that failed.
    pub failed_checks: usize,
    /// Why the round cannot be read, or records another round number than its
    /// directory's.
    pub error: Option<String>,
    /// The round in short, when its record could be read.
    #[serde(flatten)]
    pub headline: Option<Headline>,
}

/// A round in short.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Headline {
    /// `complete`, `infra_failed` or `inconclusive`.
    pub status: RoundStatus,
    /// The status and its reason in words ([`format_verdict`]).
    pub verdict: String,
    /// The seat after the round; `None` is the baseline.
    pub leader_after: Option<Leader>,
    /// Whether the seat changed.
    pub leader_changed: bool,
    /// The top score, ppm (0 = baseline speed); `None` when no entry was scored.
    pub top_score_ppm: Option<i64>,
    /// Entries by status.
    pub counts: EntryCounts,
    /// Which rule decided, as a sentence (untrusted text for v1 bundles).
    pub decision: String,
}

impl RoundRow {
    /// The row of round `round`, whose bundle gave `view`.
    pub fn of(round: u64, bundle: PathBuf, view: &Result<RoundView, Box<Unreadable>>) -> Self {
        match view {
            Ok(view) => {
                let mismatch = view.round.value != round;
                RoundRow {
                    round,
                    bundle,
                    verified: view.verification.passed && !mismatch,
                    failed_checks: view.verification.failed,
                    error: mismatch.then(|| {
                        format!(
                            "the receipt in `rounds/{round}/` records round {}",
                            view.round.value
                        )
                    }),
                    headline: Some(Headline {
                        status: view.status.value,
                        verdict: view.verdict.value.clone(),
                        leader_after: view.leader_after.value.clone(),
                        leader_changed: view.leader_changed.value,
                        top_score_ppm: view.top_score.as_ref().map(|t| t.score_ppm.value),
                        counts: view.counts.value,
                        decision: view.decision.value.clone(),
                    }),
                }
            }
            Err(unreadable) => RoundRow {
                round,
                bundle,
                verified: false,
                failed_checks: unreadable.verification.failed,
                error: Some(unreadable.error.clone()),
                headline: None,
            },
        }
    }
}

/// Who holds the seat: the leader after the last round that verifies.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CurrentLeader {
    /// The leader; `None` is the baseline (also when no round verifies).
    pub leader: Option<Leader>,
    /// The last round that verifies, which the leader is taken from; `None` when none.
    pub as_of_round: Option<u64>,
    /// The round in which the leader took the seat (the latest verified round up to
    /// `asOfRound` whose seat changed to it); `None` for the baseline holding it since the
    /// start.
    pub decided_in_round: Option<u64>,
    /// The decision sentence of `asOfRound` (untrusted text for v1 bundles).
    pub decision: Option<String>,
    /// Rounds after `asOfRound` that do not verify, skipped.
    pub skipped_rounds: Vec<u64>,
}

impl CurrentLeader {
    /// The leader according to `rows`, in any order.
    pub fn of(rows: &[RoundRow]) -> Self {
        let mut sorted: Vec<&RoundRow> = rows.iter().collect();
        sorted.sort_by_key(|r| std::cmp::Reverse(r.round));
        let last = sorted
            .iter()
            .find(|r| r.verified)
            .and_then(|r| r.headline.as_ref().map(|h| (r.round, h)));
        let as_of = last.map(|(round, _)| round);
        let skipped_rounds = sorted
            .iter()
            .filter(|r| !r.verified && as_of.is_none_or(|n| r.round > n))
            .map(|r| r.round)
            .rev()
            .collect();
        let Some((as_of_round, headline)) = last else {
            return Self {
                leader: None,
                as_of_round: None,
                decided_in_round: None,
                decision: None,
                skipped_rounds,
            };
        };
        let leader = headline.leader_after.clone();
        let decided_in_round = sorted
            .iter()
            .filter(|r| r.verified && r.round <= as_of_round)
            .find_map(|r| {
                let h = r.headline.as_ref()?;
                (h.leader_changed && h.leader_after == leader).then_some(r.round)
            });
        Self {
            leader,
            as_of_round: Some(as_of_round),
            decided_in_round,
            decision: Some(headline.decision.clone()),
            skipped_rounds,
        }
    }
}

/// A campaign's sealed rounds and its current leader (`referee rounds`, `referee
/// leader`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CampaignRounds {
    /// The campaign.
    pub campaign: CampaignId,
    /// Every sealed round, ascending.
    pub rounds: Vec<RoundRow>,
    /// Who leads.
    pub leader: CurrentLeader,
}

impl CampaignRounds {
    /// Verifies and reads every sealed round of `campaign` in `data`.
    ///
    /// Errors: [`DataError::NoCampaign`] when the campaign's directory does not exist,
    /// [`DataError::Io`] when its rounds cannot be listed. A round that does not verify
    /// or cannot be read is a row marked so, never an error.
    pub fn load(
        data: &DataDir,
        campaign: &CampaignId,
        keyring: &Keyring,
        options: &VerifyOptions,
    ) -> Result<Self, DataError> {
        let dir = data.campaign(campaign);
        if !dir.root().is_dir() {
            return Err(DataError::NoCampaign {
                id: campaign.to_string(),
                data: data.root().to_owned(),
            });
        }
        let rounds: Vec<RoundRow> = dir
            .round_numbers()?
            .into_iter()
            .map(|n| {
                let bundle = dir.round_dir(n);
                let view = RoundView::from_bundle(&bundle, keyring, options);
                RoundRow::of(n, bundle, &view)
            })
            .collect();
        let leader = CurrentLeader::of(&rounds);
        Ok(Self {
            campaign: campaign.clone(),
            rounds,
            leader,
        })
    }
}

/// A score for people as a percentage, truncated toward zero to 2 decimals, with its
/// sign: `275_600` ppm → `+27.56 %`, `-19_608` → `-1.96 %`, `0` → `0.00 %` (baseline
/// speed); a score between −100 and +100 ppm keeps its sign, `+0.00 %`. The one unit of
/// scores everywhere a person reads them.
pub fn format_score_percent(ppm: i64) -> String {
    let sign = match ppm.signum() {
        1 => "+",
        -1 => "-",
        _ => "",
    };
    let hundredths = ppm.unsigned_abs() / 100;
    format!("{sign}{}.{:02} %", hundredths / 100, hundredths % 100)
}

/// An interval bound in percent to 1 decimal, rounded outward so that the interval
/// printed never looks narrower than it is (`up` for the upper bound): `254_901` ppm →
/// `+25.4` down, `+25.5` up; `-19_608` → `-2.0` down, `-1.9` up.
fn format_bound(ppm: i64, up: bool) -> String {
    let tenths = if up {
        ppm.div_euclid(1_000) + i64::from(ppm.rem_euclid(1_000) != 0)
    } else {
        ppm.div_euclid(1_000)
    };
    let sign = match tenths.signum() {
        1 => "+",
        -1 => "-",
        _ => "",
    };
    let abs = tenths.unsigned_abs();
    format!("{sign}{}.{}", abs / 10, abs % 10)
}

/// A share for people in percent, truncated to at most 2 decimals, trailing zeros
/// dropped: `750_000` ppm → `75 %`, `937_500` → `93.75 %`, `992_187` → `99.21 %`.
pub fn format_ppm_percent(ppm: u64) -> String {
    trimmed_percent(ppm / 100)
}

/// Basis points in percent, exactly, trailing zeros dropped: `1000` → `10 %`, `310` →
/// `3.1 %`, `125` → `1.25 %`.
pub fn format_bp_percent(bp: u64) -> String {
    trimmed_percent(bp)
}

/// Hundredths of a percent as `12.5 %`.
fn trimmed_percent(hundredths: u64) -> String {
    let (whole, frac) = (hundredths / 100, hundredths % 100);
    match frac {
        0 => format!("{whole} %"),
        f if f % 10 == 0 => format!("{whole}.{} %", f / 10),
        f => format!("{whole}.{f:02} %"),
    }
}

/// A paired score for people: `+27.56 % [+25.4, +27.6] (75 % coverage, 3 passes)` — the
/// median ([`format_score_percent`]), the interval in percent rounded outward, the
/// interval's coverage and the passes it rests on.
pub fn format_paired_score(score: &PairedScore) -> String {
    format!(
        "{} [{}, {}] ({} coverage, {} {})",
        format_score_percent(score.median_ppm),
        format_bound(score.min_ppm, false),
        format_bound(score.max_ppm, true),
        format_ppm_percent(score.coverage_ppm),
        score.passes,
        if score.passes == 1 { "pass" } else { "passes" }
    )
}

/// A round's noise floor for people: `noise floor: A/A spread 3.1 % (margin 10 %),
/// baseline spread 4.2 % (drift bound 50 %): quiet` (`—` for a spread not measured); the
/// verdict is `quiet`, `inconclusive` (the A/A spread is over the margin), `baseline
/// drift` (the baseline spread is over the drift bound: infra_failed) or `unmeasured`
/// (fewer than 2 counted passes).
pub fn format_noise(noise: &NoiseCheck) -> String {
    let spread = |bp: Option<u64>| bp.map_or_else(|| "—".to_owned(), format_bp_percent);
    let verdict = match noise.verdict {
        NoiseVerdict::Quiet => "quiet",
        NoiseVerdict::Inconclusive => "inconclusive",
        NoiseVerdict::BaselineDrift => "baseline drift",
        NoiseVerdict::Unmeasured => "unmeasured",
    };
    format!(
        "noise floor: A/A spread {} (margin {}), baseline spread {} (drift bound {}): {verdict}",
        spread(noise.aa_spread_bp),
        format_bp_percent(u64::from(noise.margin_bp)),
        spread(noise.baseline_spread_bp),
        format_bp_percent(u64::from(noise.drift_bound_bp)),
    )
}

/// A round's pod for people: `ran on a slurm pod: allocation 12 on node1 (GPUs 0,1),
/// agent sha256 3f2a…; allocation 13 on node2 (GPUs 0,1), agent sha256 3f2a…` (the
/// scheduler's words escaped).
pub fn format_pod(pod: &receipts::model::PodRun) -> String {
    let backend = match pod.backend {
        receipts::model::PodBackend::Local => "local",
        receipts::model::PodBackend::Slurm => "slurm",
    };
    let allocations: Vec<String> = (pod.allocations.iter())
        .map(|a| {
            format!(
                "allocation {} on {} (GPUs {}), agent sha256 {}",
                a.id,
                receipts::text::escape_untrusted(&a.nodes),
                if a.gpus.is_empty() {
                    "none".into()
                } else {
                    receipts::text::escape_untrusted(&a.gpus)
                },
                a.agent_sha256
            )
        })
        .collect();
    format!("ran on a {backend} pod: {}", allocations.join("; "))
}

/// The load client's self-test for people: `client self-test: 128 req/s held, send lag
/// p50 80 µs, p99 1 900 µs (bound 2 000 µs); SCHED_FIFO 10, 2 CPUs kept awake` (the rate
/// achieved, to the nearest req/s; the scheduling part only where the round recorded it).
pub fn format_client_self_test(test: &ClientSelfTest) -> String {
    let figures = format!(
        "client self-test: {} req/s held, send lag p50 {} µs, p99 {} µs (bound {} µs)",
        format_grouped(test.achieved_milli_rps.saturating_add(500) / 1000),
        format_grouped(test.send_lag_p50_us),
        format_grouped(test.send_lag_p99_us),
        format_grouped(test.send_lag_bound_us),
    );
    match &test.scheduling {
        None => figures,
        Some(scheduling) => format!("{figures}; {}", format_client_scheduling(scheduling)),
    }
}

/// One finding of the capability probe for people: `streamedLength: ok — 8 tokens
/// counted by ids, asked 8`, a missing one ending `(set `backend.api.token_count`)`. The
/// detail is the engine's doing in part: a page escapes the line.
pub fn format_capability_finding(finding: &CapabilityFinding) -> String {
    let status = match finding.status {
        FindingStatus::Ok => "ok",
        FindingStatus::Missing => "missing",
        FindingStatus::NotAsked => "not asked",
        FindingStatus::NotNeeded => "not needed",
    };
    match &finding.field {
        Some(field) => format!(
            "{}: {status} — {} (set `{field}`)",
            finding.feature, finding.detail
        ),
        None => format!("{}: {status} — {}", finding.feature, finding.detail),
    }
}

/// How the client's threads were scheduled, for people: `SCHED_FIFO 10, 2 CPUs kept
/// awake`, `normal policy, no CPU kept awake`.
pub fn format_client_scheduling(scheduling: &ClientScheduling) -> String {
    let policy = match scheduling.policy {
        ClientPolicy::Fifo => format!("SCHED_FIFO {}", scheduling.priority),
        ClientPolicy::Normal => "normal policy".to_owned(),
    };
    let awake = match scheduling.awake_cpus {
        0 => "no CPU".to_owned(),
        1 => "1 CPU".to_owned(),
        n => format!("{} CPUs", format_grouped(u64::from(n))),
    };
    format!("{policy}, {awake} kept awake")
}

/// A pass order for people, by entry index: `1 0 2 0c` (`0` = the baseline, `0c` = its
/// A/A control).
pub fn format_pass_order(order: &[PassSlot]) -> String {
    let slots: Vec<String> = order
        .iter()
        .map(|s| format!("{}{}", s.entry, if s.control { "c" } else { "" }))
        .collect();
    slots.join(" ")
}

/// The mark after a throughput counted from the engines' self-reported token counts
/// ([`RoundView::self_reported_tokens`]).
pub const SELF_REPORTED: &str = "(self-reported)";

/// What a round's rates count: a `decide` round's request is one decision
/// (content/s1-pro-speed.md), so its throughputs read `decisions/s`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RateUnit {
    /// Requests per second (`req/s`): a completions round.
    #[default]
    Requests,
    /// Decisions per second (`decisions/s`): a round of `workload_kind = "decide"`.
    Decisions,
}

impl RateUnit {
    /// The unit of a round whose receipt's `decide` record is `decide`.
    pub fn of(decide: Option<&receipts::model::DecideRound>) -> Self {
        match decide {
            Some(d) if d.workload_kind == receipts::model::WorkloadKind::Decide => Self::Decisions,
            _ => Self::Requests,
        }
    }

    /// `req/s` or `decisions/s`.
    pub fn per_second(self) -> &'static str {
        match self {
            Self::Requests => "req/s",
            Self::Decisions => "decisions/s",
        }
    }
}

/// An entry's throughput for people: [`format_milli_rate`], as `≥ 31.035 req/s
/// (ceiling)` when it was measured at the search's ceiling ([`EntryView::at_ceiling`]).
pub fn format_entry_throughput(milli_rps: u64, at_ceiling: bool, unit: RateUnit) -> String {
    if at_ceiling {
        format!("≥ {} (ceiling)", format_milli_rate(milli_rps, unit))
    } else {
        format_milli_rate(milli_rps, unit)
    }
}

/// A throughput for people: milli-requests/s as req/s with 3 decimals, `31_035` →
/// `31.035 req/s`.
pub fn format_milli_rps(milli_rps: u64) -> String {
    format_milli_rate(milli_rps, RateUnit::Requests)
}

/// [`format_milli_rps`] in `unit`: `31_035` → `31.035 decisions/s` for a decide round.
pub fn format_milli_rate(milli: u64, unit: RateUnit) -> String {
    format!("{}.{:03} {}", milli / 1000, milli % 1000, unit.per_second())
}

/// A duration for people, truncated: `340ms`, `1.2s`, `2m05s`, `2h 17m`; negative ones
/// (a clock that went back) with a `-`.
pub fn format_duration_ms(ms: i64) -> String {
    let sign = if ms < 0 { "-" } else { "" };
    let ms = ms.unsigned_abs();
    let text = if ms < 1_000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{}.{}s", ms / 1000, (ms % 1000) / 100)
    } else if ms < 3_600_000 {
        format!("{}m{:02}s", ms / 60_000, (ms % 60_000) / 1000)
    } else {
        format!("{}h {:02}m", ms / 3_600_000, (ms % 3_600_000) / 60_000)
    };
    format!("{sign}{text}")
}

/// A step's status for people, a failure shouted: `ok`, `FAILED`, `skipped` (the wire
/// name is [`StepStatus::as_str`]).
pub fn format_step_status(status: StepStatus) -> &'static str {
    match status {
        StepStatus::Failed => "FAILED",
        other => other.as_str(),
    }
}

/// The UTC time of day to the millisecond, `19:54:26.752` (truncated).
pub fn format_time_of_day(at: Timestamp) -> String {
    let t = at.datetime();
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

/// A seat for people: `f98bb88…18dfc (fast)`, or `the baseline` for `None`. The miner id
/// is untrusted text: a text renderer escapes the result.
pub fn format_leader(leader: Option<&Leader>) -> String {
    match leader {
        Some(l) => format!("{} ({})", l.patch.short(), l.miner),
        None => "the baseline".to_owned(),
    }
}

/// A 32-byte seed abbreviated like a patch, `ca9adbc…744e0`.
pub fn short_seed(seed: &Seed32) -> String {
    let hex = seed.to_hex();
    format!("{}…{}", &hex[..7], &hex[59..])
}
