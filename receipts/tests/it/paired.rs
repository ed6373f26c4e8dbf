//! The paired-pass arithmetic of content/noise.md on hand-made rounds: ratios, spreads,
//! coverage, the two noise verdicts, the failure table and the decision rule's edges.

use receipts::model::{self, Leader, NoiseCheck, PairedScore, SeatRule, Sha256Hex};
use receipts::rules::paired::{
    Attempt, DisqualifyingRun, EntryFate, InvalidTwice, MIN_PASSES, NoiseRuling, PairedDecision,
    PairedFailure, RoundRuns, RunFate, RunOutcome, RunOwner, RunRecord, SeatChoice, SeatedRuns,
    Slot, clears_margin, decide_paired, decide_paired_with_margins, median_coverage_ppm,
    noise_check, noise_verdict, paired_ratio_ppm, paired_score, run_fate, settle_passes, spread_bp,
};
use receipts::rules::score::score_ppm;

fn leader(n: u8) -> Leader {
    Leader {
        patch: Sha256Hex::digest(&[n]),
        miner: format!("miner-{n}").parse().unwrap(),
    }
}

fn measured(milli_rps: u64) -> RunRecord {
    RunRecord {
        outcome: RunOutcome::Measured { milli_rps },
        attempt: Attempt::First,
    }
}

fn first(outcome: RunOutcome) -> RunRecord {
    RunRecord {
        outcome,
        attempt: Attempt::First,
    }
}

fn runs(values: &[u64]) -> Vec<RunRecord> {
    values.iter().copied().map(measured).collect()
}

/// A round with these throughputs per pass (milli-req/s); challenger `i` is leader `i + 1`,
/// the incumbent leader 9.
fn round(
    baseline: &[u64],
    control: &[u64],
    incumbent: Option<&[u64]>,
    challengers: &[&[u64]],
) -> RoundRuns {
    RoundRuns {
        baseline_first: runs(baseline),
        baseline_control: runs(control),
        incumbent: incumbent.map(|values| SeatedRuns {
            leader: leader(9),
            runs: runs(values),
        }),
        challengers: challengers
            .iter()
            .enumerate()
            .map(|(index, values)| SeatedRuns {
                leader: leader(u8::try_from(index).unwrap() + 1),
                runs: runs(values),
            })
            .collect(),
    }
}

const FLAT: [u64; 3] = [10_000, 10_000, 10_000];

#[test]
fn paired_ratio_is_score_plus_one_floored() {
    assert_eq!(paired_ratio_ppm(10_000, 10_000), Some(1_000_000));
    assert_eq!(paired_ratio_ppm(15_099, 10_000), Some(1_509_900));
    assert_eq!(paired_ratio_ppm(2, 3), Some(666_666));
    assert_eq!(paired_ratio_ppm(0, 3), Some(0));
    assert_eq!(paired_ratio_ppm(1, 0), None);
    for (entry, baseline) in [(2, 3), (4, 3), (9_999, 10_000), (123_457, 98_765)] {
        let score = score_ppm(entry, baseline).unwrap();
        assert_eq!(
            paired_ratio_ppm(entry, baseline),
            Some(u64::try_from(score + 1_000_000).unwrap())
        );
    }
}

#[test]
fn spread_rounds_up_over_the_lower_middle_median() {
    assert_eq!(spread_bp(&[10_000, 10_500, 9_500]), Some(1_000));
    assert_eq!(spread_bp(&[10_000, 10_001, 10_000]), Some(1));
    // Even count: the median is the lower middle, 3: ⌈1 · 10⁴ / 3⌉ = 3334.
    assert_eq!(spread_bp(&[4, 3]), Some(3_334));
    assert_eq!(spread_bp(&[7]), Some(0));
    assert_eq!(spread_bp(&[]), None);
    assert_eq!(spread_bp(&[0, 0, 5]), None);
}

#[test]
fn coverage_is_one_minus_two_to_one_minus_r_rounded_down() {
    assert_eq!(median_coverage_ppm(0), 0);
    assert_eq!(median_coverage_ppm(1), 0);
    assert_eq!(median_coverage_ppm(2), 500_000);
    assert_eq!(median_coverage_ppm(3), 750_000);
    assert_eq!(median_coverage_ppm(5), 937_500);
    // 1 − 1/128 = 0.9921875: rounded down, never more than the truth.
    assert_eq!(median_coverage_ppm(8), 992_187);
    assert_eq!(median_coverage_ppm(20), 999_998);
    assert_eq!(median_coverage_ppm(21), 999_999);
    assert_eq!(median_coverage_ppm(u32::MAX), 999_999);
}

