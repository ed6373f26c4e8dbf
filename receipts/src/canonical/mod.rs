//! JSON in and out: RFC 8785 (JCS) canonical emission for everything referee writes, and a
//! strict parser for everything it reads (content/receipts.md, Statement and Verification step 1).
//!
//! Emission is referee's own RFC 8785 writer (`emit`) after a walk that refuses every JSON
//! float and every integer of magnitude 2^53 or more (content/receipts.md, Numbers: JCS rounds
//! numbers to doubles, and other languages' bindings turn `3` into `3.0`). NaN and
//! ±Infinity, which JSON cannot write and `serde_json` would silently turn into `null`,
//! are refused too ([`CanonicalError::NonFinite`]), by a pass over the value as serde
//! serializes it, before it becomes JSON. Whether bytes already are the canonical form of
//! a value is answered in place by [`is_canonical`], without emitting a copy, or without
//! any value at all by [`scan_strict`], the strict validator's one pass that also tells
//! whether the bytes are canonical and carry integers only (what the verifier asks of
//! every envelope and payload). Reading goes
//! through [`parse_strict`], a hand-written validator that refuses what `serde_json`
//! silently accepts (it keeps the last of two duplicate keys), before `serde_json` builds
//! the value.

mod emit;
mod finite;
mod strict;

pub use emit::is_canonical;
pub(crate) use emit::push_integer;
pub use strict::{
    DEFAULT_MAX_DEPTH, StrictJsonError, StrictScan, from_slice_scanned, from_slice_strict,
    parse_strict, scan_strict,
};

use std::borrow::Cow;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

/// The largest magnitude an integer in an emitted payload may have: 2^53 − 1, the largest
/// integer every JSON reader holds exactly (content/receipts.md, Numbers; RFC 7493 §2.2).
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Why a value could not be emitted as canonical JSON.
#[derive(Debug, thiserror::Error)]
pub enum CanonicalError {
    /// The value does not serialize to JSON (e.g. a map with non-string keys).
    #[error("serializing to JSON: {message}")]
    Serialize {
        /// serde_json's message.
        message: String,
    },
    /// A JSON float, which receipts never carry (content/receipts.md, Numbers).
    #[error("float `{value}` at `{path}`: payloads carry integers only")]
    Float {
        /// JSON pointer of the number, e.g. `/predicate/scoreRatio`.
        path: String,
        /// The number as serde_json prints it.
        value: String,
    },
    /// A NaN or infinite `f32`/`f64`: JSON has no such number (serde_json would write
    /// `null` in its place, silently changing the payload).
    #[error(
        "non-finite float `{value}` at `{path}`: JSON has no such number, payloads carry integers only"
    )]
    NonFinite {
        /// JSON pointer the number would have, e.g. `/predicate/scoreRatio`.
        path: String,
        /// `NaN`, `Infinity` or `-Infinity`.
        value: String,
    },
    /// An integer of magnitude 2^53 or more.
    #[error("integer `{value}` at `{path}` is not below 2^53 in magnitude")]
    IntegerOutOfRange {
        /// JSON pointer of the number.
        path: String,
        /// The number.
        value: String,
    },
}

/// The RFC 8785 canonical bytes of `value`: object keys sorted by UTF-16 code units, no
/// whitespace, minimal string escaping, UTF-8.
///
/// Errors: [`CanonicalError::NonFinite`] naming the JSON pointer of the first NaN or
/// ±Infinity in serialization order (checked first, since serde_json would emit `null`
/// for it); then [`CanonicalError::Float`] or [`CanonicalError::IntegerOutOfRange`] naming
/// the JSON pointer of the first offending number; [`CanonicalError::Serialize`] when the
/// value is not JSON.
pub fn to_canonical_vec<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, CanonicalError> {
    let json = serde_json::to_value(value).map_err(|e| CanonicalError::Serialize {
        message: e.to_string(),
    })?;
    finite::find_non_finite(value).map_err(|e| match e {
        finite::ProbeError::NonFinite { path, value } => CanonicalError::NonFinite { path, value },
        finite::ProbeError::Custom(message) => CanonicalError::Serialize { message },
    })?;
    check_integers(&json)?;
    let mut out = Vec::with_capacity(128);
    if emit::write(&json, &mut out) {
        Ok(out)
    } else {
        // `check_integers` refused every number the writer cannot write.
        Err(CanonicalError::Serialize {
            message: "a number the canonical writer cannot write".to_owned(),
        })
    }
}

/// Checks that every number in `value` is an integer below 2^53 in magnitude. (A
/// `Value` cannot hold NaN or ±Infinity: those are caught by [`to_canonical_vec`] before
/// the value becomes JSON.)
///
/// Errors: [`CanonicalError::Float`] or [`CanonicalError::IntegerOutOfRange`] with the JSON
/// pointer (RFC 6901) of the first offending number in document order.
pub fn check_integers(value: &Value) -> Result<(), CanonicalError> {
    let mut path = Vec::new();
    walk_numbers(value, &mut path)
}

