//! The OpenAI/vLLM completions API: request validation and response JSON, with no I/O.
//!
//! A request body is read field by field from a `serde_json::Value` so that every error
//! names its field: unknown fields are ignored (as vLLM does), a known field of the wrong
//! type, out of range, or a prompt that does not fit in the context is an [`ApiError`]
//! with status 400 and `param` set to the field. Responses follow vLLM's
//! `/v1/completions` shapes: `choices[].text`, `choices[].logprobs` with `tokens`,
//! `token_logprobs`, `top_logprobs` and `text_offset` (byte offsets into `text`),
//! `finish_reason` and `stop_reason`, `usage`, and with `return_token_ids` vLLM's
//! `prompt_token_ids` and `token_ids` — in a stream, every chunk's choice carries the
//! `token_ids` it adds (empty for the echoed prompt and a lone finish), so a client can
//! count the tokens it received.

use serde_json::{Map, Value, json};

use crate::scheduler::{Event, Finish, FinishReason, GenerationRequest, TokenLogprob};
use crate::tokenizer::{self, VOCAB_SIZE};

/// The most top logprobs a request may ask for (vLLM's default `max_logprobs`).
pub const MAX_LOGPROBS: usize = 20;
/// `max_tokens` when the request does not say (OpenAI's default).
pub const DEFAULT_MAX_TOKENS: usize = 16;

/// An error answered as `{"error": {"message", "type", "param", "code"}}`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    /// HTTP status (400 for bad requests, 413 for a body over 2 MiB, 503 while starting).
    pub status: u16,
    /// Human message naming the field and value.
    pub message: String,
    /// The offending request field, if one.
    pub param: Option<String>,
}

impl ApiError {
    /// A 400 about `param`.
    pub fn bad_request(param: &str, message: impl Into<String>) -> Self {
        Self {
            status: 400,
            message: message.into(),
            param: Some(param.to_string()),
        }
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        let kind = match self.status {
            400 => "BadRequestError",
            404 => "NotFoundError",
            413 => "RequestTooLargeError",
            503 => "ServiceUnavailableError",
            _ => "InternalServerError",
        };
        json!({"error": {
            "message": self.message,
            "type": kind,
            "param": self.param,
            "code": self.status,
        }})
    }
}

/// A validated completion request: what to generate plus how to answer.
#[derive(Clone, Debug, PartialEq)]
pub struct CompletionRequest {
    /// What the engine thread needs.
    pub generation: GenerationRequest,
    /// The prompt as text, for `echo` (token-id prompts are decoded, specials skipped).
    pub prompt_text: String,
    /// Return the prompt before the output (and its logprobs if `logprobs` is set).
    pub echo: bool,
    /// Answer as server-sent events.
    pub stream: bool,
    /// With `stream`: a last chunk with `usage` (`stream_options.include_usage`).
    pub include_usage: bool,
    /// Spell tokens `token_id:<id>` (vLLM's `return_tokens_as_token_ids`).
    pub tokens_as_ids: bool,
    /// Add `prompt_token_ids` and `token_ids` to the choice (vLLM's `return_token_ids`).
    pub return_token_ids: bool,
}

