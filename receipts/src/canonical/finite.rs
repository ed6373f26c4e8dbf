//! The non-finite float probe of [`to_canonical_vec`](super::to_canonical_vec): a serde
//! serializer that emits nothing and stops at the first NaN or ±Infinity, naming its JSON
//! pointer. It runs on the value itself because `serde_json::to_value` turns such a float
//! into `null` without a word, after which no walk over the JSON can see it.

use std::fmt;

use serde::Serialize;
use serde::ser;
use serde_json::Value;

use super::pointer;

/// What the probe stopped at.
#[derive(Debug)]
pub(super) enum ProbeError {
    /// A NaN or infinite float at `path` (a JSON pointer), spelled `NaN`, `Infinity` or
    /// `-Infinity`.
    NonFinite {
        /// JSON pointer of the float.
        path: String,
        /// Its spelling.
        value: String,
    },
    /// The value's own `Serialize` impl failed.
    Custom(String),
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeError::NonFinite { path, value } => write!(f, "`{value}` at `{path}`"),
            ProbeError::Custom(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for ProbeError {}

impl ser::Error for ProbeError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        ProbeError::Custom(message.to_string())
    }
}

/// Walks `value` as serde serializes it and fails at the first non-finite `f32`/`f64`,
/// with the JSON pointer serde_json's output would give it (struct fields by their
/// serialized names, map keys as serde_json writes them, enum variants as the key of
/// their externally tagged object, sequence elements by index).
///
/// Errors: [`ProbeError::NonFinite`]; [`ProbeError::Custom`] when the value's own
/// `Serialize` impl fails.
pub(super) fn find_non_finite<T: Serialize + ?Sized>(value: &T) -> Result<(), ProbeError> {
    let mut path = Vec::new();
    value.serialize(Probe { path: &mut path })
}

fn check_float(path: &[String], value: f64) -> Result<(), ProbeError> {
    if value.is_finite() {
        return Ok(());
    }
    let spelled = if value.is_nan() {
        "NaN"
    } else if value > 0.0 {
        "Infinity"
    } else {
        "-Infinity"
    };
    Err(ProbeError::NonFinite {
        path: pointer(path),
        value: spelled.to_owned(),
    })
}

/// The key of a map entry as serde_json writes it: a string as is, a number or a bool
/// as its JSON text.
fn key_text<K: Serialize + ?Sized>(key: &K) -> String {
    match serde_json::to_value(key) {
        Ok(Value::String(text)) => text,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

struct Probe<'a> {
    path: &'a mut Vec<String>,
}

/// A sequence, map, struct or variant being walked.
struct Compound<'a> {
    path: &'a mut Vec<String>,
    /// The next element's index (sequences and tuples).
    index: usize,
    /// The key of the map entry whose value comes next.
    key: Option<String>,
    /// Whether a variant name was pushed onto `path` (popped at `end`).
    variant: bool,
}

impl<'a> Compound<'a> {
    fn new(path: &'a mut Vec<String>, variant: Option<&'static str>) -> Self {
        if let Some(name) = variant {
            path.push(name.to_owned());
        }
        Self {
            path,
            index: 0,
            key: None,
            variant: variant.is_some(),
        }
    }