#[test]
fn paired_score_is_median_min_max_of_the_pass_ratios() {
    assert_eq!(
        paired_score(&[10_500, 9_800, 11_000], &FLAT),
        Some(PairedScore {
            median_ppm: 50_000,
            min_ppm: -20_000,
            max_ppm: 100_000,
            passes: 3,
            coverage_ppm: 750_000,
        })
    );
    // Pass by pass: 10 500 against a baseline of 10 500 in the same pass is 0, whatever
    // the other passes' baselines.
    assert_eq!(
        paired_score(&[10_500, 10_000, 9_000], &[10_500, 10_000, 9_000]).map(|s| s.max_ppm),
        Some(0)
    );
    // Even count: the lower middle.
    assert_eq!(
        paired_score(&[10_300, 10_100], &[10_000, 10_000]).map(|s| (s.median_ppm, s.coverage_ppm)),
        Some((10_000, 500_000))
    );
    assert_eq!(paired_score(&[10_000, 10_000], &FLAT), None);
    assert_eq!(paired_score(&[], &[]), None);
    assert_eq!(paired_score(&[1, 1], &[1, 0]), None);
}

#[test]
fn median_exactly_at_the_margin_clears_and_one_below_does_not() {
    // Margin 100 bp: 10 100 / 10 000 is exactly 1.01.
    assert!(clears_margin(&[10_100, 10_100, 10_200], &FLAT, 100));
    assert!(clears_margin(&[10_099, 10_100, 10_200], &FLAT, 100));
    assert!(!clears_margin(&[10_099, 10_099, 10_200], &FLAT, 100));
    // Per pass against the incumbent of the same pass, not its median.
    assert!(clears_margin(
        &[20_200, 10_100, 5_050],
        &[20_000, 10_000, 5_000],
        100
    ));
    assert!(!clears_margin(
        &[20_199, 10_100, 5_049],
        &[20_000, 10_000, 5_000],
        100
    ));
}

#[test]
fn every_pass_must_clear_half_the_margin() {
    // Median 1.02 clears 1 %; the worst pass must still reach 1.005.
    assert!(clears_margin(&[10_050, 10_200, 10_300], &FLAT, 100));
    assert!(!clears_margin(&[10_049, 10_200, 10_300], &FLAT, 100));
    // An odd margin: half of 101 bp is 5 050 ppm, so 10 051 passes and 10 050 does not.
    assert!(clears_margin(&[10_051, 10_200, 10_300], &FLAT, 101));
    assert!(!clears_margin(&[10_050, 10_200, 10_300], &FLAT, 101));
    assert!(!clears_margin(&[], &[], 0));
    assert!(!clears_margin(&[10_000, 10_000], &FLAT, 0));
    assert!(!clears_margin(
        &[10_000, 10_000, 10_000],
        &[10_000, 0, 10_000],
        0
    ));
}

#[test]
fn one_pass_below_the_incumbent_keeps_the_seat() {
    let incumbent = [20_000, 20_000, 20_000];
    let challenger = [26_000, 26_000, 19_900];
    let decision = decide_paired(
        &round(&FLAT, &FLAT, Some(&incumbent), &[&challenger]),
        500,
        100,
        SeatChoice::BestQualifying,
        InvalidTwice::Disqualifies,
    );
    assert_eq!(
        decision,
        PairedDecision::Seat {
            leader_after: Some(leader(9)),
            rule: SeatRule::MarginNotMet { best: leader(1) },
        }
    );
    // Every pass at least half the margin (0.5 %) cleared up to v4; from v5 every pass
    // needs three quarters of it (0.75 %).
    let steady = [20_200, 20_100, 20_200];
    let seated = PairedDecision::Seat {
        leader_after: Some(leader(1)),
        rule: SeatRule::MarginMet { winner: leader(1) },
    };
    let decide = |runs: &[u64; 3], choice| {
        decide_paired(
            &round(&FLAT, &FLAT, Some(&incumbent), &[runs]),
            500,
            100,
            choice,
            InvalidTwice::Disqualifies,
        )
    };
    assert_eq!(decide(&steady, SeatChoice::BestMedian), seated);
    assert_eq!(
        decide(&steady, SeatChoice::BestQualifying),
        PairedDecision::Seat {
            leader_after: Some(leader(9)),
            rule: SeatRule::MarginNotMet { best: leader(1) },
        }
    );
    assert_eq!(
        decide(&[20_200, 20_150, 20_200], SeatChoice::BestQualifying),
        seated
    );
    assert_eq!(
        decide(&[20_200, 20_149, 20_200], SeatChoice::BestQualifying),
        decide(&steady, SeatChoice::BestQualifying)
    );
}

