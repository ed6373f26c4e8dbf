//! Load-client benchmark (issue 12): how many concurrent streaming requests the load
//! client keeps on schedule, and the client's self-test at a campaign's settings. Each run
//! is a self-test (`loadgen::selftest`) against the in-process null server: requests
//! held `--hold-ms`, then streaming `--tokens` SSE chunks `--token-gap-us` apart.
//!
//! ```text
//! # the coarse search: N streams in flight at steady state, client on CPU 0 (1 thread),
//! # server on CPU 1; passes while send-lag p99 ≤ 2 ms and no request fails
//! cargo bench -p loadgen --bench client -- --concurrency 1000,2000,5000,10000,20000 \
//!     --client-cpu 0 --server-cpu 1
//! # the demo campaign's self-test: 128 req/s, each held 500 ms (the SLA), ~80 tokens
//! cargo bench -p loadgen --bench client -- --rate 128 --hold-ms 500 --tokens 80 \
//!     --token-gap-us 1000 --client-threads 2 --seconds 2 --bound-us 2000
//! # the round's self-test of a campaign file (at its maximum rate, or at each `--rate`)
//! cargo bench -p loadgen --bench client -- --campaign examples/demo/campaign.toml
//! ```
//! Options: `--concurrency N,…` (rate = N ÷ stream time) or `--rate R,…` (req/s);
//! `--hold-ms` (default 0), `--tokens` (40), `--token-gap-us` (100000: 4 s streams),
//! `--seconds` (sends' span, default twice the stream time, at most 12), `--prompt-bytes`
//! (400), `--client-threads` (1), `--server-threads` (1), `--client-cpu`/`--server-cpu`
//! (pin each to one CPU; default unpinned), `--server-process` (the server in a child
//! process, so that each has its own open-files limit; its connections are then not
//! counted), `--no-keep-awake` (no `SCHED_IDLE` spinner on the client's CPUs), `--no-realtime` (the
//! client's threads under the normal policy, not `SCHED_FIFO`), `--client-nice` (the client threads' nice value, default 0), `--bound-us`
//! (2000), `--serve-only` (only the null server, at `--hold-ms`/`--token-gap-us`: prints
//! its URL and serves until killed, for a peer client side by side; `scripts/bench-clients`),
//! `--target URL` (load that already running null server instead of starting one; its
//! hold and token gap are the server's own, so pass it the same `--tokens`/`--token-gap-us`). The soft limit of open files is raised to fit 2 × N connections (the hard one
//! too where allowed).
//! Besides the self-test's figures it prints the CPU time the client's and the (in-process)
//! server's threads used and the time the client's threads were runnable but waited for
//! a CPU (both % of one core over the run, from schedstat), and the client's CPU µs per
//! streamed token: on a shared machine the wait shows the contention, the CPU the cost.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use loadgen::nullserver::{NullServer, NullServerConfig};
use loadgen::selftest::{SelfTestConfig, constant_items, self_test, self_test_with};
use loadgen::{ClientConfig, LoadClient};
use receipts::model::{Campaign, RevealedSeeds, Seed32, SeedReveal};
use receipts::rules::workload::Workload;

struct Options {
    concurrency: Vec<u64>,
    rates: Vec<u64>,
    hold_ms: u64,
    tokens: u32,
    token_gap_us: u64,
    seconds: Option<u64>,
    prompt_bytes: usize,
    client_threads: usize,
    server_threads: usize,
    client_cpu: Option<usize>,
    server_cpu: Option<usize>,
    bound_us: u64,
    client_nice: i32,
    server_process: bool,
    no_keep_awake: bool,
    no_realtime: bool,
    serve: bool,
    serve_only: bool,
    target: Option<String>,
    campaign: Option<String>,
}

