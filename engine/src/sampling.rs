//! From logits to a token and its logprobs: log-softmax, top-k, greedy choice and
//! temperature sampling from a seeded ChaCha20 stream.
//!
//! Logprobs are always those of the raw model distribution (temperature 1, no masking),
//! as vLLM reports them by default. Sampling at temperature T > 0 draws 53 random bits
//! `u` per token from the request's ChaCha20 stream (key: `seed` as 8 little-endian bytes
//! then zeros, stream 0) and takes the first token whose cumulative probability of
//! softmax(logits / T) exceeds `u × total`; the sums use [`crate::mathfn::exp`] in f64, so
//! a seed gives the same tokens on every platform whose logits agree.

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

use crate::mathfn;

/// Log-softmax of `logits`, computed in f64 and rounded to f32.
pub fn log_softmax(logits: &[f32]) -> Vec<f32> {
    let max = logits.iter().fold(f32::NEG_INFINITY, |m, &l| m.max(l));
    let max = f64::from(max);
    let total: f64 = logits
        .iter()
        .map(|&l| mathfn::exp(f64::from(l) - max))
        .sum();
    let log_total = max + mathfn::ln(total);
    logits
        .iter()
        .map(|&l| (f64::from(l) - log_total) as f32)
        .collect()
}

/// The `k` highest logprobs as `(token, logprob)`, best first; ties go to the lower id.
pub fn top_k(logprobs: &[f32], k: usize) -> Vec<(u32, f32)> {
    // Token ids are below the vocabulary size, which fits in u32.
    let mut ranked: Vec<(u32, f32)> = logprobs
        .iter()
        .enumerate()
        .map(|(t, &lp)| (t as u32, lp))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.truncate(k);
    ranked
}

/// The token with the highest logit, skipping `banned` (EOS before `min_tokens`); ties go
/// to the lower id.
pub fn greedy(logits: &[f32], banned: Option<u32>) -> u32 {
    let mut best: Option<(u32, f32)> = None;
    for (t, &l) in logits.iter().enumerate() {
        // Token ids are below the vocabulary size, which fits in u32.
        let t = t as u32;
        if Some(t) != banned && best.is_none_or(|(_, b)| l > b) {
            best = Some((t, l));
        }
    }
    best.map_or(0, |(t, _)| t)
}

/// A request's random stream for temperature sampling.
#[derive(Debug)]
pub struct Sampler {
    rng: ChaCha20Rng,
}

impl Sampler {
    /// The stream for `seed` (module docs).
    pub fn new(seed: u64) -> Self {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&seed.to_le_bytes());
        Self {
            rng: ChaCha20Rng::from_seed(key),
        }
    }

    /// Draws a token from softmax(logits / `temperature`) (`temperature` > 0), never
    /// `banned`.
    pub fn sample(&mut self, logits: &[f32], temperature: f32, banned: Option<u32>) -> u32 {
        let inv_t = 1.0 / f64::from(temperature);
        let max = logits.iter().fold(f32::NEG_INFINITY, |m, &l| m.max(l));
        let weights: Vec<f64> = logits
            .iter()
            .enumerate()
            .map(|(t, &l)| {
                if Some(t as u32) == banned {
                    0.0
                } else {
                    mathfn::exp((f64::from(l) - f64::from(max)) * inv_t)
                }
            })
            .collect();
        let total: f64 = weights.iter().sum();
        // 53 random bits as a fraction in [0, 1), exact in f64.
        let u = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let target = u * total;
        let mut cumulative = 0.0;
        let mut last = 0;
        for (t, &w) in weights.iter().enumerate() {
            if w > 0.0 {
                cumulative += w;
                last = t;
                if cumulative > target {
                    return t as u32;
                }
            }
        }
        last as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_softmax_and_top_k() {
        let lp = log_softmax(&[0.0, 0.0, (2.0f32).ln(), 0.0]);
        // exp values 1, 1, 2, 1: probabilities 0.2, 0.2, 0.4, 0.2.
        assert!((lp[2] - (0.4f32).ln()).abs() < 1e-6);
        assert!((lp[0] - (0.2f32).ln()).abs() < 1e-6);
        assert_eq!(top_k(&lp, 2), vec![(2, lp[2]), (0, lp[0])]);
    }

    #[test]
    fn greedy_skips_banned() {
        assert_eq!(greedy(&[1.0, 3.0, 2.0], None), 1);
        assert_eq!(greedy(&[1.0, 3.0, 2.0], Some(1)), 2);
        assert_eq!(greedy(&[5.0, 5.0], None), 0);
    }

    #[test]
    fn sampling_is_seeded_and_follows_the_distribution() {
        let logits = [0.0f32, (3.0f32).ln(), f32::NEG_INFINITY];
        let draws = |seed| {
            let mut s = Sampler::new(seed);
            (0..4000)
                .map(|_| s.sample(&logits, 1.0, None))
                .collect::<Vec<_>>()
        };
        let a = draws(9);
        assert_eq!(a, draws(9));
        assert_ne!(a, draws(10));
        let ones = a.iter().filter(|&&t| t == 1).count();
        // P(token 1) = 0.75: 3000 expected, σ ≈ 27.
        assert!((2850..3150).contains(&ones), "{ones}");
        assert!(!a.contains(&2));
        let mut s = Sampler::new(1);
        assert!((0..100).all(|_| s.sample(&logits, 1.0, Some(1)) == 0));
    }
}
