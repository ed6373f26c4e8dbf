//! The rate search without a network: nearest-rank percentiles of known histograms, the
//! early-stopping rule against scipy's binomial CDF (recorded as literals), the probe
//! summary's over-bound accounting, and whole searches in tokio's paused clock against a
//! simulated server of known capacity, from either start of the bracket.

mod load_support;

use std::time::Duration;

use loadgen::search::{NoProgress, ProbeExecutor, search_entry};
use loadgen::{LoadError, ProbeContext, ProbePlan, RequestErrorKind, RequestSample};
use receipts::model::{
    Campaign, MeasurementOutcome, Percentile, ProbeRecord, ProbeVerdict, RunMeasurement, Sla,
    SlaUnmetReason, TokenCount,
};
use receipts::rules::histogram::{decode_histogram, new_latency_histogram};
use receipts::rules::sla::{certified, max_probes_per_run, nearest_rank_value, required_requests};
use receipts::rules::workload::Workload;

use load_support::seeds;
use testkit::campaign::CampaignToml;

fn p(text: &str) -> Percentile {
    text.parse().unwrap()
}

#[test]
fn nearest_rank_of_known_histograms() {
    let mut h = new_latency_histogram();
    for v in 1..=100 {
        h.record(v).unwrap();
    }
    // ⌈q·N⌉ of 1..=100: exact below 2048 at 3 significant digits.
    for (q, failed, expected) in [
        ("p50", 0, Some(50)),
        ("p90", 0, Some(90)),
        ("p95", 0, Some(95)),
        ("p99", 0, Some(99)),
        ("p99.9", 0, Some(100)),
        // 10 failed requests rank last: ⌈0.9 · 110⌉ = 99.
        ("p90", 10, Some(99)),
        // ⌈0.95 · 110⌉ = 105 > 100: the rank falls on a failed request.
        ("p95", 10, None),
    ] {
        assert_eq!(
            nearest_rank_value(&h, p(q), failed),
            expected,
            "{q} +{failed}"
        );
    }
    // 0.95 · 20 = 19 exactly; a float ceil would give rank 20 on some inputs.
    let mut h = new_latency_histogram();
    for v in 1..=20 {
        h.record(v * 10).unwrap();
    }
    assert_eq!(nearest_rank_value(&h, p("p95"), 0), Some(190));
    // Above 2048 µs values share buckets: the rank's bucket reports its highest
    // equivalent value, as HdrHistogram does.
    let mut h = new_latency_histogram();
    h.record(1_000_000).unwrap();
    h.record(3).unwrap();
    assert_eq!(nearest_rank_value(&h, p("p50"), 0), Some(3));
    assert_eq!(nearest_rank_value(&h, p("p99"), 0), Some(1_000_447));
    assert_eq!(
        nearest_rank_value(&new_latency_histogram(), p("p99"), 0),
        None
    );
}

#[test]
fn early_stopping_matches_scipy() {
    // scipy.stats.binom: smallest n with binom.cdf(t, n, 1 − q) ≤ 0.01, t = 0..5.
    let table: [(&str, [u64; 6]); 5] = [
        ("p50", [7, 11, 14, 17, 19, 22]),
        ("p90", [44, 64, 81, 97, 113, 127]),
        ("p95", [90, 130, 165, 198, 229, 259]),
        ("p99", [459, 662, 838, 1001, 1157, 1307]),
        ("p99.9", [4603, 6636, 8403, 10042, 11601, 13105]),
    ];
    for (q, expected) in table {
        for (t, &n) in expected.iter().enumerate() {
            let t = t as u64;
            assert_eq!(required_requests(t, p(q)), Some(n), "{q} t={t}");
            assert!(certified(n, t, p(q)), "{q} t={t} n={n}");
            assert!(!certified(n - 1, t, p(q)), "{q} t={t} n={}", n - 1);
        }
    }
    // binom.cdf(1, 130, 0.05) = 0.009965… ≤ 0.01 < binom.cdf(1, 129, 0.05) = 0.010419…
    assert!(certified(130, 1, p("p95")));
    assert!(!certified(129, 1, p("p95")));
    // Everything over the bound never certifies, nor does a share at or above 1 − q
    // (the fast path), just below it neither (the exact sum).
    assert!(!certified(1000, 1000, p("p95")));
    assert!(!certified(100_000, 5_000, p("p95")));
    assert!(!certified(20_000, 999, p("p95")));
    assert!(!certified(1000, 10, p("p99")));
    assert!(certified(1307, 5, p("p99")));
    assert!(!certified(0, 0, p("p95")));
}

