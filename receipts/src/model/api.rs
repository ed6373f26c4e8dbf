//! The engine API profile of a campaign (`[backend.api]`, content/engines.md): how referee
//! talks to the engine's OpenAI-compatible server — which route says it is ready, how
//! output tokens are counted and their ids obtained, whether prompts may be token ids,
//! how the server's echo shows BOS, which extra request fields it needs and which
//! environment variables its command gets.
//!
//! A campaign writes [`ApiSpec`] (every field optional, a named built-in `profile` as its
//! base); [`ApiSpec::resolve`] gives the [`ApiProfile`] the runner uses. Without
//! `[backend.api]` the profile is [`ApiProfile::default`]: exactly what referee did
//! before profiles existed (`/health`, then `/v1/models`; token ids from vLLM's
//! `return_token_ids`), so campaigns and bundles frozen before it are unchanged.
//!
//! The built-in profiles ([`ApiProfileName`]) record the fields each server relies on and
//! where they come from; a profile never run against its real server here says so
//! ([`ApiProfileName::tested_against_real_server`]), and every receipt of a round that
//! uses it carries that ([`super::EngineApi`]).

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use super::ModelError;
use super::measurement::TokenCount;

/// A built-in API profile (content/engines.md). Each one's fields and their sources are
/// in [`ApiProfileName::profile`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ApiProfileName {
    /// vLLM's OpenAI-compatible server (`vllm serve`).
    Vllm,
    /// SGLang's OpenAI-compatible server (`python -m sglang.launch_server`).
    Sglang,
    /// llama.cpp's own C++ server (`llama-server`).
    LlamaServer,
    /// llama-cpp-python's server (`python -m llama_cpp.server`, PyPI
    /// `llama-cpp-python[server]`).
    LlamaCppPython,
}

