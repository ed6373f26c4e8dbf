//! The `decide` workload kind against a fake sidecar on 127.0.0.1: every request carries
//! the run's bearer token and the campaign's filled template, each answer is one decision
//! counted exactly, and a missing token (401), a response without a decision and a
//! decision outside the declared set fail typed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use bytes::Bytes;
use loadgen::search::NoProgress;
use loadgen::{
    ClientConfig, DecidePlan, LoadClient, ProbeContext, ProbePlan, RequestErrorKind, Target,
    summarize_probe,
};
use receipts::model::{DecideContract, Sha256Hex, TokenCount, VectorKind};
use receipts::rules::workload::{Item, UNIT_GAP_NS};

/// How the fake sidecar answers.
#[derive(Clone, Copy)]
enum Answers {
    /// A declared decision for every request.
    Declared,
    /// `maybe`, outside the set, for odd items.
    OutsideForOdd,
    /// No decision field at all.
    Missing,
}

struct Sidecar {
    token: &'static str,
    answers: Answers,
    authorized: AtomicU64,
    refused: AtomicU64,
    bodies: std::sync::Mutex<Vec<serde_json::Value>>,
}

async fn decide(State(sidecar): State<Arc<Sidecar>>, headers: HeaderMap, body: Bytes) -> Response {
    let expected = format!("Bearer {}", sidecar.token);
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(expected.as_str()) {
        sidecar.refused.fetch_add(1, Ordering::Relaxed);
        return StatusCode::UNAUTHORIZED.into_response();
    }
    sidecar.authorized.fetch_add(1, Ordering::Relaxed);
    let request: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let item = request["id"].as_u64().unwrap();
    sidecar.bodies.lock().unwrap().push(request);
    let decision = match sidecar.answers {
        Answers::Declared => ["allow", "deny"][(item % 2) as usize],
        Answers::OutsideForOdd if item % 2 == 1 => "maybe",
        Answers::OutsideForOdd => "allow",
        Answers::Missing => {
            return axum::Json(serde_json::json!({"verdict": "allow"})).into_response();
        }
    };
    axum::Json(serde_json::json!({"result": {"decision": decision, "logprobs": [-0.1, -2.4]}}))
        .into_response()
}

async fn sidecar(answers: Answers) -> (String, Arc<Sidecar>) {
    let state = Arc::new(Sidecar {
        token: "run-token-0123",
        answers,
        authorized: AtomicU64::new(0),
        refused: AtomicU64::new(0),
        bodies: std::sync::Mutex::new(Vec::new()),
    });
    let app = Router::new()
        .route("/internal/v1/decide", post(decide))
        .with_state(Arc::clone(&state));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{address}"), state)
}

fn contract() -> DecideContract {
    DecideContract {
        path: "/internal/v1/decide".into(),
        health_path: "/health".into(),
        request_template: r#"{"text": "{{prompt}}", "id": "{{item_index}}"}"#.into(),
        decision_pointer: "/result/decision".into(),
        vector_pointer: "/result/logprobs".into(),
        vector: VectorKind::Logprobs,
        decisions: vec!["allow".into(), "deny".into()],
        gate_items: 2_000,
        group_size: 3,
        group_mean_bound_micro_nats: 200_000,
        item_bound_micro_nats: 2_000_000,
    }
}

/// `count` items (2 warm-up first), 5 ms apart, each asking 16 output tokens (a decision
/// is one output whatever the item asks).
fn plan(count: u32, token: &str) -> ProbePlan {
    let items = (0..count)
        .map(|i| {
            let prompt = format!("case {i}");
            Item {
                item_index: i,
                prompt_sha256: Sha256Hex::digest(prompt.as_bytes()),
                prompt,
                max_tokens: 16,
                arrival_unit_ns: u64::from(i) * UNIT_GAP_NS / 200,
            }
        })
        .collect();
    let mut plan = ProbePlan::new(items, 1000, 2, count - 2, 0, 5_000);
    plan.decide = Some(Arc::new(DecidePlan::new(contract(), token.into()).unwrap()));
    plan
}

fn context() -> ProbeContext {
    ProbeContext {
        run: 0,
        probe: 0,
        sub_stream: 0,
        rate_milli_rps: 200_000,
        sla: "p95:e2e:1000ms".parse().unwrap(),
        send_lag_bound_us: 1_000_000,
        token_count: TokenCount::Ids,
    }
}

async fn measure(answers: Answers, token: &str) -> (receipts::model::ProbeRecord, Arc<Sidecar>) {
    let (base_url, state) = sidecar(answers).await;
    let client = LoadClient::new(ClientConfig {
        realtime: false,
        keep_awake: false,
        ..ClientConfig::default()
    })
    .unwrap();
    let target = Target {
        base_url,
        model: "unused".into(),
    };
    let samples = client
        .run(&target, &plan(42, token), &NoProgress)
        .await
        .unwrap();
    (summarize_probe(&context(), &samples).unwrap(), state)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fake_sidecar_is_measured_in_exact_decisions() {
    let (record, sidecar) = measure(Answers::Declared, "run-token-0123").await;
    // 2 warm-up + 40 measured requests, every one a decision.
    assert_eq!(sidecar.authorized.load(Ordering::Relaxed), 42);
    assert_eq!(sidecar.refused.load(Ordering::Relaxed), 0);
    assert_eq!(
        (record.warmup_requests, record.requests, record.completed),
        (2, 40, 40)
    );
    assert_eq!(record.output_tokens, 40, "one decision per request");
    assert_eq!(record.errors.total(), 0);
    // The body is the campaign's template filled from the item alone.
    let mut bodies = sidecar.bodies.lock().unwrap().clone();
    bodies.sort_by_key(|b| b["id"].as_u64());
    assert_eq!(bodies[7], serde_json::json!({"text": "case 7", "id": 7}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_token_fails_typed_as_unauthorized() {
    let (record, sidecar) = measure(Answers::Declared, "another-run-token").await;
    assert_eq!(sidecar.authorized.load(Ordering::Relaxed), 0);
    assert_eq!(record.completed, 0);
    assert_eq!((record.errors.unauthorized, record.errors.http4xx), (40, 0));
    assert_eq!(record.errors.total(), 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_outside_the_set_and_a_missing_decision_fail_typed() {
    let (record, _) = measure(Answers::OutsideForOdd, "run-token-0123").await;
    // Measured items 2..42: 20 odd ones answer `maybe`.
    assert_eq!(
        (record.completed, record.errors.decision_outside_set),
        (20, 20)
    );
    assert_eq!(record.errors.total(), 20);
    let (record, _) = measure(Answers::Missing, "run-token-0123").await;
    assert_eq!((record.completed, record.errors.no_decision), (0, 40));
    let sample_kind = RequestErrorKind::DecisionOutsideSet;
    assert_eq!(
        loadgen::RequestSample {
            error: Some(sample_kind),
            ..Default::default()
        }
        .failure()
        .as_deref(),
        Some("a decision outside the declared set")
    );
}
