//! The built-in engine as a decision sidecar (`referee engine serve --decide a,b,c`): the
//! demo's entry of a `decide` campaign (content/s1-pro-speed.md). `POST
//! /internal/v1/decide` with `{"prompt": "…"}` and the run's bearer token answers
//! `{"decision": d, "logprobs": {d: lp, …}}`: the next-token log-probabilities of the
//! declared decisions (each one byte, one token of this tokenizer) after the prompt, and
//! the most likely of them (ties: the first declared). Greedy and batch-independent like
//! every output of this engine, so the reference and an honest entry agree exactly.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::scheduler::{Event, GenerationRequest};
use crate::tokenizer::{VOCAB_SIZE, encode_prompt};

/// The sidecar's declared decisions and the run's token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecideOptions {
    /// The declared decisions, each exactly one byte (one token), in order.
    pub decisions: Vec<String>,
    /// The bearer token every decide request must carry (the runner's, per run).
    pub token: String,
}

/// Why the decide options are refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecideOptionsError {
    /// A decision that is not exactly one byte.
    #[error("decision `{0}` is not one byte: the built-in tokenizer gives it no single token")]
    NotOneToken(String),
    /// No decisions, or an empty token.
    #[error("the sidecar needs at least one decision and a non-empty token")]
    Empty,
}

impl DecideOptions {
    /// Checks that every decision is one byte and the token is set.
    ///
    /// Errors: [`DecideOptionsError`].
    pub fn new(decisions: Vec<String>, token: String) -> Result<Self, DecideOptionsError> {
        if decisions.is_empty() || token.is_empty() {
            return Err(DecideOptionsError::Empty);
        }
        if let Some(bad) = decisions.iter().find(|d| d.len() != 1) {
            return Err(DecideOptionsError::NotOneToken(bad.clone()));
        }
        Ok(Self { decisions, token })
    }

    /// The token id of each decision (its byte).
    fn token_ids(&self) -> Vec<u32> {
        self.decisions
            .iter()
            .map(|d| u32::from(d.as_bytes()[0]))
            .collect()
    }
}

/// The decision and the declared vector from the next-token top list `top` (`(id,
/// logprob)`, the whole vocabulary): the decision is the declared one with the highest
/// logprob, the first declared on a tie.
pub fn decide(options: &DecideOptions, top: &[(u32, f32)]) -> Value {
    let mut logprobs = Map::new();
    let mut best: Option<(usize, f32)> = None;
    for (index, (decision, id)) in options
        .decisions
        .iter()
        .zip(options.token_ids())
        .enumerate()
    {
        let lp = top
            .iter()
            .find(|(t, _)| *t == id)
            .map_or(f32::NEG_INFINITY, |(_, lp)| *lp);
        logprobs.insert(decision.clone(), json!(f64::from(lp)));
        if best.is_none_or(|(_, b)| lp > b) {
            best = Some((index, lp));
        }
    }
    let decision = best.map_or("", |(i, _)| options.decisions[i].as_str());
    json!({ "decision": decision, "logprobs": logprobs })
}

/// `POST /internal/v1/decide`: 401 without the run's token, 400 for a body without a
/// string `prompt` (or one too long), 503 while starting, else the decision.
pub(crate) async fn handle(
    State(state): State<Arc<crate::server::AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(options) = &state.decide else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let expected = format!("Bearer {}", options.token);
    if headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        != Some(expected.as_str())
    {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    if !state.is_ready() {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let prompt = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("prompt").and_then(Value::as_str).map(encode_prompt));
    let Some(prompt) = prompt.filter(|p| !p.is_empty() && p.len() < state.context) else {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "a string `prompt` within the context is required"})),
        )
            .into_response();
    };
    let request = GenerationRequest {
        prompt,
        max_tokens: 1,
        temperature: 0.0,
        seed: None,
        stop: Vec::new(),
        logprobs: Some(VOCAB_SIZE),
        prompt_logprobs: None,
        ignore_eos: true,
        min_tokens: 1,
    };
    let (events_tx, mut events) = mpsc::unbounded_channel();
    if state.engine.submit(request, events_tx).is_err() {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    while let Some(event) = events.recv().await {
        if let Event::Token {
            logprob: Some(logprob),
            ..
        } = event
        {
            return axum::Json(decide(options, &logprob.top)).into_response();
        }
    }
    StatusCode::INTERNAL_SERVER_ERROR.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decision_is_the_most_likely_declared_one() {
        let options = DecideOptions::new(vec!["a".into(), "b".into()], "t".into()).unwrap();
        // `z` is more likely than either, but not declared.
        let top = [(u32::from(b'z'), -0.5), (98, -1.0), (97, -2.0)];
        assert_eq!(
            decide(&options, &top),
            json!({"decision": "b", "logprobs": {"a": -2.0, "b": -1.0}})
        );
        assert_eq!(
            DecideOptions::new(vec!["ab".into()], "t".into()),
            Err(DecideOptionsError::NotOneToken("ab".into()))
        );
    }
}