fn options() -> Options {
    let mut o = Options {
        concurrency: Vec::new(),
        rates: Vec::new(),
        hold_ms: 0,
        tokens: 40,
        token_gap_us: 100_000,
        seconds: None,
        prompt_bytes: 400,
        client_threads: 1,
        server_threads: 1,
        client_cpu: None,
        server_cpu: None,
        bound_us: 2_000,
        client_nice: 0,
        server_process: false,
        no_keep_awake: false,
        no_realtime: false,
        serve: false,
        serve_only: false,
        target: None,
        campaign: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let list = |v: &str| -> Vec<u64> { v.split(',').filter_map(|r| r.parse().ok()).collect() };
    let mut i = 0;
    while i < args.len() {
        let v = args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--concurrency" => o.concurrency = list(&v),
            "--rate" | "--rates" => o.rates = list(&v),
            "--hold-ms" => o.hold_ms = v.parse().unwrap_or(o.hold_ms),
            "--tokens" => o.tokens = v.parse().unwrap_or(o.tokens),
            "--token-gap-us" => o.token_gap_us = v.parse().unwrap_or(o.token_gap_us),
            "--seconds" => o.seconds = v.parse().ok(),
            "--prompt-bytes" => o.prompt_bytes = v.parse().unwrap_or(o.prompt_bytes),
            "--client-threads" => o.client_threads = v.parse().unwrap_or(1),
            "--server-threads" => o.server_threads = v.parse().unwrap_or(1),
            "--client-cpu" => o.client_cpu = v.parse().ok(),
            "--server-cpu" => o.server_cpu = v.parse().ok(),
            "--bound-us" => o.bound_us = v.parse().unwrap_or(o.bound_us),
            "--campaign" => o.campaign = Some(v),
            "--target" => o.target = Some(v),
            "--client-nice" => o.client_nice = v.parse().unwrap_or(0),
            "--server-process" => {
                o.server_process = true;
                i += 1;
                continue;
            }
            "--no-realtime" => {
                o.no_realtime = true;
                i += 1;
                continue;
            }
            "--no-keep-awake" => {
                o.no_keep_awake = true;
                i += 1;
                continue;
            }
            "--serve" => {
                o.serve = true;
                i += 1;
                continue;
            }
            "--serve-only" => {
                o.serve_only = true;
                i += 1;
                continue;
            }
            _ => {
                // `cargo bench` passes `--bench`; unknown flags take no value.
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    if o.concurrency.is_empty() && o.rates.is_empty() {
        o.concurrency = vec![1_000, 2_000, 5_000, 10_000, 20_000];
    }
    o
}

/// Pins the calling thread (and the threads it starts from now on) to `cpu`.
fn pin(cpu: Option<usize>) {
    let Some(cpu) = cpu else { return };
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes inside it; the
    // call reads `size_of::<cpu_set_t>()` bytes of it and pins the calling thread (0).
    let ok = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    };
    if !ok {
        eprintln!(
            "could not pin to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// Sets the calling thread's nice value (inherited by the threads it starts from now on).
fn nice(value: i32) {
    // SAFETY: setpriority takes integers; on Linux `who` = 0 is the calling thread.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, value) } != 0 {
        eprintln!(
            "could not set nice {value}: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// Raises the soft open-files limit to at least `want` (and the hard one, if allowed).
fn raise_nofile(want: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read or write one rlimit struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 || limit.rlim_cur >= want {
            return;
        }
        let raised = libc::rlimit {
            rlim_cur: want,
            rlim_max: limit.rlim_max.max(want),
        };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            eprintln!(
                "open files limited to {} (wanted {want}): runs past ~{} streams fail",
                limit.rlim_max,
                limit.rlim_max / 2
            );
        }
    }
}

/// Scheduler figures so far of this process's threads named `prefix…`, µs by thread id:
/// (time on a CPU, time runnable but waiting for one), from /proc/self/task/*/schedstat.
fn thread_sched_us(prefix: &str) -> HashMap<String, (u64, u64)> {
    let mut out = HashMap::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for task in tasks.flatten() {
        let name = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !name.starts_with(prefix) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(task.path().join("schedstat")) else {
            continue;
        };
        let mut fields = stat
            .split_whitespace()
            .map(|f| f.parse::<u64>().unwrap_or(0));
        let (run_ns, wait_ns) = (fields.next().unwrap_or(0), fields.next().unwrap_or(0));
        out.insert(
            task.file_name().to_string_lossy().into_owned(),
            (run_ns / 1000, wait_ns / 1000),
        );
    }
    out
}

/// (CPU µs, runnable-waiting µs) the threads alive at `after` spent since `before`.
fn sched_since(
    before: &HashMap<String, (u64, u64)>,
    after: &HashMap<String, (u64, u64)>,
) -> (u64, u64) {
    after.iter().fold((0, 0), |(run, wait), (tid, now)| {
        let then = before.get(tid).copied().unwrap_or((0, 0));
        (
            run + now.0.saturating_sub(then.0),
            wait + now.1.saturating_sub(then.1),
        )
    })
}

/// The null server: in this process, in a child (`--server-process`: then each process
/// has its own open-files limit), or one already running (`--target URL`).
enum Server {
    Here(NullServer),
    Child(std::process::Child, String),
    External(String),
}

impl Server {
    fn start(o: &Options) -> Server {
        let config = NullServerConfig {
            hold_ms: o.hold_ms,
            token_gap_us: o.token_gap_us,
            threads: o.server_threads,
        };
        if let Some(url) = &o.target {
            return Server::External(url.clone());
        }
        if !o.server_process {
            return Server::Here(NullServer::start(config).expect("null server"));
        }
        use std::io::BufRead;
        let exe = std::env::current_exe().expect("own path");
        let mut child = std::process::Command::new(exe)
            .args(std::env::args().skip(1))
            .arg("--serve")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("server process");
        let mut url = String::new();
        let stdout = child.stdout.take().expect("server stdout");
        std::io::BufReader::new(stdout)
            .read_line(&mut url)
            .expect("server url");
        Server::Child(child, url.trim().to_string())
    }

    fn base_url(&self) -> String {
        match self {
            Server::Here(server) => server.base_url(),
            Server::Child(_, url) | Server::External(url) => url.clone(),
        }
    }

    /// Connections accepted (unknown for another process's server: 0).
    fn connections(&self) -> u64 {
        match self {
            Server::Here(server) => server.connections(),
            Server::Child(..) | Server::External(_) => 0,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Server::Child(child, _) = self {
            // Closing its stdin ends it; kill it if it lingers.
            drop(child.stdin.take());
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `--serve`: the child's side: serve until stdin closes. `--serve-only`: a standalone
/// server for another client (a peer load client, side by side): serve until killed.
/// Either prints its base URL (`http://127.0.0.1:PORT`, a free port) first.
fn serve(o: &Options) {
    let server = NullServer::start(NullServerConfig {
        hold_ms: o.hold_ms,
        token_gap_us: o.token_gap_us,
        threads: o.server_threads,
    })
    .expect("null server");
    println!("{}", server.base_url());
    use std::io::{Read, Write};
    let _ = std::io::stdout().flush();
    if o.serve_only {
        loop {
            std::thread::park();
        }
    }
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

/// `--campaign FILE`: the round's own self-test of that campaign (`--rate` overrides its
/// maximum rate), judged against the campaign's send-lag bound and against 2 ms.
fn campaign_self_test(o: &Options, path: &str) {
    let text = std::fs::read_to_string(path).expect("campaign file");
    let campaign = Campaign::from_toml(path, &text).expect("campaign");
    let seed = |b| SeedReveal::commit(Seed32([b; 32]), Seed32([0; 32]));
    let seeds = RevealedSeeds {
        item_seed: seed(1),
        order_seed: seed(2),
        schedule_seed: seed(3),
        correctness_seed: seed(4),
        prompt_salt: seed(5),
        sample_seed: None,
        pass_seed: None,
    };
    let workload = Workload::new(&campaign, &seeds, None).expect("workload");
    let client = ClientConfig {
        worker_threads: o.client_threads,
        max_in_flight: None,
        keep_awake: !o.no_keep_awake,
        realtime: !o.no_realtime,
        ..ClientConfig::default()
    };
    let mut config = SelfTestConfig::for_campaign(&campaign, &workload, client);
    let bound = campaign
        .rate_search
        .effective_send_lag_bound_us(&campaign.sla);
    let driver = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("driver runtime");
    let rates = if o.rates.is_empty() {
        vec![config.rate_milli_rps]
    } else {
        o.rates.iter().map(|r| r * 1000).collect()
    };
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "{path}: hold {} ms, {} ms of sends, deadline {} ms, client threads {}; loadavg {}",
        config.server.hold_ms,
        config.duration_ms,
        config.deadline_ms,
        o.client_threads,
        load.trim()
    );
    for rate in rates {
        config.rate_milli_rps = rate;
        let report = driver.block_on(self_test(&config)).expect("self-test");
        let verdict = |bound| match report.check(bound) {
            Ok(()) => format!("pass ({bound} µs)"),
            Err(refusal) => format!("refused: {refusal}"),
        };
        println!(
            "{}\n  campaign bound: {}\n  2 ms: {}",
            serde_json::to_string(&report).unwrap_or_default(),
            verdict(bound),
            verdict(2_000)
        );
    }
}

fn main() {
    let o = options();
    if let Some(path) = &o.campaign {
        return campaign_self_test(&o, path);
    }
    if o.serve || o.serve_only {
        raise_nofile(1 << 20);
        return serve(&o);
    }
    // A stream is in flight from its send to its last token: the hold, then tokens − 1 gaps.
    let stream_ms = o.hold_ms + u64::from(o.tokens.saturating_sub(1)) * o.token_gap_us / 1000;
    // (label, rate in milli-req/s) for each run.
    let runs: Vec<(u64, u64)> = if o.rates.is_empty() {
        o.concurrency
            .iter()
            .map(|&n| (n, n * 1_000_000 / stream_ms.max(1)))
            .collect()
    } else {
        o.rates.iter().map(|&r| (r, r * 1000)).collect()
    };
    let seconds = o
        .seconds
        .unwrap_or((2 * stream_ms).div_ceil(1000).clamp(1, 12));
    let most = runs.iter().map(|r| r.1).max().unwrap_or(0);
    raise_nofile(2 * most * stream_ms / 1_000_000 + 4_096);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "stream {stream_ms} ms (hold {} ms + {} tokens × {} µs), sends over {seconds} s, client \
         threads {} (cpu {:?}), server threads {} (cpu {:?}), bound {} µs; loadavg {}",
        o.hold_ms,
        o.tokens,
        o.token_gap_us,
        o.client_threads,
        o.client_cpu,
        o.server_threads,
        o.server_cpu,
        o.bound_us,
        load.trim()
    );
    println!(
        "{:>9} {:>10} {:>8} {:>7} {:>9} {:>8} {:>11} {:>9} {:>9} {:>7} {:>8} {:>7} {:>7}  verdict",
        if o.rates.is_empty() {
            "streams"
        } else {
            "req/s"
        },
        "rate/s",
        "requests",
        "failed",
        "in flight",
        "conns",
        "achieved/s",
        "lag p50",
        "lag p99",
        "cli cpu",
        "cli wait",
        "srv cpu",
        "µs/tok"
    );
    let driver = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("driver runtime");
    let mut best = None;
    for (label, rate_milli_rps) in runs {
        pin(o.server_cpu);
        nice(0);
        let server = Server::start(&o);
        pin(o.client_cpu);
        nice(o.client_nice);
        let client = LoadClient::new(ClientConfig {
            worker_threads: o.client_threads,
            max_in_flight: None,
            keep_awake: !o.no_keep_awake,
            realtime: !o.no_realtime,
            ..ClientConfig::default()
        })
        .expect("load client");
        let count = u32::try_from(rate_milli_rps * seconds / 1000).unwrap_or(u32::MAX);
        let config = SelfTestConfig {
            items: constant_items(count.max(1), o.prompt_bytes, o.tokens),
            rate_milli_rps,
            warmup_requests: 0,
            min_requests: count,
            duration_ms: 0,
            deadline_ms: 2 * stream_ms + 2_000,
            server: NullServerConfig {
                hold_ms: o.hold_ms,
                token_gap_us: o.token_gap_us,
                threads: o.server_threads,
            },
            client: ClientConfig::default(),
        };
        let (client_before, server_before) = (
            thread_sched_us("referee-load"),
            thread_sched_us("referee-null"),
        );
        let started = Instant::now();
        let report = driver
            .block_on(self_test_with(&server.base_url(), &client, &config))
            .expect("self-test");
        let wall_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let (client_cpu, client_wait) =
            sched_since(&client_before, &thread_sched_us("referee-load"));
        let (server_cpu, _) = sched_since(&server_before, &thread_sched_us("referee-null"));
        let tokens = u64::from(report.requests) * u64::from(o.tokens);
        let verdict = match report.check(o.bound_us) {
            Ok(()) => {
                best = Some(label);
                "pass".to_string()
            }
            Err(refusal) => format!("refused: {refusal}"),
        };
        println!(
            "{:>9} {:>10} {:>8} {:>7} {:>9} {:>8} {:>11} {:>9} {:>9} {:>6}% {:>7}% {:>6}% {:>7.1}  {verdict}",
            label,
            rate_milli_rps / 1000,
            report.requests,
            report.failed,
            report.in_flight_max,
            server.connections(),
            report.achieved_milli_rps / 1000,
            report.send_lag_p50_us,
            report.send_lag_p99_us,
            client_cpu * 100 / wall_us.max(1),
            client_wait * 100 / wall_us.max(1),
            server_cpu * 100 / wall_us.max(1),
            client_cpu as f64 / tokens.max(1) as f64,
        );
        drop(client);
        drop(server);
        // Let the sockets of this run close before the next one opens as many.
        std::thread::sleep(Duration::from_millis(500));
    }
    match best {
        Some(label) => println!("highest passing: {label}"),
        None => println!("none passed"),
    }
}
