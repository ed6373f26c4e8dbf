//! What the site is built from: every campaign of a data directory with its sealed rounds,
//! each verified as of its own seal time, and the evaluator's unsigned local records.
//!
//! The types are plain values so page models can be built and tested without files.
//! The loader (`load_archive`) builds them; they are the contract between the loader
//! and the page builders.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use receipts::model::{
    CampaignId, EntryStatus, FrozenCampaign, Leader, MinerId, MinerRegistry, PipelineState, Role,
    RoundRecord, RoundStatus, Sha256Hex, Submission, Timestamp,
};
use receipts::statement::Subject;
use verifier::publication::PublicationWitness;
use verifier::tlog::LogLink;
use verifier::view::{Headline, RoundView};
use verifier::{CheckName, FailureReason, VerifyReport};

use crate::error::SiteError;
use crate::paths::EntrySlug;

/// Everything the site renders.
#[derive(Clone, Debug)]
pub struct Archive {
    /// Campaigns, sorted by id.
    pub campaigns: Vec<CampaignArchive>,
    /// Bundles that failed verification: listed on the rejected page, never rendered as
    /// official.
    pub rejected: Vec<RejectedBundle>,
    /// The trusted keyring's bytes as read (published at `/keys/keyring.json`).
    pub keyring_json: Vec<u8>,
    /// The data directory's transparency log: served under `/log/` when it verified.
    pub log: crate::tlog::LogState,
}

/// One campaign and what the data directory holds for it.
#[derive(Clone, Debug)]
pub struct CampaignArchive {
    /// The campaign id.
    pub id: CampaignId,
    /// The frozen campaign (`campaign.json`).
    pub campaign: FrozenCampaign,
    /// Rounds whose bundle verified, by round number ascending: what the pages across
    /// rounds read of each (its record and view are loaded again for its own pages,
    /// `site::load::load_round`).
    pub rounds: Vec<RoundListing>,
    /// What the pages across submissions read of the evaluator's unsigned submission
    /// records, by patch sha256 (unsigned: pages built from them say so); a record's
    /// events are read again for its own page ([`SubmissionSummary::load`]).
    pub submissions: Vec<SubmissionSummary>,
    /// The evaluator's unsigned miner registry.
    pub miners: MinerRegistry,
    /// The title its verified rounds and revocations derive (content/title.md): `None`
    /// before a round verified; `Err` with the reason when the chain breaks the rules.
    pub title: Option<Result<verifier::title::DerivedTitle, String>>,
}

/// What the index, miner pages and job keys read of one submission record, and where
/// to read the whole record again for its own page: a few hundred bytes where a record
/// with its events is kilobytes, so a build holds one per record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubmissionSummary {
    /// sha256 of the diff ([`Submission::sha256`]).
    pub sha256: Sha256Hex,
    /// The campaign it was committed to.
    pub campaign: CampaignId,
    /// The miner whose commitment came first.
    pub miner: MinerId,
    /// Its pipeline state.
    pub state: PipelineState,
    /// When its first event happened (its commitment); `None` for a record without events.
    pub committed_at: Option<Timestamp>,
    /// The record file (`submissions/<sha256>.json`).
    pub path: PathBuf,
    /// sha256 of the record file's bytes as read: its page's key, and what
    /// [`SubmissionSummary::load`] checks the file against.
    pub file_sha256: Sha256Hex,
}

impl SubmissionSummary {
    /// The summary of `record`, read from `path` as `bytes`.
    pub fn of(path: &Path, bytes: &[u8], record: &Submission) -> Self {
        Self {
            sha256: record.sha256,
            campaign: record.campaign.clone(),
            miner: record.miner.clone(),
            state: record.state,
            committed_at: record.events.first().map(|e| e.at),
            path: path.to_owned(),
            file_sha256: Sha256Hex::digest(bytes),
        }
    }