    fn child<T: Serialize + ?Sized>(
        &mut self,
        segment: String,
        value: &T,
    ) -> Result<(), ProbeError> {
        self.path.push(segment);
        value.serialize(Probe {
            path: &mut *self.path,
        })?;
        self.path.pop();
        Ok(())
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ProbeError> {
        let index = self.index;
        self.index += 1;
        self.child(index.to_string(), value)
    }

    fn finish(self) -> Result<(), ProbeError> {
        if self.variant {
            self.path.pop();
        }
        Ok(())
    }
}

impl<'a> ser::Serializer for Probe<'a> {
    type Ok = ();
    type Error = ProbeError;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, _: bool) -> Result<(), ProbeError> {
        Ok(())
    }
    fn serialize_i8(self, _: i8) -> Result<(), ProbeError> {
        Ok(())
    }
    fn serialize_i16(self, _: i16) -> Result<(), ProbeError> {
        Ok(())
    }
    fn serialize_i32(self, _: i32) -> Result<(), ProbeError> {
        Ok(())
    }
    fn serialize_i64(self, _: i64) -> Result<(), ProbeError> {
        Ok(())
    }
    fn serialize_i128(self, _: i128) -> Result<(), ProbeError> {
        Ok(())
    }
    fn serialize_u8(self, _: u8) -> Result<(), ProbeError> {
        Ok(())
    }
    fn serialize_u16(self, _: u16) -> Result<(), ProbeError> {
        Ok(())
    }
    fn serialize_u32(self, _: u32) -> Result<(), ProbeError> {
        Ok(())
    }
    fn serialize_u64(self, _: u64) -> Result<(), ProbeError> {
        Ok(())
    }
    fn serialize_u128(self, _: u128) -> Result<(), ProbeError> {
        Ok(())
    }
    fn serialize_f32(self, value: f32) -> Result<(), ProbeError> {
        check_float(self.path, f64::from(value))
    }
    fn serialize_f64(self, value: f64) -> Result<(), ProbeError> {
        check_float(self.path, value)
    }
    fn serialize_char(self, _: char) -> Result<(), ProbeError> {
        Ok(())
    }
    fn serialize_str(self, _: &str) -> Result<(), ProbeError> {
        Ok(())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), ProbeError> {
        Ok(())
    }
    fn serialize_none(self) -> Result<(), ProbeError> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), ProbeError> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), ProbeError> {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), ProbeError> {
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<(), ProbeError> {
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), ProbeError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), ProbeError> {
        let mut compound = Compound::new(self.path, None);
        compound.child(variant.to_owned(), value)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'a>, ProbeError> {
        Ok(Compound::new(self.path, None))
    }
    fn serialize_tuple(self, _: usize) -> Result<Compound<'a>, ProbeError> {
        Ok(Compound::new(self.path, None))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, ProbeError> {
        Ok(Compound::new(self.path, None))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, ProbeError> {
        Ok(Compound::new(self.path, Some(variant)))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'a>, ProbeError> {
        Ok(Compound::new(self.path, None))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, ProbeError> {
        Ok(Compound::new(self.path, None))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, ProbeError> {
        Ok(Compound::new(self.path, Some(variant)))
    }
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = ProbeError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ProbeError> {
        self.element(value)
    }
    fn end(self) -> Result<(), ProbeError> {
        self.finish()
    }
}

impl ser::SerializeTuple for Compound<'_> {
    type Ok = ();
    type Error = ProbeError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ProbeError> {
        self.element(value)
    }
    fn end(self) -> Result<(), ProbeError> {
        self.finish()
    }
}

impl ser::SerializeTupleStruct for Compound<'_> {
    type Ok = ();
    type Error = ProbeError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ProbeError> {
        self.element(value)
    }
    fn end(self) -> Result<(), ProbeError> {
        self.finish()
    }
}

impl ser::SerializeTupleVariant for Compound<'_> {
    type Ok = ();
    type Error = ProbeError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ProbeError> {
        self.element(value)
    }
    fn end(self) -> Result<(), ProbeError> {
        self.finish()
    }
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = ProbeError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), ProbeError> {
        self.key = Some(key_text(key));
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ProbeError> {
        let key = self.key.take().unwrap_or_default();
        self.child(key, value)
    }
    fn end(self) -> Result<(), ProbeError> {
        self.finish()
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = ProbeError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), ProbeError> {
        self.child(key.to_owned(), value)
    }
    fn end(self) -> Result<(), ProbeError> {
        self.finish()
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = ProbeError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), ProbeError> {
        self.child(key.to_owned(), value)
    }
    fn end(self) -> Result<(), ProbeError> {
        self.finish()
    }
}
