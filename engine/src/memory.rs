//! The start-up memory check: the engine pretends to be a GPU server with a device memory
//! limit (`--memory-limit-mb`, the campaign's `hardware.memory_limit_mb`) and refuses to
//! start, as PyTorch does, when what it would allocate does not fit.
//!
//! Two checks, in the order a real server allocates: the weights plus the reserved KV pool
//! (`kv_cache_budget_mb`) must fit in the memory limit, and the KV cache that
//! `max_num_seqs` full-context sequences need must fit in the pool. Either failure is an
//! [`OutOfMemory`] whose message starts like the one in the disqualified entries of
//! content/rounds.md: `torch.OutOfMemoryError: CUDA out of memory. Tried to
//! allocate … MiB. GPU 0 has a total capacity of … of which … is free.`

use thiserror::Error;

use crate::config::{EngineConfig, KvCacheDtype, WeightDtype};
use crate::tokenizer::VOCAB_SIZE;

const MIB: u64 = 1024 * 1024;

/// The engine does not fit; its `Display` is the CUDA-style message the CLI prints to
/// stderr before exiting with status 1.
#[derive(Debug, Error, PartialEq, Eq)]
#[error(
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {tried}. GPU 0 has a \
     total capacity of {capacity} of which {free} is free. Of the allocated memory {allocated} \
     is allocated by PyTorch. ({explanation})"
)]
pub struct OutOfMemory {
    tried: Size,
    capacity: Size,
    free: Size,
    allocated: Size,
    explanation: String,
}

/// A byte count printed the way PyTorch prints sizes: `136.00 MiB`, `31.36 GiB`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Size(u64);

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Display only; the precision loss of u64 → f64 is irrelevant at two decimals.
        let bytes = self.0 as f64;
        if self.0 >= 1024 * MIB {
            write!(f, "{:.2} GiB", bytes / (1024.0 * MIB as f64))
        } else {
            write!(f, "{:.2} MiB", bytes / MIB as f64)
        }
    }
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

/// Checks that `config` fits in `memory_limit_mb` MiB of device memory (module docs).
/// Errors: [`OutOfMemory`] with the CUDA-style message.
pub fn check(config: &EngineConfig, memory_limit_mb: u64) -> Result<(), OutOfMemory> {
    let limit = memory_limit_mb.saturating_mul(MIB);
    let weights = weight_bytes(config);
    let budget = config.kv_cache_budget_mb.saturating_mul(MIB);
    if weights.saturating_add(budget) > limit {
        return Err(OutOfMemory {
            tried: Size(budget),
            capacity: Size(limit),
            free: Size(limit.saturating_sub(weights)),
            allocated: Size(weights.min(limit)),
            explanation: format!(
                "referee built-in engine: weights {} + kv_cache_budget_mb {} exceed the memory \
                 limit of {} MiB",
                Size(weights),
                config.kv_cache_budget_mb,
                memory_limit_mb
            ),
        });
    }
    let needed = kv_cache_bytes(config);
    if needed > budget {
        return Err(OutOfMemory {
            tried: Size(needed),
            capacity: Size(limit),
            free: Size(budget),
            allocated: Size(weights),
            explanation: format!(
                "referee built-in engine: the KV cache for max_num_seqs {} × context {} needs {} \
                 but kv_cache_budget_mb is {}",
                config.max_num_seqs,
                config.context,
                Size(needed),
                config.kv_cache_budget_mb
            ),
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

    #[test]
    fn too_small_a_kv_budget_is_a_cuda_style_oom() {
        let config = EngineConfig {
            kv_cache_budget_mb: 100,
            ..EngineConfig::default()
        };
        let err = check(&config, 81920).unwrap_err().to_string();
        assert!(
            err.starts_with(
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 128.00 MiB. GPU 0 \
                 has a total capacity of 80.00 GiB of which 100.00 MiB is free."
            ),
            "{err}"
        );
        assert!(
            err.ends_with("needs 128.00 MiB but kv_cache_budget_mb is 100)"),
            "{err}"
        );
    }

    #[test]
    fn a_budget_beyond_the_limit_is_a_cuda_style_oom() {
        let config = EngineConfig {
            kv_cache_budget_mb: 2048,
            ..EngineConfig::default()
        };
        let err = check(&config, 2048).unwrap_err().to_string();
        assert!(
            err.starts_with(
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 \
                 has a total capacity of 2.00 GiB of which"
            ),
            "{err}"
        );
    }
}
