//! The correctness verdict recomputed from an entry's per-item file (content/verifying.md,
//! Correctness): every item present, in order; each item's distance the rounded mean of
//! its stored position distances; the verdict of `receipts::rules::correctness` with the
//! campaign's own bounds (not the bounds the file writes), equal to the entry's summary.
//! Raw top-k logprobs are not in today's files, so the position distances themselves are
//! taken as stored.

use std::path::Path;

use receipts::model::{CorrectnessItems, CorrectnessSpec, CorrectnessSummary, FrozenCampaign};
use receipts::rules::correctness::{item_distance_micro_nats, verdict_from_artifact};
use receipts::verify::{CheckName, FailureReason, VerifyReport};

use crate::files::{read_json, same};

/// `correctness.verdict`, once per entry with a correctness summary.
pub(crate) fn check_correctness(
    report: &mut VerifyReport,
    dir: &Path,
    record: &receipts::model::RoundRecord,
    campaign: Option<&FrozenCampaign>,
) {
    for entry in &record.entries {
        let Some(summary) = &entry.correctness else {
            continue;
        };
        let at = format!("entries[{}].correctness", entry.index);
        let result = read_json::<CorrectnessItems>(dir, &summary.items_file).and_then(|items| {
            recompute(
                &at,
                summary,
                &items,
                campaign.map(|c| &c.campaign.correctness),
            )
        });
        report.record(CheckName::CorrectnessVerdict, Some(at), result);
    }
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
