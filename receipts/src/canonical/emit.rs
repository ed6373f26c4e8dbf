//! The RFC 8785 (JCS) writer of a `serde_json::Value` whose numbers are integers below
//! 2^53 in magnitude: object members sorted by the UTF-16 code units of their keys, no
//! whitespace, strings escaped as ECMAScript's `JSON.stringify` escapes them (`\"`,
//! `\\`, `\b` `\t` `\n` `\f` `\r`, every other control character as `\u00xx` in
//! lowercase hex, everything else raw UTF-8), integers in decimal (what an ECMAScript
//! number prints for an integer below 2^53). The same walk either appends to a buffer
//! ([`write`], for [`to_canonical_vec`](super::to_canonical_vec)) or compares with given
//! bytes in place, stopping at the first difference ([`is_canonical`]): a verifier checks
//! a payload's form without building a second copy of it.

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

use super::{MAX_SAFE_INTEGER, plain_prefix};

/// Where the canonical bytes go; `put` returns `false` to stop the walk.
trait Sink {
    fn put(&mut self, bytes: &[u8]) -> bool;
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) -> bool {
        self.extend_from_slice(bytes);
        true
    }
}

/// Compares the canonical bytes with `rest`, consuming it.
struct Compare<'a> {
    rest: &'a [u8],
}

impl Sink for Compare<'_> {
    fn put(&mut self, bytes: &[u8]) -> bool {
        match self.rest.strip_prefix(bytes) {
            Some(rest) => {
                self.rest = rest;
                true
            }
            None => false,
        }
    }
}

/// Appends the canonical bytes of `value` to `out`. Returns `false`, with `out` holding a
/// prefix, when a number of `value` is a float or an integer of 2^53 or more in
/// magnitude (the caller checks that first, to name the number).
pub(super) fn write(value: &Value, out: &mut Vec<u8>) -> bool {
    emit(value, out)
}

/// Whether `bytes` are exactly the canonical form of `value`: its numbers all integers
/// below 2^53 in magnitude, and the bytes what [`write`] would produce. Stops at the
/// first byte that differs; allocates nothing unless an object's keys are out of UTF-16
/// order in `value` itself (never for a map of ASCII keys).
pub fn is_canonical(value: &Value, bytes: &[u8]) -> bool {
    let mut compare = Compare { rest: bytes };
    emit(value, &mut compare) && compare.rest.is_empty()
}

fn emit<S: Sink>(value: &Value, out: &mut S) -> bool {
    match value {
        Value::Null => out.put(b"null"),
        Value::Bool(true) => out.put(b"true"),
        Value::Bool(false) => out.put(b"false"),
        Value::Number(n) => number(n, out),
        Value::String(s) => string(s, out),
        Value::Array(items) => {
            out.put(b"[")
                && items
                    .iter()
                    .enumerate()
                    .all(|(i, item)| (i == 0 || out.put(b",")) && emit(item, out))
                && out.put(b"]")
        }
        Value::Object(map) => object(map, out),
    }
}

/// An integer below 2^53 in magnitude, in decimal; `false` for anything else.
fn number<S: Sink>(n: &Number, out: &mut S) -> bool {
    let (negative, magnitude) = match (n.as_u64(), n.as_i64()) {
        (Some(u), _) => (false, u),
        (None, Some(i)) => (true, i.unsigned_abs()),
        (None, None) => return false,
    };
    if magnitude > MAX_SAFE_INTEGER {
        return false;
    }
    let mut digits = [0u8; 20];
    (!negative || out.put(b"-")) && out.put(decimal(magnitude, &mut digits))
}

/// Appends `n`, an integer below 2^53 (the caller checks), as canonical JSON: for
/// writers of a fixed shape that emit canonical JSON straight into a hasher.
pub(crate) fn push_integer(out: &mut Vec<u8>, n: u64) {
    let mut digits = [0u8; 20];
    out.extend_from_slice(decimal(n, &mut digits));
}

/// The decimal digits of `n`, written at the end of `digits`.
fn decimal(mut n: u64, digits: &mut [u8; 20]) -> &[u8] {
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &digits[at..]
}

