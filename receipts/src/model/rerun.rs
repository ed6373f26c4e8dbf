//! The rerun record: the predicate of the in-toto Statement a re-run of a sealed round
//! signs (`referee verify --rerun --key`; content/verifying.md, Re-running a round). Its
//! subjects are the original round's Statement bytes ([`ORIGINAL_STATEMENT_FILE`]) and
//! the re-run's own artifacts (logs, probe logs, correctness files, and the re-run's
//! round record). Every number is an integer in the unit its name carries; names are
//! lowerCamelCase.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::hardware::HardwareFingerprint;
use super::ids::{MinerId, Sha256Hex, Timestamp};
use super::round::{
    CampaignRef, EntryStatus, Leader, NoiseCheck, PairedScore, Role, RoundStatus, Tool,
};

/// `predicateType` of a rerun bundle. Bumped on any change of [`RerunRecord`]
/// (ARCHITECTURE.md, Predicate versions). v2 requires the tolerance's `capBp`, which late
/// v1 re-runs recorded optionally.
pub const RERUN_PREDICATE_TYPE: &str = "https://referee.dev/predicates/rerun/v2";

/// `predicateType` of a rerun bundle sealed before v2: its tolerance may lack `capBp`
/// (uncapped), and still verifies.
pub const RERUN_PREDICATE_TYPE_V1: &str = "https://referee.dev/predicates/rerun/v1";

/// Every rerun `predicateType` this build verifies, oldest first.
pub const RERUN_PREDICATE_TYPES: [&str; 2] = [RERUN_PREDICATE_TYPE_V1, RERUN_PREDICATE_TYPE];

/// Bundle-relative path of the original round's Statement bytes (the payload of its
/// envelope, byte for byte) in a rerun bundle: a subject like every other file.
pub const ORIGINAL_STATEMENT_FILE: &str = "original.statement.json";

/// Bundle-relative path of the re-run's own round record (pretty JSON) in a rerun bundle:
/// every run, pass and probe log of the re-run, as a round predicate holds them.
pub const RERUN_ROUND_FILE: &str = "rerun.round.json";

/// A re-run of a sealed round and what it found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RerunRecord {
    /// The receipt that was re-run.
    pub original: OriginalReceipt,
    /// The tool that re-ran it.
    pub tool: Tool,
    /// The machine the re-run ran on, at its setup; absent when it never got there.
    pub hardware: Option<HardwareFingerprint>,
    /// When the re-run started (before the original was verified).
    pub started_at: Timestamp,
    /// When its comparisons ended.
    pub ended_at: Timestamp,
    /// The request-sequence digest regenerated from the original's revealed seeds and
    /// campaign copy; absent when the re-run never got that far.
    pub request_sequence_digest: Option<Sha256Hex>,
    /// The speed tolerance every entry's paired score is held to.
    pub tolerance: SpeedTolerance,
    /// The re-run's own measured noise; absent when it ran no round.
    pub noise: Option<NoiseCheck>,
    /// The round as a whole: the request sequence, its status and the seat.
    pub round: Comparison,
    /// Every entry of the original round, in its order.
    pub entries: Vec<RerunEntry>,
    /// The verdict over the round and every entry.
    pub verdict: RerunVerdict,
}

/// The original receipt, as the re-run verified it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OriginalReceipt {
    /// Bundle-relative path of its Statement bytes: [`ORIGINAL_STATEMENT_FILE`].
    pub statement: String,
    /// sha256 of those bytes: the original's `statement sha256`, which a next round's
    /// `previousReceipt` names.
    pub statement_digest: Sha256Hex,
    /// Its `predicateType`.
    pub predicate_type: String,
    /// Its campaign.
    pub campaign: CampaignRef,
    /// Its round number.
    pub round: u64,
    /// The keyids whose signatures on it counted when the re-run verified it.
    pub signed_by: Vec<String>,
}

/// How far an entry's paired score may move between the original and the re-run
/// (content/verifying.md, Re-running a round).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpeedTolerance {
    /// The tolerance, basis points: a paired score may move by at most `100 × toleranceBp`
    /// ppm.
    pub tolerance_bp: u64,
    /// What it was derived from.
    pub basis: ToleranceBasis,
    /// The cap on the tolerance, basis points: two thirds of the campaign's overtake
    /// margin (`receipts::rules::rerun::margin_cap_bp`), so a re-run never forgives a
    /// move of a whole margin; required from rerun v2, absent in v1 re-runs sealed before
    /// the cap, whose tolerance is uncapped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap_bp: Option<u32>,
}