fn sample(scheduled_ns: u64, e2e_ns: u64, error: Option<RequestErrorKind>) -> RequestSample {
    RequestSample {
        scheduled_ns,
        e2e_ns,
        ttft_ns: Some(e2e_ns / 2),
        max_tokens: 4,
        output_tokens: if error.is_none() { 4 } else { 0 },
        input_bytes: 10,
        send_lag_ns: 1_000,
        error,
        ..RequestSample::default()
    }
}

fn context(sla: &str) -> ProbeContext {
    ProbeContext {
        run: 0,
        probe: 0,
        sub_stream: 0,
        rate_milli_rps: 1000,
        sla: sla.parse::<Sla>().unwrap(),
        send_lag_bound_us: 2_000,
        token_count: TokenCount::Ids,
    }
}

#[test]
fn failed_timed_out_and_short_responses_count_over_bound() {
    // 130 fast requests, then one of each failure kind: each is over the bound and not
    // completed, however fast it failed.
    let mut samples: Vec<RequestSample> = (0..130)
        .map(|i| sample(i * 1_000_000_000, 5_000_000, None))
        .collect();
    for (i, kind) in [
        RequestErrorKind::Connect,
        RequestErrorKind::Http5xx,
        RequestErrorKind::Http4xx,
        RequestErrorKind::BadBody,
        RequestErrorKind::Timeout,
        RequestErrorKind::ShortOutput,
        RequestErrorKind::ConnectionClosed,
    ]
    .into_iter()
    .enumerate()
    {
        samples.push(sample(200_000_000_000 + i as u64, 1_000, Some(kind)));
    }
    // Warm-up samples are excluded, even failed ones.
    samples.push(RequestSample {
        warmup: true,
        ..sample(0, 1, Some(RequestErrorKind::Timeout))
    });
    let record = loadgen::summarize_probe(&context("p95:e2e:10ms"), &samples).unwrap();
    assert_eq!(record.requests, 137);
    assert_eq!(record.warmup_requests, 1);
    assert_eq!(record.completed, 130);
    assert_eq!(record.over_bound, 7);
    assert_eq!(record.errors.total(), 7);
    assert_eq!(
        (
            record.errors.connect,
            record.errors.http5xx,
            record.errors.timeout
        ),
        (1, 1, 1)
    );
    assert_eq!(
        (record.errors.short_output, record.errors.connection_closed),
        (1, 1)
    );
    // 7 over-bound of 137 does not certify p95, and rank ⌈0.95 · 137⌉ = 131 falls on a
    // failed request.
    assert_eq!(record.verdict, ProbeVerdict::Fail);
    assert_eq!(record.percentile_us, None);
    let e2e = decode_histogram(&record.histograms.e2e).unwrap();
    assert_eq!(e2e.len(), 130);
    // The same 130 completed with a single slow one: 1 over, 131 ≥ 130 certifies.
    let mut samples: Vec<RequestSample> = (0..130)
        .map(|i| sample(i * 1_000_000_000, 5_000_000, None))
        .collect();
    samples.push(sample(131_000_000_000, 50_000_000, None));
    let record = loadgen::summarize_probe(&context("p95:e2e:10ms"), &samples).unwrap();
    assert_eq!((record.over_bound, record.verdict), (1, ProbeVerdict::Pass));
    // Throughput: 131 completed ÷ (131 s + 50 ms − 0) = 0.99962… req/s.
    assert_eq!(record.throughput_milli_rps, 999);
    assert_eq!(record.required_requests, Some(130));
}

