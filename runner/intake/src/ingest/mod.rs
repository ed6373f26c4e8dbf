//! Submissions (content/submitting.md; content/submitting.md, Pipeline): freezing a
//! campaign and registering miners ([`campaign`]), ingesting a diff — dedupe by the
//! sha256 of its exact bytes, then the gates, each a transition with a timestamped reason
//! — and the one requeue after `infra_failed`.
//!
//! The walk. `committed → picked_up → fetched` (the bytes hash to the commitment) `→
//! verified` (registered miner; `index` blob ids match the pinned commit) `→ surface_ok
//! → applied → building → built → bench_queued`, each event recorded when its gate ran,
//! so the log is in causal order: the surface checks run on the parse *before* the apply
//! writes anything (see [`crate::gates`]); a surface violation is `rejected` at gate
//! `surface_ok` from `verified`, an apply failure `rejected` at gate `applied` from
//! `surface_ok`. Every event is dated no earlier than the one before it
//! (`Submission`'s appenders keep that). The apply and the build happen in a temporary
//! directory removed on every path out.
//!
//! Dedupe. The first *valid* commitment of a hash wins: a later ingest of the same bytes
//! (by any miner, the same included) is a `duplicate` event on the first record, never a
//! new record — unless the first record was rejected at `fetched` (its commitment does
//! not match the bytes) or `verified` (an unregistered miner): such a record never held
//! the slot, and the next commitment replaces it, keeping its trace as a `superseded`
//! event (so nobody can block a miner's diff by committing it first with a wrong
//! commitment or from an unregistered id). A record left mid-walk by an infrastructure
//! error is resumed from its state by the next ingest of its bytes.
//!
//! Bounded reads. A diff is read through `Read::take` with room for one byte more than
//! `surface.max_diff_bytes` ([`ingest_reader`]; [`ingest`] takes bytes already in
//! memory the same way), before anything is hashed or stored. A diff larger than that is
//! refused unread: nothing of it is stored (no `submissions/<sha256>.diff`), and since the
//! sha256 of bytes never read is unknown, its record is keyed by the **commitment**
//! (`sha256` holds the commitment, `size_bytes` the bytes read: the limit plus one) and
//! rejected at `fetched` from `picked_up`, the reason naming the limit. Like any
//! rejection at `fetched`, it never holds the slot: the honest bytes of that hash, once
//! committed, replace it (a `superseded` event keeps its trace).
//!
//! Every violation. The gates record every violation a diff has, most specific first, at
//! the earliest gate one of them belongs to (see [`crate::gates`]); the `verified` event
//! says what it compared with the baseline ([`crate::gates::Comparison`]).
//!
//! Reasons are data. A recorded reason holds diff paths and miner text raw, as the diff
//! has them; whoever prints it for a person escapes it
//! (`receipts::text::escape_untrusted`, as `referee ingest` and `referee status` do), and
//! JSON carries it raw.

pub mod campaign;

use receipts::fsutil::IoError;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use receipts::fsutil::write_atomic;
use receipts::model::{
    Campaign, Gate, MinerId, ModelError, PipelineState, Sha256Hex, Submission, SubmissionImage,
    Timestamp,
};

use crate::gates::surface::{DeniedGlobs, Inspection, Refusal, inspect};
use crate::gates::{
    Baseline, BuildFailure, Builder, GateError, GateOutcomeError, Violation, Violations,
    apply_checked,
};
use crate::store::CampaignStore;
use receipts::layout::{CampaignDir, DataError};
use receipts::text::escape_untrusted;

pub use campaign::{AddedCampaign, add_campaign, add_hotkey, add_miner};

