//! The two HTTP sides of the correctness gate, over the OpenAI-compatible
//! `/v1/completions` API that vLLM, SGLang, llama.cpp and the built-in engine serve
//! (content/correctness.md §Correctness), in the campaign's API profile (`[backend.api]`,
//! content/engines.md): an entry's greedy output with top-k logprobs, one request at a
//! time (batching may change numerics), with token ids returned instead of text
//! (`return_tokens_as_token_ids`: tokens come back as `"token_id:<id>"`) or, where the
//! server returns texts, mapped through its tokenizer endpoint, and the prompt echoed
//! (BOS put back where the profile says the echo strips it); and the reference runtime's side: its own tokenization of
//! a prompt text ([`CompletionsClient::tokenize`]; an entry's echo is evidence of nothing)
//! and its teacher-forced logprobs over prompt + an output (`echo` with `max_tokens` 1).
//!
//! Each request has the client's timeout; the overall deadlines of the correctness step
//! and of the scorer are the caller's (`round::entry`).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use loadgen::sse::parse_token_id;
use receipts::model::{
    ApiProfile, BosEcho, CorrectnessItem, Disqualification, DisqualificationReason, LoadBounds,
    LoadSample, LoadSampleCheck, LoadSampleRequest, LoadSampleRun, RoundFailure, Seed32, Sha256Hex,
    TextAgainstIds, TokenIds,
};
use receipts::rules::compliance;
use receipts::rules::correctness::{self, CorrectnessError, quantize_logprob};
use receipts::rules::sample::{self, LoadDivergence, SampleError};
use receipts::rules::workload::Item;
use serde::{Deserialize, Serialize};
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
    /// The campaign's API profile says the server lacks what the request needs.
    #[error("the engine's API profile lacks {feature}: set `{field}` in `[backend.api]`")]
    Unsupported {
        /// What is missing.
        feature: &'static str,
        /// The `[backend.api]` field that would provide it.
        field: &'static str,
    },
    /// Teacher forcing from text (`token_id_prompts = false`): the server's own
    /// tokenization of the text of an id sequence (its detokenizer endpoint) is not that
    /// sequence, so the text would make the model see other tokens than the ones judged:
    /// the sequence cannot be teacher-forced on this server.
    #[error(
        "teacher forcing from text: the server's tokenization of the text {text:?} differs \
         from the {len} ids it was made of at position {position} (id {}, text's {}): \
         the sequence cannot be teacher-forced without token-id prompts \
         (`backend.api.token_id_prompts`)",
        token_or_end(*.expected),
        token_or_end(*.got)
    )]
    TextRoundTrip {
        /// The detokenized text (engine-controlled; escaped by `{:?}`).
        text: String,
        /// How many ids the sequence has, BOS included.
        len: usize,
        /// The first position where the two differ.
        position: u32,
        /// The sequence's id there; `None` when it ended before.
        expected: Option<u32>,
        /// The text's tokenization's id there; `None` when it ended before.
        got: Option<u32>,
    },
}

