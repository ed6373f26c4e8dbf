//! The SLA arithmetic of a probe and a run (content/measurement.md, Throughput at a latency SLA):
//! nearest-rank percentiles from histograms, over-bound counts, MLPerf's early-stopping
//! rule in exact integer arithmetic, the probe verdict, and the most probes one run's
//! search may send. Pure: the search loop that drives probes lives in `loadgen::search`.

use hdrhistogram::Histogram;

use crate::model::{Percentile, ProbeVerdict, RateSearchSpec};
use crate::rules::histogram::Recorded;

/// The most probes one run's search may send: the bracket's probes (the minimum rate,
/// then doubling, capped at the maximum) plus ⌈log2(10⁴ ÷ tolerance_bp)⌉ + 2 bisection
/// steps. The search never exceeds it (it stops with the best passing probe so far), so
/// the workload can reserve one sub-stream per probe ([`crate::rules::workload`]). Both
/// starts of [`crate::rules::search`] probe each of those bracket rates at most once, so
/// the budget, and with it the sub-stream layout, does not depend on the start.
pub fn max_probes_per_run(spec: &RateSearchSpec) -> u32 {
    let mut rate = spec.min_rate_milli_rps.max(1);
    let mut bracket = 1;
    while rate < spec.max_rate_milli_rps {
        rate = rate.saturating_mul(2).min(spec.max_rate_milli_rps);
        bracket += 1;
    }
    let ratio = 10_000u64.div_ceil(u64::from(spec.rate_tolerance_bp.max(1)));
    let bisect = 64 - ratio.saturating_sub(1).leading_zeros() + 2;
    bracket + bisect
}

/// The value at nearest rank ⌈q·N⌉ (content/measurement.md, Percentile) of the samples in `h`
/// followed by `failed` samples ranked last (failed requests count as over the bound).
/// Returns the rank's bucket as HdrHistogram reports it (`highest_equivalent`), in the
/// histogram's unit, or `None` when the rank falls on a failed sample or N is 0.
pub fn nearest_rank_value(h: &Histogram<u64>, percentile: Percentile, failed: u64) -> Option<u64> {
    let [value] = walk(h, [percentile], failed, None).values;
    value
}

/// Samples of `h` over `bound`: those whose bucket's highest equivalent value exceeds it.
/// Deciding on the bucket (not the raw value) lets a verifier recount it from the stored
/// histogram; it errs towards "over" within one bucket (3 significant digits).
pub fn over_bound_count(h: &Histogram<u64>, bound: u64) -> u64 {
    walk(h, [], 0, Some(bound)).over_bound
}

/// What one walk of a histogram's recorded buckets reads ([`walk`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Walk<const N: usize> {
    /// For each percentile asked, in its order, what [`nearest_rank_value`] gives for it.
    pub values: [Option<u64>; N],
    /// With a bound, what [`over_bound_count`] gives for it (samples, `failed` not
    /// included); 0 without one.
    pub over_bound: u64,
}

/// The nearest-rank values of `percentiles` over `h` followed by `failed` samples, and
/// with `bound` the samples of `h` over it, in one walk of the recorded buckets instead of
/// one per figure (a decoded latency histogram has some 23,500 counters). The one home of
/// both formulas: [`nearest_rank_value`] and [`over_bound_count`] are this walk.
pub fn walk<const N: usize>(
    h: &Histogram<u64>,
    percentiles: [Percentile; N],
    failed: u64,
    bound: Option<u64>,
) -> Walk<N> {
    let buckets = h.iter_recorded().map(|b| {
        (
            h.highest_equivalent(b.value_iterated_to()),
            b.count_at_value(),
        )
    });
    walk_buckets(h.len(), buckets, percentiles, failed, bound)
}

/// [`walk`] over a histogram decoded into its recorded buckets
/// ([`crate::rules::histogram::decode_recorded`]): the same figures, without the dense
/// counters.
pub fn walk_recorded<const N: usize>(
    h: &Recorded,
    percentiles: [Percentile; N],
    failed: u64,
    bound: Option<u64>,
) -> Walk<N> {
    walk_buckets(
        h.len(),
        h.buckets().iter().copied(),
        percentiles,
        failed,
        bound,
    )
}

