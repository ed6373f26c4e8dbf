//! API contract tests against running servers (in-process, on 127.0.0.1): golden JSON,
//! determinism across two server instances, streaming against non-streaming, teacher
//! forcing, batch invariance, bad input, out of memory at start.
//!
//! Goldens live in `tests/golden/*.json` with `id` and `created` redacted; numbers are
//! compared within 1e-4 (they depend on the CPU's matrix kernels), everything else exactly.
//! Refresh them with `REFEREE_BLESS=1 cargo test -p builtin-engine --test it api` ([`testkit::BLESS`]).

use std::net::SocketAddr;
use std::path::PathBuf;

use builtin_engine::config::EngineConfig;
use builtin_engine::server::{self, ServeError, ServeOptions, ServerHandle};
use serde_json::{Value, json};

/// A small model so the tests run in seconds.
fn small_config() -> EngineConfig {
    EngineConfig {
        model_seed: 7,
        layers: 2,
        d_model: 64,
        heads: 4,
        context: 128,
        max_num_seqs: 16,
        max_num_batched_tokens: 64,
        kv_cache_budget_mb: 16,
        ..EngineConfig::default()
    }
}

async fn start(config: EngineConfig) -> ServerHandle {
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let handle = server::spawn(config, addr, ServeOptions::default())
        .await
        .unwrap();
    handle.wait_ready().await;
    handle
}

async fn post(handle: &ServerHandle, body: &Value) -> (u16, Value) {
    post_raw(handle, body.to_string().into_bytes()).await
}

