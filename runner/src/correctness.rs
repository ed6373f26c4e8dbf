//! The two HTTP sides of the correctness gate, over the OpenAI-compatible
//! `/v1/completions` API that vLLM, SGLang, llama.cpp and the built-in engine serve
//! (content/correctness.md §Correctness): an entry's greedy output with top-k logprobs, one
//! request at a time (batching may change numerics), with token ids returned instead of
//! text (`return_tokens_as_token_ids`: tokens come back as `"token_id:<id>"`) and the
//! prompt echoed as token ids; and the
//! reference runtime's teacher-forced top-k logprobs over prompt + that output (`echo`
//! with `max_tokens` 1).

use std::time::Duration;

use receipts::rules::correctness::quantize_logprob;
use serde_json::{Value, json};

/// Errors talking to an engine for the correctness gate.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The request failed or timed out.
    #[error("POST `{url}`: {source}")]
    Http {
        /// The URL.
        url: String,
        /// The cause.
        #[source]
        source: reqwest::Error,
    },
    /// The server answered with an error status.
    #[error("POST `{url}`: status {status}: {body}")]
    Status {
        /// The URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The response lacks a field or has it in another shape.
    #[error("POST `{url}`: response field `{field}`: {problem}")]
    Shape {
        /// The URL.
        url: String,
        /// Dotted path of the field.
        field: String,
        /// What is wrong.
        problem: String,
    },
}

/// One greedy generation: the token ids and, per generated position, the top-k.
#[derive(Clone, Debug, PartialEq)]
pub struct GreedyOutput {
    /// The prompt's token ids as the engine tokenized it (echoed).
    pub prompt_token_ids: Vec<u32>,
    /// Generated token ids, in order.
    pub token_ids: Vec<u32>,
    /// Top-k `(token id, logprob in micro-nats)` at each generated position, quantized
    /// as the response was read (`receipts::rules::correctness::quantize_logprob`).
    pub top_k: Vec<Vec<(u32, i64)>>,
}

/// A client for one engine at `base_url` (e.g. `http://127.0.0.1:8000`), serving model
/// `model`.
#[derive(Clone, Debug)]
pub struct CompletionsClient {
    http: reqwest::Client,
    url: String,
    model: String,
}

