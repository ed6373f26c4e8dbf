//! An engine's log under its byte budget (content/rounds.md, Engine logs; the campaign's
//! `limits.engine_log_bytes`): an engine is a miner's code, and 300 MiB on stderr must not
//! become 300 MiB of published bundle. A stream within the budget is kept byte for byte;
//! a longer one keeps its first `budget − budget / 2` bytes and its last `budget / 2`,
//! with one [`marker_line`] between them naming the bytes dropped, the whole stream's
//! length and its sha256. The runner writes logs so (`engines::log_budget`), and the
//! verifier refuses an engine log longer than [`max_file_bytes`] of the campaign's budget.

use sha2::{Digest, Sha256};

/// The most bytes a [`marker_line`] can take: its text with two 20-digit counts and a
/// 64-digit sha256.
pub const MAX_MARKER_BYTES: u64 = 256;

/// The line that stands where output was dropped, on a line of its own:
/// `\n[referee: 3 bytes of engine output dropped here; the whole stream was 11 bytes, sha256 <hex>]\n`.
pub fn marker_line(dropped: u64, total: u64, sha256_hex: &str) -> String {
    format!(
        "\n[referee: {dropped} bytes of engine output dropped here; the whole stream was \
         {total} bytes, sha256 {sha256_hex}]\n"
    )
}

/// The longest engine log file a budget of `budget` bytes allows: the kept bytes and one
/// marker line. What the verifier reads of an engine log is bounded by this.
pub fn max_file_bytes(budget: u64) -> u64 {
    budget.saturating_add(MAX_MARKER_BYTES)
}

/// The log kept of the whole output `stream` under `budget` bytes (the module's rule):
/// the stream itself when it fits, else its first `budget − budget / 2` bytes, the
/// marker line and its last `budget / 2`.
pub fn kept_log(stream: &[u8], budget: u64) -> Vec<u8> {
    let total = stream.len() as u64;
    if total <= budget {
        return stream.to_vec();
    }
    let tail = usize::try_from(budget / 2).unwrap_or(usize::MAX);
    let head = usize::try_from(budget - budget / 2).unwrap_or(usize::MAX);
    let digest = hex::encode(Sha256::digest(stream));
    let marker = marker_line(total - budget, total, &digest);
    let mut kept = Vec::with_capacity(head + marker.len() + tail);
    kept.extend_from_slice(&stream[..head]);
    kept.extend_from_slice(marker.as_bytes());
    kept.extend_from_slice(&stream[stream.len() - tail..]);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_marker_fits_its_bound() {
        let marker = marker_line(u64::MAX, u64::MAX, &"f".repeat(64));
        assert_eq!(marker.len(), 191);
        assert!(marker.len() as u64 <= MAX_MARKER_BYTES);
    }

    #[test]
    fn a_stream_within_the_budget_is_kept_whole() {
        assert_eq!(kept_log(b"0123456789", 10), b"0123456789");
        assert_eq!(kept_log(b"", 10), b"");
    }

    #[test]
    fn a_longer_stream_keeps_its_ends_around_the_marker() {
        let stream = b"abcdefgh";
        let digest = hex::encode(Sha256::digest(stream));
        let kept = kept_log(stream, 5);
        assert_eq!(
            kept,
            [
                b"abc".as_slice(),
                marker_line(3, 8, &digest).as_bytes(),
                b"gh"
            ]
            .concat()
        );
        assert!(kept.len() as u64 <= max_file_bytes(5));
    }
}
