//! The open-loop load generator (content/measurement.md, Open loop, timed from the schedule).
//!
//! A probe's arrival schedule is computed before it starts ([`ProbePlan`]). A pacing task
//! on the client's own multi-thread tokio runtime ([`LoadClient`]) waits for each
//! scheduled instant on a microsecond timer (tokio's timers have millisecond granularity;
//! see `pacer`) and spawns the request there, whatever is still outstanding: no pacer
//! thread, so no cross-thread hand-over per request. Every request is timed from its
//! *scheduled* send time, so a stalled server shows in the tail instead of being hidden
//! behind late sends; the client's own lag (actual − scheduled send) is recorded too.
//! Requests stream (`stream: true`, SSE) so time to first token and inter-token gaps are
//! measured, fix their output length (`max_tokens` = `min_tokens`, `ignore_eos`,
//! `temperature: 0`) and ask for the generated tokens as the campaign's engine API profile
//! says (`receipts::model::ApiProfile`: vLLM's `return_token_ids` by default, or streamed
//! logprobs): output tokens are the tokens the client saw, never the engine's own `usage`
//! (unless the profile says `token_count = "usage"`), and never chunks. Every request
//! body is built from its workload item and the campaign's profile alone, so every entry
//! of a round is sent the same bytes. Every request has a deadline
//! after its scheduled time, so a probe ends by its last scheduled send plus the
//! deadline, whatever the server does. A server that refuses or resets the first
//! [`UNREACHABLE_AFTER`] requests before answering any ends the probe at once
//! ([`LoadClient::run`]).

pub mod bench_file;
mod caching;
pub mod decide;
mod executor;
pub mod nullserver;
mod pacer;
mod scheduling;
pub mod search;
pub mod selftest;
pub mod sse;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use receipts::model::{
    ApiProfile, ClientScheduling, ErrorCounts, LatencyKind, ProbeHistograms, ProbeRecord, Sla,
    TokenCount, TokenIds,
};

pub use caching::caching_probe;
pub use decide::DecidePlan;
pub use executor::{
    HttpProbeExecutor, MeasureConfig, ProbeOutputs, WorkloadMeasurement, measure_runs_with_outputs,
    measure_workload, measure_workload_with_outputs,
};
use pacer::Pacer;
use receipts::rules::histogram::{HistogramError, encode_histogram, new_latency_histogram};
pub use sse::ResponseBudget;
use sse::{Chunk, SseError, SseEvent, SseParser};

use receipts::rules::score::probe_throughput_milli_rps;
use receipts::rules::sla::{nearest_rank_value, over_bound_count, required_requests, verdict};
use receipts::rules::workload::{Item, WorkloadError, probe_request_count, scheduled_offset_ns};
use search::ProgressSink;

/// The server under test: an OpenAI-compatible completions endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Base URL without `/v1`, e.g. `http://127.0.0.1:8000`.
    pub base_url: String,
    /// The `model` field of every request.
    pub model: String,
}

/// The load generator could not run (not a failing server: that yields failed requests).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The target URL is not an `http://` URL.
    #[error("invalid target url `{url}`: {message}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// Why.
        message: String,
    },
    /// The client's runtime or pacer timer could not be started.
    #[error("starting the load generator's {what}")]
    Runtime {
        /// `runtime`, `pacer timer` or `null server`.
        what: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The pacing task or a request task died (a bug: they do not panic by design).
    #[error("load generator task failed: {message}")]
    Task {
        /// Why.
        message: String,
    },
    /// A histogram could not be encoded.
    #[error(transparent)]
    Histogram(#[from] HistogramError),
    /// The workload could not be built.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
}

/// How a request failed (content/measurement.md: it then counts as over the bound, not completed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequestErrorKind {
    /// The connection was refused or could not be opened.
    Connect,
    /// An HTTP 4xx status.
    Http4xx,
    /// An HTTP 5xx status.
    Http5xx,
    /// Not an OpenAI completions stream (bad SSE or JSON, another status, an error event).
    BadBody,
    /// The deadline passed first.
    Timeout,
    /// Wrong length: the stream ended normally with fewer output tokens than asked
    /// (counted as `shortOutput`).
    ShortOutput,
    /// The connection closed, or the stream ended, before `data: [DONE]`.
    ConnectionClosed,
    /// The engine's `usage.completion_tokens` disagreed with the token ids observed.
    UsageMismatch,
    /// A chunk carried generated text without the tokens the counting mode counts
    /// (`token_ids` with `token_count = "ids"`, `logprobs.tokens` with `"logprobs"`).
    NoTokenIds,
    /// Wrong length: more output tokens than asked arrived (counted as `longOutput`).
    LongOutput,
    /// Bytes arrived after `data: [DONE]`.
    TrailingData,
    /// The stream reported no `usage.completion_tokens` (`token_count = "usage"`).
    MissingUsage,
    /// The response passed its byte or event budget ([`ClientConfig::response_budget`],
    /// the campaign's `[limits]`), comments included.
    ResponseTooLarge,
    /// `decide`: HTTP 401, the run's bearer token missing or wrong (counted as
    /// `unauthorized`, not `http4xx`).
    Unauthorized,
    /// `decide`: no decision (a string) at the campaign's decision pointer.
    NoDecision,
    /// `decide`: a decision outside the campaign's declared set.
    DecisionOutsideSet,
}

impl RequestSample {
    /// Why the request failed, in words: `wrong length: got N, asked M` for an output of
    /// the wrong length (either direction), the kind otherwise; `None` when it completed.
    pub fn failure(&self) -> Option<String> {
        let kind = self.error?;
        Some(match kind {
            RequestErrorKind::ShortOutput | RequestErrorKind::LongOutput => format!(
                "wrong length: got {}, asked {}",
                self.output_tokens, self.max_tokens
            ),
            RequestErrorKind::Connect => "connection refused".into(),
            RequestErrorKind::Http4xx => "HTTP 4xx".into(),
            RequestErrorKind::Http5xx => "HTTP 5xx".into(),
            RequestErrorKind::BadBody => "not an OpenAI completions stream".into(),
            RequestErrorKind::Timeout => "deadline passed".into(),
            RequestErrorKind::ConnectionClosed => "closed before `data: [DONE]`".into(),
            RequestErrorKind::UsageMismatch => format!(
                "usage disagrees with the {} tokens observed",
                self.output_tokens
            ),
            RequestErrorKind::NoTokenIds => "text without countable tokens".into(),
            RequestErrorKind::TrailingData => "bytes after `data: [DONE]`".into(),
            RequestErrorKind::MissingUsage => "no `usage.completion_tokens`".into(),
            RequestErrorKind::ResponseTooLarge => "response over its budget".into(),
            RequestErrorKind::Unauthorized => "HTTP 401: the run's token was refused".into(),
            RequestErrorKind::NoDecision => "no decision at the declared pointer".into(),
            RequestErrorKind::DecisionOutsideSet => "a decision outside the declared set".into(),
        })
    }
}