impl CompletionRequest {
    /// Validates a request body for a model of `context` tokens. Errors: 400 naming the
    /// field (or the body, when it is not JSON).
    pub fn parse(body: &[u8], context: usize) -> Result<Self, ApiError> {
        let value: Value = serde_json::from_slice(body).map_err(|err| json_error(body, &err))?;
        let Value::Object(fields) = value else {
            return Err(ApiError {
                status: 400,
                message: "the request body must be a JSON object".into(),
                param: None,
            });
        };
        let f = Fields(&fields);
        let (prompt, prompt_text) = parse_prompt(fields.get("prompt"))?;
        f.string("model")?;
        if let Some(n) = f.uint("n")?
            && n != 1
        {
            return Err(ApiError::bad_request(
                "n",
                format!("`n` = {n}: only 1 is supported"),
            ));
        }
        let max_tokens = f.uint("max_tokens")?.unwrap_or(DEFAULT_MAX_TOKENS as u64);
        let temperature = match fields.get("temperature") {
            None | Some(Value::Null) => 1.0,
            Some(v) => match v.as_f64() {
                Some(t) if t.is_finite() && t >= 0.0 => t as f32,
                _ => {
                    return Err(ApiError::bad_request(
                        "temperature",
                        format!("`temperature` = {v}: must be a number ≥ 0"),
                    ));
                }
            },
        };
        let logprobs = f.uint("logprobs")?;
        if let Some(k) = logprobs
            && k > MAX_LOGPROBS as u64
        {
            return Err(ApiError::bad_request(
                "logprobs",
                format!("`logprobs` = {k}: at most {MAX_LOGPROBS} are supported"),
            ));
        }
        let logprobs = logprobs.map(|k| k as usize);
        let min_tokens = f.uint("min_tokens")?.unwrap_or(0);
        if min_tokens > max_tokens {
            return Err(ApiError::bad_request(
                "min_tokens",
                format!("`min_tokens` = {min_tokens}: must be at most `max_tokens` ({max_tokens})"),
            ));
        }
        if prompt.len() > context {
            return Err(ApiError::bad_request(
                "prompt",
                format!(
                    "the prompt has {} tokens, more than this model's context of {context} tokens",
                    prompt.len()
                ),
            ));
        }
        let room = (context - prompt.len()) as u64;
        if max_tokens > room {
            return Err(ApiError::bad_request(
                "max_tokens",
                format!(
                    "`max_tokens` = {max_tokens}: this model's context is {context} tokens and \
                     the prompt has {}, so at most {room} can be generated",
                    prompt.len()
                ),
            ));
        }
        let echo = f.bool("echo")?.unwrap_or(false);
        let stream = f.bool("stream")?.unwrap_or(false);
        let include_usage = match fields.get("stream_options") {
            None | Some(Value::Null) => false,
            Some(Value::Object(options)) => Fields(options)
                .bool("include_usage")
                .map_err(|mut e| {
                    e.param = Some("stream_options.include_usage".into());
                    e
                })?
                .unwrap_or(false),
            Some(v) => {
                return Err(ApiError::bad_request(
                    "stream_options",
                    format!("`stream_options` = {v}: must be an object"),
                ));
            }
        };
        let generation = GenerationRequest {
            prompt,
            // Both are at most `context` here, which is a usize.
            max_tokens: max_tokens as usize,
            temperature,
            seed: f.uint("seed")?,
            stop: parse_stop(fields.get("stop"))?,
            logprobs,
            prompt_logprobs: if echo { logprobs } else { None },
            ignore_eos: f.bool("ignore_eos")?.unwrap_or(false),
            min_tokens: min_tokens as usize,
        };
        Ok(Self {
            generation,
            prompt_text,
            echo,
            stream,
            include_usage,
            tokens_as_ids: f.bool("return_tokens_as_token_ids")?.unwrap_or(false),
            return_token_ids: f.bool("return_token_ids")?.unwrap_or(false),
        })
    }
}

/// Typed access to optional fields; `null` counts as absent.
struct Fields<'a>(&'a Map<String, Value>);

impl Fields<'_> {
    fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(name).filter(|v| !v.is_null())
    }

    fn uint(&self, name: &str) -> Result<Option<u64>, ApiError> {
        self.get(name)
            .map(|v| {
                v.as_u64().ok_or_else(|| {
                    ApiError::bad_request(name, format!("`{name}` = {v}: must be an integer ≥ 0"))
                })
            })
            .transpose()
    }

    fn bool(&self, name: &str) -> Result<Option<bool>, ApiError> {
        self.get(name)
            .map(|v| {
                v.as_bool().ok_or_else(|| {
                    ApiError::bad_request(name, format!("`{name}` = {v}: must be true or false"))
                })
            })
            .transpose()
    }

    fn string(&self, name: &str) -> Result<Option<&str>, ApiError> {
        self.get(name)
            .map(|v| {
                v.as_str().ok_or_else(|| {
                    ApiError::bad_request(name, format!("`{name}` = {v}: must be a string"))
                })
            })
            .transpose()
    }
}

