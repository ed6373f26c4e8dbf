//! A repository campaign's submission records, recomputed (content/verifying.md,
//! Submission records; content/repository-submissions.md, Records). Per record with a
//! `repository` object:
//!
//! - `submissions.manifest` (a record whose manifest was validated): its copy
//!   `repositories/<sha256>.json` (`receipts::rules::repository::copy`) lists a tree whose
//!   digest is the record's `treeSha256`; every copied text and the manifest hash to
//!   their listed files; the manifest's sha256 is the record's `manifestSha256`; and the
//!   manifest, Dockerfile and licence checks run again over the copy give the record's
//!   `validation`, which passed exactly when the record passed `surface_ok`.
//! - `submissions.queue` (a record the queue decided): an admitted record's hotkey is
//!   registered as `competition` under the record's coldkey, and that coldkey's records
//!   the queue had admitted before (every other record of the coldkey ingested before
//!   this one's decision and not refused by the queue) leave a slot among
//!   `max_per_window` in the `rate_window_h` hours up to its commitment time; a record
//!   refused as over the window had none. `max_pending_per_coldkey` is not recomputed:
//!   the records keep no snapshot of which waited when.

use std::path::Path;

use receipts::canonical::from_slice_strict;
use receipts::layout::DataDir;
use receipts::model::{
    EventKind, Gate, MinerRegistry, MinerRole, PipelineState, RepositorySpec, Submission,
    SubmissionKind, Timestamp,
};
use receipts::rules::repository::copy::{COPY_DIR, MAX_COPY_BYTES, ManifestCopy};
use receipts::rules::repository::queue::in_window;

use crate::FailureReason;
use crate::files::{read_bytes, recomputed, show, unreadable};

/// What the queue check reads of a repository campaign: its limits, its registrations
/// and every record.
pub(crate) struct RepositoryCampaign {
    spec: RepositorySpec,
    registry: MinerRegistry,
    records: Vec<Submission>,
}

impl RepositoryCampaign {
    /// The campaign in `campaign_dir` when it takes repositories; `None` for a diff
    /// campaign or one whose `campaign.json`, `miners.json` or records do not read (the
    /// record checks report those).
    pub(crate) fn load(campaign_dir: &Path) -> Option<Self> {
        let id = campaign_dir.file_name()?.to_str()?.parse().ok()?;
        let dir = DataDir::new(campaign_dir.parent()?).campaign(&id);
        let campaign = dir.load_campaign().ok()?.campaign;
        if campaign.submission_kind() != SubmissionKind::Repository {
            return None;
        }
        Some(Self {
            spec: campaign.repository_spec(),
            registry: dir.load_miners().ok()?,
            records: dir.list_submissions().ok()?,
        })
    }
}

/// The queue's decision on `record`: when, whether it admitted it, and the event's
/// reason — its move to `fetched`, or its rejection at gate `verified` (the queue's) or
/// `fetched` (admitted, then refused by the fetch gate).
fn decision(record: &Submission) -> Option<(Timestamp, bool, &str)> {
    record.events.iter().find_map(|e| match e.kind {
        EventKind::Transition {
            to: PipelineState::Fetched,
            ..
        } => Some((e.at, true, e.reason.as_str())),
        EventKind::Transition {
            to: PipelineState::Rejected,
            gate: Some(gate @ (Gate::Verified | Gate::Fetched)),
            ..
        } => Some((e.at, gate == Gate::Fetched, e.reason.as_str())),
        _ => None,
    })
}