/// A challenger derived from the incumbent is held to its own, larger margin
/// (content/review.md, The derived-work margin): 8 % faster clears the campaign's 5 %
/// but not a derived-work margin of 10 %, so the seat goes to an original 6 % faster; at
/// exactly 10 % faster in every pass the derived one takes it.
#[test]
fn a_challenger_held_to_a_larger_margin_needs_to_clear_it() {
    let incumbent = [20_000, 20_000, 20_000];
    let derived = [21_600, 21_600, 21_600];
    let original = [21_200, 21_200, 21_200];
    let decide = |derived: &[u64], margins: &[u32]| {
        decide_paired_with_margins(
            &round(&FLAT, &FLAT, Some(&incumbent), &[derived, &original]),
            500,
            500,
            margins,
            SeatChoice::BestQualifying,
            InvalidTwice::Disqualifies,
        )
    };
    let seat = |n| PairedDecision::Seat {
        leader_after: Some(leader(n)),
        rule: SeatRule::MarginMet { winner: leader(n) },
    };
    // Uniform margins: the faster derived challenger wins, as `decide_paired` says.
    assert_eq!(decide(&derived, &[]), seat(1));
    assert_eq!(
        decide(&derived, &[]),
        decide_paired(
            &round(&FLAT, &FLAT, Some(&incumbent), &[&derived, &original]),
            500,
            500,
            SeatChoice::BestQualifying,
            InvalidTwice::Disqualifies,
        )
    );
    assert_eq!(decide(&derived, &[500, 500]), seat(1));
    // Held to 10 %: it does not clear it, the original (held to 5 %) does.
    assert_eq!(decide(&derived, &[1_000, 500]), seat(2));
    assert_eq!(decide(&derived, &[1_000]), seat(2));
    // Exactly 10 % faster in every pass clears 10 % (equality clears).
    assert_eq!(decide(&[22_000, 22_000, 22_000], &[1_000, 500]), seat(1));
    assert_eq!(decide(&[21_999, 21_999, 22_000], &[1_000, 500]), seat(2));
    // Alone and short of its margin: the incumbent keeps the seat, naming it the best.
    assert_eq!(
        decide_paired_with_margins(
            &round(&FLAT, &FLAT, Some(&incumbent), &[&derived]),
            500,
            500,
            &[1_000],
            SeatChoice::BestQualifying,
            InvalidTwice::Disqualifies,
        ),
        PairedDecision::Seat {
            leader_after: Some(leader(9)),
            rule: SeatRule::MarginNotMet { best: leader(1) },
        }
    );
}

#[test]
fn drift_exactly_at_the_bound_counts_and_one_bp_more_is_machine_changed() {
    // The first baseline runs spread exactly 1 000 bp: allowed at a bound of 1 000, as the
    // drift bound of content/measurement.md is.
    let baseline = [10_000, 10_500, 9_500];
    assert_eq!(
        noise_verdict(&baseline, &baseline, 1_000, 100),
        NoiseRuling::Decides {
            baseline_spread_bp: 1_000,
            control_spread_bp: 0,
        }
    );
    assert_eq!(
        noise_verdict(&baseline, &baseline, 999, 100),
        NoiseRuling::MachineChanged {
            spread_bp: 1_000,
            bound_bp: 999,
        }
    );
    let challenger = [20_000, 21_000, 19_000];
    assert_eq!(
        decide_paired(
            &round(&baseline, &baseline, None, &[&challenger]),
            999,
            100,
            SeatChoice::BestQualifying,
            InvalidTwice::Disqualifies
        ),
        PairedDecision::InfraFailed(PairedFailure::MachineChanged {
            spread_bp: 1_000,
            bound_bp: 999,
        })
    );
}

