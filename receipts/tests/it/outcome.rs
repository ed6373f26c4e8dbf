//! The round's outcome (`receipts::rules::outcome`): one test per step of its precedence,
//! each asserting the exact `Outcome`.

use receipts::model::{ErrorCounts, ProbeHistograms, ProbeRecord, ProbeVerdict, TokenCount};
use receipts::model::{
    IncumbentRemeasure, Leader, Outcome, Role, RoundFailure, RoundStatus, SeatRule, Sha256Hex,
    TypedOrText,
};
use receipts::rules::outcome::{OutcomeEntry, OutcomeInput, round_outcome, without_token_ids};
use receipts::rules::paired::{PairedDecision, PairedFailure, Slot};

fn leader(n: u8) -> Leader {
    Leader {
        patch: Sha256Hex::digest(&[n]),
        miner: format!("miner-{n}").parse().unwrap(),
    }
}

/// The baseline (0), the leader as incumbent (1, scored 0 ppm) and two challengers: 2
/// scored at `challenger_ppm`, 3 scored at 5 %.
fn entries(challenger_ppm: i64) -> Vec<OutcomeEntry> {
    let entry = |index: u32, role, leader, paired_median_ppm| OutcomeEntry {
        index,
        role,
        leader,
        paired_median_ppm,
    };
    vec![
        entry(0, Role::Baseline, None, None),
        entry(1, Role::Incumbent, Some(leader(1)), Some(0)),
        entry(2, Role::Challenger, Some(leader(2)), Some(challenger_ppm)),
        entry(3, Role::Challenger, Some(leader(3)), Some(50_000)),
    ]
}

/// Leader 1 seated, margin 1 %, nothing failed outside the passes.
fn input() -> OutcomeInput {
    OutcomeInput {
        leader_before: Some(leader(1)),
        margin_bp: 100,
        hardware_changed: false,
        baseline_without_token_ids: None,
        capability_missing: None,
        scorer_failure: None,
        incumbent_infra_failed: false,
        incumbent_infra_failed_rounds: 0,
        practice: false,
        cost_seat: None,
    }
}

/// The outcome of a round that keeps leader 1 for `status`/`reason`/`rule`.
fn kept(status: RoundStatus, reason: RoundFailure, rule: SeatRule) -> Outcome {
    Outcome {
        status,
        reason: Some(TypedOrText::Typed(reason)),
        leader_before: Some(leader(1)),
        leader_after: Some(leader(1)),
        changed: false,
        margin_bp: 100,
        decision: TypedOrText::Typed(rule),
        remeasure: None,
    }
}

fn infra_failed(reason: RoundFailure) -> Outcome {
    kept(RoundStatus::InfraFailed, reason, SeatRule::RoundInfraFailed)
}

/// A complete round after which `leader_after` holds the seat by `rule`.
fn seated(leader_after: Option<Leader>, rule: SeatRule) -> Outcome {
    Outcome {
        status: RoundStatus::Complete,
        reason: None,
        changed: leader_after != Some(leader(1)),
        leader_before: Some(leader(1)),
        leader_after,
        margin_bp: 100,
        decision: TypedOrText::Typed(rule),
        remeasure: None,
    }
}

fn margin_met() -> PairedDecision {
    PairedDecision::Seat {
        leader_after: Some(leader(3)),
        rule: SeatRule::MarginMet { winner: leader(3) },
    }
}

fn incumbent_invalid() -> PairedDecision {
    PairedDecision::InfraFailed(PairedFailure::RunInvalid {
        slot: Slot::Incumbent,
        pass: 1,
    })
}

/// Every cause outside the passes at once: the hardware, the scorer, the incumbent.
fn everything_failed() -> OutcomeInput {
    OutcomeInput {
        hardware_changed: true,
        scorer_failure: Some(RoundFailure::ScorerDeadline { deadline_s: 30 }),
        incumbent_infra_failed: true,
        ..input()
    }
}

/// Regression: an engine that cannot return token ids failed every baseline run's SLA,
/// and the round read `too_few_passes` instead of the cause.
#[test]
fn step_0_a_baseline_without_token_ids_comes_before_the_passes_failures() {
    let no_ids = RoundFailure::NoTokenIds {
        pass: 0,
        control: false,
        requests: 40,
    };
    let too_few = PairedDecision::InfraFailed(PairedFailure::TooFewPasses {
        counted: 0,
        required: 3,
    });
    let input = OutcomeInput {
        baseline_without_token_ids: Some(no_ids.clone()),
        ..everything_failed()
    };
    assert_eq!(
        round_outcome(&too_few, &entries(0), &input),
        kept(RoundStatus::InfraFailed, no_ids, SeatRule::RoundInfraFailed)
    );
}

