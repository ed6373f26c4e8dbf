//! The null server of the client's self-test and benchmark (content/measurement.md, Open
//! loop): an OpenAI-compatible `/v1/completions` endpoint on 127.0.0.1 with no model
//! behind it. It reads a request's `max_tokens`, holds the response for a fixed time (the
//! SLA bound: requests in flight then reach rate × bound, as in an overloaded probe), then
//! streams one SSE chunk per token, each carrying `token_ids` as an engine's do, a usage
//! chunk and `data: [DONE]`, chunked like a real engine's stream. It runs on its own
//! runtime in the caller's process, so it competes with the client for the cores but
//! never runs on the client's worker threads.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

use crate::LoadError;

/// One token's chunk, as an engine streams it with token ids.
const TOKEN_CHUNK: &[u8] = b"data: {\"choices\":[{\"text\":\"x\",\"token_ids\":[7]}]}\n\n";
/// The end of every stream.
const DONE_CHUNK: &[u8] = b"data: [DONE]\n\n";
/// Largest request body read, bytes (prompts are a few KiB).
const MAX_REQUEST_BYTES: usize = 1 << 20;

/// How the null server answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NullServerConfig {
    /// Each response is held this long before its headers and first token, ms.
    pub hold_ms: u64,
    /// Gap between consecutive tokens, µs; 0 streams every token in one write.
    pub token_gap_us: u64,
    /// Worker threads of the server's own runtime (at least 1).
    pub threads: usize,
}

/// What the server counted since it started.
#[derive(Debug, Default)]
struct Counters {
    connections: AtomicU64,
    requests: AtomicU64,
}

/// A running null server; stops when dropped.
#[derive(Debug)]
pub struct NullServer {
    runtime: Option<tokio::runtime::Runtime>,
    address: SocketAddr,
    counters: Arc<Counters>,
}

impl NullServer {
    /// Binds 127.0.0.1 on a free port and starts serving on a runtime of its own.
    ///
    /// Errors: [`LoadError::Runtime`] (`what` = `null server`) when the runtime cannot
    /// start or the socket cannot be bound.
    pub fn start(config: NullServerConfig) -> Result<Self, LoadError> {
        let failed = |source| LoadError::Runtime {
            what: "null server",
            source,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.threads.max(1))
            .thread_name("referee-null-server")
            .enable_all()
            .build()
            .map_err(failed)?;
        // Bound here, registered on the server's runtime (blocking on it from inside the
        // caller's runtime would panic).
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).map_err(failed)?;
        listener.set_nonblocking(true).map_err(failed)?;
        let address = listener.local_addr().map_err(failed)?;
        let listener = {
            let _context = runtime.enter();
            tokio::net::TcpListener::from_std(listener).map_err(failed)?
        };
        let counters = Arc::new(Counters::default());
        runtime.spawn(accept_loop(listener, config, Arc::clone(&counters)));
        Ok(Self {
            runtime: Some(runtime),
            address,
            counters,
        })
    }

    /// The base URL to target, `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// TCP connections accepted so far: about the client's peak in flight when it reuses
    /// its connections, one per request when it does not.
    pub fn connections(&self) -> u64 {
        self.counters.connections.load(Ordering::Relaxed)
    }

    /// Requests answered (or being answered) so far.
    pub fn requests(&self) -> u64 {
        self.counters.requests.load(Ordering::Relaxed)
    }
}

impl Drop for NullServer {
    fn drop(&mut self) {
        // Never blocks, and may run inside another runtime's context.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    config: NullServerConfig,
    counters: Arc<Counters>,
) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of descriptors, most likely: let the clients' timeouts free some
                // instead of spinning.
                tokio::time::sleep(Duration::from_millis(1)).await;
                continue;
            }
        };
        counters.connections.fetch_add(1, Ordering::Relaxed);
        let _ = stream.set_nodelay(true);
        let counters = Arc::clone(&counters);
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                counters.requests.fetch_add(1, Ordering::Relaxed);
                answer(request, config)
            });
            // A client that goes away mid-stream is the client's business.
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// The `max_tokens` of a completions request.
#[derive(serde::Deserialize)]
struct Completion {
    max_tokens: u32,
}

async fn answer(
    request: Request<Incoming>,
    config: NullServerConfig,
) -> Result<Response<TokenStream>, Infallible> {
    let bad = |status| {
        let mut response = Response::new(TokenStream::empty());
        *response.status_mut() = status;
        Ok(response)
    };
    if request.uri().path() != "/v1/completions" {
        return bad(StatusCode::NOT_FOUND);
    }
    let body = http_body_util::Limited::new(request.into_body(), MAX_REQUEST_BYTES);
    let Ok(body) = body.collect().await else {
        return bad(StatusCode::BAD_REQUEST);
    };
    let Ok(completion) = serde_json::from_slice::<Completion>(&body.to_bytes()) else {
        return bad(StatusCode::BAD_REQUEST);
    };
    tokio::time::sleep(Duration::from_millis(config.hold_ms)).await;
    let mut response = Response::new(TokenStream::new(
        completion.max_tokens,
        Duration::from_micros(config.token_gap_us),
    ));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    Ok(response)
}

/// A streamed completion: `tokens` token chunks `gap` apart, then usage and `[DONE]`.
struct TokenStream {
    left: u32,
    total: u32,
    gap: Duration,
    /// The wait before the next token; `None` when it is due.
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    ended: bool,
}

impl TokenStream {
    fn new(tokens: u32, gap: Duration) -> Self {
        Self {
            left: tokens,
            total: tokens,
            gap,
            sleep: None,
            ended: false,
        }
    }

    fn empty() -> Self {
        Self {
            ended: true,
            ..Self::new(0, Duration::ZERO)
        }
    }

    /// Usage and `[DONE]`: the stream's last frame.
    fn tail(&self) -> Bytes {
        let usage = format!(
            "data: {{\"choices\":[],\"usage\":{{\"completion_tokens\":{}}}}}\n\n",
            self.total
        );
        let mut tail = Vec::with_capacity(usage.len() + DONE_CHUNK.len());
        tail.extend_from_slice(usage.as_bytes());
        tail.extend_from_slice(DONE_CHUNK);
        Bytes::from(tail)
    }
}

impl Body for TokenStream {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        if this.ended {
            return Poll::Ready(None);
        }
        if let Some(sleep) = &mut this.sleep {
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.sleep = None;
        }
        if this.left == 0 {
            this.ended = true;
            return Poll::Ready(Some(Ok(Frame::data(this.tail()))));
        }
        if this.gap.is_zero() {
            // Every token in one write (each still its own event).
            let mut all = TOKEN_CHUNK.repeat(this.left as usize);
            this.left = 0;
            all.extend_from_slice(&this.tail());
            this.ended = true;
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from(all)))));
        }
        this.left -= 1;
        if this.left > 0 {
            this.sleep = Some(Box::pin(tokio::time::sleep(this.gap)));
        }
        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(TOKEN_CHUNK)))))
    }

    fn is_end_stream(&self) -> bool {
        self.ended
    }
}