/// A token id, or `end` for a side that ended before the position.
fn token_or_end(token: Option<u32>) -> String {
    token.map_or_else(|| "end".to_owned(), |t| t.to_string())
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

/// The reference's teacher-forced view of a continuation, per continuation position.
#[derive(Clone, Debug, PartialEq)]
pub struct TeacherForced {
    /// Top-k `(token id, logprob in micro-nats)`, quantized as read.
    pub top_k: Vec<Vec<(u32, i64)>>,
    /// The logprob of the continuation's own token, micro-nats, quantized as read.
    pub token_micro_nats: Vec<i64>,
}

impl TeacherForced {
    /// The top-1 logprob at each position, micro-nats (the largest listed; the server
    /// lists the chosen token too, so a position is never empty here).
    pub fn top1_micro_nats(&self) -> Vec<i64> {
        self.top_k
            .iter()
            .zip(&self.token_micro_nats)
            .map(|(top, token)| top.iter().map(|(_, lp)| *lp).fold(*token, i64::max))
            .collect()
    }
}

/// A client for one engine at `base_url` (e.g. `http://127.0.0.1:8000`), serving model
/// `model`, speaking the campaign's API profile ([`CompletionsClient::with_api`]).
#[derive(Clone, Debug)]
pub struct CompletionsClient {
    http: reqwest::Client,
    base: String,
    url: String,
    model: String,
    api: Arc<ApiProfile>,
    /// Token texts already mapped to ids with the profile's tokenizer endpoint.
    ids: Arc<Mutex<HashMap<String, u32>>>,
}

/// Whether logprob tokens come back as `"token_id:<id>"` strings when asked with vLLM's
/// `return_tokens_as_token_ids` (the default profile and `token_ids = "array"` or
/// `"token_id_strings"`); otherwise they are texts, mapped with the tokenizer endpoint.
fn id_strings(api: &ApiProfile) -> bool {
    matches!(api.token_ids, TokenIds::Array | TokenIds::TokenIdStrings)
}

impl CompletionsClient {
    /// A client with a per-request timeout in ms, under [`ApiProfile::default`].
    pub fn new(base_url: &str, model: &str, timeout_ms: u64) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_millis(timeout_ms))
            .no_proxy()
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        let base = base_url.trim_end_matches('/').to_owned();
        Self {
            http,
            url: format!("{base}/v1/completions"),
            base,
            model: model.to_owned(),
            api: Arc::new(ApiProfile::default()),
            ids: Arc::default(),
        }
    }

    /// The same client speaking the profile `api` (the campaign's `[backend.api]`):
    /// which vLLM extensions are sent, its extra fields, where token ids come from, and
    /// how its echo shows BOS.
    pub fn with_api(mut self, api: ApiProfile) -> Self {
        self.api = Arc::new(api);
        self
    }

    /// A completions request body under the profile: `model`, `prompt`, `max_tokens`,
    /// temperature 0, `echo`, `logprobs: top_k`; with `fixed_length` also `min_tokens`
    /// = `max_tokens` and, where the server takes it, `ignore_eos`;
    /// `return_tokens_as_token_ids` only where logprob tokens are `token_id:<id>`
    /// strings; then the profile's `extra` fields. Never `stream_options` (nothing is
    /// streamed here).
    pub fn body(&self, prompt: Value, max_tokens: u32, top_k: u32, fixed_length: bool) -> Value {
        let mut body = serde_json::Map::new();
        body.insert("model".into(), self.model.clone().into());
        body.insert("prompt".into(), prompt);
        body.insert("max_tokens".into(), max_tokens.into());
        if fixed_length {
            body.insert("min_tokens".into(), max_tokens.into());
            if self.api.ignore_eos {
                body.insert("ignore_eos".into(), true.into());
            }
        }
        body.insert("temperature".into(), 0.into());
        body.insert("echo".into(), true.into());
        body.insert("logprobs".into(), top_k.into());
        if id_strings(&self.api) {
            body.insert("return_tokens_as_token_ids".into(), true.into());
        }
        for (name, value) in &self.api.extra {
            body.insert(name.clone(), value.to_json());
        }
        Value::Object(body)
    }

    /// The BOS the server consumed but left out of its echo (`bos = "stripped"`).
    fn stripped_bos(&self) -> Option<u32> {
        match self.api.bos {
            BosEcho::Stripped => self.api.bos_token_id,
            BosEcho::AsConsumed => None,
        }
    }

    /// The entry's greedy output for the text `prompt`: exactly `max_tokens` tokens
    /// (`min_tokens` = `max_tokens`, `ignore_eos` where the server takes it, temperature
    /// 0) with the top `top_k` logprobs at each generated position. The request sets
    /// `echo`, so the response also carries the prompt as the engine tokenized it (with
    /// `bos = "stripped"`, the profile's BOS put back in front: the prompt as the model
    /// consumed it); those ids are what the reference is teacher-forced on.
    ///
    /// Errors: HTTP failures, error statuses, responses without per-position top-k or
    /// with fewer tokens than asked for, token texts the profile cannot map to ids.
    pub async fn greedy(
        &self,
        prompt: &str,
        max_tokens: u32,
        top_k: u32,
    ) -> Result<GreedyOutput, ClientError> {
        let body = self.body(prompt.into(), max_tokens, top_k, true);
        let logprobs = self.post(&body).await?;
        let mut all = self.tokens(&logprobs, 0).await?;
        let generated = usize::try_from(max_tokens).unwrap_or(usize::MAX);
        let Some(prompt_len) = all.len().checked_sub(generated) else {
            return Err(self.shape(
                "choices[0].logprobs.tokens",
                &format!("{} tokens, fewer than the {generated} asked for", all.len()),
            ));
        };
        let top_k = self.top_logprobs(&logprobs, prompt_len, generated).await?;
        let token_ids = all.split_off(prompt_len);
        if let Some(bos) = self.stripped_bos() {
            all.insert(0, bos);
        }
        Ok(GreedyOutput {
            prompt_token_ids: all,
            token_ids,
            top_k,
        })
    }

    /// The server's own tokenization of the text `prompt`: the echo of a one-token
    /// greedy request, BOS as the model consumed it. Asked of the reference runtime,
    /// whose ids are the ones every entry is judged on.
    ///
    /// Errors: as [`CompletionsClient::greedy`].
    pub async fn tokenize(&self, prompt: &str) -> Result<Vec<u32>, ClientError> {
        Ok(self.greedy(prompt, 1, 1).await?.prompt_token_ids)
    }

    /// The reference's teacher-forced logprobs at each position of `continuation` after
    /// `prompt`: one `echo` request over `prompt ‖ continuation` whose prompt logprobs at
    /// positions `prompt.len()..` are the distributions that predicted each continuation
    /// token (top-k, and the logprob of the token itself). With `bos = "stripped"` the
    /// leading BOS is the server's to add: the ids sent and echoed are the rest.
    ///
    /// Where prompts may be token ids (`token_id_prompts`) the ids are sent as they are.
    /// Otherwise the prompt is their text ([`CompletionsClient::text_of`]: the
    /// detokenizer endpoint, checked to tokenize back to exactly `prompt ‖
    /// continuation`).
    ///
    /// Errors: as [`CompletionsClient::greedy`]; as [`CompletionsClient::text_of`]
    /// without token-id prompts; an echo that does not cover the sequence.
    pub async fn teacher_forced(
        &self,
        prompt: &[u32],
        continuation: &[u32],
        top_k: u32,
    ) -> Result<TeacherForced, ClientError> {
        let full: Vec<u32> = prompt.iter().chain(continuation).copied().collect();
        let mut sequence = full.clone();
        let mut from = prompt.len();
        if let Some(bos) = self.stripped_bos()
            && sequence.first() == Some(&bos)
        {
            sequence.remove(0);
            from -= 1;
        }
        let prompt_value = if self.api.token_id_prompts {
            json!(sequence)
        } else {
            json!(self.text_of(&sequence, &full).await?)
        };
        let body = self.body(prompt_value, 1, top_k, false);
        let logprobs = self.post(&body).await?;
        let echoed = self.tokens(&logprobs, 0).await?;
        if echoed.len() < sequence.len() || echoed[..sequence.len()] != sequence[..] {
            return Err(self.shape(
                "choices[0].logprobs.tokens",
                "the echo does not repeat the prompt token ids",
            ));
        }
        Ok(TeacherForced {
            top_k: self
                .top_logprobs(&logprobs, from, continuation.len())
                .await?,
            token_micro_nats: self.token_logprobs(&logprobs, from, continuation.len())?,
        })
    }

    /// The text to send for the ids `sent` (the sequence without the BOS the server puts
    /// in front of a text prompt): the detokenizer endpoint's `text` for them, checked by
    /// the round trip — the tokenizer endpoint's ids for that text (BOS as the endpoint
    /// adds it, which is what the completions API consumes for a text prompt) must be
    /// exactly `full`, the sequence as the model is to consume it.
    ///
    /// Errors: [`ClientError::Unsupported`] for a profile without a detokenizer or a
    /// tokenizer endpoint; HTTP failures, error statuses and answers without `text` or
    /// `tokens`; [`ClientError::TextRoundTrip`] when the text tokenizes otherwise.
    pub async fn text_of(&self, sent: &[u32], full: &[u32]) -> Result<String, ClientError> {
        let Some(detokenizer) = &self.api.detokenizer else {
            return Err(ClientError::Unsupported {
                feature: "a detokenizer endpoint (without token-id prompts, teacher forcing \
                          sends the text of the ids)",
                field: "backend.api.detokenizer",
            });
        };
        let Some(tokenizer) = &self.api.tokenizer else {
            return Err(ClientError::Unsupported {
                feature: "a tokenizer endpoint (without token-id prompts, the text teacher \
                          forcing sends is checked to tokenize back to the ids)",
                field: "backend.api.tokenizer",
            });
        };
        let text = self.detokenize(detokenizer, sent).await?;
        let back = self.tokenize_text(tokenizer, &text).await?;
        match correctness::prompt_difference(full, &back) {
            None => Ok(text),
            Some((position, expected, got)) => Err(ClientError::TextRoundTrip {
                text,
                len: full.len(),
                position,
                expected,
                got,
            }),
        }
    }

    /// The text of the generated ids `continuation` in the context of `prompt` (ids), as
    /// the reference's detokenizer writes it: the text of `prompt ‖ continuation` less
    /// the text of `prompt` in front (a tokenizer may write a token's leading space only
    /// after another token), else the whole; `None` where the API profile has no
    /// detokenizer. What a streamed text is held against (content/correctness.md,
    /// Streamed text against the ids).
    ///
    /// Errors: as [`CompletionsClient::text_of`]'s detokenizer request.
    pub async fn continuation_text(
        &self,
        prompt: &[u32],
        continuation: &[u32],
    ) -> Result<Option<String>, ClientError> {
        let Some(detokenizer) = &self.api.detokenizer else {
            return Ok(None);
        };
        let sequence: Vec<u32> = prompt.iter().chain(continuation).copied().collect();
        let whole = self.detokenize(detokenizer, &sequence).await?;
        let front = self.detokenize(detokenizer, prompt).await?;
        Ok(Some(match whole.strip_prefix(&front) {
            Some(rest) => rest.to_owned(),
            None => whole,
        }))
    }

    /// The detokenizer endpoint's text for `ids`: its answer's `text` (vLLM's
    /// `/detokenize` names it `prompt`).
    ///
    /// Errors: HTTP failures, error statuses, an answer without a text.
    async fn detokenize(
        &self,
        detokenizer: &receipts::model::Detokenizer,
        ids: &[u32],
    ) -> Result<String, ClientError> {
        let url = format!("{}{}", self.base, detokenizer.route);
        let mut body = serde_json::Map::new();
        body.insert("model".into(), self.model.clone().into());
        body.insert(detokenizer.field.clone(), json!(ids));
        let answer = self.post_json(&url, &Value::Object(body)).await?;
        answer
            .get("text")
            .or_else(|| answer.get("prompt"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| ClientError::Shape {
                url,
                field: "text".into(),
                problem: "missing or not a string".into(),
            })
    }

    /// The tokenizer endpoint's ids for `text`, as it answers them (BOS included where
    /// it adds one).
    ///
    /// Errors: HTTP failures, error statuses, an answer without a `tokens` array of ids.
    async fn tokenize_text(
        &self,
        tokenizer: &receipts::model::Tokenizer,
        text: &str,
    ) -> Result<Vec<u32>, ClientError> {
        let url = format!("{}{}", self.base, tokenizer.route);
        let mut body = serde_json::Map::new();
        body.insert("model".into(), self.model.clone().into());
        body.insert(tokenizer.field.clone(), text.into());
        let answer = self.post_json(&url, &Value::Object(body)).await?;
        let shape = |problem: &str| ClientError::Shape {
            url: url.clone(),
            field: "tokens".into(),
            problem: problem.to_owned(),
        };
        answer
            .get("tokens")
            .and_then(Value::as_array)
            .ok_or_else(|| shape("missing or not an array"))?
            .iter()
            .map(|v| v.as_u64().and_then(|v| u32::try_from(v).ok()))
            .collect::<Option<_>>()
            .ok_or_else(|| shape("not an array of token ids"))
    }

    /// `logprobs.token_logprobs[from..from + count]` in micro-nats, quantized as read.
    fn token_logprobs(
        &self,
        logprobs: &Value,
        from: usize,
        count: usize,
    ) -> Result<Vec<i64>, ClientError> {
        let field = "choices[0].logprobs.token_logprobs";
        let values = logprobs
            .get("token_logprobs")
            .and_then(Value::as_array)
            .ok_or_else(|| self.shape(field, "missing or not an array"))?;
        let wanted = values.get(from..from + count).ok_or_else(|| {
            self.shape(
                field,
                &format!(
                    "{} positions, expected at least {}",
                    values.len(),
                    from + count
                ),
            )
        })?;
        wanted
            .iter()
            .map(|lp| {
                lp.as_f64().and_then(quantize_logprob).ok_or_else(|| {
                    self.shape(field, &format!("logprob `{lp}` is not a finite number"))
                })
            })
            .collect()
    }

    /// POSTs `body` to `url`; the JSON answer.
    async fn post_json(&self, url: &str, body: &Value) -> Result<Value, ClientError> {
        let http = |source| ClientError::Http {
            url: url.to_owned(),
            source,
        };
        let response = self.http.post(url).json(body).send().await.map_err(http)?;
        let status = response.status();
        let text = response.text().await.map_err(http)?;
        if !status.is_success() {
            return Err(ClientError::Status {
                url: url.to_owned(),
                status: status.as_u16(),
                body: text.chars().take(500).collect(),
            });
        }
        serde_json::from_str(&text).map_err(|e| ClientError::Shape {
            url: url.to_owned(),
            field: "<body>".into(),
            problem: format!("not JSON: {e}"),
        })
    }

    /// A completions request's `choices[0].logprobs`.
    async fn post(&self, body: &Value) -> Result<Value, ClientError> {
        let mut value = self.post_json(&self.url, body).await?;
        match value.pointer_mut("/choices/0/logprobs") {
            Some(logprobs) if logprobs.is_object() => Ok(logprobs.take()),
            _ => Err(self.shape("choices[0].logprobs", "missing or not an object")),
        }
    }

    /// The id of a logprob token as the profile gives it: `token_id:<id>` strictly, or
    /// a text that the tokenizer endpoint maps to exactly one id (a leading BOS the
    /// endpoint adds, `bos_token_id`, left out).
    async fn token_id(&self, field: &str, token: &str) -> Result<u32, ClientError> {
        if id_strings(&self.api) {
            return parse_token_id(token)
                .ok_or_else(|| self.shape(field, &format!("`{token}` is not `token_id:<id>`")));
        }
        let Some(tokenizer) = &self.api.tokenizer else {
            return Err(ClientError::Unsupported {
                feature: "token ids of logprob tokens (the server returns texts and the \
                          profile names no tokenizer endpoint)",
                field: "backend.api.tokenizer",
            });
        };
        let cached = self.ids.lock().ok().and_then(|ids| ids.get(token).copied());
        if let Some(id) = cached {
            return Ok(id);
        }
        let mut ids = self.tokenize_text(tokenizer, token).await?;
        if ids.len() > 1
            && self.api.bos_token_id.is_some()
            && ids.first() == self.api.bos_token_id.as_ref()
        {
            ids.remove(0);
        }
        let [id] = ids[..] else {
            return Err(ClientError::Shape {
                url: format!("{}{}", self.base, tokenizer.route),
                field: "tokens".into(),
                problem: format!(
                    "the token text {token:?} of `{field}` tokenizes to {} ids, not one",
                    ids.len()
                ),
            });
        };
        if let Ok(mut cache) = self.ids.lock() {
            cache.insert(token.to_owned(), id);
        }
        Ok(id)
    }

    /// `logprobs.tokens[from..]` as token ids.
    async fn tokens(&self, logprobs: &Value, from: usize) -> Result<Vec<u32>, ClientError> {
        let field = "choices[0].logprobs.tokens";
        let tokens = logprobs
            .get("tokens")
            .and_then(Value::as_array)
            .ok_or_else(|| self.shape(field, "missing or not an array"))?;
        let mut ids = Vec::with_capacity(tokens.len().saturating_sub(from));
        for t in tokens.iter().skip(from) {
            let text = t
                .as_str()
                .ok_or_else(|| self.shape(field, &format!("`{t}` is not a string")))?;
            ids.push(self.token_id(field, text).await?);
        }
        Ok(ids)
    }

    /// `logprobs.top_logprobs[from..from + count]` as `(token id, logprob in micro-nats)`
    /// lists, each logprob quantized as it is read.
    async fn top_logprobs(
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
        let mut all = Vec::with_capacity(count);
        for position in &positions[from..from + count] {
            let map = position
                .as_object()
                .ok_or_else(|| self.shape(field, "a position is not an object"))?;
            let mut listed = Vec::with_capacity(map.len());
            for (token, lp) in map {
                let id = self.token_id(field, token).await?;
                let lp = lp.as_f64().and_then(quantize_logprob).ok_or_else(|| {
                    self.shape(field, &format!("logprob `{lp}` is not a finite number"))
                })?;
                listed.push((id, lp));
            }
            all.push(listed);
        }
        Ok(all)
    }

    fn shape(&self, field: &str, problem: &str) -> ClientError {
        ClientError::Shape {
            url: self.url.clone(),
            field: field.to_owned(),
            problem: problem.to_owned(),
        }
    }
}

