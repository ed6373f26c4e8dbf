//! The rejected receipts `/rejected/`: every bundle that failed verification, with its
//! failed checks. Nothing of such a bundle is rendered as official anywhere else.

use serde::Serialize;
use verifier::view::Verification;

use crate::archive::{Archive, RejectedBundle};
use crate::error::SiteError;
use crate::pages::index::opt;
use crate::pages::{PageOut, TableLinks, TableRow, table_files, untrusted};
use crate::paths::SiteDir;

/// The model of `/rejected/`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RejectedModel {
    /// The rejected bundles, by campaign and round.
    pub bundles: Vec<BundleView>,
    /// One row per failed check, as CSV and JSON.
    pub table: TableLinks,
}

/// One rejected bundle.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BundleView {
    /// The campaign directory it was found under.
    pub campaign: String,
    /// The campaign's page.
    pub campaign_href: SiteDir,
    /// The round number its directory names.
    pub round: u64,
    /// The anchor of this bundle on the page (`demo-3`).
    pub anchor: String,
    /// The bundle as a path inside the data directory (`demo/rounds/3`).
    pub bundle: String,
    /// The round its record states, when it differs from its directory's.
    pub recorded_round: Option<u64>,
    /// The instant key validity was checked at (RFC 3339).
    pub verified_at: String,
    /// Why that instant, in words, escaped ([`crate::archive::AsOf::describe`]).
    pub as_of: String,
    /// Checks recorded, in all.
    pub checks: usize,
    /// The failed checks.
    pub failures: Vec<FailureRow>,
}

/// One failed check of a rejected bundle.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FailureRow {
    /// The campaign.
    pub campaign: String,
    /// The round its directory names.
    pub round: u64,
    /// The check's dotted name (`signature`, `round.scores`).
    pub check: String,
    /// What it concerns, when it runs per item.
    pub target: Option<String>,
    /// Why it failed (untrusted: it may quote bundle contents; made safe, and the
    /// builder's own path to the data directory replaced by the bundle's relative path).
    pub message: String,
}

impl TableRow for FailureRow {
    const COLUMNS: &'static [&'static str] = &["campaign", "round", "check", "target", "message"];

    fn cells(&self) -> Vec<String> {
        vec![
            self.campaign.clone(),
            self.round.to_string(),
            self.check.clone(),
            opt(self.target.as_ref()),
            self.message.clone(),
        ]
    }
}

/// Builds `/rejected/`.
///
/// Errors: [`SiteError::Serialize`] when the table does not serialise.
pub fn page(archive: &Archive) -> Result<PageOut<RejectedModel>, SiteError> {
    let dir = SiteDir::rejected();
    let bundles: Vec<BundleView> = archive.rejected.iter().map(bundle_view).collect();
    let rows: Vec<FailureRow> = bundles.iter().flat_map(|b| b.failures.clone()).collect();
    let (table, files) = table_files(&dir, "failed-checks", &rows)?;
    Ok(PageOut {
        dir,
        template: "rejected.html",
        model: RejectedModel { bundles, table },
        files: files.into(),
    })
}

fn bundle_view(b: &RejectedBundle) -> BundleView {
    let relative = format!("{}/rounds/{}", b.campaign, b.number);
    let absolute = b.dir.display().to_string();
    let verification = Verification::of(&b.report);
    let failures = verification
        .failures
        .iter()
        .map(|f| FailureRow {
            campaign: b.campaign.to_string(),
            round: b.number,
            check: f.check.as_str().to_owned(),
            target: f
                .target
                .as_deref()
                .map(|t| untrusted(&t.replace(&absolute, &relative))),
            message: untrusted(&f.message.replace(&absolute, &relative)),
        })
        .collect();
    BundleView {
        campaign: b.campaign.to_string(),
        campaign_href: SiteDir::campaign(&b.campaign),
        round: b.number,
        anchor: format!("{}-{}", b.campaign, b.number),
        bundle: relative,
        recorded_round: b.recorded_round,
        verified_at: b.verified_at.to_string(),
        as_of: untrusted(&b.as_of.describe()),
        checks: verification.checks,
        failures,
    }
}