/// A baseline lacking a feature under the campaign's profile (the capability probe)
/// decides before everything else, a run without token ids included: no entry ran.
#[test]
fn step_00_a_missing_capability_comes_before_everything() {
    let missing = RoundFailure::CapabilityMissing {
        feature: receipts::model::CapabilityFeature::TokenIdPrompts,
        field: "backend.api.token_id_prompts".into(),
    };
    let too_few = PairedDecision::InfraFailed(PairedFailure::TooFewPasses {
        counted: 0,
        required: 3,
    });
    let input = OutcomeInput {
        capability_missing: Some(missing.clone()),
        baseline_without_token_ids: Some(RoundFailure::NoTokenIds {
            pass: 0,
            control: false,
            requests: 40,
        }),
        ..everything_failed()
    };
    assert_eq!(
        round_outcome(&too_few, &entries(0), &input),
        kept(
            RoundStatus::InfraFailed,
            missing,
            SeatRule::RoundInfraFailed
        )
    );
}

/// A probe of `requests` measured requests, `no_ids` of them failed `noTokenIds`.
fn probe(requests: u32, no_ids: u64) -> ProbeRecord {
    ProbeRecord {
        run: 0,
        probe: 0,
        sub_stream: 0,
        rate_milli_rps: 1_000,
        warmup_requests: 0,
        requests,
        completed: 0,
        over_bound: requests,
        percentile_us: None,
        required_requests: None,
        send_lag_p50_us: 0,
        send_lag_p99_us: 0,
        send_lag_bound_us: 2_000,
        verdict: ProbeVerdict::Fail,
        throughput_milli_rps: 0,
        duration_us: 0,
        input_bytes: 0,
        output_tokens: 0,
        token_count: Some(TokenCount::Ids),
        errors: ErrorCounts {
            no_token_ids: no_ids,
            ..ErrorCounts::default()
        },
        histograms: ProbeHistograms {
            e2e: String::new(),
            ttft: String::new(),
            tpot: String::new(),
            itl: String::new(),
            send_lag: String::new(),
        },
    }
}

#[test]
fn a_run_without_token_ids_is_one_whose_every_request_got_none() {
    assert_eq!(without_token_ids(&[probe(20, 20), probe(30, 30)]), Some(50));
    // One request with ids (or failing otherwise) is an engine that can return them.
    assert_eq!(without_token_ids(&[probe(20, 20), probe(30, 29)]), None);
    assert_eq!(without_token_ids(&[probe(0, 0)]), None);
    assert_eq!(without_token_ids(&[]), None);
}

#[test]
fn step_1_the_passes_failures_come_first_and_name_the_run() {
    let drift = PairedDecision::InfraFailed(PairedFailure::MachineChanged {
        spread_bp: 3000,
        bound_bp: 500,
    });
    assert_eq!(
        round_outcome(&drift, &entries(0), &everything_failed()),
        infra_failed(RoundFailure::Drift {
            drift_bp: 3000,
            bound_bp: 500,
        })
    );
    let too_few = PairedDecision::InfraFailed(PairedFailure::TooFewPasses {
        counted: 1,
        required: 2,
    });
    assert_eq!(
        round_outcome(&too_few, &entries(0), &everything_failed()),
        infra_failed(RoundFailure::TooFewPasses {
            counted: 1,
            required: 2,
        })
    );
    // Challenger 1 of the paired rules is the second challenger: entry 3.
    let invalid = PairedDecision::InfraFailed(PairedFailure::RerunMissing {
        slot: Slot::Challenger(1),
        pass: 2,
    });
    assert_eq!(
        round_outcome(&invalid, &entries(0), &everything_failed()),
        infra_failed(RoundFailure::RunInvalid {
            entry: 3,
            control: false,
            pass: 2,
        })
    );
    let control = PairedDecision::InfraFailed(PairedFailure::RunInvalid {
        slot: Slot::BaselineControl,
        pass: 0,
    });
    assert_eq!(
        round_outcome(&control, &entries(0), &input()),
        infra_failed(RoundFailure::RunInvalid {
            entry: 0,
            control: true,
            pass: 0,
        })
    );
}

#[test]
fn step_2_changed_hardware_comes_before_the_scorer_and_the_incumbent() {
    assert_eq!(
        round_outcome(&margin_met(), &entries(0), &everything_failed()),
        infra_failed(RoundFailure::HardwareChanged)
    );
    // The incumbent's own invalid run is not counted against it either.
    assert_eq!(
        round_outcome(&incumbent_invalid(), &entries(0), &everything_failed()),
        infra_failed(RoundFailure::HardwareChanged)
    );
}

