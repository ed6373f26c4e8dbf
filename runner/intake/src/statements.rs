//! Statements logged as they happen (content/transparency-log.md, Entry kinds): each is
//! signed by the evaluator key into a DSSE envelope, stored under
//! `<campaign>/statements/<kind>/<sha256>.dsse.json` ([`statement_path`]) and appended to
//! the data directory's log as `{campaign, round?, kind, envelopeSha256}`. Signing is
//! deterministic (Ed25519) and the payload canonical, so logging the same statement again
//! (a resumed round, an ingest that re-logs a record's history) finds its entry instead of
//! appending a second one.

use std::fs;

use receipts::bundle::sign_statement;
use receipts::fsutil::{IoError, write_atomic};
use receipts::keys::PrivateKey;
use receipts::layout::CampaignDir;
use receipts::model::{EventKind, PipelineState, Sha256Hex, Submission};
use receipts::statement::{Statement, Subject};
use receipts::tlog::entry::{EntryKind, LogEntry};
use receipts::tlog::statements::{
    GATE_REJECTION_PREDICATE_TYPE, GateRejectionPredicate, SUBMISSION_PREDICATE_TYPE,
    SubmissionPredicate, statement_path, submission_subject,
};
use serde::Serialize;

use crate::tlog::{LogError, LogStore};

/// Errors of logging a statement.
#[derive(Debug, thiserror::Error)]
pub enum StatementError {
    /// The log refused the append (its lock, its key, a damaged tile).
    #[error(transparent)]
    Log(#[from] LogError),
    /// Writing the statement file failed.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The statement does not serialize, or there is no key to sign it.
    #[error("signing the {kind} statement: {message}")]
    Sign {
        /// The entry kind.
        kind: &'static str,
        /// Why.
        message: String,
    },
}

/// A statement logged: where its entry is and which envelope it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Logged {
    /// The entry's index in the log.
    pub index: u64,
    /// SHA-256 of the envelope file.
    pub envelope_sha256: Sha256Hex,
}

/// The data directory's log with the two keys a statement needs: the evaluator's, which
/// signs it, and the log's, which appends its entry.
pub struct StatementLog<'k> {
    store: &'k LogStore,
    evaluator: &'k PrivateKey,
    log_key: &'k PrivateKey,
}

impl<'k> StatementLog<'k> {
    /// The log `store`, signing statements with `evaluator` and appending with `log_key`.
    ///
    /// Errors: [`LogError::WrongKey`] when `log_key` is not the log's key.
    pub fn new(
        store: &'k LogStore,
        evaluator: &'k PrivateKey,
        log_key: &'k PrivateKey,
    ) -> Result<Self, LogError> {
        store.verifier(log_key.public())?;
        Ok(Self {
            store,
            evaluator,
            log_key,
        })
    }

    /// The log.
    pub fn store(&self) -> &LogStore {
        self.store
    }

    /// Signs the statement of `subject` and `predicate` (of type `predicate_type`), stores
    /// its envelope under `campaign_dir` and logs it once under `kind` (and `round`).
    ///
    /// Errors: [`StatementError::Sign`]; [`StatementError::Io`]; [`StatementError::Log`].
    pub fn log<P: Serialize>(
        &self,
        campaign_dir: &CampaignDir,
        kind: EntryKind,
        round: Option<u64>,
        subject: Vec<Subject>,
        predicate_type: &str,
        predicate: &P,
    ) -> Result<Logged, StatementError> {
        let sign = |message: String| StatementError::Sign {
            kind: kind.as_str(),
            message,
        };
        let predicate = serde_json::to_value(predicate).map_err(|e| sign(e.to_string()))?;
        let statement = Statement::new(subject, predicate_type, predicate);
        let bytes = sign_statement(&statement, &[self.evaluator])
            .map_err(|e| sign(e.to_string()))?
            .to_file_bytes()
            .map_err(|e| sign(e.to_string()))?;
        let envelope_sha256 = Sha256Hex::digest(&bytes);
        let path = statement_path(campaign_dir.root(), kind, &envelope_sha256);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(IoError::at("creating", parent))?;
        }
        write_atomic(&path, &bytes, 0o644).map_err(IoError::at("writing", &path))?;
        let entry = LogEntry::for_envelope(campaign_dir.id().clone(), round, kind, &bytes)
            .to_bytes()
            .map_err(|e| sign(e.to_string()))?;
        let index = self.store.append_once(self.log_key, &entry)?;
        Ok(Logged {
            index,
            envelope_sha256,
        })
    }

    /// Logs what an ingest recorded in `submission`: a `submission` entry for its first
    /// commitment and for each duplicate commitment since, then, when it is rejected, a
    /// `gate-rejection` entry with the gate and the reason. Everything already logged is
    /// found, not appended again, so an ingest interrupted before it logged is repaired by
    /// the next ingest of the same bytes.
    ///
    /// Errors: as [`StatementLog::log`].
    pub fn log_submission(
        &self,
        campaign_dir: &CampaignDir,
        submission: &Submission,
    ) -> Result<Vec<Logged>, StatementError> {
        let subject = || vec![submission_subject(&submission.sha256, &submission.sha256)];
        let first = submission.events.first().map(|e| e.at);
        let commitments = first
            .map(|at| (submission.miner.clone(), submission.commitment, at))
            .into_iter()
            .chain(submission.events.iter().filter_map(|e| match &e.kind {
                EventKind::Duplicate { miner, commitment } => {
                    Some((miner.clone(), *commitment, e.at))
                }
                _ => None,
            }));
        let mut logged = Vec::new();
        for (miner, commitment, committed_at) in commitments {
            let predicate = SubmissionPredicate {
                campaign: submission.campaign.clone(),
                miner,
                commitment: match &submission.repository {
                    Some(repository) => repository.commitment.clone(),
                    None => commitment.to_string(),
                },
                record: submission.sha256,
                committed_at,
                repository: submission.repository.clone(),
            };
            logged.push(self.log(
                campaign_dir,
                EntryKind::Submission,
                None,
                subject(),
                SUBMISSION_PREDICATE_TYPE,
                &predicate,
            )?);
        }
        if submission.state == PipelineState::Rejected
            && let Some((gate, event)) = submission.events.iter().rev().find_map(|e| match e.kind {
                EventKind::Transition {
                    to: PipelineState::Rejected,
                    gate: Some(gate),
                    ..
                } => Some((gate, e)),
                _ => None,
            })
        {
            let predicate = GateRejectionPredicate {
                campaign: submission.campaign.clone(),
                record: submission.sha256,
                gate,
                reason: event.reason.clone(),
                rejected_at: event.at,
            };
            logged.push(self.log(
                campaign_dir,
                EntryKind::GateRejection,
                None,
                subject(),
                GATE_REJECTION_PREDICATE_TYPE,
                &predicate,
            )?);
        }
        Ok(logged)
    }
}

