//! A miner's page `/m/<miner>/`: every submission of the miner and where each stands (its
//! pipeline state from the evaluator's unsigned record, and the verified rounds it ran
//! in).

use receipts::model::{MinerId, Timestamp};
use serde::Serialize;

use crate::archive::Archive;
use crate::error::SiteError;
use crate::pages::submission::{Appearance, PatchIndex, Seat};
use crate::pages::{PageOut, TableLinks, TableRow, table_files};
use crate::paths::SiteDir;

/// The model of `/m/<miner>/`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MinerModel {
    /// The miner id.
    pub miner: String,
    /// Campaigns whose registry lists the miner, with the registration time (unsigned).
    pub registered: Vec<Registration>,
    /// The miner's submissions, by campaign then first event.
    pub submissions: Vec<SubmissionRow>,
    /// The submissions table as CSV and JSON.
    pub table: TableLinks,
}

/// A registration in a campaign's miner registry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Registration {
    /// The campaign.
    pub campaign: String,
    /// Its page.
    pub href: SiteDir,
    /// When (RFC 3339).
    pub at: String,
}

/// One submission of the miner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SubmissionRow {
    /// The campaign.
    pub campaign: String,
    /// The patch's sha256.
    pub sha256: String,
    /// Abbreviated.
    pub short: String,
    /// Its page.
    pub href: SiteDir,
    /// The pipeline state in the evaluator's record (unsigned); `None` when there is no
    /// local record (the patch is known from a verified round only).
    pub state: Option<String>,
    /// When it was committed (RFC 3339), from the record.
    pub committed_at: Option<String>,
    /// The verified rounds it ran in.
    pub rounds: Vec<Appearance>,
}

impl TableRow for SubmissionRow {
    const COLUMNS: &'static [&'static str] = &[
        "campaign",
        "sha256",
        "state_unsigned",
        "committed_at",
        "rounds",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.campaign.clone(),
            self.sha256.clone(),
            self.state.clone().unwrap_or_default(),
            self.committed_at.clone().unwrap_or_default(),
            self.rounds
                .iter()
                .map(|a| format!("{}/{}:{}", a.campaign, a.round, a.status))
                .collect::<Vec<_>>()
                .join(" "),
        ]
    }
}

/// Builds `/m/<miner>/`.
///
/// Errors: [`SiteError::Serialize`] when the table does not serialise.
pub fn page(
    archive: &Archive,
    index: &PatchIndex<'_>,
    miner: &MinerId,
) -> Result<PageOut<MinerModel>, SiteError> {
    let dir = SiteDir::miner(miner);
    let registered = archive
        .campaigns
        .iter()
        .filter_map(|c| {
            let m = c.miners.miners.iter().find(|m| &m.id == miner)?;
            Some(Registration {
                campaign: c.id.to_string(),
                href: SiteDir::campaign(&c.id),
                at: m.registered_at.to_string(),
            })
        })
        .collect();
    let mut submissions: Vec<(Option<Timestamp>, SubmissionRow)> = index
        .of_miner(miner)
        .filter_map(|(ci, position, patch)| {
            let campaign = archive.campaigns.get(ci)?;
            let record = index
                .records_at(position)
                .iter()
                .find(|s| s.campaign == campaign.id && &s.miner == miner);
            let committed = record.and_then(|s| s.committed_at);
            Some((
                committed,
                SubmissionRow {
                    campaign: campaign.id.to_string(),
                    sha256: patch.to_string(),
                    short: patch.short(),
                    href: SiteDir::submission(patch),
                    state: record.map(|s| s.state.to_string()),
                    committed_at: committed.map(|t| t.to_string()),
                    rounds: index
                        .seats_at(position)
                        .iter()
                        .filter(|s| s.campaign == &campaign.id)
                        .map(Seat::appearance)
                        .collect(),
                },
            ))
        })
        .collect();
    // By campaign, then commitment time (patches without a local record last), then sha256.
    submissions.sort_by(|(at_a, a), (at_b, b)| {
        (&a.campaign, at_a.is_none(), at_a, &a.sha256).cmp(&(
            &b.campaign,
            at_b.is_none(),
            at_b,
            &b.sha256,
        ))
    });
    let submissions: Vec<SubmissionRow> = submissions.into_iter().map(|(_, row)| row).collect();
    let (table, files) = table_files(&dir, "submissions", &submissions)?;
    Ok(PageOut {
        dir,
        template: "miner.html",
        model: MinerModel {
            miner: miner.to_string(),
            registered,
            submissions,
            table,
        },
        files: files.into(),
    })
}
