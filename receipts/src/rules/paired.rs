//! Paired scores over interleaved passes and the decision rule on them (issue 12 /
//! content/noise.md), pure integer arithmetic on milli-requests/s, parts per million and
//! basis points.
//!
//! A round runs `R` passes; in each pass every seated entry runs once and the baseline
//! twice (the later of its two runs is the A/A control). An entry's *paired ratio* in a
//! pass is its throughput over the first baseline run of the same pass. In order:
//!
//! 1. [`settle_passes`] applies the per-pass failure table ([`run_fate`]): which passes
//!    count and each entry's fate; fewer than [`MIN_PASSES`] counted passes, or a run
//!    still invalid after its one re-run, make the round `infra_failed` — from
//!    `…/round/v6` ([`InvalidTwice::Disqualifies`]) only a baseline run so: an entry's
//!    disqualifies the entry (no veto);
//! 2. [`noise_verdict`]: the first baseline runs spreading more than the drift bound make
//!    the round `infra_failed` (the machine changed); then the A/A control's paired
//!    ratios spreading more than the margin make it `inconclusive`;
//! 3. [`decide_paired`]: from `…/round/v5` ([`SeatChoice::BestQualifying`]) the best
//!    challenger (highest median paired ratio, ties to the earlier commitment) among
//!    those that [`clears_margin`] against the incumbent pass by pass — median per-pass
//!    ratio at least `1 + margin` **and** every pass at least `1 + margin / 2` — takes
//!    the seat; up to v4 ([`SeatChoice::BestMedian`]) only the best challenger overall
//!    was tested, so a decoy with the best median and one slow pass kept everyone out.

use std::fmt;

use crate::model::{self, Leader, NoiseCheck, PairedScore, SeatRule};
use crate::rules::score::{run_throughputs, score_ppm};

/// Parts per million in one (a paired ratio of 1).
const PPM_ONE: u64 = 1_000_000;
/// Parts per million in one basis point.
const PPM_PER_BP: u64 = 100;
/// Basis points in one.
const BP_ONE: u128 = 10_000;

/// Fewest counted passes a round needs; with fewer it is `infra_failed`. A campaign of
/// `runs = 1` (demos, tests) needs its one pass: its paired score is the single ratio,
/// with coverage 0 ([`required_passes`]).
pub const MIN_PASSES: usize = 2;

/// The counted passes a round of `passes` passes needs: [`MIN_PASSES`], or every pass
/// of a round with fewer (at least 1).
pub fn required_passes(passes: usize) -> usize {
    MIN_PASSES.min(passes.max(1))
}

/// The paired ratio `floor(entry · 10⁶ / baseline)` in parts per million (1 000 000 = as
/// fast as the baseline run of the same pass), both in milli-requests/s: exactly
/// [`score_ppm`] + 10⁶. `None` when the baseline is 0 or the ratio does not fit.
pub fn paired_ratio_ppm(entry_milli_rps: u64, baseline_milli_rps: u64) -> Option<u64> {
    let score = score_ppm(entry_milli_rps, baseline_milli_rps)?;
    u64::try_from(i128::from(score) + i128::from(PPM_ONE)).ok()
}

/// The spread of `values` (throughputs in milli-requests/s, or paired ratios in ppm):
/// `⌈(max − min) · 10⁴ / median⌉` basis points, the median of an even count being the
/// lower middle (as in [`run_throughputs`]). Rounding up makes `spread_bp ≤ bound` exactly
/// `(max − min) · 10⁴ ≤ bound · median`. `None` when `values` is empty or the median is 0.
pub fn spread_bp(values: &[u64]) -> Option<u64> {
    let (median, min, max) = run_throughputs(values)?;
    if median == 0 {
        return None;
    }
    let numerator = u128::from(max - min) * BP_ONE;
    u64::try_from(numerator.div_ceil(u128::from(median))).ok()
}

