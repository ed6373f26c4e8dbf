//! Scores and the leader rule, exactly as content/leader-rule.md defines them: pure integer
//! arithmetic on milli-requests/s, parts per million and basis points, so the verifier
//! recomputes every decision from a receipt's numbers and gets the same answer.
//!
//! - score = T / T_baseline − 1, in parts per million, floor-rounded, against the round's
//!   *first* baseline run;
//! - the incumbent is the current leader, or the baseline when there is none;
//! - among scored challengers the highest throughput (ties: earlier commitment) takes the
//!   seat iff `T_c × 10⁴ ≥ T_i × (10⁴ + margin_bp)`, `T_i` measured in the same round;
//!   no runner-up;
//! - a disqualified incumbent yields the seat to the best scored challenger without the
//!   margin if it is at least as fast as the baseline (`T_c ≥ T_baseline`, score ≥ 0),
//!   otherwise to the baseline;
//! - a failed baseline, a drift beyond the bound, changed hardware, a failed scorer or an
//!   incumbent that failed for infrastructure reasons make the round `infra_failed`: no
//!   leader change (content/measurement.md, Paired comparison and drift);
//! - an incumbent whose runs made [`REMEASURE_AFTER_ROUNDS`] rounds in a row
//!   `infra_failed` is re-measured alone in the next round, and failing for
//!   infrastructure reasons there too, it is disqualified.

use crate::model::{
    IncumbentRemeasure, Leader, Outcome, RoundFailure, RoundStatus, SeatRule, TypedOrText,
};
use crate::rules::score::{drift_bp, overtakes, score_ppm};

/// Rounds in a row that the incumbent's own runs may make `infra_failed` before the next
/// round re-measures it alone (only the baseline and the incumbent seated).
pub const REMEASURE_AFTER_ROUNDS: u32 = 2;

/// A challenger as the leader rule sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contender {
    /// The submission.
    pub leader: Leader,
    /// Its median throughput in milli-requests/s when scored; `None` when disqualified.
    pub throughput_milli_rps: Option<u64>,
}

/// How the incumbent's own runs ended this round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncumbentRun {
    /// Scored, at this median throughput.
    Scored {
        /// Its median throughput, milli-requests/s.
        throughput_milli_rps: u64,
    },
    /// Disqualified by its own runs (its engine died or crashed, it missed the SLA, it
    /// failed correctness or compliance).
    Disqualified,
    /// Failed for infrastructure reasons (its tree, its backend, the client's send lag,
    /// the scorer's verdict on it, or it never ran).
    InfraFailed,
}

/// Everything the leader rule reads, all measured in one round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderInput<'a> {
    /// The seat before the round; `None` = the baseline holds it.
    pub leader_before: Option<Leader>,
    /// How the leader's runs ended this round. Ignored when `leader_before` is `None`.
    pub incumbent: IncumbentRun,
    /// Rounds in a row, just before this one, that the incumbent's runs made
    /// `infra_failed`: [`incumbent_infra_failed_rounds`] of the previous round's outcome.
    /// At [`REMEASURE_AFTER_ROUNDS`] or more this round re-measures the incumbent alone.
    pub incumbent_infra_failed_rounds: u32,
    /// The first baseline run, milli-requests/s; `None` when the baseline failed.
    pub baseline_first_milli_rps: Option<u64>,
    /// The drift baseline, milli-requests/s; `None` when it failed.
    pub baseline_drift_milli_rps: Option<u64>,
    /// The campaign's drift bound, basis points.
    pub drift_bound_bp: u32,
    /// The campaign's overtake margin, basis points.
    pub margin_bp: u32,
    /// Whether the hardware fingerprint changed between setup and teardown.
    pub hardware_changed: bool,
    /// Whether the reference runtime (the scorer) failed, so no correctness verdict
    /// exists.
    pub scorer_failed: bool,
    /// The challengers, in commitment order (earliest first: it wins ties).
    pub challengers: &'a [Contender],
}

impl LeaderInput<'_> {
    /// Set when this round re-measures the incumbent alone: a leader is seated and its
    /// runs made the [`REMEASURE_AFTER_ROUNDS`] (or more) rounds before this one
    /// `infra_failed`.
    pub fn remeasure(&self) -> Option<IncumbentRemeasure> {
        remeasure_of(
            self.leader_before.as_ref(),
            self.incumbent_infra_failed_rounds,
        )
    }

    /// Whether the incumbent is disqualified for failing for infrastructure reasons again
    /// when re-measured alone.
    pub fn incumbent_failed_remeasure(&self) -> bool {
        self.remeasure().is_some() && self.incumbent == IncumbentRun::InfraFailed
    }
}

