//! Step 7 of content/receipts.md, the transparency log (content/transparency-log.md): a
//! logged round's tlog-proofs (`rounds/<n>.proof`, next to the bundle) are checked
//! against the pinned log key and origin (keyring role `log`), each entry rebuilt from the
//! envelope bytes the bundle holds; the round's checkpoints — opening, sealing, the log's
//! current one (its tiles read with `receipts::tlog`) and an older one the verifier
//! holds — are checked to be prefixes of each other by consistency proofs built from the
//! tiles; a witnessed opening's cosignature is checked against the pinned witness key.
//! [`check_archive_log`] checks an archive's rounds against the whole log: each logged
//! round exactly once, in chain order, and no round the archive lacks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use receipts::bundle::ENVELOPE_FILE;
use receipts::fsutil::read_limited;
use receipts::keys::{KeyRole, Keyring};
use receipts::layout::read_round_record;
use receipts::model::{CampaignId, LogPolicy, RoundLog, RoundRecord, Sha256Hex, Timestamp};
use receipts::tlog::checkpoint::Checkpoint;
use receipts::tlog::cosignature;
use receipts::tlog::entry::{EntryKind, LogEntry};
use receipts::tlog::merkle::{leaf_hash, prove_consistency, tree_root, verify_consistency};
use receipts::tlog::note::{MAX_NOTE_BYTES, NoteVerifier, SignatureType};
use receipts::tlog::proof::{MAX_PROOF_FILE_BYTES, TlogProof, round_proof_path};
use receipts::tlog::tiles::{TileDir, TiledTree, read_bundle, tiles_for_size};

use crate::publication::log_verifier;
use crate::statements::{RoundTaking, campaign_dir_of, check_measurements, submission_findings};
use crate::{CheckName, FailureReason, PredicateVersion, VerifyReport};

/// How the log checks run.
#[derive(Clone, Debug, Default)]
pub struct LogOptions {
    /// `--require-log`: a round without a log entry fails.
    pub require: bool,
    /// `--no-log`: the log checks are not run, each bundle's recorded once as `not
    /// applicable (--no-log)`. Without it a round whose receipt records a log entry fails
    /// when its proofs are missing: a bundle cannot drop its log checks by dropping its
    /// `.proof`.
    pub skip: bool,
    /// The log's directory (its `checkpoint` and `tile/`); `None`: `<data>/log` of the
    /// data directory the bundle lies in ([`default_log_dir`]), when it exists.
    pub log_dir: Option<PathBuf>,
    /// A signed checkpoint of the log the verifier holds from before (`--checkpoint`, or
    /// the one it remembers), and where it came from.
    pub known: Option<(Vec<u8>, String)>,
}

/// A round's place in the log, for people: `round-opened entry at index 4 of
/// referee.example/log; round opening not witnessed`, or `round not logged (…)`.
pub fn format_round_log(log: &RoundLog) -> String {
    match log {
        RoundLog::NotLogged => {
            "round not logged (the data directory has no transparency log)".to_owned()
        }
        RoundLog::Logged {
            origin,
            round_opened_index,
            opening_witness,
        } => {
            let witness = match opening_witness {
                None => "round opening not witnessed".to_owned(),
                Some(w) => {
                    let at = i64::try_from(w.timestamp_s)
                        .ok()
                        .and_then(|t| Timestamp::from_unix_seconds(t).ok())
                        .map_or_else(|| format!("{} s", w.timestamp_s), |t| t.to_string());
                    format!(
                        "opening witnessed by {} at {at} (checkpoint size {})",
                        w.name, w.checkpoint_size
                    )
                }
            };
            format!("round-opened entry at index {round_opened_index} of {origin}; {witness}")
        }
    }
}

/// `<data>/log` for a bundle `<data>/<campaign>/rounds/<n>`.
pub fn default_log_dir(bundle: &Path) -> Option<PathBuf> {
    Some(
        bundle
            .parent()?
            .parent()?
            .parent()?
            .join(receipts::tlog::LOG_DIR),
    )
}

fn log_failure(file: &Path, message: impl ToString) -> FailureReason {
    FailureReason::Log {
        file: file.display().to_string(),
        message: message.to_string(),
    }
}

