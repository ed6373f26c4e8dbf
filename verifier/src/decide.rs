//! A `decide` campaign's round recomputed (content/s1-pro-speed.md): the round's track
//! record against the campaign (`decide.round`), each entry's weights identity against
//! the pinned digests (`decide.weights`), and each entry's logit-distance gate from its
//! per-item file (`decide.gate`): every item's distance from its two stored vectors,
//! every group mean and the verdict with `receipts::rules::decide` — the runner's own
//! code — and the campaign's bounds. Throughput needs nothing of its own here: a decide
//! request is one decision, so `throughputMilliRps` is milli-decisions per second, which
//! the measurement checks recompute from the probe logs as for completions.

use std::path::Path;

use crate::files::{read_json, recomputed, same};
use crate::{CheckName, FailureReason, PredicateVersion, VerifyReport};
use receipts::model::{
    DecideContract, DecideItems, DisqualificationReason, Entry, EntryStatus, FrozenCampaign,
    RoundRecord, Track, WorkloadKind,
};
use receipts::rules::decide::recompute_gate;
use receipts::rules::weights::compare;

/// The first predicate version whose rounds record the track ([`RoundRecord::decide`]).
const SINCE: PredicateVersion = PredicateVersion::V8;

/// Whether the round is a `decide` campaign's: the campaign says so, or without it the
/// receipt does.
pub(crate) fn is_decide(record: &RoundRecord, campaign: Option<&FrozenCampaign>) -> bool {
    match campaign {
        Some(frozen) => frozen.campaign.effective_workload_kind() == WorkloadKind::Decide,
        None => record.decide.is_some(),
    }
}

/// The completions gate's checks, `not applicable` for a `decide` campaign's round: its
/// gate files hold declared vectors, not greedy tokens (`decide.gate` checks them).
pub(crate) fn completions_gate_not_applicable(report: &mut VerifyReport) {
    for name in [
        CheckName::CorrectnessVerdict,
        CheckName::CorrectnessDistances,
        CheckName::CorrectnessEntry,
        CheckName::CorrectnessPrompts,
        CheckName::CorrectnessGreedy,
        CheckName::CorrectnessReference,
    ] {
        report.not_applicable(name, None, "decide campaign");
    }
}

/// `decide.round`, `decide.weights` and `decide.gate`: `not applicable` before
/// [`SINCE`]; not run without the campaign; only `decide.round` (no `decide` record) for
/// a completions campaign.
pub(crate) fn check_decide(
    report: &mut VerifyReport,
    dir: &Path,
    record: &RoundRecord,
    campaign: Option<&FrozenCampaign>,
    version: PredicateVersion,
) {
    const CHECKS: [CheckName; 3] = [
        CheckName::DecideRound,
        CheckName::DecideWeights,
        CheckName::DecideGate,
    ];
    if version < SINCE {
        for name in CHECKS {
            report.not_applicable(name, None, version.name());
        }
        return;
    }
    let Some(frozen) = campaign else {
        report.not_run(&CHECKS, CheckName::InputsCampaign);
        return;
    };
    let campaign = &frozen.campaign;
    let Some(contract) = campaign.decide.as_ref() else {
        let absent = match &record.decide {
            None => Ok(()),
            Some(_) => Err(recomputed(
                "receipt.dsse.json",
                "decide",
                "present",
                "absent (a completions campaign)",
            )),
        };
        // A completions round has no weights identity or gate file to check.
        report.record(CheckName::DecideRound, None, absent);
        return;
    };
    let receipt = "receipt.dsse.json";
    let round = match &record.decide {
        None => Err(recomputed(receipt, "decide", "absent", "present")),
        Some(decide) => same(receipt, "decide.track", decide.track, campaign.track).and(same(
            receipt,
            "decide.workloadKind",
            decide.workload_kind,
            WorkloadKind::Decide,
        )),
    };
    report.record(CheckName::DecideRound, None, round);
    if campaign.track == Some(Track::S1ProSpeed) {
        check_weights(report, record, &campaign.model.weights);
    } else {
        report.not_applicable(
            CheckName::DecideWeights,
            None,
            "no track with pinned weights",
        );
    }
    let workload = crate::plan::regenerated_workload(dir, record, frozen);
    let prompts = workload.map(|w| {
        w.correctness_items()
            .into_iter()
            .map(|item| item.prompt_sha256)
            .collect::<Vec<_>>()
    });
    for entry in &record.entries {
        let Some(summary) = &entry.correctness else {
            continue;
        };
        let at = format!("entries[{}].correctness", entry.index);
        let result = read_json::<DecideItems>(dir, &summary.items_file).and_then(|file| {
            let prompts = prompts.as_ref().map_err(Clone::clone)?;
            check_gate(
                record,
                entry,
                (&summary.items_file, &file),
                contract,
                prompts,
                version,
            )
        });
        report.record(CheckName::DecideGate, Some(at), result);
    }
}

