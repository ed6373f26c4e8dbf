//! Load-generator benchmark (issue 4): how fast referee's open-loop sender can go while
//! keeping its send lag (actual − scheduled send) small, against a trivial loopback hyper
//! server that answers every request with a fixed one-token completion stream.
//!
//! ```text
//! cargo bench -p loadgen --bench load                      # sweep rates, 2 client threads
//! taskset -c 0 cargo bench -p loadgen --bench load -- --client-threads 1
//! cargo bench -p loadgen --bench load -- --serve 18080     # only the server (for wrk/oha)
//! cargo bench -p loadgen --bench load -- --url http://127.0.0.1:18080   # client only
//! ```
//! Options: `--client-threads N` (default 2), `--server-threads N` (default 1),
//! `--seconds S` per rate (default 2), `--rates 1000,2000,…` in requests/s. For each rate
//! it prints requests, completed, achieved throughput, send-lag p50/p99/max and e2e
//! p50/p99 (µs), then the highest rate sustained with every request completed, throughput
//! within 2 % of the target and send-lag p99 under 100 µs.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use loadgen::search::NoProgress;
use loadgen::{ClientConfig, LoadClient, ProbePlan, Target};
use receipts::model::{Percentile, Sha256Hex};
use receipts::rules::histogram::new_latency_histogram;
use receipts::rules::sla::nearest_rank_value;
use receipts::rules::workload::{Item, UNIT_GAP_NS};

/// The fixed completion: one token (with its id), usage, done.
const BODY: &str = concat!(
    "data: {\"choices\":[{\"index\":0,\"text\":\"x\",\"token_ids\":[120]}]}\n\n",
    "data: {\"choices\":[],\"usage\":{\"completion_tokens\":1}}\n\n",
    "data: [DONE]\n\n"
);

async fn answer(
    _request: Request<hyper::body::Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let mut response = Response::new(Full::new(Bytes::from_static(BODY.as_bytes())));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    Ok(response)
}

/// Starts the server on its own runtime; returns its address and the runtime.
fn start_server(port: u16, threads: usize) -> (SocketAddr, tokio::runtime::Runtime) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("bench-server")
        .enable_all()
        .build()
        .expect("server runtime");
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(("127.0.0.1", port)))
        .expect("bind");
    let address = listener.local_addr().expect("address");
    runtime.spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service_fn(answer))
                    .await;
            });
        }
    });
    (address, runtime)
}

struct Options {
    serve: Option<u16>,
    url: Option<String>,
    client_threads: usize,
    server_threads: usize,
    seconds: u64,
    rates: Vec<u64>,
}

fn options() -> Options {
    let mut options = Options {
        serve: None,
        url: None,
        client_threads: 2,
        server_threads: 1,
        seconds: 2,
        rates: vec![1_000, 2_000, 5_000, 10_000, 15_000, 20_000, 30_000, 40_000],
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--serve" => options.serve = value.parse().ok(),
            "--url" => options.url = Some(value),
            "--client-threads" => options.client_threads = value.parse().unwrap_or(2),
            "--server-threads" => options.server_threads = value.parse().unwrap_or(1),
            "--seconds" => options.seconds = value.parse().unwrap_or(2),
            "--rates" => options.rates = value.split(',').filter_map(|r| r.parse().ok()).collect(),
            _ => {
                // `cargo bench` passes `--bench`; unknown flags take no value.
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    options
}

fn main() {
    let options = options();
    if let Some(port) = options.serve {
        let (address, _runtime) = start_server(port, options.server_threads);
        println!("listening on http://{address}");
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    // In-process server unless `--url` names one started with `--serve` (to pin the
    // server and the client to different cores with taskset).
    let (base_url, _server) = match options.url.clone() {
        Some(url) => (url, None),
        None => {
            let (address, runtime) = start_server(0, options.server_threads);
            (format!("http://{address}"), Some(runtime))
        }
    };
    let target = Target {
        base_url,
        model: "bench".into(),
    };
    let client = LoadClient::new(ClientConfig {
        worker_threads: options.client_threads,
        ..ClientConfig::default()
    })
    .expect("load client");
    let driver = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("driver runtime");
    println!(
        "client threads {}, server threads {}, {} s per rate, constant arrivals",
        options.client_threads, options.server_threads, options.seconds
    );
    println!(
        "{:>8} {:>8} {:>8} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "rate/s", "sent", "done", "thrpt/s", "lag p50", "lag p99", "lag max", "e2e p50", "e2e p99"
    );
    let p50 = Percentile::from_permille(500).expect("p50");
    let p99 = Percentile::from_permille(990).expect("p99");
    let mut sustained = None;
    // Warm the connection pool and the code paths.
    let _ = driver.block_on(client.run(&target, &plan(1_000, 1), &NoProgress));
    for &rate in &options.rates {
        let samples = driver
            .block_on(client.run(&target, &plan(rate, options.seconds), &NoProgress))
            .expect("run");
        let mut lag = new_latency_histogram();
        let mut e2e = new_latency_histogram();
        let mut completed = 0u64;
        let mut last_completion_ns = 0;
        for sample in &samples {
            lag.saturating_record(sample.send_lag_ns / 1000);
            if sample.completed() {
                completed += 1;
                e2e.saturating_record(sample.e2e_ns / 1000);
                last_completion_ns = last_completion_ns.max(sample.scheduled_ns + sample.e2e_ns);
            }
        }
        let throughput = completed * 1_000_000_000 / last_completion_ns.max(1);
        let lag_p99 = nearest_rank_value(&lag, p99, 0).unwrap_or(0);
        println!(
            "{:>8} {:>8} {:>8} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}",
            rate,
            samples.len(),
            completed,
            throughput,
            nearest_rank_value(&lag, p50, 0).unwrap_or(0),
            lag_p99,
            lag.max(),
            nearest_rank_value(&e2e, p50, 0).unwrap_or(0),
            nearest_rank_value(&e2e, p99, 0).unwrap_or(0),
        );
        if completed == samples.len() as u64 && throughput * 100 >= rate * 98 && lag_p99 < 100 {
            sustained = Some(rate);
        }
    }
    match sustained {
        Some(rate) => println!("highest rate sustained with send-lag p99 < 100 µs: {rate} req/s"),
        None => println!("no rate sustained with send-lag p99 < 100 µs"),
    }
}

/// `rate` requests/s for `seconds`, evenly spaced, 1 output token each.
fn plan(rate: u64, seconds: u64) -> ProbePlan {
    let items: Vec<Item> = (0..rate * seconds)
        .map(|i| Item {
            item_index: i as u32,
            prompt: "x".into(),
            prompt_sha256: Sha256Hex::digest(b"x"),
            max_tokens: 1,
            arrival_unit_ns: i * UNIT_GAP_NS,
        })
        .collect();
    let count = items.len() as u32;
    ProbePlan::new(items, rate * 1000, 0, count, 0, 5_000)
}
