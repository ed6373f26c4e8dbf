//! The transformer: a decoder-only stack of pre-norm blocks (RMSNorm → multi-head
//! attention with rotary positions → residual; RMSNorm → SwiGLU MLP → residual), a final
//! RMSNorm and an output projection to the 258 byte-level tokens, with a KV cache of one
//! full-context slot per running sequence.
//!
//! [`Model::forward`] computes any set of rows (a row = one token of one sequence at one
//! position) in one pass: the matrix products take all rows at once, attention runs per
//! row. A row's values depend only on its sequence's tokens, never on the other rows of
//! the pass (kernels::Weights::matmul is row-invariant, attention and norms are per row
//! with a fixed summation order), so a sequence decodes to the same bits alone, in a batch
//! of 16, or with its prompt prefilled in any chunk size (crate docs, Determinism).
//!
//! Weights are drawn by [`crate::init`] with standard deviation 1 for the embedding,
//! 1/√fan-in for the projections and [`LOGIT_STD`]/√d_model for the output projection; the
//! RMSNorm gains are 1. Rotary frequencies are `10000^(−2i/head_dim)` on interleaved pairs,
//! computed once with [`crate::mathfn`].

use rayon::prelude::*;

use crate::config::{EngineConfig, KvCacheDtype, WeightDtype};
use crate::init::{self, TensorId};
use crate::kernels::{Weights, bf16_to_f32, f32_to_bf16};
use crate::mathfn;
use crate::tokenizer::VOCAB_SIZE;

/// Standard deviation of the logits for a unit-RMS hidden state: large enough that the
/// next-token distribution is peaked and greedy outputs differ between prompts.
pub const LOGIT_STD: f64 = 4.0;
/// RMSNorm's ε.
const RMS_EPS: f32 = 1e-5;
/// Rotary base.
const ROPE_BASE: f64 = 10_000.0;

/// One token of one sequence to compute in a forward pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    /// The KV cache slot of the sequence.
    pub slot: usize,
    /// The token's position in the sequence (0-based, below `context`).
    pub pos: usize,
    /// The token id (below [`VOCAB_SIZE`]).
    pub token: u32,
}

/// The model's weights and rotary table.
#[derive(Debug)]
pub struct Model {
    d_model: usize,
    heads: usize,
    ffn_dim: usize,
    embedding: Vec<f32>,
    layers: Vec<Layer>,
    lm_head: Weights,
    /// `(cos, sin)` per position and pair: `context × head_dim/2`.
    rope: Vec<(f32, f32)>,
}

#[derive(Debug)]
struct Layer {
    qkv: Weights,
    attention_out: Weights,
    gate_up: Weights,
    down: Weights,
}

/// The KV cache: per slot, layer and position, the rotated key then the value
/// (`d_model` each), in the configured precision.
#[derive(Debug)]
pub struct KvCache {
    layers: usize,
    context: usize,
    d_model: usize,
    data: KvData,
}

#[derive(Debug)]
enum KvData {
    F32(Vec<f32>),
    Bf16(Vec<u16>),
}

impl Model {
    /// Draws the weights for `config` from its `model_seed` and stores them in its
    /// `weight_dtype`. Takes about a second for the default sizes.
    pub fn new(config: &EngineConfig) -> Self {
        let d = config.d_model;
        let ff = config.ffn_dim();
        let seed = config.model_seed;
        let fan_in = |n: usize| 1.0 / (n as f64).sqrt();
        let store = |values: Vec<f32>, channels: usize, inputs: usize| match config.weight_dtype {
            WeightDtype::F32 => Weights::f32(channels, inputs, values),
            WeightDtype::Bf16 => Weights::bf16(channels, inputs, &values),
            WeightDtype::Int8 => Weights::quantized(channels, inputs, &values, 127),
            WeightDtype::Int4 => Weights::quantized(channels, inputs, &values, 7),
        };
        let layers = (0..config.layers)
            .map(|l| Layer {
                qkv: store(
                    init::draw(seed, TensorId::Qkv(l), 3 * d * d, fan_in(d)),
                    3 * d,
                    d,
                ),
                attention_out: store(
                    init::draw(seed, TensorId::AttentionOut(l), d * d, fan_in(d)),
                    d,
                    d,
                ),
                gate_up: store(
                    init::draw(seed, TensorId::GateUp(l), 2 * ff * d, fan_in(d)),
                    2 * ff,
                    d,
                ),
                down: store(
                    init::draw(seed, TensorId::Down(l), d * ff, fan_in(ff)),
                    d,
                    ff,
                ),
            })
            .collect();
        let lm_head = store(
            init::draw(
                seed,
                TensorId::LmHead,
                VOCAB_SIZE * d,
                LOGIT_STD * fan_in(d),
            ),
            VOCAB_SIZE,
            d,
        );
        Self {
            d_model: d,
            heads: config.heads,
            ffn_dim: ff,
            embedding: init::draw(seed, TensorId::Embedding, VOCAB_SIZE * d, 1.0),
            layers,
            lm_head,
            rope: rope_table(config.context, config.head_dim()),
        }
    }

