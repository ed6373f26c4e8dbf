//! The correctness verdict recomputed from an entry's per-item file (content/verifying.md,
//! Correctness): every per-position distance from the raw top-k of the entry and of the
//! reference the file stores, with `receipts::rules::correctness` — the runner's own
//! code — compared exactly (`correctness.distances`); then every item present, in order,
//! each item's distance the rounded mean of its stored position distances, and the
//! verdict of `receipts::rules::correctness` with the campaign's own bounds (not the
//! bounds the file writes), equal to the entry's summary (`correctness.verdict`).
//!
//! A file without raw top-k (written before they were recorded: every v1 and v2 bundle,
//! and v3 bundles sealed before) has its position distances taken as stored:
//! `correctness.distances` is `not applicable (no raw logprobs)` there, never passed. A
//! file where some items carry them and others do not fails.

use std::collections::BTreeSet;
use std::path::Path;

use crate::{CheckName, FailureReason, PredicateVersion, VerifyReport, outputs};
use receipts::model::{
    CorrectnessItems, CorrectnessSpec, CorrectnessSummary, Entry, FrozenCampaign,
};
use receipts::rules::correctness::{
    item_distance_micro_nats, item_positions_micro_nats, verdict_from_artifact,
};

use crate::files::{read_json, same};

/// How `not applicable` names a per-item file without raw top-k.
const NO_RAW_LOGPROBS: &str = "no raw logprobs";

/// `correctness.verdict` and `correctness.distances`, once each per entry with a
/// correctness summary; the distances are not run when the file cannot be read. From v5
/// also, once each per such entry, `correctness.entry` and the cross-checks of
/// [`crate::outputs`]: `correctness.prompts` (not run without the campaign),
/// `correctness.greedy` and `correctness.reference` (against every earlier entry's file).
pub(crate) fn check_correctness(
    report: &mut VerifyReport,
    dir: &Path,
    record: &receipts::model::RoundRecord,
    campaign: Option<&FrozenCampaign>,
    version: PredicateVersion,
) {
    let spec = campaign.map(|c| &c.campaign.correctness);
    let files: Vec<EntryFile<'_>> = record
        .entries
        .iter()
        .filter_map(|entry| {
            let summary = entry.correctness.as_ref()?;
            Some(EntryFile {
                entry,
                at: format!("entries[{}].correctness", entry.index),
                summary,
                items: read_json(dir, &summary.items_file),
            })
        })
        .collect();
    for f in &files {
        let (at, summary) = (&f.at, f.summary);
        let verdict = f
            .items
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|items| recompute(at, summary, items, spec));
        report.record(CheckName::CorrectnessVerdict, Some(at.clone()), verdict);
        let distances = match &f.items {
            Ok(items) => distances(&summary.items_file, items, spec),
            Err(_) => Some(Err(FailureReason::NotRun {
                blocked_by: CheckName::CorrectnessVerdict,
            })),
        };
        match distances {
            Some(result) => {
                report.record(CheckName::CorrectnessDistances, Some(at.clone()), result);
            }
            None => report.not_applicable(
                CheckName::CorrectnessDistances,
                Some(at.clone()),
                NO_RAW_LOGPROBS,
            ),
        }
    }
    cross_check(report, dir, record, campaign, version, &files);
}

/// An entry's per-item file as read, with the entry citing it and its summary there.
struct EntryFile<'r> {
    /// The entry.
    entry: &'r Entry,
    /// `entries[i].correctness`, the target of its checks.
    at: String,
    /// Its correctness summary, which names the file.
    summary: &'r CorrectnessSummary,
    /// The file, or why it could not be read.
    items: Result<CorrectnessItems, FailureReason>,
}

