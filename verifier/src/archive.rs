//! Many bundles at once (content/verifying.md, Archives): every bundle under a directory
//! (a data directory, a campaign's `rounds/`, any archive of bundles) is verified in
//! parallel on rayon's pool, one bad bundle never stopping the others; the bundles of
//! each `rounds/` directory are then checked as a chain ([`crate::chain`]). The summary
//! counts verified and failed bundles and groups the failures by check.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use receipts::bundle::ENVELOPE_FILE;
use receipts::fsutil::IoError;
use receipts::keys::Keyring;
use receipts::verify::{VerifyOptions, VerifyReport};

use crate::chain::{Link, check_chain};
use crate::verify_round_bundle;

/// The name of the directory whose bundles form a chain (`<campaign>/rounds/<n>`).
const ROUNDS_DIR: &str = "rounds";

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
    let verified: Vec<_> = bundles
        .par_iter()
        .map(|dir| {
            let result = verify_round_bundle(dir, keyring, &options_for(dir));
            progress();
            result
        })
        .collect();
    let (mut reports, records): (Vec<_>, Vec<_>) = verified.into_iter().unzip();
    let mut chains: BTreeMap<PathBuf, Vec<Link<'_>>> = BTreeMap::new();
    for ((dir, report), record) in bundles.iter().zip(reports.iter_mut()).zip(&records) {
        let Some(parent) = dir.parent() else {
            continue;
        };
        if parent.file_name().is_none_or(|n| n != ROUNDS_DIR) {
            continue;
        }
        let place = dir
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.parse::<u64>().ok());
        chains.entry(parent.to_owned()).or_default().push(Link {
            place,
            report,
            record: record.as_ref(),
        });
    }
    for (chain, links) in &mut chains {
        check_chain(chain, links);
    }
    reports
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
