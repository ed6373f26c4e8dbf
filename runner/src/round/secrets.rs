//! Defence in depth for the keys (content/threat-model.md, The evaluator's key): before
//! the round is sealed, every file its runs wrote into the bundle (`logs/`, `probes/`,
//! `correctness/`: what an engine's output reaches) is searched for the evaluator's and
//! the transparency log's private key material ([`PrivateKey::seed_forms`]: raw, hex and
//! base64). A file that holds it is replaced by the withheld line of
//! [`receipts::rules::redaction`], the entry whose run wrote it is disqualified
//! `secret_in_output` (finish.rs), the round is sealed, and `referee round` exits non-zero
//! telling the evaluator to rotate the key. The finds are journaled before any file is
//! rewritten, so a runner killed in between withholds the same files on resume.

use std::collections::BTreeMap;

use receipts::bundle::{EntryKind, list_files};
use receipts::fsutil::{read_limited, write_atomic};
use receipts::keys::SeedForms;
use receipts::rules::engine_log::max_file_bytes;
use receipts::rules::redaction::{withheld, withheld_bytes};

use super::record::{PlannedEntry, Record, WithheldFile, WithheldRecord};
use super::{Ctx, RoundError, io};

/// The largest bundle file other than an engine log the runner writes (a probe log, a
/// correctness file, a step log) is far smaller than this.
const MAX_OTHER_FILE_BYTES: u64 = 128 << 20;

/// The largest bundle file searched: an engine log under the campaign's
/// `limits.engine_log_bytes` (`rules::engine_log::max_file_bytes`), or any other file.
fn max_searched_bytes(ctx: &Ctx<'_>) -> usize {
    let budget = ctx.frozen.campaign.effective_limits().engine_log_bytes;
    let bytes = max_file_bytes(budget).max(MAX_OTHER_FILE_BYTES);
    usize::try_from(bytes).unwrap_or(usize::MAX)
}

/// Finds and withholds the bundle's files that hold key material (module doc), once:
/// on resume the journaled finds are withheld again. Returns them.
///
/// Errors: [`RoundError::Seal`] when the bundle cannot be listed, [`RoundError::Io`]
/// when a file cannot be read or rewritten (a file over [`max_searched_bytes`] is an
/// error: it cannot be cleared), [`RoundError::Journal`].
pub(crate) fn withhold(ctx: &mut Ctx<'_>) -> Result<Vec<WithheldFile>, RoundError> {
    let journaled = ctx.journal.records.iter().find_map(|r| match r {
        Record::Withheld(w) => Some(w.files.clone()),
        _ => None,
    });
    let files = match journaled {
        Some(files) => files,
        None => {
            let files = find(ctx)?;
            ctx.journal.append(Record::Withheld(WithheldRecord {
                files: files.clone(),
            }))?;
            files
        }
    };
    for file in &files {
        let path = ctx.bundle.join(&file.path);
        write_atomic(&path, withheld(file.bytes).as_bytes(), 0o644)
            .map_err(io("withholding", &path))?;
    }
    Ok(files)
}

/// The bundle's directories an engine's output reaches. The inputs and the round-opened
/// statement were written and signed before any engine ran: withholding one would break
/// what the round committed to, and key material there was exposed before the round.
const SEARCHED: [&str; 3] = ["logs/", "probes/", "correctness/"];

/// The files of [`SEARCHED`] holding the key material of the evaluator's key or the
/// log's.
fn find(ctx: &Ctx<'_>) -> Result<Vec<WithheldFile>, RoundError> {
    let mut forms: Vec<SeedForms> = vec![ctx.key.seed_forms()];
    if let Some(logger) = &ctx.logger {
        forms.push(logger.key().seed_forms());
    }
    let entries = ctx.setup.as_ref().map_or(&[][..], |s| &s.entries[..]);
    let mut found = Vec::new();
    let listed = list_files(&ctx.bundle).map_err(|source| RoundError::Seal {
        round: ctx.round,
        source,
    })?;
    let searched = |name: &str| SEARCHED.iter().any(|dir| name.starts_with(dir));
    let max_searched = max_searched_bytes(ctx);
    for file in listed
        .iter()
        .filter(|f| f.kind == EntryKind::File && searched(&f.name))
    {
        let bytes = read_limited(&file.path, max_searched)
            .map_err(io("searching for key material", &file.path))?;
        // A file already withheld (a resumed round whose journal lost nothing) is clean.
        if withheld_bytes(&bytes).is_some() || !forms.iter().any(|f| f.found_in(&bytes)) {
            continue;
        }
        found.push(WithheldFile {
            entry: writer(entries, &file.name),
            path: file.name.clone(),
            bytes: bytes.len() as u64,
        });
    }
    Ok(found)
}

/// The entry whose run wrote the bundle file `name`: its engine log, probe log,
/// correctness or load-sample file, each named from the entry's slug
/// (`logs/engines/<slug>-pass-1.log`, `probes/<slug>-control-pass-2.json`,
/// `correctness/<slug>.json`); the longest slug that names it wins. `None` for the
/// runner's own files (step logs, the scorer's log, the inputs).
fn writer(entries: &[PlannedEntry], name: &str) -> Option<u32> {
    let file = name.rsplit('/').next()?;
    let dir = name.split('/').next()?;
    if !matches!(dir, "logs" | "probes" | "correctness") || name.starts_with("logs/steps/") {
        return None;
    }
    entries
        .iter()
        .filter(|e| {
            file.strip_prefix(e.slug.as_str())
                .is_some_and(|rest| rest.starts_with('-') || rest.starts_with('.'))
        })
        .max_by_key(|e| e.slug.len())
        .map(|e| e.index)
}

/// How many withheld files each entry wrote, by entry index.
pub(crate) fn per_entry(files: &[WithheldFile]) -> BTreeMap<u32, u32> {
    let mut counts = BTreeMap::new();
    for index in files.iter().filter_map(|f| f.entry) {
        *counts.entry(index).or_insert(0) += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use receipts::model::Role;

    use super::*;

    fn planned(index: u32, slug: &str) -> PlannedEntry {
        PlannedEntry {
            index,
            role: if index == 0 {
                Role::Baseline
            } else {
                Role::Challenger
            },
            miner: None,
            patch: None,
            group: String::new(),
            slug: slug.to_owned(),
            image: None,
        }
    }

    #[test]
    fn a_file_is_charged_to_the_entry_whose_slug_names_it() {
        let entries = [
            planned(0, "baseline"),
            planned(1, "candidate-1-miner-a"),
            planned(11, "candidate-11-miner-a"),
        ];
        let cases = [
            ("logs/engines/baseline-control-pass-2.log", Some(0)),
            ("logs/engines/candidate-1-miner-a-pass-1.log", Some(1)),
            ("probes/candidate-11-miner-a-pass-3.json", Some(11)),
            ("correctness/candidate-1-miner-a.json", Some(1)),
            ("correctness/candidate-1-miner-a-load-sample.json", Some(1)),
            ("logs/engines/scorer.log", None),
            ("logs/steps/03-baseline-pass-1-running-sla.log", None),
            ("inputs/miners.json", None),
            ("round-opened.dsse.json", None),
        ];
        for (name, entry) in cases {
            assert_eq!(writer(&entries, name), entry, "{name}");
        }
    }

    #[test]
    fn withheld_files_are_counted_per_entry() {
        let file = |entry| WithheldFile {
            path: String::new(),
            bytes: 1,
            entry,
        };
        assert_eq!(
            per_entry(&[file(Some(2)), file(None), file(Some(2)), file(Some(0))]),
            BTreeMap::from([(0, 1), (2, 2)])
        );
    }
}