/// The distribution-free coverage of `[min, max]` of `passes` independent values for
/// their median, `1 − 2^(1 − passes)`, in ppm rounded down (never claims more): 750 000
/// at 3 passes, 937 500 at 5, 0 at 0 or 1 pass.
pub fn median_coverage_ppm(passes: u32) -> u64 {
    match passes.checked_sub(1) {
        None | Some(0) => 0,
        // 2^20 > 10⁶: from there the uncovered part rounds up to 1 ppm.
        Some(shift) if shift >= 20 => PPM_ONE - 1,
        Some(shift) => PPM_ONE - PPM_ONE.div_ceil(1 << shift),
    }
}

/// The paired score of an entry from its throughputs and the first baseline run of the
/// same passes, both milli-requests/s, one value per counted pass. `None` when the two
/// differ in length, are empty, a baseline run is 0 or a ratio does not fit an `i64`.
pub fn paired_score(
    entry_milli_rps: &[u64],
    baseline_first_milli_rps: &[u64],
) -> Option<PairedScore> {
    let ratios = pass_ratios_ppm(entry_milli_rps, baseline_first_milli_rps)?;
    let (median, min, max) = run_throughputs(&ratios)?;
    let score = |ratio: u64| i64::try_from(i128::from(ratio) - i128::from(PPM_ONE)).ok();
    let passes = u32::try_from(ratios.len()).ok()?;
    Some(PairedScore {
        median_ppm: score(median)?,
        min_ppm: score(min)?,
        max_ppm: score(max)?,
        passes,
        coverage_ppm: median_coverage_ppm(passes),
    })
}

/// Per-pass ratios `numerator[p] / denominator[p]` in ppm; `None` on a length mismatch,
/// empty input or a zero denominator.
fn pass_ratios_ppm(numerator: &[u64], denominator: &[u64]) -> Option<Vec<u64>> {
    if numerator.len() != denominator.len() || numerator.is_empty() {
        return None;
    }
    numerator
        .iter()
        .zip(denominator)
        .map(|(n, d)| paired_ratio_ppm(*n, *d))
        .collect()
}

/// Whether a challenger clears the margin against an incumbent, pass by pass, both in
/// milli-requests/s over the same counted passes (content/noise.md, The decision rule):
/// with `r_p = floor(T_c,p · 10⁶ / T_i,p)`, the median `r_p` (lower middle of an even
/// count) is at least `10⁶ + 100 · margin_bp` — exactly `T_c × 10⁴ ≥ T_i × (10⁴ +
/// margin)` of the leader rule on that pass — **and** every `r_p` is at least `10⁶ + 50 ·
/// margin_bp` (half the margin). Equality clears. `false` on a length mismatch, empty
/// input or an incumbent pass at 0.
pub fn clears_margin(
    challenger_milli_rps: &[u64],
    incumbent_milli_rps: &[u64],
    margin_bp: u32,
) -> bool {
    clears_margin_every_pass(
        challenger_milli_rps,
        incumbent_milli_rps,
        margin_bp,
        SeatChoice::BestMedian.every_pass_ppm_per_bp(),
    )
}

/// [`clears_margin`] with the every-pass condition at `every_pass_ppm_per_bp` ppm per
/// basis point of margin (50: half the margin, as up to v4;
/// [`SeatChoice::every_pass_ppm_per_bp`]).
pub fn clears_margin_every_pass(
    challenger_milli_rps: &[u64],
    incumbent_milli_rps: &[u64],
    margin_bp: u32,
    every_pass_ppm_per_bp: u64,
) -> bool {
    let Some(ratios) = pass_ratios_ppm(challenger_milli_rps, incumbent_milli_rps) else {
        return false;
    };
    let Some((median, min, _)) = run_throughputs(&ratios) else {
        return false;
    };
    let margin_ppm = u64::from(margin_bp) * PPM_PER_BP;
    median >= PPM_ONE + margin_ppm && min >= PPM_ONE + u64::from(margin_bp) * every_pass_ppm_per_bp
}

