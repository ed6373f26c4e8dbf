//! The SLA rate search (content/measurement.md, Run and Entry): each run's probes as
//! `receipts::rules::search` directs them (the path the verifier replays), and the entry's
//! median over `runs` runs, judged with `receipts::rules::sla`.
//!
//! The search is generic over a [`ProbeExecutor`], so it runs against a real server
//! ([`crate::HttpProbeExecutor`]) or, in tests, against a simulated server in tokio's
//! paused clock.

use std::future::Future;

use receipts::model::{
    EntryMeasurement, MeasurementOutcome, ProbeRecord, ProbeVerdict, RateSearchSpec,
    RunMeasurement, SlaUnmetReason,
};
use receipts::rules::search::{RateSearch, probe_unreachable};

use crate::LoadError;

/// Runs one probe: an open-loop run at a fixed rate, judged with
/// [`verdict`](receipts::rules::sla::verdict).
pub trait ProbeExecutor {
    /// Sends probe `probe` of run `run` (its own workload sub-stream) at `rate_milli_rps`
    /// and returns its record. Errors are infrastructure failures (the client could not
    /// run at all); a server that fails requests yields a failing record, not an error.
    fn probe(
        &mut self,
        run: u32,
        probe: u32,
        rate_milli_rps: u64,
    ) -> impl Future<Output = Result<ProbeRecord, LoadError>>;
}

/// Reports the search's progress (the CLI draws it with indicatif; the round executor
/// logs it). Every method has an empty default.
pub trait ProgressSink: Sync {
    /// A probe starts: `requests` are planned, warm-up included.
    fn probe_started(&self, _run: u32, _probe: u32, _rate_milli_rps: u64, _requests: u32) {}
    /// `done` of the probe's requests have finished (sent at most every 100 ms).
    fn requests_done(&self, _done: u32) {}
    /// A probe ended with this record.
    fn probe_finished(&self, _record: &ProbeRecord) {}
}

/// A [`ProgressSink`] that reports nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProgress;

impl ProgressSink for NoProgress {}
/// One run's search (content/measurement.md, Run): the probes [`RateSearch`] asks for, from
/// the minimum rate doubling up, or (`rate_search.start = "estimate"`) from a first probe
/// at the maximum whose throughput picks where the bracket starts; then the bisection.
/// The result is the throughput of the highest passing probe. Stops where the search
/// does (an `Invalid` probe makes the run not valid; an unreachable probe before any pass
/// ends it) or at `deadline`; the second value is true when the deadline stopped it.
///
/// Errors: the executor's.
pub async fn search_run<E: ProbeExecutor>(
    executor: &mut E,
    run: u32,
    spec: &RateSearchSpec,
    deadline: tokio::time::Instant,
    progress: &dyn ProgressSink,
) -> Result<(RunMeasurement, bool), LoadError> {
    let mut search = RateSearch::new(spec);
    let mut probes: Vec<ProbeRecord> = Vec::new();
    let mut expired = false;
    while let Some(rate) = search.next_rate() {
        if tokio::time::Instant::now() >= deadline {
            expired = true;
            break;
        }
        let record = executor.probe(run, probes.len() as u32, rate).await?;
        progress.probe_finished(&record);
        search.observe(&record);
        probes.push(record);
    }
    if tokio::time::Instant::now() > deadline {
        expired = true;
    }
    let valid = probes.iter().all(|p| p.verdict != ProbeVerdict::Invalid);
    // The highest passing rate, as the verifier reads it from the log.
    let best = probes
        .iter()
        .filter(|p| p.verdict == ProbeVerdict::Pass)
        .max_by_key(|p| p.rate_milli_rps);
    Ok((
        RunMeasurement {
            run,
            throughput_milli_rps: best.map(|p| p.throughput_milli_rps),
            rate_milli_rps: best.map(|p| p.rate_milli_rps),
            valid,
            probes,
        },
        expired,
    ))
}

/// An entry (content/measurement.md, Entry): `runs` searches, each on its own sub-streams, within
/// `rate_search.entry_deadline_s` from now. The outcome is `Invalid` when a probe's send
/// lag exceeded its bound (an infrastructure failure: the client was measured),
/// `SlaUnmet` when a run finds no passing rate (`unreachable` when its last probe was
/// refused or reset throughout) or the deadline expires (later runs are then skipped); otherwise the throughput is the median run (the lower middle for an
/// even count) with min and max.
///
/// Errors: the executor's.
pub async fn search_entry<E: ProbeExecutor>(
    executor: &mut E,
    runs: u32,
    spec: &RateSearchSpec,
    progress: &dyn ProgressSink,
) -> Result<EntryMeasurement, LoadError> {
    search_runs(executor, 0..runs, spec, progress).await
}

/// [`search_entry`] over the runs numbered `runs` only (each on its own sub-streams): a
/// round's pass `p` measures run `p` of each entry on a fresh engine.
///
/// Errors: the executor's.
pub async fn search_runs<E: ProbeExecutor>(
    executor: &mut E,
    runs: std::ops::Range<u32>,
    spec: &RateSearchSpec,
    progress: &dyn ProgressSink,
) -> Result<EntryMeasurement, LoadError> {
    let deadline =
        tokio::time::Instant::now() + std::time::Duration::from_secs(spec.entry_deadline_s);
    let mut measured = Vec::new();
    let mut stopped = None;
    for run in runs {
        let (result, expired) = search_run(executor, run, spec, deadline, progress).await?;
        let found = result.throughput_milli_rps.is_some();
        let invalid_probe = (!result.valid).then(|| result.probes.len() as u32 - 1);
        measured.push(result);
        stopped = if let Some(probe) = invalid_probe {
            Some(MeasurementOutcome::Invalid { run, probe })
        } else if expired {
            Some(MeasurementOutcome::SlaUnmet {
                reason: SlaUnmetReason::DeadlineExpired,
            })
        } else if !found {
            let unreachable = measured
                .last()
                .and_then(|r| r.probes.last())
                .is_some_and(probe_unreachable);
            Some(MeasurementOutcome::SlaUnmet {
                reason: if unreachable {
                    SlaUnmetReason::Unreachable
                } else {
                    SlaUnmetReason::NoPassingRate
                },
            })
        } else {
            None
        };
        if stopped.is_some() {
            break;
        }
    }
    let valid = measured.iter().all(|r| r.valid);
    let (median, min, max, outcome) = match stopped {
        Some(outcome) => (None, None, None, outcome),
        None => {
            let values: Vec<u64> = measured
                .iter()
                .filter_map(|r| r.throughput_milli_rps)
                .collect();
            // One definition of the entry's median/min/max, shared with the verifier.
            let spread = receipts::rules::score::run_throughputs(&values);
            (
                spread.map(|(median, _, _)| median),
                spread.map(|(_, min, _)| min),
                spread.map(|(_, _, max)| max),
                MeasurementOutcome::Measured,
            )
        }
    };
    Ok(EntryMeasurement {
        runs: measured,
        throughput_milli_rps: median,
        throughput_min_milli_rps: min,
        throughput_max_milli_rps: max,
        valid,
        outcome,
        measured_for: None,
        caching: None,
    })
}
