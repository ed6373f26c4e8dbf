//! The byte-level tokenizer: token ids 0..=255 are the bytes, [`BOS`] = 256 starts every
//! text prompt, [`EOS`] = 257 ends generation. No merges, so every byte string has exactly
//! one encoding and any byte sequence (valid UTF-8 or not) can be generated.

/// Vocabulary size: 256 bytes + BOS + EOS.
pub const VOCAB_SIZE: usize = 258;
/// Beginning-of-sequence token, prepended to text prompts (not to token-id prompts).
pub const BOS: u32 = 256;
/// End-of-sequence token: generation stops on it unless the request sets `ignore_eos`.
pub const EOS: u32 = 257;

/// Encodes a text prompt: [`BOS`] followed by its UTF-8 bytes.
pub fn encode_prompt(text: &str) -> Vec<u32> {
    std::iter::once(BOS)
        .chain(text.bytes().map(u32::from))
        .collect()
}

/// The bytes a token stands for in generated text: one byte for ids below 256, nothing
/// for BOS and EOS (special tokens are skipped, as vLLM's `skip_special_tokens` does).
pub fn token_bytes(token: u32) -> Option<u8> {
    u8::try_from(token).ok()
}

/// Concatenated bytes of `tokens`, specials skipped.
pub fn decode_bytes(tokens: &[u32]) -> Vec<u8> {
    tokens.iter().filter_map(|&t| token_bytes(t)).collect()
}

/// The display string of one token in `logprobs.tokens` and `top_logprobs` keys: the
/// character for ASCII bytes, `<0xNN>` for bytes ≥ 0x80 (which are not text on their own;
/// sentencepiece's byte-fallback spelling), `<|bos|>` and `<|eos|>` for the specials, and
/// `token_id:<id>` for any id when the request sets `return_tokens_as_token_ids` (vLLM's
/// form). Every id gets a distinct string, so `top_logprobs` keys never collide.
pub fn token_string(token: u32, as_token_ids: bool) -> String {
    if as_token_ids {
        return format!("token_id:{token}");
    }
    match token {
        BOS => "<|bos|>".to_string(),
        EOS => "<|eos|>".to_string(),
        t if t < 0x80 => char::from(t as u8).to_string(),
        t => format!("<0x{t:02X}>"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_strings() {
        assert_eq!(encode_prompt("hé"), vec![256, 104, 0xc3, 0xa9]);
        assert_eq!(decode_bytes(&[256, 104, 0xc3, 0xa9, 257]), "hé".as_bytes());
        assert_eq!(token_string(104, false), "h");
        assert_eq!(token_string(0xc3, false), "<0xC3>");
        assert_eq!(token_string(BOS, false), "<|bos|>");
        assert_eq!(token_string(EOS, false), "<|eos|>");
        assert_eq!(token_string(65, true), "token_id:65");
    }
}
