//! The strict JSON reader (content/receipts.md, Verification step 1): a small hand-written
//! RFC 8259 validator that refuses duplicate object keys at any depth — also keys equal
//! only after unescaping (`"a"` and `"\u0061"`) — invalid UTF-8, lone surrogate escapes,
//! inputs over a size limit and nesting deeper than [`DEFAULT_MAX_DEPTH`]. Only input that
//! passes is handed to `serde_json`, which on its own keeps the last duplicate silently.
//! The same pass also tells whether the input is RFC 8785 canonical and carries integers
//! only ([`scan_strict`]), so a verifier needs no parsed value to answer either.

use std::borrow::Cow;
use std::collections::HashSet;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::emit::utf16_cmp;
use super::{MAX_SAFE_INTEGER, Segment, plain_prefix, pointer};

/// Keys of one object compared one by one up to this many; past it they go into a hash
/// set, so an object of a million keys costs no more than a million lookups.
const LINEAR_KEYS: usize = 16;

/// Deepest nesting of arrays and objects accepted: below `serde_json`'s recursion limit
/// (127 levels), so everything this validator accepts `serde_json` also builds.
pub const DEFAULT_MAX_DEPTH: usize = 100;

/// Why input is not strict JSON. Offsets are byte offsets into the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StrictJsonError {
    /// The input is larger than the caller's limit.
    #[error("input is {size} bytes, over the limit of {limit} bytes")]
    TooLarge {
        /// Input size in bytes.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// The bytes are not UTF-8.
    #[error("invalid UTF-8 at byte {offset}")]
    InvalidUtf8 {
        /// First invalid byte.
        offset: usize,
    },
    /// A `\uD800`–`\uDFFF` escape that is not half of a surrogate pair.
    #[error("lone surrogate escape at byte {offset}")]
    LoneSurrogate {
        /// Offset of the backslash.
        offset: usize,
    },
    /// An object holds the same key twice (compared after unescaping).
    #[error("duplicate key `{key}` in the object at `{path}`")]
    DuplicateKey {
        /// JSON pointer of the object holding the duplicate (empty for the root).
        path: String,
        /// The key, unescaped.
        key: String,
    },
    /// Nesting deeper than [`DEFAULT_MAX_DEPTH`].
    #[error("nesting deeper than {limit} at byte {offset}")]
    TooDeep {
        /// Where the limit was crossed.
        offset: usize,
        /// The limit.
        limit: usize,
    },
    /// Not JSON at all.
    #[error("invalid JSON at byte {offset}: expected {expected}")]
    Syntax {
        /// Where the parse failed.
        offset: usize,
        /// What the grammar wanted there.
        expected: &'static str,
    },
    /// Valid JSON that does not fit the requested type.
    #[error("{message}")]
    Shape {
        /// serde_json's message, naming the field.
        message: String,
    },
}

/// What one pass of [`scan_strict`] found out about input that is strict JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StrictScan<'a> {
    /// Whether the input is byte for byte the RFC 8785 canonical form of its value: no
    /// whitespace, object keys in increasing UTF-16 order, strings escaped as
    /// `JSON.stringify` escapes them, every number an integer below 2^53 in magnitude
    /// written in decimal (what [`is_canonical`](super::is_canonical) answers of the
    /// parsed value and these bytes).
    pub canonical: bool,
    /// Whether every number is an integer below 2^53 in magnitude, i.e. whether
    /// [`check_integers`](super::check_integers) passes on the parsed value (which then
    /// `serde_json` builds without error).
    pub integers: bool,
    /// The root object's keys, unescaped, in input order; `None` when the root is not an
    /// object.
    pub root_keys: Option<Vec<Cow<'a, str>>>,
}

/// Checks that `bytes` are strict JSON of at most `limit` bytes, exactly as
/// [`parse_strict`] does, and in the same pass whether they are canonical and carry
/// integers only, without building a value.
///
/// Errors: [`StrictJsonError`] (never [`StrictJsonError::Shape`]), the one
/// [`parse_strict`] would return first.
pub fn scan_strict(bytes: &[u8], limit: usize) -> Result<StrictScan<'_>, StrictJsonError> {
    if bytes.len() > limit {
        return Err(StrictJsonError::TooLarge {
            size: bytes.len(),
            limit,
        });
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            return Err(StrictJsonError::InvalidUtf8 {
                offset: e.valid_up_to(),
            });
        }
    };
    let mut parser = Validator {
        bytes,
        text,
        pos: 0,
        path: Vec::new(),
        canonical: true,
        integers: true,
        root_keys: None,
    };
    parser.skip_whitespace();
    parser.value(0)?;
    parser.skip_whitespace();
    if parser.pos != bytes.len() {
        return Err(parser.syntax("end of input"));
    }
    Ok(StrictScan {
        canonical: parser.canonical,
        integers: parser.integers,
        root_keys: parser.root_keys,
    })
}

