//! The HTTP server (axum): `GET /health`, `GET /v1/models`, `POST /v1/completions`,
//! `POST /detokenize` (vLLM's route: the text of token ids), and `POST
//! /internal/v1/decide` as a decision sidecar ([`crate::decide`]), in front of the engine
//! thread ([`crate::scheduler`]).
//!
//! [`spawn`] is the in-process entry point (tests, the load generator's tests, the CLI):
//! it checks memory ([`crate::memory`]), binds, starts the engine thread and returns at
//! once; [`spawn_on`] does the same on a listening socket bound by someone else (the
//! runner passes one as fd 3, systemd's socket activation: [`listener_from_fd`]); `/health` answers 503 until the weights are drawn and `startup_delay_ms` has
//! passed, then 200. Completions answer 503 while starting, 400 for bad requests (the
//! server keeps serving), and stream as server-sent events (`data: {…}\n\n` per chunk,
//! then `data: [DONE]`) when the request sets `stream`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::stream::{self, Stream};
use serde_json::json;
use tokio::sync::{mpsc, oneshot, watch};

use crate::api::{ApiError, ChunkKind, CompletionRequest, ResponseBuilder};
use crate::config::EngineConfig;
use crate::memory::{self, OutOfMemory};
use crate::scheduler::{self, EngineHandle, Event};

/// How to serve, beyond the engine config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeOptions {
    /// The model name `/v1/models` lists and responses carry (vLLM's
    /// `--served-model-name`); requests may name any model.
    pub served_model_name: String,
    /// Device memory limit in MiB for the start-up check ([`crate::memory`]).
    pub memory_limit_mb: u64,
    /// Also serve `POST /internal/v1/decide` as a decision sidecar ([`crate::decide`]).
    pub decide: Option<crate::decide::DecideOptions>,
}

impl Default for ServeOptions {
    /// `referee-builtin`, 80 GiB.
    fn default() -> Self {
        Self {
            served_model_name: "referee-builtin".into(),
            memory_limit_mb: 81_920,
            decide: None,
        }
    }
}

