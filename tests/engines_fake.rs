//! `referee bench serve` against scripted fake servers, one per behaviour of real engines
//! (content/engines.md): llama-cpp-python's text-keyed logprobs with a finish-only last
//! chunk (counted under its profile, refused as `noTokenIds` under the default one), a
//! server that overshoots `max_tokens` (wrong length), and one that sends no `usage`
//! (required under `token_count = "usage"`). Exact counts from the probe record the
//! binary writes.

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use receipts::model::ProbeRecord;

/// Every request body received.
type Bodies = Arc<Mutex<Vec<serde_json::Value>>>;

/// One streamed token: llama-cpp-python's chunk with text and text-keyed logprobs.
fn text_token(i: u64) -> String {
    format!(
        "data: {{\"choices\":[{{\"text\":\" w{i}\",\"index\":0,\"logprobs\":{{\"tokens\":[\" w{i}\"],\"token_logprobs\":[-0.5],\"top_logprobs\":[{{\" w{i}\":-0.5}}],\"text_offset\":[{i}]}},\"finish_reason\":null}}]}}\n\n"
    )
}

/// The model name picks the behaviour:
/// - `llama-cpp-python`: one text-keyed logprob chunk per token, then a finish-only
///   chunk (`text: ""`, `logprobs: null`), no usage;
/// - `overshoot`: the same, one token more than asked;
/// - `no-usage`: vLLM-style `token_ids` chunks without a usage chunk.
async fn completions(State(bodies): State<Bodies>, body: Bytes) -> Response {
    let request: serde_json::Value = serde_json::from_slice(&body).unwrap();
    bodies.lock().unwrap().push(request.clone());
    let asked = request["max_tokens"].as_u64().unwrap();
    let mut text = String::new();
    match request["model"].as_str().unwrap() {
        "llama-cpp-python" | "overshoot" => {
            let n = if request["model"] == "overshoot" {
                asked + 1
            } else {
                asked
            };
            (0..n).for_each(|i| text.push_str(&text_token(i)));
            text.push_str("data: {\"choices\":[{\"text\":\"\",\"index\":0,\"logprobs\":null,\"finish_reason\":\"length\"}]}\n\n");
        }
        "no-usage" => (0..asked).for_each(|i| {
            text.push_str(&format!(
                "data: {{\"choices\":[{{\"text\":\"x\",\"token_ids\":[{}]}}]}}\n\n",
                10 + i
            ))
        }),
        other => panic!("no behaviour {other}"),
    }
    text.push_str("data: [DONE]\n\n");
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from(text))
        .unwrap()
}

/// A fake server on 127.0.0.1 on its own runtime thread; returns its URL and the bodies.
fn serve() -> (String, Bodies) {
    let bodies = Bodies::default();
    let app = Router::new()
        .route("/v1/completions", post(completions))
        .with_state(Arc::clone(&bodies));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    (format!("http://{}", rx.recv().unwrap()), bodies)
}

/// A workload of 6 measured requests (plus one warm-up) of 4 output tokens, with `api`
/// as its `[api]` table.
fn workload(dir: &Path, api: &str) -> std::path::PathBuf {
    let path = dir.join("w.toml");
    std::fs::write(
        &path,
        format!(
            "[workload]\ninput_len = {{ kind = \"fixed\", value = 8 }}\n\
             output_len = {{ kind = \"fixed\", value = 4 }}\narrival = \"constant\"\n\
             [rate_search]\nmin_probe_requests = 6\nmin_probe_duration_ms = 0\n\
             warmup_requests = 1\n{api}"
        ),
    )
    .unwrap();
    path
}

/// `referee bench serve --rate 20` of `model` at `url`; returns its exit code (1 when the
/// probe failed its SLA, as every one whose requests all fail does) and its record.
fn bench(url: &str, model: &str, api: &str) -> (i32, ProbeRecord) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("probe.json");
    let output = Command::new(env!("CARGO_BIN_EXE_referee"))
        .args([
            "bench", "serve", "--url", url, "--model", model, "--rate", "20",
        ])
        .arg("--workload")
        .arg(workload(dir.path(), api))
        .arg("--json")
        .arg(&json)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&json).unwrap_or_else(|e| {
        panic!(
            "no record ({e}): {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (
        output.status.code().unwrap(),
        serde_json::from_str(&text).unwrap(),
    )
}

const LLAMA_CPP_PYTHON: &str = "[api]\nprofile = \"llama-cpp-python\"\nbos_token_id = 1\n";

#[test]
fn text_keyed_logprobs_count_under_their_profile_and_a_finish_chunk_is_no_token() {
    let (url, bodies) = serve();
    // Six requests certify no p95 (the verdict is the SLA's business): the counts are.
    let (_, record) = bench(&url, "llama-cpp-python", LLAMA_CPP_PYTHON);
    assert_eq!((record.requests, record.completed), (6, 6));
    assert_eq!(record.output_tokens, 24);
    assert_eq!(record.errors.total(), 0);
    let body = bodies.lock().unwrap()[0].clone();
    assert_eq!(body["logprobs"], serde_json::json!(1));
    assert_eq!(body["repeat_penalty"], serde_json::json!(1.0));
    assert_eq!(body["top_k"], serde_json::json!(1));
    assert_eq!(body.get("return_token_ids"), None);
    // The default profile counts token ids, which this server never streams.
    let (code, record) = bench(&url, "llama-cpp-python", "");
    assert_eq!(code, 1);
    assert_eq!((record.completed, record.errors.no_token_ids), (0, 6));
    assert_eq!(record.output_tokens, 0);
}

#[test]
fn an_overshooting_server_is_the_wrong_length() {
    let (url, _) = serve();
    let (code, record) = bench(&url, "overshoot", LLAMA_CPP_PYTHON);
    assert_eq!(code, 1);
    assert_eq!((record.completed, record.errors.long_output), (0, 6));
    assert_eq!(record.errors.short_output, 0);
    // Each stops being read at the first token too many.
    assert_eq!(record.output_tokens, 30);
}

#[test]
fn usage_counting_needs_usage_and_ids_counting_does_not() {
    let (url, _) = serve();
    let (code, record) = bench(&url, "no-usage", "[api]\ntoken_count = \"usage\"\n");
    assert_eq!(code, 1);
    assert_eq!((record.completed, record.errors.missing_usage), (0, 6));
    let (_, record) = bench(&url, "no-usage", "");
    assert_eq!((record.completed, record.output_tokens), (6, 24));
}