/// What the noise of a round allows (content/noise.md, The two verdicts), checked in this
/// order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoiseRuling {
    /// The round can decide.
    Decides {
        /// Spread of the first baseline runs across passes, basis points.
        baseline_spread_bp: u64,
        /// Spread of the A/A control's paired ratios, basis points: the noise floor.
        control_spread_bp: u64,
    },
    /// The first baseline runs spread more than the drift bound: the machine changed,
    /// the round is `infra_failed`.
    MachineChanged {
        /// Their spread, basis points.
        spread_bp: u64,
        /// The campaign's drift bound, basis points.
        bound_bp: u32,
    },
    /// The A/A control spreads more than the margin: the round cannot separate
    /// contestants and is `inconclusive` (no leader change, charged to nobody).
    Inconclusive {
        /// The control's spread, basis points.
        control_spread_bp: u64,
        /// The campaign's overtake margin, basis points.
        margin_bp: u32,
    },
}

/// The noise verdict from the first baseline runs and the A/A control runs of the
/// counted passes, milli-requests/s. A spread exactly at its bound is allowed (as for
/// the drift bound of content/measurement.md); an incomputable spread (no passes, a zero
/// median, mismatched lengths) counts as unbounded.
pub fn noise_verdict(
    baseline_first_milli_rps: &[u64],
    baseline_control_milli_rps: &[u64],
    drift_bound_bp: u32,
    margin_bp: u32,
) -> NoiseRuling {
    let baseline_spread_bp = spread_bp(baseline_first_milli_rps).unwrap_or(u64::MAX);
    if baseline_spread_bp > u64::from(drift_bound_bp) {
        return NoiseRuling::MachineChanged {
            spread_bp: baseline_spread_bp,
            bound_bp: drift_bound_bp,
        };
    }
    let control_spread_bp = pass_ratios_ppm(baseline_control_milli_rps, baseline_first_milli_rps)
        .and_then(|ratios| spread_bp(&ratios))
        .unwrap_or(u64::MAX);
    if control_spread_bp > u64::from(margin_bp) {
        return NoiseRuling::Inconclusive {
            control_spread_bp,
            margin_bp,
        };
    }
    NoiseRuling::Decides {
        baseline_spread_bp,
        control_spread_bp,
    }
}

/// The round's noise as its record carries it (content/noise.md, The two verdicts): the
/// spread of the first baseline runs and of the A/A control's paired ratios over the
/// passes in which both baseline runs count ([`run_fate`]), both basis points, the bounds
/// they are held to (`drift_bound_bp`, `margin_bp`) and [`noise_verdict`]'s verdict on
/// them; unmeasured below [`MIN_PASSES`] such passes.
pub fn noise_check(round: &RoundRuns, drift_bound_bp: u32, margin_bp: u32) -> NoiseCheck {
    let counts = |record: &RunRecord| match run_fate(RunOwner::Baseline, *record) {
        RunFate::Counts(milli_rps) => Some(milli_rps),
        _ => None,
    };
    let (first, control): (Vec<u64>, Vec<u64>) = round
        .baseline_first
        .iter()
        .zip(&round.baseline_control)
        .filter_map(|(first, control)| Some((counts(first)?, counts(control)?)))
        .unzip();
    if first.len() < MIN_PASSES {
        return NoiseCheck {
            baseline_spread_bp: None,
            aa_spread_bp: None,
            drift_bound_bp,
            margin_bp,
            verdict: model::NoiseVerdict::Unmeasured,
        };
    }
    let verdict = match noise_verdict(&first, &control, drift_bound_bp, margin_bp) {
        NoiseRuling::Decides { .. } => model::NoiseVerdict::Quiet,
        NoiseRuling::MachineChanged { .. } => model::NoiseVerdict::BaselineDrift,
        NoiseRuling::Inconclusive { .. } => model::NoiseVerdict::Inconclusive,
    };
    NoiseCheck {
        baseline_spread_bp: spread_bp(&first),
        aa_spread_bp: pass_ratios_ppm(&control, &first).and_then(|ratios| spread_bp(&ratios)),
        drift_bound_bp,
        margin_bp,
        verdict,
    }
}

