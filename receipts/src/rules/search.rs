//! The path of one run's SLA rate search (content/measurement.md, Run): the rate of each
//! probe from the records of the probes before it, and where the run stops. Pure: the
//! search loop (`loadgen::search`) asks [`RateSearch::next_rate`] before every probe and
//! hands it the probe's record ([`RateSearch::observe`]); the verifier replays the same
//! machine over a probe log, so every logged rate and the stopping point are checked
//! against one definition.
//!
//! Rates on the *doubling grid* are `min_rate × 2^k` below `max_rate`, plus `max_rate`.
//! The bracket phase probes grid rates until a passing rate `lo` and the next grid rate
//! above it, `hi`, which fails (or `lo` is the maximum); the bisection then probes
//! `lo + (hi − lo) / 2` until `hi ≤ lo × (1 + tolerance)` or they are 1 milli-request/s
//! apart. With [`SearchStart::MinRate`] the bracket starts at the minimum and doubles;
//! with [`SearchStart::Estimate`] probe 0 is at the maximum, and unless it passes, the
//! bracket starts at the highest grid rate at most its throughput (the server's capacity
//! under overload), halving while probes fail and doubling while they pass. Both end in
//! the same bracket on a server whose verdict depends on the rate only, so they find the
//! same rate; each grid rate is probed at most once, so neither exceeds
//! [`max_probes_per_run`] and both use the same sub-streams
//! ([`crate::rules::workload`]).

use crate::model::{ProbeRecord, ProbeVerdict, RateSearchSpec, SearchStart};
use crate::rules::sla::max_probes_per_run;

/// Whether `probe` shows an unreachable server: it has measured requests, none
/// completed, and every one failed with `connect` (refused, no route) or
/// `connectionClosed` (reset). A run that meets one before any probe passed stops there,
/// and the entry is `sla_unmet` with the reason `unreachable`.
pub fn probe_unreachable(probe: &ProbeRecord) -> bool {
    probe.requests > 0
        && probe.completed == 0
        && probe.errors.connect + probe.errors.connection_closed == u64::from(probe.requests)
}

/// Whether a run's result rate is the search's ceiling, `max_rate_milli_rps`: every
/// probe up to it passed, so the server's throughput at the SLA is at least that.
pub fn at_ceiling(rate_milli_rps: Option<u64>, spec: &RateSearchSpec) -> bool {
    rate_milli_rps == Some(spec.max_rate_milli_rps)
}

/// One run's search, probe by probe (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateSearch {
    start: SearchStart,
    min: u64,
    max: u64,
    tolerance_bp: u32,
    max_probes: u32,
    probes: u32,
    /// The highest passing rate so far.
    lo: Option<u64>,
    /// The lowest failing rate so far.
    hi: Option<u64>,
    next: Option<u64>,
}

impl RateSearch {
    /// The search of `spec` before its first probe.
    pub fn new(spec: &RateSearchSpec) -> Self {
        let min = spec.min_rate_milli_rps.max(1);
        let start = spec.effective_start();
        let first = match start {
            SearchStart::MinRate => min,
            SearchStart::Estimate => spec.max_rate_milli_rps.max(min),
        };
        Self {
            start,
            min,
            max: spec.max_rate_milli_rps,
            tolerance_bp: spec.rate_tolerance_bp,
            max_probes: max_probes_per_run(spec),
            probes: 0,
            lo: None,
            hi: None,
            next: (max_probes_per_run(spec) > 0).then_some(first),
        }
    }

    /// The rate of the next probe, milli-requests/s; `None` once the run is over.
    pub fn next_rate(&self) -> Option<u64> {
        self.next
    }

    /// Probes observed so far.
    pub fn probes(&self) -> u32 {
        self.probes
    }

