//! Latency histograms as the receipt stores them (MEASUREMENT.md, Open loop): HdrHistogram
//! in µs with 3 significant digits, serialized V2+DEFLATE and base64-encoded (standard
//! alphabet, padded). The encoded text starts with `HISTF` (the base64 of the V2
//! compressed cookie `0x1c849314`), the form the Java, Python, JS and Go ports all read.

use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

/// Highest value a latency histogram tracks: one hour in µs; larger values are clamped.
pub const HIGHEST_TRACKABLE_US: u64 = 3_600_000_000;

/// Significant digits of every latency histogram.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// A histogram could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
pub enum HistogramError {
    /// Serializing failed (the histogram library's message).
    #[error("encoding histogram: {message}")]
    Encode {
        /// Why.
        message: String,
    },
    /// The text is not base64 of a V2 (optionally DEFLATE) histogram.
    #[error("decoding histogram `{prefix}…`: {message}")]
    Decode {
        /// The first 16 characters of the text.
        prefix: String,
        /// Why.
        message: String,
    },
}

/// An empty latency histogram: 1 µs to one hour, 3 significant digits.
pub fn new_latency_histogram() -> Histogram<u64> {
    // Constant, valid bounds (low ≥ 1, high ≥ 2·low, sigfig ≤ 5): creation cannot fail.
    Histogram::new_with_bounds(1, HIGHEST_TRACKABLE_US, SIGNIFICANT_DIGITS)
        .expect("constant histogram bounds are valid")
}

/// `h` as V2+DEFLATE bytes in base64.
///
/// Errors: [`HistogramError::Encode`] if the serializer fails.
pub fn encode_histogram(h: &Histogram<u64>) -> Result<String, HistogramError> {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .map_err(|e| HistogramError::Encode {
            message: format!("{e:?}"),
        })?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// Decodes base64 V2 or V2+DEFLATE text into a histogram.
///
/// Errors: [`HistogramError::Decode`] for bad base64 or a bad histogram payload.
pub fn decode_histogram(text: &str) -> Result<Histogram<u64>, HistogramError> {
    let error = |message: String| HistogramError::Decode {
        prefix: text.chars().take(16).collect(),
        message,
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| error(e.to_string()))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| error(format!("{e:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_starts_with_histf() {
        let mut h = new_latency_histogram();
        for v in [1, 2, 3, 1000, 250_000] {
            h.saturating_record(v);
        }
        let text = encode_histogram(&h).unwrap();
        assert!(text.starts_with("HISTF"), "{text}");
        let back = decode_histogram(&text).unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(back.max(), h.max());
        assert_eq!(back, h);
        assert!(decode_histogram("HISTFnot-base64!").is_err());
    }
}