    /// The whole record, read again from [`SubmissionSummary::path`].
    ///
    /// Errors: [`SiteError::RecordChanged`] when the file no longer reads, its bytes are
    /// not the ones summarised (sha256 [`SubmissionSummary::file_sha256`]) or it no
    /// longer parses.
    pub fn load(&self) -> Result<Submission, SiteError> {
        let changed = |message: String| SiteError::RecordChanged {
            path: self.path.clone(),
            message,
        };
        let bytes = std::fs::read(&self.path).map_err(|e| changed(e.to_string()))?;
        let digest = Sha256Hex::digest(&bytes);
        if digest != self.file_sha256 {
            return Err(changed(format!(
                "its sha256 is {digest}, {} when it was first read",
                self.file_sha256
            )));
        }
        receipts::layout::parse_json(&self.path, &bytes).map_err(|e| changed(e.to_string()))
    }
}

/// A sealed round whose bundle verified.
#[derive(Clone, Debug)]
pub struct VerifiedRound {
    /// Round number within the campaign, from 1.
    pub number: u64,
    /// The bundle directory (its files are read for histograms, probes, diffs, logs).
    pub dir: PathBuf,
    /// The round predicate.
    pub record: RoundRecord,
    /// The view-model `referee show` renders (what verification said is its
    /// `verification`).
    pub view: RoundView,
    /// The bundle files, by bundle-relative name, that a passed `subject` check covers
    /// and no `subject` check failed for, each with the sha256 the signed Statement
    /// records for it: what the pages need of the report beyond the view, which is not
    /// kept (757 checks a round of the demo's size).
    pub verified_files: BTreeMap<String, Sha256Hex>,
    /// sha256 of the Statement bytes (the next round's `previousReceipt`); it covers
    /// every file of the bundle, so it keys the pages built from it.
    pub statement_digest: Sha256Hex,
    /// The instant key validity was checked at: `--at`, the earliest witness cosignature
    /// on its receipt's log checkpoint, or its `endedAt` ([`AsOf`]).
    pub verified_at: Timestamp,
    /// Why that instant.
    pub as_of: AsOf,
}

/// Why a bundle's keys were checked as of the instant they were (content/transparency-
/// log.md, Witnesses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AsOf {
    /// `site build --at`.
    Given,
    /// The earliest cosignature, by a witness its campaign counts, on a checkpoint of its
    /// `rounds/<n>.proof` that holds its receipt.
    Witnessed(PublicationWitness),
    /// Its own `endedAt`: no witness dates it.
    NotWitnessed,
}

impl AsOf {
    /// In words, for the pages: `the earliest witness cosignature on its receipt's log
    /// checkpoint (witness.example, checkpoint of 3 entries)`, `its own endedAt: time not
    /// witnessed` or `given with --at`. The witness's name is untrusted text: the pages
    /// escape it.
    pub fn describe(&self) -> String {
        match self {
            AsOf::Given => "given with --at".to_owned(),
            AsOf::Witnessed(w) => format!(
                "the earliest witness cosignature on its receipt's log checkpoint ({}, checkpoint of {} entries)",
                w.name, w.checkpoint_size
            ),
            AsOf::NotWitnessed => format!(
                "its own endedAt: {}",
                verifier::publication::TIME_NOT_WITNESSED
            ),
        }
    }
}

impl VerifiedRound {
    /// The round numbered `number` of the bundle `dir`, its record `record` (whose
    /// Statement's sha256 is `statement_digest` and whose subjects are `subjects`)
    /// verified as of `verified_at` with the report `report` (which passed): its view
    /// built from them, and of the report only what [`VerifiedRound::verified_files`]
    /// holds.
    pub fn new(
        number: u64,
        dir: &Path,
        record: RoundRecord,
        report: &VerifyReport,
        subjects: &[Subject],
        statement_digest: Sha256Hex,
        verified_at: Timestamp,
    ) -> Self {
        let view = RoundView::from_record(dir, &record, report);
        Self {
            number,
            dir: dir.to_owned(),
            record,
            view,
            verified_files: verified_files(report, subjects),
            statement_digest,
            verified_at,
            as_of: AsOf::NotWitnessed,
        }
    }

