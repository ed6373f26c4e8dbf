//! As of when a bundle is published (content/transparency-log.md, Witnesses): the
//! earliest cosignature, by a witness its campaign counts (`[log] witnesses`), on a
//! checkpoint of its `rounds/<n>.proof` that holds its receipt. A cosignature at `T` proves
//! the receipt existed by `T`, whatever its `endedAt` says, so the site checks every key
//! as of `T`: a key retired before `T` cannot sign a bundle that claims an earlier time.
//! A bundle without such a cosignature is published as of its `endedAt`, "time not
//! witnessed", or refused (`log.publication`) when its campaign's `[log] required` asks
//! for one.

use std::path::Path;

use receipts::bundle::{ENVELOPE_FILE, MAX_ENVELOPE_BYTES};
use receipts::fsutil::read_limited;
use receipts::keys::{KeyRole, Keyring};
use receipts::model::{LogPolicy, RoundLog, RoundRecord, Timestamp};
use receipts::tlog::checkpoint::Checkpoint;
use receipts::tlog::cosignature;
use receipts::tlog::entry::{EntryKind, LogEntry};
use receipts::tlog::note::{Note, NoteVerifier, SignatureType};
use receipts::tlog::proof::{MAX_PROOF_FILE_BYTES, TlogProof, round_proof_path};
use receipts::tlog::statements::parse_measurement_proof_extra;

use crate::{CheckName, FailureReason, VerifyReport};

/// The pinned log key for `origin` (keyring role `log`).
pub(crate) fn log_verifier(keyring: &Keyring, origin: &str) -> Option<NoteVerifier> {
    let key =
        (keyring.role_keys().iter()).find(|k| k.role == KeyRole::Log && k.origin == origin)?;
    NoteVerifier::new(origin, SignatureType::Ed25519, key.trusted.key.clone()).ok()
}

/// A witness cosignature that dates a bundle's publication.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicationWitness {
    /// The witness key's name (its keyring `origin`).
    pub name: String,
    /// The cosignature's timestamp.
    pub at: Timestamp,
    /// The size of the checkpoint it cosigned.
    pub checkpoint_size: u64,
}

/// The earliest cosignature dating the publication of the bundle `dir` (whose record is
/// `record`): by a witness key of `keyring` (role `witness`) that `policy` counts and
/// that is valid at the cosignature's time, on the checkpoint of a proof in
/// `rounds/<n>.proof` that proves the receipt entry rebuilt from `receipt.dsse.json`
/// under the pinned log key. With several lines by one witness on one checkpoint, its
/// latest counts (as [`cosignature::verify`] returns).
///
/// Errors: why there is none, in words (no log recorded, no proof file, no proof of the
/// receipt, no counted cosignature).
pub fn earliest_witness(
    dir: &Path,
    record: &RoundRecord,
    keyring: &Keyring,
    policy: &LogPolicy,
) -> Result<PublicationWitness, String> {
    let Some(RoundLog::Logged { origin, .. }) = &record.transparency_log else {
        return Err("its receipt records no transparency log".to_owned());
    };
    let log = log_verifier(keyring, origin)
        .ok_or_else(|| format!("the keyring has no key with role `log` for origin `{origin}`"))?;
    let proof_path = round_proof_path(dir);
    let bytes = read_limited(&proof_path, MAX_PROOF_FILE_BYTES)
        .map_err(|e| format!("`{}`: {e}", proof_path.display()))?;
    let proofs =
        TlogProof::parse_all(&bytes).map_err(|e| format!("`{}`: {e}", proof_path.display()))?;
    let envelope = read_limited(&dir.join(ENVELOPE_FILE), MAX_ENVELOPE_BYTES)
        .map_err(|e| format!("`{ENVELOPE_FILE}`: {e}"))?;
    let leaf = LogEntry::for_envelope(
        record.campaign.id.clone(),
        Some(record.round),
        EntryKind::Receipt,
        &envelope,
    )
    .leaf_hash()
    .map_err(|e| format!("the receipt entry: {e}"))?;
    let mut proved = false;
    let mut earliest: Option<PublicationWitness> = None;
    for proof in &proofs {
        let Ok(checkpoint) = proof.verify(&leaf, &log) else {
            continue;
        };
        proved = true;
        let Some((name, at)) = Note::parse(&proof.checkpoint)
            .ok()
            .and_then(|note| earliest_cosignature(&note, keyring, policy))
        else {
            continue;
        };
        if earliest.as_ref().is_none_or(|e| at < e.at) {
            earliest = Some(PublicationWitness {
                name,
                at,
                checkpoint_size: checkpoint.size,
            });
        }
    }
    let counted = (keyring.role_keys().iter())
        .any(|k| k.role == KeyRole::Witness && policy.counts(&k.origin));
    match earliest {
        Some(found) => Ok(found),
        None if !proved => Err(format!(
            "`{}` holds no proof of its receipt",
            proof_path.display()
        )),
        None if !counted => Err(if policy.witnesses.is_empty() {
            "the keyring trusts no witness key (role `witness`)".to_owned()
        } else {
            format!(
                "the keyring trusts none of the campaign's witnesses ({})",
                policy.witnesses.join(", ")
            )
        }),
        None => Err(
            "no counted witness, valid at its cosignature's time, cosigned a checkpoint of its proofs that holds its receipt"
                .to_owned(),
        ),
    }
}

