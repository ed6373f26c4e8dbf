//! Throughput arithmetic of an entry and a round (content/measurement.md, Entry; content/leader-rule.md):
//! median/min/max of runs, the score in parts per million, the drift of the baseline in
//! basis points and the overtake test, all in integers on milli-requests/s, so the
//! runner, the verifier and the site compute exactly the same values.

/// Basis points in one (100 %).
const BP_ONE: u128 = 10_000;

/// The drift of the drift baseline against the first baseline: `⌈|drift − first| · 10⁴ /
/// first⌉` basis points (content/measurement.md, Paired comparison and drift). Rounding up makes
/// `drift_bp ≤ bound_bp` exactly `|drift − first| · 10⁴ ≤ bound_bp · first`. `None` when
/// the first throughput is 0.
pub fn drift_bp(first_milli_rps: u64, drift_milli_rps: u64) -> Option<u64> {
    if first_milli_rps == 0 {
        return None;
    }
    let diff = u128::from(first_milli_rps.abs_diff(drift_milli_rps)) * BP_ONE;
    u64::try_from(diff.div_ceil(u128::from(first_milli_rps))).ok()
}

/// Whether a challenger at `challenger_milli_rps` overtakes an incumbent measured at
/// `incumbent_milli_rps` in the same round: `T_c × 10⁴ ≥ T_i × (10⁴ + margin_bp)`
/// (content/leader-rule.md; equality takes the seat).
pub fn overtakes(challenger_milli_rps: u64, incumbent_milli_rps: u64, margin_bp: u32) -> bool {
    u128::from(challenger_milli_rps) * BP_ONE
        >= u128::from(incumbent_milli_rps) * (BP_ONE + u128::from(margin_bp))
}

/// The score of an entry: `floor((T / T_baseline − 1) · 10⁶)` in parts per million, with
/// both throughputs in milli-requests/s (content/leader-rule.md), computed in integers. `None` when
/// the baseline throughput is 0 (then nothing can be scored) or the score does not fit
/// an `i64`. The one implementation: the runner scores with it, the verifier recomputes
/// with it.
pub fn score_ppm(throughput_milli_rps: u64, baseline_milli_rps: u64) -> Option<i64> {
    if baseline_milli_rps == 0 {
        return None;
    }
    let numerator = (i128::from(throughput_milli_rps) - i128::from(baseline_milli_rps)) * 1_000_000;
    // div_euclid with a positive divisor is the floor, also for slower entries.
    i64::try_from(numerator.div_euclid(i128::from(baseline_milli_rps))).ok()
}

/// An entry's throughput from its runs' throughputs, milli-requests/s (content/measurement.md,
/// Entry): `(median, min, max)` where the median of an even count is the lower middle.
/// `None` when `runs` is empty.
pub fn run_throughputs(runs: &[u64]) -> Option<(u64, u64, u64)> {
    let mut values = runs.to_vec();
    values.sort_unstable();
    let median = *values.get(values.len().checked_sub(1)? / 2)?;
    Some((median, *values.first()?, *values.last()?))
}