/// One correctness item as an engine answered it (kept in `.work/`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemOutput {
    /// The correctness item.
    pub index: u32,
    /// sha256 of its prompt text.
    pub prompt_sha256: Sha256Hex,
    /// The prompt's token ids as the engine echoed them (evidence of nothing: compared
    /// with the reference's own tokenization, never used for it).
    pub prompt_token_ids: Vec<u32>,
    /// Generated token ids.
    pub token_ids: Vec<u32>,
    /// Top-k at each generated position, micro-nats.
    pub top_k: Vec<Vec<(u32, i64)>>,
}

/// Why the correctness outputs of an entry, or the reference's answers, could not be had.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// An engine's completions API failed for one item.
    #[error("{what} of item {item}")]
    Client {
        /// `correctness outputs`, `reference tokenization`, `reference logprobs`.
        what: &'static str,
        /// The correctness item (or, for the timed-run sample, the workload item).
        item: u32,
        /// The cause.
        #[source]
        source: ClientError,
    },
    /// A correctness output of the wrong length.
    #[error("correctness item {item}: {got} output tokens, asked for {asked}")]
    OutputLength {
        /// The correctness item.
        item: u32,
        /// Token ids observed.
        got: usize,
        /// `max_tokens` asked.
        asked: u32,
    },
    /// The two sides of a distance do not fit together.
    #[error(transparent)]
    Correctness(#[from] CorrectnessError),
    /// A sampled request's gap could not be computed.
    #[error("timed-run sample, item {item}: {source}")]
    Sample {
        /// The workload item.
        item: u32,
        /// The cause.
        #[source]
        source: SampleError,
    },
    /// The reference refused to teacher-force an entry's generated ids (a client error:
    /// an id outside its vocabulary, say): the entry's fault.
    #[error("the reference refused the generated token ids of item {item}")]
    InvalidTokenIds {
        /// The timed run, from 0; `None` for a correctness item.
        run: Option<u32>,
        /// The workload item, or the correctness item.
        item: u32,
        /// The reference's HTTP status.
        status: u16,
        /// The cause.
        #[source]
        source: ClientError,
    },
    /// The answers did not all arrive within the deadline.
    #[error("{what}: no complete answer within the deadline of {deadline_s} s")]
    Deadline {
        /// What was waited for.
        what: &'static str,
        /// The deadline, seconds (rounded up).
        deadline_s: u64,
    },
}

/// `work`, cut off at `deadline`: [`GateError::Deadline`] naming `what` when it has not
/// finished by then.
///
/// Errors: the deadline, or `work`'s own error.
pub async fn within<T>(
    deadline: Duration,
    what: &'static str,
    work: impl Future<Output = Result<T, GateError>>,
) -> Result<T, GateError> {
    tokio::time::timeout(deadline, work)
        .await
        .unwrap_or_else(|_| {
            Err(GateError::Deadline {
                what,
                deadline_s: deadline.as_millis().div_ceil(1000) as u64,
            })
        })
}

/// An engine's greedy outputs of every correctness item, one request at a time; with
/// `echo_only` (the baseline) one token each, for its prompt echo alone.
///
/// Errors: a failed request or an output of the wrong length.
pub async fn take_outputs(
    client: &CompletionsClient,
    items: &[Item],
    top_k: u32,
    echo_only: bool,
) -> Result<Vec<ItemOutput>, GateError> {
    let mut outputs = Vec::with_capacity(items.len());
    for item in items {
        let (max_tokens, k) = if echo_only {
            (1, 1)
        } else {
            (item.max_tokens, top_k)
        };
        let greedy = client
            .greedy(&item.prompt, max_tokens, k)
            .await
            .map_err(|source| GateError::Client {
                what: "correctness outputs",
                item: item.item_index,
                source,
            })?;
        if greedy.token_ids.len() != usize::try_from(max_tokens).unwrap_or(usize::MAX) {
            return Err(GateError::OutputLength {
                item: item.item_index,
                got: greedy.token_ids.len(),
                asked: max_tokens,
            });
        }
        outputs.push(ItemOutput {
            index: item.item_index,
            prompt_sha256: item.prompt_sha256,
            prompt_token_ids: greedy.prompt_token_ids,
            token_ids: greedy.token_ids,
            top_k: greedy.top_k,
        });
    }
    Ok(outputs)
}

/// The reference's own tokenization of every item's prompt, in item order.
///
/// Errors: a failed request.
pub async fn reference_prompts(
    reference: &CompletionsClient,
    items: &[Item],
) -> Result<Vec<Vec<u32>>, GateError> {
    let mut prompts = Vec::with_capacity(items.len());
    for item in items {
        prompts.push(reference.tokenize(&item.prompt).await.map_err(|source| {
            GateError::Client {
                what: "reference tokenization",
                item: item.item_index,
                source,
            }
        })?);
    }
    Ok(prompts)
}

/// Where an engine's echoed prompts first differ from the reference's tokenization:
/// the first item (in order) that differs, as `(item, position, reference id, echoed
/// id)` ([`correctness::prompt_difference`]); an item the reference has no prompt for
/// differs at position 0.
pub fn echo_difference(
    outputs: &[ItemOutput],
    reference_prompts: &[Vec<u32>],
) -> Option<(u32, u32, Option<u32>, Option<u32>)> {
    outputs.iter().find_map(|output| {
        let expected = usize::try_from(output.index)
            .ok()
            .and_then(|i| reference_prompts.get(i))
            .map_or(&[][..], Vec::as_slice);
        correctness::prompt_difference(expected, &output.prompt_token_ids)
            .map(|(position, e, g)| (output.index, position, e, g))
    })
}