/// What a [`SpeedTolerance`] was derived from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ToleranceBasis {
    /// Both rounds measured their A/A noise floor:
    /// `⌈factor × √(originalAaSpreadBp² + rerunAaSpreadBp²)⌉`.
    Noise {
        /// The original round's A/A spread, basis points.
        original_aa_spread_bp: u64,
        /// The re-run's A/A spread, basis points.
        rerun_aa_spread_bp: u64,
        /// The factor `k`.
        factor: u32,
    },
    /// A round measured no spread (one run per entry, or fewer than two passes in which
    /// both baseline runs counted): the campaign's drift bound.
    DriftBound {
        /// The campaign's `drift_bound_bp`.
        bound_bp: u32,
    },
}

/// A verdict, per entry and overall, as rebuilderd's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RerunVerdict {
    /// Everything compared held.
    Good,
    /// Only a decision moved whose original margin lay inside the tolerance.
    Noisy,
    /// A number or a decision moved beyond its rule.
    Bad,
    /// The re-run itself broke (its reason says where).
    Fail,
    /// Not tried (its reason says why).
    Unkwn,
}

impl RerunVerdict {
    /// `GOOD`, `NOISY`, `BAD`, `FAIL`, `UNKWN`.
    pub fn as_str(&self) -> &'static str {
        match self {
            RerunVerdict::Good => "GOOD",
            RerunVerdict::Noisy => "NOISY",
            RerunVerdict::Bad => "BAD",
            RerunVerdict::Fail => "FAIL",
            RerunVerdict::Unkwn => "UNKWN",
        }
    }
}

impl fmt::Display for RerunVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One part of a re-run (the round, or an entry): its verdict, why when it is
/// [`RerunVerdict::Fail`] or [`RerunVerdict::Unkwn`], and every comparison that did not
/// hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// The verdict.
    pub verdict: RerunVerdict,
    /// Where the re-run broke (`fail`) or why it was not tried (`unkwn`). May quote an
    /// engine's log: escape it before showing it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Each comparison that did not hold, old against new.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
}

/// An entry of the original round, re-run (or not).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RerunEntry {
    /// Its index in the original round.
    pub index: u32,
    /// Its role there.
    pub role: Role,
    /// Its miner; `None` for the baseline.
    pub miner: Option<MinerId>,
    /// sha256 of its diff; `None` for the baseline.
    pub patch: Option<Sha256Hex>,
    /// How it ended in the original.
    pub original_status: EntryStatus,
    /// Its paired score in the original, ppm.
    pub original_score_ppm: Option<i64>,
    /// What the comparison found.
    pub comparison: Comparison,
    /// What the re-run measured; absent when it did not run the entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun: Option<RerunMeasured>,
}

/// What the re-run measured of one entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RerunMeasured {
    /// How the entry ended in the re-run.
    pub status: EntryStatus,
    /// Its paired score against the re-run's own baseline, ppm.
    pub score_ppm: Option<i64>,
    /// The paired score with its interval.
    pub paired_score: Option<PairedScore>,
    /// Its correctness verdict, when it has one.
    pub correctness_passed: Option<bool>,
    /// Bundle-relative paths of its files in the rerun bundle (engine and step logs,
    /// probe logs, correctness files), sorted.
    pub files: Vec<String>,
}

/// A comparison that did not hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// Whether it makes its part BAD or only noisy.
    pub severity: Severity,
    /// What moved.
    pub check: FindingKind,
}

/// How much a [`Finding`] counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Beyond its rule: the part is BAD.
    Bad,
    /// A decision whose original margin lay inside the tolerance: the part is noisy.
    Noisy,
}