/// A verified checkpoint and its note bytes.
struct Seen {
    checkpoint: Checkpoint,
    bytes: Vec<u8>,
    name: String,
}

/// Runs the log checks of the round bundle `dir` (`log.checkpoint`, `log.roundOpened`,
/// `log.receipt`, `log.consistency`, `log.witness`) into `report`. Returns the largest
/// checkpoint that verified and that every other one is consistent with (what a verifier
/// remembers), when the consistency check passed. A round not logged is `not applicable
/// (not logged)`, or with `--require-log` a failed `log.roundOpened`; a logged round
/// whose proofs are missing fails `log.roundOpened`; with `--no-log`
/// ([`LogOptions::skip`]) nothing is checked, `not applicable (--no-log)`. Never fails:
/// a missing or damaged file is a failed check naming it.
pub fn check_bundle_log(
    report: &mut VerifyReport,
    dir: &Path,
    keyring: &Keyring,
    options: &LogOptions,
) -> Option<Vec<u8>> {
    let (record, _) = read_round_record(dir).ok()?;
    let version = (report.predicate_type.as_deref()).and_then(PredicateVersion::of);
    if options.skip {
        report.not_applicable(CheckName::LogRoundOpened, None, "--no-log");
        return None;
    }
    // The campaign's `[log]`: a round it requires logged and witnessed cannot say otherwise.
    // A copy that does not read fails `inputs.campaign` among the bundle's checks.
    let policy = (crate::inputs::read_campaign_copy(dir).1)
        .map(|campaign| campaign.campaign.effective_log())
        .ok();
    let must_log = policy
        .as_ref()
        .is_some_and(|p| p.required || p.witness_each_pass);
    let not_logged = |report: &mut VerifyReport, why: &str| {
        if must_log {
            report.fail(
                CheckName::LogRoundOpened,
                None,
                FailureReason::NotLogged {
                    round: record.round,
                    why: format!(
                        "{why}, but its campaign's `[log]` asks every round logged and witnessed"
                    ),
                },
            );
        } else if options.require {
            report.fail(
                CheckName::LogRoundOpened,
                None,
                FailureReason::NotLogged {
                    round: record.round,
                    why: why.to_owned(),
                },
            );
        } else {
            report.not_applicable(CheckName::LogRoundOpened, None, "not logged");
        }
    };
    let Some(RoundLog::Logged {
        origin,
        round_opened_index,
        opening_witness,
    }) = &record.transparency_log
    else {
        // From v5 every receipt says whether its round was logged: none is no way out.
        if record.transparency_log.is_none() && version >= Some(PredicateVersion::V5) {
            report.fail(
                CheckName::LogRoundOpened,
                None,
                crate::files::recomputed(
                    ENVELOPE_FILE,
                    "transparencyLog",
                    "absent",
                    "`logged` or `notLogged` (recorded from v5)",
                ),
            );
            return None;
        }
        not_logged(report, "its receipt records no transparency log");
        return None;
    };
    let proof_path = round_proof_path(dir);
    let Some(log) = log_verifier(keyring, origin) else {
        report.fail(
            CheckName::LogCheckpoint,
            None,
            log_failure(
                &proof_path,
                format!("the keyring has no key with role `log` for origin `{origin}`"),
            ),
        );
        return None;
    };
    let bytes = match read_limited(&proof_path, MAX_PROOF_FILE_BYTES) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            report.fail(
                CheckName::LogRoundOpened,
                None,
                log_failure(
                    &proof_path,
                    format!(
                        "missing, but the receipt records round {}'s entry in {origin} \
                         (`--no-log` skips the log checks)",
                        record.round
                    ),
                ),
            );
            return None;
        }
        Err(e) => {
            report.fail(CheckName::LogCheckpoint, None, log_failure(&proof_path, e));
            return None;
        }
    };
    let proofs = match TlogProof::parse_all(&bytes) {
        Ok(proofs) => proofs,
        Err(e) => {
            report.fail(CheckName::LogCheckpoint, None, log_failure(&proof_path, e));
            return None;
        }
    };
    let find = |kind: &str| (proofs.iter()).find(|p| p.extra.as_deref() == Some(kind.as_bytes()));
    let mut seen = Vec::new();
    let mut checkpoints_ok = true;
    let mut proved = BTreeMap::new();
    for (name, kind, file, check) in [
        (
            "round-opened",
            EntryKind::RoundOpened,
            record.round_opened.as_str(),
            CheckName::LogRoundOpened,
        ),
        (
            "receipt",
            EntryKind::Receipt,
            ENVELOPE_FILE,
            CheckName::LogReceipt,
        ),
    ] {
        let target = Some(name.to_owned());
        let Some(proof) = find(name) else {
            report.fail(
                check,
                target,
                log_failure(&proof_path, format!("no `{name}` proof in it")),
            );
            continue;
        };
        let path = dir.join(file);
        let envelope = match read_limited(&path, receipts::bundle::MAX_ENVELOPE_BYTES) {
            Ok(bytes) => bytes,
            Err(e) => {
                report.fail(check, target, log_failure(&path, e));
                continue;
            }
        };
        let entry = LogEntry::for_envelope(
            record.campaign.id.clone(),
            Some(record.round),
            kind,
            &envelope,
        );
        let Ok(leaf) = entry.leaf_hash() else {
            report.fail(
                check,
                target,
                log_failure(&path, "the entry does not serialize"),
            );
            continue;
        };
        match proof.verify(&leaf, &log) {
            Ok(checkpoint) => {
                proved.insert(name, proof.index);
                let index_ok = kind != EntryKind::RoundOpened || proof.index == *round_opened_index;
                report.record(
                    check,
                    target,
                    index_ok.then_some(()).ok_or_else(|| {
                        log_failure(
                            &proof_path,
                            format!(
                                "the round-opened entry is proved at index {}, the receipt records {round_opened_index}",
                                proof.index
                            ),
                        )
                    }),
                );
                seen.push(Seen {
                    checkpoint,
                    bytes: proof.checkpoint.clone(),
                    name: format!("the {name} proof's checkpoint"),
                });
            }
            Err(receipts::tlog::proof::TlogProofError::Checkpoint(e)) => {
                checkpoints_ok = false;
                report.fail(
                    CheckName::LogCheckpoint,
                    target.clone(),
                    log_failure(&proof_path, e),
                );
                report.not_run(&[check], CheckName::LogCheckpoint);
            }
            Err(e) => report.fail(check, target, log_failure(&proof_path, e)),
        }
    }
    if checkpoints_ok && !seen.is_empty() {
        report.pass(CheckName::LogCheckpoint, None);
    }
    match proved.get("round-opened") {
        Some(opened) => check_measurements(
            report,
            dir,
            &record,
            version,
            &proofs,
            &log,
            keyring,
            *opened,
            proved.get("receipt").copied(),
        ),
        None => report.not_run(&[CheckName::LogMeasurements], CheckName::LogRoundOpened),
    }
    check_witness(
        report,
        &record,
        keyring,
        opening_witness.as_ref(),
        policy.as_ref(),
        &seen,
    );
    if let Some(policy) = &policy {
        crate::publication::check_pass_witnesses(
            report,
            &proof_path,
            &proofs,
            &log,
            keyring,
            policy,
            proved.get("receipt").copied(),
        );
    }
    let log_dir = options
        .log_dir
        .clone()
        .or_else(|| default_log_dir(dir))
        .filter(|d| d.join("checkpoint").is_file());
    check_consistency(report, &log, log_dir.as_deref(), options, seen)
}