/// One run's result as the per-pass failure table reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunOutcome {
    /// The run measured a throughput at the SLA; 0 reads as [`RunOutcome::SlaUnmet`].
    Measured {
        /// Throughput, milli-requests/s.
        milli_rps: u64,
    },
    /// The engine crashed or never became healthy.
    Crashed,
    /// No rate met the SLA.
    SlaUnmet,
    /// The host made the run invalid (CPU steal time above its bound, a client that
    /// could not keep up): not the engine's fault, though from `…/round/v6` an entry's
    /// run invalid again after its re-run beside a valid baseline is
    /// ([`InvalidTwice::Disqualifies`]).
    Invalid,
    /// The runner could not run it (its tree, its backend, an image its record lacks) or
    /// it never ran: re-run once like [`RunOutcome::Invalid`], then the round fails; never
    /// the entry's fault, in any version.
    RunnerFailed,
}

/// Which attempt of a run a [`RunRecord`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// The run as scheduled.
    First,
    /// Its one re-run after an invalid first attempt.
    Rerun,
}

/// The last attempt of one run of one slot in one pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunRecord {
    /// What the attempt gave.
    pub outcome: RunOutcome,
    /// Which attempt it was.
    pub attempt: Attempt,
}

/// Whose run the failure table looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunOwner {
    /// Either baseline run of a pass (the first or the A/A control).
    Baseline,
    /// The incumbent or a challenger.
    Entry,
}

/// Why a run disqualifies its entry: the engine's fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DisqualifyingRun {
    /// The engine crashed or never became healthy (or, from v6, left its CPU set: the
    /// runner records such a run as crashed).
    Crashed,
    /// No rate met the SLA.
    SlaUnmet,
    /// From `…/round/v6` ([`InvalidTwice::Disqualifies`]): the run was invalid again
    /// after its re-run while both baseline runs of its pass were valid — the host held
    /// for them, so the fault is the entry's (an engine making its own client lag must
    /// not veto the round).
    InvalidTwice,
}

/// What an entry's run still invalid after its re-run does when both baseline runs of
/// its pass were valid (content/noise.md, Failures in a pass). A baseline run invalid
/// after its re-run fails the round under either.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InvalidTwice {
    /// Up to `…/round/v5`: the round is `infra_failed` (and every challenger requeued for
    /// free) — which let an engine veto any round by making its own client lag.
    FailsRound,
    /// From `…/round/v6`: the entry is disqualified
    /// ([`DisqualifyingRun::InvalidTwice`]); an incumbent so is a disqualified incumbent.
    Disqualifies,
}

/// What one run does to the round: the per-pass failure table of content/noise.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunFate {
    /// The run counts with this throughput, milli-requests/s.
    Counts(u64),
    /// The entry is disqualified.
    Disqualifies(DisqualifyingRun),
    /// The pass is void for everyone.
    VoidsPass,
    /// Run it again, once, for that slot only.
    RerunOnce,
    /// The round is `infra_failed`.
    FailsRound,
}

/// The per-pass failure table (content/noise.md, Failures in a pass), the one place it
/// is written in code. The runner asks it after each attempt; [`settle_passes`] reads it
/// over the recorded last attempts.
pub fn run_fate(role: RunOwner, record: RunRecord) -> RunFate {
    match (role, record.outcome, record.attempt) {
        (_, RunOutcome::Measured { milli_rps }, _) if milli_rps > 0 => RunFate::Counts(milli_rps),
        (
            RunOwner::Baseline,
            RunOutcome::Measured { .. } | RunOutcome::Crashed | RunOutcome::SlaUnmet,
            _,
        ) => RunFate::VoidsPass,
        (RunOwner::Entry, RunOutcome::Measured { .. } | RunOutcome::SlaUnmet, _) => {
            RunFate::Disqualifies(DisqualifyingRun::SlaUnmet)
        }
        (RunOwner::Entry, RunOutcome::Crashed, _) => {
            RunFate::Disqualifies(DisqualifyingRun::Crashed)
        }
        (_, RunOutcome::Invalid | RunOutcome::RunnerFailed, Attempt::First) => RunFate::RerunOnce,
        (_, RunOutcome::Invalid | RunOutcome::RunnerFailed, Attempt::Rerun) => RunFate::FailsRound,
    }
}

