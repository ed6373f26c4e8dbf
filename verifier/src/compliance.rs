//! The compliance tests of record recomputed from the bundle's files (v7;
//! content/correctness.md, Compliance tests), with [`receipts::rules::compliance`]:
//!
//! - `compliance.textAgainstIds`: each entry's timed-run sample says whether its
//!   streamed texts were held against their ids — `checked` exactly where the campaign's
//!   API profile has a detokenizer, each checked request then recording both texts — and
//!   the entry is disqualified `text_not_ids` for exactly the first pair that differs,
//!   unless a sampled request diverged first (`load_outputs_diverge`) or an earlier
//!   reason disqualified it; a scored entry has no such pair.
//! - `compliance.outputLength`: per challenger, its probe logs of the runs that enter its
//!   score hold no request that ended short or long, or it is disqualified
//!   `output_length` for exactly the first such pass and its counts (unless an earlier
//!   reason disqualified it); a scored entry has none.
//! - `compliance.caching` (v9): per challenger, each counted run's probe log holds its
//!   caching probe exactly where the campaign asks for one, on the prompts the seeds
//!   draw, with its speed-up recomputed, and the entry is disqualified `caching` for
//!   exactly the first run whose repeats decoded faster than the bound (unless an earlier
//!   reason disqualified it); a scored entry has none.

use std::path::Path;

use receipts::model::{
    CachingProbe, DisqualificationReason, Entry, EntryStatus, FrozenCampaign, LoadSample,
    LoadSampleCheck, MeasurementOutcome, Role, RoundRecord, TextAgainstIds,
};
use receipts::rules::workload::Workload;
use receipts::rules::{compliance, sample};

use crate::PredicateVersion;
use crate::files::{self, ProbeLogs};
use crate::report::{CheckName, FailureReason, VerifyReport};

/// Both checks on every entry of `record` (not applicable before v7).
pub(crate) fn check_compliance(
    report: &mut VerifyReport,
    dir: &Path,
    logs: &mut ProbeLogs<'_>,
    record: &RoundRecord,
    campaign: Option<&FrozenCampaign>,
    version: PredicateVersion,
) {
    if version < PredicateVersion::V7 {
        report.not_applicable(CheckName::TextAgainstIds, None, version.name());
        report.not_applicable(CheckName::OutputLength, None, version.name());
        report.not_applicable(CheckName::Caching, None, version.name());
        return;
    }
    let detokenizer = campaign.map(|c| c.campaign.api_profile().detokenizer.is_some());
    for entry in &record.entries {
        if let Some(file) = entry
            .correctness
            .as_ref()
            .and_then(|c| c.load_sample_file.as_deref())
        {
            let result = files::read_json::<LoadSample>(dir, file)
                .and_then(|sample| text_against_ids(file, entry, &sample, detokenizer));
            report.record(
                CheckName::TextAgainstIds,
                Some(format!(
                    "entries[{}].correctness.loadSampleFile",
                    entry.index
                )),
                result,
            );
        }
        if entry.role != Role::Baseline {
            report.record(
                CheckName::OutputLength,
                Some(format!("entries[{}].disqualification", entry.index)),
                output_length(logs, entry),
            );
        }
    }
    if version < PredicateVersion::V9 {
        report.not_applicable(CheckName::Caching, None, version.name());
    } else {
        check_caching(report, dir, logs, record, campaign);
    }
}

/// `compliance.caching` (v9) on every challenger of `record` (not applicable in a
/// `decide` round, whose runs answer decisions).
fn check_caching(
    report: &mut VerifyReport,
    dir: &Path,
    logs: &mut ProbeLogs<'_>,
    record: &RoundRecord,
    campaign: Option<&FrozenCampaign>,
) {
    if crate::decide::is_decide(record, campaign) {
        report.not_applicable(CheckName::Caching, None, "decide");
        return;
    }
    let Some(frozen) = campaign else {
        report.record(
            CheckName::Caching,
            None,
            Err(files::unreadable(
                "inputs/campaign.json",
                "the campaign is needed for the caching probe's prompts and bound".into(),
            )),
        );
        return;
    };
    let workload = crate::plan::regenerated_workload(dir, record, frozen);
    for entry in record.entries.iter().filter(|e| e.role != Role::Baseline) {
        let result = match &workload {
            Ok(workload) => caching(logs, entry, frozen, workload),
            Err(e) => Err(e.clone()),
        };
        report.record(
            CheckName::Caching,
            Some(format!("entries[{}].disqualification", entry.index)),
            result,
        );
    }
}

