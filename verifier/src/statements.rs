//! The statements logged beside rounds (content/transparency-log.md, Entry kinds): each
//! read from `<campaign>/statements/<kind>/<sha256>.dsse.json`, its digest and the
//! evaluator's signature checked. A round's `measurement` entries, one per pass, must
//! name every file its pass rows cite, in pass order, between its round-opened and
//! receipt entries (`log.measurements`, [`check_measurements`]); an archive's logged
//! submissions must each be in a round, rejected with a logged rejection, a duplicate of
//! one, or still queued, and each round must take exactly the queued submissions logged
//! before it opened (`log.submissions`, [`submission_findings`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use receipts::dsse::Envelope;
use receipts::fsutil::read_limited;
use receipts::keys::Keyring;
use receipts::layout::DataDir;
use receipts::model::{
    CampaignId, EventKind, PipelineState, RoundRecord, Sha256Hex, Submission, Timestamp,
};
use receipts::rules::redaction::withheld_bytes;
use receipts::statement::{Statement, Subject};
use receipts::tlog::entry::{EntryKind, LogEntry};
use receipts::tlog::note::NoteVerifier;
use receipts::tlog::proof::TlogProof;
use receipts::tlog::statements::{
    GATE_REJECTION_PREDICATE_TYPE, GateRejectionPredicate, MAX_STATEMENT_BYTES,
    MEASUREMENT_PREDICATE_TYPE, MeasurementPredicate, STATEMENTS_DIR, SUBMISSION_PREDICATE_TYPE,
    SubmissionPredicate, parse_measurement_proof_extra, statement_path,
};
use serde::de::DeserializeOwned;

use crate::{CheckName, FailureReason, PredicateVersion, VerifyReport};

/// The first round predicate version whose logged rounds log their passes: an older
/// logged round without measurement entries is `not applicable`.
pub const MEASUREMENTS_LOGGED_FROM: PredicateVersion = PredicateVersion::V6;

/// A statement read and checked: its subjects and typed predicate.
pub(crate) struct Read<P> {
    pub(crate) subject: Vec<Subject>,
    pub(crate) predicate: P,
}

/// Reads the `kind` statement with envelope digest `sha` of the campaign in
/// `campaign_dir`: the file's bytes hash to `sha`, the Statement has type
/// `predicate_type` and parses as `P`, and a key of `keyring` valid at `at(&predicate)`
/// signed it. Errors: what is wrong, in words naming the file.
pub(crate) fn read_statement<P: DeserializeOwned>(
    campaign_dir: &Path,
    kind: EntryKind,
    sha: &Sha256Hex,
    predicate_type: &str,
    keyring: &Keyring,
    at: impl Fn(&P) -> Timestamp,
) -> Result<Read<P>, String> {
    let path = statement_path(campaign_dir, kind, sha);
    let name = path.display();
    let bytes = read_limited(&path, MAX_STATEMENT_BYTES).map_err(|e| format!("`{name}`: {e}"))?;
    if Sha256Hex::digest(&bytes) != *sha {
        return Err(format!("`{name}` does not hash to the logged digest"));
    }
    let envelope =
        Envelope::from_json(&bytes, MAX_STATEMENT_BYTES).map_err(|e| format!("`{name}`: {e}"))?;
    let statement: Statement =
        receipts::canonical::from_slice_strict(&envelope.payload, MAX_STATEMENT_BYTES)
            .map_err(|e| format!("`{name}`: its Statement: {e}"))?;
    if statement.predicate_type != predicate_type {
        return Err(format!(
            "`{name}` has predicate type `{}`, not `{predicate_type}`",
            statement.predicate_type
        ));
    }
    let predicate: P = serde_json::from_value(statement.predicate)
        .map_err(|e| format!("`{name}`: its predicate: {e}"))?;
    let when = at(&predicate);
    let keys: Vec<_> = (keyring.keys().iter())
        .filter(|k| k.is_valid_at(when))
        .map(|k| k.key.clone())
        .collect();
    envelope
        .verify(&keys, 1)
        .map_err(|e| format!("`{name}`: no evaluator key valid at {when} signed it ({e})"))?;
    Ok(Read {
        subject: statement.subject,
        predicate,
    })
}

/// The campaign directory of the bundle `<data>/<campaign>/rounds/<n>`.
pub fn campaign_dir_of(bundle: &Path) -> Option<&Path> {
    bundle.parent()?.parent()
}