    /// Takes the record of the probe just sent (at [`RateSearch::next_rate`]) and decides
    /// the next rate. The run stops at an `invalid` probe (the client was measured), at
    /// an unreachable probe before any passed ([`probe_unreachable`]), at
    /// [`max_probes_per_run`] probes, when the maximum passed, when the minimum failed
    /// with nothing passing, and when the bisection has converged.
    pub fn observe(&mut self, probe: &ProbeRecord) {
        let rate = probe.rate_milli_rps;
        self.probes += 1;
        let first = self.probes == 1;
        match probe.verdict {
            ProbeVerdict::Invalid => {
                self.next = None;
                return;
            }
            ProbeVerdict::Pass => self.lo = Some(self.lo.map_or(rate, |lo| lo.max(rate))),
            ProbeVerdict::Fail => self.hi = Some(self.hi.map_or(rate, |hi| hi.min(rate))),
        }
        if self.probes >= self.max_probes || (self.lo.is_none() && probe_unreachable(probe)) {
            self.next = None;
            return;
        }
        self.next = if first && self.start == SearchStart::Estimate && self.lo.is_none() {
            self.grid_at_most(probe.throughput_milli_rps)
        } else {
            self.step()
        };
    }

    /// The highest grid rate below the maximum that is at most `throughput` (the minimum
    /// when the throughput is lower); `None` when no grid rate lies below the maximum.
    fn grid_at_most(&self, throughput: u64) -> Option<u64> {
        if self.min >= self.max {
            return None;
        }
        let mut rate = self.min;
        while let Some(up) = rate
            .checked_mul(2)
            .filter(|&up| up <= throughput && up < self.max)
        {
            rate = up;
        }
        Some(rate)
    }