/// `compliance.caching` on one challenger: its counted runs' probe logs.
fn caching(
    logs: &mut ProbeLogs<'_>,
    entry: &Entry,
    frozen: &FrozenCampaign,
    workload: &Workload,
) -> Result<(), FailureReason> {
    let spec = &frozen.campaign.correctness;
    let bound_bp = spec.effective_caching_bound_bp();
    let mut expected = None;
    for (pass, file) in counted_probe_logs(entry) {
        let log = logs.get(file)?;
        let asked =
            spec.effective_caching_prompts() > 0 && log.outcome == MeasurementOutcome::Measured;
        match (&log.caching, asked) {
            (None, false) => continue,
            (None, true) => {
                return Err(files::recomputed(
                    file,
                    "caching",
                    "absent",
                    "the run's caching probe (required from v9)",
                ));
            }
            (Some(_), false) => {
                return Err(files::recomputed(
                    file,
                    "caching",
                    "present",
                    "absent (the campaign asks for no caching probe)",
                ));
            }
            (Some(probe), true) => caching_probe(file, probe, pass, frozen, workload)?,
        }
        if expected.is_none() {
            expected = compliance::caching_failure([(pass, log)], bound_bp)
                .map(|(pass, speedup)| (pass, speedup, bound_bp));
        }
    }
    let claimed = match entry.disqualification.as_ref().map(|d| d.reason) {
        Some(DisqualificationReason::Caching {
            pass,
            speedup_bp,
            bound_bp,
        }) => Some((pass, speedup_bp, bound_bp)),
        _ => None,
    };
    verdict(entry, claimed, expected, |(pass, speedup, bound)| {
        format!("pass {pass}: repeats faster by {speedup} bp, bound {bound} bp")
    })
}

/// One run's caching probe in `file` against what the seeds and the campaign fix: its
/// sub-stream, its requests' items and order, its bound, and its speed-up recomputed from
/// its requests.
fn caching_probe(
    file: &str,
    probe: &CachingProbe,
    pass: u32,
    frozen: &FrozenCampaign,
    workload: &Workload,
) -> Result<(), FailureReason> {
    let spec = &frozen.campaign.correctness;
    let sub_stream = workload.caching_sub_stream(pass);
    files::same(file, "caching.subStream", probe.sub_stream, sub_stream)?;
    files::same(
        file,
        "caching.boundBp",
        probe.bound_bp,
        spec.effective_caching_bound_bp(),
    )?;
    let mut items = workload.sub_stream(sub_stream);
    items.truncate(spec.effective_caching_prompts() as usize);
    let planned: Vec<(u32, String, bool)> = compliance::caching_order(items.len())
        .into_iter()
        .map(|(i, repeat)| {
            (
                items[i].item_index,
                items[i].prompt_sha256.to_string(),
                repeat,
            )
        })
        .collect();
    let sent: Vec<(u32, String, bool)> = (probe.requests.iter())
        .map(|r| (r.item_index, r.prompt_sha256.to_string(), r.repeat))
        .collect();
    if sent != planned {
        return Err(files::recomputed(
            file,
            "caching.requests",
            format!("{} requests", sent.len()),
            format!(
                "the {} requests the seeds draw (items of sub-stream {sub_stream}, each fresh \
                 prompt then its repeat)",
                planned.len()
            ),
        ));
    }
    let speedup = compliance::caching_speedup_bp(&probe.requests);
    files::same(file, "caching.speedupBp", probe.speedup_bp, speedup)
}

