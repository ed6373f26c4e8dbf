//! in-toto Statement v1 (in-toto/attestation `spec/v1/statement.md`; content/receipts.md
//! §Statement): the payload of every referee envelope. Subjects are exactly
//! `{"name", "digest": {"sha256"}}`; the predicate is any JSON object, checked against
//! the schema of its `predicateType` when that type is one of referee's
//! ([`is_referee_predicate_type`]). A payload of one of referee's types must also be
//! RFC 8785 canonical JSON, byte for byte, to verify (check `statement.canonical` of
//! the `verifier` crate's envelope checks); a payload of another tool's type need not be.
//!
//! A Statement is generic over how it holds its predicate: a parsed [`Value`] (the
//! default, what sealing builds) or the predicate's JSON text ([`PredicateText`], what
//! verification reads: the predicate is parsed into a typed record only where a check
//! needs it, never into a `Value`).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::canonical::{self, CanonicalError};
use crate::model::{
    RERUN_PREDICATE_TYPE, RERUN_PREDICATE_TYPE_V1, ROUND_OPENED_PREDICATE_TYPE,
    ROUND_OPENED_PREDICATE_TYPE_V1, ROUND_OPENED_PREDICATE_TYPE_V2, ROUND_OPENED_PREDICATE_TYPE_V3,
    ROUND_PREDICATE_TYPE, ROUND_PREDICATE_TYPE_V1, ROUND_PREDICATE_TYPE_V2,
    ROUND_PREDICATE_TYPE_V3, ROUND_PREDICATE_TYPE_V4, ROUND_PREDICATE_TYPE_V5,
    ROUND_PREDICATE_TYPE_V6, ROUND_PREDICATE_TYPE_V7, ROUND_PREDICATE_TYPE_V8,
    ROUND_PREDICATE_TYPES, RerunRecord, RoundOpened, RoundRecord, Sha256Hex,
};

/// `_type` of an in-toto Statement v1.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";

/// A predicate as the JSON text it was signed in (without surrounding whitespace).
pub type PredicateText = Box<RawValue>;

/// An in-toto Statement v1 whose predicate is a `P`: a [`Value`] by default, or its
/// [`PredicateText`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Statement<P = Value> {
    /// Always [`STATEMENT_TYPE`].
    #[serde(rename = "_type")]
    pub statement_type: String,
    /// The artifacts the statement is about, sorted by name.
    pub subject: Vec<Subject>,
    /// The predicate's versioned type URI, e.g. [`ROUND_PREDICATE_TYPE`].
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    /// The predicate, a JSON object.
    pub predicate: P,
}

/// One subject: a bundle file by relative path and sha256 (content/receipts.md: exactly these
/// fields; sigstore-python rejects a subject without `name`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subject {
    /// Bundle-relative path with `/` separators.
    pub name: String,
    /// Its digest.
    pub digest: DigestSet,
}

/// The digest set of a subject: sha256 only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DigestSet {
    /// 64 lowercase hex characters.
    pub sha256: Sha256Hex,
}

impl<P> Statement<P> {
    /// A Statement v1 of `subject` with the given predicate.
    pub fn new(subject: Vec<Subject>, predicate_type: &str, predicate: P) -> Self {
        Self {
            statement_type: STATEMENT_TYPE.to_owned(),
            subject,
            predicate_type: predicate_type.to_owned(),
            predicate,
        }
    }

    /// The payload bytes: RFC 8785 canonical JSON.
    ///
    /// Errors: [`CanonicalError`] when the predicate holds a float or an integer of 2^53
    /// or more.
    pub fn to_payload(&self) -> Result<Vec<u8>, CanonicalError>
    where
        P: Serialize,
    {
        canonical::to_canonical_vec(self)
    }
}

impl Statement<PredicateText> {
    /// The predicate deserialized from its text into `T` (e.g. a
    /// [`RoundRecord`]).
    ///
    /// Errors: serde_json's, when the predicate does not fit `T`.
    pub fn predicate_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.predicate.get())
    }
}