/// Whether a round after `infra_failed_rounds` rounds in a row that the incumbent's runs
/// made `infra_failed` seats only the baseline and the incumbent.
pub fn remeasures_alone(infra_failed_rounds: u32) -> bool {
    infra_failed_rounds >= REMEASURE_AFTER_ROUNDS
}

/// The outcome's `remeasure` of a round seated with `leader_before` after
/// `infra_failed_rounds` rounds in a row its incumbent's runs made `infra_failed`: set
/// when a leader is seated and [`remeasures_alone`] says so.
pub fn remeasure_of(
    leader_before: Option<&Leader>,
    infra_failed_rounds: u32,
) -> Option<IncumbentRemeasure> {
    (leader_before.is_some() && remeasures_alone(infra_failed_rounds)).then_some(
        IncumbentRemeasure {
            infra_failed_rounds,
        },
    )
}

/// What an incumbent that failed for infrastructure reasons does to its round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InfraFailedIncumbent {
    /// The round is `infra_failed` with this reason (`incumbent_infra_failed`, counting
    /// the rounds in a row): the incumbent keeps its seat.
    FailsRound(RoundFailure),
    /// The round re-measured it alone: it is disqualified.
    Disqualified,
}

/// What an incumbent that failed for infrastructure reasons does to its round, after
/// `infra_failed_rounds` rounds in a row its runs made `infra_failed` just before it.
pub fn infra_failed_incumbent(infra_failed_rounds: u32) -> InfraFailedIncumbent {
    if remeasures_alone(infra_failed_rounds) {
        InfraFailedIncumbent::Disqualified
    } else {
        InfraFailedIncumbent::FailsRound(RoundFailure::IncumbentInfraFailed {
            consecutive: infra_failed_rounds.saturating_add(1),
        })
    }
}

/// Rounds in a row, ending with the round whose outcome this is, that the incumbent's runs
/// made `infra_failed`: the `consecutive` of an `incumbent_infra_failed` reason, else 0
/// (the next round's [`LeaderInput::incumbent_infra_failed_rounds`]).
pub fn incumbent_infra_failed_rounds(outcome: &Outcome) -> u32 {
    match outcome.reason.as_ref().and_then(TypedOrText::typed) {
        Some(RoundFailure::IncumbentInfraFailed { consecutive }) => *consecutive,
        _ => 0,
    }
}

/// The decision of a round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The round does not count: no leader change, and no challenger's one requeue is
    /// used.
    InfraFailed(RoundFailure),
    /// The round counts; `leader_after` holds the seat (`None` = the baseline).
    Seat {
        /// The seat after the round.
        leader_after: Option<Leader>,
        /// The rule that decided.
        rule: SeatRule,
    },
}