/// `log.measurements` of the round bundle `dir` whose record is `record`: each
/// measurement proof of its `rounds/<n>.proof` (`measurement <pass> <sha256>`) proves
/// the entry rebuilt from its statement in the log (`log`), between the round-opened
/// entry (`opened` index) and the receipt's (`receipt` index, when proved), in pass
/// order, every pass whose rows cite a file having one; the statements (when the bundle
/// lies beside its campaign's `statements/`; else that part is `not applicable`, target
/// `files`) name every file the pass rows cite with the digest the bundle holds (a file
/// withheld for key material excepted: `secret.withheld` covers it). A round before
/// [`MEASUREMENTS_LOGGED_FROM`] without measurement proofs is not applicable.
#[allow(clippy::too_many_arguments)]
pub fn check_measurements(
    report: &mut VerifyReport,
    dir: &Path,
    record: &RoundRecord,
    version: Option<PredicateVersion>,
    proofs: &[TlogProof],
    log: &NoteVerifier,
    keyring: &Keyring,
    opened: u64,
    receipt: Option<u64>,
) {
    let mut cited: BTreeMap<u32, BTreeSet<&str>> = BTreeMap::new();
    for row in record.entries.iter().flat_map(|e| &e.passes) {
        let files = [row.probe_log.as_deref(), row.engine_log.as_deref()];
        cited
            .entry(row.pass)
            .or_default()
            .extend(files.into_iter().flatten());
    }
    cited.retain(|_, files| !files.is_empty());
    let measured: Vec<(u32, Sha256Hex, &TlogProof)> = (proofs.iter())
        .filter_map(|p| {
            let (pass, sha) = parse_measurement_proof_extra(p.extra.as_deref()?)?;
            Some((pass, sha, p))
        })
        .collect();
    if measured.is_empty() {
        if cited.is_empty() {
            report.not_applicable(CheckName::LogMeasurements, None, "no pass row cites a file");
            return;
        }
        if version.is_none_or(|v| v < MEASUREMENTS_LOGGED_FROM) {
            report.not_applicable(
                CheckName::LogMeasurements,
                None,
                "passes not logged before round v6",
            );
            return;
        }
    }
    // The statements, when the bundle lies in its campaign's `rounds/` beside them; a
    // bundle downloaded with its proofs alone proves its entries and their order, not
    // what they name.
    let statements = campaign_dir_of(dir).filter(|c| c.join(STATEMENTS_DIR).is_dir());
    let mut findings = Vec::new();
    let mut logged: Vec<(u64, u32, Option<Vec<Subject>>)> = Vec::new();
    for (pass, sha, proof) in measured {
        let entry = LogEntry {
            campaign: record.campaign.id.clone(),
            round: Some(record.round),
            kind: EntryKind::Measurement,
            envelope_sha256: sha,
        };
        let verified = entry
            .leaf_hash()
            .map_err(|e| e.to_string())
            .and_then(|leaf| proof.verify(&leaf, log).map_err(|e| e.to_string()));
        if let Err(message) = verified {
            findings.push(format!("pass {pass}'s measurement entry: {message}"));
            continue;
        }
        if proof.index <= opened || receipt.is_some_and(|r| proof.index >= r) {
            findings.push(format!(
                "pass {pass}'s measurement entry is at index {}, outside the round's entries (round-opened at {opened}{})",
                proof.index,
                receipt.map_or(String::new(), |r| format!(", receipt at {r}"))
            ));
        }
        let subject = match statements {
            None => None,
            Some(campaign_dir) => match read_statement::<MeasurementPredicate>(
                campaign_dir,
                EntryKind::Measurement,
                &sha,
                MEASUREMENT_PREDICATE_TYPE,
                keyring,
                |_| record.ended_at,
            ) {
                Ok(read) => {
                    let p = &read.predicate;
                    if p.campaign != record.campaign.id || p.round != record.round || p.pass != pass
                    {
                        findings.push(format!(
                            "the statement {sha} is of `{}` round {} pass {}, its proof says pass {pass} of this round",
                            p.campaign, p.round, p.pass
                        ));
                    }
                    Some(read.subject)
                }
                Err(message) => {
                    findings.push(message);
                    Some(Vec::new())
                }
            },
        };
        logged.push((proof.index, pass, subject));
    }
    logged.sort_by_key(|(index, _, _)| *index);
    for pair in logged.windows(2) {
        if pair[1].1 < pair[0].1 {
            findings.push(format!(
                "pass {}'s measurement entry (index {}) comes after pass {}'s (index {}): not in pass order",
                pair[1].1, pair[1].0, pair[0].1, pair[0].0
            ));
        }
    }
    for (pass, files) in &cited {
        let of_pass: Vec<&Option<Vec<Subject>>> = (logged.iter())
            .filter(|(_, p, _)| p == pass)
            .map(|(_, _, s)| s)
            .collect();
        if of_pass.is_empty() {
            findings.push(format!("pass {pass} has no measurement entry in the log"));
            continue;
        }
        let subjects: Vec<&Subject> = of_pass.iter().copied().flatten().flatten().collect();
        if statements.is_none() {
            continue;
        }
        for file in files {
            let path = dir.join(file);
            let Ok(bytes) = read_limited(&path, receipts::bundle::MAX_ENVELOPE_BYTES) else {
                findings.push(format!("pass {pass} cites `{file}`, which cannot be read"));
                continue;
            };
            if withheld_bytes(&bytes).is_some() {
                continue;
            }
            let digest = Sha256Hex::digest(&bytes);
            match subjects.iter().find(|s| s.name == *file) {
                None => findings.push(format!(
                    "pass {pass} cites `{file}`, which its measurement entries do not name"
                )),
                Some(s) if s.digest.sha256 != digest => findings.push(format!(
                    "`{file}` was logged in pass {pass} with sha256 {}, the bundle holds {digest}",
                    s.digest.sha256
                )),
                Some(_) => {}
            }
        }
    }
    if findings.is_empty() {
        report.pass(CheckName::LogMeasurements, None);
    }
    for finding in findings {
        report.fail(CheckName::LogMeasurements, None, failure(dir, finding));
    }
    if statements.is_none() {
        report.not_applicable(
            CheckName::LogMeasurements,
            Some("files".to_owned()),
            "no `statements/` beside the bundle: verify it in its data directory",
        );
    }
}

