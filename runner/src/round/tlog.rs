//! A round in the data directory's transparency log (content/transparency-log.md): its
//! round-opened statement is appended, and the new checkpoint published, before any entry
//! runs ([`open_round`]); with `--require-witness` the round waits, bounded, for a
//! witness cosignature on a checkpoint that holds that entry; at seal the receipt is
//! appended and both entries' C2SP tlog-proofs are written to `rounds/<n>.proof`, outside
//! the bundle ([`log_receipt`]). As each pass ends, a signed `measurement` statement names
//! the digest of every file its runs wrote, and its entry is appended and the checkpoint
//! published ([`log_pass`]); the proofs of those entries go into `rounds/<n>.proof` too.
//! A campaign's `[log]` (content/transparency-log.md, Witnesses) counts only the
//! witnesses it names; `required` makes every round wait as `--require-witness` does for
//! its opening, and at seal for a cosignature on a checkpoint holding the receipt, the checkpoint its
//! proof is then against (what the site publishes it as of); `witness_each_pass` makes
//! each pass wait for one on a checkpoint holding its measurement entry, which its proof
//! is then against.
//! Appends are idempotent by the entry's bytes (which hold the envelope's digest): a
//! resumed round never logs an envelope twice. A data directory without
//! `log/config.toml` runs rounds as before; their receipt says `notLogged`.

use std::path::Path;
use std::time::{Duration, Instant};

use intake::statements::StatementLog;
use intake::tlog::{LogError, LogStore};
use receipts::bundle::ENVELOPE_FILE;
use receipts::fsutil::{read_limited, write_atomic};
use receipts::keys::{KeyRole, Keyring, PrivateKey};
use receipts::model::{
    BeaconPromise, BeaconSource, LogPolicy, OpeningWitness, RoundLog, Sha256Hex,
};
use receipts::statement::{DigestSet, Subject};
use receipts::tlog::checkpoint::Checkpoint;
use receipts::tlog::cosignature;
use receipts::tlog::entry::{EntryKind, LogEntry};
use receipts::tlog::note::{NoteVerifier, SignatureType};
use receipts::tlog::proof::round_proof_path;
use receipts::tlog::statements::{
    MAX_STATEMENT_BYTES, MEASUREMENT_PREDICATE_TYPE, MeasurementPredicate, measurement_proof_extra,
    statement_path,
};

use super::record::{PlannedEntry, Record};
use super::setup::ROUND_OPENED_FILE;
use super::{Ctx, RoundError, RoundOptions, io};
use verifier::beacon::quicknet_round_time_ms;

/// `.work/round-<n>/` file holding the checkpoint published when the round opened (with
/// the witness's cosignature once it has one): its round-opened proof is against it.
const OPENING_CHECKPOINT: &str = "opening.checkpoint";

/// Largest checkpoint or envelope read here, in bytes.
const MAX_CHECKPOINT_BYTES: usize = receipts::tlog::note::MAX_NOTE_BYTES;

/// How often a round waiting for a witness reads the checkpoint again.
const WITNESS_POLL: Duration = Duration::from_millis(250);

/// How long a round of a campaign whose `[log]` asks for witnesses waits for one when
/// `--require-witness` gives no bound (`--witness-timeout`'s default).
pub const DEFAULT_WITNESS_WAIT: Duration = Duration::from_secs(600);

/// `.work/round-<n>/` file holding the checkpoint a witness cosigned after pass `pass`
/// (`[log] witness_each_pass`): its measurement proof is against it.
fn pass_checkpoint_name(pass: u32) -> String {
    format!("pass-{pass}.checkpoint")
}

/// The data directory's log and what appends to it.
pub(crate) struct RoundLogger {
    store: LogStore,
    key: PrivateKey,
    verifier: NoteVerifier,
    /// The keyring's witness keys the campaign counts, as cosignature verifiers.
    witnesses: Vec<NoteVerifier>,
    /// `--require-witness`, or the campaign's `[log] required`: how long to wait for a
    /// cosignature on the opening and on the receipt.
    require_witness: Option<Duration>,
    /// `[log] witness_each_pass`: how long each pass waits for a cosignature.
    each_pass: Option<Duration>,
    /// `[log] required`: how long the seal waits for a cosignature on the receipt (the
    /// site publishes the round as of it, and refuses the round without one).
    receipt: Option<Duration>,
}