#[test]
fn send_lag_over_bound_invalidates_a_probe() {
    let samples: Vec<RequestSample> = (0..100)
        .map(|i| RequestSample {
            send_lag_ns: 3_000_000,
            ..sample(i * 1_000_000_000, 5_000_000, None)
        })
        .collect();
    let record = loadgen::summarize_probe(&context("p95:e2e:10ms"), &samples).unwrap();
    // 3,000 µs lies in a 2 µs bucket whose highest equivalent value is 3,001.
    assert_eq!(record.send_lag_p99_us, 3_001);
    assert_eq!(record.verdict, ProbeVerdict::Invalid);
}

/// The simulated campaign: 3 passes of constant arrivals, 8-token prompts, 1-token
/// outputs, p95 of e2e within 200 ms, rates 1–400 req/s.
fn search() -> CampaignToml {
    CampaignToml::minimal("sim")
        .set("runs", "3")
        .set("model.name", "\"sim\"")
        .set("workload.input_len", "{ kind = \"fixed\", value = 8 }")
        .set("workload.output_len", "{ kind = \"fixed\", value = 1 }")
        .set("workload.arrival", "\"constant\"")
        .set("correctness.items", "3")
        .remove("correctness.input_len")
        .remove("correctness.output_tokens")
        .set("sla.percentile", "\"p95\"")
        .set("sla.latency", "\"e2e\"")
        .set("sla.bound_ms", "200")
        .set("rate_search.min_rate_milli_rps", "1000")
        .set("rate_search.max_rate_milli_rps", "400000")
        .set("rate_search.min_probe_duration_ms", "3000")
        .set("rate_search.min_probe_requests", "130")
        .set("rate_search.warmup_requests", "5")
        .set("rate_search.rate_tolerance_bp", "200")
}

/// A single-server FIFO queue with a fixed service time (capacity = 1 ÷ service time),
/// fed the workload's real schedule; the paused clock advances by each probe's length.
struct SimulatedServer<'a> {
    workload: &'a Workload,
    sla: Sla,
    service_ns: u64,
    /// Every request's send lag from this rate (milli-req/s) on: a client too slow for it.
    lagging_from_milli_rps: u64,
}

impl ProbeExecutor for SimulatedServer<'_> {
    async fn probe(
        &mut self,
        run: u32,
        probe: u32,
        rate_milli_rps: u64,
    ) -> Result<ProbeRecord, LoadError> {
        let spec = self.workload.rate_search();
        let sub_stream = self.workload.sub_stream_index(run, probe);
        let deadline_ms = spec.effective_request_deadline_ms(&self.sla);
        let plan = ProbePlan::new(
            self.workload.sub_stream(sub_stream),
            rate_milli_rps,
            spec.warmup_requests,
            spec.min_probe_requests,
            spec.min_probe_duration_ms,
            deadline_ms,
        );
        let mut free_at = 0u64;
        let samples: Vec<RequestSample> = plan
            .requests
            .iter()
            .map(|r| {
                let start = free_at.max(r.scheduled_ns);
                free_at = start + self.service_ns;
                let e2e_ns = free_at - r.scheduled_ns;
                let late = e2e_ns > deadline_ms * 1_000_000;
                RequestSample {
                    warmup: r.warmup,
                    scheduled_ns: r.scheduled_ns,
                    e2e_ns,
                    ttft_ns: Some(e2e_ns),
                    max_tokens: r.item.max_tokens,
                    output_tokens: u64::from(r.item.max_tokens),
                    error: late.then_some(RequestErrorKind::Timeout),
                    send_lag_ns: if rate_milli_rps >= self.lagging_from_milli_rps {
                        5_000_000
                    } else {
                        0
                    },
                    ..RequestSample::default()
                }
            })
            .collect();
        // The client's probe ends by its last scheduled send plus the request deadline,
        // however far behind the server is.
        let last_scheduled = plan.requests.last().map_or(0, |r| r.scheduled_ns);
        let ends = free_at.min(last_scheduled + deadline_ms * 1_000_000);
        tokio::time::sleep(Duration::from_nanos(ends)).await;
        let context = ProbeContext {
            run,
            probe,
            sub_stream,
            rate_milli_rps,
            sla: self.sla.clone(),
            send_lag_bound_us: spec.effective_send_lag_bound_us(&self.sla),
            token_count: TokenCount::Ids,
        };
        loadgen::summarize_probe(&context, &samples)
    }
}

