//! The title over time (content/title.md, from the competition rules of 001: holding
//! period, confirmation, weekly re-measurement, vacancy, revocation): a pure state machine
//! over one campaign's chain of sealed rounds and logged revocations, so the runner, the
//! verifier and the site derive the same title from the same chain.
//!
//! - Under [`SeatRuleKind::Immediate`] (`seat_rule = "000"`) a round's winner takes the
//!   title at once (today's rule, content/leader-rule.md).
//! - Under [`SeatRuleKind::Confirmed`] (`seat_rule = "001"`) a round's winner becomes
//!   *pending*; the holder keeps the title until a confirmation round at least
//!   `holding_period_s` after the win re-measures both side by side. The margin reproduced:
//!   the title moves ([`MoveReason::Confirmed`]); not reproduced: it stays and the
//!   challenger goes back to the queue once ([`TitleEvent::NotConfirmed`]). Pending
//!   challengers are confirmed in the order they won.
//! - A re-measurement round re-runs the holder against the baseline. A holder that fails a
//!   gate loses the title to its successor: the best scored challenger of the last
//!   `successor_rounds` counted regular rounds that still passes its gates when
//!   re-checked in that round; none → [`Title::holder`] `None`, *vacant* (the seed's 20 %
//!   goes back to the inference pools).
//! - A revocation takes effect at its position in the log: a revoked holder's title
//!   returns to the holder before it (or vacancy; a holder that lost the title by failing
//!   a gate never gets it back), a revoked pending challenger is dropped; sealed rounds
//!   are not re-derived.
//! - Rounds of the other clock ([`Clock`]) never count: a title on the real clock ignores
//!   rounds run on a virtual one, and the other way round.
//!
//! Times are Unix seconds on the chain's clock.

use thiserror::Error;

pub use crate::model::ClockKind as Clock;
pub use crate::model::SeatRuleKind;
use crate::model::{
    Campaign, Entry, EntryStatus, Leader, Role, RoundKindRecord, RoundRecord, RoundStatus,
    SeatRule, TypedOrText,
};
use crate::rules::score::overtakes;

/// One hour, seconds.
const HOUR_S: i64 = 3_600;

/// The default `holding_period_h`: a win is confirmed at least 24 hours later.
pub const DEFAULT_HOLDING_PERIOD_H: u32 = 24;

/// The default `remeasure_every_days`: the holder is re-measured weekly.
pub const DEFAULT_REMEASURE_EVERY_DAYS: u32 = 7;

/// The default `successor_rounds`: a failed holder's successor is drawn from the scored
/// challengers of the last four counted regular rounds.
pub const DEFAULT_SUCCESSOR_ROUNDS: u32 = 4;

/// The default margin a confirmation round must reproduce, basis points: the campaign's
/// default `overtake_margin_bp` (1 %).
pub const DEFAULT_MARGIN_BP: u32 = 100;

/// The campaign's title rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TitleRules {
    /// How a winner takes the title.
    pub seat_rule: SeatRuleKind,
    /// `holding_period_h`, in seconds: the least time between a win and its confirmation.
    pub holding_period_s: i64,
    /// `remeasure_every_days`, in seconds: the most time between two re-measurements of a
    /// holder (or between its taking the title and the first).
    pub remeasure_every_s: i64,
    /// `successor_rounds`: how many counted regular rounds back a successor is drawn from.
    pub successor_rounds: u32,
    /// `overtake_margin_bp`: the margin a confirmation round must reproduce, basis points
    /// (`T_c × 10⁴ ≥ T_h × (10⁴ + margin)`, content/leader-rule.md).
    pub margin_bp: u32,
}

impl TitleRules {
    /// A campaign's title rules: `seat_rule`, `holding_period_h`, `remeasure_every_days`
    /// and `successor_rounds`, each absent one at its default (rule 000, 24 h, 7 days, 4).
    pub fn of_campaign(campaign: &Campaign) -> Self {
        let hours = |h: u32| i64::from(h) * HOUR_S;
        Self {
            seat_rule: campaign.seat_rule.unwrap_or_default(),
            holding_period_s: hours(
                campaign
                    .holding_period_h
                    .unwrap_or(DEFAULT_HOLDING_PERIOD_H),
            ),
            remeasure_every_s: hours(
                24 * campaign
                    .remeasure_every_days
                    .unwrap_or(DEFAULT_REMEASURE_EVERY_DAYS),
            ),
            successor_rounds: campaign
                .successor_rounds
                .unwrap_or(DEFAULT_SUCCESSOR_ROUNDS),
            margin_bp: campaign.overtake_margin_bp,
        }
    }