/// The log of `options.data`, when it has one, with its key: refused before the round
/// opens when the log key is missing, unreadable, not the log's, the evaluator key, or
/// when `--require-witness` or the campaign's `policy` (`[log]`) asks for witnesses and
/// finds no log or no trusted witness key it counts.
///
/// Errors: [`RoundError::LogKey`], [`RoundError::Log`].
pub(crate) fn open_logger(
    options: &RoundOptions,
    evaluator: &PrivateKey,
    keyring: &Keyring,
    policy: &LogPolicy,
) -> Result<Option<RoundLogger>, RoundError> {
    let refuse = |reason: String| RoundError::LogKey { reason };
    let require_witness =
        (options.require_witness).or_else(|| policy.required.then_some(DEFAULT_WITNESS_WAIT));
    let bound = options.require_witness.unwrap_or(DEFAULT_WITNESS_WAIT);
    let each_pass = policy.witness_each_pass.then_some(bound);
    let receipt = policy.required.then_some(bound);
    let asking = if options.require_witness.is_some() {
        "--require-witness"
    } else {
        "the campaign's [log]"
    };
    let store = match LogStore::open(options.data.root()) {
        Ok(store) => store,
        Err(LogError::NoLog { .. }) if require_witness.is_none() && each_pass.is_none() => {
            return Ok(None);
        }
        Err(LogError::NoLog { path }) => {
            return Err(refuse(format!(
                "{asking}: the data directory has no log (`{}`; run `referee log init`)",
                path.display()
            )));
        }
        Err(e) => return Err(e.into()),
    };
    let path = options.log_key.as_deref().ok_or_else(|| {
        refuse(
            "the data directory has a log: the round needs its log key (`<key-dir>/log.key`)"
                .into(),
        )
    })?;
    let key = PrivateKey::load(path)
        .map_err(|e| refuse(format!("loading the log key `{}`: {e}", path.display())))?;
    if key.public().as_bytes() == evaluator.public().as_bytes() {
        return Err(refuse(format!(
            "the log key `{}` is the evaluator key: a log needs its own key",
            path.display()
        )));
    }
    let verifier = store.verifier(key.public())?;
    let witnesses: Vec<NoteVerifier> = (keyring.role_keys().iter())
        .filter(|k| k.role == KeyRole::Witness && policy.counts(&k.origin))
        .filter_map(|k| {
            NoteVerifier::new(&k.origin, SignatureType::Cosignature, k.trusted.key.clone()).ok()
        })
        .collect();
    if (require_witness.is_some() || each_pass.is_some()) && witnesses.is_empty() {
        return Err(refuse(if policy.witnesses.is_empty() {
            format!("{asking}: the keyring trusts no witness key (role `witness`)")
        } else {
            format!(
                "{asking}: the keyring trusts none of the campaign's witnesses ({})",
                policy.witnesses.join(", ")
            )
        }));
    }
    Ok(Some(RoundLogger {
        store,
        key,
        verifier,
        witnesses,
        require_witness,
        each_pass,
        receipt,
    }))
}

impl RoundLogger {
    /// The log's signing key: what the bundle is searched for before sealing.
    pub(crate) fn key(&self) -> &PrivateKey {
        &self.key
    }

    /// The first witness cosignature on the signed checkpoint `bytes`, by a trusted
    /// witness, on a checkpoint that holds entry `index`.
    fn witnessed(&self, bytes: &[u8], index: u64) -> Option<OpeningWitness> {
        let (checkpoint, note) = Checkpoint::open(bytes, &self.verifier).ok()?;
        if checkpoint.size <= index {
            return None;
        }
        self.witnesses.iter().find_map(|w| {
            let timestamp_s = cosignature::verify(&note, w).ok()?;
            Some(OpeningWitness {
                name: w.name().to_owned(),
                checkpoint_size: checkpoint.size,
                timestamp_s,
            })
        })
    }

