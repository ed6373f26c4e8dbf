//! What a bundle file that held private key material becomes before the round is sealed
//! (content/threat-model.md, The evaluator's key): one line, the same on every machine,
//! giving the bytes withheld, so the verifier can tell a withheld file from a damaged one
//! and the entry that wrote it is disqualified `secret_in_output`.

/// The start of a withheld file's one line.
pub const WITHHELD_PREFIX: &str =
    "referee: withheld before sealing: this file held private key material (";

/// The withheld file's content for an original of `bytes` bytes:
/// `referee: withheld before sealing: this file held private key material (<bytes> bytes)\n`.
pub fn withheld(bytes: u64) -> String {
    format!("{WITHHELD_PREFIX}{bytes} bytes)\n")
}

/// The original's size when `content` is exactly [`withheld`]'s line, else `None`.
pub fn withheld_bytes(content: &[u8]) -> Option<u64> {
    let rest = content.strip_prefix(WITHHELD_PREFIX.as_bytes())?;
    let digits = rest.strip_suffix(b" bytes)\n")?;
    if digits.is_empty()
        || !digits.iter().all(u8::is_ascii_digit)
        || digits[0] == b'0' && digits.len() > 1
    {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_withheld_line_reads_back_exactly() {
        assert_eq!(
            withheld(312),
            "referee: withheld before sealing: this file held private key material (312 bytes)\n"
        );
        assert_eq!(withheld_bytes(withheld(312).as_bytes()), Some(312));
        assert_eq!(withheld_bytes(withheld(0).as_bytes()), Some(0));
        for damaged in [
            "referee: withheld before sealing: this file held private key material (312 bytes)",
            "referee: withheld before sealing: this file held private key material (0312 bytes)\n",
            "referee: withheld before sealing: this file held private key material ( bytes)\n",
            "referee: withheld before sealing: this file held private key material (3x bytes)\n",
            "log line\n",
        ] {
            assert_eq!(withheld_bytes(damaged.as_bytes()), None, "{damaged:?}");
        }
    }
}