fn failure(file: &Path, message: impl ToString) -> FailureReason {
    FailureReason::Log {
        file: file.display().to_string(),
        message: message.to_string(),
    }
}

/// One round of a campaign as the submission check reads it.
pub struct RoundTaking<'a> {
    /// The round number.
    pub round: u64,
    /// The index of its round-opened entry.
    pub opened: u64,
    /// When it started.
    pub started_at: Timestamp,
    /// The submissions it took (its challengers' records).
    pub challengers: &'a [Sha256Hex],
}

/// The `log.submissions` findings of campaign `campaign` (directory `campaign_dir`): its
/// `submission` and `gate-rejection` entries (`entries`, with their indices, in log
/// order) against its logged rounds (`rounds`). Every logged record is in a round that
/// opened after it was logged, rejected by a logged rejection, or still waiting (its
/// record in a state before a round); several commitments of one record are duplicates
/// of its first. A round opened after the campaign's first submission entry takes only
/// records logged before it opened, and every record logged before it opened, not
/// rejected then, not taken by an earlier round and queued (`bench_queued`) when it
/// started. Each finding is a sentence; none: the check passes.
pub fn submission_findings(
    campaign: &CampaignId,
    campaign_dir: &Path,
    entries: &[(u64, LogEntry)],
    rounds: &[RoundTaking<'_>],
    keyring: &Keyring,
) -> Vec<String> {
    let mut findings = Vec::new();
    // Each record's first commitment index, and each rejection's index.
    let mut logged: BTreeMap<Sha256Hex, (u64, String)> = BTreeMap::new();
    let mut rejected: BTreeMap<Sha256Hex, u64> = BTreeMap::new();
    for (index, entry) in entries.iter().filter(|(_, e)| &e.campaign == campaign) {
        match entry.kind {
            EntryKind::Submission => match read_statement::<SubmissionPredicate>(
                campaign_dir,
                entry.kind,
                &entry.envelope_sha256,
                SUBMISSION_PREDICATE_TYPE,
                keyring,
                |p| p.committed_at,
            ) {
                Ok(read) => {
                    logged
                        .entry(read.predicate.record)
                        .or_insert((*index, read.predicate.miner.to_string()));
                }
                Err(message) => findings.push(format!("submission entry {index}: {message}")),
            },
            EntryKind::GateRejection => match read_statement::<GateRejectionPredicate>(
                campaign_dir,
                entry.kind,
                &entry.envelope_sha256,
                GATE_REJECTION_PREDICATE_TYPE,
                keyring,
                |p| p.rejected_at,
            ) {
                Ok(read) => {
                    rejected.entry(read.predicate.record).or_insert(*index);
                }
                Err(message) => findings.push(format!("gate-rejection entry {index}: {message}")),
            },
            _ => {}
        }
    }
    let Some(first) = logged.values().map(|(i, _)| *i).min() else {
        return findings;
    };
    let records = campaign_dir
        .parent()
        .map(|data| DataDir::new(data).campaign(campaign));
    let record =
        |sha: &Sha256Hex| -> Option<Submission> { records.as_ref()?.load_submission(sha).ok() };
    for (sha, (index, miner)) in &logged {
        let in_round = rounds
            .iter()
            .any(|r| r.opened > *index && r.challengers.contains(sha));
        let was_rejected = rejected.get(sha).is_some_and(|r| r > index);
        let waiting = record(sha).is_some_and(|s| waiting_for_a_round(s.state));
        if !(in_round || was_rejected || waiting) {
            findings.push(format!(
                "submission {sha} (logged at index {index}, miner `{miner}`) is in no round, has no logged gate rejection and is not waiting for a round"
            ));
        }
    }
    let mut taken: BTreeSet<Sha256Hex> = BTreeSet::new();
    let mut ordered: Vec<&RoundTaking<'_>> = rounds.iter().collect();
    ordered.sort_by_key(|r| r.opened);
    for round in ordered.into_iter().filter(|r| r.opened > first) {
        for sha in round.challengers {
            if logged.get(sha).is_none_or(|(i, _)| *i > round.opened) {
                findings.push(format!(
                    "round {} took submission {sha}, which was not logged before its round-opened entry (index {})",
                    round.round, round.opened
                ));
            }
        }
        for (sha, (index, _)) in &logged {
            let before = *index < round.opened;
            let rejected_before = rejected.get(sha).is_some_and(|r| *r < round.opened);
            if !before || rejected_before || taken.contains(sha) || round.challengers.contains(sha)
            {
                continue;
            }
            if record(sha).is_some_and(|s| queued_at(&s, round.started_at)) {
                findings.push(format!(
                    "round {} did not take submission {sha}, logged at index {index} and queued when it started",
                    round.round
                ));
            }
        }
        taken.extend(round.challengers.iter().copied());
    }
    findings
}

/// Whether a record in `state` has not reached a round yet: a state up to `bench_queued`
/// (content/submitting.md, Pipeline).
fn waiting_for_a_round(state: PipelineState) -> bool {
    let position = |s: PipelineState| PipelineState::ALL.iter().position(|x| *x == s);
    position(state) <= position(PipelineState::BenchQueued)
}

/// Whether `submission`'s state at `at`, by its recorded transitions, was `bench_queued`.
fn queued_at(submission: &Submission, at: Timestamp) -> bool {
    submission
        .events
        .iter()
        .filter(|e| e.at <= at)
        .filter_map(|e| match e.kind {
            EventKind::Transition { to, .. } => Some(to),
            _ => None,
        })
        .next_back()
        == Some(PipelineState::BenchQueued)
}

#[cfg(test)]
mod tests {
    use receipts::bundle::sign_statement;
    use receipts::fsutil::write_atomic;
    use receipts::keys::PrivateKey;
    use receipts::model::{Gate, MinerId};
    use receipts::tlog::statements::submission_subject;

    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_unix_seconds(1_800_000_000 + seconds).expect("time")
    }

    /// Signs and stores a statement of `kind` in `campaign_dir`; its log entry.
    fn logged<P: serde::Serialize>(
        campaign_dir: &Path,
        key: &PrivateKey,
        kind: EntryKind,
        record: &Sha256Hex,
        predicate_type: &str,
        predicate: &P,
    ) -> LogEntry {
        let statement = Statement::new(
            vec![submission_subject(record, record)],
            predicate_type,
            serde_json::to_value(predicate).expect("value"),
        );
        let bytes = sign_statement(&statement, &[key])
            .expect("sign")
            .to_file_bytes()
            .expect("bytes");
        let sha = Sha256Hex::digest(&bytes);
        let path = statement_path(campaign_dir, kind, &sha);
        std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
        write_atomic(&path, &bytes, 0o644).expect("write");
        LogEntry {
            campaign: "c".parse().expect("id"),
            round: None,
            kind,
            envelope_sha256: sha,
        }
    }

    fn submission(
        campaign_dir: &Path,
        key: &PrivateKey,
        record: &Sha256Hex,
        miner: &str,
        committed: i64,
    ) -> LogEntry {
        logged(
            campaign_dir,
            key,
            EntryKind::Submission,
            record,
            SUBMISSION_PREDICATE_TYPE,
            &SubmissionPredicate {
                campaign: "c".parse().expect("id"),
                miner: miner.parse().expect("miner"),
                commitment: record.to_string(),
                record: *record,
                committed_at: at(committed),
                repository: None,
            },
        )
    }

    /// A record queued at `queued`, written where the check reads it.
    fn queued_record(campaign_dir: &Path, record: &Sha256Hex, queued: i64) {
        let mut s = Submission::committed(
            *record,
            "c".parse().expect("id"),
            "m".parse::<MinerId>().expect("miner"),
            *record,
            1,
            at(queued - 1),
        );
        for to in [
            PipelineState::PickedUp,
            PipelineState::Fetched,
            PipelineState::Verified,
            PipelineState::SurfaceOk,
            PipelineState::Applied,
            PipelineState::Building,
            PipelineState::Built,
        ] {
            s.transition(to, at(queued - 1), "gate")
                .expect("transition");
        }
        s.transition(PipelineState::BenchQueued, at(queued), "queued")
            .expect("queued");
        let path = campaign_dir
            .join("submissions")
            .join(format!("{record}.json"));
        std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
        std::fs::write(&path, serde_json::to_vec(&s).expect("json")).expect("write");
    }

    /// A record taken by a round, rejected by a logged rejection, a duplicate, one still
    /// queued: accounted. A round that took one not logged before it opened, and left out
    /// one logged and queued before it started: two findings.
    #[test]
    fn every_logged_submission_is_accounted_for_and_rounds_take_exactly_the_queued_ones() {
        let data = tempfile::tempdir().expect("tempdir");
        let campaign_dir = data.path().join("c");
        let key = PrivateKey::from_seed(&[5; 32]);
        let keyring = testkit::keyring(&[&key]);
        let [a, b, c, d] = [b"a", b"b", b"c", b"d"].map(|x| Sha256Hex::digest(x));
        let rejection = logged(
            &campaign_dir,
            &key,
            EntryKind::GateRejection,
            &b,
            GATE_REJECTION_PREDICATE_TYPE,
            &GateRejectionPredicate {
                campaign: "c".parse().expect("id"),
                record: b,
                gate: Gate::Applied,
                reason: "does not apply".to_owned(),
                rejected_at: at(3),
            },
        );
        let entries = vec![
            (0, submission(&campaign_dir, &key, &a, "m", 0)),
            (1, submission(&campaign_dir, &key, &b, "m", 1)),
            (3, rejection),
            (4, submission(&campaign_dir, &key, &c, "m", 4)),
            (5, submission(&campaign_dir, &key, &c, "n", 5)),
        ];
        queued_record(&campaign_dir, &c, 4);
        let first = [a];
        let second = [d];
        let rounds = [
            RoundTaking {
                round: 1,
                opened: 2,
                started_at: at(2),
                challengers: &first,
            },
            RoundTaking {
                round: 2,
                opened: 6,
                started_at: at(6),
                challengers: &second,
            },
        ];
        let campaign: CampaignId = "c".parse().expect("id");
        let findings = submission_findings(&campaign, &campaign_dir, &entries, &rounds, &keyring);
        assert_eq!(
            findings,
            [
                format!(
                    "round 2 took submission {d}, which was not logged before its round-opened entry (index 6)"
                ),
                format!(
                    "round 2 did not take submission {c}, logged at index 4 and queued when it started"
                ),
            ]
        );
        // Signed by a key the keyring does not trust: each statement is a finding.
        let other = testkit::keyring(&[&PrivateKey::from_seed(&[6; 32])]);
        let findings = submission_findings(&campaign, &campaign_dir, &entries, &[], &other);
        assert_eq!(findings.len(), 5, "{findings:?}");
        assert!(
            findings[0].starts_with("submission entry 0: "),
            "{findings:?}"
        );
    }
}