#[test]
fn control_spread_exactly_at_the_margin_decides_and_above_is_inconclusive() {
    // A/A ratios 1.00, 1.01, 0.99: spread ⌈0.02 · 10⁴⌉ = 200 bp.
    let control = [10_000, 10_100, 9_900];
    assert_eq!(
        noise_verdict(&FLAT, &control, 500, 200),
        NoiseRuling::Decides {
            baseline_spread_bp: 0,
            control_spread_bp: 200,
        }
    );
    assert_eq!(
        noise_verdict(&FLAT, &control, 500, 199),
        NoiseRuling::Inconclusive {
            control_spread_bp: 200,
            margin_bp: 199,
        }
    );
    // The machine check comes first.
    assert_eq!(
        noise_verdict(&[10_000, 10_600, 10_000], &control, 500, 199),
        NoiseRuling::MachineChanged {
            spread_bp: 600,
            bound_bp: 500,
        }
    );
    let challenger = [50_000, 50_000, 50_000];
    assert_eq!(
        decide_paired(
            &round(&FLAT, &control, Some(&FLAT), &[&challenger]),
            500,
            199,
            SeatChoice::BestQualifying,
            InvalidTwice::Disqualifies
        ),
        PairedDecision::Inconclusive {
            control_spread_bp: 200,
            margin_bp: 199,
        }
    );
    // Mismatched lengths cannot be measured: unbounded.
    assert_eq!(
        noise_verdict(&FLAT, &[10_000], 500, 100),
        NoiseRuling::Inconclusive {
            control_spread_bp: u64::MAX,
            margin_bp: 100,
        }
    );
}

#[test]
fn best_is_the_highest_median_paired_ratio_and_ties_go_to_the_earlier_commitment() {
    let a = [10_500, 10_500, 10_500];
    let b = [12_000, 12_000, 12_000];
    let c = [12_000, 12_000, 12_000];
    // No incumbent: the baseline defends, with the margin.
    assert_eq!(
        decide_paired(
            &round(&FLAT, &FLAT, None, &[&a, &b, &c]),
            500,
            1_000,
            SeatChoice::BestQualifying,
            InvalidTwice::Disqualifies
        ),
        PairedDecision::Seat {
            leader_after: Some(leader(2)),
            rule: SeatRule::MarginMet { winner: leader(2) },
        }
    );
    // Nobody clears the margin: the best by median is named.
    let steady = [10_600, 10_600, 10_600];
    let jumpy = [20_000, 10_000, 10_000];
    assert_eq!(
        decide_paired(
            &round(&FLAT, &FLAT, None, &[&steady, &jumpy]),
            500,
            1_000,
            SeatChoice::BestQualifying,
            InvalidTwice::Disqualifies
        ),
        PairedDecision::Seat {
            leader_after: None,
            rule: SeatRule::MarginNotMet { best: leader(1) },
        }
    );
    // Regression (issue 40): a decoy with the best median and one slow pass kept an
    // honest challenger that clears the margin out. From v5 the best of those that clear
    // it takes the seat; v4's rule (kept for verifying v4 receipts) still names the decoy.
    let decoy = [20_000, 20_000, 10_000];
    let honest = [11_500, 11_500, 11_500];
    let decoyed = round(&FLAT, &FLAT, None, &[&decoy, &honest]);
    assert_eq!(
        decide_paired(
            &decoyed,
            500,
            1_000,
            SeatChoice::BestQualifying,
            InvalidTwice::Disqualifies
        ),
        PairedDecision::Seat {
            leader_after: Some(leader(2)),
            rule: SeatRule::MarginMet { winner: leader(2) },
        }
    );
    assert_eq!(
        decide_paired(
            &decoyed,
            500,
            1_000,
            SeatChoice::BestMedian,
            InvalidTwice::Disqualifies
        ),
        PairedDecision::Seat {
            leader_after: None,
            rule: SeatRule::MarginNotMet { best: leader(1) },
        }
    );
    assert_eq!(
        decide_paired(
            &round(&FLAT, &FLAT, None, &[]),
            500,
            100,
            SeatChoice::BestQualifying,
            InvalidTwice::Disqualifies
        ),
        PairedDecision::Seat {
            leader_after: None,
            rule: SeatRule::NoScoredChallenger,
        }
    );
}