    /// The current checkpoint's bytes.
    fn current(&self) -> Result<Vec<u8>, RoundError> {
        Ok(self.store.checkpoint(&self.verifier)?.1)
    }

    /// Waits up to `bound` for a counted witness to cosign a checkpoint holding entry
    /// `index`: that checkpoint's bytes and the cosignature, or `None` past the bound.
    ///
    /// Errors: [`RoundError::Log`] when the checkpoint cannot be read.
    fn wait_for_witness(
        &self,
        index: u64,
        bound: Duration,
    ) -> Result<Option<(Vec<u8>, OpeningWitness)>, RoundError> {
        let deadline = Instant::now() + bound;
        loop {
            let bytes = self.current()?;
            if let Some(found) = self.witnessed(&bytes, index) {
                return Ok(Some((bytes, found)));
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            std::thread::sleep(WITNESS_POLL.min(deadline - now));
        }
    }
}

/// The round's log entry of kind `kind` for the envelope file at `path`.
fn entry_of(ctx: &Ctx<'_>, kind: EntryKind, path: &Path) -> Result<Vec<u8>, RoundError> {
    let bytes =
        read_limited(path, receipts::bundle::MAX_ENVELOPE_BYTES).map_err(io("reading", path))?;
    LogEntry::for_envelope(
        ctx.frozen.campaign.id.clone(),
        Some(ctx.round),
        kind,
        &bytes,
    )
    .to_bytes()
    .map_err(|e| RoundError::Record {
        round: ctx.round,
        message: e.to_string(),
    })
}

/// Logs the `submission` entries of the round's challengers (found when their ingest
/// logged them): a round takes only submissions logged before its round-opened entry,
/// and one ingested just as the round seated it is logged here first.
///
/// Errors: [`RoundError::Record`] when a record cannot be read or its statement logged.
fn log_challengers(
    ctx: &Ctx<'_>,
    logger: &RoundLogger,
    entries: &[PlannedEntry],
) -> Result<(), RoundError> {
    let statements = StatementLog::new(&logger.store, ctx.key, &logger.key)?;
    let patches = (entries.iter())
        .filter(|e| e.role == receipts::model::Role::Challenger)
        .filter_map(|e| e.patch);
    for patch in patches {
        let submission = ctx.campaign_dir.load_submission(&patch)?;
        statements
            .log_submission(&ctx.campaign_dir, &submission)
            .map_err(|e| RoundError::Record {
                round: ctx.round,
                message: format!("logging submission {patch}: {e}"),
            })?;
    }
    Ok(())
}

/// Logs the round-opened statement (once), after the `submission` entries of `entries`'
/// challengers, and publishes the checkpoint; with `--require-witness`, before any entry
/// ran, waits for a witness's cosignature. Returns what the receipt records. A beacon
/// round calls it as soon as its opening is signed, before the beacon round it names
/// exists; it is idempotent, so the call before the first entry finds it logged.
///
/// Errors: [`RoundError::Log`]; [`RoundError::NotWitnessed`] when no witness cosigned
/// within the bound (the round stays in `.work/`: the same command resumes it and waits
/// again); [`RoundError::Io`].
pub(crate) fn open_round(ctx: &Ctx<'_>, entries: &[PlannedEntry]) -> Result<RoundLog, RoundError> {
    let Some(logger) = &ctx.logger else {
        return Ok(RoundLog::NotLogged);
    };
    let entry = entry_of(
        ctx,
        EntryKind::RoundOpened,
        &ctx.bundle.join(ROUND_OPENED_FILE),
    )?;
    let entries_ran =
        (ctx.journal.records.iter()).any(|r| matches!(r, Record::Entry(_) | Record::Sealed(_)));
    let index = if entries_ran {
        // Entries ran: an opening not logged before them (a log created since) is not
        // logged now either.
        match logger.store.position(&logger.verifier, &entry)? {
            Some(index) => index,
            None => {
                ctx.progress.log_note(&format!(
                    "round {}: not logged: its entries ran before the data directory had a log",
                    ctx.round
                ));
                return Ok(RoundLog::NotLogged);
            }
        }
    } else {
        log_challengers(ctx, logger, entries)?;
        logger.store.append_once(&logger.key, &entry)?
    };
    let saved = ctx.work.join(OPENING_CHECKPOINT);
    let opening = match read_limited(&saved, MAX_CHECKPOINT_BYTES) {
        Ok(bytes) if Checkpoint::open(&bytes, &logger.verifier).is_ok() => bytes,
        _ => {
            let bytes = logger.current()?;
            write_atomic(&saved, &bytes, 0o644).map_err(io("writing", &saved))?;
            bytes
        }
    };
    let size = Checkpoint::open(&opening, &logger.verifier)
        .map(|(c, _)| c.size)
        .unwrap_or_default();
    ctx.progress.log_note(&format!(
        "round {}: round-opened statement logged at index {index} of {} (checkpoint size {size})",
        ctx.round,
        logger.verifier.name()
    ));
    let mut witness = logger.witnessed(&opening, index);
    if let (None, Some(bound), false) = (&witness, logger.require_witness, entries_ran) {
        ctx.progress.log_note(&format!(
            "round {}: waiting up to {} s, before the first entry runs, for a witness to cosign a checkpoint holding entry {index}: the witness runs `referee log witness --log {} --key <witness.key> --name <name> --log-key {}`",
            ctx.round,
            bound.as_secs(),
            LogStore::dir_of(ctx.options.data.root()).display(),
            logger.verifier.to_vkey()
        ));
        let Some((bytes, found)) = logger.wait_for_witness(index, bound)? else {
            return Err(RoundError::NotWitnessed {
                round: ctx.round,
                index,
                waited_s: bound.as_secs(),
            });
        };
        write_atomic(&saved, &bytes, 0o644).map_err(io("writing", &saved))?;
        witness = Some(found);
    }
    if let Some(w) = &witness {
        ctx.progress.log_note(&format!(
            "round {}: opening witnessed by {} at {} (checkpoint size {})",
            ctx.round, w.name, w.timestamp_s, w.checkpoint_size
        ));
    }
    Ok(RoundLog::Logged {
        origin: logger.verifier.name().to_owned(),
        round_opened_index: index,
        opening_witness: witness,
    })
}

/// Says when a drand beacon round's opening was witnessed after the round it names was
/// produced: nothing then proves the evaluator did not know the value when it opened
/// (`seeds.beaconOrder` fails); the round goes on, its seeds still derive from the value.
pub(crate) fn note_beacon_order(ctx: &Ctx<'_>, log: &RoundLog, promise: &BeaconPromise) {
    let RoundLog::Logged {
        opening_witness: Some(witness),
        ..
    } = log
    else {
        return;
    };
    if promise.source != BeaconSource::DrandQuicknet {
        return;
    }
    let produced_ms = quicknet_round_time_ms(promise.round);
    let witnessed_ms =
        i64::try_from(witness.timestamp_s).map_or(i64::MAX, |s| s.saturating_mul(1000));
    if witnessed_ms >= produced_ms {
        ctx.progress.log_note(&format!(
            "round {}: the opening was witnessed at {} s, not before drand quicknet round {} ({} ms): `seeds.beaconOrder` will fail",
            ctx.round, witness.timestamp_s, promise.round, produced_ms
        ));
    }
}

/// Logs pass `pass`'s `measurement` statement once (content/transparency-log.md, Entry
/// kinds) and publishes the checkpoint: its subjects are the probe and engine logs its
/// journaled runs wrote, by bundle-relative name and sha256. Nothing when the round is
/// not logged.
///
/// Errors: [`RoundError::Log`] when the statement cannot be signed, stored or logged;
/// [`RoundError::Io`] reading a file.
pub(crate) fn log_pass(ctx: &Ctx<'_>, pass: u32) -> Result<(), RoundError> {
    let (Some(logger), Some(RoundLog::Logged { .. })) = (&ctx.logger, &ctx.round_log) else {
        return Ok(());
    };
    let mut names: Vec<&str> = (ctx.journal.records.iter())
        .filter_map(|r| match r {
            Record::Entry(e) if e.pass == pass => Some(e),
            _ => None,
        })
        .flat_map(|e| [e.probe_log.as_deref(), e.engine_log.as_deref()])
        .flatten()
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut subject = Vec::new();
    for name in names {
        let path = ctx.bundle.join(name);
        if !path.is_file() {
            continue;
        }
        let sha256 = receipts::bundle::file_sha256(&path).map_err(io("reading", &path))?;
        subject.push(Subject {
            name: name.to_owned(),
            digest: DigestSet { sha256 },
        });
    }
    let predicate = MeasurementPredicate {
        campaign: ctx.frozen.campaign.id.clone(),
        round: ctx.round,
        pass,
    };
    let logged = StatementLog::new(&logger.store, ctx.key, &logger.key)?
        .log(
            &ctx.campaign_dir,
            EntryKind::Measurement,
            Some(ctx.round),
            subject,
            MEASUREMENT_PREDICATE_TYPE,
            &predicate,
        )
        .map_err(|e| RoundError::Record {
            round: ctx.round,
            message: format!("logging pass {pass}'s measurement: {e}"),
        })?;
    ctx.progress.log_note(&format!(
        "round {}: pass {pass}'s measurement logged at index {}",
        ctx.round, logged.index
    ));
    if let Some(bound) = logger.each_pass {
        wait_pass_witness(ctx, logger, pass, logged.index, bound)?;
    }
    Ok(())
}

/// `[log] witness_each_pass`: waits up to `bound` for a witness to cosign a checkpoint
/// holding pass `pass`'s measurement entry (at `index`) and keeps it in `.work/` for the
/// pass's proof; past the bound the pass goes on, its proof against the checkpoint at
/// seal, and `log.witness` fails it.
///
/// Errors: [`RoundError::Log`]; [`RoundError::Io`] writing the checkpoint.
fn wait_pass_witness(
    ctx: &Ctx<'_>,
    logger: &RoundLogger,
    pass: u32,
    index: u64,
    bound: Duration,
) -> Result<(), RoundError> {
    let saved = ctx.work.join(pass_checkpoint_name(pass));
    if (read_limited(&saved, MAX_CHECKPOINT_BYTES).ok())
        .is_some_and(|b| logger.witnessed(&b, index).is_some())
    {
        return Ok(());
    }
    match logger.wait_for_witness(index, bound)? {
        Some((bytes, found)) => {
            write_atomic(&saved, &bytes, 0o644).map_err(io("writing", &saved))?;
            ctx.progress.log_note(&format!(
                "round {}: pass {pass} witnessed by {} at {} (checkpoint size {})",
                ctx.round, found.name, found.timestamp_s, found.checkpoint_size
            ));
        }
        None => ctx.progress.log_note(&format!(
            "round {}: pass {pass}: no witness cosigned a checkpoint holding its measurement entry within {} s; `log.witness` will fail it",
            ctx.round,
            bound.as_secs()
        )),
    }
    Ok(())
}

/// The round's `measurement` entries in the log, in log order: each one's index, pass and
/// envelope digest (its pass read from its stored statement).
fn measurement_entries(
    ctx: &Ctx<'_>,
    logger: &RoundLogger,
) -> Result<Vec<(u64, u32, Sha256Hex)>, RoundError> {
    let mut found = Vec::new();
    for (index, bytes) in logger.store.entries(&logger.verifier)?.iter().enumerate() {
        let Ok(entry) = receipts::canonical::from_slice_strict::<LogEntry>(bytes, 1 << 16) else {
            continue;
        };
        if entry.kind != EntryKind::Measurement
            || entry.campaign != ctx.frozen.campaign.id
            || entry.round != Some(ctx.round)
        {
            continue;
        }
        let path = statement_path(ctx.campaign_dir.root(), entry.kind, &entry.envelope_sha256);
        let envelope = receipts::dsse::Envelope::from_json(
            &read_limited(&path, MAX_STATEMENT_BYTES).map_err(io("reading", &path))?,
            MAX_STATEMENT_BYTES,
        )
        .ok();
        let pass = envelope
            .and_then(|e| serde_json::from_slice::<receipts::statement::Statement>(&e.payload).ok())
            .and_then(|s| serde_json::from_value::<MeasurementPredicate>(s.predicate).ok())
            .map(|p| p.pass)
            .ok_or_else(|| RoundError::Record {
                round: ctx.round,
                message: format!("`{}` is not a measurement statement", path.display()),
            })?;
        found.push((index as u64, pass, entry.envelope_sha256));
    }
    Ok(found)
}

/// Logs the sealed receipt of the bundle `dest` (once) and writes `rounds/<n>.proof`: the
/// round-opened entry's tlog-proof against the opening checkpoint, then the receipt's
/// against the checkpoint after it (with `[log] required`, the first one a witness
/// cosigned within the bound), then each measurement entry's against
/// the checkpoint a witness cosigned after its pass (`[log] witness_each_pass`), else
/// the receipt's (`extra`: `measurement <pass> <envelope sha256>`).
///
/// Errors: [`RoundError::Log`]; [`RoundError::Io`].
pub(crate) fn log_receipt(ctx: &Ctx<'_>, dest: &Path) -> Result<(), RoundError> {
    let (
        Some(logger),
        Some(RoundLog::Logged {
            round_opened_index, ..
        }),
    ) = (&ctx.logger, &ctx.round_log)
    else {
        return Ok(());
    };
    let entry = entry_of(ctx, EntryKind::Receipt, &dest.join(ENVELOPE_FILE))?;
    let index = logger.store.append_once(&logger.key, &entry)?;
    let saved = ctx.work.join(OPENING_CHECKPOINT);
    let opening = read_limited(&saved, MAX_CHECKPOINT_BYTES).map_err(io("reading", &saved))?;
    let mut current = logger.current()?;
    if let Some(bound) = logger.receipt {
        match logger.wait_for_witness(index, bound)? {
            Some((bytes, found)) => {
                ctx.progress.log_note(&format!(
                    "round {}: receipt witnessed by {} at {} (checkpoint size {})",
                    ctx.round, found.name, found.timestamp_s, found.checkpoint_size
                ));
                current = bytes;
            }
            None => ctx.progress.log_note(&format!(
                "round {}: no witness cosigned a checkpoint holding the receipt within {} s: its publication is not witnessed",
                ctx.round,
                bound.as_secs()
            )),
        }
    }
    let mut proofs = vec![
        (*round_opened_index, opening, "round-opened".to_owned()),
        (index, current.clone(), "receipt".to_owned()),
    ];
    for (index, pass, sha) in measurement_entries(ctx, logger)? {
        let saved = ctx.work.join(pass_checkpoint_name(pass));
        let checkpoint = (read_limited(&saved, MAX_CHECKPOINT_BYTES).ok())
            .filter(|b| logger.witnessed(b, index).is_some())
            .unwrap_or_else(|| current.clone());
        proofs.push((index, checkpoint, measurement_proof_extra(pass, &sha)));
    }
    let mut bytes = Vec::new();
    for (index, checkpoint, extra) in proofs {
        let proof = logger.store.tlog_proof(
            &logger.verifier,
            index,
            &checkpoint,
            Some(extra.into_bytes()),
        )?;
        bytes.extend(proof.to_bytes());
    }
    let path = round_proof_path(dest);
    write_atomic(&path, &bytes, 0o644).map_err(io("writing", &path))?;
    ctx.progress.log_note(&format!(
        "round {}: receipt logged at index {index}; proofs in {}",
        ctx.round,
        path.display()
    ));
    Ok(())
}
