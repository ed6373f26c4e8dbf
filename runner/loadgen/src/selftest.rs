//! The client's self-test (content/measurement.md, Open loop): before any engine starts,
//! the load client drives a [`NullServer`] on loopback, in its own process, at the
//! campaign's maximum rate with the campaign's request shape, the server holding every
//! response for the SLA bound so that requests in flight reach rate × bound, as in an
//! overloaded probe. If the client cannot keep its schedule there (send-lag p99 over the
//! campaign's bound, or requests failing against a server that never fails), every probe
//! near that rate would measure the client instead of the engine, so the round refuses to
//! start rather than end `infra_failed`.

use std::fmt;

use receipts::model::{Campaign, ClientScheduling, Percentile};
use receipts::rules::histogram::new_latency_histogram;
use receipts::rules::sla::nearest_rank_value;
use receipts::rules::workload::{Item, Workload};
use receipts::text::format_grouped;

use crate::nullserver::{NullServer, NullServerConfig};
use crate::search::NoProgress;
use crate::{ClientConfig, LoadClient, LoadError, ProbePlan, RequestSample, Target};

/// The gap between streamed tokens of the campaign self-test, µs: a fast engine's decode
/// step, so the client reads one chunk per token as it will from the engine.
pub const SELF_TEST_TOKEN_GAP_US: u64 = 1_000;

/// What the self-test sends and how the null server answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelfTestConfig {
    /// The request shape, in send order, arrival offsets at 1 request/s (a workload
    /// sub-stream; [`constant_items`] for a synthetic one).
    pub items: Vec<Item>,
    /// The rate sent at, milli-requests/s.
    pub rate_milli_rps: u64,
    /// Requests sent first and excluded from the figures.
    pub warmup_requests: u32,
    /// The fewest measured requests, whatever the duration.
    pub min_requests: u32,
    /// The measured requests' scheduled span, ms, at least (shorter if `items` runs out).
    pub duration_ms: u64,
    /// Every request's deadline after its scheduled send, ms.
    pub deadline_ms: u64,
    /// How the null server answers.
    pub server: NullServerConfig,
    /// The load client, as the round's probes run it.
    pub client: ClientConfig,
}

impl SelfTestConfig {
    /// The self-test of `campaign`: `workload`'s first sub-stream sent at the maximum rate
    /// for twice the SLA bound (1 to 3 s) and at least its minimum probe requests, after the campaign's warm-up requests, with its
    /// request deadline; the null server holds each response for the SLA bound (at most
    /// the deadline), then streams its tokens [`SELF_TEST_TOKEN_GAP_US`] apart. Check the
    /// report against `campaign.rate_search.effective_send_lag_bound_us(&campaign.sla)`.
    pub fn for_campaign(campaign: &Campaign, workload: &Workload, client: ClientConfig) -> Self {
        let spec = &campaign.rate_search;
        let deadline_ms = spec.effective_request_deadline_ms(&campaign.sla);
        Self {
            items: workload.sub_stream(0),
            rate_milli_rps: spec.max_rate_milli_rps,
            warmup_requests: spec.warmup_requests,
            min_requests: spec.min_probe_requests,
            duration_ms: campaign.sla.bound_ms.saturating_mul(2).clamp(1_000, 3_000),
            deadline_ms,
            server: NullServerConfig {
                hold_ms: campaign.sla.bound_ms.min(deadline_ms),
                token_gap_us: SELF_TEST_TOKEN_GAP_US,
                threads: 1,
            },
            client,
        }
    }
}

/// `count` requests with a `prompt_bytes`-byte prompt and `max_tokens` output tokens each,
/// evenly spaced (one per second at 1 request/s).
pub fn constant_items(count: u32, prompt_bytes: usize, max_tokens: u32) -> Vec<Item> {
    let prompt = "x".repeat(prompt_bytes);
    let prompt_sha256 = receipts::model::Sha256Hex::digest(prompt.as_bytes());
    (0..count)
        .map(|i| Item {
            item_index: i,
            prompt: prompt.clone(),
            prompt_sha256,
            max_tokens,
            arrival_unit_ns: u64::from(i) * receipts::rules::workload::UNIT_GAP_NS,
        })
        .collect()
}

/// What the self-test measured (measured requests only; integers in the unit their name
/// carries).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SelfTestReport {
    /// The rate asked for, milli-requests/s.
    pub rate_milli_rps: u64,
    /// The rate the client actually sent at, milli-requests/s: requests handed to the
    /// HTTP client, less one, over the span from the first such send to the last.
    pub achieved_milli_rps: u64,
    /// Send-lag p50, µs (nearest rank).
    pub send_lag_p50_us: u64,
    /// Send-lag p99, µs (nearest rank).
    pub send_lag_p99_us: u64,
    /// Measured requests.
    pub requests: u32,
    /// Measured requests that failed (the null server never fails one).
    pub failed: u32,
    /// Most requests in flight at once (sent, not yet answered in full).
    pub in_flight_max: u32,
    /// TCP connections the null server accepted, warm-up included.
    pub connections: u64,
    /// How the client's threads were scheduled during the test.
    pub scheduling: ClientScheduling,
}