/// Errors of the submission machinery; a diff that breaks a rule is never one of them
/// (it is recorded as a rejection).
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// Reading or writing the data directory failed.
    #[error(transparent)]
    Data(#[from] DataError),
    /// The gate machinery failed (baseline repository, temporary directory).
    #[error(transparent)]
    Gate(#[from] GateError),
    /// A record broke the model's rules (e.g. an illegal transition).
    #[error(transparent)]
    Model(#[from] ModelError),
    /// An I/O error on a named file.
    #[error(transparent)]
    Io(#[from] IoError),
    /// Reading the submitted diff failed.
    #[error("reading the diff")]
    ReadDiff(#[source] std::io::Error),
    /// A diff larger than `surface.max_diff_bytes` whose commitment is the hash of a
    /// submission that holds its slot: those bytes are within the limit, so these are not
    /// them. Nothing was read past the limit, and nothing was recorded.
    #[error(
        "{violation}; nothing was recorded: the commitment `{commitment}` names a submission already recorded with bytes within the limit, so these bytes cannot be its bytes"
    )]
    TooLargeForRecordedHash {
        /// The commitment given.
        commitment: Sha256Hex,
        /// The size violation.
        violation: Box<Violation>,
    },
    /// The build failed for a reason that is not the submission's. The message is shown
    /// escaped (`receipts::text::escape_untrusted`): it may quote the engine or the tree.
    #[error("building submission `{sha256}`: {}", escape_untrusted(.message))]
    BuildInfra {
        /// The submission.
        sha256: Sha256Hex,
        /// What went wrong.
        message: String,
    },
    /// The campaign file or its baseline repository is unusable.
    #[error("{path}: {message}")]
    Campaign {
        /// The campaign file or repository.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A different campaign with the same id is already frozen.
    #[error(
        "campaign `{id}` is already frozen with digest `{existing}`; this file has digest `{new}` (campaigns cannot change: use a new id)"
    )]
    CampaignConflict {
        /// The campaign id.
        id: String,
        /// Digest of the frozen campaign (boxed, as is `new`: a `Result` of intake stays
        /// small).
        existing: Box<Sha256Hex>,
        /// Digest of the one given.
        new: Box<Sha256Hex>,
    },
    /// The miner is already registered.
    #[error("miner `{miner}` is already registered for campaign `{campaign}`")]
    MinerExists {
        /// The miner.
        miner: MinerId,
        /// The campaign.
        campaign: String,
    },
    /// No submission with that hash (or prefix).
    #[error("no submission `{key}` in campaign `{campaign}`")]
    NoSubmission {
        /// The hash or prefix asked for.
        key: String,
        /// The campaign.
        campaign: String,
    },
    /// A hash prefix shorter than [`MIN_PREFIX`] characters: it is not looked up.
    #[error(
        "`{key}` is too short for a submission prefix: give at least {MIN_PREFIX} hex characters of its sha256"
    )]
    PrefixTooShort {
        /// The prefix.
        key: String,
    },
    /// A hash prefix that matches several submissions.
    #[error("`{key}` matches {count} submissions; give more characters")]
    AmbiguousPrefix {
        /// The prefix.
        key: String,
        /// How many match.
        count: usize,
    },
}

/// One commitment to ingest.
#[derive(Clone, Copy, Debug)]
pub struct IngestRequest<'a> {
    /// The exact diff bytes.
    pub diff: &'a [u8],
    /// Who committed them.
    pub miner: &'a MinerId,
    /// The sha256 the miner published.
    pub commitment: &'a Sha256Hex,
}

/// What an ingest did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IngestOutcome {
    /// A new submission; its record after the gates.
    New(Submission),
    /// The bytes were already submitted: a duplicate event was added to this record.
    Duplicate(Submission),
}

impl IngestOutcome {
    /// The record, either way.
    pub fn submission(&self) -> &Submission {
        match self {
            IngestOutcome::New(s) | IngestOutcome::Duplicate(s) => s,
        }
    }
}