/// `log.publication`: `witness` (what [`earliest_witness`] found) under the campaign's
/// `policy`, for round `round`. Passes with a witness; without one, fails
/// ([`FailureReason::PublicationNotWitnessed`]) when `policy.required`, else is `not
/// applicable (time not witnessed)`.
pub fn check_publication(
    report: &mut VerifyReport,
    round: u64,
    witness: &Result<PublicationWitness, String>,
    policy: &LogPolicy,
) {
    match witness {
        Ok(w) => report.pass(CheckName::LogPublication, Some(w.name.clone())),
        Err(why) if policy.required => report.fail(
            CheckName::LogPublication,
            None,
            FailureReason::PublicationNotWitnessed {
                round,
                why: why.clone(),
            },
        ),
        Err(_) => report.not_applicable(CheckName::LogPublication, None, TIME_NOT_WITNESSED),
    }
}

/// What a bundle published as of its own `endedAt` is marked with.
pub const TIME_NOT_WITNESSED: &str = "time not witnessed";

/// `log.witness` (target `pass <n>`), when the campaign's `[log] witness_each_pass` asks
/// for it: each pass's measurement proof in `proofs` is against a checkpoint that opens
/// under `log`, does not yet hold the receipt (at index `receipt`, when proved: a
/// checkpoint cosigned at seal dates nothing about the pass), and carries a cosignature
/// by a witness `policy` counts, valid at its time; those times do not go back in pass
/// order. Each pass existed, as logged, by the time its witness saw it. Nothing is
/// recorded when the campaign does not ask.
pub fn check_pass_witnesses(
    report: &mut VerifyReport,
    proof_path: &Path,
    proofs: &[TlogProof],
    log: &NoteVerifier,
    keyring: &Keyring,
    policy: &LogPolicy,
    receipt: Option<u64>,
) {
    if !policy.witness_each_pass {
        return;
    }
    let fail = |message: String| FailureReason::Log {
        file: proof_path.display().to_string(),
        message,
    };
    let mut passes: Vec<(u32, &TlogProof)> = (proofs.iter())
        .filter_map(|p| {
            let (pass, _) = parse_measurement_proof_extra(p.extra.as_deref()?)?;
            Some((pass, p))
        })
        .collect();
    passes.sort_by_key(|(pass, _)| *pass);
    if passes.is_empty() {
        report.fail(
            CheckName::LogWitness,
            Some("passes".to_owned()),
            fail("the campaign's [log] witness_each_pass asks each pass's measurement proof to be cosigned, and there is none".to_owned()),
        );
        return;
    }
    let mut previous: Option<(u32, Timestamp)> = None;
    for (pass, proof) in passes {
        let target = Some(format!("pass {pass}"));
        let result = Checkpoint::open(&proof.checkpoint, log)
            .map_err(|e| fail(format!("pass {pass}'s checkpoint: {e}")))
            .and_then(|(checkpoint, note)| match receipt {
                Some(index) if checkpoint.size > index => Err(fail(format!(
                    "pass {pass}'s proof is against a checkpoint of {} entries, which holds the receipt (entry {index}): not cosigned as the pass ended",
                    checkpoint.size
                ))),
                _ => Ok(note),
            })
            .and_then(|note| {
                earliest_cosignature(&note, keyring, policy).ok_or_else(|| {
                    fail(format!(
                        "pass {pass}'s checkpoint carries no cosignature by a counted witness valid at its time"
                    ))
                })
            })
            .and_then(|(name, at)| match previous {
                Some((before, then)) if at < then => Err(fail(format!(
                    "pass {pass} was cosigned by {name} at {at}, before pass {before} ({then})"
                ))),
                _ => {
                    previous = Some((pass, at));
                    Ok(())
                }
            });
        report.record(CheckName::LogWitness, target, result);
    }
}

/// The earliest cosignature on `note` by a witness key of `keyring` that `policy` counts
/// and that is valid at its time: the witness's name and the time.
fn earliest_cosignature(
    note: &Note,
    keyring: &Keyring,
    policy: &LogPolicy,
) -> Option<(String, Timestamp)> {
    (keyring.role_keys().iter())
        .filter(|k| k.role == KeyRole::Witness && policy.counts(&k.origin))
        .filter_map(|k| {
            let verifier =
                NoteVerifier::new(&k.origin, SignatureType::Cosignature, k.trusted.key.clone())
                    .ok()?;
            let at = cosignature::verify(note, &verifier).ok()?;
            let at = Timestamp::from_unix_seconds(i64::try_from(at).ok()?).ok()?;
            k.trusted.is_valid_at(at).then(|| (k.origin.clone(), at))
        })
        .min_by_key(|(_, at)| *at)
}