    /// Computes `rows` (writing their keys and values into `cache`) and returns the logits
    /// (`logit_rows.len() × VOCAB_SIZE`, row-major) of the rows whose indices are in
    /// `logit_rows`. Every earlier position of each row's sequence must already be in the
    /// cache or among `rows`. Runs on the current rayon pool.
    pub fn forward(&self, cache: &mut KvCache, rows: &[Row], logit_rows: &[usize]) -> Vec<f32> {
        let d = self.d_model;
        let n = rows.len();
        let mut x = Vec::with_capacity(n * d);
        for row in rows {
            let t = row.token as usize;
            x.extend_from_slice(&self.embedding[t * d..(t + 1) * d]);
        }
        let mut h = vec![0.0f32; n * d];
        let mut qkv = vec![0.0f32; n * 3 * d];
        let mut attn = vec![0.0f32; n * d];
        let mut proj = vec![0.0f32; n * d];
        let mut gate_up = vec![0.0f32; n * 2 * self.ffn_dim];
        let mut act = vec![0.0f32; n * self.ffn_dim];
        for (l, layer) in self.layers.iter().enumerate() {
            rms_norm_rows(&x, &mut h, d);
            layer.qkv.matmul(&h, n, &mut qkv);
            for (row, qkv_row) in rows.iter().zip(qkv.chunks_exact_mut(3 * d)) {
                self.rotate(&mut qkv_row[..2 * d], row.pos);
                cache.write(row.slot, l, row.pos, &qkv_row[d..2 * d], &qkv_row[2 * d..]);
            }
            let cache_ref = &*cache;
            attn.par_chunks_exact_mut(d)
                .zip(rows.par_iter())
                .enumerate()
                .for_each(|(i, (out, row))| {
                    let q = &qkv[i * 3 * d..i * 3 * d + d];
                    self.attend(cache_ref, l, row, q, out);
                });
            layer.attention_out.matmul(&attn, n, &mut proj);
            add_into(&mut x, &proj);
            rms_norm_rows(&x, &mut h, d);
            layer.gate_up.matmul(&h, n, &mut gate_up);
            for (gu, a) in gate_up
                .chunks_exact(2 * self.ffn_dim)
                .zip(act.chunks_exact_mut(self.ffn_dim))
            {
                let (gate, up) = gu.split_at(self.ffn_dim);
                for ((a, &g), &u) in a.iter_mut().zip(gate).zip(up) {
                    *a = silu(g) * u;
                }
            }
            layer.down.matmul(&act, n, &mut proj);
            add_into(&mut x, &proj);
        }
        let mut last = Vec::with_capacity(logit_rows.len() * d);
        for &i in logit_rows {
            last.extend_from_slice(&x[i * d..(i + 1) * d]);
        }
        let mut normed = vec![0.0f32; last.len()];
        rms_norm_rows(&last, &mut normed, d);
        let mut logits = vec![0.0f32; logit_rows.len() * VOCAB_SIZE];
        self.lm_head.matmul(&normed, logit_rows.len(), &mut logits);
        logits
    }