/// Ingests one commitment into the campaign of `campaign_dir` under its lock: stores
/// `submissions/<sha256>.diff` and `.json`, then walks the gates with `builder`, saving the
/// record after every transition. The bytes are taken as [`ingest_reader`] reads a
/// stream: a diff larger than `surface.max_diff_bytes` is refused unread at `fetched`,
/// and nothing of it is stored.
///
/// Errors: [`IngestError`] for machinery failures (the campaign is missing or locked, the
/// baseline repository is broken, a build failed for infrastructure reasons); the record
/// keeps the state reached.
pub fn ingest(
    campaign_dir: &CampaignDir,
    request: &IngestRequest<'_>,
    builder: &dyn Builder,
) -> Result<IngestOutcome, IngestError> {
    let mut bytes = request.diff;
    ingest_reader(
        campaign_dir,
        &mut bytes,
        request.miner,
        request.commitment,
        builder,
    )
}

/// [`ingest`] of a diff read from `diff` (a file, a socket): under the campaign's lock, at
/// most `surface.max_diff_bytes + 1` bytes are read (`Read::take`) before the size check.
/// A larger diff is refused unread: its record, keyed by `commitment` (the sha256 of the
/// bytes is unknown), is rejected at `fetched` with the limit in its reason, and no
/// `.diff` is stored.
///
/// Errors: as [`ingest`]; [`IngestError::ReadDiff`] when reading fails;
/// [`IngestError::TooLargeForRecordedHash`] for a too large diff whose commitment is the
/// hash of a submission that holds its slot (that record is left as it is).
pub fn ingest_reader(
    campaign_dir: &CampaignDir,
    diff: &mut dyn Read,
    miner: &MinerId,
    commitment: &Sha256Hex,
    builder: &dyn Builder,
) -> Result<IngestOutcome, IngestError> {
    let _lock = campaign_dir.lock()?;
    let campaign = campaign_dir.load_campaign()?.campaign;
    if campaign.submission_kind() != receipts::model::SubmissionKind::Diff {
        return Err(IngestError::Campaign {
            path: campaign_dir.campaign_json(),
            message: "this campaign takes repository commitments (`referee ingest --repository <URL>@<commit>`), not diffs".into(),
        });
    }
    let max_bytes = campaign.surface.max_diff_bytes;
    let mut bytes = Vec::new();
    diff.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(IngestError::ReadDiff)?;
    let read_bytes = bytes.len() as u64;
    if read_bytes > max_bytes {
        drop(bytes);
        let violation = Violation::TooLarge {
            read_bytes,
            max_bytes,
        };
        return refuse_unread(
            campaign_dir,
            &campaign,
            miner,
            commitment,
            read_bytes,
            violation,
        );
    }
    let request = IngestRequest {
        diff: &bytes,
        miner,
        commitment,
    };
    ingest_locked(campaign_dir, &campaign, &request, builder)
}

/// The record of a diff refused unread (see the module documentation): keyed by the
/// commitment, `committed → picked_up → rejected` at `fetched`; nothing stored but it.
fn refuse_unread(
    campaign_dir: &CampaignDir,
    campaign: &Campaign,
    miner: &MinerId,
    commitment: &Sha256Hex,
    read_bytes: u64,
    violation: Violation,
) -> Result<IngestOutcome, IngestError> {
    let json = campaign_dir.submission_json(commitment);
    let earlier = if json.exists() {
        let earlier = campaign_dir.load_submission(commitment)?;
        if !earlier.never_held_slot() {
            return Err(IngestError::TooLargeForRecordedHash {
                commitment: *commitment,
                violation: Box::new(violation),
            });
        }
        Some(earlier)
    } else {
        None
    };
    let mut submission = Submission::committed(
        *commitment,
        campaign.id.clone(),
        miner.clone(),
        *commitment,
        read_bytes,
        Timestamp::now(),
    );
    if let Some(earlier) = &earlier {
        submission.record_superseded(earlier, Timestamp::now());
    }
    submission.transition(
        PipelineState::PickedUp,
        Timestamp::now(),
        "gates job claimed by this referee worker",
    )?;
    let violations = Violations::one(violation);
    submission.reject(
        violations.gate(),
        Timestamp::now(),
        format!(
            "{}; nothing was stored, and the record is keyed by the commitment (the sha256 of bytes not read is unknown)",
            violations.reason()
        ),
    )?;
    campaign_dir.save_submission(&submission)?;
    Ok(IngestOutcome::New(submission))
}

