//! Matrix products of activations with weights: `out[r][n] = Σ_k x[r][k] · W[n][k]`, for
//! weights in f32, bf16, int8 or int4.
//!
//! Weights are held one output channel per row (`N × K`, row-major), the layout per-row
//! quantisation wants. f32 weights go straight to `matrixmultiply::sgemm`. `matrixmultiply`
//! has no bf16 or integer kernels, so the low-precision kernel here converts a tile of at
//! most [`TILE_CHANNELS`] output channels to f32 in a small buffer that stays in cache
//! (bf16: shift into the top half of an f32; int8/int4: `q × scale` with one f32 scale per
//! channel) and multiplies that tile with `sgemm`. Memory traffic for the weights is then
//! 2 or 1 bytes per weight instead of 4; the arithmetic is the f32 kernel's.
//!
//! **Row invariance** (what makes batching unable to change results, crate docs): every
//! output element is accumulated by `sgemm` over `k` in the same order whatever the number
//! of rows `m` and whatever the column range it is asked for — `matrixmultiply` splits `k`
//! into fixed blocks of 256 and computes each element of its `MR × NR` register tile the
//! same way, padding edge tiles with zeros — so a row's result does not depend on which
//! other rows share the product, nor on how the columns are split across threads. The test
//! `rows_do_not_depend_on_batch` pins this.
//!
//! Threads: the `N` output channels are split into one contiguous range per thread of the
//! current rayon pool (the engine's `threads` knob); each range is computed into its own
//! buffer and copied into place.

use rayon::prelude::*;

/// The most output channels the low-precision kernel converts to f32 at a time: 64
/// channels × K = 256 inputs is 64 KiB, which stays in L2.
pub const TILE_CHANNELS: usize = 64;

/// A weight matrix of `channels` output rows by `inputs` columns in one of the storage
/// precisions.
#[derive(Clone, Debug)]
pub struct Weights {
    /// Output channels (N).
    pub channels: usize,
    /// Inputs per channel (K).
    pub inputs: usize,
    /// The stored values.
    pub storage: Storage,
}

/// How a [`Weights`] matrix is stored, `channels × inputs` row-major.
#[derive(Clone, Debug)]
pub enum Storage {
    /// f32 values.
    F32(Vec<f32>),
    /// bfloat16 bit patterns.
    Bf16(Vec<u16>),
    /// Quantised values with one scale per output channel: w ≈ q · scale. Used for int8
    /// (q in −127..=127) and int4 (q in −7..=7).
    Quantized {
        /// The integers.
        values: Vec<i8>,
        /// One scale per channel.
        scales: Vec<f32>,
    },
}

impl Weights {
    /// Stores `values` (`channels × inputs`, row-major) as f32.
    pub fn f32(channels: usize, inputs: usize, values: Vec<f32>) -> Self {
        debug_assert_eq!(values.len(), channels * inputs);
        Self {
            channels,
            inputs,
            storage: Storage::F32(values),
        }
    }

    /// Rounds `values` to bfloat16 (nearest, ties to even).
    pub fn bf16(channels: usize, inputs: usize, values: &[f32]) -> Self {
        let bits = values.iter().map(|&v| f32_to_bf16(v)).collect();
        Self {
            channels,
            inputs,
            storage: Storage::Bf16(bits),
        }
    }

    /// Quantises each output channel symmetrically to `-levels..=levels` with scale
    /// `max |w| / levels` (127 for int8, 7 for int4), rounding to nearest, ties away from
    /// zero. A channel of zeros gets scale 0.
    pub fn quantized(channels: usize, inputs: usize, values: &[f32], levels: i8) -> Self {
        let mut quantized = Vec::with_capacity(values.len());
        let mut scales = Vec::with_capacity(channels);
        for row in values.chunks_exact(inputs) {
            let max = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let scale = max / f32::from(levels);
            for &v in row {
                let q = if scale > 0.0 {
                    (v / scale).round()
                } else {
                    0.0
                };
                // |v / scale| ≤ levels by construction; the clamp only guards rounding.
                quantized.push(q.clamp(-f32::from(levels), f32::from(levels)) as i8);
            }
            scales.push(scale);
        }
        Self {
            channels,
            inputs,
            storage: Storage::Quantized {
                values: quantized,
                scales,
            },
        }
    }