/// Why the server did not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The config does not fit in the memory limit; the message says what and by how much.
    #[error(transparent)]
    OutOfMemory(#[from] OutOfMemory),
    /// The address could not be bound.
    #[error("binding `{addr}`")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The engine thread or its compute pool could not be started.
    #[error("starting the engine thread")]
    Thread(#[source] std::io::Error),
    /// The listening socket could not be used (made non-blocking, registered with the
    /// runtime, or asked its address).
    #[error("using the listening socket")]
    Listener(#[source] std::io::Error),
    /// An inherited file descriptor is not a listening TCP socket.
    #[error("file descriptor {fd} is not a listening TCP socket")]
    Inherited {
        /// The descriptor.
        fd: i32,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// The listening TCP socket this process inherited as `fd` (e.g. 3 under socket
/// activation: `LISTEN_FDS=1`).
///
/// Errors: [`ServeError::Inherited`] when `fd` is not an open TCP socket.
///
/// # Safety
/// `fd` must be owned by nothing else in this process: the listener returned owns it and
/// closes it when dropped (an inherited descriptor that no code opened qualifies).
pub unsafe fn listener_from_fd(fd: i32) -> Result<std::net::TcpListener, ServeError> {
    use std::os::fd::FromRawFd;
    // SAFETY: the caller hands over ownership of `fd` (this function's contract).
    let listener = unsafe { std::net::TcpListener::from_raw_fd(fd) };
    // getsockname fails on a closed descriptor and on anything but a socket.
    listener
        .local_addr()
        .map_err(|source| ServeError::Inherited { fd, source })?;
    Ok(listener)
}

/// A running server; dropping it without [`ServerHandle::shutdown`] leaves it running
/// until the runtime stops.
#[derive(Debug)]
pub struct ServerHandle {
    local_addr: SocketAddr,
    ready: watch::Receiver<bool>,
    shutdown: oneshot::Sender<()>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    engine: std::thread::JoinHandle<()>,
}

impl ServerHandle {
    /// The bound address (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Resolves once `/health` answers 200.
    pub async fn wait_ready(&self) {
        let mut ready = self.ready.clone();
        // An error means the engine thread died before being ready; nothing to wait for.
        let _ = ready.wait_for(|&r| r).await;
    }

    /// Stops accepting connections, lets open requests finish, and waits for the engine
    /// thread to exit. Errors: the server's accept loop failed.
    pub async fn shutdown(self) -> std::io::Result<()> {
        let _ = self.shutdown.send(());
        let served = self.server.await.map_err(std::io::Error::other)?;
        tracing::debug!("HTTP server stopped; waiting for the engine thread");
        let engine = self.engine;
        tokio::task::spawn_blocking(move || engine.join())
            .await
            .map_err(std::io::Error::other)?
            .map_err(|_| std::io::Error::other("the engine thread panicked"))?;
        tracing::debug!("engine thread stopped");
        served
    }
}

/// Checks memory, binds `addr`, starts the engine thread and serves on the current tokio
/// runtime. Errors: [`ServeError`].
pub async fn spawn(
    config: EngineConfig,
    addr: SocketAddr,
    options: ServeOptions,
) -> Result<ServerHandle, ServeError> {
    memory::check(&config, options.memory_limit_mb)?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    serve(config, listener, options)
}

/// As [`spawn`], on `listener`, already bound and listening (the runner's, inherited:
/// [`listener_from_fd`]). Errors: [`ServeError`]; [`ServeError::Listener`] when
/// `listener` cannot be used by the runtime.
pub async fn spawn_on(
    config: EngineConfig,
    listener: std::net::TcpListener,
    options: ServeOptions,
) -> Result<ServerHandle, ServeError> {
    memory::check(&config, options.memory_limit_mb)?;
    listener
        .set_nonblocking(true)
        .map_err(ServeError::Listener)?;
    let listener = tokio::net::TcpListener::from_std(listener).map_err(ServeError::Listener)?;
    serve(config, listener, options)
}

/// Starts the engine thread and serves on `listener`.
fn serve(
    config: EngineConfig,
    listener: tokio::net::TcpListener,
    options: ServeOptions,
) -> Result<ServerHandle, ServeError> {
    let local_addr = listener.local_addr().map_err(ServeError::Listener)?;
    let (ready_tx, ready) = watch::channel(false);
    let (engine, engine_thread) =
        scheduler::start(&config, ready_tx).map_err(ServeError::Thread)?;
    let state = Arc::new(AppState {
        engine,
        ready: ready.clone(),
        model: options.served_model_name,
        context: config.context,
        next_id: AtomicU64::new(0),
        decide: options.decide,
    });
    let app = Router::new()
        .route("/health", get(health))
        .route("/v1/models", get(models))
        .route("/v1/completions", post(completions))
        .route("/internal/v1/decide", post(crate::decide::handle))
        .route("/detokenize", post(detokenize))
        .with_state(state);
    let (shutdown, shutdown_rx) = oneshot::channel();
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = shutdown_rx.await;
            })
            .await
    });
    Ok(ServerHandle {
        local_addr,
        ready,
        shutdown,
        server,
        engine: engine_thread,
    })
}

/// What every handler shares.
pub(crate) struct AppState {
    pub(crate) engine: EngineHandle,
    ready: watch::Receiver<bool>,
    model: String,
    pub(crate) context: usize,
    next_id: AtomicU64,
    /// The sidecar's decisions and token, when serving as one.
    pub(crate) decide: Option<crate::decide::DecideOptions>,
}

impl AppState {
    pub(crate) fn is_ready(&self) -> bool {
        *self.ready.borrow()
    }
}

async fn health(State(state): State<Arc<AppState>>) -> StatusCode {
    if state.is_ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    }
}

async fn models(State(state): State<Arc<AppState>>) -> Response {
    axum::Json(json!({
        "object": "list",
        "data": [{
            "id": state.model,
            "object": "model",
            "created": unix_seconds(),
            "owned_by": "referee",
            "root": state.model,
            "parent": null,
            "max_model_len": state.context,
        }],
    }))
    .into_response()
}

async fn completions(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(rejection) => {
            let status = rejection.status().as_u16();
            let message = format!(
                "the request body could not be read: {}",
                rejection.body_text()
            );
            return error_response(&ApiError {
                status,
                message,
                param: None,
            });
        }
    };
    match start_completion(&state, &body) {
        Ok((request, events)) => {
            let id = format!(
                "cmpl-{:016x}",
                state.next_id.fetch_add(1, Ordering::Relaxed)
            );
            let builder = ResponseBuilder::new(request, id, unix_seconds(), state.model.clone());
            if builder.request().stream {
                Sse::new(completion_stream(builder, events)).into_response()
            } else {
                whole_completion(builder, events).await
            }
        }
        Err(err) => error_response(&err),
    }
}