    /// The rules of `seat_rule` with the documented defaults.
    pub fn with_defaults(seat_rule: SeatRuleKind) -> Self {
        Self {
            seat_rule,
            holding_period_s: i64::from(DEFAULT_HOLDING_PERIOD_H) * HOUR_S,
            remeasure_every_s: i64::from(DEFAULT_REMEASURE_EVERY_DAYS) * 24 * HOUR_S,
            successor_rounds: DEFAULT_SUCCESSOR_ROUNDS,
            margin_bp: DEFAULT_MARGIN_BP,
        }
    }
}

/// What a round is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RoundKind {
    /// Challengers against the holder (or the baseline); its winner, if any, cleared the
    /// margin by the round's own rule.
    Regular {
        /// The challenger the round seated (content/leader-rule.md), if any.
        winner: Option<Leader>,
        /// Why the holder, re-measured in the round, lost the seat by the round's own rule
        /// (it was disqualified); `None` when it did not. The title then moves to
        /// `winner` (or vacancy) under either seat rule.
        holder_failed: Option<String>,
        /// Every scored challenger with its score, ppm: the successor pool.
        scored: Vec<(Leader, i64)>,
    },
    /// The earliest pending challenger re-measured side by side with the holder.
    Confirmation {
        /// The challenger confirmed or not.
        challenger: Leader,
        /// Whether the margin reproduced.
        reproduced: bool,
    },
    /// The holder re-run against the baseline.
    Remeasure {
        /// Why the holder failed a gate (repository or image gone, correctness failed,
        /// crashed); `None` when it passed.
        holder_failed: Option<String>,
        /// The successor candidates re-checked (re-fetched, re-gated) in this round, each
        /// with whether it still passes its gates.
        rechecked: Vec<(Leader, bool)>,
    },
}

/// A sealed round as the title reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoundFacts {
    /// The round number.
    pub round: u64,
    /// When it ended, Unix seconds on its clock.
    pub ended_at_s: i64,
    /// Its clock.
    pub clock: Clock,
    /// Whether it counts: complete and not practice (an `infra_failed` or
    /// `inconclusive` round, or a practice round, moves nothing).
    pub counted: bool,
    /// What it was for and what it found.
    pub kind: RoundKind,
    /// The holder a confirmation or re-measurement round says it measured (`kind.holder`
    /// of its receipt; the inner `None`: the title was vacant); `None` for a round that
    /// claims no holder. A claim the chain does not give is a title moved without cause
    /// ([`TitleError::HolderMismatch`]).
    pub holder_claim: Option<Option<Leader>>,
}

