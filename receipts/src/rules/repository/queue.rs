//! Registration and the rate-limited queue of a repository campaign
//! (content/repository-submissions.md, Queue): a hotkey must be registered with role
//! `competition` and a coldkey; per coldkey, at most `max_pending_per_coldkey`
//! submissions wait at once and at most `max_per_window` are admitted within any
//! `rate_window_h` hours, by commitment time. Pure: the records in, a decision out, so
//! the same rule can be recomputed from the records.

use std::fmt;

use crate::model::{
    EventKind, Gate, MinerId, MinerRegistry, MinerRole, PipelineState, RepositorySpec, Submission,
    Timestamp,
};
use time::Duration;

/// What `referee miner add --coldkey … --role … --registration …` records for a hotkey.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HotkeyRegistration {
    /// The coldkey that owns the hotkey (same alphabet as a miner id).
    pub coldkey: MinerId,
    /// Its role.
    pub role: MinerRole,
    /// The registration cost, as an opaque reference (1 to 128 printable characters).
    pub registration: String,
}

/// The most characters of a registration reference.
pub const MAX_REGISTRATION_CHARS: usize = 128;

/// Whether `reference` is a usable registration reference: 1 to
/// [`MAX_REGISTRATION_CHARS`] characters, none of them a control character or
/// whitespace.
pub fn registration_reference_ok(reference: &str) -> bool {
    (1..=MAX_REGISTRATION_CHARS).contains(&reference.chars().count())
        && !reference
            .chars()
            .any(|c| c.is_control() || c.is_whitespace())
}

/// Which limit refused a submission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// `max_pending_per_coldkey` submissions already wait.
    Pending {
        /// The limit.
        max: u32,
    },
    /// `max_per_window` submissions were admitted within `rate_window_h` hours.
    Window {
        /// The limit.
        max: u32,
        /// The window, hours.
        window_h: u32,
    },
}

/// Why the queue refuses a commitment (recorded at gate `verified`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueueRejection {
    /// The hotkey is not registered for the campaign.
    Unregistered {
        /// The hotkey.
        hotkey: MinerId,
    },
    /// The hotkey is registered without a coldkey and role (a diff campaign's form).
    NoCompetitionRegistration {
        /// The hotkey.
        hotkey: MinerId,
    },
    /// The hotkey is an inference miner's: it cannot also submit.
    InferenceRole {
        /// The hotkey.
        hotkey: MinerId,
    },
    /// Over one of the coldkey's limits.
    RateLimited {
        /// The coldkey.
        coldkey: String,
        /// The limit reached.
        limit: Limit,
        /// How many count against it.
        count: usize,
        /// When the next slot opens (for the window; `None` for pending: when one of
        /// them leaves the queue).
        next_slot: Option<Timestamp>,
    },
}

impl QueueRejection {
    /// The typed reason, snake_case, as recorded.
    pub fn reason(&self) -> &'static str {
        match self {
            QueueRejection::Unregistered { .. } => "unregistered_hotkey",
            QueueRejection::NoCompetitionRegistration { .. } => "not_a_competition_hotkey",
            QueueRejection::InferenceRole { .. } => "inference_hotkey",
            QueueRejection::RateLimited { .. } => "rate_limited",
        }
    }
}

impl fmt::Display for QueueRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let reason = self.reason();
        match self {
            QueueRejection::Unregistered { hotkey } => {
                write!(
                    f,
                    "{reason}: hotkey `{hotkey}` is not registered for this campaign"
                )
            }
            QueueRejection::NoCompetitionRegistration { hotkey } => write!(
                f,
                "{reason}: hotkey `{hotkey}` is registered without a coldkey and role; register it with `referee miner add --coldkey … --role competition --registration …`"
            ),
            QueueRejection::InferenceRole { hotkey } => write!(
                f,
                "{reason}: hotkey `{hotkey}` is registered as an inference miner; one hotkey cannot be both, register another as `competition`"
            ),
            QueueRejection::RateLimited {
                coldkey,
                limit,
                count,
                next_slot,
            } => {
                match limit {
                    Limit::Pending { max } => write!(
                        f,
                        "{reason}: coldkey `{coldkey}` has {count} submissions waiting, at most {max} (max_pending_per_coldkey)"
                    )?,
                    Limit::Window { max, window_h } => write!(
                        f,
                        "{reason}: coldkey `{coldkey}` had {count} submissions admitted within {window_h} h, at most {max} (max_per_window)"
                    )?,
                }
                match next_slot {
                    Some(at) => write!(f, "; the next slot opens at {at}"),
                    None => f.write_str(
                        "; the next slot opens when one of them is rejected, scored or disqualified",
                    ),
                }
            }
        }
    }
}