#[cfg(test)]
mod tests {
    use receipts::layout::DataDir;
    use receipts::model::{Gate, Timestamp};

    use super::*;

    /// A record's first commitment, its duplicate and its rejection are logged once each,
    /// in that order, each beside its signed statement; logging the record again appends
    /// nothing.
    #[test]
    fn a_record_is_logged_once_with_its_duplicates_and_rejection() {
        let data = tempfile::tempdir().expect("tempdir");
        let log_key = PrivateKey::from_seed(&[3; 32]);
        let evaluator = PrivateKey::from_seed(&[4; 32]);
        let store = LogStore::init(data.path(), "referee.example/log", &log_key).expect("log");
        let campaign_dir = DataDir::new(data.path()).campaign(&"c".parse().expect("id"));
        let at = |s: i64| Timestamp::from_unix_seconds(1_800_000_000 + s).expect("time");
        let sha = Sha256Hex::digest(b"diff");
        let mut submission = Submission::committed(
            sha,
            "c".parse().expect("id"),
            "m".parse().expect("miner"),
            sha,
            4,
            at(0),
        );
        submission
            .transition(PipelineState::PickedUp, at(1), "picked")
            .expect("transition");
        submission.record_duplicate("n".parse().expect("miner"), sha, at(2));
        for to in [
            PipelineState::Fetched,
            PipelineState::Verified,
            PipelineState::SurfaceOk,
        ] {
            submission
                .transition(to, at(3), "gate")
                .expect("transition");
        }
        submission
            .reject(Gate::Applied, at(4), "does not apply")
            .expect("reject");
        let log = StatementLog::new(&store, &evaluator, &log_key).expect("keys");
        let logged = log
            .log_submission(&campaign_dir, &submission)
            .expect("logged");
        assert_eq!(
            logged.iter().map(|l| l.index).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        assert_eq!(
            log.log_submission(&campaign_dir, &submission)
                .expect("again"),
            logged
        );
        let verifier = store.verifier(log_key.public()).expect("verifier");
        let entries: Vec<LogEntry> = (store.entries(&verifier).expect("entries").iter())
            .map(|e| receipts::canonical::from_slice_strict(e, 1 << 16).expect("entry"))
            .collect();
        assert_eq!(
            entries
                .iter()
                .map(|e| (e.kind, e.round))
                .collect::<Vec<_>>(),
            [
                (EntryKind::Submission, None),
                (EntryKind::Submission, None),
                (EntryKind::GateRejection, None)
            ]
        );
        for (entry, logged) in entries.iter().zip(&logged) {
            assert_eq!(entry.envelope_sha256, logged.envelope_sha256);
            let path = statement_path(campaign_dir.root(), entry.kind, &entry.envelope_sha256);
            let bytes = std::fs::read(&path).expect("statement stored");
            assert_eq!(Sha256Hex::digest(&bytes), entry.envelope_sha256);
        }
        // The log key must be the log's.
        assert!(matches!(
            StatementLog::new(&store, &evaluator, &evaluator),
            Err(LogError::WrongKey { .. })
        ));
    }
}
