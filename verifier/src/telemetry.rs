//! `host.telemetry` (v9; content/verifying.md, Measurements): each run's telemetry summary
//! recomputed from its telemetry file with `receipts::rules::telemetry`, the one
//! implementation the runner used, so a throttled sample, an XID or a slow SM clock in
//! the file cannot be hidden by an edited receipt; a run with a violation is not counted
//! (`invalid`, re-run once), and an entry's `telemetry` failure names a run's violation.
//! A parallel run's file samples the GPUs of its lane, where the lane names real ones.

use std::path::Path;

use crate::files::{read_json, recomputed};
use crate::{CheckName, FailureReason, PredicateVersion, VerifyReport};
use receipts::model::{
    Entry, EntryInfraFailure, EntryPass, FrozenCampaign, GpuDevice, PassStatus, RoundRecord,
    RunTelemetry, TELEMETRY_FORMAT, TelemetryFile, TypedOrText,
};
use receipts::rules::telemetry::summarize;

/// The predicate file, as failure messages name it.
const RECEIPT: &str = "receipt.dsse.json";

/// Runs `host.telemetry` on every pass row and entry of `record` in the bundle `dir`,
/// under the frozen `campaign` (its `min_sm_clock_mhz`); `not applicable` before v9, not
/// run without the campaign.
pub(crate) fn check_telemetry(
    report: &mut VerifyReport,
    dir: &Path,
    record: &RoundRecord,
    campaign: Option<&FrozenCampaign>,
    version: PredicateVersion,
) {
    if version < PredicateVersion::V9 {
        report.not_applicable(CheckName::HostTelemetry, None, version.name());
        return;
    }
    let hardware = &record.hardware;
    for (at, fingerprint) in [
        ("hardware.atStart.nvml", &hardware.at_start),
        ("hardware.atEnd.nvml", &hardware.at_end),
    ] {
        let result = match fingerprint.nvml {
            Some(_) => Ok(()),
            None => Err(recomputed(
                RECEIPT,
                at,
                "none",
                "NVML's driver, CUDA version and GPUs (`unavailable` without NVML)",
            )),
        };
        report.record(CheckName::HostTelemetry, Some(at.to_owned()), result);
    }
    let Some(campaign) = campaign else {
        report.not_run(&[CheckName::HostTelemetry], CheckName::InputsCampaign);
        return;
    };
    let min_sm_clock_mhz = campaign.campaign.min_sm_clock_mhz;
    for entry in &record.entries {
        for (j, pass) in entry.passes.iter().enumerate() {
            let at = format!("entries[{}].passes[{j}]", entry.index);
            if pass.telemetry.is_none() && pass.probe_log.is_none() {
                continue;
            }
            let result = check_row(dir, &at, pass, min_sm_clock_mhz);
            report.record(CheckName::HostTelemetry, Some(at), result);
        }
        if let Some(result) = check_entry(entry) {
            let at = format!("entries[{}]", entry.index);
            report.record(CheckName::HostTelemetry, Some(at), result);
        }
    }
}

/// One pass row `at`: a row with a probe log has telemetry, its summary is the file's,
/// a parallel run's GPU readings are its lane's ([`lane_sampled`]), and a violation
/// leaves it neither `measured` nor `sla_unmet`.
fn check_row(
    dir: &Path,
    at: &str,
    pass: &EntryPass,
    min_sm_clock_mhz: Option<u32>,
) -> Result<(), FailureReason> {
    let Some(claimed) = &pass.telemetry else {
        return Err(recomputed(
            RECEIPT,
            format!("{at}.telemetry"),
            "none",
            "a telemetry file and its summary (every run that reached its SLA run has one)",
        ));
    };
    let file: TelemetryFile = read_json(dir, &claimed.file)?;
    if file.format != TELEMETRY_FORMAT {
        return Err(recomputed(
            &claimed.file,
            "format",
            file.format,
            TELEMETRY_FORMAT,
        ));
    }
    lane_sampled(pass, &file, &claimed.file)?;
    let summary = summarize(&file, &claimed.file, min_sm_clock_mhz);
    if let Some((field, claimed, recomputed_value)) = first_difference(claimed, &summary) {
        return Err(recomputed(
            RECEIPT,
            format!("{at}.telemetry.{field}"),
            claimed,
            recomputed_value,
        ));
    }
    match (&summary.violation, pass.status) {
        (Some(violation), PassStatus::Measured | PassStatus::SlaUnmet) => Err(recomputed(
            RECEIPT,
            format!("{at}.status"),
            format!("{:?}", pass.status),
            format!("Invalid (telemetry: {violation})"),
        )),
        _ => Ok(()),
    }
}

/// A parallel run's file (`file`, at bundle path `name`) that samples GPUs samples its
/// lane's (`pass.gpus`, by UUID, in order) where the lane names real ones: telemetry of
/// another lane's GPU cannot stand for the run's (content/noise.md, Parallel passes).
fn lane_sampled(pass: &EntryPass, file: &TelemetryFile, name: &str) -> Result<(), FailureReason> {
    let lane: Vec<&str> = (pass.gpus.iter())
        .map(|g| g.uuid.as_str())
        .filter(|uuid| *uuid != GpuDevice::PLACEHOLDER)
        .collect();
    let sampled: Vec<&str> = file.gpus.iter().map(String::as_str).collect();
    if lane.is_empty() || sampled.is_empty() || sampled == lane {
        return Ok(());
    }
    Err(recomputed(
        name,
        "gpus",
        format!("{sampled:?}"),
        format!("{lane:?} (the GPUs of the run's lane)"),
    ))
}

/// The first field of `claimed` that differs from `summary`, as `(camelCase name,
/// claimed, recomputed)` JSON texts (`none` for an absent value).
fn first_difference(
    claimed: &RunTelemetry,
    summary: &RunTelemetry,
) -> Option<(String, String, String)> {
    let (Ok(serde_json::Value::Object(a)), Ok(serde_json::Value::Object(b))) =
        (serde_json::to_value(claimed), serde_json::to_value(summary))
    else {
        return (claimed != summary).then(|| {
            (
                "".to_owned(),
                format!("{claimed:?}"),
                format!("{summary:?}"),
            )
        });
    };
    let text =
        |v: Option<&serde_json::Value>| v.map_or_else(|| "none".to_owned(), |v| v.to_string());
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .find(|k| a.get(*k) != b.get(*k))
        .map(|k| (k.clone(), text(a.get(k)), text(b.get(k))))
}

/// An entry `infra_failed` for telemetry names the violation of one of its runs (checked
/// against its file by [`check_row`]); `None` for any other entry.
fn check_entry(entry: &Entry) -> Option<Result<(), FailureReason>> {
    let Some(EntryInfraFailure::Telemetry { violation }) =
        entry.infra_failure.as_ref().and_then(TypedOrText::typed)
    else {
        return None;
    };
    let named = entry
        .passes
        .iter()
        .filter_map(|p| p.telemetry.as_ref())
        .any(|t| t.violation.as_ref() == Some(violation));
    Some(if named {
        Ok(())
    } else {
        Err(recomputed(
            RECEIPT,
            format!("entries[{}].infraFailure", entry.index),
            violation,
            "no run of the entry with that telemetry violation",
        ))
    })
}