/// The round's failure when the baseline's echoed prompts are not the reference's
/// tokenization (a server that strips BOS, say): no entry's echo could be judged.
pub fn baseline_echo_failure(
    baseline: &[ItemOutput],
    reference_prompts: &[Vec<u32>],
) -> Option<RoundFailure> {
    echo_difference(baseline, reference_prompts).map(|(item, position, reference, baseline)| {
        RoundFailure::ReferencePromptMismatch {
            item,
            position,
            reference,
            baseline,
        }
    })
}

/// An entry's disqualification when its echoed prompts are not the reference's
/// tokenization: `prompt_echo_mismatch` naming the first differing position.
pub fn echo_disqualification(
    outputs: &[ItemOutput],
    reference_prompts: &[Vec<u32>],
) -> Option<Disqualification> {
    let (item, position, expected, got) = echo_difference(outputs, reference_prompts)?;
    let token = |t: Option<u32>| t.map_or_else(|| "end".to_owned(), |t| t.to_string());
    Some(Disqualification {
        reason: DisqualificationReason::PromptEchoMismatch {
            item,
            position,
            expected,
            got,
        },
        detail: format!(
            "correctness item {item}: the echoed prompt differs from the reference's \
             tokenization at position {position} (reference {}, echoed {})",
            token(expected),
            token(got)
        ),
        log_tail: Vec::new(),
    })
}

/// The error of teacher-forcing an entry's generated ids on item `item` (of timed run
/// `run`): a client error status (4xx) of the reference is the entry's
/// ([`GateError::InvalidTokenIds`]), anything else the reference's own failure.
fn teacher_forcing_failed(run: Option<u32>, item: u32, source: ClientError) -> GateError {
    match source {
        ClientError::Status { status, .. } if (400..500).contains(&status) => {
            GateError::InvalidTokenIds {
                run,
                item,
                status,
                source,
            }
        }
        source => GateError::Client {
            what: "reference logprobs",
            item,
            source,
        },
    }
}

impl GateError {
    /// The entry's disqualification when the error is its own generated ids, refused
    /// by the reference (`invalid_token_id`).
    pub fn invalid_token_id(&self) -> Option<Disqualification> {
        let Self::InvalidTokenIds {
            run, item, status, ..
        } = self
        else {
            return None;
        };
        let place = run.map_or_else(
            || format!("correctness item {item}"),
            |run| format!("run {run}, item {item}"),
        );
        Some(Disqualification {
            reason: DisqualificationReason::InvalidTokenId {
                run: *run,
                item: *item,
                status: *status,
            },
            detail: format!(
                "{place}: the reference refused the generated token ids (status {status}): \
                 ids outside its vocabulary"
            ),
            log_tail: Vec::new(),
        })
    }
}

/// An entry's disqualification when its timed runs' sample fails its bounds
/// ([`sample::first_divergent`]): `load_outputs_diverge` naming the run, the item and its
/// gap, `load_group_diverges` the run and its mean, `load_positions_over` the run and its
/// count.
pub fn load_disqualification(sample: &LoadSample) -> Option<Disqualification> {
    let divergence = sample::first_divergent(sample)?;
    let detail = match divergence {
        LoadDivergence::Item {
            run,
            item,
            gap_micro_nats,
        } => format!(
            "run {run}, item {item}: the outputs of the timed run diverge from the reference \
             (mean top-1 gap {gap_micro_nats} µnat, bound {} µnat)",
            sample.bound_micro_nats
        ),
        LoadDivergence::Group {
            run,
            mean_micro_nats,
        } => format!(
            "run {run}: the sampled outputs of the timed run diverge from the reference on \
             average (mean gap {mean_micro_nats} µnat, bound {} µnat)",
            sample.group_bound_micro_nats.unwrap_or(u64::MAX)
        ),
        LoadDivergence::Positions { run, positions } => format!(
            "run {run}: {positions} generated positions of the sampled requests are far \
             from the reference's top token (above {} µnat; at most {} allowed)",
            sample.position_bound_micro_nats.unwrap_or(u64::MAX),
            sample.max_positions_over.unwrap_or(u32::MAX)
        ),
    };
    Some(Disqualification {
        reason: divergence.reason(sample),
        detail,
        log_tail: Vec::new(),
    })
}

/// An entry's disqualification when a sampled request of its timed runs streamed text
/// that is not its ids as the reference writes them: `text_not_ids` naming the run and
/// the item ([`compliance::first_text_mismatch`]).
pub fn text_disqualification(sample: &LoadSample) -> Option<Disqualification> {
    let (run, item) = compliance::first_text_mismatch(sample)?;
    Some(Disqualification {
        reason: DisqualificationReason::TextNotIds { run, item },
        detail: format!(
            "run {run}, item {item}: the text streamed is not the reference's text of the \
             token ids streamed with it"
        ),
        log_tail: Vec::new(),
    })
}

/// Each item's distances: the reference teacher-forced on its own prompt ids followed by
/// the entry's generated ids, compared position by position with the entry's top-k. Both
/// sides' top-k are stored with the item as the distances are computed from them, cut to
/// `top_k` ([`correctness::top_k`], the formula's first step), so the verifier recomputes
/// every distance and no engine grows the file by listing more tokens.
///
/// Errors: a failed reference request, or sides that do not fit together.
pub async fn reference_items(
    reference: &CompletionsClient,
    outputs: &[ItemOutput],
    reference_prompts: &[Vec<u32>],
    top_k: u32,
) -> Result<Vec<CorrectnessItem>, GateError> {
    let mut items = Vec::with_capacity(outputs.len());
    for output in outputs {
        let prompt = usize::try_from(output.index)
            .ok()
            .and_then(|i| reference_prompts.get(i))
            .map_or(&[][..], Vec::as_slice);
        let forced = reference
            .teacher_forced(prompt, &output.token_ids, top_k)
            .await
            .map_err(|source| teacher_forcing_failed(None, output.index, source))?;
        let cut = |side: &[Vec<(u32, i64)>]| -> Vec<Vec<(u32, i64)>> {
            side.iter()
                .map(|position| correctness::top_k(position, top_k))
                .collect()
        };
        let (entry_top_k, reference_top_k) = (cut(&output.top_k), cut(&forced.top_k));
        let positions = correctness::item_positions_micro_nats(
            output.index,
            top_k,
            &entry_top_k,
            &reference_top_k,
        )?;
        items.push(CorrectnessItem {
            index: output.index,
            prompt_sha256: output.prompt_sha256,
            prompt_tokens: u32::try_from(prompt.len()).unwrap_or(u32::MAX),
            output_token_ids: output.token_ids.clone(),
            distance_micro_nats: correctness::item_distance_micro_nats(&positions),
            position_micro_nats: positions,
            entry_top_k: Some(entry_top_k),
            reference_top_k: Some(reference_top_k),
        });
    }
    Ok(items)
}

/// One request of a run's result probe whose outputs the load client kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptRequest {
    /// Its workload item.
    pub item_index: u32,
    /// The prompt text it sent.
    pub prompt: String,
    /// Whether it completed.
    pub completed: bool,
    /// The generated token ids the client observed; `None` when the API returned none.
    pub token_ids: Option<Vec<u32>>,
    /// The generated text it saw streamed with them (absent in a `.work/` file of an
    /// older build: empty).
    #[serde(default)]
    pub text: String,
}

/// A run's result probe, as far as the load client kept it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptRun {
    /// The run.
    pub run: u32,
    /// Its result probe.
    pub probe: u32,
    /// The kept requests, in send order.
    pub requests: Vec<KeptRequest>,
}

/// What the timed-run check draws and judges with.
#[derive(Clone, Copy, Debug)]
pub struct SampleSpec<'a> {
    /// The round's `sampleSeed`.
    pub seed: &'a Seed32,
    /// The entry's index in the round.
    pub entry: u32,
    /// Requests checked per run (`correctness.load_sample`).
    pub size: u32,
    /// The bounds of the statistic (the campaign's effective load bounds).
    pub bounds: LoadBounds,
}

/// Checks an entry's timed runs: per run, [`sample::select_requests`] draws from its
/// completed kept requests; each drawn request's prompt is tokenized by the reference
/// and its observed token ids teacher-forced after it; the gap is
/// [`sample::request_gap_micro_nats`]. A run whose drawn requests lack token ids is
/// recorded `not applicable`, never passed.
///
/// Errors: a failed reference request or a gap that cannot be computed.
pub async fn check_load_sample(
    reference: &CompletionsClient,
    spec: SampleSpec<'_>,
    runs: &[KeptRun],
) -> Result<LoadSample, GateError> {
    let mut checked = Vec::with_capacity(runs.len());
    for run in runs {
        let mut completed: Vec<u32> = run
            .requests
            .iter()
            .filter(|r| r.completed)
            .map(|r| r.item_index)
            .collect();
        completed.sort_unstable();
        completed.dedup();
        let drawn = sample::select_requests(spec.seed, spec.entry, run.run, &completed, spec.size);
        let check = if spec.size == 0 {
            LoadSampleCheck::NotApplicable {
                reason: "correctness.load_sample is 0".into(),
            }
        } else if drawn.is_empty() {
            LoadSampleCheck::NotApplicable {
                reason: "no kept request of the result probe completed".into(),
            }
        } else {
            sample_run(reference, run, &drawn).await?
        };
        checked.push(LoadSampleRun {
            run: run.run,
            probe: run.probe,
            completed,
            check,
        });
    }
    let text_against_ids = if reference.api.detokenizer.is_some() {
        TextAgainstIds::Checked
    } else {
        TextAgainstIds::NotApplicable {
            reason: "the API profile has no detokenizer (`backend.api.detokenizer`)".into(),
        }
    };
    Ok(LoadSample {
        entry: spec.entry,
        sample_size: spec.size,
        bound_micro_nats: spec.bounds.item_micro_nats,
        runs: checked,
        text_against_ids: Some(text_against_ids),
        measured_for: None,
        group_bound_micro_nats: Some(spec.bounds.group_micro_nats),
        position_bound_micro_nats: Some(spec.bounds.position_micro_nats),
        max_positions_over: Some(spec.bounds.max_positions_over),
    })
}

