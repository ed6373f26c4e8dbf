//! referee's offline verifier (content/verifying.md): a bundle's envelope, Statement and
//! files are checked by [`envelope`] (checks 1–6 of content/receipts.md); a round
//! bundle's own consistency — its round-opened statement, seed commitments, its inputs
//! against the digests it records, the request-sequence digest, throughputs and scores
//! recomputed with `receipts::rules` — is checked here, and so is everything the raw
//! files of the bundle determine: that the predicate's files are signed (`files`), the
//! measurements from the probe logs' histograms (`measurements`), the correctness
//! verdicts from the per-item files (`correctness`), statuses (`statuses`) and the
//! timeline (`timeline`); across rounds, the chain (`chain`, run by [`archive`]) and a
//! campaign's submission records against its rounds (`submissions`). No
//! network, no async, no runner: the site and anyone with a bundle and a keyring link
//! only this and `receipts`.
//!
//! Round predicates of every version this build knows are verified
//! ([`receipts::model::ROUND_PREDICATE_TYPES`]); a check an older version cannot support
//! is reported `not applicable (vN)`, never as passed.

use std::path::Path;

use receipts::keys::Keyring;
use receipts::model::{
    RERUN_PREDICATE_TYPES, ROUND_OPENED_PREDICATE_TYPE, ROUND_OPENED_PREDICATE_TYPE_V1,
    ROUND_OPENED_PREDICATE_TYPE_V2, ROUND_OPENED_PREDICATE_TYPE_V3, ROUND_PREDICATE_TYPE,
    ROUND_PREDICATE_TYPE_V1, ROUND_PREDICATE_TYPE_V2, ROUND_PREDICATE_TYPE_V3,
    ROUND_PREDICATE_TYPE_V4, ROUND_PREDICATE_TYPE_V5, ROUND_PREDICATE_TYPE_V6,
    ROUND_PREDICATE_TYPE_V7, ROUND_PREDICATE_TYPE_V8, RoundRecord,
};

pub mod archive;
mod attested;
pub mod beacon;
mod binding;
mod capability;
mod chain;
mod compliance;
mod correctness;
mod decide;
mod docker;
mod engine_api;
mod engine_logs;
mod engine_sandbox;
pub mod envelope;
mod fast_track;
mod files;
mod host_load;
mod inputs;
mod isolation;
mod measurements;
mod outputs;
mod paired;
mod placement;
mod plan;
mod pod;
pub mod publication;
pub mod report;
mod repository;
pub mod rerun;
mod review;
mod round;
mod sample_pool;
mod secrets;
mod selftest;
pub mod statements;
mod statuses;
mod submissions;
mod telemetry;
mod timeline;
pub mod title;
pub mod tlog;
pub mod view;

pub use attested::{ATTESTED_FIELDS, AttestedField};
pub use chain::{ChainLink, verify_last_round};
pub use envelope::{VerifyOptions, verify_envelope, verify_envelope_and_files};
pub use files::{
    read_bytes as read_bundle_bytes, read_json as read_bundle_json,
    read_signed_bytes as read_signed_bundle_bytes, read_signed_json as read_signed_bundle_json,
    read_signed_tail as read_signed_bundle_tail, read_tail as read_bundle_tail,
};
pub use inputs::read_campaign_copy;
pub use paired::recomputed_outcome;
pub use report::{Check, CheckName, FailureReason, VerifyReport};
pub use view::RoundView;

/// A round predicate version this build verifies, ordered oldest first (a check of what
/// `V3` added applies from `V3` on: `version >= PredicateVersion::V3`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PredicateVersion {
    /// `…/round/v1`: scores against the first baseline run, free-text outcome, the
    /// campaign copied as `inputs/campaign.toml`, no JSONL prompt copy.
    V1,
    /// `…/round/v2`: typed outcome and failures, engine command lines, the frozen
    /// `inputs/campaign.json` and the JSONL prompt copy.
    V2,
    /// `…/round/v3`: token counts from observed token ids, the reference's own prompt
    /// tokenization, the timed-run output sample, sandboxed and pinned engines, the
    /// leader rule's failure cases.
    V3,
    /// `…/round/v4`: what late v3 builds recorded optionally is required — the capability
    /// probe of a round on a real engine and the client's scheduling in its self-test.
    V4,
    /// `…/round/v5`: the trust work of its landing — what the engine could see and the
    /// limits it ran under, each measurement tied to its entry, every counted run checked.
    V5,
    /// `…/round/v6`: the second trust landing (bounded output, the compliance checks,
    /// the evaluator's log statements) and the first pieces of the competition of 001.
    V6,
    /// `…/round/v7`: the third trust landing (cheats of record, every fact tied to its
    /// evidence, the witnessed log) and the next pieces of the competition of 001.
    V7,
    /// `…/round/v8`: the fourth trust landing and the competition of 001's tracks,
    /// review and title.
    V8,
    /// `…/round/v9`: the fifth landing: the caching probe, repository rounds, both
    /// tracks wired, rounds on pods, parallel entries and GPU telemetry.
    V9,
}