/// A string in quotes, escaped as `JSON.stringify` escapes it.
fn string<S: Sink>(text: &str, out: &mut S) -> bool {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    if !out.put(b"\"") {
        return false;
    }
    let mut rest = text.as_bytes();
    loop {
        let run = plain_prefix(rest);
        let (plain, tail) = rest.split_at(run);
        if !out.put(plain) {
            return false;
        }
        let Some((&byte, tail)) = tail.split_first() else {
            return out.put(b"\"");
        };
        let control;
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x09 => b"\\t",
            0x0a => b"\\n",
            0x0c => b"\\f",
            0x0d => b"\\r",
            _ => {
                control = [
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(byte >> 4)],
                    HEX[usize::from(byte & 0xf)],
                ];
                &control
            }
        };
        if !out.put(escape) {
            return false;
        }
        rest = tail;
    }
}

/// An object, members in the UTF-16 order of their keys. A map already in that order
/// (every `BTreeMap` of ASCII keys) is written as it iterates; another is sorted first.
fn object<S: Sink>(map: &Map<String, Value>, out: &mut S) -> bool {
    if !out.put(b"{") {
        return false;
    }
    let in_order = map
        .keys()
        .zip(map.keys().skip(1))
        .all(|(a, b)| utf16_cmp(a, b) == Ordering::Less);
    let members = if in_order {
        map.iter()
            .enumerate()
            .all(|(i, (key, value))| member(i, key, value, out))
    } else {
        let mut sorted: Vec<(&String, &Value)> = map.iter().collect();
        sorted.sort_by(|a, b| utf16_cmp(a.0, b.0));
        sorted
            .into_iter()
            .enumerate()
            .all(|(i, (key, value))| member(i, key, value, out))
    };
    members && out.put(b"}")
}

/// The `i`-th member of an object: `,` before all but the first, `"key":value`.
fn member<S: Sink>(i: usize, key: &str, value: &Value, out: &mut S) -> bool {
    (i == 0 || out.put(b",")) && string(key, out) && out.put(b":") && emit(value, out)
}