impl RoundFacts {
    /// What a sealed round of `record` tells the title under `rules`, on the clock it
    /// records (`clock`, absent: real). It counts when `complete` and not practice.
    ///
    /// - A regular round (`kind` absent or `regular`): its winner is the challenger its
    ///   seat rule seated (`margin_met`, `incumbent_disqualified`; for a v1 receipt, whose
    ///   rule is free text, the new leader when the seat changed); the holder failed when
    ///   the rule says the incumbent was disqualified.
    /// - A confirmation: the margin reproduced when the challenger's entry is scored and
    ///   overtakes the holder's (the baseline's when vacant) by `rules.margin_bp`, or the
    ///   holder's entry is not scored.
    /// - A re-measurement: the holder failed when its entry is not scored (the reason: its
    ///   disqualification, or its status); every other seated submission is a re-checked
    ///   successor candidate, passing when scored.
    pub fn from_record(record: &RoundRecord, rules: &TitleRules) -> Self {
        let (kind, holder_claim) = match &record.kind {
            None | Some(RoundKindRecord::Regular) => (regular_kind(record), None),
            Some(RoundKindRecord::Confirmation { challenger, holder }) => {
                let throughput = |leader: Option<&Leader>| {
                    let entry = match leader {
                        Some(leader) => entry_of(record, leader),
                        None => record.entries.iter().find(|e| e.role == Role::Baseline),
                    }?;
                    (entry.status == EntryStatus::Scored)
                        .then_some(entry.throughput_milli_rps)
                        .flatten()
                };
                let reproduced = match (throughput(Some(challenger)), throughput(holder.as_ref())) {
                    (Some(c), Some(h)) => overtakes(c, h, rules.margin_bp),
                    (Some(_), None) => true,
                    (None, _) => false,
                };
                let kind = RoundKind::Confirmation {
                    challenger: challenger.clone(),
                    reproduced,
                };
                (kind, Some(holder.clone()))
            }
            Some(RoundKindRecord::Remeasure { holder }) => {
                let holder_failed = match entry_of(record, holder) {
                    Some(entry) if entry.status == EntryStatus::Scored => None,
                    Some(entry) => Some(match &entry.disqualification {
                        Some(d) => format!("disqualified: {}", d.detail),
                        None => format!("its entry ended {:?}", entry.status).to_lowercase(),
                    }),
                    None => Some("its entry was not seated".to_owned()),
                };
                let rechecked = record
                    .entries
                    .iter()
                    .filter_map(|e| {
                        let leader = leader_of(e)?;
                        (leader != *holder).then(|| (leader, e.status == EntryStatus::Scored))
                    })
                    .collect();
                let kind = RoundKind::Remeasure {
                    holder_failed,
                    rechecked,
                };
                (kind, Some(Some(holder.clone())))
            }
        };
        Self {
            round: record.round,
            ended_at_s: record.ended_at.datetime().unix_timestamp(),
            clock: record.clock.unwrap_or_default(),
            counted: record.outcome.status == RoundStatus::Complete && !record.practice,
            kind,
            holder_claim,
        }
    }
}

/// The submission an entry seats, when it names both patch and miner.
fn leader_of(entry: &Entry) -> Option<Leader> {
    Some(Leader {
        patch: entry.patch?,
        miner: entry.miner.clone()?,
    })
}

/// The entry of `record` seating `leader`.
fn entry_of<'r>(record: &'r RoundRecord, leader: &Leader) -> Option<&'r Entry> {
    record
        .entries
        .iter()
        .find(|e| e.patch == Some(leader.patch) && e.miner.as_ref() == Some(&leader.miner))
}

/// A regular round's facts: its winner, whether the holder failed, its scored challengers.
fn regular_kind(record: &RoundRecord) -> RoundKind {
    let outcome = &record.outcome;
    let (winner, holder_failed) = match &outcome.decision {
        TypedOrText::Typed(rule) => {
            let winner = match rule {
                SeatRule::MarginMet { winner }
                | SeatRule::CostMarginMet { winner }
                | SeatRule::IncumbentDisqualified { winner } => Some(winner.clone()),
                _ => None,
            };
            let failed = matches!(
                rule,
                SeatRule::IncumbentDisqualified { .. }
                    | SeatRule::IncumbentDisqualifiedFallback
                    | SeatRule::IncumbentDisqualifiedSlowerThanBaseline { .. }
            )
            .then(|| rule.to_string());
            (winner, failed)
        }
        TypedOrText::Text(_) => (
            outcome.leader_after.clone().filter(|_| outcome.changed),
            None,
        ),
    };
    let scored = record
        .entries
        .iter()
        .filter(|e| e.role == Role::Challenger && e.status == EntryStatus::Scored)
        .filter_map(|e| Some((leader_of(e)?, e.score_ppm?)))
        .collect();
    RoundKind::Regular {
        winner,
        holder_failed,
        scored,
    }
}

/// A logged revocation (`referee revoke`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Revocation {
    /// The round whose entry is revoked.
    pub round: u64,
    /// The revoked submission.
    pub entry: Leader,
    /// The evaluator's reason, as logged.
    pub reason: String,
    /// When it was logged, Unix seconds.
    pub at_s: i64,
}

/// A campaign's chain in order: its rounds by number, each revocation right after the
/// round `after_round` it was logged after (before the rounds that follow), revocations
/// after the same round in the order given.
pub fn chain_of(
    mut rounds: Vec<RoundFacts>,
    mut revocations: Vec<(u64, Revocation)>,
) -> Vec<ChainItem> {
    rounds.sort_by_key(|r| r.round);
    revocations.sort_by_key(|(after, _)| *after);
    let mut revocations = revocations.into_iter().peekable();
    let mut chain = Vec::new();
    // Revocations logged before the first round (after_round 0) come first.
    for facts in rounds {
        while let Some((_, revocation)) = revocations.next_if(|(after, _)| *after < facts.round) {
            chain.push(ChainItem::Revocation(revocation));
        }
        chain.push(ChainItem::Round(facts));
    }
    chain.extend(revocations.map(|(_, r)| ChainItem::Revocation(r)));
    chain
}