/// `POST /detokenize` (vLLM's route): `{"tokens": [ids…]}` → `{"text": …}`, the ids'
/// bytes as UTF-8 (invalid sequences replaced), specials skipped — the text a stream of
/// those ids shows, which the runner holds a streamed text against.
///
/// Errors: 400 for a body that is not such an object or an id outside the vocabulary.
pub fn detokenize(body: &[u8]) -> Result<Value, ApiError> {
    let value: Value = serde_json::from_slice(body).map_err(|err| json_error(body, &err))?;
    let bad = |why: &str| ApiError::bad_request("tokens", format!("`tokens`: {why}"));
    let ids = value
        .get("tokens")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("a list of token ids is required"))?
        .iter()
        .map(|item| {
            item.as_u64()
                .filter(|&id| id < VOCAB_SIZE as u64)
                .map(|id| id as u32)
                .ok_or_else(|| bad(&format!("token {item} is not an id below {VOCAB_SIZE}")))
        })
        .collect::<Result<Vec<u32>, _>>()?;
    let text = String::from_utf8_lossy(&tokenizer::decode_bytes(&ids)).into_owned();
    Ok(json!({ "text": text }))
}

/// A body serde_json refused. Invalid UTF-8 is reported against the field whose string
/// holds it, found by parsing a lossy copy of the body.
fn json_error(body: &[u8], err: &serde_json::Error) -> ApiError {
    if std::str::from_utf8(body).is_err() {
        let lossy = String::from_utf8_lossy(body);
        if let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(&lossy) {
            let contains_replacement = |v: &Value| v.to_string().contains('\u{FFFD}');
            if let Some((name, _)) = fields.iter().find(|(_, v)| contains_replacement(v)) {
                return ApiError::bad_request(name, format!("`{name}` is not valid UTF-8"));
            }
        }
        return ApiError {
            status: 400,
            message: "the request body is not valid UTF-8".into(),
            param: None,
        };
    }
    ApiError {
        status: 400,
        message: format!("the request body is not valid JSON: {err}"),
        param: None,
    }
}

/// `prompt`: a string (BOS + its bytes), a list of token ids (used as given), or a list
/// holding one of those.
fn parse_prompt(value: Option<&Value>) -> Result<(Vec<u32>, String), ApiError> {
    let bad = |why: &str| ApiError::bad_request("prompt", format!("`prompt`: {why}"));
    match value {
        None | Some(Value::Null) => Err(bad("is required")),
        Some(Value::String(text)) => Ok((tokenizer::encode_prompt(text), text.clone())),
        Some(Value::Array(items)) if items.len() == 1 && !items[0].is_number() => {
            parse_prompt(items.first())
        }
        Some(Value::Array(items)) => {
            if items.is_empty() {
                return Err(bad("must hold at least one token"));
            }
            let ids = items
                .iter()
                .map(|item| {
                    item.as_u64()
                        .filter(|&id| id < VOCAB_SIZE as u64)
                        .map(|id| id as u32)
                        .ok_or_else(|| {
                            bad(&format!("token {item} is not an id below {VOCAB_SIZE}"))
                        })
                })
                .collect::<Result<Vec<u32>, _>>()?;
            let text = String::from_utf8_lossy(&tokenizer::decode_bytes(&ids)).into_owned();
            Ok((ids, text))
        }
        Some(v) => Err(bad(&format!("{v} must be a string or a list of token ids"))),
    }
}

/// `stop`: a string or a list of strings; empty strings are ignored.
fn parse_stop(value: Option<&Value>) -> Result<Vec<Vec<u8>>, ApiError> {
    let bad = |v: &Value| {
        ApiError::bad_request(
            "stop",
            format!("`stop` = {v}: must be a string or a list of strings"),
        )
    };
    let strings: Vec<&str> = match value {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().ok_or_else(|| bad(i)))
            .collect::<Result<_, _>>()?,
        Some(v) => return Err(bad(v)),
    };
    Ok(strings
        .into_iter()
        .filter(|s| !s.is_empty())
        .map(|s| s.as_bytes().to_vec())
        .collect())
}

/// Accumulates a request's events into the response, for the whole body or chunk by
/// chunk.
#[derive(Debug)]
pub struct ResponseBuilder {
    request: CompletionRequest,
    id: String,
    created: u64,
    model: String,
    prompt_logprobs: Vec<Option<TokenLogprob>>,
    tokens: Vec<u32>,
    token_logprobs: Vec<Option<TokenLogprob>>,
    output_bytes: Vec<u8>,
    /// Bytes of `output_bytes` already sent in stream chunks.
    streamed: usize,
    finish: Option<Finish>,
}

