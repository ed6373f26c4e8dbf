//! The load generator under each engine API profile (content/engines.md), against scripted
//! in-test servers: tokens counted from streamed logprob entries (llama-cpp-python's
//! text-keyed logprobs, a finish-only chunk that is no token), ids from `token_id:<id>`
//! logprob strings, an overshooting server's wrong length in both directions, and the
//! request body each profile sends.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use bytes::Bytes;
use loadgen::search::NoProgress;
use loadgen::{ClientConfig, LoadClient, ProbePlan, RequestErrorKind, RequestSample, Target};
use receipts::model::{ApiProfile, ApiProfileName, ApiSpec, Sha256Hex, TokenCount, TokenIds};
use receipts::rules::workload::{Item, UNIT_GAP_NS};

/// Every request body received.
type Bodies = Arc<Mutex<Vec<serde_json::Value>>>;

/// llama-cpp-python's stream: one chunk per token with its text and text-keyed
/// logprobs, then a finish-only chunk (no text, `logprobs: null`), no usage.
fn text_logprobs(tokens: u64) -> String {
    let mut body = String::new();
    for i in 0..tokens {
        body.push_str(&format!(
            "data: {{\"choices\":[{{\"text\":\" t{i}\",\"index\":0,\"logprobs\":{{\"tokens\":[\" t{i}\"],\"token_logprobs\":[-0.1],\"top_logprobs\":[{{\" t{i}\":-0.1}}],\"text_offset\":[0]}},\"finish_reason\":null}}]}}\n\n"
        ));
    }
    body.push_str("data: {\"choices\":[{\"text\":\"\",\"index\":0,\"logprobs\":null,\"finish_reason\":\"length\"}]}\n\n");
    body.push_str("data: [DONE]\n\n");
    body
}

/// vLLM's `return_tokens_as_token_ids` stream: logprob tokens `token_id:<100 + i>`.
fn id_strings(tokens: u64) -> String {
    let mut body = String::new();
    for i in 0..tokens {
        body.push_str(&format!(
            "data: {{\"choices\":[{{\"text\":\"x\",\"logprobs\":{{\"tokens\":[\"token_id:{}\"],\"top_logprobs\":[{{\"token_id:{}\":-0.1}}]}}}}]}}\n\n",
            100 + i,
            100 + i
        ));
    }
    body.push_str(&format!(
        "data: {{\"choices\":[],\"usage\":{{\"completion_tokens\":{tokens}}}}}\n\ndata: [DONE]\n\n"
    ));
    body
}

/// The model name picks the script; `over-` and `under-` prefixes stream one token more
/// or fewer than asked.
async fn completions(State(bodies): State<Bodies>, body: Bytes) -> Response {
    let request: serde_json::Value = serde_json::from_slice(&body).unwrap();
    bodies.lock().unwrap().push(request.clone());
    let asked = request["max_tokens"].as_u64().unwrap();
    let model = request["model"].as_str().unwrap();
    let (script, tokens) = if let Some(rest) = model.strip_prefix("over-") {
        (rest, asked + 1)
    } else if let Some(rest) = model.strip_prefix("under-") {
        (rest, asked - 1)
    } else {
        (model, asked)
    };
    let text = match script {
        "text-logprobs" => text_logprobs(tokens),
        "id-strings" => id_strings(tokens),
        other => panic!("no script {other}"),
    };
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from(text))
        .unwrap()
}

async fn serve() -> (String, Bodies) {
    let bodies = Bodies::default();
    let app = Router::new()
        .route("/v1/completions", post(completions))
        .with_state(Arc::clone(&bodies));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), bodies)
}

