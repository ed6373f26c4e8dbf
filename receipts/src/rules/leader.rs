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
//!   margin, or to the baseline when there is none;
//! - a failed baseline, a drift beyond the bound or changed hardware make the round
//!   `infra_failed`: no leader change (content/measurement.md, Paired comparison and drift).

use crate::model::{Leader, Outcome, RoundFailure, RoundStatus, SeatRule, TypedOrText};
use crate::rules::score::{drift_bp, overtakes};

/// A challenger as the leader rule sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contender {
    /// The submission.
    pub leader: Leader,
    /// Its median throughput in milli-requests/s when scored; `None` when disqualified.
    pub throughput_milli_rps: Option<u64>,
}

/// Everything the leader rule reads, all measured in one round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderInput<'a> {
    /// The seat before the round; `None` = the baseline holds it.
    pub leader_before: Option<Leader>,
    /// The leader's throughput this round, milli-requests/s; `None` when it was
    /// disqualified. Ignored when `leader_before` is `None`.
    pub incumbent_milli_rps: Option<u64>,
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

/// The decision of a round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The round does not count: no leader change, challengers requeued once.
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

    let incumbent_milli_rps = match &input.leader_before {
        None => Some(first),
        Some(_) => input.incumbent_milli_rps,
    };
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
        (None, Some((index, _))) => Decision::Seat {
            leader_after: Some(leader_of(index)),
            rule: SeatRule::IncumbentDisqualified {
                winner: leader_of(index),
            },
        },
        (None, None) => Decision::Seat {
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
            },
            Decision::Seat { leader_after, rule } => Outcome {
                status: RoundStatus::Complete,
                reason: None,
                changed: *leader_after != leader_before,
                leader_before,
                leader_after: leader_after.clone(),
                margin_bp: input.margin_bp,
                decision: TypedOrText::Typed(rule.clone()),
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

    /// A round with a good baseline at 10 000 milli-req/s, no drift, margin 1 %.
    fn input<'a>(
        leader_before: Option<Leader>,
        incumbent: Option<u64>,
        challengers: &'a [Contender],
    ) -> LeaderInput<'a> {
        LeaderInput {
            leader_before,
            incumbent_milli_rps: incumbent,
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
        // 5 000 is half the baseline and far below any margin, yet takes the seat.
        let slow = [contender(1, None), contender(2, Some(5_000))];
        check(
            &input(Some(leader(9)), None, &slow),
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