impl ApiProfileName {
    /// The kebab-case name, as written in `campaign.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Vllm => "vllm",
            Self::Sglang => "sglang",
            Self::LlamaServer => "llama-server",
            Self::LlamaCppPython => "llama-cpp-python",
        }
    }

    /// Whether this profile was run against its real server by referee's own CI
    /// (`.ci/run`); `false` means "untested against a real server", which the docs and
    /// every receipt that uses it say. Only `llama-cpp-python` is: `.ci/run` runs
    /// scripts/llama-cpp-python-bench, whose round against llama-cpp-python 0.3.36's
    /// server must end `complete` with both entries scored (content/engines.md).
    pub fn tested_against_real_server(self) -> bool {
        matches!(self, Self::LlamaCppPython)
    }

    /// The profile's fields. Sources, per server:
    /// - **vllm**: `vllm/entrypoints/openai/protocol.py` (`CompletionRequest`:
    ///   `return_token_ids` — "token_ids contains the delta tokens for each chunk" in
    ///   streaming —, `return_tokens_as_token_ids` — logprob tokens as
    ///   `"token_id:{token_id}"` —, `ignore_eos`, `min_tokens`, `stream_options`), the
    ///   `/health`, `/tokenize` (`{"prompt"}` → `{"tokens"}`) and `/detokenize`
    ///   (`{"tokens"}` → `{"prompt"}`, read as the text) routes of
    ///   `vllm/entrypoints/openai/api_server.py`; prompts may be token-id lists.
    /// - **sglang**, **llama-server**: no detokenizer (a streamed text is not held
    ///   against the ids: `not_applicable`, and their streams carry no ids anyway).
    /// - **sglang**: SGLang's native API docs (`docs/basic_usage/native_api.md`: `/health`,
    ///   `/tokenize`) and sampling parameters (`ignore_eos`, `min_new_tokens`); its
    ///   OpenAI completions stream carries no token ids, so tokens are counted from
    ///   `usage` (self-reported).
    /// - **llama-server**: `tools/server/README.md` of llama.cpp (`GET /health`, 503
    ///   while loading; `POST /tokenize` `{"content"}` → `{"tokens"}`; `prompt` may be an
    ///   array of token ids; `cache_prompt`, `n_probs`); the OpenAI stream carries no ids,
    ///   so tokens are counted from `usage`.
    /// - **llama-cpp-python** 0.3.36 (read from the installed package): `llama_cpp/server/app.py`
    ///   (routes: no `/health`; `GET /v1/models`; `POST /extras/tokenize` `{"input"}` →
    ///   `{"tokens"}`, BOS added, special tokens parsed; `POST /extras/detokenize`
    ///   `{"tokens": [ids…]}` → `{"text"}`, `Llama.detokenize` without special tokens, so a
    ///   BOS decodes to nothing) and `llama_cpp/server/settings.py`
    ///   (`interrupt_requests`, default true: a stream is cut when another request
    ///   arrives unless the server runs with `--interrupt_requests False`) and
    ///   `llama_cpp/server/types.py` (`CreateCompletionRequest`: `prompt` is a string or
    ///   a list of strings — no token ids —, `min_tokens`, `logprobs`, `top_k` default
    ///   40, `repeat_penalty` default 1.1, no `ignore_eos`, no `stream_options`):
    ///   logprobs come keyed by token *text*, each streamed token with its own
    ///   `logprobs.tokens` entry, so tokens are counted from those entries and their ids
    ///   found with `/tokenize`; the echo strips BOS. Prompts are texts only, so the
    ///   reference is teacher-forced from the detokenized ids, checked to tokenize back
    ///   to them (`token_id_prompts = false`, `detokenizer`).
    pub fn profile(self) -> ApiProfile {
        let base = ApiProfile {
            name: Some(self),
            ..ApiProfile::default()
        };
        match self {
            Self::Vllm => ApiProfile {
                readiness: vec!["/health".into()],
                tokenizer: Some(Tokenizer {
                    route: "/tokenize".into(),
                    field: "prompt".into(),
                }),
                ..base
            },
            Self::Sglang => ApiProfile {
                readiness: vec!["/health".into()],
                token_count: TokenCount::Usage,
                token_ids: TokenIds::None,
                detokenizer: None,
                tokenizer: Some(Tokenizer {
                    route: "/tokenize".into(),
                    field: "prompt".into(),
                }),
                ..base
            },
            Self::LlamaServer => ApiProfile {
                readiness: vec!["/health".into()],
                token_count: TokenCount::Usage,
                token_ids: TokenIds::None,
                detokenizer: None,
                tokenizer: Some(Tokenizer {
                    route: "/tokenize".into(),
                    field: "content".into(),
                }),
                extra: [
                    ("cache_prompt".to_owned(), ExtraValue::Bool(false)),
                    ("top_k".to_owned(), ExtraValue::Int(1)),
                ]
                .into(),
                ..base
            },
            Self::LlamaCppPython => ApiProfile {
                readiness: vec!["/v1/models".into()],
                token_count: TokenCount::Logprobs,
                token_ids: TokenIds::Tokenizer,
                tokenizer: Some(Tokenizer {
                    route: "/extras/tokenize".into(),
                    field: "input".into(),
                }),
                detokenizer: Some(Detokenizer {
                    route: "/extras/detokenize".into(),
                    field: "tokens".into(),
                }),
                token_id_prompts: false,
                ignore_eos: false,
                bos: BosEcho::Stripped,
                extra: [
                    (
                        "repeat_penalty".to_owned(),
                        ExtraValue::Decimal {
                            decimal: "1.0".into(),
                        },
                    ),
                    ("top_k".to_owned(), ExtraValue::Int(1)),
                ]
                .into(),
                ..base
            },
        }
    }
}

impl fmt::Display for ApiProfileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a streamed token's id comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TokenIds {
    /// An integer array `choices[0].token_ids` per chunk (vLLM's `return_token_ids`;
    /// the default).
    #[default]
    Array,
    /// `choices[0].logprobs.tokens` entries written `"token_id:<id>"` (vLLM's
    /// `return_tokens_as_token_ids`).
    TokenIdStrings,
    /// Token *texts* mapped to ids with the tokenizer endpoint (`tokenizer`): each text
    /// must tokenize to exactly one id.
    Tokenizer,
    /// The server returns no ids (counting must then be `usage`, self-reported).
    None,
}

/// How the server's `echo` shows the BOS token it consumed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BosEcho {
    /// The echo is the prompt exactly as the model consumed it, BOS included (the
    /// default).
    #[default]
    AsConsumed,
    /// The server consumed a BOS its echo leaves out: the prompt the model saw is the
    /// echo with BOS in front.
    Stripped,
}

/// A tokenizer endpoint: `POST <route>` with `{"<field>": text}` (plus `model`), answered
/// with `{"tokens": [ids…]}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tokenizer {
    /// The route, e.g. `/tokenize`.
    pub route: String,
    /// The request field holding the text: `prompt` (vLLM), `content` (llama-server),
    /// `input` (llama-cpp-python).
    pub field: String,
}