#[test]
fn disqualified_incumbent_yields_without_the_margin_or_falls_back() {
    let mut crashed = round(&FLAT, &FLAT, Some(&FLAT), &[&[5_000, 5_000, 5_000]]);
    if let Some(incumbent) = crashed.incumbent.as_mut() {
        incumbent.runs[1] = first(RunOutcome::Crashed);
    }
    assert_eq!(
        decide_paired(
            &crashed,
            500,
            100,
            SeatChoice::BestQualifying,
            InvalidTwice::Disqualifies
        ),
        PairedDecision::Seat {
            leader_after: Some(leader(1)),
            rule: SeatRule::IncumbentDisqualified { winner: leader(1) },
        }
    );
    crashed.challengers[0].runs[2] = first(RunOutcome::SlaUnmet);
    assert_eq!(
        decide_paired(
            &crashed,
            500,
            100,
            SeatChoice::BestQualifying,
            InvalidTwice::Disqualifies
        ),
        PairedDecision::Seat {
            leader_after: None,
            rule: SeatRule::IncumbentDisqualifiedFallback,
        }
    );
}

#[test]
fn the_failure_table() {
    let rerun = |outcome| RunRecord {
        outcome,
        attempt: Attempt::Rerun,
    };
    let table = [
        (RunOwner::Baseline, measured(7), RunFate::Counts(7)),
        (RunOwner::Baseline, measured(0), RunFate::VoidsPass),
        (
            RunOwner::Baseline,
            first(RunOutcome::Crashed),
            RunFate::VoidsPass,
        ),
        (
            RunOwner::Baseline,
            first(RunOutcome::SlaUnmet),
            RunFate::VoidsPass,
        ),
        (
            RunOwner::Baseline,
            first(RunOutcome::Invalid),
            RunFate::RerunOnce,
        ),
        (
            RunOwner::Baseline,
            rerun(RunOutcome::Invalid),
            RunFate::FailsRound,
        ),
        (
            RunOwner::Baseline,
            rerun(RunOutcome::Measured { milli_rps: 7 }),
            RunFate::Counts(7),
        ),
        (RunOwner::Entry, measured(7), RunFate::Counts(7)),
        (
            RunOwner::Entry,
            measured(0),
            RunFate::Disqualifies(DisqualifyingRun::SlaUnmet),
        ),
        (
            RunOwner::Entry,
            first(RunOutcome::Crashed),
            RunFate::Disqualifies(DisqualifyingRun::Crashed),
        ),
        (
            RunOwner::Entry,
            rerun(RunOutcome::SlaUnmet),
            RunFate::Disqualifies(DisqualifyingRun::SlaUnmet),
        ),
        (
            RunOwner::Entry,
            first(RunOutcome::Invalid),
            RunFate::RerunOnce,
        ),
        (
            RunOwner::Entry,
            rerun(RunOutcome::Invalid),
            RunFate::FailsRound,
        ),
    ];
    for (role, record, fate) in table {
        assert_eq!(run_fate(role, record), fate, "{role:?} {record:?}");
    }
}

#[test]
fn a_failed_baseline_voids_the_pass_for_everyone() {
    let mut runs = round(
        &FLAT,
        &FLAT,
        Some(&[10_000, 10_000, 10_000]),
        &[&[11_000, 12_000, 13_000], &[11_000, 11_000, 11_000]],
    );
    runs.baseline_control[1] = first(RunOutcome::Crashed);
    // A crash in the void pass counts neither way.
    runs.challengers[1].runs[1] = first(RunOutcome::Crashed);
    // An unmet SLA in a counted pass disqualifies.
    runs.challengers[0].runs[2] = first(RunOutcome::SlaUnmet);
    let settled = settle_passes(&runs, InvalidTwice::Disqualifies).unwrap();
    assert_eq!(settled.counted, vec![0, 2]);
    assert_eq!(settled.baseline_first, vec![10_000, 10_000]);
    assert_eq!(settled.baseline_control, vec![10_000, 10_000]);
    assert_eq!(
        settled.incumbent,
        Some(EntryFate::Scored(vec![10_000, 10_000]))
    );
    assert_eq!(
        settled.challengers,
        vec![
            EntryFate::Disqualified {
                pass: 2,
                cause: DisqualifyingRun::SlaUnmet,
            },
            EntryFate::Scored(vec![11_000, 11_000]),
        ]
    );
    // A second void pass leaves one: too few.
    runs.baseline_first[0] = first(RunOutcome::SlaUnmet);
    assert_eq!(
        settle_passes(&runs, InvalidTwice::Disqualifies),
        Err(PairedFailure::TooFewPasses {
            counted: 1,
            required: MIN_PASSES,
        })
    );
}