#[tokio::test(start_paused = true)]
async fn virtual_time_search_converges_to_capacity() {
    for capacity_milli_rps in [37_300u64, 212_000, 23_500] {
        let campaign = search().campaign();
        let workload = Workload::new(&campaign, &seeds(), None).unwrap();
        let mut server = SimulatedServer {
            workload: &workload,
            sla: campaign.sla.clone(),
            service_ns: 1_000_000_000_000 / capacity_milli_rps,
            lagging_from_milli_rps: u64::MAX,
        };
        let entry = search_entry(&mut server, 3, &campaign.rate_search, &NoProgress)
            .await
            .unwrap();
        assert_eq!(entry.outcome, MeasurementOutcome::Measured);
        assert_eq!(entry.runs.len(), 3);
        assert!(entry.valid);
        let median = entry.throughput_milli_rps.unwrap();
        let error = median.abs_diff(capacity_milli_rps) * 100 / capacity_milli_rps;
        assert!(error < 5, "capacity {capacity_milli_rps}, found {median}");
        let max_probes = max_probes_per_run(&campaign.rate_search) as usize;
        for run in &entry.runs {
            assert!(run.probes.len() <= max_probes);
            // Every probe of a run used its own sub-stream.
            for (i, probe) in run.probes.iter().enumerate() {
                assert_eq!(probe.sub_stream as usize, run.run as usize * max_probes + i);
            }
        }
        assert!(entry.throughput_min_milli_rps <= entry.throughput_milli_rps);
        assert!(entry.throughput_max_milli_rps >= entry.throughput_milli_rps);
    }
}

#[tokio::test(start_paused = true)]
async fn nothing_passing_or_deadline_is_sla_unmet() {
    // Capacity below the minimum rate: the first probe fails, the entry stops.
    let campaign = search().campaign();
    let workload = Workload::new(&campaign, &seeds(), None).unwrap();
    let mut server = SimulatedServer {
        workload: &workload,
        sla: campaign.sla.clone(),
        service_ns: 2_000_000_000,
        lagging_from_milli_rps: u64::MAX,
    };
    let entry = search_entry(&mut server, 3, &campaign.rate_search, &NoProgress)
        .await
        .unwrap();
    assert_eq!(
        entry.outcome,
        MeasurementOutcome::SlaUnmet {
            reason: SlaUnmetReason::NoPassingRate
        }
    );
    assert_eq!((entry.runs.len(), entry.runs[0].probes.len()), (1, 1));
    assert_eq!(entry.throughput_milli_rps, None);

    // An entry deadline shorter than one search: the virtual clock runs out.
    let campaign = campaign_with_deadline();
    let workload = Workload::new(&campaign, &seeds(), None).unwrap();
    let mut server = SimulatedServer {
        workload: &workload,
        sla: campaign.sla.clone(),
        service_ns: 10_000_000,
        lagging_from_milli_rps: u64::MAX,
    };
    let entry = search_entry(&mut server, 3, &campaign.rate_search, &NoProgress)
        .await
        .unwrap();
    assert_eq!(
        entry.outcome,
        MeasurementOutcome::SlaUnmet {
            reason: SlaUnmetReason::DeadlineExpired
        }
    );
}

#[tokio::test(start_paused = true)]
async fn a_lagging_client_makes_the_entry_invalid() {
    // The client falls behind its schedule from 4 req/s on (5 ms send lag > 2 ms bound):
    // the run stops at that probe and the entry is invalid, not sla_unmet.
    let campaign = search().campaign();
    let workload = Workload::new(&campaign, &seeds(), None).unwrap();
    let mut server = SimulatedServer {
        workload: &workload,
        sla: campaign.sla.clone(),
        service_ns: 10_000_000,
        lagging_from_milli_rps: 4_000,
    };
    let entry = search_entry(&mut server, 3, &campaign.rate_search, &NoProgress)
        .await
        .unwrap();
    assert_eq!(
        entry.outcome,
        MeasurementOutcome::Invalid { run: 0, probe: 2 }
    );
    assert!(!entry.valid && !entry.runs[0].valid);
    let verdicts: Vec<ProbeVerdict> = entry.runs[0].probes.iter().map(|p| p.verdict).collect();
    assert_eq!(
        verdicts,
        [
            ProbeVerdict::Pass,
            ProbeVerdict::Pass,
            ProbeVerdict::Invalid
        ]
    );
    assert_eq!(entry.throughput_milli_rps, None);
}