#[test]
fn step_2_the_scorers_failure_comes_before_the_incumbent() {
    let input = OutcomeInput {
        hardware_changed: false,
        ..everything_failed()
    };
    assert_eq!(
        round_outcome(&incumbent_invalid(), &entries(0), &input),
        infra_failed(RoundFailure::ScorerDeadline { deadline_s: 30 })
    );
}

#[test]
fn step_3_an_infra_failed_incumbent_fails_the_round_counting_the_rounds_in_a_row() {
    let consecutive = |n| infra_failed(RoundFailure::IncumbentInfraFailed { consecutive: n });
    // Its own invalid run, even in a round the noise would call inconclusive.
    assert_eq!(
        round_outcome(&incumbent_invalid(), &entries(0), &input()),
        consecutive(1)
    );
    let noisy = PairedDecision::Inconclusive {
        control_spread_bp: 298,
        margin_bp: 100,
    };
    let own_cause = OutcomeInput {
        incumbent_infra_failed: true,
        incumbent_infra_failed_rounds: 1,
        ..input()
    };
    assert_eq!(
        round_outcome(&noisy, &entries(0), &own_cause),
        consecutive(2)
    );
    // With the baseline in the seat there is no incumbent to fail.
    let no_leader = OutcomeInput {
        leader_before: None,
        ..own_cause
    };
    assert_eq!(
        round_outcome(&margin_met(), &entries(0), &no_leader),
        Outcome {
            status: RoundStatus::Complete,
            reason: None,
            leader_before: None,
            leader_after: Some(leader(3)),
            changed: true,
            margin_bp: 100,
            decision: TypedOrText::Typed(SeatRule::MarginMet { winner: leader(3) }),
            remeasure: None,
        }
    );
}

#[test]
fn step_3_a_remeasured_incumbent_failing_again_is_disqualified() {
    let remeasured = OutcomeInput {
        incumbent_infra_failed_rounds: 2,
        ..input()
    };
    let expected = Outcome {
        remeasure: Some(IncumbentRemeasure {
            infra_failed_rounds: 2,
        }),
        ..seated(None, SeatRule::IncumbentDisqualifiedFallback)
    };
    assert_eq!(
        round_outcome(&incumbent_invalid(), &entries(0), &remeasured),
        expected
    );
    let own_cause = OutcomeInput {
        incumbent_infra_failed: true,
        ..remeasured
    };
    let kept_seat = PairedDecision::Seat {
        leader_after: Some(leader(1)),
        rule: SeatRule::NoScoredChallenger,
    };
    assert_eq!(round_outcome(&kept_seat, &entries(0), &own_cause), expected);
}

#[test]
fn step_4_the_noise_above_the_margin_is_inconclusive() {
    let noisy = PairedDecision::Inconclusive {
        control_spread_bp: 298,
        margin_bp: 100,
    };
    assert_eq!(
        round_outcome(&noisy, &entries(0), &input()),
        kept(
            RoundStatus::Inconclusive,
            RoundFailure::NoiseAboveMargin {
                aa_spread_bp: 298,
                margin_bp: 100,
            },
            SeatRule::RoundInconclusive,
        )
    );
}

#[test]
fn step_5_the_paired_seat_stands() {
    assert_eq!(
        round_outcome(&margin_met(), &entries(0), &input()),
        seated(Some(leader(3)), SeatRule::MarginMet { winner: leader(3) })
    );
    let not_met = PairedDecision::Seat {
        leader_after: Some(leader(1)),
        rule: SeatRule::MarginNotMet { best: leader(3) },
    };
    assert_eq!(
        round_outcome(&not_met, &entries(0), &input()),
        seated(Some(leader(1)), SeatRule::MarginNotMet { best: leader(3) })
    );
}

#[test]
fn step_5_a_disqualified_incumbents_seat_goes_only_to_a_challenger_as_fast_as_the_baseline() {
    let disqualified = PairedDecision::Seat {
        leader_after: Some(leader(2)),
        rule: SeatRule::IncumbentDisqualified { winner: leader(2) },
    };
    // A score of exactly 0 takes the seat.
    assert_eq!(
        round_outcome(&disqualified, &entries(0), &input()),
        seated(
            Some(leader(2)),
            SeatRule::IncumbentDisqualified { winner: leader(2) }
        )
    );
    assert_eq!(
        round_outcome(&disqualified, &entries(-1), &input()),
        seated(
            None,
            SeatRule::IncumbentDisqualifiedSlowerThanBaseline { best: leader(2) }
        )
    );
    let fallback = PairedDecision::Seat {
        leader_after: None,
        rule: SeatRule::IncumbentDisqualifiedFallback,
    };
    assert_eq!(
        round_outcome(&fallback, &entries(0), &input()),
        seated(None, SeatRule::IncumbentDisqualifiedFallback)
    );
}