/// `submissions.manifest` of `submission`, the record in `file` of the campaign in
/// `campaign_dir`. `None` when the record was never validated.
pub(crate) fn check_manifest(
    campaign_dir: &Path,
    file: &str,
    submission: &Submission,
) -> Option<Result<(), FailureReason>> {
    let record = submission.repository.as_ref()?;
    let validation = record.validation.as_ref()?;
    let name = format!("{COPY_DIR}/{}.json", submission.sha256);
    Some((|| {
        let bytes = read_bytes(campaign_dir, &name, MAX_COPY_BYTES)?;
        let copy: ManifestCopy = from_slice_strict(&bytes, MAX_COPY_BYTES)
            .map_err(|e| unreadable(&name, e.to_string()))?;
        let tree = copy.tree_sha256();
        if record.tree_sha256 != Some(tree) {
            return Err(recomputed(
                file,
                "repository.treeSha256",
                show(record.tree_sha256),
                format!("{tree} (the listing of `{name}`)"),
            ));
        }
        if let Some(path) = copy.unbound().first() {
            return Err(recomputed(
                &name,
                format!("texts.{path}"),
                "a copy of the listed file",
                "bytes whose sha256 is not the listing's",
            ));
        }
        let (manifest_sha256, recomputed_validation) =
            copy.revalidate().map_err(|e| unreadable(&name, e))?;
        if record.manifest_sha256 != manifest_sha256 {
            return Err(recomputed(
                file,
                "repository.manifestSha256",
                show(record.manifest_sha256),
                show(manifest_sha256),
            ));
        }
        if *validation != recomputed_validation {
            let render = |v: &receipts::model::ManifestValidation| {
                let errors: Vec<String> = v
                    .errors
                    .iter()
                    .map(|e| format!("{}: {}", e.field, e.reason))
                    .collect();
                format!("passed {} [{}]", v.passed, errors.join(", "))
            };
            return Err(recomputed(
                file,
                "repository.validation",
                render(validation),
                render(&recomputed_validation),
            ));
        }
        let passed_gate = submission.events.iter().any(|e| {
            matches!(
                e.kind,
                EventKind::Transition {
                    to: PipelineState::SurfaceOk,
                    ..
                }
            )
        });
        if passed_gate != validation.passed {
            return Err(recomputed(
                file,
                "repository.validation.passed",
                validation.passed,
                format!("{passed_gate} (whether the record passed `surface_ok`)"),
            ));
        }
        Ok(())
    })())
}

/// `submissions.queue` of `submission`, the record in `file`, against the rest of
/// `campaign`. `None` when the queue has not decided on it.
pub(crate) fn check_queue(
    campaign: &RepositoryCampaign,
    file: &str,
    submission: &Submission,
) -> Option<Result<(), FailureReason>> {
    let record = submission.repository.as_ref()?;
    let (decided_at, admitted, reason) = decision(submission)?;
    let coldkey = record.coldkey.as_deref();
    if admitted {
        let registered = campaign.registry.get(&submission.miner);
        let competition = registered.is_some_and(|m| {
            m.role == Some(MinerRole::Competition) && m.coldkey.as_deref() == coldkey
        });
        if !competition {
            return Some(Err(recomputed(
                file,
                "miner",
                &submission.miner,
                format!(
                    "a hotkey registered as `{}` under coldkey `{}` (miners.json), not a competition hotkey of the record's coldkey `{}`",
                    registered
                        .and_then(|m| m.role)
                        .map_or("nothing", |r| r.as_str()),
                    show(registered.and_then(|m| m.coldkey.as_deref())),
                    show(coldkey)
                ),
            )));
        }
    }
    let in_window = campaign
        .records
        .iter()
        .filter(|other| other.sha256 != submission.sha256)
        .filter(|other| other.events.first().is_some_and(|e| e.at < decided_at))
        .filter(|other| decision(other).is_none_or(|(_, admitted, _)| admitted))
        .filter_map(|other| other.repository.as_ref())
        .filter(|other| other.coldkey.as_deref() == coldkey && coldkey.is_some())
        .filter(|other| in_window(&campaign.spec, record.committed_at, other.committed_at))
        .count();
    let max = usize::try_from(campaign.spec.max_per_window).unwrap_or(usize::MAX);
    let refused_for_window =
        !admitted && reason.starts_with("rate_limited") && reason.contains("(max_per_window)");
    if admitted && in_window >= max {
        return Some(Err(recomputed(
            file,
            "repository.committedAt",
            record.committed_at,
            format!(
                "a commitment over the window: coldkey `{}` had {in_window} submissions admitted within {} h, at most {max} (max_per_window)",
                show(coldkey),
                campaign.spec.rate_window_h
            ),
        )));
    }
    if refused_for_window && in_window < max {
        return Some(Err(recomputed(
            file,
            "events",
            "rate_limited (max_per_window)",
            format!(
                "{in_window} submissions of coldkey `{}` admitted within {} h, under the {max} allowed",
                show(coldkey),
                campaign.spec.rate_window_h
            ),
        )));
    }
    Some(Ok(()))
}