/// Parses `bytes` as strict JSON of at most `limit` bytes.
///
/// Errors: [`StrictJsonError`], naming the byte offset or the JSON pointer of the problem.
pub fn parse_strict(bytes: &[u8], limit: usize) -> Result<Value, StrictJsonError> {
    from_slice_strict(bytes, limit)
}

/// Parses `bytes` strictly (as [`parse_strict`]) into `T`.
///
/// Errors: [`StrictJsonError`]; a value of the wrong shape is [`StrictJsonError::Shape`]
/// with serde's message naming the field.
pub fn from_slice_strict<T: DeserializeOwned>(
    bytes: &[u8],
    limit: usize,
) -> Result<T, StrictJsonError> {
    from_slice_scanned(bytes, limit).map(|(value, _)| value)
}

/// [`from_slice_strict`], also returning what the strict pass found ([`scan_strict`]):
/// whether the bytes are canonical, for instance.
///
/// Errors: as [`from_slice_strict`].
pub fn from_slice_scanned<T: DeserializeOwned>(
    bytes: &[u8],
    limit: usize,
) -> Result<(T, StrictScan<'_>), StrictJsonError> {
    let scan = scan_strict(bytes, limit)?;
    let value = serde_json::from_slice(bytes).map_err(|e| StrictJsonError::Shape {
        message: e.to_string(),
    })?;
    Ok((value, scan))
}

/// A recursive-descent validator over UTF-8 input.
struct Validator<'a> {
    bytes: &'a [u8],
    /// The same input as text.
    text: &'a str,
    pos: usize,
    /// Keys and indexes from the root to the current value, for error paths.
    path: Vec<Segment<'a>>,
    /// No byte so far departs from the canonical form.
    canonical: bool,
    /// Every number so far is an integer below 2^53 in magnitude.
    integers: bool,
    /// The root object's keys, once it is read.
    root_keys: Option<Vec<Cow<'a, str>>>,
}