/// Whether `predicate_type` is one of referee's own: a round predicate of any version this
/// build verifies ([`ROUND_PREDICATE_TYPES`]), [`ROUND_OPENED_PREDICATE_TYPE`] or
/// [`RERUN_PREDICATE_TYPE`]. Such a payload gets a schema check ([`check_predicate`]) and
/// must be canonical JSON.
pub fn is_referee_predicate_type(predicate_type: &str) -> bool {
    ROUND_PREDICATE_TYPES.contains(&predicate_type)
        || predicate_type == ROUND_OPENED_PREDICATE_TYPE
        || predicate_type == ROUND_OPENED_PREDICATE_TYPE_V1
        || predicate_type == ROUND_OPENED_PREDICATE_TYPE_V2
        || predicate_type == ROUND_OPENED_PREDICATE_TYPE_V3
        || predicate_type == RERUN_PREDICATE_TYPE
        || predicate_type == RERUN_PREDICATE_TYPE_V1
}

/// Checks `predicate` against the schema of `predicate_type`: a JSON object always; for
/// [`ROUND_PREDICATE_TYPE`], [`ROUND_PREDICATE_TYPE_V8`], [`ROUND_PREDICATE_TYPE_V7`], [`ROUND_PREDICATE_TYPE_V6`], [`ROUND_PREDICATE_TYPE_V5`], [`ROUND_PREDICATE_TYPE_V4`], [`ROUND_PREDICATE_TYPE_V3`] and [`ROUND_PREDICATE_TYPE_V2`] it must deserialize into
/// [`RoundRecord`] with every typed field typed, for [`ROUND_PREDICATE_TYPE_V1`] into [`RoundRecord`] (free text allowed
/// where v1 wrote it), for [`ROUND_OPENED_PREDICATE_TYPE`] into [`RoundOpened`]; other
/// types get no further check. Unknown fields are ignored (content/receipts.md,
/// Verification step 9).
///
/// Errors: a message naming the field that does not fit.
pub fn check_predicate(predicate_type: &str, predicate: &Value) -> Result<(), String> {
    check_predicate_in(predicate_type, predicate.is_object(), predicate)
}

/// [`check_predicate`] of a predicate's JSON text (what verification holds), deserialized
/// from the text itself. The message of a failure is the one [`check_predicate`] gives
/// for the parsed text (fields named in the same order, no byte positions), so both
/// forms of one predicate fail alike.
///
/// Errors: as [`check_predicate`].
pub fn check_predicate_text(predicate_type: &str, predicate: &RawValue) -> Result<(), String> {
    let is_object = predicate.get().starts_with('{');
    check_predicate_in(predicate_type, is_object, predicate).or_else(|_| {
        let value: Value = serde_json::from_str(predicate.get()).map_err(|e| e.to_string())?;
        check_predicate(predicate_type, &value)
    })
}

/// The schema check of [`check_predicate`] on any form of the predicate that serde
/// reads, `is_object` telling whether it is a JSON object.
fn check_predicate_in<'de, D>(
    predicate_type: &str,
    is_object: bool,
    predicate: D,
) -> Result<(), String>
where
    D: Deserializer<'de> + Copy,
{
    if !is_object {
        return Err("the predicate is not a JSON object".to_owned());
    }
    match predicate_type {
        ROUND_PREDICATE_TYPE
        | ROUND_PREDICATE_TYPE_V8
        | ROUND_PREDICATE_TYPE_V7
        | ROUND_PREDICATE_TYPE_V6
        | ROUND_PREDICATE_TYPE_V5
        | ROUND_PREDICATE_TYPE_V4
        | ROUND_PREDICATE_TYPE_V3
        | ROUND_PREDICATE_TYPE_V2 => {
            let record = RoundRecord::deserialize(predicate).map_err(|e| e.to_string())?;
            let legacy = record.legacy_text_fields();
            if legacy.is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "free text where {predicate_type} records a typed value: {}",
                    legacy.join(", ")
                ))
            }
        }
        ROUND_PREDICATE_TYPE_V1 => RoundRecord::deserialize(predicate)
            .map(drop)
            .map_err(|e| e.to_string()),
        ROUND_OPENED_PREDICATE_TYPE
        | ROUND_OPENED_PREDICATE_TYPE_V1
        | ROUND_OPENED_PREDICATE_TYPE_V2
        | ROUND_OPENED_PREDICATE_TYPE_V3 => RoundOpened::deserialize(predicate)
            .map(drop)
            .map_err(|e| e.to_string()),
        RERUN_PREDICATE_TYPE | RERUN_PREDICATE_TYPE_V1 => RerunRecord::deserialize(predicate)
            .map(drop)
            .map_err(|e| e.to_string()),
        _ => Ok(()),
    }
}
