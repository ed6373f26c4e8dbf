//! The client's self-test against its null server on 127.0.0.1 (real sockets, so real
//! time: only loose bounds): an impossible rate is refused naming the bound, a modest one
//! passes and records how its threads were scheduled, the client reuses its connections instead of opening one per request, and a
//! request whose deadline passed before the client got to it is failed, never sent.

use loadgen::nullserver::{NullServer, NullServerConfig};
use loadgen::search::NoProgress;
use loadgen::selftest::{SelfTestConfig, SelfTestRefusal, constant_items, self_test};
use loadgen::{ClientConfig, LoadClient, ProbePlan, RequestErrorKind, Target};
use receipts::model::{ClientPolicy, ClientScheduling};

fn config(rate_milli_rps: u64, count: u32, hold_ms: u64, client: ClientConfig) -> SelfTestConfig {
    SelfTestConfig {
        items: constant_items(count, 64, 4),
        rate_milli_rps,
        warmup_requests: 0,
        min_requests: count,
        duration_ms: 0,
        deadline_ms: 1_000,
        server: NullServerConfig {
            hold_ms,
            token_gap_us: 1_000,
            threads: 1,
        },
        client,
    }
}

#[tokio::test]
async fn an_impossible_rate_is_refused_naming_the_bound() {
    // 10⁷ req/s through a client capped at one request in flight, each held 20 ms: the
    // 40 requests queue in the client, so their send lag runs to hundreds of ms.
    let client = ClientConfig {
        worker_threads: 1,
        max_in_flight: Some(1),
        ..ClientConfig::default()
    };
    let report = self_test(&config(10_000_000_000, 40, 20, client))
        .await
        .unwrap();
    assert_eq!(report.requests, 40);
    assert_eq!(report.in_flight_max, 1);
    let refusal = report.check(2_000).unwrap_err();
    let SelfTestRefusal::SendLag {
        p99_us,
        bound_us,
        rate_milli_rps,
        in_flight,
    } = refusal
    else {
        panic!("expected a send-lag refusal, got {refusal:?}");
    };
    assert_eq!(
        (bound_us, rate_milli_rps, in_flight),
        (2_000, 10_000_000_000, 1)
    );
    // 39 requests wait behind 20 ms each (or their 1 s deadline).
    assert!(p99_us >= 100_000, "p99 {p99_us} µs");
    let message = refusal.to_string();
    assert!(
        message.ends_with(
            " µs > bound 2 000 µs at 10 000 000 req/s with 1 request in flight \
             (self-test against a null server)"
        ),
        "{message}"
    );
}

#[tokio::test]
async fn a_modest_rate_passes() {
    // 50 req/s for 20 requests, each held 20 ms then streamed: about two in flight.
    let report = self_test(&config(50_000, 20, 20, ClientConfig::default()))
        .await
        .unwrap();
    assert_eq!((report.requests, report.failed), (20, 0));
    assert_eq!(report.check(50_000), Ok(()));
    assert!(report.in_flight_max >= 1);
    // Read back from the kernel: FIFO where the process may (root here and in CI), and
    // one spinner per CPU the test's thread may run on.
    // SAFETY: geteuid has no arguments and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let cpus = std::thread::available_parallelism().unwrap().get() as u32;
    assert_eq!(
        report.scheduling,
        ClientScheduling {
            policy: if root {
                ClientPolicy::Fifo
            } else {
                ClientPolicy::Normal
            },
            priority: if root { 10 } else { 0 },
            awake_cpus: cpus,
        }
    );
    // Within 20 % of the rate asked for (the loose bound real time allows).
    assert!(
        (40_000..=60_000).contains(&report.achieved_milli_rps),
        "achieved {} milli-req/s",
        report.achieved_milli_rps
    );
}

/// With both switched off the record says so: the normal policy, no CPU kept awake.
#[tokio::test]
async fn a_client_left_to_the_normal_policy_records_it() {
    let client = ClientConfig {
        keep_awake: false,
        realtime: false,
        ..ClientConfig::default()
    };
    let report = self_test(&config(50_000, 10, 0, client)).await.unwrap();
    assert_eq!(
        report.scheduling,
        ClientScheduling {
            policy: ClientPolicy::Normal,
            priority: 0,
            awake_cpus: 0,
        }
    );
}

#[tokio::test]
async fn the_client_reuses_its_connections() {
    // Sequential requests 50 ms apart, each done in a few ms: one keep-alive connection
    // carries them all when the client reads each stream to its end.
    let report = self_test(&config(20_000, 10, 0, ClientConfig::default()))
        .await
        .unwrap();
    assert_eq!(
        (report.requests, report.failed, report.in_flight_max),
        (10, 0, 1)
    );
    assert_eq!(report.connections, 1);
}

#[tokio::test]
async fn a_request_past_its_deadline_is_failed_not_sent() {
    // A deadline of 0 ms has passed by the time any request is handed over: an open-loop
    // client that fell behind fails such requests at once instead of loading the server
    // with answers nobody waits for.
    let server = NullServer::start(NullServerConfig {
        hold_ms: 0,
        token_gap_us: 0,
        threads: 1,
    })
    .unwrap();
    let client = LoadClient::new(ClientConfig::default()).unwrap();
    let target = Target {
        base_url: server.base_url(),
        model: "null".into(),
    };
    // A warm connection in the pool, so a late send would go out at once.
    let warm = ProbePlan::new(constant_items(1, 8, 1), 1_000, 0, 1, 0, 1_000);
    let samples = client.run(&target, &warm, &NoProgress).await.unwrap();
    assert_eq!(samples[0].error, None);
    let late = ProbePlan::new(constant_items(20, 8, 1), 1_000_000, 0, 20, 0, 0);
    let samples = client.run(&target, &late, &NoProgress).await.unwrap();
    assert_eq!(samples.len(), 20);
    assert!(
        samples
            .iter()
            .all(|s| s.error == Some(RequestErrorKind::Timeout))
    );
    // Give a request that did go out time to arrive.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!((server.requests(), server.connections()), (1, 1));
    // Never handed to the HTTP client: the lag runs to the failure itself.
    assert!(samples.iter().all(|s| s.send_lag_ns == s.e2e_ns));
}