fn plan(api: ApiProfile, max_tokens: u32) -> ProbePlan {
    let items = (0..3)
        .map(|i| Item {
            item_index: i,
            prompt: "p".into(),
            prompt_sha256: Sha256Hex::digest(b"p"),
            max_tokens,
            arrival_unit_ns: u64::from(i) * UNIT_GAP_NS,
        })
        .collect();
    let mut plan = ProbePlan::new(items, 20_000, 0, 3, 0, 5_000);
    plan.token_count = api.token_count;
    plan.api = Arc::new(api);
    plan.keep_token_ids(&BTreeSet::from([0, 1, 2]));
    plan
}

async fn run(base_url: &str, model: &str, plan: &ProbePlan) -> Vec<RequestSample> {
    let client = LoadClient::new(ClientConfig::default()).unwrap();
    let target = Target {
        base_url: base_url.into(),
        model: model.into(),
    };
    client.run(&target, plan, &NoProgress).await.unwrap()
}

fn llama_cpp_python() -> ApiProfile {
    ApiSpec {
        profile: Some(ApiProfileName::LlamaCppPython),
        bos_token_id: Some(1),
        ..ApiSpec::default()
    }
    .resolve()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_keyed_logprobs_are_counted_per_entry_and_a_finish_chunk_is_no_token() {
    let (url, bodies) = serve().await;
    let samples = run(&url, "text-logprobs", &plan(llama_cpp_python(), 4)).await;
    for sample in &samples {
        assert_eq!(sample.error, None, "{sample:?}");
        assert_eq!((sample.output_tokens, sample.itl_ns.len()), (4, 3));
        // Text-keyed tokens have no ids: none are kept.
        assert!(sample.token_ids.is_empty());
    }
    // The body llama-cpp-python needs: logprobs for counting, its greedy fields, and no
    // vLLM `return_token_ids` or `ignore_eos` (`min_tokens` suppresses EOS there).
    let body = bodies.lock().unwrap()[0].clone();
    assert_eq!(
        body,
        serde_json::json!({
            "model": "text-logprobs", "prompt": "p", "max_tokens": 4, "min_tokens": 4,
            "temperature": 0, "stream": true,
            "stream_options": {"include_usage": true}, "logprobs": 1,
            "repeat_penalty": 1.0, "top_k": 1
        })
    );
    // The default profile counts token ids, which this server never sends.
    let samples = run(&url, "text-logprobs", &plan(ApiProfile::default(), 4)).await;
    for sample in &samples {
        assert_eq!(
            sample.error,
            Some(RequestErrorKind::NoTokenIds),
            "{sample:?}"
        );
        assert_eq!(sample.failure().unwrap(), "text without countable tokens");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_length_says_got_and_asked_in_both_directions() {
    let (url, _) = serve().await;
    let over = run(&url, "over-text-logprobs", &plan(llama_cpp_python(), 2)).await;
    let under = run(&url, "under-text-logprobs", &plan(llama_cpp_python(), 2)).await;
    for (samples, kind, message) in [
        (
            over,
            RequestErrorKind::LongOutput,
            "wrong length: got 3, asked 2",
        ),
        (
            under,
            RequestErrorKind::ShortOutput,
            "wrong length: got 1, asked 2",
        ),
    ] {
        for sample in &samples {
            assert_eq!(sample.error, Some(kind), "{sample:?}");
            assert_eq!(sample.failure().as_deref(), Some(message));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_id_strings_give_the_ids_and_usage_must_agree() {
    let (url, bodies) = serve().await;
    let api = ApiProfile {
        token_ids: TokenIds::TokenIdStrings,
        ..ApiProfile::default()
    };
    assert_eq!(api.token_count, TokenCount::Ids);
    let samples = run(&url, "id-strings", &plan(api, 3)).await;
    for sample in &samples {
        assert_eq!(sample.error, None, "{sample:?}");
        assert_eq!(sample.token_ids, [100, 101, 102]);
    }
    let body = bodies.lock().unwrap()[0].clone();
    assert_eq!(body["return_tokens_as_token_ids"], serde_json::json!(true));
    assert_eq!(body["logprobs"], serde_json::json!(1));
    assert_eq!(body.get("return_token_ids"), None);
}