/// A seat of the round and its runs, one [`RunRecord`] per pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeatedRuns {
    /// The submission.
    pub leader: Leader,
    /// Its last attempt in each pass, in pass order.
    pub runs: Vec<RunRecord>,
}

/// Every run of a round, one record per pass and slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoundRuns {
    /// The first baseline run of each pass; its length is the round's pass count.
    pub baseline_first: Vec<RunRecord>,
    /// The second baseline run of each pass (the A/A control).
    pub baseline_control: Vec<RunRecord>,
    /// The leader seated before the round; `None` = the baseline holds the seat.
    pub incumbent: Option<SeatedRuns>,
    /// The challengers in commitment order (earliest first: it wins ties).
    pub challengers: Vec<SeatedRuns>,
}

/// A slot of a round, for naming where a failure happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// The first baseline run of a pass.
    BaselineFirst,
    /// The A/A control run of a pass.
    BaselineControl,
    /// The incumbent.
    Incumbent,
    /// The challenger at this index of [`RoundRuns::challengers`].
    Challenger(usize),
}

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Slot::BaselineFirst => f.write_str("the baseline run"),
            Slot::BaselineControl => f.write_str("the baseline's A/A control"),
            Slot::Incumbent => f.write_str("the incumbent"),
            Slot::Challenger(index) => write!(f, "challenger {index}"),
        }
    }
}

/// Why a round with paired passes is `infra_failed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PairedFailure {
    /// A run was still invalid after its one re-run.
    #[error("the run of {slot} in pass {pass} was invalid again after its re-run")]
    RunInvalid {
        /// Whose run.
        slot: Slot,
        /// The pass, 0-based.
        pass: usize,
    },
    /// A run's last attempt is an invalid first attempt: its re-run is missing.
    #[error("the run of {slot} in pass {pass} was invalid and never re-run")]
    RerunMissing {
        /// Whose run.
        slot: Slot,
        /// The pass, 0-based.
        pass: usize,
    },
    /// A slot has a different number of runs than the round has passes.
    #[error("{slot} has {runs} runs in a round of {passes} passes")]
    Misaligned {
        /// Whose runs.
        slot: Slot,
        /// Its runs.
        runs: usize,
        /// The round's passes.
        passes: usize,
    },
    /// Fewer passes counted than [`MIN_PASSES`].
    #[error("only {counted} passes counted, fewer than {required}")]
    TooFewPasses {
        /// Counted passes.
        counted: usize,
        /// Required passes.
        required: usize,
    },
    /// The first baseline runs spread more than the drift bound
    /// ([`NoiseRuling::MachineChanged`]).
    #[error(
        "the baseline runs spread {spread_bp} bp across passes, more than the drift bound of \
         {bound_bp} bp"
    )]
    MachineChanged {
        /// Their spread, basis points.
        spread_bp: u64,
        /// The campaign's drift bound, basis points.
        bound_bp: u32,
    },
}

/// An entry's fate over the counted passes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryFate {
    /// Scored: its throughput in each counted pass, milli-requests/s.
    Scored(Vec<u64>),
    /// Disqualified by its run in this pass (0-based, the first such counted pass).
    Disqualified {
        /// The pass.
        pass: usize,
        /// Why.
        cause: DisqualifyingRun,
    },
}