impl ResponseBuilder {
    /// A builder for `request`, answered with `id` (e.g. `cmpl-…`), `created` (Unix
    /// seconds) and `model` (the served name).
    pub fn new(request: CompletionRequest, id: String, created: u64, model: String) -> Self {
        Self {
            request,
            id,
            created,
            model,
            prompt_logprobs: Vec::new(),
            tokens: Vec::new(),
            token_logprobs: Vec::new(),
            output_bytes: Vec::new(),
            streamed: 0,
            finish: None,
        }
    }

    /// The request being answered.
    pub fn request(&self) -> &CompletionRequest {
        &self.request
    }

    /// Whether the last event has been seen.
    pub fn finished(&self) -> bool {
        self.finish.is_some()
    }

    /// Records an event.
    pub fn push(&mut self, event: Event) {
        match event {
            Event::PromptLogprobs(logprobs) => self.prompt_logprobs = logprobs,
            Event::Token {
                token,
                logprob,
                finish,
            } => {
                self.tokens.push(token);
                self.token_logprobs.push(logprob);
                self.output_bytes.extend(tokenizer::token_bytes(token));
                self.finish = finish;
            }
            Event::Finished(finish) => self.finish = Some(finish),
        }
    }

    /// The whole (non-streamed) response.
    pub fn body(&self) -> Value {
        let mut text = if self.request.echo {
            self.request.prompt_text.clone()
        } else {
            String::new()
        };
        text.push_str(&String::from_utf8_lossy(
            &self.output_bytes[..self.output_end()],
        ));
        let mut choice = json!({
            "index": 0,
            "text": text,
            "logprobs": self.logprobs_json(true, 0..self.tokens.len()),
            "finish_reason": self.finish_reason(),
            "stop_reason": self.stop_reason(),
        });
        if self.request.return_token_ids {
            choice["prompt_token_ids"] = json!(self.request.generation.prompt);
            choice["token_ids"] = json!(self.tokens);
        }
        json!({
            "id": self.id,
            "object": "text_completion",
            "created": self.created,
            "model": self.model,
            "choices": [choice],
            "usage": self.usage(),
        })
    }

    /// The stream chunk for the event just pushed: the echoed prompt for
    /// `PromptLogprobs` (or, without logprobs, before the first token), one chunk per
    /// token, and a chunk for a lone `Finished`. Text that might still become part of a
    /// stop string, or is an incomplete UTF-8 character, is held back until it is
    /// settled, so the chunks' texts concatenate to the non-streamed `text`. With
    /// `return_token_ids` the choice's `token_ids` holds the chunk's generated token (none
    /// for the prompt and a lone finish), so they concatenate to the non-streamed
    /// `token_ids`.
    pub fn chunk_for_last(&mut self, event_kind: ChunkKind) -> Option<Value> {
        let (text, logprobs) = match event_kind {
            ChunkKind::Prompt => {
                if !self.request.echo {
                    return None;
                }
                (
                    self.request.prompt_text.clone(),
                    self.logprobs_json(true, 0..0),
                )
            }
            ChunkKind::Token | ChunkKind::Finished => {
                let end = if self.finish.is_some() {
                    self.output_end()
                } else {
                    self.settled_end()
                };
                let start = self.streamed.min(end);
                let text = String::from_utf8_lossy(&self.output_bytes[start..end]).into_owned();
                self.streamed = end;
                let logprobs = match event_kind {
                    ChunkKind::Token => {
                        let last = self.tokens.len().saturating_sub(1);
                        self.logprobs_json(false, last..self.tokens.len())
                    }
                    _ => Value::Null,
                };
                (text, logprobs)
            }
        };
        let mut choice = json!({
            "index": 0,
            "text": text,
            "logprobs": logprobs,
            "finish_reason": self.finish_reason(),
            "stop_reason": self.stop_reason(),
        });
        if self.request.return_token_ids {
            choice["token_ids"] = match (event_kind, self.tokens.last()) {
                (ChunkKind::Token, Some(&token)) => json!([token]),
                _ => json!([]),
            };
        }
        Some(json!({
            "id": self.id,
            "object": "text_completion",
            "created": self.created,
            "model": self.model,
            "choices": [choice],
        }))
    }

    /// The last stream chunk with `usage` and no choices (`include_usage`).
    pub fn usage_chunk(&self) -> Value {
        json!({
            "id": self.id,
            "object": "text_completion",
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": self.usage(),
        })
    }