/// What moved between the original and the re-run, old against new.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum FindingKind {
    /// The request sequence regenerated from the revealed seeds hashes otherwise
    /// (exact).
    RequestSequence {
        /// The original's `requestSequenceDigest`.
        original: Sha256Hex,
        /// The re-run's.
        rerun: Sha256Hex,
    },
    /// The engine config of the tree the recorded diff makes on the pinned baseline
    /// (exact).
    EngineConfig {
        /// The original's `engine.configSha256`.
        original: Sha256Hex,
        /// The re-run's.
        rerun: Sha256Hex,
    },
    /// The entry ended otherwise.
    Status {
        /// Its status in the original.
        original: EntryStatus,
        /// In the re-run.
        rerun: EntryStatus,
        /// The original's disqualification reason (`sla_unmet`, …), when disqualified.
        original_reason: Option<String>,
        /// The re-run's.
        rerun_reason: Option<String>,
    },
    /// The correctness verdict differs.
    Correctness {
        /// Whether it passed in the original.
        original_passed: bool,
        /// In the re-run.
        rerun_passed: bool,
    },
    /// A correctness item's distance moved beyond its rule: bit-exact on the built-in
    /// engine with identical CPU features, else within the item tolerance.
    ItemDistance {
        /// The item.
        item: u32,
        /// Its distance in the original, micro-nats.
        original_micro_nats: u64,
        /// In the re-run, micro-nats.
        rerun_micro_nats: u64,
        /// How far it may move, micro-nats (0: bit-exact).
        tolerance_micro_nats: u64,
    },
    /// The paired score moved beyond the speed tolerance.
    Speedup {
        /// The original's paired score, ppm.
        original_ppm: i64,
        /// The re-run's, ppm.
        rerun_ppm: i64,
        /// How far it may move, ppm.
        tolerance_ppm: u64,
    },
    /// The round ended otherwise.
    RoundStatus {
        /// The original's status.
        original: RoundStatus,
        /// The re-run's.
        rerun: RoundStatus,
    },
    /// The seat after the round differs (the decision recomputed from the re-run's
    /// passes with the original's roles).
    Seat {
        /// The original's `leaderAfter` (`None` = the baseline).
        original: Option<Leader>,
        /// The re-run's.
        rerun: Option<Leader>,
        /// How far the re-run's own medians contradict the original's seat, ppm, 0 when
        /// they do not (`receipts::rules::rerun::seat_contradiction_ppm`: the challenger
        /// the original seated short of the margin, or beaten, in the re-run; the one the
        /// re-run seated beyond it); absent when no challenger's margin decided. Re-runs
        /// sealed before the margin cap recorded the original's signed distance from the
        /// margin here.
        margin_distance_ppm: Option<i64>,
        /// The speed tolerance it was held to, ppm.
        tolerance_ppm: u64,
    },
}

impl fmt::Display for FindingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let percent = |ppm: i64| {
            let sign = if ppm < 0 { "-" } else { "+" };
            let hundredths = ppm.unsigned_abs() / 100;
            format!("{sign}{}.{:02} %", hundredths / 100, hundredths % 100)
        };
        let seat = |leader: &Option<Leader>| {
            leader.as_ref().map_or_else(
                || "the baseline".to_owned(),
                |l| format!("{} ({})", l.patch.short(), l.miner),
            )
        };
        match self {
            FindingKind::RequestSequence { original, rerun } => {
                write!(f, "request-sequence digest {original} → {rerun}")
            }
            FindingKind::EngineConfig { original, rerun } => write!(
                f,
                "engine config sha256 {} → {} (the recorded diff on the pinned baseline)",
                original.short(),
                rerun.short()
            ),
            FindingKind::Status {
                original,
                rerun,
                original_reason,
                rerun_reason,
            } => {
                let status = |s: &EntryStatus, r: &Option<String>| {
                    let name = s.as_str();
                    r.as_ref()
                        .map_or_else(|| name.to_owned(), |r| format!("{name} ({r})"))
                };
                write!(
                    f,
                    "status {} → {}",
                    status(original, original_reason),
                    status(rerun, rerun_reason)
                )
            }
            FindingKind::Correctness {
                original_passed,
                rerun_passed,
            } => {
                let word = |p: bool| if p { "passed" } else { "failed" };
                write!(
                    f,
                    "correctness {} → {}",
                    word(*original_passed),
                    word(*rerun_passed)
                )
            }
            FindingKind::ItemDistance {
                item,
                original_micro_nats,
                rerun_micro_nats,
                tolerance_micro_nats,
            } => write!(
                f,
                "correctness item {item}: distance {original_micro_nats} → {rerun_micro_nats} \
                 µnat ({})",
                if *tolerance_micro_nats == 0 {
                    "must be bit-exact".to_owned()
                } else {
                    format!("tolerance {tolerance_micro_nats} µnat")
                }
            ),
            FindingKind::Speedup {
                original_ppm,
                rerun_ppm,
                tolerance_ppm,
            } => write!(
                f,
                "paired score {} → {} (scorePpm {original_ppm} → {rerun_ppm}: moved {} ppm, \
                 tolerance {tolerance_ppm} ppm)",
                percent(*original_ppm),
                percent(*rerun_ppm),
                (i128::from(*rerun_ppm) - i128::from(*original_ppm)).unsigned_abs()
            ),
            FindingKind::RoundStatus { original, rerun } => {
                write!(f, "round status {} → {}", original.as_str(), rerun.as_str())
            }
            FindingKind::Seat {
                original,
                rerun,
                margin_distance_ppm,
                tolerance_ppm,
            } => {
                write!(
                    f,
                    "seat after the round {} → {}",
                    seat(original),
                    seat(rerun)
                )?;
                if let Some(distance) = margin_distance_ppm {
                    write!(
                        f,
                        " (the re-run contradicts it by {distance} ppm, tolerance \
                         {tolerance_ppm} ppm)"
                    )?;
                }
                Ok(())
            }
        }
    }
}
