//! The engine's configuration: `engine.toml`, the file a miner's diff changes.
//!
//! [`EngineConfig::from_toml`] parses *and* range-checks, so the submissions gate can use it
//! as the "build" step of the built-in engine (content/submitting.md, gates): a config that parses here
//! only fails later if it does not fit in memory, which is the engine's business at start
//! ([`crate::memory`]). Every key is optional and has a default; unknown keys are errors so
//! that a typo in a diff is caught by the gate instead of silently ignored. Each key is
//! documented on its field below and in the crate docs.

use thiserror::Error;

/// Weight storage precision (`weight_dtype`). Lower precision is faster to stream and moves
/// logits: `int4` moves them far enough to fail the correctness gate (crate docs, Knobs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightDtype {
    /// 4-byte IEEE floats; the reference precision.
    F32,
    /// bfloat16 (the top 16 bits of an f32, rounded to nearest even).
    Bf16,
    /// Signed 8-bit integers with one f32 scale per output row (max |w| / 127).
    Int8,
    /// Signed 4-bit integers (−7..=7) with one f32 scale per output row (max |w| / 7),
    /// held one per byte and run through the int8 kernel; counted as half a byte per
    /// weight in the memory budget.
    Int4,
}

/// KV cache storage precision (`kv_cache_dtype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvCacheDtype {
    /// 4-byte floats.
    F32,
    /// bfloat16, rounded to nearest even on write.
    Bf16,
}

/// A parsed and range-checked `engine.toml`. Construct with [`EngineConfig::from_toml`] or
/// start from [`EngineConfig::default`] in tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineConfig {
    /// `model_seed`: the ChaCha20 seed the weights are drawn from (default 0).
    pub model_seed: u64,
    /// `layers`: transformer blocks, 1..=64 (default 4).
    pub layers: usize,
    /// `d_model`: width of the residual stream, 16..=4096, a multiple of `heads` with an
    /// even head size (default 256).
    pub d_model: usize,
    /// `heads`: attention heads, 1..=64 (default 4).
    pub heads: usize,
    /// `context`: the most tokens (prompt + output) a sequence may hold, 8..=65536
    /// (default 1024).
    pub context: usize,
    /// `max_num_seqs`: the most sequences in the running batch, 1..=1024 (default 16).
    pub max_num_seqs: usize,
    /// `max_num_batched_tokens`: the most tokens (decode rows + prefill chunk rows) one
    /// scheduler step computes, `max_num_seqs`..=1048576 (default 512).
    pub max_num_batched_tokens: usize,
    /// `threads`: size of the rayon pool the engine computes on, 1..=256 (default 1).
    pub threads: usize,
    /// `weight_dtype`: `f32` | `bf16` | `int8` | `int4` (default `f32`).
    pub weight_dtype: WeightDtype,
    /// `kv_cache_dtype`: `f32` | `bf16` (default `f32`).
    pub kv_cache_dtype: KvCacheDtype,
    /// `kv_cache_budget_mb`: MiB reserved for the KV cache, 1..=1048576 (default 512); the
    /// cache for `max_num_seqs` × `context` must fit in it and it must fit in the memory
    /// limit next to the weights, or the engine exits at start (crate::memory).
    pub kv_cache_budget_mb: u64,
    /// `startup_delay_ms`: extra start-up time before `/health` answers 200, in ms,
    /// 0..=600000 (default 0), to exercise a runner's health deadline.
    pub startup_delay_ms: u64,
}

/// Why an `engine.toml` was rejected; every variant names the source, and where there is
/// one, the field and its value.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ConfigError {
    /// Not TOML at all.
    #[error("`{source_name}`: not valid TOML: {message}")]
    Syntax {
        /// The file name the text came from.
        source_name: String,
        /// The TOML parser's message.
        message: String,
    },
    /// A key the engine does not know (a typo in a diff).
    #[error("`{source_name}`: unknown field `{field}`")]
    UnknownField {
        /// The file name the text came from.
        source_name: String,
        /// The key.
        field: String,
    },
    /// A known key with a value of the wrong type or out of range.
    #[error("`{source_name}`: field `{field}` = `{value}`: {reason}")]
    Invalid {
        /// The file name the text came from.
        source_name: String,
        /// The key.
        field: String,
        /// The value as written (TOML syntax).
        value: String,
        /// What is wrong, e.g. `must be between 1 and 64`.
        reason: String,
    },
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            model_seed: 0,
            layers: 4,
            d_model: 256,
            heads: 4,
            context: 1024,
            max_num_seqs: 16,
            max_num_batched_tokens: 512,
            threads: 1,
            weight_dtype: WeightDtype::F32,
            kv_cache_dtype: KvCacheDtype::F32,
            kv_cache_budget_mb: 512,
            startup_delay_ms: 0,
        }
    }
}