/// Applies the leader rule of content/leader-rule.md to one round's measurements.
pub fn decide(input: &LeaderInput<'_>) -> Decision {
    let Some(first) = input.baseline_first_milli_rps.filter(|t| *t > 0) else {
        return Decision::InfraFailed(RoundFailure::BaselineFailed);
    };
    let Some(drift) = input.baseline_drift_milli_rps else {
        return Decision::InfraFailed(RoundFailure::DriftBaselineFailed);
    };
    let drift = drift_bp(first, drift).unwrap_or(u64::MAX);
    if drift > u64::from(input.drift_bound_bp) {
        return Decision::InfraFailed(RoundFailure::Drift {
            drift_bp: drift,
            bound_bp: input.drift_bound_bp,
        });
    }
    if input.hardware_changed {
        return Decision::InfraFailed(RoundFailure::HardwareChanged);
    }
    if input.scorer_failed {
        return Decision::InfraFailed(RoundFailure::ScorerFailed);
    }

    // The incumbent's throughput; `None` when it is disqualified. With no leader the
    // baseline defends at its first run.
    let incumbent_milli_rps = match (&input.leader_before, input.incumbent) {
        (None, _) => Some(first),
        (
            Some(_),
            IncumbentRun::Scored {
                throughput_milli_rps,
            },
        ) => Some(throughput_milli_rps),
        (Some(_), IncumbentRun::Disqualified) => None,
        (Some(_), IncumbentRun::InfraFailed) => {
            match infra_failed_incumbent(input.incumbent_infra_failed_rounds) {
                InfraFailedIncumbent::FailsRound(failure) => {
                    return Decision::InfraFailed(failure);
                }
                InfraFailedIncumbent::Disqualified => None,
            }
        }
    };

    // The best scored challenger: highest throughput, the earliest commitment on a tie
    // (a strict `>` keeps the first of equals).
    let mut best: Option<(usize, u64)> = None;
    for (index, contender) in input.challengers.iter().enumerate() {
        if let Some(t) = contender.throughput_milli_rps
            && best.is_none_or(|(_, best_t)| t > best_t)
        {
            best = Some((index, t));
        }
    }

    let leader_of = |index: usize| input.challengers[index].leader.clone();
    match (incumbent_milli_rps, best) {
        (Some(_), None) => Decision::Seat {
            leader_after: input.leader_before.clone(),
            rule: SeatRule::NoScoredChallenger,
        },
        (Some(incumbent), Some((index, t))) => {
            if overtakes(t, incumbent, input.margin_bp) {
                Decision::Seat {
                    leader_after: Some(leader_of(index)),
                    rule: SeatRule::MarginMet {
                        winner: leader_of(index),
                    },
                }
            } else {
                Decision::Seat {
                    leader_after: input.leader_before.clone(),
                    rule: SeatRule::MarginNotMet {
                        best: leader_of(index),
                    },
                }
            }
        }
        (None, best) => seat_after_disqualified_incumbent(
            best.map(|(index, t)| (leader_of(index), score_ppm(t, first).unwrap_or(i64::MIN))),
        ),
    }
}

/// The seat when the incumbent is disqualified (content/leader-rule.md, step 5), from the
/// best scored challenger and its score in parts per million: it takes the seat without
/// the margin iff it is at least as fast as the baseline (score ≥ 0); otherwise, or with
/// no scored challenger, the seat falls back to the baseline.
pub fn seat_after_disqualified_incumbent(best: Option<(Leader, i64)>) -> Decision {
    match best {
        Some((winner, score)) if score >= 0 => Decision::Seat {
            leader_after: Some(winner.clone()),
            rule: SeatRule::IncumbentDisqualified { winner },
        },
        Some((best, _)) => Decision::Seat {
            leader_after: None,
            rule: SeatRule::IncumbentDisqualifiedSlowerThanBaseline { best },
        },
        None => Decision::Seat {
            leader_after: None,
            rule: SeatRule::IncumbentDisqualifiedFallback,
        },
    }
}