    /// `out[r][n] = Σ_k x[r][k] · W[n][k]` for `rows` rows: `x` is `rows × inputs`, `out`
    /// is `rows × channels`, both row-major. Runs on the current rayon pool.
    pub fn matmul(&self, x: &[f32], rows: usize, out: &mut [f32]) {
        assert_eq!(
            x.len(),
            rows * self.inputs,
            "matmul: x is not rows × inputs"
        );
        assert_eq!(
            out.len(),
            rows * self.channels,
            "matmul: out is not rows × channels"
        );
        if rows == 0 {
            return;
        }
        let threads = rayon::current_num_threads().clamp(1, self.channels);
        if threads == 1 {
            self.matmul_range(x, rows, 0, self.channels, out);
            return;
        }
        let per_thread = self.channels.div_ceil(threads);
        let parts: Vec<(usize, Vec<f32>)> = (0..threads)
            .into_par_iter()
            .filter_map(|t| {
                let start = t * per_thread;
                let end = (start + per_thread).min(self.channels);
                (start < end).then(|| {
                    let mut part = vec![0.0; rows * (end - start)];
                    self.matmul_range(x, rows, start, end, &mut part);
                    (start, part)
                })
            })
            .collect();
        for (start, part) in parts {
            let width = part.len() / rows;
            for (r, row) in part.chunks_exact(width).enumerate() {
                let at = r * self.channels + start;
                out[at..at + width].copy_from_slice(row);
            }
        }
    }

    /// Output channels `start..end` into `out` (`rows × (end − start)`).
    fn matmul_range(&self, x: &[f32], rows: usize, start: usize, end: usize, out: &mut [f32]) {
        let k = self.inputs;
        match &self.storage {
            Storage::F32(values) => sgemm_nk(x, rows, k, &values[start * k..end * k], out),
            Storage::Bf16(bits) => self.tiled(x, rows, start, end, out, |n, tile| {
                for (dst, &b) in tile.iter_mut().zip(&bits[n * k..(n + 1) * k]) {
                    *dst = bf16_to_f32(b);
                }
            }),
            Storage::Quantized { values, scales } => {
                self.tiled(x, rows, start, end, out, |n, tile| {
                    let scale = scales[n];
                    for (dst, &q) in tile.iter_mut().zip(&values[n * k..(n + 1) * k]) {
                        *dst = f32::from(q) * scale;
                    }
                })
            }
        }
    }

    /// The low-precision kernel: converts [`TILE_CHANNELS`] channels at a time with
    /// `convert(channel, row_out)` into an f32 tile and multiplies it with `sgemm`.
    fn tiled(
        &self,
        x: &[f32],
        rows: usize,
        start: usize,
        end: usize,
        out: &mut [f32],
        convert: impl Fn(usize, &mut [f32]),
    ) {
        let k = self.inputs;
        let width = end - start;
        let mut tile = vec![0.0f32; TILE_CHANNELS * k];
        let mut tile_out = vec![0.0f32; rows * TILE_CHANNELS];
        let mut n0 = start;
        while n0 < end {
            let n1 = (n0 + TILE_CHANNELS).min(end);
            let count = n1 - n0;
            for (i, row) in tile.chunks_exact_mut(k).take(count).enumerate() {
                convert(n0 + i, row);
            }
            let tile_out = &mut tile_out[..rows * count];
            sgemm_nk(x, rows, k, &tile[..count * k], tile_out);
            for (r, row) in tile_out.chunks_exact(count).enumerate() {
                let at = r * width + (n0 - start);
                out[at..at + count].copy_from_slice(row);
            }
            n0 = n1;
        }
    }
}

/// `out (m × n) = x (m × k) · wᵀ` where `w` is `n × k` row-major.
fn sgemm_nk(x: &[f32], m: usize, k: usize, w: &[f32], out: &mut [f32]) {
    let n = w.len() / k;
    assert!(
        x.len() >= m * k && out.len() >= m * n,
        "sgemm_nk: buffers too small"
    );
    // Strides are element counts; every dimension is far below isize::MAX.
    let (k_i, n_i) = (k as isize, n as isize);
    // SAFETY: `x` holds m × k elements read with row stride k and column stride 1; `w`
    // holds n × k elements read as the k × n matrix wᵀ (row stride 1, column stride k);
    // `out` holds m × n elements written with row stride n. The assert above checks the
    // lengths and the three slices do not overlap (`out` is a unique borrow).
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            x.as_ptr(),
            k_i,
            1,
            w.as_ptr(),
            1,
            k_i,
            0.0,
            out.as_mut_ptr(),
            n_i,
            1,
        );
    }
}

