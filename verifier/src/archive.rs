//! Many bundles at once (content/verifying.md, Archives): every bundle under a directory
//! (a data directory, a campaign's `rounds/`, any archive of bundles) is verified in
//! parallel on rayon's pool, one bad bundle never stopping the others; the bundles of
//! each `rounds/` directory are then checked as a chain (`chain`), and with
//! [`verify_data`] each campaign's submission records against its rounds
//! (`submissions`). The summary counts verified and failed bundles and groups
//! the failures by check.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::{VerifyOptions, VerifyReport};
use receipts::bundle::ENVELOPE_FILE;
use receipts::fsutil::IoError;
use receipts::keys::Keyring;
use receipts::model::RoundRecord;

use crate::chain::{ChainLink, Link, check_chain};
use crate::submissions::{SUBMISSIONS_DIR, SealedRound, check_submissions};
use crate::verify_round_bundle;

/// The name of the directory whose bundles form a chain (`<campaign>/rounds/<n>`).
pub(crate) const ROUNDS_DIR: &str = "rounds";

/// Every bundle directory (one holding [`ENVELOPE_FILE`]) under `root`, `root` itself
/// included, sorted by path. A bundle's own subdirectories and hidden directories
/// (`.work/`, where rounds in progress live) are not searched; symlinks are not followed.
///
/// Errors: [`IoError`] when a directory cannot be read.
pub fn find_bundles(root: &Path) -> Result<Vec<PathBuf>, IoError> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_owned()];
    while let Some(dir) = pending.pop() {
        if dir.join(ENVELOPE_FILE).is_file() {
            found.push(dir);
            continue;
        }
        let entries = std::fs::read_dir(&dir).map_err(|source| IoError {
            action: "reading archive directory",
            path: dir.clone(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| IoError {
                action: "reading archive directory",
                path: dir.clone(),
                source,
            })?;
            let hidden = entry.file_name().to_string_lossy().starts_with('.');
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir && !hidden {
                pending.push(entry.path());
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Verifies every bundle of `bundles` ([`crate::verify_bundle`]) in parallel, then the
/// chain checks over the bundles of each `rounds/` directory; calls `progress` once per
/// bundle verified (from any thread). Returns the reports in the order of `bundles`.
pub fn verify_archive(
    bundles: &[PathBuf],
    keyring: &Keyring,
    options: &VerifyOptions,
    progress: &(dyn Fn() + Sync),
) -> Vec<VerifyReport> {
    verify_archive_with(bundles, keyring, &|_| options.clone(), progress)
}

/// [`verify_archive`] with the options of each bundle chosen by `options_for` (the site
/// verifies each bundle as of its own seal time).
pub fn verify_archive_with(
    bundles: &[PathBuf],
    keyring: &Keyring,
    options_for: &(dyn Fn(&Path) -> VerifyOptions + Sync),
    progress: &(dyn Fn() + Sync),
) -> Vec<VerifyReport> {
    verify_chains(bundles, keyring, options_for, progress).0
}

/// What [`verify_data`] found: a report per bundle and one per campaign whose
/// submission records were checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataReports {
    /// One per bundle, in the order given ([`verify_archive`]).
    pub bundles: Vec<VerifyReport>,
    /// One per campaign with a `submissions/` directory beside its `rounds/`, for that
    /// directory (`submissions.record`, `submissions.transitions`,
    /// `submissions.rounds`), in the order of the campaigns' paths. The records are the
    /// evaluator's own and unsigned: a failure here is no bundle's.
    pub submissions: Vec<VerifyReport>,
}

/// [`verify_archive`], then each campaign's submission records against the pipeline's
/// transition table and the rounds its `rounds/` directory holds
/// (`submissions`), and its title recomputed from its chain (`title.chain`, recorded in
/// the same campaign report): what `referee verify <data dir>` runs. `campaigns` names
/// campaign directories whose records are checked even without a sealed round (a
/// repository campaign's, before its first round).
pub fn verify_data(
    bundles: &[PathBuf],
    campaigns: &[PathBuf],
    keyring: &Keyring,
    options: &VerifyOptions,
    progress: &(dyn Fn() + Sync),
) -> DataReports {
    let (reports, records) = verify_chains(bundles, keyring, &|_| options.clone(), progress);
    let mut by_campaign: BTreeMap<&Path, Vec<SealedRound<'_>>> = campaigns
        .iter()
        .filter(|c| c.join(SUBMISSIONS_DIR).is_dir())
        .map(|c| (c.as_path(), Vec::new()))
        .collect();
    for (chain, indexes) in chains(bundles) {
        let Some(campaign) = chain.parent() else {
            continue;
        };
        if !campaign.join(SUBMISSIONS_DIR).is_dir() {
            continue;
        }
        let rounds = by_campaign.entry(campaign).or_default();
        for i in indexes {
            if let Some(record) = &records[i] {
                rounds.push(SealedRound {
                    bundle: &bundles[i],
                    record,
                });
            }
        }
    }
    let submissions = by_campaign
        .into_iter()
        .map(|(campaign, rounds)| {
            let mut report = check_submissions(campaign, &rounds, keyring);
            let sealed: Vec<(&Path, &RoundRecord)> =
                rounds.iter().map(|r| (r.bundle, r.record)).collect();
            crate::title::check_title(campaign, &sealed, keyring, &mut report);
            report
        })
        .collect();
    DataReports {
        bundles: reports,
        submissions,
    }
}

/// The bundles of each `rounds/` directory among `bundles`, as indexes into it, by the
/// directory.
fn chains(bundles: &[PathBuf]) -> BTreeMap<&Path, Vec<usize>> {
    let mut chains: BTreeMap<&Path, Vec<usize>> = BTreeMap::new();
    for (i, dir) in bundles.iter().enumerate() {
        let Some(parent) = dir.parent() else {
            continue;
        };
        if parent.file_name().is_some_and(|n| n == ROUNDS_DIR) {
            chains.entry(parent).or_default().push(i);
        }
    }
    chains
}

/// Every bundle verified in parallel, then the chain checks: the reports and the round
/// records, in the order of `bundles`.
fn verify_chains(
    bundles: &[PathBuf],
    keyring: &Keyring,
    options_for: &(dyn Fn(&Path) -> VerifyOptions + Sync),
    progress: &(dyn Fn() + Sync),
) -> (Vec<VerifyReport>, Vec<Option<RoundRecord>>) {
    let verify = |dir: &Path| verify_round_bundle(dir, keyring, &options_for(dir));
    check_archive_by(bundles, &verify, progress)
}

/// The checks across rounds of [`verify_archive`] over `bundles`, each bundle's own
/// verification given by `verify` (run in parallel; what [`verify_round_bundle`]
/// returns: its report and its round record) — the site answers it from its cache of
/// earlier verdicts for bundles that did not change. Returns the reports, the chain
/// checks added, and the records, in the order of `bundles`.
pub fn check_archive_by(
    bundles: &[PathBuf],
    verify: &(dyn Fn(&Path) -> (VerifyReport, Option<RoundRecord>) + Sync),
    progress: &(dyn Fn() + Sync),
) -> (Vec<VerifyReport>, Vec<Option<RoundRecord>>) {
    let (mut reports, records) = verify_each(bundles, verify, progress);
    let links: Vec<Option<ChainLink>> = records
        .iter()
        .map(|r| r.as_ref().map(ChainLink::of))
        .collect();
    check_chains(bundles, &mut reports, &links);
    (reports, records)
}

/// [`check_archive_by`] where each bundle's own verification hands over only its
/// [`ChainLink`] (`None` when its predicate did not pass a round schema) instead of its
/// whole record, so no record outlives its bundle's own checks (the site builds at any
/// number of rounds in flat memory this way). The same checks, recorded the same way:
/// returns the reports with the chain checks added, in the order of `bundles`.
pub fn check_archive_links(
    bundles: &[PathBuf],
    verify: &(dyn Fn(&Path) -> (VerifyReport, Option<ChainLink>) + Sync),
    progress: &(dyn Fn() + Sync),
) -> Vec<VerifyReport> {
    let (mut reports, links) = verify_each(bundles, verify, progress);
    check_chains(bundles, &mut reports, &links);
    reports
}

/// `verify` of every bundle of `bundles` in parallel (calling `progress` after each),
/// unzipped, in the order of `bundles`.
fn verify_each<T: Send>(
    bundles: &[PathBuf],
    verify: &(dyn Fn(&Path) -> (VerifyReport, Option<T>) + Sync),
    progress: &(dyn Fn() + Sync),
) -> (Vec<VerifyReport>, Vec<Option<T>>) {
    bundles
        .par_iter()
        .map(|dir| {
            let result = verify(dir);
            progress();
            result
        })
        .collect::<Vec<_>>()
        .into_iter()
        .unzip()
}

/// The chain checks over the bundles of each `rounds/` directory among `bundles`, whose
/// reports and chain links are `reports` and `links` (same order), recorded in `reports`.
fn check_chains(bundles: &[PathBuf], reports: &mut [VerifyReport], links: &[Option<ChainLink>]) {
    let mut slots: Vec<Option<&mut VerifyReport>> = reports.iter_mut().map(Some).collect();
    for (chain, indexes) in chains(bundles) {
        let mut chain_links: Vec<Link<'_>> = indexes
            .into_iter()
            .filter_map(|i| {
                let report = slots[i].take()?;
                let place = bundles[i]
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.parse::<u64>().ok());
                Some(Link {
                    place,
                    report,
                    record: links[i].as_ref(),
                })
            })
            .collect();
        check_chain(chain, &mut chain_links);
    }
}

/// What an archive's verification found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchiveSummary {
    /// Bundles whose every check passed (or is not applicable).
    pub verified: usize,
    /// Bundles with a failed check.
    pub failed: usize,
    /// For each failed check's name, the bundles where it failed, in report order.
    pub failures_by_check: BTreeMap<&'static str, Vec<PathBuf>>,
}

impl ArchiveSummary {
    /// Counts `reports`.
    pub fn of(reports: &[VerifyReport]) -> Self {
        let mut failures_by_check: BTreeMap<&'static str, Vec<PathBuf>> = BTreeMap::new();
        for report in reports {
            for check in report.failures() {
                let bundles = failures_by_check.entry(check.name.as_str()).or_default();
                if bundles.last() != Some(&report.bundle) {
                    bundles.push(report.bundle.clone());
                }
            }
        }
        let failed = reports.iter().filter(|r| !r.passed()).count();
        Self {
            verified: reports.len() - failed,
            failed,
            failures_by_check,
        }
    }
}