fn walk_numbers<'v>(value: &'v Value, path: &mut Vec<Segment<'v>>) -> Result<(), CanonicalError> {
    match value {
        Value::Number(n) => {
            let in_range = match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => Some(u <= MAX_SAFE_INTEGER),
                (None, Some(i)) => Some(i.unsigned_abs() <= MAX_SAFE_INTEGER),
                (None, None) => None,
            };
            match in_range {
                Some(true) => Ok(()),
                Some(false) => Err(CanonicalError::IntegerOutOfRange {
                    path: pointer(path),
                    value: n.to_string(),
                }),
                None => Err(CanonicalError::Float {
                    path: pointer(path),
                    value: n.to_string(),
                }),
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                path.push(Segment::Index(index));
                walk_numbers(item, path)?;
                path.pop();
            }
            Ok(())
        }
        Value::Object(map) => {
            for (key, item) in map {
                path.push(Segment::Key(Cow::Borrowed(key)));
                walk_numbers(item, path)?;
                path.pop();
            }
            Ok(())
        }
        Value::Null | Value::Bool(_) | Value::String(_) => Ok(()),
    }
}

/// One step of a JSON pointer: an object key or an array index. Walks keep these
/// (borrowed from the value) and render a pointer only for an error.
#[derive(Clone, Debug)]
pub(crate) enum Segment<'a> {
    /// An object member's key, unescaped.
    Key(Cow<'a, str>),
    /// An array element's index.
    Index(usize),
}

impl fmt::Display for Segment<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Segment::Key(key) => f.write_str(key),
            Segment::Index(index) => write!(f, "{index}"),
        }
    }
}

/// The first of `keys` (an object's keys, in the order they are to be looked at) that is
/// not one of `known` but equals one of them up to case (e.g. `PayloadType` next to
/// `payloadType`), with the known key it collides with. Another parser might read such a
/// key as the known one (content/receipts.md, Verification step 1: no case-fold collisions
/// with known keys).
pub fn case_fold_collision<'k>(
    keys: impl IntoIterator<Item = &'k str>,
    known: &[&'static str],
) -> Option<(String, &'static str)> {
    keys.into_iter().find_map(|key| {
        if known.contains(&key) {
            return None;
        }
        let folded = key.to_lowercase();
        known
            .iter()
            .find(|k| k.to_lowercase() == folded)
            .map(|k| (key.to_owned(), *k))
    })
}

/// The length of the longest prefix of `bytes` that a JSON string holds as is: no `"`,
/// no `\\`, no control character (below 0x20). Eight bytes at a time: a word is looked
/// at byte by byte only when it holds such a byte (the tests on the whole word are exact).
pub(crate) fn plain_prefix(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let special = |b: u8| b == b'"' || b == b'\\' || b < 0x20;
    let mut words = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut words {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let quote = w ^ (ONES * u64::from(b'"'));
        let backslash = w ^ (ONES * u64::from(b'\\'));
        // A byte is zero, or below 0x20, exactly when a high bit
        // survives here (for the word as a whole; which byte, the scan says).
        let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
        let control = w.wrapping_sub(ONES * 0x20) & !w & HIGHS;
        if zero(quote) | zero(backslash) | control != 0
            && let Some(i) = chunk.iter().position(|&b| special(b))
        {
            return at + i;
        }
        at += 8;
    }
    at + words
        .remainder()
        .iter()
        .position(|&b| special(b))
        .unwrap_or(words.remainder().len())
}

/// An RFC 6901 JSON pointer of `segments` (`~` → `~0`, `/` → `~1`).
pub(crate) fn pointer<T: fmt::Display>(segments: &[T]) -> String {
    let mut out = String::new();
    for segment in segments {
        out.push('/');
        out.push_str(&segment.to_string().replace('~', "~0").replace('/', "~1"));
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::plain_prefix;

    proptest! {
        /// The word-at-a-time scan stops where a byte-at-a-time one does.
        #[test]
        fn plain_prefix_is_the_bytewise_scan(
            bytes in prop::collection::vec(
                prop_oneof![
                    1 => Just(b'"'),
                    1 => Just(b'\\'),
                    1 => 0u8..0x20,
                    20 => 0x20u8..=0xff,
                ],
                0..80,
            ),
            skip in 0usize..4,
        ) {
            let bytes = &bytes[skip.min(bytes.len())..];
            let naive = bytes
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                .unwrap_or(bytes.len());
            prop_assert_eq!(plain_prefix(bytes), naive);
        }
    }
}