impl PredicateVersion {
    /// The version of a round `predicateType`; `None` for any other type.
    pub fn of(predicate_type: &str) -> Option<Self> {
        match predicate_type {
            ROUND_PREDICATE_TYPE_V1 => Some(PredicateVersion::V1),
            ROUND_PREDICATE_TYPE_V2 => Some(PredicateVersion::V2),
            ROUND_PREDICATE_TYPE_V3 => Some(PredicateVersion::V3),
            ROUND_PREDICATE_TYPE_V4 => Some(PredicateVersion::V4),
            ROUND_PREDICATE_TYPE_V5 => Some(PredicateVersion::V5),
            ROUND_PREDICATE_TYPE_V6 => Some(PredicateVersion::V6),
            ROUND_PREDICATE_TYPE_V7 => Some(PredicateVersion::V7),
            ROUND_PREDICATE_TYPE_V8 => Some(PredicateVersion::V8),
            ROUND_PREDICATE_TYPE => Some(PredicateVersion::V9),
            _ => None,
        }
    }

    /// The `predicateType` of the round-opened statement a round of this version
    /// references.
    pub fn round_opened_type(&self) -> &'static str {
        match self {
            PredicateVersion::V1 | PredicateVersion::V2 => ROUND_OPENED_PREDICATE_TYPE_V1,
            PredicateVersion::V3 | PredicateVersion::V4 => ROUND_OPENED_PREDICATE_TYPE_V2,
            PredicateVersion::V5 | PredicateVersion::V6 | PredicateVersion::V7 => {
                ROUND_OPENED_PREDICATE_TYPE_V3
            }
            PredicateVersion::V8 | PredicateVersion::V9 => ROUND_OPENED_PREDICATE_TYPE,
        }
    }

    /// `v1` … `v9`: how `not applicable (vN)` names it.
    pub fn name(&self) -> &'static str {
        match self {
            PredicateVersion::V1 => "v1",
            PredicateVersion::V2 => "v2",
            PredicateVersion::V3 => "v3",
            PredicateVersion::V4 => "v4",
            PredicateVersion::V5 => "v5",
            PredicateVersion::V6 => "v6",
            PredicateVersion::V7 => "v7",
            PredicateVersion::V8 => "v8",
            PredicateVersion::V9 => "v9",
        }
    }
}

/// Verifies the bundle in `dir` against `keyring`: the envelope, Statement and file
/// checks of [`verify_envelope_and_files`], then, when the predicate passed the schema of
/// a round predicate version, the round checks (`roundOpened.signature`,
/// `roundOpened.matches`, `seeds.commitments`, `inputs.campaign`, `inputs.miners`,
/// `inputs.patches`, `requestSequence.digest`, `round.throughput`, `round.scores`, and
/// the checks recomputed from the bundle's raw files: `files.named`, `probes.log`,
/// `probe.*`, `run.result`, `entry.measurement`, `drift.recomputed`,
/// `hardware.changed`, `correctness.verdict`, `correctness.distances`,
/// `status.consistent`, `timeline`, and from
/// v3 `host.steal`, `round.tokenCount` and the paired checks of its passes: `passes.order`, `passes.void`, `paired.ratio`,
/// `paired.score`, `noise.spread`, `noise.verdict`, `paired.decision`, and
/// `engine.docker` for entries run in containers; from v5 `round.sla`, `probes.entry`,
/// `runs.passes`, `host.load`, `probe.plan`, `engine.isolation`, `correctness.entry`,
/// `correctness.prompts`, `correctness.greedy`, `correctness.reference`,
/// `correctness.samplePool` and `status.passes`; and `round.minPredicate` in a campaign
/// that records a floor); every one reported. A rerun bundle (a predicate type of [`RERUN_PREDICATE_TYPES`]) gets the re-run
/// checks of [`rerun`] instead of the round checks. Never fails: I/O problems are failed
/// checks naming the file.
pub fn verify_bundle(dir: &Path, keyring: &Keyring, options: &VerifyOptions) -> VerifyReport {
    verify_round_bundle(dir, keyring, options).0
}

/// [`verify_bundle`], also returning the round record when the predicate passed the
/// schema of a round predicate version (what the checks across rounds,
/// [`archive::verify_archive`], compare).
pub fn verify_round_bundle(
    dir: &Path,
    keyring: &Keyring,
    options: &VerifyOptions,
) -> (VerifyReport, Option<RoundRecord>) {
    let (mut report, statement) = verify_envelope_and_files(dir, keyring, options);
    if let Some(statement) = &statement
        && (report.predicate_type.as_deref()).is_some_and(|t| RERUN_PREDICATE_TYPES.contains(&t))
    {
        rerun::check_rerun(&mut report, dir, statement);
        return (report, None);
    }
    let version = report
        .predicate_type
        .as_deref()
        .and_then(PredicateVersion::of);
    let (Some(statement), Some(version)) = (statement, version) else {
        return (report, None);
    };
    // The schema check deserialized the same text: this cannot fail, and if it did the
    // schema check has already failed the bundle.
    let Ok(record) = statement.predicate_as::<RoundRecord>() else {
        return (report, None);
    };
    round::check_round(
        &mut report,
        dir,
        &statement,
        &record,
        keyring,
        options,
        version,
    );
    (report, Some(record))
}