    /// Applies the rotary embedding for `pos` to the query and key halves of `qk`
    /// (`2 × d_model`: every head's interleaved pairs).
    fn rotate(&self, qk: &mut [f32], pos: usize) {
        let half = self.d_model / self.heads / 2;
        let table = &self.rope[pos * half..(pos + 1) * half];
        for head in qk.chunks_exact_mut(2 * half) {
            for (pair, &(cos, sin)) in head.chunks_exact_mut(2).zip(table) {
                let (a, b) = (pair[0], pair[1]);
                pair[0] = a * cos - b * sin;
                pair[1] = a * sin + b * cos;
            }
        }
    }

    /// Causal attention of one row over its sequence's cached positions `0..=pos`, all
    /// heads, into `out` (`d_model`).
    fn attend(&self, cache: &KvCache, layer: usize, row: &Row, q: &[f32], out: &mut [f32]) {
        let head_dim = self.d_model / self.heads;
        let scale = 1.0 / (head_dim as f32).sqrt();
        let mut scores = vec![0.0f32; row.pos + 1];
        let mut cached = vec![0.0f32; head_dim];
        for (head, (q, out)) in q
            .chunks_exact(head_dim)
            .zip(out.chunks_exact_mut(head_dim))
            .enumerate()
        {
            let start = head * head_dim;
            let mut max = f32::NEG_INFINITY;
            for (p, score) in scores.iter_mut().enumerate() {
                cache.read(row.slot, layer, p, start, &mut cached);
                *score = dot(q, &cached) * scale;
                max = max.max(*score);
            }
            let mut total = 0.0f32;
            for score in scores.iter_mut() {
                *score = mathfn::exp(f64::from(*score - max)) as f32;
                total += *score;
            }
            out.fill(0.0);
            for (p, &weight) in scores.iter().enumerate() {
                cache.read(row.slot, layer, p, self.d_model + start, &mut cached);
                for (o, &v) in out.iter_mut().zip(&cached) {
                    *o += weight * v;
                }
            }
            for o in out.iter_mut() {
                *o /= total;
            }
        }
    }
}

impl KvCache {
    /// A zeroed cache with `slots` full-context slots for `config`'s sizes, in its
    /// `kv_cache_dtype`.
    pub fn new(config: &EngineConfig, slots: usize) -> Self {
        let len = slots * config.layers * config.context * 2 * config.d_model;
        let data = match config.kv_cache_dtype {
            KvCacheDtype::F32 => KvData::F32(vec![0.0; len]),
            KvCacheDtype::Bf16 => KvData::Bf16(vec![0; len]),
        };
        Self {
            layers: config.layers,
            context: config.context,
            d_model: config.d_model,
            data,
        }
    }

    fn offset(&self, slot: usize, layer: usize, pos: usize) -> usize {
        ((slot * self.layers + layer) * self.context + pos) * 2 * self.d_model
    }

    fn write(&mut self, slot: usize, layer: usize, pos: usize, key: &[f32], value: &[f32]) {
        let at = self.offset(slot, layer, pos);
        let d = self.d_model;
        match &mut self.data {
            KvData::F32(data) => {
                data[at..at + d].copy_from_slice(key);
                data[at + d..at + 2 * d].copy_from_slice(value);
            }
            KvData::Bf16(data) => {
                for (dst, &v) in data[at..at + 2 * d].iter_mut().zip(key.iter().chain(value)) {
                    *dst = f32_to_bf16(v);
                }
            }
        }
    }

    /// Reads `out.len()` values of the entry at (slot, layer, pos), starting `start`
    /// values in (keys are at 0, values at `d_model`).
    fn read(&self, slot: usize, layer: usize, pos: usize, start: usize, out: &mut [f32]) {
        let at = self.offset(slot, layer, pos) + start;
        let len = out.len();
        match &self.data {
            KvData::F32(data) => out.copy_from_slice(&data[at..at + len]),
            KvData::Bf16(data) => {
                for (o, &b) in out.iter_mut().zip(&data[at..at + len]) {
                    *o = bf16_to_f32(b);
                }
            }
        }
    }
}

