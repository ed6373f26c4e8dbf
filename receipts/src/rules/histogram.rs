//! Latency histograms as the receipt stores them (content/measurement.md, Open loop): HdrHistogram
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

/// Largest base64 text [`decode_histogram`] accepts, bytes. A latency histogram of one
/// probe compresses to a few KiB; a bundle is untrusted input.
pub const MAX_ENCODED_BYTES: usize = 1 << 20;

/// Largest uncompressed V2 payload [`decode_histogram`] inflates, bytes (a DEFLATE bomb
/// stops here).
pub const MAX_DECODED_BYTES: u64 = 16 << 20;

/// Largest `highestTrackableValue` a decoded histogram may declare (2^40 µs ≈ 12.7 days),
/// so a forged header cannot make the decoder allocate gigabytes of counts.
const MAX_DECODED_HIGHEST: u64 = 1 << 40;

/// V2 cookies (HdrHistogram's `V2_ENCODING_COOKIE_BASE` and `V2_COMPRESSED_COOKIE_BASE`
/// with word size 0x10, the only ones the Rust port writes).
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;

/// Bytes of a V2 header: cookie, payload length, normalizing offset, significant digits
/// (4 each), lowest, highest, int-to-double ratio (8 each).
const V2_HEADER_BYTES: usize = 40;

/// Decodes base64 V2 or V2+DEFLATE text into a histogram, within the size limits:
/// at most [`MAX_ENCODED_BYTES`] of text, [`MAX_DECODED_BYTES`] inflated, significant
/// digits at most 5 and a highest trackable value at most 2^40.
///
/// Errors: [`HistogramError::Decode`] for bad base64, a payload over a limit or a bad
/// histogram payload.
pub fn decode_histogram(text: &str) -> Result<Histogram<u64>, HistogramError> {
    let error = |message: String| HistogramError::Decode {
        prefix: text.chars().take(16).collect(),
        message,
    };
    let text = text.trim();
    if text.len() > MAX_ENCODED_BYTES {
        return Err(error(format!(
            "{} bytes of text, the limit is {MAX_ENCODED_BYTES}",
            text.len()
        )));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| error(e.to_string()))?;
    let plain = match be_u32(&bytes, 0) {
        Some(V2_COMPRESSED_COOKIE) => inflate(bytes.get(8..).unwrap_or_default()).map_err(error)?,
        Some(V2_COOKIE) => bytes,
        other => {
            return Err(error(format!("cookie {other:08x?} is not a V2 histogram")));
        }
    };
    // V2 header: cookie, payload length, normalizing offset, significant digits (u32 at
    // 12), lowest (u64 at 16), highest (u64 at 24), int-to-double ratio.
    let digits = be_u32(&plain, 12).ok_or_else(|| error("truncated header".into()))?;
    let highest = plain
        .get(24..32)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_be_bytes)
        .ok_or_else(|| error("truncated header".into()))?;
    // The payload (the counts) must be there: the deserializer allocates what the header
    // declares before it reads, so a forged length of 2^32 − 1 would cost gigabytes.
    let declared = be_u32(&plain, 4).ok_or_else(|| error("truncated header".into()))?;
    let present = plain.len().saturating_sub(V2_HEADER_BYTES);
    if usize::try_from(declared).unwrap_or(usize::MAX) > present {
        return Err(error(format!(
            "header declares a payload of {declared} bytes, {present} follow it"
        )));
    }
    if digits > 5 || highest > MAX_DECODED_HIGHEST {
        return Err(error(format!(
            "header declares {digits} significant digits and highest value {highest}, \
             over the limits (5, {MAX_DECODED_HIGHEST})"
        )));
    }
    Deserializer::new()
        .deserialize(&mut plain.as_slice())
        .map_err(|e| error(format!("{e:?}")))
}

fn be_u32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

/// Inflates a zlib stream to at most [`MAX_DECODED_BYTES`].
fn inflate(compressed: &[u8]) -> Result<Vec<u8>, String> {
    use std::io::Read as _;
    let mut plain = Vec::new();
    flate2::read::ZlibDecoder::new(compressed)
        .take(MAX_DECODED_BYTES + 1)
        .read_to_end(&mut plain)
        .map_err(|e| format!("inflating: {e}"))?;
    if plain.len() as u64 > MAX_DECODED_BYTES {
        return Err(format!("inflates past {MAX_DECODED_BYTES} bytes"));
    }
    Ok(plain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversized_text_and_forged_headers_are_refused() {
        let long = "A".repeat(MAX_ENCODED_BYTES + 4);
        assert!(
            decode_histogram(&long)
                .unwrap_err()
                .to_string()
                .contains("limit")
        );
        // An uncompressed V2 header declaring a highest value of 2^50.
        let mut forged = Vec::new();
        forged.extend_from_slice(&V2_COOKIE.to_be_bytes());
        forged.extend_from_slice(&0u32.to_be_bytes());
        forged.extend_from_slice(&0u32.to_be_bytes());
        forged.extend_from_slice(&3u32.to_be_bytes());
        forged.extend_from_slice(&1u64.to_be_bytes());
        forged.extend_from_slice(&(1u64 << 50).to_be_bytes());
        forged.extend_from_slice(&1f64.to_bits().to_be_bytes());
        let text = base64::engine::general_purpose::STANDARD.encode(&forged);
        assert!(
            decode_histogram(&text)
                .unwrap_err()
                .to_string()
                .contains("over the limits")
        );
        // A DEFLATE bomb: 64 MiB of zeros compress to a few KiB.
        let mut bomb = Vec::new();
        bomb.extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut encoder, &vec![0u8; 64 << 20]).unwrap();
        let compressed = encoder.finish().unwrap();
        bomb.extend_from_slice(&(compressed.len() as u32).to_be_bytes());
        bomb.extend_from_slice(&compressed);
        let text = base64::engine::general_purpose::STANDARD.encode(&bomb);
        assert!(
            decode_histogram(&text)
                .unwrap_err()
                .to_string()
                .contains("inflates past")
        );
    }

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