fn campaign_with_deadline() -> Campaign {
    search()
        .set("rate_search.entry_deadline_s", "20")
        .campaign()
}

/// One run of `campaign` against a simulated server of capacity `capacity_milli_rps`,
/// and the virtual time it took.
async fn one_run(campaign: &CampaignToml, capacity_milli_rps: u64) -> (RunMeasurement, Duration) {
    let campaign = campaign.campaign();
    let workload = Workload::new(&campaign, &seeds(), None).unwrap();
    let mut server = SimulatedServer {
        workload: &workload,
        sla: campaign.sla.clone(),
        service_ns: 1_000_000_000_000 / capacity_milli_rps,
        lagging_from_milli_rps: u64::MAX,
    };
    let started = tokio::time::Instant::now();
    let entry = search_entry(&mut server, 1, &campaign.rate_search, &NoProgress)
        .await
        .unwrap();
    (entry.runs[0].clone(), started.elapsed())
}

#[tokio::test(start_paused = true)]
async fn the_estimate_start_finds_the_same_rate_sooner() {
    // Constant arrivals and a fixed service time: a probe's verdict and throughput depend
    // on its rate only, so both searches must end on the same probe.
    let estimate = search().set("rate_search.start", "\"estimate\"");
    for capacity_milli_rps in [1_700u64, 37_300, 212_000, 23_500] {
        let (legacy, legacy_time) = one_run(&search(), capacity_milli_rps).await;
        let (fast, fast_time) = one_run(&estimate, capacity_milli_rps).await;
        assert_eq!(
            (fast.rate_milli_rps, fast.throughput_milli_rps),
            (legacy.rate_milli_rps, legacy.throughput_milli_rps),
            "capacity {capacity_milli_rps}"
        );
        // The estimate probe at the maximum comes first; the legacy search starts low.
        assert_eq!(fast.probes[0].rate_milli_rps, 400_000);
        assert_eq!(legacy.probes[0].rate_milli_rps, 1_000);
        // Sooner, in virtual time, for a server well above the minimum (at 1.7 req/s the
        // estimate probe is one probe more).
        if capacity_milli_rps > 16 * 1_000 {
            assert!(fast_time < legacy_time, "{fast_time:?} ≥ {legacy_time:?}");
        }
        // Every probe on its own sub-stream, within the same budget.
        let max_probes = max_probes_per_run(&estimate.campaign().rate_search) as usize;
        assert!(fast.probes.len() <= max_probes);
        for (i, probe) in fast.probes.iter().enumerate() {
            assert_eq!((probe.probe as usize, probe.sub_stream as usize), (i, i));
        }
    }
    // Capacity 37.3 req/s: 400 req/s fails with a throughput between 16 and 32 req/s (the
    // late requests still hold the simulated server), so the bracket starts at 16 req/s
    // (1 × 2^4), skipping the four lower rates.
    let (fast, _) = one_run(&estimate, 37_300).await;
    assert!((16_000..32_000).contains(&fast.probes[0].throughput_milli_rps));
    let rates: Vec<u64> = fast.probes.iter().map(|p| p.rate_milli_rps).collect();
    assert_eq!(&rates[..4], [400_000, 16_000, 32_000, 64_000]);
}

#[tokio::test(start_paused = true)]
async fn a_passing_maximum_is_the_ceiling() {
    // 1,000 req/s of capacity against a 400 req/s maximum: both searches stop there.
    let estimate = search().set("rate_search.start", "\"estimate\"");
    let spec = estimate.campaign().rate_search;
    let (fast, _) = one_run(&estimate, 1_000_000).await;
    assert_eq!(fast.probes.len(), 1);
    assert!(receipts::rules::search::at_ceiling(
        fast.rate_milli_rps,
        &spec
    ));
    let (legacy, _) = one_run(&search(), 1_000_000).await;
    assert_eq!(legacy.probes.len(), 10);
    assert!(receipts::rules::search::at_ceiling(
        legacy.rate_milli_rps,
        &spec
    ));
}