/// Adds one failure of `kind` to `counts`.
pub fn count_error(counts: &mut ErrorCounts, kind: RequestErrorKind) {
    let slot = match kind {
        RequestErrorKind::Connect => &mut counts.connect,
        RequestErrorKind::Http4xx => &mut counts.http4xx,
        RequestErrorKind::Http5xx => &mut counts.http5xx,
        RequestErrorKind::BadBody => &mut counts.bad_body,
        RequestErrorKind::Timeout => &mut counts.timeout,
        RequestErrorKind::ShortOutput => &mut counts.short_output,
        RequestErrorKind::ConnectionClosed => &mut counts.connection_closed,
        RequestErrorKind::UsageMismatch => &mut counts.usage_mismatch,
        RequestErrorKind::NoTokenIds => &mut counts.no_token_ids,
        RequestErrorKind::LongOutput => &mut counts.long_output,
        RequestErrorKind::TrailingData => &mut counts.trailing_data,
        RequestErrorKind::MissingUsage => &mut counts.missing_usage,
        RequestErrorKind::ResponseTooLarge => &mut counts.response_too_large,
        RequestErrorKind::Unauthorized => &mut counts.unauthorized,
        RequestErrorKind::NoDecision => &mut counts.no_decision,
        RequestErrorKind::DecisionOutsideSet => &mut counts.decision_outside_set,
    };
    *slot += 1;
}

/// One request as measured. All durations are ns from the request's scheduled send.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestSample {
    /// A warm-up request (excluded from every figure).
    pub warmup: bool,
    /// The workload item's `item_index` (its identity within its sub-stream).
    pub item_index: u32,
    /// Scheduled send, ns after the probe's start.
    pub scheduled_ns: u64,
    /// Actual − scheduled send, ns (time spent in the pacer, the runtime and any client
    /// queue before the request was handed to the HTTP client).
    pub send_lag_ns: u64,
    /// Prompt bytes.
    pub input_bytes: u64,
    /// Output tokens asked for.
    pub max_tokens: u32,
    /// Output tokens received, counted as the plan's [`TokenCount`] says: the token ids
    /// streamed (default), or the engine's `usage.completion_tokens`. Set for failed
    /// requests too, as far as the stream got.
    pub output_tokens: u64,
    /// Scheduled send to `data: [DONE]`, or to the failure, ns.
    pub e2e_ns: u64,
    /// Scheduled send to the first chunk carrying a token id (with `token_count =
    /// "usage"`: carrying text or a token id), ns.
    pub ttft_ns: Option<u64>,
    /// Inter-token gaps, ns: for each chunk after the first that carries `k` token ids,
    /// the gap since the previous such chunk, then `k − 1` zeros (its other tokens
    /// arrived with it); the first chunk adds `k − 1` zeros. A completed request has
    /// `output_tokens − 1` of them. (With `token_count = "usage"`, every chunk with text
    /// or ids counts as one arrival, `k` = 1.)
    pub itl_ns: Vec<u64>,
    /// The generated token ids as streamed, in order, for a request whose plan entry
    /// keeps them ([`PlannedRequest::keep_token_ids`]); empty otherwise.
    pub token_ids: Vec<u32>,
    /// The generated text as streamed, its chunks' `text` concatenated, for a request
    /// whose plan entry keeps its ids (held against them by the reference's
    /// detokenizer); empty otherwise.
    pub text: String,
    /// Why it failed; `None` for a completed request.
    pub error: Option<RequestErrorKind>,
}

impl RequestSample {
    /// Whether the request completed (content/measurement.md: no error, within its deadline,
    /// exactly the requested output tokens).
    pub fn completed(&self) -> bool {
        self.error.is_none()
    }

    /// End-to-end latency timed from the actual send instead of the schedule, ns: what a
    /// client blind to coordinated omission would report.
    pub fn e2e_from_send_ns(&self) -> u64 {
        self.e2e_ns.saturating_sub(self.send_lag_ns)
    }
}

/// One request of a probe, scheduled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedRequest {
    /// The workload item.
    pub item: Item,
    /// Scheduled send, ns after the probe's start.
    pub scheduled_ns: u64,
    /// A warm-up request.
    pub warmup: bool,
    /// Keep the request's observed token ids in [`RequestSample::token_ids`].
    pub keep_token_ids: bool,
}

/// A probe's requests with their schedule (content/measurement.md, Probe).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbePlan {
    /// Warm-up requests first, then the measured ones, in send order.
    pub requests: Vec<PlannedRequest>,
    /// Every request's deadline after its scheduled send, ms.
    pub deadline_ms: u64,
    /// How output tokens are counted ([`TokenCount::Ids`] from [`ProbePlan::new`]).
    pub token_count: TokenCount,
    /// The engine API profile the request bodies and token ids follow
    /// ([`ApiProfile::default`] from [`ProbePlan::new`]); its `token_count` is not read
    /// (`token_count` above is).
    pub api: Arc<ApiProfile>,
    /// For a `decide` campaign, the decision API and the run's token: requests go to the
    /// contract's route, one decision each, instead of the completions API (`None` from
    /// [`ProbePlan::new`]).
    pub decide: Option<Arc<DecidePlan>>,
}

impl ProbePlan {
    /// Schedules `items` (one sub-stream, in send order) at `rate_milli_rps`: the first
    /// `warmup` are warm-up; then the fewest measured items, at least `min_requests`,
    /// whose scheduled span (first to last measured send) reaches `min_duration_ms`. If
    /// the sub-stream runs out first, every item is used (the workload sizes sub-streams
    /// so that practically never happens). Tokens are counted from ids; no request keeps
    /// its ids.
    pub fn new(
        items: Vec<Item>,
        rate_milli_rps: u64,
        warmup: u32,
        min_requests: u32,
        min_duration_ms: u64,
        deadline_ms: u64,
    ) -> Self {
        let offsets: Vec<u64> = items
            .iter()
            .map(|item| scheduled_offset_ns(item.arrival_unit_ns, rate_milli_rps))
            .collect();
        // One rule with the verifier, which recomputes every probe's counts from it.
        let end = probe_request_count(&offsets, warmup, min_requests, min_duration_ms);
        let warmup = (warmup as usize).min(items.len());
        let requests = items
            .into_iter()
            .zip(offsets)
            .take(end)
            .enumerate()
            .map(|(i, (item, scheduled_ns))| PlannedRequest {
                item,
                scheduled_ns,
                warmup: i < warmup,
                keep_token_ids: false,
            })
            .collect();
        Self {
            requests,
            deadline_ms,
            token_count: TokenCount::Ids,
            api: Arc::new(ApiProfile::default()),
            decide: None,
        }
    }