/// [`ingest`] of bytes within the size limit, the campaign lock held.
fn ingest_locked(
    campaign_dir: &CampaignDir,
    campaign: &Campaign,
    request: &IngestRequest<'_>,
    builder: &dyn Builder,
) -> Result<IngestOutcome, IngestError> {
    let sha256 = Sha256Hex::digest(request.diff);
    let json = campaign_dir.submission_json(&sha256);
    let existing = if json.exists() {
        Some(campaign_dir.load_submission(&sha256)?)
    } else {
        None
    };
    let superseded = match existing {
        // The first *valid* commitment wins (content/submitting.md): a record rejected
        // at `fetched` or `verified` never held the slot.
        Some(earlier) if earlier.never_held_slot() => Some(earlier),
        Some(mut submission) => {
            submission.record_duplicate(
                request.miner.clone(),
                *request.commitment,
                Timestamp::now(),
            );
            campaign_dir.save_submission(&submission)?;
            let bytes = read(&campaign_dir.submission_diff(&sha256))?;
            walk(campaign_dir, campaign, &mut submission, &bytes, builder)?;
            return Ok(IngestOutcome::Duplicate(submission));
        }
        None => None,
    };
    let diff_path = campaign_dir.submission_diff(&sha256);
    fs::create_dir_all(campaign_dir.submissions_dir()).map_err(|source| {
        IngestError::Io(IoError {
            action: "creating",
            path: campaign_dir.submissions_dir(),
            source,
        })
    })?;
    write_atomic(&diff_path, request.diff, 0o644).map_err(|source| {
        IngestError::Io(IoError {
            action: "writing",
            path: diff_path.clone(),
            source,
        })
    })?;
    let mut submission = Submission::committed(
        sha256,
        campaign.id.clone(),
        request.miner.clone(),
        *request.commitment,
        request.diff.len() as u64,
        Timestamp::now(),
    );
    if let Some(earlier) = &superseded {
        submission.record_superseded(earlier, Timestamp::now());
    }
    campaign_dir.save_submission(&submission)?;
    walk(
        campaign_dir,
        campaign,
        &mut submission,
        request.diff,
        builder,
    )?;
    Ok(IngestOutcome::New(submission))
}

/// Moves an `infra_failed` submission back to `bench_queued`, once (content/submitting.md); the
/// round executor calls it for the challengers of an `infra_failed` round, holding the
/// campaign lock.
///
/// Errors: [`IngestError::Model`] for a second requeue or a submission not in
/// `infra_failed` (the record is unchanged); data directory errors.
pub fn requeue(
    campaign_dir: &CampaignDir,
    sha256: &Sha256Hex,
    reason: &str,
) -> Result<Submission, IngestError> {
    let mut submission = campaign_dir.load_submission(sha256)?;
    submission.requeue(Timestamp::now(), reason)?;
    campaign_dir.save_submission(&submission)?;
    Ok(submission)
}

/// The fewest characters of a sha256 that [`find_submission`] looks up as a prefix.
pub const MIN_PREFIX: usize = 4;

/// The submission whose sha256 is `key` or starts with it (at least [`MIN_PREFIX`]
/// characters).
///
/// Errors: [`IngestError::PrefixTooShort`], [`IngestError::NoSubmission`],
/// [`IngestError::AmbiguousPrefix`].
pub fn find_submission(campaign_dir: &CampaignDir, key: &str) -> Result<Submission, IngestError> {
    let missing = || IngestError::NoSubmission {
        key: key.to_owned(),
        campaign: campaign_dir.id().to_string(),
    };
    if let Ok(sha) = key.parse::<Sha256Hex>() {
        if !campaign_dir.submission_json(&sha).exists() {
            return Err(missing());
        }
        return Ok(campaign_dir.load_submission(&sha)?);
    }
    if key.chars().count() < MIN_PREFIX {
        return Err(IngestError::PrefixTooShort {
            key: key.to_owned(),
        });
    }
    let mut hits: Vec<Submission> = campaign_dir
        .list_submissions()?
        .into_iter()
        .filter(|s| s.sha256.as_str().starts_with(key))
        .collect();
    match hits.len() {
        0 => Err(missing()),
        1 => Ok(hits.remove(0)),
        count => Err(IngestError::AmbiguousPrefix {
            key: key.to_owned(),
            count,
        }),
    }
}