/// One item of the chain, in log order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChainItem {
    /// A sealed round.
    Round(RoundFacts),
    /// A logged revocation.
    Revocation(Revocation),
}

/// Why the title moved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MoveReason {
    /// Rule 000: the round seated its winner.
    Won,
    /// Rule 001: the win of round `won_round` was confirmed.
    Confirmed {
        /// The round the challenger won.
        won_round: u64,
    },
    /// The holder failed a gate when re-measured.
    HolderFailed {
        /// Why.
        reason: String,
    },
    /// The holder's entry was revoked.
    Revoked {
        /// The evaluator's reason.
        reason: String,
    },
}

/// What happened to the title at one item of the chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TitleEvent {
    /// The title moved from `from` to `to` (`None` = vacant).
    Moved {
        /// The round (for a revocation: the revoked entry's round).
        round: u64,
        /// When, Unix seconds.
        at_s: i64,
        /// The holder before.
        from: Option<Leader>,
        /// The holder after.
        to: Option<Leader>,
        /// Why.
        reason: MoveReason,
    },
    /// Rule 001: a challenger won a round and waits for its confirmation.
    Pending {
        /// The round it won.
        round: u64,
        /// The challenger.
        challenger: Leader,
        /// The earliest time of its confirmation round, Unix seconds.
        earliest_confirmation_s: i64,
    },
    /// Rule 001: a confirmation round did not reproduce the margin; the challenger goes
    /// back to the queue once.
    NotConfirmed {
        /// The confirmation round.
        round: u64,
        /// The challenger.
        challenger: Leader,
        /// The round it had won.
        won_round: u64,
        /// Whether it goes back to the queue: only the first time its win is not
        /// confirmed.
        requeue: bool,
    },
    /// The holder passed its re-measurement.
    Remeasured {
        /// The round.
        round: u64,
        /// The holder.
        holder: Leader,
    },
    /// A revoked pending challenger was dropped, or a revocation hit an entry that holds
    /// nothing: recorded only.
    RevokedEntry {
        /// The revoked entry's round.
        round: u64,
        /// The entry.
        entry: Leader,
    },
    /// A round of the other clock, or one that does not count: it moved nothing.
    Ignored {
        /// The round.
        round: u64,
    },
}

/// A challenger that won a round and waits for its confirmation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    /// The challenger.
    pub challenger: Leader,
    /// The round it won.
    pub won_round: u64,
    /// When that round ended, Unix seconds.
    pub won_at_s: i64,
    /// The earliest time of its confirmation round: `won_at_s + holding_period_s`.
    pub earliest_confirmation_s: i64,
}

/// The title after a chain.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Title {
    /// The holder; `None` = vacant.
    pub holder: Option<Leader>,
    /// When the holder took the title, Unix seconds.
    pub held_since_s: Option<i64>,
    /// When the holder was last re-measured and passed (a re-measurement round, or a
    /// regular round it ran in as the incumbent), Unix seconds.
    pub last_remeasured_s: Option<i64>,
    /// Rule 001: the challengers waiting for confirmation, earliest win first.
    pub pending: Vec<Pending>,
    /// Every earlier holder that did not lose the title by failing a gate, oldest first:
    /// where a revocation returns the title to.
    holders: Vec<Leader>,
    /// Challengers whose win was not confirmed once already: not requeued again.
    not_confirmed: Vec<Leader>,
    /// Revoked entries: they never hold the title again.
    revoked: Vec<Leader>,
    /// The counted regular rounds seen, in order: their scored challengers.
    regular: Vec<Vec<(Leader, i64)>>,
}