/// Rounds an f32 to bfloat16 bits, nearest with ties to even (NaN stays NaN).
pub fn f32_to_bf16(value: f32) -> u16 {
    let bits = value.to_bits();
    if value.is_nan() {
        return ((bits >> 16) | 0x40) as u16;
    }
    let rounding = 0x7fff + ((bits >> 16) & 1);
    (bits.wrapping_add(rounding) >> 16) as u16
}

/// Widens bfloat16 bits to the f32 they stand for (exact).
pub fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic test values in about −1..1.
    fn values(count: usize, salt: u32) -> Vec<f32> {
        (0..count as u32)
            .map(|i| {
                let h = (i.wrapping_mul(2_654_435_761) ^ salt.wrapping_mul(40_503)) >> 8;
                (h % 2001) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    fn reference(x: &[f32], rows: usize, w: &[f32], k: usize) -> Vec<f32> {
        let n = w.len() / k;
        let mut out = vec![0.0f32; rows * n];
        for r in 0..rows {
            for c in 0..n {
                let dot: f64 = (0..k)
                    .map(|i| f64::from(x[r * k + i]) * f64::from(w[c * k + i]))
                    .sum();
                out[r * n + c] = dot as f32;
            }
        }
        out
    }

    fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).fold(0.0, |m, (x, y)| m.max((x - y).abs()))
    }

    #[test]
    fn bf16_rounding() {
        assert_eq!(f32_to_bf16(1.0), 0x3f80);
        // 1 + 2^-8 is halfway between two bf16 values: ties to even (down).
        assert_eq!(f32_to_bf16(1.0 + 1.0 / 256.0), 0x3f80);
        // 1 + 3·2^-8 is halfway too: ties to even (up).
        assert_eq!(f32_to_bf16(1.0 + 3.0 / 256.0), 0x3f82);
        assert_eq!(bf16_to_f32(0x3f82), 1.015625);
    }

    #[test]
    fn every_precision_matches_the_f64_reference() {
        let (rows, k, n) = (5, 300, 130);
        let x = values(rows * k, 1);
        let w = values(n * k, 2);
        let want = reference(&x, rows, &w, k);
        // Bounds: f32 accumulation; bf16 relative error 2^-9 per weight; int8 and int4
        // half a quantisation step (max |w| / 254 and / 14) per weight, summed over
        // k = 300 inputs of |x| ≤ 1 as a random walk (≈ √k times).
        let cases = [
            (Weights::f32(n, k, w.clone()), 1e-4),
            (Weights::bf16(n, k, &w), 0.1),
            (Weights::quantized(n, k, &w, 127), 0.15),
            (Weights::quantized(n, k, &w, 7), 2.5),
        ];
        for (weights, bound) in cases {
            let mut got = vec![0.0; rows * n];
            weights.matmul(&x, rows, &mut got);
            let diff = max_abs_diff(&got, &want);
            assert!(
                diff < bound,
                "{:?}: {diff} ≥ {bound}",
                std::mem::discriminant(&weights.storage)
            );
        }
    }

    #[test]
    fn rows_do_not_depend_on_batch() {
        let (k, n) = (600, 200);
        let w = values(n * k, 3);
        let x = values(17 * k, 4);
        for weights in [
            Weights::f32(n, k, w.clone()),
            Weights::bf16(n, k, &w),
            Weights::quantized(n, k, &w, 127),
        ] {
            let mut batch = vec![0.0; 17 * n];
            weights.matmul(&x, 17, &mut batch);
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(3)
                .build()
                .unwrap();
            let mut threaded = vec![0.0; 17 * n];
            pool.install(|| weights.matmul(&x, 17, &mut threaded));
            assert_eq!(batch, threaded, "column split changed bits");
            for r in [0, 7, 16] {
                let mut single = vec![0.0; n];
                weights.matmul(&x[r * k..(r + 1) * k], 1, &mut single);
                assert_eq!(
                    single,
                    batch[r * n..(r + 1) * n],
                    "row {r} changed with batch size"
                );
            }
        }
    }
}