/// A practice round (seeds the evaluator gave) records what the rule decided but never
/// moves the seat.
#[test]
fn a_practice_round_never_moves_the_seat() {
    let practice = OutcomeInput {
        practice: true,
        ..input()
    };
    let official = round_outcome(&margin_met(), &entries(200_000), &input());
    assert_eq!(official.leader_after, Some(leader(3)));
    assert!(official.changed);
    let outcome = round_outcome(&margin_met(), &entries(200_000), &practice);
    assert_eq!(outcome.leader_after, Some(leader(1)));
    assert!(!outcome.changed);
    assert_eq!(outcome.decision, official.decision);
    assert_eq!(outcome.status, official.status);
}

/// Step 6, the test through the outcome: a challenger on two L4s giving 98 % of
/// the incumbent's decisions/s on one H100 — slower per GPU, not 5 % faster, so the
/// throughput rule keeps the incumbent — is 35 % cheaper per decision: a campaign scoring
/// cost seats it (`cost_margin_met`), a throughput campaign does not.
#[test]
fn step_6_a_cheaper_slower_per_gpu_challenger_is_seated_on_cost_only() {
    use receipts::model::{PricePerHour, ResourceRequest};
    use receipts::rules::cost::{Priced, cost_seat, price_micro_usd_per_hour};
    let prices = PricePerHour {
        gpu: [("h100".to_owned(), 2_000_000), ("l4".to_owned(), 700_000)].into(),
        cpu: 40_000,
        memory_gib: 5_000,
    };
    let priced = |gpus, class: &str, cpus, memory_gib, throughput_milli_rps| Priced {
        price_micro_usd_per_hour: price_micro_usd_per_hour(
            &ResourceRequest {
                gpus,
                gpu_class: class.to_owned(),
                cpus,
                memory_gib,
            },
            &prices,
        )
        .expect("priced"),
        throughput_milli_rps,
    };
    let incumbent = priced(1, "h100", 8, 64, 100_000);
    let challenger = priced(2, "l4", 4, 32, 98_000);
    // The round's A/A spread of 300 bp makes 98 % "not below".
    let on_cost = cost_seat(&[(2, challenger)], incumbent, 500, 300);
    assert_eq!(on_cost, Some(2));
    // The paired rule: challenger 2 (-2 %) and 3 (+0.5 %) both short of the 1 % margin.
    let not_met = PairedDecision::Seat {
        leader_after: Some(leader(1)),
        rule: SeatRule::MarginNotMet { best: leader(3) },
    };
    let cost_campaign = OutcomeInput {
        cost_seat: on_cost,
        ..input()
    };
    assert_eq!(
        round_outcome(&not_met, &entries(-20_000), &cost_campaign),
        seated(
            Some(leader(2)),
            SeatRule::CostMarginMet { winner: leader(2) }
        )
    );
    assert_eq!(
        round_outcome(&not_met, &entries(-20_000), &input()),
        seated(Some(leader(1)), SeatRule::MarginNotMet { best: leader(3) })
    );
    // A challenger that meets the throughput margin takes the seat that way first.
    assert_eq!(
        round_outcome(&margin_met(), &entries(-20_000), &cost_campaign),
        seated(Some(leader(3)), SeatRule::MarginMet { winner: leader(3) })
    );
    // No seat moves on cost in a round that is not complete, nor in a practice round,
    // nor to an entry that is not a challenger.
    let noisy = PairedDecision::Inconclusive {
        control_spread_bp: 298,
        margin_bp: 100,
    };
    assert_eq!(
        round_outcome(&noisy, &entries(-20_000), &cost_campaign).leader_after,
        Some(leader(1))
    );
    let practice = OutcomeInput {
        practice: true,
        ..cost_campaign.clone()
    };
    let kept = round_outcome(&not_met, &entries(-20_000), &practice);
    assert_eq!(
        (kept.leader_after, kept.decision),
        (
            Some(leader(1)),
            TypedOrText::Typed(SeatRule::CostMarginMet { winner: leader(2) })
        )
    );
    let at_incumbent = OutcomeInput {
        cost_seat: Some(1),
        ..input()
    };
    assert_eq!(
        round_outcome(&not_met, &entries(-20_000), &at_incumbent),
        seated(Some(leader(1)), SeatRule::MarginNotMet { best: leader(3) })
    );
}