/// A chain the title cannot follow: what the verifier reports as a title moved without
/// cause.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum TitleError {
    /// Rounds must come in increasing number.
    #[error("round {round} follows round {previous}: rounds are out of order")]
    OutOfOrder {
        /// The round.
        round: u64,
        /// The one before it.
        previous: u64,
    },
    /// A confirmation round with no pending challenger, or for another one than the
    /// earliest.
    #[error("round {round} confirms {got}, but {expected} is the earliest pending challenger")]
    NotEarliestPending {
        /// The round.
        round: u64,
        /// The challenger it names.
        got: String,
        /// The earliest pending one (`none`).
        expected: String,
    },
    /// A confirmation before the holding period ended.
    #[error(
        "round {round} confirms a win at {at_s} s, before the holding period ends at {earliest_s} s"
    )]
    TooEarly {
        /// The round.
        round: u64,
        /// When it ended.
        at_s: i64,
        /// The earliest allowed.
        earliest_s: i64,
    },
    /// A confirmation round under rule 000, which has none.
    #[error("round {round} is a confirmation round, but the campaign's seat rule is 000")]
    ConfirmationUnderImmediate {
        /// The round.
        round: u64,
    },
    /// A re-measurement with no holder.
    #[error("round {round} re-measures a holder, but the title is vacant")]
    RemeasureWithoutHolder {
        /// The round.
        round: u64,
    },
    /// A confirmation or re-measurement round measured another holder than the one the
    /// chain gives: the title moved without cause.
    #[error(
        "round {round} measured {claimed} as the title's holder, but the chain before it gives {derived}: the title moved without cause"
    )]
    HolderMismatch {
        /// The round.
        round: u64,
        /// The holder its receipt names (`vacant`).
        claimed: String,
        /// The holder the chain gives (`vacant`).
        derived: String,
    },
    /// A failed holder's successor candidate ranked above the one chosen was not
    /// re-checked.
    #[error("round {round} skips successor {candidate}, which it did not re-check")]
    SuccessorNotRechecked {
        /// The round.
        round: u64,
        /// The candidate.
        candidate: String,
    },
}

impl Title {
    /// The title after `chain` under `rules`, counting only rounds of `clock`, with what
    /// happened at each item.
    ///
    /// Errors: [`TitleError`] when the chain holds a move the rules do not allow (a
    /// confirmation too early, out of order or under rule 000, a re-measurement of a
    /// vacant title, a successor chosen over a better candidate not re-checked, rounds out
    /// of order).
    pub fn derive(
        rules: &TitleRules,
        clock: Clock,
        chain: &[ChainItem],
    ) -> Result<(Title, Vec<TitleEvent>), TitleError> {
        let mut title = Title::default();
        let mut events = Vec::new();
        let mut previous: Option<u64> = None;
        for item in chain {
            match item {
                ChainItem::Round(facts) => {
                    if let Some(previous) = previous.filter(|p| *p >= facts.round) {
                        return Err(TitleError::OutOfOrder {
                            round: facts.round,
                            previous,
                        });
                    }
                    previous = Some(facts.round);
                    if facts.clock != clock || !facts.counted {
                        events.push(TitleEvent::Ignored { round: facts.round });
                        continue;
                    }
                    title.apply_round(rules, facts, &mut events)?;
                }
                ChainItem::Revocation(revocation) => {
                    title.apply_revocation(revocation, &mut events)
                }
            }
        }
        Ok((title, events))
    }