/// Why the client cannot measure this campaign on this machine.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelfTestRefusal {
    /// The client sent too late.
    #[error(
        "the load client cannot keep its schedule: send-lag p99 {} µs > bound {} µs at {} \
         with {} in flight (self-test against a null server)",
        format_grouped(*p99_us), format_grouped(*bound_us), rate(*rate_milli_rps), count_of(*in_flight)
    )]
    SendLag {
        /// Measured send-lag p99, µs.
        p99_us: u64,
        /// The bound it exceeds, µs.
        bound_us: u64,
        /// The rate, milli-requests/s.
        rate_milli_rps: u64,
        /// Most requests in flight.
        in_flight: u32,
    },
    /// Requests failed against a server that answers every one.
    #[error(
        "the load client failed {} of {} against a null server at {} with {} in flight: \
         bound 0 failed requests",
        format_grouped(u64::from(*failed)), count_of(*requests), rate(*rate_milli_rps),
        count_of(*in_flight)
    )]
    Failed {
        /// Failed requests.
        failed: u32,
        /// Measured requests.
        requests: u32,
        /// The rate, milli-requests/s.
        rate_milli_rps: u64,
        /// Most requests in flight.
        in_flight: u32,
    },
}

impl SelfTestReport {
    /// Summarises the self-test's samples (warm-up excluded) sent at `rate_milli_rps`;
    /// `connections` as the null server counted them, `scheduling` as the client read it
    /// back.
    pub fn from_samples(
        rate_milli_rps: u64,
        samples: &[RequestSample],
        connections: u64,
        scheduling: ClientScheduling,
    ) -> Self {
        let measured: Vec<&RequestSample> = samples.iter().filter(|s| !s.warmup).collect();
        let mut lag = new_latency_histogram();
        for sample in &measured {
            lag.saturating_record(sample.send_lag_ns / 1000);
        }
        let at = |permille| {
            Percentile::from_permille(permille)
                .ok()
                .and_then(|p| nearest_rank_value(&lag, p, 0))
                .unwrap_or(0)
        };
        // In flight: from the hand-over to the HTTP client to the end; a request that
        // never left the client (its lag runs to its failure) has an empty interval.
        let intervals: Vec<(u64, u64)> = measured
            .iter()
            .map(|s| (s.scheduled_ns + s.send_lag_ns, s.scheduled_ns + s.e2e_ns))
            .filter(|(sent, end)| end > sent)
            .collect();
        let achieved_milli_rps = match (
            intervals.iter().map(|i| i.0).min(),
            intervals.iter().map(|i| i.0).max(),
        ) {
            (Some(first), Some(last)) if last > first => {
                let sent = intervals.len() as u128 - 1;
                u64::try_from(sent * 1_000_000_000_000 / u128::from(last - first))
                    .unwrap_or(u64::MAX)
            }
            _ => 0,
        };
        Self {
            rate_milli_rps,
            achieved_milli_rps,
            send_lag_p50_us: at(500),
            send_lag_p99_us: at(990),
            requests: measured.len() as u32,
            failed: measured.iter().filter(|s| !s.completed()).count() as u32,
            in_flight_max: most_overlapping(&intervals),
            connections,
            scheduling,
        }
    }

    /// Judges the report against the campaign's send-lag bound, µs: the client must keep
    /// send-lag p99 within it and complete every request.
    ///
    /// Errors: [`SelfTestRefusal::SendLag`] naming the p99, the bound, the rate and the
    /// requests in flight; else [`SelfTestRefusal::Failed`] when any request failed.
    pub fn check(&self, send_lag_bound_us: u64) -> Result<(), SelfTestRefusal> {
        if self.send_lag_p99_us > send_lag_bound_us {
            return Err(SelfTestRefusal::SendLag {
                p99_us: self.send_lag_p99_us,
                bound_us: send_lag_bound_us,
                rate_milli_rps: self.rate_milli_rps,
                in_flight: self.in_flight_max,
            });
        }
        if self.failed > 0 {
            return Err(SelfTestRefusal::Failed {
                failed: self.failed,
                requests: self.requests,
                rate_milli_rps: self.rate_milli_rps,
                in_flight: self.in_flight_max,
            });
        }
        Ok(())
    }
}

/// Runs the self-test: starts a null server, sends `config`'s plan to it with a fresh
/// load client, and summarises. Takes about the duration plus the hold and the stream of
/// the last request. The caller's runtime must have its time driver enabled.
///
/// Errors: [`LoadError::Runtime`] when the server or the client cannot start;
/// [`LoadError::Task`] if a client task died. A client too slow is not an error: see
/// [`SelfTestReport::check`].
pub async fn self_test(config: &SelfTestConfig) -> Result<SelfTestReport, LoadError> {
    let server = NullServer::start(config.server)?;
    let client = LoadClient::new(config.client)?;
    let report = self_test_with(&server.base_url(), &client, config).await?;
    Ok(SelfTestReport {
        connections: server.connections(),
        ..report
    })
}