    /// Marks the measured requests whose `item_index` is in `items` to keep their
    /// observed token ids (warm-up requests never keep them).
    pub fn keep_token_ids(&mut self, items: &BTreeSet<u32>) {
        for request in &mut self.requests {
            request.keep_token_ids = !request.warmup && items.contains(&request.item.item_index);
        }
    }

    /// Measured (non-warm-up) requests.
    pub fn measured(&self) -> usize {
        self.requests.iter().filter(|r| !r.warmup).count()
    }
}

/// The pooled HTTP/1.1 client of the load generator: hyper's own, without reqwest's
/// per-request URL conversion and header handling (about a sixth of the client's CPU at
/// 20,000 req/s on one core: BENCHMARKS.md, load generator).
type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// The client side of the load generator: a pooled HTTP client on its own tokio runtime,
/// so the caller's runtime (or the engine under test) cannot starve it.
#[derive(Debug)]
pub struct LoadClient {
    runtime: Option<tokio::runtime::Runtime>,
    http: HttpClient,
    in_flight: Option<Arc<tokio::sync::Semaphore>>,
    keep_awake: bool,
    response_budget: ResponseBudget,
    /// CPUs a spinner kept awake for the length of the last probe that ended.
    awake_cpus: AtomicU32,
}

/// How the load client runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientConfig {
    /// Worker threads of the client's runtime (default 2).
    pub worker_threads: usize,
    /// Cap on requests in flight; beyond it sends wait inside the client (and the wait
    /// shows as send lag). `None` (the default) = unbounded, as an open-loop run needs.
    pub max_in_flight: Option<usize>,
    /// Keeps the client's CPUs from idling during a probe with one `SCHED_IDLE` spinner
    /// per CPU (default true): an idle vCPU wakes for the pacer milliseconds late (see
    /// `awake`). Off only to measure what it changes.
    pub keep_awake: bool,
    /// Runs the client's threads under `SCHED_FIFO` where the process may (root or
    /// `CAP_SYS_NICE`; default true), so a busy neighbour process on the client's CPUs
    /// cannot hold the pacer for a time slice (see `scheduling::raise_to_realtime`).
    pub realtime: bool,
    /// What one response may stream before its request fails `responseTooLarge` (the
    /// campaign's `[limits]`; default [`ResponseBudget::default`]).
    pub response_budget: ResponseBudget,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            worker_threads: 2,
            max_in_flight: None,
            keep_awake: true,
            realtime: true,
            response_budget: ResponseBudget::default(),
        }
    }
}

/// The pacer starts this long after a probe is handed to it, so its first send is on time.
const START_LEAD: Duration = Duration::from_millis(20);

/// Requests refused or reset (`connect`, `connectionClosed` before a response) with no
/// response to any request of the probe yet, after which the probe's remaining requests
/// are not sent: the server is unreachable (content/measurement.md, Open loop).
pub const UNREACHABLE_AFTER: u32 = 3;