/// The walk itself, over `len` samples in recorded buckets (highest equivalent value,
/// count), ascending.
fn walk_buckets<const N: usize>(
    len: u64,
    buckets: impl Iterator<Item = (u64, u64)>,
    percentiles: [Percentile; N],
    failed: u64,
    bound: Option<u64>,
) -> Walk<N> {
    let total = len.saturating_add(failed);
    let mut values = [None; N];
    let ranks = percentiles.map(|p| p.nearest_rank(total));
    let mut pending = if total == 0 { 0 } else { N };
    let mut over_bound = 0u64;
    let mut seen = 0u64;
    for (value, count) in buckets {
        if pending == 0 && bound.is_none() {
            break;
        }
        seen = seen.saturating_add(count);
        if bound.is_some_and(|bound| value > bound) {
            over_bound = over_bound.saturating_add(count);
        }
        if pending > 0 {
            for (slot, rank) in values.iter_mut().zip(ranks) {
                if slot.is_none() && seen >= rank {
                    *slot = Some(value);
                    pending -= 1;
                }
            }
        }
    }
    Walk { values, over_bound }
}

/// MLPerf early stopping: whether `requests` requests with `over_bound` of them over the
/// bound certify `percentile` within the bound at 99 % confidence, i.e.
/// P[Binomial(requests, 1 − q) ≤ over_bound] ≤ 0.01. Computed exactly with integers:
/// with 1 − q = a/d reduced, 100 · Σ_{k ≤ t} C(n,k)·a^k·b^(n−k) ≤ d^n, b = d − a.
pub fn certified(requests: u64, over_bound: u64, percentile: Percentile) -> bool {
    if over_bound >= requests {
        return false;
    }
    let good = u64::from(percentile.permille());
    let bad = 1000 - good;
    let g = gcd(good, bad);
    let (a, b, d) = (bad / g, good / g, 1000 / g);
    let n = requests;
    // Fast path: with t ≥ ⌈n·a/d⌉ ≥ the binomial's median, P[X ≤ t] ≥ 1/2 > 0.01. It
    // keeps the exact sum below to t < n·(1 − q) terms on mostly failing probes.
    if u128::from(n) * u128::from(a) <= u128::from(over_bound) * u128::from(d) {
        return false;
    }
    // term_0 = b^n; term_{k+1} = term_k · (n − k) · a ÷ ((k + 1) · b), exact.
    let mut term = Big::pow(b, n);
    let mut sum = term.clone();
    for k in 0..over_bound {
        term.mul_small(n - k);
        term.mul_small(a);
        term.div_small_exact(k + 1);
        term.div_small_exact(b);
        sum.add(&term);
    }
    sum.mul_small(100);
    sum.cmp(&Big::pow(d, n)) != std::cmp::Ordering::Greater
}