    fn usage(&self) -> Value {
        let prompt = self.request.generation.prompt.len();
        json!({
            "prompt_tokens": prompt,
            "completion_tokens": self.tokens.len(),
            "total_tokens": prompt + self.tokens.len(),
        })
    }

    /// Where the output text ends: before the stop string, if one matched.
    fn output_end(&self) -> usize {
        match &self.finish {
            Some(Finish {
                stop: Some((_, at)),
                ..
            }) => *at,
            _ => self.output_bytes.len(),
        }
    }

    /// How much of the output can be streamed now: not a tail that is a proper prefix of
    /// a stop string, nor an incomplete UTF-8 character.
    fn settled_end(&self) -> usize {
        let bytes = &self.output_bytes;
        let mut end = bytes.len();
        for stop in &self.request.generation.stop {
            for keep in (1..stop.len()).rev() {
                if keep <= bytes.len() && bytes.ends_with(&stop[..keep]) {
                    end = end.min(bytes.len() - keep);
                    break;
                }
            }
        }
        let mut at = 0;
        while at < end {
            match std::str::from_utf8(&bytes[at..end]) {
                Ok(_) => break,
                Err(err) => match err.error_len() {
                    Some(len) => at += err.valid_up_to() + len,
                    None => return at + err.valid_up_to(),
                },
            }
        }
        end
    }

    fn finish_reason(&self) -> Value {
        match self.finish.as_ref().map(|f| f.reason) {
            Some(FinishReason::Length) => json!("length"),
            Some(FinishReason::Stop) => json!("stop"),
            None => Value::Null,
        }
    }

    fn stop_reason(&self) -> Value {
        match &self.finish {
            Some(Finish {
                stop: Some((text, _)),
                ..
            }) => json!(text),
            _ => Value::Null,
        }
    }

    /// `logprobs` for the prompt (when `with_prompt`, echo and logprobs are set) and the
    /// generated tokens in `range`; `null` when the request did not ask for logprobs.
    fn logprobs_json(&self, with_prompt: bool, range: std::ops::Range<usize>) -> Value {
        if self.request.generation.logprobs.is_none() {
            return Value::Null;
        }
        let as_ids = self.request.tokens_as_ids;
        let mut tokens = Vec::new();
        let mut token_logprobs = Vec::new();
        let mut top_logprobs = Vec::new();
        let mut text_offset = Vec::new();
        let mut entry = |token: u32, lp: Option<&TokenLogprob>, offset: &mut usize| {
            tokens.push(json!(tokenizer::token_string(token, as_ids)));
            text_offset.push(json!(*offset));
            *offset += usize::from(tokenizer::token_bytes(token).is_some());
            match lp {
                None => {
                    token_logprobs.push(Value::Null);
                    top_logprobs.push(Value::Null);
                }
                Some(lp) => {
                    token_logprobs.push(json!(lp.logprob));
                    let mut top = Map::new();
                    for &(t, l) in &lp.top {
                        top.insert(tokenizer::token_string(t, as_ids), json!(l));
                    }
                    top.insert(tokenizer::token_string(token, as_ids), json!(lp.logprob));
                    top_logprobs.push(Value::Object(top));
                }
            }
        };
        if with_prompt && self.request.echo {
            let mut prompt_offset = 0;
            for (i, &token) in self.request.generation.prompt.iter().enumerate() {
                let lp = self.prompt_logprobs.get(i).and_then(Option::as_ref);
                entry(token, lp, &mut prompt_offset);
            }
        }
        // Byte offsets into the full `text`: after the echoed prompt, one byte per
        // non-special token before this one.
        let echoed = if self.request.echo {
            self.request.prompt_text.len()
        } else {
            0
        };
        let earlier = &self.tokens[..range.start];
        let mut offset = echoed
            + earlier
                .iter()
                .filter(|&&t| tokenizer::token_bytes(t).is_some())
                .count();
        for i in range {
            entry(self.tokens[i], self.token_logprobs[i].as_ref(), &mut offset);
        }
        json!({
            "tokens": tokens,
            "token_logprobs": token_logprobs,
            "top_logprobs": top_logprobs,
            "text_offset": text_offset,
        })
    }
}

/// Which event a stream chunk answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkKind {
    /// The prompt (echo).
    Prompt,
    /// A generated token.
    Token,
    /// The end, without a token.
    Finished,
}