/// Walks the gates from the record's current state to `bench_queued` or `rejected`,
/// saving after every transition.
fn walk(
    campaign_dir: &CampaignDir,
    campaign: &Campaign,
    submission: &mut Submission,
    bytes: &[u8],
    builder: &dyn Builder,
) -> Result<(), IngestError> {
    let mut gates = Gates {
        campaign_dir,
        campaign,
        bytes,
        prepared: None,
    };
    loop {
        let step = match submission.state {
            PipelineState::Committed => Step::To(
                PipelineState::PickedUp,
                "gates job claimed by this referee worker".into(),
            ),
            PipelineState::PickedUp => gates.fetched(submission),
            PipelineState::Fetched => gates.verified(submission)?,
            PipelineState::Verified => gates.surface_ok()?,
            PipelineState::SurfaceOk => gates.applied()?,
            PipelineState::Applied if is_docker(campaign) => Step::To(
                PipelineState::Building,
                "queued for the image build of the `docker` backend: `referee build` builds it"
                    .into(),
            ),
            PipelineState::Applied => Step::To(
                PipelineState::Building,
                format!("build started for the `{}` backend", backend_name(campaign)),
            ),
            // An image build can take hours: `referee build` runs it, outside the lock.
            PipelineState::Building if is_docker(campaign) => return Ok(()),
            PipelineState::Building => {
                let (step, image) = gates.build(submission, builder)?;
                submission.image = image;
                step
            }
            PipelineState::Built => {
                Step::To(PipelineState::BenchQueued, "waiting for a round".into())
            }
            _ => return Ok(()),
        };
        let at = Timestamp::now();
        match step {
            Step::To(to, reason) => submission.transition(to, at, reason)?,
            Step::Reject(violations) => {
                submission.reject(violations.gate(), at, violations.reason())?;
            }
        }
        campaign_dir.save_submission(submission)?;
    }
}

/// Builds every submission of the campaign that waits in `building` (a Docker campaign's
/// `referee build`, content/docker.md): each one's diff is applied onto a fresh checkout
/// and built with `builder` *outside* the campaign's records lock (a build can take
/// hours); the lock is taken only to record the result — the image on the record,
/// `building → built → bench_queued`, or `rejected` at gate `build` with the daemon's
/// message as the reason. A record that left `building` while it was built (another
/// worker) is left as it is. At most `limit` submissions are built, oldest first.
///
/// Returns the records it moved, in the order built.
///
/// Errors: [`IngestError::BuildInfra`] when a build fails for a reason that is not the
/// tree's (the daemon does not answer): that record stays in `building` for the next
/// run; data directory errors.
pub fn build_pending(
    campaign_dir: &CampaignDir,
    builder: &dyn Builder,
    limit: Option<usize>,
) -> Result<Vec<Submission>, IngestError> {
    let campaign = campaign_dir.load_campaign()?.campaign;
    let mut waiting: Vec<Submission> = campaign_dir
        .list_submissions()?
        .into_iter()
        .filter(|s| s.state == PipelineState::Building)
        .collect();
    waiting.sort_by_key(|s| s.events.first().map(|e| e.at));
    waiting.truncate(limit.unwrap_or(usize::MAX));
    let mut moved = Vec::new();
    for waiting in waiting {
        let bytes = read(&campaign_dir.submission_diff(&waiting.sha256))?;
        let mut gates = Gates {
            campaign_dir,
            campaign: &campaign,
            bytes: &bytes,
            prepared: None,
        };
        let (step, image) = gates.build(&waiting, builder)?;
        let _lock = campaign_dir.lock()?;
        let mut submission = campaign_dir.load_submission(&waiting.sha256)?;
        if submission.state != PipelineState::Building {
            continue;
        }
        match step {
            Step::To(to, reason) => {
                submission.image = image;
                submission.transition(to, Timestamp::now(), reason)?;
                submission.transition(
                    PipelineState::BenchQueued,
                    Timestamp::now(),
                    "waiting for a round",
                )?;
            }
            Step::Reject(violations) => {
                submission.reject(violations.gate(), Timestamp::now(), violations.reason())?;
            }
        }
        campaign_dir.save_submission(&submission)?;
        moved.push(submission);
    }
    Ok(moved)
}