/// The parser's message with where it found the error: `line 2, column 1: duplicate key
/// `a` in document root`. toml gives some errors no message (a key with no value): those
/// read `invalid TOML`. The message's own line breaks become `; `.
fn syntax_message(text: &str, err: &toml::de::Error) -> String {
    let what = match err.message().trim() {
        "" => "invalid TOML".to_owned(),
        message => message.replace('\n', "; "),
    };
    let Some(span) = err.span() else {
        return what;
    };
    let before = &text.as_bytes()[..span.start.min(text.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
    format!("line {line}, column {column}: {what}")
}

impl EngineConfig {
    /// Parses `text` (the contents of the file named `source_name`, used in messages) and
    /// checks every value's type and range. Errors: [`ConfigError`], naming the field and
    /// the value.
    pub fn from_toml(source_name: &str, text: &str) -> Result<EngineConfig, ConfigError> {
        let table: toml::Table =
            text.parse()
                .map_err(|err: toml::de::Error| ConfigError::Syntax {
                    source_name: source_name.to_string(),
                    message: syntax_message(text, &err),
                })?;
        let mut config = EngineConfig::default();
        for (key, value) in &table {
            let invalid = |reason: String| ConfigError::Invalid {
                source_name: source_name.to_string(),
                field: key.clone(),
                value: value.to_string(),
                reason,
            };
            let int = |lo: u64, hi: u64| -> Result<u64, ConfigError> {
                match value.as_integer() {
                    Some(v) if v >= 0 && (lo..=hi).contains(&v.unsigned_abs()) => {
                        Ok(v.unsigned_abs())
                    }
                    Some(_) => Err(invalid(format!("must be between {lo} and {hi}"))),
                    None => Err(invalid("must be an integer".into())),
                }
            };
            // Every bound fits in usize on the 64-bit targets the engine builds for.
            let size = |lo: u64, hi: u64| int(lo, hi).map(|v| v as usize);
            match key.as_str() {
                "model_seed" => config.model_seed = int(0, i64::MAX.unsigned_abs())?,
                "layers" => config.layers = size(1, 64)?,
                "d_model" => config.d_model = size(16, 4096)?,
                "heads" => config.heads = size(1, 64)?,
                "context" => config.context = size(8, 65536)?,
                "max_num_seqs" => config.max_num_seqs = size(1, 1024)?,
                "max_num_batched_tokens" => config.max_num_batched_tokens = size(1, 1 << 20)?,
                "threads" => config.threads = size(1, 256)?,
                "kv_cache_budget_mb" => config.kv_cache_budget_mb = int(1, 1 << 20)?,
                "startup_delay_ms" => config.startup_delay_ms = int(0, 600_000)?,
                "weight_dtype" => {
                    config.weight_dtype = match value.as_str() {
                        Some("f32") => WeightDtype::F32,
                        Some("bf16") => WeightDtype::Bf16,
                        Some("int8") => WeightDtype::Int8,
                        Some("int4") => WeightDtype::Int4,
                        _ => {
                            return Err(invalid(
                                "must be one of `f32`, `bf16`, `int8`, `int4`".into(),
                            ));
                        }
                    }
                }
                "kv_cache_dtype" => {
                    config.kv_cache_dtype = match value.as_str() {
                        Some("f32") => KvCacheDtype::F32,
                        Some("bf16") => KvCacheDtype::Bf16,
                        _ => return Err(invalid("must be one of `f32`, `bf16`".into())),
                    }
                }
                _ => {
                    return Err(ConfigError::UnknownField {
                        source_name: source_name.to_string(),
                        field: key.clone(),
                    });
                }
            }
        }
        config.check_relations(source_name, &table)?;
        Ok(config)
    }

    /// Size of one attention head (`d_model / heads`).
    pub fn head_dim(&self) -> usize {
        self.d_model / self.heads
    }

    /// Hidden size of the SwiGLU MLP: 8/3 × `d_model` rounded up to a multiple of 32
    /// (LLaMA's rule), e.g. 704 for `d_model` 256.
    pub fn ffn_dim(&self) -> usize {
        (8 * self.d_model).div_ceil(3).div_ceil(32) * 32
    }

    /// Checks the rules between fields; the error names the later field of the pair.
    fn check_relations(&self, source_name: &str, table: &toml::Table) -> Result<(), ConfigError> {
        let invalid = |field: &str, value: usize, reason: String| ConfigError::Invalid {
            source_name: source_name.to_string(),
            field: field.to_string(),
            value: table
                .get(field)
                .map_or_else(|| value.to_string(), ToString::to_string),
            reason,
        };
        if !self.d_model.is_multiple_of(self.heads) || !self.head_dim().is_multiple_of(2) {
            return Err(invalid(
                "d_model",
                self.d_model,
                format!("must be a multiple of 2 × heads ({})", 2 * self.heads),
            ));
        }
        if self.max_num_batched_tokens < self.max_num_seqs {
            return Err(invalid(
                "max_num_batched_tokens",
                self.max_num_batched_tokens,
                format!(
                    "must be at least max_num_seqs ({}), so every running sequence can decode \
                     in one step",
                    self.max_num_seqs
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_err(text: &str, expected: &str) {
        let err = EngineConfig::from_toml("engine.toml", text).unwrap_err();
        assert_eq!(err.to_string(), expected);
    }

    /// Issue 43: a syntax error says what and where, even when the parser gives no
    /// message (a key with no value used to read "not valid TOML: " and nothing more).
    #[test]
    fn syntax_errors_name_their_line_and_column() {
        check_err(
            "threads = 2\nmax_num_seqs = ",
            "`engine.toml`: not valid TOML: line 2, column 16: invalid TOML",
        );
        check_err(
            "max_num_seqs = 8\nmax_num_seqs = 9\n",
            "`engine.toml`: not valid TOML: line 2, column 1: duplicate key `max_num_seqs` in \
             document root",
        );
        check_err(
            "[x\n",
            "`engine.toml`: not valid TOML: line 1, column 3: invalid table header; expected \
             `.`, `]`",
        );
    }

    #[test]
    fn empty_file_gives_defaults() {
        assert_eq!(
            EngineConfig::from_toml("engine.toml", "").unwrap(),
            EngineConfig::default()
        );
    }

    #[test]
    fn every_key_parses() {
        let text = "model_seed = 7\nlayers = 2\nd_model = 128\nheads = 2\ncontext = 256\n\
                    max_num_seqs = 4\nmax_num_batched_tokens = 64\nthreads = 3\n\
                    weight_dtype = \"int8\"\nkv_cache_dtype = \"bf16\"\n\
                    kv_cache_budget_mb = 9\nstartup_delay_ms = 5\n";
        let config = EngineConfig::from_toml("engine.toml", text).unwrap();
        assert_eq!(
            config,
            EngineConfig {
                model_seed: 7,
                layers: 2,
                d_model: 128,
                heads: 2,
                context: 256,
                max_num_seqs: 4,
                max_num_batched_tokens: 64,
                threads: 3,
                weight_dtype: WeightDtype::Int8,
                kv_cache_dtype: KvCacheDtype::Bf16,
                kv_cache_budget_mb: 9,
                startup_delay_ms: 5,
            }
        );
        assert_eq!(config.head_dim(), 64);
        assert_eq!(config.ffn_dim(), 352);
        assert_eq!(EngineConfig::default().ffn_dim(), 704);
    }

    #[test]
    fn malformed_configs_name_field_and_value() {
        check_err(
            "layers = 0",
            "`engine.toml`: field `layers` = `0`: must be between 1 and 64",
        );
        check_err(
            "threads = \"two\"",
            "`engine.toml`: field `threads` = `\"two\"`: must be an integer",
        );
        check_err(
            "weight_dtype = \"fp8\"",
            "`engine.toml`: field `weight_dtype` = `\"fp8\"`: must be one of `f32`, `bf16`, \
             `int8`, `int4`",
        );
        check_err(
            "kv_cache_dtype = 16",
            "`engine.toml`: field `kv_cache_dtype` = `16`: must be one of `f32`, `bf16`",
        );
        check_err(
            "max_num_seq = 4",
            "`engine.toml`: unknown field `max_num_seq`",
        );
        check_err(
            "d_model = 100\nheads = 3",
            "`engine.toml`: field `d_model` = `100`: must be a multiple of 2 × heads (6)",
        );
        check_err(
            "max_num_seqs = 64\nmax_num_batched_tokens = 32",
            "`engine.toml`: field `max_num_batched_tokens` = `32`: must be at least \
             max_num_seqs (64), so every running sequence can decode in one step",
        );
        check_err(
            "model_seed = -1",
            "`engine.toml`: field `model_seed` = `-1`: must be between 0 and \
             9223372036854775807",
        );
        let err = EngineConfig::from_toml("engine.toml", "layers = ").unwrap_err();
        assert!(matches!(err, ConfigError::Syntax { .. }), "{err}");
    }
}
