//! The start-up memory check: the engine runs under a memory limit (`--memory-limit-mb`,
//! the campaign's `hardware.memory_limit_mb`) and refuses to start when what it would
//! allocate does not fit.
//!
//! Two checks, in the order a server allocates: the weights plus the reserved KV cache pool
//! (`kv_cache_budget_mb`) must fit in the memory limit, and the KV cache that
//! `max_num_seqs` full-context sequences need must fit in the pool. Either failure is an
//! [`OutOfMemory`] whose message says, in the engine's own words, what did not fit, how
//! it was sized, and by how much it is over: `out of memory: a KV cache of 128 MiB
//! (max_num_seqs 16 × context 1024 × layers 4 × keys and values 2 × d_model 256 × 4
//! bytes) does not fit the KV cache pool of 100 MiB (kv_cache_budget_mb): 28 MiB over`.

use thiserror::Error;

use crate::config::{EngineConfig, KvCacheDtype, WeightDtype};
use crate::tokenizer::VOCAB_SIZE;

const MIB: u64 = 1024 * 1024;

/// The engine does not fit; its `Display` is the message the CLI prints to stderr before
/// exiting with status 1.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum OutOfMemory {
    /// The weights plus the KV cache pool exceed the memory limit.
    #[error(
        "out of memory: the weights ({weights}, {layers} layers of d_model {d_model} in \
         {dtype}) plus the KV cache pool of {pool} (kv_cache_budget_mb) need {needed}, which \
         does not fit the memory limit of {limit}: {over} over"
    )]
    Limit {
        /// Bytes of the weights.
        weights: Mib,
        /// Layers of the model.
        layers: usize,
        /// Its width.
        d_model: usize,
        /// `weight_dtype`.
        dtype: &'static str,
        /// Bytes of the KV cache pool.
        pool: Mib,
        /// Weights plus pool.
        needed: Mib,
        /// The memory limit.
        limit: Mib,
        /// How much `needed` exceeds `limit`.
        over: Mib,
    },
    /// The KV cache of `max_num_seqs` full-context sequences exceeds the pool.
    #[error(
        "out of memory: a KV cache of {needed} (max_num_seqs {max_num_seqs} × context \
         {context} × layers {layers} × keys and values 2 × d_model {d_model} × {value_bytes} \
         bytes) does not fit the KV cache pool of {pool} (kv_cache_budget_mb): {over} over"
    )]
    KvCache {
        /// Bytes the KV cache needs.
        needed: Mib,
        /// `max_num_seqs`.
        max_num_seqs: usize,
        /// `context`.
        context: usize,
        /// `layers`.
        layers: usize,
        /// `d_model`.
        d_model: usize,
        /// Bytes per stored value (`kv_cache_dtype`).
        value_bytes: u64,
        /// Bytes of the pool.
        pool: Mib,
        /// How much `needed` exceeds `pool`.
        over: Mib,
    },
}

/// A byte count printed in MiB, digits grouped by spaces: `12 288 MiB`, and
/// `0.38 MiB` (two decimals) when it is not a whole number of MiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mib(pub u64);

impl std::fmt::Display for Mib {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let whole = self.0 / MIB;
        let rest = self.0 % MIB;
        let grouped = group_digits(whole);
        if rest == 0 {
            write!(f, "{grouped} MiB")
        } else {
            // Hundredths, rounded up so a size just over a whole MiB never prints as it.
            let hundredths = (rest * 100).div_ceil(MIB);
            if hundredths == 100 {
                write!(f, "{}", Mib((whole + 1) * MIB))
            } else {
                write!(f, "{grouped}.{hundredths:02} MiB")
            }
        }
    }
}

/// `12288` → `12 288`.
fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// Bytes the weights of `config` occupy: the f32 embedding table plus every projection
/// in `weight_dtype` (int8/int4 with a 4-byte scale per output channel; int4 at half a
/// byte per weight, as packed storage would hold it).
pub fn weight_bytes(config: &EngineConfig) -> u64 {
    let d = config.d_model as u64;
    let ff = config.ffn_dim() as u64;
    let vocab = VOCAB_SIZE as u64;
    // (channels, inputs) of every projection.
    let mut matrices = vec![(vocab, d)];
    for _ in 0..config.layers {
        matrices.extend([(3 * d, d), (d, d), (2 * ff, d), (d, ff)]);
    }
    let projections: u64 = matrices
        .iter()
        .map(|&(channels, inputs)| match config.weight_dtype {
            WeightDtype::F32 => 4 * channels * inputs,
            WeightDtype::Bf16 => 2 * channels * inputs,
            WeightDtype::Int8 => channels * inputs + 4 * channels,
            WeightDtype::Int4 => (channels * inputs).div_ceil(2) + 4 * channels,
        })
        .sum();
    4 * vocab * d + projections
}