/// `log.witness`: the recorded cosignature on the opening checkpoint (the round-opened
/// proof's), by the pinned witness, one the campaign's `[log] witnesses` (`policy`)
/// counts, at the recorded time, before the round ended. A round whose campaign's
/// `[log] required` made it wait for that cosignature before any entry ran fails
/// without one.
fn check_witness(
    report: &mut VerifyReport,
    record: &RoundRecord,
    keyring: &Keyring,
    witness: Option<&receipts::model::OpeningWitness>,
    policy: Option<&LogPolicy>,
    seen: &[Seen],
) {
    let Some(witness) = witness else {
        if policy.is_some_and(|p| p.required) {
            report.fail(
                CheckName::LogWitness,
                None,
                FailureReason::Log {
                    file: ENVELOPE_FILE.to_owned(),
                    message: "it records no witness cosignature on the round's opening, \
                              but its campaign's `[log] required` asks one before any entry ran"
                        .to_owned(),
                },
            );
        } else {
            report.not_applicable(CheckName::LogWitness, None, "round opening not witnessed");
        }
        return;
    };
    let target = Some(witness.name.clone());
    let result = (|| {
        let fail = |message: String| FailureReason::Log {
            file: "the round-opened proof's checkpoint".to_owned(),
            message,
        };
        let key = (keyring.role_keys().iter())
            .find(|k| k.role == KeyRole::Witness && k.origin == witness.name)
            .ok_or_else(|| {
                fail(format!(
                    "the keyring has no key with role `witness` named `{}`",
                    witness.name
                ))
            })?;
        let verifier = NoteVerifier::new(
            &witness.name,
            SignatureType::Cosignature,
            key.trusted.key.clone(),
        )
        .map_err(|e| fail(e.to_string()))?;
        let opening = (seen.iter())
            .find(|s| s.name.contains("round-opened"))
            .ok_or_else(|| fail("no verified round-opened proof".to_owned()))?;
        if opening.checkpoint.size != witness.checkpoint_size {
            return Err(fail(format!(
                "it has size {}, the receipt records a cosigned checkpoint of size {}",
                opening.checkpoint.size, witness.checkpoint_size
            )));
        }
        let note =
            receipts::tlog::note::Note::parse(&opening.bytes).map_err(|e| fail(e.to_string()))?;
        let time = cosignature::verify(&note, &verifier).map_err(|e| fail(e.to_string()))?;
        if time != witness.timestamp_s {
            return Err(fail(format!(
                "cosigned at {time}, the receipt records {}",
                witness.timestamp_s
            )));
        }
        let cosigned = i64::try_from(time)
            .ok()
            .and_then(|t| Timestamp::from_unix_seconds(t).ok())
            .ok_or_else(|| fail(format!("timestamp {time} is out of range")))?;
        if cosigned > record.ended_at {
            return Err(fail(format!(
                "cosigned at {cosigned}, after the round ended ({})",
                record.ended_at
            )));
        }
        // The runner waits only for a witness the campaign counts: another one's genuine
        // cosignature, by a key this keyring happens to trust, vouches for nothing here.
        match policy.filter(|p| !p.counts(&witness.name)) {
            Some(policy) => Err(fail(format!(
                "`{}` is not one of the campaign's `[log] witnesses` ({})",
                witness.name,
                policy.witnesses.join(", ")
            ))),
            None => Ok(()),
        }
    })();
    report.record(CheckName::LogWitness, target, result);
}