/// Orders two keys by their UTF-16 code units (RFC 8785 §3.2.3). Byte order is code
/// point order, which is the same for ASCII.
pub(super) fn utf16_cmp(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        a.as_bytes().cmp(b.as_bytes())
    } else {
        a.encode_utf16().cmp(b.encode_utf16())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::is_canonical;
    use crate::canonical::{check_integers, parse_strict, scan_strict, to_canonical_vec};

    /// What the one-pass scan says of `bytes` (strict JSON) agrees with the checks on the
    /// parsed value: canonical exactly when [`is_canonical`], integers only exactly when
    /// [`check_integers`] passes.
    fn scan_agrees(bytes: &[u8]) -> Result<(), TestCaseError> {
        let scan = scan_strict(bytes, usize::MAX).expect("strict");
        let value = parse_strict(bytes, usize::MAX).expect("strict");
        prop_assert_eq!(
            scan.canonical,
            is_canonical(&value, bytes),
            "{:?}",
            String::from_utf8_lossy(bytes)
        );
        prop_assert_eq!(scan.integers, check_integers(&value).is_ok());
        let mut keys: Option<Vec<&str>> = scan
            .root_keys
            .as_ref()
            .map(|keys| keys.iter().map(|k| &**k).collect());
        if let Some(keys) = &mut keys {
            keys.sort_unstable();
        }
        let parsed_keys = value
            .as_object()
            .map(|object| object.keys().map(String::as_str).collect::<Vec<_>>());
        prop_assert_eq!(keys, parsed_keys);
        Ok(())
    }

    /// Values with integer numbers only, keys and strings from all of Unicode (control
    /// characters, quotes, characters on both sides of the surrogate range).
    fn json_value() -> impl Strategy<Value = Value> {
        let text = prop_oneof![
            any::<String>(),
            "[a-c\"\\\\/\u{0}-\u{1f}\u{7f}\u{e000}\u{ffff}\u{10000}\u{1f602}]{0,6}",
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-(1i64 << 53) + 1..(1i64 << 53)).prop_map(Value::from),
            text.clone().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(text.clone(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// The writer emits what `serde_json_canonicalizer` emits, and the in-place check
        /// accepts exactly those bytes: not a prefix, not the pretty form, not one byte
        /// more.
        #[test]
        fn writer_is_the_jcs_crate_and_check_agrees(value in json_value(), cut in 0usize..64) {
            let ours = to_canonical_vec(&value).expect("integers only");
            let reference = serde_json_canonicalizer::to_vec(&value).expect("jcs");
            prop_assert_eq!(&ours, &reference);
            prop_assert!(is_canonical(&value, &ours));
            let pretty = serde_json::to_vec_pretty(&value).expect("json");
            prop_assert_eq!(is_canonical(&value, &pretty), pretty == ours);
            let reparsed = parse_strict(&pretty, usize::MAX).expect("strict");
            prop_assert!(is_canonical(&reparsed, &ours));
            let short = &ours[..ours.len().saturating_sub(1 + cut % 4)];
            prop_assert!(!is_canonical(&value, short));
            let mut long = ours.clone();
            long.push(b' ');
            prop_assert!(!is_canonical(&value, &long));
            scan_agrees(&ours)?;
            scan_agrees(&pretty)?;
            scan_agrees(&long)?;
            scan_agrees(&serde_json::to_vec(&value).expect("json"))?;
        }
    }

    #[test]
    fn the_scan_agrees_on_escapes_numbers_and_key_order() {
        for text in [
            r#""\/""#,
            r#""\u001F""#,
            r#""\u001f""#,
            r#""\u000a""#,
            r#""\n""#,
            r#""\u0041""#,
            r#""\ud83d\ude02""#,
            r#""\/""#,
            "\"\u{7f}\u{1f602}\"",
            "1.0",
            "1e2",
            "-0",
            "0",
            "-1",
            "9007199254740991",
            "9007199254740992",
            "-9007199254740991",
            "-9007199254740992",
            "99999999999999999999",
            r#"{"b":1,"a":2}"#,
            r#"{"a":1,"b":2}"#,
            r#"{"a":1, "b":2}"#,
            r#"{"\u0061":1}"#,
            r#"{"a":{"b":[1.5]},"c":1}"#,
            "{\"\u{fb33}\":1,\"\u{1f602}\":2}",
            "{\"\u{1f602}\":2,\"\u{fb33}\":1}",
            "[]",
            "{}",
            " {}",
            "[true,false,null]",
        ] {
            scan_agrees(text.as_bytes()).expect(text);
        }
    }

    #[test]
    fn only_integers_below_2_pow_53_are_canonical() {
        for (value, text) in [
            (json!(9007199254740991u64), "9007199254740991"),
            (json!(-9007199254740991i64), "-9007199254740991"),
            (json!(0), "0"),
        ] {
            assert!(is_canonical(&value, text.as_bytes()), "{text}");
        }
        for (value, text) in [
            (json!(9007199254740992u64), "9007199254740992"),
            (json!(-9007199254740992i64), "-9007199254740992"),
            (json!(1.5), "1.5"),
            (json!(2.0), "2"),
        ] {
            assert!(!is_canonical(&value, text.as_bytes()), "{text}");
        }
    }

    #[test]
    fn keys_in_utf16_order_and_minimal_escapes() {
        let value = json!({"\u{fb33}": 1, "\u{1f602}": 2, "b": "\u{8}\t\n\u{c}\r\u{1f}\"\\/\u{7f}", "a": [true, null]});
        let canonical = "{\"a\":[true,null],\"b\":\"\\b\\t\\n\\f\\r\\u001f\\\"\\\\/\u{7f}\",\"\u{1f602}\":2,\"\u{fb33}\":1}";
        assert!(is_canonical(&value, canonical.as_bytes()));
        let byte_order = "{\"a\":[true,null],\"b\":\"\\b\\t\\n\\f\\r\\u001f\\\"\\\\/\u{7f}\",\"\u{fb33}\":1,\"\u{1f602}\":2}";
        assert!(!is_canonical(&value, byte_order.as_bytes()));
        assert!(!is_canonical(&json!("/"), b"\"\\/\""));
        assert!(!is_canonical(&json!("\u{1f}"), b"\"\\u001F\""));
    }
}
