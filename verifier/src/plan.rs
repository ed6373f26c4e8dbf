//! What the seeds fix about every probe (v5; content/verifying.md, Measurements): its
//! sub-stream is the one its run and position draw, and the items it sends are that
//! sub-stream's, regenerated from the revealed seeds and the bundle's campaign
//! (`receipts::rules::workload`), scheduled at its rate and cut by the load generator's
//! own rule ([`probe_request_count`]). So its warm-up and measured request counts and its
//! input bytes are recomputed exactly; its output tokens are at most the items'
//! `max_tokens`; and its duration (first scheduled send to last completion) is no
//! shorter than the scheduled span when every measured request completed.

use std::collections::BTreeSet;
use std::path::Path;

use crate::files::{ProbeLogs, recomputed, same};
use crate::{CheckName, FailureReason, PredicateVersion, VerifyReport};
use receipts::layout::PROMPTS_INPUT;
use receipts::model::{FrozenCampaign, ProbeRecord, PromptSource, RoundRecord};
use receipts::rules::workload::{Item, Workload, probe_request_count, scheduled_offset_ns};

/// Runs `probe.plan` once per probe log a pass row or a run summary of `record` names
/// (each read through `logs`), `not applicable` before v5 and not run without the
/// campaign (`inputs.campaign`).
pub(crate) fn check_probe_plans(
    report: &mut VerifyReport,
    dir: &Path,
    logs: &mut ProbeLogs<'_>,
    record: &RoundRecord,
    campaign: Option<&FrozenCampaign>,
    version: PredicateVersion,
) {
    if version < PredicateVersion::V5 {
        report.not_applicable(CheckName::ProbePlan, None, version.name());
        return;
    }
    let Some(frozen) = campaign else {
        report.not_run(&[CheckName::ProbePlan], CheckName::InputsCampaign);
        return;
    };
    let workload = match regenerated_workload(dir, record, frozen) {
        Ok(workload) => workload,
        Err(reason) => {
            report.fail(CheckName::ProbePlan, None, reason);
            return;
        }
    };
    let files: BTreeSet<&str> = record
        .entries
        .iter()
        .flat_map(|e| {
            let rows = e.passes.iter().filter_map(|p| p.probe_log.as_deref());
            rows.chain(e.runs.iter().map(|r| r.probe_log.as_str()))
        })
        .chain(
            record
                .drift
                .iter()
                .flat_map(|d| d.runs.iter().map(|r| r.probe_log.as_str())),
        )
        .collect();
    for file in files {
        // An unreadable log fails `probes.log`; nothing here to add.
        let Ok(log) = logs.get(file) else {
            continue;
        };
        let result = log.runs.iter().enumerate().try_for_each(|(r, run)| {
            run.probes.iter().enumerate().try_for_each(|(p, probe)| {
                probe_plan(file, &format!("runs[{r}].probes[{p}]"), probe, &workload)
            })
        });
        report.record(CheckName::ProbePlan, Some(file.to_owned()), result);
    }
}

/// The round's workload regenerated from its revealed seeds and the bundle's campaign
/// (with its JSONL prompt copy, for a JSONL source): what every recomputation of the
/// items a request sent starts from.
///
/// Errors: [`FailureReason::ArtifactUnreadable`] for an unreadable prompt copy,
/// [`FailureReason::InputInvalid`] when the workload cannot be built from it.
pub(crate) fn regenerated_workload(
    dir: &Path,
    record: &RoundRecord,
    frozen: &FrozenCampaign,
) -> Result<Workload, FailureReason> {
    let prompts = match &frozen.campaign.workload.prompt_source {
        PromptSource::Generated => None,
        PromptSource::Jsonl { .. } => {
            Some(crate::files::read_bytes(dir, PROMPTS_INPUT, usize::MAX)?)
        }
    };
    Workload::new(&frozen.campaign, &record.seeds, prompts.as_deref()).map_err(|e| {
        FailureReason::InputInvalid {
            file: PROMPTS_INPUT.to_owned(),
            message: e.to_string(),
        }
    })
}

/// What the seeds fix about a probe at its rate: its sub-stream's items in send order,
/// their scheduled offsets, and where its warm-up ends and its measured requests end
/// (`items[warmup..end]` are the measured ones), cut by the load generator's own rule.
pub(crate) struct PlannedProbe {
    /// The sub-stream's items, in send order.
    pub(crate) items: Vec<Item>,
    /// Each item's scheduled send offset at the probe's rate, ns.
    pub(crate) offsets: Vec<u64>,
    /// Warm-up requests sent.
    pub(crate) warmup: usize,
    /// Requests sent, warm-up included.
    pub(crate) end: usize,
}

/// The plan of `probe`'s sub-stream (the one it records) at its rate.
pub(crate) fn planned_probe(probe: &ProbeRecord, workload: &Workload) -> PlannedProbe {
    let spec = workload.rate_search();
    let items = workload.sub_stream(probe.sub_stream);
    let offsets: Vec<u64> = items
        .iter()
        .map(|item| scheduled_offset_ns(item.arrival_unit_ns, probe.rate_milli_rps))
        .collect();
    let end = probe_request_count(
        &offsets,
        spec.warmup_requests,
        spec.min_probe_requests,
        spec.min_probe_duration_ms,
    );
    let warmup = (spec.warmup_requests as usize).min(end);
    PlannedProbe {
        items,
        offsets,
        warmup,
        end,
    }
}

/// One probe `at` of `file` against the plan its sub-stream gives at its rate.
fn probe_plan(
    file: &str,
    at: &str,
    probe: &ProbeRecord,
    workload: &Workload,
) -> Result<(), FailureReason> {
    let sub_stream = workload.sub_stream_index(probe.run, probe.probe);
    same(
        file,
        &format!("{at}.subStream"),
        probe.sub_stream,
        sub_stream,
    )?;
    if probe.rate_milli_rps == 0 {
        return Err(recomputed(
            file,
            format!("{at}.rateMilliRps"),
            0,
            "at least 1",
        ));
    }
    let planned = planned_probe(probe, workload);
    let (items, offsets, warmup, end) = (
        &planned.items,
        &planned.offsets,
        planned.warmup,
        planned.end,
    );
    let measured = &items[warmup..end];
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    same(
        file,
        &format!("{at}.warmupRequests"),
        probe.warmup_requests,
        count(warmup),
    )?;
    same(
        file,
        &format!("{at}.requests"),
        probe.requests,
        count(measured.len()),
    )?;
    let input_bytes: u64 = measured.iter().map(|i| i.prompt.len() as u64).sum();
    same(
        file,
        &format!("{at}.inputBytes"),
        probe.input_bytes,
        input_bytes,
    )?;
    let ceiling: u64 = measured.iter().map(|i| u64::from(i.max_tokens)).sum();
    if probe.output_tokens > ceiling {
        return Err(recomputed(
            file,
            format!("{at}.outputTokens"),
            probe.output_tokens,
            format!("at most {ceiling} (the measured items' max_tokens)"),
        ));
    }
    let span_us = match (offsets.get(warmup), offsets.get(end.wrapping_sub(1))) {
        (Some(first), Some(last)) if end > warmup => (last - first) / 1000,
        _ => 0,
    };
    if probe.completed == probe.requests && probe.duration_us < span_us {
        return Err(recomputed(
            file,
            format!("{at}.durationUs"),
            probe.duration_us,
            format!("at least {span_us} (the measured requests' scheduled span)"),
        ));
    }
    Ok(())
}