/// A detokenizer endpoint: `POST <route>` with `{"<field>": [ids…]}` (plus `model`),
/// answered with `{"text": "…"}`: the text of the ids, for teacher forcing from text on a
/// server without token-id prompts (`token_id_prompts = false`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Detokenizer {
    /// The route, e.g. `/extras/detokenize` (llama-cpp-python).
    pub route: String,
    /// The request field holding the ids: `tokens` (llama-cpp-python).
    pub field: String,
}

/// An extra request field's value: a boolean, an integer, a decimal or a string. A
/// decimal (`repeat_penalty = 1.0` in TOML) is kept as its text (`{"decimal": "1.0"}`
/// in `campaign.json`, which holds no floats) and sent as a JSON number.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ExtraValue {
    /// `true` / `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A decimal number, as its text (`-?digits[.digits]`).
    Decimal {
        /// The text, e.g. `1.0`.
        decimal: String,
    },
    /// A string.
    Text(String),
}

impl ExtraValue {
    /// The value as sent in a request body.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Self::Bool(b) => (*b).into(),
            Self::Int(i) => (*i).into(),
            Self::Decimal { decimal } => decimal
                .parse::<serde_json::Number>()
                .map_or_else(|_| decimal.clone().into(), serde_json::Value::Number),
            Self::Text(s) => s.clone().into(),
        }
    }
}

/// Whether `text` is `-?digits[.digits]`.
fn is_decimal(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let (int, frac) = digits.split_once('.').unwrap_or((digits, "0"));
    !int.is_empty()
        && !frac.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.bytes().all(|b| b.is_ascii_digit())
}

