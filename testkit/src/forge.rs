//! Forging a real round bundle the way an evaluator holding a key could: copy
//! the verifier's `tests/fixtures/v2-round/` (or `v5-round/`), change a file or the predicate, recompute every subject's digest
//! and re-sign the Statement (and the round-opened statement) with a fresh key that the
//! test's keyring trusts. Steps 1–6 then pass, so only a check that recomputes from the
//! bundle's raw files can catch the change.

use std::path::{Path, PathBuf};

use receipts::bundle::{ENVELOPE_FILE, MAX_ENVELOPE_BYTES, sign_statement};
use receipts::dsse::Envelope;
use receipts::keys::{Keyring, PrivateKey};
use receipts::model::{
    EntryInfraFailure, EntryStatus, NoiseVerdict, Role, RoundFailure, RoundRecord, RoundStatus,
    SeatRule, Sha256Hex, TypedOrText,
};
use receipts::statement::Statement;
use serde_json::Value;

use crate::copy_dir;

/// The round-opened file of the fixture.
pub const OPENED: &str = "round-opened.dsse.json";

/// The forger's key: fresh, and the only one the test's keyring trusts.
pub fn key() -> PrivateKey {
    PrivateKey::from_seed(&[0x5a; 32])
}

/// A keyring of [`key`], valid from the epoch on.
pub fn keyring() -> Keyring {
    crate::keyring(&[&key()])
}

/// The verifier's `tests/fixtures/v2-round`.
pub fn fixture() -> PathBuf {
    fixture_named("v2-round")
}

/// The verifier's `tests/fixtures/<name>` (`v2-round`, `v5-round`).
pub fn fixture_named(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../verifier/tests/fixtures")
        .join(name)
}

/// The Statement of the envelope `file` of the bundle `dir`, as JSON.
pub fn statement(dir: &Path, file: &str) -> Value {
    let bytes = std::fs::read(dir.join(file)).expect("envelope");
    let envelope = Envelope::from_json(&bytes, MAX_ENVELOPE_BYTES).expect("envelope parses");
    serde_json::from_slice(&envelope.payload).expect("statement")
}

/// Re-signs the envelope `file` of `dir` over `statement` with [`key`], every subject's
/// digest recomputed from the files as they are now.
pub fn sign(dir: &Path, file: &str, statement: Value) {
    sign_with(dir, file, statement, &key());
}

/// [`sign`] with `signer` instead of [`key`].
pub fn sign_with(dir: &Path, file: &str, mut statement: Value, signer: &PrivateKey) {
    if let Some(subjects) = statement["subject"].as_array_mut() {
        for subject in subjects {
            let name = subject["name"].as_str().expect("name").to_owned();
            let bytes = std::fs::read(dir.join(&name)).unwrap_or_default();
            subject["digest"]["sha256"] = Value::String(Sha256Hex::digest(&bytes).to_string());
        }
    }
    let statement: Statement = serde_json::from_value(statement).expect("statement shape");
    let envelope = sign_statement(&statement, &[signer]).expect("signs");
    std::fs::write(dir.join(file), envelope.to_file_bytes().expect("canonical")).expect("write");
}

/// Applies `edit` to the whole Statement of the envelope `file` of `dir` (its
/// `predicateType` included) and re-signs it with [`key`].
pub fn resign(dir: &Path, file: &str, edit: impl FnOnce(&mut Value)) {
    let mut value = statement(dir, file);
    edit(&mut value);
    sign(dir, file, value);
}

/// Copies the fixture to `dir`, applies `files` to the copy, `opened` to the
/// round-opened predicate and `receipt` to the receipt's predicate, and re-signs both.
pub fn forge_into(
    dir: &Path,
    files: impl FnOnce(&Path),
    opened: impl FnOnce(&mut Value),
    receipt: impl FnOnce(&mut Value),
) {
    forge_from(&fixture(), dir, files, opened, receipt);
}

