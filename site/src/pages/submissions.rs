//! A campaign's submissions, `/c/<campaign>/submissions/`: what a miner whose diff is
//! not in any round looks for — the queue for the next round in order, every submission
//! the gates rejected with the gate (named for what it checks) and the reason, every
//! duplicate commitment of a submitted diff, and every other submission with its state;
//! each row links its submission page and its miner's page. Built from the evaluator's
//! unsigned submission records (the page says so).

use serde::Serialize;

use receipts::model::{EventKind, PipelineState, Submission};
use verifier::view::format_gate;

use super::{PageOut, TableLinks, TableRow, table_files, untrusted};
use crate::archive::{CampaignArchive, SubmissionSummary};
use crate::error::SiteError;
use crate::pages::index::opt;
use crate::paths::SiteDir;

/// The template of the page.
pub const TEMPLATE: &str = "submissions.html";

/// The model of `/c/<campaign>/submissions/`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SubmissionsModel {
    /// The campaign id.
    pub campaign: String,
    /// The campaign's page.
    pub campaign_href: SiteDir,
    /// Waiting in `bench_queued`, in the order they were committed (the order the next
    /// round seats them in).
    pub queue: Vec<SubmissionRow>,
    /// Rejected by a gate, newest commitment first.
    pub rejected: Vec<SubmissionRow>,
    /// Commitments of a diff someone had already submitted: recorded on the first
    /// submission and skipped.
    pub duplicates: Vec<DuplicateRow>,
    /// Every other submission (in the pipeline, seated, scored, disqualified, …), by
    /// commitment time.
    pub others: Vec<SubmissionRow>,
    /// Every submission as CSV and JSON beside the page.
    pub table: TableLinks,
}

/// One submission of the campaign.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SubmissionRow {
    /// sha256 of the diff.
    pub sha256: String,
    /// `abcdef1…12345`.
    pub short: String,
    /// Its page.
    pub href: SiteDir,
    /// The miner (a validated id).
    pub miner: String,
    /// The miner's page.
    pub miner_href: SiteDir,
    /// Its pipeline state (`bench_queued`, `rejected`, …).
    pub state: String,
    /// When it was committed (RFC 3339); `None` for a record without events.
    pub committed_at: Option<String>,
    /// For a rejection: what failed, by what the gate checks (`surface checks failed`).
    pub failed: Option<String>,
    /// For a rejection: the reason recorded (untrusted, made safe).
    pub reason: Option<String>,
}

/// A duplicate commitment of a submitted diff.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DuplicateRow {
    /// The submission it duplicates.
    pub of: SubmissionRow,
    /// Who committed the duplicate (a validated id).
    pub miner: String,
    /// That miner's page.
    pub miner_href: SiteDir,
    /// When (RFC 3339).
    pub at: String,
}

impl TableRow for SubmissionRow {
    const COLUMNS: &'static [&'static str] = &[
        "sha256",
        "miner",
        "state",
        "committedAt",
        "failed",
        "reason",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.sha256.clone(),
            self.miner.clone(),
            self.state.clone(),
            opt(self.committed_at.as_ref()),
            opt(self.failed.as_ref()),
            opt(self.reason.as_ref()),
        ]
    }
}

/// The row of `summary`, whose whole record is `record`.
fn row(summary: &SubmissionSummary, record: &Submission) -> SubmissionRow {
    let rejection = (record.state == PipelineState::Rejected)
        .then(|| {
            record.events.iter().rev().find_map(|e| match &e.kind {
                EventKind::Transition { gate, .. } => Some((*gate, &e.reason)),
                _ => None,
            })
        })
        .flatten();
    SubmissionRow {
        sha256: summary.sha256.to_string(),
        short: summary.sha256.short(),
        href: SiteDir::submission(&summary.sha256),
        miner: summary.miner.to_string(),
        miner_href: SiteDir::miner(&summary.miner),
        state: summary.state.to_string(),
        committed_at: summary.committed_at.map(|t| t.to_string()),
        failed: rejection
            .and_then(|(gate, _)| gate)
            .map(|gate| format!("{} failed", format_gate(gate))),
        reason: rejection.map(|(_, reason)| untrusted(reason)),
    }
}

/// Builds `/c/<campaign>/submissions/` from the campaign's submission records (each read
/// again whole, [`SubmissionSummary::load`]).
///
/// Errors: [`SiteError::RecordChanged`] when a record changed since it was first read,
/// [`SiteError::Serialize`] when the table does not serialise.
pub fn page(campaign: &CampaignArchive) -> Result<PageOut<SubmissionsModel>, SiteError> {
    let dir = SiteDir::campaign_submissions(&campaign.id);
    let mut records: Vec<(&SubmissionSummary, Submission)> = campaign
        .submissions
        .iter()
        .map(|s| s.load().map(|record| (s, record)))
        .collect::<Result<_, _>>()?;
    // By commitment time, then patch: the queue's order, and a stable one for the rest.
    records.sort_by_key(|(s, _)| (s.committed_at, s.sha256));
    let mut model = SubmissionsModel {
        campaign: campaign.id.to_string(),
        campaign_href: SiteDir::campaign(&campaign.id),
        queue: Vec::new(),
        rejected: Vec::new(),
        duplicates: Vec::new(),
        others: Vec::new(),
        table: TableLinks {
            csv: String::new(),
            json: String::new(),
        },
    };
    let mut all = Vec::with_capacity(records.len());
    for (summary, record) in &records {
        let row = row(summary, record);
        for event in &record.events {
            if let EventKind::Duplicate { miner, .. } = &event.kind {
                model.duplicates.push(DuplicateRow {
                    of: row.clone(),
                    miner: miner.to_string(),
                    miner_href: SiteDir::miner(miner),
                    at: event.at.to_string(),
                });
            }
        }
        match record.state {
            PipelineState::BenchQueued => model.queue.push(row.clone()),
            PipelineState::Rejected => model.rejected.push(row.clone()),
            _ => model.others.push(row.clone()),
        }
        all.push(row);
    }
    model.rejected.reverse();
    let (table, files) = table_files(&dir, "submissions", &all)?;
    model.table = table;
    Ok(PageOut {
        dir,
        template: TEMPLATE,
        model,
        files: files.into(),
    })
}