/// The keys of one object seen so far.
enum Keys<'a> {
    /// At most [`LINEAR_KEYS`], compared one by one.
    Few(Vec<Cow<'a, str>>),
    /// More, hashed.
    Many(HashSet<Cow<'a, str>>),
}

impl<'a> Keys<'a> {
    /// Adds `key`; `false` when it was already there.
    fn insert(&mut self, key: Cow<'a, str>) -> bool {
        match self {
            Keys::Few(keys) if keys.contains(&key) => false,
            Keys::Few(keys) if keys.len() < LINEAR_KEYS => {
                keys.push(key);
                true
            }
            Keys::Few(keys) => {
                let mut set: HashSet<Cow<'a, str>> = keys.drain(..).collect();
                set.insert(key);
                *self = Keys::Many(set);
                true
            }
            Keys::Many(set) => set.insert(key),
        }
    }
}

impl<'a> Validator<'a> {
    fn syntax(&self, expected: &'static str) -> StrictJsonError {
        StrictJsonError::Syntax {
            offset: self.pos,
            expected,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        let start = self.pos;
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
        if self.pos != start {
            self.canonical = false;
        }
    }

    fn expect(&mut self, byte: u8, expected: &'static str) -> Result<(), StrictJsonError> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.syntax(expected))
        }
    }

    fn value(&mut self, depth: usize) -> Result<(), StrictJsonError> {
        match self.peek() {
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => self.string().map(drop),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            _ => Err(self.syntax("a value")),
        }
    }

    fn check_depth(&self, depth: usize) -> Result<(), StrictJsonError> {
        if depth > DEFAULT_MAX_DEPTH {
            Err(StrictJsonError::TooDeep {
                offset: self.pos,
                limit: DEFAULT_MAX_DEPTH,
            })
        } else {
            Ok(())
        }
    }

    fn object(&mut self, depth: usize) -> Result<(), StrictJsonError> {
        self.check_depth(depth)?;
        self.pos += 1;
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            if depth == 1 {
                self.root_keys = Some(Vec::new());
            }
            return Ok(());
        }
        let mut keys = Keys::Few(Vec::new());
        let mut previous: Option<Cow<'a, str>> = None;
        let root = depth == 1;
        let mut root_keys = Vec::new();
        loop {
            if self.peek() != Some(b'"') {
                return Err(self.syntax("a string key"));
            }
            let key = self.string()?;
            if self.canonical {
                if previous
                    .as_deref()
                    .is_some_and(|p| utf16_cmp(p, &key) != std::cmp::Ordering::Less)
                {
                    self.canonical = false;
                } else {
                    previous = Some(key.clone());
                }
            }
            if root {
                root_keys.push(key.clone());
            }
            if !keys.insert(key.clone()) {
                return Err(StrictJsonError::DuplicateKey {
                    path: pointer(&self.path),
                    key: key.into_owned(),
                });
            }
            self.skip_whitespace();
            self.expect(b':', "`:`")?;
            self.skip_whitespace();
            self.path.push(Segment::Key(key));
            self.value(depth)?;
            self.path.pop();
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.skip_whitespace();
                }
                Some(b'}') => {
                    self.pos += 1;
                    if root {
                        self.root_keys = Some(root_keys);
                    }
                    return Ok(());
                }
                _ => return Err(self.syntax("`,` or `}`")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<(), StrictJsonError> {
        self.check_depth(depth)?;
        self.pos += 1;
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        let mut index = 0usize;
        loop {
            self.path.push(Segment::Index(index));
            self.value(depth)?;
            self.path.pop();
            index += 1;
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.skip_whitespace();
                }
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.syntax("`,` or `]`")),
            }
        }
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<(), StrictJsonError> {
        if self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(self.syntax("`true`, `false` or `null`"))
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?` (RFC 8259 §6). Anything
    /// but an integer below 2^53 in magnitude (`-0` included, which `serde_json` reads as
    /// a float) clears `integers` and `canonical`.
    fn number(&mut self) -> Result<(), StrictJsonError> {
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
        }
        let start = self.pos;
        let safe = self.integer_part()? && {
            let digits = &self.bytes[start..self.pos];
            // 2^53 − 1 has 16 digits, so 16 digits cannot overflow a u64.
            digits.len() <= 16
                && digits
                    .iter()
                    .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'))
                    <= MAX_SAFE_INTEGER
                && !(negative && digits == b"0")
        };
        if !safe {
            self.integers = false;
            self.canonical = false;
        }
        Ok(())
    }

    /// The digits of a number (its sign read) through its fraction and exponent; `true`
    /// when it has neither.
    fn integer_part(&mut self) -> Result<bool, StrictJsonError> {
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.syntax("a digit")),
        }
        let mut integer = true;
        if self.peek() == Some(b'.') {
            integer = false;
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.syntax("a digit after `.`"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            integer = false;
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.syntax("a digit in the exponent"));
            }
        }
        Ok(integer)
    }

    fn hex4(&mut self) -> Result<u16, StrictJsonError> {
        let digits = self
            .bytes
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| self.syntax("four hex digits"))?;
        let mut value = 0u16;
        for &d in digits {
            let nibble = (d as char)
                .to_digit(16)
                .ok_or_else(|| self.syntax("four hex digits"))?;
            value = value * 16 + nibble as u16;
        }
        self.pos += 4;
        Ok(value)
    }

    /// Reads a string starting at its opening quote and returns it unescaped: borrowed
    /// from the input when it holds no escape (the common case, no copy), else built. The
    /// input is already known to be UTF-8, so raw bytes are copied through. An escape
    /// other than the one RFC 8785 writes for its character clears `canonical`.
    fn string(&mut self) -> Result<Cow<'a, str>, StrictJsonError> {
        self.pos += 1;
        let start = self.pos;
        self.pos = start + plain_prefix(&self.bytes[start..]);
        if self.peek() == Some(b'"') {
            // Both ends are ASCII quotes, so char boundaries.
            let text = self.text;
            let plain = text
                .get(start..self.pos)
                .ok_or(StrictJsonError::InvalidUtf8 { offset: start })?;
            self.pos += 1;
            return Ok(Cow::Borrowed(plain));
        }
        let mut out: Vec<u8> = self.bytes[start..self.pos].to_vec();
        loop {
            let Some(byte) = self.peek() else {
                return Err(self.syntax("`\"`"));
            };
            match byte {
                b'"' => {
                    self.pos += 1;
                    // Raw bytes came from valid UTF-8 and escapes were encoded as UTF-8, so
                    // this only fails on a bug; report it as invalid UTF-8 rather than panic.
                    return String::from_utf8(out).map(Cow::Owned).map_err(|e| {
                        StrictJsonError::InvalidUtf8 {
                            offset: self.pos - e.as_bytes().len(),
                        }
                    });
                }
                b'\\' => {
                    let escape_at = self.pos;
                    self.pos += 1;
                    let Some(kind) = self.peek() else {
                        return Err(self.syntax("an escape"));
                    };
                    self.pos += 1;
                    let ch = match kind {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape(escape_at)?,
                        _ => {
                            self.pos -= 1;
                            return Err(self.syntax("one of `\"\\/bfnrtu` after `\\`"));
                        }
                    };
                    if self.canonical && !self.is_canonical_escape(kind, ch) {
                        self.canonical = false;
                    }
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                0x00..=0x1f => return Err(self.syntax("no raw control character in a string")),
                _ => {
                    out.push(byte);
                    self.pos += 1;
                }
            }
        }
    }

    /// Whether the escape just read (`\` then `kind`, for `ch`) is the one RFC 8785 writes:
    /// `\"`, `\\`, `\b` `\t` `\n` `\f` `\r`, and `\u00xx` in lowercase hex for every other
    /// control character; every other character is written raw.
    fn is_canonical_escape(&self, kind: u8, ch: char) -> bool {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        match kind {
            b'"' | b'\\' | b'b' | b't' | b'n' | b'f' | b'r' => true,
            b'u' => {
                let code = u32::from(ch);
                code < 0x20
                    && !matches!(code, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d)
                    && self.bytes[self.pos - 4..self.pos]
                        == [
                            b'0',
                            b'0',
                            HEX[(code >> 4) as usize],
                            HEX[(code & 0xf) as usize],
                        ]
            }
            _ => false,
        }
    }

    /// The character of a `\uXXXX` escape (the `\u` already read), joining a surrogate
    /// pair written as two escapes; a lone half is [`StrictJsonError::LoneSurrogate`].
    fn unicode_escape(&mut self, escape_at: usize) -> Result<char, StrictJsonError> {
        let first = self.hex4()?;
        let code = match first {
            0xD800..=0xDBFF => {
                if !self.bytes[self.pos..].starts_with(b"\\u") {
                    return Err(StrictJsonError::LoneSurrogate { offset: escape_at });
                }
                self.pos += 2;
                let second = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return Err(StrictJsonError::LoneSurrogate { offset: escape_at });
                }
                0x10000 + ((u32::from(first) - 0xD800) << 10) + (u32::from(second) - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(StrictJsonError::LoneSurrogate { offset: escape_at }),
            _ => u32::from(first),
        };
        char::from_u32(code).ok_or(StrictJsonError::LoneSurrogate { offset: escape_at })
    }
}

