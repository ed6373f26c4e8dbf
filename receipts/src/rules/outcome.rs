//! The round's outcome (content/leader-rule.md with the passes of content/noise.md): its
//! status, its typed reason and the seat decision, from what the paired rules decided
//! ([`decide_paired`](crate::rules::paired::decide_paired)) and what the round knows
//! besides its passes. The runner seals what [`round_outcome`] returns and the verifier
//! recomputes it from the receipt; this is the one place the precedence is written.
//!
//! Before everything: the capability probe found the baseline engine lacking a feature
//! the round needs (`capability_missing`): `infra_failed` — no entry ran, so nothing else
//! can decide. Then, in order, the first that applies decides:
//!
//! 0. a baseline run that got no token ids at all ([`without_token_ids`]):
//!    `infra_failed` with `no_token_ids` — the cause of the passes' failures that follow
//!    from it (every baseline run fails its SLA), so it is named instead of them;
//! 1. the passes' own failures (too few counted passes, a run invalid after its re-run,
//!    the baseline spreading beyond the drift bound): `infra_failed`;
//! 2. changed hardware, then the scorer's failure: `infra_failed`;
//! 3. an incumbent failed for infrastructure reasons (an invalid run of its own — up to
//!    v5: from v6 the paired rules disqualify it instead when the baseline's runs of that
//!    pass were valid ([`InvalidTwice`](crate::rules::paired::InvalidTwice)) — or a cause
//!    of its own outside its runs): `infra_failed` with
//!    `incumbent_infra_failed` counting the rounds in a row — checked after the causes
//!    above, so a round that failed for one of them is not counted against it; in a
//!    round that re-measured it alone it is disqualified instead and the seat falls back
//!    to the baseline;
//! 4. the A/A noise above the margin: `inconclusive`;
//! 5. the paired seat rule, a disqualified incumbent's seat going to the best challenger
//!    only when it is at least as fast as the baseline
//!    ([`seat_after_disqualified_incumbent`]);
//! 6. in a campaign scoring cost (s1-fast-speed), when that rule kept the seat (no
//!    challenger met the margin, or none was scored): the challenger seated on cost
//!    ([`round_cost_seat`](crate::rules::cost::round_cost_seat), `fastTrack.costSeat`)
//!    takes it (`cost_margin_met`). A challenger failing a gate was disqualified before
//!    the passes decided, so neither rule seats it.

use crate::model::{
    Leader, Outcome, ProbeRecord, Role, RoundFailure, RoundStatus, SeatRule, TypedOrText,
};
use crate::rules::leader::{
    Decision, InfraFailedIncumbent, infra_failed_incumbent, remeasure_of,
    seat_after_disqualified_incumbent,
};
use crate::rules::paired::{PairedDecision, PairedFailure, Slot};

/// A seated entry as the outcome reads it, in the round's entry order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutcomeEntry {
    /// Its index in the round.
    pub index: u32,
    /// Its role.
    pub role: Role,
    /// The seat it would hold (its patch and miner); `None` for the baseline, or an entry
    /// lacking either (it cannot be seated, and the paired rules leave it out).
    pub leader: Option<Leader>,
    /// Its paired score's median over the counted passes, ppm, when the passes score it.
    pub paired_median_ppm: Option<i64>,
}