/// `(cos, sin)` of `pos × 10000^(−2i/head_dim)` for every position below `context` and
/// pair `i` below `head_dim / 2`, computed in f64 with [`mathfn`] and rounded to f32.
fn rope_table(context: usize, head_dim: usize) -> Vec<(f32, f32)> {
    let half = head_dim / 2;
    let inv_freq: Vec<f64> = (0..half)
        .map(|i| mathfn::exp(-(2.0 * i as f64 / head_dim as f64) * mathfn::ln(ROPE_BASE)))
        .collect();
    let mut table = Vec::with_capacity(context * half);
    for pos in 0..context {
        for &f in &inv_freq {
            let (sin, cos) = mathfn::sin_cos(pos as f64 * f);
            table.push((cos as f32, sin as f32));
        }
    }
    table
}

/// RMSNorm with unit gains, row by row: `out = x / √(mean(x²) + ε)`.
fn rms_norm_rows(x: &[f32], out: &mut [f32], d: usize) {
    for (row, out) in x.chunks_exact(d).zip(out.chunks_exact_mut(d)) {
        let mean_square = dot(row, row) / d as f32;
        let inv = 1.0 / (mean_square + RMS_EPS).sqrt();
        for (o, &v) in out.iter_mut().zip(row) {
            *o = v * inv;
        }
    }
}

/// Dot product with eight interleaved partial sums added in a fixed order: the compiler
/// can vectorise it, and its result does not depend on the CPU.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut partial = [0.0f32; 8];
    let chunks = a.len() / 8 * 8;
    for (ca, cb) in a[..chunks].chunks_exact(8).zip(b[..chunks].chunks_exact(8)) {
        for i in 0..8 {
            partial[i] += ca[i] * cb[i];
        }
    }
    let mut sum = ((partial[0] + partial[4]) + (partial[1] + partial[5]))
        + ((partial[2] + partial[6]) + (partial[3] + partial[7]));
    for (x, y) in a[chunks..].iter().zip(&b[chunks..]) {
        sum += x * y;
    }
    sum
}

fn add_into(x: &mut [f32], y: &[f32]) {
    for (a, &b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

/// SiLU: x · σ(x), with [`mathfn::exp`].
fn silu(x: f32) -> f32 {
    x / (1.0 + mathfn::exp(f64::from(-x)) as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> EngineConfig {
        EngineConfig {
            layers: 2,
            d_model: 64,
            heads: 4,
            context: 64,
            ..EngineConfig::default()
        }
    }

    #[test]
    fn prefill_chunking_and_batching_do_not_change_bits() {
        let config = small();
        let model = Model::new(&config);
        let tokens: Vec<u32> = b"batch invariance".iter().map(|&b| u32::from(b)).collect();
        let all: Vec<usize> = (0..tokens.len()).collect();
        let rows = |slot: usize, range: std::ops::Range<usize>| -> Vec<Row> {
            range
                .map(|pos| Row {
                    slot,
                    pos,
                    token: tokens[pos],
                })
                .collect()
        };
        // Whole prompt in one pass.
        let mut cache = KvCache::new(&config, 3);
        let whole = model.forward(&mut cache, &rows(0, 0..tokens.len()), &all);
        // One token at a time, in slot 1, next to another sequence in slot 2.
        let mut stepped = Vec::new();
        for pos in 0..tokens.len() {
            let mut batch = rows(1, pos..pos + 1);
            batch.push(Row {
                slot: 2,
                pos,
                token: 7,
            });
            stepped.extend(model.forward(&mut cache, &batch, &[0]));
        }
        assert_eq!(whole, stepped);
    }

    #[test]
    fn logits_are_spread() {
        let model = Model::new(&small());
        let mut cache = KvCache::new(&small(), 1);
        let logits = model.forward(
            &mut cache,
            &[Row {
                slot: 0,
                pos: 0,
                token: 256,
            }],
            &[0],
        );
        let mean = logits.iter().sum::<f32>() / logits.len() as f32;
        let var = logits.iter().map(|l| (l - mean).powi(2)).sum::<f32>() / logits.len() as f32;
        assert!(
            var.sqrt() > 2.0 && var.sqrt() < 8.0,
            "logit std {}",
            var.sqrt()
        );
    }
}