    /// The next rate from the bracket so far.
    fn step(&self) -> Option<u64> {
        match (self.lo, self.hi) {
            (None, None) => None,
            // Nothing passed yet: the grid rate below the lowest failure, down to the
            // minimum (with `MinRate` the first failure is at the minimum: the run ends).
            (None, Some(hi)) => (hi > self.min).then(|| (hi / 2).max(self.min)),
            (Some(lo), _) if lo >= self.max => None,
            (Some(lo), hi) => {
                let up = lo.saturating_mul(2).min(self.max);
                match hi {
                    Some(hi) if up >= hi => {
                        let within = u128::from(hi) * 10_000
                            <= u128::from(lo) * (10_000 + u128::from(self.tolerance_bp));
                        (!within && hi - lo > 1).then(|| lo + (hi - lo) / 2)
                    }
                    _ => Some(up),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ErrorCounts, ProbeHistograms};

    fn record(rate: u64, verdict: ProbeVerdict, throughput: u64) -> ProbeRecord {
        ProbeRecord {
            run: 0,
            probe: 0,
            sub_stream: 0,
            rate_milli_rps: rate,
            warmup_requests: 0,
            requests: 10,
            completed: 10,
            over_bound: 0,
            percentile_us: None,
            required_requests: None,
            send_lag_p50_us: 0,
            send_lag_p99_us: 0,
            send_lag_bound_us: 0,
            verdict,
            throughput_milli_rps: throughput,
            duration_us: 0,
            input_bytes: 0,
            output_tokens: 0,
            token_count: None,
            errors: ErrorCounts::default(),
            histograms: ProbeHistograms {
                e2e: String::new(),
                ttft: String::new(),
                tpot: String::new(),
                itl: String::new(),
                send_lag: String::new(),
            },
        }
    }

    /// The rates a search visits on a server that passes every rate up to `capacity` and
    /// achieves `overload` under overload.
    fn path(spec: &RateSearchSpec, capacity: u64, overload: u64) -> Vec<u64> {
        let mut search = RateSearch::new(spec);
        let mut rates = Vec::new();
        while let Some(rate) = search.next_rate() {
            rates.push(rate);
            let (verdict, throughput) = if rate <= capacity {
                (ProbeVerdict::Pass, rate)
            } else {
                (ProbeVerdict::Fail, overload)
            };
            search.observe(&record(rate, verdict, throughput));
        }
        rates
    }

    fn spec(start: SearchStart) -> RateSearchSpec {
        RateSearchSpec {
            start: Some(start),
            ..RateSearchSpec::default()
        }
    }

    #[test]
    fn the_minimum_start_doubles_then_bisects() {
        // 0.5 req/s doubling to 16 (pass) and 32 (fail), then bisecting to within 5 %.
        assert_eq!(
            path(&spec(SearchStart::MinRate), 20_000, 21_000),
            [
                500, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 24_000, 20_000, 22_000, 21_000
            ]
        );
    }

    #[test]
    fn the_estimate_start_skips_to_the_same_bracket() {
        // 64 req/s fails at 21 req/s achieved: the bracket starts at 16 (0.5 × 2^5 ≤ 21),
        // doubles to 32 (fail), then the same bisection as from the minimum.
        assert_eq!(
            path(&spec(SearchStart::Estimate), 20_000, 21_000),
            [64_000, 16_000, 32_000, 24_000, 20_000, 22_000, 21_000]
        );
        // An estimate above the capacity halves down to the bracket.
        assert_eq!(
            path(&spec(SearchStart::Estimate), 5_000, 40_000),
            [
                64_000, 32_000, 16_000, 8_000, 4_000, 6_000, 5_000, 5_500, 5_250
            ]
        );
        assert_eq!(
            path(&spec(SearchStart::MinRate), 5_000, 40_000)[4..],
            [8_000, 6_000, 5_000, 5_500, 5_250]
        );
    }

    #[test]
    fn the_ceiling_ends_both_searches_at_the_maximum() {
        let spec_max = spec(SearchStart::Estimate);
        assert_eq!(path(&spec_max, u64::MAX, 0), [64_000]);
        let legacy = path(&spec(SearchStart::MinRate), u64::MAX, 0);
        assert_eq!(legacy.last(), Some(&64_000));
        assert!(at_ceiling(Some(64_000), &spec_max));
        assert!(!at_ceiling(Some(63_999), &spec_max));
        assert!(!at_ceiling(None, &spec_max));
    }

    #[test]
    fn nothing_passing_ends_at_the_minimum() {
        assert_eq!(path(&spec(SearchStart::MinRate), 0, 0), [500]);
        assert_eq!(
            path(&spec(SearchStart::Estimate), 0, 0),
            [64_000, 500],
            "no throughput under overload: the bracket starts at the minimum"
        );
    }

    #[test]
    fn an_unreachable_probe_before_any_pass_ends_the_run() {
        let mut search = RateSearch::new(&spec(SearchStart::Estimate));
        let mut refused = record(64_000, ProbeVerdict::Fail, 0);
        refused.completed = 0;
        refused.errors.connect = 7;
        refused.errors.connection_closed = 3;
        assert!(probe_unreachable(&refused));
        search.observe(&refused);
        assert_eq!(search.next_rate(), None);
        // One request answered (a 5xx): reachable, the search goes on.
        let mut answered = refused.clone();
        answered.errors.connect = 6;
        answered.errors.http5xx = 1;
        assert!(!probe_unreachable(&answered));
        let mut search = RateSearch::new(&spec(SearchStart::Estimate));
        search.observe(&answered);
        assert_eq!(search.next_rate(), Some(500));
    }

    #[test]
    fn an_invalid_probe_ends_the_run() {
        let mut search = RateSearch::new(&spec(SearchStart::MinRate));
        search.observe(&record(500, ProbeVerdict::Invalid, 500));
        assert_eq!((search.next_rate(), search.probes()), (None, 1));
    }

    #[test]
    fn no_search_exceeds_the_probe_budget() {
        for start in [SearchStart::MinRate, SearchStart::Estimate] {
            let spec = RateSearchSpec {
                rate_tolerance_bp: 1,
                ..spec(start)
            };
            let budget = max_probes_per_run(&spec) as usize;
            for capacity in (0..70_000).step_by(997) {
                for overload in [0, capacity / 2, capacity, capacity * 3, 70_000] {
                    let rates = path(&spec, capacity, overload);
                    assert!(rates.len() <= budget, "{start:?} {capacity} {overload}");
                }
            }
        }
    }

    #[test]
    fn both_starts_find_the_same_rate() {
        for capacity in (500..64_000).step_by(1_231) {
            for overload in [0, capacity / 3, capacity, capacity + 7_000, 64_000] {
                let legacy = path(&spec(SearchStart::MinRate), capacity, overload);
                let estimate = path(&spec(SearchStart::Estimate), capacity, overload);
                let best = |rates: &[u64]| rates.iter().filter(|&&r| r <= capacity).max().copied();
                assert_eq!(best(&legacy), best(&estimate), "{capacity} {overload}");
            }
        }
    }
}
