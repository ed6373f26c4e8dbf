//! `secret.withheld` (v5; content/verifying.md, Decision): a round withholds, before it
//! is sealed, every bundle file that held the evaluator's or the log's private key
//! material, and disqualifies the entry whose run wrote it `secret_in_output`
//! (content/threat-model.md). The check ties the two together — the withheld files among
//! those an entry cites are exactly as many as its reason's `files`, and no other entry
//! cites one — so a forger can neither disqualify a winner by that reason without
//! withholding its files, nor hide a file behind the withheld line. The checks that need
//! a withheld file of such an entry are then `not applicable (withheld)`.

use std::collections::BTreeSet;
use std::path::Path;

use receipts::model::{DisqualificationReason, Entry, RoundRecord};

use crate::files::is_withheld;
use crate::{CheckName, FailureReason, PredicateVersion, VerifyReport};

/// Why a check that needs a withheld file of an entry disqualified `secret_in_output`
/// did not run.
pub(crate) const WITHHELD: &str = "withheld";

/// Every bundle file `entry` cites: its pass rows' and runs' probe logs, its engine
/// logs, its correctness and load-sample files.
fn cited(entry: &Entry) -> BTreeSet<&str> {
    let passes = entry.passes.iter();
    let mut files: BTreeSet<&str> = passes
        .flat_map(|p| [p.probe_log.as_deref(), p.engine_log.as_deref()])
        .chain(entry.runs.iter().map(|r| Some(r.probe_log.as_str())))
        .chain([entry.engine_log.as_deref()])
        .flatten()
        .collect();
    if let Some(c) = &entry.correctness {
        files.insert(c.items_file.as_str());
        files.extend(c.load_sample_file.as_deref());
    }
    files
}

/// The `files` of a `secret_in_output` disqualification of `entry`, if it has one.
fn disqualified_files(entry: &Entry) -> Option<u32> {
    match entry.disqualification.as_ref()?.reason {
        DisqualificationReason::SecretInOutput { files } => Some(files),
        _ => None,
    }
}

/// `secret.withheld`, once per entry, then the failures of the other checks that read a
/// withheld file of an entry disqualified `secret_in_output` turned `not applicable
/// (withheld)`. Before v5 a round withheld nothing: `not applicable (vN)`.
pub(crate) fn check_withheld(
    report: &mut VerifyReport,
    dir: &Path,
    record: &RoundRecord,
    version: PredicateVersion,
) {
    if version < PredicateVersion::V5 {
        report.not_applicable(CheckName::SecretWithheld, None, version.name());
        return;
    }
    let mut excused: BTreeSet<String> = BTreeSet::new();
    for entry in &record.entries {
        let withheld: Vec<&str> = cited(entry)
            .into_iter()
            .filter(|f| is_withheld(dir, f))
            .collect();
        let count = u32::try_from(withheld.len()).unwrap_or(u32::MAX);
        let field = format!("entries[{}].disqualification", entry.index);
        let result = match disqualified_files(entry) {
            Some(files) if files == count && count > 0 => {
                excused.extend(withheld.iter().map(|f| (*f).to_owned()));
                Ok(())
            }
            Some(files) => Err(FailureReason::Recomputed {
                file: "receipt.dsse.json".to_owned(),
                field: format!("{field}.reason.secret_in_output.files"),
                claimed: files.to_string(),
                recomputed: count.to_string(),
            }),
            None if count == 0 => Ok(()),
            None => Err(FailureReason::Recomputed {
                file: "receipt.dsse.json".to_owned(),
                field: format!("{field}.reason"),
                claimed: entry
                    .disqualification
                    .as_ref()
                    .map_or("none", |d| d.reason.as_str())
                    .to_owned(),
                recomputed: format!("secret_in_output (withheld: {})", withheld.join(", ")),
            }),
        };
        report.record(CheckName::SecretWithheld, Some(field), result);
    }
    for check in &mut report.checks {
        if let Some(FailureReason::Withheld { file, .. }) = &check.reason
            && check.name != CheckName::SecretWithheld
            && excused.contains(file)
        {
            check.reason = None;
            check.not_applicable = Some(WITHHELD);
        }
    }
}