/// As [`self_test`] against a null server the caller started at `base_url` with a client
/// it started (the benchmark pins them to different cores, or runs the server in another
/// process); `config.server` and `config.client` are not used, and the report's
/// `connections` are 0 (the server counts them: [`NullServer::connections`]).
///
/// Errors: as [`self_test`].
pub async fn self_test_with(
    base_url: &str,
    client: &LoadClient,
    config: &SelfTestConfig,
) -> Result<SelfTestReport, LoadError> {
    let plan = ProbePlan::new(
        config.items.clone(),
        config.rate_milli_rps,
        config.warmup_requests,
        config.min_requests,
        config.duration_ms,
        config.deadline_ms,
    );
    let target = Target {
        base_url: base_url.to_string(),
        model: "null".into(),
    };
    let samples = client.run(&target, &plan, &NoProgress).await?;
    Ok(SelfTestReport::from_samples(
        config.rate_milli_rps,
        &samples,
        0,
        client.scheduling().await?,
    ))
}

/// The most half-open intervals `[start, end)` overlapping at one instant.
fn most_overlapping(intervals: &[(u64, u64)]) -> u32 {
    // Ends sort before starts at the same instant: a connection handed from one request
    // to the next is not two in flight.
    let mut events: Vec<(u64, i32)> = intervals
        .iter()
        .flat_map(|&(start, end)| [(start, 1), (end, -1)])
        .collect();
    events.sort_unstable();
    let (mut now, mut most) = (0i64, 0i64);
    for (_, step) in events {
        now += i64::from(step);
        most = most.max(now);
    }
    most as u32
}

/// A rate in milli-requests/s as requests/s: `40 req/s`, `127.5 req/s`.
fn rate(milli_rps: u64) -> impl fmt::Display {
    let whole = format_grouped(milli_rps / 1000);
    match milli_rps % 1000 {
        0 => format!("{whole} req/s"),
        frac => format!("{whole}.{}", format!("{frac:03}").trim_end_matches('0')) + " req/s",
    }
}

/// `1 request`, `120 requests`.
fn count_of(n: u32) -> String {
    match n {
        1 => "1 request".into(),
        n => format!("{} requests", format_grouped(u64::from(n))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(scheduled_ns: u64, send_lag_ns: u64, e2e_ns: u64, ok: bool) -> RequestSample {
        RequestSample {
            scheduled_ns,
            send_lag_ns,
            e2e_ns,
            error: (!ok).then_some(crate::RequestErrorKind::Timeout),
            ..RequestSample::default()
        }
    }

    #[test]
    fn report_counts_lag_rate_and_overlap() {
        // Scheduled at 0, 10, 20, 30 ms (lags 1, 2, 3 ms, and one never sent); each sent
        // one ends 20 ms after its schedule, so at most two overlap.
        let samples = vec![
            RequestSample {
                warmup: true,
                ..sample(0, 9_000_000, 9_500_000, true)
            },
            sample(0, 1_000_000, 20_000_000, true),
            sample(10_000_000, 2_000_000, 20_000_000, true),
            sample(20_000_000, 3_000_000, 20_000_000, true),
            sample(30_000_000, 40_000_000, 40_000_000, false),
        ];
        let scheduling = ClientScheduling {
            policy: receipts::model::ClientPolicy::Fifo,
            priority: 10,
            awake_cpus: 1,
        };
        let report = SelfTestReport::from_samples(100_000, &samples, 2, scheduling);
        assert_eq!(
            report,
            SelfTestReport {
                rate_milli_rps: 100_000,
                // Three sends from 1 ms to 23 ms: 2 ÷ 22 ms.
                achieved_milli_rps: 90_909,
                send_lag_p50_us: 2_000,
                // The histogram's bucket of 40 ms, at its highest value.
                send_lag_p99_us: 40_031,
                requests: 4,
                failed: 1,
                in_flight_max: 2,
                connections: 2,
                scheduling,
            }
        );
        assert_eq!(
            report.check(2_000).unwrap_err().to_string(),
            "the load client cannot keep its schedule: send-lag p99 40 031 µs > bound 2 000 µs \
             at 100 req/s with 2 requests in flight (self-test against a null server)"
        );
        assert_eq!(
            report.check(40_031).unwrap_err().to_string(),
            "the load client failed 1 of 4 requests against a null server at 100 req/s with \
             2 requests in flight: bound 0 failed requests"
        );
    }

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(rate(40_000).to_string(), "40 req/s");
        assert_eq!(rate(127_500).to_string(), "127.5 req/s");
        assert_eq!(rate(1).to_string(), "0.001 req/s");
        assert_eq!(count_of(1), "1 request");
    }
}