/// `POST /detokenize` ([`crate::api::detokenize`]).
async fn detokenize(body: Bytes) -> Response {
    match crate::api::detokenize(&body) {
        Ok(answer) => axum::Json(answer).into_response(),
        Err(err) => error_response(&err),
    }
}

fn start_completion(
    state: &AppState,
    body: &[u8],
) -> Result<(CompletionRequest, mpsc::UnboundedReceiver<Event>), ApiError> {
    if !state.is_ready() {
        return Err(ApiError {
            status: 503,
            message: "the engine is starting".into(),
            param: None,
        });
    }
    let request = CompletionRequest::parse(body, state.context)?;
    let (events_tx, events) = mpsc::unbounded_channel();
    state
        .engine
        .submit(request.generation.clone(), events_tx)
        .map_err(|err| ApiError {
            status: 500,
            message: err.to_string(),
            param: None,
        })?;
    Ok((request, events))
}

async fn whole_completion(
    mut builder: ResponseBuilder,
    mut events: mpsc::UnboundedReceiver<Event>,
) -> Response {
    while !builder.finished() {
        match events.recv().await {
            Some(event) => builder.push(event),
            None => return error_response(&engine_gone()),
        }
    }
    axum::Json(builder.body()).into_response()
}

/// One SSE chunk per event (module docs), then the usage chunk if asked, then `[DONE]`.
fn completion_stream(
    builder: ResponseBuilder,
    events: mpsc::UnboundedReceiver<Event>,
) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    struct Streaming {
        builder: ResponseBuilder,
        events: mpsc::UnboundedReceiver<Event>,
        prompt_sent: bool,
        pending: Vec<String>,
        done: bool,
    }
    let state = Streaming {
        builder,
        events,
        prompt_sent: false,
        pending: Vec::new(),
        done: false,
    };
    stream::unfold(state, |mut s| async move {
        loop {
            if !s.pending.is_empty() {
                let data = s.pending.remove(0);
                return Some((Ok(SseEvent::default().data(data)), s));
            }
            if s.done {
                return None;
            }
            if s.builder.finished() {
                if s.builder.request().include_usage {
                    s.pending.push(s.builder.usage_chunk().to_string());
                }
                s.pending.push("[DONE]".into());
                s.done = true;
                continue;
            }
            let Some(event) = s.events.recv().await else {
                s.pending.push(engine_gone().body().to_string());
                s.pending.push("[DONE]".into());
                s.done = true;
                continue;
            };
            let kind = match event {
                Event::PromptLogprobs(_) => ChunkKind::Prompt,
                Event::Token { .. } => ChunkKind::Token,
                Event::Finished(_) => ChunkKind::Finished,
            };
            s.builder.push(event);
            if !s.prompt_sent {
                s.prompt_sent = true;
                if let Some(chunk) = s.builder.chunk_for_last(ChunkKind::Prompt) {
                    s.pending.push(chunk.to_string());
                }
            }
            if kind != ChunkKind::Prompt
                && let Some(chunk) = s.builder.chunk_for_last(kind)
            {
                s.pending.push(chunk.to_string());
            }
        }
    })
}

fn engine_gone() -> ApiError {
    ApiError {
        status: 500,
        message: "the engine thread stopped".into(),
        param: None,
    }
}

fn error_response(err: &ApiError) -> Response {
    let status = StatusCode::from_u16(err.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, axum::Json(err.body())).into_response()
}

fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn small_config() -> EngineConfig {
        EngineConfig {
            layers: 1,
            d_model: 64,
            heads: 2,
            context: 128,
            kv_cache_budget_mb: 8,
            ..EngineConfig::default()
        }
    }

    /// The server answers on a socket someone else bound (the runner's, inherited).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn serves_on_a_listener_bound_elsewhere() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let handle = spawn_on(small_config(), listener, ServeOptions::default())
            .await
            .unwrap();
        assert_eq!(handle.local_addr(), addr);
        handle.wait_ready().await;
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await.unwrap();
        assert!(response.starts_with(b"HTTP/1.1 200 OK\r\n"), "{response:?}");
        handle.shutdown().await.unwrap();
    }

    /// A descriptor that is not a socket is refused, naming it.
    #[test]
    fn a_non_socket_descriptor_is_refused() {
        use std::os::fd::IntoRawFd;
        let fd = std::fs::File::open("/dev/null").unwrap().into_raw_fd();
        // SAFETY: `fd` was just opened here and is owned by nothing else.
        let err = unsafe { listener_from_fd(fd) }.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("file descriptor {fd} is not a listening TCP socket")
        );
    }
}