/// Which passes count and what each entry's runs in them are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettledPasses {
    /// The counted passes, 0-based, ascending.
    pub counted: Vec<usize>,
    /// The first baseline run of each counted pass, milli-requests/s (never 0).
    pub baseline_first: Vec<u64>,
    /// The A/A control run of each counted pass, milli-requests/s.
    pub baseline_control: Vec<u64>,
    /// The incumbent's fate; `None` when the baseline holds the seat.
    pub incumbent: Option<EntryFate>,
    /// Each challenger's fate, in [`RoundRuns::challengers`] order.
    pub challengers: Vec<EntryFate>,
}

/// Applies the per-pass failure table ([`run_fate`]) to every recorded run: a pass in
/// which either baseline run failed is void for everyone (nothing of it counts, good or
/// bad); an entry is disqualified by a crash or an unmet SLA in a counted pass. Errors
/// (the round is `infra_failed`) with [`PairedFailure::Misaligned`] when a slot's runs
/// are not one per pass, [`PairedFailure::RunInvalid`] / [`PairedFailure::RerunMissing`]
/// for a run invalid after its re-run or never re-run (in any pass, void or not: the host
/// was at fault), and [`PairedFailure::TooFewPasses`] below [`MIN_PASSES`]. Under
/// [`InvalidTwice::Disqualifies`] an entry's run invalid after its re-run disqualifies
/// it instead ([`DisqualifyingRun::InvalidTwice`]) once both baseline runs of every pass
/// were valid (they are settled first: one of theirs invalid after its re-run fails the
/// round before any entry's is read).
pub fn settle_passes(
    round: &RoundRuns,
    invalid_twice: InvalidTwice,
) -> Result<SettledPasses, PairedFailure> {
    let passes = round.baseline_first.len();
    let mut slots: Vec<(Slot, RunOwner, &[RunRecord])> = vec![
        (
            Slot::BaselineFirst,
            RunOwner::Baseline,
            &round.baseline_first,
        ),
        (
            Slot::BaselineControl,
            RunOwner::Baseline,
            &round.baseline_control,
        ),
    ];
    if let Some(incumbent) = &round.incumbent {
        slots.push((Slot::Incumbent, RunOwner::Entry, &incumbent.runs));
    }
    for (index, challenger) in round.challengers.iter().enumerate() {
        slots.push((Slot::Challenger(index), RunOwner::Entry, &challenger.runs));
    }

    // fates[slot][pass]
    let mut fates = Vec::with_capacity(slots.len());
    for (slot, role, runs) in &slots {
        if runs.len() != passes {
            return Err(PairedFailure::Misaligned {
                slot: *slot,
                runs: runs.len(),
                passes,
            });
        }
        let mut slot_fates = Vec::with_capacity(passes);
        for (pass, record) in runs.iter().enumerate() {
            let fate = run_fate(*role, *record);
            match fate {
                RunFate::FailsRound
                    if *role == RunOwner::Entry
                        && invalid_twice == InvalidTwice::Disqualifies
                        && record.outcome == RunOutcome::Invalid =>
                {
                    slot_fates.push(RunFate::Disqualifies(DisqualifyingRun::InvalidTwice));
                }
                RunFate::FailsRound => return Err(PairedFailure::RunInvalid { slot: *slot, pass }),
                RunFate::RerunOnce => {
                    return Err(PairedFailure::RerunMissing { slot: *slot, pass });
                }
                _ => slot_fates.push(fate),
            }
        }
        fates.push(slot_fates);
    }

    let counted: Vec<usize> = (0..passes)
        .filter(|pass| {
            fates[..2]
                .iter()
                .all(|slot| matches!(slot[*pass], RunFate::Counts(_)))
        })
        .collect();
    let required = required_passes(passes);
    if counted.len() < required {
        return Err(PairedFailure::TooFewPasses {
            counted: counted.len(),
            required,
        });
    }
    let fate_of = |slot_fates: &[RunFate]| -> EntryFate {
        let mut throughputs = Vec::with_capacity(counted.len());
        for pass in &counted {
            match slot_fates[*pass] {
                RunFate::Counts(milli_rps) => throughputs.push(milli_rps),
                RunFate::Disqualifies(cause) => {
                    return EntryFate::Disqualified { pass: *pass, cause };
                }
                // Entries have no other fate left here.
                RunFate::VoidsPass | RunFate::RerunOnce | RunFate::FailsRound => {}
            }
        }
        EntryFate::Scored(throughputs)
    };
    // Both baseline runs count in every counted pass.
    let baseline = |slot_fates: &[RunFate]| -> Vec<u64> {
        counted
            .iter()
            .filter_map(|pass| match slot_fates[*pass] {
                RunFate::Counts(milli_rps) => Some(milli_rps),
                _ => None,
            })
            .collect()
    };
    let mut entries = fates[2..].iter();
    let incumbent = match round.incumbent {
        Some(_) => entries.next().map(|slot_fates| fate_of(slot_fates)),
        None => None,
    };
    Ok(SettledPasses {
        baseline_first: baseline(&fates[0]),
        baseline_control: baseline(&fates[1]),
        incumbent,
        challengers: entries.map(|slot_fates| fate_of(slot_fates)).collect(),
        counted,
    })
}