impl CompletionsClient {
    /// A client with a per-request timeout in ms.
    pub fn new(base_url: &str, model: &str, timeout_ms: u64) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_millis(timeout_ms))
            .no_proxy()
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        Self {
            http,
            url: format!("{}/v1/completions", base_url.trim_end_matches('/')),
            model: model.to_owned(),
        }
    }

    /// The entry's greedy output for the text `prompt`: exactly `max_tokens` tokens
    /// (`ignore_eos`, `min_tokens` = `max_tokens`, temperature 0) with the top `top_k`
    /// logprobs at each generated position. The request sets `echo`, so the response
    /// also carries the prompt as the engine tokenized it; those ids are what the
    /// reference is teacher-forced on.
    ///
    /// Errors: HTTP failures, error statuses, responses without per-position top-k or
    /// with fewer tokens than asked for.
    pub async fn greedy(
        &self,
        prompt: &str,
        max_tokens: u32,
        top_k: u32,
    ) -> Result<GreedyOutput, ClientError> {
        let body = json!({
            "model": self.model,
            "prompt": prompt,
            "max_tokens": max_tokens,
            "min_tokens": max_tokens,
            "ignore_eos": true,
            "temperature": 0,
            "echo": true,
            "logprobs": top_k,
            "return_tokens_as_token_ids": true,
        });
        let logprobs = self.post(&body).await?;
        let mut all = self.tokens(&logprobs, 0)?;
        let generated = usize::try_from(max_tokens).unwrap_or(usize::MAX);
        let Some(prompt_len) = all.len().checked_sub(generated) else {
            return Err(self.shape(
                "choices[0].logprobs.tokens",
                &format!("{} tokens, fewer than the {generated} asked for", all.len()),
            ));
        };
        let top_k = self.top_logprobs(&logprobs, prompt_len, generated)?;
        let token_ids = all.split_off(prompt_len);
        Ok(GreedyOutput {
            prompt_token_ids: all,
            token_ids,
            top_k,
        })
    }

    /// The reference's teacher-forced top-k at each position of `continuation` after
    /// `prompt`: one `echo` request over `prompt ‖ continuation` whose prompt logprobs at
    /// positions `prompt.len()..` are the distributions that predicted each continuation
    /// token.
    ///
    /// Errors: as [`CompletionsClient::greedy`], and an echo that does not cover the
    /// sequence.
    pub async fn teacher_forced(
        &self,
        prompt: &[u32],
        continuation: &[u32],
        top_k: u32,
    ) -> Result<Vec<Vec<(u32, i64)>>, ClientError> {
        let sequence: Vec<u32> = prompt.iter().chain(continuation).copied().collect();
        let body = json!({
            "model": self.model,
            "prompt": sequence,
            "max_tokens": 1,
            "temperature": 0,
            "echo": true,
            "logprobs": top_k,
            "return_tokens_as_token_ids": true,
        });
        let logprobs = self.post(&body).await?;
        let echoed = self.tokens(&logprobs, 0)?;
        if echoed.len() < sequence.len() || echoed[..sequence.len()] != sequence[..] {
            return Err(self.shape(
                "choices[0].logprobs.tokens",
                "the echo does not repeat the prompt token ids",
            ));
        }
        self.top_logprobs(&logprobs, prompt.len(), continuation.len())
    }

    async fn post(&self, body: &Value) -> Result<Value, ClientError> {
        let http = |source| ClientError::Http {
            url: self.url.clone(),
            source,
        };
        let response = self
            .http
            .post(&self.url)
            .json(body)
            .send()
            .await
            .map_err(http)?;
        let status = response.status();
        let text = response.text().await.map_err(http)?;
        if !status.is_success() {
            return Err(ClientError::Status {
                url: self.url.clone(),
                status: status.as_u16(),
                body: text.chars().take(500).collect(),
            });
        }
        let mut value: Value = serde_json::from_str(&text)
            .map_err(|e| self.shape("<body>", &format!("not JSON: {e}")))?;
        match value.pointer_mut("/choices/0/logprobs") {
            Some(logprobs) if logprobs.is_object() => Ok(logprobs.take()),
            _ => Err(self.shape("choices[0].logprobs", "missing or not an object")),
        }
    }

    /// `logprobs.tokens[from..]` as token ids.
    fn tokens(&self, logprobs: &Value, from: usize) -> Result<Vec<u32>, ClientError> {
        let field = "choices[0].logprobs.tokens";
        let tokens = logprobs
            .get("tokens")
            .and_then(Value::as_array)
            .ok_or_else(|| self.shape(field, "missing or not an array"))?;
        tokens
            .iter()
            .skip(from)
            .map(|t| {
                t.as_str()
                    .and_then(parse_token_id)
                    .ok_or_else(|| self.shape(field, &format!("`{t}` is not `token_id:<id>`")))
            })
            .collect()
    }

    /// `logprobs.top_logprobs[from..from + count]` as `(token id, logprob in micro-nats)`
    /// lists, each logprob quantized as it is read.
    fn top_logprobs(
        &self,
        logprobs: &Value,
        from: usize,
        count: usize,
    ) -> Result<Vec<Vec<(u32, i64)>>, ClientError> {
        let field = "choices[0].logprobs.top_logprobs";
        let positions = logprobs
            .get("top_logprobs")
            .and_then(Value::as_array)
            .ok_or_else(|| self.shape(field, "missing or not an array"))?;
        if positions.len() < from + count {
            return Err(self.shape(
                field,
                &format!(
                    "{} positions, expected at least {}",
                    positions.len(),
                    from + count
                ),
            ));
        }
        positions[from..from + count]
            .iter()
            .map(|position| {
                let map = position
                    .as_object()
                    .ok_or_else(|| self.shape(field, "a position is not an object"))?;
                map.iter()
                    .map(|(token, lp)| {
                        let id = parse_token_id(token).ok_or_else(|| {
                            self.shape(field, &format!("`{token}` is not `token_id:<id>`"))
                        })?;
                        let lp = lp.as_f64().and_then(quantize_logprob).ok_or_else(|| {
                            self.shape(field, &format!("logprob `{lp}` is not a finite number"))
                        })?;
                        Ok((id, lp))
                    })
                    .collect()
            })
            .collect()
    }

    fn shape(&self, field: &str, problem: &str) -> ClientError {
        ClientError::Shape {
            url: self.url.clone(),
            field: field.to_owned(),
            problem: problem.to_owned(),
        }
    }
}

/// `token_id:<id>` (vLLM's `return_tokens_as_token_ids` form) → the id.
fn parse_token_id(token: &str) -> Option<u32> {
    token.strip_prefix("token_id:")?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_ids_are_parsed_strictly() {
        assert_eq!(parse_token_id("token_id:42"), Some(42));
        assert_eq!(parse_token_id("42"), None);
        assert_eq!(parse_token_id("token_id:-1"), None);
    }

    #[test]
    fn top_logprobs_are_read_by_position() {
        let client = CompletionsClient::new("http://127.0.0.1:1", "m", 1000);
        let logprobs = json!({
            "tokens": ["token_id:1", "token_id:2", "token_id:3"],
            "top_logprobs": [null, {"token_id:2": -0.5, "token_id:9": -1.5}, {"token_id:3": -0.25}],
        });
        assert_eq!(client.tokens(&logprobs, 1).unwrap(), vec![2, 3]);
        let mut top = client.top_logprobs(&logprobs, 1, 2).unwrap();
        top[0].sort_by_key(|(t, _)| *t);
        assert_eq!(
            top,
            vec![vec![(2, -500_000), (9, -1_500_000)], vec![(3, -250_000)]]
        );
        assert!(client.top_logprobs(&logprobs, 0, 1).is_err());
        assert!(client.top_logprobs(&logprobs, 2, 2).is_err());
    }
}
