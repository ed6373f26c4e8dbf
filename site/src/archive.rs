//! What the site is built from: every campaign of a data directory with its sealed rounds,
//! each verified as of its own seal time, and the evaluator's unsigned local records.
//!
//! The types are plain values so page models can be built and tested without files.
//! The loader (`load_archive`) builds them; they are the contract between the loader
//! and the page builders.

use std::path::PathBuf;

use receipts::model::{
    CampaignId, FrozenCampaign, MinerRegistry, RoundRecord, Sha256Hex, Submission, Timestamp,
};
use receipts::verify::VerifyReport;
use verifier::view::RoundView;

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
    pub log: crate::log::LogState,
}

/// One campaign and what the data directory holds for it.
#[derive(Clone, Debug)]
pub struct CampaignArchive {
    /// The campaign id.
    pub id: CampaignId,
    /// The frozen campaign (`campaign.json`).
    pub campaign: FrozenCampaign,
    /// Rounds whose bundle verified, by round number ascending.
    pub rounds: Vec<VerifiedRound>,
    /// The evaluator's unsigned submission records, by patch sha256 (unsigned: pages
    /// built from them say so).
    pub submissions: Vec<Submission>,
    /// The evaluator's unsigned miner registry.
    pub miners: MinerRegistry,
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
    /// The view-model `referee show` renders.
    pub view: RoundView,
    /// What verification said.
    pub report: VerifyReport,
    /// sha256 of the Statement bytes (the next round's `previousReceipt`); it covers
    /// every file of the bundle, so it keys the pages built from it.
    pub statement_digest: Sha256Hex,
    /// The instant key validity was checked at: the round's `endedAt`, or `--at`.
    pub verified_at: Timestamp,
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
}