impl<'de> Deserialize<'de> for ExtraValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = ExtraValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a boolean, an integer, a decimal or a string")
            }
            fn visit_bool<E>(self, v: bool) -> Result<ExtraValue, E> {
                Ok(ExtraValue::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<ExtraValue, E> {
                Ok(ExtraValue::Int(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ExtraValue, E> {
                i64::try_from(v)
                    .map(ExtraValue::Int)
                    .map_err(|_| E::custom("an integer above 2^63"))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<ExtraValue, E> {
                // `{:?}` writes the shortest text that reads back as `v` (`1.0`, `0.25`).
                let decimal = format!("{v:?}");
                if is_decimal(&decimal) {
                    Ok(ExtraValue::Decimal { decimal })
                } else {
                    Err(E::custom(format!(
                        "{decimal}: a decimal without exponent is needed"
                    )))
                }
            }
            fn visit_str<E>(self, v: &str) -> Result<ExtraValue, E> {
                Ok(ExtraValue::Text(v.to_owned()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ExtraValue, A::Error> {
                let mut decimal = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key != "decimal" || decimal.is_some() {
                        return Err(serde::de::Error::custom(format!(
                            "unexpected key `{key}` (a decimal is {{\"decimal\": \"1.0\"}})"
                        )));
                    }
                    decimal = Some(map.next_value::<String>()?);
                }
                match decimal {
                    Some(decimal) if is_decimal(&decimal) => Ok(ExtraValue::Decimal { decimal }),
                    Some(decimal) => Err(serde::de::Error::custom(format!(
                        "`{decimal}` is not a decimal"
                    ))),
                    None => Err(serde::de::Error::custom("an empty table")),
                }
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// `[backend.api]` as a campaign writes it: every field optional, over the named
/// `profile` (or over [`ApiProfile::default`] without one). Field names are snake_case.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApiSpec {
    /// The built-in profile this one starts from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ApiProfileName>,
    /// Readiness routes, tried in order each poll; the engine is ready when one answers
    /// `GET` with 200 (default `["/health", "/v1/models"]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readiness: Option<Vec<String>>,
    /// How output tokens are counted: `ids` (the token ids observed per delta),
    /// `logprobs` (one token per streamed `logprobs.tokens` entry) or `usage` (the
    /// engine's own `usage.completion_tokens`, recorded as self-reported). Never chunks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_count: Option<TokenCount>,
    /// Where token ids come from ([`TokenIds`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_ids: Option<TokenIds>,
    /// The tokenizer endpoint, for `token_ids = "tokenizer"` and for the reference's
    /// prompt ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<Tokenizer>,
    /// The detokenizer endpoint, for teacher forcing from text when prompts may not be
    /// token ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detokenizer: Option<Detokenizer>,
    /// Whether prompts may be sent as token-id lists (teacher forcing sends them; without
    /// them it sends the text of the ids, `detokenizer`, checked to tokenize back to
    /// them with `tokenizer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_id_prompts: Option<bool>,
    /// Whether requests carry vLLM's `ignore_eos: true` (default true; false for a
    /// server whose request has no such field and suppresses EOS below `min_tokens`,
    /// which every request sends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_eos: Option<bool>,
    /// How the echo shows BOS ([`BosEcho`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bos: Option<BosEcho>,
    /// The BOS token id, needed with `bos = "stripped"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bos_token_id: Option<u32>,
    /// Extra fields of every completions request, over the profile's (e.g.
    /// `repeat_penalty = 1.0`, `top_k = 1`, `cache_prompt = false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<BTreeMap<String, ExtraValue>>,
    /// Environment variables of the engine's command (in its sandbox's clean
    /// environment); `{threads}` and `{memory_mb}` are substituted in values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
}

/// The fields referee's own requests set; `extra` may not override them, since they fix
/// what is measured (content/measurement.md).
pub const RESERVED_FIELDS: &[&str] = &[
    "model",
    "prompt",
    "max_tokens",
    "stream",
    "temperature",
    "echo",
    "logprobs",
];

impl ApiSpec {
    /// The profile the runner uses: the named profile (or the default), each field
    /// written here replacing its value; `extra` and `env` are merged over the
    /// profile's.
    pub fn resolve(&self) -> ApiProfile {
        let mut profile = self
            .profile
            .map_or_else(ApiProfile::default, ApiProfileName::profile);
        if let Some(readiness) = &self.readiness {
            profile.readiness = readiness.clone();
        }
        if let Some(count) = self.token_count {
            profile.token_count = count;
        }
        if let Some(ids) = self.token_ids {
            profile.token_ids = ids;
        }
        if let Some(tokenizer) = &self.tokenizer {
            profile.tokenizer = Some(tokenizer.clone());
        }
        if let Some(detokenizer) = &self.detokenizer {
            profile.detokenizer = Some(detokenizer.clone());
        }
        if let Some(prompts) = self.token_id_prompts {
            profile.token_id_prompts = prompts;
        }
        if let Some(ignore_eos) = self.ignore_eos {
            profile.ignore_eos = ignore_eos;
        }
        if let Some(bos) = self.bos {
            profile.bos = bos;
        }
        if let Some(id) = self.bos_token_id {
            profile.bos_token_id = Some(id);
        }
        for (k, v) in self.extra.iter().flatten() {
            profile.extra.insert(k.clone(), v.clone());
        }
        for (k, v) in self.env.iter().flatten() {
            profile.env.insert(k.clone(), v.clone());
        }
        profile
    }

    /// Checks the resolved profile ([`ApiProfile::validate`]).
    ///
    /// Errors: as [`ApiProfile::validate`].
    pub fn validate(&self) -> Result<(), ModelError> {
        self.resolve().validate()
    }
}

impl ApiProfile {
    /// Checks the profile; errors name the `backend.api.*` field.
    ///
    /// Errors: [`ModelError::InvalidField`] for a readiness, tokenizer or detokenizer route not
    /// starting with `/`, an empty readiness list, `extra` naming a field referee sets
    /// itself ([`RESERVED_FIELDS`]), an environment variable name outside
    /// `[A-Za-z_][A-Za-z0-9_]*` (or `LISTEN_FDS`/`LISTEN_PID`), `token_ids =
    /// "tokenizer"` without a tokenizer, `token_ids = "none"` with `token_count = "ids"`,
    /// and `bos = "stripped"` without `bos_token_id`.
    pub fn validate(&self) -> Result<(), ModelError> {
        let field = |field: &str, value: String, rule: &str| {
            Err(ModelError::InvalidField {
                field: format!("backend.api.{field}"),
                value,
                rule: rule.into(),
            })
        };
        let p = self;
        if p.readiness.is_empty() {
            return field("readiness", "[]".into(), "at least one route");
        }
        for route in &p.readiness {
            if !route.starts_with('/') {
                return field("readiness", route.clone(), "a route starting with `/`");
            }
        }
        if let Some(t) = &p.tokenizer
            && !t.route.starts_with('/')
        {
            return field(
                "tokenizer.route",
                t.route.clone(),
                "a route starting with `/`",
            );
        }
        if let Some(d) = &p.detokenizer
            && !d.route.starts_with('/')
        {
            return field(
                "detokenizer.route",
                d.route.clone(),
                "a route starting with `/`",
            );
        }
        for key in p.extra.keys() {
            if RESERVED_FIELDS.contains(&key.as_str()) {
                return field(
                    "extra",
                    key.clone(),
                    "a field referee sets itself cannot be overridden",
                );
            }
        }
        for key in p.env.keys() {
            let mut bytes = key.bytes();
            let ok = bytes
                .next()
                .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
                && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
                && !matches!(key.as_str(), "LISTEN_FDS" | "LISTEN_PID");
            if !ok {
                return field(
                    "env",
                    key.clone(),
                    "a variable name [A-Za-z_][A-Za-z0-9_]*, not LISTEN_FDS or LISTEN_PID",
                );
            }
        }
        if p.token_ids == TokenIds::Tokenizer && p.tokenizer.is_none() {
            return field(
                "token_ids",
                "tokenizer".into(),
                "needs `tokenizer = { route, field }`",
            );
        }
        if p.token_ids == TokenIds::None && p.token_count == TokenCount::Ids {
            return field(
                "token_ids",
                "none".into(),
                "with no ids streamed, tokens are counted with token_count = \"usage\" or \"logprobs\"",
            );
        }
        if p.bos == BosEcho::Stripped && p.bos_token_id.is_none() {
            return field(
                "bos_token_id",
                String::new(),
                "needed with bos = \"stripped\" (the id the server puts in front)",
            );
        }
        Ok(())
    }
}

/// A resolved API profile: what the runner does with every engine of the round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiProfile {
    /// The built-in profile it started from, if any.
    pub name: Option<ApiProfileName>,
    /// Readiness routes ([`ApiSpec::readiness`]).
    pub readiness: Vec<String>,
    /// How output tokens are counted.
    pub token_count: TokenCount,
    /// Where token ids come from.
    pub token_ids: TokenIds,
    /// The tokenizer endpoint, if the server has one.
    pub tokenizer: Option<Tokenizer>,
    /// The detokenizer endpoint, if the server has one.
    pub detokenizer: Option<Detokenizer>,
    /// Whether prompts may be token-id lists.
    pub token_id_prompts: bool,
    /// Whether requests carry `ignore_eos: true` ([`ApiSpec::ignore_eos`]).
    pub ignore_eos: bool,
    /// How the echo shows BOS.
    pub bos: BosEcho,
    /// The BOS id, with [`BosEcho::Stripped`].
    pub bos_token_id: Option<u32>,
    /// Extra request fields.
    pub extra: BTreeMap<String, ExtraValue>,
    /// Environment variables of the engine's command.
    pub env: BTreeMap<String, String>,
}

impl Default for ApiProfile {
    /// Today's behaviour: ready on `/health` (else `/v1/models`), tokens counted from the
    /// streamed `token_ids` arrays, token-id prompts, the echo as consumed, the
    /// detokenizer `POST /detokenize {"tokens"}` (v7), no extra fields, no environment.
    fn default() -> Self {
        Self {
            name: None,
            readiness: vec!["/health".into(), "/v1/models".into()],
            token_count: TokenCount::Ids,
            token_ids: TokenIds::Array,
            tokenizer: None,
            // vLLM's and the built-in engine's route (vLLM answers `prompt`, read as the
            // text): what a streamed text is held against (content/correctness.md).
            detokenizer: Some(Detokenizer {
                route: "/detokenize".into(),
                field: "tokens".into(),
            }),
            token_id_prompts: true,
            ignore_eos: true,
            bos: BosEcho::AsConsumed,
            bos_token_id: None,
            extra: BTreeMap::new(),
            env: BTreeMap::new(),
        }
    }
}

impl ApiProfile {
    /// Whether streamed chunks must carry logprobs (`logprobs` counting, or ids from
    /// logprob tokens).
    pub fn streams_logprobs(&self) -> bool {
        self.token_count == TokenCount::Logprobs
            || matches!(
                self.token_ids,
                TokenIds::TokenIdStrings | TokenIds::Tokenizer
            )
    }

    /// What a receipt records of it ([`super::EngineApi`]).
    pub fn record(&self) -> super::EngineApi {
        super::EngineApi {
            profile: self.name,
            tested_against_real_server: self.name.is_some_and(|n| n.tested_against_real_server()),
            token_count: self.token_count,
            token_ids: self.token_ids,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_spec_is_todays_behaviour() {
        let p = ApiSpec::default().resolve();
        assert_eq!(p, ApiProfile::default());
        assert_eq!(p.readiness, ["/health", "/v1/models"]);
        assert_eq!(
            (p.token_count, p.token_ids),
            (TokenCount::Ids, TokenIds::Array)
        );
        assert!(!p.streams_logprobs());
    }

    #[test]
    fn fields_override_the_named_profile_and_extra_merges() {
        let spec: ApiSpec = toml::from_str(
            "profile = \"llama-cpp-python\"\nbos_token_id = 1\n\
             extra = { top_k = 2, cache_prompt = false, mirostat_tau = 0.25, name = \"x\" }\n\
             env = { OMP_NUM_THREADS = \"{threads}\" }\n",
        )
        .unwrap();
        spec.validate().unwrap();
        let p = spec.resolve();
        assert_eq!(p.readiness, ["/v1/models"]);
        assert!(!p.ignore_eos);
        assert!(ApiProfile::default().ignore_eos);
        let kept = ApiSpec {
            ignore_eos: Some(true),
            ..spec.clone()
        };
        assert!(kept.resolve().ignore_eos);
        assert_eq!(p.token_count, TokenCount::Logprobs);
        assert_eq!(p.token_ids, TokenIds::Tokenizer);
        assert_eq!(p.extra["top_k"], ExtraValue::Int(2));
        assert_eq!(p.extra["cache_prompt"], ExtraValue::Bool(false));
        assert_eq!(p.extra["repeat_penalty"].to_json(), serde_json::json!(1.0));
        assert_eq!(
            p.extra["mirostat_tau"],
            ExtraValue::Decimal {
                decimal: "0.25".into()
            }
        );
        assert_eq!(p.extra["name"], ExtraValue::Text("x".into()));
        assert_eq!(p.env["OMP_NUM_THREADS"], "{threads}");
        // The frozen form holds no float, and reads back the same.
        let json = serde_json::to_string(&spec).unwrap();
        assert!(
            json.contains(r#""mirostat_tau":{"decimal":"0.25"}"#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<ApiSpec>(&json).unwrap(), spec);
    }

    #[test]
    fn bad_specs_name_their_field() {
        for (text, field, value) in [
            ("readiness = []", "backend.api.readiness", "[]"),
            (
                "readiness = [\"health\"]",
                "backend.api.readiness",
                "health",
            ),
            (
                "extra = { max_tokens = 3 }",
                "backend.api.extra",
                "max_tokens",
            ),
            ("env = { \"A-B\" = \"x\" }", "backend.api.env", "A-B"),
            (
                "env = { LISTEN_FDS = \"2\" }",
                "backend.api.env",
                "LISTEN_FDS",
            ),
            (
                "token_ids = \"tokenizer\"",
                "backend.api.token_ids",
                "tokenizer",
            ),
            ("token_ids = \"none\"", "backend.api.token_ids", "none"),
            (
                "detokenizer = { route = \"detokenize\", field = \"tokens\" }",
                "backend.api.detokenizer.route",
                "detokenize",
            ),
            (
                "profile = \"llama-cpp-python\"",
                "backend.api.bos_token_id",
                "",
            ),
        ] {
            let spec: ApiSpec = toml::from_str(text).unwrap();
            match spec.validate() {
                Err(ModelError::InvalidField {
                    field: f, value: v, ..
                }) => assert_eq!((f.as_str(), v.as_str()), (field, value), "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
        assert!(toml::from_str::<ApiSpec>("profile = \"tgi\"").is_err());
        assert!(toml::from_str::<ApiSpec>("extra = { x = 1e300 }").is_err());
        assert!(serde_json::from_str::<ApiSpec>(r#"{"extra":{"x":{"decimal":"1e3"}}}"#).is_err());
    }

    #[test]
    fn every_built_in_profile_validates_with_a_bos_id() {
        for name in [
            ApiProfileName::Vllm,
            ApiProfileName::Sglang,
            ApiProfileName::LlamaServer,
            ApiProfileName::LlamaCppPython,
        ] {
            let spec = ApiSpec {
                profile: Some(name),
                bos_token_id: Some(1),
                ..ApiSpec::default()
            };
            spec.validate().unwrap();
            assert_eq!(spec.resolve().name, Some(name));
            assert_eq!(name.to_string(), name.as_str());
        }
    }
}
