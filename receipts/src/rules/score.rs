//! Throughput arithmetic of a probe, an entry and a round (content/measurement.md, Probe
//! and Entry; content/leader-rule.md): a probe's throughput, median/min/max of runs, the
//! score in parts per million, the drift of the baseline in basis points and the
//! overtake test, all in integers on milli-requests/s, so the runner, the verifier and
//! the site compute exactly the same values.

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

/// A probe's throughput: `completed` requests over `duration_us` (last completion −
/// first scheduled send of the measured requests, µs, as the probe log's `durationUs`
/// records it), in milli-requests/s, floor-rounded (content/measurement.md, Probe); 0
/// when nothing completed or the duration is 0. The one implementation: the load
/// generator records it, the verifier recomputes it exactly from the probe log (round/v3).
pub fn probe_throughput_milli_rps(completed: u32, duration_us: u64) -> u64 {
    milli_rps(completed, duration_us, 1_000_000)
}

/// The throughputs, milli-requests/s, that the load generator before round/v3 recorded
/// for `completed` requests over a `durationUs` of `duration_us`: it divided by the
/// nanoseconds it measured, which the log truncated to µs, so any duration from
/// `duration_us` µs to 999 ns more could have given the figure: `(low, high)`,
/// inclusive. Only for probe logs of round/v1 and v2 bundles; from v3 the throughput is
/// [`probe_throughput_milli_rps`] of the recorded µs, exactly.
pub fn probe_throughput_range(completed: u32, duration_us: u64) -> (u64, u64) {
    let shortest_ns = duration_us.saturating_mul(1000);
    let longest_ns = shortest_ns.saturating_add(999);
    let low = milli_rps(completed, longest_ns, 1_000_000_000);
    let high = milli_rps(completed, shortest_ns.max(1), 1_000_000_000);
    if shortest_ns == 0 {
        (0, high)
    } else {
        (low, high)
    }
}

/// `⌊completed · 1000 · units_per_s / duration⌋` milli-requests/s for a duration in
/// units of which `units_per_s` make a second (saturating at `u64::MAX`); 0 when nothing
/// completed or the duration is 0.
fn milli_rps(completed: u32, duration: u64, units_per_s: u64) -> u64 {
    if completed == 0 || duration == 0 {
        return 0;
    }
    let t = u128::from(completed) * 1000 * u128::from(units_per_s) / u128::from(duration);
    u64::try_from(t).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_throughput_divides_by_the_recorded_microseconds() {
        // 3 completed in 1 000 000 µs: 3 000 milli-req/s, not the 2 999 that the
        // 1 000 000 999 ns the client may have measured would give.
        assert_eq!(probe_throughput_milli_rps(3, 1_000_000), 3_000);
        // 8 in 737 083 µs: 10 853.6… floors to 10 853.
        assert_eq!(probe_throughput_milli_rps(8, 737_083), 10_853);
        assert_eq!(probe_throughput_milli_rps(0, 1_000_000), 0);
        assert_eq!(probe_throughput_milli_rps(3, 0), 0);
        assert_eq!(
            probe_throughput_milli_rps(u32::MAX, 1),
            4_294_967_295_000_000_000
        );
    }
}