async fn post_raw(handle: &ServerHandle, body: Vec<u8>) -> (u16, Value) {
    let url = format!("http://{}/v1/completions", handle.local_addr());
    let response = reqwest::Client::new()
        .post(url)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// The `data:` payloads of a streamed completion, `[DONE]` included.
async fn post_stream(handle: &ServerHandle, body: &Value) -> Vec<String> {
    let url = format!("http://{}/v1/completions", handle.local_addr());
    let response = reqwest::Client::new()
        .post(url)
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let text = response.text().await.unwrap();
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    text.split("\n\n")
        .filter(|event| !event.is_empty())
        .map(|event| event.strip_prefix("data: ").unwrap().to_string())
        .collect()
}

/// `id` and `created` vary between runs.
fn redact(mut body: Value) -> Value {
    for key in ["id", "created"] {
        if body.get(key).is_some() {
            body[key] = json!("[redacted]");
        }
    }
    body
}

/// Equal, with numbers within 1e-4.
fn assert_close(got: &Value, want: &Value, path: &str) {
    match (got, want) {
        (Value::Number(g), Value::Number(w)) if !(g.is_u64() && w.is_u64()) => {
            let (g, w) = (g.as_f64().unwrap(), w.as_f64().unwrap());
            assert!((g - w).abs() <= 1e-4, "{path}: {g} vs {w}");
        }
        (Value::Array(g), Value::Array(w)) => {
            assert_eq!(g.len(), w.len(), "{path}: lengths");
            for (i, (g, w)) in g.iter().zip(w).enumerate() {
                assert_close(g, w, &format!("{path}[{i}]"));
            }
        }
        (Value::Object(g), Value::Object(w)) => {
            let keys = |m: &serde_json::Map<String, Value>| m.keys().cloned().collect::<Vec<_>>();
            assert_eq!(keys(g), keys(w), "{path}: keys");
            for (k, g) in g {
                assert_close(g, &w[k], &format!("{path}.{k}"));
            }
        }
        _ => assert_eq!(got, want, "{path}"),
    }
}

fn check_golden(name: &str, got: &Value) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if testkit::blessing() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_string_pretty(got).unwrap() + "\n").unwrap();
    }
    let want: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_close(got, &want, name);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn golden_responses() {
    let handle = start(small_config()).await;
    let greedy = json!({
        "model": "whatever", "prompt": "Hello, referee", "max_tokens": 8, "temperature": 0,
        "logprobs": 3, "echo": true,
    });
    let (status, body) = post(&handle, &greedy).await;
    assert_eq!(status, 200, "{body}");
    check_golden("greedy_echo_logprobs.json", &redact(body));
    let sampled = json!({
        "prompt": [256, 72, 105], "max_tokens": 6, "temperature": 0.8, "seed": 42,
        "logprobs": 2, "return_tokens_as_token_ids": true, "return_token_ids": true,
        "unknown_field": {"tolerated": true},
    });
    let (status, body) = post(&handle, &sampled).await;
    assert_eq!(status, 200, "{body}");
    check_golden("sampled_token_ids.json", &redact(body));
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_models() {
    let config = EngineConfig {
        startup_delay_ms: 300,
        ..small_config()
    };
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let options = ServeOptions {
        served_model_name: "tiny".into(),
        ..ServeOptions::default()
    };
    let handle = server::spawn(config, addr, options).await.unwrap();
    let base = format!("http://{}", handle.local_addr());
    let health = reqwest::get(format!("{base}/health")).await.unwrap();
    assert_eq!(
        health.status().as_u16(),
        503,
        "not ready during startup_delay_ms"
    );
    let (status, body) = post(&handle, &json!({"prompt": "x"})).await;
    assert_eq!((status, body["error"]["code"].clone()), (503, json!(503)));
    handle.wait_ready().await;
    let health = reqwest::get(format!("{base}/health")).await.unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let models: Value = reqwest::get(format!("{base}/v1/models"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], "tiny");
    assert_eq!(models["data"][0]["max_model_len"], 128);
    handle.shutdown().await.unwrap();
}

fn requests() -> Vec<Value> {
    vec![
        json!({"prompt": "The quick brown fox", "max_tokens": 12, "temperature": 0, "logprobs": 5}),
        json!({"prompt": "abc", "max_tokens": 10, "temperature": 0, "logprobs": 2, "echo": true}),
        json!({"prompt": [256, 1, 2, 3, 200, 201], "max_tokens": 9, "temperature": 1.3, "seed": 5,
               "logprobs": 1, "return_tokens_as_token_ids": true}),
        json!({"prompt": "fixed length", "max_tokens": 20, "min_tokens": 20, "ignore_eos": true,
               "temperature": 0}),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_agree_bit_for_bit() {
    let a = start(small_config()).await;
    let b = start(small_config()).await;
    for request in requests() {
        let (_, from_a) = post(&a, &request).await;
        let (_, from_b) = post(&b, &request).await;
        assert_eq!(redact(from_a), redact(from_b), "{request}");
    }
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

/// Rebuilds a non-streamed choice from stream chunks: concatenated text and token ids
/// (every choice must carry `token_ids`, at most one each), logprob lists appended, the
/// last finish reason.
fn merge_chunks(chunks: &[String]) -> (Value, Option<Value>) {
    let mut text = String::new();
    let mut token_ids: Vec<Value> = Vec::new();
    let mut logprobs: Option<Value> = None;
    let mut finish = Value::Null;
    let mut usage = None;
    for chunk in chunks.iter().filter(|c| *c != "[DONE]") {
        let chunk: Value = serde_json::from_str(chunk).unwrap();
        assert_eq!(chunk["object"], "text_completion");
        if let Some(u) = chunk.get("usage") {
            usage = Some(u.clone());
            continue;
        }
        let choice = &chunk["choices"][0];
        text.push_str(choice["text"].as_str().unwrap());
        let ids = choice["token_ids"]
            .as_array()
            .unwrap_or_else(|| panic!("{chunk}"));
        assert!(ids.len() <= 1, "{chunk}");
        token_ids.extend(ids.iter().cloned());
        if !choice["finish_reason"].is_null() {
            finish = choice["finish_reason"].clone();
        }
        if let Value::Object(lp) = &choice["logprobs"] {
            let merged = logprobs.get_or_insert_with(|| {
                json!({
                "tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []})
            });
            for key in ["tokens", "token_logprobs", "top_logprobs", "text_offset"] {
                let items = lp[key].as_array().unwrap().clone();
                merged[key].as_array_mut().unwrap().extend(items);
            }
        }
    }
    let choice = json!({"text": text, "token_ids": token_ids, "logprobs": logprobs,
        "finish_reason": finish});
    (choice, usage)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_matches_non_streaming() {
    let handle = start(small_config()).await;
    let mut cases = requests();
    // A stop string that occurs in the greedy output, so text is held back and cut.
    let (_, plain) = post(
        &handle,
        &json!({"prompt": "stop here", "max_tokens": 30,
        "temperature": 0, "return_token_ids": true}),
    )
    .await;
    let ids = plain["choices"][0]["token_ids"].as_array().unwrap().clone();
    let ascii = ids
        .iter()
        .map(|t| t.as_u64().unwrap())
        .find(|&t| (0x20..0x7f).contains(&t));
    if let Some(byte) = ascii {
        let stop = char::from(byte as u8).to_string();
        cases.push(
            json!({"prompt": "stop here", "max_tokens": 30, "temperature": 0,
            "stop": ["zzzz-never", stop], "logprobs": 1}),
        );
    }
    for mut request in cases {
        request["return_token_ids"] = json!(true);
        let (_, whole) = post(&handle, &request).await;
        request["stream"] = json!(true);
        request["stream_options"] = json!({"include_usage": true});
        let chunks = post_stream(&handle, &request).await;
        let (merged, usage) = merge_chunks(&chunks);
        let choice = &whole["choices"][0];
        assert_eq!(merged["text"], choice["text"], "{request}");
        assert_eq!(merged["token_ids"], choice["token_ids"], "{request}");
        assert_eq!(merged["logprobs"].is_null(), choice["logprobs"].is_null());
        if !choice["logprobs"].is_null() {
            assert_eq!(merged["logprobs"], choice["logprobs"], "{request}");
        }
        assert_eq!(
            merged["finish_reason"], choice["finish_reason"],
            "{request}"
        );
        assert_eq!(usage.as_ref(), Some(&whole["usage"]));
    }
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_strings_and_fixed_lengths() {
    let handle = start(small_config()).await;
    let (_, plain) = post(
        &handle,
        &json!({"prompt": "stop here", "max_tokens": 30,
        "temperature": 0, "return_token_ids": true}),
    )
    .await;
    let ids: Vec<u64> = plain["choices"][0]["token_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_u64().unwrap())
        .collect();
    let first_ascii = ids
        .iter()
        .position(|&t| (0x20..0x7f).contains(&t))
        .expect("an ASCII byte");
    let stop = char::from(ids[first_ascii] as u8).to_string();
    let (_, stopped) = post(
        &handle,
        &json!({"prompt": "stop here", "max_tokens": 30,
        "temperature": 0, "stop": stop.clone()}),
    )
    .await;
    let bytes: Vec<u8> = ids[..first_ascii].iter().map(|&t| t as u8).collect();
    assert_eq!(
        stopped["choices"][0]["text"],
        json!(String::from_utf8_lossy(&bytes))
    );
    assert_eq!(stopped["choices"][0]["finish_reason"], "stop");
    assert_eq!(stopped["choices"][0]["stop_reason"], json!(stop));
    assert_eq!(
        stopped["usage"]["completion_tokens"],
        json!(first_ascii + 1)
    );
    // ignore_eos + min_tokens = max_tokens: exactly max_tokens, whatever the model says.
    let (_, fixed) = post(
        &handle,
        &json!({"prompt": "stop here", "max_tokens": 40,
        "min_tokens": 40, "ignore_eos": true, "stop": stop, "temperature": 0}),
    )
    .await;
    assert_eq!(fixed["usage"]["completion_tokens"], 40);
    assert_eq!(fixed["choices"][0]["finish_reason"], "length");
    handle.shutdown().await.unwrap();
}

/// What the correctness scorer does: send prompt ids + an output's ids with echo and
/// logprobs, `max_tokens` 0, and read the prompt logprobs at the output positions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn teacher_forcing_reproduces_generation_logprobs() {
    let handle = start(small_config()).await;
    let (_, generated) = post(
        &handle,
        &json!({"prompt": "teacher forcing", "max_tokens": 16,
        "temperature": 0, "logprobs": 20, "return_tokens_as_token_ids": true,
        "return_token_ids": true}),
    )
    .await;
    let choice = &generated["choices"][0];
    let mut ids = choice["prompt_token_ids"].as_array().unwrap().clone();
    let prompt_len = ids.len();
    ids.extend(choice["token_ids"].as_array().unwrap().iter().cloned());
    let (status, scored) = post(
        &handle,
        &json!({"prompt": ids, "max_tokens": 0, "echo": true,
        "logprobs": 20, "return_tokens_as_token_ids": true}),
    )
    .await;
    assert_eq!(status, 200, "{scored}");
    let lp = &scored["choices"][0]["logprobs"];
    assert_eq!(lp["token_logprobs"][0], Value::Null);
    assert_eq!(lp["top_logprobs"][0], Value::Null);
    let forced = |key: &str| lp[key].as_array().unwrap()[prompt_len..].to_vec();
    assert_eq!(
        forced("token_logprobs"),
        *choice["logprobs"]["token_logprobs"].as_array().unwrap()
    );
    assert_eq!(
        forced("top_logprobs"),
        *choice["logprobs"]["top_logprobs"].as_array().unwrap()
    );
    assert_eq!(scored["usage"]["completion_tokens"], 0);
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn greedy_results_are_batch_invariant() {
    let config = EngineConfig {
        max_num_batched_tokens: 32,
        ..small_config()
    };
    let handle = start(config).await;
    let request = |i: usize| {
        json!({"prompt": format!("prompt number {i}: {}", "x".repeat(i * 3)), "max_tokens": 12,
               "temperature": 0, "logprobs": 5, "echo": i.is_multiple_of(2)})
    };
    let mut alone = Vec::new();
    for i in 0..16 {
        alone.push(redact(post(&handle, &request(i)).await.1));
    }
    let together = futures_util::future::join_all((0..16).map(|i| {
        let body = request(i);
        let handle = &handle;
        async move { redact(post(handle, &body).await.1) }
    }))
    .await;
    let outputs: std::collections::BTreeSet<String> = alone
        .iter()
        .map(|b| b["choices"][0]["text"].to_string())
        .collect();
    assert!(
        outputs.len() > 8,
        "greedy outputs should differ between prompts: {outputs:?}"
    );
    assert_eq!(alone, together);
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_name_the_field() {
    let handle = start(small_config()).await;
    let long_prompt = "y".repeat(200);
    let cases = [
        (json!({"max_tokens": 4}), Some("prompt")),
        (json!({"prompt": 17}), Some("prompt")),
        (json!({"prompt": []}), Some("prompt")),
        (json!({"prompt": [1, 2, 999]}), Some("prompt")),
        (json!({"prompt": long_prompt}), Some("prompt")),
        (
            json!({"prompt": "x", "max_tokens": 200}),
            Some("max_tokens"),
        ),
        (json!({"prompt": "x", "max_tokens": -1}), Some("max_tokens")),
        (
            json!({"prompt": "x", "max_tokens": "8"}),
            Some("max_tokens"),
        ),
        (
            json!({"prompt": "x", "temperature": -0.5}),
            Some("temperature"),
        ),
        (
            json!({"prompt": "x", "temperature": "NaN"}),
            Some("temperature"),
        ),
        (json!({"prompt": "x", "logprobs": 21}), Some("logprobs")),
        (json!({"prompt": "x", "logprobs": true}), Some("logprobs")),
        (json!({"prompt": "x", "echo": "yes"}), Some("echo")),
        (json!({"prompt": "x", "stream": 1}), Some("stream")),
        (json!({"prompt": "x", "stop": 5}), Some("stop")),
        (json!({"prompt": "x", "seed": -3}), Some("seed")),
        (
            json!({"prompt": "x", "min_tokens": 9, "max_tokens": 4}),
            Some("min_tokens"),
        ),
        (json!({"prompt": "x", "n": 2}), Some("n")),
        (json!({"prompt": "x", "model": 5}), Some("model")),
        (
            json!({"prompt": "x", "stream_options": {"include_usage": 1}}),
            Some("stream_options.include_usage"),
        ),
        (json!([1, 2]), None),
    ];
    for (body, param) in cases {
        let (status, error) = post(&handle, &body).await;
        assert_eq!(status, 400, "{body}: {error}");
        assert_eq!(error["error"]["param"], json!(param), "{body}: {error}");
        assert_eq!(error["error"]["code"], 400);
        assert_eq!(error["error"]["type"], "BadRequestError");
        assert!(error["error"]["message"].is_string());
    }
    // Invalid UTF-8 inside the prompt string, and a body that is not JSON at all.
    let (status, error) = post_raw(
        &handle,
        b"{\"prompt\": \"caf\xe9\", \"max_tokens\": 2}".to_vec(),
    )
    .await;
    assert_eq!(
        (status, error["error"]["param"].clone()),
        (400, json!("prompt")),
        "{error}"
    );
    let (status, error) = post_raw(&handle, b"{not json".to_vec()).await;
    assert_eq!(
        (status, error["error"]["param"].clone()),
        (400, Value::Null),
        "{error}"
    );
    // A body over axum's 2 MiB limit is refused as JSON too.
    let (status, error) = post_raw(&handle, vec![b' '; 3 << 20]).await;
    assert_eq!(
        (status, error["error"]["code"].clone()),
        (413, json!(413)),
        "{error}"
    );
    // Still serving.
    let (status, _) = post(&handle, &json!({"prompt": "x", "max_tokens": 2})).await;
    assert_eq!(status, 200);
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn out_of_memory_at_start() {
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    // 16 sequences × 2 layers × 128 positions × 2 × 64 × 4 bytes = 2 MiB of KV cache.
    let config = EngineConfig {
        kv_cache_budget_mb: 1,
        ..small_config()
    };
    let Err(ServeError::OutOfMemory(oom)) =
        server::spawn(config, addr, ServeOptions::default()).await
    else {
        panic!("expected an out-of-memory error");
    };
    assert!(
        oom.to_string()
            .starts_with("out of memory: a KV cache of 2 MiB (max_num_seqs 16 ")
            && oom.to_string().ends_with(
                "does not fit the KV cache pool of 1 MiB (kv_cache_budget_mb): 1 MiB over"
            ),
        "{oom}"
    );
    // A budget beyond the device memory limit.
    let options = ServeOptions {
        memory_limit_mb: 8,
        ..ServeOptions::default()
    };
    let Err(ServeError::OutOfMemory(oom)) = server::spawn(small_config(), addr, options).await
    else {
        panic!("expected an out-of-memory error");
    };
    assert!(
        oom.to_string()
            .contains("plus the KV cache pool of 16 MiB (kv_cache_budget_mb)")
            && oom
                .to_string()
                .contains("does not fit the memory limit of 8 MiB"),
        "{oom}"
    );
}