/// What the round's passes decide.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PairedDecision {
    /// The round does not count: no leader change, challengers requeued once.
    InfraFailed(PairedFailure),
    /// The noise floor is above the margin: no leader change, charged to nobody's requeue.
    Inconclusive {
        /// The A/A control's spread, basis points.
        control_spread_bp: u64,
        /// The campaign's overtake margin, basis points.
        margin_bp: u32,
    },
    /// The round counts; `leader_after` holds the seat (`None` = the baseline).
    Seat {
        /// The seat after the round.
        leader_after: Option<Leader>,
        /// The rule that decided.
        rule: SeatRule,
    },
}

/// Which challengers the decision rule tests against the margin (content/leader-rule.md,
/// No decoy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeatChoice {
    /// Up to `…/round/v4`: only the best challenger by median; when it does not clear
    /// the margin, nobody takes the seat.
    BestMedian,
    /// From `…/round/v5`: the best by median among the challengers that clear the margin.
    BestQualifying,
}

impl SeatChoice {
    /// The every-pass condition, ppm of ratio per basis point of margin: 50 (half the
    /// margin) up to v4; 75 (three quarters) from v5, where testing every challenger
    /// instead of one would otherwise seat more no-ops (content/leader-rule.md, No decoy).
    pub fn every_pass_ppm_per_bp(self) -> u64 {
        match self {
            SeatChoice::BestMedian => 50,
            SeatChoice::BestQualifying => 75,
        }
    }
}

/// Decides a round run in paired passes (issue 12 / content/noise.md): settles the
/// passes, applies the two noise verdicts, then seats a challenger (ranked by median
/// paired ratio against the baseline; a tie goes to the earlier commitment) that
/// [`clears_margin`] against the incumbent's runs of the same passes — against the
/// first baseline runs when the baseline holds the seat: the best of those that clear
/// it under [`SeatChoice::BestQualifying`], the best overall only under
/// [`SeatChoice::BestMedian`]. When none is seated the rule names the best by median
/// (`margin_not_met`). A disqualified incumbent yields the seat to the best scored
/// challenger without the margin, or to the baseline when none was scored (as in
/// content/leader-rule.md). `invalid_twice` is [`settle_passes`]'s.
pub fn decide_paired(
    round: &RoundRuns,
    drift_bound_bp: u32,
    margin_bp: u32,
    choice: SeatChoice,
    invalid_twice: InvalidTwice,
) -> PairedDecision {
    decide_paired_with_margins(round, drift_bound_bp, margin_bp, &[], choice, invalid_twice)
}