/// [`forge_into`] from the bundle `fixture` (e.g. [`fixture_named`]`("v5-round")`).
pub fn forge_from(
    fixture: &Path,
    dir: &Path,
    files: impl FnOnce(&Path),
    opened: impl FnOnce(&mut Value),
    receipt: impl FnOnce(&mut Value),
) {
    copy_dir(fixture, dir);
    files(dir);
    resign(dir, OPENED, |s| opened(&mut s["predicate"]));
    resign(dir, ENVELOPE_FILE, |s| receipt(&mut s["predicate"]));
}

/// Edits the JSON file `name` of `dir` (written back pretty, as the runner writes it).
pub fn edit_json(dir: &Path, name: &str, edit: impl FnOnce(&mut Value)) {
    let path = dir.join(name);
    let mut value: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    edit(&mut value);
    std::fs::write(&path, serde_json::to_vec_pretty(&value).expect("json")).expect("write");
}

/// The logprobs, micro-nats, of the five tokens [`add_raw_top_k`] lists at a position:
/// the output token first, then tokens `t + 1000·j`.
pub const RAW_LOGPROBS: [i64; 5] = [-50_000, -3_100_000, -4_200_000, -5_000_000, -6_000_000];

/// Adds to every item of the per-item correctness file `name` of `dir` the raw top-k of
/// both sides that give its stored distances of 0 (the fixture's): at each position the
/// output token `t` and tokens `t + 1000·j` with [`RAW_LOGPROBS`], the same on both
/// sides, the reference's listed in reverse (order is no part of the formula).
pub fn add_raw_top_k(dir: &Path, name: &str) {
    edit_json(dir, name, |items| {
        for item in items["items"].as_array_mut().expect("items") {
            let sides: Vec<Value> = item["outputTokenIds"]
                .as_array()
                .expect("output ids")
                .iter()
                .map(|t| {
                    let t = t.as_u64().expect("id");
                    let pairs: Vec<Value> = (0u64..)
                        .zip(RAW_LOGPROBS)
                        .map(|(j, lp)| serde_json::json!([t + 1000 * j, lp]))
                        .collect();
                    Value::Array(pairs)
                })
                .collect();
            let reversed: Vec<Value> = sides
                .iter()
                .map(|position| {
                    let mut pairs = position.as_array().expect("pairs").clone();
                    pairs.reverse();
                    Value::Array(pairs)
                })
                .collect();
            item["entryTopK"] = Value::Array(sides);
            item["referenceTopK"] = Value::Array(reversed);
        }
    });
}

/// The A/A spread of [`make_inconclusive`], basis points (30.78 %).
pub const INCONCLUSIVE_AA_SPREAD_BP: u64 = 3_078;

/// Rewrites `record` (a complete v3 round, the verifier's `tests/fixtures/v3-round`) as
/// the runner seals an `inconclusive` one: the A/A control spread
/// [`INCONCLUSIVE_AA_SPREAD_BP`] over the margin, the seat unchanged, every entry but
/// the baseline `infra_failed` with `round_infra_failed` and neither score nor paired
/// score, its per-pass rows kept. For renderer tests, which pair it with the fixture's
/// own verification report: the display is under test, not the noise arithmetic.
pub fn make_inconclusive(record: &mut RoundRecord) {
    let failure = RoundFailure::NoiseAboveMargin {
        aa_spread_bp: INCONCLUSIVE_AA_SPREAD_BP,
        margin_bp: record.outcome.margin_bp,
    };
    let outcome = &mut record.outcome;
    outcome.status = RoundStatus::Inconclusive;
    outcome.reason = Some(TypedOrText::Typed(failure.clone()));
    outcome.decision = TypedOrText::Typed(SeatRule::RoundInconclusive);
    outcome.leader_after = outcome.leader_before.clone();
    outcome.changed = false;
    if let Some(noise) = record.noise.as_mut() {
        noise.aa_spread_bp = Some(INCONCLUSIVE_AA_SPREAD_BP);
        noise.verdict = NoiseVerdict::Inconclusive;
    }
    for entry in record
        .entries
        .iter_mut()
        .filter(|e| e.role != Role::Baseline)
    {
        entry.status = EntryStatus::InfraFailed;
        entry.score_ppm = None;
        entry.paired_score = None;
        entry.infra_failure = Some(TypedOrText::Typed(EntryInfraFailure::RoundInfraFailed {
            failure: failure.clone(),
        }));
    }
}
