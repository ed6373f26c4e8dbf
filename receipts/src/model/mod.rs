//! The data model: serde types for everything referee records — the campaign, submissions
//! and their pipeline, rounds and entries, hardware. Each type's docs name the seed
//! document or spec it comes from.

pub mod api;
pub mod beacon;
pub mod campaign;
pub mod capability;
pub mod decide;
pub mod fast;
pub mod hardware;
pub mod ids;
pub mod measurement;
pub mod parallel;
pub mod pod;
pub mod repository;
pub mod rerun;
pub mod review;
pub mod round;
pub mod submission;
pub mod telemetry;
pub mod title;
mod wire;

pub use api::*;
pub use beacon::*;
pub use campaign::*;
pub use capability::*;
pub use decide::*;
pub use fast::*;
pub use hardware::*;
pub use ids::*;
pub use measurement::*;
pub use parallel::*;
pub use pod::*;
pub use repository::*;
pub use rerun::*;
pub use review::{
    CopyOutcome, CopyReason, EntryResolution, EntryReview, Fingerprint, LlmReview, ReviewRecord,
    ReviewResolution, Verdict,
};
pub use round::*;
pub use submission::*;
pub use telemetry::*;
pub use title::*;

/// Errors of the data model: a value that breaks a rule, naming the field and value.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// Not 64 lowercase hex characters.
    #[error("invalid sha256 digest `{value}`: expected 64 lowercase hex characters")]
    InvalidDigest {
        /// The offending value.
        value: String,
    },
    /// Not a 32-byte hex seed.
    #[error("invalid seed `{value}`: expected 64 lowercase hex characters")]
    InvalidSeed {
        /// The offending value.
        value: String,
    },
    /// A campaign id outside `[a-z0-9-]{1,64}`.
    #[error("invalid campaign id `{value}`: expected [a-z0-9-]{{1,64}}")]
    InvalidCampaignId {
        /// The offending value.
        value: String,
    },
    /// A miner id outside `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`.
    #[error(
        "invalid miner id `{value}`: expected 1 to 64 of A-Z a-z 0-9 . _ -, starting with a letter or digit"
    )]
    InvalidMinerId {
        /// The offending value.
        value: String,
    },
    /// Not an RFC 3339 UTC time.
    #[error("invalid timestamp `{value}`: expected RFC 3339 UTC ending in Z")]
    InvalidTimestamp {
        /// The offending value.
        value: String,
    },
    /// A field whose value breaks its rule.
    #[error("field `{field}` has invalid value `{value}`: {rule}")]
    InvalidField {
        /// Dotted path of the field, e.g. `sla.bound_ms`.
        field: String,
        /// The value as written.
        value: String,
        /// The rule it breaks.
        rule: String,
    },
    /// A TOML file that does not parse into the type.
    #[error("{file}: {message}")]
    Toml {
        /// The file.
        file: String,
        /// The parser's message, naming the field.
        message: String,
    },
    /// Canonical JSON could not be produced.
    #[error("canonical JSON: {message}")]
    Canonical {
        /// Why.
        message: String,
    },
    /// A pipeline move the transition table forbids.
    #[error("submission {submission}: illegal transition `{from}` → `{to}`")]
    IllegalTransition {
        /// The submission's sha256.
        submission: String,
        /// Current state.
        from: PipelineState,
        /// Requested state.
        to: PipelineState,
    },
}
