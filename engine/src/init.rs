//! Weight values drawn from `model_seed`, identical on every platform.
//!
//! Each tensor reads its own ChaCha20 stream: the key is `model_seed` as 8 little-endian
//! bytes followed by 24 zero bytes, the stream number is the tensor's index
//! ([`TensorId::stream`]), so adding a tensor never shifts another's values. Each value
//! takes one 32-bit word `u` and sums its four bytes: `s = b0 + b1 + b2 + b3 − 510`, an
//! integer in −510..=510 with a bell-shaped (Irwin–Hall) distribution of mean 0 and
//! standard deviation √21845 ≈ 147.8. The value is `s × (std / √21845)` in f32. Only integer
//! arithmetic, IEEE multiplication and `sqrt` (correctly rounded by IEEE 754) are involved,
//! and no `rand` distribution helper (whose algorithms change between versions), as
//! content/measurement.md §Seeds asks.

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

/// Variance of the sum of four independent uniform bytes: 4 × (256² − 1) / 12.
const BYTE_SUM_VARIANCE: f64 = 21845.0;

/// Which tensor a stream belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorId {
    /// The token embedding table.
    Embedding,
    /// Layer `l`'s fused query/key/value projection.
    Qkv(usize),
    /// Layer `l`'s attention output projection.
    AttentionOut(usize),
    /// Layer `l`'s fused SwiGLU gate and up projections.
    GateUp(usize),
    /// Layer `l`'s SwiGLU down projection.
    Down(usize),
    /// The output projection to vocabulary logits.
    LmHead,
}

impl TensorId {
    /// The ChaCha20 stream number: 0 for the embedding, 1 for the LM head, then four per
    /// layer from 2 (query/key/value, attention output, gate/up, down).
    pub fn stream(self) -> u64 {
        let layer = |l: usize, i: u64| 2 + 4 * l as u64 + i;
        match self {
            TensorId::Embedding => 0,
            TensorId::LmHead => 1,
            TensorId::Qkv(l) => layer(l, 0),
            TensorId::AttentionOut(l) => layer(l, 1),
            TensorId::GateUp(l) => layer(l, 2),
            TensorId::Down(l) => layer(l, 3),
        }
    }
}

/// `count` values with mean 0 and standard deviation about `std`, drawn for `tensor` from
/// `model_seed` as the module docs describe.
pub fn draw(model_seed: u64, tensor: TensorId, count: usize, std: f64) -> Vec<f32> {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&model_seed.to_le_bytes());
    let mut rng = ChaCha20Rng::from_seed(key);
    rng.set_stream(tensor.stream());
    let factor = (std / BYTE_SUM_VARIANCE.sqrt()) as f32;
    (0..count)
        .map(|_| {
            let bytes = rng.next_u32().to_le_bytes();
            let sum: i32 = bytes.iter().map(|&b| i32::from(b)).sum::<i32>() - 510;
            // |sum| ≤ 510 is exact in f32.
            sum as f32 * factor
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_pinned() {
        // Pinned values: a change here changes every model and every golden.
        let values = draw(0, TensorId::Embedding, 4, 1.0);
        let sums: Vec<i32> = values
            .iter()
            .map(|v| (v * BYTE_SUM_VARIANCE.sqrt() as f32).round() as i32)
            .collect();
        assert_eq!(sums, vec![189, 96, -18, -64]);
        assert_ne!(draw(1, TensorId::Embedding, 4, 1.0), values);
        assert_ne!(draw(0, TensorId::LmHead, 4, 1.0), values);
    }

    #[test]
    fn draws_have_the_asked_spread() {
        let values = draw(3, TensorId::Qkv(2), 100_000, 0.5);
        let n = values.len() as f64;
        let mean = values.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
        let var = values
            .iter()
            .map(|&v| (f64::from(v) - mean).powi(2))
            .sum::<f64>()
            / n;
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var.sqrt() - 0.5).abs() < 0.01, "std {}", var.sqrt());
    }
}
