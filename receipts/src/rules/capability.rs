//! The sealed capability gate of the s1-fast-speed track (content/s1-fast-speed.md,
//! Capability on sealed items): the commitment a receipt records to the sealed set (never
//! the items), the one line a scorer may print (its score), and the gate. Running the
//! scorer is the runner's (`runner::sealed`); this is the arithmetic both sides share.
//! Not to be confused with the engine's capability probe (`crate::model::capability`).

use crate::model::Sha256Hex;

/// The highest score: 10⁶ ppm, every sealed item right.
pub const MAX_SCORE_PPM: u32 = 1_000_000;

/// The most bytes a scorer may print: one score and a newline, with room to spare.
pub const MAX_SCORE_BYTES: usize = 64;

/// Why a scorer's output is not a score.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScoreError {
    /// More than [`MAX_SCORE_BYTES`] bytes: a scorer returns a score, nothing else.
    #[error("the scorer printed {bytes} bytes; a score is at most {MAX_SCORE_BYTES}")]
    TooLong {
        /// How many bytes it printed.
        bytes: usize,
    },
    /// Not one line holding a decimal integer from 0 to [`MAX_SCORE_PPM`].
    #[error("the scorer's output is not one line with a score from 0 to 1000000 ppm")]
    NotAScore,
}

/// The commitment to a sealed set: sha256 over one line per item, `<sha256 of its
/// bytes> <name>\n`, in byte order of the names. The caller reads the items and digests
/// them; the commitment alone is published, so the set can be revealed later (on
/// rotation) and checked against it, and a receipt never holds an item.
pub fn sealed_set_commitment(items: &[(String, Sha256Hex)]) -> Sha256Hex {
    let mut sorted: Vec<&(String, Sha256Hex)> = items.iter().collect();
    sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut text = Vec::new();
    for (name, digest) in sorted {
        text.extend_from_slice(digest.as_str().as_bytes());
        text.push(b' ');
        text.extend_from_slice(name.as_bytes());
        text.push(b'\n');
    }
    Sha256Hex::digest(&text)
}

/// The score a scorer printed: exactly one line (a final newline allowed) holding a
/// decimal integer from 0 to [`MAX_SCORE_PPM`], parts per million of the sealed items.
/// Anything else is refused, so nothing but a score leaves the sealed side.
///
/// Errors: [`ScoreError::TooLong`], [`ScoreError::NotAScore`].
pub fn parse_score(stdout: &[u8]) -> Result<u32, ScoreError> {
    if stdout.len() > MAX_SCORE_BYTES {
        return Err(ScoreError::TooLong {
            bytes: stdout.len(),
        });
    }
    let line = stdout.strip_suffix(b"\n").unwrap_or(stdout);
    if line.is_empty() || !line.iter().all(u8::is_ascii_digit) || line.len() > 7 {
        return Err(ScoreError::NotAScore);
    }
    let score = line
        .iter()
        .fold(0u32, |acc, d| acc * 10 + u32::from(d - b'0'));
    if score > MAX_SCORE_PPM {
        return Err(ScoreError::NotAScore);
    }
    Ok(score)
}

/// The gate: a challenger passes when its score on the sealed items is at least the
/// incumbent's on the same items in the same round.
pub fn capability_passes(challenger_ppm: u32, incumbent_ppm: u32) -> bool {
    challenger_ppm >= incumbent_ppm
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_score_below_the_incumbents_fails_the_gate() {
        assert!(!capability_passes(812_499, 812_500));
        assert!(capability_passes(812_500, 812_500));
        assert!(capability_passes(900_000, 812_500));
    }

    #[test]
    fn only_one_line_with_a_score_is_a_score() {
        assert_eq!(parse_score(b"812500\n"), Ok(812_500));
        assert_eq!(parse_score(b"0"), Ok(0));
        assert_eq!(parse_score(b"1000000\n"), Ok(1_000_000));
        for bad in [
            &b""[..],
            b"\n",
            b"1000001\n",
            b"-1\n",
            b" 5\n",
            b"5\n\n",
            b"5\nitem 3: the answer was b\n",
            b"0.5\n",
            b"99999999\n",
        ] {
            assert_eq!(parse_score(bad), Err(ScoreError::NotAScore), "{bad:?}");
        }
        assert_eq!(
            parse_score(&[b'1'; 65]),
            Err(ScoreError::TooLong { bytes: 65 })
        );
    }

    #[test]
    fn the_commitment_is_over_names_and_digests_in_name_order() {
        let a = ("a.json".to_owned(), Sha256Hex::digest(b"item a"));
        let b = ("b.json".to_owned(), Sha256Hex::digest(b"item b"));
        let forward = sealed_set_commitment(&[a.clone(), b.clone()]);
        assert_eq!(forward, sealed_set_commitment(&[b.clone(), a.clone()]));
        let lines = format!("{} a.json\n{} b.json\n", a.1, b.1);
        assert_eq!(forward, Sha256Hex::digest(lines.as_bytes()));
        // Another item's bytes, or another name, is another commitment.
        let b2 = ("b.json".to_owned(), Sha256Hex::digest(b"item B"));
        assert_ne!(forward, sealed_set_commitment(&[a.clone(), b2]));
        let renamed = ("c.json".to_owned(), b.1);
        assert_ne!(forward, sealed_set_commitment(&[a, renamed]));
    }
}