/// `correctness.entry` and the cross-checks of [`crate::outputs`] on the entries'
/// per-item `files`; `not applicable` before v5.
fn cross_check(
    report: &mut VerifyReport,
    dir: &Path,
    record: &receipts::model::RoundRecord,
    campaign: Option<&FrozenCampaign>,
    version: PredicateVersion,
    files: &[EntryFile<'_>],
) {
    const CHECKS: [CheckName; 4] = [
        CheckName::CorrectnessEntry,
        CheckName::CorrectnessPrompts,
        CheckName::CorrectnessGreedy,
        CheckName::CorrectnessReference,
    ];
    if version < PredicateVersion::V5 {
        for name in CHECKS {
            report.not_applicable(name, None, version.name());
        }
        return;
    }
    let workload = campaign.map(|frozen| crate::plan::regenerated_workload(dir, record, frozen));
    // Without the campaign, the reference's answers are held identical.
    let tolerance = campaign
        .and_then(|frozen| frozen.campaign.correctness.reference_tolerance_micro_nats)
        .unwrap_or(0);
    let generated: BTreeSet<u32> = files
        .iter()
        .filter_map(|f| f.items.as_ref().ok())
        .flat_map(|items| items.items.iter())
        .flat_map(|i| i.output_token_ids.iter().copied())
        .collect();
    let mut banned = outputs::Banned::default();
    for (i, f) in files.iter().enumerate() {
        let (at, file) = (&f.at, f.summary.items_file.as_str());
        let items = match &f.items {
            Ok(items) => items,
            // The read error itself, so that a withheld file is excused like the verdict.
            Err(reason) => {
                for name in CHECKS {
                    report.fail(name, Some(at.clone()), reason.clone());
                }
                continue;
            }
        };
        let bound = crate::binding::file_bound(
            file,
            items.measured_for.as_ref(),
            record.round,
            f.entry,
            version,
        );
        report.record(CheckName::CorrectnessEntry, Some(at.clone()), bound);
        let prompts = match &workload {
            None => Err(FailureReason::NotRun {
                blocked_by: CheckName::InputsCampaign,
            }),
            Some(Err(reason)) => Err(reason.clone()),
            Some(Ok(workload)) => outputs::prompts_are_the_items(file, items, workload),
        };
        report.record(CheckName::CorrectnessPrompts, Some(at.clone()), prompts);
        let greedy = outputs::greedy_ids(file, items, &mut banned, &generated);
        report.record(CheckName::CorrectnessGreedy, Some(at.clone()), greedy);
        let reference = files[..i]
            .iter()
            .try_for_each(|earlier| match &earlier.items {
                Ok(before) => outputs::same_reference(
                    file,
                    items,
                    &earlier.summary.items_file,
                    before,
                    tolerance,
                ),
                Err(_) => Ok(()),
            });
        report.record(CheckName::CorrectnessReference, Some(at.clone()), reference);
    }
}

/// `correctness.distances` over the per-item file `file`: each item's position distances
/// recomputed by [`item_positions_micro_nats`] from its `entryTopK` and `referenceTopK`
/// with the campaign's `top_k` (the file's without a campaign), as many positions as
/// output tokens, each equal to the stored `positionMicroNats`. `None` when no item
/// carries raw top-k.
fn distances(
    file: &str,
    items: &CorrectnessItems,
    spec: Option<&CorrectnessSpec>,
) -> Option<Result<(), FailureReason>> {
    if items
        .items
        .iter()
        .all(|i| i.entry_top_k.is_none() && i.reference_top_k.is_none())
    {
        return None;
    }
    let k = spec.map_or(items.top_k, |s| s.top_k);
    let unusable = |message: String| FailureReason::ArtifactUnreadable {
        file: file.to_owned(),
        message,
    };
    Some(items.items.iter().try_for_each(|item| {
        let at = format!("items[{}]", item.index);
        let (Some(entry), Some(reference)) = (&item.entry_top_k, &item.reference_top_k) else {
            let missing = if item.entry_top_k.is_none() {
                "entryTopK"
            } else {
                "referenceTopK"
            };
            return Err(unusable(format!(
                "{at} has no {missing}, which other items of the file have"
            )));
        };
        same(
            file,
            &format!("{at}.entryTopK positions"),
            entry.len(),
            item.output_token_ids.len(),
        )?;
        let positions = item_positions_micro_nats(item.index, k, entry, reference)
            .map_err(|e| unusable(e.to_string()))?;
        same(
            file,
            &format!("{at}.positionMicroNats positions"),
            item.position_micro_nats.len(),
            positions.len(),
        )?;
        item.position_micro_nats
            .iter()
            .zip(&positions)
            .enumerate()
            .try_for_each(|(p, (claimed, recomputed))| {
                same(
                    file,
                    &format!("{at}.positionMicroNats[{p}]"),
                    *claimed,
                    *recomputed,
                )
            })
    }))
}

/// The file's items are 0, 1, … (as many as the campaign asks, and as the summary says),
/// its bounds are the campaign's, every stored item distance is its positions' mean, and
/// the verdict on them is the summary.
fn recompute(
    at: &str,
    summary: &CorrectnessSummary,
    items: &CorrectnessItems,
    spec: Option<&CorrectnessSpec>,
) -> Result<(), FailureReason> {
    let file = summary.items_file.as_str();
    let expected = spec.map_or(summary.items, |s| s.items);
    let found = u32::try_from(items.items.len()).unwrap_or(u32::MAX);
    let misplaced = items
        .items
        .iter()
        .enumerate()
        .find(|(i, item)| u32::try_from(*i).ok() != Some(item.index))
        .map(|(i, _)| u32::try_from(i).unwrap_or(u32::MAX));
    if let Some(index) = misplaced.or((found < expected).then_some(found)) {
        return Err(FailureReason::MissingItem {
            file: file.to_owned(),
            index,
            found,
            expected,
        });
    }
    same(
        "receipt.dsse.json",
        &format!("{at}.items"),
        summary.items,
        found,
    )?;
    if let Some(spec) = spec {
        same(file, "groupSize", items.group_size, spec.group_size)?;
        same(
            file,
            "groupMeanBoundMicroNats",
            items.group_mean_bound_micro_nats,
            spec.group_mean_bound_micro_nats,
        )?;
        same(
            file,
            "itemBoundMicroNats",
            items.item_bound_micro_nats,
            spec.item_bound_micro_nats,
        )?;
        same(file, "topK", items.top_k, spec.top_k)?;
    }
    let (verdict, consistent) = verdict_from_artifact(items);
    if !consistent {
        for item in &items.items {
            same(
                file,
                &format!("items[{}].distanceMicroNats", item.index),
                item.distance_micro_nats,
                item_distance_micro_nats(&item.position_micro_nats),
            )?;
        }
    }
    let receipt = "receipt.dsse.json";
    same(
        receipt,
        &format!("{at}.passed"),
        summary.passed,
        verdict.passed,
    )?;
    same(
        receipt,
        &format!("{at}.maxItemMicroNats"),
        summary.max_item_micro_nats,
        verdict.max_item_micro_nats,
    )?;
    same(
        receipt,
        &format!("{at}.maxGroupMeanMicroNats"),
        summary.max_group_mean_micro_nats,
        verdict.max_group_mean_micro_nats,
    )?;
    same(
        receipt,
        &format!("{at}.firstFailingItem"),
        summary.first_failing_item,
        verdict.first_failing_item,
    )?;
    same(
        receipt,
        &format!("{at}.firstFailingGroup"),
        summary.first_failing_group,
        verdict.first_failing_group,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::model::{CorrectnessItem, MAX_CORRECTNESS_POSITIONS, Sha256Hex};

    /// A per-item file with every integer at its widest (item indices, token ids and
    /// prompt lengths 2³² − 1, distances 2⁶⁴ − 1, logprobs −10⁹ nats, top-k 20 on both
    /// sides), `items` items of `positions` positions, as the runner writes it (one line,
    /// a newline): its size in bytes.
    fn widest_file_bytes(items: usize, positions: usize) -> usize {
        let side = vec![vec![(u32::MAX, -1_000_000_000_000_000i64); 20]; positions];
        let item = CorrectnessItem {
            index: u32::MAX,
            prompt_sha256: Sha256Hex::digest(b"prompt"),
            prompt_tokens: u32::MAX,
            output_token_ids: vec![u32::MAX; positions],
            position_micro_nats: vec![u64::MAX; positions],
            distance_micro_nats: u64::MAX,
            entry_top_k: Some(side.clone()),
            reference_top_k: Some(side),
        };
        let file = CorrectnessItems {
            top_k: 20,
            group_size: u32::MAX,
            group_mean_bound_micro_nats: u64::MAX,
            item_bound_micro_nats: u64::MAX,
            items: vec![item; items],
            measured_for: None,
        };
        serde_json::to_vec(&file).unwrap().len() + 1
    }

    /// A campaign at the positions cap (`items × output_tokens`), one position an item
    /// or all in one item, writes a file the verifier still reads. Every value at its
    /// widest, the size is linear in items and in positions: measured on small files.
    #[test]
    fn the_largest_correctness_file_a_campaign_allows_is_read() {
        let base = widest_file_bytes(1, 1);
        let per_item = widest_file_bytes(2, 1) - base;
        let per_position = widest_file_bytes(1, 2) - base;
        let size = |items: usize, positions: usize| {
            base + (items - 1) * (per_item + (positions - 1) * per_position)
                + (positions - 1) * per_position
        };
        assert_eq!(size(3, 4), widest_file_bytes(3, 4));
        let cap = usize::try_from(MAX_CORRECTNESS_POSITIONS).unwrap();
        for (items, positions) in [(cap, 1), (1, cap)] {
            let bytes = size(items, positions);
            assert!(
                bytes <= crate::files::MAX_ARTIFACT_BYTES,
                "{items} items of {positions} positions: {bytes} bytes"
            );
        }
        // 57.9 MiB and 48.7 MiB of the 64 MiB read.
        assert_eq!((size(cap, 1), size(1, cap)), (60_760_134, 51_040_377));
    }
}