impl LoadClient {
    /// Starts the client runtime and builds the pooled HTTP/1.1 client.
    ///
    /// Errors: [`LoadError::Runtime`] when threads cannot be started.
    pub fn new(config: ClientConfig) -> Result<Self, LoadError> {
        let realtime = config.realtime;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.worker_threads.max(1))
            .thread_name("referee-load")
            .on_thread_start(move || {
                if realtime {
                    scheduling::raise_to_realtime();
                }
            })
            .enable_all()
            .build()
            .map_err(|source| LoadError::Runtime {
                what: "runtime",
                source,
            })?;
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        // With a timer the pool closes connections idle for 30 s in the background (without
        // one, only at the next checkout).
        let http = Client::builder(hyper_util::rt::TokioExecutor::new())
            .pool_timer(hyper_util::rt::TokioTimer::new())
            .pool_max_idle_per_host(usize::MAX)
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Ok(Self {
            runtime: Some(runtime),
            http,
            in_flight: config
                .max_in_flight
                .map(|n| Arc::new(tokio::sync::Semaphore::new(n.max(1)))),
            keep_awake: config.keep_awake,
            response_budget: config.response_budget,
            awake_cpus: AtomicU32::new(0),
        })
    }

    /// How this client's threads are scheduled ([`ClientScheduling`]): the policy and
    /// priority one of its runtime's threads reads back from the kernel (they all start
    /// alike), and the CPUs kept awake for the length of the last probe that ended.
    ///
    /// Errors: [`LoadError::Task`] if the reading task died.
    pub async fn scheduling(&self) -> Result<ClientScheduling, LoadError> {
        let runtime = self.runtime.as_ref().ok_or_else(|| LoadError::Task {
            message: "the client runtime was shut down".into(),
        })?;
        let (policy, priority) = runtime
            .spawn(async { scheduling::current_policy() })
            .await
            .map_err(|e| LoadError::Task {
                message: format!("the task reading the client's policy failed: {e}"),
            })?;
        Ok(ClientScheduling {
            policy,
            priority,
            awake_cpus: self.awake_cpus.load(Ordering::Relaxed),
        })
    }

    /// Runs `plan` against `target` open-loop and returns one sample per planned request,
    /// in plan order. Reports finished requests to `progress` every 100 ms. Returns by the
    /// last scheduled send plus the deadline (plus scheduling slack), whatever the server
    /// does. Once [`UNREACHABLE_AFTER`] requests were refused or reset before the server
    /// answered any, the requests not yet sent are not sent: each fails with the kind of
    /// the last refusal, with no send lag, and the probe ends when those in flight do.
    /// The caller's runtime must have its time driver enabled.
    ///
    /// Errors: [`LoadError::InvalidUrl`] for a base URL that is not `http://`;
    /// [`LoadError::Runtime`] when the pacer timer cannot start; [`LoadError::Task`] if a
    /// task died.
    pub async fn run(
        &self,
        target: &Target,
        plan: &ProbePlan,
        progress: &dyn ProgressSink,
    ) -> Result<Vec<RequestSample>, LoadError> {
        let base = target.base_url.trim_end_matches('/');
        let route = plan
            .decide
            .as_ref()
            .map_or("/v1/completions", |d| d.contract.path.as_str());
        let url: hyper::Uri =
            format!("{base}{route}")
                .parse()
                .map_err(|e: hyper::http::uri::InvalidUri| LoadError::InvalidUrl {
                    url: target.base_url.clone(),
                    message: e.to_string(),
                })?;
        if url.scheme() != Some(&hyper::http::uri::Scheme::HTTP) || url.host().is_none() {
            return Err(LoadError::InvalidUrl {
                url: target.base_url.clone(),
                message: "only http://HOST[:PORT] is supported (the client has no TLS)".into(),
            });
        }
        let Some(runtime) = &self.runtime else {
            return Err(LoadError::Task {
                message: "runtime already shut down".into(),
            });
        };
        let context = Arc::new(SendContext {
            http: self.http.clone(),
            url,
            deadline: Duration::from_millis(plan.deadline_ms),
            token_count: plan.token_count,
            token_ids: plan.api.token_ids,
            in_flight: self.in_flight.clone(),
            response_budget: self.response_budget,
            done: AtomicU32::new(0),
            reach: Reach::default(),
            decide: plan.decide.clone(),
        });
        // Request bodies are built before the run so the pacing task only hands them over.
        let prepared: Vec<PreparedRequest> = plan
            .requests
            .iter()
            .map(|r| PreparedRequest {
                body: match &plan.decide {
                    Some(decide) => decide.body(&r.item),
                    None => request_body(&target.model, &r.item, &plan.api),
                },
                scheduled_ns: r.scheduled_ns,
                warmup: r.warmup,
                item_index: r.item.item_index,
                keep_token_ids: r.keep_token_ids,
                input_bytes: r.item.prompt.len() as u64,
                // One decision per request.
                max_tokens: if plan.decide.is_some() {
                    1
                } else {
                    r.item.max_tokens
                },
            })
            .collect();
        let count = prepared.len();
        // Each request task sends its sample here and ends, freeing its memory at once (a
        // JoinHandle per request kept every finished task alive until the end of the
        // probe: hundreds of MB at high rates, and the allocator's page faults with it).
        let (samples_tx, mut samples_rx) = tokio::sync::mpsc::unbounded_channel();
        let pacer_context = Arc::clone(&context);
        // From before the first send to the end of the probe (dropped on return).
        let mut awake = self.keep_awake.then(scheduling::KeepAwake::start);
        let start = Instant::now() + START_LEAD;
        let pacing = runtime.spawn(async move {
            let pacer = Pacer::new().map_err(|source| LoadError::Runtime {
                what: "pacer timer",
                source,
            })?;
            for (index, request) in prepared.into_iter().enumerate() {
                let scheduled = start + Duration::from_nanos(request.scheduled_ns);
                if pacer_context.reach.abandoned().is_none() {
                    tokio::select! {
                        waited = pacer.wait_until(scheduled) => {
                            waited.map_err(|source| LoadError::Runtime {
                                what: "pacer timer",
                                source,
                            })?;
                        }
                        () = pacer_context.reach.wake.notified() => {}
                    }
                }
                if let Some(kind) = pacer_context.reach.abandoned() {
                    // The server refused the first requests: the rest are not sent.
                    pacer_context.done.fetch_add(1, Ordering::Relaxed);
                    let _ = samples_tx.send((index, request.unsent(kind)));
                    continue;
                }
                let context = Arc::clone(&pacer_context);
                let samples_tx = samples_tx.clone();
                tokio::spawn(async move {
                    let sample = send_one(context, request, scheduled).await;
                    // The receiver is gone only if the caller dropped the run.
                    let _ = samples_tx.send((index, sample));
                });
            }
            Ok::<_, LoadError>(())
        });
        // Collected on the client's runtime: a wake-up of the caller's thread per request
        // cost a context switch each.
        let collector = runtime.spawn(async move {
            let mut slots: Vec<Option<RequestSample>> = vec![None; count];
            // Ends when the pacing task and every request task have dropped their sender.
            while let Some((index, sample)) = samples_rx.recv().await {
                slots[index] = Some(sample);
            }
            slots
        });
        let collect = async {
            let slots = collector.await.map_err(|e| LoadError::Task {
                message: format!("the collecting task failed: {e}"),
            })?;
            pacing.await.map_err(|e| LoadError::Task {
                message: format!("the pacing task failed: {e}"),
            })??;
            slots
                .into_iter()
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| LoadError::Task {
                    message: "a request task ended without its sample".into(),
                })
        };
        tokio::pin!(collect);
        loop {
            tokio::select! {
                result = &mut collect => {
                    progress.requests_done(context.done.load(Ordering::Relaxed));
                    let spun = awake.as_mut().map_or(0, scheduling::KeepAwake::stop);
                    self.awake_cpus.store(u32::try_from(spun).unwrap_or(u32::MAX), Ordering::Relaxed);
                    return result;
                }
                _ = tokio::time::sleep(Duration::from_millis(100)) => {
                    progress.requests_done(context.done.load(Ordering::Relaxed));
                }
            }
        }
    }
}