#[cfg(test)]
mod tests {
    use super::{LINEAR_KEYS, StrictJsonError, parse_strict};

    /// An object of `count` distinct keys `k0`, `k1`, … then `extra` members.
    fn object(count: usize, extra: &str) -> String {
        let members: Vec<String> = (0..count).map(|i| format!("\"k{i}\":{i}")).collect();
        format!("{{\"x\":[0,{{{}{extra}}}]}}", members.join(","))
    }

    #[test]
    fn duplicates_are_found_before_and_after_keys_are_hashed() {
        for count in [
            1,
            LINEAR_KEYS - 1,
            LINEAR_KEYS,
            LINEAR_KEYS + 1,
            3 * LINEAR_KEYS,
        ] {
            let text = object(count, ",\"\\u006b0\":7");
            assert_eq!(
                parse_strict(text.as_bytes(), usize::MAX).unwrap_err(),
                StrictJsonError::DuplicateKey {
                    path: "/x/1".to_owned(),
                    key: "k0".to_owned(),
                },
                "{count} keys"
            );
            let last = format!(",\"k{}\":7", count - 1);
            assert!(parse_strict(object(count, &last).as_bytes(), usize::MAX).is_err());
            assert!(parse_strict(object(count, ",\"k\":7").as_bytes(), usize::MAX).is_ok());
        }
    }

    #[test]
    fn error_paths_name_escaped_keys_and_indexes() {
        let text = br#"{"a\/b~":[1,2,{"q":1,"q":2}]}"#;
        assert_eq!(
            parse_strict(text, usize::MAX).unwrap_err(),
            StrictJsonError::DuplicateKey {
                path: "/a~1b~0/2".to_owned(),
                key: "q".to_owned(),
            }
        );
    }
}