/// The drawn requests of one run, teacher-forced through the reference.
async fn sample_run(
    reference: &CompletionsClient,
    run: &KeptRun,
    drawn: &[u32],
) -> Result<LoadSampleCheck, GateError> {
    let mut requests = Vec::with_capacity(drawn.len());
    for &item in drawn {
        let Some(kept) = run
            .requests
            .iter()
            .find(|r| r.completed && r.item_index == item)
        else {
            continue;
        };
        let Some(token_ids) = &kept.token_ids else {
            return Ok(LoadSampleCheck::NotApplicable {
                reason: format!("the engine's API returned no token ids for item {item}"),
            });
        };
        let client = |what| move |source| GateError::Client { what, item, source };
        let prompt = reference
            .tokenize(&kept.prompt)
            .await
            .map_err(client("reference tokenization"))?;
        let forced = reference
            .teacher_forced(&prompt, token_ids, 1)
            .await
            .map_err(|source| teacher_forcing_failed(Some(run.run), item, source))?;
        let top1 = forced.top1_micro_nats();
        let gap = sample::request_gap_micro_nats(&top1, &forced.token_micro_nats)
            .map_err(|source| GateError::Sample { item, source })?;
        // The text a client was shown, held against the ids it came with.
        let reference_text = reference
            .continuation_text(&prompt, token_ids)
            .await
            .map_err(|source| teacher_forcing_failed(Some(run.run), item, source))?;
        let streamed_text = reference_text.as_ref().map(|_| kept.text.clone());
        requests.push(LoadSampleRequest {
            item_index: item,
            prompt_sha256: Sha256Hex::digest(kept.prompt.as_bytes()),
            output_token_ids: token_ids.clone(),
            reference_top1_micro_nats: top1,
            reference_token_micro_nats: forced.token_micro_nats,
            gap_micro_nats: gap,
            streamed_text,
            reference_text,
        });
    }
    Ok(LoadSampleCheck::Checked { requests })
}

/// In-test OpenAI-compatible completions servers on 127.0.0.1 (raw HTTP/1.1 over tokio),
/// with a deterministic toy model: a text prompt tokenizes to BOS (1) then its bytes; the
/// "right" token after `t` is `(t + 1) % 256`, which the model gives logprob −0.1 and
/// every other token −4.0.
#[cfg(test)]
pub(crate) mod fake {
    use std::sync::Arc;

    use serde_json::{Value, json};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// How a fake engine answers a request body; `None` stalls forever.
    pub(crate) type Behaviour = Arc<dyn Fn(&Value) -> Option<Value> + Send + Sync>;

    /// The toy model's next token after `t`.
    pub(crate) fn next(t: u32) -> u32 {
        (t + 1) % 256
    }

    /// The toy tokenizer: BOS then the bytes.
    pub(crate) fn tokenize(text: &str) -> Vec<u32> {
        std::iter::once(1)
            .chain(text.bytes().map(u32::from))
            .collect()
    }

    fn logprob(prev: u32, token: u32) -> f64 {
        if token == next(prev) { -0.1 } else { -4.0 }
    }

    /// The model's answer: `prompt` (ids) echoed when asked, then `generated`, with
    /// `token_logprobs` and `top_logprobs` (the right token and the one in place).
    pub(crate) fn answer(request: &Value, prompt: &[u32], generated: &[u32]) -> Value {
        let echo = request["echo"].as_bool().unwrap_or(false);
        let sequence: Vec<u32> = prompt.iter().chain(generated).copied().collect();
        let from = if echo { 0 } else { prompt.len() };
        let mut tokens = Vec::new();
        let mut token_logprobs = Vec::new();
        let mut top = Vec::new();
        for (i, &t) in sequence.iter().enumerate().skip(from) {
            tokens.push(json!(format!("token_id:{t}")));
            if i == 0 {
                token_logprobs.push(Value::Null);
                top.push(Value::Null);
                continue;
            }
            let prev = sequence[i - 1];
            token_logprobs.push(json!(logprob(prev, t)));
            let mut map = serde_json::Map::new();
            map.insert(format!("token_id:{}", next(prev)), json!(-0.1));
            map.insert(format!("token_id:{t}"), json!(logprob(prev, t)));
            top.push(Value::Object(map));
        }
        json!({"choices": [{"index": 0, "text": "", "logprobs": {
            "tokens": tokens, "token_logprobs": token_logprobs, "top_logprobs": top,
        }}]})
    }