/// The smallest number of requests that certifies `percentile` with `over_bound` requests
/// over the bound (see [`certified`]); `None` above 10⁷ requests. p95: 90 with 0, 130 with
/// 1; p90: 44 / 64; p99: 459 / 662 (content/measurement.md).
pub fn required_requests(over_bound: u64, percentile: Percentile) -> Option<u64> {
    const LIMIT: u64 = 10_000_000;
    // The CDF falls as n grows: find an upper end by doubling, then bisect.
    // Not certified: n ≤ t never is. First guess: twice the n whose mean over-bound
    // count is t + 1.
    let mut lo = over_bound;
    let bad = u64::from(1000 - percentile.permille());
    let mut hi = ((over_bound + 1) * 1000).div_ceil(bad).max(over_bound + 1) * 2;
    while !certified(hi, over_bound, percentile) {
        lo = hi;
        hi = hi.checked_mul(2)?;
        if hi > LIMIT * 2 {
            return None;
        }
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if certified(mid, over_bound, percentile) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    (hi <= LIMIT).then_some(hi)
}

/// A probe's verdict (content/measurement.md, Probe): `Invalid` when the send-lag p99 exceeds its
/// bound, else `Pass` when `requests` with `over_bound` over the bound are
/// [`certified`], else `Fail`.
pub fn verdict(
    requests: u64,
    over_bound: u64,
    percentile: Percentile,
    send_lag_p99_us: u64,
    send_lag_bound_us: u64,
) -> ProbeVerdict {
    if send_lag_p99_us > send_lag_bound_us {
        ProbeVerdict::Invalid
    } else if certified(requests, over_bound, percentile) {
        ProbeVerdict::Pass
    } else {
        ProbeVerdict::Fail
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// A non-negative big integer, little-endian 64-bit limbs: just what the exact binomial
/// tail needs (multiply and exactly divide by a small number, add, compare).
#[derive(Clone, Debug)]
struct Big(Vec<u64>);

impl Big {
    /// base^exponent, multiplying by the largest power of `base` that fits in 64 bits.
    fn pow(base: u64, exponent: u64) -> Self {
        let mut out = Big(vec![1]);
        if base <= 1 {
            return out;
        }
        let (mut chunk, mut chunk_len) = (base, 1u64);
        while let Some(next) = chunk.checked_mul(base) {
            chunk = next;
            chunk_len += 1;
        }
        let mut left = exponent;
        while left >= chunk_len {
            out.mul_small(chunk);
            left -= chunk_len;
        }
        for _ in 0..left {
            out.mul_small(base);
        }
        out
    }

    /// self × m.
    fn mul_small(&mut self, m: u64) {
        let mut carry = 0u128;
        for limb in &mut self.0 {
            let v = u128::from(*limb) * u128::from(m) + carry;
            *limb = v as u64;
            carry = v >> 64;
        }
        if carry > 0 {
            self.0.push(carry as u64);
        }
    }

    /// self ÷ m, for m ≥ 1 dividing self exactly.
    fn div_small_exact(&mut self, m: u64) {
        let mut rest = 0u128;
        for limb in self.0.iter_mut().rev() {
            let v = (rest << 64) | u128::from(*limb);
            *limb = (v / u128::from(m)) as u64;
            rest = v % u128::from(m);
        }
        debug_assert_eq!(rest, 0);
        self.trim();
    }

    fn add(&mut self, other: &Big) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        let mut carry = false;
        for (i, limb) in self.0.iter_mut().enumerate() {
            let (v, c1) = limb.overflowing_add(other.0.get(i).copied().unwrap_or(0));
            let (v, c2) = v.overflowing_add(u64::from(carry));
            *limb = v;
            carry = c1 || c2;
        }
        if carry {
            self.0.push(1);
        }
    }

    fn trim(&mut self) {
        while self.0.len() > 1 && self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    fn cmp(&self, other: &Big) -> std::cmp::Ordering {
        let (mut x, mut y) = (self.clone(), other.clone());
        x.trim();
        y.trim();
        x.0.len()
            .cmp(&y.0.len())
            .then_with(|| x.0.iter().rev().cmp(y.0.iter().rev()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One walk reads the same figures as a walk per figure did: the rank's bucket per
    /// percentile (with failed samples ranked last) and the samples over the bound.
    #[test]
    fn one_walk_gives_every_percentile_and_the_over_bound_count() {
        let mut h = crate::rules::histogram::new_latency_histogram();
        for (value, count) in [(3u64, 50u64), (190, 40), (2_047, 9), (1_000_000, 1)] {
            h.record_n(value, count).unwrap();
        }
        let p = |permille| Percentile::from_permille(permille).unwrap();
        let got = walk(&h, [p(500), p(950), p(990), p(999)], 0, Some(190));
        assert_eq!(
            got,
            Walk {
                values: [Some(3), Some(2_047), Some(2_047), Some(1_000_447)],
                over_bound: 10,
            }
        );
        // 10 failed samples ranked last: p95 of 110 is rank 105, a failed one.
        let got = walk(&h, [p(500), p(950)], 10, None);
        assert_eq!(got.values, [Some(190), None]);
        assert_eq!(got.over_bound, 0);
        assert_eq!(nearest_rank_value(&h, p(500), 10), Some(190));
        assert_eq!(over_bound_count(&h, 2_047), 1);
        let empty = crate::rules::histogram::new_latency_histogram();
        assert_eq!(walk(&empty, [p(500)], 0, Some(0)).values, [None]);
    }

    #[test]
    fn big_pow_matches_u128() {
        let mut x = Big::pow(19, 20);
        x.trim();
        let v = 19u128.pow(20);
        let limbs: Vec<u64> = (0..2).map(|i| (v >> (64 * i)) as u64).collect();
        let mut expected = Big(limbs);
        expected.trim();
        assert_eq!(x.cmp(&expected), std::cmp::Ordering::Equal);
    }

    #[test]
    fn default_campaign_reserves_fifteen_probes() {
        assert_eq!(max_probes_per_run(&RateSearchSpec::default()), 15);
    }
}