/// Why `log.consistency` is not applicable with a single checkpoint in view.
const ONE_CHECKPOINT: &str = "one checkpoint";

/// `log.consistency`: every pair of checkpoints seen (the proofs', the log's current one,
/// the known one), smaller to larger, by a consistency proof from the log's tiles (equal
/// sizes: equal roots). Returns the largest checkpoint when the check passed, or the only
/// one when there is a single checkpoint (then the check is not applicable: [`ONE_CHECKPOINT`]).
fn check_consistency(
    report: &mut VerifyReport,
    log: &NoteVerifier,
    log_dir: Option<&Path>,
    options: &LogOptions,
    mut seen: Vec<Seen>,
) -> Option<Vec<u8>> {
    if seen.is_empty() {
        return None;
    }
    let mut current_size = None;
    if let Some(dir) = log_dir {
        let path = dir.join("checkpoint");
        let opened = read_limited(&path, MAX_NOTE_BYTES)
            .map_err(|e| log_failure(&path, e))
            .and_then(|b| {
                let (checkpoint, _) =
                    Checkpoint::open(&b, log).map_err(|e| log_failure(&path, e))?;
                Ok((checkpoint, b))
            });
        match opened {
            Ok((checkpoint, bytes)) => {
                current_size = Some(checkpoint.size);
                seen.push(Seen {
                    checkpoint,
                    bytes,
                    name: format!("`{}`", path.display()),
                });
            }
            Err(reason) => {
                report.fail(CheckName::LogConsistency, None, reason);
                return None;
            }
        }
    }
    if let Some((bytes, source_name)) = &options.known {
        match Checkpoint::open(bytes, log) {
            Ok((checkpoint, _)) => seen.push(Seen {
                checkpoint,
                bytes: bytes.clone(),
                name: source_name.clone(),
            }),
            Err(e) => {
                report.fail(
                    CheckName::LogConsistency,
                    None,
                    log_failure(Path::new(source_name), e),
                );
                return None;
            }
        }
    }
    if seen.len() < 2 {
        // One checkpoint is consistent with nothing: no pair to compare, so the check did
        // not run (never a pass). The checkpoint itself verified (`log.checkpoint`), so it
        // is still what a verifier remembers.
        report.not_applicable(CheckName::LogConsistency, None, ONE_CHECKPOINT);
        return seen.pop().map(|s| s.bytes);
    }
    seen.sort_by_key(|s| s.checkpoint.size);
    let largest = seen.last().map(|s| s.checkpoint.size).unwrap_or_default();
    if let Some(size) = current_size
        && largest > size
        && let Some(known) = seen.last()
    {
        report.fail(
            CheckName::LogConsistency,
            None,
            FailureReason::LogShrank {
                known: known.checkpoint.size,
                source_name: known.name.clone(),
                size,
            },
        );
        return None;
    }
    let tiles = log_dir.map(|dir| TileDir {
        dir: dir.to_path_buf(),
    });
    let mut unchecked = false;
    for pair in seen.windows(2) {
        let (old, new) = (&pair[0].checkpoint, &pair[1].checkpoint);
        let result = if old.size == new.size {
            (old.root == new.root)
                .then_some(())
                .ok_or("the roots differ".to_owned())
        } else if let Some(tiles) = &tiles {
            let tree = TiledTree {
                source: tiles,
                size: new.size,
            };
            prove_consistency(&tree, old.size, new.size)
                .and_then(|proof| {
                    verify_consistency(old.size, new.size, &proof, &old.root, &new.root)
                })
                .map_err(|e| e.to_string())
        } else {
            unchecked = true;
            continue;
        };
        if let Err(message) = result {
            report.fail(
                CheckName::LogConsistency,
                None,
                FailureReason::LogInconsistent {
                    old: old.size,
                    new: new.size,
                    message: format!("{} against {}: {message}", pair[0].name, pair[1].name),
                },
            );
            return None;
        }
    }
    if unchecked {
        report.not_applicable(CheckName::LogConsistency, None, "no log tiles");
        return None;
    }
    report.pass(CheckName::LogConsistency, None);
    seen.pop().map(|s| s.bytes)
}