    fn apply_round(
        &mut self,
        rules: &TitleRules,
        facts: &RoundFacts,
        events: &mut Vec<TitleEvent>,
    ) -> Result<(), TitleError> {
        let round = facts.round;
        if let Some(claimed) = &facts.holder_claim
            && *claimed != self.holder
        {
            let vacant =
                |h: Option<&Leader>| h.map_or_else(|| "vacant".to_owned(), |h| describe(Some(h)));
            return Err(TitleError::HolderMismatch {
                round,
                claimed: vacant(claimed.as_ref()),
                derived: vacant(self.holder.as_ref()),
            });
        }
        match &facts.kind {
            RoundKind::Regular {
                winner,
                holder_failed,
                scored,
            } => {
                self.regular.push(scored.clone());
                if let (Some(reason), Some(_)) = (holder_failed, &self.holder) {
                    let reason = MoveReason::HolderFailed {
                        reason: reason.clone(),
                    };
                    let to = winner.clone().filter(|w| !self.revoked.contains(w));
                    self.move_to(to, round, facts.ended_at_s, reason, events);
                    return Ok(());
                }
                // The holder ran as the incumbent and kept its gates: re-measured.
                if self.holder.is_some() {
                    self.last_remeasured_s = Some(facts.ended_at_s);
                }
                let Some(winner) = winner.clone().filter(|w| !self.revoked.contains(w)) else {
                    return Ok(());
                };
                match rules.seat_rule {
                    SeatRuleKind::Immediate => {
                        self.move_to(
                            Some(winner),
                            round,
                            facts.ended_at_s,
                            MoveReason::Won,
                            events,
                        );
                    }
                    SeatRuleKind::Confirmed => {
                        if self.pending.iter().any(|p| p.challenger == winner) {
                            return Ok(());
                        }
                        let earliest_confirmation_s = facts.ended_at_s + rules.holding_period_s;
                        self.pending.push(Pending {
                            challenger: winner.clone(),
                            won_round: round,
                            won_at_s: facts.ended_at_s,
                            earliest_confirmation_s,
                        });
                        events.push(TitleEvent::Pending {
                            round,
                            challenger: winner,
                            earliest_confirmation_s,
                        });
                    }
                }
            }
            RoundKind::Confirmation {
                challenger,
                reproduced,
            } => {
                if rules.seat_rule == SeatRuleKind::Immediate {
                    return Err(TitleError::ConfirmationUnderImmediate { round });
                }
                let head = match self.pending.first() {
                    Some(head) if head.challenger == *challenger => head.clone(),
                    other => {
                        return Err(TitleError::NotEarliestPending {
                            round,
                            got: describe(Some(challenger)),
                            expected: describe(other.map(|p| &p.challenger)),
                        });
                    }
                };
                if facts.ended_at_s < head.earliest_confirmation_s {
                    return Err(TitleError::TooEarly {
                        round,
                        at_s: facts.ended_at_s,
                        earliest_s: head.earliest_confirmation_s,
                    });
                }
                self.pending.remove(0);
                if *reproduced {
                    let reason = MoveReason::Confirmed {
                        won_round: head.won_round,
                    };
                    self.move_to(
                        Some(head.challenger),
                        round,
                        facts.ended_at_s,
                        reason,
                        events,
                    );
                } else {
                    let requeue = !self.not_confirmed.contains(&head.challenger);
                    if requeue {
                        self.not_confirmed.push(head.challenger.clone());
                    }
                    events.push(TitleEvent::NotConfirmed {
                        round,
                        challenger: head.challenger,
                        won_round: head.won_round,
                        requeue,
                    });
                }
            }
            RoundKind::Remeasure {
                holder_failed,
                rechecked,
            } => {
                let Some(holder) = self.holder.clone() else {
                    return Err(TitleError::RemeasureWithoutHolder { round });
                };
                match holder_failed {
                    None => {
                        self.last_remeasured_s = Some(facts.ended_at_s);
                        events.push(TitleEvent::Remeasured { round, holder });
                    }
                    Some(reason) => {
                        let successor = self.successor(rules, round, &holder, rechecked)?;
                        let reason = MoveReason::HolderFailed {
                            reason: reason.clone(),
                        };
                        self.move_to(successor, round, facts.ended_at_s, reason, events);
                    }
                }
            }
        }
        Ok(())
    }

    /// The best scored challenger of the last `successor_rounds` counted regular rounds
    /// (ties: the later round, then the order recorded), other than `holder` and the
    /// revoked, that passed its re-check in this round; every better one must have been
    /// re-checked and failed.
    fn successor(
        &self,
        rules: &TitleRules,
        round: u64,
        holder: &Leader,
        rechecked: &[(Leader, bool)],
    ) -> Result<Option<Leader>, TitleError> {
        for leader in self.ranked_candidates(rules, holder) {
            match rechecked.iter().find(|(l, _)| *l == leader) {
                Some((_, true)) => return Ok(Some(leader)),
                Some((_, false)) => continue,
                None => {
                    return Err(TitleError::SuccessorNotRechecked {
                        round,
                        candidate: describe(Some(&leader)),
                    });
                }
            }
        }
        Ok(None)
    }

