//! What a receipt says about the title (content/title.md, v7): the round's kind — a
//! regular round, a confirmation of a pending challenger, a re-measurement of the holder
//! — and the clock its times come from.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Leader;

/// What a round is for (`kind`, v7; absent: a regular round).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "name",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum RoundKindRecord {
    /// Challengers from the queue against the incumbent (or the baseline).
    Regular,
    /// The earliest pending challenger re-measured side by side with the holder; no
    /// challenger of the queue is seated.
    Confirmation {
        /// The pending challenger confirmed or not.
        challenger: Leader,
        /// The title's holder the round measured it against; `None`: the title was
        /// vacant and the challenger ran against the baseline.
        holder: Option<Leader>,
    },
    /// The holder re-run against the baseline, with its successor candidates (the scored
    /// challengers of the last `successor_rounds` rounds) re-checked beside it by running
    /// them; no challenger of the queue is seated.
    Remeasure {
        /// The holder re-measured.
        holder: Leader,
    },
}

impl RoundKindRecord {
    /// The kind's name as `referee round --kind` and the receipt spell it.
    pub fn name(&self) -> &'static str {
        match self {
            RoundKindRecord::Regular => "regular",
            RoundKindRecord::Confirmation { .. } => "confirmation",
            RoundKindRecord::Remeasure { .. } => "remeasure",
        }
    }
}

/// Which clock a round's recorded times come from (`clock`, v7; absent: `real`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClockKind {
    /// The system's clock.
    #[default]
    Real,
    /// A clock tests and `referee demo --days` control: its rounds never count for a
    /// title on the real clock, and are marked as such everywhere.
    Virtual,
}

impl ClockKind {
    /// `real` or `virtual`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ClockKind::Real => "real",
            ClockKind::Virtual => "virtual",
        }
    }
}