/// `decide.weights`: every entry whose engine was configured (it has a recorded command
/// or a scored status) has its weights identity; each identity's files are the pinned
/// ones, or its entry is disqualified `compliance_failed` for them.
fn check_weights(
    report: &mut VerifyReport,
    record: &RoundRecord,
    pinned: &[receipts::model::WeightFile],
) {
    let rows = record
        .decide
        .as_ref()
        .map_or(&[][..], |d| d.weights.as_slice());
    for entry in &record.entries {
        let at = format!("decide.weights[{}]", entry.index);
        let started = entry.engine.command.is_some() || entry.status == EntryStatus::Scored;
        let result = match rows.iter().find(|w| w.entry == entry.index) {
            None if started => Err(recomputed(
                "receipt.dsse.json",
                at.clone(),
                "absent",
                "the entry's weights (its engine started)",
            )),
            None => continue,
            Some(row) => match compare(pinned, &row.files) {
                Ok(()) => Ok(()),
                Err(_) if disqualified_for_weights(entry) => Ok(()),
                Err(mismatch) => Err(recomputed(
                    "receipt.dsse.json",
                    format!("{at}.files"),
                    format!("{:?}", entry.status),
                    format!("disqualified: {mismatch}"),
                )),
            },
        };
        report.record(CheckName::DecideWeights, Some(at), result);
    }
}

/// Whether `entry` was disqualified for its weights (`compliance_failed`, before its
/// engine started).
fn disqualified_for_weights(entry: &Entry) -> bool {
    entry.status == EntryStatus::Disqualified
        && entry
            .disqualification
            .as_ref()
            .is_some_and(|dq| dq.reason == DisqualificationReason::ComplianceFailed)
}

/// One entry's gate file (`file`, named `name`) against the campaign's `contract`, the
/// regenerated `prompts` of the gate's items and the entry's summary.
fn check_gate(
    record: &RoundRecord,
    entry: &Entry,
    (name, file): (&str, &DecideItems),
    contract: &DecideContract,
    prompts: &[receipts::model::Sha256Hex],
    version: PredicateVersion,
) -> Result<(), FailureReason> {
    crate::binding::file_bound(
        name,
        file.measured_for.as_ref(),
        record.round,
        entry,
        version,
    )?;
    same(name, "decisions", &file.decisions, &contract.decisions)?;
    same(name, "groupSize", file.group_size, contract.group_size)?;
    same(
        name,
        "groupMeanBoundMicroNats",
        file.group_mean_bound_micro_nats,
        contract.group_mean_bound_micro_nats,
    )?;
    same(
        name,
        "itemBoundMicroNats",
        file.item_bound_micro_nats,
        contract.item_bound_micro_nats,
    )?;
    let expected = u32::try_from(prompts.len()).unwrap_or(u32::MAX);
    let found = u32::try_from(file.items.len()).unwrap_or(u32::MAX);
    let misplaced = (file.items.iter().enumerate())
        .find(|(i, item)| u32::try_from(*i).ok() != Some(item.index))
        .map(|(i, _)| u32::try_from(i).unwrap_or(u32::MAX));
    if let Some(index) = misplaced.or((found != expected).then_some(found.min(expected))) {
        return Err(FailureReason::MissingItem {
            file: name.to_owned(),
            index,
            found,
            expected,
        });
    }
    for (item, prompt) in file.items.iter().zip(prompts) {
        same(
            name,
            &format!("items[{}].promptSha256", item.index),
            item.prompt_sha256,
            *prompt,
        )?;
    }
    let (distances, verdict) = recompute_gate(file, contract);
    for (item, distance) in file.items.iter().zip(&distances) {
        same(
            name,
            &format!("items[{}].distanceMicroNats", item.index),
            item.distance_micro_nats,
            *distance,
        )?;
    }
    same(
        name,
        "groupMeansMicroNats",
        &file.group_means_micro_nats,
        &verdict.group_means_micro_nats,
    )?;
    let at = format!("entries[{}].correctness", entry.index);
    let receipt = "receipt.dsse.json";
    let summary = entry.correctness.as_ref();
    same(
        receipt,
        &format!("{at}.items"),
        summary.map(|s| s.items),
        Some(found),
    )?;
    same(
        receipt,
        &format!("{at}.passed"),
        summary.map(|s| s.passed),
        Some(verdict.passed),
    )?;
    same(
        receipt,
        &format!("{at}.maxItemMicroNats"),
        summary.map(|s| s.max_item_micro_nats),
        Some(verdict.max_item_micro_nats),
    )?;
    same(
        receipt,
        &format!("{at}.maxGroupMeanMicroNats"),
        summary.map(|s| s.max_group_mean_micro_nats),
        Some(verdict.max_group_mean_micro_nats),
    )?;
    same(
        receipt,
        &format!("{at}.firstFailingItem"),
        summary.and_then(|s| s.first_failing_item),
        verdict.first_failing_item,
    )?;
    same(
        receipt,
        &format!("{at}.firstFailingGroup"),
        summary.and_then(|s| s.first_failing_group),
        verdict.first_failing_group,
    )
}
