//! `correctness.samplePool` (v5; content/verifying.md, Correctness): what a timed-run
//! sample is drawn from, recomputed. The load client keeps token ids only for a pool of
//! items drawn from `sampleSeed` before the runs (`receipts::rules::sample::keep_pool`),
//! and a run's sample is drawn from the pool's items that its result probe sent as
//! measured requests and that completed. `correctness.loadSample` redraws the sample
//! from the `completed` list the file records; this check holds that list to the pool,
//! the probe and the workload, so an evaluator cannot pick which requests are checked.

use std::collections::BTreeSet;
use std::path::Path;

use crate::files::{ProbeLogs, read_json, recomputed, same, show};
use crate::{CheckName, FailureReason, PredicateVersion, VerifyReport};
use receipts::model::{
    Entry, FrozenCampaign, LoadSample, LoadSampleCheck, LoadSampleRun, PassStatus, ProbeVerdict,
    RoundRecord,
};
use receipts::rules::sample::keep_pool;
use receipts::rules::workload::Workload;

/// Runs `correctness.entry` and `correctness.samplePool` once per entry naming a
/// timed-run sample file: `not applicable` before v5; the pool not run without the
/// campaign.
pub(crate) fn check_sample_pools(
    report: &mut VerifyReport,
    dir: &Path,
    logs: &mut ProbeLogs<'_>,
    record: &RoundRecord,
    campaign: Option<&FrozenCampaign>,
    version: PredicateVersion,
) {
    let cited: Vec<(&Entry, &str)> = record
        .entries
        .iter()
        .filter_map(|e| Some((e, e.correctness.as_ref()?.load_sample_file.as_deref()?)))
        .collect();
    if cited.is_empty() {
        return;
    }
    if version < PredicateVersion::V5 {
        report.not_applicable(CheckName::LoadSamplePool, None, version.name());
        return;
    }
    let workload = campaign.map(|frozen| crate::plan::regenerated_workload(dir, record, frozen));
    for (entry, file) in cited {
        let at = format!("entries[{}].correctness.loadSampleFile", entry.index);
        let sample = match read_json::<LoadSample>(dir, file) {
            Ok(sample) => sample,
            Err(reason) => {
                report.fail(
                    CheckName::CorrectnessEntry,
                    Some(at.clone()),
                    reason.clone(),
                );
                report.fail(CheckName::LoadSamplePool, Some(at), reason);
                continue;
            }
        };
        let bound = crate::binding::file_bound(
            file,
            sample.measured_for.as_ref(),
            record.round,
            entry,
            version,
        );
        report.record(CheckName::CorrectnessEntry, Some(at.clone()), bound);
        let result = match &workload {
            None => Err(FailureReason::NotRun {
                blocked_by: CheckName::InputsCampaign,
            }),
            Some(Err(reason)) => Err(reason.clone()),
            Some(Ok(workload)) => drawn_from_the_pool(file, &sample, entry, record, logs, workload),
        };
        report.record(CheckName::LoadSamplePool, Some(at), result);
    }
}

/// Every run of `sample` (the file `file` of `entry`) drawn from the keep pool of
/// `record`'s `sampleSeed` ([`run_drawn_from_its_probe`]).
fn drawn_from_the_pool(
    file: &str,
    sample: &LoadSample,
    entry: &Entry,
    record: &RoundRecord,
    logs: &mut ProbeLogs<'_>,
    workload: &Workload,
) -> Result<(), FailureReason> {
    let Some(seed) = &record.seeds.sample_seed else {
        return Err(recomputed(
            "receipt.dsse.json",
            "seeds.sampleSeed",
            "absent",
            "the seed the keep pool is drawn with",
        ));
    };
    let pool: BTreeSet<u32> = keep_pool(
        &seed.seed,
        entry.index,
        workload.sub_stream_len(),
        sample.sample_size,
    )
    .into_iter()
    .collect();
    sample.runs.iter().enumerate().try_for_each(|(r, run)| {
        run_drawn_from_its_probe(file, r, run, entry, logs, &pool, workload)
    })
}

/// One run `r` of the sample `file`: it names its run's result probe (the highest
/// passing one, in the probe log of the entry's measured row of that pass), its
/// `completed` list is ascending and within the pool's items among that probe's measured
/// requests — all of them when every measured request completed, at most the probe's
/// completed count otherwise — and each checked request's prompt hash is its item's.
fn run_drawn_from_its_probe(
    file: &str,
    r: usize,
    run: &LoadSampleRun,
    entry: &Entry,
    logs: &mut ProbeLogs<'_>,
    pool: &BTreeSet<u32>,
    workload: &Workload,
) -> Result<(), FailureReason> {
    let at = format!("runs[{r}]");
    let row = entry
        .passes
        .iter()
        .rev()
        .find(|p| !p.control && p.pass == run.run && p.status == PassStatus::Measured);
    let Some(log_file) = row.and_then(|p| p.probe_log.as_deref()) else {
        return Err(recomputed(
            file,
            format!("{at}.run"),
            run.run,
            "a pass the entry measured",
        ));
    };
    let log = logs.get(log_file)?;
    let result = log
        .runs
        .iter()
        .filter(|m| m.run == run.run)
        .flat_map(|m| m.probes.iter())
        .filter(|p| p.verdict == ProbeVerdict::Pass)
        .max_by_key(|p| p.rate_milli_rps);
    let Some(probe) = result else {
        return Err(recomputed(
            file,
            format!("{at}.run"),
            run.run,
            format!("a run with a passing probe in {log_file}"),
        ));
    };
    same(file, &format!("{at}.probe"), run.probe, probe.probe)?;
    // The measured items as the seeds fix them (`probe.plan` holds the probe's own
    // counts to the same plan).
    let planned = crate::plan::planned_probe(probe, workload);
    let items = &planned.items[planned.warmup..planned.end];
    let mut eligible: Vec<u32> = items
        .iter()
        .map(|i| i.item_index)
        .filter(|i| pool.contains(i))
        .collect();
    eligible.sort_unstable();
    let ascending = run.completed.windows(2).all(|w| w[0] < w[1]);
    let within = run
        .completed
        .iter()
        .all(|i| eligible.binary_search(i).is_ok());
    let count = u32::try_from(run.completed.len()).unwrap_or(u32::MAX);
    let whole = probe.completed == probe.requests;
    if !ascending || !within || count > probe.completed || (whole && run.completed != eligible) {
        let expected = if whole {
            format!("{eligible:?} (the keep pool's items among the measured requests)")
        } else {
            format!(
                "at most {} of {eligible:?} (the keep pool's items among the measured \
                 requests), ascending",
                probe.completed
            )
        };
        return Err(recomputed(
            file,
            format!("{at}.completed"),
            format!("{:?}", run.completed),
            expected,
        ));
    }
    let LoadSampleCheck::Checked { requests } = &run.check else {
        return Ok(());
    };
    requests.iter().enumerate().try_for_each(|(q, request)| {
        let item = items.iter().find(|i| i.item_index == request.item_index);
        match item {
            Some(item) if item.prompt_sha256 == request.prompt_sha256 => Ok(()),
            _ => Err(recomputed(
                file,
                format!("{at}.check.requests[{q}].promptSha256"),
                request.prompt_sha256,
                show(item.map(|i| i.prompt_sha256)),
            )),
        }
    })
}