/// Bytes of KV cache `max_num_seqs` sequences of `context` tokens need: keys and values of
/// `d_model` each, per layer and position, in `kv_cache_dtype`.
pub fn kv_cache_bytes(config: &EngineConfig) -> u64 {
    let per_value = match config.kv_cache_dtype {
        KvCacheDtype::F32 => 4,
        KvCacheDtype::Bf16 => 2,
    };
    [
        config.max_num_seqs,
        config.layers,
        config.context,
        2,
        config.d_model,
    ]
    .iter()
    .map(|&v| v as u64)
    .product::<u64>()
        * per_value
}

/// Checks that `config` fits in `memory_limit_mb` MiB of memory (module docs).
/// Errors: [`OutOfMemory`], saying what did not fit and by how much.
pub fn check(config: &EngineConfig, memory_limit_mb: u64) -> Result<(), OutOfMemory> {
    let limit = memory_limit_mb.saturating_mul(MIB);
    let weights = weight_bytes(config);
    let budget = config.kv_cache_budget_mb.saturating_mul(MIB);
    let total = weights.saturating_add(budget);
    if total > limit {
        return Err(OutOfMemory::Limit {
            weights: Mib(weights),
            layers: config.layers,
            d_model: config.d_model,
            dtype: match config.weight_dtype {
                WeightDtype::F32 => "f32",
                WeightDtype::Bf16 => "bf16",
                WeightDtype::Int8 => "int8",
                WeightDtype::Int4 => "int4",
            },
            pool: Mib(budget),
            needed: Mib(total),
            limit: Mib(limit),
            over: Mib(total - limit),
        });
    }
    let needed = kv_cache_bytes(config);
    if needed > budget {
        return Err(OutOfMemory::KvCache {
            needed: Mib(needed),
            max_num_seqs: config.max_num_seqs,
            context: config.context,
            layers: config.layers,
            d_model: config.d_model,
            value_bytes: match config.kv_cache_dtype {
                KvCacheDtype::F32 => 4,
                KvCacheDtype::Bf16 => 2,
            },
            pool: Mib(budget),
            over: Mib(needed - budget),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_of_the_default_model() {
        let config = EngineConfig::default();
        // 4 layers × (3·256² + 256² + 2·704·256 + 256·704) + 258·256 head, + 258·256 embedding.
        let projections = 4 * (4 * 256 * 256 + 3 * 704 * 256) + 258 * 256;
        assert_eq!(weight_bytes(&config), 4 * (projections + 258 * 256));
        // 16 sequences × 4 layers × 1024 positions × 2 × 256 × 4 bytes = 128 MiB.
        assert_eq!(kv_cache_bytes(&config), 128 * MIB);
        assert_eq!(check(&config, 1024), Ok(()));
    }

    /// Regression: the message imitated PyTorch (`torch.OutOfMemoryError: CUDA out of
    /// memory…`), which the built-in engine is not.
    #[test]
    fn too_small_a_kv_budget_says_what_does_not_fit_and_by_how_much() {
        let config = EngineConfig {
            kv_cache_budget_mb: 100,
            ..EngineConfig::default()
        };
        let err = check(&config, 81920).unwrap_err().to_string();
        assert_eq!(
            err,
            "out of memory: a KV cache of 128 MiB (max_num_seqs 16 × context 1024 × layers 4 \
             × keys and values 2 × d_model 256 × 4 bytes) does not fit the KV cache pool of \
             100 MiB (kv_cache_budget_mb): 28 MiB over"
        );
        assert!(!err.contains("CUDA") && !err.contains("torch"), "{err}");
    }

    #[test]
    fn a_budget_beyond_the_limit_says_what_does_not_fit_and_by_how_much() {
        let config = EngineConfig {
            kv_cache_budget_mb: 2048,
            ..EngineConfig::default()
        };
        let err = check(&config, 2048).unwrap_err().to_string();
        let weights = Mib(weight_bytes(&config));
        let total = Mib(weight_bytes(&config) + 2048 * MIB);
        let over = Mib(weight_bytes(&config));
        assert_eq!(
            err,
            format!(
                "out of memory: the weights ({weights}, 4 layers of d_model 256 in f32) plus the \
                 KV cache pool of 2 048 MiB (kv_cache_budget_mb) need {total}, which does not \
                 fit the memory limit of 2 048 MiB: {over} over"
            )
        );
    }

    #[test]
    fn sizes_print_in_grouped_mib() {
        assert_eq!(Mib(12288 * MIB).to_string(), "12 288 MiB");
        assert_eq!(Mib(MIB / 4).to_string(), "0.25 MiB");
        assert_eq!(Mib(MIB + 1).to_string(), "1.01 MiB");
        assert_eq!(Mib(2 * MIB - 1).to_string(), "2 MiB");
    }
}