    /// Whether the bundle file `name` (bundle-relative) is covered by a passed `subject`
    /// check and no such check failed, in a report that passed.
    pub fn file_verified(&self, name: &str) -> bool {
        self.verified_files.contains_key(name)
    }

    /// The bundle file `name` (bundle-relative) parsed as `T`: a verified file
    /// ([`VerifiedRound::file_verified`]) only if its bytes still hash to its signed
    /// digest ([`verifier::read_signed_bundle_json`]), any other strictly as the verifier
    /// reads it ([`verifier::read_bundle_json`]).
    ///
    /// Errors: [`FailureReason::ArtifactUnreadable`] naming the file, from either.
    pub fn read_json<T: serde::de::DeserializeOwned>(
        &self,
        name: &str,
    ) -> Result<T, FailureReason> {
        match self.verified_files.get(name) {
            Some(sha256) => verifier::read_signed_bundle_json(&self.dir, name, sha256),
            None => verifier::read_bundle_json(&self.dir, name),
        }
    }

    /// The bytes of the bundle file `name` (bundle-relative), at most `limit`: a verified
    /// file only if they still hash to its signed digest
    /// ([`verifier::read_signed_bundle_bytes`]), any other as they are
    /// ([`verifier::read_bundle_bytes`]).
    ///
    /// Errors: [`FailureReason::ArtifactUnreadable`] naming the file, from either.
    pub fn read_bytes(&self, name: &str, limit: usize) -> Result<Vec<u8>, FailureReason> {
        match self.verified_files.get(name) {
            Some(sha256) => verifier::read_signed_bundle_bytes(&self.dir, name, sha256, limit),
            None => verifier::read_bundle_bytes(&self.dir, name, limit),
        }
    }

    /// The last `keep` bytes of the bundle file `name` (bundle-relative): of a verified
    /// file only if its whole bytes still hash to its signed digest
    /// ([`verifier::read_signed_bundle_tail`]), of any other as it is
    /// ([`verifier::read_bundle_tail`]).
    ///
    /// Errors: [`FailureReason::ArtifactUnreadable`] naming the file, from either.
    pub fn read_tail(&self, name: &str, keep: u64) -> Result<Vec<u8>, FailureReason> {
        match self.verified_files.get(name) {
            Some(sha256) => verifier::read_signed_bundle_tail(&self.dir, name, sha256, keep),
            None => verifier::read_bundle_tail(&self.dir, name, keep),
        }
    }
}

/// The bundle files of `report`, by bundle-relative name, that a passed `subject` check
/// covers and no `subject` check failed for, each with its sha256 in `subjects` (the
/// Statement's); none when the report did not pass.
pub fn verified_files(report: &VerifyReport, subjects: &[Subject]) -> BTreeMap<String, Sha256Hex> {
    if !report.passed() {
        return BTreeMap::new();
    }
    let checks = || {
        (report.checks.iter())
            .filter(|c| c.name == CheckName::Subject)
            .filter_map(|c| Some((c.target.as_deref()?, c.passed)))
    };
    let failed: BTreeSet<&str> = checks().filter(|(_, ok)| !ok).map(|(t, _)| t).collect();
    let passed: BTreeSet<&str> = checks()
        .filter(|(t, ok)| *ok && !failed.contains(t))
        .map(|(t, _)| t)
        .collect();
    subjects
        .iter()
        .filter(|s| passed.contains(s.name.as_str()))
        .map(|s| (s.name.clone(), s.digest.sha256))
        .collect()
}