    /// The request's prompt as ids (a text prompt through [`tokenize`]).
    pub(crate) fn prompt_ids(request: &Value) -> Vec<u32> {
        match &request["prompt"] {
            Value::String(text) => tokenize(text),
            Value::Array(ids) => ids
                .iter()
                .filter_map(|v| v.as_u64().and_then(|v| u32::try_from(v).ok()))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The honest greedy model: `max_tokens` right tokens after the prompt.
    pub(crate) fn greedy(request: &Value, prompt: &[u32]) -> Value {
        let n = request["max_tokens"].as_u64().unwrap_or(1);
        let mut last = prompt.last().copied().unwrap_or(0);
        let generated: Vec<u32> = (0..n)
            .map(|_| {
                last = next(last);
                last
            })
            .collect();
        answer(request, prompt, &generated)
    }

    /// The honest model (the reference runtime), with vLLM's `/detokenize {"tokens"}`:
    /// the ids' bytes as text, BOS as nothing.
    pub(crate) fn honest() -> Behaviour {
        Arc::new(|request| match request["tokens"].as_array() {
            Some(ids) => Some(json!({"prompt": detokenize(ids)})),
            None => Some(greedy(request, &prompt_ids(request))),
        })
    }

    /// The toy detokenizer: the bytes of the ids after BOS, as text.
    pub(crate) fn detokenize(ids: &[Value]) -> String {
        let bytes: Vec<u8> = ids
            .iter()
            .filter_map(|v| v.as_u64().and_then(|v| u8::try_from(v).ok()))
            .filter(|&b| b != 1)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// A server that never answers.
    pub(crate) fn stalling() -> Behaviour {
        Arc::new(|_| None)
    }

    /// Serves `behaviour` on 127.0.0.1; returns the base URL.
    pub(crate) async fn serve(behaviour: Behaviour) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let behaviour = behaviour.clone();
                tokio::spawn(async move {
                    let Some(body) = read_body(&mut socket).await else {
                        return;
                    };
                    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let Some(answer) = behaviour(&request) else {
                        std::future::pending::<()>().await;
                        return;
                    };
                    let text = answer.to_string();
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                         content-length: {}\r\nconnection: close\r\n\r\n",
                        text.len()
                    );
                    let _ = socket.write_all(head.as_bytes()).await;
                    let _ = socket.write_all(text.as_bytes()).await;
                });
            }
        });
        url
    }

    async fn read_body(socket: &mut tokio::net::TcpStream) -> Option<Vec<u8>> {
        let mut buffer = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = socket.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            buffer.extend_from_slice(&chunk[..n]);
            if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                while buffer.len() < end + 4 + length {
                    let n = socket.read(&mut chunk).await.ok()?;
                    if n == 0 {
                        return None;
                    }
                    buffer.extend_from_slice(&chunk[..n]);
                }
                return Some(buffer[end + 4..end + 4 + length].to_vec());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::Arc;

    use receipts::model::CorrectnessSpec;
    use serde_json::Value;

    fn items(prompts: &[&str], max_tokens: u32) -> Vec<Item> {
        prompts
            .iter()
            .enumerate()
            .map(|(i, p)| Item {
                item_index: u32::try_from(i).unwrap(),
                prompt_sha256: Sha256Hex::digest(p.as_bytes()),
                prompt: (*p).to_owned(),
                max_tokens,
                arrival_unit_ns: 0,
            })
            .collect()
    }

    async fn client(behaviour: fake::Behaviour) -> CompletionsClient {
        CompletionsClient::new(&fake::serve(behaviour).await, "m", 5_000)
    }

    /// An entry that tokenizes honestly but echoes `alter(prompt ids)` as its prompt.
    fn echoing(alter: fn(Vec<u32>) -> Vec<u32>) -> fake::Behaviour {
        Arc::new(move |request: &Value| {
            let ids = fake::prompt_ids(request);
            let honest = fake::greedy(request, &ids);
            let echoed = alter(ids.clone());
            let generated: Vec<u32> = honest["choices"][0]["logprobs"]["tokens"]
                .as_array()
                .unwrap()
                .iter()
                .skip(ids.len())
                .map(|t| t.as_str().and_then(parse_token_id).unwrap())
                .collect();
            Some(fake::answer(request, &echoed, &generated))
        })
    }

    /// Regression (issue 10): the reference was teacher-forced on the prompt ids the entry
    /// echoed, so an engine chose the prompt it was judged on. The reference tokenizes the
    /// text itself; an entry echoing another prompt is disqualified at the position.
    #[tokio::test]
    async fn an_entry_echoing_another_prompt_is_disqualified_at_the_position() {
        let reference = client(fake::honest()).await;
        let entry = client(echoing(|mut ids| {
            if let Some(t) = ids.get_mut(3) {
                *t = 200;
            }
            ids
        }))
        .await;
        let items = items(&["ab", "hello"], 3);
        let prompts = reference_prompts(&reference, &items).await.unwrap();
        assert_eq!(prompts[1], vec![1, 104, 101, 108, 108, 111]);
        let outputs = take_outputs(&entry, &items, 2, false).await.unwrap();
        // Item 0 (3 ids) is untouched; item 1 differs at position 3.
        let dq = echo_disqualification(&outputs, &prompts).unwrap();
        assert_eq!(
            dq.reason,
            DisqualificationReason::PromptEchoMismatch {
                item: 1,
                position: 3,
                expected: Some(108),
                got: Some(200),
            }
        );
        assert_eq!(
            dq.detail,
            "correctness item 1: the echoed prompt differs from the reference's tokenization \
             at position 3 (reference 108, echoed 200)"
        );
        // The honest entry's echo is the reference's, and its distances are 0 with the
        // reference teacher-forced on the reference's own ids.
        let honest = take_outputs(&reference, &items, 2, false).await.unwrap();
        assert_eq!(echo_disqualification(&honest, &prompts), None);
        let scored = reference_items(&reference, &honest, &prompts, 2)
            .await
            .unwrap();
        let distances: Vec<u64> = scored.iter().map(|i| i.distance_micro_nats).collect();
        assert_eq!(distances, vec![0, 0]);
        assert_eq!(scored[1].prompt_tokens, 6);
    }

    /// Issue 13: the per-item file held only the distances, so their first step could
    /// not be checked. Both sides' top-k are stored as the distances were computed from
    /// them, cut to k: an entry listing 50 extra tokens does not grow the file.
    #[tokio::test]
    async fn both_sides_top_k_are_stored_cut_to_k_as_the_distances_were_computed() {
        let reference = client(fake::honest()).await;
        // The right token at −0.3 instead of −0.1, and tokens 300..350 at −9.0 besides.
        let entry = client(Arc::new(|request: &Value| {
            let mut answer = fake::greedy(request, &fake::prompt_ids(request));
            let top = answer["choices"][0]["logprobs"]["top_logprobs"]
                .as_array_mut()
                .unwrap();
            for map in top.iter_mut().filter_map(Value::as_object_mut) {
                for lp in map.values_mut() {
                    if lp.as_f64() == Some(-0.1) {
                        *lp = serde_json::json!(-0.3);
                    }
                }
                for extra in 300..350 {
                    map.insert(format!("token_id:{extra}"), serde_json::json!(-9.0));
                }
            }
            Some(answer)
        }))
        .await;
        let items = items(&["ab"], 2);
        let prompts = reference_prompts(&reference, &items).await.unwrap();
        let outputs = take_outputs(&entry, &items, 2, false).await.unwrap();
        assert_eq!(outputs[0].top_k[0].len(), 51);
        let scored = reference_items(&reference, &outputs, &prompts, 2)
            .await
            .unwrap();
        // "ab" is [1, 97, 98]: the outputs are 99 and 100. The entry's two largest are
        // the right token and, of the 50 ties at −9.0, the lowest id.
        let item = &scored[0];
        assert_eq!(item.output_token_ids, vec![99, 100]);
        assert_eq!(
            item.entry_top_k,
            Some(vec![
                vec![(99, -300_000), (300, -9_000_000)],
                vec![(100, -300_000), (300, -9_000_000)],
            ])
        );
        assert_eq!(
            item.reference_top_k,
            Some(vec![vec![(99, -100_000)], vec![(100, -100_000)]])
        );
        // Token 300 against the reference's k-th (−0.1): 8.9 nats at each position.
        assert_eq!(item.position_micro_nats, vec![8_900_000, 8_900_000]);
        assert_eq!(
            correctness::item_positions_micro_nats(
                0,
                2,
                item.entry_top_k.as_deref().unwrap(),
                item.reference_top_k.as_deref().unwrap()
            ),
            Ok(item.position_micro_nats.clone())
        );
    }

    /// Regression (issue 10): a baseline server that strips BOS made every honest entry
    /// look wrong; now the round fails naming the difference.
    #[tokio::test]
    async fn a_baseline_that_strips_bos_fails_the_round_naming_the_difference() {
        let reference = client(fake::honest()).await;
        let baseline = client(echoing(|ids| ids[1..].to_vec())).await;
        let items = items(&["ab"], 4);
        let prompts = reference_prompts(&reference, &items).await.unwrap();
        // The baseline answers its echo alone: one token each.
        let echoes = take_outputs(&baseline, &items, 20, true).await.unwrap();
        assert_eq!(echoes[0].token_ids.len(), 1);
        let failure = baseline_echo_failure(&echoes, &prompts).unwrap();
        assert_eq!(
            failure,
            RoundFailure::ReferencePromptMismatch {
                item: 0,
                position: 0,
                reference: Some(1),
                baseline: Some(97),
            }
        );
        assert_eq!(
            failure.to_string(),
            "correctness item 0: the baseline's echoed prompt differs from the reference's \
             tokenization at position 0 (reference 1, baseline 97)"
        );
    }

    /// Regression (issue 10): an engine that answers correctly one request at a time
    /// (the correctness pass) but streams garbage under load passed. The sampled requests
    /// of the timed run, teacher-forced through the reference, disqualify it.
    #[tokio::test]
    async fn garbage_under_load_diverges_although_the_correctness_pass_is_right() {
        let reference = client(fake::honest()).await;
        let items = items(&["ab", "cd", "ef"], 4);
        // The correctness pass: right.
        let prompts = reference_prompts(&reference, &items).await.unwrap();
        let outputs = take_outputs(&reference, &items, 2, false).await.unwrap();
        let spec = CorrectnessSpec::default();
        let scored = reference_items(&reference, &outputs, &prompts, 2)
            .await
            .unwrap();
        assert!(scored.iter().all(|i| i.distance_micro_nats == 0));
        // Under load: item 2 got the right tokens, items 0 and 1 garbage (never the right
        // next token: −4.0 against a top-1 of −0.1, a gap of 3.9 nats per position).
        let kept = |item: u32, tokens: Vec<u32>| KeptRequest {
            item_index: item,
            prompt: items[item as usize].prompt.clone(),
            completed: true,
            text: tokens.iter().map(|&t| char::from(t as u8)).collect(),
            token_ids: Some(tokens),
        };
        let run = KeptRun {
            run: 0,
            probe: 4,
            requests: vec![
                kept(0, vec![50, 50, 50, 50]),
                kept(1, vec![7, 7, 7, 7]),
                kept(2, vec![103, 104, 105, 106]),
            ],
        };
        let seed = Seed32([3; 32]);
        let sample_spec = SampleSpec {
            seed: &seed,
            entry: 1,
            size: 3,
            bounds: LoadBounds {
                item_micro_nats: spec.effective_load_bound_micro_nats(),
                ..spec.effective_load_bounds()
            },
        };
        let sample = check_load_sample(&reference, sample_spec, std::slice::from_ref(&run))
            .await
            .unwrap();
        let LoadSampleCheck::Checked { requests } = &sample.runs[0].check else {
            panic!("{sample:?}");
        };
        let drawn: Vec<u32> = requests.iter().map(|r| r.item_index).collect();
        assert_eq!(drawn, sample::select_requests(&seed, 1, 0, &[0, 1, 2], 3));
        let gap = |item: u32| {
            requests
                .iter()
                .find(|r| r.item_index == item)
                .map(|r| r.gap_micro_nats)
        };
        assert_eq!(
            (gap(0), gap(1), gap(2)),
            (Some(3_900_000), Some(3_900_000), Some(0))
        );
        let dq = load_disqualification(&sample).unwrap();
        let first = drawn.iter().copied().find(|&i| i != 2).unwrap();
        assert_eq!(
            dq.reason,
            DisqualificationReason::LoadOutputsDiverge {
                run: 0,
                item: first,
                gap_micro_nats: 3_900_000,
                bound_micro_nats: 2_000_000,
            }
        );
        // The verifier's recomputation agrees.
        assert_eq!(
            sample::recheck(&sample, &seed),
            Ok(Some(LoadDivergence::Item {
                run: 0,
                item: first,
                gap_micro_nats: 3_900_000
            }))
        );
        // Every streamed text is its ids' text: checked, and no `text_not_ids`.
        assert_eq!(sample.text_against_ids, Some(TextAgainstIds::Checked));
        assert_eq!(requests[0].streamed_text, requests[0].reference_text);
        assert_eq!(text_disqualification(&sample), None);
        // Without token ids the run is not applicable, never passed.
        let mut blind = run.clone();
        for r in &mut blind.requests {
            r.token_ids = None;
        }
        let sample = check_load_sample(&reference, sample_spec, &[blind])
            .await
            .unwrap();
        assert!(matches!(
            &sample.runs[0].check,
            LoadSampleCheck::NotApplicable { reason } if reason.contains("no token ids")
        ));
        assert_eq!(load_disqualification(&sample), None);
    }

    /// Regression (issue 40): ids the reference refuses (a client error) made the scorer
    /// fail and the round `infra_failed`. They are the entry's `invalid_token_id`; the
    /// reference's own failures (a server error) stay the scorer's.
    #[test]
    fn ids_the_reference_refuses_are_the_entrys_invalid_token_id() {
        let status = |status| ClientError::Status {
            url: "http://reference/v1/completions".into(),
            status,
            body: "token 1258 is not an id below 258".into(),
        };
        let refused = teacher_forcing_failed(Some(2), 17, status(400));
        let dq = refused.invalid_token_id().unwrap();
        assert_eq!(
            dq.reason,
            DisqualificationReason::InvalidTokenId {
                run: Some(2),
                item: 17,
                status: 400
            }
        );
        assert_eq!(
            dq.detail,
            "run 2, item 17: the reference refused the generated token ids (status 400): ids \
             outside its vocabulary"
        );
        let gate = teacher_forcing_failed(None, 3, status(422)).invalid_token_id();
        assert_eq!(
            gate.map(|d| d.reason),
            Some(DisqualificationReason::InvalidTokenId {
                run: None,
                item: 3,
                status: 422
            })
        );
        let failed = teacher_forcing_failed(Some(0), 1, status(500));
        assert!(matches!(failed, GateError::Client { item: 1, .. }));
        assert_eq!(failed.invalid_token_id(), None);
    }

    /// Regression (issue 10): an engine that never answered hung the correctness step
    /// (each request only had the client's timeout, and there are many items).
    #[tokio::test]
    async fn a_stalling_engine_hits_the_correctness_deadline() {
        let entry = client(fake::stalling()).await;
        let items = items(&["ab"], 2);
        let deadline = std::time::Duration::from_millis(200);
        let stalled = within(
            deadline,
            "correctness outputs",
            take_outputs(&entry, &items, 2, false),
        )
        .await;
        assert!(
            matches!(
                stalled,
                Err(GateError::Deadline {
                    what: "correctness outputs",
                    deadline_s: 1
                })
            ),
            "{stalled:?}"
        );
        let reference = client(fake::stalling()).await;
        let stalled = within(
            deadline,
            "reference tokenization",
            reference_prompts(&reference, &items),
        )
        .await;
        assert!(
            matches!(
                stalled,
                Err(GateError::Deadline {
                    what: "reference tokenization",
                    ..
                })
            ),
            "{stalled:?}"
        );
    }

    #[test]
    fn token_ids_are_parsed_strictly() {
        assert_eq!(parse_token_id("token_id:42"), Some(42));
        assert_eq!(parse_token_id("42"), None);
        assert_eq!(parse_token_id("token_id:-1"), None);
    }

    fn profile(name: receipts::model::ApiProfileName) -> ApiProfile {
        receipts::model::ApiSpec {
            profile: Some(name),
            bos_token_id: Some(1),
            ..receipts::model::ApiSpec::default()
        }
        .resolve()
    }

    /// A server recording every body it gets, answering with `behaviour`.
    async fn recording(behaviour: fake::Behaviour) -> (String, Arc<std::sync::Mutex<Vec<Value>>>) {
        let bodies = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = Arc::clone(&bodies);
        let url = fake::serve(Arc::new(move |request: &Value| {
            seen.lock().unwrap().push(request.clone());
            behaviour(request)
        }))
        .await;
        (url, bodies)
    }

    /// Issue 15: the correctness client sent vLLM's extensions to every server. Each
    /// request body now follows the profile: the default (and vllm) as before; under
    /// llama-cpp-python no `ignore_eos`, no `return_tokens_as_token_ids`, its extra fields.
    #[tokio::test]
    async fn request_bodies_follow_the_profile() {
        use receipts::model::ApiProfileName as N;
        let client = CompletionsClient::new("http://127.0.0.1:1", "m", 1000);
        let vllm_greedy = json!({
            "model": "m", "prompt": "ab", "max_tokens": 3, "min_tokens": 3,
            "ignore_eos": true, "temperature": 0, "echo": true, "logprobs": 2,
            "return_tokens_as_token_ids": true,
        });
        assert_eq!(client.body("ab".into(), 3, 2, true), vllm_greedy);
        let vllm = client.clone().with_api(profile(N::Vllm));
        assert_eq!(vllm.body("ab".into(), 3, 2, true), vllm_greedy);
        assert_eq!(
            vllm.body(json!([1, 97]), 1, 2, false),
            json!({
                "model": "m", "prompt": [1, 97], "max_tokens": 1, "temperature": 0,
                "echo": true, "logprobs": 2, "return_tokens_as_token_ids": true,
            })
        );
        let lcp = client.clone().with_api(profile(N::LlamaCppPython));
        assert_eq!(
            lcp.body("ab".into(), 3, 2, true),
            json!({
                "model": "m", "prompt": "ab", "max_tokens": 3, "min_tokens": 3,
                "temperature": 0, "echo": true, "logprobs": 2,
                "repeat_penalty": 1.0, "top_k": 1,
            })
        );
        let server = client.with_api(profile(N::LlamaServer));
        assert_eq!(
            server.body("ab".into(), 3, 2, true),
            json!({
                "model": "m", "prompt": "ab", "max_tokens": 3, "min_tokens": 3,
                "ignore_eos": true, "temperature": 0, "echo": true, "logprobs": 2,
                "cache_prompt": false, "top_k": 1,
            })
        );
    }

    /// Regression (issue 40): a stream whose text is `z` everywhere, with the right ids,
    /// was scored. Each sampled request's text is held against the reference's text of
    /// its ids in the context of its prompt: the first that differs is `text_not_ids`;
    /// a profile without a detokenizer records `not_applicable`.
    #[tokio::test]
    async fn a_streamed_text_unlike_its_ids_is_text_not_ids() {
        let reference = client(fake::honest()).await;
        let items = items(&["ab", "cd"], 2);
        let kept = |item: u32, text: &str| KeptRequest {
            item_index: item,
            prompt: items[item as usize].prompt.clone(),
            completed: true,
            token_ids: Some(vec![99, 100]),
            text: text.to_owned(),
        };
        let run = |texts: [&str; 2]| KeptRun {
            run: 1,
            probe: 0,
            requests: vec![kept(0, texts[0]), kept(1, texts[1])],
        };
        let seed = Seed32([3; 32]);
        let spec = SampleSpec {
            seed: &seed,
            entry: 1,
            size: 2,
            bounds: LoadBounds {
                group_micro_nats: u64::MAX,
                item_micro_nats: u64::MAX,
                position_micro_nats: u64::MAX,
                max_positions_over: u32::MAX,
            },
        };
        let honest = check_load_sample(&reference, spec, &[run(["cd", "cd"])])
            .await
            .unwrap();
        assert_eq!(text_disqualification(&honest), None);
        let cheat = check_load_sample(&reference, spec, &[run(["cd", "zz"])])
            .await
            .unwrap();
        let LoadSampleCheck::Checked { requests } = &cheat.runs[0].check else {
            panic!("{cheat:?}");
        };
        let wrong = requests.iter().find(|r| r.item_index == 1).unwrap();
        assert_eq!(
            (
                wrong.streamed_text.as_deref(),
                wrong.reference_text.as_deref()
            ),
            (Some("zz"), Some("cd"))
        );
        assert_eq!(
            text_disqualification(&cheat).map(|d| d.reason),
            Some(DisqualificationReason::TextNotIds { run: 1, item: 1 })
        );
        // No detokenizer: recorded, never judged.
        let blind = client(fake::honest()).await.with_api(ApiProfile {
            detokenizer: None,
            ..ApiProfile::default()
        });
        let unchecked = check_load_sample(&blind, spec, &[run(["cd", "zz"])])
            .await
            .unwrap();
        assert!(matches!(
            unchecked.text_against_ids,
            Some(TextAgainstIds::NotApplicable { .. })
        ));
        assert_eq!(text_disqualification(&unchecked), None);
    }

    /// llama-cpp-python as issue 15 found it: logprobs keyed by token text, the echo
    /// without BOS, `POST /extras/tokenize {"input"}` adding BOS, `POST
    /// /extras/detokenize {"tokens"}` answering the text of the ids (BOS as nothing).
    fn text_keyed() -> fake::Behaviour {
        detokenizing(|ids| {
            ids.iter()
                .filter(|&&id| id != 1)
                .map(|&id| char::from(u8::try_from(id).unwrap()))
                .collect()
        })
    }

    /// [`text_keyed`] with the detokenizer answering `text(ids)`.
    fn detokenizing(text_of: fn(&[u32]) -> String) -> fake::Behaviour {
        let text = |t: &Value| -> Value {
            let id = t.as_str().and_then(parse_token_id).unwrap();
            json!(char::from(u8::try_from(id).unwrap()).to_string())
        };
        Arc::new(move |request: &Value| {
            if let Some(input) = request["input"].as_str() {
                return Some(json!({"tokens": fake::tokenize(input)}));
            }
            if let Some(ids) = request["tokens"].as_array() {
                let ids: Vec<u32> = ids
                    .iter()
                    .map(|v| u32::try_from(v.as_u64().unwrap()).unwrap())
                    .collect();
                return Some(json!({"text": text_of(&ids)}));
            }
            let mut answer = fake::greedy(request, &fake::prompt_ids(request));
            let logprobs = &mut answer["choices"][0]["logprobs"];
            let mut tokens: Vec<Value> = logprobs["tokens"]
                .as_array()
                .unwrap()
                .iter()
                .map(text)
                .collect();
            let mut lps = logprobs["token_logprobs"].as_array().unwrap().clone();
            let mut top: Vec<Value> = logprobs["top_logprobs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|position| match position.as_object() {
                    Some(map) => Value::Object(
                        map.iter()
                            .map(|(k, v)| (text(&json!(k)).as_str().unwrap().to_owned(), v.clone()))
                            .collect(),
                    ),
                    None => Value::Null,
                })
                .collect();
            if request["echo"] == json!(true) {
                tokens.remove(0);
                lps.remove(0);
                top.remove(0);
            }
            *logprobs = json!({"tokens": tokens, "token_logprobs": lps, "top_logprobs": top});
            Some(answer)
        })
    }

    /// Issue 15: text-keyed logprobs were "not `token_id:<id>`" and the echo lacked the
    /// BOS the model consumed. Under the llama-cpp-python profile the texts map to ids
    /// through its tokenizer endpoint (its BOS left out), and the BOS is put back in
    /// front of the echo, so the echo is the honest reference's tokenization.
    #[tokio::test]
    async fn text_keyed_logprobs_map_through_the_tokenizer_and_bos_is_put_back() {
        use receipts::model::ApiProfileName as N;
        let (url, bodies) = recording(text_keyed()).await;
        let entry = CompletionsClient::new(&url, "m", 5_000).with_api(profile(N::LlamaCppPython));
        let items = items(&["ab"], 2);
        let outputs = take_outputs(&entry, &items, 2, false).await.unwrap();
        assert_eq!(outputs[0].prompt_token_ids, vec![1, 97, 98]);
        assert_eq!(outputs[0].token_ids, vec![99, 100]);
        let mut top = outputs[0].top_k.clone();
        top.iter_mut().for_each(|p| p.sort_unstable());
        assert_eq!(top, vec![vec![(99, -100_000)], vec![(100, -100_000)]]);
        let reference = client(fake::honest()).await;
        let prompts = reference_prompts(&reference, &items).await.unwrap();
        assert_eq!(echo_disqualification(&outputs, &prompts), None);
        // One completions request, then one tokenizer request per distinct text.
        let seen = bodies.lock().unwrap().clone();
        assert_eq!(seen[1], json!({"model": "m", "input": "a"}));
        let asked: Vec<&str> = seen[1..]
            .iter()
            .map(|b| b["input"].as_str().unwrap())
            .collect();
        assert_eq!(asked, ["a", "b", "c", "d"]);
        assert_eq!(seen.len(), 5);
    }

    /// Issue 15: teacher forcing sent token-id prompts, which llama-cpp-python refuses
    /// (HTTP 500), so no entry could be judged. Under a profile without token-id prompts
    /// the ids are detokenized by the server (the BOS it adds left out), the text's
    /// tokenization checked to be exactly the ids, and the text sent with `echo`.
    #[tokio::test]
    async fn without_token_id_prompts_teacher_forcing_sends_the_round_tripped_text() {
        use receipts::model::ApiProfileName as N;
        let (url, bodies) = recording(text_keyed()).await;
        let reference =
            CompletionsClient::new(&url, "m", 5_000).with_api(profile(N::LlamaCppPython));
        let forced = reference
            .teacher_forced(&[1, 97], &[98, 7], 2)
            .await
            .unwrap();
        assert_eq!(
            forced,
            TeacherForced {
                top_k: vec![vec![(98, -100_000)], vec![(7, -4_000_000), (99, -100_000)]],
                token_micro_nats: vec![-100_000, -4_000_000],
            }
        );
        let seen = bodies.lock().unwrap().clone();
        assert_eq!(
            seen[..3],
            [
                json!({"model": "m", "tokens": [97, 98, 7]}),
                json!({"model": "m", "input": "ab\u{7}"}),
                json!({
                    "model": "m", "prompt": "ab\u{7}", "max_tokens": 1, "temperature": 0,
                    "echo": true, "logprobs": 2, "repeat_penalty": 1.0, "top_k": 1,
                }),
            ]
        );
        // The echo's texts are then mapped to ids, one tokenizer request per text
        let asked: Vec<&str> = seen[3..]
            .iter()
            .map(|b| b["input"].as_str().unwrap())
            .collect();
        // (the echo's `a` `b` `\u{7}`, the generated `\u{8}`, then `c` of the top-k).
        assert_eq!(asked, ["a", "b", "\u{7}", "\u{8}", "c"]);
    }

    /// Issue 15: a text that does not tokenize back to its ids would teacher-force the
    /// reference on other tokens than the entry's: a typed error naming the first
    /// differing position, and no completions request is sent.
    #[tokio::test]
    async fn a_text_that_does_not_round_trip_is_a_typed_error_not_a_score() {
        use receipts::model::ApiProfileName as N;
        // A detokenizer that writes `b` (98) as `a`.
        let (url, bodies) = recording(detokenizing(|ids| {
            ids.iter()
                .filter(|&&id| id != 1)
                .map(|&id| {
                    if id == 98 {
                        'a'
                    } else {
                        char::from(u8::try_from(id).unwrap())
                    }
                })
                .collect()
        }))
        .await;
        let reference =
            CompletionsClient::new(&url, "m", 5_000).with_api(profile(N::LlamaCppPython));
        let error = reference
            .teacher_forced(&[1, 97], &[98, 99], 2)
            .await
            .unwrap_err();
        assert!(
            matches!(
                error,
                ClientError::TextRoundTrip {
                    len: 4,
                    position: 2,
                    expected: Some(98),
                    got: Some(97),
                    ..
                }
            ),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "teacher forcing from text: the server's tokenization of the text \"aac\" differs \
             from the 4 ids it was made of at position 2 (id 98, text's 97): the sequence \
             cannot be teacher-forced without token-id prompts (`backend.api.token_id_prompts`)"
        );
        let seen = bodies.lock().unwrap().clone();
        assert_eq!(
            seen,
            [
                json!({"model": "m", "tokens": [97, 98, 99]}),
                json!({"model": "m", "input": "aac"}),
            ]
        );
        // A profile without token-id prompts and without a detokenizer names the field.
        let api = ApiProfile {
            detokenizer: None,
            ..profile(N::LlamaCppPython)
        };
        let bare = CompletionsClient::new(&url, "m", 5_000).with_api(api);
        let error = bare.teacher_forced(&[1, 97], &[98], 2).await.unwrap_err();
        assert!(
            matches!(
                error,
                ClientError::Unsupported {
                    field: "backend.api.detokenizer",
                    ..
                }
            ),
            "{error:?}"
        );
        assert_eq!(bodies.lock().unwrap().len(), 2);
    }

    /// Text-keyed logprobs under a profile with no tokenizer endpoint cannot be mapped:
    /// an error naming the field, never a guessed id.
    #[tokio::test]
    async fn text_tokens_without_a_tokenizer_name_the_field() {
        let api = ApiProfile {
            token_count: receipts::model::TokenCount::Usage,
            token_ids: receipts::model::TokenIds::None,
            ..ApiProfile::default()
        };
        let client = client(text_keyed()).await.with_api(api);
        let error = client.greedy("ab", 2, 2).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "the engine's API profile lacks token ids of logprob tokens (the server returns \
             texts and the profile names no tokenizer endpoint): set \
             `backend.api.tokenizer` in `[backend.api]`"
        );
    }

    #[tokio::test]
    async fn top_logprobs_are_read_by_position() {
        let client = CompletionsClient::new("http://127.0.0.1:1", "m", 1000);
        let logprobs = json!({
            "tokens": ["token_id:1", "token_id:2", "token_id:3"],
            "top_logprobs": [null, {"token_id:2": -0.5, "token_id:9": -1.5}, {"token_id:3": -0.25}],
        });
        assert_eq!(client.tokens(&logprobs, 1).await.unwrap(), vec![2, 3]);
        let mut top = client.top_logprobs(&logprobs, 1, 2).await.unwrap();
        top[0].sort_by_key(|(t, _)| *t);
        assert_eq!(
            top,
            vec![vec![(2, -500_000), (9, -1_500_000)], vec![(3, -250_000)]]
        );
        assert!(client.top_logprobs(&logprobs, 0, 1).await.is_err());
        assert!(client.top_logprobs(&logprobs, 2, 2).await.is_err());
    }
}
