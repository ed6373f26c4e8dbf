//! in-toto Statement v1 (in-toto/attestation `spec/v1/statement.md`; content/receipts.md
//! §Statement): the payload of every referee envelope. Subjects are exactly
//! `{"name", "digest": {"sha256"}}`; the predicate is any JSON object, checked against
//! the schema of its `predicateType` when that type is one of referee's
//! ([`is_referee_predicate_type`]). A payload of one of referee's types must also be
//! RFC 8785 canonical JSON, byte for byte, to verify (check `statement.canonical` of
//! [`crate::verify`]); a payload of another tool's type need not be.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::canonical::{self, CanonicalError};
use crate::model::{
    RERUN_PREDICATE_TYPE, ROUND_OPENED_PREDICATE_TYPE, ROUND_OPENED_PREDICATE_TYPE_V1,
    ROUND_PREDICATE_TYPE, ROUND_PREDICATE_TYPE_V1, ROUND_PREDICATE_TYPE_V2,
    ROUND_PREDICATE_TYPE_V3, ROUND_PREDICATE_TYPES, RerunRecord, RoundOpened, RoundRecord,
    Sha256Hex,
};

/// `_type` of an in-toto Statement v1.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";

/// An in-toto Statement v1.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Statement {
    /// Always [`STATEMENT_TYPE`].
    #[serde(rename = "_type")]
    pub statement_type: String,
    /// The artifacts the statement is about, sorted by name.
    pub subject: Vec<Subject>,
    /// The predicate's versioned type URI, e.g. [`ROUND_PREDICATE_TYPE`].
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    /// The predicate, a JSON object.
    pub predicate: Value,
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

impl Statement {
    /// A Statement v1 of `subject` with the given predicate.
    pub fn new(subject: Vec<Subject>, predicate_type: &str, predicate: Value) -> Self {
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
    pub fn to_payload(&self) -> Result<Vec<u8>, CanonicalError> {
        canonical::to_canonical_vec(self)
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
        || predicate_type == RERUN_PREDICATE_TYPE
}

/// Checks `predicate` against the schema of `predicate_type`: a JSON object always; for
/// [`ROUND_PREDICATE_TYPE`], [`ROUND_PREDICATE_TYPE_V3`] and [`ROUND_PREDICATE_TYPE_V2`] it must deserialize into
/// [`RoundRecord`] with every typed field typed, for [`ROUND_PREDICATE_TYPE_V1`] into [`RoundRecord`] (free text allowed
/// where v1 wrote it), for [`ROUND_OPENED_PREDICATE_TYPE`] into [`RoundOpened`]; other
/// types get no further check. Unknown fields are ignored (content/receipts.md,
/// Verification step 9).
///
/// Errors: a message naming the field that does not fit.
pub fn check_predicate(predicate_type: &str, predicate: &Value) -> Result<(), String> {
    if !predicate.is_object() {
        return Err("the predicate is not a JSON object".to_owned());
    }
    match predicate_type {
        ROUND_PREDICATE_TYPE | ROUND_PREDICATE_TYPE_V3 | ROUND_PREDICATE_TYPE_V2 => {
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
        ROUND_OPENED_PREDICATE_TYPE | ROUND_OPENED_PREDICATE_TYPE_V1 => {
            RoundOpened::deserialize(predicate)
                .map(drop)
                .map_err(|e| e.to_string())
        }
        RERUN_PREDICATE_TYPE => RerunRecord::deserialize(predicate)
            .map(drop)
            .map_err(|e| e.to_string()),
        _ => Ok(()),
    }
}