/// What the pages and files across rounds (index, campaign, miner, submission, feed,
/// `api/index.json`, the sitemap, a round page's "since the previous round") read of one
/// verified round, and what its own pages need to load it again: a few KB where its
/// record and view are hundreds, so a build holds one per round.
#[derive(Clone, Debug)]
pub struct RoundListing {
    /// Round number within the campaign, from 1.
    pub number: u64,
    /// The bundle directory.
    pub dir: PathBuf,
    /// sha256 of the Statement bytes ([`VerifiedRound::statement_digest`]).
    pub statement_digest: Sha256Hex,
    /// The instant key validity was checked at ([`VerifiedRound::verified_at`]).
    pub verified_at: Timestamp,
    /// Why that instant ([`VerifiedRound::as_of`]).
    pub as_of: AsOf,
    /// The predicate type its verification read (`view.verification.predicateType`).
    pub predicate_type: Option<String>,
    /// `outcome.status` of its record.
    pub status: RoundStatus,
    /// `startedAt` of its record.
    pub started_at: Timestamp,
    /// `endedAt` of its record (its seal time).
    pub ended_at: Timestamp,
    /// `outcome.leaderBefore` of its record (`None`: the baseline).
    pub leader_before: Option<Leader>,
    /// `outcome.leaderAfter` of its record (`None`: the baseline).
    pub leader_after: Option<Leader>,
    /// `outcome.changed` of its record.
    pub changed: bool,
    /// Its view's headline (status, seat after, seat changed, top score, counts,
    /// decision), as `referee show` rows give it.
    pub headline: Headline,
    /// Its view's `settledInMs`: `startedAt` to `endedAt`, ms.
    pub settled_in_ms: i64,
    /// When the holder of its seat after it took that seat ([`set_seats`]): the latest
    /// verified round up to this one whose seat changed to that holder; `None` for the
    /// baseline holding it since the campaign began.
    pub seated: Option<SeatTaken>,
    /// Its entries, in record order.
    pub entries: Vec<EntrySummary>,
    /// What the transparency log check reads of its record.
    pub log: LogLink,
    /// Its checks across rounds alone (no own check): added to its view's
    /// `verification` when it is loaded again.
    pub chain: VerifyReport,
    /// The verdict cache key its own checks are kept under in this build's verdicts
    /// (`site::verdicts`), when they are (else the build holds them in memory): its
    /// report is read back (`site::incremental::OwnChecks::recall`), never verified
    /// again.
    pub verdict_key: Option<Sha256Hex>,
}

/// One entry of a [`RoundListing`].
#[derive(Clone, Debug)]
pub struct EntrySummary {
    /// Its `index`.
    pub index: u32,
    /// Its slug (`baseline`, `incumbent-<miner>`, `candidate-<k>-<miner>`).
    pub slug: EntrySlug,
    /// Its role.
    pub role: Role,
    /// Its status.
    pub status: EntryStatus,
    /// Its miner (`None` for the baseline).
    pub miner: Option<MinerId>,
    /// Its patch's sha256 (`None` for the baseline).
    pub patch: Option<Sha256Hex>,
    /// Its score, ppm, when scored.
    pub score_ppm: Option<i64>,
    /// Its median run throughput, milli-requests/s, when measured.
    pub throughput_milli_rps: Option<u64>,
}

impl RoundListing {
    /// The summary of `round`, with no check across rounds and no verdict key (the
    /// loader sets [`RoundListing::chain`] and [`RoundListing::verdict_key`]).
    ///
    /// Errors: [`SiteError::InvalidId`] when an entry's miner cannot name a path.
    pub fn of(round: &VerifiedRound) -> Result<Self, SiteError> {
        let record = &round.record;
        let view = &round.view;
        let entries = (record.entries.iter().zip(&view.entries))
            .map(|(e, v)| {
                Ok(EntrySummary {
                    index: e.index,
                    slug: EntrySlug::of(record, e.index)?,
                    role: e.role,
                    status: e.status,
                    miner: e.miner.clone(),
                    patch: e.patch,
                    score_ppm: v.score_ppm.value,
                    throughput_milli_rps: v.throughput_milli_rps.value,
                })
            })
            .collect::<Result<_, SiteError>>()?;
        Ok(Self {
            number: round.number,
            dir: round.dir.clone(),
            statement_digest: round.statement_digest,
            verified_at: round.verified_at,
            as_of: round.as_of.clone(),
            predicate_type: view.verification.predicate_type.clone(),
            status: record.outcome.status,
            started_at: record.started_at,
            ended_at: record.ended_at,
            leader_before: record.outcome.leader_before.clone(),
            leader_after: record.outcome.leader_after.clone(),
            changed: record.outcome.changed,
            headline: Headline {
                status: view.status.value,
                verdict: view.verdict.value.clone(),
                leader_after: view.leader_after.value.clone(),
                leader_changed: view.leader_changed.value,
                top_score_ppm: view.top_score.as_ref().map(|t| t.score_ppm.value),
                counts: view.counts.value,
                decision: view.decision.value.clone(),
            },
            settled_in_ms: view.settled_in_ms.value,
            seated: None,
            entries,
            log: LogLink::of(record),
            chain: VerifyReport::new(&round.dir),
            verdict_key: None,
        })
    }
}