/// What else the outcome of a round reads besides its passes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutcomeInput {
    /// The seat before the round; `None` = the baseline.
    pub leader_before: Option<Leader>,
    /// The campaign's overtake margin, basis points.
    pub margin_bp: u32,
    /// Whether the hardware fingerprint changed between setup and teardown.
    pub hardware_changed: bool,
    /// The baseline's run that got no token ids at all (`no_token_ids`, from
    /// [`without_token_ids`] over its probes; never with `token_count = "usage"`), when
    /// one did.
    pub baseline_without_token_ids: Option<RoundFailure>,
    /// The capability probe's first missing feature
    /// ([`RoundFailure::CapabilityMissing`], from the receipt's `capabilityProbe`), when
    /// the baseline engine lacked one: no entry ran.
    pub capability_missing: Option<RoundFailure>,
    /// Why the scorer failed the round (`scorer_failed`, `reference_prompt_mismatch`,
    /// `scorer_deadline`), when it did.
    pub scorer_failure: Option<RoundFailure>,
    /// Whether the incumbent is `infra_failed` for a cause of its own outside its runs
    /// (the scorer could not judge it, it never ran). Ignored without `leader_before`.
    pub incumbent_infra_failed: bool,
    /// Rounds in a row, just before this one, that the incumbent's runs made
    /// `infra_failed` ([`incumbent_infra_failed_rounds`](crate::rules::leader::incumbent_infra_failed_rounds)
    /// of the previous outcome); from
    /// [`REMEASURE_AFTER_ROUNDS`](crate::rules::leader::REMEASURE_AFTER_ROUNDS) on, this
    /// round re-measured it alone.
    pub incumbent_infra_failed_rounds: u32,
    /// The evaluator gave the round's seeds (`practice`): whatever the rule decides, the
    /// seat stays `leader_before` (the decision is recorded, the seat does not move).
    pub practice: bool,
    /// In a campaign scoring cost, the entry index the cost rule seats
    /// ([`round_cost_seat`](crate::rules::cost::round_cost_seat)); `None` otherwise.
    pub cost_seat: Option<u32>,
}

/// The round's outcome (module doc, in that order) from `decision`, what the paired rules
/// decided over the passes of a round seating `entries`, and `input`. `leaderBefore`,
/// `marginBp` and `remeasure` come from `input`; `changed` is whether the seat after
/// differs from it.
pub fn round_outcome(
    decision: &PairedDecision,
    entries: &[OutcomeEntry],
    input: &OutcomeInput,
) -> Outcome {
    let outcome = |status, reason: Option<RoundFailure>, leader_after: Option<Leader>, rule| {
        let leader_after = if input.practice {
            input.leader_before.clone()
        } else {
            leader_after
        };
        Outcome {
            status,
            reason: reason.map(TypedOrText::Typed),
            changed: leader_after != input.leader_before,
            leader_before: input.leader_before.clone(),
            leader_after,
            margin_bp: input.margin_bp,
            decision: TypedOrText::Typed(rule),
            remeasure: remeasure_of(
                input.leader_before.as_ref(),
                input.incumbent_infra_failed_rounds,
            ),
        }
    };
    let infra_failed = |failure| {
        outcome(
            RoundStatus::InfraFailed,
            Some(failure),
            input.leader_before.clone(),
            SeatRule::RoundInfraFailed,
        )
    };
    let seat = |decision: Decision| match decision {
        Decision::Seat { leader_after, rule } => {
            outcome(RoundStatus::Complete, None, leader_after, rule)
        }
        Decision::InfraFailed(failure) => infra_failed(failure),
    };

    if let Some(failure) = &input.capability_missing {
        return infra_failed(failure.clone());
    }
    if let Some(failure) = &input.baseline_without_token_ids {
        return infra_failed(failure.clone());
    }
    if let PairedDecision::InfraFailed(failure) = decision
        && !incumbents_run(failure)
    {
        return infra_failed(passes_failure(*failure, entries));
    }
    if input.hardware_changed {
        return infra_failed(RoundFailure::HardwareChanged);
    }
    if let Some(failure) = &input.scorer_failure {
        return infra_failed(failure.clone());
    }
    let incumbent_failed = || match infra_failed_incumbent(input.incumbent_infra_failed_rounds) {
        InfraFailedIncumbent::FailsRound(failure) => infra_failed(failure),
        InfraFailedIncumbent::Disqualified => seat(seat_after_disqualified_incumbent(None)),
    };
    match decision {
        // Only the incumbent's own invalid run is left of the passes' failures.
        PairedDecision::InfraFailed(_) => incumbent_failed(),
        _ if input.incumbent_infra_failed && input.leader_before.is_some() => incumbent_failed(),
        PairedDecision::Inconclusive {
            control_spread_bp,
            margin_bp,
        } => outcome(
            RoundStatus::Inconclusive,
            Some(RoundFailure::NoiseAboveMargin {
                aa_spread_bp: *control_spread_bp,
                margin_bp: *margin_bp,
            }),
            input.leader_before.clone(),
            SeatRule::RoundInconclusive,
        ),
        PairedDecision::Seat {
            rule: SeatRule::IncumbentDisqualified { winner },
            ..
        } => {
            let score = entries
                .iter()
                .find(|e| e.leader.as_ref() == Some(winner))
                .and_then(|e| e.paired_median_ppm)
                .unwrap_or(i64::MIN);
            seat(seat_after_disqualified_incumbent(Some((
                winner.clone(),
                score,
            ))))
        }
        PairedDecision::Seat { leader_after, rule } => {
            let kept = matches!(
                rule,
                SeatRule::NoScoredChallenger | SeatRule::MarginNotMet { .. }
            );
            let on_cost = input
                .cost_seat
                .filter(|_| kept)
                .and_then(|index| entries.iter().find(|e| e.index == index))
                .filter(|e| e.role == Role::Challenger)
                .and_then(|e| e.leader.clone());
            seat(match on_cost {
                Some(winner) => Decision::Seat {
                    leader_after: Some(winner.clone()),
                    rule: SeatRule::CostMarginMet { winner },
                },
                None => Decision::Seat {
                    leader_after: leader_after.clone(),
                    rule: rule.clone(),
                },
            })
        }
    }
}