impl Decision {
    /// The round record's [`Outcome`] for this decision.
    pub fn to_outcome(&self, input: &LeaderInput<'_>) -> Outcome {
        let leader_before = input.leader_before.clone();
        match self {
            Decision::InfraFailed(failure) => Outcome {
                status: RoundStatus::InfraFailed,
                reason: Some(TypedOrText::Typed(failure.clone())),
                leader_after: leader_before.clone(),
                leader_before,
                changed: false,
                margin_bp: input.margin_bp,
                decision: TypedOrText::Typed(SeatRule::RoundInfraFailed),
                remeasure: input.remeasure(),
            },
            Decision::Seat { leader_after, rule } => Outcome {
                status: RoundStatus::Complete,
                reason: None,
                changed: *leader_after != leader_before,
                leader_before,
                leader_after: leader_after.clone(),
                margin_bp: input.margin_bp,
                decision: TypedOrText::Typed(rule.clone()),
                remeasure: input.remeasure(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::score::score_ppm;

    fn leader(n: u8) -> Leader {
        Leader {
            patch: crate::model::Sha256Hex::digest(&[n]),
            miner: format!("miner-{n}").parse().unwrap(),
        }
    }

    fn contender(n: u8, t: Option<u64>) -> Contender {
        Contender {
            leader: leader(n),
            throughput_milli_rps: t,
        }
    }

    /// A round with a good baseline at 10 000 milli-req/s, no drift, margin 1 %; the
    /// incumbent scored at `incumbent`, or disqualified for `None`.
    fn input<'a>(
        leader_before: Option<Leader>,
        incumbent: Option<u64>,
        challengers: &'a [Contender],
    ) -> LeaderInput<'a> {
        LeaderInput {
            leader_before,
            incumbent: incumbent.map_or(IncumbentRun::Disqualified, |t| IncumbentRun::Scored {
                throughput_milli_rps: t,
            }),
            incumbent_infra_failed_rounds: 0,
            baseline_first_milli_rps: Some(10_000),
            baseline_drift_milli_rps: Some(10_000),
            drift_bound_bp: 500,
            margin_bp: 100,
            hardware_changed: false,
            scorer_failed: false,
            challengers,
        }
    }

    fn check(input: &LeaderInput<'_>, expected: Decision) {
        assert_eq!(decide(input), expected);
    }

    #[test]
    fn score_is_floor_ppm_against_the_first_baseline() {
        assert_eq!(score_ppm(10_000, 10_000), Some(0));
        assert_eq!(score_ppm(15_099, 10_000), Some(509_900));
        assert_eq!(score_ppm(5_000, 10_000), Some(-500_000));
        // 2/3 − 1 = −0.333…: the floor is −333 334, not −333 333.
        assert_eq!(score_ppm(2, 3), Some(-333_334));
        assert_eq!(score_ppm(4, 3), Some(333_333));
        assert_eq!(score_ppm(0, 3), Some(-1_000_000));
        assert_eq!(score_ppm(1, 0), None);
    }

    #[test]
    fn drift_rounds_up() {
        assert_eq!(drift_bp(10_000, 10_500), Some(500));
        assert_eq!(drift_bp(10_000, 9_500), Some(500));
        assert_eq!(drift_bp(10_000, 10_501), Some(501));
        assert_eq!(drift_bp(3, 4), Some(3334));
        assert_eq!(drift_bp(0, 4), None);
    }

    #[test]
    fn margin_edge_exactly_at_equality_takes_the_seat() {
        // 10 100 × 10⁴ = 10 000 × (10⁴ + 100): equality overtakes.
        assert!(overtakes(10_100, 10_000, 100));
        assert!(!overtakes(10_099, 10_000, 100));
        let at_edge = [contender(1, Some(10_100))];
        check(
            &input(None, None, &at_edge),
            Decision::Seat {
                leader_after: Some(leader(1)),
                rule: SeatRule::MarginMet { winner: leader(1) },
            },
        );
        let below = [contender(1, Some(10_099))];
        check(
            &input(None, None, &below),
            Decision::Seat {
                leader_after: None,
                rule: SeatRule::MarginNotMet { best: leader(1) },
            },
        );
    }

    #[test]
    fn incumbent_is_measured_in_the_same_round() {
        // The leader runs at 20 000 this round; 20 199 misses 1 %, 20 200 meets it.
        let missing = [contender(2, Some(20_199))];
        check(
            &input(Some(leader(9)), Some(20_000), &missing),
            Decision::Seat {
                leader_after: Some(leader(9)),
                rule: SeatRule::MarginNotMet { best: leader(2) },
            },
        );
        let meeting = [contender(2, Some(20_200))];
        check(
            &input(Some(leader(9)), Some(20_000), &meeting),
            Decision::Seat {
                leader_after: Some(leader(2)),
                rule: SeatRule::MarginMet { winner: leader(2) },
            },
        );
    }

    #[test]
    fn tie_goes_to_the_earlier_commitment_and_there_is_no_runner_up() {
        let tied = [
            contender(1, Some(9_000)),
            contender(2, Some(30_000)),
            contender(3, Some(30_000)),
            contender(4, None),
        ];
        check(
            &input(None, None, &tied),
            Decision::Seat {
                leader_after: Some(leader(2)),
                rule: SeatRule::MarginMet { winner: leader(2) },
            },
        );
        // The best misses the margin: the second best is never considered.
        let best_misses = [contender(1, Some(10_050)), contender(2, Some(10_020))];
        check(
            &input(None, None, &best_misses),
            Decision::Seat {
                leader_after: None,
                rule: SeatRule::MarginNotMet { best: leader(1) },
            },
        );
    }

    #[test]
    fn no_incumbent_means_the_baseline_defends() {
        check(
            &input(None, None, &[]),
            Decision::Seat {
                leader_after: None,
                rule: SeatRule::NoScoredChallenger,
            },
        );
        let all_disqualified = [contender(1, None)];
        check(
            &input(None, None, &all_disqualified),
            Decision::Seat {
                leader_after: None,
                rule: SeatRule::NoScoredChallenger,
            },
        );
    }

    #[test]
    fn disqualified_incumbent_yields_without_the_margin_or_falls_back() {
        // 10 050 is faster than the baseline (10 000) but misses the 1 % margin: without
        // the margin it takes the seat.
        let faster = [contender(1, None), contender(2, Some(10_050))];
        check(
            &input(Some(leader(9)), None, &faster),
            Decision::Seat {
                leader_after: Some(leader(2)),
                rule: SeatRule::IncumbentDisqualified { winner: leader(2) },
            },
        );
        let none_scored = [contender(1, None)];
        let fallback = input(Some(leader(9)), None, &none_scored);
        check(
            &fallback,
            Decision::Seat {
                leader_after: None,
                rule: SeatRule::IncumbentDisqualifiedFallback,
            },
        );
        let outcome = decide(&fallback).to_outcome(&fallback);
        assert!(outcome.changed);
        assert_eq!(outcome.leader_after, None);
    }

    /// Regression: a disqualified incumbent handed the seat to a challenger at half the
    /// baseline's throughput; the seat falls back to the baseline instead.
    #[test]
    fn disqualified_incumbent_and_a_challenger_slower_than_the_baseline_seat_the_baseline() {
        let slow = [contender(1, None), contender(2, Some(5_000))];
        let round = input(Some(leader(9)), None, &slow);
        check(
            &round,
            Decision::Seat {
                leader_after: None,
                rule: SeatRule::IncumbentDisqualifiedSlowerThanBaseline { best: leader(2) },
            },
        );
        let outcome = decide(&round).to_outcome(&round);
        assert_eq!(outcome.status, RoundStatus::Complete);
        assert_eq!(outcome.leader_after, None);
        assert!(outcome.changed);
        assert_eq!(
            outcome.decision.to_string(),
            format!(
                "the incumbent was disqualified and the best challenger {} (miner-2) was slower \
                 than the baseline; the seat falls back to the baseline",
                leader(2).patch.short()
            )
        );
    }

    /// The boundary of "at least as fast as the baseline": score exactly 0 (10 000 against
    /// a baseline of 10 000) takes the seat; one milli-req/s less (score −100 ppm) does
    /// not.
    #[test]
    fn at_least_as_fast_as_the_baseline_includes_score_zero() {
        assert_eq!(crate::rules::score::score_ppm(10_000, 10_000), Some(0));
        let equal = [contender(2, Some(10_000))];
        check(
            &input(Some(leader(9)), None, &equal),
            Decision::Seat {
                leader_after: Some(leader(2)),
                rule: SeatRule::IncumbentDisqualified { winner: leader(2) },
            },
        );
        assert_eq!(crate::rules::score::score_ppm(9_999, 10_000), Some(-100));
        let below = [contender(2, Some(9_999))];
        check(
            &input(Some(leader(9)), None, &below),
            Decision::Seat {
                leader_after: None,
                rule: SeatRule::IncumbentDisqualifiedSlowerThanBaseline { best: leader(2) },
            },
        );
    }

    /// Regression: an incumbent that failed for infrastructure reasons counted as
    /// disqualified, so any scored challenger took the seat without the margin.
    #[test]
    fn an_infra_failed_incumbent_makes_the_round_infra_failed_and_keeps_its_seat() {
        let winner = [contender(1, Some(50_000)), contender(2, Some(5_000))];
        let mut round = input(Some(leader(9)), None, &winner);
        round.incumbent = IncumbentRun::InfraFailed;
        check(
            &round,
            Decision::InfraFailed(RoundFailure::IncumbentInfraFailed { consecutive: 1 }),
        );
        let outcome = decide(&round).to_outcome(&round);
        assert_eq!(outcome.status, RoundStatus::InfraFailed);
        assert_eq!(outcome.leader_before, Some(leader(9)));
        assert_eq!(outcome.leader_after, Some(leader(9)));
        assert!(!outcome.changed);
        assert_eq!(outcome.remeasure, None);
        assert_eq!(incumbent_infra_failed_rounds(&outcome), 1);

        // The second in a row counts 2; the next round re-measures the incumbent alone.
        round.incumbent_infra_failed_rounds = 1;
        let second = decide(&round).to_outcome(&round);
        assert_eq!(
            second.reason,
            Some(TypedOrText::Typed(RoundFailure::IncumbentInfraFailed {
                consecutive: 2
            }))
        );
        assert_eq!(
            second.reason.as_ref().map(ToString::to_string).as_deref(),
            Some("the incumbent failed for infrastructure reasons, 2 rounds in a row")
        );
        assert_eq!(second.leader_after, Some(leader(9)));
        assert!(!remeasures_alone(1));
        assert!(remeasures_alone(incumbent_infra_failed_rounds(&second)));
    }

    /// The re-measure round seats no challenger: an incumbent that fails for
    /// infrastructure reasons again is disqualified and the seat falls back to the
    /// baseline; one that is scored keeps it, and the count starts over.
    #[test]
    fn an_incumbent_failing_its_remeasure_is_disqualified() {
        let mut round = input(Some(leader(9)), None, &[]);
        round.incumbent = IncumbentRun::InfraFailed;
        round.incumbent_infra_failed_rounds = REMEASURE_AFTER_ROUNDS;
        assert!(round.incumbent_failed_remeasure());
        check(
            &round,
            Decision::Seat {
                leader_after: None,
                rule: SeatRule::IncumbentDisqualifiedFallback,
            },
        );
        let outcome = decide(&round).to_outcome(&round);
        assert_eq!(
            outcome.remeasure,
            Some(IncumbentRemeasure {
                infra_failed_rounds: 2
            })
        );
        assert!(outcome.changed);
        assert_eq!(incumbent_infra_failed_rounds(&outcome), 0);

        let mut passed = input(Some(leader(9)), Some(10_000), &[]);
        passed.incumbent_infra_failed_rounds = REMEASURE_AFTER_ROUNDS;
        assert!(!passed.incumbent_failed_remeasure());
        let outcome = decide(&passed).to_outcome(&passed);
        assert_eq!(outcome.leader_after, Some(leader(9)));
        assert_eq!(
            outcome.decision,
            TypedOrText::Typed(SeatRule::NoScoredChallenger)
        );
        assert_eq!(incumbent_infra_failed_rounds(&outcome), 0);

        // A round-level failure of the re-measure round (here drift) is no failure of
        // the incumbent: the count starts over.
        let mut drifted = round.clone();
        drifted.baseline_drift_milli_rps = Some(20_000);
        let outcome = decide(&drifted).to_outcome(&drifted);
        assert_eq!(outcome.leader_after, Some(leader(9)));
        assert_eq!(incumbent_infra_failed_rounds(&outcome), 0);
    }

    #[test]
    fn drift_or_failed_baseline_is_infra_failed_with_no_change() {
        let winner = [contender(1, Some(50_000))];
        let mut drifted = input(Some(leader(9)), Some(10_000), &winner);
        drifted.baseline_drift_milli_rps = Some(10_501);
        check(
            &drifted,
            Decision::InfraFailed(RoundFailure::Drift {
                drift_bp: 501,
                bound_bp: 500,
            }),
        );
        let outcome = decide(&drifted).to_outcome(&drifted);
        assert_eq!(outcome.status, RoundStatus::InfraFailed);
        assert_eq!(outcome.leader_after, Some(leader(9)));
        assert!(!outcome.changed);

        // Exactly at the bound still counts.
        drifted.baseline_drift_milli_rps = Some(9_500);
        check(
            &drifted,
            Decision::Seat {
                leader_after: Some(leader(1)),
                rule: SeatRule::MarginMet { winner: leader(1) },
            },
        );

        let mut failed = input(None, None, &winner);
        failed.baseline_first_milli_rps = None;
        check(&failed, Decision::InfraFailed(RoundFailure::BaselineFailed));
        let mut failed_drift = input(None, None, &winner);
        failed_drift.baseline_drift_milli_rps = None;
        check(
            &failed_drift,
            Decision::InfraFailed(RoundFailure::DriftBaselineFailed),
        );
        let mut hardware = input(None, None, &winner);
        hardware.hardware_changed = true;
        check(
            &hardware,
            Decision::InfraFailed(RoundFailure::HardwareChanged),
        );
        let mut scorer = input(None, None, &winner);
        scorer.scorer_failed = true;
        check(&scorer, Decision::InfraFailed(RoundFailure::ScorerFailed));
    }
}