/// The round in which a seat holder took the seat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeatTaken {
    /// Its number.
    pub round: u64,
    /// When it settled (its `endedAt`): the moment the seat changed.
    pub at: Timestamp,
}

/// Sets each round's [`RoundListing::seated`] from `rounds`, a campaign's verified rounds
/// by number ascending, as `referee leader` reads it
/// ([`CurrentLeader`](verifier::view::CurrentLeader)): the latest of them up to the
/// round whose seat changed to the round's seat holder.
pub fn set_seats(rounds: &mut [RoundListing]) {
    let mut taken: HashMap<Option<Sha256Hex>, SeatTaken> = HashMap::new();
    for round in rounds {
        let holder = round.headline.leader_after.as_ref().map(|l| l.patch);
        if round.headline.leader_changed {
            taken.insert(
                holder,
                SeatTaken {
                    round: round.number,
                    at: round.ended_at,
                },
            );
        }
        round.seated = taken.get(&holder).copied();
    }
}

/// A bundle that did not verify.
#[derive(Clone, Debug)]
pub struct RejectedBundle {
    /// The campaign directory it was found under.
    pub campaign: CampaignId,
    /// The round number its directory name claims.
    pub number: u64,
    /// The bundle directory.
    pub dir: PathBuf,
    /// The verification report, failed checks included.
    pub report: VerifyReport,
    /// The round number its record states, when that differs from its directory's.
    pub recorded_round: Option<u64>,
    /// The instant key validity was checked at.
    pub verified_at: Timestamp,
    /// Why that instant.
    pub as_of: AsOf,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record of the two-rounds golden case.
    const RECORD: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/cases/two-rounds/in/data/tiny/submissions/",
        "d8d06706522e765f50262b5e9ccf20a00eba2537d6b7e53cd7f779abc1366c1e.json"
    );

    #[test]
    fn a_summarised_record_reads_back_and_a_changed_one_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("record.json");
        let bytes = std::fs::read(RECORD).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        let record: Submission = receipts::layout::parse_json(&path, &bytes).unwrap();
        let summary = SubmissionSummary::of(&path, &bytes, &record);
        assert_eq!(summary.sha256, record.sha256);
        assert_eq!(summary.state, record.state);
        assert_eq!(summary.committed_at, Some(record.events[0].at));
        assert_eq!(summary.file_sha256, Sha256Hex::digest(&bytes));
        assert_eq!(summary.load().unwrap(), record);

        // The same record, one byte of whitespace more: not the bytes summarised.
        let mut changed = bytes.clone();
        changed.push(b'\n');
        std::fs::write(&path, &changed).unwrap();
        let err = summary.load().unwrap_err();
        assert!(matches!(&err, SiteError::RecordChanged { path: p, .. } if p == &path));
        assert_eq!(
            err.to_string(),
            format!(
                "the submission record `{}` changed while the site was built: its sha256 is {}, \
                 {} when it was first read; build again",
                path.display(),
                Sha256Hex::digest(&changed),
                summary.file_sha256
            )
        );
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(
            summary.load().unwrap_err(),
            SiteError::RecordChanged { .. }
        ));
    }
}