#[test]
fn an_invalid_run_is_rerun_once_then_fails_a_v5_round() {
    let mut runs = round(&FLAT, &FLAT, None, &[&[11_000, 11_000, 11_000]]);
    runs.challengers[0].runs[1] = RunRecord {
        outcome: RunOutcome::Measured { milli_rps: 11_500 },
        attempt: Attempt::Rerun,
    };
    assert_eq!(
        settle_passes(&runs, InvalidTwice::Disqualifies).map(|s| s.challengers),
        Ok(vec![EntryFate::Scored(vec![11_000, 11_500, 11_000])])
    );
    runs.challengers[0].runs[1] = RunRecord {
        outcome: RunOutcome::Invalid,
        attempt: Attempt::Rerun,
    };
    assert_eq!(
        decide_paired(
            &runs,
            500,
            100,
            SeatChoice::BestQualifying,
            InvalidTwice::FailsRound
        ),
        PairedDecision::InfraFailed(PairedFailure::RunInvalid {
            slot: Slot::Challenger(0),
            pass: 1,
        })
    );
    assert_eq!(
        PairedFailure::RunInvalid {
            slot: Slot::Challenger(0),
            pass: 1,
        }
        .to_string(),
        "the run of challenger 0 in pass 1 was invalid again after its re-run"
    );
    runs.challengers[0].runs[1] = first(RunOutcome::Invalid);
    assert_eq!(
        settle_passes(&runs, InvalidTwice::Disqualifies),
        Err(PairedFailure::RerunMissing {
            slot: Slot::Challenger(0),
            pass: 1,
        })
    );
    assert_eq!(
        PairedFailure::MachineChanged {
            spread_bp: 1_000,
            bound_bp: 999,
        }
        .to_string(),
        "the baseline runs spread 1000 bp across passes, more than the drift bound of 999 bp"
    );
    // Also in a void pass: the host was at fault.
    let mut void = round(&FLAT, &FLAT, None, &[]);
    void.baseline_first[0] = first(RunOutcome::Crashed);
    void.baseline_control[0] = RunRecord {
        outcome: RunOutcome::Invalid,
        attempt: Attempt::Rerun,
    };
    assert_eq!(
        settle_passes(&void, InvalidTwice::Disqualifies),
        Err(PairedFailure::RunInvalid {
            slot: Slot::BaselineControl,
            pass: 0,
        })
    );
    let mut short = round(&FLAT, &FLAT, Some(&FLAT), &[]);
    if let Some(incumbent) = short.incumbent.as_mut() {
        incumbent.runs.pop();
    }
    assert_eq!(
        settle_passes(&short, InvalidTwice::Disqualifies),
        Err(PairedFailure::Misaligned {
            slot: Slot::Incumbent,
            runs: 2,
            passes: 3,
        })
    );
}

