//! A miner's page `/m/<miner>/`: the miner's submissions and where each stands (its
//! pipeline state from the evaluator's unsigned record, and the verified rounds it ran
//! in), with every submission on the pages `/m/<miner>/submissions/<k>/` of
//! [`SUBMISSIONS_PER_PAGE`] each.

use receipts::model::MinerId;
use serde::Serialize;

use crate::archive::Archive;
use crate::error::SiteError;
use crate::pages::submission::{Appearance, MinerPatch, PatchIndex, Seat};
use crate::pages::{PageOut, TableLinks, TableRow, table_files};
use crate::paths::SiteDir;

/// Submissions per page of a miner's submissions (`/m/<miner>/submissions/<k>/` holds
/// those numbered `(k − 1) × 100 + 1` to `k × 100` in [`PatchIndex::of_miner`] order), and the
/// most the miner's own page shows: at 10,000 rounds the benchmark's miners have ≈ 800
/// submissions each, and a page listing all of them was rendered again for every round
/// the miner ran in.
pub const SUBMISSIONS_PER_PAGE: usize = 100;

/// The model of `/m/<miner>/`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MinerModel {
    /// The miner id.
    pub miner: String,
    /// Campaigns whose registry lists the miner, with the registration time (unsigned).
    pub registered: Vec<Registration>,
    /// How many submissions the miner has.
    pub total: usize,
    /// The number (from 1, in [`PatchIndex::of_miner`] order) of the first one shown.
    pub first_shown: usize,
    /// The last [`SUBMISSIONS_PER_PAGE`] submissions in [`PatchIndex::of_miner`] order (all of
    /// them when there are no more).
    pub submissions: Vec<SubmissionRow>,
    /// The pages of every submission, when there are more than the page shows (empty
    /// otherwise).
    pub pages: Vec<SubmissionsPageLink>,
    /// The shown submissions as CSV and JSON.
    pub table: TableLinks,
}

/// The model of `/m/<miner>/submissions/<k>/`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SubmissionsPageModel {
    /// The miner id.
    pub miner: String,
    /// `Submissions 101–200 of miner <miner>`.
    pub title: String,
    /// The miner's page.
    pub miner_href: SiteDir,
    /// This page's numbers and permalink.
    pub range: SubmissionsPageLink,
    /// Its submissions, in [`PatchIndex::of_miner`] order.
    pub submissions: Vec<SubmissionRow>,
    /// The page before, if any.
    pub previous: Option<SubmissionsPageLink>,
    /// The page after, if any.
    pub next: Option<SubmissionsPageLink>,
    /// Its table as CSV and JSON.
    pub table: TableLinks,
}

/// A link to one page of a miner's submissions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SubmissionsPageLink {
    /// The number of its first submission (from 1).
    pub first: usize,
    /// The number of its last.
    pub last: usize,
    /// The page.
    pub href: SiteDir,
}

impl SubmissionsPageLink {
    /// Page `k` (from 1) of `miner`'s `total` submissions.
    fn of(miner: &MinerId, k: usize, total: usize) -> Self {
        let numbers = of_page(k, total);
        Self {
            first: numbers.start + 1,
            last: numbers.end,
            href: SiteDir::miner_submissions(miner, k),
        }
    }
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

/// The campaigns whose registry lists `miner`, in the archive's order, with the time of
/// its registration (unsigned).
pub fn registrations(archive: &Archive, miner: &MinerId) -> Vec<Registration> {
    archive
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
        .collect()
}

/// How many pages of submissions `total` submissions fill: none when the miner's page
/// shows them all.
pub fn page_count(total: usize) -> usize {
    if total > SUBMISSIONS_PER_PAGE {
        total.div_ceil(SUBMISSIONS_PER_PAGE)
    } else {
        0
    }
}

/// Which of `total` submissions the miner's page shows: the last [`SUBMISSIONS_PER_PAGE`].
pub fn shown(total: usize) -> std::ops::Range<usize> {
    total.saturating_sub(SUBMISSIONS_PER_PAGE)..total
}

/// Which of `total` submissions page `k` (from 1) holds.
pub fn of_page(k: usize, total: usize) -> std::ops::Range<usize> {
    let start = (k.saturating_sub(1) * SUBMISSIONS_PER_PAGE).min(total);
    start..(start + SUBMISSIONS_PER_PAGE).min(total)
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
    let registered = registrations(archive, miner);
    let all = index.of_miner(miner);
    let total = all.len();
    let range = shown(total);
    let first_shown = range.start + 1;
    let rows = rows(archive, index, &all[range]);
    let (table, files) = table_files(&dir, "submissions", &rows)?;
    Ok(PageOut {
        dir,
        template: "miner.html",
        model: MinerModel {
            miner: miner.to_string(),
            registered,
            total,
            first_shown,
            submissions: rows,
            pages: (1..=page_count(total))
                .map(|k| SubmissionsPageLink::of(miner, k, total))
                .collect(),
            table,
        },
        files: files.into(),
    })
}

/// Builds `/m/<miner>/submissions/<k>/`.
///
/// Errors: [`SiteError::InvalidId`] when `k` is 0 or past [`page_count`];
/// [`SiteError::Serialize`] when the table does not serialise.
pub fn submissions_page(
    archive: &Archive,
    index: &PatchIndex<'_>,
    miner: &MinerId,
    k: usize,
) -> Result<PageOut<SubmissionsPageModel>, SiteError> {
    let all = index.of_miner(miner);
    let total = all.len();
    let count = page_count(total);
    if k == 0 || k > count {
        return Err(SiteError::InvalidId {
            field: "submissions page",
            value: k.to_string(),
            rule: "a page from 1 to the miner's page count",
        });
    }
    let dir = SiteDir::miner_submissions(miner, k);
    let range = SubmissionsPageLink::of(miner, k, total);
    let rows = rows(archive, index, &all[of_page(k, total)]);
    let (table, files) = table_files(&dir, "submissions", &rows)?;
    Ok(PageOut {
        dir,
        template: "miner-submissions.html",
        model: SubmissionsPageModel {
            miner: miner.to_string(),
            title: format!(
                "Submissions {}–{} of miner {miner}",
                range.first, range.last
            ),
            miner_href: SiteDir::miner(miner),
            range,
            submissions: rows,
            previous: (k > 1).then(|| SubmissionsPageLink::of(miner, k - 1, total)),
            next: (k < count).then(|| SubmissionsPageLink::of(miner, k + 1, total)),
            table,
        },
        files: files.into(),
    })
}

/// The table rows of `submissions`.
fn rows(
    archive: &Archive,
    index: &PatchIndex<'_>,
    submissions: &[MinerPatch],
) -> Vec<SubmissionRow> {
    submissions
        .iter()
        .filter_map(|s| {
            let campaign = archive.campaigns.get(s.campaign)?;
            let patch = index.patch(s.position)?;
            let record = index.miner_record(s);
            let committed = record.and_then(|r| r.committed_at);
            Some(SubmissionRow {
                campaign: campaign.id.to_string(),
                sha256: patch.to_string(),
                short: patch.short(),
                href: SiteDir::submission(patch),
                state: record.map(|r| r.state.to_string()),
                committed_at: committed.map(|t| t.to_string()),
                rounds: (index.seats_at(s.position).iter())
                    .filter(|seat| seat.campaign == &campaign.id)
                    .map(Seat::appearance)
                    .collect(),
            })
        })
        .collect()
}