/// [`decide_paired`] with per-challenger margins: the challenger at index `i` of
/// [`RoundRuns::challengers`] must clear `challenger_margins_bp[i]` basis points against
/// the incumbent instead of `margin_bp` (a challenger derived from the incumbent is held
/// to the campaign's larger derived-work margin,
/// `receipts::rules::review::challenger_margin_bp`); a challenger past the slice's end is
/// held to `margin_bp`. The noise verdict stays on `margin_bp`.
pub fn decide_paired_with_margins(
    round: &RoundRuns,
    drift_bound_bp: u32,
    margin_bp: u32,
    challenger_margins_bp: &[u32],
    choice: SeatChoice,
    invalid_twice: InvalidTwice,
) -> PairedDecision {
    let settled = match settle_passes(round, invalid_twice) {
        Ok(settled) => settled,
        Err(failure) => return PairedDecision::InfraFailed(failure),
    };
    match noise_verdict(
        &settled.baseline_first,
        &settled.baseline_control,
        drift_bound_bp,
        margin_bp,
    ) {
        NoiseRuling::MachineChanged {
            spread_bp,
            bound_bp,
        } => {
            return PairedDecision::InfraFailed(PairedFailure::MachineChanged {
                spread_bp,
                bound_bp,
            });
        }
        NoiseRuling::Inconclusive {
            control_spread_bp,
            margin_bp,
        } => {
            return PairedDecision::Inconclusive {
                control_spread_bp,
                margin_bp,
            };
        }
        NoiseRuling::Decides { .. } => {}
    }

    let leader_before = round.incumbent.as_ref().map(|seated| seated.leader.clone());
    let leader_of = |index: usize| round.challengers[index].leader.clone();
    let incumbent: Option<&[u64]> = match &settled.incumbent {
        None => Some(&settled.baseline_first),
        Some(EntryFate::Scored(throughputs)) => Some(throughputs),
        Some(EntryFate::Disqualified { .. }) => None,
    };
    // The best scored challenger, and the best that clears the margin; a strict `>`
    // keeps the earliest of equals.
    let mut best: Option<(usize, i64)> = None;
    let mut best_qualifying: Option<(usize, i64)> = None;
    for (index, fate) in settled.challengers.iter().enumerate() {
        let EntryFate::Scored(throughputs) = fate else {
            continue;
        };
        let Some(score) = paired_score(throughputs, &settled.baseline_first) else {
            continue;
        };
        let better =
            |than: Option<(usize, i64)>| than.is_none_or(|(_, ppm)| score.median_ppm > ppm);
        if better(best) {
            best = Some((index, score.median_ppm));
        }
        let every_pass = choice.every_pass_ppm_per_bp();
        let margin = challenger_margins_bp
            .get(index)
            .copied()
            .unwrap_or(margin_bp);
        if incumbent.is_some_and(|i| clears_margin_every_pass(throughputs, i, margin, every_pass))
            && better(best_qualifying)
        {
            best_qualifying = Some((index, score.median_ppm));
        }
    }
    let seated = match choice {
        SeatChoice::BestQualifying => best_qualifying,
        SeatChoice::BestMedian => best.filter(|b| Some(*b) == best_qualifying),
    };
    match (incumbent, best) {
        (Some(_), None) => PairedDecision::Seat {
            leader_after: leader_before,
            rule: SeatRule::NoScoredChallenger,
        },
        (Some(_), Some((best, _))) => {
            if let Some((index, _)) = seated {
                PairedDecision::Seat {
                    leader_after: Some(leader_of(index)),
                    rule: SeatRule::MarginMet {
                        winner: leader_of(index),
                    },
                }
            } else {
                PairedDecision::Seat {
                    leader_after: leader_before,
                    rule: SeatRule::MarginNotMet {
                        best: leader_of(best),
                    },
                }
            }
        }
        (None, Some((index, _))) => PairedDecision::Seat {
            leader_after: Some(leader_of(index)),
            rule: SeatRule::IncumbentDisqualified {
                winner: leader_of(index),
            },
        },
        (None, None) => PairedDecision::Seat {
            leader_after: None,
            rule: SeatRule::IncumbentDisqualifiedFallback,
        },
    }
}