/// What [`check_archive_log`] reads of one round's record: a few hundred bytes, so an
/// archive's records need not be held to check it against the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLink {
    /// `campaign.id`.
    pub campaign: CampaignId,
    /// `round`.
    pub round: u64,
    /// `roundOpened`: the bundle-relative name of its round-opened envelope.
    pub round_opened: String,
    /// `transparencyLog` (`None` before v3).
    pub transparency_log: Option<RoundLog>,
    /// `startedAt`.
    pub started_at: Timestamp,
    /// The submission records its challengers came from.
    pub challengers: Vec<Sha256Hex>,
    /// Whether its challengers came from the queue: not a confirmation's or a
    /// re-measurement's (content/title.md), which take no queued submission.
    pub from_queue: bool,
}

impl LogLink {
    /// The fields of `record` the archive's log check reads.
    pub fn of(record: &RoundRecord) -> Self {
        Self {
            campaign: record.campaign.id.clone(),
            round: record.round,
            round_opened: record.round_opened.clone(),
            transparency_log: record.transparency_log.clone(),
            started_at: record.started_at,
            challengers: (record.entries.iter())
                .filter(|e| e.role == receipts::model::Role::Challenger)
                .filter_map(|e| e.patch)
                .collect(),
            from_queue: crate::submissions::takes_from_queue(record),
        }
    }
}