impl Drop for LoadClient {
    fn drop(&mut self) {
        // Dropping a runtime inside another runtime's context panics; shutting it down in
        // the background never blocks.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// What every request task of one probe shares.
struct SendContext {
    http: HttpClient,
    url: hyper::Uri,
    deadline: Duration,
    token_count: TokenCount,
    token_ids: TokenIds,
    in_flight: Option<Arc<tokio::sync::Semaphore>>,
    response_budget: ResponseBudget,
    done: AtomicU32,
    reach: Reach,
    decide: Option<Arc<DecidePlan>>,
}

/// Whether the server answered any request of the probe, and the refusals before it did.
#[derive(Default)]
struct Reach {
    answered: std::sync::atomic::AtomicBool,
    refused: AtomicU32,
    /// Set once [`UNREACHABLE_AFTER`] refusals came before any answer: their last kind.
    abandoned: std::sync::OnceLock<RequestErrorKind>,
    /// Wakes the pacer when `abandoned` is set.
    wake: tokio::sync::Notify,
}

impl Reach {
    fn abandoned(&self) -> Option<RequestErrorKind> {
        self.abandoned.get().copied()
    }

    /// A request got a response head.
    fn answered(&self) {
        self.answered.store(true, Ordering::Relaxed);
    }

    /// A request failed before any response, as `kind`.
    fn failed(&self, kind: RequestErrorKind) {
        let refusal = matches!(
            kind,
            RequestErrorKind::Connect | RequestErrorKind::ConnectionClosed
        );
        if refusal
            && !self.answered.load(Ordering::Relaxed)
            && self.refused.fetch_add(1, Ordering::Relaxed) + 1 >= UNREACHABLE_AFTER
            && self.abandoned.set(kind).is_ok()
        {
            self.wake.notify_one();
        }
    }
}

struct PreparedRequest {
    body: Bytes,
    scheduled_ns: u64,
    warmup: bool,
    item_index: u32,
    keep_token_ids: bool,
    input_bytes: u64,
    max_tokens: u32,
}

impl PreparedRequest {
    /// The sample of a request not sent because the server was unreachable: failed as
    /// `kind`, with no send lag and no latency.
    fn unsent(&self, kind: RequestErrorKind) -> RequestSample {
        RequestSample {
            warmup: self.warmup,
            item_index: self.item_index,
            scheduled_ns: self.scheduled_ns,
            input_bytes: self.input_bytes,
            max_tokens: self.max_tokens,
            error: Some(kind),
            ..RequestSample::default()
        }
    }
}

/// The completions request of `item`: streamed, greedy, output length fixed
/// (content/measurement.md: `min_tokens` = `max_tokens` and, where the profile says the
/// server takes it, `ignore_eos`, as vLLM accepts; llama-cpp-python suppresses EOS below
/// `min_tokens`), usage asked for, and the tokens as
/// the profile `api` says: `return_token_ids` for [`TokenIds::Array`]; `logprobs: 1` when
/// the profile counts or identifies tokens by their streamed logprobs, with
/// `return_tokens_as_token_ids` for [`TokenIds::TokenIdStrings`]; then the profile's
/// `extra` fields. Only the item, the campaign's model name and its profile go in:
/// nothing of the entry, the run or which requests keep their ids, so every entry of a
/// round is sent the same bytes. The default profile gives the body referee sent before
/// profiles existed.
pub fn request_body(model: &str, item: &Item, api: &ApiProfile) -> Bytes {
    let mut body = serde_json::json!({
        "model": model,
        "prompt": item.prompt,
        "max_tokens": item.max_tokens,
        "min_tokens": item.max_tokens,
        "temperature": 0,
        "stream": true,
        "stream_options": { "include_usage": true },
    });
    if let serde_json::Value::Object(fields) = &mut body {
        if api.ignore_eos {
            fields.insert("ignore_eos".into(), true.into());
        }
        if api.token_ids == TokenIds::Array {
            fields.insert("return_token_ids".into(), true.into());
        }
        if api.streams_logprobs() {
            fields.insert("logprobs".into(), 1.into());
        }
        if api.token_ids == TokenIds::TokenIdStrings {
            fields.insert("return_tokens_as_token_ids".into(), true.into());
        }
        for (name, value) in &api.extra {
            fields.insert(name.clone(), value.to_json());
        }
    }
    Bytes::from(body.to_string())
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Sends one request and measures it from `scheduled`; never outlives its deadline.
async fn send_one(
    context: Arc<SendContext>,
    request: PreparedRequest,
    scheduled: Instant,
) -> RequestSample {
    let mut sample = RequestSample {
        warmup: request.warmup,
        item_index: request.item_index,
        scheduled_ns: request.scheduled_ns,
        input_bytes: request.input_bytes,
        max_tokens: request.max_tokens,
        ..RequestSample::default()
    };
    let deadline = scheduled + context.deadline;
    let mut sent = false;
    let keep = request.keep_token_ids;
    let outcome = tokio::time::timeout_at(
        tokio::time::Instant::from_std(deadline),
        exchange(
            &context,
            request.body,
            scheduled,
            keep,
            &mut sample,
            &mut sent,
        ),
    )
    .await;
    let error = match outcome {
        Ok(Ok(())) => match sample.output_tokens.cmp(&u64::from(sample.max_tokens)) {
            std::cmp::Ordering::Equal => None,
            std::cmp::Ordering::Less => Some(RequestErrorKind::ShortOutput),
            std::cmp::Ordering::Greater => Some(RequestErrorKind::LongOutput),
        },
        Ok(Err(kind)) => Some(kind),
        Err(_) => Some(RequestErrorKind::Timeout),
    };
    // One instant for both: a request never handed to the HTTP client (queued in the
    // client, or past its deadline before it was sent) has its lag equal to its e2e.
    let now = Instant::now();
    if !sent {
        sample.send_lag_ns = nanos(now.saturating_duration_since(scheduled));
    }
    if error.is_some() {
        sample.e2e_ns = nanos(now.saturating_duration_since(scheduled));
    }
    sample.error = error;
    context.done.fetch_add(1, Ordering::Relaxed);
    sample
}

/// The HTTP exchange: waits for an in-flight slot (if capped), sends, reads the stream to
/// its end (nothing may follow `data: [DONE]`) and sets the sample's output tokens.
async fn exchange(
    context: &SendContext,
    body: Bytes,
    scheduled: Instant,
    keep_token_ids: bool,
    sample: &mut RequestSample,
    sent: &mut bool,
) -> Result<(), RequestErrorKind> {
    let _permit = match &context.in_flight {
        Some(semaphore) => Some(
            semaphore
                .acquire()
                .await
                .map_err(|_| RequestErrorKind::ConnectionClosed)?,
        ),
        None => None,
    };
    let now = Instant::now();
    if now >= scheduled + context.deadline {
        // Its deadline passed before it left the client (a client behind its schedule, or
        // the in-flight cap): failed here, not sent late to a server that would work on
        // an answer nobody waits for, on a connection dropped at once.
        return Err(RequestErrorKind::Timeout);
    }
    sample.send_lag_ns = nanos(now.saturating_duration_since(scheduled));
    *sent = true;
    let mut request = hyper::Request::new(Full::new(body));
    *request.method_mut() = hyper::Method::POST;
    *request.uri_mut() = context.url.clone();
    let headers = request.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    match &context.decide {
        Some(decide) => {
            let token = hyper::header::HeaderValue::from_str(&decide.authorization())
                .map_err(|_| RequestErrorKind::Unauthorized)?;
            headers.insert(hyper::header::AUTHORIZATION, token);
            headers.insert(
                hyper::header::ACCEPT,
                hyper::header::HeaderValue::from_static("application/json"),
            );
        }
        None => {
            headers.insert(
                hyper::header::ACCEPT,
                hyper::header::HeaderValue::from_static("text/event-stream"),
            );
        }
    }
    let response = match context.http.request(request).await {
        Ok(response) => {
            context.reach.answered();
            response
        }
        Err(e) => {
            let kind = classify(&e);
            context.reach.failed(kind);
            return Err(kind);
        }
    };
    let status = response.status();
    if status == hyper::StatusCode::UNAUTHORIZED && context.decide.is_some() {
        return Err(RequestErrorKind::Unauthorized);
    }
    if status.is_server_error() {
        return Err(RequestErrorKind::Http5xx);
    }
    if status.is_client_error() {
        return Err(RequestErrorKind::Http4xx);
    }
    if !status.is_success() {
        return Err(RequestErrorKind::BadBody);
    }
    if let Some(decide) = &context.decide {
        return decide::read_response(
            response.into_body(),
            decide,
            context.response_budget,
            scheduled,
            sample,
        )
        .await;
    }
    let mut body = response.into_body();
    let mut parser = SseParser::new(context.response_budget);
    let mut events = Vec::new();
    let mut count = TokenCounter::new(
        (context.token_count, context.token_ids),
        sample.max_tokens,
        keep_token_ids,
        scheduled,
    );
    let mut done = false;
    // Read to the end of the body: bytes after `[DONE]` are an error, not ignored.
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| classify_hyper(&e))?;
        let Some(bytes) = frame.data_ref() else {
            continue; // trailers
        };
        let now = Instant::now();
        let fed = parser.feed(bytes, &mut events);
        for event in events.drain(..) {
            match event {
                SseEvent::Chunk(chunk) => count.chunk(chunk, now, sample)?,
                SseEvent::Done => {
                    done = true;
                    sample.e2e_ns = nanos(now - scheduled);
                }
            }
        }
        fed.map_err(stream_error)?;
    }
    if !done {
        return Err(RequestErrorKind::ConnectionClosed);
    }
    count.finish(sample)
}

/// Counts a stream's output tokens as the plan's [`TokenCount`] says and records token
/// arrivals (TTFT, inter-token gaps) into the sample.
struct TokenCounter {
    mode: TokenCount,
    /// Where token ids come from.
    source: TokenIds,
    /// Whether every counted token so far came with its id (else none are kept).
    ids_known: bool,
    max_tokens: u64,
    keep_token_ids: bool,
    scheduled: Instant,
    /// Token ids seen so far.
    observed: u64,
    /// The last `usage.completion_tokens` the engine reported.
    usage: Option<u64>,
    last_arrival: Option<Instant>,
}

/// What a stream that does not parse makes of its request: bytes after `[DONE]` are
/// trailing data, a response over its budget too large, anything else a bad body.
fn stream_error(error: SseError) -> RequestErrorKind {
    match error {
        SseError::AfterDone { .. } => RequestErrorKind::TrailingData,
        SseError::TooLarge { .. } => RequestErrorKind::ResponseTooLarge,
        SseError::Malformed { .. } => RequestErrorKind::BadBody,
    }
}

impl TokenCounter {
    /// A counter of one request's stream: tokens counted and identified as `(mode,
    /// source)` say, at most `max_tokens`, ids kept if `keep_token_ids`, latencies from
    /// `scheduled`.
    fn new(
        (mode, source): (TokenCount, TokenIds),
        max_tokens: u32,
        keep_token_ids: bool,
        scheduled: Instant,
    ) -> Self {
        Self {
            mode,
            source,
            ids_known: true,
            max_tokens: u64::from(max_tokens),
            keep_token_ids,
            scheduled,
            observed: 0,
            usage: None,
            last_arrival: None,
        }
    }