/// No veto (v6): an entry's run invalid after its re-run while both baseline runs of
/// every pass were valid disqualifies the entry, not the round; an incumbent so is a
/// disqualified incumbent (its seat goes to the best scored challenger without the
/// margin); a baseline run invalid after its re-run still fails the round, before any
/// entry's is read.
#[test]
fn an_entry_invalid_twice_beside_a_valid_baseline_is_disqualified_not_the_round() {
    let invalid_twice = RunRecord {
        outcome: RunOutcome::Invalid,
        attempt: Attempt::Rerun,
    };
    let mut runs = round(
        &FLAT,
        &FLAT,
        None,
        &[&[11_000, 11_000, 11_000], &[12_000, 12_000, 12_000]],
    );
    runs.challengers[1].runs[1] = invalid_twice;
    assert_eq!(
        settle_passes(&runs, InvalidTwice::Disqualifies).map(|s| s.challengers),
        Ok(vec![
            EntryFate::Scored(vec![11_000, 11_000, 11_000]),
            EntryFate::Disqualified {
                pass: 1,
                cause: DisqualifyingRun::InvalidTwice,
            },
        ])
    );
    assert_eq!(
        decide_paired(
            &runs,
            500,
            100,
            SeatChoice::BestQualifying,
            InvalidTwice::Disqualifies
        ),
        PairedDecision::Seat {
            leader_after: Some(leader(1)),
            rule: SeatRule::MarginMet { winner: leader(1) },
        }
    );
    // The incumbent invalid twice: a disqualified incumbent, not a failed round.
    let mut runs = round(
        &FLAT,
        &FLAT,
        Some(&[10_000, 10_000, 10_000]),
        &[&[10_500, 10_500, 10_500]],
    );
    if let Some(incumbent) = runs.incumbent.as_mut() {
        incumbent.runs[2] = invalid_twice;
    }
    assert_eq!(
        decide_paired(
            &runs,
            500,
            100,
            SeatChoice::BestQualifying,
            InvalidTwice::Disqualifies
        ),
        PairedDecision::Seat {
            leader_after: Some(leader(1)),
            rule: SeatRule::IncumbentDisqualified { winner: leader(1) },
        }
    );
    assert_eq!(
        decide_paired(
            &runs,
            500,
            100,
            SeatChoice::BestQualifying,
            InvalidTwice::FailsRound
        ),
        PairedDecision::InfraFailed(PairedFailure::RunInvalid {
            slot: Slot::Incumbent,
            pass: 2,
        })
    );
    // A run the runner could not make (no image on the record, its tree, its backend)
    // twice is the runner's, never the entry's: the round fails, in v6 too.
    let mut runner_failed = round(&FLAT, &FLAT, None, &[&[11_000, 11_000, 11_000]]);
    runner_failed.challengers[0].runs[1] = RunRecord {
        outcome: RunOutcome::RunnerFailed,
        attempt: Attempt::Rerun,
    };
    assert_eq!(
        settle_passes(&runner_failed, InvalidTwice::Disqualifies),
        Err(PairedFailure::RunInvalid {
            slot: Slot::Challenger(0),
            pass: 1,
        })
    );
    // The baseline's control invalid twice in another pass: the host's fault, the round's.
    runs.baseline_control[0] = invalid_twice;
    assert_eq!(
        settle_passes(&runs, InvalidTwice::Disqualifies),
        Err(PairedFailure::RunInvalid {
            slot: Slot::BaselineControl,
            pass: 0,
        })
    );
    // A first attempt left without its re-run is still the round's.
    let mut runs = round(&FLAT, &FLAT, None, &[&FLAT]);
    runs.challengers[0].runs[0] = first(RunOutcome::Invalid);
    assert_eq!(
        settle_passes(&runs, InvalidTwice::Disqualifies),
        Err(PairedFailure::RerunMissing {
            slot: Slot::Challenger(0),
            pass: 0,
        })
    );
}

/// The noise a record carries: both spreads over the passes in which both baseline runs
/// count (a crashed control voids its pass), the bounds, and the verdict; unmeasured
/// below two such passes.
#[test]
fn the_recorded_noise_spans_the_passes_both_baseline_runs_count_in() {
    let mut quiet = round(
        &[10_000, 10_200, 10_100, 9_000],
        &[10_100, 10_200, 10_100, 9_000],
        None,
        &[],
    );
    quiet.baseline_control[3] = first(RunOutcome::Crashed);
    let expected = |margin_bp, verdict| NoiseCheck {
        baseline_spread_bp: Some(199),
        aa_spread_bp: Some(100),
        drift_bound_bp: 500,
        margin_bp,
        verdict,
    };
    assert_eq!(
        noise_check(&quiet, 500, 100),
        expected(100, model::NoiseVerdict::Quiet)
    );
    assert_eq!(
        noise_check(&quiet, 500, 99),
        expected(99, model::NoiseVerdict::Inconclusive)
    );
    assert_eq!(
        noise_check(&quiet, 198, 100).verdict,
        model::NoiseVerdict::BaselineDrift
    );
    let one_pass = round(&[10_000, 10_000], &[10_000, 0], None, &[]);
    assert_eq!(
        noise_check(&one_pass, 500, 100),
        NoiseCheck {
            baseline_spread_bp: None,
            aa_spread_bp: None,
            drift_bound_bp: 500,
            margin_bp: 100,
            verdict: model::NoiseVerdict::Unmeasured,
        }
    );
}
