//! The built-in engine as a decision sidecar (content/s1-pro-speed.md): 401 without the
//! run's token, `/health` open, and answers that follow the campaign contract the demo
//! declares (decision and vector read with `receipts::rules::decide`), the same bytes for
//! the same prompt.

use std::net::SocketAddr;

use builtin_engine::config::EngineConfig;
use builtin_engine::decide::DecideOptions;
use builtin_engine::server::{self, ServeOptions};
use receipts::model::{DecideContract, VectorKind};
use receipts::rules::decide::{read_decision, read_vector};
use serde_json::{Value, json};

fn contract() -> DecideContract {
    DecideContract {
        path: "/internal/v1/decide".into(),
        health_path: "/health".into(),
        request_template: r#"{"prompt": "{{prompt}}"}"#.into(),
        decision_pointer: "/decision".into(),
        vector_pointer: "/logprobs".into(),
        vector: VectorKind::Logprobs,
        decisions: ["a", "b", "c", "d"].map(String::from).to_vec(),
        gate_items: 2_000,
        group_size: 3,
        group_mean_bound_micro_nats: 200_000,
        item_bound_micro_nats: 2_000_000,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sidecar_needs_its_token_and_answers_the_declared_contract() {
    let config = EngineConfig {
        model_seed: 7,
        layers: 2,
        d_model: 64,
        heads: 4,
        context: 128,
        kv_cache_budget_mb: 16,
        ..EngineConfig::default()
    };
    let options = ServeOptions {
        decide: Some(DecideOptions::new(contract().decisions, "tok-1".into()).unwrap()),
        ..ServeOptions::default()
    };
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let handle = server::spawn(config, addr, options).await.unwrap();
    handle.wait_ready().await;
    let base = format!("http://{}", handle.local_addr());
    let client = reqwest::Client::new();
    assert_eq!(
        reqwest::get(format!("{base}/health"))
            .await
            .unwrap()
            .status(),
        200
    );
    let url = format!("{base}/internal/v1/decide");
    let body = json!({"prompt": "is this allowed?"});
    let anonymous = client.post(&url).json(&body).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let wrong = client
        .post(&url)
        .bearer_auth("tok-2")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let answer = || async {
        let response = client
            .post(&url)
            .bearer_auth("tok-1")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response.bytes().await.unwrap()
    };
    let first = answer().await;
    assert_eq!(first, answer().await, "greedy: the same bytes every time");
    let value: Value = serde_json::from_slice(&first).unwrap();
    let decision = read_decision(&value, &contract()).unwrap();
    let vector = read_vector(&value, &contract()).unwrap();
    assert_eq!(vector.len(), 4);
    assert!(vector.iter().all(|lp| *lp < 0), "{vector:?}");
    // The decision is the most likely declared one (the first on a tie).
    let best = vector.iter().max().unwrap();
    assert_eq!(vector.iter().position(|lp| lp == best), Some(decision));
    handle.shutdown().await.unwrap();
}