/// Whether a run's probes got no token ids at all: it has probes and every measured
/// request of each failed `noTokenIds` (an engine whose API cannot return token ids,
/// under `token_count = "ids"`). Returns the run's measured requests when so.
pub fn without_token_ids(probes: &[ProbeRecord]) -> Option<u64> {
    let all_failed =
        |p: &ProbeRecord| p.requests > 0 && p.errors.no_token_ids == u64::from(p.requests);
    (!probes.is_empty() && probes.iter().all(all_failed))
        .then(|| probes.iter().map(|p| u64::from(p.requests)).sum())
}

/// Whether a failure of the passes is the incumbent's own run, invalid after its re-run
/// or never re-run: the incumbent failed for infrastructure reasons.
fn incumbents_run(failure: &PairedFailure) -> bool {
    matches!(
        failure,
        PairedFailure::RunInvalid {
            slot: Slot::Incumbent,
            ..
        } | PairedFailure::RerunMissing {
            slot: Slot::Incumbent,
            ..
        }
    )
}

/// The receipt's reason for a failure of the passes: a run names its entry's index (the
/// incumbent: the first entry of that role; challenger `i`: the `i`-th challenger that
/// can be seated, as the paired rules count them; 0 when none is); a misaligned slot —
/// runs not one per pass, which no caller builds — reads as too few passes (its runs
/// against the passes).
fn passes_failure(failure: PairedFailure, entries: &[OutcomeEntry]) -> RoundFailure {
    let entry_at = |slot: Slot| -> (u32, bool) {
        let index = match slot {
            Slot::BaselineFirst => return (0, false),
            Slot::BaselineControl => return (0, true),
            Slot::Incumbent => entries.iter().find(|e| e.role == Role::Incumbent),
            Slot::Challenger(i) => entries
                .iter()
                .filter(|e| e.role == Role::Challenger && e.leader.is_some())
                .nth(i),
        };
        (index.map_or(0, |e| e.index), false)
    };
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    match failure {
        PairedFailure::RunInvalid { slot, pass } | PairedFailure::RerunMissing { slot, pass } => {
            let (entry, control) = entry_at(slot);
            RoundFailure::RunInvalid {
                entry,
                control,
                pass: count(pass),
            }
        }
        PairedFailure::Misaligned { runs, passes, .. } => RoundFailure::TooFewPasses {
            counted: count(runs),
            required: count(passes),
        },
        PairedFailure::TooFewPasses { counted, required } => RoundFailure::TooFewPasses {
            counted: count(counted),
            required: count(required),
        },
        PairedFailure::MachineChanged {
            spread_bp,
            bound_bp,
        } => RoundFailure::Drift {
            drift_bp: spread_bp,
            bound_bp,
        },
    }
}