    /// One chunk arrived at `now`. Errors: [`RequestErrorKind::NoTokenIds`] for text
    /// without the tokens the mode counts (ids, or logprob tokens),
    /// [`RequestErrorKind::LongOutput`] as soon as more tokens than asked arrived (which
    /// also bounds what is kept). A chunk with no token (a finish-only chunk) counts none.
    fn chunk(
        &mut self,
        chunk: Chunk,
        now: Instant,
        sample: &mut RequestSample,
    ) -> Result<(), RequestErrorKind> {
        if let Some(tokens) = chunk.completion_tokens {
            self.usage = Some(tokens);
        }
        let has_text = chunk.has_text();
        let ids = match self.source {
            TokenIds::Array => chunk.token_ids,
            TokenIds::TokenIdStrings => chunk
                .logprob_tokens
                .as_ref()
                .and_then(|tokens| tokens.iter().copied().collect::<Option<Vec<u32>>>()),
            TokenIds::Tokenizer | TokenIds::None => None,
        };
        // The tokens this chunk carries, as the mode counts them.
        let counted = match self.mode {
            TokenCount::Ids => ids.as_ref().map(Vec::len),
            TokenCount::Logprobs => chunk.logprob_tokens.as_ref().map(Vec::len),
            TokenCount::Usage => None,
        };
        if self.mode != TokenCount::Usage && counted.is_none() && has_text {
            return Err(RequestErrorKind::NoTokenIds);
        }
        let counted = counted.unwrap_or(0);
        self.observed += counted as u64;
        if self.mode != TokenCount::Usage {
            sample.output_tokens = self.observed;
            // Before anything is recorded: bounds the gaps and ids a request holds.
            if self.observed > self.max_tokens {
                return Err(RequestErrorKind::LongOutput);
            }
        }
        // Tokens that arrived with this chunk; in usage mode one per chunk with text or
        // ids, since only the arrival is timed there.
        let arrived = match self.mode {
            TokenCount::Ids | TokenCount::Logprobs => counted,
            TokenCount::Usage => {
                usize::from(has_text || ids.as_ref().is_some_and(|i| !i.is_empty()))
            }
        };
        if arrived > 0 {
            match self.last_arrival {
                None => sample.ttft_ns = Some(nanos(now - self.scheduled)),
                Some(previous) => sample.itl_ns.push(nanos(now - previous)),
            }
            sample.itl_ns.extend(std::iter::repeat_n(0, arrived - 1));
            self.last_arrival = Some(now);
        }
        if self.keep_token_ids {
            // Bounded by the response budget, as the stream that carried it.
            sample.text.push_str(&chunk.text);
            match ids {
                Some(ids)
                    if self.ids_known
                        && (self.mode == TokenCount::Usage || ids.len() == counted) =>
                {
                    // At most `max_tokens` are kept, whatever the server streams.
                    let room = usize::try_from(self.max_tokens)
                        .unwrap_or(usize::MAX)
                        .saturating_sub(sample.token_ids.len());
                    sample
                        .token_ids
                        .extend_from_slice(&ids[..ids.len().min(room)]);
                }
                _ if counted > 0 || has_text => {
                    // A token without its id: the ids kept would not be the output.
                    self.ids_known = false;
                    sample.token_ids.clear();
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The stream ended with `[DONE]`: sets the sample's output tokens. Errors:
    /// [`RequestErrorKind::UsageMismatch`] when a reported usage disagrees with the ids
    /// observed (ids mode); [`RequestErrorKind::MissingUsage`] when none was reported
    /// (usage mode).
    fn finish(&self, sample: &mut RequestSample) -> Result<(), RequestErrorKind> {
        match self.mode {
            TokenCount::Ids | TokenCount::Logprobs => {
                sample.output_tokens = self.observed;
                match self.usage {
                    Some(reported) if reported != self.observed => {
                        Err(RequestErrorKind::UsageMismatch)
                    }
                    _ => Ok(()),
                }
            }
            TokenCount::Usage => {
                sample.output_tokens = self.usage.ok_or(RequestErrorKind::MissingUsage)?;
                Ok(())
            }
        }
    }
}

/// Counts the output tokens of a whole completions stream `body` (the bytes of one
/// `text/event-stream` response to a request of `max_tokens` tokens) exactly as a probe's
/// request counts them under `api`'s `token_count` and `token_ids`: the capability probe
/// of a round asks the baseline so (content/engines.md). Returns the sample with
/// `max_tokens`, the `output_tokens` counted, the token ids seen (at most `max_tokens`)
/// and `error` set as a probe would set it: `None` only for exactly `max_tokens` tokens
/// and a reported usage that agrees ([`RequestSample::failure`] says why otherwise) —
/// with the last `usage.completion_tokens` the stream reported, if any.
pub fn count_stream(
    body: &[u8],
    api: &ApiProfile,
    max_tokens: u32,
) -> (RequestSample, Option<u64>) {
    let now = Instant::now();
    let mut sample = RequestSample {
        max_tokens,
        ..RequestSample::default()
    };
    let mut count = TokenCounter::new((api.token_count, api.token_ids), max_tokens, true, now);
    let mut parser = SseParser::default();
    let mut events = Vec::new();
    let counted = (|| {
        let fed = parser.feed(body, &mut events);
        let mut done = false;
        for event in events.drain(..) {
            match event {
                SseEvent::Chunk(chunk) => count.chunk(chunk, now, &mut sample)?,
                SseEvent::Done => done = true,
            }
        }
        fed.map_err(stream_error)?;
        if !done {
            return Err(RequestErrorKind::ConnectionClosed);
        }
        count.finish(&mut sample)
    })();
    sample.error = match counted {
        Ok(()) => match sample.output_tokens.cmp(&u64::from(max_tokens)) {
            std::cmp::Ordering::Equal => None,
            std::cmp::Ordering::Less => Some(RequestErrorKind::ShortOutput),
            std::cmp::Ordering::Greater => Some(RequestErrorKind::LongOutput),
        },
        Err(kind) => Some(kind),
    };
    (sample, count.usage)
}

/// Maps a client error before the response to a kind.
fn classify(error: &hyper_util::client::legacy::Error) -> RequestErrorKind {
    if error.is_connect() {
        return RequestErrorKind::Connect;
    }
    match std::error::Error::source(error).and_then(|e| e.downcast_ref::<hyper::Error>()) {
        Some(e) => classify_hyper(e),
        None => RequestErrorKind::ConnectionClosed,
    }
}

/// Maps a protocol error (response head or body) to a kind: a malformed response is a
/// bad body, anything else (reset, early close) a closed connection.
fn classify_hyper(error: &hyper::Error) -> RequestErrorKind {
    if error.is_parse() || error.is_parse_status() || error.is_parse_too_large() {
        RequestErrorKind::BadBody
    } else {
        RequestErrorKind::ConnectionClosed
    }
}

/// Where a probe sits in the search and what it is judged against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeContext {
    /// Run number.
    pub run: u32,
    /// Probe number within the run.
    pub probe: u32,
    /// Workload sub-stream.
    pub sub_stream: u32,
    /// Target rate, milli-requests/s.
    pub rate_milli_rps: u64,
    /// The SLA.
    pub sla: Sla,
    /// Send-lag p99 bound, µs.
    pub send_lag_bound_us: u64,
    /// How the probe's output tokens were counted (recorded on the probe).
    pub token_count: TokenCount,
}

/// Builds a probe's record from its samples (content/measurement.md, Probe): histograms in µs of
/// the measured requests (latencies of completed ones only), the SLA percentile with
/// failed requests ranked last, the over-bound count (failed requests plus completed ones
/// whose bucket exceeds the bound, see [`over_bound_count`]), send-lag p50/p99, the
/// verdict, the duration (last completion − first scheduled send, truncated to µs) and the
/// throughput [`probe_throughput_milli_rps`] of the completed count over that duration.
///
/// Errors: [`LoadError::Histogram`] if a histogram cannot be encoded.
pub fn summarize_probe(
    context: &ProbeContext,
    samples: &[RequestSample],
) -> Result<ProbeRecord, LoadError> {
    let mut e2e = new_latency_histogram();
    let mut ttft = new_latency_histogram();
    let mut tpot = new_latency_histogram();
    let mut itl = new_latency_histogram();
    let mut send_lag = new_latency_histogram();
    let mut errors = ErrorCounts::default();
    let (mut requests, mut completed) = (0u32, 0u32);
    let (mut input_bytes, mut output_tokens) = (0u64, 0u64);
    let mut first_scheduled_ns = u64::MAX;
    let mut last_completion_ns = 0u64;
    for sample in samples.iter().filter(|s| !s.warmup) {
        requests += 1;
        input_bytes += sample.input_bytes;
        output_tokens += sample.output_tokens;
        first_scheduled_ns = first_scheduled_ns.min(sample.scheduled_ns);
        send_lag.saturating_record(sample.send_lag_ns / 1000);
        if let Some(kind) = sample.error {
            count_error(&mut errors, kind);
            continue;
        }
        completed += 1;
        last_completion_ns = last_completion_ns.max(sample.scheduled_ns + sample.e2e_ns);
        let e2e_ns = sample.e2e_ns;
        let ttft_ns = sample.ttft_ns.unwrap_or(e2e_ns);
        e2e.saturating_record(e2e_ns / 1000);
        ttft.saturating_record(ttft_ns / 1000);
        let tpot_ns = match sample.output_tokens {
            0 | 1 => 0,
            n => (e2e_ns - ttft_ns.min(e2e_ns)) / (n - 1),
        };
        tpot.saturating_record(tpot_ns / 1000);
        for gap in &sample.itl_ns {
            itl.saturating_record(gap / 1000);
        }
    }
    let failed = u64::from(requests - completed);
    let sla_histogram = match context.sla.latency {
        LatencyKind::E2e => &e2e,
        LatencyKind::Ttft => &ttft,
        LatencyKind::Tpot => &tpot,
    };
    let over_bound = failed + over_bound_count(sla_histogram, context.sla.bound_us());
    let p50 = receipts::model::Percentile::from_permille(500).ok();
    let p99 = receipts::model::Percentile::from_permille(990).ok();
    let lag_at = |p: Option<receipts::model::Percentile>| {
        p.and_then(|p| nearest_rank_value(&send_lag, p, 0))
            .unwrap_or(0)
    };
    let send_lag_p50_us = lag_at(p50);
    let send_lag_p99_us = lag_at(p99);
    // Truncated to the µs the log records, so the throughput follows from the log alone.
    let duration_us = last_completion_ns.saturating_sub(first_scheduled_ns) / 1000;
    let throughput_milli_rps = probe_throughput_milli_rps(completed, duration_us);
    Ok(ProbeRecord {
        run: context.run,
        probe: context.probe,
        sub_stream: context.sub_stream,
        rate_milli_rps: context.rate_milli_rps,
        warmup_requests: samples.iter().filter(|s| s.warmup).count() as u32,
        requests,
        completed,
        over_bound: over_bound as u32,
        percentile_us: nearest_rank_value(sla_histogram, context.sla.percentile, failed),
        // Shown to readers only; past 20 over-bound requests it is far off and costly.
        required_requests: (over_bound <= 20)
            .then(|| required_requests(over_bound, context.sla.percentile))
            .flatten(),
        send_lag_p50_us,
        send_lag_p99_us,
        send_lag_bound_us: context.send_lag_bound_us,
        verdict: verdict(
            u64::from(requests),
            over_bound,
            context.sla.percentile,
            send_lag_p99_us,
            context.send_lag_bound_us,
        ),
        throughput_milli_rps,
        duration_us,
        input_bytes,
        output_tokens,
        token_count: Some(context.token_count),
        errors,
        histograms: ProbeHistograms {
            e2e: encode_histogram(&e2e)?,
            ttft: encode_histogram(&ttft)?,
            tpot: encode_histogram(&tpot)?,
            itl: encode_histogram(&itl)?,
            send_lag: encode_histogram(&send_lag)?,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::model::Sha256Hex;

    /// A whole stream counted as a probe's request is: a finish-only chunk is no token,
    /// the length must be the one asked, and a reported usage must agree.
    #[test]
    fn count_stream_counts_as_a_probe_does() {
        let api = ApiProfile::default();
        let stream = |ids: &[&str], usage: Option<u64>| {
            let mut text = String::new();
            for id in ids {
                text.push_str(&format!(
                    "data: {{\"choices\":[{{\"text\":\"x\",\"token_ids\":[{id}]}}]}}\n\n"
                ));
            }
            text.push_str("data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}]}\n\n");
            if let Some(n) = usage {
                text.push_str(&format!(
                    "data: {{\"choices\":[],\"usage\":{{\"completion_tokens\":{n}}}}}\n\n"
                ));
            }
            text.push_str("data: [DONE]\n\n");
            text
        };
        let (sample, usage) = count_stream(stream(&["5", "6", "7"], Some(3)).as_bytes(), &api, 3);
        assert_eq!(
            (sample.error, sample.output_tokens, usage),
            (None, 3, Some(3))
        );
        assert_eq!(sample.token_ids, vec![5, 6, 7]);
        let (short, _) = count_stream(stream(&["5", "6"], None).as_bytes(), &api, 3);
        assert_eq!(
            short.failure().as_deref(),
            Some("wrong length: got 2, asked 3")
        );
        let (disagrees, usage) =
            count_stream(stream(&["5", "6", "7"], Some(4)).as_bytes(), &api, 3);
        assert_eq!(
            (disagrees.error, usage),
            (Some(RequestErrorKind::UsageMismatch), Some(4))
        );
        let (cut, _) = count_stream(
            b"data: {\"choices\":[{\"text\":\"x\",\"token_ids\":[1]}]}\n\n",
            &api,
            1,
        );
        assert_eq!(cut.error, Some(RequestErrorKind::ConnectionClosed));
    }

    fn items(count: u32) -> Vec<Item> {
        (0..count)
            .map(|i| Item {
                item_index: i,
                prompt: "p".into(),
                prompt_sha256: Sha256Hex::digest(b"p"),
                max_tokens: 1,
                arrival_unit_ns: u64::from(i) * receipts::rules::workload::UNIT_GAP_NS,
            })
            .collect()
    }

    #[test]
    fn plan_meets_both_minimums() {
        // 10 req/s: 2 warm-up, then ≥ 5 requests and ≥ 1 s between the first and last
        // measured sends: measured offsets 0.2 s … 1.2 s, 11 requests.
        let plan = ProbePlan::new(items(100), 10_000, 2, 5, 1_000, 50);
        assert_eq!(plan.requests.len(), 13);
        assert_eq!(plan.measured(), 11);
        assert_eq!(plan.requests[2].scheduled_ns, 200_000_000);
        assert_eq!(plan.requests[12].scheduled_ns, 1_200_000_000);
        assert!(plan.requests[..2].iter().all(|r| r.warmup));
        // The request minimum dominates at a high rate.
        let plan = ProbePlan::new(items(100), 1_000_000, 0, 30, 10, 50);
        assert_eq!(plan.measured(), 30);
        // A sub-stream too short for the minimums is used whole.
        let plan = ProbePlan::new(items(8), 1_000, 3, 30, 0, 50);
        assert_eq!((plan.requests.len(), plan.measured()), (8, 5));
    }

    #[test]
    fn request_body_fixes_the_output_length() {
        let body = request_body("m", &items(1)[0], &ApiProfile::default());
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            value,
            serde_json::json!({
                "model": "m", "prompt": "p", "max_tokens": 1, "min_tokens": 1,
                "ignore_eos": true, "temperature": 0, "stream": true,
                "stream_options": {"include_usage": true}, "return_token_ids": true
            })
        );
    }

    #[test]
    fn probe_throughput_is_recomputable_from_the_recorded_fields() {
        // 3 completed, the last 1 000 000 999 ns after the first scheduled send: the log
        // records 1 000 000 µs, and the throughput is 3 000 milli-req/s, the figure those
        // fields give (the nanoseconds would give 2 999).
        let samples: Vec<RequestSample> =
            [(0, 1_000), (400_000_000, 1_000), (999_000_000, 1_000_999)]
                .into_iter()
                .map(|(scheduled_ns, e2e_ns)| RequestSample {
                    scheduled_ns,
                    e2e_ns,
                    max_tokens: 1,
                    output_tokens: 1,
                    ..RequestSample::default()
                })
                .collect();
        let context = ProbeContext {
            run: 0,
            probe: 0,
            sub_stream: 0,
            rate_milli_rps: 3_000,
            sla: "p50:e2e:10ms".parse::<Sla>().unwrap(),
            send_lag_bound_us: 2_000,
            token_count: TokenCount::Ids,
        };
        let record = summarize_probe(&context, &samples).unwrap();
        assert_eq!((record.completed, record.duration_us), (3, 1_000_000));
        assert_eq!(record.throughput_milli_rps, 3_000);
        assert_eq!(
            record.throughput_milli_rps,
            probe_throughput_milli_rps(record.completed, record.duration_us)
        );
    }
}