/// `compliance.textAgainstIds` on one entry's sample `file`; `detokenizer` is whether
/// the campaign's profile has one (`None` when the campaign could not be read).
fn text_against_ids(
    file: &str,
    entry: &Entry,
    sample: &LoadSample,
    detokenizer: Option<bool>,
) -> Result<(), FailureReason> {
    let checked = match &sample.text_against_ids {
        None => {
            return Err(files::recomputed(
                file,
                "textAgainstIds",
                "absent",
                "required from v7",
            ));
        }
        Some(TextAgainstIds::Checked) => true,
        Some(TextAgainstIds::NotApplicable { .. }) => false,
    };
    if let Some(detokenizer) = detokenizer
        && detokenizer != checked
    {
        return Err(files::recomputed(
            file,
            "textAgainstIds.kind",
            if checked { "checked" } else { "not_applicable" },
            if detokenizer {
                "checked (the API profile has a detokenizer)"
            } else {
                "not_applicable (the API profile has no detokenizer)"
            },
        ));
    }
    if checked {
        for run in &sample.runs {
            let LoadSampleCheck::Checked { requests } = &run.check else {
                continue;
            };
            if let Some(r) = requests.iter().find(|r| r.reference_text.is_none()) {
                return Err(files::recomputed(
                    file,
                    format!(
                        "runs[run {}].requests[item {}].referenceText",
                        run.run, r.item_index
                    ),
                    "absent",
                    "the reference's text of the ids (textAgainstIds checked)",
                ));
            }
        }
    }
    let mismatch = compliance::first_text_mismatch(sample);
    let claimed = match entry.disqualification.as_ref().map(|d| d.reason) {
        Some(DisqualificationReason::TextNotIds { run, item }) => Some((run, item)),
        _ => None,
    };
    // `load_outputs_diverge` comes first: a divergent sample never names its text.
    let expected = mismatch.filter(|_| sample::first_divergent(sample).is_none());
    verdict(entry, claimed, expected, |(run, item)| {
        format!("run {run} item {item}")
    })
}

/// `compliance.outputLength` on one challenger: its counted runs' probe logs.
fn output_length(logs: &mut ProbeLogs<'_>, entry: &Entry) -> Result<(), FailureReason> {
    let mut expected = None;
    for (pass, file) in counted_probe_logs(entry) {
        let log = logs.get(file)?;
        if let Some(found) = compliance::output_length_failure([(pass, log)]) {
            expected = Some(found);
            break;
        }
    }
    let claimed = match entry.disqualification.as_ref().map(|d| d.reason) {
        Some(DisqualificationReason::OutputLength { pass, short, long }) => {
            Some((pass, short, long))
        }
        _ => None,
    };
    verdict(entry, claimed, expected, |(pass, short, long)| {
        format!("pass {pass}: {short} short, {long} long")
    })
}

/// The probe logs of the runs that enter `entry`'s score, by pass ascending: each
/// [`sample::sampled_passes`] pass's last row (a re-run follows the attempt it replaces)
/// that is not a control, where that row names a probe log.
fn counted_probe_logs(entry: &Entry) -> impl Iterator<Item = (u32, &str)> {
    sample::sampled_passes(&entry.passes)
        .into_iter()
        .filter_map(|pass| {
            let row = (entry.passes.iter())
                .rev()
                .find(|p| !p.control && p.pass == pass)?;
            Some((pass, row.probe_log.as_deref()?))
        })
}

/// A compliance verdict held against the entry: the reason it `claimed` is exactly the
/// `expected` one; with none claimed, a failure found only stands on an entry that is not
/// scored (an earlier reason disqualified it, or it failed otherwise).
fn verdict<T: PartialEq + Copy>(
    entry: &Entry,
    claimed: Option<T>,
    expected: Option<T>,
    show: impl Fn(T) -> String,
) -> Result<(), FailureReason> {
    if claimed == expected || (claimed.is_none() && entry.status != EntryStatus::Scored) {
        return Ok(());
    }
    let show = |v: Option<T>| v.map_or_else(|| "none".to_owned(), &show);
    Err(files::recomputed(
        "receipt.dsse.json",
        format!("entries[{}].disqualification", entry.index),
        show(claimed),
        show(expected),
    ))
}
