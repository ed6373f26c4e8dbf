//! Deterministic elementary functions: `exp`, `ln` and `sin_cos` built from IEEE-754
//! addition, multiplication, division and rounding only.
//!
//! Why not `f64::exp` and friends: they call the platform's libm, whose last bit differs
//! between platforms and versions (content/measurement.md, Seeds), and the engine promises the
//! same logprobs wherever its matrix kernels agree. Basic IEEE operations are correctly
//! rounded everywhere, and Rust never contracts `a * b + c` into a fused multiply-add on
//! its own, so these functions give the same bits on every platform. Accuracy is a few
//! ulp of f64, far below the f32 the model computes in; the tests compare against std.

/// ln 2 split so that `k * LN2_HI` is exact for |k| < 2^20 (fdlibm's `ln2_hi`, `ln2_lo`,
/// given as bit patterns).
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
/// π/2 split the same way (fdlibm's `pio2_1`, `pio2_1t`).
const PIO2_HI: f64 = f64::from_bits(0x3ff9_21fb_5440_0000);
const PIO2_LO: f64 = f64::from_bits(0x3dd0_b461_1a62_6331);

/// e^x. Returns 0 below −745 and +∞ above 709.78, like the IEEE function.
pub fn exp(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x > 709.78 {
        return f64::INFINITY;
    }
    if x < -745.0 {
        return 0.0;
    }
    // x = k ln2 + r with |r| ≤ ln2 / 2, then e^x = 2^k e^r.
    let k = (x * std::f64::consts::LOG2_E).round();
    let r = (x - k * LN2_HI) - k * LN2_LO;
    // Taylor series to r^14: the first omitted term is below 1e-17 of the sum.
    let mut sum = 1.0;
    let mut term = 1.0;
    for n in 1..=14 {
        term = term * r / f64::from(n);
        sum += term;
    }
    // k is within −1075..=1024 here, so it fits in i32; split it so neither half
    // overflows the exponent field of a normal number.
    let k = k as i32;
    let half = k / 2;
    sum * pow2(half) * pow2(k - half)
}

/// Natural logarithm. `ln(0) = −∞`; negative and NaN inputs give NaN.
pub fn ln(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x.is_infinite() {
        return x;
    }
    // Scale subnormals into the normal range first.
    let (x, bias) = if x < f64::MIN_POSITIVE {
        (x * pow2(54), -54)
    } else {
        (x, 0)
    };
    let bits = x.to_bits();
    let mut exponent = ((bits >> 52) & 0x7ff) as i32 - 1023 + bias;
    let mut mantissa = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    if mantissa > std::f64::consts::SQRT_2 {
        mantissa /= 2.0;
        exponent += 1;
    }
    // ln m = 2 atanh(z) with z = (m − 1)/(m + 1), |z| ≤ 0.172: the series z^(2n+1)/(2n+1)
    // is below 1e-18 after 12 terms.
    let z = (mantissa - 1.0) / (mantissa + 1.0);
    let z2 = z * z;
    let mut power = z;
    let mut series = 0.0;
    for n in 0..12 {
        series += power / f64::from(2 * n + 1);
        power *= z2;
    }
    let e = f64::from(exponent);
    (e * LN2_HI + 2.0 * series) + e * LN2_LO
}

/// (sin a, cos a) for |a| below about 10^6 (rotary angles are at most `context` radians).
pub fn sin_cos(a: f64) -> (f64, f64) {
    // a = k π/2 + r with |r| ≤ π/4 (Cody–Waite: k × PIO2_HI is exact for |k| < 2^20).
    let k = (a * std::f64::consts::FRAC_2_PI).round();
    let r = (a - k * PIO2_HI) - k * PIO2_LO;
    let r2 = r * r;
    // Taylor series to r^17 (sin) and r^16 (cos): error below 1e-17 for |r| ≤ π/4.
    let mut sin = 0.0;
    let mut cos = 0.0;
    let mut sin_term = r;
    let mut cos_term = 1.0;
    for n in 0..9 {
        sin += sin_term;
        cos += cos_term;
        let n = f64::from(n);
        sin_term = -sin_term * r2 / ((2.0 * n + 2.0) * (2.0 * n + 3.0));
        cos_term = -cos_term * r2 / ((2.0 * n + 1.0) * (2.0 * n + 2.0));
    }
    // The quadrant is k mod 4; k is an integer-valued float well inside i64.
    match (k as i64).rem_euclid(4) {
        0 => (sin, cos),
        1 => (cos, -sin),
        2 => (-sin, -cos),
        _ => (-cos, sin),
    }
}

/// 2^k for −1022 ≤ k ≤ 1023, built from its bit pattern.
fn pow2(k: i32) -> f64 {
    let k = k.clamp(-1022, 1023);
    // In range, 1023 + k is 1..=2046: a valid biased exponent.
    f64::from_bits(((1023 + k) as u64) << 52)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64, rel: f64) {
        let tol = rel * want.abs().max(1e-300);
        assert!((got - want).abs() <= tol, "got {got:e}, want {want:e}");
    }

    #[test]
    fn exp_matches_std() {
        for i in -7000..=7000 {
            let x = f64::from(i) * 0.1013;
            close(exp(x), x.exp(), 2e-15);
        }
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-800.0), 0.0);
        assert_eq!(exp(f64::NEG_INFINITY), 0.0);
        assert_eq!(exp(1000.0), f64::INFINITY);
    }

    #[test]
    fn ln_matches_std() {
        for i in 1..=20000 {
            let x = f64::from(i) * 0.0137;
            close(ln(x), x.ln(), 2e-15);
            close(ln(1.0 / x), (1.0 / x).ln(), 2e-15);
        }
        close(ln(1e-310), (1e-310f64).ln(), 2e-15);
        assert_eq!(ln(1.0), 0.0);
        assert_eq!(ln(0.0), f64::NEG_INFINITY);
        assert!(ln(-1.0).is_nan());
    }

    #[test]
    fn sin_cos_match_std() {
        for i in -20000..=20000 {
            let a = f64::from(i) * 0.0731;
            let (s, c) = sin_cos(a);
            assert!((s - a.sin()).abs() < 1e-14, "sin {a}");
            assert!((c - a.cos()).abs() < 1e-14, "cos {a}");
        }
        assert_eq!(sin_cos(0.0), (0.0, 1.0));
    }
}
