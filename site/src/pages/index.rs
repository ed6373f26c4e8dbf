//! The scoreboard's front page `/`: every campaign with its current leader and score,
//! its last round and the length of the next round's queue (submissions waiting in
//! `bench_queued`: the evaluator's unsigned records, and the page says so).

use receipts::model::{Leader, PipelineState};
use serde::Serialize;
use verifier::view::format_score_percent;

use crate::archive::{Archive, CampaignArchive, RoundListing};
use crate::error::SiteError;
use crate::pages::{PageOut, TableLinks, TableRow, seat_label, table_files, untrusted};
use crate::paths::SiteDir;

/// The model of `/`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IndexModel {
    /// One row per campaign, by id.
    pub campaigns: Vec<CampaignRow>,
    /// Bundles that failed verification, over all campaigns (listed on `rejected/`).
    pub rejected: usize,
    /// The campaigns table as CSV and JSON.
    pub table: TableLinks,
    /// The transparency log's current checkpoint, when the site serves the log.
    pub log: Option<LogSummary>,
    /// Why the data directory's log is not served, when it did not verify.
    pub log_refused: Option<String>,
}

/// The transparency log's checkpoint on the front page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LogSummary {
    /// The origin line (untrusted text of the evaluator's log config; escaped by the
    /// template).
    pub origin: String,
    /// The tree size, entries.
    pub size: u64,
    /// The root hash, base64, as the checkpoint writes it.
    pub root: String,
}

/// A campaign on the front page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CampaignRow {
    /// The campaign id.
    pub id: String,
    /// Its title (untrusted: the evaluator's campaign file), or the id when it has none.
    pub title: String,
    /// Its page, `c/<id>/`.
    pub href: SiteDir,
    /// Rounds that verified.
    pub rounds: usize,
    /// The current leader, `e5595a3…88ea1 (miner-fast)` or `the baseline`, from the last
    /// round that verified.
    pub leader: String,
    /// The leader's submission page, when a miner holds the seat.
    pub leader_href: Option<SiteDir>,
    /// The leader's score in the last verified round, as `+0.5099` (0 is baseline
    /// speed); `None` when it was not scored there.
    pub score: Option<String>,
    /// The same score, ppm.
    pub score_ppm: Option<i64>,
    /// The last verified round's number.
    pub last_round: Option<u64>,
    /// Its page.
    pub last_round_href: Option<SiteDir>,
    /// Its status, `complete` or `infra_failed`.
    pub last_round_status: Option<String>,
    /// Submissions waiting in `bench_queued` for the next round (the evaluator's
    /// unsigned records).
    pub queued: usize,
}

impl TableRow for CampaignRow {
    const COLUMNS: &'static [&'static str] = &[
        "campaign",
        "title",
        "rounds",
        "leader",
        "score_ppm",
        "last_round",
        "last_round_status",
        "queued_unsigned",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.id.clone(),
            self.title.clone(),
            self.rounds.to_string(),
            self.leader.clone(),
            opt(self.score_ppm),
            opt(self.last_round),
            self.last_round_status.clone().unwrap_or_default(),
            self.queued.to_string(),
        ]
    }
}

/// `value`, or empty for `None` (a CSV cell).
pub(crate) fn opt<T: ToString>(value: Option<T>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

/// The seat after the last verified round of `campaign` and that round (`None` before
/// any round verified: the baseline holds the seat).
pub fn current_seat(campaign: &CampaignArchive) -> (Option<&Leader>, Option<&RoundListing>) {
    let last = campaign.rounds.last();
    (last.and_then(|r| r.leader_after.as_ref()), last)
}

/// The score the seat holder got in `round`, ppm: the baseline's is 0; a miner's is its
/// scored entry's; `None` when the holder was not scored in the round.
pub fn seat_score(seat: Option<&Leader>, round: &RoundListing) -> Option<i64> {
    match seat {
        None => Some(0),
        Some(leader) => round
            .entries
            .iter()
            .find(|e| e.patch.as_ref() == Some(&leader.patch))
            .and_then(|e| e.score_ppm),
    }
}

/// Builds `/`.
///
/// Errors: [`SiteError::Serialize`] when the table does not serialise.
pub fn page(archive: &Archive) -> Result<PageOut<IndexModel>, SiteError> {
    let dir = SiteDir::root();
    let campaigns: Vec<CampaignRow> = archive.campaigns.iter().map(campaign_row).collect();
    let (table, files) = table_files(&dir, "campaigns", &campaigns)?;
    Ok(PageOut {
        dir,
        template: "index.html",
        model: IndexModel {
            campaigns,
            rejected: archive.rejected.len(),
            table,
            log: match &archive.log {
                crate::tlog::LogState::Served(log) => Some(LogSummary {
                    origin: untrusted(&log.origin),
                    size: log.size,
                    root: untrusted(&log.root),
                }),
                _ => None,
            },
            log_refused: match &archive.log {
                crate::tlog::LogState::Refused(reason) => Some(untrusted(reason)),
                _ => None,
            },
        },
        files: files.into(),
    })
}

fn campaign_row(campaign: &CampaignArchive) -> CampaignRow {
    let (seat, last) = current_seat(campaign);
    let score_ppm = last.and_then(|r| seat_score(seat, r));
    let title = &campaign.campaign.campaign.title;
    CampaignRow {
        id: campaign.id.to_string(),
        title: if title.is_empty() {
            campaign.id.to_string()
        } else {
            untrusted(title)
        },
        href: SiteDir::campaign(&campaign.id),
        rounds: campaign.rounds.len(),
        leader: seat_label(seat),
        leader_href: seat.map(|l| SiteDir::submission(&l.patch)),
        score: score_ppm.map(format_score_percent),
        score_ppm,
        last_round: last.map(|r| r.number),
        last_round_href: last.map(|r| SiteDir::round(&campaign.id, r.number)),
        last_round_status: last.map(|r| r.status.as_str().to_owned()),
        queued: campaign
            .submissions
            .iter()
            .filter(|s| s.state == PipelineState::BenchQueued)
            .count(),
    }
}