/// Whether `record` was admitted to the queue: a repository record of `coldkey` that was
/// not refused at gate `verified` (registration or rate limit).
fn admitted(record: &Submission, coldkey: &str) -> bool {
    let ours = record
        .repository
        .as_ref()
        .is_some_and(|r| r.coldkey.as_deref() == Some(coldkey));
    let refused = record.events.iter().any(|e| {
        matches!(
            e.kind,
            EventKind::Transition {
                to: PipelineState::Rejected,
                gate: Some(Gate::Verified),
                ..
            }
        )
    });
    ours && !refused
}

/// Whether a commitment at `other` counts in the window of one at `at`: within the
/// `rate_window_h` hours up to it, (`at` − window, `at`].
pub fn in_window(spec: &RepositorySpec, at: Timestamp, other: Timestamp) -> bool {
    let start = at.datetime() - Duration::hours(spec.rate_window_h.into());
    other.datetime() > start && other <= at
}

/// The queue's decision on a commitment by `hotkey` at `committed_at`, against the
/// campaign's other `records` (the record being decided excluded by the caller).
/// Returns the coldkey the hotkey is registered under.
///
/// Errors: the [`QueueRejection`] that refuses it.
pub fn admit(
    registry: &MinerRegistry,
    spec: &RepositorySpec,
    records: &[Submission],
    hotkey: &MinerId,
    committed_at: Timestamp,
) -> Result<String, QueueRejection> {
    let registration = registry
        .get(hotkey)
        .ok_or_else(|| QueueRejection::Unregistered {
            hotkey: hotkey.clone(),
        })?;
    let (Some(coldkey), Some(role)) = (&registration.coldkey, registration.role) else {
        return Err(QueueRejection::NoCompetitionRegistration {
            hotkey: hotkey.clone(),
        });
    };
    if role == MinerRole::Inference {
        return Err(QueueRejection::InferenceRole {
            hotkey: hotkey.clone(),
        });
    }
    let ours: Vec<&Submission> = records.iter().filter(|r| admitted(r, coldkey)).collect();
    let window = Duration::hours(spec.rate_window_h.into());
    let mut in_window: Vec<Timestamp> = ours
        .iter()
        .filter_map(|r| r.repository.as_ref().map(|r| r.committed_at))
        .filter(|at| self::in_window(spec, committed_at, *at))
        .collect();
    in_window.sort();
    let max = usize::try_from(spec.max_per_window).unwrap_or(usize::MAX);
    if in_window.len() >= max {
        let oldest_blocking = in_window[in_window.len() - max];
        return Err(QueueRejection::RateLimited {
            coldkey: coldkey.clone(),
            limit: Limit::Window {
                max: spec.max_per_window,
                window_h: spec.rate_window_h,
            },
            count: in_window.len(),
            next_slot: Some(Timestamp::from_datetime(
                oldest_blocking.datetime() + window,
            )),
        });
    }
    let pending = ours
        .iter()
        .filter(|r| {
            !matches!(
                r.state,
                PipelineState::Rejected | PipelineState::Scored | PipelineState::Disqualified
            )
        })
        .count();
    if pending >= usize::try_from(spec.max_pending_per_coldkey).unwrap_or(usize::MAX) {
        return Err(QueueRejection::RateLimited {
            coldkey: coldkey.clone(),
            limit: Limit::Pending {
                max: spec.max_pending_per_coldkey,
            },
            count: pending,
            next_slot: None,
        });
    }
    Ok(coldkey.clone())
}