    /// A failed holder's successor candidates, best first: the scored challengers of the
    /// last `successor_rounds` counted regular rounds other than the holder and the
    /// revoked, each once, by score (ties: the later round, then the order recorded). A
    /// re-measurement round seats them all beside the holder, so each is re-checked.
    pub fn successor_candidates(&self, rules: &TitleRules) -> Vec<Leader> {
        match &self.holder {
            Some(holder) => self.ranked_candidates(rules, holder),
            None => Vec::new(),
        }
    }

    fn ranked_candidates(&self, rules: &TitleRules, holder: &Leader) -> Vec<Leader> {
        let window = usize::try_from(rules.successor_rounds).unwrap_or(usize::MAX);
        let mut candidates: Vec<(i64, usize, usize, &Leader)> = Vec::new();
        for (age, scored) in self.regular.iter().rev().take(window).enumerate() {
            for (order, (leader, score)) in scored.iter().enumerate() {
                if leader == holder || self.revoked.contains(leader) {
                    continue;
                }
                candidates.push((*score, age, order, leader));
            }
        }
        // Highest score first; among equals the more recent round, then recorded order.
        candidates.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let mut ranked: Vec<Leader> = Vec::new();
        for (_, _, _, leader) in candidates {
            if !ranked.contains(leader) {
                ranked.push(leader.clone());
            }
        }
        ranked
    }

    fn apply_revocation(&mut self, revocation: &Revocation, events: &mut Vec<TitleEvent>) {
        let entry = &revocation.entry;
        if !self.revoked.contains(entry) {
            self.revoked.push(entry.clone());
        }
        self.pending.retain(|p| p.challenger != *entry);
        if self.holder.as_ref() == Some(entry) {
            // Back to the latest earlier holder that is not revoked, or vacancy.
            let back = self
                .holders
                .iter()
                .rev()
                .find(|h| !self.revoked.contains(h))
                .cloned();
            let reason = MoveReason::Revoked {
                reason: revocation.reason.clone(),
            };
            self.move_to(back, revocation.round, revocation.at_s, reason, events);
        } else {
            events.push(TitleEvent::RevokedEntry {
                round: revocation.round,
                entry: entry.clone(),
            });
        }
    }

    fn move_to(
        &mut self,
        to: Option<Leader>,
        round: u64,
        at_s: i64,
        reason: MoveReason,
        events: &mut Vec<TitleEvent>,
    ) {
        let from = self.holder.take();
        // A revocation returns the title to an earlier holder that neither was revoked nor
        // lost it by failing a gate: one that failed its re-measurement is not valid.
        if let Some(from) = &from
            && !matches!(
                reason,
                MoveReason::Revoked { .. } | MoveReason::HolderFailed { .. }
            )
        {
            self.holders.push(from.clone());
        }
        self.holder = to.clone();
        self.held_since_s = to.as_ref().map(|_| at_s);
        self.last_remeasured_s = None;
        events.push(TitleEvent::Moved {
            round,
            at_s,
            from,
            to,
            reason,
        });
    }

    /// What is due at `now_s` (`referee due`): the earliest pending challenger's
    /// confirmation once its holding period has passed, and the holder's re-measurement
    /// once `remeasure_every_s` has passed since it took the title or was last
    /// re-measured.
    pub fn due(&self, rules: &TitleRules, now_s: i64) -> Vec<Due> {
        let mut due = Vec::new();
        if let Some(head) = self.pending.first()
            && now_s >= head.earliest_confirmation_s
        {
            due.push(Due::Confirmation {
                challenger: head.challenger.clone(),
                won_round: head.won_round,
            });
        }
        if let (Some(holder), Some(since)) = (&self.holder, self.held_since_s) {
            let last = self.last_remeasured_s.unwrap_or(since);
            if now_s >= last + rules.remeasure_every_s {
                due.push(Due::Remeasure {
                    holder: holder.clone(),
                    last_s: last,
                });
            }
        }
        due
    }
}

/// A round that [`Title::due`] says is due.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Due {
    /// Confirm the earliest pending challenger.
    Confirmation {
        /// The challenger.
        challenger: Leader,
        /// The round it won.
        won_round: u64,
    },
    /// Re-measure the holder.
    Remeasure {
        /// The holder.
        holder: Leader,
        /// When it took the title or was last re-measured, Unix seconds.
        last_s: i64,
    },
}

fn describe(leader: Option<&Leader>) -> String {
    match leader {
        Some(l) => format!("{} ({})", l.miner, l.patch),
        None => "none".to_owned(),
    }
}