/// One round of the archive: where its bundle is and what the log check reads of its
/// record.
pub struct ArchiveRound<'a> {
    /// The bundle directory.
    pub bundle: &'a Path,
    /// Its round record's [`LogLink`].
    pub record: &'a LogLink,
}

/// Checks the rounds of an archive against the whole log in `log_dir`: the log's
/// checkpoint (pinned key, the origin its rounds record), its entries against the root;
/// each round whose receipt says it was logged has its round-opened and receipt entries
/// (digests of its envelope files) exactly once, round-opened before receipt, the rounds
/// of each campaign in chain order; a round not logged is in the log not at all (with
/// `require`, a failure itself); and the log names no round of these campaigns the
/// archive lacks. One report, for the log directory, with `log.checkpoint` and one
/// `log.archive` check per finding (or one passed).
pub fn check_archive_log(
    log_dir: &Path,
    rounds: &[ArchiveRound<'_>],
    keyring: &Keyring,
    require: bool,
) -> VerifyReport {
    let mut report = VerifyReport::new(log_dir);
    let origin = rounds
        .iter()
        .find_map(|r| match &r.record.transparency_log {
            Some(RoundLog::Logged { origin, .. }) => Some(origin.clone()),
            _ => None,
        });
    let checkpoint_path = log_dir.join("checkpoint");
    let entries = match read_log(log_dir, keyring, origin.as_deref()) {
        Ok(entries) => {
            report.pass(CheckName::LogCheckpoint, None);
            entries
        }
        Err(reason) => {
            report.fail(CheckName::LogCheckpoint, None, reason);
            report.not_run(&[CheckName::LogArchive], CheckName::LogCheckpoint);
            return report;
        }
    };
    let mut at: BTreeMap<(CampaignId, u64, bool), Vec<(u64, Sha256Hex)>> = BTreeMap::new();
    let mut statements: BTreeMap<CampaignId, Vec<(u64, LogEntry)>> = BTreeMap::new();
    let mut revocations: BTreeMap<CampaignId, Vec<(u64, LogEntry)>> = BTreeMap::new();
    for (index, entry) in entries.iter().enumerate() {
        let Some(e) = entry else { continue };
        match (e.kind, e.round) {
            (EntryKind::RoundOpened | EntryKind::Receipt, Some(round)) => at
                .entry((e.campaign.clone(), round, e.kind == EntryKind::Receipt))
                .or_default()
                .push((index as u64, e.envelope_sha256)),
            (EntryKind::Submission | EntryKind::GateRejection, _) => statements
                .entry(e.campaign.clone())
                .or_default()
                .push((index as u64, e.clone())),
            (EntryKind::Revocation, _) => revocations
                .entry(e.campaign.clone())
                .or_default()
                .push((index as u64, e.clone())),
            // A measurement is checked with its round (`log.measurements`).
            _ => {}
        }
    }
    let mut findings = Vec::new();
    let mut abandoned = Vec::new();
    // Each revocation where its `afterRound` places it (content/title.md, Revocation),
    // read before the rounds below claim their entries of `at`.
    for (campaign, logged) in &revocations {
        let campaign_dir = (rounds.iter())
            .find(|r| &r.record.campaign == campaign)
            .and_then(|r| campaign_dir_of(r.bundle))
            .map(Path::to_path_buf)
            .or_else(|| log_dir.parent().map(|data| data.join(campaign.as_str())));
        let Some(campaign_dir) = campaign_dir else {
            continue;
        };
        let logged_at = |round: u64, receipt: bool| {
            at.get(&(campaign.clone(), round, receipt))
                .and_then(|found| found.first())
                .map(|(index, _)| *index)
        };
        findings.extend(crate::title::revocation_findings(
            campaign,
            &campaign_dir,
            logged,
            &logged_at,
            keyring,
        ));
    }
    let mut by_campaign: BTreeMap<&CampaignId, Vec<&ArchiveRound<'_>>> = BTreeMap::new();
    for round in rounds {
        by_campaign
            .entry(&round.record.campaign)
            .or_default()
            .push(round);
    }
    for (campaign, mut list) in by_campaign {
        list.sort_by_key(|r| r.record.round);
        let mut last_index: Option<u64> = None;
        for round in &list {
            let n = round.record.round;
            let logged = matches!(round.record.transparency_log, Some(RoundLog::Logged { .. }));
            let opened = round.record.round_opened.as_str();
            for (receipt, file) in [(false, opened), (true, ENVELOPE_FILE)] {
                let kind = if receipt { "receipt" } else { "round-opened" };
                let found = at
                    .remove(&(campaign.clone(), n, receipt))
                    .unwrap_or_default();
                let digest = read_limited(
                    &round.bundle.join(file),
                    receipts::bundle::MAX_ENVELOPE_BYTES,
                )
                .map(|b| Sha256Hex::digest(&b))
                .ok();
                match (logged, found.as_slice()) {
                    (true, [(index, logged_digest)]) => {
                        if Some(logged_digest) != digest.as_ref() {
                            findings.push(format!(
                                "`{campaign}` round {n}: the {kind} entry at index {index} logs sha256 {logged_digest}, `{file}` has another"
                            ));
                        }
                        if last_index.is_some_and(|last| *index < last) {
                            findings.push(format!(
                                "`{campaign}` round {n}: the {kind} entry at index {index} comes before an entry of an earlier round or step"
                            ));
                        }
                        last_index = Some(*index);
                    }
                    (true, []) => findings.push(format!("`{campaign}` round {n}: no {kind} entry in the log")),
                    (true, many) => findings.push(format!(
                        "`{campaign}` round {n}: {} {kind} entries in the log (indices {}), not one",
                        many.len(),
                        many.iter().map(|(i, _)| i.to_string()).collect::<Vec<_>>().join(", ")
                    )),
                    (false, []) if require => {
                        if !receipt {
                            findings.push(format!("`{campaign}` round {n} was not logged"));
                        }
                    }
                    (false, []) => {}
                    (false, some) => findings.push(format!(
                        "`{campaign}` round {n}: its receipt says it was not logged, the log holds its {kind} at index {}",
                        some[0].0
                    )),
                }
            }
        }
        // The log's entries of this campaign that no round of the archive claims: a
        // round-opened entry alone is an abandoned round (opened, never sealed).
        let claimed: Vec<(u64, bool)> = (at.keys())
            .filter(|(c, _, _)| c == campaign)
            .map(|(_, n, receipt)| (*n, *receipt))
            .collect();
        let mut orphans = Vec::new();
        for (n, receipt) in &claimed {
            let sealed_elsewhere = claimed.contains(&(*n, true));
            match (receipt, sealed_elsewhere) {
                (false, false) => abandoned.push(format!(
                    "`{campaign}` round {n}: its round-opened entry is at index {}, and it has no receipt (an abandoned round)",
                    at.get(&(campaign.clone(), *n, false))
                        .and_then(|v| v.first())
                        .map_or(0, |(i, _)| *i)
                )),
                (receipt, _) => orphans.push(format!(
                    "round {n} {}",
                    if *receipt { "receipt" } else { "round-opened" }
                )),
            }
        }
        if !orphans.is_empty() {
            findings.push(format!(
                "the log holds entries of `{campaign}` the archive lacks: {}",
                orphans.join(", ")
            ));
        }
    }
    let mut submissions = Vec::new();
    for (campaign, logged) in &statements {
        let bundles: Vec<&ArchiveRound<'_>> = (rounds.iter())
            .filter(|r| &r.record.campaign == campaign)
            .collect();
        let campaign_dir = bundles
            .first()
            .and_then(|r| campaign_dir_of(r.bundle))
            .map(Path::to_path_buf)
            .or_else(|| log_dir.parent().map(|data| data.join(campaign.as_str())));
        let Some(campaign_dir) = campaign_dir else {
            continue;
        };
        let takings: Vec<RoundTaking<'_>> = (bundles.iter())
            .filter(|r| r.record.from_queue)
            .filter_map(|r| match &r.record.transparency_log {
                Some(RoundLog::Logged {
                    round_opened_index, ..
                }) => Some(RoundTaking {
                    round: r.record.round,
                    opened: *round_opened_index,
                    started_at: r.record.started_at,
                    challengers: &r.record.challengers,
                }),
                _ => None,
            })
            .collect();
        submissions.extend(submission_findings(
            campaign,
            &campaign_dir,
            logged,
            &takings,
            keyring,
        ));
    }
    for (check, findings) in [
        (CheckName::LogArchive, findings),
        (CheckName::LogAbandoned, abandoned),
        (CheckName::LogSubmissions, submissions),
    ] {
        if findings.is_empty() {
            report.pass(check, None);
        }
        for finding in findings {
            report.fail(check, None, log_failure(&checkpoint_path, finding));
        }
    }
    report
}

/// Every entry of the log in `dir` (`None` for one that is not a referee entry), after
/// its checkpoint opened with the pinned key of `origin` (the only log key of the
/// keyring when `None`) and the entries' root matched it.
fn read_log(
    dir: &Path,
    keyring: &Keyring,
    origin: Option<&str>,
) -> Result<Vec<Option<LogEntry>>, FailureReason> {
    let path = dir.join("checkpoint");
    let log = match origin {
        Some(origin) => log_verifier(keyring, origin),
        None => (keyring.role_keys().iter())
            .find(|k| k.role == KeyRole::Log)
            .and_then(|k| {
                NoteVerifier::new(&k.origin, SignatureType::Ed25519, k.trusted.key.clone()).ok()
            }),
    }
    .ok_or_else(|| log_failure(&path, "the keyring has no key with role `log` for this log"))?;
    let bytes = read_limited(&path, MAX_NOTE_BYTES).map_err(|e| log_failure(&path, e))?;
    let (checkpoint, _) = Checkpoint::open(&bytes, &log).map_err(|e| log_failure(&path, e))?;
    let tiles = TileDir {
        dir: dir.to_path_buf(),
    };
    let mut raw = Vec::new();
    for tile in tiles_for_size(checkpoint.size)
        .into_iter()
        .filter(|t| t.level == 0)
    {
        raw.extend(read_bundle(&tiles, tile).map_err(|e| log_failure(dir, e))?);
    }
    let leaves: Vec<_> = raw.iter().map(|e| leaf_hash(e)).collect();
    let root = tree_root(&leaves[..], checkpoint.size).map_err(|e| log_failure(dir, e))?;
    if root != checkpoint.root {
        return Err(log_failure(
            &path,
            format!(
                "the entries' root for size {} is not the checkpoint's",
                checkpoint.size
            ),
        ));
    }
    Ok(raw
        .iter()
        .map(|e| receipts::canonical::from_slice_strict(e, 1 << 16).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use receipts::keys::PrivateKey;

    use super::*;

    /// One checkpoint is consistent with nothing: `log.consistency` is not applicable
    /// (never passed), and the checkpoint, which verified, is still what a verifier keeps.
    #[test]
    fn a_single_checkpoint_is_not_applicable_and_still_remembered() {
        let key = PrivateKey::from_seed(&[7; 32]);
        let log = NoteVerifier::new(
            "referee.example/log",
            SignatureType::Ed25519,
            key.public().clone(),
        )
        .expect("verifier");
        let checkpoint = Checkpoint {
            origin: "referee.example/log".to_owned(),
            size: 1,
            // A one-entry tree's root is its leaf hash (RFC 6962 §2.1).
            root: leaf_hash(b"entry"),
            extensions: Vec::new(),
        };
        let bytes = checkpoint.sign(&key).expect("signs").to_bytes();
        let seen = vec![Seen {
            checkpoint,
            bytes: bytes.clone(),
            name: "the receipt proof's checkpoint".to_owned(),
        }];
        let mut report = VerifyReport::new(Path::new("bundle"));
        let kept = check_consistency(&mut report, &log, None, &LogOptions::default(), seen);
        assert_eq!(kept, Some(bytes));
        assert_eq!(report.checks.len(), 1);
        let check = &report.checks[0];
        assert_eq!(check.name, CheckName::LogConsistency);
        assert!(!check.passed);
        assert_eq!(check.not_applicable, Some(ONE_CHECKPOINT));
    }
}
