//! referee's offline verifier (content/verifying.md): a bundle's envelope, Statement and
//! files are checked by `receipts::verify` (checks 1–6 of content/receipts.md); a round
//! bundle's own consistency — its round-opened statement, seed commitments, its inputs
//! against the digests it records, the request-sequence digest, throughputs and scores
//! recomputed with `receipts::rules` — is checked here. No network, no async, no runner:
//! the site and anyone with a bundle and a keyring link only this and `receipts`.
//!
//! Round predicates of every version this build knows are verified
//! ([`receipts::model::ROUND_PREDICATE_TYPES`]); a check an older version cannot support
//! is reported `not applicable (vN)`, never as passed.
#![deny(missing_docs)]

use std::path::Path;

use receipts::keys::Keyring;
use receipts::model::{ROUND_PREDICATE_TYPE, ROUND_PREDICATE_TYPE_V1};
use receipts::verify::{VerifyOptions, VerifyReport, verify_envelope_and_files};

mod inputs;
mod round;
pub mod view;

pub use view::RoundView;

/// A round predicate version this build verifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PredicateVersion {
    /// `…/round/v1`: scores against the first baseline run, free-text outcome, the
    /// campaign copied as `inputs/campaign.toml`, no JSONL prompt copy.
    V1,
    /// `…/round/v2`: typed outcome and failures, engine command lines, the frozen
    /// `inputs/campaign.json` and the JSONL prompt copy.
    V2,
}

impl PredicateVersion {
    /// The version of a round `predicateType`; `None` for any other type.
    pub fn of(predicate_type: &str) -> Option<Self> {
        match predicate_type {
            ROUND_PREDICATE_TYPE_V1 => Some(PredicateVersion::V1),
            ROUND_PREDICATE_TYPE => Some(PredicateVersion::V2),
            _ => None,
        }
    }

    /// `v1`, `v2`: how `not applicable (vN)` names it.
    pub fn name(&self) -> &'static str {
        match self {
            PredicateVersion::V1 => "v1",
            PredicateVersion::V2 => "v2",
        }
    }
}

/// Verifies the bundle in `dir` against `keyring`: the envelope, Statement and file
/// checks of [`verify_envelope_and_files`], then, when the predicate passed the schema of
/// a round predicate version, the round checks (`roundOpened.signature`,
/// `roundOpened.matches`, `seeds.commitments`, `inputs.campaign`, `inputs.miners`,
/// `inputs.patches`, `requestSequence.digest`, `round.throughput`, `round.scores`);
/// every one reported. Never fails: I/O problems are failed checks naming the file.
pub fn verify_bundle(dir: &Path, keyring: &Keyring, options: &VerifyOptions) -> VerifyReport {
    let (mut report, statement) = verify_envelope_and_files(dir, keyring, options);
    let version = report
        .predicate_type
        .as_deref()
        .and_then(PredicateVersion::of);
    if let (Some(statement), Some(version)) = (statement, version) {
        round::check_round(&mut report, dir, &statement, keyring, options, version);
    }
    report
}