fn is_docker(campaign: &Campaign) -> bool {
    matches!(campaign.backend, receipts::model::Backend::Docker(_))
}

/// The outcome of one gate.
enum Step {
    /// Move on to this state, with this reason.
    To(PipelineState, String),
    /// Reject at the violations' gate, with all of them.
    Reject(Violations),
}

/// State shared by the gates of one walk: the baseline, the inspection and the applied
/// tree are computed once, on first use (a resumed walk recomputes them).
struct Gates<'a> {
    campaign_dir: &'a CampaignDir,
    campaign: &'a Campaign,
    bytes: &'a [u8],
    prepared: Option<Prepared>,
}

/// The baseline, the verdict of the pure checks, and the patched tree once applied.
struct Prepared {
    baseline: Baseline,
    inspection: Result<Inspection, Refusal>,
    tree: Option<(tempfile::TempDir, PathBuf)>,
}

impl Gates<'_> {
    fn fetched(&self, submission: &Submission) -> Step {
        let actual = Sha256Hex::digest(self.bytes);
        if actual == submission.commitment {
            Step::To(
                PipelineState::Fetched,
                format!(
                    "sha256 of the {} diff bytes equals the commitment",
                    self.bytes.len()
                ),
            )
        } else {
            Step::Reject(Violations::one(Violation::CommitmentMismatch {
                commitment: submission.commitment.to_string(),
                actual: actual.to_string(),
            }))
        }
    }

    fn verified(&mut self, submission: &Submission) -> Result<Step, IngestError> {
        let miners = self.campaign_dir.load_miners()?;
        if !miners.contains(&submission.miner) {
            return Ok(Step::Reject(Violations::one(
                Violation::UnregisteredMiner {
                    miner: submission.miner.to_string(),
                },
            )));
        }
        let commit = self.campaign.baseline.commit.clone();
        let miner = &submission.miner;
        Ok(match &self.prepared()?.inspection {
            Err(refusal) if refusal.violations.gate() == Gate::Verified => {
                Step::Reject(refusal.violations.clone())
            }
            // Any other violation is recorded at its gate, after `verified`.
            Err(refusal) => Step::To(
                PipelineState::Verified,
                match &refusal.compared {
                    None => format!(
                        "miner `{miner}` is registered; no blob id was compared: the diff was not parsed (the violation is reported at {})",
                        refusal.violations.gate()
                    ),
                    Some(compared) => format!(
                        "miner `{miner}` is registered; {}; the violations are reported at {}",
                        compared.describe(&commit),
                        refusal.violations.gate()
                    ),
                },
            ),
            Ok(inspection) => Step::To(
                PipelineState::Verified,
                format!(
                    "miner `{miner}` is registered; {}",
                    inspection.compared.describe(&commit)
                ),
            ),
        })
    }

    fn applied(&mut self) -> Result<Step, IngestError> {
        let paths = self.approved_paths()?;
        Ok(match self.tree()? {
            Ok(_) => Step::To(
                PipelineState::Applied,
                format!(
                    "libgit2 applied the diff onto a fresh checkout of `{}`; changed exactly: {paths}",
                    short_commit(&self.campaign.baseline.commit)
                ),
            ),
            Err(violations) => Step::Reject(violations),
        })
    }

    /// `surface_ok`: the pure checks on the parse, before anything is written; a
    /// violation at a later gate (`applied`, `build`) is left to that gate.
    fn surface_ok(&mut self) -> Result<Step, IngestError> {
        if let Err(refusal) = &self.prepared()?.inspection
            && refusal.violations.gate() == Gate::SurfaceOk
        {
            return Ok(Step::Reject(refusal.violations.clone()));
        }
        Ok(Step::To(
            PipelineState::SurfaceOk,
            format!(
                "path, mode and content rules hold for {} (checked on libgit2's parse before applying)",
                self.approved_paths()?
            ),
        ))
    }

    /// The `building` step and the image it built, if any.
    fn build(
        &mut self,
        submission: &Submission,
        builder: &dyn Builder,
    ) -> Result<(Step, Option<SubmissionImage>), IngestError> {
        let tree = match self.tree()? {
            Ok(tree) => tree,
            Err(v) => return Ok((Step::Reject(v), None)),
        };
        match builder.build(&tree, self.campaign, &submission.sha256) {
            Ok(output) => Ok((Step::To(PipelineState::Built, output.summary), output.image)),
            Err(BuildFailure::Rejected(v)) => Ok((Step::Reject(Violations::one(v)), None)),
            Err(BuildFailure::Infra { message }) => Err(IngestError::BuildInfra {
                sha256: submission.sha256,
                message,
            }),
        }
    }

    fn prepared(&mut self) -> Result<&mut Prepared, IngestError> {
        let prepared = match self.prepared.take() {
            Some(prepared) => prepared,
            None => {
                let baseline = Baseline::open(
                    &self.campaign_dir.baseline_repo(),
                    &self.campaign.baseline.commit,
                )?;
                let surface = &self.campaign.surface;
                let denied = DeniedGlobs::new(&surface.denied_paths)
                    .map_err(|(pattern, message)| GateError::DeniedGlob { pattern, message })?;
                let inspection = inspect(self.bytes, surface, &denied, baseline.index());
                Prepared {
                    baseline,
                    inspection,
                    tree: None,
                }
            }
        };
        Ok(self.prepared.insert(prepared))
    }

    fn approved_paths(&mut self) -> Result<String, IngestError> {
        Ok(match &self.prepared()?.inspection {
            Ok(inspection) => inspection
                .approved
                .changed_paths
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", "),
            Err(_) => String::new(),
        })
    }

    /// The patched tree in a temporary directory, applied on first use; or the violations
    /// that stop it.
    fn tree(&mut self) -> Result<Result<PathBuf, Violations>, IngestError> {
        let prepared = self.prepared()?;
        if let Some((_, path)) = &prepared.tree {
            return Ok(Ok(path.clone()));
        }
        let inspection = match &prepared.inspection {
            Ok(inspection) => inspection,
            Err(refusal) => return Ok(Err(refusal.violations.clone())),
        };
        let tmp = tempfile::Builder::new()
            .prefix("referee-gates-")
            .tempdir()
            .map_err(|source| {
                IngestError::Io(IoError {
                    action: "creating a temporary directory in",
                    path: std::env::temp_dir(),
                    source,
                })
            })?;
        let dest = tmp.path().join("tree");
        match apply_checked(
            &prepared.baseline,
            &inspection.parsed.diff,
            &inspection.approved,
            &dest,
        ) {
            Ok(_) => {}
            Err(GateOutcomeError::Violation(v)) => return Ok(Err(Violations::one(v))),
            Err(GateOutcomeError::Gate(e)) => return Err(e.into()),
        }
        prepared.tree = Some((tmp, dest.clone()));
        Ok(Ok(dest))
    }
}

fn read(path: &Path) -> Result<Vec<u8>, IngestError> {
    fs::read(path).map_err(|source| {
        IngestError::Io(IoError {
            action: "reading",
            path: path.to_path_buf(),
            source,
        })
    })
}

fn short_commit(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

fn backend_name(campaign: &Campaign) -> &'static str {
    match campaign.backend {
        receipts::model::Backend::Builtin => "builtin",
        receipts::model::Backend::Process { .. } => "process",
        receipts::model::Backend::Docker(_) => "docker",
    }
}
